// parallel_for: the one way mesh I/O spreads independent work (zlib blocks) over the cores.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace meshdock::mesh {

// Runs f(i) for every i in [0, n) on up to `workers` threads (0: one per core), the calling
// thread among them. Items are handed out one at a time, so uneven items balance. The first
// exception a call of f throws is rethrown here once every thread has stopped.
template <typename F>
void parallel_for(std::size_t n, unsigned workers, F&& f) {
  if (workers == 0) workers = std::max(1u, std::thread::hardware_concurrency());
  workers = static_cast<unsigned>(std::min<std::size_t>(workers, n));
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex m;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        f(i);
      } catch (...) {
        std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    }
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < workers; ++t) pool.emplace_back(work);
    work();
  }  // jthreads join here
  if (error) std::rethrow_exception(error);
}

}  // namespace meshdock::mesh
