#include "daemon/mesh/cell_types.hpp"

#include <array>

namespace meshdock::mesh {

namespace {

// Gmsh's element numbers (gmsh.info, "MSH file format"; GmshDefines.h): every type meshio 5 reads,
// to order 10 for lines, triangles, quads and tetrahedra, 9 for hexahedra and prisms; the node
// count is in the name.
constexpr std::array<GmshType, 65> kGmsh = {{
    {1, "line", 2, 1},
    {2, "triangle", 3, 2},
    {3, "quad", 4, 2},
    {4, "tetra", 4, 3},
    {5, "hexahedron", 8, 3},
    {6, "wedge", 6, 3},
    {7, "pyramid", 5, 3},
    {8, "line3", 3, 1},
    {9, "triangle6", 6, 2},
    {10, "quad9", 9, 2},
    {11, "tetra10", 10, 3},
    {12, "hexahedron27", 27, 3},
    {13, "wedge18", 18, 3},
    {14, "pyramid14", 14, 3},
    {15, "vertex", 1, 0},
    {16, "quad8", 8, 2},
    {17, "hexahedron20", 20, 3},
    {18, "wedge15", 15, 3},
    {19, "pyramid13", 13, 3},
    {21, "triangle10", 10, 2},
    {23, "triangle15", 15, 2},
    {25, "triangle21", 21, 2},
    {26, "line4", 4, 1},
    {27, "line5", 5, 1},
    {28, "line6", 6, 1},
    {29, "tetra20", 20, 3},
    {30, "tetra35", 35, 3},
    {31, "tetra56", 56, 3},
    {36, "quad16", 16, 2},
    {37, "quad25", 25, 2},
    {38, "quad36", 36, 2},
    {42, "triangle28", 28, 2},
    {43, "triangle36", 36, 2},
    {44, "triangle45", 45, 2},
    {45, "triangle55", 55, 2},
    {46, "triangle66", 66, 2},
    {47, "quad49", 49, 2},
    {48, "quad64", 64, 2},
    {49, "quad81", 81, 2},
    {50, "quad100", 100, 2},
    {51, "quad121", 121, 2},
    {62, "line7", 7, 1},
    {63, "line8", 8, 1},
    {64, "line9", 9, 1},
    {65, "line10", 10, 1},
    {66, "line11", 11, 1},
    {71, "tetra84", 84, 3},
    {72, "tetra120", 120, 3},
    {73, "tetra165", 165, 3},
    {74, "tetra220", 220, 3},
    {75, "tetra286", 286, 3},
    {90, "wedge40", 40, 3},
    {91, "wedge75", 75, 3},
    {92, "hexahedron64", 64, 3},
    {93, "hexahedron125", 125, 3},
    {94, "hexahedron216", 216, 3},
    {95, "hexahedron343", 343, 3},
    {96, "hexahedron512", 512, 3},
    {97, "hexahedron729", 729, 3},
    {98, "hexahedron1000", 1000, 3},
    {106, "wedge126", 126, 3},
    {107, "wedge196", 196, 3},
    {108, "wedge288", 288, 3},
    {109, "wedge405", 405, 3},
    {110, "wedge550", 550, 3},
}};

// Where Gmsh's node order differs from VTK's (and so meshio's): the permutations meshio applies,
// and the one for wedge18 that it misses. Types VTK has no fixed cell for (pyramid14, the third
// and higher orders) stay in Gmsh's order, as meshio keeps them.
constexpr int kTetra10[] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8};
constexpr int kHex20[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 9, 16, 18, 19, 17, 10, 12, 14, 15};
constexpr int kHex27[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  11, 13, 9,  16, 18,
                          19, 17, 10, 12, 14, 15, 22, 23, 21, 24, 20, 25, 26};
constexpr int kWedge15[] = {0, 1, 2, 3, 4, 5, 6, 9, 7, 12, 14, 13, 8, 10, 11};
constexpr int kPyramid13[] = {0, 1, 2, 3, 4, 5, 8, 10, 6, 7, 9, 11, 12};
// VTK's 18-node wedge (VTK_BIQUADRATIC_QUADRATIC_WEDGE) is wedge15 plus the quad-face nodes
// (0,1,4,3), (1,2,5,4), (2,0,3,5); Gmsh lists those faces as (0,1,4,3), (0,2,5,3), (1,2,5,4).
// meshio 5.0 applies no permutation here (its wedge18 is Gmsh's order under VTK's name): this
// one follows VTK, as gmsh's own .vtk export does.
constexpr int kWedge18[] = {0, 1, 2, 3, 4, 5, 6, 9, 7, 12, 14, 13, 8, 10, 11, 15, 17, 16};

}  // namespace

std::optional<GmshType> gmsh_type(int number) {
  for (const auto& t : kGmsh) {
    if (t.number == number) return t;
  }
  return std::nullopt;
}

std::optional<GmshType> gmsh_type_by_name(std::string_view name) {
  for (const auto& t : kGmsh) {
    if (name == t.name) return t;
  }
  return std::nullopt;
}

std::span<const int> gmsh_to_meshio_order(std::string_view type) {
  if (type == "tetra10") return kTetra10;
  if (type == "hexahedron20") return kHex20;
  if (type == "hexahedron27") return kHex27;
  if (type == "wedge15") return kWedge15;
  if (type == "pyramid13") return kPyramid13;
  if (type == "wedge18") return kWedge18;
  return {};
}

int cell_dim(std::string_view type) {
  if (type == "vertex") return 0;
  if (type.starts_with("line") || type.ends_with("_CURVE")) return 1;
  if (type.starts_with("triangle") || type.starts_with("quad") || type == "polygon" ||
      type.ends_with("_TRIANGLE") || type.ends_with("_QUADRILATERAL"))
    return 2;
  return 3;
}

}  // namespace meshdock::mesh
