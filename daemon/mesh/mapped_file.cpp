#include "daemon/mesh/mapped_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

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

std::vector<std::string> list_directory(int fd, const std::string& path) {
  UniqueFd own(::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!own) throw ReadError(path + ": cannot list (" + std::strerror(errno) + ")");
  struct CloseDir {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  const std::unique_ptr<DIR, CloseDir> dir(::fdopendir(own.get()));
  if (!dir) throw ReadError(path + ": cannot list (" + std::strerror(errno) + ")");
  own.release();  // the DIR owns it now
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string_view name(e->d_name);
    if (name != "." && name != "..") names.emplace_back(name);
  }
  if (errno != 0) throw ReadError(path + ": cannot list (" + std::strerror(errno) + ")");
  return names;
}

std::vector<std::string> list_directory(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw ReadError(path + ": cannot list (" + std::strerror(errno) + ")");
  return list_directory(fd.get(), path);
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
  if ((access == Access::read || access == Access::window) && size_ < kHugeFrom)
    access = Access::map;
  if (access == Access::window) {
    map_window();
    return;
  }
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

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// MREMAP_DONTUNMAP (Linux 5.7; older headers lack it): the source range stays mapped, empty.
constexpr int kDontUnmap = 4;
}  // namespace

// The file mapped without its pages over a reservation of whole 2 MiB pages from a 2 MiB
// boundary, so that every window slide() copies in is one huge page (4 KiB pages fault at about
// 14 us each on a VM with shadow paging: 3.5 ms a MiB). After the file's last page the
// reservation stays inaccessible, and its last huge page is the spare slot load() fills a
// window in.
void MappedFile::map_window() {
  const std::size_t reserve = (size_ + kHugePage - 1) / kHugePage * kHugePage;
  // The file's huge pages, a spare slot for the window's page while it is refilled, and room
  // to align.
  void* raw = ::mmap(nullptr, reserve + 2 * kHugePage, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    ::close(fd_);
    fd_ = -1;
    throw ReadError(path_ + ": cannot map (" + std::strerror(errno) + ")");
  }
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > start) ::munmap(raw, aligned - start);
  if (const auto tail = start + reserve + 2 * kHugePage - (aligned + reserve + kHugePage); tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + reserve + kHugePage), tail);
  auto* at = reinterpret_cast<void*>(aligned);
  if (::mmap(at, size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, 0) == MAP_FAILED) {
    const int err = errno;
    ::munmap(at, reserve + kHugePage);
    ::close(fd_);
    fd_ = -1;
    throw ReadError(path_ + ": cannot map (" + std::strerror(err) + ")");
  }
  data_ = static_cast<const char*>(at);
  reserved_ = reserve;
  guard_ = shm::GuardedRange(data_, size_);
  refill_at_ = 0;  // the first advance() copies the first window in
}

void MappedFile::slide(std::size_t offset) {
  // The window moves on once the reader has passed its end (the line or value it was reading
  // then came from the mapping: a page fault or two a window). Behind the reader, huge pages
  // leave whole: releasing part of one splits it, and the rest of it then costs a TLB fill per
  // 4 KiB page as it is parsed (on a VM with shadow paging, an ascii STL read 1.8x as slowly).
  if (loaded_ < size_) load(offset);
  release_before(offset / kHugePage * kHugePage);
  refill_at_ = loaded_ < size_ ? loaded_ : static_cast<std::size_t>(-1);
}

// The 2 MiB page holding `offset` (from the end of the window, when that is further) copied in:
// filled aside, then moved over the file's pages in one call, so the view reads the file at
// every moment and a failure leaves the mapping as it was (the reader then reads through it).
// The page is the previous window's when the reader has left that one (faulting and zeroing a
// fresh one for every 2 MiB of text cost more than the copy). The last window ends with the
// file's last 4 KiB page: small pages, not a huge page for a few bytes.
void MappedFile::load(std::size_t offset) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t mapped = (size_ + page - 1) / page * page;
  const std::size_t begin = std::max(loaded_, offset / kHugePage * kHugePage);
  const std::size_t end = std::min(mapped, begin / kHugePage * kHugePage + kHugePage);
  loaded_ = std::max(loaded_, end);
  if (begin >= end) return;
  const std::size_t n = end - begin;
  void* fresh = n == kHugePage ? reuse_window(offset) : nullptr;
  const bool reused = fresh != nullptr;
  if (!reused) {
    release_before(offset / kHugePage * kHugePage);  // the old page goes before a new one comes
    fresh = map_huge_pages(n);
    if (!fresh) return;
  }
  // The spare slot stays mapped (empty) once its page has moved on: a hole there could take
  // another mapping of the process (other threads allocate) that the next move would replace.
  auto discard = [&] {
    if (reused)
      ::madvise(fresh, n, MADV_DONTNEED);
    else
      unmap_huge_pages(fresh, n);
  };
  try {
    pread_all(begin, std::min(end, size_) - begin, static_cast<char*>(fresh));
  } catch (...) {
    discard();
    throw;
  }
  auto* at = const_cast<char*>(data_) + begin;
  const int flags = MREMAP_MAYMOVE | MREMAP_FIXED | (reused ? kDontUnmap : 0);
  if (::mremap(fresh, n, n, flags, at) == MAP_FAILED) {
    discard();
    return;
  }
  window_ = n == kHugePage ? begin : kNoWindow;
}

// The huge page of the window the reader has left (before the one holding `offset`), moved to
// the spare slot after the reservation with the file mapped again in its place; nullptr when
// there is none (or the kernel, before 5.7, cannot move it and leave its range mapped).
void* MappedFile::reuse_window(std::size_t offset) {
  if (window_ == kNoWindow || window_ + kHugePage > offset / kHugePage * kHugePage) return nullptr;
  auto* old = const_cast<char*>(data_) + window_;
  auto* spare = const_cast<char*>(data_) + reserved_;
  const auto at = std::exchange(window_, kNoWindow);
  // The old range stays mapped (empty) until the file is mapped over it: never a hole another
  // thread's mapping could take.
  constexpr int kMove = MREMAP_MAYMOVE | MREMAP_FIXED | kDontUnmap;
  if (::mremap(old, kHugePage, kHugePage, kMove, spare) == MAP_FAILED) return nullptr;
  if (::mmap(old, kHugePage, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, static_cast<off_t>(at)) ==
      MAP_FAILED) {
    ::mremap(spare, kHugePage, kHugePage, kMove, old);  // put back: the view must read them
    return nullptr;
  }
  return spare;
}

MappedFile::~MappedFile() {
  close_all();
}

void MappedFile::close_all() noexcept {
  guard_ = shm::GuardedRange();  // before the mapping goes
  if (copy_) {
    unmap_huge_pages(copy_, size_);  // the copy and the file mappings release() put in it
  } else if (reserved_) {
    // The window, the mapping around it and the spare slot.
    ::munmap(const_cast<char*>(data_), reserved_ + kHugePage);
  } else if (data_) {
    ::munmap(const_cast<char*>(data_), size_);
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  copy_ = nullptr;
  data_ = nullptr;
  reserved_ = 0;
}

void MappedFile::release_before(std::size_t offset) {
  if (progress_) progress_->reached(offset, path_);
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  // Access::window, at the end: the last window goes whole, its last page too.
  const std::size_t end = reserved_ && offset >= size_ ? (size_ + page - 1) / page * page
                                                       : std::min(offset, size_) / page * page;
  if (!data_ || end <= released_) return;
  drop(released_, end);
  released_ = end;
  if (window_ != kNoWindow && window_ < end) window_ = kNoWindow;  // its page is gone
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
  if (!copy_ && !reserved_) {
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
  pread_all(offset, n, dst);
  if (progress_) progress_->reached(offset + n, path_);
}

std::size_t MappedFile::newlines(std::size_t begin, std::size_t end) const {
  char buf[1 << 16];
  std::size_t lines = 0;
  while (begin < end) {
    const std::size_t n = std::min(sizeof buf, end - begin);
    pread_all(begin, n, buf);
    lines += static_cast<std::size_t>(std::count(buf, buf + n, '\n'));
    begin += n;
  }
  return lines;
}

void MappedFile::pread_all(std::size_t offset, std::size_t n, char* dst) const {
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
}

void MappedFile::populate(std::size_t begin, std::size_t end) const {
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack it
#endif
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  begin = begin / page * page;
  end = std::min(end, size_);
  if (!data_ || copy_ || reserved_ || begin >= end) return;
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
