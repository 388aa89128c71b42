// What a consumer asks of a GPU runtime for a CUDA slot: open the buffer and the event the daemon
// exported (the control block's 64-byte handles), close them, and order a stream after the
// event. libmeshdock's own implementation is the CUDA runtime's (cudaIpcOpenMemHandle,
// cudaIpcOpenEventHandle, cudaStreamWaitEvent), linked statically. AttachOptions::device_ipc
// stands another in: the tests' fake device (host memory posing as device memory, which counts
// what is open), so the CUDA path's logic runs on machines without a GPU.
//
// Contract the SDK keeps (and the fake checks): every buffer it opens it reports open on its
// registration before it releases the lease of the frame it opened it for, and reports closed
// after it closed it, so the daemon never frees a buffer a consumer still has open (CUDA calls
// that undefined; meshdock/shm/registration.hpp, import reports).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "meshdock/shm/catalog.hpp"
#include "meshdock/shm/control_block.hpp"

namespace meshdock {

class DeviceIpc {
 public:
  virtual ~DeviceIpc() = default;
  // The device memory behind `handle` on device `device`. Throws std::runtime_error with the
  // runtime's message (the caller names the slot). The calling thread's current device is
  // what it was (a consumer's framework keeps its own notion of it).
  virtual void* open_memory(std::int32_t device, const shm::Handle& handle) = 0;
  virtual void close_memory(void* ptr) noexcept = 0;
  // The event behind `handle`, opened on device `device` (nullptr when the runtime has none to
  // give: no ordering). The current device is left as it was, as by open_memory.
  virtual void* open_event(std::int32_t device, const shm::Handle& handle) = 0;
  virtual void destroy_event(void* event) noexcept = 0;
  // The CUDA runtime's special stream handles (cudaStreamLegacy, cudaStreamPerThread), as
  // DLPack's __dlpack__(stream=) passes them: 1 the legacy default stream (0 also means it in
  // code built without per-thread default streams, as libmeshdock is), 2 the calling thread's
  // per-thread default stream (another stream in every thread).
  static constexpr std::uintptr_t kLegacyStream = 1;
  static constexpr std::uintptr_t kPerThreadStream = 2;
  // Makes `stream` (a cudaStream_t; 0 the legacy default stream) wait for `event`.
  virtual void stream_wait(std::uintptr_t stream, void* event) = 0;

  // This process's ordinal of the GPU whose UUID is `uuid` (the catalog's): with another
  // CUDA_VISIBLE_DEVICES than the daemon's (a container given one GPU sees it as cuda:0) the
  // daemon's ordinal names another GPU here, or none. -1: no device this process sees has it;
  // nullopt: the runtime cannot tell (no driver: the open fails later, saying why), and the
  // daemon's ordinal is used.
  virtual std::optional<std::int32_t> ordinal_of(const shm::DeviceUuid& /*uuid*/) {
    return std::nullopt;
  }

  // The end of a frame's use on a consumer stream. A consumer's framework calls a DLPack
  // deleter when its tensor goes, with kernels reading it still queued; the frame's lease must
  // outlive them, or the daemon may write the ring slot under them. record_use marks the point
  // in `stream` (on device `device`) that the work queued so far ends at; nullptr: it cannot
  // (the stream is gone, or a runtime without streams), and the use counts as over.
  // use_over says whether that point was reached (`block`: waits for it); either way an error
  // counts as over (a stream that cannot be waited on holds nothing up). end_use frees the mark.
  virtual void* record_use(std::int32_t /*device*/, std::uintptr_t /*stream*/) noexcept {
    return nullptr;
  }
  virtual bool use_over(void* /*mark*/, bool /*block*/) noexcept { return true; }
  virtual void end_use(void* /*mark*/) noexcept {}
};

// The CUDA runtime's, one per process; nullptr when this libmeshdock was built without CUDA.
std::shared_ptr<DeviceIpc> cuda_device_ipc();

}  // namespace meshdock
