// What meshdockd counts for Prometheus (text exposition format 0.0.4): RPC calls by method and
// status code with a duration histogram per method (Load's is the load time), plus the
// registry's figures rendered at scrape time (bytes, frames, leases and their ages, consumers,
// memory per device). Served by the Metrics RPC (meshdockctl metrics) and, when the config key
// metrics_listen is set, over HTTP on a loopback address (rpc/metrics_http.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/service/registry.hpp"

namespace meshdock::service {

class Metrics {
 public:
  // Upper bounds (seconds) of the duration histogram's buckets; +Inf is implied.
  static constexpr std::array<double, 10> kBuckets{0.0005, 0.001, 0.005, 0.01, 0.05,
                                                   0.1,    0.5,   1.0,   5.0,  30.0};

  // One finished RPC: its method ("Load"), gRPC status code name ("OK", "NOT_FOUND") and
  // wall time. Thread-safe; a lock held for a map lookup.
  void rpc(std::string_view method, std::string_view code, double seconds);

  // `bytes` of a published array taken in by `via` ("grpc": in messages; "shm": read from the
  // caller's shm object). Thread-safe.
  void received(std::string_view via, std::uint64_t bytes);

  // `n` Watch events dropped for a watcher that read too slowly. Thread-safe.
  void watch_dropped(std::uint64_t n);

  // The exposition text: the counters above and `stats` / `leases` as gauges.
  std::string render(const Stats& stats, const std::vector<LeaseReport>& leases) const;

 private:
  struct Method {
    std::map<std::string, std::uint64_t, std::less<>> codes;
    std::array<std::uint64_t, kBuckets.size()> buckets{};  // non-cumulative counts
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex m_;
  std::map<std::string, Method, std::less<>> methods_;
  std::map<std::string, std::uint64_t, std::less<>> received_;  // by via
  std::uint64_t watch_dropped_ = 0;
};

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view v);

}  // namespace meshdock::service
