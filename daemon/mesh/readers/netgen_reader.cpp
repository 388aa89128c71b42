// Netgen mesh (.vol, and .vol.gz gzipped; what Netgen / NGSolve's Mesh.Save writes), as meshio
// 5.0 reads it ("netgen"):
// - the first line that is neither blank nor a '#' comment is "mesh3d"; then sections, each a
//   keyword line and (most) a count line, blank and '#' lines between them and between rows;
// - dimension (2 or 3; 3 when the file gives none, as Netgen): the points' width;
// - geomtype: read, a value Netgen has none for (0, 1, 10-13) noted (meshio warns);
// - points: n rows "x y z" (2-D meshes too: z is dropped; a z that is not 0 is noted);
// - pointelements ("pnum index": vertex), edgesegments / edgesegmentsgi / edgesegmentsgi2
//   ("surfid 0 p1 p2 ...": line), surfaceelements / surfaceelementsgi / surfaceelementsuv
//   ("surfnr bcnr domin domout np p1 .. pnp ...": triangle, quad, triangle6, quad8 by np) and
//   volumeelements ("matnr np p1 .. pnp": tetra, pyramid, wedge, hexahedron, tetra10,
//   pyramid13, wedge15, hexahedron20 by np): 1-based nodes in Netgen's order, taken to VTK's
//   through meshio's permutations; values after the nodes (geometry info, distances), a face's
//   surfnr / domin / domout and an edge's second column not read, as meshio (noted per section
//   where they hold more than meshio's writer writes: 1 0 0, 0, nothing after the nodes).
//   Consecutive cells of one type, across sections too, make one block (meshio's); cell_data
//   "netgen:index" (int64): surfnr / surfid / matnr / the point element's index;
// - a "surf1 surf2 p1 p2" line: the edge segment sections after it take two lines a row (old
//   Netgen); meshio then skips every other row of every later cell section, here only of edge
//   segment sections (the lines are Netgen's, meshio's skip of the others a bug);
// - materials / bcnames / cd2names / cd3names: n lines "index name": field_data name ->
//   [index, dimension - codim] (int64; meshio's) and a cell region of that name holding the
//   cells of that dimension whose netgen:index is the index; a line that is not two words is
//   noted (meshio skips it silently);
// - identifications / identificationtypes (meshio: Mesh.info, which meshdock has not),
//   face_colours and singular_* sections: noted, not read; endmesh ends the mesh (what follows
//   is not read, as meshio); any other keyword is a ReadError naming it (meshio's too).
// Counts are checked against the bytes left before anything is allocated; a gzipped file is
// inflated (zlib) into memory bounded by ReadOptions::max_bytes (else default_inflate_limit(): half
// the machine's memory, at most 16 GiB): a gzip bomb is a
// SizeLimitError naming the file. Errors name the file, the line (of the inflated text for
// .vol.gz), the section and what was expected.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/gzip_text.hpp"
#include "daemon/mesh/readers/netgen_types.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

using netgen::kTypes;

// kTypes' index of the `dim`-dimensional element of `nodes` nodes; kTypes.size(): none.
std::size_t type_index(int dim, std::int64_t nodes) {
  for (std::size_t i = 0; i < kTypes.size(); ++i)
    if (kTypes[i].dim == dim && static_cast<std::int64_t>(kTypes[i].nodes) == nodes) return i;
  return kTypes.size();
}

// A cell section's row layout (meshio's _read_cells): the index column, the node count column
// (-1: fixed count), the first node column.
struct Layout {
  int dim;
  int index_col;
  int count_col;
  int fixed_nodes;
  int first_node;
  std::size_t min_row;  // the fewest bytes a row takes: its columns as "0 "
};

// The section keyword's layout; dim -1: not a cell section.
Layout layout_of(std::string_view key) {
  if (key == "pointelements") return {0, 1, -1, 1, 0, 4};
  if (key == "edgesegments" || key == "edgesegmentsgi" || key == "edgesegmentsgi2")
    return {1, 0, -1, 2, 2, 8};
  if (key == "surfaceelements" || key == "surfaceelementsgi" || key == "surfaceelementsuv")
    return {2, 1, 4, 0, 5, 16};
  if (key == "volumeelements") return {3, 0, 1, 0, 2, 12};
  return {-1, 0, 0, 0, 0, 0};
}

constexpr std::array<std::string_view, 4> kCodims{"materials", "bcnames", "cd2names", "cd3names"};

// A block being read: its type, nodes (0-based, VTK's order) and netgen:index values.
struct Block {
  std::size_t type;
  Chunks<std::int64_t> conn;
  Chunks<std::int64_t> index;
};

class NetgenParser {
 public:
  NetgenParser(std::string_view data, const std::string& path, ReadProgress* progress,
               MappedFile* file)
      : file_(file), path_(path), c_(data, path, progress) {
    c_.seek(utf8_bom(data));
  }

  Mesh parse() {
    const auto first = keyword_line();
    if (first != "mesh3d")
      c_.fail("not a Netgen mesh: expected 'mesh3d' as the first line, found '" +
              std::string(first.substr(0, 60)) + "'");
    while (true) {
      const auto key = keyword_line();
      if (key.empty() && c_.at_end()) break;
      if (key == "endmesh") break;
      section(key);
    }
    return finish();
  }

 private:
  MappedFile* file_;  // null: the text is in memory (inflated)
  const std::string& path_;
  Cursor c_;
  int dim_ = 3;
  bool have_points_ = false;
  Array points_;
  std::int64_t npoints_ = 0;
  std::vector<Block> blocks_;
  std::int64_t max_node_ = 0;
  std::size_t max_node_at_ = 0;
  bool two_line_edges_ = false;
  std::size_t key_at_ = 0;  // where the last keyword line starts
  struct Name {
    std::string name;
    std::int64_t index;
    int dim;
  };
  std::vector<Name> names_;
  std::vector<std::string> notes_;

  std::string where(std::size_t at) const { return path_ + ":" + std::to_string(c_.line_at(at)); }

  void advance() {
    if (file_) file_->advance(c_.offset());
  }

  // Skips blank lines and lines whose first non-blank is '#' (meshio's
  // _fast_forward_over_blank_lines): the cursor at the next line's first value.
  void skip_to_line() {
    while (true) {
      c_.skip_ws();
      if (c_.at_end() || c_.data()[c_.offset()] != '#') return;
      c_.next_line();
    }
  }

  // The next line that is neither blank nor a comment, trimmed; "" at the end.
  std::string_view keyword_line() {
    advance();
    skip_to_line();
    if (c_.at_end()) return {};
    key_at_ = c_.offset();
    return Cursor::trim(c_.rest_of_line());
  }

  // A section's count: an integer alone on its line (blank and comment lines before it are
  // skipped; meshio wants it on the next line), at most what `min_row`-byte rows could fill
  // (min_row 0: a value, not a count: dimension, geomtype).
  std::int64_t count(std::string_view key, std::size_t min_row) {
    skip_to_line();
    const auto at = c_.offset();
    const auto line = Cursor::trim(c_.rest_of_line());
    std::int64_t n = -1;
    const auto r = std::from_chars(line.data(), line.data() + line.size(), n);
    if (line.empty() || r.ec != std::errc() || r.ptr != line.data() + line.size()) {
      c_.seek(at);
      c_.fail("expected the count of section '" + std::string(key) + "', found '" +
              std::string(line.substr(0, 60)) + "'");
    }
    if (min_row > 0 && (n < 0 || static_cast<std::size_t>(n) > c_.remaining() / min_row)) {
      c_.seek(at);
      c_.fail("section '" + std::string(key) + "': count " + std::to_string(n) +
              " is negative or more rows than the rest of the file holds");
    }
    return n;
  }

  void section(std::string_view key) {
    const auto at = c_.offset();
    if (key == "dimension") {
      const auto d = count(key, 0);
      if (d != 2 && d != 3) c_.fail("dimension " + std::to_string(d) + ": Netgen's is 2 or 3");
      if (have_points_ && d != dim_)
        c_.fail("dimension " + std::to_string(d) + " after the points were read as " +
                std::to_string(dim_) + "-D");
      dim_ = static_cast<int>(d);
    } else if (key == "geomtype") {
      const auto g = count(key, 0);
      if (g != 0 && g != 1 && (g < 10 || g > 13))
        notes_.push_back("netgen: " + where(at) + ": geomtype " + std::to_string(g) +
                         " is not one Netgen writes (0, 1, 10-13); the mesh is read as any");
    } else if (key == "points") {
      read_points(count(key, 4));
    } else if (const auto lay = layout_of(key); lay.dim >= 0) {
      read_cells(key, lay, count(key, lay.min_row));
    } else if (is_surf_header(key)) {
      two_line_edges_ = true;
    } else if (const auto codim = codim_of(key); codim >= 0) {
      read_names(key, codim, count(key, 1));
    } else if (key == "identifications" || key == "identificationtypes") {
      const auto n = count(key, 2);
      const auto rows = key == "identifications" ? n : (n > 0 ? 1 : 0);
      for (std::int64_t i = 0; i < rows; ++i) skip_row(key, i, rows);
      notes_.push_back("netgen: " + where(at) + ": section '" + std::string(key) + "' (" +
                       std::to_string(n) +
                       " entries: periodic point pairs) is not read (meshio keeps it in "
                       "Mesh.info, which meshdock has no place for)");
    } else if (key == "face_colours" || key.starts_with("singular_")) {
      if (!is_skipped(key)) {
        c_.seek(key_at_);
        c_.fail("unknown Netgen section '" + std::string(key.substr(0, 60)) + "'");
      }
      const auto n = count(key, 1);
      for (std::int64_t i = 0; i < n; ++i) c_.next_line();  // meshio's _skip_block: raw lines
      notes_.push_back("netgen: " + where(at) + ": section '" + std::string(key) + "' (" +
                       std::to_string(n) + " rows) is not read (meshio skips it too)");
    } else {
      c_.seek(key_at_);
      c_.fail("unknown Netgen section '" + std::string(key.substr(0, 60)) +
              "' (expected dimension, geomtype, points, surfaceelements, volumeelements, "
              "edgesegments, pointelements, materials, bcnames, cd2names, identifications, "
              "face_colours or endmesh)");
    }
  }

  static bool is_surf_header(std::string_view line) {
    // "surf1 surf2 p1 p2", however spaced (meshio compares the split words).
    std::array<std::string_view, 4> want{"surf1", "surf2", "p1", "p2"};
    std::size_t k = 0, i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i == line.size()) break;
      const auto b = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      if (k == want.size() || line.substr(b, i - b) != want[k++]) return false;
    }
    return k == want.size();
  }
  static bool is_skipped(std::string_view key) {
    return key == "face_colours" || key == "singular_edge_left" || key == "singular_edge_right" ||
           key == "singular_face_inside" || key == "singular_face_outside" ||
           key == "singular_points";
  }
  static int codim_of(std::string_view key) {
    for (std::size_t i = 0; i < kCodims.size(); ++i)
      if (key == kCodims[i]) return static_cast<int>(i);
    return -1;
  }

  // Skips row i of a section meshdock does not read (a non-blank line).
  void skip_row(std::string_view key, std::int64_t i, std::int64_t n) {
    skip_to_line();
    if (c_.at_end())
      c_.fail("the file ends after " + std::to_string(i) + " of the " + std::to_string(n) +
              " rows of section '" + std::string(key) + "'");
    c_.next_line();
  }

  // True when the current line has no more values.
  bool line_done() {
    c_.skip_blanks();
    return c_.at_end() || c_.data()[c_.offset()] == '\n';
  }

  void read_points(std::int64_t n) {
    if (have_points_) c_.fail("a second 'points' section");
    have_points_ = true;
    npoints_ = n;
    points_ = Array::of<double>({n, dim_});
    double* p = points_.as<double>();
    bool z_dropped = false;
    for (std::int64_t i = 0; i < n; ++i) {
      advance();
      skip_to_line();
      if (c_.at_end())
        c_.fail("section 'points': the file ends after " + std::to_string(i) + " of the " +
                std::to_string(n) + " points its count gives");
      for (int k = 0; k < dim_; ++k) {
        if (k > 0 && line_done()) [[unlikely]]
          c_.fail("section 'points': point " + std::to_string(i + 1) + " has " + std::to_string(k) +
                  " coordinates, expected " + std::to_string(dim_));
        p[i * dim_ + k] = c_.number<double>("a coordinate");
      }
      if (dim_ == 2 && !line_done()) {
        // Netgen writes a z for 2-D meshes too; meshio drops it.
        if (c_.number<double>("a coordinate") != 0.0) z_dropped = true;
      }
      if (!line_done()) [[unlikely]]
        c_.fail("section 'points': point " + std::to_string(i + 1) +
                " has more than 3 coordinates");
    }
    if (z_dropped)
      notes_.push_back("netgen: " + path_ +
                       ": dimension 2, but some points have a z that is not 0: it is not read "
                       "(meshio drops it too)");
  }

  // The next integer on the current line, as plain decimal digits where it is (the hot case),
  // else through the cursor's checked parse; `what` names it in errors.
  std::int64_t int_on_line(std::string_view key, const char* what) {
    if (line_done()) [[unlikely]]
      c_.fail("section '" + std::string(key) + "': the row ends before its " + what);
    const char* const begin = c_.data().data();
    const char* const end = begin + c_.data().size();
    const char* p = begin + c_.offset();
    std::int64_t x;
    const char* q = plain_digits(p, end, x);
    if (q > p && (q == end || *q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')) [[likely]] {
      c_.seek(static_cast<std::size_t>(q - begin));
      return x;
    }
    return c_.number<std::int64_t>(what);
  }

  // Moves past the rest of the row's line (values meshio does not read either).
  void end_row() {
    const auto nl = c_.data().find('\n', c_.offset());
    c_.seek(nl == std::string_view::npos ? c_.data().size() : nl + 1);
    c_.tick();
  }

  void read_cells(std::string_view key, const Layout& lay, std::int64_t n) {
    const bool two_lines = two_line_edges_ && lay.dim == 1;
    const auto at = key_at_;  // notes name the section's keyword line
    bool columns_dropped = false, trailing_dropped = false;
    std::array<std::int64_t, 32> v;
    for (std::int64_t i = 0; i < n; ++i) {
      advance();
      skip_to_line();
      if (c_.at_end())
        c_.fail("section '" + std::string(key) + "': the file ends after " + std::to_string(i) +
                " of the " + std::to_string(n) + " elements its count gives");
      const auto row_at = c_.offset();
      const int head = lay.first_node;
      for (int k = 0; k < head; ++k) v[static_cast<std::size_t>(k)] = int_on_line(key, "columns");
      if (lay.dim == 0) v[0] = int_on_line(key, "point number");
      const std::int64_t np =
          lay.count_col >= 0 ? v[static_cast<std::size_t>(lay.count_col)] : lay.fixed_nodes;
      const auto t = type_index(lay.dim, np);
      if (t == kTypes.size()) [[unlikely]] {
        c_.seek(row_at);
        c_.fail("section '" + std::string(key) + "': element " + std::to_string(i + 1) + " has " +
                std::to_string(np) + " nodes, expected " +
                (lay.dim == 2 ? "3, 4, 6 or 8" : "4, 5, 6, 8, 10, 13, 15 or 20"));
      }
      const auto& type = kTypes[t];
      std::array<std::int64_t, 20> nodes;
      if (lay.dim == 0) {
        nodes[0] = v[0];
        v[1] = int_on_line(key, "index");
      } else {
        for (std::size_t k = 0; k < type.nodes; ++k) nodes[k] = int_on_line(key, "nodes");
      }
      const auto index = v[static_cast<std::size_t>(lay.index_col)];
      // What meshio does not read either, noted where it says more than its writer writes:
      // a face's surfnr / domin / domout (its writer: 1 0 0), an edge's second column (0), and
      // the values after the nodes of faces and volumes (geometry info; edges always have some).
      if (lay.dim == 2 && (v[0] != 1 || v[2] != 0 || v[3] != 0)) [[unlikely]]
        columns_dropped = true;
      if (lay.dim == 1 && v[1] != 0) [[unlikely]]
        columns_dropped = true;
      if ((lay.dim == 2 || lay.dim == 3) && !trailing_dropped && !line_done())
        trailing_dropped = true;
      end_row();
      if (two_lines) skip_row(key, i, n);
      Block& b = block_for(t);
      for (std::size_t k = 0; k < type.nodes; ++k) {
        const auto node = nodes[type.to_vtk[k]];
        if (node < 1) [[unlikely]] {
          c_.seek(row_at);
          c_.fail("section '" + std::string(key) + "': node " + std::to_string(node) +
                  " (Netgen's nodes count from 1)");
        }
        if (node > max_node_) [[unlikely]] {
          max_node_ = node;
          max_node_at_ = row_at;
        }
        b.conn.push_back(node - 1);
      }
      b.index.push_back(index);
    }
    if (columns_dropped)
      notes_.push_back("netgen: " + where(at) + ": section '" + std::string(key) + "': " +
                       (lay.dim == 2 ? "the surfnr, domin and domout columns (bcnr is netgen:index)"
                                     : "the second column (surfid is netgen:index)") +
                       " are not read (meshio reads none of them either)");
    if (trailing_dropped)
      notes_.push_back("netgen: " + where(at) + ": section '" + std::string(key) +
                       "': the values after each element's nodes (geometry info) are not read "
                       "(meshio reads none of them either)");
  }

  // The block the next cell of type t goes to: the last one when it is of that type.
  Block& block_for(std::size_t t) {
    if (blocks_.empty() || blocks_.back().type != t) blocks_.push_back(Block{t, {}, {}});
    return blocks_.back();
  }

  // meshio reads each of the n entries as one raw line and keeps those of two words.
  void read_names(std::string_view key, int codim, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (c_.at_end())
        c_.fail("section '" + std::string(key) + "': the file ends after " + std::to_string(i) +
                " of its " + std::to_string(n) + " names");
      const auto at = c_.offset();
      const auto line = Cursor::trim(c_.rest_of_line());
      std::array<std::string_view, 2> w;
      std::size_t words = 0, p = 0;
      while (p < line.size()) {
        while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
        if (p == line.size()) break;
        const auto b = p;
        while (p < line.size() && line[p] != ' ' && line[p] != '\t') ++p;
        if (words < w.size()) w[words] = line.substr(b, p - b);
        ++words;
      }
      if (words != 2) {
        if (!line.empty())
          notes_.push_back("netgen: " + where(at) + ": section '" + std::string(key) + "': line '" +
                           std::string(line.substr(0, 60)) +
                           "' is not 'index name': not read (meshio skips it too)");
        continue;
      }
      std::int64_t idx = 0;
      const auto r = std::from_chars(w[0].data(), w[0].data() + w[0].size(), idx);
      if (r.ec != std::errc() || r.ptr != w[0].data() + w[0].size()) {
        c_.seek(at);
        c_.fail("section '" + std::string(key) + "': expected an index before the name, found '" +
                std::string(w[0].substr(0, 40)) + "'");
      }
      names_.push_back({std::string(w[1]), idx, dim_ - codim});
    }
  }

  Mesh finish() {
    if (max_node_ > npoints_)
      throw ReadError(where(max_node_at_) + ": node " + std::to_string(max_node_) +
                      " is not one of the " + std::to_string(npoints_) + " points" +
                      (have_points_ ? "" : " (the file has no 'points' section)"));
    Mesh m;
    m.points = have_points_ ? std::move(points_) : Array::of<double>({0, dim_});
    std::vector<Array> index;
    std::vector<int> block_dim;
    std::vector<std::int64_t> first;  // each block's first global cell number
    std::int64_t global = 0;
    for (auto& b : blocks_) {
      const auto& type = kTypes[b.type];
      const auto rows = static_cast<std::int64_t>(b.index.size());
      auto conn = Array::of<std::int64_t>({rows, static_cast<std::int64_t>(type.nodes)});
      b.conn.drain_to(conn.as<std::int64_t>());
      m.cells.push_back(CellBlock::fixed(type.meshio, std::move(conn)));
      index.push_back(Array::of<std::int64_t>({rows}));
      b.index.drain_to(index.back().as<std::int64_t>());
      block_dim.push_back(type.dim);
      first.push_back(global);
      global += rows;
    }
    for (const auto& nm : names_) {
      // meshio's field_data: a later line of one name replaces an earlier one.
      m.field_data[nm.name] = Array::from_vector(std::vector<std::int64_t>{nm.index, nm.dim});
    }
    add_regions(m, index, block_dim, first);
    if (!index.empty()) m.cell_data["netgen:index"] = std::move(index);
    m.notes = std::move(notes_);
    return m;
  }

  // A cell region per name (the last of a name, as field_data): the cells of its dimension
  // whose netgen:index is its index.
  void add_regions(Mesh& m, const std::vector<Array>& index, const std::vector<int>& block_dim,
                   const std::vector<std::int64_t>& first) const {
    for (std::size_t k = 0; k < names_.size(); ++k) {
      const auto& nm = names_[k];
      bool later = false;
      for (std::size_t j = k + 1; j < names_.size(); ++j) later |= names_[j].name == nm.name;
      if (later) continue;
      std::vector<std::int64_t> cells;
      for (std::size_t b = 0; b < index.size(); ++b) {
        if (block_dim[b] != nm.dim) continue;
        const auto* ix = index[b].as<std::int64_t>();
        for (std::int64_t i = 0; i < static_cast<std::int64_t>(index[b].size()); ++i)
          if (ix[i] == nm.index) cells.push_back(first[b] + i);
      }
      Region reg;
      reg.name = nm.name;
      reg.kind = RegionKind::kCell;
      reg.dim = nm.dim;
      reg.tag = nm.index;
      reg.entries = Array::of<std::int64_t>({static_cast<std::int64_t>(cells.size())});
      if (!cells.empty())
        std::memcpy(reg.entries.data(), cells.data(), cells.size() * sizeof(std::int64_t));
      m.regions.push_back(std::move(reg));
    }
  }
};

}  // namespace

Mesh read_netgen(const InFile& in, const ReadOptions& options) {
  return parse_maybe_gzipped(in, options.max_bytes, "Netgen mesh",
                             [&](std::string_view text, MappedFile* file, ReadProgress* progress) {
                               return NetgenParser(text, in.path, progress, file).parse();
                             });
}

}  // namespace meshdock::mesh
