#include "json_out.hpp"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace meshdockctl {

namespace v1 = meshdock::v1;

std::string dtype_name(unsigned code, unsigned bits, unsigned lanes) {
  std::string base;
  switch (code) {
    case 0:
      base = "int" + std::to_string(bits);
      break;
    case 1:
      base = "uint" + std::to_string(bits);
      break;
    case 2:
      base = "float" + std::to_string(bits);
      break;
    case 4:
      base = "bfloat" + std::to_string(bits);
      break;
    case 6:
      base = bits == 8 ? "bool" : "bool" + std::to_string(bits);
      break;
    default:
      return "dtype(code=" + std::to_string(code) + ",bits=" + std::to_string(bits) +
             ",lanes=" + std::to_string(lanes) + ")";
  }
  return lanes > 1 ? base + "x" + std::to_string(lanes) : base;
}

std::string rfc3339(double unix_seconds) {
  if (!std::isfinite(unix_seconds) || unix_seconds < 0) return "";
  auto whole = static_cast<time_t>(unix_seconds);
  auto ms = static_cast<int>((unix_seconds - static_cast<double>(whole)) * 1000.0);
  if (ms > 999) ms = 999;
  struct tm t {};
  gmtime_r(&whole, &t);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900,
                t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, ms);
  return buf;
}

namespace {
double clock_seconds(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
}  // namespace

double wall_of_monotonic(double monotonic_seconds) {
  return clock_seconds(CLOCK_REALTIME) - (clock_seconds(CLOCK_MONOTONIC) - monotonic_seconds);
}

std::string device_name(std::int64_t type, std::int64_t id) {
  if (type == 1) return "cpu";
  if (type == 2) return "cuda:" + std::to_string(id);
  return "device_type " + std::to_string(type) + ":" + std::to_string(id);
}

void script_inspect(nlohmann::json& report) {
  name_dtypes(report);
  if (auto d = report.find("device"); d != report.end() && d->is_object())
    *d = device_name(d->value("device_type", 0), d->value("device_id", 0));
  if (auto h = report.find("heartbeat_age_ns"); h != report.end() && h->is_number()) {
    report["heartbeat_age_seconds"] = h->get<double>() * 1e-9;
    report.erase(h);
  }
  // The segments as ls / describe name them ("control_segment": "/meshdock.box"), so that one
  // script reads both; the SDK's report keeps shm_open's names without the slash.
  for (const auto& [from, to] : {std::pair{"control_object", "control_segment"},
                                 std::pair{"catalog_object", "catalog_segment"}}) {
    if (auto o = report.find(from); o != report.end() && o->is_string()) {
      const auto object = o->get<std::string>();
      report.erase(o);
      report[to] = "/" + object;
    }
  }
}

Json slot_json(const v1::SlotInfo& s) {
  const auto& d = s.device();
  return Json{
      {"name", s.name()},
      {"path", s.path()},
      {"format", s.format()},
      {"device", device_name(d.device_type(), d.device_id())},
      {"num_slots", s.num_slots()},
      {"write_idx", s.write_idx()},
      {"version", s.version()},
      {"data_size", s.data_size()},
      {"num_points", s.num_points()},
      {"num_cells", s.num_cells()},
      {"cell_types", std::vector<std::string>(s.cell_types().begin(), s.cell_types().end())},
      {"notes", std::vector<std::string>(s.notes().begin(), s.notes().end())},
      {"dropped", std::vector<std::string>(s.dropped().begin(), s.dropped().end())},
      {"control_segment", s.control_segment()},
      {"catalog_segment", s.catalog_segment()},
      {"load_seconds", s.load_seconds()},
      {"watch", s.watch()}};
}

Json to_json(const v1::LoadProgress& p) {
  return Json{{"phase", v1::LoadProgress::Phase_Name(p.phase())},
              {"bytes_done", p.bytes_done()},
              {"bytes_total", p.bytes_total()},
              {"message", p.message()},
              {"slot", slot_json(p.slot())}};
}

Json to_json(const v1::ListReply& r) {
  Json slots = Json::array();
  for (const auto& s : r.slots()) slots.push_back(slot_json(s));
  return Json{{"slots", slots}};
}

void name_dtypes(nlohmann::json& j) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      auto& v = it.value();
      if (it.key() == "dtype" && v.is_array() && v.size() == 3 &&
          std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_number_unsigned(); })) {
        v = dtype_name(v[0].get<unsigned>(), v[1].get<unsigned>(), v[2].get<unsigned>());
      } else {
        name_dtypes(v);
      }
    }
  } else if (j.is_array()) {
    for (auto& v : j) name_dtypes(v);
  }
}

Json to_json(const v1::DescribeReply& r) {
  Json out{{"slot", slot_json(r.slot())}};
  auto manifest = nlohmann::json::parse(r.manifest_json(), nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded()) {
    out["manifest"] = nullptr;
    out["manifest_text"] = r.manifest_json();
  } else {
    name_dtypes(manifest);
    out["manifest"] = Json::parse(manifest.dump());
  }
  Json arrays = Json::array();
  for (const auto& a : r.arrays()) {
    arrays.push_back(
        Json{{"name", a.name()},
             {"role", a.role()},
             {"block", a.block()},
             {"dtype", dtype_name(a.dtype().code(), a.dtype().bits(), a.dtype().lanes())},
             {"shape", std::vector<std::int64_t>(a.shape().begin(), a.shape().end())},
             {"offset", a.offset()},
             {"nbytes", a.nbytes()}});
  }
  out["arrays"] = arrays;
  return out;
}

Json to_json(const v1::UnloadReply& r) {
  return Json{{"name", r.name()}};
}

Json to_json(const v1::ExportReply& r) {
  return Json{{"path", r.path()},
              {"bytes_written", r.bytes_written()},
              {"notes", Json(std::vector<std::string>(r.notes().begin(), r.notes().end()))}};
}

Json to_json(const v1::PublishReply& r) {
  return Json{{"frame", r.frame()}, {"slot", slot_json(r.slot())}};
}

Json to_json(const v1::MetricsReply& r) {
  return Json{{"text", r.text()}};
}

Json to_json(const v1::StatsReply& r) {
  Json slots = Json::array();
  for (const auto& s : r.slots()) {
    slots.push_back(Json{{"name", s.name()},
                         {"bytes", s.bytes()},
                         {"frames", s.frames()},
                         {"leases", s.leases()},
                         {"last_load_seconds", s.last_load_seconds()}});
  }
  return Json{{"backend", r.backend()},
              {"uptime_seconds", r.uptime_seconds()},
              {"host_memory_used", r.host_memory_used()},
              {"device_memory_used", r.device_memory_used()},
              {"device_memory_budget", r.device_memory_budget()},
              {"max_decoded_size", r.max_decoded_size()},
              {"slots", slots}};
}

Json to_json(const v1::LeasesReply& r) {
  Json leases = Json::array();
  for (const auto& l : r.leases()) {
    leases.push_back(Json{{"name", l.name()},
                          {"slot", l.slot()},
                          {"pid", l.pid()},
                          {"uid", l.uid()},
                          {"frame", l.frame()},
                          {"claiming", l.claiming()},
                          {"age_seconds", l.age_seconds()}});
  }
  return Json{{"leases", leases}};
}

Json to_json(const v1::RevokeLeasesReply& r) {
  return Json{{"revoked", r.revoked()}};
}

Json to_json(const v1::Event& e, double wall_seconds) {
  return Json{{"kind", v1::Event::Kind_Name(e.kind())},
              {"name", e.name()},
              {"frame", e.frame()},
              {"message", e.message()},
              {"timestamp", e.timestamp()},
              {"time", rfc3339(wall_seconds)},
              {"dropped", e.dropped()}};
}

Json to_json(const grpc::health::v1::HealthCheckResponse& r) {
  return Json{{"status", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(r.status())}};
}

}  // namespace meshdockctl
