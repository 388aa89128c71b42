// STL, ascii and binary. Like meshio: binary when 84 + 50 * count equals the file size (some
// binary files start with "solid" too), vertices merged where all three coordinates are equal
// (first appearance order), facet normals kept as cell_data "facet_normals" -- for binary files
// too, where meshio drops them. An ascii file may hold several "solid NAME ... endsolid" bodies
// (CAD exports, one per part): all are read into the one triangle block, like meshio and
// vtkSTLReader, and with more than one body each becomes a cell region named after its solid
// (the facets of that body), with a note naming the merged bodies. Text after the last
// "endsolid" that is not another solid, and a missing final "endsolid", are notes.
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

struct PointKey {
  double x, y, z;
  bool operator==(const PointKey& o) const { return x == o.x && y == o.y && z == o.z; }
};
struct PointHash {
  std::size_t operator()(const PointKey& k) const {
    auto bits = [](double d) {
      std::uint64_t u;
      if (d == 0) d = 0;  // -0.0 and 0.0 are one point
      std::memcpy(&u, &d, 8);
      return u;
    };
    return bits(k.x) * 0x9E3779B97F4A7C15ull ^ (bits(k.y) + 0x632BE59BD9B4E019ull) * 31 ^
           bits(k.z) * 0xC2B2AE3D27D4EB4Full;
  }
};

Mesh build(std::span<const double> corners, std::span<const double> normals) {
  const std::size_t tris = corners.size() / 9;
  std::unordered_map<PointKey, std::int64_t, PointHash> index;
  index.reserve(corners.size() / 3);
  std::vector<double> points;
  std::vector<std::int64_t> conn(3 * tris);
  for (std::size_t i = 0; i < 3 * tris; ++i) {
    PointKey k{corners[3 * i], corners[3 * i + 1], corners[3 * i + 2]};
    auto [it, fresh] = index.emplace(k, static_cast<std::int64_t>(points.size() / 3));
    if (fresh) points.insert(points.end(), {k.x, k.y, k.z});
    conn[i] = it->second;
  }
  Mesh m;
  m.points = Array::from_vector(points, {static_cast<std::int64_t>(points.size() / 3), 3});
  if (tris) {
    m.cells.push_back(CellBlock::fixed(
        "triangle", Array::from_vector(conn, {static_cast<std::int64_t>(tris), 3})));
    auto n = Array::of<double>({static_cast<std::int64_t>(tris), 3});
    std::copy(normals.begin(), normals.end(), n.as<double>());
    m.cell_data["facet_normals"].push_back(std::move(n));
  }
  return m;
}

// One cell region per solid name (facet numbers), and a note naming the merged bodies.
template <typename Bodies>
void add_bodies(Mesh& m, const Bodies& bodies, std::size_t num_facets) {
  std::vector<std::string> names;  // first appearance order
  std::vector<std::vector<std::int64_t>> facets;
  for (std::size_t b = 0; b < bodies.size(); ++b) {
    const auto end = b + 1 < bodies.size() ? bodies[b + 1].first_facet : num_facets;
    const auto at = std::find(names.begin(), names.end(), bodies[b].name) - names.begin();
    if (static_cast<std::size_t>(at) == names.size()) {
      names.push_back(bodies[b].name);
      facets.emplace_back();
    }
    for (auto f = bodies[b].first_facet; f < end; ++f)
      facets[at].push_back(static_cast<std::int64_t>(f));
  }
  std::string list;
  constexpr std::size_t kListed = 20;  // a note, not a dump
  for (std::size_t b = 0; b < std::min(bodies.size(), kListed); ++b) {
    const auto end = b + 1 < bodies.size() ? bodies[b + 1].first_facet : num_facets;
    list += (b ? ", '" : "'") + bodies[b].name + "' (" +
            std::to_string(end - bodies[b].first_facet) + ")";
  }
  if (bodies.size() > kListed) list += ", ...";
  m.notes.push_back("stl: " + std::to_string(bodies.size()) +
                    " solids merged into one triangle block, one region each: " + list);
  for (std::size_t r = 0; r < names.size(); ++r) {
    Region reg;
    reg.name = names[r];
    reg.kind = RegionKind::kCell;
    reg.dim = 2;
    reg.tag = static_cast<std::int64_t>(r) + 1;  // Gmsh physical tags are positive
    reg.entries = Array::from_vector(facets[r]);
    m.regions.push_back(std::move(reg));
  }
}

}  // namespace

namespace {

Mesh parse_stl(std::string_view file_data, const std::string& path, ReadProgress* progress) {
  Cursor c(file_data, path, progress);
  const auto data = file_data;
  ScratchVector<double> corners, normals;
  if (data.size() >= 84) {
    std::uint32_t count;
    std::memcpy(&count, data.data() + 80, 4);
    if (84 + 50ull * count == data.size()) {
      corners.resize(9ull * count);
      normals.resize(3ull * count);
      const char* p = data.data() + 84;
      for (std::uint32_t t = 0; t < count; ++t, p += 50) {
        if (progress && t % 16384 == 0) progress->reached(84 + 50ull * t, path);  // ~800 KB
        float f[12];
        std::memcpy(f, p, 48);
        for (int k = 0; k < 3; ++k) normals[3 * t + k] = f[k];
        for (int k = 0; k < 9; ++k) corners[9ull * t + k] = f[3 + k];
      }
      if (progress) progress->reached(data.size(), path);
      return build(corners, normals);
    }
  }
  const auto first = c.token();
  if (first != "solid")
    c.fail("neither a binary STL (size does not match its triangle count) nor ascii (no 'solid')");
  // One entry per body: its name and its first facet; bodies with the same name share a region.
  struct Body {
    std::string name;
    std::size_t first_facet;
  };
  std::vector<Body> bodies;
  auto start_body = [&] {
    auto name = std::string(Cursor::trim(c.rest_of_line()));
    if (name.empty()) name = "solid" + std::to_string(bodies.size());
    bodies.push_back({std::move(name), normals.size() / 3});
  };
  start_body();
  // No growing (reallocation and its page faults were 3/4 of the read): a facet takes at least
  // 85 bytes of text ("facet normal 0 0 0 outer loop", three "vertex 0 0 0", "endloop
  // endfacet", single spaces), so this bounds the count (were it exceeded, push_back still
  // grows). Pages of the reserve that no facet reaches are never touched: no memory.
  const std::size_t max_facets = data.size() / 85 + 1;
  corners.reserve(9 * max_facets);
  normals.reserve(3 * max_facets);
  bool ended = false;
  std::string trailing;
  while (true) {
    const auto word = c.token();
    if (word.empty()) break;
    if (word == "endsolid") {
      c.next_line();  // its (optional) name
      const auto next = c.token();
      if (next.empty()) {
        ended = true;
        break;
      }
      if (next != "solid") {
        // The facets are all read: say what follows rather than refuse the file (some
        // exporters pad with NULs or append their own text).
        trailing = "stl: " + path + ":" + std::to_string(c.line()) +
                   ": text after the last 'endsolid' not read ('" +
                   std::string(next.substr(0, 40)) + "')";
        ended = true;
        break;
      }
      start_body();
      continue;
    }
    if (word != "facet")
      c.fail("expected 'facet' or 'endsolid', found '" + std::string(word) + "'");
    if (c.token() != "normal") c.fail("expected 'normal' after 'facet'");
    for (int k = 0; k < 3; ++k) normals.push_back(c.number<double>("normal component"));
    if (c.token() != "outer" || c.token() != "loop") c.fail("expected 'outer loop'");
    for (int v = 0; v < 3; ++v) {
      if (c.token() != "vertex") c.fail("expected 'vertex' (only triangles are valid STL)");
      for (int k = 0; k < 3; ++k) corners.push_back(c.number<double>("vertex coordinate"));
    }
    if (c.token() != "endloop") c.fail("expected 'endloop'");
    if (c.token() != "endfacet") c.fail("expected 'endfacet'");
  }
  Mesh m = build(corners, normals);
  if (!ended) m.notes.push_back("stl: no 'endsolid' at the end of the file (truncated?)");
  if (!trailing.empty()) m.notes.push_back(trailing);
  if (bodies.size() > 1) add_bodies(m, bodies, normals.size() / 3);
  return m;
}

}  // namespace

Mesh read_stl(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data) { return parse_stl(data, in.path, in.progress); }, Access::read);
}

}  // namespace meshdock::mesh
