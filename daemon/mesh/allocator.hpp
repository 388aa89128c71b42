// The allocator hook: every mesh array buffer is allocated through it, so the daemon can make
// readers write straight into pinned (page-locked) memory with cudaHostAlloc when a device is
// present, and into page-aligned host memory otherwise. This is the one piece of global
// mutable state the project allows; set it once at start-up, before any read.
#pragma once

#include <cstddef>

namespace meshdock::mesh {

struct Allocator {
  void* (*allocate)(std::size_t bytes, void* ctx) = nullptr;  // nullptr on failure
  void (*release)(void* p, std::size_t bytes, void* ctx) = nullptr;
  void (*trim)(void* ctx) = nullptr;  // gives memory kept for reuse back (optional)
  void* ctx = nullptr;
  const char* name = "page-aligned host";
};

// The allocator now in force (page-aligned host memory unless set_allocator was called).
const Allocator& current_allocator();
// Installs `a` for every later allocation; buffers already allocated keep the allocator they
// were made with. Returns the previous one.
Allocator set_allocator(const Allocator& a);
// Page-aligned host memory: posix_memalign for small buffers; from kHugeFrom (1 MiB), its own
// mapping, 2 MiB aligned and advised for huge pages, unmapped when released (or kept for the
// next allocation of the same length: see allocator.cpp).
Allocator host_allocator();
// From this size the host allocator maps huge pages (below it: posix_memalign, 4096-aligned).
inline constexpr std::size_t kHugeFrom = std::size_t{1} << 20;
// A mapping of its own for `bytes` (rounded up to a 4 KiB page), 2 MiB aligned and advised for
// huge pages, the part after its last whole huge page faulted in at once; nullptr on failure. Never
// kept for reuse: unmap_huge_pages gives it back.
void* map_huge_pages(std::size_t bytes);
void unmap_huge_pages(void* p, std::size_t bytes);
// Bytes of released huge host buffers kept for reuse (at most 128 MiB), and a way to give them
// back to the system now (the daemon does after an unload), with what the allocator in force
// keeps (its trim: the pinned pool's buffers).
std::size_t host_cached_bytes();
void release_host_cache();

}  // namespace meshdock::mesh
