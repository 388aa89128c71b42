// UGRID (.ugrid), the unstructured grid format of NASA's CFD tools (AFLR3, FUN3D, USM3D;
// Pointwise and Cubit export it), read as meshio 5.0 reads it. The variant is told by the name
// (ugrid_variant.hpp): ascii, C binary or Fortran unformatted, either byte order, 4- or 8-byte
// reals, 4- or 8-byte integers. Every variant holds, in this order:
//   7 counts: nodes, surface triangles, surface quads, tetrahedra, pyramids, prisms, hexahedra;
//   the nodes' x y z; the triangles' then the quads' nodes (1-based); one surface id per
//   triangle then per quad; the tetrahedra's, pyramids', prisms' and hexahedra's nodes.
// -> points (n, 3) float64; blocks triangle, quad, tetra, pyramid, wedge, hexahedron in that
//   order, each only where its count is not 0 (as meshio), connectivity 0-based; cell_data
//   "ugrid:ref": the surface ids of the triangle and quad blocks in the file's integer type
//   (int32, int64 for b8l / lb8l; int32 for ascii, meshio's "i"), zeros (int64, meshio's
//   np.zeros(dtype=int)) for each volume block.
// - Pyramids: UGRID lists the base as nodes 1 2 5 4 and the apex third; meshio reorders them to
//   VTK's order (base 0 1 2 3, apex 4) by taking the file's nodes 2 1 4 5 3, and so does this
//   reader. Prisms (1 2 3 bottom, 4 5 6 top) and the rest are kept as written, as meshio keeps
//   them.
// - ascii reals are read as written into float64 (meshio reads them as float32, "f": its points
//   are the values rounded to float32); binary reals as stored (float32 widened).
// - Fortran records: the 4-byte length markers (before and after the counts, before and after
//   the rest) are stepped over, not checked: meshio 5.0 writes them wrong (the byte sizes of its
//   int64 / float64 arrays, not of what it wrote), and reads them as this reader does.
// - Whatever follows the hexahedra (AFLR3's optional volume ids, meshio's Fortran end marker of
//   a wrong length) is not read, as meshio reads nothing after them; noted when there is some.
// Every count is checked against the file's size before anything is allocated (a binary file
// must hold each section's bytes, an ascii one two bytes a value at least), every node number
// against 1..nodes; errors name the file and the line (ascii) or byte (binary) and what was
// expected.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/readers/ugrid_variant.hpp"

namespace meshdock::mesh {

namespace {

// The header's counts, in the file's order.
enum { kNodes, kTriangles, kQuads, kTetra, kPyramids, kPrisms, kHexahedra, kCounts };

struct Section {
  const char* name;  // for messages
  const char* type;  // meshio's cell type (null: the nodes)
  int nodes;         // values a record: 3 coordinates, or a cell's nodes
};
constexpr Section kSection[kCounts] = {{"nodes", nullptr, 3},         {"triangles", "triangle", 3},
                                       {"quads", "quad", 4},          {"tetrahedra", "tetra", 4},
                                       {"pyramids", "pyramid", 5},    {"prisms", "wedge", 6},
                                       {"hexahedra", "hexahedron", 8}};

// VTK's pyramid node k is the file's node kPyramidFromFile[k] (meshio's out[:, [1, 0, 3, 4, 2]]).
constexpr int kPyramidFromFile[5] = {1, 0, 3, 4, 2};

using Counts = std::int64_t[kCounts];

// Integer values one record of section s holds in the file: a cell's nodes, plus its surface id
// for the triangles and quads (written in a later section, counted with its cell here).
std::size_t int_values(int s) {
  return static_cast<std::size_t>(kSection[s].nodes) + (s == kTriangles || s == kQuads ? 1 : 0);
}

// What the sections read so far built.
template <typename Id>
struct Parts {
  Array points;
  Array conn[kCounts];  // kTriangles..kHexahedra
  Array ids[3];         // surface ids: [kTriangles], [kQuads]

  Mesh finish(const Counts& n, std::vector<std::string> notes) {
    Mesh m;
    m.points = std::move(points);
    std::vector<Array> refs;
    for (int s = kTriangles; s < kCounts; ++s) {
      if (n[s] == 0) continue;
      m.cells.push_back(CellBlock::fixed(kSection[s].type, std::move(conn[s])));
      if (s <= kQuads) {
        refs.push_back(std::move(ids[s]));
      } else {
        Array zeros = Array::of<std::int64_t>({n[s]});
        std::memset(zeros.data(), 0, zeros.nbytes());
        refs.push_back(std::move(zeros));
      }
    }
    if (!m.cells.empty()) m.cell_data["ugrid:ref"] = std::move(refs);
    m.notes = std::move(notes);
    return m;
  }
};

// ---- binary ---------------------------------------------------------------------------------

template <typename T, bool Swap>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return Swap ? Cursor::byteswap(v) : v;
}

// `count` values of T from the cursor on, handed to decode(bytes, first, k) 1 MiB at a time:
// those pages are mapped just before (populate) and leave memory right after (release_before),
// so the file's pages never sit beside the whole arrays built from them (medit_reader's runs).
constexpr std::size_t kRunBytes = std::size_t{1} << 20;
template <typename T, typename Decode>
void in_runs(Cursor& c, MappedFile& file, std::size_t count, const char* what, Decode&& decode) {
  const auto begin = c.offset();
  const char* data = c.raw(count * sizeof(T), what);
  constexpr std::size_t per_run = kRunBytes / sizeof(T);
  for (std::size_t i = 0; i < count; i += per_run) {
    const auto k = std::min(per_run, count - i);
    const auto to = begin + (i + k) * sizeof(T);
    file.populate(begin + i * sizeof(T), to);
    decode(data + i * sizeof(T), i, k);
    file.release_before(to);
  }
}

// The binary variants' sections: I the file's integers, F its reals.
template <typename I, typename F, bool Swap>
struct BinarySource {
  using Id = I;
  Cursor& c;
  MappedFile& file;

  void reals(double* out, std::size_t count, const char* what) {
    in_runs<F>(c, file, count, what, [&](const char* p, std::size_t first, std::size_t k) {
      double* o = out + first;
      for (std::size_t j = 0; j < k; ++j)
        o[j] = static_cast<double>(load<F, Swap>(p + j * sizeof(F)));
    });
  }

  void ints(I* out, std::size_t count, const char* what) {
    in_runs<I>(c, file, count, what, [&](const char* p, std::size_t first, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j) out[first + j] = load<I, Swap>(p + j * sizeof(I));
    });
  }

  // Node numbers 1..limit -> 0-based, in one pass with no early exit (no branch a value to
  // mispredict); a number outside is then found and named with its byte.
  void nodes(std::int64_t* out, std::size_t count, std::uint64_t limit, const Section& s) {
    const auto start = c.offset();
    bool bad = false;
    in_runs<I>(c, file, count, s.name, [&](const char* p, std::size_t first, std::size_t k) {
      std::int64_t* o = out + first;
      for (std::size_t j = 0; j < k; ++j) {
        // v - 1 as unsigned: 0 and negatives wrap past every limit (and never overflow).
        const auto v0 = static_cast<std::uint64_t>(load<I, Swap>(p + j * sizeof(I))) - 1;
        bad |= v0 >= limit;
        o[j] = static_cast<std::int64_t>(v0);
      }
    });
    if (!bad) [[likely]]
      return;
    const auto per = static_cast<std::size_t>(s.nodes);
    for (std::size_t i = 0; i < count; ++i) {
      if (static_cast<std::uint64_t>(out[i]) < limit) continue;
      c.seek(start + i * sizeof(I));
      c.fail_at_byte(
          std::string(s.name) + ": cell " + std::to_string(i / per + 1) + " refers to node " +
          std::to_string(static_cast<std::int64_t>(static_cast<std::uint64_t>(out[i]) + 1)) +
          "; nodes are numbered 1.." + std::to_string(limit));
    }
  }

  // A Fortran record's length marker: stepped over (see the top of the file).
  void marker(const char* what) { c.raw(4, what); }
};

// ---- ascii ----------------------------------------------------------------------------------

// The ascii variant's sections: whitespace-separated values, read through the window.
struct AsciiSource {
  using Id = std::int32_t;  // meshio reads ascii integers as "i"
  Cursor& c;
  MappedFile& file;

  void reals(double* out, std::size_t count, const char* what) {
    (void)what;
    for (std::size_t i = 0; i < count; ++i) {
      if (i % 3 == 0) file.advance(c.offset());
      out[i] = c.number<double>("a coordinate (a real)");
    }
  }

  void ints(Id* out, std::size_t count, const char* what) {
    (void)what;
    for (std::size_t i = 0; i < count; ++i) {
      file.advance(c.offset());
      out[i] = c.number<Id>("a surface id (an integer of 32 bits)");
    }
  }

  void nodes(std::int64_t* out, std::size_t count, std::uint64_t limit, const Section& s) {
    const auto per = static_cast<std::size_t>(s.nodes);
    for (std::size_t i = 0; i < count; ++i) {
      if (i % per == 0) file.advance(c.offset());
      const auto v = c.number<std::int64_t>("a node number");
      const auto v0 = static_cast<std::uint64_t>(v) - 1;
      if (v0 >= limit) [[unlikely]]
        c.fail(std::string(s.name) + ": cell " + std::to_string(i / per + 1) + " refers to node " +
               std::to_string(v) + "; nodes are numbered 1.." + std::to_string(limit));
      out[i] = static_cast<std::int64_t>(v0);
    }
  }

  void marker(const char*) {}
};

// Reads the sections after the counts, in the file's order, into a Mesh.
template <typename Source>
Mesh read_sections(Source& src, const Counts& n, std::vector<std::string> notes) {
  using Id = typename Source::Id;
  Parts<Id> parts;
  parts.points = Array::of<double>({n[kNodes], 3});
  src.reals(parts.points.template as<double>(), static_cast<std::size_t>(n[kNodes]) * 3, "nodes");
  const auto limit = static_cast<std::uint64_t>(n[kNodes]);
  auto cells = [&](int s) {
    parts.conn[s] = Array::of<std::int64_t>({n[s], kSection[s].nodes});
    src.nodes(parts.conn[s].template as<std::int64_t>(),
              static_cast<std::size_t>(n[s]) * static_cast<std::size_t>(kSection[s].nodes), limit,
              kSection[s]);
  };
  cells(kTriangles);
  cells(kQuads);
  for (int s : {kTriangles, kQuads}) {
    parts.ids[s] = Array::of<Id>({n[s]});
    src.ints(parts.ids[s].template as<Id>(), static_cast<std::size_t>(n[s]),
             s == kTriangles ? "triangle surface ids" : "quad surface ids");
  }
  for (int s = kTetra; s < kCounts; ++s) cells(s);
  // Pyramids to VTK's node order, in place.
  auto* pyr = parts.conn[kPyramids].template as<std::int64_t>();
  for (std::int64_t i = 0; i < n[kPyramids]; ++i, pyr += 5) {
    std::int64_t f[5];
    std::copy(pyr, pyr + 5, f);
    for (int k = 0; k < 5; ++k) pyr[k] = f[kPyramidFromFile[k]];
  }
  return parts.finish(n, std::move(notes));
}

std::string counts_text(const Counts& n) {
  std::string s;
  for (int i = 0; i < kCounts; ++i)
    s += (i ? ", " : "") + std::to_string(n[i]) + " " + kSection[i].name;
  return s;
}

// No count below 0, and every section inside the file: a binary record takes its exact bytes,
// an ascii value two at least (a digit and a separator; the file's last value none). Checked
// section by section, so the message names the first count the file cannot hold; nothing is
// allocated before.
void check_counts(const Counts& n, std::uint64_t bytes_after_header, std::size_t real_bytes,
                  std::size_t int_bytes, bool ascii, const std::function<void(std::string)>& fail,
                  std::uint64_t file_bytes) {
  for (int s = 0; s < kCounts; ++s)
    if (n[s] < 0)
      fail("header: " + std::to_string(n[s]) + " " + kSection[s].name + " (a count below 0)");
  std::uint64_t left = bytes_after_header + (ascii ? 1 : 0);
  for (int s = 0; s < kCounts; ++s) {
    const std::uint64_t each = ascii ? 2 * (s == kNodes ? 3 : int_values(s))
                                     : (s == kNodes ? 3 * real_bytes : int_values(s) * int_bytes);
    const auto count = static_cast<std::uint64_t>(n[s]);
    if (count > left / each)
      fail("header: " + std::to_string(count) + " " + kSection[s].name + " of " +
           std::to_string(each) + (ascii ? " bytes at least" : " bytes") +
           " each do not fit in the file's " + std::to_string(file_bytes) +
           " bytes (counts: " + counts_text(n) + ")");
    left -= count * each;
  }
}

template <typename I, typename F, bool Swap>
Mesh parse_binary_as(std::string_view data, MappedFile& file, const UgridVariant& v) {
  Cursor c(data, file.path(), file.progress());
  BinarySource<I, F, Swap> src{c, file};
  const bool fortran = v.kind == UgridVariant::kFortran;
  if (fortran) src.marker("the counts' record marker");
  Counts n;
  c.need(kCounts * sizeof(I), "the header's 7 counts");
  for (auto& x : n) x = static_cast<std::int64_t>(c.binary_one<I>(Swap, "header count"));
  // The record markers after the counts and before the rest (the last one, after the rest, may
  // be missing: meshio reads on without it).
  const std::size_t markers = fortran ? 8 : 0;
  const std::size_t after = c.remaining() < markers ? 0 : c.remaining() - markers;
  check_counts(
      n, after, sizeof(F), sizeof(I), false,
      [&](const std::string& what) {
        c.seek(fortran ? 4 : 0);
        c.fail_at_byte(what);
      },
      data.size());
  if (fortran) {
    src.marker("the counts' end record marker");
    src.marker("the sections' record marker");
  }
  Mesh m = read_sections(src, n, {});
  if (fortran && c.remaining() >= 4) src.marker("the sections' end record marker");
  if (!c.at_end())
    m.notes.push_back("ugrid: " + file.path() + ": " + std::to_string(c.remaining()) +
                      " bytes after the hexahedra (at byte " + std::to_string(c.offset()) +
                      ") are not read (volume ids?), as meshio reads nothing after them");
  return m;
}

template <typename I, typename F>
Mesh parse_binary_typed(std::string_view data, MappedFile& file, const UgridVariant& v) {
  // Every platform meshdock builds for is little-endian: a big-endian file is swapped.
  return v.big_endian ? parse_binary_as<I, F, true>(data, file, v)
                      : parse_binary_as<I, F, false>(data, file, v);
}

Mesh parse_binary(std::string_view data, MappedFile& file, const UgridVariant& v) {
  if (v.int_bytes == 8) return parse_binary_typed<std::int64_t, double>(data, file, v);
  if (v.real_bytes == 4) return parse_binary_typed<std::int32_t, float>(data, file, v);
  return parse_binary_typed<std::int32_t, double>(data, file, v);
}

Mesh parse_ascii(std::string_view data, MappedFile& file) {
  Cursor c(data, file.path(), file.progress());
  AsciiSource src{c, file};
  Counts n;
  for (auto& x : n) {
    file.advance(c.offset());
    x = c.number<std::int64_t>("a header count (an integer)");
  }
  const auto header_line = c.line();
  check_counts(
      n, c.remaining(), 0, 0, true,
      [&](const std::string& what) {
        throw ReadError(file.path() + ":" + std::to_string(header_line) + ": " + what);
      },
      data.size());
  Mesh m = read_sections(src, n, {});
  c.skip_ws();
  if (!c.at_end())
    m.notes.push_back("ugrid: " + file.path() + ":" + std::to_string(c.line_at(c.offset())) +
                      ": the text after the hexahedra is not read (volume ids?), as meshio "
                      "reads nothing after them");
  file.release_before(data.size());
  return m;
}

}  // namespace

Mesh read_ugrid(const InFile& in) {
  const UgridVariant v = ugrid_variant(in.path);
  if (v.kind == UgridVariant::kAscii)
    return parse_mapped(
        in, [&](std::string_view data, MappedFile& file) { return parse_ascii(data, file); },
        Access::window);
  // Binary values are decoded straight from the mapping, 1 MiB of pages at a time.
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return parse_binary(data, file, v); },
      Access::map_lazily);
}

}  // namespace meshdock::mesh
