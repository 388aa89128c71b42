#include "daemon/mesh/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "daemon/mesh/allocator.hpp"
#include "daemon/mesh/parallel.hpp"

namespace meshdock::mesh {

UniqueFd open_regular(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) throw ReadError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw ReadError(path + ": not a regular file");
  return fd;
}

std::string peek_file(const InFile& file, std::size_t n) {
  std::string head(n, '\0');
  const ssize_t got = ::pread(file.fd, head.data(), n, 0);
  head.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return head;
}

MappedFile::MappedFile(const std::string& path, Access access) : path_(path) {
  fd_ = open_regular(path).release();
  map(access);
}

MappedFile::MappedFile(const InFile& file, Access access) : path_(file.path) {
  fd_ = ::fcntl(file.fd, F_DUPFD_CLOEXEC, 0);
  if (fd_ < 0) throw ReadError(path_ + ": cannot open (" + std::strerror(errno) + ")");
  map(access);
  // Only the parse reports progress: the copy above (Access::read) would mark the whole file
  // read before a byte of it was parsed.
  progress_ = file.progress;
}

void MappedFile::map(Access access) {
  const auto& path = path_;
  if (::fstat(fd_, &st_) != 0 || !S_ISREG(st_.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw ReadError(path + ": not a regular file");
  }
  size_ = static_cast<std::size_t>(st_.st_size);
  if (size_ == 0) return;
  // A small file gains nothing from a copy of its own (a handful of pages either way), and a
  // mapping is one call where the copy is three (map, trim, read).
  if (access == Access::read && size_ < kHugeFrom) access = Access::map;
  if (access == Access::read) {
    copy_ = map_huge_pages(size_);
    if (!copy_) {
      ::close(fd_);
      throw ReadError(path + ": cannot allocate " + std::to_string(size_) + " bytes to read it");
    }
    data_ = static_cast<const char*>(copy_);
    guard_ = shm::GuardedRange(data_, size_);  // released parts become file mappings (release)
    try {
      // 8 MiB pieces on every core: the copy out of the page cache is the cost, and it splits.
      constexpr std::size_t kPiece = 8u << 20;
      parallel_for((size_ + kPiece - 1) / kPiece, 0, [&](std::size_t i) {
        const std::size_t at = i * kPiece;
        read_at(at, std::min(kPiece, size_ - at), static_cast<char*>(copy_) + at);
      });
    } catch (...) {
      close_all();  // the constructor did not finish: no destructor will run
      throw;
    }
    return;
  }
  // MAP_POPULATE: one call maps every page (a fault per page costs far more on a VM); the
  // readers then drop what they have parsed (release_before), so the file's share of the peak
  // shrinks as the arrays grow.
  const int flags = MAP_PRIVATE | (access == Access::map ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, size_, PROT_READ, flags, fd_, 0);
  if (p == MAP_FAILED) {
    ::close(fd_);
    throw ReadError(path + ": cannot map (" + std::strerror(errno) + ")");
  }
  ::madvise(p, size_, MADV_SEQUENTIAL | MADV_WILLNEED);
  data_ = static_cast<const char*>(p);
  guard_ = shm::GuardedRange(data_, size_);
}

MappedFile::~MappedFile() {
  close_all();
}

void MappedFile::close_all() noexcept {
  guard_ = shm::GuardedRange();  // before the mapping goes
  if (copy_) {
    unmap_huge_pages(copy_, size_);  // the copy and the file mappings release() put in it
  } else if (data_) {
    ::munmap(const_cast<char*>(data_), size_);
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  copy_ = nullptr;
  data_ = nullptr;
}

void MappedFile::release_before(std::size_t offset) {
  if (progress_) progress_->reached(offset, path_);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t end = std::min(offset, size_) / page * page;
  if (!data_ || end <= released_) return;
  drop(released_, end);
  released_ = end;
}

void MappedFile::release(std::size_t begin, std::size_t end) const {
  if (progress_) progress_->reached(end, path_);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  begin = (begin + page - 1) / page * page;
  end = std::min(end, size_) / page * page;
  if (data_ && begin < end) drop(begin, end);
}

void MappedFile::drop(std::size_t begin, std::size_t end) const {
  auto* at = const_cast<char*>(data_) + begin;
  if (!copy_) {
    ::madvise(at, end - begin, MADV_DONTNEED);
    return;
  }
  // The copy's pages there are replaced by a mapping of the same bytes of the file: the memory
  // goes, and a later look (an error's line number counts the newlines before it, a parse
  // that falls back starts over) still reads the file, from the page cache. On failure the
  // copy simply stays.
  ::mmap(at, end - begin, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, static_cast<off_t>(begin));
}

void MappedFile::read_at(std::size_t offset, std::size_t n, char* dst) const {
  while (n > 0) {
    const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      throw ReadError(path_ + ": cannot read " + std::to_string(n) + " bytes at byte " +
                      std::to_string(offset) + " (" +
                      (got < 0 ? std::strerror(errno) : "the file is shorter than when opened") +
                      ")");
    dst += got;
    offset += static_cast<std::size_t>(got);
    n -= static_cast<std::size_t>(got);
  }
  if (progress_) progress_->reached(offset, path_);
}

void MappedFile::populate(std::size_t begin, std::size_t end) const {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack it
#endif
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  begin = begin / page * page;
  end = std::min(end, size_);
  if (!data_ || copy_ || begin >= end) return;
  // EINVAL on an older kernel: the pages then fault in as they are read, which is only slower.
  ::madvise(const_cast<char*>(data_) + begin, end - begin, MADV_POPULATE_READ);
}

void MappedFile::check_unchanged() const {
  struct stat now {};
  const bool truncated = guard_.hit();
  const bool changed = ::fstat(fd_, &now) != 0 || now.st_size != st_.st_size ||
                       now.st_mtim.tv_sec != st_.st_mtim.tv_sec ||
                       now.st_mtim.tv_nsec != st_.st_mtim.tv_nsec;
  if (truncated || changed)
    throw ReadError(path_ + ": the file changed while it was being read (" +
                    (truncated ? "truncated" : "rewritten") +
                    "); read it again once it is complete");
}

}  // namespace meshdock::mesh
