// Netgen's element types as meshio 5 names and orders them: shared by read_netgen (Netgen ->
// VTK order) and write_netgen (the inverse), so the two orders cannot drift apart.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace meshdock::mesh::netgen {

// meshio's netgen_to_meshio_pmap: VTK's node k is Netgen's node to_vtk[k].
struct Type {
  const char* meshio;
  int dim;
  std::size_t nodes;
  std::array<std::uint8_t, 20> to_vtk;
};

inline constexpr std::array<Type, 14> kTypes{{
    {"vertex", 0, 1, {0}},
    {"line", 1, 2, {0, 1}},
    {"triangle", 2, 3, {0, 1, 2}},
    {"triangle6", 2, 6, {0, 1, 2, 5, 3, 4}},
    {"quad", 2, 4, {0, 1, 2, 3}},
    {"quad8", 2, 8, {0, 1, 2, 3, 4, 7, 5, 6}},
    {"tetra", 3, 4, {0, 2, 1, 3}},
    {"tetra10", 3, 10, {0, 2, 1, 3, 5, 7, 4, 6, 9, 8}},
    {"pyramid", 3, 5, {0, 3, 2, 1, 4}},
    {"pyramid13", 3, 13, {0, 3, 2, 1, 4, 7, 6, 8, 5, 9, 12, 11, 10}},
    {"wedge", 3, 6, {0, 2, 1, 3, 5, 4}},
    {"wedge15", 3, 15, {0, 2, 1, 3, 5, 4, 7, 8, 6, 13, 14, 12, 9, 11, 10}},
    {"hexahedron", 3, 8, {0, 3, 2, 1, 4, 7, 6, 5}},
    {"hexahedron20", 3, 20, {0, 3, 2, 1, 4, 7, 6, 5, 10, 9, 11, 8, 16, 19, 18, 17, 14, 13, 15, 12}},
}};

// The writer's order (meshio's meshio_to_netgen_pmap): Netgen's node k is VTK's node
// from_vtk(t)[k], to_vtk's inverse.
constexpr std::array<std::uint8_t, 20> from_vtk(const Type& t) {
  std::array<std::uint8_t, 20> w{};
  for (std::size_t k = 0; k < t.nodes; ++k) w[t.to_vtk[k]] = static_cast<std::uint8_t>(k);
  return w;
}
static_assert(from_vtk(kTypes[7])[4] == 6 && from_vtk(kTypes[7])[6] == 7,
              "tetra10: meshio's meshio_to_netgen_pmap");

}  // namespace meshdock::mesh::netgen
