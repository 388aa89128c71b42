// Cross-process wait/wake on a 32-bit word in shared memory.
//
// Linux: the futex syscall without FUTEX_PRIVATE_FLAG (the word is in a MAP_SHARED mapping
// seen by several processes). Elsewhere: a bounded sleep-and-recheck loop, which is correct but
// adds up to 100 µs of latency per wake-up.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#endif

namespace meshdock::shm {

enum class WaitResult { kChanged, kTimedOut };

// Blocks while *word == expected, for at most `timeout`. Returns kChanged as soon as the word
// differs from `expected` (checked on entry, after each wake and after spurious wake-ups).
inline WaitResult futex_wait(std::uint32_t* word, std::uint32_t expected,
                             std::chrono::nanoseconds timeout) {
  std::atomic_ref<std::uint32_t> ref(*word);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (ref.load(std::memory_order_acquire) == expected) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return WaitResult::kTimedOut;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now);
#if defined(__linux__)
    struct timespec ts;
    ts.tv_sec = static_cast<time_t>(left.count() / 1000000000);
    ts.tv_nsec = static_cast<long>(left.count() % 1000000000);
    // EAGAIN (value already changed), EINTR and spurious wakes all loop back to the re-check.
    syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
#else
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(left, std::chrono::microseconds(100)));
#endif
  }
  return WaitResult::kChanged;
}

// Wakes every waiter on `word`. Call after storing the new value with release ordering.
inline void futex_wake_all(std::uint32_t* word) {
#if defined(__linux__)
  syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
#else
  (void)word;
#endif
}

}  // namespace meshdock::shm
