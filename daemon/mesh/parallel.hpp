// parallel_for: the one way mesh I/O spreads independent work (zlib blocks, pieces of a big
// block) over the cores; InOrder: their results seen in file order.
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

// Items of a parallel_for finished in any order, seen in order: done(i, advance) marks item i
// and, when that completes a longer run of items from 0, calls advance(front) with every item
// below `front` done. advance runs under a lock, so it may touch state that is not
// thread-safe. (Readers use it to drop the source of what all pieces before a point consumed,
// including pages two neighbouring pieces share.)
class InOrder {
 public:
  explicit InOrder(std::size_t n) : done_(n, false) {}
  template <typename F>
  void done(std::size_t i, F&& advance) {
    std::lock_guard lock(m_);
    done_[i] = true;
    const std::size_t before = front_;
    while (front_ < done_.size() && done_[front_]) ++front_;
    if (front_ != before) advance(front_);
  }

 private:
  std::mutex m_;
  std::vector<bool> done_;
  std::size_t front_ = 0;
};

}  // namespace meshdock::mesh
