// TetGen's 10-node tetrahedra, shared by read_tetgen and write_tetgen: TetGen -o2 (1.5.0, run on
// a cube: tests/data/tools/make_tetgen.py) lists the mid-edge nodes for the edges 34, 14, 12, 23,
// 24, 13 (corners 1-4), VTK's (meshio's) tetra10 for 12, 23, 13, 14, 24, 34.
#pragma once

#include <cstdint>

namespace meshdock::mesh {

// Where TetGen's node k goes in VTK's tetra10 (the writer puts VTK's node kFromTetgen10[k] k-th).
inline constexpr std::int64_t kFromTetgen10[10] = {0, 1, 2, 3, 9, 7, 4, 5, 8, 6};

}  // namespace meshdock::mesh
