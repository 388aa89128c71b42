// Writer, reader and lease-holding processes over real POSIX shared-memory segments.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "../support/child_process.hpp"
#include "meshdock/shm.hpp"

namespace shm = meshdock::shm;
using meshdock::testing::ChildProcess;
using namespace std::chrono_literals;

namespace {

const std::string kPeer = std::string(MESHDOCK_TEST_BIN) + "/shm_peer";
const std::string kCtl = std::string(MESHDOCK_BIN_DIR) + "/meshdockctl";

std::string unique_prefix() {
  return "mdt" + std::to_string(getpid()) + ".";
}

// Runs `shm_peer create` and waits for "ready"; the segments live as long as this object.
struct Segments {
  Segments(const std::string& name, std::uint32_t slots)
      : prefix(unique_prefix()),
        name(name),
        owner({kPeer, "create", prefix, name, std::to_string(slots)}) {
    auto line = owner.read_line();
    if (!line || *line != "ready") throw std::runtime_error("shm_peer create did not get ready");
  }
  ~Segments() {
    owner.close_stdin();
    owner.wait();
  }
  std::string prefix, name;
  ChildProcess owner;
};

std::string run_capture(const std::vector<std::string>& argv, int* code) {
  ChildProcess p(argv, /*merge_stderr=*/true);
  std::string out;
  while (auto line = p.read_line(10s)) out += *line + "\n";
  *code = p.wait();
  return out;
}

}  // namespace

TEST(ShmProcesses, SegmentsAreVisibleUnderDevShmWithTheDocumentedSizes) {
  Segments s("sizes", 3);
  struct stat st {};
  ASSERT_EQ(stat(("/dev/shm/" + s.prefix + "sizes").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 433);
  ASSERT_EQ(stat(("/dev/shm/" + s.prefix + "sizes.catalog").c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), shm::catalog_size(3, 16384));
}

TEST(ShmProcesses, OwnerRemovesSegmentsOnCleanExit) {
  std::string prefix;
  {
    Segments s("cleanup", 2);
    prefix = s.prefix;
    EXPECT_TRUE(shm::Segment::exists(prefix + "cleanup"));
  }
  EXPECT_FALSE(shm::Segment::exists(prefix + "cleanup"));
  EXPECT_FALSE(shm::Segment::exists(prefix + "cleanup.catalog"));
}

TEST(ShmProcesses, ReaderProcessNeverSeesATornPageWhileWriterPublishes) {
  Segments s("seqlock", 3);
  const std::string frames = "20000";
  ChildProcess reader({kPeer, "read", s.prefix, s.name, frames, "60000"});
  ChildProcess reader2({kPeer, "read", s.prefix, s.name, frames, "60000"});
  ChildProcess writer({kPeer, "write", s.prefix, s.name, frames});
  EXPECT_EQ(writer.wait(), 0);
  const auto line = reader.read_line(60s);
  const auto line2 = reader2.read_line(60s);
  EXPECT_EQ(reader.wait(), 0) << line.value_or("(no output)");
  EXPECT_EQ(reader2.wait(), 0) << line2.value_or("(no output)");
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("bad=0"), std::string::npos) << *line;

  auto control = shm::Segment::open(s.prefix + s.name);
  auto cb = shm::ControlBlockView::validate(control.data(), control.size());
  EXPECT_EQ(cb.write_idx(), 20000u);
  EXPECT_EQ(*cb.newest_slot(), (20000u - 1) % 3);
  auto catalog = shm::Segment::open(s.prefix + s.name + ".catalog");
  auto cat = shm::CatalogView::validate(catalog.data(), catalog.size());
  EXPECT_EQ(cat.futex_value(), 20000u);
  EXPECT_EQ(cat.page(*cb.newest_slot()).read().frame, 20000u);
}

TEST(ShmProcesses, FutexWakesAWaiterInAnotherProcess) {
  Segments s("wake", 3);
  ChildProcess reader({kPeer, "read", s.prefix, s.name, "1", "10000"});
  std::this_thread::sleep_for(100ms);  // the reader is asleep on the futex by now
  const auto t0 = std::chrono::steady_clock::now();
  ChildProcess writer({kPeer, "write", s.prefix, s.name, "1"});
  EXPECT_EQ(writer.wait(), 0);
  EXPECT_EQ(reader.wait(), 0);
  // Woken by the publish, not by its 10 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(ShmProcesses, LeaseOfAKilledProcessIsDetectedDeadAndReclaimed) {
  Segments s("lease", 3);
  ChildProcess holder({kPeer, "lease", s.prefix, s.name, "1"});
  const auto line = holder.read_line();
  ASSERT_TRUE(line.has_value());
  ASSERT_EQ(line->rfind("leased ", 0), 0u) << *line;

  auto catalog = shm::Segment::open(s.prefix + s.name + ".catalog");
  auto cat = shm::CatalogView::validate(catalog.data(), catalog.size());
  auto seg = shm::Segment::open(s.prefix + s.name + ".leases", shm::Access::kReadWrite);
  auto lv = shm::LeasesView::over(seg.data(), seg.size(), cat.num_slots(), cat.lease_capacity());
  auto page = lv.table(1);
  auto leases = page.leases();
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].pid, holder.pid());
  EXPECT_TRUE(shm::pid_alive(holder.pid()));
  EXPECT_EQ(page.reclaim_dead(shm::pid_alive), 0u);  // alive: kept

  holder.kill(SIGKILL);
  // Not yet reaped: a zombie must already count as dead.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (shm::pid_alive(holder.pid()) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_FALSE(shm::pid_alive(holder.pid()));
  EXPECT_EQ(page.reclaim_dead(shm::pid_alive), 1u);
  EXPECT_TRUE(page.leases().empty());
  EXPECT_EQ(holder.wait(), 128 + SIGKILL);
}

TEST(ShmProcesses, MeshdockctlInspectReadsTheSegments) {
  Segments s("inspect", 3);
  ChildProcess writer({kPeer, "write", s.prefix, s.name, "4"});
  ASSERT_EQ(writer.wait(), 0);
  int code = -1;
  const auto out = run_capture({kCtl, "--json", "inspect", s.name, "--prefix", s.prefix}, &code);
  ASSERT_EQ(code, 0) << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["num_slots"], 3);
  EXPECT_EQ(j["write_idx"], 4);
  EXPECT_EQ(j["has_catalog"], true);
  EXPECT_EQ(j["daemon_pid"], s.owner.pid());
  EXPECT_EQ(j["daemon_alive"], true);
  EXPECT_EQ(j["pages"][0]["frame"], 4);  // frames 1,4 -> slot 0; 2 -> 1; 3 -> 2
  EXPECT_EQ(j["pages"][1]["frame"], 2);
  EXPECT_EQ(j["pages"][2]["frame"], 3);

  const auto missing = run_capture({kCtl, "inspect", "absent", "--prefix", s.prefix}, &code);
  EXPECT_EQ(code, 4);  // NOT_FOUND, as for the daemon's verbs
  EXPECT_NE(missing.find("slot 'absent': no control block /" + s.prefix + "absent"),
            std::string::npos)
      << missing;
}
