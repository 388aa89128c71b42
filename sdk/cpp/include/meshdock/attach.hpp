// libmeshdock's consumer API: attach to a slot by name, wait for frames, adopt arrays.
//
//   auto slot = meshdock::Slot::attach("bracket");            // waits for the daemon to publish
//   if (auto frame = slot.wait(std::chrono::seconds(5))) {   // sleeps on the futex, no polling
//     DLManagedTensor* t = frame->to_dlpack("points");       // at::fromDLPack(t), ...
//   }                                                         // lease held until the last
//                                                             // tensor's deleter and the Frame go
//
// A Frame holds a lease on its ring slot, so the daemon never refills that buffer while the
// frame lives (it gives the slot a fresh buffer instead). Host slots are mapped copy-on-write
// (MAP_PRIVATE of an object opened read-only): a consumer may write into its arrays in place
// (`t -= t.mean(0)`); the written pages become private copies of this process, never reach the
// daemon or other consumers, and are dropped when the last frame using that buffer goes.
// CUDA slots open the IPC handle once per slot and buffer version.
//
// Trust: every segment is fstat-checked before a byte of it is read; it must belong to a
// trusted uid (AttachOptions::owner_uid, else $MESHDOCK_DAEMON_UID, else the owner of the
// socket in $MESHDOCK_ADDR=unix:PATH or, with $MESHDOCK_ADDR unset, of the system socket
// /run/meshdock/meshdockd.sock, else this process's uid or root). Another owner is a
// squatter (UntrustedSegment); a segment this process may not open is SegmentAccessDenied,
// never "not published". Every wait sleeps and honours its deadline whatever the bytes say.
//
// Threads and processes: one thread at a time calls a Slot's wait() / latest(); Frames and the
// tensors made from them may be released on any thread. A forked child may go on using a host
// Slot attached before the fork (its first wait registers the child with the daemon); a CUDA
// Slot must be attached in the child (wait() says so), as CUDA does not survive fork.
#pragma once

#include <dlpack/dlpack.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "meshdock/device_ipc.hpp"
#include "meshdock/error.hpp"
#include "meshdock/shm.hpp"

namespace meshdock {

struct AttachOptions {
  // The daemon's shm prefix. Unset: $MESHDOCK_PREFIX when set and not empty (what a deployment
  // sets for every consumer), else "meshdock.". See resolve_prefix for the rules.
  std::optional<std::string> prefix;
  // attach: how long to wait for the slot's segments to appear (milliseconds::max(): no
  // deadline). The daemon makes them just before the first frame's copy, so attach may return
  // while that frame is still on its way: wait() gives it.
  std::chrono::milliseconds timeout{5000};
  // A heartbeat older than this means the producer is gone (it beats every 100 ms). Must be > 0.
  std::chrono::milliseconds producer_timeout{1000};
  // When the producer goes (daemon killed, stopped, or the mesh unloaded), wait() attaches
  // again to the same name as soon as a live daemon publishes it, instead of throwing
  // ProducerGone; frame numbers then restart with the new producer's. Frames already held
  // keep the old mappings.
  bool reattach = false;
  // The uid the daemon runs as: segments owned by anyone else are refused (UntrustedSegment).
  // Unset: $MESHDOCK_DAEMON_UID, else the owner of the socket of $MESHDOCK_ADDR=unix:PATH (or,
  // $MESHDOCK_ADDR unset, of /run/meshdock/meshdockd.sock), else this process's uid or root.
  std::optional<std::uint32_t> owner_uid;
  // Polled at least every 50 ms while attach looks for the segments and while wait sleeps (and
  // before each such sleep); returning true stops them with Interrupted. Python sets it to
  // check for signals, so Ctrl-C raises KeyboardInterrupt. It runs on the waiting thread.
  std::function<bool()> interrupt;
  // What opens a CUDA slot's buffers and events (meshdock/device_ipc.hpp). Unset: the CUDA
  // runtime this library was built with. Tests stand a fake device in.
  std::shared_ptr<DeviceIpc> device_ipc;
};

// One array of a frame, where it is.
struct ArrayRef {
  std::string name;
  shm::ArrayEntry entry;  // dtype, shape, strides (elements), offset, nbytes
  void* data = nullptr;   // host address, or device pointer for CUDA slots
  std::int32_t device_type = shm::kDLDeviceCPU;
  std::int32_t device_id = 0;
};

struct SlotState;
struct FrameState;

class Frame {
 public:
  std::uint64_t number() const;
  std::uint32_t slot_index() const;
  const shm::Manifest& manifest() const;
  // The same manifest, shared: consecutive frames of a ring slot whose manifest text did not
  // change share one decoded Manifest, so callers may cache what they derive from it by pointer.
  std::shared_ptr<const shm::Manifest> shared_manifest() const;
  std::int32_t device_type() const;
  std::int32_t device_id() const;
  std::vector<std::string> names() const;
  // Throws SdkError naming the array when the frame has none of that name.
  ArrayRef array(const std::string& name) const;
  // The array at `index` in manifest order (no lookup by name); SdkError when out of range.
  ArrayRef array(std::size_t index) const;
  // Where array `index` starts (what array(index).data says, without copying its entry).
  void* data(std::size_t index) const;
  // A DLPack tensor of `name`; it keeps the frame (and its lease) alive until its deleter runs.
  DLManagedTensor* to_dlpack(const std::string& name) const;
  // CUDA slots: makes `stream` (a cudaStream_t) wait for the slot's IPC event, so kernels on it
  // see the data without a host synchronisation. A no-op on host slots. The stream is
  // remembered: when the frame's last owner goes (a DLPack deleter, which frameworks call with
  // kernels still queued), its end is marked on every such stream and the lease is kept until
  // the marks are passed (the slot's next wait() / latest() looks; its last owner waits).
  // Stream 2 is the calling thread's per-thread default stream; a deleter running on another
  // thread marks the legacy default stream instead, which waits for it.
  void order_after_upload(std::uintptr_t stream) const;
  // Shares ownership of the frame: what keeps the mapping and the lease alive.
  std::shared_ptr<const void> keepalive() const;

 private:
  friend class Slot;
  explicit Frame(std::shared_ptr<const FrameState> s) : s_(std::move(s)) {}
  std::shared_ptr<const FrameState> s_;
};

class Slot {
 public:
  // Waits up to options.timeout for `name` to be published (AttachTimeout), checks the owner of
  // both segments (UntrustedSegment, SegmentAccessDenied), validates them (SdkError naming the
  // field), and fails fast when the producer is gone (a stale heartbeat, or one more than 1 s in
  // the future). Interrupted when options.interrupt says so.
  static Slot attach(const std::string& name, const AttachOptions& options = {});
  // The prefix attach uses: `prefix`, else $MESHDOCK_PREFIX (when not empty), else
  // "meshdock."; an empty prefix only when passed explicitly. A non-empty prefix must end with
  // '.', '-' or '_' ("uxknosuch" would look for /dev/shm/uxknosuchNAME): SdkError naming it and
  // where it came from, as for a prefix the protocol refuses. (Python: resolve_prefix.)
  static std::string resolve_prefix(const std::optional<std::string>& prefix);

  // The newest frame this Slot has not returned yet; sleeps on the futex until one is
  // published, or returns nullopt after `timeout` (milliseconds::max(): no deadline; zero or
  // negative: one look). Throws ProducerGone when the shutdown flag is set or the heartbeat is
  // stale or in the future (with reattach: when no live producer has published the name again
  // by the deadline), SdkError on a corrupt segment, a page whose data_size exceeds the mapped
  // buffer, or a full lease table; Interrupted when the interrupt hook says so. Returns by the
  // deadline (nullopt) whatever the shared bytes say, sleeping (futex or a 1 ms back-off) rather
  // than spinning.
  std::optional<Frame> wait(std::chrono::milliseconds timeout);
  // The newest frame published, whether or not this Slot returned it already (a Dataset that
  // reads the current mesh for every item); sleeps like wait() only while none is published
  // yet. Same errors as wait(). A later wait() returns frames newer than this one.
  std::optional<Frame> latest(std::chrono::milliseconds timeout);

  // How many times wait() has attached again to a new producer (reattach only).
  std::uint32_t reattaches() const;

  // Valid until the next wait() / latest(): a reattach replaces what it refers to (copy it).
  const std::string& name() const;
  std::uint32_t write_idx() const;
  std::uint32_t num_slots() const;
  std::int32_t device_type() const;
  // The producer's CLOCK_MONOTONIC seconds at its newest publish (control block timestamp).
  double publish_time() const;
  // Throws ProducerGone (with the reason) when the producer is gone; otherwise returns.
  void check_producer() const;

 private:
  explicit Slot(std::shared_ptr<SlotState> s) : s_(std::move(s)) {}
  void reattach_after(const ProducerGone& why, std::chrono::steady_clock::time_point deadline);
  // wait() (seen_too false) and latest() (true).
  std::optional<Frame> take(std::chrono::milliseconds timeout, bool seen_too);
  std::shared_ptr<SlotState> s_;
  std::uint32_t reattaches_ = 0;
};

}  // namespace meshdock
