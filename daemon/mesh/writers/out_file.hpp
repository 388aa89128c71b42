// OutFile: a file written through a temporary beside it and renamed into place on commit(), so
// a failed or interrupted write never leaves a half-written file under the final name (and an
// existing file stays intact). RAII: the temporary is removed unless committed.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace meshdock::mesh {

class OutFile {
 public:
  explicit OutFile(std::string path);  // throws WriteError naming the path
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
  // Flushes, closes and renames the temporary onto the path.
  void commit();

 private:
  void flush();
  std::string path_, tmp_;
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
