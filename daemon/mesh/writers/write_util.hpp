// Shared by the writers of the simple formats (legacy VTK, STL, OBJ, PLY, OFF, MSH 2.2): a
// buffer that goes to the OutFile in 1 MiB pieces (numbers are appended with std::to_chars, never
// through iostreams), values of any numeric Array as text, little- or big-endian bytes, and the
// cells of a fixed or ragged polygon block one at a time. Shared by every writer: the notes for
// padded points and for what a format cannot hold (note_point_dims, note_dropped).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "daemon/mesh/array.hpp"
#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/writers/out_file.hpp"

namespace meshdock::mesh::wr {

// An integer array (DLPack int or uint, any width): what writers take as ids, tags and groups.
inline bool is_integer(const Array& a) {
  return a.dtype().code <= 1;
}
// One integer a row: a point's or a cell's tag.
inline bool is_integer_column(const Array& a) {
  return is_integer(a) && a.ndim() == 1;
}

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
    const auto u = swapped(v);  // one append a value: byte by byte cost 3x meshio's tofile
    s_.append(reinterpret_cast<const char*>(&u), sizeof u);
  }
  // n values of p as they are (little-endian, or bytes).
  template <typename T>
  void le_run(const T* p, std::size_t n) {
    s_.append(reinterpret_cast<const char*>(p), n * sizeof(T));
    maybe_flush();
  }
  // n values of type T made by fill(T* out, std::size_t first, std::size_t count), in pieces of
  // kChunk bytes filled in an aligned scratch buffer and handed to the file from there: values
  // the caller computes (renumbered ids, reordered nodes, swapped bytes) without an append for
  // each, which is what made a binary write slower than numpy's tofile, and copied once.
  template <typename T, typename Fill>
  void run(std::size_t n, Fill&& fill) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t));
    if (n == 0) return;
    if (!scratch_) scratch_ = std::make_unique_for_overwrite<std::byte[]>(kChunk);
    auto* out = reinterpret_cast<T*>(scratch_.get());
    constexpr std::size_t kPer = kChunk / sizeof(T);
    flush();  // what came before goes first
    for (std::size_t at = 0; at < n; at += kPer) {
      const auto k = std::min(kPer, n - at);
      fill(out, at, k);
      out_.write(out, k * sizeof(T));
    }
  }
  // n rows of `width` bytes, row i written by fill(char* row, std::size_t i) (with memcpy: a
  // row need not be aligned), in pieces of whole rows filled in the scratch buffer and handed
  // to the file: interleaved binary records (a PLY face: its count byte and node ids) without
  // an append a field.
  template <typename Fill>
  void rows(std::size_t n, std::size_t width, Fill&& fill) {
    if (n == 0 || width == 0) return;
    if (width > kChunk) {  // a row longer than the scratch buffer: one at a time
      std::string row(width, '\0');
      for (std::size_t i = 0; i < n; ++i) {
        fill(row.data(), i);
        put(row);
      }
      return;
    }
    if (!scratch_) scratch_ = std::make_unique_for_overwrite<std::byte[]>(kChunk);
    auto* out = reinterpret_cast<char*>(scratch_.get());
    const std::size_t per = kChunk / width;
    flush();
    for (std::size_t at = 0; at < n; at += per) {
      const auto k = std::min(per, n - at);
      for (std::size_t i = 0; i < k; ++i) fill(out + i * width, at + i);
      out_.write(out, k * width);
    }
  }
  // v with its bytes reversed (a float stays a float: its bits are swapped).
  template <typename T>
  static T swapped(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    if constexpr (sizeof(T) == 1) {
      return v;
    } else {
      using U =
          std::conditional_t<sizeof(T) == 2, std::uint16_t,
                             std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
      static_assert(sizeof(U) == sizeof(T));
      auto u = std::bit_cast<U>(v);
      if constexpr (sizeof(T) == 2)
        u = __builtin_bswap16(u);
      else if constexpr (sizeof(T) == 4)
        u = __builtin_bswap32(u);
      else
        u = __builtin_bswap64(u);
      return std::bit_cast<T>(u);
    }
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
  std::unique_ptr<std::byte[]> scratch_;  // run()'s, made on first use
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

// Every element of a numeric array, its bytes reversed (legacy VTK's big-endian binary), in
// Sink runs: one pass over the array, no call a value.
inline void be_array(Sink& s, const Array& a) {
  const auto* p = static_cast<const unsigned char*>(a.data());
  const auto swap_as = [&]<typename U>(U) {
    s.run<U>(a.size(), [p](U* out, std::size_t at, std::size_t k) {
      for (std::size_t i = 0; i < k; ++i) {
        U u;  // loaded with memcpy: the array's bytes need not be aligned for U
        std::memcpy(&u, p + (at + i) * sizeof(U), sizeof(U));
        out[i] = Sink::swapped(u);
      }
    });
  };
  switch (a.itemsize()) {
    case 1:
      s.le_run(p, a.size());
      break;
    case 2:
      swap_as(std::uint16_t{});
      break;
    case 4:
      swap_as(std::uint32_t{});
      break;
    case 8:
      swap_as(std::uint64_t{});
      break;
    default:  // no writer here takes another size: byte by byte, in case one does
      for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t k = a.itemsize(); k-- > 0;)
          s.put(static_cast<char>(p[i * a.itemsize() + k]));
      s.maybe_flush();
  }
}

// The node ids of a fixed block's cells in a binary file: each id + `add` as T, a cell's nodes
// in the file's order (file[j] = cell[perm[j]]; perm empty: as stored), each value's bytes
// reversed when `big`; in Sink runs (no append a value).
template <typename T>
void cell_ids(Sink& s, const CellBlock& b, std::span<const int> perm, std::int64_t add, bool big) {
  const auto* c = b.connectivity.as<std::int64_t>();
  const auto npc = static_cast<std::size_t>(b.connectivity.dim(1));
  if (npc == 0) return;
  s.run<T>(b.connectivity.size(), [&](T* out, std::size_t at, std::size_t k) {
    if (perm.empty()) {  // the common case: a plain loop, then the swaps in one of their own
      for (std::size_t i = 0; i < k; ++i) out[i] = static_cast<T>(c[at + i] + add);
    } else {
      std::size_t cell = at / npc, j = at % npc;
      for (std::size_t i = 0; i < k; ++i) {
        out[i] = static_cast<T>(c[cell * npc + static_cast<std::size_t>(perm[j])] + add);
        if (++j == npc) {
          j = 0;
          ++cell;
        }
      }
    }
    if (big)
      for (std::size_t i = 0; i < k; ++i) out[i] = Sink::swapped(out[i]);
  });
}

// x as a little-endian float32 (STL, Neuroglancer); true when that rounds it (NaN stays NaN).
inline bool le_f32(Sink& s, double x) {
  const auto f = static_cast<float>(x);
  s.le(f);
  return static_cast<double>(f) != x && !(x != x && f != f);
}

// Coordinate k of point i as a double (0 past the points' own dimension).
inline double coord(const Mesh& m, std::int64_t i, int k) {
  const auto d = m.points.dim(1);
  if (k >= d) return 0.0;
  return value_at(m.points, static_cast<std::size_t>(i * d + k));
}

// The points as lines "<lead><id> x y z", ids 1..n, three coordinates each (0 past the points'
// own dimension), numbers the shortest that read back: the node tables of FLAC3D ("G "), AVS
// UCD ("") and Kratos mdpa (" ").
inline void numbered_points(Sink& s, const Mesh& m, std::string_view lead) {
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    s.put(lead);
    s.text(i + 1);
    for (int k = 0; k < 3; ++k) {
      s.put(' ');
      s.text(coord(m, i, k));
    }
    s.put('\n');
    s.maybe_flush();
  }
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
