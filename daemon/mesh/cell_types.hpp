// Cell type facts shared by readers and writers: meshio names, nodes per cell, topological
// dimension, and the Gmsh element-type numbers with Gmsh's node order -> meshio's (VTK's).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace meshdock::mesh {

struct GmshType {
  int number;
  const char* name;
  int nodes;
  int dim;
};

// nullopt for a Gmsh element type this build does not know.
std::optional<GmshType> gmsh_type(int number);
std::optional<GmshType> gmsh_type_by_name(std::string_view name);

// Permutation from Gmsh node order to VTK's (empty when identical): out[j] = in[p[j]]. meshio's,
// but for wedge18, which meshio 5.0 leaves in Gmsh's order; a type with no fixed VTK cell
// (pyramid14, third order and above) stays in Gmsh's order.
std::span<const int> gmsh_to_meshio_order(std::string_view type);

// Topological dimension of a meshio cell type name (vertex 0, line* and VTK_*_CURVE 1,
// triangle* / quad* / polygon / VTK_*_TRIANGLE / VTK_*_QUADRILATERAL 2, others 3).
int cell_dim(std::string_view type);

}  // namespace meshdock::mesh
