// TetGen's mesh files (https://wias-berlin.de/software/tetgen/fformats.html), as meshio 5.0 reads
// them ("tetgen"): a mesh is a pair of files with one base name, read from either of them (the
// other is opened with ReadOptions::open_sibling, named by the base name and its extension only):
// - x.node: a header "<#points> <dimension 3> <#attributes> <#boundary markers>" (TetGen's
//   defaults 3, 0, 0 when the line stops early; meshio needs all 4), then a line
//   "index x y z [attributes] [markers]" a point. The first point's index is the base (0 or 1;
//   any); indices base, base+1, ... need no table, any others (meshio refuses them) are mapped
//   as labels, a duplicate being a ReadError. Attributes -> point_data "tetgen:attr1", ...,
//   markers -> "tetgen:ref", "tetgen:ref2", ... (float64, as meshio's: they share its array of
//   coordinates);
// - x.ele: a header "<#tets> <nodes a tet 4 or 10> <#region attributes>" (defaults 4, 0), then
//   "index n1 .. n4|n10 [attributes]" a tet, node indices mapped as above. 4 nodes -> "tetra",
//   10 -> "tetra10" (meshio refuses them) in VTK's (meshio's) order: the corners, then the
//   midpoints of the edges 12, 23, 13, 14, 24, 34. TetGen -o2 (1.5.0, Debian's, run on a cube:
//   tests/data/tools/make_tetgen.py) writes them for the edges 34, 14, 12, 23, 24, 13, so they
//   are reordered.
//   Region attributes -> cell_data "tetgen:ref", "tetgen:ref2", ... (int64 as meshio's when every
//   value is a whole number; float64, noted, when one is not: meshio cannot read those);
// - '#' starts a comment anywhere (TetGen's rule; meshio's only before the header), blank lines
//   and CRLF are fine, each line holds exactly its values (more: a ReadError naming the line).
// .face, .edge, .neigh and .vol files are not read (nor looked for); text after the last record
// is noted. write_tetgen writes the pair back (tetgen_order.hpp's order shared).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/id_rows.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/tetgen_order.hpp"

namespace meshdock::mesh {

namespace {

// Skips blank lines, '#' comments and the rest of a line a comment ends: the cursor at the next
// record's first value.
void skip_to_record(Cursor& c) {
  while (true) {
    c.skip_ws();
    if (c.at_end() || c.data()[c.offset()] != '#') return;
    c.next_line();
  }
}

// True when the current line has no more values (a '#' ends it too).
bool line_done(Cursor& c) {
  c.skip_blanks();
  if (c.at_end()) return true;
  const char ch = c.data()[c.offset()];
  return ch == '\n' || ch == '#';
}

// The next value of the line; missing() (called only then: no string built a value) says what
// is missing when the line has no more.
template <typename T, typename Missing>
T line_value(Cursor& c, const char* what, Missing&& missing) {
  if (line_done(c)) [[unlikely]]
    c.fail(missing());
  return c.number<T>(what);
}

// what() names the line when it holds more values than it should.
template <typename What>
void end_of_line(Cursor& c, What&& what) {
  if (!line_done(c)) [[unlikely]] {
    c.token();
    c.fail("values left over on " + what());
  }
}

// The header line: up to counts.size() non-negative counts, those it leaves out keeping their
// defaults. `form` shows the line's form in messages.
template <std::size_t N>
void read_header(Cursor& c, std::array<std::int64_t, N>& counts, const char* form) {
  skip_to_record(c);
  if (c.at_end())
    c.fail(std::string("no header '") + form + "' (the file holds no line but comments)");
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0 && line_done(c)) return;
    const auto v = c.number<std::int64_t>("a count");
    if (v < 0) c.fail(std::string("header '") + form + "': a count is negative");
    counts[i] = v;
  }
  end_of_line(c, [&] { return std::string("the header line '") + form + "'"; });
}

// Counts a line can hold: `bytes` per line times `lines` must fit in what remains.
void check_fits(Cursor& c, std::int64_t lines, std::size_t bytes, const std::string& what) {
  if (static_cast<std::size_t>(lines) > c.remaining() / bytes)
    c.fail(what + " " + std::to_string(lines) + " is more than the file holds");
}

struct Nodes {
  std::int64_t count = 0;
  Array points;
  std::vector<Array> attrs, markers;
  IdRows ids;
};

Nodes parse_node(std::string_view data, MappedFile& file, std::vector<std::string>& notes) {
  Cursor c(data, file.path(), file.progress());
  c.seek(utf8_bom(data));
  std::array<std::int64_t, 4> h{0, 3, 0, 0};
  read_header(c, h, "#points dimension #attributes #boundary_markers");
  // Not a structured binding: clang 14 lets no lambda capture one.
  const std::int64_t n = h[0], dim = h[1], na = h[2], nb = h[3];
  if (dim != 3)
    c.fail("dimension " + std::to_string(dim) + ": a TetGen mesh's .node file has 3-D points");
  // An attribute or marker is 2 bytes at least; the two checks keep the sum from overflowing.
  check_fits(c, na, 2, "attribute count");
  check_fits(c, nb, 2, "boundary marker count");
  const auto extra = static_cast<std::size_t>(na + nb);
  check_fits(c, n, 8 + 2 * extra, "point count");  // "1 0 0 0\n" at least
  Nodes out;
  out.count = n;
  out.points = Array::of<double>({n, 3});
  std::vector<double*> cols;
  for (std::int64_t k = 0; k < na; ++k) {
    out.attrs.push_back(Array::of<double>({n}));
    cols.push_back(out.attrs.back().as<double>());
  }
  for (std::int64_t k = 0; k < nb; ++k) {
    out.markers.push_back(Array::of<double>({n}));
    cols.push_back(out.markers.back().as<double>());
  }
  double* p = out.points.as<double>();
  const std::size_t width = 3 + extra;
  for (std::int64_t i = 0; i < n; ++i) {
    file.advance(c.offset());
    skip_to_record(c);
    if (c.at_end())
      c.fail("the file ends after " + std::to_string(i) + " of the " + std::to_string(n) +
             " points its header counts");
    const auto id = c.number<std::int64_t>("a point index");
    if (!out.ids.add(id, i)) c.fail("point index " + std::to_string(id) + " appears twice");
    auto missing = [&] {
      return "point " + std::to_string(id) + "'s line holds fewer than its index and " +
             std::to_string(width) + " values (x y z, " + std::to_string(na) + " attributes, " +
             std::to_string(nb) + " markers)";
    };
    for (int k = 0; k < 3; ++k) p[3 * i + k] = line_value<double>(c, "a coordinate", missing);
    for (auto* col : cols) col[i] = line_value<double>(c, "an attribute or marker", missing);
    end_of_line(c, [&] { return "point " + std::to_string(id) + "'s line"; });
  }
  file.release_before(data.size());
  skip_to_record(c);
  if (!c.at_end())
    notes.push_back("tetgen: " + file.path() + ":" + std::to_string(c.line_at(c.offset())) +
                    ": text after the points the header counts; not read");
  return out;
}

// A region attribute's values as meshio's int64 when each is a whole number, else float64.
Array attribute_array(const std::vector<double>& v, const std::string& name,
                      std::vector<std::string>& notes, const std::string& path) {
  const auto n = static_cast<std::int64_t>(v.size());
  bool whole = true;
  for (double x : v)
    if (!(x == std::floor(x) && std::fabs(x) < 9.2e18)) whole = false;
  if (!whole) {
    notes.push_back("tetgen: " + path + ": region attribute '" + name +
                    "' has values that are not whole numbers: read as float64 (meshio reads "
                    "region attributes as integers)");
    Array a = Array::of<double>({n});
    std::copy(v.begin(), v.end(), a.as<double>());
    return a;
  }
  Array a = Array::of<std::int64_t>({n});
  auto* out = a.as<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<std::int64_t>(v[i]);
  return a;
}

void parse_ele(std::string_view data, MappedFile& file, const Nodes& nodes, Mesh& m) {
  Cursor c(data, file.path(), file.progress());
  c.seek(utf8_bom(data));
  std::array<std::int64_t, 3> h{0, 4, 0};
  read_header(c, h, "#tetrahedra nodes_per_tetrahedron #attributes");
  const std::int64_t n = h[0], per = h[1], na = h[2];
  if (per != 4 && per != 10)
    c.fail("nodes per tetrahedron " + std::to_string(per) + ": TetGen's are 4 or 10");
  check_fits(c, na, 2, "region attribute count");
  // "i n1 .. nk a1 .. \n": 2 bytes a value at least.
  check_fits(c, n, 2 * static_cast<std::size_t>(1 + per + na), "tetrahedron count");
  Array conn = Array::of<std::int64_t>({n, per});
  auto* out = conn.as<std::int64_t>();
  std::vector<std::vector<double>> attrs(static_cast<std::size_t>(na),
                                         std::vector<double>(static_cast<std::size_t>(n)));
  for (std::int64_t i = 0; i < n; ++i) {
    file.advance(c.offset());
    skip_to_record(c);
    if (c.at_end())
      c.fail("the file ends after " + std::to_string(i) + " of the " + std::to_string(n) +
             " tetrahedra its header counts");
    const auto id = c.number<std::int64_t>("a tetrahedron index");
    auto missing = [&] {
      return "tetrahedron " + std::to_string(id) + "'s line holds fewer than its index, " +
             std::to_string(per) + " point indices and " + std::to_string(na) + " attributes";
    };
    for (std::int64_t k = 0; k < per; ++k) {
      const auto pid = line_value<std::int64_t>(c, "a point index", missing);
      const auto row = nodes.ids.find(pid, nodes.count);
      if (row < 0) [[unlikely]]
        c.fail("tetrahedron " + std::to_string(id) + ": point index " + std::to_string(pid) +
               " is not one of the .node file's points");
      out[i * per + (per == 10 ? kFromTetgen10[k] : k)] = row;
    }
    for (auto& a : attrs)
      a[static_cast<std::size_t>(i)] = line_value<double>(c, "an attribute", missing);
    end_of_line(c, [&] { return "tetrahedron " + std::to_string(id) + "'s line"; });
  }
  file.release_before(data.size());
  skip_to_record(c);
  if (!c.at_end())
    m.notes.push_back("tetgen: " + file.path() + ":" + std::to_string(c.line_at(c.offset())) +
                      ": text after the tetrahedra the header counts; not read");
  m.cells.push_back(CellBlock::fixed(per == 4 ? "tetra" : "tetra10", std::move(conn)));
  for (std::size_t k = 0; k < attrs.size(); ++k) {
    const std::string name = "tetgen:ref" + (k == 0 ? std::string() : std::to_string(k + 1));
    std::vector<Array> blocks;
    blocks.push_back(attribute_array(attrs[k], name, m.notes, file.path()));
    m.cell_data[name] = std::move(blocks);
  }
}

// The other file of the pair, opened through options.open_sibling by its name alone.
UniqueFd open_other(const InFile& in, const ReadOptions& options, const std::string& name,
                    const char* holds) {
  const std::string why = in.path + ": the TetGen mesh's " + holds + " are in " + name;
  if (!options.open_sibling) throw ReadError(why + ", and there is no directory to open it in");
  try {
    return options.open_sibling(name);
  } catch (const ReadError& e) {
    throw ReadError(why + ", which cannot be opened: " + e.what());
  }
}

}  // namespace

Mesh read_tetgen(const InFile& in, const ReadOptions& options) {
  const std::string ext = format_of(in.path);
  if (ext != "node" && ext != "ele")
    throw ReadError(in.path + ": a TetGen mesh is read from its .node or .ele file (the other " +
                    "one is opened beside it)");
  const bool is_node = ext == "node";
  const auto slash = in.path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : in.path.substr(0, slash + 1);
  const std::string base = in.path.substr(dir.size(), in.path.size() - dir.size() - ext.size() - 1);
  const std::string other = base + (is_node ? ".ele" : ".node");
  const UniqueFd fd = open_other(in, options, other, is_node ? "tetrahedra" : "points");
  const InFile sibling{fd.get(), dir + other};
  const InFile& node_file = is_node ? in : sibling;
  const InFile& ele_file = is_node ? sibling : in;

  Mesh m;
  Nodes nodes = parse_mapped(
      node_file,
      [&](std::string_view data, MappedFile& file) { return parse_node(data, file, m.notes); },
      Access::window);
  parse_mapped(
      ele_file,
      [&](std::string_view data, MappedFile& file) {
        parse_ele(data, file, nodes, m);
        return 0;
      },
      Access::window);
  m.points = std::move(nodes.points);
  for (std::size_t k = 0; k < nodes.attrs.size(); ++k)
    m.point_data["tetgen:attr" + std::to_string(k + 1)] = std::move(nodes.attrs[k]);
  for (std::size_t k = 0; k < nodes.markers.size(); ++k)
    m.point_data["tetgen:ref" + (k == 0 ? std::string() : std::to_string(k + 1))] =
        std::move(nodes.markers[k]);
  return m;
}

}  // namespace meshdock::mesh
