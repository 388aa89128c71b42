// validate_mesh: the invariants every consumer of a Mesh relies on (writers, the payload
// builder), checked once, with a message that names the block, array or value at fault.
#pragma once

#include <string>

#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh {

enum class Checks {
  kShapes,  // dtypes, shapes, counts: O(number of arrays), what building a payload can afford
  kFull,    // also every index and offset value: O(size), what a writer checks before writing
};

// Throws MeshError("<context>: ...") unless: points are (n, 1..3) floats; every fixed block is
// (n, k) int64 and every ragged block has 1-D int64 CSR arrays; point_data arrays have
// n_points rows; each cell_data entry has one array per block with that block's rows; region
// entries are int64 (Side: (n, 2) cell, facet pairs). With kFull also: CSR offsets start at 0,
// never decrease and end where the next level does; every point id, cell number and region
// entry is in range.
void validate_mesh(const Mesh& m, const std::string& context, Checks checks = Checks::kFull);

}  // namespace meshdock::mesh
