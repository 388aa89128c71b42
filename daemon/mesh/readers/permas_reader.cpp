// PERMAS (INTES) model data (.dato, .post; gzipped .dato.gz / .post.gz), as meshio reads it
// ("permas") and beyond, where meshio drops what the file says:
// - a line whose first non-blank is '$' is a keyword line: the keyword is its first word (any
//   case: meshio upper-cases it), then parameters "NAME = value" (blanks around '=' or none;
//   meshio's "TYPE=X" needs none); every other non-blank line is a data line of the last
//   keyword. '!' starts a comment anywhere on a line (PERMAS'; meshio skips lines that start
//   with one); blank lines are skipped;
// - $COOR: "id x y z" lines -> points (n, 3) float64, the ids labels (any integers, any order;
//   one given twice is a ReadError naming both lines). Several $COOR blocks append (meshio keeps
//   the last block's points and reads the earlier blocks' elements through stale ids).
//   Reals as PERMAS writes them: 1.0, 1.E-3, and 0.7+1 (the exponent's 'E' left out);
// - $ELEMENT TYPE = <type>: "id n1 .. nk" rows, k by the type (meshio's names: TET4, HEXE8,
//   TRIA3, QUAD4, PENTA6, PYRA5, TET10, HEXE20, BECOS ...; another is a ReadError listing
//   them); a row may go on over lines until it holds its k nodes (a '&' before a continued
//   line's values is skipped). Each $ELEMENT makes one block (meshio's). Nodes as written but
//   for the types meshio's writer reorders (TET10; LOADA6 / TRIMS6: triangle6; PLOTA9 / LOADA9
//   / QUAMS9: quad9; PENTA15: PERMAS' order along the edges), which are taken back to VTK's
//   (meshio's reader keeps the writer's order, so its own round trip moves the mid-side nodes);
// - sets, which meshio reads and drops: $NSET NAME = n (node ids) -> point region n, $ESET
//   NAME = n (element ids) -> cell region n, and the ESET = n / NSET = n parameters of $ELEMENT
//   / $COOR -> the block's cells / nodes in region n; a set named twice is one region (sorted,
//   each entry once, as meshio's np.unique); an id no node or element has is a ReadError naming
//   the set and its line;
// - $FIN ends the input; $ENTER / $EXIT COMPONENT, $STRUCTURE / $END STRUCTURE bracket it; every
//   other keyword and its data lines are skipped (meshio's "too many PERMAS keywords"), noted
//   once per keyword with the number of times and the first line.
// Element ids are labels too (for $ESET), unique over the file. Errors name the file and line
// (of the inflated text for a gzipped file) and what was expected.
#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/gzip_text.hpp"
#include "daemon/mesh/readers/id_rows.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

// PERMAS' element names (meshio's permas_to_meshio_type), their node counts and, for the types
// meshio's writer reorders, PERMAS' node k -> VTK's node order[k] (the writer's
// tet10_order / tria6_order / quad9_order / wedge15_order read as "PERMAS node k is VTK node
// order[k]"); empty: as written.
struct PermasType {
  std::string_view name;
  std::string_view meshio;
  int nodes;
  std::array<std::uint8_t, 15> order;
};

constexpr std::array<std::uint8_t, 15> kAsWritten{};
constexpr std::array<std::uint8_t, 15> kTet10{0, 4, 1, 5, 2, 6, 7, 8, 9, 3};
constexpr std::array<std::uint8_t, 15> kTria6{0, 3, 1, 4, 2, 5};
constexpr std::array<std::uint8_t, 15> kQuad9{0, 4, 1, 7, 8, 5, 3, 6, 2};
constexpr std::array<std::uint8_t, 15> kWedge15{0, 6, 1, 7, 2, 8, 9, 10, 11, 3, 12, 4, 13, 5, 14};

constexpr std::array<PermasType, 41> kTypes{{
    {"PLOT1", "vertex", 1, kAsWritten},
    {"PLOTL2", "line", 2, kAsWritten},
    {"FLA2", "line", 2, kAsWritten},
    {"FLA3", "line3", 3, kAsWritten},
    {"PLOTL3", "line3", 3, kAsWritten},
    {"BECOS", "line", 2, kAsWritten},
    {"BECOC", "line", 2, kAsWritten},
    {"BETAC", "line", 2, kAsWritten},
    {"BECOP", "line", 2, kAsWritten},
    {"BETOP", "line", 2, kAsWritten},
    {"BEAM2", "line", 2, kAsWritten},
    {"FSCPIPE2", "line", 2, kAsWritten},
    {"LOADA4", "quad", 4, kAsWritten},
    {"PLOTA4", "quad", 4, kAsWritten},
    {"QUAD4", "quad", 4, kAsWritten},
    {"QUAD4S", "quad", 4, kAsWritten},
    {"QUAMS4", "quad", 4, kAsWritten},
    {"SHELL4", "quad", 4, kAsWritten},
    {"PLOTA8", "quad8", 8, kAsWritten},
    {"LOADA8", "quad8", 8, kAsWritten},
    {"QUAMS8", "quad8", 8, kAsWritten},
    {"PLOTA9", "quad9", 9, kQuad9},
    {"LOADA9", "quad9", 9, kQuad9},
    {"QUAMS9", "quad9", 9, kQuad9},
    {"PLOTA3", "triangle", 3, kAsWritten},
    {"SHELL3", "triangle", 3, kAsWritten},
    {"TRIA3", "triangle", 3, kAsWritten},
    {"TRIA3K", "triangle", 3, kAsWritten},
    {"TRIA3S", "triangle", 3, kAsWritten},
    {"TRIMS3", "triangle", 3, kAsWritten},
    {"LOADA6", "triangle6", 6, kTria6},
    {"TRIMS6", "triangle6", 6, kTria6},
    {"HEXE8", "hexahedron", 8, kAsWritten},
    {"HEXFO8", "hexahedron", 8, kAsWritten},
    {"HEXE20", "hexahedron20", 20, kAsWritten},
    {"HEXE27", "hexahedron27", 27, kAsWritten},
    {"TET4", "tetra", 4, kAsWritten},
    {"TET10", "tetra10", 10, kTet10},
    {"PYRA5", "pyramid", 5, kAsWritten},
    {"PENTA6", "wedge", 6, kAsWritten},
    {"PENTA15", "wedge15", 15, kWedge15},

}};

bool reordered(const PermasType& t) {
  return t.order != kAsWritten;
}

std::string type_names() {
  std::string s;
  for (const auto& t : kTypes) {
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

// A keyword line's words, '=' a word of its own: "$ELEMENT TYPE=TET4" -> ELEMENT TYPE = TET4.
std::vector<std::string_view> keyword_words(std::string_view line) {
  std::vector<std::string_view> w;
  std::size_t i = 0;
  while (i < line.size()) {
    const char ch = line[i];
    if (ch == ' ' || ch == '\t' || ch == '\r' || ch == ',') {
      ++i;
      continue;
    }
    if (ch == '=') {
      w.push_back(line.substr(i, 1));
      ++i;
      continue;
    }
    const auto b = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
           line[i] != '=' && line[i] != ',')
      ++i;
    w.push_back(line.substr(b, i - b));
  }
  return w;
}

// A set being read: its name, what it holds, the raw ids and the first line naming it.
struct Set {
  std::string name;
  RegionKind kind;
  std::vector<std::int64_t> ids;  // node / element ids as written
  std::size_t line;
};

struct Block {
  const PermasType* type;
  std::size_t line;
  Chunks<std::int64_t> nodes;  // node ids as written, in VTK's order
  std::int64_t rows = 0;
};

class PermasParser {
 public:
  PermasParser(std::string_view data, const std::string& path, ReadProgress* progress,
               MappedFile* file)
      : data_(data), path_(path), progress_(progress), file_(file) {
    pos_ = utf8_bom(data);
  }

  Mesh parse() {
    while (next_line()) {
      if (line_[0] == '$') {
        if (!keyword()) break;
        continue;
      }
      switch (mode_) {
        case Mode::kCoor:
          coor_row();
          break;
        case Mode::kElement:
          element_values();
          break;
        case Mode::kSet:
          set_values();
          break;
        case Mode::kNone:
          fail("a data line before any keyword ('$COOR', '$ELEMENT ...')");
        case Mode::kSkip:
          break;
      }
    }
    if (pending_ > 0) short_row("the file ends");
    return finish();
  }

 private:
  enum class Mode { kNone, kCoor, kElement, kSet, kSkip };

  std::string_view data_;
  const std::string& path_;
  ReadProgress* progress_;
  MappedFile* file_;  // null: the text is in memory (inflated)
  std::size_t pos_ = 0;
  std::size_t line_no_ = 0;
  std::size_t next_report_ = ReadProgress::kEvery;
  std::string_view line_;  // the current line, comment and trailing blanks cut, leading ones too

  Mode mode_ = Mode::kNone;
  Chunks<double> coords_;
  std::int64_t npoints_ = 0;
  IdRows node_ids_;
  std::vector<Block> blocks_;
  IdRows cell_ids_;
  std::int64_t ncells_ = 0;
  std::vector<Set> sets_;
  std::map<std::pair<RegionKind, std::string>, std::size_t> set_index_;
  static constexpr std::size_t kNoSet = static_cast<std::size_t>(-1);
  std::size_t set_ = kNoSet;  // the set the rows being read go to
  // An element row going on over lines: its id, the nodes so far, where it started.
  std::int64_t row_id_ = 0;
  int pending_ = 0;
  int pending_done_ = 0;
  std::size_t row_line_ = 0;
  std::array<std::int64_t, 27> row_{};
  struct Skipped {
    std::size_t count = 0;
    std::size_t first_line = 0;
  };
  std::map<std::string, Skipped> skipped_;
  std::vector<std::string> notes_;

  [[noreturn]] void fail_at(std::size_t line, const std::string& what) const {
    throw ReadError(path_ + ":" + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(line_no_, what); }
  // An element row that has fewer nodes than its type when `when`.
  [[noreturn]] void short_row(const char* when) const {
    const auto& t = *blocks_.back().type;
    fail_at(row_line_, "element " + std::to_string(row_id_) + " ($ELEMENT TYPE = " +
                           std::string(t.name) + ") has " + std::to_string(pending_done_) +
                           " of its " + std::to_string(t.nodes) + " nodes when " + when);
  }

  // The next line that is not blank once its comment is cut; false at the end.
  bool next_line() {
    while (pos_ < data_.size()) {
      if (file_) file_->advance(pos_);
      if (pos_ >= next_report_) [[unlikely]] {
        if (progress_) progress_->reached(pos_, path_);
        next_report_ = pos_ + ReadProgress::kEvery;
      }
      const char* b = data_.data() + pos_;
      const char* nl = static_cast<const char*>(std::memchr(b, '\n', data_.size() - pos_));
      const std::size_t len = nl ? static_cast<std::size_t>(nl - b) : data_.size() - pos_;
      pos_ += len + (nl ? 1 : 0);
      ++line_no_;
      std::string_view line(b, len);
      if (const auto bang = line.find('!'); bang != std::string_view::npos)
        line = line.substr(0, bang);
      const auto s = line.find_first_not_of(" \t\r");
      if (s == std::string_view::npos) continue;
      const auto e = line.find_last_not_of(" \t\r");
      line_ = line.substr(s, e - s + 1);
      return true;
    }
    return false;
  }

  // A keyword line; false at $FIN.
  bool keyword() {
    if (pending_ > 0) short_row("the next keyword starts");
    const auto words = keyword_words(line_.substr(1));
    if (words.empty()) fail("a '$' with no keyword after it");
    const auto key = words[0];
    // Parameters: NAME = value pairs after the keyword (and after a second word: ENTER
    // COMPONENT, END STRUCTURE).
    auto param = [&](std::string_view name) -> std::string_view {
      for (std::size_t i = 1; i + 2 < words.size(); ++i)
        if (words[i + 1] == "=" && same_name(words[i], name)) return words[i + 2];
      return {};
    };
    if (same_name(key, "FIN")) return false;
    if (same_name(key, "COOR")) {
      mode_ = Mode::kCoor;
      if (const auto nset = param("NSET"); !nset.empty())
        open_set(nset, RegionKind::kPoint);
      else
        set_ = kNoSet;
      return true;
    }
    if (same_name(key, "ELEMENT")) {
      const auto type = param("TYPE");
      if (type.empty())
        fail("$ELEMENT without TYPE = <element type> (one of " + type_names() + ")");
      const PermasType* t = nullptr;
      for (const auto& k : kTypes)
        if (same_name(type, k.name)) t = &k;
      if (!t)
        fail("element type '" + std::string(type.substr(0, 40)) + "' is not one meshdock reads (" +
             type_names() + ")");
      blocks_.push_back(Block{t, line_no_, {}, 0});
      mode_ = Mode::kElement;
      if (const auto eset = param("ESET"); !eset.empty())
        open_set(eset, RegionKind::kCell);
      else
        set_ = kNoSet;
      return true;
    }
    if (same_name(key, "NSET") || same_name(key, "ESET")) {
      const auto name = param("NAME");
      if (name.empty()) fail("$" + ascii_upper(key) + " without NAME = <set name>");
      open_set(name, same_name(key, "NSET") ? RegionKind::kPoint : RegionKind::kCell);
      mode_ = Mode::kSet;
      return true;
    }
    mode_ = Mode::kSkip;
    if (same_name(key, "ENTER") || same_name(key, "EXIT") || same_name(key, "STRUCTURE") ||
        same_name(key, "END"))
      return true;  // brackets
    auto& s = skipped_[ascii_upper(key).substr(0, 40)];
    if (s.count++ == 0) s.first_line = line_no_;
    return true;
  }

  // The set named `name` of `kind`, made on its first mention; looked up by name, not searched:
  // a file of a million set keywords stays linear.
  void open_set(std::string_view name, RegionKind kind) {
    const auto [it, made] = set_index_.try_emplace({kind, std::string(name)}, sets_.size());
    if (made) sets_.push_back(Set{std::string(name), kind, {}, line_no_});
    set_ = it->second;
  }

  // One value of a data line from `p`: the token up to a blank; `q` past it.
  static std::string_view token(const char*& p, const char* e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == ',')) ++p;
    const char* b = p;
    while (p < e && *p != ' ' && *p != '\t' && *p != '\r' && *p != ',') ++p;
    return {b, static_cast<std::size_t>(p - b)};
  }

  std::int64_t id(std::string_view t, const char* what) const {
    std::int64_t v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size())
      fail(std::string("expected ") + what + ", found '" + std::string(t.substr(0, 40)) + "'");
    return v;
  }

  double real(std::string_view t) const {
    double v = 0;
    const char* b = t.data() + (!t.empty() && t[0] == '+' ? 1 : 0);
    const auto r = std::from_chars(b, t.data() + t.size(), v);
    if (!t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size()) [[likely]]
      return v;
    if (parse_real_implicit(t, v)) return v;
    fail("expected a coordinate, found '" + std::string(t.substr(0, 40)) + "'");
  }

  void coor_row() {
    const char* p = line_.data();
    const char* e = p + line_.size();
    const auto nid = id(token(p, e), "a node id");
    double x[3];
    for (int k = 0; k < 3; ++k) {
      const auto t = token(p, e);
      if (t.empty())
        fail("node " + std::to_string(nid) + " has " + std::to_string(k) +
             " coordinates; a PERMAS node has 3 (x y z)");
      x[k] = real(t);
    }
    if (!token(p, e).empty()) fail("node " + std::to_string(nid) + " has more than 3 coordinates");
    if (!node_ids_.add(nid, npoints_)) [[unlikely]]
      fail("node id " + std::to_string(nid) + " is given twice (first on line " +
           std::to_string(first_line_of_node(nid)) + ")");
    coords_.append(x, 3);
    if (set_ != kNoSet) sets_[set_].ids.push_back(nid);
    ++npoints_;
  }

  // The line of the first $COOR row with `nid` (only for the message: the file is scanned).
  std::size_t first_line_of_node(std::int64_t nid) const {
    PermasParser scan(data_, path_, nullptr, nullptr);
    while (scan.next_line()) {
      if (scan.line_[0] == '$') {
        const auto w = keyword_words(scan.line_.substr(1));
        scan.mode_ = !w.empty() && same_name(w[0], "COOR") ? Mode::kCoor : Mode::kSkip;
        continue;
      }
      if (scan.mode_ != Mode::kCoor) continue;
      const char* p = scan.line_.data();
      std::int64_t v = 0;
      const auto t = token(p, p + scan.line_.size());
      const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec == std::errc() && v == nid) return scan.line_no_;
    }
    return 0;
  }

  void element_values() {
    Block& b = blocks_.back();
    const char* p = line_.data();
    const char* e = p + line_.size();
    if (pending_ > 0 && *p == '&') ++p;  // a continued row's marker
    if (pending_ == 0) {
      row_id_ = id(token(p, e), "an element id");
      row_line_ = line_no_;
      pending_ = b.type->nodes;
      pending_done_ = 0;
    }
    while (pending_ > 0) {
      const auto t = token(p, e);
      if (t.empty()) return;  // the row goes on on the next line
      row_[static_cast<std::size_t>(pending_done_++)] = id(t, "a node id");
      --pending_;
    }
    if (!token(p, e).empty())
      fail("element " + std::to_string(row_id_) + " has more than the " +
           std::to_string(b.type->nodes) + " nodes of " + std::string(b.type->name));
    if (!cell_ids_.add(row_id_, ncells_)) [[unlikely]]
      fail_at(row_line_, "element id " + std::to_string(row_id_) + " is given twice");
    if (reordered(*b.type)) {
      std::array<std::int64_t, 27> vtk{};
      for (int k = 0; k < b.type->nodes; ++k)
        vtk[b.type->order[static_cast<std::size_t>(k)]] = row_[static_cast<std::size_t>(k)];
      b.nodes.append(vtk.data(), static_cast<std::size_t>(b.type->nodes));
    } else {
      b.nodes.append(row_.data(), static_cast<std::size_t>(b.type->nodes));
    }
    if (set_ != kNoSet) sets_[set_].ids.push_back(row_id_);
    ++b.rows;
    ++ncells_;
  }

  void set_values() {
    const char* p = line_.data();
    const char* e = p + line_.size();
    auto& s = sets_[set_];
    for (auto t = token(p, e); !t.empty(); t = token(p, e))
      s.ids.push_back(id(t, s.kind == RegionKind::kPoint ? "a node id" : "an element id"));
  }

  Mesh finish() {
    Mesh m;
    m.points = Array::of<double>({npoints_, 3});
    coords_.drain_to(m.points.as<double>());
    for (auto& b : blocks_) {
      auto conn = Array::of<std::int64_t>({b.rows, b.type->nodes});
      auto* c = conn.as<std::int64_t>();
      b.nodes.drain_to(c);
      const auto n = static_cast<std::size_t>(b.rows * b.type->nodes);
      for (std::size_t i = 0; i < n; ++i) {
        const auto row = node_ids_.find(c[i], npoints_);
        if (row < 0) [[unlikely]]
          fail_at(element_line(b, i / static_cast<std::size_t>(b.type->nodes)),
                  "node " + std::to_string(c[i]) +
                      " of an element of $ELEMENT TYPE = " + std::string(b.type->name) +
                      " is not one of the file's " + std::to_string(npoints_) + " nodes ($COOR)");
        c[i] = row;
      }
      m.cells.push_back(CellBlock::fixed(std::string(b.type->meshio), std::move(conn)));
    }
    regions(m);
    for (const auto& [key, s] : skipped_)
      notes_.push_back("permas: " + path_ + ":" + std::to_string(s.first_line) + ": $" + key +
                       (s.count > 1 ? " (" + std::to_string(s.count) + " times)" : "") +
                       " is not read (meshio skips every keyword but $COOR, $ELEMENT, $NSET and "
                       "$ESET too)");
    m.notes = std::move(notes_);
    return m;
  }

  // The line of row `row` of block b, for a message (the block's rows are scanned for it).
  std::size_t element_line(const Block& b, std::size_t row) const {
    PermasParser scan(data_, path_, nullptr, nullptr);
    while (scan.next_line() && scan.line_no_ < b.line) {
    }
    std::size_t seen = 0;
    int left = 0;
    while (scan.next_line() && scan.line_[0] != '$') {
      // Rows may go on over lines: count values.
      const char* p = scan.line_.data();
      const char* e = p + scan.line_.size();
      if (left > 0 && *p == '&') ++p;
      for (auto t = token(p, e); !t.empty(); t = token(p, e)) {
        if (left == 0) {
          if (seen == row) return scan.line_no_;
          left = b.type->nodes + 1;
        }
        --left;
        if (left == 0) ++seen;
      }
    }
    return b.line;
  }

  void regions(Mesh& m) const {
    std::int64_t tag = 0;
    for (const auto& s : sets_) {
      ++tag;
      const bool point = s.kind == RegionKind::kPoint;
      std::vector<std::int64_t> rows;
      rows.reserve(s.ids.size());
      for (const auto i : s.ids) {
        const auto r = point ? node_ids_.find(i, npoints_) : cell_ids_.find(i, ncells_);
        if (r < 0)
          fail_at(s.line, std::string(point ? "node set" : "element set") + " '" + s.name +
                              "': " + (point ? "node " : "element ") + std::to_string(i) +
                              " is not one of the file's " +
                              std::to_string(point ? npoints_ : ncells_) +
                              (point ? " nodes" : " elements"));
        rows.push_back(r);
      }
      std::sort(rows.begin(), rows.end());
      rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
      Region reg;
      reg.name = s.name;
      reg.kind = s.kind;
      reg.tag = tag;
      if (!point) {
        const auto starts = block_starts(m);
        for (const auto r : rows)
          reg.dim = std::max(reg.dim, cell_dim(m.cells[block_of(starts, r)].type));
      }
      reg.entries = Array::from_vector(rows);
      m.regions.push_back(std::move(reg));
    }
  }
};

}  // namespace

Mesh read_permas(const InFile& in, const ReadOptions& options) {
  return parse_maybe_gzipped(in, options.max_bytes, "PERMAS file",
                             [&](std::string_view text, MappedFile* file, ReadProgress* progress) {
                               return PermasParser(text, in.path, progress, file).parse();
                             });
}

}  // namespace meshdock::mesh
