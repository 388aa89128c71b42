// OutFile: a file written as an unnamed temporary in the target's directory (O_TMPFILE; where
// the file system lacks it, a fresh name created with O_EXCL | O_NOFOLLOW) and linked or
// renamed into place on commit(). So a failed or interrupted write never leaves a half-written
// file under the final name, no existing name (a planted symlink included) is ever opened or
// followed, and two writers of one name each write their own temporary: the name ends up
// holding one whole file, never a mix. RAII: the temporary goes unless committed.
//
// Everything is relative to the target directory's fd (OutTarget): the caller decided which
// directory that is (the daemon opens it confined to a root: daemon/service/roots.hpp).
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace meshdock::mesh {

// Where a file is written.
struct OutTarget {
  int dir_fd = -1;         // the directory, borrowed (O_PATH is enough); outlives the OutFile
  std::string leaf;        // the file's name in it: one component, not "." or ".."
  std::string path;        // for messages only
  bool overwrite = false;  // false: an existing name is a FileExists, and is left as it was
};

class OutFile {
 public:
  // Throws FileExists when the name exists and overwrite is false (checked again, atomically,
  // on commit), WriteError naming the path when the temporary cannot be made.
  explicit OutFile(const OutTarget& target);
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  ~OutFile();

  void write(const void* p, std::size_t n);
  void put(std::string_view s) { write(s.data(), s.size()); }
  template <typename T>
  void pod(const T& v) {
    write(&v, sizeof v);
  }
  std::uint64_t written() const { return written_; }
  const std::string& path() const { return path_; }
  // Flushes and puts the file in place: linkat / renameat2(RENAME_NOREPLACE) when it may not
  // replace (FileExists when the name appeared meanwhile), renameat when it may.
  void commit();

 private:
  void flush();
  void make_named_temp();
  bool link_unnamed(const std::string& name);  // the O_TMPFILE gets `name`; false: errno
  int dir_ = -1;
  std::string leaf_, path_, tmp_;  // tmp_: the temporary's name, once it has one
  bool overwrite_ = false, unnamed_ = false;
  int fd_ = -1;
  std::string buf_;
  std::uint64_t written_ = 0;
  bool committed_ = false;
};

// Appends the shortest decimal text that reads back to exactly `v` (std::to_chars).
template <typename T>
void append_number(std::string& out, T v) {
  static_assert(std::is_arithmetic_v<T>);
  char tmp[64];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  out.append(tmp, r.ptr);
}

}  // namespace meshdock::mesh
