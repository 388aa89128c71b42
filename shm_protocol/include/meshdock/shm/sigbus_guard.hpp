// A SIGBUS guard for shared-memory mappings another process can truncate.
//
// A process that may write a segment (its owner, or root) can ftruncate it to 0; every later
// access to the mapping past the new end raises SIGBUS, which by default kills the process.
// Register each mapping's [begin, end) with a GuardedRange: a fault inside a registered range
// maps an anonymous zero page (PROT_READ | PROT_WRITE, MAP_FIXED) over the faulting page, so the
// access retries and succeeds on private memory, and sets the range's hit flag for its owner
// to notice (GuardedRange::hit()) and recover. A fault outside every range goes to the handler
// installed before ours (chained), or takes the default action (core dump).
//
// The registry is a fixed-size array of atomics (lock-free: the handler only loads and
// stores atomics and calls mmap, which is async-signal-safe in practice on Linux). These are
// the only globals: a signal handler has nowhere else to look.
#pragma once

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace meshdock::shm {

namespace sigbus_detail {

inline constexpr int kRanges = 1024;
struct Range {
  std::atomic<std::uintptr_t> begin{0}, end{0};
  std::atomic<bool> hit{false};
};
inline std::array<Range, kRanges> g_ranges;
inline struct sigaction g_previous {};  // the handler we chain to; written before ours goes in
inline std::mutex g_install_mutex;

inline void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (auto& r : g_ranges) {
    const auto b = r.begin.load(std::memory_order_acquire);
    if (b && addr >= b && addr < r.end.load(std::memory_order_acquire)) {
      const long page = ::sysconf(_SC_PAGESIZE);
      void* at = reinterpret_cast<void*>(addr & ~static_cast<std::uintptr_t>(page - 1));
      if (::mmap(at, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
        r.hit.store(true, std::memory_order_release);
        return;  // the access retries on the zero page
      }
    }
  }
  if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction &&
      g_previous.sa_sigaction != &on_sigbus) {
    g_previous.sa_sigaction(sig, info, ctx);
    return;
  }
  if (!(g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_handler != SIG_DFL &&
      g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);  // not ours: the default action, as if no handler were installed
  ::raise(sig);
}

}  // namespace sigbus_detail

// Puts our handler in place unless it already is (another module may have installed its own
// since: ours then chains to it). Cheap; called on every registration and from maintenance.
inline void ensure_sigbus_handler() {
  using namespace sigbus_detail;
  std::lock_guard lock(g_install_mutex);
  struct sigaction current {};
  ::sigaction(SIGBUS, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == &on_sigbus) return;
  g_previous = current;
  struct sigaction sa {};
  sa.sa_sigaction = &on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

// One guarded mapping; unregisters on destruction. Register only mappings you own and keep
// mapped for the guard's lifetime. Move-only.
class GuardedRange {
 public:
  GuardedRange() = default;
  GuardedRange(const void* begin, std::size_t size) {
    using namespace sigbus_detail;
    if (!begin || size == 0) return;
    ensure_sigbus_handler();
    const auto b = reinterpret_cast<std::uintptr_t>(begin);
    for (int i = 0; i < kRanges; ++i) {
      std::uintptr_t expected = 0;
      if (g_ranges[i].begin.compare_exchange_strong(expected, b, std::memory_order_acq_rel)) {
        g_ranges[i].hit.store(false, std::memory_order_relaxed);
        g_ranges[i].end.store(b + size, std::memory_order_release);
        slot_ = i;
        return;
      }
    }
    // More than kRanges mappings guarded at once: this one is not (guarded() says so).
  }
  GuardedRange(GuardedRange&& o) noexcept : slot_(o.slot_) { o.slot_ = -1; }
  GuardedRange& operator=(GuardedRange&& o) noexcept {
    if (this != &o) {
      reset();
      slot_ = o.slot_;
      o.slot_ = -1;
    }
    return *this;
  }
  GuardedRange(const GuardedRange&) = delete;
  GuardedRange& operator=(const GuardedRange&) = delete;
  ~GuardedRange() { reset(); }

  bool guarded() const { return slot_ >= 0; }
  // Whether a fault hit this range since it was registered (the mapping now has zero pages).
  bool hit() const {
    return slot_ >= 0 && sigbus_detail::g_ranges[slot_].hit.load(std::memory_order_acquire);
  }

 private:
  void reset() {
    if (slot_ < 0) return;
    auto& r = sigbus_detail::g_ranges[slot_];
    r.end.store(0, std::memory_order_release);
    r.begin.store(0, std::memory_order_release);
    slot_ = -1;
  }
  int slot_ = -1;
};

}  // namespace meshdock::shm
