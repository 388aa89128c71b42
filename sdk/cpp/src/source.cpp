#include "meshdock/source.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>

namespace meshdock {

namespace {

std::string random_hex() {
  std::uint64_t r = 0;
  if (::getrandom(&r, sizeof r, 0) != sizeof r)
    r = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
        static_cast<std::uint64_t>(::time(nullptr));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
  return buf;
}

SdkError failure(const std::string& path, const char* step, int err) {
  return SdkError("source object " + path + ": " + step + ": " + std::strerror(err));
}

double now_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

std::optional<DaemonIds> daemon_of_socket(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return DaemonIds{st.st_uid, st.st_gid};
}

SourceBuffer SourceBuffer::create(std::uint64_t bytes, const SourceOptions& options) {
  SourceBuffer b;
  b.maker_ = ::getpid();
  b.name_ = std::string(kSourcePrefix) + std::to_string(b.maker_) + "." + random_hex();
  b.path_ = options.dir + "/" + b.name_;
  b.size_ = bytes ? bytes : 1;
  b.fd_ = ::open(b.path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (b.fd_ < 0) throw failure(b.path_, "create", errno);
  // From here `b` unlinks and closes what it made if a step fails.
  if (::flock(b.fd_, LOCK_SH) != 0) throw failure(b.path_, "flock", errno);
  const uid_t me = ::geteuid();
  const uid_t daemon = options.daemon_uid.value_or(me);
  if (daemon != me && daemon != 0) {  // a root daemon reads it as it is
    const gid_t group = options.daemon_gid.value_or(::getegid());
    if (group != ::getegid() && ::fchown(b.fd_, static_cast<uid_t>(-1), group) != 0)
      throw SdkError("source object " + b.path_ + ": cannot give it the daemon's group (gid " +
                     std::to_string(group) + "): " + std::strerror(errno) +
                     " (this user must be a member of it)");
    if (::fchmod(b.fd_, 0640) != 0) throw failure(b.path_, "chmod 0640", errno);
  }
  if (const int e = ::posix_fallocate(b.fd_, 0, static_cast<off_t>(b.size_)); e != 0)
    throw failure(b.path_, ("allocate " + std::to_string(b.size_) + " bytes").c_str(), e);
  void* p = ::mmap(nullptr, b.size_, PROT_READ | PROT_WRITE, MAP_SHARED, b.fd_, 0);
  if (p == MAP_FAILED) throw failure(b.path_, "mmap", errno);
  b.data_ = static_cast<std::byte*>(p);
  return b;
}

SourceBuffer::SourceBuffer(SourceBuffer&& o) noexcept
    : name_(std::move(o.name_)),
      path_(std::move(o.path_)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      fd_(std::exchange(o.fd_, -1)),
      maker_(std::exchange(o.maker_, 0)) {}

SourceBuffer& SourceBuffer::operator=(SourceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    name_ = std::move(o.name_);
    path_ = std::move(o.path_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fd_ = std::exchange(o.fd_, -1);
    maker_ = std::exchange(o.maker_, 0);
  }
  return *this;
}

SourceBuffer::~SourceBuffer() {
  reset();
}

void SourceBuffer::reset() noexcept {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  if (fd_ >= 0) {
    if (maker_ == ::getpid()) ::unlink(path_.c_str());
    ::close(fd_);
  }
  fd_ = -1;
}

std::size_t sweep_sources(const std::string& dir, double min_age_seconds) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  // A directory that cannot be read is said, not swept as empty: a mistyped one would
  // otherwise look clean while the dead producers' objects fill the real one.
  if (!d) throw SdkError("cannot sweep source objects in " + dir + ": " + std::strerror(errno));
  const int dfd = ::dirfd(d.get());
  const uid_t me = ::geteuid();
  std::size_t removed = 0;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string_view n(e->d_name);
    if (!n.starts_with(kSourcePrefix)) continue;
    const int fd = ::openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile, a symlink, not ours to read
    struct stat st {
    }, again{};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == me &&
        now_seconds() - (static_cast<double>(st.st_ctim.tv_sec) +
                         static_cast<double>(st.st_ctim.tv_nsec) * 1e-9) >=
            min_age_seconds &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&  // no live maker holds it
        ::fstatat(dfd, e->d_name, &again, AT_SYMLINK_NOFOLLOW) == 0 && again.st_dev == st.st_dev &&
        again.st_ino == st.st_ino && ::unlinkat(dfd, e->d_name, 0) == 0)
      ++removed;
    ::close(fd);
  }
  return removed;
}

}  // namespace meshdock
