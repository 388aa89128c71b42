// A read-only memory mapping of a whole file (RAII over the fd and the mapping). Readers parse
// in place; nothing is copied until values land in their final buffers.
//
// A file can change under a mapping: truncated (touching a page past the new end raises
// SIGBUS, which would kill the daemon) or rewritten in place (the parse mixes old and new).
// Mappings are registered with the process's SIGBUS guard (shm::GuardedRange, the same one the
// daemon's shared-memory segments use), which maps a zero page over such a page and marks the
// mapping; parse_mapped() then reports either case as a ReadError. A SIGBUS outside every
// guarded range keeps its default action.
#pragma once

#include <sys/stat.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "daemon/mesh/error.hpp"
#include "daemon/mesh/read_progress.hpp"
#include "daemon/mesh/unique_fd.hpp"
#include "meshdock/shm/sigbus_guard.hpp"

namespace meshdock::mesh {

// How a reader gets at the file's bytes. On a VM with shadow paging the first touch of each
// mapped 4 KiB page costs about 1 us even after MAP_POPULATE, more than copying it: a reader
// that parses all of a big file reads it instead.
enum class Access {
  map,         // mmap, every page mapped at open (MAP_POPULATE): small files, any reader
  map_lazily,  // mmap, pages mapped where the reader asks (populate) or as touched: readers
               // that stream their big binary runs with read_at
  read,        // the whole file read with pread on every core into a huge-page mapping: files
               // parsed end to end (ascii MSH, inline VTU; binary legacy VTK streams its
               // arrays with read_at)
  window,      // mmap without pages, and only the 2 MiB page the reader is in (advance) copied
               // in with pread (a huge page), the pages behind it released: a text parsed end to
               // end at the speed of `read` with a footprint of 2 MiB instead of the whole file
               // (the surface readers, ascii legacy VTK: their arrays are often smaller than
               // their text). The view still reads the whole file: bytes outside the window come
               // from the mapping (an error's line count, a look ahead), only slower.
};

// A file already open for reading and the name messages call it. Readers read only this fd:
// whoever opened it decided which file it is (the daemon opens every file once, confined to a
// root: daemon/service/roots.hpp), so no reader ever opens a path itself.
struct InFile {
  int fd = -1;       // borrowed: the caller keeps it open while the reader runs
  std::string path;  // for messages only
  // Where the reader reports how far it got (and the caller may stop it); null: nowhere.
  ReadProgress* progress = nullptr;
};

// Opens `path` for reading, for callers that have no roots (the Python module, tests):
// O_NONBLOCK | O_NOCTTY | O_CLOEXEC, so a FIFO or a device never blocks the open, then fstat:
// anything but a regular file is a ReadError naming the path.
UniqueFd open_regular(const std::string& path);

// The names in the directory `fd` is open on (any open, O_PATH too: it is reopened for
// reading), "." and ".." left out; a ReadError naming `path` when it cannot be listed.
std::vector<std::string> list_directory(int fd, const std::string& path);
// Opens the directory `path` first (for callers without roots).
std::vector<std::string> list_directory(const std::string& path);

// The first `n` bytes of the file ("" when it cannot be read: mapping it then says why), for a
// reader to choose its Access.
std::string peek_file(const InFile& file, std::size_t n);

class MappedFile {
 public:
  // Maps (or reads) the file `file.fd` is open on; takes a dup of the fd, the caller's stays
  // its own. Anything but a regular file is a ReadError.
  explicit MappedFile(const InFile& file, Access access = Access::map);
  // Opens `path` first (open_regular).
  explicit MappedFile(const std::string& path, Access access = Access::map);
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view view() const { return {data_ ? data_ : "", size_}; }
  const std::string& path() const { return path_; }
  // The InFile's progress sink (null: none), for the reader's cursors.
  ReadProgress* progress() const { return progress_; }
  // Throws ReadError when the file was truncated or rewritten since it was mapped.
  void check_unchanged() const;
  // The reader is done with bytes [0, offset): their pages leave this process's memory
  // (MADV_DONTNEED; they stay in the page cache, and reading them again just maps them back;
  // a file that was read gets a file mapping in place of those pages of its copy). Keeps a
  // reader's peak near the size of what it builds instead of that plus the file.
  void release_before(std::size_t offset);
  // The same for [begin, end) only (whole pages inside it): for pieces parsed in parallel.
  void release(std::size_t begin, std::size_t end) const;
  // Copies bytes [offset, offset + n) to dst with pread, without touching the mapping. A big
  // binary block streamed this way through a small buffer costs one kernel copy; read through
  // the mapping, every 4 KiB page costs a TLB fill on first touch, which on a VM with shadow
  // paging is about 1 us a page (10 ms for a 48 MB file, twice what the copy costs). Throws
  // ReadError when the file is now shorter (it changed while being read).
  void read_at(std::size_t offset, std::size_t n, char* dst) const;
  // The newlines in [begin, end), counted with pread through a small buffer: an error's or a
  // note's line number far into a file, without mapping the file's pages (which would stay
  // resident beside the arrays) and without reporting progress.
  std::size_t newlines(std::size_t begin, std::size_t end) const;
  // Maps the pages of [begin, end) now (MADV_POPULATE_READ; advice only on kernels before 5.14).
  // Nothing to do when the file was read (Access::read) or goes through a window.
  void populate(std::size_t begin, std::size_t end) const;
  // Access::window: the reader has got to byte `offset` and reads on from there. Past the end
  // of the copied window, the 2 MiB page holding `offset` is copied in and the pages before it
  // released (a ReadError when the file is now shorter). One compare otherwise: a reader calls
  // it per line or value. Nothing to do with the other kinds of Access.
  void advance(std::size_t offset) {
    if (offset >= refill_at_) [[unlikely]]
      slide(offset);
  }

 private:
  std::string path_;
  ReadProgress* progress_ = nullptr;
  int fd_ = -1;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  shm::GuardedRange guard_;  // SIGBUS guard over the mapping (or the copy)
  void* copy_ = nullptr;     // Access::read: the huge-page mapping holding the file
  // Access::window: the reservation (the file's whole 2 MiB pages from data_, then a spare
  // one), the end of the bytes copied in so far, and the offset at which advance() slides the
  // window on (never, otherwise).
  std::size_t reserved_ = 0;
  std::size_t loaded_ = 0;
  std::size_t refill_at_ = static_cast<std::size_t>(-1);
  static constexpr std::size_t kNoWindow = static_cast<std::size_t>(-1);
  std::size_t window_ = kNoWindow;  // where the window's huge page is (a whole one), if any
  void close_all() noexcept;
  void map(Access access);
  void map_window();
  void slide(std::size_t offset);
  void load(std::size_t offset);
  void* reuse_window(std::size_t offset);
  void pread_all(std::size_t offset, std::size_t n, char* dst) const;
  // Lets go of the pages of [begin, end) (page-aligned offsets) without changing what they read.
  void drop(std::size_t begin, std::size_t end) const;
  std::size_t released_ = 0;
  struct stat st_ {};
};

// Maps `file`, returns parse(view); a file that changed underneath is a ReadError saying so
// (also when the parser failed on what it read meanwhile).
// `parse` takes the view, or the view and the MappedFile (to release what it has read).
template <typename F>
auto parse_mapped(const InFile& in, F&& parse, Access access = Access::map) {
  MappedFile file(in, access);
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
