#include "daemon/service/metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace meshdock::service {

std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Metrics::received(std::string_view via, std::uint64_t bytes) {
  std::lock_guard lock(m_);
  auto it = received_.find(via);
  if (it == received_.end()) it = received_.emplace(std::string(via), 0).first;
  it->second += bytes;
}

void Metrics::watch_dropped(std::uint64_t n) {
  std::lock_guard lock(m_);
  watch_dropped_ += n;
}

void Metrics::rpc(std::string_view method, std::string_view code, double seconds) {
  std::lock_guard lock(m_);
  auto it = methods_.find(method);
  if (it == methods_.end()) it = methods_.emplace(std::string(method), Method{}).first;
  Method& m = it->second;
  auto c = m.codes.find(code);
  if (c == m.codes.end()) c = m.codes.emplace(std::string(code), 0).first;
  ++c->second;
  const auto b = std::lower_bound(kBuckets.begin(), kBuckets.end(), seconds);
  if (b != kBuckets.end()) ++m.buckets[static_cast<std::size_t>(b - kBuckets.begin())];
  ++m.count;
  m.sum += seconds;
}

namespace {

// Appends one "# HELP / # TYPE" header.
void header(std::string& out, const char* name, const char* type, const char* help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// "cpu" / "cuda:0" (DLPack device type 2 is CUDA, 3 pinned host).
std::string device_label(const payload::Device& d) {
  return d.type == 2 ? "cuda:" + std::to_string(d.id) : d.type == 3 ? "cuda_host" : "cpu";
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// One histogram's series: cumulative buckets, +Inf, sum and count; `labels` (`method="Load"`,
// or empty) in each series' braces.
template <std::size_t N>
void histogram(std::string& out, const std::string& name, const std::string& labels,
               const std::array<double, N>& bounds, const std::array<std::uint64_t, N>& buckets,
               std::uint64_t count, double sum) {
  const std::string le = "_bucket{" + (labels.empty() ? "" : labels + ",") + "le=\"";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < N; ++i) {
    cumulative += buckets[i];
    out += name + le + num(bounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + le + "+Inf\"} " + std::to_string(count) + "\n";
  out += name + "_sum" + braces + " " + num(sum) + "\n";
  out += name + "_count" + braces + " " + std::to_string(count) + "\n";
}

}  // namespace

std::string Metrics::render(const Stats& s, const std::vector<LeaseReport>& leases) const {
  std::string out;
  out.reserve(4096);
  header(out, "meshdock_info", "gauge", "The daemon's backend (host | cuda); always 1.");
  out += "meshdock_info{backend=\"" + label_value(s.backend) + "\"} 1\n";
  header(out, "meshdock_uptime_seconds", "gauge", "Seconds since meshdockd started.");
  out += "meshdock_uptime_seconds " + num(s.uptime_seconds) + "\n";
  header(out, "meshdock_meshes", "gauge", "Meshes loaded.");
  out += "meshdock_meshes " + std::to_string(s.meshes.size()) + "\n";
  header(out, "meshdock_memory_used_bytes", "gauge", "Slot buffer bytes, by memory kind.");
  out += "meshdock_memory_used_bytes{memory=\"host\"} " + std::to_string(s.host_memory_used) + "\n";
  out += "meshdock_memory_used_bytes{memory=\"device\"} " + std::to_string(s.device_memory_used) +
         "\n";
  if (s.pinned) {  // the pinned pool readers allocate from (only when a device answers)
    const auto& p = *s.pinned;
    header(out, "meshdock_pinned_bytes", "gauge",
           "Pinned host memory of the pool: held by mesh arrays (live) or kept for reuse.");
    out += "meshdock_pinned_bytes{state=\"live\"} " + std::to_string(p.live_bytes) + "\n";
    out += "meshdock_pinned_bytes{state=\"kept\"} " + std::to_string(p.kept_bytes) + "\n";
    header(out, "meshdock_pinned_allocations_total", "counter",
           "Mesh array allocations by where they came from: a new pinned buffer, a kept one "
           "reused, pageable memory (small arrays), or pageable after a failed pin.");
    out += "meshdock_pinned_allocations_total{source=\"new\"} " + std::to_string(p.pinned) + "\n";
    out +=
        "meshdock_pinned_allocations_total{source=\"reused\"} " + std::to_string(p.reused) + "\n";
    out += "meshdock_pinned_allocations_total{source=\"pageable\"} " +
           std::to_string(p.pageable - p.fallbacks) + "\n";
    out += "meshdock_pinned_allocations_total{source=\"fallback\"} " + std::to_string(p.fallbacks) +
           "\n";
  }
  header(out, "meshdock_device_memory_budget_bytes", "gauge",
         "The device_memory_budget config key (0: no limit).");
  out += "meshdock_device_memory_budget_bytes " + std::to_string(s.device_memory_budget) + "\n";
  header(out, "meshdock_consumers", "gauge",
         "Consumer processes registered with the daemon (attached slots).");
  out += "meshdock_consumers " + std::to_string(s.consumers) + "\n";
  header(out, "meshdock_imports_open", "gauge",
         "CUDA slot buffers consumers reported open (import reports): the daemon frees none of "
         "them while open.");
  out += "meshdock_imports_open " + std::to_string(s.imports) + "\n";
  header(out, "meshdock_unloaded_open_bytes", "gauge",
         "Device memory of unloaded meshes kept because a consumer still has it open (freed "
         "when it closes it, at most 30 s after the unload), or for cuda-link consumers' "
         "0.5 s grace.");
  out += "meshdock_unloaded_open_bytes " + std::to_string(s.unloaded_open_bytes) + "\n";
  // Reported by the consumers themselves (the daemon cannot see a process wake up): each wait()
  // that slept and woke with a new frame says how long after the publish it had it in hand.
  header(out, "meshdock_frame_wake_seconds", "histogram",
         "Publish to frame in hand, as consumers that slept in wait() report it.");
  histogram(out, "meshdock_frame_wake_seconds", "", slots::ConsumerRegistry::WakeLatency::kBuckets,
            s.wake.buckets, s.wake.count, s.wake.sum);

  header(out, "meshdock_slot_bytes", "gauge", "Bytes of one frame of a mesh, by device.");
  for (const auto& m : s.meshes)
    out += "meshdock_slot_bytes{mesh=\"" + label_value(m.name) + "\",device=\"" +
           device_label(m.device) + "\"} " + std::to_string(m.data_size) + "\n";
  header(out, "meshdock_frames_published_total", "counter", "Frames published per mesh.");
  for (const auto& m : s.meshes)
    out += "meshdock_frames_published_total{mesh=\"" + label_value(m.name) + "\"} " +
           std::to_string(m.write_idx) + "\n";
  header(out, "meshdock_publish_bytes_total", "counter",
         "Bytes of the frames published per mesh: copied into a slot buffer, or kept (the "
         "buffer held that array already; config key publish_copy).");
  for (const auto& m : s.meshes) {
    const auto mesh = "{mesh=\"" + label_value(m.name) + "\",how=\"";
    out += "meshdock_publish_bytes_total" + mesh + "copied\"} " + std::to_string(m.copied_bytes) +
           "\n";
    out += "meshdock_publish_bytes_total" + mesh + "kept\"} " + std::to_string(m.kept_bytes) + "\n";
  }
  header(out, "meshdock_last_load_seconds", "gauge", "How long the mesh's last load took.");
  for (const auto& m : s.meshes)
    out += "meshdock_last_load_seconds{mesh=\"" + label_value(m.name) + "\"} " +
           num(m.load_seconds) + "\n";

  // Leases: how many per mesh, and the oldest's age (a consumer pinning a frame).
  std::map<std::string, std::pair<std::size_t, double>> per_mesh;
  for (const auto& m : s.meshes) per_mesh[m.name] = {0, 0.0};
  for (const auto& l : leases) {
    auto& [n, oldest] = per_mesh[l.mesh];
    ++n;
    oldest = std::max(oldest, l.lease.age_seconds);
  }
  header(out, "meshdock_leases", "gauge", "Frames held by consumers, per mesh.");
  for (const auto& [mesh, v] : per_mesh)
    out += "meshdock_leases{mesh=\"" + label_value(mesh) + "\"} " + std::to_string(v.first) + "\n";
  header(out, "meshdock_lease_oldest_age_seconds", "gauge",
         "Age of the oldest lease per mesh (0 when none).");
  for (const auto& [mesh, v] : per_mesh)
    out += "meshdock_lease_oldest_age_seconds{mesh=\"" + label_value(mesh) + "\"} " +
           num(v.second) + "\n";

  std::lock_guard lock(m_);
  header(out, "meshdock_publish_received_bytes_total", "counter",
         "Bytes of published arrays taken in, by how: in gRPC messages, or read from the "
         "producer's shared-memory object (source_shm).");
  for (const char* via : {"grpc", "shm"}) {
    const auto it = received_.find(via);
    out += std::string("meshdock_publish_received_bytes_total{via=\"") + via + "\"} " +
           std::to_string(it == received_.end() ? 0 : it->second) + "\n";
  }
  header(out, "meshdock_watch_events_dropped_total", "counter",
         "Watch events dropped because a watcher read them too slowly (each watcher's queue "
         "keeps the newest 1024; the next event it reads says how many it lost).");
  out += "meshdock_watch_events_dropped_total " + std::to_string(watch_dropped_) + "\n";
  header(out, "meshdock_rpc_calls_total", "counter", "RPCs finished, by method and status code.");
  for (const auto& [method, m] : methods_)
    for (const auto& [code, n] : m.codes)
      out += "meshdock_rpc_calls_total{method=\"" + label_value(method) + "\",code=\"" +
             label_value(code) + "\"} " + std::to_string(n) + "\n";
  header(out, "meshdock_rpc_duration_seconds", "histogram",
         "RPC wall time by method (Load and Reload: the whole load).");
  for (const auto& [method, m] : methods_)
    histogram(out, "meshdock_rpc_duration_seconds", "method=\"" + label_value(method) + "\"",
              kBuckets, m.buckets, m.count, m.sum);
  return out;
}

}  // namespace meshdock::service
