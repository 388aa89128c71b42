// ANSYS Fluent's cells from their faces. A Fluent mesh gives its cell zones no connectivity:
// "(12 (zone first last type elem))" only says that cells first..last are of element type
// `elem` (a mixed zone, elem 0, lists each cell's type in its body), and every face row
// "n0 .. c0 c1" of a (13) section names the two cells it bounds (0: none). meshio reads no cell
// from such a file (only the faces); VTK's FLUENT reader builds them, and so does this: each
// cell's nodes from its faces, in VTK's (and meshio's) node order, oriented by the points as
// VTK's reader orients them: the base's right-hand normal (a tetra's 0 1 2, a pyramid's,
// hexahedron's or wedge's 0 1 2 [3]) points to the apex or the top. 2-D cells run
// counter-clockwise in x-y (VTK's reader keeps the faces' turn there: clockwise).
//
// A zone is built whole or not at all: a cell whose faces do not make a cell of its type (a
// tetra with five faces, a hexahedron whose side faces do not join its base to its top), or a
// zone that overlaps another, or zones that claim more cells than the faces can bound, leave
// the zone unbuilt, with a note that names the zone and its first bad cell. Polyhedral cells
// (element type 7) are a ragged "polyhedron" block: each cell its faces, turned out of the cell
// (by Fluent's rule, then by the cell's volume), checked closed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh::fluent {

// One face block as the reader keeps it: `rows` faces of `per` nodes (point rows, checked), and
// each face's adjacent cells c0 c1 (Fluent's cell ids, as the file gives them; 0: none).
struct FaceRows {
  const std::int64_t* nodes = nullptr;  // rows x per
  const std::int64_t* cells = nullptr;  // rows x 2
  std::int64_t rows = 0;
  int per = 0;
};

// A cell zone to build: cells first..last (Fluent ids), all of element type `type` (1 triangle,
// 2 tetra, 3 quad, 4 hexahedron, 5 pyramid, 6 wedge, 7 polyhedron), or, where `types` is not
// empty (a mixed zone), one type a cell (types[id - first]).
struct CellZone {
  std::int64_t zone = 0, first = 0, last = 0;
  int type = 0;
  std::vector<std::uint8_t> types;
  std::size_t line = 0;  // the (12) section's, for the notes
};

struct BuiltCells {
  std::vector<CellBlock> blocks;         // a block a zone and type, zones in the file's order
  std::vector<std::int64_t> block_zone;  // each block's zone id
  std::vector<std::string> notes;        // zones (or cells) not built, and why
};

// `points` (n, nd) float64 orients the cells. A hostile file cannot make this allocate more
// than a few words per face row: zones whose cells the faces cannot bound are refused first.
BuiltCells cells_from_faces(const Array& points, const std::vector<FaceRows>& faces,
                            const std::vector<CellZone>& zones);

}  // namespace meshdock::mesh::fluent
