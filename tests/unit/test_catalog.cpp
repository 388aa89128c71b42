#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "../support/protocol_error.hpp"
#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using meshdock::testing::protocol_error_of;
using namespace std::chrono_literals;

namespace {

struct Catalog {
  explicit Catalog(shm::CatalogParams p = {3, 8192, 8, 1234, shm::kDLDeviceCPU, 0, 0, ""})
      : params(p), words(shm::catalog_size(p.num_slots, p.page_size) / 8, 0) {
    view.emplace(shm::CatalogView::initialize(words.data(), bytes(), p));
  }
  std::size_t bytes() const { return words.size() * 8; }
  std::byte* raw() { return reinterpret_cast<std::byte*>(words.data()); }
  shm::CatalogParams params;
  std::vector<std::uint64_t> words;
  std::optional<shm::CatalogView> view;
};

// A leases segment's bytes for `n` slots of `cap` entries.
struct Leases {
  Leases(std::uint32_t n, std::uint32_t cap)
      : words(shm::leases_size(n, cap) / 8, 0),
        view(shm::LeasesView::initialize(words.data(), words.size() * 8, n, cap)) {}
  std::vector<std::uint64_t> words;
  shm::LeasesView view;
};

}  // namespace

TEST(Catalog, InitializeThenValidate) {
  Catalog c;
  auto v = shm::CatalogView::validate(c.words.data(), c.bytes(), "t");
  EXPECT_EQ(v.num_slots(), 3u);
  EXPECT_EQ(v.page_size(), 8192u);
  EXPECT_EQ(v.lease_capacity(), 8u);
  EXPECT_EQ(v.daemon_pid(), 1234);
  EXPECT_EQ(v.device_type(), shm::kDLDeviceCPU);
  EXPECT_EQ(v.total_size(), 4096u + 3 * 8192u);
  EXPECT_EQ(std::memcmp(c.raw(), "MDCT", 4), 0);
}

TEST(Catalog, ValidationNamesFieldAndValue) {
  Catalog c;
  // Validating the catalog's bytes as a segment of `size` bytes must say `expect` (traced: the
  // failure names the case as well as the message it got).
  auto expect_error = [&](std::size_t size, const std::string& expect) {
    SCOPED_TRACE(expect);
    const auto msg =
        protocol_error_of([&] { shm::CatalogView::validate(c.words.data(), size, "t"); });
    EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  };
  auto check = [&](std::size_t off, std::uint32_t value, const std::string& expect) {
    const auto saved = shm::load_le<std::uint32_t>(c.raw(), off);
    shm::store_le<std::uint32_t>(c.raw(), off, value);
    expect_error(c.bytes(), expect);
    shm::store_le<std::uint32_t>(c.raw(), off, saved);
  };
  check(0, 0x12345678, "magic is 0x12345678, expected 0x5443444d");
  check(4, 1, "layout_version is 1; this build reads version 2");
  check(8, 8192, "header_size is 8192, expected 4096");
  check(12, 0, "num_slots is 0, outside 1..10");
  check(12, 11, "num_slots is 11, outside 1..10");
  check(16, 8193, "page_size is 8193");
  check(16, 4096, "page_size is 4096");
  check(20, 0, "lease_capacity is 0");
  check(20, 1025, "lease_capacity is 1025");
  check(60, 109, "socket_len is 109, at most 108");
  check(28, 7, "device_type is 7, expected 1 (CPU) or 2 (CUDA)");
  check(48, 4096, "total_size is 4096 but 3 pages of 8192 need 28672");
  expect_error(28671, "segment is 28671 bytes, smaller than its total_size 28672");
  expect_error(40, "smaller than the 172-byte header");
  // A manifest_len beyond the page's manifest area.
  auto* page1 = c.raw() + 4096 + 8192;
  shm::store_le<std::uint32_t>(page1, shm::page_offset::kManifestLen, 8192);
  expect_error(c.bytes(), "page 1 manifest_len 8192 exceeds its manifest area of 8128 bytes");
}

TEST(Page, WriteReadRoundTrip) {
  Catalog c;
  auto page = c.view->page(1);
  EXPECT_EQ(page.seq(), 0u);
  page.write(5, 1000, 2, "{\"v\":1}");
  EXPECT_EQ(page.seq(), 2u);
  const auto snap = page.read();
  EXPECT_EQ(snap.frame, 5u);
  EXPECT_EQ(snap.data_size, 1000u);
  EXPECT_EQ(snap.buffer_version, 2u);
  EXPECT_EQ(snap.manifest, "{\"v\":1}");
  EXPECT_EQ(snap.seq, 2u);
  EXPECT_THROW(c.view->page(3), shm::ProtocolError);
}

TEST(Page, OversizedManifestIsRefusedBeforeTouchingThePage) {
  Catalog c;
  auto page = c.view->page(0);
  page.write(1, 1, 1, "old");
  EXPECT_EQ(protocol_error_of([&] { page.write(2, 2, 2, std::string(8129, 'x')); }),
            "catalog page 0: manifest is 8129 bytes; the page holds 8128 (raise catalog "
            "page_size)");
  EXPECT_EQ(page.read().manifest, "old");
  EXPECT_EQ(page.seq(), 2u);
}

TEST(Page, OddSequenceReadsAsTorn) {
  Catalog c;
  auto page = c.view->page(0);
  page.write(1, 1, 1, "a");
  shm::store_le<std::uint64_t>(c.raw() + 4096, 0, 3);  // a writer died mid-write
  EXPECT_FALSE(page.try_read().has_value());
  EXPECT_THROW(page.read(50), shm::ProtocolError);
  page.write(2, 2, 2, "b");  // the next writer repairs it: 3 -> 4
  EXPECT_EQ(page.seq(), 4u);
  EXPECT_EQ(page.read().manifest, "b");
}

// Under contention a reader never returns a page mixing two writes: every snapshot's manifest
// is one repeated letter chosen by the frame, and its length equals data_size.
TEST(Page, SeqlockReaderNeverSeesATornPage) {
  Catalog c({1, 65536, 4, 1, shm::kDLDeviceCPU, 0, 0, ""});
  auto page = c.view->page(0);
  page.write(0, 1, 0, "a");
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0}, bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto s = page.try_read();
        if (!s) continue;
        ++reads;
        const char want = static_cast<char>('a' + s->frame % 26);
        bool ok = s->manifest.size() == s->data_size && s->buffer_version == s->frame * 7;
        for (char ch : s->manifest) ok = ok && ch == want;
        if (!ok) ++bad;
      }
    });
  }
  std::uint64_t frame = 0;
  const auto until = std::chrono::steady_clock::now() + 300ms;
  while (std::chrono::steady_clock::now() < until) {
    ++frame;
    const std::size_t len = 1 + (frame * 7919) % 60000;
    page.write(frame, len, frame * 7, std::string(len, static_cast<char>('a' + frame % 26)));
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_GT(frame, 100u);
  EXPECT_GT(reads.load(), 100);
  EXPECT_EQ(bad.load(), 0);
}

TEST(Lease, AcquireReleaseAndCapacity) {
  Leases l(3, 8);
  auto table = l.view.table(2);
  std::vector<std::uint32_t> got;
  for (int i = 0; i < 8; ++i) {
    auto idx = table.acquire(100 + i, 40 + i);
    ASSERT_TRUE(idx.has_value());
    got.push_back(*idx);
  }
  EXPECT_FALSE(table.acquire(999, 1).has_value());  // table full
  const auto leases = table.leases();
  ASSERT_EQ(leases.size(), 8u);
  EXPECT_EQ(leases[3].pid, 103);
  EXPECT_EQ(leases[3].frame, 43u);
  EXPECT_FALSE(leases[3].claiming);
  EXPECT_FALSE(table.release(got[3], 555));  // not the holder
  EXPECT_TRUE(table.release(got[3], 103));
  EXPECT_FALSE(table.release(got[3], 103));  // already free
  EXPECT_FALSE(table.release(8, 103));       // out of range: refused, not written
  EXPECT_EQ(table.leases().size(), 7u);
  EXPECT_EQ(*table.acquire(777, 1), got[3]);  // the freed entry is reused
  // Other slots' tables are independent, and slot 2's is the last 8 entries.
  EXPECT_TRUE(l.view.table(0).leases().empty());
  EXPECT_EQ(
      shm::load_le<std::uint32_t>(reinterpret_cast<std::byte*>(l.words.data()), (2 * 8 + 3) * 16),
      777u);
  EXPECT_THROW(l.view.table(3), shm::ProtocolError);
}

TEST(Lease, SegmentTooSmallForTheCatalogsShapeIsRefused) {
  std::vector<std::uint64_t> words(10, 0);
  EXPECT_NE(protocol_error_of([&] {
              shm::LeasesView::over(words.data(), 80, 3, 8, "x.leases");
            }).find("leases 'x.leases': segment is 80 bytes; 3 slots of 8 leases need 384"),
            std::string::npos);
}

TEST(Lease, ClearOnlyWhatWasSeen) {
  Leases l(1, 4);
  auto table = l.view.table(0);
  const auto i = *table.acquire(42, 7);
  EXPECT_FALSE(table.clear(i, 43));  // someone else's state now: left alone
  EXPECT_TRUE(table.clear(i, 42));
  EXPECT_TRUE(table.leases().empty());
  EXPECT_FALSE(table.clear(99, 0));
}

TEST(Lease, ConcurrentAcquirersNeverShareAnEntry) {
  Leases l(1, 256);
  auto table = l.view.table(0);
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 64; ++i) {
        if (!table.acquire(1000 + t, i)) ++failures;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  const auto leases = table.leases();
  ASSERT_EQ(leases.size(), 256u);
  std::map<std::int32_t, int> per_pid;
  for (const auto& e : leases) ++per_pid[e.pid];
  for (int t = 0; t < 4; ++t) EXPECT_EQ(per_pid[1000 + t], 64);
}

TEST(Lease, ReclaimFreesOnlyDeadHolders) {
  Leases l(1, 8);
  auto table = l.view.table(0);
  table.acquire(10, 1);
  table.acquire(11, 1);
  table.acquire(12, 1);
  const auto freed = table.reclaim_dead([](std::int32_t pid) { return pid == 11; });
  EXPECT_EQ(freed, 2u);
  const auto left = table.leases();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].pid, 11);
}

// Attack 1: the view keeps the shape it validated. Rewriting num_slots, page_size,
// lease_capacity or total_size afterwards (a consumer with write access, or root) moves no
// page and no bound.
TEST(Catalog, ShapeIsCopiedOnceAndNeverReadAgain) {
  Catalog c;
  auto v = shm::CatalogView::validate(c.words.data(), c.bytes(), "t");
  v.page(2).write(3, 10, 1, "{}");
  shm::store_le<std::uint32_t>(c.raw(), shm::catalog_offset::kNumSlots, 0xffffffffu);
  shm::store_le<std::uint32_t>(c.raw(), shm::catalog_offset::kPageSize, 0x7ffff000u);
  shm::store_le<std::uint32_t>(c.raw(), shm::catalog_offset::kLeaseCapacity, 0xffffffu);
  shm::store_le<std::uint64_t>(c.raw(), shm::catalog_offset::kTotalSize, 1);
  shm::store_le<std::int32_t>(c.raw(), shm::catalog_offset::kDeviceType, 77);
  EXPECT_EQ(v.num_slots(), 3u);
  EXPECT_EQ(v.page_size(), 8192u);
  EXPECT_EQ(v.lease_capacity(), 8u);
  EXPECT_EQ(v.total_size(), 4096u + 3 * 8192u);
  EXPECT_EQ(v.device_type(), shm::kDLDeviceCPU);
  EXPECT_EQ(v.page(2).read().manifest, "{}");  // still at 4096 + 2 * 8192
  EXPECT_THROW(v.page(3), shm::ProtocolError);
  // And the view the writer initialised is just as deaf.
  EXPECT_EQ(c.view->num_slots(), 3u);
  EXPECT_EQ(c.view->page(2).read().frame, 3u);
}

TEST(Catalog, SocketAndUidRoundTrip) {
  shm::CatalogParams p{2, 8192, 4, 77, shm::kDLDeviceCPU, 0, 1000, std::string("\0abcde", 6)};
  Catalog c(p);
  auto v = shm::CatalogView::validate(c.words.data(), c.bytes(), "t");
  EXPECT_EQ(v.daemon_uid(), 1000u);
  EXPECT_EQ(v.socket_address(), std::string("\0abcde", 6));
  EXPECT_EQ(shm::describe_socket(v.socket_address()), "@abcde");
  p.socket = std::string(109, 'x');
  EXPECT_THROW(Catalog{p}, shm::ProtocolError);
}

TEST(Liveness, SelfAliveAndImpossiblePidDead) {
  EXPECT_TRUE(shm::pid_alive(getpid()));
  EXPECT_FALSE(shm::pid_alive(0));
  EXPECT_FALSE(shm::pid_alive(-5));
  EXPECT_FALSE(shm::pid_alive(0x3FFFFFFF));  // above any pid_max
}

TEST(Heartbeat, StaleAfterMaxAge) {
  Catalog c;
  EXPECT_TRUE(c.view->heartbeat_stale(1000, 100));  // never beaten
  c.view->beat(1000);
  EXPECT_FALSE(c.view->heartbeat_stale(1050, 100));
  EXPECT_TRUE(c.view->heartbeat_stale(1101, 100));
  EXPECT_FALSE(c.view->heartbeat_stale(900, 100));  // clock read before the beat
}

TEST(Futex, TimesOutWhenNothingChanges) {
  Catalog c;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(shm::futex_wait(c.view->futex_word(), 0, 30ms), shm::WaitResult::kTimedOut);
  const auto dt = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(dt, 30ms);
  EXPECT_LT(dt, 2s);
}

TEST(Futex, ReturnsAtOnceWhenAlreadyChanged) {
  Catalog c;
  c.view->publish_futex(4);
  EXPECT_EQ(shm::futex_wait(c.view->futex_word(), 3, 10s), shm::WaitResult::kChanged);
}

TEST(Futex, PublishWakesASleeper) {
  Catalog c;
  std::atomic<bool> woke{false};
  std::thread waiter(
      [&] { woke = shm::futex_wait(c.view->futex_word(), 0, 10s) == shm::WaitResult::kChanged; });
  std::this_thread::sleep_for(20ms);
  const auto t0 = std::chrono::steady_clock::now();
  c.view->publish_futex(1);
  waiter.join();
  EXPECT_TRUE(woke.load());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(c.view->futex_value(), 1u);
}

// A consumer opens the handles its page's buffer had, never a fresher buffer the control block
// names after the daemon began rewriting the page (the CUDA attach path: a lease made the daemon
// give the ring slot a fresh buffer while the consumer was between page read and open).
TEST(Page, HandlesAreThoseOfTheSnapshotsBufferOrNone) {
  Catalog c;
  std::vector<std::uint64_t> cb_words(shm::control_block_size(3) / 8 + 1, 0);
  auto cb = shm::ControlBlockView::initialize(cb_words.data(), cb_words.size() * 8, 3);
  auto handle = [](std::uint8_t b) {
    shm::Handle h{};
    h.fill(static_cast<std::byte>(b));
    return h;
  };
  cb.set_mem_handle(1, handle(0x11));
  cb.set_event_handle(1, handle(0x22));
  auto page = c.view->page(1);
  page.write(7, 100, 2, "{}");
  const auto snap = page.read();
  const auto h = page.handles_of(cb, snap.seq);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->first, handle(0x11));
  EXPECT_EQ(h->second, handle(0x22));
  // The daemon's next publish to this ring slot: page odd first, then the fresh buffer's handle.
  const auto begin = page.begin_write(snap.seq);
  cb.set_mem_handle(1, handle(0x33));
  EXPECT_FALSE(page.handles_of(cb, snap.seq).has_value());  // mid-write
  page.finish_write(begin, 8, 100, 3, "{}");
  EXPECT_FALSE(page.handles_of(cb, snap.seq).has_value());      // written since
  EXPECT_FALSE(page.handles_of(cb, snap.seq + 1).has_value());  // an odd seq is never a snapshot
  const auto now = page.handles_of(cb, page.read().seq);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->first, handle(0x33));
}

// A CUDA slot's GPU UUID (header [172,188)), copied once at validation like the other identity
// fields; nvidia-smi's spelling for messages; zero (a host slot, an older daemon) is unknown.
TEST(Catalog, DeviceUuidRoundTripsAndIsCopiedOnce) {
  shm::CatalogParams p{2, 8192, 4, 77, shm::kDLDeviceCUDA, 1, 1000, "s"};
  for (std::size_t i = 0; i < p.device_uuid.size(); ++i)
    p.device_uuid[i] = static_cast<std::uint8_t>(0xf0 + i);
  Catalog c(p);
  auto v = shm::CatalogView::validate(c.words.data(), c.bytes(), "t");
  EXPECT_EQ(v.device_uuid(), p.device_uuid);
  EXPECT_EQ(std::to_integer<int>(c.raw()[shm::catalog_offset::kDeviceUuid]), 0xf0);
  EXPECT_EQ(shm::uuid_string(v.device_uuid()), "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff");
  EXPECT_TRUE(shm::uuid_known(v.device_uuid()));
  c.raw()[shm::catalog_offset::kDeviceUuid] = std::byte{0};  // rewritten later: not seen
  EXPECT_EQ(v.device_uuid(), p.device_uuid);
  shm::CatalogParams host{2, 8192, 4, 77, shm::kDLDeviceCPU, 0, 1000, "s"};
  Catalog h(host);
  EXPECT_FALSE(
      shm::uuid_known(shm::CatalogView::validate(h.words.data(), h.bytes(), "h").device_uuid()));
}
