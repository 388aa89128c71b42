// read_shm_source: the daemon's reader of a producer's shm object (Publish source_shm), in a
// directory of the test's standing in for /dev/shm. The attacks from another uid, over a live
// daemon, are in tests/python/test_publish_shm.py.
#include "daemon/rpc/shm_source.hpp"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/service/registry.hpp"

namespace fs = std::filesystem;
using meshdock::rpc::read_shm_source;
using meshdock::service::ServiceError;
using meshdock::service::Status;

namespace {

// Every source object's name begins so (kSourcePrefix).
std::string src(const std::string& n) {
  return "meshdock-src." + n;
}

struct ShmDir : ::testing::Test {
  void SetUp() override {
    std::string t = (fs::temp_directory_path() / "md-shmsrc-XXXXXX").string();
    ASSERT_NE(::mkdtemp(t.data()), nullptr);
    dir = t;
  }
  void TearDown() override { fs::remove_all(dir); }
  void put(const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
  }
  // What read_shm_source throws for `object` (n bytes at `offset`): status and message.
  // Status::kInternal with "read" when it reads.
  std::pair<Status, std::string> refusal(const std::string& object, std::uint64_t n,
                                         std::uint64_t offset = 0, uid_t uid = ::geteuid()) {
    std::vector<std::byte> dst(n);
    try {
      read_shm_source(object, offset, n, uid, dst.data(), "tensor", dir.string());
    } catch (const ServiceError& e) {
      return {e.status(), e.what()};
    }
    return {Status::kInternal, "read"};
  }
  fs::path dir;
};

}  // namespace

TEST_F(ShmDir, ReadsTheCallersObjectFromItsOffset) {
  put(src("mine"), "0123456789");
  std::string got(4, '?');
  const std::string slashed = std::string("/").append(src("mine"));  // GCC 12: no "/" + rvalue
  read_shm_source(slashed, 3, 4, ::geteuid(), reinterpret_cast<std::byte*>(got.data()), "f",
                  dir.string());
  EXPECT_EQ(got, "3456");
  read_shm_source(src("mine"), 0, 0, ::geteuid(), nullptr, "f", dir.string());  // empty array
}

// One component, and a source object's: a caller can name no other object it owns (root's
// objects of other software).
TEST_F(ShmDir, ANameIsOneComponentOfASourceObject) {
  put("other-program", "0123");
  for (const std::string& bad :
       std::vector<std::string>{"", "/", ".", "..", "../etc/passwd", "a/b", src("../x"), src("a/b"),
                                src(std::string(243, 'x')), src(std::string("a\0b", 3)),
                                "other-program", "meshdock-src"}) {
    const auto [status, what] = refusal(bad, 1);
    EXPECT_EQ(status, Status::kInvalidArgument) << bad;
    EXPECT_NE(what.find("is not a source object's name"), std::string::npos) << what;
    EXPECT_EQ(what.find('\0'), std::string::npos);  // printable: a NUL cannot cut it short
  }
  EXPECT_NE(refusal(src(std::string("a\0b", 3)), 1).second.find("a\\x00b"), std::string::npos);
}

TEST_F(ShmDir, MissingShortAndForeignObjectsAreRefusedByName) {
  put(src("short"), "abc");
  auto [status, what] = refusal(src("nope"), 4);
  EXPECT_EQ(status, Status::kNotFound);
  EXPECT_EQ(what, "tensor: source " + dir.string() + "/" + src("nope") + ": no such object");
  std::tie(status, what) = refusal(src("short"), 4);
  EXPECT_EQ(status, Status::kInvalidArgument);
  EXPECT_EQ(what, "tensor: source " + dir.string() + "/" + src("short") +
                      ": holds 3 bytes; the array needs 4 from offset 0");
  std::tie(status, what) = refusal(src("short"), 1, 3);  // offset at the end: nothing left
  EXPECT_EQ(status, Status::kInvalidArgument);
  std::tie(status, what) = refusal(src("short"), 1, ~std::uint64_t{0});  // no overflow
  EXPECT_EQ(status, Status::kInvalidArgument);
  std::tie(status, what) = refusal(src("short"), 3, 0, ::geteuid() + 1);
  EXPECT_EQ(status, Status::kPermissionDenied);
  EXPECT_NE(what.find("owned by uid " + std::to_string(::geteuid()) + ", not by the caller (uid " +
                      std::to_string(::geteuid() + 1) + ")"),
            std::string::npos)
      << what;
}

TEST_F(ShmDir, SymlinksFifosAndDirectoriesAreNotRead) {
  put(src("target"), "0123");
  fs::create_symlink(dir / src("target"), dir / src("link"));
  ASSERT_EQ(::mkfifo((dir / src("fifo")).c_str(), 0600), 0);
  fs::create_directory(dir / src("sub"));
  auto [status, what] = refusal(src("link"), 4);
  EXPECT_EQ(status, Status::kPermissionDenied);
  EXPECT_NE(what.find("is a symbolic link (refused)"), std::string::npos) << what;
  std::tie(status, what) = refusal(src("fifo"), 4);  // O_NONBLOCK: no writer, no wait
  EXPECT_EQ(status, Status::kInvalidArgument);
  EXPECT_NE(what.find("not a regular file of"), std::string::npos) << what;
  std::tie(status, what) = refusal(src("sub"), 4);
  EXPECT_EQ(status, Status::kInvalidArgument) << what;
}

// A mount on a name in the shm directory (a user's FUSE mount could hold the daemon's thread in
// open): never crossed. Needs root to mount; skipped otherwise.
TEST_F(ShmDir, AMountOnASourceNameIsNotCrossed) {
  const auto outside = dir / "outside-file";
  put("outside-file", "0123");
  put(src("bound"), "");
  fs::create_directory(dir / src("mnt"));
  if (::mount(outside.c_str(), (dir / src("bound")).c_str(), nullptr, MS_BIND, nullptr) != 0 ||
      ::mount("none", (dir / src("mnt")).c_str(), "tmpfs", 0, "size=1m") != 0)
    GTEST_SKIP() << "cannot mount here: " << std::strerror(errno);
  auto [status, what] = refusal(src("bound"), 4);
  EXPECT_EQ(status, Status::kPermissionDenied) << what;
  EXPECT_NE(what.find("is another mount (refused)"), std::string::npos) << what;
  std::tie(status, what) = refusal(src("mnt"), 4);
  EXPECT_EQ(status, Status::kPermissionDenied) << what;
  ::umount2((dir / src("bound")).c_str(), MNT_DETACH);
  ::umount2((dir / src("mnt")).c_str(), MNT_DETACH);
}
