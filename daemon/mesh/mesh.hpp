// The Mesh model (DESIGN.md, "Data model"): what every reader produces and every writer takes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/mesh/array.hpp"

namespace meshdock::mesh {

// One block of cells of a single type.
// Fixed-size types: connectivity (n, nodes_per_cell) int64; offsets and face_offsets unset.
// Ragged blocks (cells of varying size, which no DLPack tensor can hold as one (n, k) array):
//   polygon:    connectivity (total,) int64, flat; offsets (n + 1,): cell c is
//               connectivity[offsets[c] .. offsets[c+1]).
//   polyhedron: a cell is a list of faces, a face a list of points. connectivity (total,) holds
//               every face's points; face_offsets (nfaces + 1,): face f is
//               connectivity[face_offsets[f] .. face_offsets[f+1]); offsets (n + 1,): cell c is
//               faces [offsets[c], offsets[c+1]).
struct CellBlock {
  std::string type;  // meshio's name: "tetra", "hexahedron27", ..., "polygon", "polyhedron"
  Array connectivity;
  Array offsets;       // ragged blocks only
  Array face_offsets;  // polyhedron blocks only
  static CellBlock fixed(std::string type, Array connectivity) {
    CellBlock b;
    b.type = std::move(type);
    b.connectivity = std::move(connectivity);
    return b;
  }
  static CellBlock polyhedra(Array connectivity, Array face_offsets, Array offsets) {
    CellBlock b;
    b.type = "polyhedron";
    b.connectivity = std::move(connectivity);
    b.face_offsets = std::move(face_offsets);
    b.offsets = std::move(offsets);
    return b;
  }
  bool ragged() const { return offsets.valid(); }
  std::int64_t size() const { return ragged() ? offsets.dim(0) - 1 : connectivity.dim(0); }
};

enum class RegionKind { kPoint, kCell, kSide };

inline const char* region_kind_name(RegionKind k) {
  switch (k) {
    case RegionKind::kPoint:
      return "point";
    case RegionKind::kCell:
      return "cell";
    case RegionKind::kSide:
      return "side";
  }
  return "?";
}

// A named set: Point entries are point indices, Cell entries global block-major cell numbers,
// Side entries (cell, local facet) pairs, shape (n, 2).
struct Region {
  std::string name;
  RegionKind kind = RegionKind::kCell;
  int dim = 0;
  std::int64_t tag = 0;
  Array entries;  // int64
};

struct Mesh {
  Array points;  // (n, dim) float64
  std::vector<CellBlock> cells;
  std::map<std::string, Array> point_data;
  std::map<std::string, std::vector<Array>> cell_data;  // one array per block
  std::map<std::string, Array> field_data;              // host only; gmsh: [tag, dim]
  std::vector<Region> regions;
  std::vector<std::string> notes;  // lossy steps taken while reading

  std::int64_t num_points() const { return points.dim(0); }
  std::int64_t num_cells() const {
    std::int64_t n = 0;
    for (const auto& b : cells) n += b.size();
    return n;
  }
};

// Each block's first global cell number (cells are numbered across the blocks in order, as
// cell regions name them).
inline std::vector<std::int64_t> block_starts(const Mesh& m) {
  std::vector<std::int64_t> starts;
  std::int64_t s = 0;
  for (const auto& b : m.cells) {
    starts.push_back(s);
    s += b.size();
  }
  return starts;
}

// The block holding global cell `g` (0 <= g < num_cells()): the last one starting at or before it.
inline std::size_t block_of(const std::vector<std::int64_t>& starts, std::int64_t g) {
  return static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), g) -
                                  starts.begin() - 1);
}

}  // namespace meshdock::mesh
