// VTK cell arrays (connectivity + per-cell end offsets + types) -> meshio-style blocks, shared by
// the VTU and legacy VTK readers: a block per run of one VTK type (polygons further split by
// size), VTK -> meshio node order (wedge), cell data sliced per block.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh {

struct VtkCellKind {
  const char* name;
  int nodes;  // 0: variable (polygon)
};

std::optional<VtkCellKind> vtk_cell(int type);

// `ends[c]` is one past the last connectivity entry of cell c. Indices are checked against
// `num_points` and shifted by `point_base`. `fail` must throw.
void append_vtk_cells(Mesh& mesh, const std::vector<std::int64_t>& conn,
                      const std::vector<std::int64_t>& ends, const std::vector<std::int64_t>& types,
                      std::int64_t num_points, std::int64_t point_base,
                      const std::vector<std::pair<std::string, Array>>& cell_data,
                      const std::function<void(const std::string&)>& fail);

// Any integer Array widened to int64 (connectivity, offsets, types come in every width).
std::vector<std::int64_t> to_int64(const Array& a);

// Rows [begin, end) of `a` as a new Array.
Array slice_rows(const Array& a, std::size_t begin, std::size_t end);

}  // namespace meshdock::mesh
