#include "daemon/backend/pinned_pool.hpp"

#include <utility>

namespace meshdock::backend {

namespace {

std::string mib(std::size_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

PinnedPool::PinnedPool(Raw raw, Options options) : raw_(raw), o_(std::move(options)) {}

PinnedPool::~PinnedPool() {
  if (installed_) mesh::set_allocator(previous_);
  trim();
}

std::size_t PinnedPool::length_of(std::size_t bytes) {
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

void* PinnedPool::allocate(std::size_t bytes) {
  if (bytes >= o_.min_bytes) {
    const auto length = length_of(bytes);
    std::unique_lock lock(m_);
    if (auto it = kept_.find(length); it != kept_.end()) {
      void* p = it->second;
      kept_.erase(it);
      c_.kept_bytes -= length;
      live_.insert(p);
      c_.live_bytes += length;
      ++c_.reused;
      return p;
    }
    lock.unlock();  // cudaHostAlloc takes milliseconds for big buffers: not under the lock
    if (void* p = raw_.alloc(length)) {
      lock.lock();
      live_.insert(p);
      c_.live_bytes += length;
      ++c_.pinned;
      return p;
    }
    lock.lock();
    ++c_.fallbacks;
    const auto n = c_.fallbacks;
    lock.unlock();
    // The first failure, then one in a hundred: a burst of them must not flood the log.
    if (o_.on_fallback && (n == 1 || n % 100 == 0))
      o_.on_fallback(std::string(raw_.name) + " of " + std::to_string(bytes) + " bytes failed (" +
                     std::to_string(n) +
                     " so far): the array is in pageable memory instead, and its upload is "
                     "staged by the driver (slower)");
  }
  std::lock_guard lock(m_);
  ++c_.pageable;
  return pageable_.allocate(bytes, pageable_.ctx);
}

void PinnedPool::release(void* p, std::size_t bytes) {
  if (!p) return;
  std::unique_lock lock(m_);
  if (!live_.erase(p)) {  // a pageable one (small, or a fallback)
    lock.unlock();
    pageable_.release(p, bytes, pageable_.ctx);
    return;
  }
  const auto length = length_of(bytes);
  c_.live_bytes -= length;
  if (c_.kept_bytes + length <= o_.max_cached) {
    kept_.emplace(length, p);
    c_.kept_bytes += length;
    return;
  }
  ++c_.freed;
  lock.unlock();
  raw_.free(p);
}

void PinnedPool::trim() {
  std::multimap<std::size_t, void*> gone;
  {
    std::lock_guard lock(m_);
    gone.swap(kept_);
    c_.kept_bytes = 0;
    c_.freed += gone.size();
  }
  for (const auto& [length, p] : gone) raw_.free(p);
}

PinnedPool::Counters PinnedPool::counters() const {
  std::lock_guard lock(m_);
  return c_;
}

void PinnedPool::install() {
  mesh::Allocator a;
  a.ctx = this;
  a.name = "pinned pool";
  a.allocate = [](std::size_t bytes, void* ctx) {
    return static_cast<PinnedPool*>(ctx)->allocate(bytes);
  };
  a.release = [](void* p, std::size_t bytes, void* ctx) {
    static_cast<PinnedPool*>(ctx)->release(p, bytes);
  };
  a.trim = [](void* ctx) { static_cast<PinnedPool*>(ctx)->trim(); };
  previous_ = mesh::set_allocator(a);
  installed_ = true;
}

std::string PinnedPool::describe() const {
  return std::string(raw_.name) + " from " + std::to_string(o_.min_bytes) + " bytes, up to " +
         mib(o_.max_cached) + " kept for reuse";
}

}  // namespace meshdock::backend
