// The host allocator: big buffers are their own huge-page mappings, given back on release or
// kept for the next allocation of the same length; scratch pages can be dropped early.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>

#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/array.hpp"
#include "daemon/mesh/scratch.hpp"

namespace mesh = meshdock::mesh;

namespace {

constexpr std::size_t kMiB = 1u << 20;

// Resident bytes of this process's anonymous memory (RssAnon).
std::int64_t rss_anon() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  return 0;
}

struct CacheGuard {  // each test starts and ends with nothing kept
  CacheGuard() { mesh::release_host_cache(); }
  ~CacheGuard() { mesh::release_host_cache(); }
};

}  // namespace

TEST(HostAllocator, BigBuffersAreHugePageAlignedAndReusedByLength) {
  CacheGuard guard;
  const auto a = mesh::host_allocator();
  void* p = a.allocate(5 * kMiB + 3, a.ctx);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (2 * kMiB), 0u);
  std::memset(p, 7, 5 * kMiB + 3);
  a.release(p, 5 * kMiB + 3, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 5 * kMiB + 4096);  // whole 4 KiB pages
  // The same length (rounded) comes back as the same mapping, pages and all.
  void* q = a.allocate(5 * kMiB + 4000, a.ctx);
  EXPECT_EQ(q, p);
  EXPECT_EQ(static_cast<unsigned char*>(q)[12345], 7);
  EXPECT_EQ(mesh::host_cached_bytes(), 0u);
  a.release(q, 5 * kMiB + 4000, a.ctx);
  // A miss unmaps what is kept smaller than itself (a reader's temporaries must not stay
  // resident beside the bigger array that follows them), and keeps what is bigger.
  void* big = a.allocate(20 * kMiB, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 0u);  // the kept 5 MiB went
  a.release(big, 20 * kMiB, a.ctx);
  void* small = a.allocate(4 * kMiB, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 20 * kMiB);  // bigger: kept
  a.release(small, 4 * kMiB, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 24 * kMiB);
  void* mid = a.allocate(10 * kMiB, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 20 * kMiB);  // the 4 MiB one went
  a.release(mid, 10 * kMiB, a.ctx);
  mesh::release_host_cache();
  EXPECT_EQ(mesh::host_cached_bytes(), 0u);
}

TEST(HostAllocator, KeepsAtMost128MiBAndGivesTheRestBack) {
  CacheGuard guard;
  const auto a = mesh::host_allocator();
  void* p[3];
  for (auto& x : p) x = a.allocate(60 * kMiB, a.ctx);
  for (auto* x : p) a.release(x, 60 * kMiB, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 120 * kMiB);
  // Released memory outside the cache is really gone: RSS drops by what was touched.
  void* q = a.allocate(64 * kMiB, a.ctx);  // a miss: the three 60 MiB mappings go
  EXPECT_EQ(mesh::host_cached_bytes(), 0u);
  std::memset(q, 1, 64 * kMiB);
  const auto touched = rss_anon();
  a.release(q, 64 * kMiB, a.ctx);  // kept
  EXPECT_EQ(mesh::host_cached_bytes(), 64 * kMiB);
  mesh::release_host_cache();
  EXPECT_LT(rss_anon() + std::int64_t{60 * kMiB}, touched);
}

TEST(HostAllocator, SmallBuffersAreMallocPagesAndNeverKept) {
  CacheGuard guard;
  const auto a = mesh::host_allocator();
  void* p = a.allocate(100'000, a.ctx);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  a.release(p, 100'000, a.ctx);
  EXPECT_EQ(mesh::host_cached_bytes(), 0u);
}

TEST(ScratchVector, DroppedPagesLeaveTheProcessAndTheBufferStaysUsable) {
  CacheGuard guard;
  mesh::ScratchVector<std::uint8_t> v(32 * kMiB, 1);
  const auto before = rss_anon();
  // A range that does not start or end on a huge page: only whole huge pages inside it go.
  mesh::drop_pages(v.data() + 1, v.data() + 16 * kMiB + 5);
  EXPECT_EQ(v[1], 1);              // the first huge page was kept
  EXPECT_EQ(v[2 * kMiB], 0);       // dropped: reads as zero
  EXPECT_EQ(v[16 * kMiB + 4], 1);  // the page the range ends inside was kept
  // 7 huge pages went (14 MiB; other memory moves a little meanwhile, under ASan too)
  EXPECT_GE(before - rss_anon(), std::int64_t{10 * kMiB});
  mesh::drop_pages(v.data(), mesh::scratch_end(v));
  EXPECT_EQ(v[32 * kMiB - 1], 0);
  v[5] = 9;  // still mapped: writing faults a fresh page in
  EXPECT_EQ(v[5], 9);
}

// rows_view (a whole cell_data field split into its blocks): the rows share the array's memory,
// which lives until the last view goes, and a view past the end is refused.
TEST(BufferSlice, RowsShareTheArrayAndKeepItAlive) {
  mesh::Array rows;
  const void* base = nullptr;
  {
    auto a = mesh::Array::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
    base = a.data();
    rows = mesh::rows_view(a, 1, 3);
    EXPECT_EQ(rows.shape(), (std::vector<std::int64_t>{2, 2}));
    EXPECT_EQ(rows.data(), static_cast<const std::uint8_t*>(base) + 2 * sizeof(double));
    EXPECT_EQ(mesh::rows_view(a, 4, 4).nbytes(), 0u);
  }  // the array goes; its buffer stays for the view
  EXPECT_EQ(rows.as<double>()[0], 2);
  EXPECT_EQ(rows.as<double>()[3], 5);
  EXPECT_THROW(mesh::Buffer::slice(rows.buffer(), 8, 32), std::length_error);
}
