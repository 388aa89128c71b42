// Reader tests: a file's bytes in a memfd, read by a reader under a name (so the reader's real
// file code runs: map, window, read), the message of the ReadError it throws, and an Array's
// values as a vector to compare.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "daemon/mesh/array.hpp"
#include "daemon/mesh/error.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::test {

// read(InFile) of `bytes` as a file named `name`.
template <typename Read>
mesh::Mesh read_text(Read&& read, const std::string& bytes, const std::string& name) {
  const int fd = memfd_create("reader-test", MFD_CLOEXEC);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  struct Close {
    int fd;
    ~Close() { close(fd); }
  } closer{fd};
  return read(mesh::InFile{fd, name});
}

// The message of the ReadError read_text(read, bytes, name) throws; "no error" when it reads.
template <typename Read>
std::string read_error(Read&& read, const std::string& bytes, const std::string& name) {
  try {
    read_text(read, bytes, name);
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "no error";
}

// The message of the ReadError read_mesh(path) throws (a test data file); "no error" when it
// reads.
inline std::string path_error(const std::string& path) {
  try {
    mesh::read_mesh(path);
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "no error";
}

// `text` gzipped (one gzip member, as Python's gzip writes it and DOLFIN's demo meshes come).
inline std::string gzipped(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Whether one of the mesh's notes holds `part`.
inline bool has_note(const mesh::Mesh& m, const std::string& part) {
  for (const auto& n : m.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

inline std::vector<std::int64_t> ints(const mesh::Array& a) {
  std::vector<std::int64_t> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mesh::int_at(a, i);
  return v;
}

inline std::vector<double> doubles(const mesh::Array& a) {
  std::vector<double> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mesh::value_at(a, i);
  return v;
}

// The mesh's cell block types in order ("tetra", "triangle", ...).
inline std::vector<std::string> cell_types(const mesh::Mesh& m) {
  std::vector<std::string> t;
  for (const auto& b : m.cells) t.push_back(b.type);
  return t;
}

// The bytes of `values` as type T in this machine's (little-endian) order: binary file bodies.
template <typename T>
std::string le_bytes(std::initializer_list<T> values) {
  std::string s;
  for (const T x : values) s.append(reinterpret_cast<const char*>(&x), sizeof(T));
  return s;
}
inline std::string u4(std::initializer_list<std::uint32_t> v) {
  return le_bytes(v);
}
inline std::string i4(std::initializer_list<std::int32_t> v) {
  return le_bytes(v);
}
inline std::string f8(std::initializer_list<double> v) {
  return le_bytes(v);
}
inline std::string f4(std::initializer_list<float> v) {
  return le_bytes(v);
}

}  // namespace meshdock::test
