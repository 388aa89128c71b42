// A read-only memory mapping of a whole file (RAII over the fd and the mapping). Readers parse
// in place; nothing is copied until values land in their final buffers.
//
// A file can change under a mapping: truncated (touching a page past the new end raises
// SIGBUS, which would kill the daemon) or rewritten in place (the parse mixes old and new).
// Mappings are registered with a SIGBUS handler that maps a zero page over such a page and
// marks the mapping; parse_mapped() then reports either case as a ReadError. A SIGBUS outside a
// registered mapping keeps its default action. (The registry is process-wide state, as a signal
// handler needs; it holds only address ranges and flags.)
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <type_traits>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh {

// Whether the mapping's pages are all mapped at open (one call, instead of a fault per 64 KiB
// as the parse reaches them), or only where the reader asks (populate): a reader that streams
// its big binary blocks with read_at would only pay for mapping pages it never touches.
enum class Populate { all, on_request };

class MappedFile {
 public:
  explicit MappedFile(const std::string& path, Populate populate = Populate::all);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view view() const { return {data_ ? data_ : "", size_}; }
  const std::string& path() const { return path_; }
  // Throws ReadError when the file was truncated or rewritten since it was mapped.
  void check_unchanged() const;
  // The reader is done with bytes [0, offset): their pages leave this process's memory
  // (MADV_DONTNEED; they stay in the page cache, and reading them again just maps them back).
  // Keeps a reader's peak near the size of what it builds instead of that plus the file.
  void release_before(std::size_t offset);
  // The same for [begin, end) only (whole pages inside it): for pieces parsed in parallel.
  void release(std::size_t begin, std::size_t end) const;
  // Copies bytes [offset, offset + n) to dst with pread, without touching the mapping. A big
  // binary block streamed this way through a small buffer costs one kernel copy; read through
  // the mapping, every 4 KiB page costs a TLB fill on first touch, which on a VM with shadow
  // paging is about 1 us a page (10 ms for a 48 MB file, twice what the copy costs). Throws
  // ReadError when the file is now shorter (it changed while being read).
  void read_at(std::size_t offset, std::size_t n, char* dst) const;
  // Maps the pages of [begin, end) now (MADV_POPULATE_READ; advice only on kernels before 5.14).
  void populate(std::size_t begin, std::size_t end) const;

 private:
  std::string path_;
  int fd_ = -1;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  int slot_ = -1;  // index in the SIGBUS registry, -1 when not registered
  std::size_t released_ = 0;
  struct stat st_ {};
};

// Maps `path`, returns parse(view); a file that changed underneath is a ReadError saying so
// (also when the parser failed on what it read meanwhile).
// `parse` takes the view, or the view and the MappedFile (to release what it has read).
template <typename F>
auto parse_mapped(const std::string& path, F&& parse, Populate populate = Populate::all) {
  MappedFile file(path, populate);
  try {
    auto result = [&] {
      if constexpr (std::is_invocable_v<F, std::string_view, MappedFile&>)
        return parse(file.view(), file);
      else
        return parse(file.view());
    }();
    file.check_unchanged();
    return result;
  } catch (const ReadError&) {
    file.check_unchanged();
    throw;
  }
}

}  // namespace meshdock::mesh
