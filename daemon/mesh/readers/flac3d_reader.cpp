// FLAC3D grid files (.f3grid; Itasca's FLAC3D, Griddle, Kubrix), read as meshio 5.0 reads them
// ("flac3d"). The encoding is told by content as meshio tells it: a NUL byte among the first 8
// bytes means binary.
// - ascii: a line a record, "*" lines are comments:
//     G id x y z                 a grid point (ids are labels, any order; readers/id_rows.hpp)
//     Z type id n1 n2 ...        a zone: 4 nodes T4, 5 P5, 6 W6, 8 B8 (7 with type B7: the last
//                                node doubled, a degenerate brick, as meshio)
//     F type id n1 n2 ...        a face: 3 nodes T3, 4 Q4
//     ZGROUP "name" SLOT k       a zone group: the zone ids on the lines after it, up to a blank
//     FGROUP "name" SLOT k       line, a comment, another group or a record line
//   The type is told by the node count, as meshio tells it (the type word is not checked, but
//   for B7). A node must be a G line before its zone (meshio's rule). Other lines are skipped
//   and noted (meshio skips them silently).
// - binary (little-endian): 8 header bytes (meshio writes 1375135718, 3; not checked); u32
//   points, each u32 id + 3 float64; then zones then faces, each: u32 count, each cell u32 id,
//   u32 nodes n, n u32 node ids (7 nodes: B7, the last doubled); u32 groups, each u16 length +
//   name, u16 length + slot, u32 count + count u32 cell ids.
// -> points (n, 3) float64; blocks: the faces then the zones (meshio's order), one block a run
//   of consecutive cells of one type, nodes in VTK's (meshio's) order: FLAC3D's pyramid,
//   wedge and brick orders are permuted by kFromFlac below (meshio's flac3d_to_meshio_order,
//   exactly); cell_data "cell_ids" (int64): the faces'
//   ids, then the zones' ids + the face count (meshio's numbers, offset and all); one cell
//   Region a group named "zone:<name>:<slot>" / "face:<name>:<slot>" (meshio's cell_sets keys),
//   entries global cell numbers (meshio's cell_sets hold those global numbers in each block's
//   list; meshdock's cell_sets give them block-local).
// Departures from meshio, each an error where meshio crashed or mis-read: a grid point id given
// twice (meshio: the later wins), a zone id given twice, a group id no zone has (meshio: -1), a
// group named twice (meshio: the later wins; here too, noted), an empty group (meshio fails).
// Counts are checked against the bytes left before anything is allocated; errors name the file
// and the line (ascii) or byte (binary) and what was expected.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/id_rows.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

enum Kind { kZone, kFace };
constexpr const char* kKindName[2] = {"zone", "face"};

// meshio's types by node count: zones 4 5 6 8, faces 3 4 (-1: none).
int type_index(Kind k, std::size_t nodes) {
  if (k == kFace) return nodes == 3 ? 0 : nodes == 4 ? 1 : -1;
  switch (nodes) {
    case 4:
      return 2;
    case 5:
      return 3;
    case 6:
      return 4;
    case 8:
      return 5;
  }
  return -1;
}
constexpr const char* kType[6] = {"triangle", "quad", "tetra", "pyramid", "wedge", "hexahedron"};
constexpr int kNodes[6] = {3, 4, 4, 5, 6, 8};
// VTK's node j is FLAC3D's node kFromFlac[t][j] (meshio's flac3d_to_meshio_order).
constexpr int kFromFlac[6][8] = {{0, 1, 2},       {0, 1, 2, 3},       {0, 1, 2, 3},
                                 {0, 1, 4, 2, 3}, {0, 1, 3, 2, 4, 5}, {0, 1, 4, 2, 3, 6, 7, 5}};

// A run of consecutive cells of one type: one block.
struct Run {
  int type;
  std::vector<std::int64_t> conn;  // already in VTK's order, 0-based
};

struct Group {
  Kind kind;
  std::string name, slot;
  std::vector<std::int64_t> ids;
  std::string where;  // "line 12" / "byte 300", for messages
};

// What the records read so far built.
struct Parts {
  std::vector<double> xyz;
  IdRows point_ids;
  std::int64_t points = 0;
  std::vector<Run> runs[2];
  std::vector<std::int64_t> cell_ids[2];
  IdRows cell_rows[2];
  std::vector<Group> groups;
  std::vector<std::string> notes;

  // Node label -> row; -1 when no grid point (so far) has it.
  std::int64_t node(std::int64_t id) const { return point_ids.find(id, points); }

  // Adds a cell whose `n` nodes (rows, FLAC3D's order) are in `rows`; false when its id repeats.
  bool add_cell(Kind k, int t, std::int64_t id, const std::int64_t* rows) {
    auto& rs = runs[k];
    if (rs.empty() || rs.back().type != t) rs.push_back({t, {}});
    auto& conn = rs.back().conn;
    for (int j = 0; j < kNodes[t]; ++j) conn.push_back(rows[kFromFlac[t][j]]);
    const auto row = static_cast<std::int64_t>(cell_ids[k].size());
    cell_ids[k].push_back(id);
    return cell_rows[k].add(id, row);
  }

  Mesh finish(const std::string& path) {
    Mesh m;
    m.points = Array::of<double>({points, 3});
    if (points > 0) std::memcpy(m.points.data(), xyz.data(), xyz.size() * sizeof(double));
    const auto faces = static_cast<std::int64_t>(cell_ids[kFace].size());
    std::vector<Array> ids;
    for (Kind k : {kFace, kZone}) {
      std::size_t at = 0;
      for (auto& r : runs[k]) {
        const auto n = static_cast<std::int64_t>(r.conn.size()) / kNodes[r.type];
        Array conn = Array::of<std::int64_t>({n, kNodes[r.type]});
        std::memcpy(conn.data(), r.conn.data(), r.conn.size() * sizeof(std::int64_t));
        std::vector<std::int64_t>().swap(r.conn);
        m.cells.push_back(CellBlock::fixed(kType[r.type], std::move(conn)));
        Array a = Array::of<std::int64_t>({n});
        auto* p = a.as<std::int64_t>();
        for (std::int64_t i = 0; i < n; ++i)
          p[i] = cell_ids[k][at + static_cast<std::size_t>(i)] + (k == kZone ? faces : 0);
        at += static_cast<std::size_t>(n);
        ids.push_back(std::move(a));
      }
    }
    if (!m.cells.empty()) m.cell_data["cell_ids"] = std::move(ids);
    for (auto& g : groups) add_region(m, g, faces, path);
    m.notes = std::move(notes);
    return m;
  }

  void add_region(Mesh& m, const Group& g, std::int64_t faces, const std::string& path) {
    Region r;
    r.name = std::string(kKindName[g.kind]) + ":" + g.name + ":" + g.slot;
    r.kind = RegionKind::kCell;
    r.dim = g.kind == kZone ? 3 : 2;
    const auto count = static_cast<std::int64_t>(cell_ids[g.kind].size());
    r.entries = Array::of<std::int64_t>({static_cast<std::int64_t>(g.ids.size())});
    auto* e = r.entries.as<std::int64_t>();
    for (std::size_t i = 0; i < g.ids.size(); ++i) {
      const auto row = cell_rows[g.kind].find(g.ids[i], count);
      if (row < 0)
        throw ReadError(path + ": " + g.where + ": group '" + g.name + "' names " +
                        kKindName[g.kind] + " " + std::to_string(g.ids[i]) + ", which no " +
                        kKindName[g.kind] + " record has");
      e[i] = row + (g.kind == kZone ? faces : 0);
    }
    for (auto& old : m.regions)
      if (old.name == r.name) {
        m.notes.push_back("flac3d: " + path + ": " + g.where + ": group '" + r.name +
                          "' is given again; the later one is kept (as meshio keeps it)");
        old = std::move(r);
        return;
      }
    r.tag = static_cast<std::int64_t>(m.regions.size()) + 1;
    m.regions.push_back(std::move(r));
  }
};

constexpr std::size_t kRunBytes = std::size_t{1} << 20;

// Lets the pages behind the cursor go every 1 MiB (the arrays built from them stay).
void keep_up(Cursor& c, MappedFile& file, std::size_t& next) {
  if (c.offset() < next) return;
  file.release_before(c.offset());
  file.populate(c.offset(), std::min(c.data().size(), c.offset() + kRunBytes));
  next = c.offset() + kRunBytes;
}

// ---- ascii ----------------------------------------------------------------------------------

// True when the current line holds no more values.
bool line_done(Cursor& c) {
  c.skip_blanks();
  return c.at_end() || c.data()[c.offset()] == '\n';
}

void read_point(Cursor& c, Parts& p) {
  if (line_done(c)) c.fail("expected 'G id x y z'");
  const auto id = c.number<std::int64_t>("a grid point id (an integer)");
  for (int k = 0; k < 3; ++k) {
    if (line_done(c)) c.fail("grid point " + std::to_string(id) + ": expected x y z");
    p.xyz.push_back(c.number<double>("a coordinate (a real)"));
  }
  if (!line_done(c))
    c.fail("grid point " + std::to_string(id) + ": values after x y z ('G id x y z')");
  if (!p.point_ids.add(id, p.points))
    c.fail("grid point " + std::to_string(id) + " is given twice");
  ++p.points;
}

void read_cell(Cursor& c, Parts& p, Kind k) {
  const auto type = line_done(c) ? std::string_view() : c.token();
  if (type.empty() || line_done(c))
    c.fail(std::string("expected '") + (k == kZone ? "Z" : "F") + " type id nodes...'");
  const auto id = c.number<std::int64_t>(k == kZone ? "a zone id (an integer)" : "a face id");
  std::int64_t rows[8];
  std::size_t n = 0;
  while (!line_done(c)) {
    if (n == 8)
      c.fail(std::string(kKindName[k]) + " " + std::to_string(id) + ": more than 8 nodes");
    const auto node = c.number<std::int64_t>("a grid point id (an integer)");
    const auto row = p.node(node);
    if (row < 0)
      c.fail(std::string(kKindName[k]) + " " + std::to_string(id) + " refers to grid point " +
             std::to_string(node) + ", which no G line before it defines");
    rows[n++] = row;
  }
  if (k == kZone && type == "B7" && n == 7) rows[n++] = rows[6];
  const int t = type_index(k, n);
  if (t < 0)
    c.fail(std::string(kKindName[k]) + " " + std::to_string(id) + " has " + std::to_string(n) +
           (k == kZone ? " nodes; a zone has 4 (T4), 5 (P5), 6 (W6), 7 (B7) or 8 (B8)"
                       : " nodes; a face has 3 (T3) or 4 (Q4)"));
  if (!p.add_cell(k, t, id, rows))
    c.fail(std::string(kKindName[k]) + " id " + std::to_string(id) + " is given twice");
}

// ZGROUP "name" SLOT k (either quote), then its ids on the lines after it.
void read_group(Cursor& c, Parts& p, Kind k, std::string_view keyword) {
  const auto line_no = c.line();
  auto rest = Cursor::trim(c.rest_of_line());
  auto bad = [&] {
    throw ReadError(c.file() + ":" + std::to_string(line_no) + ": expected '" +
                    std::string(keyword) + " \"name\" SLOT k', found '" + std::string(keyword) +
                    " " + std::string(rest.substr(0, 60)) + "'");
  };
  if (rest.empty() || (rest[0] != '"' && rest[0] != '\'')) bad();
  const auto close = rest.find_first_of("\"'", 1);
  if (close == std::string_view::npos) bad();
  Group g{k, std::string(rest.substr(1, close - 1)), {}, {}, "line " + std::to_string(line_no)};
  auto after = Cursor::trim(rest.substr(close + 1));
  if (after.substr(0, 4) != "SLOT") bad();
  g.slot = std::string(Cursor::trim(after.substr(4)));
  // The ids: every following line that starts with a digit or a sign (meshio stops at a blank
  // line, a comment or another group; a record line would make it fail).
  while (!c.at_end()) {
    c.skip_blanks();
    if (c.at_end()) break;
    const char ch = c.data()[c.offset()];
    if (!(ch >= '0' && ch <= '9') && ch != '-' && ch != '+') break;
    // The line's values: a line holds 2 bytes a value at least.
    while (!line_done(c)) g.ids.push_back(c.number<std::int64_t>("a group's cell id (an integer)"));
    if (!c.at_end()) c.next_line();
  }
  p.groups.push_back(std::move(g));
}

Mesh parse_ascii(std::string_view data, MappedFile& file) {
  Cursor c(data, file.path(), file.progress());
  Parts p;
  std::size_t unknown = 0, first_unknown = 0, next = 0;
  while (true) {
    c.skip_ws();
    if (c.at_end()) break;
    keep_up(c, file, next);
    const char ch = c.data()[c.offset()];
    if (ch == '*') {
      c.next_line();
      continue;
    }
    const auto word = c.token();
    if (word == "G") {
      read_point(c, p);
    } else if (word == "Z") {
      read_cell(c, p, kZone);
    } else if (word == "F") {
      read_cell(c, p, kFace);
    } else if (word == "ZGROUP" || word == "FGROUP") {
      read_group(c, p, word[0] == 'Z' ? kZone : kFace, word);
      continue;
    } else {
      if (unknown++ == 0) first_unknown = c.line();
      c.next_line();
      continue;
    }
    if (!c.at_end()) c.next_line();
  }
  if (unknown > 0)
    p.notes.push_back("flac3d: " + file.path() + ": " + std::to_string(unknown) +
                      " lines that are no G, Z, F, ZGROUP, FGROUP or '*' comment line are "
                      "skipped (the first: line " +
                      std::to_string(first_unknown) + "), as meshio skips them");
  return p.finish(file.path());
}

// ---- binary ---------------------------------------------------------------------------------

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint32_t u32(Cursor& c, const char* what) {
  return load<std::uint32_t>(c.raw(4, what));
}

// A count of records of `each` bytes at least must fit in what is left of the file.
void check_count(Cursor& c, std::uint64_t n, std::size_t each, const std::string& what) {
  if (n > c.remaining() / each) {
    c.seek(c.offset() - 4);
    c.fail_at_byte(std::to_string(n) + " " + what + " of " + std::to_string(each) +
                   " bytes at least do not fit in the " + std::to_string(c.remaining() - 4) +
                   " bytes left");
  }
}

void binary_cells(Cursor& c, MappedFile& file, Parts& p, Kind k, std::size_t& next) {
  const auto n = u32(c, k == kZone ? "the zone count" : "the face count");
  const std::size_t least = 8 + 4 * (k == kZone ? 4 : 3);
  check_count(c, n, least, k == kZone ? "zones" : "faces");
  p.cell_ids[k].reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    keep_up(c, file, next);
    const auto at = c.offset();
    const char* h = c.raw(8, "a cell's id and node count");
    const auto id = load<std::uint32_t>(h);
    const auto nodes = load<std::uint32_t>(h + 4);
    if (nodes > 8) {
      c.seek(at + 4);
      c.fail_at_byte(std::string(kKindName[k]) + " " + std::to_string(id) + ": " +
                     std::to_string(nodes) + " nodes (a cell has 8 at most)");
    }
    const char* q = c.raw(4 * nodes, "a cell's node ids");
    std::int64_t rows[8];
    for (std::uint32_t j = 0; j < nodes; ++j) {
      rows[j] = p.node(load<std::uint32_t>(q + 4 * j));
      if (rows[j] < 0) [[unlikely]] {
        c.seek(at + 8 + 4 * j);
        c.fail_at_byte(std::string(kKindName[k]) + " " + std::to_string(id) +
                       " refers to grid point " + std::to_string(load<std::uint32_t>(q + 4 * j)) +
                       ", which no grid point has");
      }
    }
    std::size_t count = nodes;
    if (k == kZone && count == 7) rows[count++] = rows[6];
    const int t = type_index(k, count);
    if (t < 0) {
      c.seek(at + 4);
      c.fail_at_byte(
          std::string(kKindName[k]) + " " + std::to_string(id) + " has " + std::to_string(nodes) +
          (k == kZone ? " nodes; a zone has 4, 5, 6, 7 or 8" : " nodes; a face has 3 or 4"));
    }
    if (!p.add_cell(k, t, id, rows)) {
      c.seek(at);
      c.fail_at_byte(std::string(kKindName[k]) + " id " + std::to_string(id) + " is given twice");
    }
  }
}

std::string binary_text(Cursor& c, const char* what) {
  const auto n = load<std::uint16_t>(c.raw(2, what));
  const char* s = c.raw(n, what);
  return std::string(s, n);
}

void binary_groups(Cursor& c, Parts& p, Kind k) {
  const auto n = u32(c, "the group count");
  check_count(c, n, 8, "groups");
  for (std::uint32_t i = 0; i < n; ++i) {
    Group g{k, {}, {}, {}, "byte " + std::to_string(c.offset())};
    g.name = binary_text(c, "a group's name");
    g.slot = binary_text(c, "a group's slot");
    const auto count = u32(c, "a group's cell count");
    check_count(c, count, 4, "group cell ids");
    const char* q = c.raw(4 * std::size_t{count}, "a group's cell ids");
    g.ids.resize(count);
    for (std::uint32_t j = 0; j < count; ++j) g.ids[j] = load<std::uint32_t>(q + 4 * j);
    p.groups.push_back(std::move(g));
  }
}

Mesh parse_binary(std::string_view data, MappedFile& file) {
  Cursor c(data, file.path(), file.progress());
  Parts p;
  c.raw(8, "the 8-byte header");
  const auto n = u32(c, "the grid point count");
  check_count(c, n, 28, "grid points");
  p.xyz.resize(std::size_t{n} * 3);
  std::size_t next = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    keep_up(c, file, next);
    const char* r = c.raw(28, "a grid point");
    const auto id = load<std::uint32_t>(r);
    std::memcpy(&p.xyz[std::size_t{i} * 3], r + 4, 24);
    if (!p.point_ids.add(id, p.points)) [[unlikely]] {
      c.seek(c.offset() - 28);
      c.fail_at_byte("grid point " + std::to_string(id) + " is given twice");
    }
    ++p.points;
  }
  for (Kind k : {kZone, kFace}) {
    binary_cells(c, file, p, k, next);
    binary_groups(c, p, k);
  }
  if (!c.at_end())
    p.notes.push_back("flac3d: " + file.path() + ": " + std::to_string(c.remaining()) +
                      " bytes after the face groups (at byte " + std::to_string(c.offset()) +
                      ") are not read, as meshio reads nothing after them");
  return p.finish(file.path());
}

}  // namespace

Mesh read_flac3d(const InFile& in) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        // meshio's test: a NUL among the first 8 bytes means binary.
        const bool binary = data.substr(0, 8).find('\0') != std::string_view::npos;
        return binary ? parse_binary(data, file) : parse_ascii(data, file);
      },
      Access::map_lazily);
}

}  // namespace meshdock::mesh
