// validate_mesh: the invariants every consumer of a Mesh relies on (writers, the payload
// builder), checked once, with a message that names the block, array or value at fault.
#pragma once

#include <string>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh {

// Throws MeshError("<context>: ...") unless: points are (n, 1..3) floats; every fixed block is
// (n, k) int64 and every ragged block has int64 CSR arrays that are monotone and end where
// the next level does; every point id is in [0, n_points); point_data arrays have n_points
// rows; each cell_data entry has one array per block with that block's rows; region entries
// are int64 and in range for their kind (Side: (n, 2) cell, facet pairs).
void validate_mesh(const Mesh& m, const std::string& context);

}  // namespace meshdock::mesh
