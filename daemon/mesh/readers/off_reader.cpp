// OFF (Object File Format): "OFF", counts "V F E", V vertex lines, F faces "n i0 .. in-1".
// '#' starts a comment to the end of its line anywhere (after "OFF", the counts, a coordinate,
// a face), as in Geomview's reader; meshio refuses such files. A face's optional colour
// values and anything after the last face are not read, and noted (with the line).
#include <string>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

// Skips whitespace and '#' comments.
void skip_ws_comments(Cursor& c) {
  while (true) {
    c.skip_ws();
    if (c.at_end() || c.data()[c.offset()] != '#') return;
    c.next_line();
  }
}

// The text of `line` before any '#', trimmed.
std::string_view strip_comment(std::string_view line) {
  return Cursor::trim(line.substr(0, line.find('#')));
}

// The next number; a comment may follow it with no blank between ("1.5#x").
template <typename T>
T off_number(Cursor& c, const char* what) {
  skip_ws_comments(c);
  const auto at = c.offset();
  try {
    return c.number<T>(what);
  } catch (const ReadError&) {
    // The rare glued comment: parse the text before '#' (from_chars: no exception path in the
    // common case above), else report the original error.
    const auto d = c.data();
    std::size_t e = at;
    while (e < d.size() && d[e] != '#' && d[e] != ' ' && d[e] != '\t' && d[e] != '\n' &&
           d[e] != '\r')
      ++e;
    if (e == at || e >= d.size() || d[e] != '#') throw;
    const char* b = d.data() + at;
    if constexpr (std::is_floating_point_v<T>) {
      if (*b == '+') ++b;
    }
    T v{};
    const auto r = std::from_chars(b, d.data() + e, v);
    if (r.ec != std::errc() || r.ptr != d.data() + e) throw;
    c.seek(e);
    return v;
  }
}

Mesh parse_off(std::string_view file_data, const std::string& path) {
  Cursor c(file_data, path);
  if (strip_comment(c.nonempty_line()) != "OFF") c.fail("the first line is not 'OFF'");
  skip_ws_comments(c);
  if (c.at_end()) c.fail("no vertex/face counts");
  const auto nv = off_number<std::int64_t>(c, "vertex count");
  const auto nf = off_number<std::int64_t>(c, "face count");
  off_number<std::int64_t>(c, "edge count");
  if (nv < 0 || static_cast<std::size_t>(nv) > c.remaining() / 6)
    c.fail("vertex count " + std::to_string(nv) + " is more than the file holds");
  if (nf < 0 || static_cast<std::size_t>(nf) > c.remaining() / 4)
    c.fail("face count " + std::to_string(nf) + " is more than the file holds");
  Mesh m;
  m.points = Array::of<double>({nv, 3});
  double* p = m.points.as<double>();
  for (std::int64_t i = 0; i < 3 * nv; ++i) p[i] = off_number<double>(c, "vertex coordinate");
  FaceBlocks faces(/*consecutive=*/false);
  std::vector<std::int64_t> nodes;
  std::int64_t coloured = 0;
  std::size_t first_coloured = 0;  // byte offset of the first face with colour values
  for (std::int64_t f = 0; f < nf; ++f) {
    const auto n = off_number<std::int64_t>(c, "face vertex count");
    FaceBlocks::check_size(n, c);
    nodes.resize(static_cast<std::size_t>(n));
    for (auto& v : nodes) v = off_number<std::int64_t>(c, "face vertex index");
    faces.add(nodes.data(), nodes.size(), 0, c);
    const auto at = c.offset();
    if (!strip_comment(c.rest_of_line()).empty() && coloured++ == 0) first_coloured = at;
  }
  faces.finish(m, nv, c);
  if (coloured) {
    m.notes.push_back("off: " + std::to_string(coloured) + " faces have colour values (first " +
                      path + ":" + std::to_string(c.line_at(first_coloured)) + "); not read");
  }
  skip_ws_comments(c);
  if (!c.at_end()) {
    m.notes.push_back("off: " + path + ":" + std::to_string(c.line_at(c.offset())) +
                      ": text after the last of the " + std::to_string(nf) +
                      " faces the header counts; not read");
  }
  return m;
}

}  // namespace

Mesh read_off(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data) { return parse_off(data, in.path); }, Access::read);
}

}  // namespace meshdock::mesh
