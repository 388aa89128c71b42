#include "daemon/mesh/writers/out_file.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE (glibc 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

namespace {
constexpr std::size_t kFlushAt = 1 << 20;

[[noreturn]] void fail(const std::string& path, const char* what) {
  const int err = errno;
  throw WriteError(path + ": " + what + " (" + std::strerror(err) + ")", err);
}

[[noreturn]] void exists(const std::string& path) {
  throw FileExists(path + " exists, and replacing it was not asked for (overwrite)");
}

// A name for a temporary nobody can guess ahead (a guessable one, like "<path>.tmp-<pid>",
// lets another user plant a symlink there; O_EXCL | O_NOFOLLOW refuses one anyway).
std::string temp_name() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng()));
  return std::string(".meshdock-") + hex + ".tmp";
}
}  // namespace

OutFile::OutFile(const OutTarget& t)
    : dir_(t.dir_fd), leaf_(t.leaf), path_(t.path), overwrite_(t.overwrite) {
  if (leaf_.empty() || leaf_ == "." || leaf_ == ".." || leaf_.find('/') != std::string::npos)
    throw WriteError(path_ + ": names a directory, not a file");
  struct stat st {};
  if (!overwrite_ && ::fstatat(dir_, leaf_.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
    exists(path_);  // early, before the work; commit() checks again atomically
  fd_ = ::openat(dir_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd_ >= 0) {
    unnamed_ = true;
  } else if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) {
    make_named_temp();  // a file system (or kernel) without O_TMPFILE
  } else {
    fail(path_, "cannot create the file");
  }
  buf_.reserve(kFlushAt + 4096);
}

void OutFile::make_named_temp() {
  for (int attempt = 0; attempt < 16; ++attempt) {
    tmp_ = temp_name();
    fd_ = ::openat(dir_, tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ >= 0) return;
    if (errno != EEXIST) break;
  }
  tmp_.clear();
  fail(path_, "cannot create the file");
}

bool OutFile::link_unnamed(const std::string& name) {
  // /proc/self/fd/N with AT_SYMLINK_FOLLOW links the open file itself; AT_EMPTY_PATH does the
  // same without /proc but needs CAP_DAC_READ_SEARCH.
  const std::string self = "/proc/self/fd/" + std::to_string(fd_);
  if (::linkat(AT_FDCWD, self.c_str(), dir_, name.c_str(), AT_SYMLINK_FOLLOW) == 0) return true;
  if (errno != ENOENT) return false;
  return ::linkat(fd_, "", dir_, name.c_str(), AT_EMPTY_PATH) == 0;
}

OutFile::~OutFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlinkat(dir_, tmp_.c_str(), 0);
}

void OutFile::write(const void* p, std::size_t n) {
  written_ += n;
  if (n >= kFlushAt) {  // large arrays go straight to the file
    flush();
    const auto* c = static_cast<const char*>(p);
    while (n > 0) {
      const auto w = ::write(fd_, c, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(path_, "write failed");
      }
      c += w;
      n -= static_cast<std::size_t>(w);
    }
    return;
  }
  buf_.append(static_cast<const char*>(p), n);
  if (buf_.size() >= kFlushAt) flush();
}

void OutFile::flush() {
  std::size_t done = 0;
  while (done < buf_.size()) {
    const auto w = ::write(fd_, buf_.data() + done, buf_.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(path_, "write failed");
    }
    done += static_cast<std::size_t>(w);
  }
  buf_.clear();
}

void OutFile::commit() {
  flush();
  if (unnamed_) {
    if (!overwrite_) {
      // linkat never replaces: EEXIST when the name appeared since the constructor's check.
      if (!link_unnamed(leaf_)) {
        if (errno == EEXIST) exists(path_);
        fail(path_, "cannot link the file into place");
      }
      committed_ = true;
      const int fd = fd_;
      fd_ = -1;
      if (::close(fd) != 0) fail(path_, "close failed");
      return;
    }
    // Replacing: the file gets a fresh name of its own first, then is renamed over the target.
    for (int attempt = 0; attempt < 16 && tmp_.empty(); ++attempt) {
      const auto name = temp_name();
      if (link_unnamed(name))
        tmp_ = name;
      else if (errno != EEXIST)
        break;
    }
    if (tmp_.empty()) fail(path_, "cannot link the file into place");
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(path_, "close failed");
  if (overwrite_) {
    // renameat replaces the name itself (a symlink there is replaced, never followed).
    if (::renameat(dir_, tmp_.c_str(), dir_, leaf_.c_str()) != 0)
      fail(path_, "cannot rename into place");
  } else if (::renameat2(dir_, tmp_.c_str(), dir_, leaf_.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST) exists(path_);
    if (errno != EINVAL && errno != ENOSYS) fail(path_, "cannot rename into place");
    // No RENAME_NOREPLACE on this file system: link (never replaces), then drop the temp name.
    if (::linkat(dir_, tmp_.c_str(), dir_, leaf_.c_str(), 0) != 0) {
      if (errno == EEXIST) exists(path_);
      fail(path_, "cannot link the file into place");
    }
    ::unlinkat(dir_, tmp_.c_str(), 0);
  }
  committed_ = true;
}

}  // namespace meshdock::mesh
