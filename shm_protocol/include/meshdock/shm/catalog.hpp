// meshdock's catalog segment: what the 433-byte control block cannot say. Layout version 2.
//
// The catalog is written by the daemon only (mode 0640: consumers map it read-only). Header
// (little-endian, at offset 0, kCatalogHeaderSize bytes reserved):
//   [0,4)   magic "MDCT"                 [4,8)   layout_version u32 (2)
//   [8,12)  header_size u32              [12,16) num_slots u32 (1..10)
//   [16,20) page_size u32 (multiple of 4096, >= 8192)
//   [20,24) lease_capacity u32 (1..1024): entries per slot in the leases segment
//   [24,28) daemon pid i32
//   [28,32) device_type i32 (DLPack: 1 CPU, 2 CUDA)   [32,36) device_id i32
//   [36,40) futex u32: mirrors write_idx; consumers sleep on it
//   [40,48) heartbeat u64: daemon CLOCK_MONOTONIC ns, refreshed every 100 ms
//   [48,56) total_size u64 = header_size + num_slots * page_size
//   [56,60) daemon uid u32              [60,64) socket_len u32 (0..108)
//   [64,172) registration socket address (sun_path bytes; a leading NUL = abstract name)
//   [172,188) device_uuid: a CUDA slot's GPU UUID (cudaDeviceProp::uuid), by which a consumer
//             finds the GPU under its own ordinal (its CUDA_VISIBLE_DEVICES may differ from
//             the daemon's); all zero: unknown (a host slot, or a daemon that predates it)
// Page i at header_size + i * page_size:
//   [0,8)   seq u64: seqlock generation, odd while the page is being written
//   [8,16)  frame u64: the write_idx value this slot's contents were published as (1-based)
//   [16,24) data_size u64: bytes of the slot buffer the manifest describes
//   [24,32) buffer_version u64: control-block version when the slot buffer was created
//   [32,36) manifest_len u32             [36,64) reserved (zero)
//   [64, page_size)  manifest JSON (manifest_len bytes)
// The seqlock covers frame, data_size, buffer_version, manifest_len and the manifest.
//
// The leases segment (/<prefix><name>.leases, mode 0660: the one area consumers write) holds
// num_slots * lease_capacity entries of 16 bytes, slot i's at (i * lease_capacity + k) * 16:
//   {state u32, reserved u32, frame u64}
// state is 0 (free), pid | kLeaseClaiming while its frame is being filled in, or pid. Its size
// and shape come from the catalog (never from the leases segment itself); the daemon treats
// every byte of it as hostile (see LeaseTableView and docs/protocol.md).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "meshdock/shm/bytes.hpp"
#include "meshdock/shm/control_block.hpp"
#include "meshdock/shm/error.hpp"
#include "meshdock/shm/futex.hpp"

namespace meshdock::shm {

inline constexpr std::uint32_t kCatalogMagic = 0x5443444Du;  // bytes "MDCT"
inline constexpr std::uint32_t kCatalogLayoutVersion = 2;
inline constexpr std::uint32_t kCatalogHeaderSize = 4096;
inline constexpr std::uint32_t kDefaultPageSize = 256 * 1024;
inline constexpr std::uint32_t kMinPageSize = 8192;
inline constexpr std::uint32_t kMaxPageSize = 64u * 1024 * 1024;
inline constexpr std::uint32_t kDefaultLeaseCapacity = 64;
inline constexpr std::uint32_t kMaxLeaseCapacity = 1024;
// Leases the daemon honours per process and ring slot (it clears the rest): a consumer never
// takes more, or a frame past them would be overwritten under it.
inline constexpr std::uint32_t kMaxLeasesPerProcess = 8;
inline constexpr std::uint32_t kLeaseClaiming = 0x80000000u;
inline constexpr std::size_t kPageHeaderBytes = 64;
inline constexpr std::size_t kLeaseEntryBytes = 16;
inline constexpr std::size_t kSocketAddressBytes = 108;  // sizeof(sockaddr_un::sun_path)
inline constexpr std::size_t kCatalogFixedHeaderBytes = 172;
inline constexpr std::size_t kDeviceUuidBytes = 16;
// 16 bytes as cudaDeviceProp::uuid holds them; all zero: unknown.
using DeviceUuid = std::array<std::uint8_t, kDeviceUuidBytes>;

inline constexpr std::int32_t kDLDeviceCPU = 1;
inline constexpr std::int32_t kDLDeviceCUDA = 2;

namespace catalog_offset {
inline constexpr std::size_t kMagic = 0, kLayoutVersion = 4, kHeaderSize = 8, kNumSlots = 12,
                             kPageSize = 16, kLeaseCapacity = 20, kDaemonPid = 24, kDeviceType = 28,
                             kDeviceId = 32, kFutex = 36, kHeartbeat = 40, kTotalSize = 48,
                             kDaemonUid = 56, kSocketLen = 60, kSocket = 64, kDeviceUuid = 172;
}  // namespace catalog_offset

namespace page_offset {
inline constexpr std::size_t kSeq = 0, kFrame = 8, kDataSize = 16, kBufferVersion = 24,
                             kManifestLen = 32, kManifest = 64;
}  // namespace page_offset

inline bool uuid_known(const DeviceUuid& u) {
  for (auto b : u)
    if (b != 0) return true;
  return false;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi -L and CUDA_VISIBLE_DEVICES write it.
inline std::string uuid_string(const DeviceUuid& u) {
  std::string out = "GPU-";
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[u[i] >> 4];
    out += kHex[u[i] & 15];
  }
  return out;
}

constexpr std::size_t manifest_offset() {
  return kPageHeaderBytes;
}

constexpr std::uint64_t catalog_size(std::uint32_t num_slots, std::uint32_t page_size) {
  return static_cast<std::uint64_t>(kCatalogHeaderSize) +
         static_cast<std::uint64_t>(num_slots) * page_size;
}

constexpr std::uint64_t leases_size(std::uint32_t num_slots, std::uint32_t lease_capacity) {
  return static_cast<std::uint64_t>(num_slots) * lease_capacity * kLeaseEntryBytes;
}

struct CatalogParams {
  std::uint32_t num_slots = kDefaultSlots;
  std::uint32_t page_size = kDefaultPageSize;
  std::uint32_t lease_capacity = kDefaultLeaseCapacity;
  std::int32_t daemon_pid = 0;
  std::int32_t device_type = kDLDeviceCPU;
  std::int32_t device_id = 0;
  std::uint32_t daemon_uid = 0;
  // The registration socket's sun_path bytes (a leading NUL: abstract name); at most 108.
  std::string socket;
  DeviceUuid device_uuid{};  // a CUDA slot's GPU; zero: unknown
};

// What a consumer copies out of a page under the seqlock.
struct PageSnapshot {
  std::uint64_t seq = 0;
  std::uint64_t frame = 0;
  std::uint64_t data_size = 0;
  std::uint64_t buffer_version = 0;
  std::string manifest;
};

struct LeaseEntry {
  std::uint32_t index;
  std::int32_t pid;
  bool claiming;
  std::uint64_t frame;
};

// One page: the seqlock writer and reader. Non-owning.
class PageView {
 public:
  PageView(std::byte* base, std::uint32_t page_size, std::uint32_t index)
      : base_(base), page_size_(page_size), index_(index) {}

  std::uint32_t index() const { return index_; }
  std::size_t manifest_capacity() const { return page_size_ - manifest_offset(); }
  std::uint64_t seq() const { return seq_ref().load(std::memory_order_acquire); }

  // Seqlock writer (single writer: the daemon). Throws before touching the page if the
  // manifest does not fit.
  void write(std::uint64_t frame, std::uint64_t data_size, std::uint64_t buffer_version,
             std::string_view manifest) {
    check_fits(manifest);
    finish_write(begin_write(), frame, data_size, buffer_version, manifest);
  }

  void check_fits(std::string_view manifest) const {
    if (manifest.size() > manifest_capacity()) {
      throw ProtocolError("catalog page " + std::to_string(index_) + ": manifest is " +
                          std::to_string(manifest.size()) + " bytes; the page holds " +
                          std::to_string(manifest_capacity()) + " (raise catalog page_size)");
    }
  }

  // The writer's half of the lease handshake: the page turns odd *before* the writer looks at
  // the leases (seq_cst fence), and a consumer takes its lease *before* it re-reads the seq.
  // So either the writer sees the new lease (and gives the slot a fresh buffer) or the
  // consumer sees the odd seq (and retries): nobody reads a buffer that is being refilled.
  // `previous` is the seq the writer last left (it never reads the page back); returns the odd
  // value to pass to finish_write / abort_write.
  std::uint64_t begin_write(std::uint64_t previous) {
    const std::uint64_t begin = previous | 1u;
    seq_ref().store(begin, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return begin;
  }
  // For writers without a copy of their own (tests, tools): reads the seq back.
  std::uint64_t begin_write() {
    const std::uint64_t s = seq_ref().load(std::memory_order_relaxed);
    return begin_write((s | 1u) == s ? s - 1 : s);  // odd: repairs a crashed writer's odd
  }

  // Leaves the page as it was (contents untouched), readable again.
  void abort_write(std::uint64_t begin) { seq_ref().store(begin + 1, std::memory_order_release); }

  void finish_write(std::uint64_t begin, std::uint64_t frame, std::uint64_t data_size,
                    std::uint64_t buffer_version, std::string_view manifest) {
    check_fits(manifest);
    auto seq = seq_ref();
    store_le<std::uint64_t>(base_, page_offset::kFrame, frame);
    store_le<std::uint64_t>(base_, page_offset::kDataSize, data_size);
    store_le<std::uint64_t>(base_, page_offset::kBufferVersion, buffer_version);
    store_le<std::uint32_t>(base_, page_offset::kManifestLen,
                            static_cast<std::uint32_t>(manifest.size()));
    std::memcpy(base_ + manifest_offset(), manifest.data(), manifest.size());
    seq.store(begin + 1, std::memory_order_release);
  }

  // One seqlock read attempt: nullopt if the page was being written (odd or changed seq).
  // Throws if the page is consistent but its manifest_len overruns the page (corruption).
  std::optional<PageSnapshot> try_read() const {
    auto seq = seq_ref();
    const std::uint64_t s1 = seq.load(std::memory_order_acquire);
    if (s1 & 1u) return std::nullopt;
    PageSnapshot snap;
    snap.seq = s1;
    snap.frame = load_le<std::uint64_t>(base_, page_offset::kFrame);
    snap.data_size = load_le<std::uint64_t>(base_, page_offset::kDataSize);
    snap.buffer_version = load_le<std::uint64_t>(base_, page_offset::kBufferVersion);
    const auto len = load_le<std::uint32_t>(base_, page_offset::kManifestLen);
    const bool len_ok = len <= manifest_capacity();
    if (len_ok) {
      snap.manifest.assign(reinterpret_cast<const char*>(base_ + manifest_offset()), len);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq.load(std::memory_order_relaxed) != s1) return std::nullopt;
    if (!len_ok) {
      throw ProtocolError("catalog page " + std::to_string(index_) + ": manifest_len " +
                          std::to_string(len) + " exceeds the page's manifest area of " +
                          std::to_string(manifest_capacity()) + " bytes");
    }
    return snap;
  }

  // Retries try_read; a page still torn after `attempts` tries means a dead or stuck writer.
  PageSnapshot read(int attempts = 100000) const {
    for (int i = 0; i < attempts; ++i) {
      if (auto s = try_read()) return *s;
      if (i > 64) std::this_thread::yield();
    }
    throw ProtocolError("catalog page " + std::to_string(index_) + ": still being written after " +
                        std::to_string(attempts) + " read attempts (torn page; writer dead?)");
  }

  // The control block's memory and event handles of this page's ring slot, as they were for
  // the snapshot whose seq is `seq`; nullopt when the page has been written since (it may name
  // another buffer now). The daemon changes the handles of a ring slot whose page names a frame
  // only while that page is odd (begin_write, before it looks at the leases; a publish that
  // fails after replacing the buffer leaves the page naming no frame), so handles read between
  // two reads of
  // an unchanged even seq are those of the buffer that snapshot's buffer_version names, even
  // when the control block names a fresher buffer a moment later. A consumer opens these, never
  // the control block's handles alone (its frame may be in a buffer the slot has since left).
  std::optional<std::pair<Handle, Handle>> handles_of(const ControlBlockView& cb,
                                                      std::uint64_t seq) const {
    if (seq & 1u || seq_ref().load(std::memory_order_acquire) != seq) return std::nullopt;
    std::pair<Handle, Handle> h{cb.mem_handle(index_), cb.event_handle(index_)};
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_ref().load(std::memory_order_relaxed) != seq) return std::nullopt;
    return h;
  }

 private:
  std::atomic_ref<std::uint64_t> seq_ref() const {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(base_ + page_offset::kSeq));
  }

  std::byte* base_;
  std::uint32_t page_size_;
  std::uint32_t index_;
};

// One slot's lease table in the leases segment. Non-owning. Every index is checked against
// the capacity the view was built with (the catalog's, validated, or the daemon's own), never
// against a byte of the table; the bytes read are returned as values and never become a
// pointer or an index.
class LeaseTableView {
 public:
  LeaseTableView(std::byte* base, std::uint32_t lease_capacity, std::uint32_t slot)
      : base_(base), lease_capacity_(lease_capacity), slot_(slot) {}

  std::uint32_t slot() const { return slot_; }
  std::uint32_t capacity() const { return lease_capacity_; }

  // Takes a free lease entry for `pid` holding `frame`. Returns its index, or nullopt if every
  // entry is taken.
  std::optional<std::uint32_t> acquire(std::int32_t pid, std::uint64_t frame) {
    const auto claiming = static_cast<std::uint32_t>(pid) | kLeaseClaiming;
    for (std::uint32_t i = 0; i < lease_capacity_; ++i) {
      auto state = state_ref(i);
      std::uint32_t expected = 0;
      if (state.compare_exchange_strong(expected, claiming, std::memory_order_acq_rel)) {
        frame_ref(i).store(frame, std::memory_order_relaxed);
        state.store(static_cast<std::uint32_t>(pid), std::memory_order_release);
        return i;
      }
    }
    return std::nullopt;
  }

  // Releases entry `index` if `pid` still holds it (a reclaimed entry is left alone).
  bool release(std::uint32_t index, std::int32_t pid) {
    if (index >= lease_capacity_) return false;
    std::uint32_t expected = static_cast<std::uint32_t>(pid);
    return state_ref(index).compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
  }

  // The entry as it is now (racy by nature: another process may change it the next moment).
  std::optional<LeaseEntry> entry(std::uint32_t i) const {
    if (i >= lease_capacity_) return std::nullopt;
    const std::uint32_t s = state_ref(i).load(std::memory_order_acquire);
    if (s == 0) return std::nullopt;
    return LeaseEntry{i, static_cast<std::int32_t>(s & ~kLeaseClaiming), (s & kLeaseClaiming) != 0,
                      frame_ref(i).load(std::memory_order_relaxed)};
  }

  std::vector<LeaseEntry> leases() const {
    std::vector<LeaseEntry> out;
    for (std::uint32_t i = 0; i < lease_capacity_; ++i)
      if (auto e = entry(i)) out.push_back(*e);
    return out;
  }

  // Frees entry `index` if its state is still `state` (what the caller saw): a lease taken again
  // in between is left alone.
  bool clear(std::uint32_t index, std::uint32_t state) {
    if (index >= lease_capacity_) return false;
    return state_ref(index).compare_exchange_strong(state, 0, std::memory_order_acq_rel);
  }

  // Frees the entries whose holder `alive` says is gone. Returns how many were freed.
  std::size_t reclaim_dead(const std::function<bool(std::int32_t)>& alive) {
    std::size_t freed = 0;
    for (std::uint32_t i = 0; i < lease_capacity_; ++i) {
      auto state = state_ref(i);
      std::uint32_t s = state.load(std::memory_order_acquire);
      if (s == 0) continue;
      if (alive(static_cast<std::int32_t>(s & ~kLeaseClaiming))) continue;
      if (state.compare_exchange_strong(s, 0, std::memory_order_acq_rel)) ++freed;
    }
    return freed;
  }

 private:
  std::atomic_ref<std::uint32_t> state_ref(std::uint32_t i) const {
    return std::atomic_ref<std::uint32_t>(
        *reinterpret_cast<std::uint32_t*>(base_ + kLeaseEntryBytes * i));
  }
  std::atomic_ref<std::uint64_t> frame_ref(std::uint32_t i) const {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(base_ + kLeaseEntryBytes * i + 8));
  }

  std::byte* base_;
  std::uint32_t lease_capacity_;
  std::uint32_t slot_;
};

// Non-owning view over a mapped leases segment; its shape comes from the catalog.
class LeasesView {
 public:
  // Throws naming the segment when `size` cannot hold num_slots tables of lease_capacity.
  static LeasesView over(void* base, std::size_t size, std::uint32_t num_slots,
                         std::uint32_t lease_capacity, std::string_view what = "leases") {
    if (reinterpret_cast<std::uintptr_t>(base) % 8 != 0)
      throw ProtocolError("leases '" + std::string(what) + "': mapping is not 8-byte aligned");
    const auto need = leases_size(num_slots, lease_capacity);
    if (size < need)
      throw ProtocolError("leases '" + std::string(what) + "': segment is " + std::to_string(size) +
                          " bytes; " + std::to_string(num_slots) + " slots of " +
                          std::to_string(lease_capacity) + " leases need " + std::to_string(need));
    return LeasesView(static_cast<std::byte*>(base), num_slots, lease_capacity);
  }
  // Zeroes the tables (the daemon, creating the segment).
  static LeasesView initialize(void* base, std::size_t size, std::uint32_t num_slots,
                               std::uint32_t lease_capacity) {
    auto v = over(base, size, num_slots, lease_capacity);
    std::memset(base, 0, static_cast<std::size_t>(leases_size(num_slots, lease_capacity)));
    return v;
  }

  std::uint32_t num_slots() const { return num_slots_; }
  std::uint32_t lease_capacity() const { return lease_capacity_; }
  LeaseTableView table(std::uint32_t i) const {
    if (i >= num_slots_)
      throw ProtocolError("leases: slot " + std::to_string(i) + " out of range (" +
                          std::to_string(num_slots_) + " slots)");
    return LeaseTableView(base_ + kLeaseEntryBytes * lease_capacity_ * i, lease_capacity_, i);
  }

 private:
  LeasesView(std::byte* b, std::uint32_t n, std::uint32_t cap)
      : base_(b), num_slots_(n), lease_capacity_(cap) {}
  std::byte* base_;
  std::uint32_t num_slots_;
  std::uint32_t lease_capacity_;
};

// Non-owning typed view over a mapped catalog. The shape (num_slots, page_size,
// lease_capacity, total_size) and the identity fields are copied out once, by initialize() or
// validate(), and never read again: another process that rewrites them afterwards cannot move
// a page or a bound. Only the live fields (futex, heartbeat, pages) are read from memory.
class CatalogView {
 public:
  static CatalogView initialize(void* base, std::size_t size, const CatalogParams& p) {
    check_params(p.num_slots, p.page_size, p.lease_capacity, "catalog");
    if (p.socket.size() > kSocketAddressBytes)
      throw ProtocolError("catalog: socket address is " + std::to_string(p.socket.size()) +
                          " bytes; at most " + std::to_string(kSocketAddressBytes) + " fit");
    const auto total = catalog_size(p.num_slots, p.page_size);
    if (size < total) {
      throw ProtocolError("catalog: " + std::to_string(size) + " bytes cannot hold " +
                          std::to_string(p.num_slots) + " pages of " + std::to_string(p.page_size) +
                          " (" + std::to_string(total) + " needed)");
    }
    auto* b = static_cast<std::byte*>(base);
    std::memset(b, 0, static_cast<std::size_t>(total));
    store_le<std::uint32_t>(b, catalog_offset::kLayoutVersion, kCatalogLayoutVersion);
    store_le<std::uint32_t>(b, catalog_offset::kHeaderSize, kCatalogHeaderSize);
    store_le<std::uint32_t>(b, catalog_offset::kNumSlots, p.num_slots);
    store_le<std::uint32_t>(b, catalog_offset::kPageSize, p.page_size);
    store_le<std::uint32_t>(b, catalog_offset::kLeaseCapacity, p.lease_capacity);
    store_le<std::int32_t>(b, catalog_offset::kDaemonPid, p.daemon_pid);
    store_le<std::int32_t>(b, catalog_offset::kDeviceType, p.device_type);
    store_le<std::int32_t>(b, catalog_offset::kDeviceId, p.device_id);
    store_le<std::uint64_t>(b, catalog_offset::kTotalSize, total);
    store_le<std::uint32_t>(b, catalog_offset::kDaemonUid, p.daemon_uid);
    store_le<std::uint32_t>(b, catalog_offset::kSocketLen,
                            static_cast<std::uint32_t>(p.socket.size()));
    std::memcpy(b + catalog_offset::kSocket, p.socket.data(), p.socket.size());
    std::memcpy(b + catalog_offset::kDeviceUuid, p.device_uuid.data(), kDeviceUuidBytes);
    // The magic goes last, with release order: a consumer that sees it (ready()) sees every
    // field above, and the control block, which the daemon initialises before the catalog.
    std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(b + catalog_offset::kMagic))
        .store(kCatalogMagic, std::memory_order_release);
    CatalogView v(b);
    v.shape_ = {p.num_slots,   p.page_size, p.lease_capacity, total,    p.daemon_pid,
                p.device_type, p.device_id, p.daemon_uid,     p.socket, p.device_uuid};
    return v;
  }

  // Whether the creator has finished initialize(): false while the segment is still all zeros
  // (just created and sized, header not yet written). A consumer treats that as "not published
  // yet" and looks again, instead of reporting a bad magic. Validate after it says true.
  static bool ready(const void* base, std::size_t size) {
    if (size == 0) return false;  // created, not sized yet
    // Too small or misaligned is not "being created": validate() says what is wrong.
    if (size < kCatalogFixedHeaderBytes || reinterpret_cast<std::uintptr_t>(base) % 8 != 0)
      return true;
    auto* magic = const_cast<std::uint32_t*>(reinterpret_cast<const std::uint32_t*>(
        static_cast<const std::byte*>(base) + catalog_offset::kMagic));
    return std::atomic_ref<std::uint32_t>(*magic).load(std::memory_order_acquire) != 0;
  }

  // Validates every header field against the mapped size; `what` names the segment.
  static CatalogView validate(void* base, std::size_t size, std::string_view what = "catalog") {
    auto* b = static_cast<std::byte*>(base);
    const std::string where = "catalog '" + std::string(what) + "'";
    if (reinterpret_cast<std::uintptr_t>(base) % 8 != 0) {
      throw ProtocolError(where + ": mapping is not 8-byte aligned");
    }
    if (size < kCatalogFixedHeaderBytes) {
      throw ProtocolError(where + ": segment is " + std::to_string(size) +
                          " bytes, smaller than the " + std::to_string(kCatalogFixedHeaderBytes) +
                          "-byte header");
    }
    const auto magic = load_le<std::uint32_t>(b, catalog_offset::kMagic);
    if (magic != kCatalogMagic) {
      char buf[80];
      std::snprintf(buf, sizeof buf, ": magic is 0x%08x, expected 0x%08x (\"MDCT\")", magic,
                    kCatalogMagic);
      throw ProtocolError(where + buf);
    }
    const auto layout = load_le<std::uint32_t>(b, catalog_offset::kLayoutVersion);
    if (layout != kCatalogLayoutVersion) {
      throw ProtocolError(where + ": layout_version is " + std::to_string(layout) +
                          "; this build reads version " + std::to_string(kCatalogLayoutVersion));
    }
    const auto header = load_le<std::uint32_t>(b, catalog_offset::kHeaderSize);
    if (header != kCatalogHeaderSize) {
      throw ProtocolError(where + ": header_size is " + std::to_string(header) + ", expected " +
                          std::to_string(kCatalogHeaderSize));
    }
    const auto n = load_le<std::uint32_t>(b, catalog_offset::kNumSlots);
    const auto page = load_le<std::uint32_t>(b, catalog_offset::kPageSize);
    const auto leases = load_le<std::uint32_t>(b, catalog_offset::kLeaseCapacity);
    check_params(n, page, leases, where);
    const auto total = load_le<std::uint64_t>(b, catalog_offset::kTotalSize);
    if (total != catalog_size(n, page)) {
      throw ProtocolError(where + ": total_size is " + std::to_string(total) + " but " +
                          std::to_string(n) + " pages of " + std::to_string(page) + " need " +
                          std::to_string(catalog_size(n, page)));
    }
    if (size < total) {
      throw ProtocolError(where + ": segment is " + std::to_string(size) +
                          " bytes, smaller than its total_size " + std::to_string(total));
    }
    const auto dev = load_le<std::int32_t>(b, catalog_offset::kDeviceType);
    if (dev != kDLDeviceCPU && dev != kDLDeviceCUDA) {
      throw ProtocolError(where + ": device_type is " + std::to_string(dev) +
                          ", expected 1 (CPU) or 2 (CUDA)");
    }
    const auto socket_len = load_le<std::uint32_t>(b, catalog_offset::kSocketLen);
    if (socket_len > kSocketAddressBytes) {
      throw ProtocolError(where + ": socket_len is " + std::to_string(socket_len) + ", at most " +
                          std::to_string(kSocketAddressBytes));
    }
    CatalogView view(b);
    view.shape_ = {
        n,
        page,
        leases,
        total,
        load_le<std::int32_t>(b, catalog_offset::kDaemonPid),
        dev,
        load_le<std::int32_t>(b, catalog_offset::kDeviceId),
        load_le<std::uint32_t>(b, catalog_offset::kDaemonUid),
        std::string(reinterpret_cast<const char*>(b + catalog_offset::kSocket), socket_len),
        {}};
    // Within the header (size >= total_size >= 4096 was checked above).
    std::memcpy(view.shape_.device_uuid.data(), b + catalog_offset::kDeviceUuid, kDeviceUuidBytes);
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto len = load_le<std::uint32_t>(view.page_base(i), page_offset::kManifestLen);
      if (len > page - manifest_offset()) {
        throw ProtocolError(where + ": page " + std::to_string(i) + " manifest_len " +
                            std::to_string(len) + " exceeds its manifest area of " +
                            std::to_string(page - manifest_offset()) + " bytes");
      }
    }
    return view;
  }

  std::uint32_t num_slots() const { return shape_.num_slots; }
  std::uint32_t page_size() const { return shape_.page_size; }
  std::uint32_t lease_capacity() const { return shape_.lease_capacity; }
  std::uint64_t total_size() const { return shape_.total_size; }
  std::int32_t daemon_pid() const { return shape_.daemon_pid; }
  std::int32_t device_type() const { return shape_.device_type; }
  std::int32_t device_id() const { return shape_.device_id; }
  std::uint32_t daemon_uid() const { return shape_.daemon_uid; }
  // The registration socket's sun_path bytes ("" when the producer has none).
  const std::string& socket_address() const { return shape_.socket; }
  // The GPU of a CUDA slot (all zero: unknown), as validated.
  const DeviceUuid& device_uuid() const { return shape_.device_uuid; }

  std::uint64_t heartbeat_ns() const { return heartbeat_ref().load(std::memory_order_acquire); }
  void beat(std::uint64_t now_ns) { heartbeat_ref().store(now_ns, std::memory_order_release); }
  // A heartbeat older than `max_age_ns` means the daemon is gone even if it never set shutdown.
  bool heartbeat_stale(std::uint64_t now_ns, std::uint64_t max_age_ns) const {
    const auto hb = heartbeat_ns();
    return hb == 0 || (now_ns > hb && now_ns - hb > max_age_ns);
  }

  std::uint32_t* futex_word() const {
    return reinterpret_cast<std::uint32_t*>(base_ + catalog_offset::kFutex);
  }
  std::uint32_t futex_value() const {
    return std::atomic_ref<std::uint32_t>(*futex_word()).load(std::memory_order_acquire);
  }
  // Mirrors write_idx and wakes every sleeping consumer.
  void publish_futex(std::uint32_t write_idx) {
    std::atomic_ref<std::uint32_t>(*futex_word()).store(write_idx, std::memory_order_release);
    futex_wake_all(futex_word());
  }

  PageView page(std::uint32_t i) const {
    if (i >= num_slots()) {
      throw ProtocolError("catalog: page " + std::to_string(i) + " out of range (" +
                          std::to_string(num_slots()) + " slots)");
    }
    return PageView(page_base(i), page_size(), i);
  }

  const std::byte* data() const { return base_; }

 private:
  struct Shape {
    std::uint32_t num_slots = 0, page_size = 0, lease_capacity = 0;
    std::uint64_t total_size = 0;
    std::int32_t daemon_pid = 0, device_type = 0, device_id = 0;
    std::uint32_t daemon_uid = 0;
    std::string socket;
    DeviceUuid device_uuid{};
  };
  explicit CatalogView(std::byte* b) : base_(b) {}

  static void check_params(std::uint32_t n, std::uint32_t page, std::uint32_t leases,
                           const std::string& where) {
    if (n < kMinSlots || n > kMaxSlots) {
      throw ProtocolError(where + ": num_slots is " + std::to_string(n) + ", outside 1..10");
    }
    if (page < kMinPageSize || page > kMaxPageSize || page % 4096 != 0) {
      throw ProtocolError(where + ": page_size is " + std::to_string(page) +
                          ", expected a multiple of 4096 in " + std::to_string(kMinPageSize) +
                          ".." + std::to_string(kMaxPageSize));
    }
    if (leases < 1 || leases > kMaxLeaseCapacity) {
      throw ProtocolError(where + ": lease_capacity is " + std::to_string(leases) +
                          ", expected 1.." + std::to_string(kMaxLeaseCapacity));
    }
  }

  std::byte* page_base(std::uint32_t i) const {
    return base_ + kCatalogHeaderSize + static_cast<std::size_t>(shape_.page_size) * i;
  }
  std::atomic_ref<std::uint64_t> heartbeat_ref() const {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(base_ + catalog_offset::kHeartbeat));
  }

  std::byte* base_;
  Shape shape_;
};

}  // namespace meshdock::shm
