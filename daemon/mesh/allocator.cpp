#include "daemon/mesh/allocator.hpp"

#include <cstdlib>
#include <mutex>

namespace meshdock::mesh {

namespace {

void* host_allocate(std::size_t bytes, void*) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0) return nullptr;
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
