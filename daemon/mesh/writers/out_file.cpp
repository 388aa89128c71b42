#include "daemon/mesh/writers/out_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

namespace {
constexpr std::size_t kFlushAt = 1 << 20;

[[noreturn]] void fail(const std::string& path, const char* what) {
  throw WriteError(path + ": " + what + " (" + std::strerror(errno) + ")");
}
}  // namespace

OutFile::OutFile(std::string path) : path_(std::move(path)) {
  tmp_ = path_ + ".tmp-" + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, "cannot create the file");
  buf_.reserve(kFlushAt + 4096);
}

OutFile::~OutFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
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
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail(path_, "close failed");
  }
  fd_ = -1;
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail(path_, "cannot rename into place");
  committed_ = true;
}

}  // namespace meshdock::mesh
