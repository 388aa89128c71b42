// Shared by the writers of the simple formats (legacy VTK, STL, OBJ, PLY, OFF, MSH 2.2): a
// buffer that goes to the OutFile in 1 MiB pieces (numbers are appended with std::to_chars, never
// through iostreams), values of any numeric Array as text, little- or big-endian bytes, and the
// cells of a fixed or ragged polygon block one at a time.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/array.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/writers/out_file.hpp"

namespace meshdock::mesh::wr {

class Sink {
 public:
  explicit Sink(OutFile& out) : out_(out) { s_.reserve(kChunk + 4096); }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  std::string& str() { return s_; }
  void put(std::string_view x) {
    s_.append(x);
    maybe_flush();
  }
  void put(char c) { s_ += c; }
  template <typename T>
  void text(T v) {
    append_number(s_, v);
  }
  // Native (little-endian on every platform meshdock builds for) and big-endian bytes of v.
  template <typename T>
  void le(T v) {
    s_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void be(T v) {
    char b[sizeof v];
    std::memcpy(b, &v, sizeof v);
    for (std::size_t i = 0; i < sizeof v; ++i) s_ += b[sizeof v - 1 - i];
  }
  void maybe_flush() {
    if (s_.size() >= kChunk) flush();
  }
  void flush() {
    out_.put(s_);
    s_.clear();
  }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  OutFile& out_;
  std::string s_;
};

// Element i (flat) of a numeric array as the shortest text that reads back to it, in the
// array's own type (bool as 0 / 1).
inline void text_value(Sink& s, const Array& a, std::size_t i) {
  const auto d = a.dtype();
  const auto* p = static_cast<const std::uint8_t*>(a.data()) + i * a.itemsize();
  if (d.code == 2 && d.bits == 64) {
    double v;
    std::memcpy(&v, p, 8);
    s.text(v);
  } else if (d.code == 2 && d.bits == 32) {
    float v;
    std::memcpy(&v, p, 4);
    s.text(v);
  } else if (d.code == 1 && d.bits == 64) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    s.text(v);
  } else {
    s.text(int_at(a, i));  // every other integer (and bool) fits int64
  }
}

// Element i (flat) of a numeric array, its bytes reversed (legacy VTK's big-endian binary).
inline void be_value(Sink& s, const Array& a, std::size_t i) {
  const std::size_t item = a.itemsize();
  const auto* p = static_cast<const char*>(a.data()) + i * item;
  auto& str = s.str();
  for (std::size_t k = item; k-- > 0;) str += p[k];
}

// Coordinate k of point i as a double (0 past the points' own dimension).
inline double coord(const Mesh& m, std::int64_t i, int k) {
  const auto d = m.points.dim(1);
  if (k >= d) return 0.0;
  return value_at(m.points, static_cast<std::size_t>(i * d + k));
}

// Calls f(const std::int64_t* ids, std::size_t n) for every cell of a fixed or ragged (polygon)
// block; not for polyhedra (callers refuse them first).
template <typename F>
void each_cell(const CellBlock& b, F&& f) {
  const auto* c = b.connectivity.as<std::int64_t>();
  if (b.ragged()) {
    const auto* off = b.offsets.as<std::int64_t>();
    for (std::int64_t i = 0; i < b.size(); ++i)
      f(c + off[i], static_cast<std::size_t>(off[i + 1] - off[i]));
    return;
  }
  const auto npc = static_cast<std::size_t>(b.connectivity.dim(1));
  for (std::int64_t i = 0; i < b.size(); ++i) f(c + static_cast<std::size_t>(i) * npc, npc);
}

inline std::string block_name(const Mesh& m, std::size_t b) {
  return "cells[" + std::to_string(b) + "] (" + m.cells[b].type + ")";
}

// A block of polygonal faces: triangle, quad, polygon (fixed or ragged).
inline bool is_face_block(const CellBlock& b) {
  return !b.face_offsets.valid() &&
         (b.type == "triangle" || b.type == "quad" || b.type == "polygon");
}

// Notes "<what> is not written: <format> holds no data / sets" for every point, cell and field
// data array and every region of `m` (for OFF, which keeps points and faces only).
void note_dropped(const Mesh& m, const char* format, std::vector<std::string>& notes);

// What each format's writer class holds (it derives from this): the mesh, where it goes (path_
// names it in messages), ascii or binary, and the notes of its lossy steps.
struct WriterState {
  WriterState(const Mesh& m, const OutTarget& target, bool binary)
      : m_(m), target_(target), path_(target.path), binary_(binary) {}
  const Mesh& m_;
  const OutTarget& target_;
  const std::string& path_;
  bool binary_;
  std::vector<std::string> notes_;
};

}  // namespace meshdock::mesh::wr
