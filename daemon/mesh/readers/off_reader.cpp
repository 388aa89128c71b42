// OFF (Object File Format): "OFF", counts "V F E", V vertex lines, F faces "n i0 .. in-1".
#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

Mesh parse_off(std::string_view file_data, const std::string& path) {
  Cursor c(file_data, path);
  if (c.nonempty_line() != "OFF") c.fail("the first line is not 'OFF'");
  // Skip comments up to the counts line.
  while (true) {
    c.skip_ws();
    if (c.at_end()) c.fail("no vertex/face counts");
    if (c.data()[c.offset()] != '#') break;
    c.next_line();
  }
  const auto nv = c.number<std::int64_t>("vertex count");
  const auto nf = c.number<std::int64_t>("face count");
  c.number<std::int64_t>("edge count");
  if (nv < 0 || static_cast<std::size_t>(nv) > c.remaining() / 6)
    c.fail("vertex count " + std::to_string(nv) + " is more than the file holds");
  if (nf < 0 || static_cast<std::size_t>(nf) > c.remaining() / 4)
    c.fail("face count " + std::to_string(nf) + " is more than the file holds");
  Mesh m;
  m.points = Array::of<double>({nv, 3});
  double* p = m.points.as<double>();
  for (std::int64_t i = 0; i < 3 * nv; ++i) p[i] = c.number<double>("vertex coordinate");
  FaceBlocks faces(/*consecutive=*/false);
  std::vector<std::int64_t> nodes;
  for (std::int64_t f = 0; f < nf; ++f) {
    const auto n = c.number<std::int64_t>("face vertex count");
    FaceBlocks::check_size(n, c);
    nodes.resize(static_cast<std::size_t>(n));
    for (auto& v : nodes) v = c.number<std::int64_t>("face vertex index");
    faces.add(nodes.data(), nodes.size(), 0, c);
    c.rest_of_line();  // optional colour
  }
  faces.finish(m, nv, c);
  return m;
}

}  // namespace

Mesh read_off(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data) { return parse_off(data, in.path); }, Access::read);
}

}  // namespace meshdock::mesh
