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
// (without it they are an error). `fail` must throw.
void append_vtk_cells(Mesh& mesh, const std::vector<std::int64_t>& conn,
                      const std::vector<std::int64_t>& ends, const std::vector<std::int64_t>& types,
                      std::int64_t num_points, std::int64_t point_base,
                      const std::vector<std::pair<std::string, Array>>& cell_data,
                      const std::function<void(const std::string&)>& fail,
                      const VtkFaces* faces = nullptr);

// Any integer Array widened to int64 (connectivity, offsets, types come in every width).
std::vector<std::int64_t> to_int64(const Array& a);

}  // namespace meshdock::mesh
