// The fuzz targets' input as a file: the bytes written into a memfd, so that a reader reads an
// fd as it does a user's file and its real file code (map, window, read, advance) runs too.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace meshdock::fuzz {

// A new memfd holding `size` bytes of `data` (the caller closes it); -1 when none can be made.
inline int memfd_with(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  std::size_t done = 0;
  while (done < size) {
    const auto n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return fd;
}

// memfd_with's fd for one input, closed with this object.
class MemfdInput {
 public:
  MemfdInput(const std::uint8_t* data, std::size_t size) : fd_(memfd_with(data, size)) {}
  MemfdInput(const MemfdInput&) = delete;
  MemfdInput& operator=(const MemfdInput&) = delete;
  ~MemfdInput() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace meshdock::fuzz
