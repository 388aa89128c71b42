// The faces of a mesh's cells, each once, with the cells on either side: what a Fluent mesh
// holds in place of cell connectivity. Fluent's solver is face based and reads no file without
// faces (meshio's writer writes none: its files do not open in Fluent); the Fluent layout of
// write_ansys(.., fluent layout) is written from these.
//
// Cells are the volume blocks' (the mesh's top dimension: tetra, pyramid, wedge, hexahedron
// with 3-D points; triangle, quad with 2-D points), numbered as the caller says. Each face is
// turned by Fluent's rule, its right-hand normal into c0 (c0 the first cell that has it, c1 the
// other, 0 on the boundary), taking the cells as VTK orients them (a tetra's 0 1 2 facing its
// apex, 2-D cells counter-clockwise). Faces come in zones: the interior ones no lower cell
// names, the interior zones the caller's lower cells name (an internal surface), the boundary
// zones they name (a Gmsh mesh's surface triangles, by physical group), then the boundary faces
// no lower cell names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh::fluent {

struct FaceZone {
  std::string name;  // "interior", a boundary zone's, "wall"
  int bc = 0;        // Fluent's boundary type: 2 interior, 3 wall
  // Each face's row as Fluent writes a mixed zone's: node count, nodes (point rows), c0, c1.
  std::vector<std::int64_t> rows;
  std::int64_t faces = 0;
  int nodes = 0;  // every face's node count, 0 when they differ (a mixed zone)
};

struct FaceSet {
  std::vector<FaceZone> zones;      // interior first; empty zones left out
  std::vector<std::size_t> volume;  // the volume blocks, in order
  std::vector<std::string> notes;   // lower blocks or cells that name no boundary face
};

// `volume` are the blocks whose cells make the faces, `number` each of their cells' number in
// the file (1-based; flat over `volume`'s blocks in order), `lower` the blocks that may name
// boundary faces (of the faces' types), `lower_zone` each of their cells' boundary zone (an
// index into `names`, flat over `lower`). Throws WriteError (naming `path`, the cells and the
// face) where a face bounds more than two cells.
FaceSet faces_of(const Mesh& m, const std::vector<std::size_t>& volume,
                 const std::vector<std::int64_t>& number, const std::vector<std::size_t>& lower,
                 const std::vector<std::int32_t>& lower_zone, const std::vector<std::string>& names,
                 const std::string& path);

}  // namespace meshdock::mesh::fluent
