// Scratch vectors for a reader's big temporaries (base64-decoded bytes, node tags). They come
// from the host allocator (huge pages, unmapped or kept for reuse when released), not from
// malloc, whose moving mmap threshold made the same temporary cost a fresh page fault per 4 KiB
// on one read and stay resident after being freed on another. Never from the allocator hook:
// pinned memory is for the arrays a device will take.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "daemon/mesh/allocator.hpp"

namespace meshdock::mesh {

template <typename T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  template <typename U>
  ScratchAllocator(const ScratchAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator does
  // Small ones from operator new: page alignment buys a scratch buffer nothing, and under ASan
  // every 4096-aligned block held its own pages in the quarantine (a fuzz target's RSS grew
  // by 11 KB a run).
  T* allocate(std::size_t n) {
    if (n * sizeof(T) < kHugeFrom) return std::allocator<T>().allocate(n);
    const Allocator a = host_allocator();
    void* p = a.allocate(n * sizeof(T), a.ctx);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < kHugeFrom) return std::allocator<T>().deallocate(p, n);
    const Allocator a = host_allocator();
    a.release(p, n * sizeof(T), a.ctx);
  }
  friend bool operator==(const ScratchAllocator&, const ScratchAllocator&) { return true; }
};

template <typename T>
using ScratchVector = std::vector<T, ScratchAllocator<T>>;

// The whole 2 MiB pages inside [begin, end) leave the process (MADV_DONTNEED): for a scratch
// buffer the reader has consumed the front of, so it shrinks while what is built from it grows.
// The bytes read as zeros afterwards; the caller must not need them again.
void drop_pages(const void* begin, const void* end);
// Where the memory of `v` ends: its capacity rounded up to the allocation's 4 KiB page, so
// drop_pages(..., scratch_end(v)) takes every whole huge page up to the end (the small-page
// tail after the last one, under 2 MiB, stays until the buffer is released).
const void* scratch_end(const void* data, std::size_t capacity_bytes);
template <typename T>
const void* scratch_end(const ScratchVector<T>& v) {
  return scratch_end(v.data(), v.capacity() * sizeof(T));
}

}  // namespace meshdock::mesh
