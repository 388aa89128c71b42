// Medit meshes (INRIA's libMeshb / GMF format: mmg, FreeFEM, TetGen -g, gmsh's .mesh export):
// ascii .mesh and binary .meshb, told apart by their first four bytes (a binary file starts
// with the code word 1 in either byte order, which no text starts with), not by the name.
// - ascii: keywords, each followed by a record count (where it has one) and its records, as
//   whitespace-separated values across lines; '#' comment lines between sections. Read as
//   meshio 5.3 reads it: MeshVersionFormatted 1 (float32) and 2 (float64) values are both read
//   as written into float64 points (meshio rounds version 1 to float32); "Dimension 3" or
//   "Dimension" and the number on the next line; Vertices -> points (n, Dimension) and
//   point_data "medit:ref" (int64, as meshio's astype(int)); Edges, Triangles, Quadrilaterals,
//   Tetrahedra, Prisms, Hexahedra (and Dobrzynski's Hexaedra), Pyramids -> line, triangle, quad,
//   tetra, wedge, hexahedron, pyramid blocks in file order (1-based -> 0-based, node order as
//   written, as meshio keeps it), each record's ref -> cell_data "medit:ref" (int64), one array
//   per block. End ends the file (text after it is noted); a file may also just end.
// - binary: the code word (1, or 1 byte-swapped: a big-endian file), the version (1: float32
//   reals, int32 integers and positions; 2: float64 reals; 3: 64-bit positions; 4: 64-bit
//   integers too), then keywords: code (int32), the position of the next keyword, a record
//   count where the keyword has one, the records. The same Mesh as ascii, but "medit:ref" in the
//   file's integer type (int32 for versions 1-3, int64 for 4), as meshio gives it.
// - Keywords meshio skips (Corners, Ridges, Required*, Normals, NormalAtVertices, Tangents, the
//   geometry links, second-order elements, ...: meshio has no type it maps them to) are skipped
//   here with ONE note naming each with its record count. A keyword whose record layout is not
//   known cannot be stepped over in ascii (a ReadError naming it and its line, as meshio refuses
//   it: reading on would misread its records as keywords); in binary its next-keyword position
//   steps over it (noted too), which must lie after it and inside the file.
// Every count is checked against the bytes left before anything is allocated (an ascii value
// takes two bytes at least, a binary record its layout's size), so no header can make the
// reader allocate more than the file could hold; every vertex index is checked (1..vertices).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

// A GMF keyword: its code (binary), name (ascii), whether a record count follows it, one
// record's layout ("i" integer, "r" real, "dr" Dimension reals; empty: not known here), and for
// the element keywords meshio reads, meshio's cell type and node count.
struct Keyword {
  int code;  // -1: an ascii-only name (older Medit files)
  std::string_view name;
  bool counted;
  std::string_view layout;
  const char* cell_type = nullptr;
  int nodes = 0;
};

constexpr int kDimension = 3, kVertices = 4, kEnd = 54;

// The keywords read or stepped over; the codes and layouts are libMeshb's (GmfKwdFmt).
constexpr Keyword kKeywords[] = {
    {kVertices, "Vertices", true, "dri"},
    {5, "Edges", true, "iii", "line", 2},
    {6, "Triangles", true, "iiii", "triangle", 3},
    {7, "Quadrilaterals", true, "iiiii", "quad", 4},
    {8, "Tetrahedra", true, "iiiii", "tetra", 4},
    {9, "Prisms", true, "iiiiiii", "wedge", 6},
    {10, "Hexahedra", true, "iiiiiiiii", "hexahedron", 8},
    {49, "Pyramids", true, "iiiiii", "pyramid", 5},
    {-1, "Hexaedra", true, "iiiiiiiii", "hexahedron", 8},  // Dobrzynski's spelling
    // Skipped, noted: meshio maps none of them to anything.
    {13, "Corners", true, "i"},
    {14, "Ridges", true, "i"},
    {15, "RequiredVertices", true, "i"},
    {16, "RequiredEdges", true, "i"},
    {17, "RequiredTriangles", true, "i"},
    {18, "RequiredQuadrilaterals", true, "i"},
    {19, "TangentAtEdgeVertices", true, "iii"},
    {20, "NormalAtVertices", true, "ii"},
    {21, "NormalAtTriangleVertices", true, "iii"},
    {22, "NormalAtQuadrilateralVertices", true, "iiii"},
    {23, "AngleOfCornerBound", false, "r"},
    {24, "TrianglesP2", true, "iiiiiii"},
    {25, "EdgesP2", true, "iiii"},
    {27, "QuadrilateralsQ2", true, "iiiiiiiiii"},
    {29, "SubDomainFromGeom", true, "iii"},
    {30, "TetrahedraP2", true, "iiiiiiiiiii"},
    {33, "HexahedraQ2", true, "iiiiiiiiiiiiiiiiiiiiiiiiiiii"},
    {40, "VerticesOnGeometricVertices", true, "ii"},
    {41, "VerticesOnGeometricEdges", true, "iirr"},
    {42, "VerticesOnGeometricTriangles", true, "iirrr"},
    {43, "VerticesOnGeometricQuadrilaterals", true, "iirrr"},
    {44, "EdgesOnGeometricEdges", true, "ii"},
    {50, "BoundingBox", false, "drdr"},
    {55, "TrianglesOnGeometricTriangles", true, "ii"},
    {56, "TrianglesOnGeometricQuadrilaterals", true, "ii"},
    {57, "QuadrilateralsOnGeometricTriangles", true, "ii"},
    {58, "QuadrilateralsOnGeometricQuadrilaterals", true, "ii"},
    {59, "Tangents", true, "dr"},
    {60, "Normals", true, "dr"},
    {61, "TangentAtVertices", true, "ii"},
    {70, "ISolAtVertices", true, "i"},
    {77, "Iterations", false, "i"},
    {78, "Time", false, "r"},
    {82, "PeriodicVertices", true, "ii"},
    {83, "PeriodicEdges", true, "ii"},
    {84, "PeriodicTriangles", true, "ii"},
    {85, "PeriodicQuadrilaterals", true, "ii"},
    // Older Medit (FreeFEM, bamg) names meshio skips.
    {-1, "SubDomainFromMesh", true, "iiii"},
    {-1, "VertexOnGeometricVertex", true, "ii"},
    {-1, "VertexOnGeometricEdge", true, "iir"},
    {-1, "EdgeOnGeometricEdge", true, "ii"},
};

const Keyword* keyword_named(std::string_view name) {
  for (const auto& k : kKeywords)
    if (k.name == name) return &k;
  return nullptr;
}

const Keyword* keyword_coded(std::int64_t code) {
  for (const auto& k : kKeywords)
    if (k.code == code) return &k;
  return nullptr;
}

bool uses_dimension(std::string_view layout) {
  return layout.find('d') != std::string_view::npos;
}

// Values in one record ("dr": `dim` reals).
std::size_t record_values(std::string_view layout, int dim) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i] == 'd') {
      n += static_cast<std::size_t>(dim);
      ++i;  // the 'r' it repeats
    } else {
      ++n;
    }
  }
  return n;
}

// Bytes of one binary record.
std::size_t record_bytes(std::string_view layout, int dim, std::size_t isize, std::size_t fsize) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    if (layout[i] == 'd') {
      n += static_cast<std::size_t>(dim) * fsize;
      ++i;
    } else {
      n += layout[i] == 'r' ? fsize : isize;
    }
  }
  return n;
}

// What the sections read so far built, shared by the ascii and binary parsers.
struct Sections {
  explicit Sections(const std::string& file) : path(file) {}
  const std::string& path;
  int dim = 0;
  bool have_points = false;
  Array points, point_ref;
  std::vector<CellBlock> blocks;
  std::vector<Array> refs;
  // Blocks read before the Vertices: their highest index is checked once those are read.
  struct Unchecked {
    std::size_t block;
    std::int64_t max_index;  // 1-based
    std::string where;       // "<path>:<line>: Triangles" or "<path>: byte N: Triangles"
  };
  std::vector<Unchecked> unchecked;
  std::vector<std::string> skipped;  // "Corners (8)", for the one note

  // The highest vertex number a cell may name: the vertex count, or any (checked later) before
  // the Vertices are read.
  std::uint64_t index_limit() const {
    return have_points ? static_cast<std::uint64_t>(points.dim(0))
                       : static_cast<std::uint64_t>(INT64_MAX);
  }

  Mesh finish(std::vector<std::string> notes) {
    if (!have_points)
      throw ReadError(path + ": no Vertices section (a Medit mesh lists its vertices)");
    for (const auto& u : unchecked) {
      if (u.max_index > points.dim(0))
        throw ReadError(u.where + " refer to vertex " + std::to_string(u.max_index) +
                        "; the file has " + std::to_string(points.dim(0)));
    }
    Mesh m;
    m.points = std::move(points);
    m.point_data["medit:ref"] = std::move(point_ref);
    m.cells = std::move(blocks);
    if (!m.cells.empty()) m.cell_data["medit:ref"] = std::move(refs);
    if (!skipped.empty()) {
      std::string list;
      for (const auto& s : skipped) list += (list.empty() ? "" : ", ") + s;
      m.notes.push_back("medit: " + path +
                        ": sections skipped (meshdock maps them to nothing, as meshio): " + list);
    }
    for (auto& n : notes) m.notes.push_back(std::move(n));
    return m;
  }
};

// ---- ascii ----------------------------------------------------------------------------------

// Skips whitespace and '#' comment lines.
void skip_ws_comments(Cursor& c) {
  while (true) {
    c.skip_ws();
    if (c.at_end() || c.data()[c.offset()] != '#') return;
    c.next_line();
  }
}

template <typename T>
T header_number(Cursor& c, const char* what) {
  skip_ws_comments(c);
  return c.number<T>(what);
}

// A record count, checked against what the rest of the file can hold: each of a record's
// `values` takes a digit and a separator at least (the last value of the file no separator).
std::int64_t ascii_count(Cursor& c, std::string_view keyword, std::size_t values) {
  const auto n = header_number<std::int64_t>(c, "record count");
  if (n < 0 ||
      static_cast<std::uint64_t>(n) > (c.remaining() + 1) / (2 * std::max<std::size_t>(values, 1)))
    c.fail(std::string(keyword) + ": record count " + std::to_string(n) +
           " is more than the rest of the file holds");
  return n;
}

void ascii_vertices(Cursor& c, MappedFile& file, Sections& s, std::int64_t n) {
  const int dim = s.dim;
  s.points = Array::of<double>({n, dim});
  s.point_ref = Array::of<std::int64_t>({n});
  double* p = s.points.as<double>();
  auto* ref = s.point_ref.as<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    file.advance(c.offset());
    for (int k = 0; k < dim; ++k) *p++ = c.number<double>("vertex coordinate");
    ref[i] = c.number<std::int64_t>("vertex ref (an integer)");
  }
  s.have_points = true;
}

void ascii_cells(Cursor& c, MappedFile& file, Sections& s, const Keyword& kw, std::int64_t n,
                 std::size_t keyword_at) {
  const auto k = static_cast<std::size_t>(kw.nodes);
  Array conn = Array::of<std::int64_t>({n, kw.nodes});
  Array ref = Array::of<std::int64_t>({n});
  auto* out = conn.as<std::int64_t>();
  auto* r = ref.as<std::int64_t>();
  const std::uint64_t limit = s.index_limit();
  std::int64_t max_index = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    file.advance(c.offset());
    for (std::size_t j = 0; j < k; ++j) {
      const auto v = c.number<std::int64_t>("vertex index");
      // v - 1 as unsigned: 0 and negatives wrap past every limit.
      if (static_cast<std::uint64_t>(v) - 1 >= limit) [[unlikely]]
        c.fail(std::string(kw.name) + " record " + std::to_string(i + 1) + " refers to vertex " +
               std::to_string(v) + "; vertices are numbered 1.." +
               (s.have_points ? std::to_string(limit) : std::string("(their count)")));
      max_index = std::max(max_index, v);
      *out++ = v - 1;
    }
    r[i] = c.number<std::int64_t>("element ref (an integer)");
  }
  if (!s.have_points)
    s.unchecked.push_back(
        {s.blocks.size(), max_index,
         c.file() + ":" + std::to_string(c.line_at(keyword_at)) + ": " + std::string(kw.name)});
  s.blocks.push_back(CellBlock::fixed(kw.cell_type, std::move(conn)));
  s.refs.push_back(std::move(ref));
}

// Steps over `n` records of `values` values each: every one must be a number (a keyword here
// means the count was wrong, and reading on would misread what follows).
void ascii_skip(Cursor& c, MappedFile& file, std::string_view keyword, std::int64_t n,
                std::size_t values) {
  const auto total = static_cast<std::uint64_t>(n) * values;
  for (std::uint64_t i = 0; i < total; ++i) {
    file.advance(c.offset());
    const auto t = c.token();
    const char ch = t.empty() ? '\0' : t[0];
    if (!((ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.'))
      c.fail(std::string(keyword) + ": expected value " + std::to_string(i % values + 1) +
             " of record " + std::to_string(i / values + 1) + " of " + std::to_string(n) +
             ", found '" +
             (t.empty() ? std::string("end of file") : terminal_safe(t.substr(0, 40))) + "'");
  }
}

Mesh parse_ascii(std::string_view data, MappedFile& file) {
  const std::string& path = file.path();
  Cursor c(data, path, file.progress());
  c.seek(utf8_bom(data));
  Sections s(path);
  std::vector<std::string> notes;
  while (true) {
    skip_ws_comments(c);
    if (c.at_end()) break;
    file.advance(c.offset());
    const auto at = c.offset();
    const auto key = c.token();
    if (key == "End") {
      skip_ws_comments(c);
      if (!c.at_end())
        notes.push_back("medit: " + path + ":" + std::to_string(c.line_at(c.offset())) +
                        ": text after End; not read");
      break;
    }
    if (key == "MeshVersionFormatted") {
      // 1: the values were written as float32; read as written either way (float64 points).
      const auto v = header_number<std::int64_t>(c, "MeshVersionFormatted version");
      if (v < 0 || v > 4) c.fail("MeshVersionFormatted " + std::to_string(v) + " is not 0..4");
      continue;
    }
    if (key == "Dimension") {
      const auto d = header_number<std::int64_t>(c, "Dimension");
      if (d != 2 && d != 3) c.fail("Dimension " + std::to_string(d) + " is not 2 or 3");
      if (s.dim && d != s.dim)
        c.fail("Dimension " + std::to_string(d) + " after Dimension " + std::to_string(s.dim));
      s.dim = static_cast<int>(d);
      continue;
    }
    if (key == "Identifier" || key == "Geometry") {
      // A name (a quoted string) on the rest of the line, else on the next one, as meshio
      // takes it.
      if (Cursor::trim(c.rest_of_line()).empty()) c.nonempty_line();
      s.skipped.push_back(std::string(key));
      continue;
    }
    const Keyword* kw = keyword_named(key);
    if (!kw) {
      c.seek(at);
      c.fail("unknown keyword '" + terminal_safe(key.substr(0, 60)) +
             "': its records' layout is not known, so nothing after it can be read");
    }
    if (uses_dimension(kw->layout) && s.dim == 0)
      c.fail(std::string(kw->name) + " before Dimension");
    const std::size_t values = record_values(kw->layout, s.dim);
    if (kw->code == kVertices && s.have_points) c.fail("a second Vertices section");
    const std::int64_t n = kw->counted ? ascii_count(c, kw->name, values) : 1;
    if (kw->code == kVertices) {
      ascii_vertices(c, file, s, n);
    } else if (kw->cell_type) {
      ascii_cells(c, file, s, *kw, n, at);
    } else {
      ascii_skip(c, file, kw->name, n, values);
      s.skipped.push_back(std::string(kw->name) +
                          (kw->counted ? " (" + std::to_string(n) + ")" : std::string()));
    }
  }
  file.release_before(data.size());
  return s.finish(std::move(notes));
}

// ---- binary ---------------------------------------------------------------------------------

template <typename T>
T load(const char* p, bool swap) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return swap ? Cursor::byteswap(v) : v;
}

// One binary file's word sizes: integers I, reals F, positions (int32 or int64).
struct BinaryLayout {
  bool swap = false;
  int version = 0;
  std::size_t isize = 4, fsize = 8, psize = 4;
};

// A section's `n` records of `rec` bytes from byte `begin`, decoded 1 MiB at a time:
// decode(first, count) runs with those records' pages just mapped (populate), and they leave
// memory right after (release_before). Mapped whole, the file's pages sat beside the arrays
// built from them: a 48 MB .meshb peaked at 2.04x its arrays (scripts/bench read); in runs of
// 1, 2 and 4 MiB, 1.06x, 1.12x and 1.16x, each read in 6-11 ms here (too noisy to rank).
constexpr std::size_t kRunBytes = std::size_t{1} << 20;
template <typename Decode>
void in_runs(MappedFile& file, std::size_t begin, std::int64_t n, std::size_t rec,
             Decode&& decode) {
  const auto per_run = std::max<std::int64_t>(1, static_cast<std::int64_t>(kRunBytes / rec));
  for (std::int64_t i = 0; i < n; i += per_run) {
    const auto k = std::min(per_run, n - i);
    const auto to = begin + static_cast<std::size_t>(i + k) * rec;
    file.populate(begin + static_cast<std::size_t>(i) * rec, to);
    decode(i, k);
    file.release_before(to);
  }
}

template <typename I, typename F>
void binary_vertices(Cursor& c, MappedFile& file, Sections& s, const BinaryLayout& b,
                     std::int64_t n) {
  const int dim = s.dim;
  const std::size_t rec = static_cast<std::size_t>(dim) * sizeof(F) + sizeof(I);
  const auto begin = c.offset();
  const char* data = c.raw(static_cast<std::size_t>(n) * rec, "Vertices");
  s.points = Array::of<double>({n, dim});
  s.point_ref = Array::of<I>({n});
  double* out = s.points.as<double>();
  I* ref = s.point_ref.as<I>();
  in_runs(file, begin, n, rec, [&](std::int64_t first, std::int64_t count) {
    const char* p = data + static_cast<std::size_t>(first) * rec;
    for (std::int64_t i = first; i < first + count; ++i) {
      for (int k = 0; k < dim; ++k, p += sizeof(F))
        *out++ = static_cast<double>(load<F>(p, b.swap));
      ref[i] = load<I>(p, b.swap);
      p += sizeof(I);
    }
  });
  s.have_points = true;
}

// Decodes `n` records of `k` vertex numbers and a ref into 0-based connectivity and refs: one
// pass with no early exit (no branch per value to mispredict or to keep it from vectorizing);
// false when some number is outside 1..limit, for the caller to find and name.
template <typename I, bool Swap>
bool decode_cells(const char* p, std::size_t k, std::int64_t n, std::uint64_t limit,
                  std::int64_t* out, I* r, std::int64_t& max_index) {
  bool bad = false;
  std::int64_t top = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < k; ++j, p += sizeof(I)) {
      const auto v = static_cast<std::int64_t>(load<I>(p, Swap));
      // v - 1 as unsigned: 0 and negatives wrap past every limit (and never overflow).
      const auto v0 = static_cast<std::uint64_t>(v) - 1;
      bad |= v0 >= limit;
      top = std::max(top, v);
      *out++ = static_cast<std::int64_t>(v0);
    }
    r[i] = load<I>(p, Swap);
    p += sizeof(I);
  }
  max_index = top;
  return !bad;
}

template <typename I>
void binary_cells(Cursor& c, MappedFile& file, Sections& s, const BinaryLayout& b,
                  const Keyword& kw, std::int64_t n, std::size_t keyword_at) {
  const auto k = static_cast<std::size_t>(kw.nodes);
  const auto start = c.offset();
  const std::size_t rec = (k + 1) * sizeof(I);
  const char* data = c.raw(static_cast<std::size_t>(n) * rec, kw.name.data());
  Array conn = Array::of<std::int64_t>({n, kw.nodes});
  Array ref = Array::of<I>({n});
  const std::uint64_t limit = s.index_limit();
  std::int64_t max_index = 0;
  bool ok = true;
  in_runs(file, start, n, rec, [&](std::int64_t first, std::int64_t count) {
    const char* p = data + static_cast<std::size_t>(first) * rec;
    auto* out = conn.as<std::int64_t>() + static_cast<std::size_t>(first) * k;
    I* r = ref.as<I>() + first;
    std::int64_t top = 0;
    ok &= b.swap ? decode_cells<I, true>(p, k, count, limit, out, r, top)
                 : decode_cells<I, false>(p, k, count, limit, out, r, top);
    max_index = std::max(max_index, top);
  });
  if (!ok) [[unlikely]] {
    const auto* out = conn.as<std::int64_t>();
    for (std::size_t i = 0; i < static_cast<std::size_t>(n) * k; ++i) {
      if (static_cast<std::uint64_t>(out[i]) < limit) continue;
      c.seek(start + i / k * rec);
      c.fail_at_byte(
          std::string(kw.name) + " record " + std::to_string(i / k + 1) + " refers to vertex " +
          std::to_string(static_cast<std::int64_t>(static_cast<std::uint64_t>(out[i]) + 1)) +
          "; vertices are numbered 1.." +
          (s.have_points ? std::to_string(limit) : std::string("(their count)")));
    }
  }
  if (!s.have_points)
    s.unchecked.push_back(
        {s.blocks.size(), max_index,
         s.path + ": byte " + std::to_string(keyword_at) + ": " + std::string(kw.name)});
  s.blocks.push_back(CellBlock::fixed(kw.cell_type, std::move(conn)));
  s.refs.push_back(std::move(ref));
}

// An integer of `size` bytes (4 or 8), signed.
std::int64_t binary_int(Cursor& c, const BinaryLayout& b, std::size_t size, const char* what) {
  if (size == 8) return c.binary_one<std::int64_t>(b.swap, what);
  return c.binary_one<std::int32_t>(b.swap, what);
}

template <typename I, typename F>
Mesh parse_binary_as(Cursor& c, MappedFile& file, Sections& s, const BinaryLayout& b) {
  std::vector<std::string> notes;
  const std::size_t size = c.data().size();
  while (true) {
    if (c.at_end()) {
      notes.push_back("medit: " + s.path + ": the file ends without its End keyword");
      break;
    }
    const auto at = c.offset();
    const auto code = c.binary_one<std::int32_t>(b.swap, "keyword code");
    if (code == kEnd) break;
    const auto next =
        static_cast<std::uint64_t>(binary_int(c, b, b.psize, "next keyword position"));
    if (code == kDimension) {
      const auto d = c.binary_one<std::int32_t>(b.swap, "Dimension");
      if (d != 2 && d != 3) {
        c.seek(at);
        c.fail_at_byte("Dimension " + std::to_string(d) + " is not 2 or 3");
      }
      if (s.dim && d != s.dim) {
        c.seek(at);
        c.fail_at_byte("Dimension " + std::to_string(d) + " after Dimension " +
                       std::to_string(s.dim));
      }
      s.dim = d;
      continue;
    }
    const Keyword* kw = keyword_coded(code);
    if (!kw) {
      // Not known here: step to the next keyword, which must lie after this one (a position
      // pointing back would loop forever) and inside the file.
      if (next <= c.offset() || next > size) {
        c.seek(at);
        c.fail_at_byte("keyword " + std::to_string(code) + ": its next keyword position " +
                       std::to_string(next) + " is not after it inside the file (" +
                       std::to_string(size) + " bytes)");
      }
      s.skipped.push_back("keyword " + std::to_string(code) + " (unknown here: stepped over)");
      c.seek(static_cast<std::size_t>(next));
      continue;
    }
    if (uses_dimension(kw->layout) && s.dim == 0) {
      c.seek(at);
      c.fail_at_byte(std::string(kw->name) + " before Dimension");
    }
    std::int64_t n = 1;
    const std::size_t rec = record_bytes(kw->layout, s.dim, sizeof(I), sizeof(F));
    if (kw->counted) {
      n = binary_int(c, b, sizeof(I), "record count");
      if (n < 0 || static_cast<std::uint64_t>(n) > c.remaining() / rec) {
        c.seek(at);
        c.fail_at_byte(std::string(kw->name) + ": record count " + std::to_string(n) +
                       " is more than the rest of the file holds");
      }
    }
    if (kw->code == kVertices) {
      if (s.have_points) {
        c.seek(at);
        c.fail_at_byte("a second Vertices section");
      }
      binary_vertices<I, F>(c, file, s, b, n);
    } else if (kw->cell_type) {
      binary_cells<I>(c, file, s, b, *kw, n, at);
    } else {
      c.raw(static_cast<std::size_t>(n) * rec, kw->name.data());
      s.skipped.push_back(std::string(kw->name) +
                          (kw->counted ? " (" + std::to_string(n) + ")" : std::string()));
    }
  }
  return s.finish(std::move(notes));
}

Mesh parse_binary(std::string_view data, MappedFile& file) {
  Cursor c(data, file.path(), file.progress());
  Sections s(file.path());
  BinaryLayout b;
  const auto code = c.binary_one<std::uint32_t>(false, "code word");
  b.swap = code != 1;  // the caller checked it is 1 one way or the other
  const auto version = c.binary_one<std::int32_t>(b.swap, "version");
  if (version < 1 || version > 4) {
    c.seek(4);
    c.fail_at_byte("version " + std::to_string(version) + " is not 1..4");
  }
  b.version = version;
  b.isize = version == 4 ? 8 : 4;
  b.fsize = version == 1 ? 4 : 8;
  b.psize = version >= 3 ? 8 : 4;
  if (version == 1) return parse_binary_as<std::int32_t, float>(c, file, s, b);
  if (version == 4) return parse_binary_as<std::int64_t, double>(c, file, s, b);
  return parse_binary_as<std::int32_t, double>(c, file, s, b);
}

bool binary_code_word(std::string_view head) {
  return head.size() >= 4 && (head.substr(0, 4) == std::string_view("\x01\0\0\0", 4) ||
                              head.substr(0, 4) == std::string_view("\0\0\0\x01", 4));
}

}  // namespace

Mesh read_medit(const InFile& in) {
  // Binary records are decoded straight from the mapping, 1 MiB of pages mapped at a time
  // (in_runs; a 913k-tet .meshb: 0.007 s mapped, 0.016 s read into a copy first); ascii goes
  // through a window as the other text readers.
  if (binary_code_word(peek_file(in, 4)))
    return parse_mapped(
        in, [&](std::string_view data, MappedFile& file) { return parse_binary(data, file); },
        Access::map_lazily);
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return parse_ascii(data, file); },
      Access::window);
}

}  // namespace meshdock::mesh
