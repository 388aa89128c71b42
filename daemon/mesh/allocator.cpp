#include "daemon/mesh/allocator.hpp"

#include <cstdlib>

#include <sys/mman.h>
#include <mutex>

namespace meshdock::mesh {

namespace {

// Large arrays are 2 MiB aligned and marked for transparent huge pages: a reader filling a
// 32 MB connectivity array then takes 16 page faults instead of 8,000, which is most of the
// difference between parsing in memory (GB/s) and reading a file end to end.
constexpr std::size_t kHugePage = 2u << 20;

void* host_allocate(std::size_t bytes, void*) {
  void* p = nullptr;
  const bool huge = bytes >= 2 * kHugePage;
  if (posix_memalign(&p, huge ? kHugePage : 4096, bytes ? bytes : 1) != 0) return nullptr;
#if defined(MADV_HUGEPAGE)
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: ignored where THP is off
#endif
  return p;
}
void host_release(void* p, std::size_t, void*) {
  std::free(p);
}

std::mutex g_mutex;
Allocator g_allocator{host_allocate, host_release, nullptr, "page-aligned host"};

}  // namespace

Allocator host_allocator() {
  return Allocator{host_allocate, host_release, nullptr, "page-aligned host"};
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
