// The CUDA backend: slot buffers in device memory shared by cudaIpcGetMemHandle, uploads with
// cudaMemcpyAsync on a non-blocking stream, an interprocess event recorded after them.
// Compiled only where the toolkit is (MESHDOCK_HAVE_CUDA); elsewhere make_cuda_backend says so.
#include "daemon/backend/backend.hpp"

#if defined(MESHDOCK_HAVE_CUDA)
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#endif

namespace meshdock::backend {

#if defined(MESHDOCK_HAVE_CUDA)
namespace {

// CUDA's sticky errors: the context is unusable and every later call returns the error
// (driver_types.h: "the process must be terminated and relaunched"). With the uncorrectable
// ECC and NVLink errors, whose memory may no longer hold what was copied there.
bool sticky(cudaError_t err) {
  // By number: the newer ones (226, 721) are missing from older toolkits' headers.
  switch (static_cast<int>(err)) {
    case 214:  // cudaErrorECCUncorrectable
    case 220:  // cudaErrorNvlinkUncorrectable
    case 226:  // cudaErrorContained
    case 700:  // cudaErrorIllegalAddress
    case 702:  // cudaErrorLaunchTimeout
    case 710:  // cudaErrorAssert
    case 714:  // cudaErrorHardwareStackError
    case 715:  // cudaErrorIllegalInstruction
    case 716:  // cudaErrorMisalignedAddress
    case 717:  // cudaErrorInvalidAddressSpace
    case 718:  // cudaErrorInvalidPc
    case 719:  // cudaErrorLaunchFailure
    case 721:  // cudaErrorTensorMemoryLeak
    case 810:  // cudaErrorMpsClientTerminated
    case 911:  // cudaErrorExternalDevice
      return true;
    default:
      return false;
  }
}

void check(cudaError_t err, const std::string& what) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw BackendError(what + ": " + cudaGetErrorString(err));
  }
}

// Slot buffers are whole 2 MiB granules: cudaMalloc hands out no less (the rest would count
// nowhere), and cuda-link's own producer rounds its buffers the same way, so a consumer written
// for it may touch the whole granule of the buffer it opened.
constexpr std::uint64_t kGranule = std::uint64_t{2} << 20;
std::uint64_t granules(std::uint64_t bytes) {
  return (std::max<std::uint64_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
}

// RAII for one device allocation and its interprocess event.
class CudaBuffer final : public SlotBuffer {
 public:
  // `no_event`: set to why, when the runtime gives no interprocess event (some sandboxes' and
  // virtualised drivers refuse them while memory IPC works). The buffer is then published with
  // an all-zero event handle: consumers have nothing to order on, and need nothing, as the
  // backend waits for every upload before it returns (upload()).
  CudaBuffer(int device, std::uint64_t bytes, const std::string& what,
             std::atomic<std::uint64_t>& used, std::string& no_event)
      : device_(device), size_(granules(bytes)), used_(used) {
    check(cudaSetDevice(device), what + ": cudaSetDevice");
    check(cudaMalloc(&ptr_, size_), what + ": cudaMalloc");
    try {
      cudaIpcMemHandle_t mh;
      check(cudaIpcGetMemHandle(&mh, ptr_), what + ": cudaIpcGetMemHandle");
      std::memcpy(mem_.data(), &mh, sizeof mh);
      cudaIpcEventHandle_t eh;
      if (auto err =
              cudaEventCreateWithFlags(&event_, cudaEventInterprocess | cudaEventDisableTiming);
          err != cudaSuccess) {
        cudaGetLastError();
        event_ = nullptr;
        no_event = std::string("cudaEventCreateWithFlags(cudaEventInterprocess): ") +
                   cudaGetErrorString(err);
      } else if (err = cudaIpcGetEventHandle(&eh, event_); err != cudaSuccess) {
        cudaGetLastError();
        cudaEventDestroy(event_);
        event_ = nullptr;
        no_event = std::string("cudaIpcGetEventHandle: ") + cudaGetErrorString(err);
      } else {
        std::memcpy(ev_.data(), &eh, sizeof eh);
      }
    } catch (...) {
      release();
      throw;
    }
    used_ += size_;
  }
  ~CudaBuffer() override {
    used_ -= size_;
    release();
  }
  shm::Handle mem_handle() const override { return mem_; }
  shm::Handle event_handle() const override { return ev_; }
  std::uint64_t size() const override { return size_; }
  void* ptr() const { return ptr_; }
  cudaEvent_t event() const { return event_; }

 private:
  void release() {
    cudaSetDevice(device_);
    if (event_) cudaEventDestroy(event_);
    if (ptr_) cudaFree(ptr_);
    event_ = nullptr;
    ptr_ = nullptr;
  }
  int device_;
  std::uint64_t size_;
  std::atomic<std::uint64_t>& used_;
  void* ptr_ = nullptr;
  cudaEvent_t event_ = nullptr;
  shm::Handle mem_{}, ev_{};
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int id) : id_(id) {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cuda:" + std::to_string(id));
    if (id < 0 || id >= count)
      throw BackendError("cuda:" + std::to_string(id) + ": no such device (" +
                         std::to_string(count) + " answer)");
    check(cudaSetDevice(id), "cuda:" + std::to_string(id));
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
          "cuda:" + std::to_string(id) + ": cudaStreamCreateWithFlags");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, id),
          "cuda:" + std::to_string(id) + ": cudaGetDeviceProperties");
    static_assert(sizeof prop.uuid.bytes == sizeof uuid_);
    std::memcpy(uuid_.data(), prop.uuid.bytes, uuid_.size());
  }
  ~CudaBackend() override {
    cudaSetDevice(id_);
    if (stream_) cudaStreamSynchronize(stream_);
    free_staging();
    if (stream_) cudaStreamDestroy(stream_);
  }
  const char* name() const override { return "cuda"; }
  payload::Device device() const override { return {shm::kDLDeviceCUDA, id_}; }
  shm::DeviceUuid device_uuid() const override { return uuid_; }

  std::unique_ptr<SlotBuffer> allocate(const std::string& object_name,
                                       std::uint64_t bytes) override {
    std::string no_event;
    auto b = std::make_unique<CudaBuffer>(id_, bytes, "cuda slot buffer " + object_name, used_,
                                          no_event);
    if (!no_event.empty() && !events_refused_.exchange(true)) {
      std::lock_guard lock(notes_m_);
      notes_.push_back("cuda:" + std::to_string(id_) + ": the runtime gives no interprocess " +
                       "event (" + no_event + "): slot buffers are published with an all-zero " +
                       "event handle, every upload is waited for before its frame is " +
                       "announced, and consumers order on nothing (a cuda-link consumer that " +
                       "opens the event handle fails)");
    }
    return b;
  }
  std::vector<std::string> take_notes() override {
    std::lock_guard lock(notes_m_);
    return std::exchange(notes_, {});
  }

  void upload(SlotBuffer& buffer, const std::vector<Placement>& arrays) override {
    auto& b = static_cast<CudaBuffer&>(buffer);
    std::lock_guard lock(m_);  // one stream: uploads from concurrent loads queue up
    check(cudaSetDevice(id_), "cudaSetDevice");
    // Sources and bounds first. Under the upload_delay failpoint every source is pinned staging
    // of the backend's own: a copy from pageable memory (an array under the pinned pool's
    // threshold) may wait for the stream, which would absorb the delay on the host, and the
    // payload may be freed before the stream reaches the copy. Staging is allocated before the
    // delay is queued: cudaHostAlloc may synchronise with the device, which would wait out the
    // delay here and announce a frame whose copies have already landed.
    std::vector<std::pair<const void*, const Placement*>> copies;
    if (delay_ms_) {
      // The previous upload's copies are done (its staging may go now).
      check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
      free_staging();
    }
    for (const auto& p : arrays) {
      const auto n = p.array->nbytes();
      if (p.offset + n > b.size())
        throw BackendError("array at offset " + std::to_string(p.offset) + " overruns the slot");
      if (!n) continue;
      const void* src = p.array->data();
      if (delay_ms_) {
        void* s = nullptr;
        check(cudaHostAlloc(&s, n, cudaHostAllocPortable), "cudaHostAlloc (staging)");
        staging_.push_back(s);
        std::memcpy(s, src, n);
        src = s;
      }
      copies.emplace_back(src, &p);
    }
    // From here on only stream work is queued: the delay, the copies, the event.
    if (delay_ms_) {
      check(cudaLaunchHostFunc(
                stream_,
                [](void* ms) {
                  std::this_thread::sleep_for(
                      std::chrono::milliseconds(*static_cast<const std::int64_t*>(ms)));
                },
                &delay_ms_),
            "cudaLaunchHostFunc");
    }
    for (const auto& [src, p] : copies) {
      check(cudaMemcpyAsync(static_cast<char*>(b.ptr()) + p->offset, src, p->array->nbytes(),
                            cudaMemcpyHostToDevice, stream_),
            "cudaMemcpyAsync");
    }
    if (b.event()) check(cudaEventRecord(b.event(), stream_), "cudaEventRecord");
    // Consumers order themselves after the event; the daemon still waits here because the
    // host arrays (the payload) may be freed once publish returns (not under the failpoint,
    // whose copies are from staging, freed at the next upload after it has waited; nor
    // without an event, when nothing else would order a consumer after the copies).
    if (!delay_ms_ || !b.event()) check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void delay_uploads(std::chrono::milliseconds delay) override { delay_ms_ = delay.count(); }

  void free_staging() {
    for (void* s : staging_) cudaFreeHost(s);
    staging_.clear();
  }

  std::uint64_t memory_used() const override { return used_.load(); }
  bool consumers_can_write() const override { return true; }

  std::string lost() override {
    std::lock_guard lock(lost_m_);
    if (!lost_.empty()) return lost_;
    // Any call on the context returns a sticky error; this one never waits (not even for the
    // upload another thread may be queueing) and costs a microsecond or two.
    const auto err = cudaStreamQuery(stream_);
    if (err == cudaSuccess || err == cudaErrorNotReady) return {};
    cudaGetLastError();
    if (!sticky(err)) return {};
    lost_ = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")";
    return lost_;
  }

 private:
  int id_;
  shm::DeviceUuid uuid_{};
  cudaStream_t stream_ = nullptr;
  std::mutex m_;
  std::int64_t delay_ms_ = 0;  // the upload_delay failpoint (0: none)
  std::atomic<bool> events_refused_{false};
  std::mutex notes_m_;
  std::vector<std::string> notes_;
  std::vector<void*> staging_;  // its pinned copies of the last upload's arrays
  std::atomic<std::uint64_t> used_{0};
  std::mutex lost_m_;
  std::string lost_;  // lost(): the sticky error, once seen
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int id) {
  return std::make_unique<CudaBackend>(id);
}

std::unique_ptr<PinnedPool> make_pinned_pool(PinnedPool::Options options, int device) {
  PinnedPool::Raw raw;
  raw.name = "cudaHostAlloc";
  raw.alloc = [device](std::size_t bytes) -> void* {
    // Reader threads allocate: without a device set, their first CUDA call would make a
    // context on device 0 (hundreds of MB there) for a daemon that serves another one.
    cudaSetDevice(device);
    void* p = nullptr;
    if (cudaHostAlloc(&p, std::max<std::size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();  // clear it: the next call must not see this one's error
      return nullptr;
    }
    return p;
  };
  raw.free = [](void* p) { cudaFreeHost(p); };
  return std::make_unique<PinnedPool>(raw, std::move(options));
}

#else

std::unique_ptr<Backend> make_cuda_backend(int id) {
  throw BackendError("cuda:" + std::to_string(id) +
                     ": this build has no CUDA backend (MESHDOCK_WITH_CUDA=OFF or no toolkit)");
}

std::unique_ptr<PinnedPool> make_pinned_pool(PinnedPool::Options, int) {
  throw BackendError("pinned memory needs the CUDA backend, which this build does not have");
}

#endif

}  // namespace meshdock::backend
