// The C ABI's protocol cross-checks: the shm_protocol validators over caller bytes, so tests can
// hold another implementation (the pure-Python mirror) to exactly the same verdicts.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "c_api_internal.hpp"
#include "meshdock/inspect.hpp"
#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using namespace meshdock::capi;

namespace {

// Segments are page aligned when mapped; caller bytes need not be, so copy into 8-aligned words.
std::vector<std::uint64_t> aligned_copy(const void* bytes, std::size_t size) {
  std::vector<std::uint64_t> buf((size + 7) / 8 + 1, 0);
  if (size) std::memcpy(buf.data(), bytes, size);
  return buf;
}

std::string hex(const void* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  const auto* b = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[b[i] >> 4];
    s[2 * i + 1] = digits[b[i] & 15];
  }
  return s;
}

std::string hex(std::string_view s) {
  return hex(s.data(), s.size());
}

char* dump(const nlohmann::json& j) {
  return owned_string(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

const void* bytes_arg(const void* bytes, std::size_t size) {
  if (!bytes && size) throw invalid("bytes is NULL");
  return bytes;
}

}  // namespace

extern "C" {

int meshdock_debug_validate_control_block(const void* bytes, size_t size, char** json) {
  if (json) *json = nullptr;
  return guard([&] {
    require(json, "json");
    auto buf = aligned_copy(bytes_arg(bytes, size), size);
    auto cb = shm::ControlBlockView::validate(buf.data(), size, "bytes");
    nlohmann::json mem = nlohmann::json::array(), ev = nlohmann::json::array();
    for (std::uint32_t i = 0; i < cb.num_slots(); ++i) {
      const auto mh = cb.mem_handle(i);
      const auto eh = cb.event_handle(i);
      mem.push_back(hex(mh.data(), mh.size()));
      ev.push_back(hex(eh.data(), eh.size()));
    }
    const nlohmann::json j = {{"num_slots", cb.num_slots()},
                              {"version", cb.version()},
                              {"write_idx", cb.write_idx()},
                              {"shutdown", cb.shutdown_byte()},
                              {"metadata", meshdock::to_json(cb.metadata())},
                              {"timestamp", cb.timestamp()},
                              {"mem_handles", mem},
                              {"event_handles", ev}};
    *json = dump(j);
  });
}

int meshdock_debug_validate_catalog(const void* bytes, size_t size, char** json) {
  if (json) *json = nullptr;
  return guard([&] {
    require(json, "json");
    auto buf = aligned_copy(bytes_arg(bytes, size), size);
    auto cat = shm::CatalogView::validate(buf.data(), size, "bytes");
    nlohmann::json pages = nlohmann::json::array();
    for (std::uint32_t i = 0; i < cat.num_slots(); ++i) {
      auto page = cat.page(i);
      const auto snap = page.read(8);
      pages.push_back({{"seq", snap.seq},
                       {"frame", snap.frame},
                       {"data_size", snap.data_size},
                       {"buffer_version", snap.buffer_version},
                       {"manifest", hex(snap.manifest)}});
    }
    const nlohmann::json j = {
        {"num_slots", cat.num_slots()},
        {"page_size", cat.page_size()},
        {"lease_capacity", cat.lease_capacity()},
        {"daemon_pid", cat.daemon_pid()},
        {"device_type", cat.device_type()},
        {"device_id", cat.device_id()},
        {"heartbeat_ns", cat.heartbeat_ns()},
        {"futex", cat.futex_value()},
        {"total_size", cat.total_size()},
        {"daemon_uid", cat.daemon_uid()},
        {"socket", hex(cat.socket_address())},
        {"pages", pages},
        {"device_uuid", hex(cat.device_uuid().data(), cat.device_uuid().size())}};
    *json = dump(j);
  });
}

int meshdock_debug_decode_manifest(const char* text, size_t text_size, uint64_t data_size,
                                   char** canonical) {
  if (canonical) *canonical = nullptr;
  return guard([&] {
    require(canonical, "canonical");
    if (!text && text_size) throw invalid("text is NULL");
    const std::string_view t(text ? text : "", text_size);
    *canonical = owned_string(shm::encode_manifest(shm::decode_manifest(t, data_size)));
  });
}

int meshdock_debug_control_block_size(uint32_t num_slots, uint64_t* size) {
  return guard([&] { *require(size, "size") = shm::control_block_size(num_slots); });
}

int meshdock_debug_validate_name(const char* name, size_t name_size) {
  return guard([&] {
    if (!name && name_size) throw invalid("name is NULL");
    shm::validate_name(std::string_view(name ? name : "", name_size));
  });
}

int meshdock_debug_data_object_name(const char* prefix, size_t prefix_size, const char* name,
                                    size_t name_size, uint32_t slot, uint64_t version, char** out) {
  if (out) *out = nullptr;
  return guard([&] {
    require(out, "out");
    if (!prefix && prefix_size) throw invalid("prefix is NULL");
    if (!name && name_size) throw invalid("name is NULL");
    *out = owned_string(shm::data_object_name(std::string_view(prefix ? prefix : "", prefix_size),
                                              std::string_view(name ? name : "", name_size), slot,
                                              version));
  });
}

uint32_t meshdock_debug_control_magic(void) {
  return shm::kControlMagic;
}

uint32_t meshdock_debug_catalog_layout_version(void) {
  return shm::kCatalogLayoutVersion;
}

}  // extern "C"
