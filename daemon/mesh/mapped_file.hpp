// A read-only memory mapping of a whole file (RAII over the fd and the mapping). Readers parse
// in place; nothing is copied until values land in their final buffers.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw ReadError(path + ": cannot open (" + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw ReadError(path + ": not a regular file");
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_, 0);
      if (p == MAP_FAILED) {
        ::close(fd_);
        throw ReadError(path + ": cannot map (" + std::strerror(errno) + ")");
      }
      ::madvise(p, size_, MADV_SEQUENTIAL | MADV_WILLNEED);
      data_ = static_cast<const char*>(p);
    }
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
    if (fd_ >= 0) ::close(fd_);
  }

  std::string_view view() const { return {data_ ? data_ : "", size_}; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace meshdock::mesh
