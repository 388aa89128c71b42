// Publish -> consumer latency across processes, the way meshdockd and libmeshdock do it
// (scripts/bench attach runs the pair; this is not a test).
//
//   bench_attach producer PREFIX NAME FRAMES INTERVAL_US
//       publishes a 10-array mesh with the daemon's own Slot code (host backend): frame 1, a
//       pause for the consumer to attach, then FRAMES more, one every INTERVAL_US
//   bench_attach consumer PREFIX NAME FRAMES futex|poll
//       futex: Slot::wait (sleeps on the futex); poll: checks write_idx every 1 ms
//       For each frame: latency = time the Frame is in hand - the producer's publish timestamp
//       (same CLOCK_MONOTONIC), and the adopt cost (to_dlpack of all 10 arrays + deleters).
//       Prints one JSON line: frames seen, p50/p95/p99/max latency and adopt, in microseconds.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/slot.hpp"
#include "meshdock/attach.hpp"

namespace mesh = meshdock::mesh;
namespace shm = meshdock::shm;

namespace {

mesh::Mesh ten_arrays(double seed) {
  mesh::Mesh m;
  const std::int64_t n = 1000;
  m.points = mesh::Array::of<double>({n, 3});
  for (std::int64_t i = 0; i < 3 * n; ++i) m.points.as<double>()[i] = seed + static_cast<double>(i);
  auto tets = mesh::Array::of<std::int64_t>({n - 3, 4});
  for (std::int64_t i = 0; i < n - 3; ++i)
    for (int k = 0; k < 4; ++k) tets.as<std::int64_t>()[4 * i + k] = i + k;
  m.cells.push_back(mesh::CellBlock::fixed("tetra", tets));
  for (int f = 0; f < 5;
       ++f) {  // points, cells, block_bases + 5 point_data + 1 cell_data + 1 region
    m.point_data[std::string("f").append(std::to_string(f))] = mesh::Array::of<double>({n});
  }
  m.cell_data["c"] = {mesh::Array::of<double>({n - 3})};
  mesh::Region r;
  r.name = "all";
  r.entries = mesh::Array::of<std::int64_t>({n - 3});
  m.regions.push_back(r);
  return m;
}

int producer(const std::string& prefix, const std::string& name, int frames, int interval_us) {
  auto backend = meshdock::backend::make_host_backend(0600);
  meshdock::slots::SlotOptions o;
  o.prefix = prefix;
  o.name = name;
  o.lease_wait = std::chrono::milliseconds(5);
  meshdock::slots::Slot slot(o, *backend);
  const auto m = ten_arrays(0);
  const auto p = meshdock::payload::build_payload(m);
  slot.publish(p);
  std::cout << "ready" << std::endl;
  std::string line;
  std::getline(std::cin, line);  // "go": the consumer is attached and has frame 1
  auto next = std::chrono::steady_clock::now();
  for (int f = 0; f < frames; ++f) {
    next += std::chrono::microseconds(interval_us);
    std::this_thread::sleep_until(next);
    slot.publish(p);
    slot.maintain(shm::monotonic_ns());
  }
  // Keep beating (as the daemon's timer does) until told "done", so the consumer's last wait
  // ends by its timeout rather than seeing a stale heartbeat.
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::string l;
    std::getline(std::cin, l);
    done = true;
  });
  while (!done) {
    slot.maintain(shm::monotonic_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  reader.join();
  return 0;
}

double pct(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

int consumer(const std::string& prefix, const std::string& name, int frames, bool poll) {
  meshdock::AttachOptions o;
  o.prefix = prefix;
  auto slot = meshdock::Slot::attach(name, o);
  if (!slot.wait(std::chrono::seconds(5))) return 3;  // frame 1
  std::cout << "attached" << std::endl;
  std::vector<double> latency, adopt;
  std::uint32_t last = slot.write_idx();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (static_cast<int>(latency.size()) < frames && std::chrono::steady_clock::now() < deadline) {
    std::optional<meshdock::Frame> f;
    if (poll) {
      const auto idle = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      while (slot.write_idx() == last && std::chrono::steady_clock::now() < idle)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      f = slot.wait(std::chrono::milliseconds(0));
    } else {
      f = slot.wait(std::chrono::milliseconds(500));
    }
    const double now = shm::monotonic_seconds();
    if (!f) break;
    last = static_cast<std::uint32_t>(f->number());
    latency.push_back((now - slot.publish_time()) * 1e6);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<DLManagedTensor*> ts;
    for (const auto& n : f->names()) ts.push_back(f->to_dlpack(n));
    const auto t1 = std::chrono::steady_clock::now();
    adopt.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    for (auto* t : ts) t->deleter(t);
    if (ts.size() != 10) {
      std::cerr << "expected 10 arrays, got " << ts.size() << std::endl;
      return 4;
    }
  }
  nlohmann::json out = {{"mode", poll ? "poll-1ms" : "futex"},
                        {"frames", latency.size()},
                        {"p50", pct(latency, 0.50)},
                        {"p95", pct(latency, 0.95)},
                        {"p99", pct(latency, 0.99)},
                        {"max", pct(latency, 1.0)},
                        {"adopt_p50", pct(adopt, 0.50)},
                        {"adopt_p99", pct(adopt, 0.99)},
                        {"latency_us", latency}};  // every frame, for scripts/bench --plot
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "producer" && argc == 6)
    return producer(argv[2], argv[3], std::stoi(argv[4]), std::stoi(argv[5]));
  if (mode == "consumer" && argc == 6)
    return consumer(argv[2], argv[3], std::stoi(argv[4]), std::string(argv[5]) == "poll");
  std::cerr << "usage: bench_attach producer PREFIX NAME FRAMES INTERVAL_US\n"
               "       bench_attach consumer PREFIX NAME FRAMES futex|poll\n";
  return 2;
}
