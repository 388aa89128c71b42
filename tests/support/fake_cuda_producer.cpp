// A CUDA slot's producer for tests of the Python SDK on the fake CUDA runtime
// (tests/python/test_fake_cuda_sdk.py): the daemon's CUDA backend and slot code, without the
// daemon around them. Publishes FILE's mesh as slot NAME under PREFIX on cuda:0 and prints
// {"frame": N}; then each line "scale K" on stdin publishes the points times K, and "field"
// the mesh with one more point_data array ("extra", float64), each printing the next
// {"frame": N}; at EOF the slot goes (its shutdown flag set) and it exits 0. A thread runs the
// slot's maintenance every 100 ms, as meshdockd's loop does: without it the heartbeat beat only
// at a publish, and a consumer that took over a second to start (CI's loaded sanitizer pass) saw
// the producer gone.
//
//   fake_cuda_producer PREFIX NAME FILE
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/slot.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: fake_cuda_producer PREFIX NAME FILE\n");
    return 2;
  }
  try {
    namespace mesh = meshdock::mesh;
    auto backend = meshdock::backend::make_cuda_backend(0);
    meshdock::slots::SlotOptions o;
    o.prefix = argv[1];
    o.name = argv[2];
    o.num_slots = 2;
    auto slot = std::make_unique<meshdock::slots::Slot>(o, *backend);
    auto m = mesh::read_mesh(argv[3]);
    auto frame = slot->publish(meshdock::payload::build_payload(m)).frame;
    std::printf("{\"frame\": %llu}\n", static_cast<unsigned long long>(frame));
    std::fflush(stdout);
    // Joined (stop requested) before `slot` goes: declared after it.
    std::jthread maintenance([&slot](std::stop_token stop) {
      while (!stop.stop_requested()) {
        slot->maintain(meshdock::shm::monotonic_ns());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    for (std::string line; std::getline(std::cin, line);) {
      if (line == "field") {
        std::vector<double> extra(static_cast<std::size_t>(m.num_points()));
        for (std::size_t i = 0; i < extra.size(); ++i) extra[i] = 0.5 * static_cast<double>(i);
        m.point_data["extra"] = mesh::Array::from_vector(std::move(extra));
      } else if (line.rfind("scale ", 0) == 0) {
        const double k = std::stod(line.substr(6));
        auto* p = m.points.as<double>();
        for (std::size_t i = 0; i < m.points.size(); ++i) p[i] *= k;
      } else {
        continue;
      }
      frame = slot->publish(meshdock::payload::build_payload(m)).frame;
      std::printf("{\"frame\": %llu}\n", static_cast<unsigned long long>(frame));
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& e) {
    std::printf("{\"error\": \"%s\"}\n", e.what());
    return 1;
  }
}
