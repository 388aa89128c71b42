// A fake GPU for tests of the CUDA path on machines without one: the daemon's half is a
// backend whose slot buffers are host shm objects but which says it is device cuda:0 (so the
// catalog, the pages and the SDK take the CUDA branch), and the SDK's half is a DeviceIpc that
// "imports" those buffers by mapping the objects read-write, as cudaIpcOpenMemHandle maps
// device memory. Both halves share one FakeDevice, which counts what is open and records every
// moment the daemon frees a buffer a consumer still has open (on CUDA, undefined behaviour) and
// every open of a buffer that is already freed (on CUDA, an error or another allocation's
// bytes).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "daemon/backend/backend.hpp"
#include "meshdock/device_ipc.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::testing {

struct FakeDevice {
  std::mutex m;
  std::map<std::string, int> live;  // buffers allocated and not freed: object -> imports open
  std::vector<std::string> freed_while_open, opened_when_freed;
  int events_open = 0;
  std::vector<std::pair<std::uintptr_t, std::string>> waits;  // (stream, buffer of the event)
  bool fail_opens = false;
  bool fail_events = false;
  bool no_events = false;  // buffers made now have an all-zero event handle (no IPC events)
  // Consumer streams' work (DeviceIpc::record_use): `busy` keeps every mark unpassed until a
  // blocking wait; `marks_live` counts marks not freed; `marked` the streams marked.
  bool busy = false;
  int marks_live = 0, blocking_waits = 0;
  std::vector<std::uintptr_t> marked;
  // Which GPU it is (DeviceIpc::ordinal_of): the daemon sees it as cuda:<daemon_ordinal> with
  // UUID `uuid` (`daemon_writes_uuid` false: its catalog says none, as an older daemon's), the
  // consumer's runtime sees the GPUs `visible` (their UUIDs in ordinal order; nullopt: it
  // cannot tell), and an open on any other ordinal than the GPU's own in the consumer fails,
  // as on CUDA.
  int daemon_ordinal = 0;
  bool daemon_writes_uuid = true;
  int uuid_lookups = 0;  // ordinal_of calls (each starts the runtime on CUDA)
  shm::DeviceUuid uuid{0x6d, 0x64, 0xfa, 0x4e, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::optional<std::vector<shm::DeviceUuid>> visible = std::vector<shm::DeviceUuid>{uuid};

  // The consumer's ordinal of the GPU with UUID `u`, as DeviceIpc::ordinal_of answers (-1:
  // not visible; nullopt: cannot tell). The caller holds `m`.
  std::optional<std::int32_t> visible_ordinal(const shm::DeviceUuid& u) const {
    if (!visible) return std::nullopt;
    for (std::size_t i = 0; i < visible->size(); ++i)
      if ((*visible)[i] == u) return static_cast<std::int32_t>(i);
    return -1;
  }
  // The ordinal the consumer must open on (-1: none). The caller holds `m`.
  int consumer_ordinal() const { return visible_ordinal(uuid).value_or(daemon_ordinal); }

  int imports_open() {
    std::lock_guard lock(m);
    int n = 0;
    for (const auto& [name, opens] : live) n += opens;
    return n;
  }
};

// The daemon's half: the host backend's buffers under a CUDA device's name.
class FakeDeviceBackend final : public backend::Backend {
 public:
  explicit FakeDeviceBackend(std::shared_ptr<FakeDevice> dev) : dev_(std::move(dev)) {}
  const char* name() const override { return "cuda"; }
  payload::Device device() const override { return {shm::kDLDeviceCUDA, dev_->daemon_ordinal}; }
  shm::DeviceUuid device_uuid() const override {
    return dev_->daemon_writes_uuid ? dev_->uuid : shm::DeviceUuid{};
  }
  // Each allocation has a handle of its own, as on CUDA: a slot made again under the same
  // names (a reload onto another ring size) while the old one's buffer is kept for a consumer
  // gets buffers named apart ("NAME.2"), so that neither the fake's counts nor a consumer's
  // counted re-open (FakeDeviceIpc) take one for the other.
  std::unique_ptr<backend::SlotBuffer> allocate(const std::string& object,
                                                std::uint64_t bytes) override {
    std::lock_guard lock(dev_->m);  // a slot allocates from one thread: holding it is cheap
    std::string name = object;
    for (int n = 2; dev_->live.count(name); ++n) name = object + "." + std::to_string(n);
    auto inner = host_->allocate(name, bytes);
    dev_->live[name] = 0;
    return std::make_unique<Buffer>(std::move(inner), name, dev_, dev_->no_events);
  }
  void upload(backend::SlotBuffer& b, const std::vector<backend::Placement>& arrays) override {
    host_->upload(*static_cast<Buffer&>(b).inner, arrays);
  }
  std::uint64_t memory_used() const override { return host_->memory_used(); }
  bool consumers_can_write() const override { return true; }  // IPC maps device memory rw

 private:
  struct Buffer final : backend::SlotBuffer {
    Buffer(std::unique_ptr<backend::SlotBuffer> in, std::string obj, std::shared_ptr<FakeDevice> d,
           bool no_event)
        : inner(std::move(in)), object(std::move(obj)), dev(std::move(d)), no_event(no_event) {}
    ~Buffer() override {  // cudaFree
      std::lock_guard lock(dev->m);
      if (dev->live[object] > 0) dev->freed_while_open.push_back(object);
      dev->live.erase(object);
    }
    shm::Handle mem_handle() const override { return inner->mem_handle(); }
    shm::Handle event_handle() const override {  // names the same
      return no_event ? shm::Handle{} : inner->mem_handle();
    }
    std::uint64_t size() const override { return inner->size(); }
    std::unique_ptr<backend::SlotBuffer> inner;
    std::string object;
    std::shared_ptr<FakeDevice> dev;
    bool no_event;
  };
  std::shared_ptr<FakeDevice> dev_;
  std::unique_ptr<backend::Backend> host_ = backend::make_host_backend(0600);
};

// The SDK's half.
class FakeDeviceIpc final : public DeviceIpc {
 public:
  explicit FakeDeviceIpc(std::shared_ptr<FakeDevice> dev) : dev_(std::move(dev)) {}
  void* open_memory(std::int32_t device, const shm::Handle& handle) override {
    const auto object = shm::parse_host_handle(handle);
    std::lock_guard lock(dev_->m);
    if (dev_->fail_opens) throw std::runtime_error("invalid resource handle (fake device)");
    if (device != dev_->consumer_ordinal())
      throw std::runtime_error("invalid device ordinal (fake device: cuda:" +
                               std::to_string(device) + " is not the slot's GPU here)");
    const auto it = dev_->live.find(object);
    if (it == dev_->live.end()) {
      dev_->opened_when_freed.push_back(object);
      throw std::runtime_error("invalid resource handle (fake device: " + object + " was freed)");
    }
    ++it->second;
    // As CUDA: "If the memory handle has already been opened by the current context, the
    // reference count on the handle is incremented by 1 and the existing device pointer is
    // returned" (one FakeDeviceIpc is one process's context); unmapped at the last close.
    for (auto& [p, m] : maps_)
      if (m.object == object) {
        ++m.refs;
        return p;
      }
    auto seg = shm::Segment::open(object, shm::Access::kReadWrite);
    void* p = seg.data();
    maps_.emplace(p, Mapping{object, std::move(seg), 1});
    return p;
  }
  std::optional<std::int32_t> ordinal_of(const shm::DeviceUuid& uuid) override {
    std::lock_guard lock(dev_->m);
    ++dev_->uuid_lookups;
    return dev_->visible_ordinal(uuid);
  }
  void close_memory(void* ptr) noexcept override {
    std::lock_guard lock(dev_->m);
    const auto it = maps_.find(ptr);
    if (it == maps_.end()) return;
    if (auto l = dev_->live.find(it->second.object); l != dev_->live.end()) --l->second;
    if (--it->second.refs == 0) maps_.erase(it);
  }
  // Opens of `ptr`'s handle not closed yet in this context (0: unmapped).
  int refs(const void* ptr) {
    std::lock_guard lock(dev_->m);
    const auto it = maps_.find(const_cast<void*>(ptr));
    return it == maps_.end() ? 0 : it->second.refs;
  }
  void* open_event(std::int32_t /*device*/, const shm::Handle& handle) override {
    std::lock_guard lock(dev_->m);
    if (dev_->fail_events) throw std::runtime_error("invalid resource handle (fake event)");
    ++dev_->events_open;
    auto e = std::make_unique<std::string>(shm::parse_host_handle(handle));
    void* p = e.get();
    events_.emplace(p, std::move(e));
    return p;
  }
  void destroy_event(void* event) noexcept override {
    std::lock_guard lock(dev_->m);
    if (events_.erase(event)) --dev_->events_open;
  }
  void stream_wait(std::uintptr_t stream, void* event) override {
    std::lock_guard lock(dev_->m);
    const auto it = events_.find(event);
    if (it == events_.end()) throw std::runtime_error("invalid resource handle (fake event)");
    dev_->waits.emplace_back(stream, *it->second);
  }
  void* record_use(std::int32_t, std::uintptr_t stream) noexcept override {
    std::lock_guard lock(dev_->m);
    dev_->marked.push_back(stream);
    ++dev_->marks_live;
    return &marks_[next_mark_++];  // any distinct address
  }
  bool use_over(void*, bool block) noexcept override {
    std::lock_guard lock(dev_->m);
    if (block) ++dev_->blocking_waits;
    return block || !dev_->busy;
  }
  void end_use(void* mark) noexcept override {
    std::lock_guard lock(dev_->m);
    for (auto it = marks_.begin(); it != marks_.end(); ++it)
      if (&it->second == mark) {
        marks_.erase(it);
        --dev_->marks_live;
        return;
      }
  }

 private:
  std::shared_ptr<FakeDevice> dev_;
  struct Mapping {
    std::string object;
    shm::Segment segment;
    int refs;
  };
  std::map<void*, Mapping> maps_;
  std::map<void*, std::unique_ptr<std::string>> events_;
  std::map<int, char> marks_;  // std::map: an element's address stays while others come and go
  int next_mark_ = 0;
};

}  // namespace meshdock::testing
