// Page-locked host memory for the arrays a device will take (issue 15, "pinned reads done
// right"), behind the mesh allocator hook: readers write straight into it, and the CUDA backend's
// cudaMemcpyAsync then reads it by DMA at the pinned bandwidth, with no staging copy.
//
// Pinning is not free: cudaHostAlloc maps and locks every page (a fixed cost per call plus a cost
// per byte), so
//   - arrays under `min_bytes` (1 MiB) stay pageable host memory: their upload is short however
//     it is staged, and pinning them would cost more than it saves;
//   - released pinned buffers are kept, by length rounded up to 2 MiB, up to `max_cached` bytes,
//     and the next allocation of that length takes one back: a reload (or a reader's next array
//     of the same size) pays no cudaHostAlloc. trim() (an unload) gives them all back.
//   - when cudaHostAlloc fails (the pinned limit, no memory), the array is pageable instead and
//     `on_fallback` is told (the daemon logs it): slower uploads, never a failed read.
// The raw allocation functions are parameters so that the pool is tested without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>

#include "daemon/mesh/allocator.hpp"

namespace meshdock::backend {

class PinnedPool {
 public:
  struct Raw {
    std::function<void*(std::size_t bytes)> alloc;  // nullptr on failure
    void (*free)(void* p) = nullptr;
    const char* name = "cudaHostAlloc";
  };
  struct Options {
    std::size_t min_bytes = std::size_t{1} << 20;
    std::size_t max_cached = std::size_t{256} << 20;
    std::function<void(const std::string&)> on_fallback;  // a pinned allocation failed
  };
  struct Counters {
    std::uint64_t pinned = 0;     // raw pinned allocations made
    std::uint64_t reused = 0;     // allocations served from the kept buffers
    std::uint64_t pageable = 0;   // small arrays, and fallbacks
    std::uint64_t fallbacks = 0;  // pinned allocations that failed (served pageable)
    std::uint64_t freed = 0;      // raw pinned buffers given back
    std::size_t kept_bytes = 0;   // released pinned buffers kept for reuse
    std::size_t live_bytes = 0;   // pinned bytes handed out and not released
  };
  static constexpr std::size_t kGranule = std::size_t{2} << 20;

  PinnedPool(Raw raw, Options options);
  // Uninstalls itself if installed (the previous allocator comes back) and frees what it keeps.
  // Every buffer it handed out must have been released by then.
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  void* allocate(std::size_t bytes);  // nullptr only when pageable memory fails too
  void release(void* p, std::size_t bytes);
  void trim();  // frees every kept buffer
  Counters counters() const;
  // Makes this pool the mesh allocator hook (mesh::set_allocator) until it is destroyed.
  void install();
  std::string describe() const;  // "cudaHostAlloc from 1 MiB, up to 256 MiB kept for reuse"

 private:
  static std::size_t length_of(std::size_t bytes);

  Raw raw_;
  Options o_;
  mesh::Allocator pageable_ = mesh::host_allocator();
  mutable std::mutex m_;
  std::multimap<std::size_t, void*> kept_;  // length -> buffer
  std::unordered_set<void*> live_;          // pinned buffers handed out
  Counters c_;
  bool installed_ = false;
  mesh::Allocator previous_{};
};

}  // namespace meshdock::backend
