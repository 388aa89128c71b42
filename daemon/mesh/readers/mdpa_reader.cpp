// Kratos Multiphysics model part (.mdpa; GiD and Kratos write it), as meshio 5.0 reads it
// ("mdpa"), and beyond it:
// - blocks "Begin <Word> [args]" .. "End [<Word>]"; blank lines and "//" comments anywhere (a
//   comment may end a line); CRLF line ends;
// - Nodes: "id x y z" lines -> points (n, 3) in file order; the ids are labels (IdRows), so ids
//   not from 1 or with gaps read too (meshio takes id - 1 as the row: it agrees only for 1..n).
//   Several Nodes blocks append (meshio keeps the last one's);
// - Elements <Name> / Conditions <Name>: "id property n1 .. nk" lines. The name gives the type:
//   first meshio's own names by substring, in meshio's table order (Triangle2D3, Tetrahedra3D4
//   ...: what its writer writes), else Kratos' "...<d>D<k>N" suffix (Element2D3N,
//   SurfaceCondition3D4N, LineCondition2D2N ...; where meshio falls back on the node count and
//   its table then gives line3 for any 3 nodes), else a ReadError naming the known names. Nodes
//   in the file's order (meshio 5.0's hexahedron20/27 reorder tests a list for a string and
//   never applies). Consecutive blocks of one type make one block (meshio's merge), Elements and
//   Conditions alike; element and condition ids are labels of their own (for SubModelParts).
//   The property ids are not kept (meshio keeps none): noted when any is not 0;
// - SubModelPart <name> (nested: "outer.inner"): SubModelPartNodes -> a point region,
//   SubModelPartElements / SubModelPartConditions -> a cell region (global cell numbers), both
//   named by the part (meshio reads none of it);
// - NodalData <VAR> -> point_data VAR, ElementalData / ConditionalData <VAR> -> cell_data VAR
//   (the element's or condition's cell; both kinds of one VAR fill one cell_data entry):
//   float64, NaN for what the block does not list (meshio 5.0 reads no data). A line is
//   "id value" or "id v1 .. vk" (meshio's writer; k the same on every line: shape (n, k)), or
//   "id [k] (v1, .., vk)" (Kratos' vectors, spaces anywhere: shape (n, k)). A NodalData line may
//   hold Kratos' fixed flag after the id ("id fixed value", "id fixed [k] (..)"): the flag is
//   dropped, noted. "id a b" is that flag when every line's a is 0 or 1, else a 2-vector. Any
//   other layout (matrices "[r,c] ((..))", words that are no numbers, lines of different
//   counts) skips the block, noted; an id no earlier block gives is a ReadError;
// - ModelPartData, Properties, Table, Geometries and any other block: skipped, each noted by
//   name and line (an empty ModelPartData or Properties, as meshio writes them, needs no note).
// The writer is mdpa_writer.cpp.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/id_rows.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

struct MdpaType {
  const char* meshio;
  std::int64_t nodes;
  int dim;  // topological
};

constexpr std::array<MdpaType, 17> kTypes{{
    {"vertex", 1, 0},
    {"line", 2, 1},
    {"line3", 3, 1},
    {"triangle", 3, 2},
    {"triangle6", 6, 2},
    {"quad", 4, 2},
    {"quad8", 8, 2},
    {"quad9", 9, 2},
    {"tetra", 4, 3},
    {"tetra10", 10, 3},
    {"pyramid", 5, 3},
    {"pyramid13", 13, 3},
    {"wedge", 6, 3},
    {"wedge15", 15, 3},
    {"hexahedron", 8, 3},
    {"hexahedron20", 20, 3},
    {"hexahedron27", 27, 3},
}};

std::size_t type_of(std::string_view meshio) {
  for (std::size_t i = 0; i < kTypes.size(); ++i)
    if (meshio == kTypes[i].meshio) return i;
  return kTypes.size();
}

// meshio's table in its order: the first name found in the block's name wins.
constexpr std::array<std::pair<const char*, const char*>, 22> kMeshioNames{{
    {"Line2D2", "line"},
    {"Line3D2", "line"},
    {"Triangle2D3", "triangle"},
    {"Triangle3D3", "triangle"},
    {"Quadrilateral2D4", "quad"},
    {"Quadrilateral3D4", "quad"},
    {"Tetrahedra3D4", "tetra"},
    {"Hexahedra3D8", "hexahedron"},
    {"Prism3D6", "wedge"},
    {"Line2D3", "line3"},
    {"Triangle2D6", "triangle6"},
    {"Triangle3D6", "triangle6"},
    {"Quadrilateral2D9", "quad9"},
    {"Quadrilateral3D9", "quad9"},
    {"Tetrahedra3D10", "tetra10"},
    {"Hexahedra3D27", "hexahedron27"},
    {"Point2D", "vertex"},
    {"Point3D", "vertex"},
    {"Quadrilateral2D8", "quad8"},
    {"Quadrilateral3D8", "quad8"},
    {"Hexahedra3D20", "hexahedron20"},
    // Not in meshio's table, but its writer names a 3-D mesh's line3 so (its reader then finds
    // line3 by the node count).
    {"Line3D3", "line3"},
}};

// A Kratos name "<anything><d>D<k>N": the geometry of k nodes in d dimensions. Surfaces in 3-D
// (SurfaceCondition3D4N, ShellThinElement3D4N) are told by their name from the solids.
std::size_t kratos_type(std::string_view name) {
  if (name.size() < 4 || name.back() != 'N') return kTypes.size();
  std::size_t e = name.size() - 1, b = e;
  while (b > 0 && static_cast<unsigned char>(name[b - 1] - '0') < 10) --b;
  if (b == e || b < 2 || name[b - 1] != 'D') return kTypes.size();
  const char d = name[b - 2];
  if (d != '2' && d != '3') return kTypes.size();
  int k = 0;
  std::from_chars(name.data() + b, name.data() + e, k);
  const bool line = name.find("Line") != std::string_view::npos;
  const bool surface = d == '2' || name.find("Surface") != std::string_view::npos ||
                       name.find("Shell") != std::string_view::npos ||
                       name.find("Membrane") != std::string_view::npos ||
                       name.find("Face") != std::string_view::npos;
  switch (k) {
    case 1:
      return type_of("vertex");
    case 2:
      return type_of("line");
    case 3:
      return type_of(line ? "line3" : "triangle");
    case 4:
      return type_of(surface ? "quad" : "tetra");
    case 5:
      return type_of("pyramid");
    case 6:
      return type_of(surface ? "triangle6" : "wedge");
    case 8:
      return type_of(surface ? "quad8" : "hexahedron");
    case 9:
      return type_of("quad9");
    case 10:
      return type_of("tetra10");
    case 13:
      return type_of("pyramid13");
    case 15:
      return type_of("wedge15");
    case 20:
      return type_of("hexahedron20");
    case 27:
      return type_of("hexahedron27");
    default:
      return kTypes.size();
  }
}

std::size_t block_type(std::string_view name) {
  for (const auto& [key, meshio] : kMeshioNames)
    if (name.find(key) != std::string_view::npos) return type_of(meshio);
  return kratos_type(name);
}

std::string known_names() {
  std::string s;
  for (const auto& [key, meshio] : kMeshioNames) s += std::string(s.empty() ? "" : ", ") + key;
  return s +
         " (meshio's), or Kratos' <Name><2|3>D<k>N with k in 1, 2, 3, 4, 5, 6, 8, 9, 10, 13, "
         "15, 20, 27 (Element2D3N, SurfaceCondition3D3N, ...)";
}

// The words of a line up to a "//" comment.
std::vector<std::string_view> words(std::string_view line) {
  if (const auto c = line.find("//"); c != std::string_view::npos) line = line.substr(0, c);
  std::vector<std::string_view> w;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const auto b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > b) w.push_back(line.substr(b, i - b));
  }
  return w;
}

// A block of cells of one type: blocks of the file merged while the type stays.
struct Block {
  std::size_t type;
  std::int64_t rows = 0;
  Chunks<std::int64_t> conn;  // rows
};

// Consecutive rows of element (or condition) labels that are global cells first, first + 1 ..
struct Run {
  std::int64_t row, global, count;
};

struct Part {
  std::string name;
  std::size_t at;  // its Begin line's offset
  std::vector<std::int64_t> nodes, elements, conditions;
};

// One NodalData / ElementalData / ConditionalData block as read.
struct DataValues {
  std::string block, name;         // "NodalData", "VELOCITY"
  std::size_t at;                  // its Begin line's offset
  std::int64_t width = 1;          // values a row
  bool column = true;              // shape (n,) rather than (n, width)
  std::vector<std::int64_t> rows;  // point rows (NodalData) or global cells
  std::vector<double> values;      // width a row
};

// "[k] (v1, .., vk)" with spaces anywhere: appends the k values to `out`; false (out as it was)
// for anything else, a matrix "[r,c] (..)" included.
bool bracket_values(std::string_view s, std::vector<double>& out) {
  const auto size = out.size();
  std::size_t i = 0;
  const auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  const auto fail = [&] {
    out.resize(size);
    return false;
  };
  const auto expect = [&](char ch) {
    ws();
    if (i >= s.size() || s[i] != ch) return false;
    ++i;
    return true;
  };
  std::int64_t k = 0;
  if (!expect('[')) return fail();
  ws();
  const auto r = std::from_chars(s.data() + i, s.data() + s.size(), k);
  if (r.ec != std::errc() || k < 1) return fail();
  i = static_cast<std::size_t>(r.ptr - s.data());
  if (!expect(']') || !expect('(')) return fail();
  for (std::int64_t n = 0; n < k; ++n) {
    if (n > 0 && !expect(',')) return fail();
    ws();
    const char* b = s.data() + i;
    if (b < s.data() + s.size() && *b == '+') ++b;
    double v = 0;
    const auto q = std::from_chars(b, s.data() + s.size(), v);
    if (q.ec != std::errc()) return fail();
    i = static_cast<std::size_t>(q.ptr - s.data());
    out.push_back(v);
  }
  if (!expect(')')) return fail();
  ws();
  return i == s.size() ? true : fail();
}

class MdpaParser {
 public:
  MdpaParser(std::string_view data, MappedFile& file)
      : file_(file), path_(file.path()), c_(data, path_, file.progress()) {
    c_.seek(utf8_bom(data));
  }

  Mesh parse() {
    std::vector<std::size_t> open_parts;  // parts_ indices of the SubModelParts we are in
    while (true) {
      std::size_t at = 0;
      std::string_view line;
      if (!next_words(line, &at)) break;
      const auto w = words(line);
      if (w.empty()) continue;
      if (w[0] == "End") {
        if (open_parts.empty() || (w.size() > 1 && w[1] != "SubModelPart")) {
          c_.seek(at);
          c_.fail("'" + std::string(Cursor::trim(line)) + "' ends no block that is open");
        }
        open_parts.pop_back();
        continue;
      }
      if (w[0] != "Begin" || w.size() < 2) {
        c_.seek(at);
        c_.fail("expected a block's 'Begin <Name>' line, found '" +
                std::string(Cursor::trim(line).substr(0, 60)) + "'");
      }
      if (open_parts.empty())
        top_block(w, at, open_parts);
      else
        part_block(w, at, open_parts);
    }
    if (!open_parts.empty()) {
      c_.seek(parts_[open_parts.back()].at);
      c_.fail("SubModelPart " + parts_[open_parts.back()].name + " has no 'End SubModelPart'");
    }
    return finish();
  }

 private:
  MappedFile& file_;
  const std::string& path_;
  Cursor c_;
  Chunks<double> coords_;
  std::int64_t npoints_ = 0;
  IdRows node_rows_, element_rows_, condition_rows_;
  std::int64_t nelements_ = 0, nconditions_ = 0, ncells_ = 0;
  std::vector<Run> element_runs_, condition_runs_;
  std::vector<Block> blocks_;
  std::vector<Part> parts_;
  std::vector<DataValues> data_;
  bool nonzero_property_ = false;
  static constexpr std::size_t kMaxNesting = 64;
  std::vector<std::string> notes_;

  // "file:line" of byte `at`: newlines counted with pread (MappedFile::newlines) on from the last
  // byte asked for. Notes come in file order, so all of them cost one pass over the file, and
  // none goes back through the window's pages (Cursor::line_at would scan them from the start,
  // once a note).
  std::size_t line_pos_ = 0, line_no_ = 1;
  std::string where(std::size_t at) {
    at = std::min(at, c_.offset() + c_.remaining());
    if (at < line_pos_) line_pos_ = 0, line_no_ = 1;
    line_no_ += file_.newlines(line_pos_, at);
    line_pos_ = at;
    return path_ + ":" + std::to_string(line_no_);
  }

  // A note about the block at `at` ("mdpa: file:line: " + what). Only the first kLineNotes get
  // one each; the rest are counted in one note (a file of a million skipped blocks gives one
  // note, not a million).
  static constexpr std::size_t kLineNotes = 32;
  std::size_t line_notes_ = 0, more_notes_ = 0;
  void note_at(std::size_t at, const std::string& what) {
    if (line_notes_++ < kLineNotes)
      notes_.push_back("mdpa: " + where(at) + ": " + what);
    else
      ++more_notes_;
  }

  // The next line that has words (blank and comment lines skipped), `at` its offset (may be
  // null): false at the end.
  bool next_words(std::string_view& line, std::size_t* at = nullptr) {
    while (!c_.at_end()) {
      file_.advance(c_.offset());
      if (at) *at = c_.offset();
      line = c_.rest_of_line();
      const auto t = Cursor::trim(line);
      if (!t.empty() && !t.starts_with("//")) return true;
    }
    return false;
  }

  void top_block(const std::vector<std::string_view>& w, std::size_t at,
                 std::vector<std::size_t>& open_parts) {
    const auto kind = w[1];
    if (kind == "Nodes") return read_nodes(at);
    if (kind == "Elements" || kind == "Conditions") {
      if (w.size() < 3) {
        c_.seek(at);
        c_.fail("expected 'Begin " + std::string(kind) + " <KratosName>', found no name");
      }
      return read_cells(kind == "Elements", w[2], at);
    }
    if (kind == "SubModelPart") return open_part(w, at, open_parts, "");
    if ((kind == "NodalData" || kind == "ElementalData" || kind == "ConditionalData") &&
        w.size() >= 3)
      return read_data(kind, w[2], at);
    skip_block(w, at, kind == "ModelPartData" || kind == "Properties");
  }

  void part_block(const std::vector<std::string_view>& w, std::size_t at,
                  std::vector<std::size_t>& open_parts) {
    const auto kind = w[1];
    auto& part = parts_[open_parts.back()];
    if (kind == "SubModelPart") return open_part(w, at, open_parts, part.name + ".");
    if (kind == "SubModelPartNodes") return read_ids(part.nodes, kind);
    if (kind == "SubModelPartElements") return read_ids(part.elements, kind);
    if (kind == "SubModelPartConditions") return read_ids(part.conditions, kind);
    skip_block(w, at,
               kind == "SubModelPartData" || kind == "SubModelPartProperties" ||
                   kind == "SubModelPartTables");
  }

  void open_part(const std::vector<std::string_view>& w, std::size_t at,
                 std::vector<std::size_t>& open_parts, const std::string& prefix) {
    if (w.size() < 3) {
      c_.seek(at);
      c_.fail("expected 'Begin SubModelPart <name>', found no name");
    }
    // Each level's name holds its parents': deeper nesting would cost memory quadratic in it.
    if (open_parts.size() == kMaxNesting) {
      c_.seek(at);
      c_.fail("SubModelParts nested more than " + std::to_string(kMaxNesting) + " deep");
    }
    parts_.push_back(Part{prefix + std::string(w[2]), at, {}, {}, {}});
    open_parts.push_back(parts_.size() - 1);
  }

  // Skips to the start of the next line that has a value: false (having stopped at its start)
  // when that line is the block's End.
  bool data_line(std::string_view block) {
    while (true) {
      file_.advance(c_.offset());
      c_.skip_ws();
      file_.advance(c_.offset());
      if (c_.at_end()) c_.fail("the file ends in a " + std::string(block) + " block (no End)");
      const char* p = c_.data().data() + c_.offset();
      const auto left = c_.remaining();
      if (left >= 2 && p[0] == '/' && p[1] == '/') {
        c_.next_line();
        continue;
      }
      if (left >= 3 && p[0] == 'E' && p[1] == 'n' && p[2] == 'd') return false;
      return true;
    }
  }

  // True when the current line has no more values (a trailing comment counts as none).
  bool line_done() {
    c_.skip_blanks();
    if (c_.at_end()) return true;
    const char* p = c_.data().data() + c_.offset();
    return *p == '\n' || (c_.remaining() >= 2 && p[0] == '/' && p[1] == '/');
  }

  // The End line of a `block`: "End" or "End <block>" (with anything after, as Kratos' own
  // "End NodalData VAR").
  void end_line(std::string_view block) {
    const auto at = c_.offset();
    const auto w = words(c_.rest_of_line());
    if (w[0] != "End" || (w.size() > 1 && w[1] != block)) {
      c_.seek(at);
      c_.fail("expected 'End " + std::string(block) + "'");
    }
  }

  void finish_line(const char* what) {
    if (!line_done()) c_.fail(std::string("expected the end of the line after ") + what);
    c_.next_line();
  }

  void read_nodes(std::size_t) {
    while (data_line("Nodes")) {
      const auto id = c_.number<std::int64_t>("a node id");
      std::array<double, 3> x;
      for (auto& v : x) {
        if (line_done()) [[unlikely]]
          c_.fail("node " + std::to_string(id) + ": expected 'id x y z'");
        v = c_.number<double>("a coordinate");
      }
      finish_line("a node's 'id x y z'");
      if (!node_rows_.add(id, npoints_)) [[unlikely]]
        c_.fail("node id " + std::to_string(id) + " is given twice");
      coords_.append(x.data(), 3);
      ++npoints_;
    }
    end_line("Nodes");
  }

  // The common cell line, "id property n1 .. nk" of plain decimal integers, read without the
  // cursor's per-value checks; false, having read nothing, for any other line (a comment, a
  // sign, a wrong count), which the checked path then reads or reports.
  bool fast_cell(Block& b, std::int64_t nodes, std::array<std::int64_t, 2>& head) {
    const char* const begin = c_.data().data();
    const char* const end = begin + c_.data().size();
    const char* p = begin + c_.offset();
    std::array<std::int64_t, 29> v;  // id, property, 27 nodes at most
    const std::size_t n = plain_ints_line(p, end, v.data(), v.size(), p);
    if (n == 0) return false;
    if (static_cast<std::int64_t>(n) != nodes + 2) return false;
    for (std::size_t k = 2; k < n; ++k) {
      v[k] = node_rows_.find(v[k], npoints_);
      if (v[k] < 0) return false;
    }
    head = {v[0], v[1]};
    b.conn.append(v.data() + 2, static_cast<std::size_t>(nodes));
    c_.seek(static_cast<std::size_t>(p - begin));
    c_.tick();
    return true;
  }

  void read_cells(bool elements, std::string_view name, std::size_t at) {
    const auto kind = elements ? "Elements" : "Conditions";
    const auto t = block_type(name);
    if (t == kTypes.size()) {
      c_.seek(at);
      c_.fail("unknown " + std::string(kind) + " name '" + std::string(name.substr(0, 60)) +
              "': known are " + known_names());
    }
    const auto nodes = kTypes[t].nodes;
    auto& rows = elements ? element_rows_ : condition_rows_;
    auto& count = elements ? nelements_ : nconditions_;
    auto& runs = elements ? element_runs_ : condition_runs_;
    runs.push_back(Run{count, ncells_, 0});
    while (data_line(kind)) {
      // A block of no lines makes none (as meshio's); one of the type before adds to it.
      if (blocks_.empty() || blocks_.back().type != t) blocks_.push_back(Block{t, 0, {}});
      auto& b = blocks_.back();
      std::array<std::int64_t, 2> head;
      if (!fast_cell(b, nodes, head)) [[unlikely]]
        checked_cell(b, nodes, name, head);
      if (head[1] != 0) nonzero_property_ = true;
      if (!rows.add(head[0], count)) [[unlikely]]
        c_.fail(std::string(elements ? "element" : "condition") + " id " + std::to_string(head[0]) +
                " is given twice");
      ++count;
      ++b.rows;
      ++ncells_;
      ++runs.back().count;
    }
    end_line(kind);
  }

  void checked_cell(Block& b, std::int64_t nodes, std::string_view name,
                    std::array<std::int64_t, 2>& head) {
    const auto line_at = c_.offset();
    head[0] = c_.number<std::int64_t>("an id");
    if (line_done()) c_.fail("expected 'id property nodes..' lines");
    head[1] = c_.number<std::int64_t>("a property id");
    for (std::int64_t k = 0; k < nodes; ++k) {
      if (line_done()) {
        c_.seek(line_at);
        c_.fail("a " + std::string(name) + " (" + kTypes[b.type].meshio + ") has " +
                std::to_string(nodes) + " nodes; the line lists " + std::to_string(k));
      }
      b.conn.push_back(node_row(c_.number<std::int64_t>("a node id")));
    }
    if (!line_done()) {
      c_.seek(line_at);
      c_.fail("a " + std::string(name) + " (" + kTypes[b.type].meshio + ") has " +
              std::to_string(nodes) + " nodes; the line lists more");
    }
    c_.next_line();
  }

  // Ids, any number a line, up to the block's End: each the row (nodes) or global cell number
  // (elements, conditions) of what an earlier block gives.
  void read_ids(std::vector<std::int64_t>& out, std::string_view kind) {
    while (data_line(kind)) {
      while (!line_done()) {
        const auto id = c_.number<std::int64_t>("an id");
        if (kind == "SubModelPartNodes") {
          out.push_back(node_row(id));
          continue;
        }
        out.push_back(global_cell(kind == "SubModelPartElements", id));
      }
      c_.next_line();
    }
    end_line(kind);
  }

  // The global cell of element (or condition) `id`, which a block before this line must give.
  std::int64_t global_cell(bool elements, std::int64_t id) const {
    const auto row =
        (elements ? element_rows_ : condition_rows_).find(id, elements ? nelements_ : nconditions_);
    const auto g = row < 0 ? -1 : global_of(elements ? element_runs_ : condition_runs_, row);
    if (g < 0)
      c_.fail(std::string(elements ? "element " : "condition ") + std::to_string(id) +
              " is in no " + (elements ? "Elements" : "Conditions") + " block before this line");
    return g;
  }

  // The row (NodalData) or global cell (ElementalData, ConditionalData) of `id`.
  std::int64_t data_row(std::string_view block, std::int64_t id) const {
    return block == "NodalData" ? node_row(id) : global_cell(block == "ElementalData", id);
  }

  // A data block's lines (the layouts in the header); any other layout skips the block, noted.
  void read_data(std::string_view block, std::string_view var, std::size_t at) {
    const bool nodal = block == "NodalData";
    DataValues dv;
    dv.block = block;
    dv.name = var;
    dv.at = at;
    int layout = 0;          // 1: plain numbers, 2: [k] (..), 3: fixed [k] (..)
    std::int64_t count = 0;  // numbers after the id on every line (layout 1)
    bool flags = nodal;      // every line's first number is a 0 / 1 word (layout 1, count 2)
    while (data_line(block)) {
      const auto line_at = c_.offset();
      auto line = c_.rest_of_line();
      if (const auto c = line.find("//"); c != std::string_view::npos) line = line.substr(0, c);
      const auto w = words(line);
      std::int64_t id = 0;
      const auto size = dv.values.size();
      int this_layout = 0;
      std::int64_t n = 0;
      if (!w.empty() && parse_word(w[0], id)) {
        const auto rest = Cursor::trim(
            line.substr(static_cast<std::size_t>(w[0].data() + w[0].size() - line.data())));
        if (!rest.empty() && rest.front() == '[') {
          if (bracket_values(rest, dv.values)) this_layout = 2;
        } else if (nodal && w.size() >= 3 && w[2].front() == '[' && (w[1] == "0" || w[1] == "1")) {
          const auto after = Cursor::trim(
              rest.substr(static_cast<std::size_t>(w[1].data() + w[1].size() - rest.data())));
          if (bracket_values(after, dv.values)) this_layout = 3;
        } else {
          this_layout = 1;
          for (std::size_t k = 1; k < w.size() && this_layout; ++k) {
            double v = 0;
            if (parse_word(w[k], v))
              dv.values.push_back(v);
            else
              this_layout = 0;
          }
          if (w.size() < 2) this_layout = 0;
          if (this_layout) flags = flags && (w[1] == "0" || w[1] == "1");
        }
        n = static_cast<std::int64_t>(dv.values.size() - size);
      }
      const bool first = dv.rows.empty();
      if (this_layout == 0 || (!first && (this_layout != layout || n != count))) {
        dv.values.resize(size);
        note_at(line_at,
                std::string(block) + " " + std::string(var) + " is not read: " +
                    (this_layout == 0
                         ? "its lines are not 'id value', 'id v1 .. vk' or 'id [k] (v1, .., vk)'"
                         : "its lines do not all hold the same number of values"));
        c_.seek(line_at);
        skip_rest(block);
        return;
      }
      layout = this_layout;
      count = n;
      c_.seek(line_at);
      c_.rest_of_line();  // the line an unknown id's error names
      dv.rows.push_back(data_row(block, id));
    }
    end_line(block);
    if (dv.rows.empty()) return;
    dv.width = count;
    dv.column = layout == 1 && count == 1;
    if (layout == 3 || (layout == 1 && count == 2 && flags)) {
      if (layout == 1) {  // drop the flag column
        for (std::size_t r = 0; r < dv.rows.size(); ++r) dv.values[r] = dv.values[2 * r + 1];
        dv.values.resize(dv.rows.size());
        dv.width = 1;
        dv.column = true;
      }
      note_at(at, "NodalData " + std::string(var) +
                      ": the fixed flags are not kept, the values are point_data");
    }
    data_.push_back(std::move(dv));
  }

  template <typename T>
  static bool parse_word(std::string_view s, T& v) {
    const char* b = s.data();
    if (!s.empty() && *b == '+') ++b;
    const auto r = std::from_chars(b, s.data() + s.size(), v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
  }

  // Up to the End line closing the current block (nested Begin / End counted), past it; true
  // when a line other than Begin / End has a value.
  bool skip_rest(std::string_view block) {
    int depth = 0;
    bool values = false;
    std::string_view line;
    while (next_words(line)) {
      const auto w = words(line);
      if (w.empty()) continue;
      if (w[0] == "Begin") {
        ++depth;
      } else if (w[0] == "End") {
        if (depth-- == 0) return values;
      } else {
        values = true;
      }
    }
    c_.fail("the file ends in a " + std::string(block) + " block (no End)");
  }

  // A block meshdock does not read: noted unless `quiet_if_empty` and it holds no values.
  void skip_block(const std::vector<std::string_view>& w, std::size_t at, bool quiet_if_empty) {
    if (!skip_rest(w[1]) && quiet_if_empty) return;
    std::string name;
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (i > 1) name += ' ';
      name += w[i];
    }
    note_at(at, "block '" + name + "' is not read");
  }

  // The row of node `id`, which a Nodes block before the line read last must give.
  std::int64_t node_row(std::int64_t id) const {
    const auto r = node_rows_.find(id, npoints_);
    if (r < 0) [[unlikely]]
      c_.fail("node " + std::to_string(id) + " is in no Nodes block before this line");
    return r;
  }

  // Runs start at rising rows (an empty block's run shares its row with the next): the last
  // run starting at or before `row` holds it, if any does. A search, not a scan: a file of many
  // blocks and long SubModelParts stays linear.
  static std::int64_t global_of(const std::vector<Run>& runs, std::int64_t row) {
    const auto it = std::upper_bound(runs.begin(), runs.end(), row,
                                     [](std::int64_t x, const Run& r) { return x < r.row; });
    if (it == runs.begin()) return -1;
    const auto& r = *std::prev(it);
    return row < r.row + r.count ? r.global + (row - r.row) : -1;
  }

  Mesh finish() {
    Mesh m;
    m.points = Array::of<double>({npoints_, 3});
    coords_.drain_to(m.points.as<double>());
    for (auto& b : blocks_) {
      auto conn = Array::of<std::int64_t>({b.rows, kTypes[b.type].nodes});
      b.conn.drain_to(conn.as<std::int64_t>());
      m.cells.push_back(CellBlock::fixed(kTypes[b.type].meshio, std::move(conn)));
    }
    if (nonzero_property_)
      notes_.push_back("mdpa: " + path_ +
                       ": the cells' property ids are not kept (meshio keeps none either)");
    if (more_notes_)
      notes_.push_back("mdpa: " + path_ + ": " + std::to_string(more_notes_) +
                       " more blocks are not read, or read in part, as the notes above say");
    data_arrays(m);
    regions(m);
    file_.release_before(c_.offset());
    m.notes = std::move(notes_);
    return m;
  }

  // The data blocks as point_data and cell_data, NaN where a block lists no value. Blocks of one
  // name fill one array; one whose shape differs from the first's is left out, noted.
  void data_arrays(Mesh& m) {
    const auto starts = block_starts(m);
    const auto nan_array = [](std::int64_t rows, const DataValues& dv) {
      auto a = dv.column ? Array::of<double>({rows}) : Array::of<double>({rows, dv.width});
      std::fill(a.as<double>(), a.as<double>() + rows * dv.width,
                std::numeric_limits<double>::quiet_NaN());
      return a;
    };
    const auto fits = [](const DataValues& dv, const Array& first) {
      return first.ndim() == (dv.column ? 1 : 2) && (dv.column || first.dim(1) == dv.width);
    };
    const auto shape_note = [&](const DataValues& dv, const Array& first) {
      note_at(dv.at, dv.block + " " + dv.name + " is not read: its values are " +
                         (dv.column ? "one" : std::to_string(dv.width)) +
                         " a row, where an earlier block of that name holds " +
                         (first.ndim() == 1 ? "one" : std::to_string(first.dim(1))));
    };
    for (const auto& dv : data_) {
      const auto w = static_cast<std::size_t>(dv.width);
      if (dv.block == "NodalData") {
        auto it = m.point_data.find(dv.name);
        if (it == m.point_data.end())
          it = m.point_data.emplace(dv.name, nan_array(npoints_, dv)).first;
        else if (!fits(dv, it->second)) {
          shape_note(dv, it->second);
          continue;
        }
        auto* v = it->second.as<double>();
        for (std::size_t r = 0; r < dv.rows.size(); ++r)
          std::copy_n(dv.values.data() + r * w, w, v + static_cast<std::size_t>(dv.rows[r]) * w);
        continue;
      }
      auto it = m.cell_data.find(dv.name);
      if (it == m.cell_data.end()) {
        std::vector<Array> arrays;
        for (const auto& b : m.cells) arrays.push_back(nan_array(b.size(), dv));
        it = m.cell_data.emplace(dv.name, std::move(arrays)).first;
      } else if (!fits(dv, it->second.front())) {
        shape_note(dv, it->second.front());
        continue;
      }
      for (std::size_t r = 0; r < dv.rows.size(); ++r) {
        const auto g = dv.rows[r];
        const auto b = block_of(starts, g);
        std::copy_n(dv.values.data() + r * w, w,
                    it->second[b].as<double>() + static_cast<std::size_t>(g - starts[b]) * w);
      }
    }
  }

  // The cells' largest dimension among `cells` (global numbers).
  int cells_dim(const std::vector<std::int64_t>& cells, const Mesh& m) const {
    int dim = 0;
    const auto starts = block_starts(m);
    for (const auto g : cells) {
      const auto b = block_of(starts, g);
      dim = std::max(dim, kTypes[type_of(m.cells[b].type)].dim);
      if (dim == 3) break;
    }
    return dim;
  }

  void regions(Mesh& m) {
    for (std::size_t p = 0; p < parts_.size(); ++p) {
      const auto& part = parts_[p];
      if (!part.nodes.empty()) {
        Region r;
        r.name = part.name;
        r.kind = RegionKind::kPoint;
        r.tag = static_cast<std::int64_t>(p) + 1;
        r.entries = Array::from_vector(part.nodes);
        m.regions.push_back(std::move(r));
      }
      if (part.elements.empty() && part.conditions.empty()) continue;
      auto cells = part.elements;
      cells.insert(cells.end(), part.conditions.begin(), part.conditions.end());
      Region r;
      r.name = part.name;
      r.kind = RegionKind::kCell;
      r.tag = static_cast<std::int64_t>(p) + 1;
      r.dim = cells_dim(cells, m);
      r.entries = Array::from_vector(cells);
      m.regions.push_back(std::move(r));
    }
  }
};

}  // namespace

Mesh read_mdpa(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return MdpaParser(data, file).parse(); },
      Access::window);
}

}  // namespace meshdock::mesh
