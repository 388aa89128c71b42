// meshdock::SourceBuffer (meshdock/source.hpp): the producer's object for Publish source_shm,
// made as the daemon will read it, unlinked by its maker only, swept when no live process holds
// it. In a directory of the test's (the daemon's side: test_shm_source.cpp).
#include "meshdock/source.hpp"

#include "meshdock/error.hpp"
#include "meshdock/meshdock.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct SourceDir : ::testing::Test {
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "md-source-XXXXXX").string();
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    dir = t;
    o.dir = dir.string();
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  fs::path dir;
  meshdock::SourceOptions o;
};

}  // namespace

TEST_F(SourceDir, AFreshObjectOnlyTheDaemonReadsIsUnlinkedWhenItGoes) {
  std::string path;
  {
    auto b = meshdock::SourceBuffer::create(6, o);
    EXPECT_TRUE(b.name().starts_with("meshdock-src." + std::to_string(::getpid()) + "."));
    EXPECT_EQ(b.name().size(), 13 + std::to_string(::getpid()).size() + 1 + 16);
    path = b.path();
    std::memcpy(b.data(), "fields", 6);
    EXPECT_EQ(read(path), "fields");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);      // the daemon is this user: nobody else reads it
    EXPECT_EQ(st.st_blocks * 512 >= 6, true);  // allocated, not sparse
    auto moved = std::move(b);
    EXPECT_EQ(moved.path(), path);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(meshdock::SourceBuffer::create(0, o).size(), 1u);
}

TEST_F(SourceDir, ADaemonOfAnotherUserReadsItThroughItsGroup) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give the object another group";
  o.daemon_uid = 65534;
  o.daemon_gid = 65534;
  auto b = meshdock::SourceBuffer::create(8, o);
  struct stat st {};
  ASSERT_EQ(::stat(b.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_gid, 65534u);
  EXPECT_EQ(st.st_uid, ::geteuid());  // the caller's: what the daemon checks
  o.daemon_uid = 0;                   // a root daemon reads it as it is
  auto r = meshdock::SourceBuffer::create(8, o);
  ASSERT_EQ(::stat(r.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(SourceDir, AForkedChildLeavesItsParentsObjectAlone) {
  auto b = meshdock::SourceBuffer::create(8, o);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    { auto gone = std::move(b); }  // the child's copy goes
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(fs::exists(b.path()));
}

TEST_F(SourceDir, ASweepOfADirectoryThatCannotBeReadSaysWhichAndWhy) {
  const auto missing = (dir / "no-such-dir").string();
  try {
    meshdock::sweep_sources(missing, 0);
    FAIL() << "a missing directory was swept as empty";
  } catch (const meshdock::SdkError& e) {
    EXPECT_NE(std::string(e.what()).find(missing + ": No such file or directory"),
              std::string::npos)
        << e.what();
  }
  std::uint64_t removed = 7;
  EXPECT_EQ(meshdock_source_sweep(missing.c_str(), 0, &removed), MESHDOCK_ERR_SDK);
  EXPECT_EQ(removed, 0u);
  EXPECT_NE(std::string(meshdock_last_error()).find(missing), std::string::npos);
}

TEST_F(SourceDir, TheSweepRemovesOnlyObjectsNoLiveProcessHolds) {
  auto live = meshdock::SourceBuffer::create(8, o);
  std::ofstream(dir / "meshdock-src.1.dead") << "x";   // a killed producer's: no lock
  std::ofstream(dir / "meshdock-src.2.held") << "x";   // another namespace's, alive
  std::ofstream(dir / "other-program-object") << "x";  // not a source object
  const int held = ::open((dir / "meshdock-src.2.held").c_str(), O_RDONLY);
  ASSERT_EQ(::flock(held, LOCK_SH), 0);
  fs::create_symlink(dir / "other-program-object", dir / "meshdock-src.3.link");
  EXPECT_EQ(meshdock::sweep_sources(dir.string(), 3600), 0u);  // all younger than an hour
  EXPECT_EQ(meshdock::sweep_sources(dir.string(), 0), 1u);
  EXPECT_FALSE(fs::exists(dir / "meshdock-src.1.dead"));
  EXPECT_TRUE(fs::exists(dir / "meshdock-src.2.held"));
  EXPECT_TRUE(fs::exists(live.path()));
  EXPECT_TRUE(fs::exists(dir / "other-program-object"));
  EXPECT_TRUE(fs::is_symlink(dir / "meshdock-src.3.link"));
  ::close(held);
}

TEST_F(SourceDir, AFailureNamesTheObjectAndLeavesNothing) {
  o.dir = (dir / "missing").string();
  try {
    meshdock::SourceBuffer::create(8, o);
    FAIL() << "no error";
  } catch (const meshdock::SdkError& e) {
    EXPECT_NE(std::string(e.what()).find(o.dir + "/meshdock-src."), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos);
  }
  if (::geteuid() == 0) {  // root may chown to any group; a member of none is refused
    o.dir = dir.string();
    o.daemon_uid = 65534;
    o.daemon_gid = 65534;
    EXPECT_NO_THROW(meshdock::SourceBuffer::create(8, o));
  }
  EXPECT_TRUE(fs::is_empty(dir));
}
