// Neuroglancer legacy precomputed mesh writer (format "neuroglancer"; the file has no
// extension): what meshio's writer writes, uint32 vertex count, float32 (n, 3) vertices, uint32
// triangles, little-endian. The triangle blocks are written (meshio's writer writes them too,
// but skips every other block with a warning); any other block is a WriteError naming it, as
// STL's writer. float32 vertices: a note says so when that rounds a coordinate; 2-D points get
// z = 0 (noted; meshio's writer would write 8-byte rows that no reader reads back). Data and
// regions are noted.
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

std::vector<std::string> write_neuroglancer(const Mesh& m, const OutTarget& target) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    const auto& blk = m.cells[b];
    if (blk.type != "triangle" || blk.ragged() || blk.connectivity.dim(1) != 3)
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to a Neuroglancer precomputed mesh, which holds "
                       "triangles only; write it as " +
                       wr::formats_for(blk));
  }
  if (m.points.dim(1) > 3)
    throw WriteError(target.path + ": points have " + std::to_string(m.points.dim(1)) +
                     " coordinates; a Neuroglancer vertex has 3");
  if (static_cast<std::uint64_t>(m.num_points()) > 0xffffffffu)
    throw WriteError(target.path + ": " + std::to_string(m.num_points()) +
                     " points, more than the 32-bit vertex count of a Neuroglancer mesh holds");
  std::vector<std::string> notes;
  wr::note_point_dims(m, "Neuroglancer", notes);
  wr::note_dropped(m, "Neuroglancer", notes);
  OutFile out(target);
  wr::Sink s(out);
  s.le(static_cast<std::uint32_t>(m.num_points()));
  bool rounded = false;
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    for (int k = 0; k < 3; ++k) rounded |= wr::le_f32(s, wr::coord(m, i, k));
    s.maybe_flush();
  }
  for (const auto& b : m.cells) {
    const auto* c = b.connectivity.as<std::int64_t>();
    const auto n = static_cast<std::size_t>(b.size()) * 3;
    s.run<std::uint32_t>(n, [&](std::uint32_t* o, std::size_t first, std::size_t count) {
      for (std::size_t i = 0; i < count; ++i) o[i] = static_cast<std::uint32_t>(c[first + i]);
    });
  }
  if (rounded)
    notes.push_back("a Neuroglancer mesh stores float32 vertices: some coordinates were rounded");
  s.flush();
  out.commit();
  return notes;
}

}  // namespace meshdock::mesh
