// VTK cell arrays (connectivity + per-cell end offsets + types) -> meshio-style blocks, shared by
// the VTU and legacy VTK readers: a block per run of one VTK type (polygons further split by
// size, as meshio does), VTK -> meshio node order (wedge), cell data sliced per block. A run of
// polyhedra (VTK 42) becomes one ragged "polyhedron" block built from the faces stream.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh {

struct VtkCellKind {
  const char* name;
  int nodes;  // 0: variable (polygon), -1: polyhedron (faces stream)
};

// VTK's per-polyhedron face streams (VTU "faces" / "faceoffsets"): for cell c,
// face_ends[c] is one past its last entry in `faces` (-1 for cells that are not polyhedra);
// the stream is: number of faces, then per face its point count and point ids.
struct VtkFaces {
  std::vector<std::int64_t> faces;
  std::vector<std::int64_t> face_ends;
};

std::optional<VtkCellKind> vtk_cell(int type);
// The VTK type number of a meshio cell type name (nullopt when VTK has none).
std::optional<int> vtk_type_number(std::string_view name);
// VTK's node order for a meshio type, as a permutation (empty when identical): out[j] = in[p[j]].
// Its own inverse, so the readers use it too.
std::span<const int> vtk_order(std::string_view name);

// `ends[c]` is one past the last connectivity entry of cell c. Indices are checked against
// `num_points` and shifted by `point_base`. `faces` is needed only when polyhedra are present
// (without it they are an error). `fail` must throw. `conn_array`, when given, is the Array
// `conn` views: a piece of one fixed-size type whose ids need no shift or reordering (what
// meshio and VTK write for a tet mesh) becomes a block sharing it instead of a copy.
// `types` is int64, or uint8 as VTK writes them (borrowed from the decoded array: widening a
// million types would cost 8 MB of peak for nothing).
template <typename CellType>
void append_vtk_cells(Mesh& mesh, std::span<const std::int64_t> conn,
                      std::span<const std::int64_t> ends, std::span<const CellType> types,
                      std::int64_t num_points, std::int64_t point_base,
                      const std::vector<std::pair<std::string, Array>>& cell_data,
                      const std::function<void(const std::string&)>& fail,
                      const VtkFaces* faces = nullptr, const Array* conn_array = nullptr);

// A piece whose cells are all of one fixed-size type in the same node order as meshio, laid
// out row by row (ends[c] == (c + 1) * nodes): what meshio and VTK write for a tet mesh. Such a
// piece needs nothing but its connectivity, so a reader can check this before decoding the
// connectivity and drop the offsets and types first (append_rows_block). nullopt otherwise.
template <typename CellType>
std::optional<VtkCellKind> rows_of_one_kind(std::span<const std::int64_t> ends,
                                            std::span<const CellType> types);
// Appends such a piece of `ncells` cells as one block sharing `conn` (int64) and its cell data
// whole. Through `fail`, with append_vtk_cells' words: a connectivity shorter than the offsets
// say, an id outside [0, num_points).
void append_rows_block(Mesh& mesh, const VtkCellKind& kind, std::int64_t ncells, const Array& conn,
                       std::int64_t num_points,
                       const std::vector<std::pair<std::string, Array>>& cell_data,
                       const std::function<void(const std::string&)>& fail);

// Cells meshio has no block type for, decomposed the way VTK does it: poly-vertex (2) into
// vertices, poly-line (4) into line segments, triangle strip (6) into triangles (every second
// one flipped, as vtkTriangleStrip does, to keep the orientation), voxel (11) into a
// hexahedron (VTK's points 0,1,3,2,4,5,7,6). `source[c]` is the input cell output cell c came
// from, so cell data can follow (gather_rows); one note per kind converted. nullopt when there
// is none of these kinds (the input stands as it is). `fail` must throw; it names the cell.
struct ExpandedCells {
  std::vector<std::int64_t> conn, ends, types, source;
  std::vector<std::string> notes;
};
std::optional<ExpandedCells> expand_vtk_cells(std::span<const std::int64_t> conn,
                                              std::span<const std::int64_t> ends,
                                              std::span<const std::int64_t> types,
                                              const std::function<void(const std::string&)>& fail);
// out[i] = a[source[i]] row by row (source checked by the caller to lie within a's rows).
Array gather_rows(const Array& a, std::span<const std::int64_t> source);

// Any integer Array widened to int64 (connectivity, offsets, types come in every width).
std::vector<std::int64_t> to_int64(const Array& a);

// An integer Array's values as int64: borrowed (no copy, the Array kept alive) when it is
// int64 in native order already, which is what meshio and VTK write for connectivity and
// offsets; widened into an owned vector otherwise.
class Int64s {
 public:
  explicit Int64s(Array a) : keep_(std::move(a)) {
    const auto d = keep_.dtype();
    if (d.code == 0 && d.bits == 64 && d.lanes == 1) {
      view_ = {keep_.as<std::int64_t>(), keep_.size()};
    } else {
      owned_ = to_int64(keep_);
      view_ = owned_;
    }
  }
  Int64s(const Int64s&) = delete;
  Int64s& operator=(const Int64s&) = delete;
  operator std::span<const std::int64_t>() const { return view_; }
  // The Array the values are borrowed from; nullptr when they were widened into a copy.
  const Array* borrowed() const { return owned_.empty() && keep_.valid() ? &keep_ : nullptr; }

 private:
  Array keep_;
  std::vector<std::int64_t> owned_;
  std::span<const std::int64_t> view_;
};

}  // namespace meshdock::mesh
