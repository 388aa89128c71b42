// OFF writer: "OFF", the counts, a point a line, a face a line ("k i0 .. ik-1"). Faces only
// (triangle, quad, polygon blocks, fixed or ragged): any other block is a WriteError naming it.
// OFF holds no data and no sets: each is noted.
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

std::vector<std::string> write_off(const Mesh& m, const OutTarget& target) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b)
    if (!wr::is_face_block(m.cells[b]))
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to OFF, which holds polygonal faces only; write it "
                       "as " +
                       wr::formats_for(m.cells[b]));
  std::vector<std::string> notes;
  wr::note_dropped(m, "OFF", notes);
  wr::note_point_dims(m, "OFF", notes);
  OutFile out(target);
  wr::Sink s(out);
  s.put("OFF\n" + std::to_string(m.num_points()) + " " + std::to_string(m.num_cells()) + " 0\n");
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    for (int k = 0; k < 3; ++k) {
      s.text(wr::coord(m, i, k));
      s.put(k == 2 ? '\n' : ' ');
    }
    s.maybe_flush();
  }
  for (const auto& b : m.cells) {
    wr::each_cell(b, [&](const std::int64_t* c, std::size_t n) {
      s.text(n);
      for (std::size_t k = 0; k < n; ++k) {
        s.put(' ');
        s.text(c[k]);
      }
      s.put('\n');
      s.maybe_flush();
    });
  }
  s.flush();
  out.commit();
  return notes;
}

}  // namespace meshdock::mesh
