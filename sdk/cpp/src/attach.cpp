#include "meshdock/attach.hpp"

#include "meshdock/dlpack_tensor.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#if defined(MESHDOCK_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace meshdock {

namespace {

// One slot buffer mapped (host) or opened (CUDA) by this process. Cached per ring slot and
// buffer version; frames share it.
struct Mapping {
  shm::Segment host;  // host slots
  void* device_ptr = nullptr;
#if defined(MESHDOCK_HAVE_CUDA)
  cudaEvent_t event = nullptr;
#endif
  std::uint64_t size = 0;
  Mapping() = default;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
#if defined(MESHDOCK_HAVE_CUDA)
    if (event) cudaEventDestroy(event);
    if (device_ptr) cudaIpcCloseMemHandle(device_ptr);
#endif
  }
  void* base() const {
    return device_ptr ? device_ptr : host.data();
  }
};

std::string ms(std::uint64_t ns) {
  return std::to_string(ns / 1000000) + " ms";
}

}  // namespace

struct SlotState {
  std::string name;
  AttachOptions o;
  shm::Segment control, catalog;  // read-only (mode 0640: only the daemon writes them)
  shm::Segment leases;            // read-write: this process's lease entries
  std::optional<shm::ControlBlockView> cb;
  std::optional<shm::CatalogView> cat;
  std::optional<shm::LeasesView> lv;
  // Open while this process may hold leases: the daemon honours leases of registered pids only.
  shm::Registration registration;
  std::string registration_error;  // why there is none (reported when a lease is needed)
  std::uint64_t last_seen = 0;
  std::mutex m;  // cache
  std::map<std::uint32_t, std::pair<std::uint64_t, std::shared_ptr<Mapping>>> cache;
  // The last manifest decoded per ring slot: a republish of the same layout (the common case)
  // reuses it after a byte compare instead of parsing the JSON again.
  std::map<std::uint32_t, std::pair<std::string, std::shared_ptr<const shm::Manifest>>> manifests;

  std::shared_ptr<const shm::Manifest> decode(std::uint32_t i, const shm::PageSnapshot& snap) {
    std::lock_guard lock(m);
    auto& slot = manifests[i];
    if (slot.second && slot.first == snap.manifest) return slot.second;
    auto decoded =
        std::make_shared<const shm::Manifest>(shm::decode_manifest(snap.manifest, snap.data_size));
    slot = {snap.manifest, decoded};
    return decoded;
  }

  std::string what() const { return "slot '" + name + "' (/" + o.prefix + name + ")"; }

  void check_producer() const {
    if (cb->shutdown_byte() != 0)
      throw ProducerGone(what() +
                         ": producer gone (shutdown flag set; the daemon stopped or "
                         "unloaded it)");
    const auto now = shm::monotonic_ns();
    const auto hb = cat->heartbeat_ns();
    const auto max = static_cast<std::uint64_t>(o.producer_timeout.count()) * 1000000;
    if (now > hb && now - hb > max)
      throw ProducerGone(what() + ": producer gone (heartbeat " + ms(now - hb) +
                         " old; daemon pid " + std::to_string(cat->daemon_pid()) +
                         (shm::pid_alive(cat->daemon_pid()) ? " alive but stuck)" : " dead)"));
  }

  std::shared_ptr<Mapping> map(std::uint32_t i, std::uint64_t version, std::uint64_t data_size) {
    std::lock_guard lock(m);
    auto it = cache.find(i);
    if (it != cache.end() && it->second.first == version) return it->second.second;
    auto mp = std::make_shared<Mapping>();
    if (cat->device_type() == shm::kDLDeviceCPU) {
      // The name is a function of (slot, version): a buffer the daemon retired while we hold
      // its lease is still there under it, whatever the control block's handle says now.
      const auto object = shm::data_object_name(o.prefix, name, i, version);
      try {
        mp->host = shm::Segment::open(object, shm::Access::kReadOnly);
      } catch (const std::exception& e) {
        throw SdkError(what() + ": slot " + std::to_string(i) + " buffer /" + object + ": " +
                       e.what());
      }
      mp->size = mp->host.size();
    } else {
#if defined(MESHDOCK_HAVE_CUDA)
      const auto mh = cb->mem_handle(i);
      const auto eh = cb->event_handle(i);
      cudaIpcMemHandle_t h;
      std::memcpy(&h, mh.data(), sizeof h);
      cudaSetDevice(cat->device_id());
      if (cudaIpcOpenMemHandle(&mp->device_ptr, h, cudaIpcMemLazyEnablePeerAccess) != cudaSuccess) {
        const auto err = cudaGetLastError();
        throw SdkError(what() + ": cudaIpcOpenMemHandle of slot " + std::to_string(i) + ": " +
                       cudaGetErrorString(err));
      }
      cudaIpcEventHandle_t e;
      std::memcpy(&e, eh.data(), sizeof e);
      if (cudaIpcOpenEventHandle(&mp->event, e) != cudaSuccess) {
        const auto err = cudaGetLastError();
        throw SdkError(what() + ": cudaIpcOpenEventHandle of slot " + std::to_string(i) + ": " +
                       cudaGetErrorString(err));
      }
      mp->size = data_size;
#else
      throw SdkError(what() + " is a CUDA slot; this libmeshdock was built without CUDA");
#endif
    }
    if (mp->size < data_size)
      throw SdkError(what() + ": slot " + std::to_string(i) + " buffer is " +
                     std::to_string(mp->size) + " bytes; the page says " +
                     std::to_string(data_size));
    cache[i] = {version, mp};
    return mp;
  }
};

struct FrameState {
  std::shared_ptr<SlotState> slot;
  std::shared_ptr<Mapping> mapping;
  std::uint32_t index = 0;
  std::uint32_t lease = 0;
  std::uint64_t frame = 0;
  std::shared_ptr<const shm::Manifest> manifest;
  ~FrameState() { slot->lv->table(index).release(lease, ::getpid()); }
};

// ---- Slot
// ----------------------------------------------------------------------------------------

namespace {

// Opens and validates the segments of `name` and registers with the daemon. Returns nullptr
// when they are not there (yet); throws SdkError when they are there but malformed.
std::shared_ptr<SlotState> open_segments(const std::string& name, const AttachOptions& options,
                                         const std::string& control_name,
                                         const std::string& catalog_name) {
  if (!shm::Segment::exists(control_name) || !shm::Segment::exists(catalog_name)) return nullptr;
  const auto leases_name =
      catalog_name.substr(0, catalog_name.size() - shm::kCatalogSuffix.size()) +
      std::string(shm::kLeasesSuffix);
  auto s = std::make_shared<SlotState>();
  s->name = name;
  s->o = options;
  try {
    s->control = shm::Segment::open(control_name, shm::Access::kReadOnly);
    s->catalog = shm::Segment::open(catalog_name, shm::Access::kReadOnly);
    if (!shm::CatalogView::ready(s->catalog.data(), s->catalog.size()))
      return nullptr;  // the daemon is creating it right now: look again
    s->cb.emplace(
        shm::ControlBlockView::validate(s->control.data(), s->control.size(), control_name));
    s->cat.emplace(shm::CatalogView::validate(s->catalog.data(), s->catalog.size(), catalog_name));
    s->leases = shm::Segment::open(leases_name, shm::Access::kReadWrite);
    // The shape is the catalog's (validated, read-only to us), never the leases segment's.
    s->lv.emplace(shm::LeasesView::over(s->leases.data(), s->leases.size(), s->cat->num_slots(),
                                        s->cat->lease_capacity(), leases_name));
  } catch (const shm::ProtocolError& e) {
    throw SdkError(e.what());
  } catch (const std::exception&) {
    return nullptr;  // removed between exists() and open(): look again
  }
  if (s->cb->num_slots() != s->cat->num_slots())
    throw SdkError(s->what() + ": control block has " + std::to_string(s->cb->num_slots()) +
                   " slots, catalog " + std::to_string(s->cat->num_slots()));
  // The daemon must be the catalog's pid, running as the catalog's owner.
  struct stat st {};
  const bool owner_known = ::stat(("/dev/shm/" + catalog_name).c_str(), &st) == 0;
  try {
    if (!owner_known) throw shm::ProtocolError(s->what() + ": cannot stat /" + catalog_name);
    s->registration = shm::Registration::connect(
        s->cat->socket_address(), s->cat->daemon_pid(), st.st_uid,
        std::min<std::chrono::milliseconds>(options.timeout, std::chrono::milliseconds(2000)),
        s->what());
  } catch (const shm::ProtocolError& e) {
    s->registration_error = e.what();  // a dead daemon's segments: wait() says ProducerGone first
  }
  return s;
}

}  // namespace

Slot Slot::attach(const std::string& name, const AttachOptions& options) {
  std::string control_name, catalog_name;
  try {
    control_name = shm::control_object_name(options.prefix, name);
    catalog_name = shm::catalog_object_name(options.prefix, name);
  } catch (const shm::ProtocolError& e) {
    throw SdkError(e.what());
  }
  // The segments appear when the daemon loads the mesh: until then there is nothing to sleep
  // on, so look every 10 ms.
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  std::shared_ptr<SlotState> s;
  while (!(s = open_segments(name, options, control_name, catalog_name))) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw AttachTimeout("slot '" + name + "' (/" + options.prefix + name +
                          "): not published within " + std::to_string(options.timeout.count()) +
                          " ms (is meshdockd running with prefix '" + options.prefix +
                          "' and the mesh loaded?)");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s->check_producer();
  return Slot(std::move(s));
}

// With reattach: the producer is gone (`why`); look every 20 ms for segments of the same name
// whose producer is alive (a restarted daemon replaces the dead one's segments), until the
// deadline. Held frames keep the old SlotState, and so the old mappings.
void Slot::reattach_after(const ProducerGone& why, std::chrono::steady_clock::time_point deadline) {
  const auto control_name = shm::control_object_name(s_->o.prefix, s_->name);
  const auto catalog_name = shm::catalog_object_name(s_->o.prefix, s_->name);
  while (true) {
    if (auto fresh = open_segments(s_->name, s_->o, control_name, catalog_name)) {
      try {
        fresh->check_producer();
        s_ = std::move(fresh);
        ++reattaches_;
        return;
      } catch (const ProducerGone&) {
        // still the dead producer's segments
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw ProducerGone(std::string(why.what()) + "; no live producer published it again in time");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::uint32_t Slot::reattaches() const {
  return reattaches_;
}

const std::string& Slot::name() const {
  return s_->name;
}
std::uint32_t Slot::write_idx() const {
  return s_->cb->write_idx();
}
std::uint32_t Slot::num_slots() const {
  return s_->cb->num_slots();
}
std::int32_t Slot::device_type() const {
  return s_->cat->device_type();
}
void Slot::check_producer() const {
  s_->check_producer();
}
double Slot::publish_time() const {
  return s_->cb->timestamp();
}

std::optional<Frame> Slot::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto pid = ::getpid();
  while (true) {
    try {
      s_->check_producer();
    } catch (const ProducerGone& gone) {
      if (!s_->o.reattach) throw;
      reattach_after(gone, deadline);
      continue;
    }
    const std::uint32_t w = s_->cb->write_idx();
    if (w > s_->last_seen && w > 0) {
      const std::uint32_t i = (w - 1) % s_->cb->num_slots();
      auto page = s_->cat->page(i);
      if (!s_->registration.valid())
        throw SdkError(s_->registration_error +
                       " (a lease of an unregistered process would not count)");
      auto table = s_->lv->table(i);
      const auto lease = table.acquire(pid, w);
      if (!lease)
        throw SdkError(s_->what() + ": every lease of slot " + std::to_string(i) +
                       " is taken (too many frames held; release some)");
      // The consumer's half of the handshake in PageView::begin_write.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      std::optional<shm::PageSnapshot> snap;
      try {
        snap = page.try_read();
      } catch (const shm::ProtocolError& e) {
        table.release(*lease, pid);
        throw SdkError(s_->what() + ": " + e.what());
      }
      if (!snap || snap->frame != w) {  // being refilled, or already newer: look again
        table.release(*lease, pid);
        continue;
      }
      auto f = std::make_shared<FrameState>();
      f->slot = s_;
      f->index = i;
      f->lease = *lease;  // from here the FrameState releases it
      f->frame = w;
      try {
        f->manifest = s_->decode(i, *snap);
      } catch (const shm::ProtocolError& e) {
        throw SdkError(s_->what() + ": frame " + std::to_string(w) + ": " + e.what());
      }
      f->mapping = s_->map(i, snap->buffer_version, snap->data_size);
      s_->last_seen = w;
      return Frame(std::move(f));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    // Sleep until the futex moves past w; wake every 100 ms to notice a dead producer.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    shm::futex_wait(s_->cat->futex_word(), w, std::min(left, std::chrono::milliseconds(100)));
  }
}

// ---- Frame
// ---------------------------------------------------------------------------------------

std::uint64_t Frame::number() const {
  return s_->frame;
}
std::uint32_t Frame::slot_index() const {
  return s_->index;
}
const shm::Manifest& Frame::manifest() const {
  return *s_->manifest;
}
std::int32_t Frame::device_type() const {
  return s_->slot->cat->device_type();
}
std::int32_t Frame::device_id() const {
  return s_->slot->cat->device_id();
}
std::shared_ptr<const void> Frame::keepalive() const {
  return s_;
}

std::vector<std::string> Frame::names() const {
  std::vector<std::string> v;
  for (const auto& a : s_->manifest->arrays) v.push_back(a.name);
  return v;
}

ArrayRef Frame::array(const std::string& name) const {
  const auto* e = s_->manifest->find(name);
  if (!e)
    throw SdkError(s_->slot->what() + ": frame " + std::to_string(s_->frame) + " has no array '" +
                   name + "'");
  ArrayRef r;
  r.name = name;
  r.entry = *e;
  r.data = static_cast<std::byte*>(s_->mapping->base()) + e->offset;
  r.device_type = device_type();
  r.device_id = device_id();
  return r;
}

DLManagedTensor* Frame::to_dlpack(const std::string& name) const {
  const auto r = array(name);
  return make_dlpack(r.data, DLDevice{static_cast<DLDeviceType>(r.device_type), r.device_id},
                     DLDataType{r.entry.dtype.code, r.entry.dtype.bits, r.entry.dtype.lanes},
                     r.entry.shape, r.entry.strides, s_);  // s_ holds the frame and its lease
}

void Frame::order_after_upload(std::uintptr_t stream) const {
#if defined(MESHDOCK_HAVE_CUDA)
  if (s_->mapping->event)
    cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(stream), s_->mapping->event, 0);
#else
  (void)stream;
#endif
}

}  // namespace meshdock
