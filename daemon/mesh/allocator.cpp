#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/scratch.hpp"

#include <cstdint>
#include <cstdlib>

#include <sys/mman.h>

#include <array>
#include <mutex>
#include <type_traits>
#include <utility>

namespace meshdock::mesh {

namespace {

// Large arrays are 2 MiB aligned and marked for transparent huge pages: a reader filling a
// 32 MB connectivity array then takes 16 page faults instead of 8,000, which is most of the
// difference between parsing in memory (GB/s) and reading a file end to end. They are mapped
// here, not taken from malloc, so that freeing one gives its memory back to the system at once:
// malloc keeps freed blocks below its (moving) mmap threshold in its heap, and a reader's
// temporaries (VTU offsets and types, 8 MB each for a million cells) then stayed resident
// beside the arrays that followed them.
constexpr std::size_t kHugePage = 2u << 20;

// From 1 MiB: one huge-page fault replaces 256 and more 4 KiB ones (each ~14 us on a VM with
// shadow paging).
bool is_huge(std::size_t bytes) {
  return bytes >= kHugeFrom;
}
// The mapping ends on a 4 KiB page: the part after the last whole huge page is small pages, so
// an array does not hold up to 2 MiB it does not use (that was 12% of a 1M-tet MSH read).
std::size_t huge_length(std::size_t bytes) {
  constexpr std::size_t kPage = 4096;
  return (bytes + kPage - 1) / kPage * kPage;
}

void* map_huge(std::size_t length) {  // length: a multiple of 4 KiB
  // Over-map by one huge page, then unmap the ends so what is left starts on a 2 MiB boundary.
  void* raw =
      mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) munmap(raw, aligned - start);
  if (const auto tail = start + length + kHugePage - (aligned + length); tail > 0)
    munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* p = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
  madvise(p, length, MADV_HUGEPAGE);  // advice only: ignored where THP is off
#endif
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack it
#endif
  // The small-page tail is faulted in by one call now rather than a trap per page later (the
  // trap is what costs on a VM). EINVAL on an older kernel: it then faults as it is written.
  if (const std::size_t whole = length / kHugePage * kHugePage; whole < length)
    madvise(static_cast<char*>(p) + whole, length - whole, MADV_POPULATE_WRITE);
  return p;
}

// Released huge mappings, kept (resident) for the next allocation of the same length: reading
// the same mesh again, or a reload of a changed one, then finds its arrays' pages already
// faulted in, as malloc's heap would have them. Bounded in bytes and entries. An allocation
// that finds no match first unmaps the kept mappings smaller than itself, so a reader's
// temporaries (VTU offsets and types) never stay resident beside the bigger array after them.
class HugeCache {
 public:
  static constexpr std::size_t kMaxBytes = 128u << 20;

  void* take(std::size_t length) {
    std::lock_guard lock(m_);
    for (auto& k : kept_) {
      if (k.p && k.length == length) {
        bytes_ -= length;
        return std::exchange(k.p, nullptr);
      }
    }
    unmap_if([&](std::size_t l) { return l < length; });
    return nullptr;
  }
  // False when full: the caller unmaps.
  bool keep(void* p, std::size_t length) {
    std::lock_guard lock(m_);
    if (bytes_ + length > kMaxBytes) return false;
    for (auto& k : kept_) {
      if (!k.p) {
        k = {p, length};
        bytes_ += length;
        return true;
      }
    }
    return false;
  }
  void trim() {
    std::lock_guard lock(m_);
    unmap_if([](std::size_t) { return true; });
  }
  std::size_t bytes() {
    std::lock_guard lock(m_);
    return bytes_;
  }

 private:
  template <typename Pred>
  void unmap_if(Pred pred) {
    for (auto& k : kept_) {
      if (k.p && pred(k.length)) {
        munmap(std::exchange(k.p, nullptr), k.length);
        bytes_ -= k.length;
      }
    }
  }
  struct Kept {
    void* p = nullptr;
    std::size_t length = 0;
  };
  std::mutex m_;
  std::array<Kept, 16> kept_{};
  std::size_t bytes_ = 0;
};
// Nothing to run at exit: buffers released by other static objects' destructors after this one
// would otherwise reach a destroyed cache (the kept mappings go with the process).
static_assert(std::is_trivially_destructible_v<HugeCache>);

HugeCache g_huge;

void* host_allocate(std::size_t bytes, void*) {
  if (!is_huge(bytes)) {
    void* p = nullptr;
    return posix_memalign(&p, 4096, bytes ? bytes : 1) == 0 ? p : nullptr;
  }
  const std::size_t length = huge_length(bytes);
  if (void* p = g_huge.take(length)) return p;
  return map_huge(length);
}
void host_release(void* p, std::size_t bytes, void*) {
  if (!is_huge(bytes)) {
    std::free(p);
    return;
  }
  if (!g_huge.keep(p, huge_length(bytes))) munmap(p, huge_length(bytes));
}

std::mutex g_mutex;
Allocator g_allocator{host_allocate, host_release, nullptr, nullptr, "page-aligned host"};

}  // namespace

void drop_pages(const void* begin, const void* end) {
  // Whole huge pages only: dropping part of one splits it, and the buffer's next use (it is
  // kept for reuse) would then fault that part back 4 KiB at a time.
  constexpr auto page = static_cast<std::uintptr_t>(kHugePage);
  const auto b = (reinterpret_cast<std::uintptr_t>(begin) + page - 1) / page * page;
  const auto e = reinterpret_cast<std::uintptr_t>(end) / page * page;
  if (b < e) madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

const void* scratch_end(const void* data, std::size_t capacity_bytes) {
  const auto* p = static_cast<const char*>(data);
  return p + (is_huge(capacity_bytes) ? huge_length(capacity_bytes) : capacity_bytes);
}

void* map_huge_pages(std::size_t bytes) {
  return map_huge(huge_length(bytes));
}
void unmap_huge_pages(void* p, std::size_t bytes) {
  if (p) munmap(p, huge_length(bytes));
}

std::size_t host_cached_bytes() {
  return g_huge.bytes();
}
void release_host_cache() {
  g_huge.trim();
  const Allocator a = current_allocator();
  if (a.trim) a.trim(a.ctx);
}

Allocator host_allocator() {
  return Allocator{host_allocate, host_release, nullptr, nullptr, "page-aligned host"};
}

const Allocator& current_allocator() {
  std::lock_guard lock(g_mutex);
  return g_allocator;
}

Allocator set_allocator(const Allocator& a) {
  std::lock_guard lock(g_mutex);
  Allocator old = g_allocator;
  g_allocator = a;
  return old;
}

}  // namespace meshdock::mesh
