// Roots (daemon/service/roots.hpp): every file opened once, beneath the fd of its root. Each case
// is run with openat2 and with the O_NOFOLLOW walk that stands in for it on kernels before 5.6.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "daemon/service/config.hpp"
#include "daemon/service/roots.hpp"

namespace svc = meshdock::service;
namespace fs = std::filesystem;
using Kind = svc::RootsError::Kind;

namespace {

class RootsTest : public ::testing::TestWithParam<svc::Roots::Resolver> {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("meshdock-roots-" + std::to_string(::getpid()));
    fs::remove_all(base_);
    fs::create_directories(root() / "sub");
    fs::create_directories(base_ / "outside");
    write(root() / "a.msh", "inside");
    write(root() / "sub" / "b.msh", "nested");
    write(base_ / "outside" / "secret", "root:$6$outside");
  }
  void TearDown() override { fs::remove_all(base_); }
  fs::path root() const { return base_ / "root"; }
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p) << s; }
  svc::Roots roots() const { return svc::Roots({root().string()}, GetParam()); }
  static std::string read_all(int fd) {
    char buf[256];
    const auto n = ::pread(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  }
  // The refusal's kind, after checking its message never shows the outside file's path (unless
  // the client named that path itself) nor its contents.
  Kind refusal(const std::function<void()>& f, bool named_outside = false) {
    try {
      f();
    } catch (const svc::RootsError& e) {
      if (!named_outside) {
        EXPECT_EQ(std::string(e.what()).find("outside/secret"), std::string::npos) << e.what();
      }
      EXPECT_EQ(std::string(e.what()).find("$6$"), std::string::npos) << e.what();
      return e.kind();
    }
    ADD_FAILURE() << "not refused";
    return Kind::kIo;
  }
  fs::path base_;
};

TEST_P(RootsTest, OpensARegularFileAndReadsThatFd) {
  const auto r = roots();
  const auto f = r.open_for_read((root() / "sub" / "b.msh").string());
  EXPECT_EQ(read_all(f.fd.get()), "nested");
  EXPECT_TRUE(S_ISREG(f.st.st_mode));
  EXPECT_EQ(f.st.st_size, 6);
  EXPECT_EQ(f.path, (root() / "sub" / "b.msh").string());
  const int fl = ::fcntl(f.fd.get(), F_GETFL);
  EXPECT_TRUE(fl & O_NONBLOCK);
  EXPECT_TRUE(::fcntl(f.fd.get(), F_GETFD) & FD_CLOEXEC);
  // Lexically normal: "." and inner ".." that stay inside are fine.
  EXPECT_EQ(read_all(r.open_for_read(root().string() + "/sub/./../a.msh").fd.get()), "inside");
}

TEST_P(RootsTest, PathsOutsideTheRootsAreRefusedLexically) {
  const auto r = roots();
  for (const std::string& p :
       {(base_ / "outside" / "secret").string(), root().string() + "/../outside/secret",
        std::string("/etc/passwd"), root().string() + "x/a.msh"})
    EXPECT_EQ(refusal([&] { r.open_for_read(p); }, true), Kind::kOutside) << p;
}

TEST_P(RootsTest, SymlinksOutOfTheRootAreNeverFollowed) {
  fs::create_symlink("../outside/secret", root() / "rel.msh");
  fs::create_symlink(base_ / "outside" / "secret", root() / "abs.msh");
  fs::create_symlink(base_ / "outside", root() / "dirlink");
  fs::create_symlink("/proc/self/root" + (base_ / "outside" / "secret").string(),
                     root() / "magic.msh");
  const auto r = roots();
  for (const char* name : {"rel.msh", "abs.msh", "dirlink/secret", "magic.msh"})
    EXPECT_EQ(refusal([&] { r.open_for_read((root() / name).string()); }), Kind::kOutside) << name;
  EXPECT_EQ(refusal([&] { r.open_dir_for_write((root() / "dirlink" / "x.vtu").string()); }),
            Kind::kOutside);
}

TEST_P(RootsTest, RelativeSymlinksInsideTheRootFollowOnlyWithOpenat2) {
  fs::create_symlink("sub/b.msh", root() / "in.msh");
  const auto r = roots();
  if (r.walks()) {
    EXPECT_EQ(refusal([&] { r.open_for_read((root() / "in.msh").string()); }), Kind::kOutside);
  } else {
    EXPECT_EQ(read_all(r.open_for_read((root() / "in.msh").string()).fd.get()), "nested");
  }
}

TEST_P(RootsTest, AFifoIsRefusedAtOnceNotWaitedOn) {
  ASSERT_EQ(::mkfifo((root() / "fifo.msh").c_str(), 0600), 0);
  const auto r = roots();
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(refusal([&] { r.open_for_read((root() / "fifo.msh").string()); }), Kind::kNotRegular);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(refusal([&] { r.open_for_read((root() / "sub").string()); }), Kind::kNotRegular);
  EXPECT_EQ(refusal([&] { r.open_for_read(root().string()); }), Kind::kNotRegular);
  EXPECT_EQ(refusal([&] { r.open_for_read((root() / "missing.msh").string()); }), Kind::kNotFound);
}

TEST_P(RootsTest, WritesGoToTheParentDirectoryFdNeverToTheRootItself) {
  const auto r = roots();
  const auto d = r.open_dir_for_write((root() / "sub" / "out.vtu").string());
  EXPECT_EQ(d.leaf, "out.vtu");
  struct stat st {};
  ASSERT_EQ(::fstatat(d.fd.get(), "b.msh", &st, 0), 0);  // the fd is sub/
  EXPECT_EQ(st.st_size, 6);
  for (const std::string& p : {root().string(), root().string() + "/", root().string() + "/sub/",
                               root().string() + "/sub/.", root().string() + "/sub/.."})
    EXPECT_EQ(refusal([&] { r.open_dir_for_write(p); }), Kind::kNotRegular) << p;
  EXPECT_EQ(refusal([&] { r.open_dir_for_write((root() / "nodir" / "x.vtu").string()); }),
            Kind::kNotFound);
}

TEST_P(RootsTest, TheRootFdStaysTheDirectoryThatWasOpened) {
  const auto r = roots();
  fs::rename(root(), base_ / "moved");
  fs::create_symlink(base_ / "outside", root());  // the root's name now leads outside
  EXPECT_EQ(refusal([&] { r.open_for_read((root() / "secret").string()); }), Kind::kNotFound);
  EXPECT_EQ(read_all(r.open_for_read((root() / "a.msh").string()).fd.get()), "inside");
}

INSTANTIATE_TEST_SUITE_P(Resolvers, RootsTest,
                         ::testing::Values(svc::Roots::Resolver::automatic,
                                           svc::Roots::Resolver::walk),
                         [](const auto& info) {
                           return info.param == svc::Roots::Resolver::walk ? "walk" : "openat2";
                         });

TEST(Roots, AMissingRootIsAConfigErrorNamingTheKey) {
  const auto base =
      fs::temp_directory_path() / ("meshdock-roots-cfg-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  std::ofstream(base / "file") << "x";
  for (const auto& [p, why] : {std::pair{base / "nowhere", "no such directory"},
                               std::pair{base / "file", "not a directory"}}) {
    try {
      svc::Roots r({base.string(), p.string()});
      ADD_FAILURE() << p << " accepted";
    } catch (const svc::ConfigError& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("'" + p.string() + "'"), std::string::npos) << w;
      EXPECT_NE(w.find("\"roots\""), std::string::npos) << w;
      EXPECT_NE(w.find("--root"), std::string::npos) << w;
      EXPECT_NE(w.find(why), std::string::npos) << w;
    }
  }
  EXPECT_TRUE(svc::Roots(std::vector<std::string>{}).empty());
  fs::remove_all(base);
}

}  // namespace
