// The host backend: slot buffers in POSIX shared memory, filled with memcpy.
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <optional>

#include "daemon/backend/backend.hpp"

namespace meshdock::backend {

namespace {

class HostBuffer final : public SlotBuffer {
 public:
  HostBuffer(shm::Segment seg, std::string object_name, std::atomic<std::uint64_t>& used)
      : seg_(std::move(seg)),
        guard_(seg_.data(), seg_.size()),
        object_name_(std::move(object_name)),
        used_(used) {
    used_ += seg_.size();
  }
  ~HostBuffer() override { used_ -= seg_.size(); }
  shm::Handle mem_handle() const override { return shm::make_host_handle(object_name_); }
  shm::Handle event_handle() const override { return shm::Handle{}; }
  std::uint64_t size() const override { return seg_.size(); }
  bool damaged() const override { return guard_.hit(); }
  bool changed() const override { return !filled_ || stamp() != *filled_; }
  // After an upload: what changed() compares with. The daemon's own writes (an upload) come
  // before it; ftruncate, even back to the same size, changes ctime.
  void filled() { filled_ = stamp(); }
  std::byte* data() { return static_cast<std::byte*>(seg_.data()); }

 private:
  shm::Segment seg_;
  // A process that may write the object (its owner, root) can truncate it: the daemon's memcpy
  // then meets zero pages instead of SIGBUS (meshdock/shm/sigbus_guard.hpp).
  shm::GuardedRange guard_;
  struct Stamp {
    std::uint64_t size = 0;
    timespec ctime{};
    bool operator!=(const Stamp& o) const {
      return size != o.size || ctime.tv_sec != o.ctime.tv_sec || ctime.tv_nsec != o.ctime.tv_nsec;
    }
  };
  Stamp stamp() const {
    struct stat st {};
    if (::fstat(seg_.fd(), &st) != 0) return {};  // unknown: a full copy follows
    return {static_cast<std::uint64_t>(st.st_size), st.st_ctim};
  }
  std::optional<Stamp> filled_;
  std::string object_name_;
  std::atomic<std::uint64_t>& used_;
};

// Fills the page tables of a fresh segment in one call (MADV_POPULATE_WRITE, Linux 5.14), so
// the upload's memcpy does not trap once per 4 KiB page: /dev/shm has no huge pages by default,
// and on a virtual machine each trap is dear (a 54 MB mesh published in 145 ms, most of it page
// faults). Advice only: an older kernel says EINVAL and the pages fault in as they are written.
void prefault(void* p, std::size_t bytes) {
#if !defined(MADV_POPULATE_WRITE)
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  if (bytes >= (1u << 20)) ::madvise(p, bytes, MADV_POPULATE_WRITE);
}

class HostBackend final : public Backend {
 public:
  explicit HostBackend(mode_t mode) : mode_(mode) {}
  const char* name() const override { return "host"; }
  payload::Device device() const override { return {shm::kDLDeviceCPU, 0}; }

  std::unique_ptr<SlotBuffer> allocate(const std::string& object_name,
                                       std::uint64_t bytes) override {
    try {
      // replace = true: a dead daemon's object of the same name is stale by definition.
      auto seg = shm::Segment::create(object_name, std::max<std::uint64_t>(bytes, 1), mode_, true);
      prefault(seg.data(), seg.size());
      return std::make_unique<HostBuffer>(std::move(seg), object_name, used_);
    } catch (const std::exception& e) {
      throw BackendError("host slot buffer /" + object_name + " (" + std::to_string(bytes) +
                         " bytes): " + e.what());
    }
  }

  void upload(SlotBuffer& buffer, const std::vector<Placement>& arrays) override {
    auto& b = static_cast<HostBuffer&>(buffer);
    for (const auto& p : arrays) {
      const auto n = p.array->nbytes();
      if (p.offset + n > b.size())
        throw BackendError("array at offset " + std::to_string(p.offset) + " (" +
                           std::to_string(n) + " bytes) overruns the " + std::to_string(b.size()) +
                           "-byte slot buffer");
      if (n) std::memcpy(b.data() + p.offset, p.array->data(), n);
    }
    b.filled();
  }

  std::uint64_t memory_used() const override { return used_.load(); }
  // Data segments are made with shm_mode: write bits for group or others let consumers write
  // them (the default, 0640, has none).
  bool consumers_can_write() const override { return (mode_ & 0022) != 0; }

 private:
  mode_t mode_;
  std::atomic<std::uint64_t> used_{0};
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(mode_t mode) {
  return std::make_unique<HostBackend>(mode);
}

}  // namespace meshdock::backend
