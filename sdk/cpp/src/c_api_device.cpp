// The C ABI of device detection: the backend's probe as JSON text.
#include <nlohmann/json.hpp>

#include "c_api_internal.hpp"
#include "daemon/backend/device_probe.hpp"

using namespace meshdock::capi;

extern "C" {

int meshdock_probe_devices(char** json) {
  if (json) *json = nullptr;
  return guard([&] {
    require(json, "json");
    const auto r = meshdock::backend::probe_devices();
    nlohmann::json devs = nlohmann::json::array();
    for (const auto& d : r.devices) {
      devs.push_back({{"id", d.id},
                      {"name", d.name},
                      {"total_memory", d.total_memory},
                      {"capability", {d.major, d.minor}}});
    }
    const nlohmann::json j = {{"built_with_cuda", r.built_with_cuda},
                              {"cuda_status", r.cuda_status},
                              {"runtime_version", r.runtime_version},
                              {"driver_version", r.driver_version},
                              {"devices", devs}};
    *json = owned_string(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  });
}

}  // extern "C"
