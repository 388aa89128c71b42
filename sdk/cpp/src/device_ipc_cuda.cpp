// DeviceIpc over the CUDA runtime (cudart, linked statically): what a CUDA slot's frames open.
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "meshdock/device_ipc.hpp"

#if defined(MESHDOCK_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace meshdock {

#if defined(MESHDOCK_HAVE_CUDA)
namespace {

[[noreturn]] void fail(const char* call, cudaError_t err) {
  cudaGetLastError();  // clear it: the next call must not report this one
  throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(err));
}

// The calling thread on `device` for a scope, then back on the device it was on: the current
// device is the caller's (torch's, CuPy's: they share the driver's per-thread context), and an
// attach to a slot on cuda:1 must not move a consumer working on cuda:0.
class DeviceScope {
 public:
  explicit DeviceScope(int device) : to_(device) {
    if (cudaGetDevice(&was_) != cudaSuccess) {
      cudaGetLastError();
      was_ = -1;  // none current yet: nothing to give back
    }
    if (was_ == device) return;
    if (const auto err = cudaSetDevice(device); err != cudaSuccess) {
      was_ = device;  // not moved: the destructor has nothing to undo
      fail(("cudaSetDevice(" + std::to_string(device) + ")").c_str(), err);
    }
  }
  ~DeviceScope() {
    if (was_ >= 0 && was_ != to_ && cudaSetDevice(was_) != cudaSuccess) cudaGetLastError();
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int to_;
  int was_ = -1;
};

class CudaIpc final : public DeviceIpc {
 public:
  void* open_memory(std::int32_t device, const shm::Handle& handle) override {
    DeviceScope on(device);
    cudaIpcMemHandle_t h;
    static_assert(sizeof h == shm::kHandleBytes);
    std::memcpy(&h, handle.data(), sizeof h);
    void* p = nullptr;
    if (const auto err = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
        err != cudaSuccess)
      fail("cudaIpcOpenMemHandle", err);
    return p;
  }
  void close_memory(void* ptr) noexcept override { cudaIpcCloseMemHandle(ptr); }
  std::optional<std::int32_t> ordinal_of(const shm::DeviceUuid& uuid) override {
    int count = 0;
    if (const auto err = cudaGetDeviceCount(&count); err != cudaSuccess) {
      cudaGetLastError();
      // No device visible (CUDA_VISIBLE_DEVICES="" or naming none): the slot's GPU is not seen.
      // Anything else (no driver, too old a driver): the open says why, later.
      if (err == cudaErrorNoDevice) return -1;
      return std::nullopt;
    }
    for (int i = 0; i < count; ++i) {
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
        cudaGetLastError();
        return std::nullopt;  // cannot see them all: cannot say it is not there
      }
      if (std::memcmp(prop.uuid.bytes, uuid.data(), uuid.size()) == 0) return i;
    }
    return -1;
  }
  void* open_event(std::int32_t device, const shm::Handle& handle) override {
    DeviceScope on(device);
    cudaIpcEventHandle_t h;
    static_assert(sizeof h == shm::kHandleBytes);
    std::memcpy(&h, handle.data(), sizeof h);
    cudaEvent_t e = nullptr;
    if (const auto err = cudaIpcOpenEventHandle(&e, h); err != cudaSuccess)
      fail("cudaIpcOpenEventHandle", err);
    return e;
  }
  void destroy_event(void* event) noexcept override {
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  }
  void stream_wait(std::uintptr_t stream, void* event) override {
    // A stream that is not valid here (another context, a destroyed one) would skip the
    // ordering silently: the consumer would read a frame still being copied. Say so instead.
    if (const auto err = cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(stream),
                                             static_cast<cudaEvent_t>(event), 0);
        err != cudaSuccess)
      fail("cudaStreamWaitEvent", err);
  }
  void* record_use(std::int32_t device, std::uintptr_t stream) noexcept override {
    // A deleter runs on whatever thread dropped the tensor: make the event on the frame's
    // device, and give the thread back its own.
    std::optional<DeviceScope> on;
    try {
      on.emplace(device);
    } catch (...) {  // noexcept: no mark, the use counts as over
      return nullptr;
    }
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      e = nullptr;
    } else if (cudaEventRecord(e, reinterpret_cast<cudaStream_t>(stream)) != cudaSuccess) {
      cudaGetLastError();
      cudaEventDestroy(e);
      e = nullptr;
    }
    return e;
  }
  bool use_over(void* mark, bool block) noexcept override {
    const auto e = static_cast<cudaEvent_t>(mark);
    const auto err = block ? cudaEventSynchronize(e) : cudaEventQuery(e);
    if (err == cudaSuccess) return true;
    cudaGetLastError();  // cudaErrorNotReady included: this libmeshdock's own cudart state
    return err != cudaErrorNotReady;
  }
  void end_use(void* mark) noexcept override { cudaEventDestroy(static_cast<cudaEvent_t>(mark)); }
};

}  // namespace

std::shared_ptr<DeviceIpc> cuda_device_ipc() {
  static const auto ipc = std::make_shared<CudaIpc>();  // stateless; shared by every slot
  return ipc;
}
#else
std::shared_ptr<DeviceIpc> cuda_device_ipc() {
  return nullptr;
}
#endif

}  // namespace meshdock
