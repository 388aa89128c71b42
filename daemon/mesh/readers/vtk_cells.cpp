#include "daemon/mesh/readers/vtk_cells.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace meshdock::mesh {

namespace {
const std::map<int, VtkCellKind>& vtk_cells() {
  static const std::map<int, VtkCellKind> kCells = {
      {1, {"vertex", 1}},
      {3, {"line", 2}},
      {5, {"triangle", 3}},
      {7, {"polygon", 0}},
      {8, {"pixel", 4}},
      {9, {"quad", 4}},
      {10, {"tetra", 4}},
      {12, {"hexahedron", 8}},
      {13, {"wedge", 6}},
      {14, {"pyramid", 5}},
      {15, {"penta_prism", 10}},
      {16, {"hexa_prism", 12}},
      {21, {"line3", 3}},
      {22, {"triangle6", 6}},
      {23, {"quad8", 8}},
      {24, {"tetra10", 10}},
      {25, {"hexahedron20", 20}},
      {26, {"wedge15", 15}},
      {27, {"pyramid13", 13}},
      {28, {"quad9", 9}},
      {29, {"hexahedron27", 27}},
      {30, {"quad6", 6}},
      {31, {"wedge12", 12}},
      {32, {"wedge18", 18}},
      {33, {"hexahedron24", 24}},
      {34, {"triangle7", 7}},
      {35, {"line4", 4}},
      {42, {"polyhedron", -1}},
      // Arbitrary-order Lagrange and Bezier cells (VTU 2.2, legacy 5.1; what dolfinx and
      // ParaView write): their order is in the node count, so a block holds cells of one count,
      // named and split as meshio 5 reads the Lagrange ones; nodes in VTK's order.
      {68, {"VTK_LAGRANGE_CURVE", 0}},
      {69, {"VTK_LAGRANGE_TRIANGLE", 0}},
      {70, {"VTK_LAGRANGE_QUADRILATERAL", 0}},
      {71, {"VTK_LAGRANGE_TETRAHEDRON", 0}},
      {72, {"VTK_LAGRANGE_HEXAHEDRON", 0}},
      {73, {"VTK_LAGRANGE_WEDGE", 0}},
      {74, {"VTK_LAGRANGE_PYRAMID", 0}},
      {75, {"VTK_BEZIER_CURVE", 0}},
      {76, {"VTK_BEZIER_TRIANGLE", 0}},
      {77, {"VTK_BEZIER_QUADRILATERAL", 0}},
      {78, {"VTK_BEZIER_TETRAHEDRON", 0}},
      {79, {"VTK_BEZIER_HEXAHEDRON", 0}},
      {80, {"VTK_BEZIER_WEDGE", 0}},
      {81, {"VTK_BEZIER_PYRAMID", 0}}};
  return kCells;
}
constexpr int kWedge[] = {0, 2, 1, 3, 5, 4};
}  // namespace

std::optional<VtkCellKind> vtk_cell(int t) {
  auto it = vtk_cells().find(t);
  if (it == vtk_cells().end()) return std::nullopt;
  return it->second;
}

std::optional<int> vtk_type_number(std::string_view name) {
  for (const auto& [t, kind] : vtk_cells()) {
    if (name == kind.name) return t;
  }
  return std::nullopt;
}

std::span<const int> vtk_order(std::string_view name) {
  if (name == "wedge") return kWedge;
  return {};
}

std::vector<std::int64_t> to_int64(const Array& a) {
  std::vector<std::int64_t> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = int_at(a, i);
  return v;
}

namespace {

// Whether ends[c] == (c + 1) * npc for every cell: the connectivity is plain rows.
bool shares_rows(std::span<const std::int64_t> ends, std::int64_t npc) {
  for (std::size_t c = 0; c < ends.size(); ++c)
    if (ends[c] != static_cast<std::int64_t>(c + 1) * npc) return false;
  return true;
}

// Whether every id is a point of the piece (else the copying path names the first bad cell).
bool ids_in_range(std::span<const std::int64_t> conn, std::int64_t num_points) {
  bool ok = true;
  for (const auto v : conn)
    ok &= static_cast<std::uint64_t>(v) < static_cast<std::uint64_t>(num_points);
  return ok;
}

void share_rows(Mesh& mesh, const char* kind, const Array& conn, std::int64_t rows,
                std::int64_t npc, const std::vector<std::pair<std::string, Array>>& cell_data) {
  mesh.cells.push_back(
      CellBlock::fixed(kind, Array::view(conn.buffer(), dtype_of<std::int64_t>(), {rows, npc})));
  for (const auto& [name, a] : cell_data) mesh.cell_data[name].push_back(a);
}

// Cells [start, end) are polyhedra: their face streams -> one ragged block.
CellBlock polyhedron_block(std::size_t start, std::size_t end, const VtkFaces& f,
                           std::int64_t num_points, std::int64_t point_base,
                           const std::function<void(const std::string&)>& fail) {
  std::vector<std::int64_t> conn, face_offsets{0}, offsets{0};
  for (std::size_t c = start; c < end; ++c) {
    const auto stop = f.face_ends[c];
    std::int64_t begin = 0;  // one past the previous polyhedron's stream
    for (std::size_t p = c; p-- > 0;) {
      if (f.face_ends[p] >= 0) {
        begin = f.face_ends[p];
        break;
      }
    }
    const auto where = "polyhedron " + std::to_string(c);
    if (stop < 0 || begin > stop || static_cast<std::size_t>(stop) > f.faces.size()) {
      fail(where + ": face offset " + std::to_string(stop) + " is outside the " +
           std::to_string(f.faces.size()) + "-entry faces array");
    }
    auto at = static_cast<std::size_t>(begin);
    const auto last = static_cast<std::size_t>(stop);
    auto take = [&](const char* what) {
      if (at >= last) fail(where + ": faces stream ends inside its " + what);
      return f.faces[at++];
    };
    const auto nfaces = take("face count");
    if (nfaces < 1 || static_cast<std::size_t>(nfaces) > last - at)
      fail(where + " has " + std::to_string(nfaces) + " faces");
    for (std::int64_t k = 0; k < nfaces; ++k) {
      const auto npts = take("point count");
      if (npts < 3 || static_cast<std::size_t>(npts) > last - at)
        fail(where + ": face " + std::to_string(k) + " has " + std::to_string(npts) + " points");
      for (std::int64_t j = 0; j < npts; ++j) {
        const auto v = take("point ids");
        if (v < 0 || v >= num_points) {
          fail(where + " refers to point " + std::to_string(v) + " of " +
               std::to_string(num_points));
        }
        conn.push_back(v + point_base);
      }
      face_offsets.push_back(static_cast<std::int64_t>(conn.size()));
    }
    if (at != last) fail(where + ": " + std::to_string(last - at) + " stray entries in faces");
    offsets.push_back(static_cast<std::int64_t>(face_offsets.size()) - 1);
  }
  return CellBlock::polyhedra(Array::from_vector(conn), Array::from_vector(face_offsets),
                              Array::from_vector(offsets));
}

}  // namespace

template <typename CellType>
void append_vtk_cells(Mesh& mesh, std::span<const std::int64_t> conn,
                      std::span<const std::int64_t> ends, std::span<const CellType> types,
                      std::int64_t num_points, std::int64_t point_base,
                      const std::vector<std::pair<std::string, Array>>& cell_data,
                      const std::function<void(const std::string&)>& fail, const VtkFaces* faces,
                      const Array* conn_array) {
  const std::size_t ncells = types.size();
  if (ends.size() != ncells) {
    fail(std::to_string(ends.size()) + " cell offsets for " + std::to_string(ncells) +
         " cell types");
  }
  if (faces && faces->face_ends.size() != ncells) {
    fail(std::to_string(faces->face_ends.size()) + " face offsets for " + std::to_string(ncells) +
         " cells");
  }
  auto size_of = [&](std::size_t c) { return ends[c] - (c == 0 ? 0 : ends[c - 1]); };
  std::size_t start = 0;
  while (start < ncells) {
    const auto t = types[start];
    const auto kind = vtk_cell(static_cast<int>(t));
    if (!kind) {
      fail("cell " + std::to_string(start) + " has VTK type " + std::to_string(t) +
           ", which is not supported");
    }
    std::size_t end = start + 1;
    while (end < ncells && types[end] == t && (kind->nodes != 0 || size_of(end) == size_of(start)))
      ++end;
    if (kind->nodes < 0) {
      if (!faces) fail("cell " + std::to_string(start) + " is a polyhedron but there are no faces");
      mesh.cells.push_back(polyhedron_block(start, end, *faces, num_points, point_base, fail));
      for (const auto& [name, a] : cell_data)
        mesh.cell_data[name].push_back(slice_rows(a, start, end));
      start = end;
      continue;
    }
    const std::int64_t npc = kind->nodes ? kind->nodes : size_of(start);
    if (npc <= 0) fail("cell " + std::to_string(start) + " has " + std::to_string(npc) + " nodes");
    // A size taken from the offsets (polygons, arbitrary-order cells) is the file's word: a
    // hostile offset must fail here, not size the block (it was std::bad_alloc). The run's
    // offsets rise, so its last one bounds them all; earlier runs' are checked already.
    if (static_cast<std::uint64_t>(npc) > conn.size() ||
        (kind->nodes == 0 && static_cast<std::uint64_t>(ends[end - 1]) > conn.size())) {
      fail("cell " + std::to_string(start) + " has " + std::to_string(npc) + " nodes ending at " +
           std::to_string(ends[end - 1]) + ", outside the " + std::to_string(conn.size()) +
           "-entry connectivity");
    }
    const auto perm = vtk_order(kind->name);
    const auto rows = static_cast<std::int64_t>(end - start);
    if (start == 0 && end == ncells && perm.empty() && point_base == 0 && conn_array &&
        conn.size() == static_cast<std::size_t>(rows * npc) && shares_rows(ends, npc) &&
        ids_in_range(conn, num_points)) {
      // The whole piece is one fixed-size block laid out row by row: share, do not copy.
      share_rows(mesh, kind->name, *conn_array, rows, npc, cell_data);
      return;
    }
    Array block = Array::of<std::int64_t>({static_cast<std::int64_t>(end - start), npc});
    auto* out = block.as<std::int64_t>();
    for (std::size_t c = start; c < end; ++c) {
      const auto last = ends[c];
      if (last < npc || static_cast<std::size_t>(last) > conn.size()) {
        fail("offset of cell " + std::to_string(c) + " is " + std::to_string(last) +
             ", outside the " + std::to_string(conn.size()) + "-entry connectivity");
      }
      for (std::int64_t k = 0; k < npc; ++k) {
        const auto v = conn[static_cast<std::size_t>(
            last - npc + (perm.empty() ? k : perm[static_cast<std::size_t>(k)]))];
        if (v < 0 || v >= num_points) {
          fail("cell " + std::to_string(c) + " refers to point " + std::to_string(v) + " of " +
               std::to_string(num_points));
        }
        out[(c - start) * static_cast<std::size_t>(npc) + static_cast<std::size_t>(k)] =
            v + point_base;
      }
    }
    mesh.cells.push_back(CellBlock::fixed(kind->name, std::move(block)));
    for (const auto& [name, a] : cell_data)
      mesh.cell_data[name].push_back(slice_rows(a, start, end));
    start = end;
  }
}

template <typename CellType>
std::optional<VtkCellKind> rows_of_one_kind(std::span<const std::int64_t> ends,
                                            std::span<const CellType> types) {
  if (types.empty() || ends.size() != types.size()) return std::nullopt;
  const auto t = types[0];
  for (const auto u : types)
    if (u != t) return std::nullopt;
  const auto kind = vtk_cell(static_cast<int>(t));
  if (!kind || kind->nodes <= 0 || !vtk_order(kind->name).empty() ||
      !shares_rows(ends, kind->nodes))
    return std::nullopt;
  return kind;
}

void append_rows_block(Mesh& mesh, const VtkCellKind& kind, std::int64_t ncells, const Array& conn,
                       std::int64_t num_points,
                       const std::vector<std::pair<std::string, Array>>& cell_data,
                       const std::function<void(const std::string&)>& fail) {
  const auto npc = static_cast<std::size_t>(kind.nodes);
  const auto rows = static_cast<std::size_t>(ncells);
  if (conn.size() < rows * npc) {
    const std::size_t c = conn.size() / npc;  // the first cell that ends past the ids
    fail("offset of cell " + std::to_string(c) + " is " + std::to_string((c + 1) * npc) +
         ", outside the " + std::to_string(conn.size()) + "-entry connectivity");
  }
  const std::span<const std::int64_t> ids(conn.as<std::int64_t>(), rows * npc);
  if (!ids_in_range(ids, num_points)) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (static_cast<std::uint64_t>(ids[i]) >= static_cast<std::uint64_t>(num_points))
        fail("cell " + std::to_string(i / static_cast<std::size_t>(kind.nodes)) +
             " refers to point " + std::to_string(ids[i]) + " of " + std::to_string(num_points));
    }
  }
  share_rows(mesh, kind.name, conn, ncells, kind.nodes, cell_data);
}

std::optional<ExpandedCells> expand_vtk_cells(std::span<const std::int64_t> conn,
                                              std::span<const std::int64_t> ends,
                                              std::span<const std::int64_t> types,
                                              const std::function<void(const std::string&)>& fail) {
  bool any = false;
  for (const auto t : types) any |= t == 2 || t == 4 || t == 6 || t == 11;
  if (!any) return std::nullopt;
  if (ends.size() != types.size()) {
    fail(std::to_string(ends.size()) + " cell offsets for " + std::to_string(types.size()) +
         " cell types");
  }
  ExpandedCells out;
  out.conn.reserve(conn.size());
  std::int64_t made[12] = {}, from[12] = {};
  auto emit = [&](std::int64_t type, std::size_t src, std::initializer_list<std::int64_t> ids) {
    out.conn.insert(out.conn.end(), ids);
    out.ends.push_back(static_cast<std::int64_t>(out.conn.size()));
    out.types.push_back(type);
    out.source.push_back(static_cast<std::int64_t>(src));
  };
  std::int64_t begin = 0;
  for (std::size_t c = 0; c < types.size(); ++c) {
    const auto end = ends[c];
    if (end < begin || static_cast<std::size_t>(end) > conn.size()) {
      fail("offset of cell " + std::to_string(c) + " is " + std::to_string(end) + ", outside the " +
           std::to_string(conn.size()) + "-entry connectivity");
    }
    const auto* p = conn.data() + begin;
    const auto n = end - begin;
    const auto t = types[c];
    auto need = [&](bool ok, const char* what) {
      if (!ok) {
        fail("cell " + std::to_string(c) + " (" + what + ") has " + std::to_string(n) + " points");
      }
    };
    switch (t) {
      case 2:
        need(n >= 1, "poly-vertex");
        for (std::int64_t k = 0; k < n; ++k) emit(1, c, {p[k]});
        made[2] += n;
        break;
      case 4:
        need(n >= 2, "poly-line");
        for (std::int64_t k = 0; k + 1 < n; ++k) emit(3, c, {p[k], p[k + 1]});
        made[4] += n - 1;
        break;
      case 6:
        need(n >= 3, "triangle strip");
        for (std::int64_t k = 0; k + 2 < n; ++k) {
          if (k % 2)
            emit(5, c, {p[k + 1], p[k], p[k + 2]});
          else
            emit(5, c, {p[k], p[k + 1], p[k + 2]});
        }
        made[6] += n - 2;
        break;
      case 11:
        need(n == 8, "voxel");
        emit(12, c, {p[0], p[1], p[3], p[2], p[4], p[5], p[7], p[6]});
        made[11] += 1;
        break;
      default:
        out.conn.insert(out.conn.end(), p, p + n);
        out.ends.push_back(static_cast<std::int64_t>(out.conn.size()));
        out.types.push_back(t);
        out.source.push_back(static_cast<std::int64_t>(c));
        begin = end;
        continue;
    }
    ++from[t];
    begin = end;
  }
  auto note = [&](int t, const char* what, const char* into) {
    if (from[t]) {
      out.notes.push_back(std::to_string(from[t]) + " " + what + " converted to " +
                          std::to_string(made[t]) + " " + into + " (cell data repeated)");
    }
  };
  note(2, "poly-vertex cells", "vertices");
  note(4, "poly-lines", "line segments");
  note(6, "triangle strips", "triangles");
  if (from[11]) {
    out.notes.push_back(std::to_string(from[11]) +
                        " voxels converted to hexahedra (VTK points 0,1,3,2,4,5,7,6)");
  }
  return out;
}

Array gather_rows(const Array& a, std::span<const std::int64_t> source) {
  auto shape = a.shape();
  const std::size_t row = a.dim(0) ? a.nbytes() / static_cast<std::size_t>(a.dim(0)) : 0;
  shape[0] = static_cast<std::int64_t>(source.size());
  Array out = Array::empty(a.dtype(), shape);
  auto* dst = static_cast<std::uint8_t*>(out.data());
  const auto* src = static_cast<const std::uint8_t*>(a.data());
  for (std::size_t i = 0; i < source.size(); ++i)
    std::memcpy(dst + i * row, src + static_cast<std::size_t>(source[i]) * row, row);
  return out;
}

template std::optional<VtkCellKind> rows_of_one_kind<std::uint8_t>(std::span<const std::int64_t>,
                                                                   std::span<const std::uint8_t>);
template std::optional<VtkCellKind> rows_of_one_kind<std::int64_t>(std::span<const std::int64_t>,
                                                                   std::span<const std::int64_t>);

template void append_vtk_cells<std::uint8_t>(Mesh&, std::span<const std::int64_t>,
                                             std::span<const std::int64_t>,
                                             std::span<const std::uint8_t>, std::int64_t,
                                             std::int64_t,
                                             const std::vector<std::pair<std::string, Array>>&,
                                             const std::function<void(const std::string&)>&,
                                             const VtkFaces*, const Array*);
template void append_vtk_cells<std::int64_t>(Mesh&, std::span<const std::int64_t>,
                                             std::span<const std::int64_t>,
                                             std::span<const std::int64_t>, std::int64_t,
                                             std::int64_t,
                                             const std::vector<std::pair<std::string, Array>>&,
                                             const std::function<void(const std::string&)>&,
                                             const VtkFaces*, const Array*);

}  // namespace meshdock::mesh
