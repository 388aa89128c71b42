// meshdock's catalog segment: what the 433-byte control block cannot say.
//
// Header (little-endian, at offset 0, kCatalogHeaderSize bytes reserved):
//   [0,4)   magic "MDCT"                 [4,8)   layout_version u32 (1)
//   [8,12)  header_size u32              [12,16) num_slots u32 (1..10)
//   [16,20) page_size u32 (multiple of 4096, >= 8192)
//   [20,24) lease_capacity u32 (1..1024) [24,28) daemon pid i32
//   [28,32) device_type i32 (DLPack: 1 CPU, 2 CUDA)   [32,36) device_id i32
//   [36,40) futex u32: mirrors write_idx; consumers sleep on it
//   [40,48) heartbeat u64: daemon CLOCK_MONOTONIC ns, refreshed every 100 ms
//   [48,56) total_size u64 = header_size + num_slots * page_size
// Page i at header_size + i * page_size:
//   [0,8)   seq u64: seqlock generation, odd while the page is being written
//   [8,16)  frame u64: the write_idx value this slot's contents were published as (1-based)
//   [16,24) data_size u64: bytes of the slot buffer the manifest describes
//   [24,32) buffer_version u64: control-block version when the slot buffer was created
//   [32,36) manifest_len u32             [36,64) reserved (zero)
//   [64, 64 + 16 * lease_capacity)  lease table: {state u32, reserved u32, frame u64}
//   [manifest_offset, page_size)    manifest JSON (manifest_len bytes)
//
// A lease's state is 0 (free), pid | kLeaseClaiming while its frame is being filled in, or pid.
// The seqlock covers frame, data_size, buffer_version, manifest_len and the manifest; leases are
// atomics of their own and are not covered by it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "meshdock/shm/bytes.hpp"
#include "meshdock/shm/control_block.hpp"
#include "meshdock/shm/error.hpp"
#include "meshdock/shm/futex.hpp"

namespace meshdock::shm {

inline constexpr std::uint32_t kCatalogMagic = 0x5443444Du;  // bytes "MDCT"
inline constexpr std::uint32_t kCatalogLayoutVersion = 1;
inline constexpr std::uint32_t kCatalogHeaderSize = 4096;
inline constexpr std::uint32_t kDefaultPageSize = 256 * 1024;
inline constexpr std::uint32_t kMinPageSize = 8192;
inline constexpr std::uint32_t kMaxPageSize = 64u * 1024 * 1024;
inline constexpr std::uint32_t kDefaultLeaseCapacity = 64;
inline constexpr std::uint32_t kMaxLeaseCapacity = 1024;
inline constexpr std::uint32_t kLeaseClaiming = 0x80000000u;
inline constexpr std::size_t kPageHeaderBytes = 64;
inline constexpr std::size_t kLeaseEntryBytes = 16;

inline constexpr std::int32_t kDLDeviceCPU = 1;
inline constexpr std::int32_t kDLDeviceCUDA = 2;

namespace catalog_offset {
inline constexpr std::size_t kMagic = 0, kLayoutVersion = 4, kHeaderSize = 8, kNumSlots = 12,
                             kPageSize = 16, kLeaseCapacity = 20, kDaemonPid = 24, kDeviceType = 28,
                             kDeviceId = 32, kFutex = 36, kHeartbeat = 40, kTotalSize = 48;
}  // namespace catalog_offset

namespace page_offset {
inline constexpr std::size_t kSeq = 0, kFrame = 8, kDataSize = 16, kBufferVersion = 24,
                             kManifestLen = 32, kLeases = 64;
}  // namespace page_offset

constexpr std::size_t manifest_offset(std::uint32_t lease_capacity) {
  return kPageHeaderBytes + kLeaseEntryBytes * lease_capacity;
}

constexpr std::uint64_t catalog_size(std::uint32_t num_slots, std::uint32_t page_size) {
  return static_cast<std::uint64_t>(kCatalogHeaderSize) +
         static_cast<std::uint64_t>(num_slots) * page_size;
}

struct CatalogParams {
  std::uint32_t num_slots = kDefaultSlots;
  std::uint32_t page_size = kDefaultPageSize;
  std::uint32_t lease_capacity = kDefaultLeaseCapacity;
  std::int32_t daemon_pid = 0;
  std::int32_t device_type = kDLDeviceCPU;
  std::int32_t device_id = 0;
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

// One page: seqlock writer/reader and the lease table. Non-owning.
class PageView {
 public:
  PageView(std::byte* base, std::uint32_t page_size, std::uint32_t lease_capacity,
           std::uint32_t index)
      : base_(base), page_size_(page_size), lease_capacity_(lease_capacity), index_(index) {}

  std::uint32_t index() const { return index_; }
  std::size_t manifest_capacity() const { return page_size_ - manifest_offset(lease_capacity_); }
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
  // Returns the odd value to pass to finish_write / abort_write.
  std::uint64_t begin_write() {
    auto seq = seq_ref();
    const std::uint64_t s = seq.load(std::memory_order_relaxed);
    const std::uint64_t begin = (s | 1u) == s ? s : s + 1;  // odd; repairs a crashed writer's odd
    seq.store(begin, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return begin;
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
    std::memcpy(base_ + manifest_offset(lease_capacity_), manifest.data(), manifest.size());
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
      snap.manifest.assign(reinterpret_cast<const char*>(base_ + manifest_offset(lease_capacity_)),
                           len);
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

  // Takes a free lease entry for `pid` holding `frame`. Returns its index, or nullopt if every
  // entry is taken.
  std::optional<std::uint32_t> acquire_lease(std::int32_t pid, std::uint64_t frame) {
    const auto claiming = static_cast<std::uint32_t>(pid) | kLeaseClaiming;
    for (std::uint32_t i = 0; i < lease_capacity_; ++i) {
      auto state = lease_state(i);
      std::uint32_t expected = 0;
      if (state.compare_exchange_strong(expected, claiming, std::memory_order_acq_rel)) {
        lease_frame(i).store(frame, std::memory_order_relaxed);
        state.store(static_cast<std::uint32_t>(pid), std::memory_order_release);
        return i;
      }
    }
    return std::nullopt;
  }

  // Releases entry `index` if `pid` still holds it (a reclaimed entry is left alone).
  bool release_lease(std::uint32_t index, std::int32_t pid) {
    if (index >= lease_capacity_) return false;
    std::uint32_t expected = static_cast<std::uint32_t>(pid);
    return lease_state(index).compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
  }

  std::vector<LeaseEntry> leases() const {
    std::vector<LeaseEntry> out;
    for (std::uint32_t i = 0; i < lease_capacity_; ++i) {
      const std::uint32_t s = lease_state(i).load(std::memory_order_acquire);
      if (s == 0) continue;
      out.push_back(LeaseEntry{i, static_cast<std::int32_t>(s & ~kLeaseClaiming),
                               (s & kLeaseClaiming) != 0,
                               lease_frame(i).load(std::memory_order_relaxed)});
    }
    return out;
  }

  // Frees the entries whose holder `alive` says is gone. Returns how many were freed.
  std::size_t reclaim_dead_leases(const std::function<bool(std::int32_t)>& alive) {
    std::size_t freed = 0;
    for (std::uint32_t i = 0; i < lease_capacity_; ++i) {
      auto state = lease_state(i);
      std::uint32_t s = state.load(std::memory_order_acquire);
      if (s == 0) continue;
      if (alive(static_cast<std::int32_t>(s & ~kLeaseClaiming))) continue;
      if (state.compare_exchange_strong(s, 0, std::memory_order_acq_rel)) ++freed;
    }
    return freed;
  }

 private:
  std::atomic_ref<std::uint64_t> seq_ref() const {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(base_ + page_offset::kSeq));
  }
  std::atomic_ref<std::uint32_t> lease_state(std::uint32_t i) const {
    return std::atomic_ref<std::uint32_t>(
        *reinterpret_cast<std::uint32_t*>(base_ + page_offset::kLeases + kLeaseEntryBytes * i));
  }
  std::atomic_ref<std::uint64_t> lease_frame(std::uint32_t i) const {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(base_ + page_offset::kLeases + kLeaseEntryBytes * i + 8));
  }

  std::byte* base_;
  std::uint32_t page_size_;
  std::uint32_t lease_capacity_;
  std::uint32_t index_;
};

// Non-owning typed view over a mapped catalog.
class CatalogView {
 public:
  static CatalogView initialize(void* base, std::size_t size, const CatalogParams& p) {
    check_params(p.num_slots, p.page_size, p.lease_capacity, "catalog");
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
    // The magic goes last, with release order: a consumer that sees it (ready()) sees every
    // field above, and the control block, which the daemon initialises before the catalog.
    std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(b + catalog_offset::kMagic))
        .store(kCatalogMagic, std::memory_order_release);
    return CatalogView(b);
  }

  // Whether the creator has finished initialize(): false while the segment is still all zeros
  // (just created and sized, header not yet written). A consumer treats that as "not published
  // yet" and looks again, instead of reporting a bad magic. Validate after it says true.
  static bool ready(const void* base, std::size_t size) {
    if (size == 0) return false;  // created, not sized yet
    // Too small or misaligned is not "being created": validate() says what is wrong.
    if (size < 56 || reinterpret_cast<std::uintptr_t>(base) % 8 != 0) return true;
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
    if (size < 56) {
      throw ProtocolError(where + ": segment is " + std::to_string(size) +
                          " bytes, smaller than the 56-byte header");
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
    CatalogView view(b);
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto len = load_le<std::uint32_t>(view.page_base(i), page_offset::kManifestLen);
      if (len > page - manifest_offset(leases)) {
        throw ProtocolError(where + ": page " + std::to_string(i) + " manifest_len " +
                            std::to_string(len) + " exceeds its manifest area of " +
                            std::to_string(page - manifest_offset(leases)) + " bytes");
      }
    }
    return view;
  }

  std::uint32_t num_slots() const { return u32(catalog_offset::kNumSlots); }
  std::uint32_t page_size() const { return u32(catalog_offset::kPageSize); }
  std::uint32_t lease_capacity() const { return u32(catalog_offset::kLeaseCapacity); }
  std::uint64_t total_size() const {
    return load_le<std::uint64_t>(base_, catalog_offset::kTotalSize);
  }
  std::int32_t daemon_pid() const {
    return load_le<std::int32_t>(base_, catalog_offset::kDaemonPid);
  }
  void set_daemon_pid(std::int32_t pid) {
    store_le<std::int32_t>(base_, catalog_offset::kDaemonPid, pid);
  }
  std::int32_t device_type() const {
    return load_le<std::int32_t>(base_, catalog_offset::kDeviceType);
  }
  std::int32_t device_id() const { return load_le<std::int32_t>(base_, catalog_offset::kDeviceId); }

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
    return PageView(page_base(i), page_size(), lease_capacity(), i);
  }

  const std::byte* data() const { return base_; }

 private:
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
    if (leases < 1 || leases > kMaxLeaseCapacity || manifest_offset(leases) >= page) {
      throw ProtocolError(where + ": lease_capacity is " + std::to_string(leases) +
                          ", expected 1.." + std::to_string(kMaxLeaseCapacity) +
                          " leaving room for a manifest in a page of " + std::to_string(page));
    }
  }

  std::uint32_t u32(std::size_t off) const { return load_le<std::uint32_t>(base_, off); }
  std::byte* page_base(std::uint32_t i) const {
    return base_ + kCatalogHeaderSize + static_cast<std::size_t>(page_size()) * i;
  }
  std::atomic_ref<std::uint64_t> heartbeat_ref() const {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(base_ + catalog_offset::kHeartbeat));
  }

  std::byte* base_;
};

}  // namespace meshdock::shm
