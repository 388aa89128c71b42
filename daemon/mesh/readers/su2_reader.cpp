// SU2 native mesh (.su2; gmsh's -format su2, Pointwise, SU2 itself), as meshio 5.0 reads it
// ("su2"):
// - '%' comment lines and blank lines anywhere; keyword lines "KEY= value" (blanks around '='
//   and the keyword allowed here; meshio wants none before '=') in any order, but NDIME before
//   NPOIN (the points' width is NDIME's);
// - NDIME= 2 | 3: the points are (n, NDIME);
// - NPOIN= n [domain points]: n lines "x y [z] [index ...]"; the first line's values beyond
//   NDIME are extra columns (point indices) every line has, not read (meshio drops them too);
// - NELEM= n and MARKER_ELEMS= n: n lines "vtk_type n0 n1 .. [index]" (3 line, 5 triangle,
//   9 quad, 10 tetra, 12 hexahedron, 13 wedge, 14 pyramid; VTK's node order, which is meshio's),
//   an index column when the section's first line has one. Each section's cells make one block
//   per type in VTK type order (meshio bins them so), cells in file order; then the blocks of the
//   boundary types (line in 2-D; triangle and quad in 3-D) are merged, each into the first block
//   of its type, as meshio does;
// - cell_data "su2:tag" (int32): 0 for NELEM's cells, the marker's tag for a marker's: the
//   MARKER_TAG's integer, or for a name the tag before it plus 1 (meshio's numbering);
// - each marker -> a cell region named by its MARKER_TAG (meshio keeps no names), its tag the
//   su2:tag number, dim NDIME - 1; markers of one name make one region;
// - NMARK= the marker count (a different count of MARKER_TAGs is noted);
// - NZONE= n > 1: zone 1 is read, the rest not (noted; meshio reads every zone's cells against
//   the last zone's points); IZONE= lines start zones;
// - any other keyword: noted, it and the lines after it up to the next keyword not read. A line
//   that is no keyword where one is expected (more element or point lines than the count) is a
//   ReadError naming it.
// No writer here: su2_writer.cpp.
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

struct Su2Type {
  int vtk;
  const char* meshio;
  std::size_t nodes;
};

// In VTK type order: meshio's blocks of a section come in this order.
constexpr std::array<Su2Type, 7> kTypes{{
    {3, "line", 2},
    {5, "triangle", 3},
    {9, "quad", 4},
    {10, "tetra", 4},
    {12, "hexahedron", 8},
    {13, "wedge", 6},
    {14, "pyramid", 5},
}};
constexpr std::size_t kLine = 0, kTriangle = 1, kQuad = 2;

// kTypes' index of VTK type `vtk`; kTypes.size() when SU2 has no such element.
std::size_t type_index(std::int64_t vtk) {
  for (std::size_t i = 0; i < kTypes.size(); ++i)
    if (kTypes[i].vtk == vtk) return i;
  return kTypes.size();
}

// Skips blank lines and '%' comment lines: the cursor at the next line's first value.
void skip_to_line(Cursor& c) {
  while (true) {
    c.skip_ws();
    if (c.at_end() || c.data()[c.offset()] != '%') return;
    c.next_line();
  }
}

// True when the current line has no more values.
bool line_done(Cursor& c) {
  c.skip_blanks();
  return c.at_end() || c.data()[c.offset()] == '\n';
}

// A NELEM or MARKER_ELEMS section: its cells of each type (counted; the values are in the
// reader's per-type sequences), its su2:tag and the region it adds to (-1: none).
struct Section {
  std::array<std::int64_t, kTypes.size()> count{};
  std::int32_t tag = 0;
  int region = -1;
};

class Su2Parser {
 public:
  Su2Parser(std::string_view data, MappedFile& file)
      : file_(file), path_(file.path()), c_(data, path_, file.progress()) {
    c_.seek(utf8_bom(data));
  }

  Mesh parse() {
    while (true) {
      file_.advance(c_.offset());
      skip_to_line(c_);
      if (c_.at_end()) break;
      const auto line_at = c_.offset();
      const auto line = Cursor::trim(c_.rest_of_line());
      const auto eq = line.find('=');
      if (eq == std::string_view::npos) {
        if (skipping_) continue;  // a line of the unknown keyword's section
        c_.seek(line_at);
        c_.fail(
            "expected a keyword line (NDIME=, NPOIN=, NELEM=, NMARK=, MARKER_TAG=, "
            "MARKER_ELEMS=), found '" +
            std::string(line.substr(0, 60)) + "'" + after_section());
      }
      skipping_ = false;
      const auto key = Cursor::trim(line.substr(0, eq));
      const auto value = Cursor::trim(line.substr(eq + 1));
      if (!keyword(key, value, line_at)) break;
    }
    return finish();
  }

 private:
  MappedFile& file_;
  const std::string& path_;
  Cursor c_;
  int dim_ = 0;
  bool have_points_ = false;
  Array points_;
  std::int64_t npoints_ = 0;
  std::array<Chunks<std::int64_t>, kTypes.size()> conn_;
  std::vector<Section> sections_;
  std::vector<std::string> region_names_;
  std::int32_t next_tag_ = 0;
  int marker_region_ = -1;  // the region of the last MARKER_TAG
  std::int64_t nmark_ = -1, markers_ = 0;
  std::int64_t nzone_ = 1, izones_ = 0;
  std::int64_t max_node_ = -1;
  std::size_t max_node_at_ = 0;
  bool skipping_ = false;
  std::string last_section_;  // "NELEM= 14" etc.: named when a line follows it unread
  std::vector<std::string> notes_;

  std::string where(std::size_t at) const { return path_ + ":" + std::to_string(c_.line_at(at)); }
  std::string after_section() const {
    return last_section_.empty() ? std::string()
                                 : " (more lines than the last count, " + last_section_ + ")";
  }

  // The integer `value` of keyword `key`; `rest` takes what follows it (may be null: nothing
  // may).
  std::int64_t integer(std::string_view key, std::string_view value, std::size_t line_at,
                       std::string_view* rest = nullptr) {
    std::int64_t v = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    const auto tail = Cursor::trim(value.substr(static_cast<std::size_t>(r.ptr - value.data())));
    if (r.ec != std::errc() || (!rest && !tail.empty()) ||
        (rest && !tail.empty() && r.ptr < value.data() + value.size() && *r.ptr != ' ' &&
         *r.ptr != '\t')) {
      c_.seek(line_at);
      c_.fail("expected an integer after " + std::string(key) + "=, found '" +
              std::string(value.substr(0, 40)) + "'");
    }
    if (rest) *rest = tail;
    return v;
  }

  // A count of lines that each take at least `min_line` bytes, checked against what is left.
  std::int64_t count(std::string_view key, std::string_view value, std::size_t line_at,
                     std::size_t min_line, std::string_view* rest = nullptr) {
    const auto n = integer(key, value, line_at, rest);
    if (n < 0 || static_cast<std::size_t>(n) > c_.remaining() / min_line) {
      c_.seek(line_at);
      c_.fail(std::string(key) + "= " + std::to_string(n) +
              " is negative or more lines than the rest of the file holds");
    }
    return n;
  }

  // Handles one keyword line; false: stop reading (zone 2 starts).
  bool keyword(std::string_view key, std::string_view value, std::size_t line_at) {
    last_section_.clear();
    if (key == "NDIME") {
      const auto d = integer(key, value, line_at);
      if (d != 2 && d != 3) {
        c_.seek(line_at);
        c_.fail("NDIME= " + std::to_string(d) + ": the dimension is 2 or 3");
      }
      if (dim_ != 0) {
        if (nzone_ > 1) return zone_ends(line_at);
        if (d != dim_) {
          c_.seek(line_at);
          c_.fail("a second NDIME= " + std::to_string(d) + " after NDIME= " + std::to_string(dim_));
        }
      }
      dim_ = static_cast<int>(d);
    } else if (key == "NPOIN") {
      if (have_points_) {
        if (nzone_ > 1) return zone_ends(line_at);
        c_.seek(line_at);
        c_.fail("a second NPOIN= section");
      }
      if (dim_ == 0) {
        c_.seek(line_at);
        c_.fail("NPOIN= before NDIME=: the points' coordinate count is not known");
      }
      std::string_view rest;
      // A point line is at least "0 0\n".
      const auto n = count(key, value, line_at, 2 * static_cast<std::size_t>(dim_), &rest);
      if (!rest.empty()) integer(key, rest, line_at);  // the domain points: one more integer
      read_points(n);
      last_section_ = "NPOIN= " + std::string(value);
    } else if (key == "NELEM" || key == "MARKER_ELEMS") {
      const bool marker = key == "MARKER_ELEMS";
      const auto n = count(key, value, line_at, 6);  // "3 0 1\n"
      Section s;
      if (marker) {
        s.tag = next_tag_;
        s.region = marker_region_;
        if (marker_region_ < 0)
          notes_.push_back("su2: " + where(line_at) +
                           ": MARKER_ELEMS= before any MARKER_TAG=: its cells get su2:tag " +
                           std::to_string(next_tag_) + " and no region");
      }
      read_cells(n, s);
      sections_.push_back(s);
      last_section_ = std::string(key) + "= " + std::string(value);
    } else if (key == "NMARK") {
      nmark_ = integer(key, value, line_at);
    } else if (key == "MARKER_TAG") {
      marker_tag(value);
    } else if (key == "NZONE") {
      nzone_ = integer(key, value, line_at);
    } else if (key == "IZONE") {
      integer(key, value, line_at);
      if (++izones_ > 1) return zone_ends(line_at);
    } else {
      notes_.push_back("su2: " + where(line_at) + ": keyword '" + std::string(key.substr(0, 40)) +
                       "=' is not one meshdock reads; it and the lines after it up to the next "
                       "keyword are not read");
      skipping_ = true;
    }
    return true;
  }

  bool zone_ends(std::size_t line_at) {
    notes_.push_back("su2: " + where(line_at) + ": NZONE= " + std::to_string(nzone_) +
                     ": zone 1 is read, the other zones are not");
    return false;
  }

  // meshio's tag numbering: an integer tag is itself, a name the tag before it plus 1.
  void marker_tag(std::string_view value) {
    std::int32_t v = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (r.ec == std::errc() && r.ptr == value.data() + value.size())
      next_tag_ = v;
    else
      ++next_tag_;
    ++markers_;
    const std::string name(value);
    marker_region_ = -1;
    if (name.empty()) return;  // a marker with no name: su2:tag only
    for (std::size_t i = 0; i < region_names_.size(); ++i)
      if (region_names_[i] == name) marker_region_ = static_cast<int>(i);
    if (marker_region_ < 0) {
      marker_region_ = static_cast<int>(region_names_.size());
      region_names_.push_back(name);
    }
  }

  void read_points(std::int64_t n) {
    have_points_ = true;
    npoints_ = n;
    points_ = Array::of<double>({n, dim_});
    double* p = points_.as<double>();
    std::int64_t extra = -1;  // values past NDIME on each line: the first line's count
    for (std::int64_t i = 0; i < n; ++i) {
      file_.advance(c_.offset());
      skip_to_line(c_);
      if (c_.at_end())
        c_.fail("the file ends after " + std::to_string(i) + " of the " + std::to_string(n) +
                " points NPOIN= counts");
      for (int k = 0; k < dim_; ++k) {
        if (k > 0 && line_done(c_)) [[unlikely]]
          c_.fail("point " + std::to_string(i) + " has " + std::to_string(k) +
                  " coordinates; NDIME= " + std::to_string(dim_));
        p[i * dim_ + k] = c_.number<double>("a coordinate");
      }
      std::int64_t more = 0;
      for (; !line_done(c_); ++more) c_.token();
      if (extra < 0) extra = more;
      if (more != extra) [[unlikely]]
        c_.fail("point " + std::to_string(i) + "'s line has " + std::to_string(dim_ + more) +
                " values, the first point's " + std::to_string(dim_ + extra));
    }
  }

  // The common element line, "type n0 n1 .. [index]" of plain decimal integers, read without
  // the cursor's per-value checks (a 1M-tet file read at 125 MB/s through them); false, having
  // read nothing, for any other line, which read_cells' checked path then reads or reports.
  bool fast_cell(Section& s, int& index_column) {
    const char* const begin = c_.data().data();
    const char* const end = begin + c_.data().size();
    const char* p = begin + c_.offset();
    std::array<std::int64_t, 10> v;  // type, 8 nodes at most, index
    const std::size_t n = plain_ints_line(p, end, v.data(), v.size(), p);
    if (n == 0) return false;
    const auto t = type_index(v[0]);
    if (t == kTypes.size()) return false;
    const auto nodes = kTypes[t].nodes;
    if (n != nodes + 1 && n != nodes + 2) return false;
    const int more = static_cast<int>(n - nodes - 1);
    if (index_column >= 0 && more != index_column) return false;
    index_column = more;
    for (std::size_t k = 1; k <= nodes; ++k) {
      if (v[k] > max_node_) [[unlikely]] {
        max_node_ = v[k];
        max_node_at_ = c_.offset();
      }
      conn_[t].push_back(v[k]);
    }
    ++s.count[t];
    c_.seek(static_cast<std::size_t>(p - begin));
    c_.tick();
    return true;
  }

  void read_cells(std::int64_t n, Section& s) {
    int index_column = -1;  // the first line tells: 1 when the lines end in an index
    for (std::int64_t i = 0; i < n; ++i) {
      file_.advance(c_.offset());
      skip_to_line(c_);
      if (c_.at_end())
        c_.fail("the file ends after " + std::to_string(i) + " of the " + std::to_string(n) +
                " elements its count gives");
      if (fast_cell(s, index_column)) [[likely]]
        continue;
      const auto vtk = c_.number<std::int64_t>("an element type");
      const auto t = type_index(vtk);
      if (t == kTypes.size()) [[unlikely]]
        c_.fail("element type " + std::to_string(vtk) +
                " is not one of 3 (line), 5 (triangle), 9 (quad), 10 (tetra), 12 (hexahedron), "
                "13 (wedge), 14 (pyramid)");
      const auto& type = kTypes[t];
      for (std::size_t k = 0; k < type.nodes; ++k) {
        if (line_done(c_)) [[unlikely]]
          c_.fail("a " + std::string(type.meshio) + " has " + std::to_string(type.nodes) +
                  " nodes; the line lists " + std::to_string(k));
        const auto node = c_.number<std::int64_t>("a node index");
        if (node < 0) [[unlikely]]
          c_.fail("node index " + std::to_string(node) + " is negative");
        if (node > max_node_) [[unlikely]] {
          max_node_ = node;
          max_node_at_ = c_.offset();
        }
        conn_[t].push_back(node);
      }
      int more = 0;
      if (!line_done(c_)) {
        c_.number<std::int64_t>("an element index");
        more = 1;
      }
      if (index_column < 0) index_column = more;
      if (more != index_column || !line_done(c_)) [[unlikely]]
        c_.fail("a " + std::string(type.meshio) + "'s line is its type, " +
                std::to_string(type.nodes) + " nodes" + (index_column ? " and an index" : "") +
                " (as the section's first line)");
      ++s.count[t];
    }
  }

  // A block of the mesh: cells of one type from one section or, merged, from several.
  struct Block {
    std::size_t type;
    std::vector<std::pair<std::size_t, std::int64_t>> ranges;  // (section, cells) in order
    std::int64_t rows = 0;
  };

  Mesh finish() {
    if (dim_ == 0 && !have_points_ && sections_.empty())
      throw ReadError(path_ + ": not an SU2 mesh: no NDIME=, NPOIN= or NELEM= line");
    if (max_node_ >= npoints_)
      throw ReadError(where(max_node_at_) + ": node index " + std::to_string(max_node_) +
                      " is not one of the " + std::to_string(npoints_) + " points" +
                      (have_points_ ? "" : " (the file has no NPOIN= section)"));
    if (nmark_ >= 0 && nmark_ != markers_)
      notes_.push_back("su2: " + path_ + ": NMARK= " + std::to_string(nmark_) + " but " +
                       std::to_string(markers_) + " MARKER_TAG= lines; all are read");
    Mesh m;
    m.points = have_points_ ? std::move(points_) : Array::of<double>({0, dim_ ? dim_ : 3});
    const auto blocks = layout();
    std::vector<Array> tags;
    std::vector<std::vector<std::int64_t>> region_cells(region_names_.size());
    std::int64_t global = 0;
    for (const auto& b : blocks) {
      const auto& type = kTypes[b.type];
      m.cells.push_back(CellBlock::fixed(
          type.meshio, Array::of<std::int64_t>({b.rows, static_cast<std::int64_t>(type.nodes)})));
      tags.push_back(Array::of<std::int32_t>({b.rows}));
      auto* tag = tags.back().as<std::int32_t>();
      for (const auto& [sec, n] : b.ranges) {
        const auto& s = sections_[sec];
        std::fill(tag, tag + n, s.tag);
        tag += n;
        if (s.region >= 0)
          for (std::int64_t k = 0; k < n; ++k)
            region_cells[static_cast<std::size_t>(s.region)].push_back(global + k);
        global += n;
      }
    }
    // Each type's values, in file order, go to its blocks in order.
    for (std::size_t t = 0; t < kTypes.size(); ++t) {
      std::vector<std::int64_t*> outs;
      std::vector<std::size_t> sizes;
      for (std::size_t b = 0; b < blocks.size(); ++b)
        if (blocks[b].type == t) {
          outs.push_back(m.cells[b].connectivity.as<std::int64_t>());
          sizes.push_back(static_cast<std::size_t>(blocks[b].rows) * kTypes[t].nodes);
        }
      std::size_t b = 0, at = 0;
      conn_[t].drain([&](const std::int64_t* p, std::size_t n) {
        while (n > 0) {
          while (at == sizes[b]) {
            ++b;
            at = 0;
          }
          const auto k = std::min(n, sizes[b] - at);
          std::memcpy(outs[b] + at, p, k * sizeof(std::int64_t));
          at += k;
          p += k;
          n -= k;
        }
      });
    }
    if (!blocks.empty()) m.cell_data["su2:tag"] = std::move(tags);
    for (std::size_t r = 0; r < region_names_.size(); ++r) {
      Region reg;
      reg.name = region_names_[r];
      reg.kind = RegionKind::kCell;
      reg.dim = dim_ > 0 ? dim_ - 1 : 0;
      reg.tag = region_tag(static_cast<int>(r));
      const auto& cells = region_cells[r];
      reg.entries = Array::of<std::int64_t>({static_cast<std::int64_t>(cells.size())});
      if (!cells.empty())
        std::memcpy(reg.entries.data(), cells.data(), cells.size() * sizeof(std::int64_t));
      m.regions.push_back(std::move(reg));
    }
    file_.release_before(c_.offset());
    m.notes = std::move(notes_);
    return m;
  }

  // The su2:tag of region r's first section (markers of one name share a region).
  std::int64_t region_tag(int r) const {
    for (const auto& s : sections_)
      if (s.region == r) return s.tag;
    return 0;
  }

  // meshio's blocks: each section's types in VTK order, then every block of a boundary type
  // (line in 2-D, triangle and quad in 3-D) merged into the first of its type.
  std::vector<Block> layout() const {
    std::vector<Block> blocks;
    std::array<int, kTypes.size()> merged_into;
    merged_into.fill(-1);
    auto boundary = [&](std::size_t t) {
      return dim_ == 2 ? t == kLine : (t == kTriangle || t == kQuad);
    };
    for (std::size_t s = 0; s < sections_.size(); ++s) {
      for (std::size_t t = 0; t < kTypes.size(); ++t) {
        const auto n = sections_[s].count[t];
        if (n == 0) continue;
        if (boundary(t) && merged_into[t] >= 0) {
          auto& b = blocks[static_cast<std::size_t>(merged_into[t])];
          b.ranges.emplace_back(s, n);
          b.rows += n;
          continue;
        }
        if (boundary(t)) merged_into[t] = static_cast<int>(blocks.size());
        blocks.push_back(Block{t, {{s, n}}, n});
      }
    }
    return blocks;
  }
};

}  // namespace

Mesh read_su2(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return Su2Parser(data, file).parse(); },
      Access::window);
}

}  // namespace meshdock::mesh
