// A fake CUDA runtime: the subset of cudart that meshdock calls (daemon/backend, the SDK's
// device_ipc_cuda.cpp, tests/gpu/cpp_check.cpp), in host memory, so that the real CUDA code of
// the daemon and of libmeshdock runs on a machine without a GPU (MESHDOCK_WITH_CUDA=FAKE links
// this shared library where the other builds link cudart_static). It is strict where CUDA is,
// and stricter where a bug would only show on a GPU:
// - device memory is a reservation with no access: a host read or write through a device
//   pointer faults, as it would on a GPU; copies go through cudaMemcpyAsync, which checks that
//   both ends are what `kind` says and that a device range stays inside its allocation;
// - streams run their work on a thread of their own, in order, later: an H2D copy from pinned
//   memory reads its source when the stream gets to it (a source freed before then is a
//   use-after-free for ASan), one from pageable memory is staged at the call (as CUDA does);
//   D2H into pageable memory waits for the copy, into pinned memory does not;
// - the default streams are CUDA's: cudaStreamPerThread (2) is a stream of its own in every
//   thread, and the legacy default stream (0, cudaStreamLegacy) synchronises with every
//   blocking stream (per-thread default streams included; not cudaStreamNonBlocking ones):
//   work queued on it starts after the work queued on them before it, and theirs after its;
// - events count records and completions; cudaStreamWaitEvent holds the stream until the
//   event's newest record (at the time of the call) has completed, across processes for an
//   interprocess event: a consumer that does not order its stream after the slot's event reads
//   a buffer still being written;
// - IPC: a handle names a memfd of the exporting process (its pid, fd and inode); opening one
//   in the process that made it fails as on CUDA, opening one that was freed fails, and the same
//   handle opened twice returns the same pointer with a count, as the CUDA documentation says;
// - cudaEventInterprocess needs cudaEventDisableTiming, cudaIpcOpenMemHandle needs
//   cudaIpcMemLazyEnablePeerAccess, cudaFree / cudaFreeHost / cudaEventDestroy /
//   cudaStreamDestroy refuse what they did not make.
// - a lost context is sticky, as CUDA's is after a device fault (an illegal address, an
//   uncorrectable ECC error): with MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS=T the process's context is
//   lost T ms after its first cudaMalloc or cudaIpcOpenMemHandle, and from then on every call that
//   uses it (not the device queries) returns cudaErrorIllegalAddress, and cudaGetLastError does not
//   clear it;
// Devices: none unless MESHDOCK_FAKE_CUDA_DEVICES=N is set (then cudaGetDeviceCount says
// cudaErrorInsufficientDriver and cudaDriverGetVersion 0, as with no driver); with
// MESHDOCK_FAKE_CUDA_NO_IPC_EVENTS=1, interprocess events are refused (some virtual GPUs).
// Test support only: its state is one leaked object (never destroyed, so that stream threads
// outlive static destructors), in a library of its own so that every module of a process
// (the executable, libmeshdock) shares it, as they would share the driver.
#include "fake_cudart.h"

#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;

cudaError_t fail(cudaError_t e, const char* call = __builtin_FUNCTION());

int device_count() {
  const char* v = std::getenv("MESHDOCK_FAKE_CUDA_DEVICES");
  return v ? std::atoi(v) : -1;  // -1: no driver
}

// The GPU this process calls `ordinal`: MESHDOCK_FAKE_CUDA_ORDER="1,0" numbers them as
// CUDA_VISIBLE_DEVICES=1,0 would (a container given another GPU, a Slurm step); unset, the
// identity. A GPU's UUID and its allocations' handles name the GPU, not the ordinal.
int physical(int ordinal) {
  const char* v = std::getenv("MESHDOCK_FAKE_CUDA_ORDER");
  for (int i = 0; v && *v; ++i) {
    char* end = nullptr;
    const long gpu = std::strtol(v, &end, 10);
    if (i == ordinal) return static_cast<int>(gpu);
    v = *end == ',' ? end + 1 : end;
  }
  return ordinal;
}

std::size_t page_round(std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (std::max<std::size_t>(n, 1) + page - 1) / page * page;
}

// What an IPC handle carries (64 bytes): the exporting process's memfd.
struct WireHandle {
  char magic[8];  // "MDFAKE1M" (memory) or "MDFAKE1E" (event)
  std::int32_t pid;
  std::int32_t fd;
  std::uint64_t inode;
  std::uint64_t size;
  std::int32_t gpu;  // memory: the GPU it is on (physical)
  std::uint8_t pad[28];
};
static_assert(sizeof(WireHandle) == 64);

// A memfd mapped shared (what the fake's own code reads and writes).
struct Shared {
  int fd = -1;
  void* map = nullptr;
  std::size_t size = 0;
  std::uint64_t inode = 0;
  static std::unique_ptr<Shared> create(std::size_t bytes) {
    auto s = std::make_unique<Shared>();
    s->fd = memfd_create("meshdock-fake-cuda", MFD_CLOEXEC);
    if (s->fd < 0) return nullptr;
    s->size = page_round(bytes);
    if (ftruncate(s->fd, static_cast<off_t>(s->size)) != 0) return nullptr;
    return s->finish() ? std::move(s) : nullptr;
  }
  static std::unique_ptr<Shared> open(const WireHandle& h) {
    auto s = std::make_unique<Shared>();
    const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
    s->fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (s->fd < 0) return nullptr;  // the process or its allocation is gone
    s->size = h.size;
    struct stat st {};
    if (fstat(s->fd, &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != h.inode ||
        static_cast<std::uint64_t>(st.st_size) != h.size)
      return nullptr;  // the fd number names something else now: freed
    return s->finish() ? std::move(s) : nullptr;
  }
  bool finish() {
    map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      map = nullptr;
      return false;
    }
    struct stat st {};
    fstat(fd, &st);
    inode = static_cast<std::uint64_t>(st.st_ino);
    return true;
  }
  ~Shared() {
    if (map) munmap(map, size);
    if (fd >= 0) close(fd);
  }
};

struct Allocation {  // device memory: what the process sees (no access) and what backs it
  void* dev = nullptr;
  std::size_t size = 0;  // as asked
  std::unique_ptr<Shared> backing;
  bool imported = false;
  int opens = 0;  // for an import: cudaIpcOpenMemHandle count
  int gpu = 0;    // the GPU it is on (physical)
};

struct EventState {  // counters, in a memfd for an interprocess event
  std::atomic<std::uint64_t> recorded{0};
  std::atomic<std::uint64_t> completed{0};
};

struct Event {
  unsigned flags = 0;
  std::unique_ptr<Shared> shared;  // interprocess
  std::unique_ptr<EventState> local;
  bool imported = false;
  EventState* state() { return shared ? static_cast<EventState*>(shared->map) : local.get(); }
};

struct Stream {
  bool blocking = true;  // synchronises with the legacy default stream (not cudaStreamNonBlocking)
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> work;
  std::uint64_t queued = 0, done = 0;
  bool destroyed = false;
  void start() {
    std::thread([this] {
      std::unique_lock lock(m);
      for (;;) {
        cv.wait(lock, [&] { return !work.empty() || destroyed; });
        if (work.empty()) return;  // destroyed, and its work done (kept: handles stay unique)
        auto fn = std::move(work.front());
        work.pop_front();
        lock.unlock();
        fn();
        lock.lock();
        ++done;
        cv.notify_all();
      }
    }).detach();
  }
  std::uint64_t enqueue(std::function<void()> fn) {
    std::lock_guard lock(m);
    work.push_back(std::move(fn));
    cv.notify_all();
    return ++queued;
  }
  void wait_for(std::uint64_t ticket) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done >= ticket; });
  }
  void synchronize() { wait_for(queued_now()); }
  std::uint64_t queued_now() {
    std::lock_guard lock(m);
    return queued;
  }
};

struct State {
  std::mutex m;
  std::map<std::uintptr_t, Allocation> allocations;  // by device address
  std::map<std::uint64_t, void*> imported_by_inode;  // an import's device address
  std::map<void*, std::size_t> pinned;
  std::map<Event*, std::unique_ptr<Event>> events;
  std::map<Stream*, std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Stream>> destroyed_streams;  // their threads may still run
  std::vector<std::unique_ptr<Event>> destroyed_events;    // work queued may still use them
  Stream* legacy = nullptr;
  std::vector<std::unique_ptr<Stream>> per_thread;  // cudaStreamPerThread of each thread, kept
  std::mutex order_m;  // held while work is queued: the implicit waits below form no cycle
  std::atomic<long> refused{0}, stream_waits{0}, waits_that_waited{0};
  std::atomic<int> sticky{cudaSuccess};     // the error that lost the context, for good
  std::atomic<std::int64_t> lose_at_ns{0};  // MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS, once armed
  std::mutex refused_m;
  std::string last_refused;  // "call: error code", under refused_m
};

State& state() {
  static State* s = [] {
    auto* st = new State;  // leaked on purpose (see the file's comment)
    st->legacy = new Stream;
    st->legacy->start();
    return st;
  }();
  return *s;
}

cudaError_t fail(cudaError_t e, const char* call) {
  last_error = e;
  auto& st = state();
  ++st.refused;
  std::lock_guard lock(st.refused_m);  // not st.m: callers may hold that
  st.last_refused = std::string(call) + ": " + std::to_string(static_cast<int>(e));
  return e;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// cudaSuccess, or the sticky error of a lost context (see the file's comment).
cudaError_t context_lost() {
  auto& st = state();
  if (const int e = st.sticky.load()) return static_cast<cudaError_t>(e);
  if (const auto at = st.lose_at_ns.load(); at && now_ns() >= at) {
    int none = cudaSuccess;
    st.sticky.compare_exchange_strong(none, cudaErrorIllegalAddress);
    return static_cast<cudaError_t>(st.sticky.load());
  }
  return cudaSuccess;
}

// Starts the clock of MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS (at the first allocation or import).
void arm_loss() {
  const char* v = std::getenv("MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS");
  if (!v || !*v) return;
  std::int64_t none = 0;
  state().lose_at_ns.compare_exchange_strong(none, now_ns() + std::atoll(v) * 1000000);
}

cudaError_t need_device() {
  const int n = device_count();
  if (n < 0) return fail(cudaErrorInsufficientDriver);
  if (n == 0) return fail(cudaErrorNoDevice);
  return cudaSuccess;
}

thread_local Stream* this_threads_stream = nullptr;  // cudaStreamPerThread here, once used

// The stream a cudaStream_t names (0 and cudaStreamLegacy: the process's legacy default stream;
// cudaStreamPerThread: the calling thread's own); null for one that is not live.
Stream* stream_of(cudaStream_t s) {
  auto& st = state();
  const auto v = reinterpret_cast<std::uintptr_t>(s);
  if (v == 0 || v == 1) return st.legacy;
  std::lock_guard lock(st.m);
  if (v == 2) {
    if (!this_threads_stream) {
      auto own = std::make_unique<Stream>();
      own->start();
      this_threads_stream = own.get();
      st.per_thread.push_back(std::move(own));  // kept: work queued on it may outlive the thread
    }
    return this_threads_stream;
  }
  const auto it = st.streams.find(reinterpret_cast<Stream*>(s));
  return it == st.streams.end() ? nullptr : it->second.get();
}

// Queues `fn` on `s` behind what the legacy default stream implies: on the legacy stream, after
// the work queued so far on every blocking stream; on a blocking stream, after the work queued
// so far on the legacy stream. Returns its ticket (Stream::wait_for).
std::uint64_t submit(Stream* s, std::function<void()> fn) {
  auto& st = state();
  std::lock_guard order(st.order_m);
  std::vector<std::pair<Stream*, std::uint64_t>> after;
  if (s == st.legacy) {
    std::lock_guard lock(st.m);
    for (const auto& [p, _] : st.streams)
      if (p->blocking) after.emplace_back(p, p->queued_now());
    for (const auto& p : st.per_thread) after.emplace_back(p.get(), p->queued_now());
  } else if (s->blocking) {
    after.emplace_back(st.legacy, st.legacy->queued_now());
  }
  std::erase_if(after, [](const auto& a) { return a.second == 0; });
  if (after.empty()) return s->enqueue(std::move(fn));
  return s->enqueue([after = std::move(after), fn = std::move(fn)] {
    for (const auto& [other, ticket] : after) other->wait_for(ticket);
    fn();
  });
}

Event* event_of(cudaEvent_t e) {
  auto& st = state();
  std::lock_guard lock(st.m);
  const auto it = st.events.find(reinterpret_cast<Event*>(e));
  return it == st.events.end() ? nullptr : it->second.get();
}

// Where [p, p + n) of device memory is backed; null when p is no device address, `bad` set when
// it is one but the range leaves its allocation. The caller holds the state's lock.
char* backing_of(const void* p, std::size_t n, bool& bad) {
  auto& st = state();
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = st.allocations.upper_bound(a);
  if (it == st.allocations.begin()) return nullptr;
  --it;
  const auto base = it->first;
  const std::size_t reserved = page_round(it->second.size);
  if (a >= base + reserved) return nullptr;
  if (a + n > base + it->second.size) {
    bad = true;
    return nullptr;
  }
  return static_cast<char*>(it->second.backing->map) + (a - base);
}

// Hands out `obj` as the handle `*out` (its address) and keeps it in `table`.
template <class Handle, class T>
cudaError_t hand_out(std::map<T*, std::unique_ptr<T>> State::*table, std::unique_ptr<T> obj,
                     Handle* out) {
  auto& st = state();
  std::lock_guard lock(st.m);
  *out = reinterpret_cast<Handle>(obj.get());
  (st.*table)[obj.get()] = std::move(obj);
  return cudaSuccess;
}

// The errors the fake returns: CUDA's name and words for each (the words marked as the fake's).
struct ErrorText {
  cudaError_t code;
  const char* name;
  const char* text;
};
constexpr ErrorText kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument (fake CUDA)"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory (fake CUDA)"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version (fake CUDA: "
     "MESHDOCK_FAKE_CUDA_DEVICES is not set)"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected (fake CUDA)"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal (fake CUDA)"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
     "invalid resource handle (fake CUDA)"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready (fake CUDA)"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported (fake CUDA)"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress",
     "an illegal memory access was encountered (fake CUDA)"},
    {cudaErrorMapBufferObjectFailed, "cudaErrorMapBufferObjectFailed",
     "mapping of buffer object failed (fake CUDA)"},
};

const ErrorText& error_text(cudaError_t e) {
  static constexpr ErrorText unknown{cudaErrorUnknown, "cudaErrorUnknown",
                                     "unknown error (fake CUDA)"};
  for (const auto& t : kErrors)
    if (t.code == e) return t;
  return unknown;
}

void wait_event(EventState* e, std::uint64_t target) {
  const auto give_up = Clock::now() + std::chrono::seconds(60);  // its exporter died
  while (e->completed.load(std::memory_order_acquire) < target && Clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
}

}  // namespace

extern "C" {

void meshdock_fake_cuda_get_stats(meshdock_fake_cuda_stats* out) {
  auto& st = state();
  std::lock_guard lock(st.m);
  *out = {};
  for (const auto& [_, a] : st.allocations)
    (a.imported ? out->ipc_mappings : out->device_allocations)++;
  out->events = static_cast<long>(st.events.size());
  out->pinned = static_cast<long>(st.pinned.size());
  out->streams = static_cast<long>(st.streams.size());
  out->refused = st.refused.load();
  out->stream_waits = st.stream_waits.load();
  out->waits_that_waited = st.waits_that_waited.load();
  std::lock_guard refused_lock(st.refused_m);
  std::snprintf(out->last_refused, sizeof out->last_refused, "%s", st.last_refused.c_str());
}

cudaError_t cudaGetLastError(void) {
  if (const auto e = context_lost(); e != cudaSuccess) return e;  // not cleared: sticky
  return std::exchange(last_error, cudaSuccess);
}

const char* cudaGetErrorName(cudaError_t error) {
  return error_text(error).name;
}

const char* cudaGetErrorString(cudaError_t error) {
  return error_text(error).text;
}

cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* v) {
  *v = device_count() < 0 ? 0 : CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 0;
  if (const auto e = need_device(); e != cudaSuccess) return e;
  *count = device_count();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (const auto e = need_device(); e != cudaSuccess) return e;
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (const auto e = need_device(); e != cudaSuccess) return e;
  *device = current_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (const auto e = need_device(); e != cudaSuccess) return e;
  if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "meshdock fake GPU %d", device);
  prop->totalGlobalMem = std::size_t{80} << 30;
  prop->major = 9;
  prop->minor = 0;
  for (std::size_t i = 0; i < sizeof prop->uuid.bytes; ++i)
    prop->uuid.bytes[i] = static_cast<char>(0xf0 + i);
  prop->uuid.bytes[15] = static_cast<char>(physical(device));
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** ptr, std::size_t size) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  *ptr = nullptr;
  if (const auto e = need_device(); e != cudaSuccess) return e;
  auto backing = Shared::create(size);
  if (!backing) return fail(cudaErrorMemoryAllocation);
  // Never written by the backend before a copy: garbage, as fresh device memory is.
  std::memset(backing->map, 0xa5, backing->size);
  void* dev = mmap(nullptr, page_round(size), PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (dev == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
  auto& st = state();
  std::lock_guard lock(st.m);
  st.allocations[reinterpret_cast<std::uintptr_t>(dev)] = {dev,   size, std::move(backing),
                                                           false, 0,    physical(current_device)};
  *ptr = dev;
  arm_loss();
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  if (!ptr) return cudaSuccess;
  auto& st = state();
  std::lock_guard lock(st.m);
  const auto it = st.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == st.allocations.end() || it->second.imported) return fail(cudaErrorInvalidValue);
  munmap(it->second.dev, page_round(it->second.size));
  st.allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, std::size_t size, unsigned int) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  *ptr = nullptr;
  if (const auto e = need_device(); e != cudaSuccess) return e;
  void* p =
      mmap(nullptr, page_round(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fail(cudaErrorMemoryAllocation);
  auto& st = state();
  std::lock_guard lock(st.m);
  st.pinned[p] = size;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  auto& st = state();
  std::lock_guard lock(st.m);
  const auto it = st.pinned.find(ptr);
  if (it == st.pinned.end()) return fail(cudaErrorInvalidValue);
  munmap(ptr, page_round(it->second));
  st.pinned.erase(it);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  if (const auto e = need_device(); e != cudaSuccess) return e;
  auto s = std::make_unique<Stream>();
  s->blocking = !(flags & cudaStreamNonBlocking);
  s->start();
  return hand_out(&State::streams, std::move(s), stream);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  auto& st = state();
  std::lock_guard lock(st.m);
  const auto it = st.streams.find(reinterpret_cast<Stream*>(stream));
  if (it == st.streams.end()) return fail(cudaErrorInvalidResourceHandle);
  {  // its work still runs, then its thread ends (CUDA: destroy returns at once)
    std::lock_guard sl(it->second->m);
    it->second->destroyed = true;
    it->second->cv.notify_all();
  }
  st.destroyed_streams.push_back(std::move(it->second));
  st.streams.erase(it);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Stream* s = stream_of(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  s->synchronize();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Stream* s = stream_of(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  std::lock_guard lock(s->m);
  return s->done >= s->queued ? cudaSuccess : cudaErrorNotReady;  // an answer, as for events
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Stream* s = stream_of(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  submit(s, [fn, data] { fn(data); });
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Stream* s = stream_of(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!count) return cudaSuccess;
  auto& st = state();
  char* to = nullptr;
  const char* from = nullptr;
  bool dst_pinned = false, src_pinned = false;
  {
    std::lock_guard lock(st.m);
    bool bad = false;
    to = backing_of(dst, count, bad);
    from = backing_of(src, count, bad);
    if (bad) return fail(cudaErrorInvalidValue);  // a device range past its allocation
    const bool dst_dev = to != nullptr, src_dev = from != nullptr;
    const bool ok = kind == cudaMemcpyDefault ||
                    (kind == cudaMemcpyHostToDevice && dst_dev && !src_dev) ||
                    (kind == cudaMemcpyDeviceToHost && !dst_dev && src_dev) ||
                    (kind == cudaMemcpyDeviceToDevice && dst_dev && src_dev) ||
                    (kind == cudaMemcpyHostToHost && !dst_dev && !src_dev);
    if (!ok) return fail(cudaErrorInvalidValue);
    auto in_pinned = [&](const void* p) {
      auto it = st.pinned.upper_bound(const_cast<void*>(p));
      if (it == st.pinned.begin()) return false;
      --it;
      return static_cast<const char*>(p) + count <= static_cast<char*>(it->first) + it->second;
    };
    dst_pinned = !dst_dev && in_pinned(dst);
    src_pinned = !src_dev && in_pinned(src);
    if (!to) to = static_cast<char*>(dst);
    if (!from) from = static_cast<const char*>(src);
  }
  const bool src_host = from == src, dst_host = to == dst;
  if (src_host && !src_pinned) {
    // Pageable source: staged now, so the caller may reuse it when the call returns.
    auto staged = std::make_shared<std::vector<char>>(from, from + count);
    submit(s, [to, staged] { std::memcpy(to, staged->data(), staged->size()); });
    return cudaSuccess;
  }
  const auto ticket = submit(s, [to, from, count] { std::memcpy(to, from, count); });
  if (dst_host && !dst_pinned) s->wait_for(ticket);  // into pageable memory: done on return
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  *event = nullptr;
  if (const auto e = need_device(); e != cudaSuccess) return e;
  auto ev = std::make_unique<Event>();
  ev->flags = flags;
  if (flags & cudaEventInterprocess) {
    if (!(flags & cudaEventDisableTiming)) return fail(cudaErrorInvalidValue);  // as CUDA
    const char* no = std::getenv("MESHDOCK_FAKE_CUDA_NO_IPC_EVENTS");
    if (no && *no == '1') return fail(cudaErrorNotSupported);
    ev->shared = Shared::create(sizeof(EventState));
    if (!ev->shared) return fail(cudaErrorMemoryAllocation);
    new (ev->shared->map) EventState();
  } else {
    ev->local = std::make_unique<EventState>();
  }
  return hand_out(&State::events, std::move(ev), event);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  auto& st = state();
  std::unique_ptr<Event> gone;
  {
    std::lock_guard lock(st.m);
    const auto it = st.events.find(reinterpret_cast<Event*>(event));
    if (it == st.events.end()) return fail(cudaErrorInvalidResourceHandle);
    gone = std::move(it->second);
    st.events.erase(it);
  }
  // Work queued on it (a record, a wait) still holds its state: kept until the process ends,
  // as the driver keeps an event until its last use (a test's handful of events).
  std::lock_guard lock(st.m);
  st.destroyed_events.push_back(std::move(gone));
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Event* e = event_of(event);
  Stream* s = stream_of(stream);
  if (!e || !s || e->imported) return fail(cudaErrorInvalidResourceHandle);
  EventState* es = e->state();
  const auto target = es->recorded.fetch_add(1) + 1;
  submit(s, [es, target] {
    auto c = es->completed.load();
    while (c < target && !es->completed.compare_exchange_weak(c, target)) {
    }
  });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Event* e = event_of(event);
  if (!e) return fail(cudaErrorInvalidResourceHandle);
  auto* es = e->state();
  if (es->completed.load() >= es->recorded.load()) return cudaSuccess;
  return cudaErrorNotReady;  // an answer, not an error: cudaGetLastError does not keep it
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Event* e = event_of(event);
  if (!e) return fail(cudaErrorInvalidResourceHandle);
  wait_event(e->state(), e->state()->recorded.load());
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Event* e = event_of(event);
  Stream* s = stream_of(stream);
  if (!e || !s || flags != 0) return fail(cudaErrorInvalidResourceHandle);
  EventState* es = e->state();
  const auto target = es->recorded.load();  // its newest record now
  auto& st = state();
  if (e->shared) ++st.stream_waits;
  const bool ipc = e->shared != nullptr;
  submit(s, [es, target, ipc, &st] {
    if (ipc && es->completed.load() < target) ++st.waits_that_waited;
    wait_event(es, target);
  });
  return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* ptr) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  auto& st = state();
  std::lock_guard lock(st.m);
  bool bad = false;
  if (!backing_of(ptr, 1, bad)) return fail(cudaErrorInvalidValue);
  auto it = --st.allocations.upper_bound(reinterpret_cast<std::uintptr_t>(ptr));
  if (it->second.imported) return fail(cudaErrorInvalidValue);
  WireHandle w{};
  std::memcpy(w.magic, "MDFAKE1M", 8);
  w.pid = getpid();
  w.fd = it->second.backing->fd;
  w.inode = it->second.backing->inode;
  w.size = it->second.backing->size;
  w.gpu = it->second.gpu;
  static_assert(sizeof w == sizeof *handle);
  std::memcpy(handle, &w, sizeof w);
  return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void** ptr, cudaIpcMemHandle_t handle, unsigned int flags) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  *ptr = nullptr;
  if (const auto e = need_device(); e != cudaSuccess) return e;
  WireHandle w;
  std::memcpy(&w, &handle, sizeof w);
  if (std::memcmp(w.magic, "MDFAKE1M", 8) != 0 || flags != cudaIpcMemLazyEnablePeerAccess)
    return fail(cudaErrorInvalidValue);
  if (w.pid == getpid()) return fail(cudaErrorInvalidResourceHandle);  // CUDA refuses it too
  // Opened on another GPU than its own, CUDA would map it through peer access, or fail where
  // the GPUs have none: the fake fails, so that a consumer that opens on the wrong ordinal
  // (the daemon's, not its own for the slot's UUID) is found here.
  if (physical(current_device) != w.gpu) return fail(cudaErrorInvalidDevice);
  auto& st = state();
  std::lock_guard lock(st.m);
  if (const auto it = st.imported_by_inode.find(w.inode); it != st.imported_by_inode.end()) {
    ++st.allocations[reinterpret_cast<std::uintptr_t>(it->second)].opens;
    *ptr = it->second;
    return cudaSuccess;
  }
  auto backing = Shared::open(w);
  if (!backing) return fail(cudaErrorInvalidResourceHandle);  // freed, or its process gone
  void* dev =
      mmap(nullptr, backing->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (dev == MAP_FAILED) return fail(cudaErrorMapBufferObjectFailed);
  const auto size = backing->size;
  st.allocations[reinterpret_cast<std::uintptr_t>(dev)] = {dev,  size, std::move(backing),
                                                           true, 1,    w.gpu};
  st.imported_by_inode[w.inode] = dev;
  *ptr = dev;
  arm_loss();
  return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void* ptr) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  auto& st = state();
  std::lock_guard lock(st.m);
  const auto it = st.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == st.allocations.end() || !it->second.imported) return fail(cudaErrorInvalidValue);
  if (--it->second.opens > 0) return cudaSuccess;
  st.imported_by_inode.erase(it->second.backing->inode);
  munmap(it->second.dev, it->second.backing->size);
  st.allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  Event* e = event_of(event);
  if (!e || !e->shared || e->imported) return fail(cudaErrorInvalidResourceHandle);
  WireHandle w{};
  std::memcpy(w.magic, "MDFAKE1E", 8);
  w.pid = getpid();
  w.fd = e->shared->fd;
  w.inode = e->shared->inode;
  w.size = e->shared->size;
  std::memcpy(handle, &w, sizeof w);
  return cudaSuccess;
}

cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  if (const auto lost = context_lost(); lost != cudaSuccess) return fail(lost);
  *event = nullptr;
  if (const auto e = need_device(); e != cudaSuccess) return e;
  WireHandle w;
  std::memcpy(&w, &handle, sizeof w);
  if (std::memcmp(w.magic, "MDFAKE1E", 8) != 0) return fail(cudaErrorInvalidValue);
  if (w.pid == getpid()) return fail(cudaErrorInvalidResourceHandle);
  auto ev = std::make_unique<Event>();
  ev->flags = cudaEventInterprocess | cudaEventDisableTiming;
  ev->shared = Shared::open(w);
  if (!ev->shared) return fail(cudaErrorInvalidResourceHandle);
  ev->imported = true;
  return hand_out(&State::events, std::move(ev), event);
}

}  // extern "C"
