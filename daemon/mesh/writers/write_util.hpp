// Shared by the writers of the simple formats (legacy VTK, STL, OBJ, PLY, OFF, MSH 2.2): a
// buffer that goes to the OutFile in 1 MiB pieces (numbers are appended with std::to_chars, never
// through iostreams), values of any numeric Array as text, little- or big-endian bytes, and the
// cells of a fixed or ragged polygon block one at a time. Shared by every writer: the notes for
// padded points and for what a format cannot hold (note_point_dims, note_dropped).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/array.hpp"
#include "daemon/mesh/cell_types.hpp"
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

// Element i (flat) of a numeric array as text a reader of float64 values reads back exactly:
// a float32 as the shortest text of its float64 value (float32's shortest, "0.1", would read
// back as a different float64), integers as text_value.
inline void text_f64(Sink& s, const Array& a, std::size_t i) {
  if (a.dtype().code == 2)
    s.text(value_at(a, i));
  else
    text_value(s, a, i);
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

// The Gmsh element type of a block, nullopt for one Gmsh has none for (ragged blocks,
// polyhedra, VTK's arbitrary-order cells, a row width that is not the type's).
inline std::optional<GmshType> gmsh_type_of(const CellBlock& b) {
  const auto t = gmsh_type_by_name(b.type);
  if (b.ragged() || !t || t->nodes != b.connectivity.dim(1)) return std::nullopt;
  return t;
}

// Where a block a writer refuses can go: "VTU or MSH", or "VTU" when MSH cannot hold it either.
inline std::string formats_for(const CellBlock& b) {
  return gmsh_type_of(b) ? "VTU or MSH" : "VTU";
}

// A block of polygonal faces: triangle, quad, polygon (fixed or ragged).
inline bool is_face_block(const CellBlock& b) {
  return !b.face_offsets.valid() &&
         (b.type == "triangle" || b.type == "quad" || b.type == "polygon");
}

// The notes for what a format cannot hold, worded alike by every writer.
// "points have 2 coordinates; <format> stores 3, so the rest are written as 0" when the points
// of `m` have fewer than 3 (every writer pads them with 0); nothing otherwise.
inline void note_point_dims(const Mesh& m, std::string_view format,
                            std::vector<std::string>& notes) {
  if (m.points.dim(1) == 3) return;
  notes.push_back("points have " + std::to_string(m.points.dim(1)) + " coordinates; " +
                  std::string(format) + " stores 3, so the rest are written as 0");
}

// "<what> is not written: <format> holds no <kind>", e.g. "field_data 'x' is not written: PLY
// holds no field data".
inline std::string not_written(std::string_view what, std::string_view format,
                               std::string_view kind) {
  return std::string(what) + " is not written: " + std::string(format) + " holds no " +
         std::string(kind);
}

enum DataKind : unsigned { kPointData = 1, kCellData = 2, kFieldData = 4, kRegions = 8, kAll = 15 };

// Names of one kind a format writes although it holds nothing else of that kind (OBJ's
// obj:vt / obj:vn point data): note_dropped leaves them to the writer, and names them in its
// note ("OBJ holds no point data but obj:vt, obj:vn").
struct KeptNames {
  DataKind kind;
  std::vector<std::string_view> names;
};

// Notes (not_written) every point_data, cell_data, field_data array and region of `m` of the
// `kinds` the format cannot hold, but the `kept` names.
inline void note_dropped(const Mesh& m, std::string_view format, std::vector<std::string>& notes,
                         unsigned kinds = kAll, const std::vector<KeptNames>& kept = {}) {
  auto note = [&](DataKind kind, const char* what, const char* words, const std::string& name) {
    if (!(kinds & kind)) return;
    std::string holds = words, but;
    for (const auto& k : kept) {
      if (k.kind != kind) continue;
      for (const auto n : k.names) {
        if (n == name) return;
        but += (but.empty() ? " but " : ", ") + std::string(n);
      }
    }
    notes.push_back(not_written(std::string(what) + " '" + name + "'", format, holds + but));
  };
  for (const auto& [name, a] : m.point_data) note(kPointData, "point_data", "point data", name);
  for (const auto& [name, a] : m.cell_data) note(kCellData, "cell_data", "cell data", name);
  for (const auto& [name, a] : m.field_data) note(kFieldData, "field_data", "field data", name);
  for (const auto& r : m.regions) note(kRegions, "region", "sets", r.name);
}

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
