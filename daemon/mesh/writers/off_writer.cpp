// OFF writer: "OFF", the counts, a point a line, a face a line ("k i0 .. ik-1"). Faces only
// (triangle, quad, polygon blocks, fixed or ragged): any other block is a WriteError naming it.
// OFF holds no data and no sets: each is noted.
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace wr {
// Notes for everything a points-and-faces format drops (OFF; STL has its own wording).
void note_dropped(const Mesh& m, const char* format, std::vector<std::string>& notes) {
  for (const auto& [name, a] : m.point_data)
    notes.push_back("point_data '" + name + "' is not written: " + format + " holds no data");
  for (const auto& [name, a] : m.cell_data)
    notes.push_back("cell_data '" + name + "' is not written: " + format + " holds no data");
  for (const auto& [name, a] : m.field_data)
    notes.push_back("field_data '" + name + "' is not written: " + format + " holds no data");
  for (const auto& r : m.regions)
    notes.push_back("region '" + r.name + "' is not written: " + format + " holds no sets");
}
}  // namespace wr

std::vector<std::string> write_off(const Mesh& m, const OutTarget& target) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b)
    if (!wr::is_face_block(m.cells[b]))
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to OFF, which holds polygonal faces only; write it "
                       "as VTU or MSH");
  std::vector<std::string> notes;
  wr::note_dropped(m, "OFF", notes);
  if (m.points.dim(1) != 3)
    notes.push_back("points have " + std::to_string(m.points.dim(1)) +
                    " coordinates; OFF stores 3, so the rest are written as 0");
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
