// The pinned pool without a GPU: fake raw allocation functions stand in for cudaHostAlloc /
// cudaFreeHost and count the calls, so the policy is checked exactly: small arrays pageable,
// big ones pinned, released ones kept by 2 MiB length and reused, the cap, trim, a failing raw
// allocation served pageable and reported, and the mesh allocator hook installed and restored.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/backend/pinned_pool.hpp"
#include "daemon/mesh/array.hpp"

namespace backend = meshdock::backend;
namespace mesh = meshdock::mesh;

namespace {

int g_allocs = 0, g_frees = 0;
bool g_fail = false;

backend::PinnedPool::Raw fake_raw() {
  g_allocs = g_frees = 0;
  g_fail = false;
  backend::PinnedPool::Raw r;
  r.name = "fakeHostAlloc";
  r.alloc = [](std::size_t bytes) -> void* {
    if (g_fail) return nullptr;
    ++g_allocs;
    return std::aligned_alloc(4096, bytes);
  };
  r.free = [](void* p) {
    ++g_frees;
    std::free(p);
  };
  return r;
}

constexpr std::size_t MiB = std::size_t{1} << 20;

}  // namespace

TEST(PinnedPool, SmallArraysStayPageableAndBigOnesArePinnedByTwoMiB) {
  backend::PinnedPool pool(fake_raw(), {});
  void* small = pool.allocate(4096);
  void* big = pool.allocate(3 * MiB + 5);
  ASSERT_TRUE(small && big);
  std::memset(big, 1, 3 * MiB + 5);  // all of it is usable
  auto c = pool.counters();
  EXPECT_EQ(c.pageable, 1u);
  EXPECT_EQ(c.pinned, 1u);
  EXPECT_EQ(c.live_bytes, 4 * MiB);  // rounded up to the 2 MiB granule
  EXPECT_EQ(g_allocs, 1);
  pool.release(small, 4096);
  pool.release(big, 3 * MiB + 5);
  c = pool.counters();
  EXPECT_EQ(c.live_bytes, 0u);
  EXPECT_EQ(c.kept_bytes, 4 * MiB);
  EXPECT_EQ(g_frees, 0);  // kept, not freed
}

TEST(PinnedPool, AReleasedBufferIsReusedForTheSameLength) {
  backend::PinnedPool pool(fake_raw(), {});
  void* a = pool.allocate(3 * MiB);
  pool.release(a, 3 * MiB);
  // 3.5 MiB rounds to the same 4 MiB: the kept buffer comes back, no new raw allocation.
  void* b = pool.allocate(3 * MiB + MiB / 2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(g_allocs, 1);
  EXPECT_EQ(pool.counters().reused, 1u);
  // Another length does not take it.
  void* c = pool.allocate(9 * MiB);
  EXPECT_NE(c, b);
  EXPECT_EQ(g_allocs, 2);
  pool.release(b, 3 * MiB + MiB / 2);
  pool.release(c, 9 * MiB);
}

TEST(PinnedPool, KeptBytesAreCappedAndTrimGivesThemBack) {
  backend::PinnedPool::Options o;
  o.max_cached = 6 * MiB;
  backend::PinnedPool pool(fake_raw(), o);
  std::vector<void*> v;
  for (int k = 0; k < 4; ++k) v.push_back(pool.allocate(2 * MiB));
  for (void* p : v) pool.release(p, 2 * MiB);
  EXPECT_EQ(pool.counters().kept_bytes, 6 * MiB);  // three kept, the fourth freed
  EXPECT_EQ(g_frees, 1);
  pool.trim();
  EXPECT_EQ(pool.counters().kept_bytes, 0u);
  EXPECT_EQ(g_frees, 4);
  EXPECT_EQ(g_allocs, 4);
}

TEST(PinnedPool, AFailedPinnedAllocationIsPageableAndReported) {
  std::vector<std::string> told;
  backend::PinnedPool::Options o;
  o.on_fallback = [&](const std::string& m) { told.push_back(m); };
  backend::PinnedPool pool(fake_raw(), o);
  g_fail = true;
  void* p = pool.allocate(8 * MiB);
  ASSERT_NE(p, nullptr);
  std::memset(p, 2, 8 * MiB);
  EXPECT_EQ(pool.counters().fallbacks, 1u);
  EXPECT_EQ(pool.counters().pageable, 1u);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_NE(told[0].find("fakeHostAlloc of 8388608 bytes failed"), std::string::npos) << told[0];
  pool.release(p, 8 * MiB);  // goes back as pageable memory, never to the raw free
  EXPECT_EQ(g_frees, 0);
  EXPECT_EQ(pool.counters().kept_bytes, 0u);
  for (int k = 0; k < 99; ++k) pool.release(pool.allocate(8 * MiB), 8 * MiB);
  EXPECT_EQ(told.size(), 2u);  // the first failure, then one in a hundred
}

TEST(PinnedPool, InstalledItIsTheMeshAllocatorUntilItGoes) {
  const std::string before = mesh::current_allocator().name;
  {
    backend::PinnedPool pool(fake_raw(), {});
    pool.install();
    EXPECT_STREQ(mesh::current_allocator().name, "pinned pool");
    {
      auto big = mesh::Array::empty(mesh::DType{2, 64, 1}, {MiB / 8 * 3});  // 3 MiB
      auto small = mesh::Array::empty(mesh::DType{2, 64, 1}, {16});
      EXPECT_EQ(g_allocs, 1);
    }
    EXPECT_EQ(pool.counters().kept_bytes, 4 * MiB);
    mesh::release_host_cache();  // what an unload does: the pool's kept buffers go too
    EXPECT_EQ(pool.counters().kept_bytes, 0u);
    EXPECT_EQ(g_frees, 1);
  }
  EXPECT_EQ(mesh::current_allocator().name, before);
}
