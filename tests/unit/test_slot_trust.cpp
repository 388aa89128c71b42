// The slot layer against hostile consumers (issue 12, DESIGN.md "Trust boundaries"): leases of
// unregistered pids are cleared and never pin a buffer, one pid pins at most
// max_leases_per_pid per ring slot, the budget revokes instead of allocating, leases are listed
// and revocable, truncated segments are survived and rebuilt, squatters are removed or named.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "daemon/backend/backend.hpp"
#include "daemon/payload/payload.hpp"
#include "daemon/slots/consumers.hpp"
#include "daemon/slots/slot.hpp"
#include "daemon/slots/squatters.hpp"

namespace mesh = meshdock::mesh;
namespace payload = meshdock::payload;
namespace shm = meshdock::shm;
namespace slots = meshdock::slots;
using namespace std::chrono_literals;

namespace {

slots::SlotOptions opts(const std::string& name, std::uint32_t num_slots = 1) {
  slots::SlotOptions o;
  o.prefix = "t" + std::to_string(::getpid()) + "x.";
  o.name = name;
  o.num_slots = num_slots;
  o.page_size = 16384;
  o.lease_capacity = 16;
  o.lease_wait = 5ms;
  return o;
}

payload::DevicePayload tiny(double x, std::size_t points = 3) {
  mesh::Mesh m;
  std::vector<double> xyz(points * 3, 0.0);
  xyz[0] = x;
  m.points = mesh::Array::from_vector(xyz, {static_cast<std::int64_t>(points), 3});
  return payload::build_payload(m);
}

struct Leases {
  Leases(const slots::SlotOptions& o, std::uint32_t n)
      : seg(shm::Segment::open(o.prefix + o.name + ".leases", shm::Access::kReadWrite)),
        view(shm::LeasesView::over(seg.data(), seg.size(), n, o.lease_capacity)) {}
  shm::Segment seg;
  shm::LeasesView view;
};

shm::Registration register_self(const slots::Slot& slot) {
  return shm::Registration::connect(slot.socket_address(), ::getpid(), ::geteuid(), 2s, "test");
}

}  // namespace

TEST(SlotTrust, SegmentsAreReadOnlyForTheGroupExceptTheLeases) {
  auto backend = meshdock::backend::make_host_backend(0640);
  auto o = opts("modes");
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  struct stat st {};
  ASSERT_EQ(::stat(("/dev/shm/" + o.prefix + "modes").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_EQ(::stat(("/dev/shm/" + o.prefix + "modes.catalog").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_EQ(::stat(("/dev/shm/" + o.prefix + "modes.leases").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  ASSERT_EQ(::stat(("/dev/shm/" + shm::data_object_name(o.prefix, "modes", 0, 1)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  // The catalog names the registration socket and the daemon's uid.
  auto cat = shm::Segment::open(o.prefix + "modes.catalog");
  auto v = shm::CatalogView::validate(cat.data(), cat.size());
  EXPECT_EQ(v.socket_address(), slot.socket_address());
  EXPECT_EQ(v.daemon_uid(), ::geteuid());
  EXPECT_EQ(v.socket_address()[0], '\0');  // abstract
}

TEST(SlotTrust, ForgedLeasesOfUnknownPidsAreClearedAndPinNothing) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("forged");
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  Leases l(o, 1);
  auto table = l.view.table(0);
  // pid 1 is alive, but never registered; nor is this process yet.
  for (std::uint32_t k = 0; k < o.lease_capacity; ++k)
    ASSERT_TRUE(table.acquire(k ? 1 : ::getpid(), 1));
  const auto pub = slot.publish(tiny(2));
  EXPECT_EQ(pub.version, 1u);  // the buffer was reused: nothing pinned it
  EXPECT_EQ(slot.bytes(), pub.data_size);
  EXPECT_TRUE(table.leases().empty());  // and every forged entry is gone
  EXPECT_EQ(slot.lease_count(), 0u);
  // The same forgeries again: maintain() clears them too and reports how many.
  for (int k = 0; k < 5; ++k) table.acquire(1, 7);
  EXPECT_EQ(slot.maintain(shm::monotonic_ns()), 5u);
}

TEST(SlotTrust, OnePidPinsAtMostItsShare) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("share");
  o.max_leases_per_pid = 3;
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  auto reg = register_self(slot);
  Leases l(o, 1);
  auto table = l.view.table(0);
  for (int k = 0; k < 10; ++k) ASSERT_TRUE(table.acquire(::getpid(), 1));
  const auto leases = slot.leases();
  ASSERT_EQ(leases.size(), 3u);
  EXPECT_EQ(leases[0].pid, ::getpid());
  EXPECT_EQ(leases[0].uid, ::geteuid());
  EXPECT_EQ(leases[0].frame, 1u);
  EXPECT_EQ(table.leases().size(), 3u);  // the other 7 were cleared
}

TEST(SlotTrust, LeasesAreListedWithAgeAndRevocable) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("revoke");
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  auto reg = register_self(slot);
  Leases l(o, 1);
  ASSERT_TRUE(l.view.table(0).acquire(::getpid(), 1));
  slot.leases();  // first seen now
  std::this_thread::sleep_for(50ms);
  const auto pub = slot.publish(tiny(2));  // leased: fresh buffer, v1 retired
  EXPECT_EQ(pub.version, 2u);
  EXPECT_EQ(slot.bytes(), 2 * pub.data_size);
  const auto leases = slot.leases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_GE(leases[0].age_seconds, 0.04);
  EXPECT_LT(leases[0].age_seconds, 30.0);
  EXPECT_EQ(slot.revoke(::getpid()), 1u);
  EXPECT_TRUE(slot.leases().empty());
  EXPECT_EQ(slot.bytes(), pub.data_size);  // the retired buffer went with the lease
  const auto notes = slot.take_notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(
      notes[0].find("pid " + std::to_string(::getpid()) + " (uid " + std::to_string(::getuid()) +
                    ") kept frame 1 of ring slot 0 past lease_wait_ms (5 ms)"),
      std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("revoked 1 lease of pid " + std::to_string(::getpid())),
            std::string::npos);
}

TEST(SlotTrust, AConsumerThatKeptAFramePastTheWaitIsNotWaitedForAgain) {
  // A consumer keeping a window of frames holds every ring slot: each publish waited the whole
  // lease_wait for it. After one such wait, its leases get fresh buffers at once (10 s).
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("keeper", 2);
  o.lease_wait = 300ms;
  slots::Slot slot(o, *backend);
  auto reg = register_self(slot);
  Leases l(o, 2);
  slot.publish(tiny(1));  // frames 1 and 2 fill ring slots 0 and 1
  slot.publish(tiny(2));
  ASSERT_TRUE(l.view.table(0).acquire(::getpid(), 1));
  ASSERT_TRUE(l.view.table(1).acquire(::getpid(), 2));
  auto t0 = std::chrono::steady_clock::now();
  slot.publish(tiny(3));  // ring slot 0, held: the whole wait, then a fresh buffer
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 290ms);
  t0 = std::chrono::steady_clock::now();
  const auto pub = slot.publish(tiny(4));  // ring slot 1, held by the same keeper: no wait
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 250ms);  // a wait would be 300 ms
  EXPECT_EQ(pub.version, 4u);                               // two fresh buffers (versions 3 and 4)
  const auto notes = slot.take_notes();
  ASSERT_EQ(notes.size(), 1u);  // said once
  EXPECT_NE(notes[0].find("kept frame 1 of ring slot 0 past lease_wait_ms (300 ms)"),
            std::string::npos)
      << notes[0];
}

TEST(SlotTrust, ARegistrationEndsWithItsConnection) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("hangup");
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  Leases l(o, 1);
  {
    auto reg = register_self(slot);
    ASSERT_TRUE(l.view.table(0).acquire(::getpid(), 1));
    EXPECT_EQ(slot.lease_count(), 1u);
  }
  // Closed: the pid is unknown again within a moment, and its lease stops counting.
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (slot.lease_count() != 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(2ms);
  EXPECT_EQ(slot.lease_count(), 0u);
}

TEST(SlotTrust, BudgetRevokesTheLeaseInsteadOfAllocating) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("budget");
  const auto one = tiny(1).points.nbytes();
  o.memory_budget = one + one / 2;  // room for one buffer, not two
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  auto reg = register_self(slot);
  Leases l(o, 1);
  ASSERT_TRUE(l.view.table(0).acquire(::getpid(), 1));
  const auto pub = slot.publish(tiny(2));
  EXPECT_EQ(pub.version, 1u);  // no second buffer
  EXPECT_EQ(backend->memory_used(), pub.data_size);
  EXPECT_TRUE(l.view.table(0).leases().empty());
  const auto notes = slot.take_notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("kept frame 1 of ring slot 0 past lease_wait_ms"), std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("revoked the lease of pid " + std::to_string(::getpid())),
            std::string::npos)
      << notes[1];
  EXPECT_NE(notes[1].find("memory budget"), std::string::npos);
}

TEST(SlotTrust, TruncatedSegmentsAreSurvivedAndRebuilt) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("trunc", 2);
  slots::Slot slot(o, *backend);
  slot.publish(tiny(1));
  slot.publish(tiny(2));
  const auto manifest = slot.newest_manifest();
  for (const auto* suffix : {".catalog", "", ".leases"}) {
    const int fd = ::shm_open(("/" + o.prefix + "trunc" + suffix).c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 0), 0);
    ::close(fd);
  }
  // The next access would have been SIGBUS; the guard turns it into a repair.
  EXPECT_EQ(slot.maintain(shm::monotonic_ns()), 0u);
  const auto notes = slot.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("was truncated by another process; recreated every segment"),
            std::string::npos)
      << notes[0];
  auto cat = shm::Segment::open(o.prefix + "trunc.catalog");
  auto v = shm::CatalogView::validate(cat.data(), cat.size());
  EXPECT_EQ(v.page(1).read().manifest, manifest);
  EXPECT_EQ(v.page(1).read().frame, 2u);
  auto ctl = shm::Segment::open(o.prefix + "trunc");
  auto cb = shm::ControlBlockView::validate(ctl.data(), ctl.size());
  EXPECT_EQ(cb.write_idx(), 2u);
  EXPECT_FALSE(cb.shutdown());
  EXPECT_EQ(shm::parse_host_handle(cb.mem_handle(1)),
            shm::data_object_name(o.prefix, "trunc", 1, 2));
  // And it keeps publishing.
  EXPECT_EQ(slot.publish(tiny(3)).frame, 3u);
}

TEST(SlotTrust, ATruncatedDataSegmentIsCopiedAgainIntoAFreshOne) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("tdata");
  slots::Slot slot(o, *backend);
  const auto big = tiny(1, 200000);  // 4.8 MB: pages the truncation takes away
  slot.publish(big);
  const int fd =
      ::shm_open(("/" + shm::data_object_name(o.prefix, "tdata", 0, 1)).c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 0), 0);
  ::close(fd);
  const auto pub = slot.publish(tiny(5, 200000));  // the copy meets the truncation
  EXPECT_EQ(pub.version, 2u);
  auto data = shm::Segment::open(shm::data_object_name(o.prefix, "tdata", 0, 2));
  double x;
  std::memcpy(&x, data.data(), 8);
  EXPECT_EQ(x, 5.0);
  const auto notes = slot.take_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("truncated by another process during a publish"), std::string::npos);
}

TEST(Squatters, AnObjectOfAnotherUidIsRemovedAndSaidSo) {
  const auto dir = std::filesystem::temp_directory_path() / ("sq" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "meshdock.x";
  { std::ofstream(file) << "x"; }
  ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(file.c_str(), 0666), 0);
  // Ours: nothing to do.
  EXPECT_FALSE(slots::evict_squatter(dir, "meshdock.x", 65534, [](const std::string&) {
                 return -1;
               }).has_value());
  // Not ours, and removal refused (the seam plays a sticky /dev/shm): the error names all.
  try {
    slots::evict_squatter(dir, "meshdock.x", 0, [](const std::string&) {
      errno = EPERM;
      return -1;
    });
    FAIL() << "expected SquatterError";
  } catch (const slots::SquatterError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(dir.string() + "/meshdock.x (owner uid 65534"), std::string::npos) << m;
    EXPECT_NE(m.find("mode 0666"), std::string::npos) << m;
    EXPECT_NE(m.find("cannot be removed: Operation not permitted"), std::string::npos) << m;
  }
  // Removable: removed, and the line to log says whose it was.
  const auto line = slots::evict_squatter(
      dir, "meshdock.x", 0, [&](const std::string& n) { return ::unlink((dir / n).c_str()); });
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("removed " + dir.string() + "/meshdock.x (owner uid 65534"),
            std::string::npos)
      << *line;
  EXPECT_FALSE(std::filesystem::exists(file));
  std::filesystem::remove_all(dir);
}

TEST(Squatters, APidIsOursOnlyWhenItRunsAsUs) {
  EXPECT_TRUE(slots::live_process_of(::getpid(), ::geteuid()));
  EXPECT_FALSE(slots::live_process_of(::getpid(), ::geteuid() + 1));
  EXPECT_FALSE(slots::live_process_of(0x3FFFFFFF, ::geteuid()));
}

TEST(Registration, ASocketHeldByAnotherPidIsRefused) {
  slots::ConsumerRegistry reg;
  // The consumer expected pid 1 (what a forged catalog would say): it refuses to register.
  try {
    shm::Registration::connect(reg.address(), 1, ::geteuid(), 1s, "slot 'x'");
    FAIL() << "expected ProtocolError";
  } catch (const shm::ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("is held by pid " + std::to_string(::getpid())),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(shm::Registration::connect("", ::getpid(), 0, 1s, "x"), shm::ProtocolError);
  auto ok = shm::Registration::connect(reg.address(), ::getpid(), ::geteuid(), 1s, "x");
  EXPECT_TRUE(ok.valid());
  EXPECT_EQ(reg.known(::getpid()), ::geteuid());
  EXPECT_FALSE(reg.known(1).has_value());
}

TEST(SlotTrust, AStuckLeasePinsOneBufferNotOnePerPublish) {
  auto backend = meshdock::backend::make_host_backend(0600);
  auto o = opts("stuck");
  slots::Slot slot(o, *backend);
  const auto first = slot.publish(tiny(1));
  auto reg = register_self(slot);
  Leases l(o, 1);
  ASSERT_TRUE(l.view.table(0).acquire(::getpid(), 1));  // held, never released
  for (int k = 2; k <= 6; ++k) slot.publish(tiny(k));
  // Frame 1's buffer stays (retired) and the slot has one current buffer: two, not six.
  EXPECT_EQ(slot.bytes(), 2 * first.data_size);
  EXPECT_EQ(slot.version(), 2u);
}

TEST(Registration, WakeReportsAreParsedOnlyWhenWellFormedAndBounded) {
  std::byte msg[shm::kWakeReportBytes];
  std::memcpy(msg, shm::kWakeReportTag, 4);
  shm::store_le<std::uint32_t>(msg, 4, 7);
  shm::store_le<std::uint64_t>(msg, 8, 12'345);
  EXPECT_EQ(shm::parse_wake_report(msg, sizeof msg), std::optional<std::uint64_t>(12'345));
  EXPECT_FALSE(shm::parse_wake_report(msg, sizeof msg - 1));  // short
  EXPECT_FALSE(shm::parse_wake_report(msg, 0));
  shm::store_le<std::uint64_t>(msg, 8, shm::kMaxWakeReportNs + 1);  // a minute and more: no
  EXPECT_FALSE(shm::parse_wake_report(msg, sizeof msg));
  shm::store_le<std::uint64_t>(msg, 8, 5);
  msg[3] = std::byte{'2'};  // another tag
  EXPECT_FALSE(shm::parse_wake_report(msg, sizeof msg));
}

// What a decision counts is what drain() read: with the thread's reads off (Reads::kDrainOnly),
// an import report and a hang-up are seen by the first drain() after them and not before, so
// the tests that publish right after a report (DevicePath.*) prove the slot drains first.
TEST(Registration, DrainReadsWhatWasSentBeforeIt) {
  slots::ConsumerRegistry reg(slots::ConsumerRegistry::Reads::kDrainOnly);
  auto consumer = shm::Registration::connect(reg.address(), ::getpid(), ::geteuid(), 1s, "x");
  shm::Handle h{};
  h[0] = std::byte{7};
  ASSERT_TRUE(consumer.report_import(true, h));
  std::this_thread::sleep_for(50ms);  // time the thread would have had to read it
  EXPECT_FALSE(reg.reported_open(h));
  EXPECT_EQ(reg.imports_open(), 0u);
  reg.drain();
  EXPECT_TRUE(reg.reported_open(h));
  EXPECT_EQ(reg.imports_open(), 1u);
  consumer = shm::Registration{};  // hang-up: forgotten, with its reports, at the next drain
  EXPECT_EQ(reg.known(::getpid()), ::geteuid());
  reg.drain();
  EXPECT_FALSE(reg.known(::getpid()).has_value());
  EXPECT_FALSE(reg.reported_open(h));
  EXPECT_EQ(reg.connections(), 0u);
}
