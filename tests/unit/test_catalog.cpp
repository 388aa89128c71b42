#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using namespace std::chrono_literals;

namespace {

struct Catalog {
  explicit Catalog(shm::CatalogParams p = {3, 8192, 8, 1234, shm::kDLDeviceCPU, 0})
      : params(p), words(shm::catalog_size(p.num_slots, p.page_size) / 8, 0) {
    view.emplace(shm::CatalogView::initialize(words.data(), bytes(), p));
  }
  std::size_t bytes() const { return words.size() * 8; }
  std::byte* raw() { return reinterpret_cast<std::byte*>(words.data()); }
  shm::CatalogParams params;
  std::vector<std::uint64_t> words;
  std::optional<shm::CatalogView> view;
};

std::string error_of(std::function<void()> f) {
  try {
    f();
  } catch (const shm::ProtocolError& e) {
    return e.what();
  }
  return "no error";
}

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
  auto check = [&](std::size_t off, std::uint32_t value, const std::string& expect,
                   std::size_t size = 0) {
    const auto saved = shm::load_le<std::uint32_t>(c.raw(), off);
    shm::store_le<std::uint32_t>(c.raw(), off, value);
    const auto msg =
        error_of([&] { shm::CatalogView::validate(c.words.data(), size ? size : c.bytes(), "t"); });
    shm::store_le<std::uint32_t>(c.raw(), off, saved);
    EXPECT_NE(msg.find(expect), std::string::npos) << msg;
  };
  check(0, 0x12345678, "magic is 0x12345678, expected 0x5443444d");
  check(4, 2, "layout_version is 2; this build reads version 1");
  check(8, 8192, "header_size is 8192, expected 4096");
  check(12, 0, "num_slots is 0, outside 1..10");
  check(12, 11, "num_slots is 11, outside 1..10");
  check(16, 8193, "page_size is 8193");
  check(16, 4096, "page_size is 4096");
  check(20, 0, "lease_capacity is 0");
  check(20, 600, "lease_capacity is 600");  // 64 + 16*600 > 8192
  check(28, 7, "device_type is 7, expected 1 (CPU) or 2 (CUDA)");
  check(48, 4096, "total_size is 4096 but 3 pages of 8192 need 28672");
  EXPECT_NE(error_of([&] {
              shm::CatalogView::validate(c.words.data(), 28671, "t");
            }).find("segment is 28671 bytes, smaller than its total_size 28672"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              shm::CatalogView::validate(c.words.data(), 40, "t");
            }).find("smaller than the 56-byte header"),
            std::string::npos);
  // A manifest_len beyond the page's manifest area.
  auto* page1 = c.raw() + 4096 + 8192;
  shm::store_le<std::uint32_t>(page1, shm::page_offset::kManifestLen, 8192);
  EXPECT_NE(error_of([&] {
              shm::CatalogView::validate(c.words.data(), c.bytes(), "t");
            }).find("page 1 manifest_len 8192 exceeds its manifest area of 8000 bytes"),
            std::string::npos);
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
  EXPECT_EQ(error_of([&] { page.write(2, 2, 2, std::string(8001, 'x')); }),
            "catalog page 0: manifest is 8001 bytes; the page holds 8000 (raise catalog "
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
  Catalog c({1, 65536, 4, 1, shm::kDLDeviceCPU, 0});
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
  Catalog c;
  auto page = c.view->page(2);
  std::vector<std::uint32_t> got;
  for (int i = 0; i < 8; ++i) {
    auto idx = page.acquire_lease(100 + i, 40 + i);
    ASSERT_TRUE(idx.has_value());
    got.push_back(*idx);
  }
  EXPECT_FALSE(page.acquire_lease(999, 1).has_value());  // table full
  const auto leases = page.leases();
  ASSERT_EQ(leases.size(), 8u);
  EXPECT_EQ(leases[3].pid, 103);
  EXPECT_EQ(leases[3].frame, 43u);
  EXPECT_FALSE(leases[3].claiming);
  EXPECT_FALSE(page.release_lease(got[3], 555));  // not the holder
  EXPECT_TRUE(page.release_lease(got[3], 103));
  EXPECT_FALSE(page.release_lease(got[3], 103));  // already free
  EXPECT_EQ(page.leases().size(), 7u);
  EXPECT_EQ(*page.acquire_lease(777, 1), got[3]);  // the freed entry is reused
  // Other pages are independent.
  EXPECT_TRUE(c.view->page(0).leases().empty());
}

TEST(Lease, ConcurrentAcquirersNeverShareAnEntry) {
  Catalog c({1, 65536, 256, 1, shm::kDLDeviceCPU, 0});
  auto page = c.view->page(0);
  std::vector<std::thread> ts;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 64; ++i) {
        if (!page.acquire_lease(1000 + t, i)) ++failures;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(failures.load(), 0);
  const auto leases = page.leases();
  ASSERT_EQ(leases.size(), 256u);
  std::map<std::int32_t, int> per_pid;
  for (const auto& l : leases) ++per_pid[l.pid];
  for (int t = 0; t < 4; ++t) EXPECT_EQ(per_pid[1000 + t], 64);
}

TEST(Lease, ReclaimFreesOnlyDeadHolders) {
  Catalog c;
  auto page = c.view->page(0);
  page.acquire_lease(10, 1);
  page.acquire_lease(11, 1);
  page.acquire_lease(12, 1);
  const auto freed = page.reclaim_dead_leases([](std::int32_t pid) { return pid == 11; });
  EXPECT_EQ(freed, 2u);
  const auto left = page.leases();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].pid, 11);
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
