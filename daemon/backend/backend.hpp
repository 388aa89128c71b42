// Backends: where slot buffers live and how payload arrays get there.
//   host: each slot buffer is a POSIX shared-memory object; its handle is "MDH1" + the name.
//   cuda: each slot buffer is cudaMalloc memory exported with cudaIpcGetMemHandle, with an
//         interprocess event recorded after the copy (cudaEventInterprocess |
//         cudaEventDisableTiming) so consumers order their streams after it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/backend/pinned_pool.hpp"
#include "daemon/mesh/array.hpp"
#include "daemon/payload/payload.hpp"
#include "meshdock/shm.hpp"

namespace meshdock::backend {

// The backend layer's one exception type; the message names the buffer or device.
class BackendError : public std::runtime_error {
 public:
  explicit BackendError(const std::string& what) : std::runtime_error(what) {}
};

// One slot buffer. Destroying it frees the memory (host: unlinks the object; consumers that
// mapped it keep their mapping).
class SlotBuffer {
 public:
  virtual ~SlotBuffer() = default;
  virtual shm::Handle mem_handle() const = 0;
  virtual shm::Handle event_handle() const = 0;  // zeros on the host backend
  virtual std::uint64_t size() const = 0;
  // Whether the buffer's memory was truncated under the daemon by another process (host: its
  // SIGBUS guard fired); the Slot then drops it.
  virtual bool damaged() const { return false; }
  // Whether the memory may no longer hold what the last upload left there, though no copy has
  // met a missing page (host: the object's size or ctime changed since: truncated, even if
  // grown back to its size with zeros). A publish that would copy only some arrays copies them
  // all instead (a truncation is then met and damaged() says so).
  virtual bool changed() const { return false; }
};

// An array and where it goes in the slot buffer.
struct Placement {
  const mesh::Array* array;
  std::uint64_t offset;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "host" | "cuda"
  virtual payload::Device device() const = 0;
  // The GPU's UUID (cudaDeviceProp::uuid), which the catalog carries so that a consumer with
  // another CUDA_VISIBLE_DEVICES finds the GPU under its own ordinal; all zero: none / unknown.
  virtual shm::DeviceUuid device_uuid() const { return {}; }
  // A buffer of `bytes` named `object_name` (the host backend's shm object; the CUDA backend
  // uses it in messages only). Throws BackendError.
  virtual std::unique_ptr<SlotBuffer> allocate(const std::string& object_name,
                                               std::uint64_t bytes) = 0;
  // Copies every array to its offset. When it returns, a consumer that orders itself after the
  // buffer's event (host: immediately) sees the data.
  virtual void upload(SlotBuffer& buffer, const std::vector<Placement>& arrays) = 0;
  // Bytes of slot buffers alive now.
  virtual std::uint64_t memory_used() const = 0;
  // Whether a consumer can write the memory of a slot buffer it was given (CUDA IPC maps device
  // memory read-write; host segments are opened read-only), so that what a buffer held may no
  // longer be what the daemon copied there (slots::SlotOptions::copy_unchanged).
  virtual bool consumers_can_write() const { return false; }
  // Test aid (the upload_delay failpoint): uploads queue a `delay` on the device before their
  // copies and return without waiting for them. Only the CUDA backend has a queue to delay.
  virtual void delay_uploads(std::chrono::milliseconds /*delay*/) {}
  // What the backend did that a log should say (a lossy fallback), each said once; the slots
  // using it pass them on (Slot::take_notes).
  virtual std::vector<std::string> take_notes() { return {}; }
  // Why the device can never be used again by this process ("" while it can): a CUDA context
  // that met a sticky error (an illegal address, an uncorrectable ECC error: CUDA's "the
  // process must be terminated and relaunched"). Every later call on it fails, so every load
  // and publish would; only a new process gets a new context. Asks the device (cheap, never
  // waits), so a fault while idle is seen too. Thread-safe.
  virtual std::string lost() { return {}; }
};

std::unique_ptr<Backend> make_host_backend(mode_t mode);

// Throws BackendError when this build has no CUDA or device `id` does not answer.
std::unique_ptr<Backend> make_cuda_backend(int id);

// The pinned pool (pinned_pool.hpp) over cudaHostAlloc / cudaFreeHost, for the mesh allocator
// hook (PinnedPool::install), so uploads are true DMA; only meaningful when a CUDA device
// answers; `device`: the one whose context the allocating threads use (the buffers are
// portable: every device's uploads read them). Throws BackendError without CUDA.
std::unique_ptr<PinnedPool> make_pinned_pool(PinnedPool::Options options, int device);

}  // namespace meshdock::backend
