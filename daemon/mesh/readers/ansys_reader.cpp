// ANSYS Fluent mesh files (.msh told from Gmsh's by content, or format "ansys" / "fluent"), read
// as meshio 5.0 reads them ("ansys"). The file is a run of Lisp-like sections "(index ...)";
// every id and count in a section's header and every integer in an ascii body is hexadecimal.
//   (0 "comment") (1 "header") (2 dim)     skipped (dim is the nodes' default ND, see below)
//   (10 (zone first last type [ND]) ( x y [z] ... ))     nodes; (2010 ...) / (3010 ...) bodies
//       are raw float32 / float64. Sections must follow each other's ids (meshio's rule); the
//       first section's first id is node 0. ND missing (meshio refuses it): the (2 dim) value.
//   (12 (zone first last type elem) ( n0 n1 ... ))       a cell block (1 triangle, 2 tetra,
//       3 quad, 4 hexahedron, 5 pyramid, 6 wedge), nodes as written (no reordering, as meshio);
//       (2012 / 3012: int32 / int64 bodies). A zone without a body (Fluent's usual layout) or
//       a mixed one (elem 0, its body each cell's type) is given by its faces: its cells are
//       built from them at the end (fluent_cells.hpp; meshio reads none), after the blocks
//       meshio reads; polyhedral cells (7) as ragged "polyhedron" blocks. Dead (type 0) and
//       inactive (32) zones give no cells, noted.
//   (13 (zone first last bc elem) ( n0 .. c0 c1 ))      a face block (2 line, 3 triangle,
//       4 quad) of the nodes; the adjacent cells c0 c1 build the cells, and are not kept. A
//       mixed (elem 0) or polygonal (5) zone, each row "x n0 .. c0 c1" with x the node count,
//       gives a block a count (x > 4: a "polygon" block of x-gons; meshio refuses polygons), in
//       the order the counts first appear (meshio's order), in binary too (meshio refuses
//       binary mixed zones).
//   (39) / (45) zones: a zone they name is a cell region (its faces or built cells).
//   (18 periodic), (58) / (59) trees, anything else: skipped and noted.
// Every block's nodes are checked against the nodes read (meshio does not check). Binary
// bodies start right after the body's '(' (Fluent) or after its newline (meshio's writer):
// the one followed by ')' after the body's size is taken. Counts (last - first + 1) are
// checked against the bytes left before anything is allocated; errors name the file, the line
// and the section, and what was expected.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "daemon/mesh/cell_types.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/read_progress.hpp"
#include "daemon/mesh/readers/fluent_cells.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

struct Type {
  const char* name;
  int nodes;
};
// Fluent's element types: cells (12) 1..6, faces (13) 2..4 (others: no fixed type).
constexpr Type kCellTypes[8] = {{nullptr, 0},      {"triangle", 3}, {"tetra", 4}, {"quad", 4},
                                {"hexahedron", 8}, {"pyramid", 5},  {"wedge", 6}, {nullptr, 0}};
constexpr Type kFaceTypes[5] = {
    {nullptr, 0}, {nullptr, 0}, {"line", 2}, {"triangle", 3}, {"quad", 4}};

struct HexTable {
  signed char v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = -1;
    for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<signed char>(i);
    for (int i = 0; i < 6; ++i) v['a' + i] = v['A' + i] = static_cast<signed char>(10 + i);
  }
};
constexpr HexTable kHex;

inline bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// A block being read: its type, nodes a cell, the node ids as the file gives them (a fixed
// zone's straight into its connectivity, whose size the header gives; a mixed zone's grown in
// `ids`), and where its section starts (for the error naming a node id no node has).
struct Block {
  const char* type;
  int nodes;
  std::size_t at;
  std::string section;
  Array conn;
  std::vector<std::int64_t> ids;
  std::int64_t zone = 0;
  bool face = false;
  std::vector<std::int64_t> adj;  // a face block's rows' c0 c1 (for fluent::cells_from_faces)
};

enum class Body { kAscii, kInt32, kInt64 };

class Parser {
 public:
  Parser(std::string_view data, MappedFile& file)
      : d_(data), file_(file), path_(file.path()), progress_(file.progress()) {}

  Mesh parse() {
    if (d_.starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 byte order mark
    while (true) {
      skip_ws();
      if (pos_ >= d_.size()) break;
      file_.advance(pos_);
      section();
      tick();
    }
    return finish();
  }

 private:
  std::string_view d_;
  MappedFile& file_;  // Access::window: advance() as the parse goes, read_at() for binary runs
  const std::string& path_;
  ReadProgress* progress_;  // null: nobody listens
  std::uint64_t next_report_ = 0;
  std::size_t pos_ = 0;
  // The section being read: its index text and where its '(' is.
  std::string index_;
  std::size_t start_ = 0;

  std::int64_t dim_ = 0;  // (2 dim), 0 before one
  std::vector<double> xyz_;
  std::int64_t nd_ = 0;  // the nodes' coordinates a node
  std::int64_t first_node_ = -1, next_node_ = -1;
  bool float32_ = false;
  std::vector<Block> blocks_;
  std::vector<std::string> notes_;
  // Skipped sections, a note each kind: "(39) zone sections" -> their first summaries. At most
  // kMaxKinds kinds (then "(other)") and kMaxSummaries summaries a kind, each made only when it
  // is kept: a summary names a line (a scan from the start), and a hostile file may hold a
  // million sections of a million kinds.
  static constexpr std::size_t kMaxKinds = 16, kMaxSummaries = 8;
  std::vector<std::pair<std::string, std::vector<std::string>>> skipped_;
  bool faces_read_ = false;
  std::vector<fluent::CellZone> face_zones_;        // cell zones the faces give, built in finish()
  std::map<std::int64_t, std::string> zone_names_;  // (39) / (45): zone id -> name
  std::vector<std::int64_t> block_zone_;            // the built blocks' zones

  // The line of byte `at`: newlines counted with pread (MappedFile::newlines) on from the last
  // line asked for. The summaries and zones ask in file order, so all of them cost one pass
  // over the file, and none maps the file's pages (through the mapping, a (45) section at the
  // end of a file kept the whole file resident beside the arrays).
  mutable std::size_t line_pos_ = 0, line_no_ = 1;
  std::size_t line_at(std::size_t at) const {
    at = std::min(at, d_.size());
    if (at < line_pos_) line_pos_ = 0, line_no_ = 1;
    line_no_ += file_.newlines(line_pos_, at);
    line_pos_ = at;
    return line_no_;
  }
  [[noreturn, gnu::cold]] void fail(std::size_t at, const std::string& what) const {
    std::string where = path_ + ":" + std::to_string(line_at(at)) + ": ";
    if (!index_.empty())
      where += "section (" + index_ + " opened at line " + std::to_string(line_at(start_)) + "): ";
    throw ReadError(where + what);
  }
  std::string preview(std::size_t at) const {
    if (at >= d_.size()) return "end of file";
    std::size_t e = at;
    while (e < d_.size() && e - at < 40 && !is_ws(d_[e])) ++e;
    // Built by appends: GCC 12's -Wrestrict misfires on "'" + std::string at -O3.
    std::string s(1, '\'');
    s += terminal_safe(d_.substr(at, std::max<std::size_t>(e - at, 1)));
    s += '\'';
    return s;
  }

  // Tells the caller's ReadProgress how far the read got, every ReadProgress::kEvery bytes (a
  // cancelled read stops here with a ReadError). Called between sections and every 4096 values
  // of an ascii body: one section can be the whole file.
  void tick() {
    if (progress_ && pos_ >= next_report_) {
      progress_->reached(pos_, path_);
      next_report_ = pos_ + ReadProgress::kEvery;
    }
  }

  void skip_ws() {
    while (pos_ < d_.size() && is_ws(d_[pos_])) ++pos_;
  }

  // A hexadecimal integer (either case) ending at whitespace, ')' or the end.
  std::int64_t hex(const char* what) {
    skip_ws();
    const char* p = d_.data() + pos_;
    const char* e = d_.data() + d_.size();
    std::uint64_t v = 0;
    const char* b = p;
    while (p < e) {
      const int h = kHex.v[static_cast<unsigned char>(*p)];
      if (h < 0) break;
      v = v << 4 | static_cast<unsigned>(h);
      ++p;
    }
    if (p == b || p - b > 15 || (p < e && !is_ws(*p) && *p != ')')) [[unlikely]]
      fail(pos_, std::string("expected ") + what + " (hexadecimal" +
                     (p - b > 15 ? ", under 2^60" : "") + "), found " + preview(pos_));
    pos_ = static_cast<std::size_t>(p - d_.data());
    return static_cast<std::int64_t>(v);
  }

  double real() {
    skip_ws();
    const char* b = d_.data() + pos_;
    const char* e = d_.data() + d_.size();
    if (b < e && *b == '+') ++b;
    double v = 0;
    const auto r = std::from_chars(b, e, v);
    if (r.ec != std::errc() || (r.ptr < e && !is_ws(*r.ptr) && *r.ptr != ')')) [[unlikely]]
      fail(pos_, "expected a coordinate (a real number), found " + preview(pos_));
    pos_ = static_cast<std::size_t>(r.ptr - d_.data());
    return v;
  }

  void expect(char c, const std::string& what) {
    skip_ws();
    if (pos_ >= d_.size() || d_[pos_] != c)
      fail(pos_, "expected " + what + ", found " + preview(pos_));
    ++pos_;
  }

  // Moves past the ')' that closes `depth` open parentheses (counted as meshio counts them:
  // every '(' and ')' byte, strings included).
  void skip_close(int depth) {
    while (depth > 0) {
      if (pos_ >= d_.size()) fail(pos_, "the section is not closed (a ')' is missing)");
      const char c = d_[pos_++];
      depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    }
  }

  // The header's "(a b c ...)" numbers.
  std::vector<std::int64_t> header() {
    expect('(', "'(' opening the section's header");
    std::vector<std::int64_t> h;
    while (true) {
      skip_ws();
      if (pos_ < d_.size() && d_[pos_] == ')') break;
      if (h.size() == 16) fail(pos_, "more than 16 numbers in the header");
      h.push_back(hex("a header number"));
    }
    ++pos_;
    return h;
  }

  // After the header: true at a body's '(' (moved past it), false at the section's ')' (a
  // declaration; moved past it).
  bool body_open() {
    skip_ws();
    if (pos_ < d_.size() && (d_[pos_] == '(' || d_[pos_] == ')')) return d_[pos_++] == '(';
    fail(pos_, "expected '(' opening the body or ')' closing the section, found " + preview(pos_));
  }

  // After the body's values: its ')' and then the section's, with anything but parentheses
  // between (a binary body's "End of Binary Section 3010").
  void end_body() {
    skip_ws();
    if (pos_ >= d_.size() || d_[pos_] != ')')
      fail(pos_, "expected ')' closing the body after the values its header counts, found " +
                     preview(pos_));
    ++pos_;
    skip_close(1);
  }

  // last - first + 1 from the header, checked: at most what `bytes_each` a row can fit in the
  // bytes left.
  std::size_t count(const std::vector<std::int64_t>& h, std::size_t bytes_each, const char* rows) {
    const auto first = h[1], last = h[2];
    if (last < first - 1)
      fail(start_,
           "first id " + std::to_string(first) + " is after last id " + std::to_string(last));
    const auto n = static_cast<std::uint64_t>(last - first + 1);
    if (n > (d_.size() - pos_) / bytes_each)
      fail(start_, std::to_string(n) + " " + rows + " (ids " + std::to_string(first) + ".." +
                       std::to_string(last) + ") of " + std::to_string(bytes_each) +
                       " bytes at least do not fit in the " + std::to_string(d_.size() - pos_) +
                       " bytes left");
    return static_cast<std::size_t>(n);
  }

  // A binary body of `bytes`: where it starts (after the '(' or after the newline that
  // follows it, whichever is followed by ')' after `bytes`).
  std::size_t binary_start(std::size_t bytes) {
    auto closes = [&](std::size_t s) {
      if (s > d_.size() || bytes > d_.size() - s) return false;
      std::size_t e = s + bytes;
      while (e < d_.size() && is_ws(d_[e])) ++e;
      return e < d_.size() && d_[e] == ')';
    };
    std::size_t nl = pos_;
    if (nl < d_.size() && d_[nl] == '\r') ++nl;
    if (nl < d_.size() && d_[nl] == '\n' && closes(nl + 1)) return nl + 1;
    if (closes(pos_)) return pos_;
    fail(pos_, "a binary body of " + std::to_string(bytes) +
                   " bytes (as its header counts) followed by ')' (a truncated file?)");
  }

  // The fewest bytes one value of a body takes: a digit and a separator (ascii), or its binary
  // width (4 for the 20xx sections, 8 for the 30xx ones), for count() and binary_start().
  static std::size_t value_bytes(Body kind) {
    return kind == Body::kAscii ? 2 : kind == Body::kInt32 ? 4 : 8;
  }

  Body body_kind() const {
    return index_.starts_with("20")   ? Body::kInt32
           : index_.starts_with("30") ? Body::kInt64
                                      : Body::kAscii;
  }

  void section() {
    start_ = pos_;
    index_.clear();
    if (d_[pos_] != '(') fail(pos_, "expected '(' starting a section, found " + preview(pos_));
    ++pos_;
    skip_ws();
    while (pos_ < d_.size() && d_[pos_] >= '0' && d_[pos_] <= '9' && index_.size() < 12)
      index_ += d_[pos_++];
    if (index_.empty() || (pos_ < d_.size() && !is_ws(d_[pos_]) && d_[pos_] != '(' &&
                           d_[pos_] != ')' && d_[pos_] != '"'))
      fail(pos_, "expected a section index (a decimal number) after '(', found " + preview(pos_));
    const std::string& i = index_;
    if (i == "0" || i == "1") {
      skip_close(1);
    } else if (i == "2") {
      dim_ = hex("the dimension");
      skip_close(1);
    } else if (i == "10" || i == "2010" || i == "3010") {
      nodes();
    } else if (i == "12" || i == "2012" || i == "3012") {
      cells();
    } else if (i == "13" || i == "2013" || i == "3013") {
      faces();
    } else {
      skip_other();
    }
    index_.clear();
  }

  template <typename Summary>
  void skip(const std::string& kind, Summary&& summary) {
    auto it = std::find_if(skipped_.begin(), skipped_.end(),
                           [&](const auto& k) { return k.first == kind; });
    if (it == skipped_.end()) {
      const std::string other = "(other)";
      if (skipped_.size() >= kMaxKinds)
        it = std::find_if(skipped_.begin(), skipped_.end(),
                          [&](const auto& k) { return k.first == other; });
      if (it == skipped_.end()) {
        skipped_.push_back({skipped_.size() >= kMaxKinds ? other : kind, {}});
        it = std::prev(skipped_.end());
      }
    }
    auto& list = it->second;
    if (list.size() < kMaxSummaries)
      list.push_back(summary());
    else if (list.size() == kMaxSummaries)
      list.push_back("...");
  }

  // A section meshio skips: its kind and what it holds, for the note.
  void skip_other() {
    const std::size_t from = pos_;
    skip_close(1);
    const std::string& i = index_;
    const std::string kind = i == "39" || i == "45" ? "(" + i + ") zone"
                             : i == "18"            ? "(18) periodic shadow face"
                             : i == "58"            ? "(58) cell tree"
                             : i == "59"            ? "(59) face tree"
                                                    : "(" + i + ")";
    std::string_view text = d_.substr(from, pos_ - 1 - from);
    if (i == "39" || i == "45") zone_name(text);
    skip(kind, [&] {
      // The first "(...)" group (a zone section's "(id type name)") as the summary.
      std::string summary = "line " + std::to_string(line_at(start_));
      const auto open = text.find('('), close = text.find(')');
      if (open != std::string_view::npos && close != std::string_view::npos && open < close)
        summary +=
            " (" +
            terminal_safe(text.substr(open + 1, std::min<std::size_t>(close - open - 1, 80))) + ")";
      return summary;
    });
  }

  // A (39) / (45) zone section's "(id type name ...)": the name, for the zone's region.
  void zone_name(std::string_view text) {
    const auto open = text.find('(');
    if (open == std::string_view::npos) return;
    std::string_view rest = text.substr(open + 1);
    rest = rest.substr(0, rest.find(')'));
    std::vector<std::string_view> words;
    while (words.size() < 3) {
      const auto b = rest.find_first_not_of(" \t\r\n");
      if (b == std::string_view::npos) break;
      const auto e = std::min(rest.find_first_of(" \t\r\n", b), rest.size());
      words.push_back(rest.substr(b, e - b));
      rest = rest.substr(e);
    }
    std::int64_t id = 0;
    if (words.size() < 3 || words[0].size() > 15) return;
    for (char c : words[0]) {
      const int h = kHex.v[static_cast<unsigned char>(c)];
      if (h < 0) return;
      id = id << 4 | h;
    }
    zone_names_[id] = terminal_safe(words[2].substr(0, 128));
  }

  void nodes() {
    const auto h = header();
    if (!body_open()) return;  // "(10 (0 first last 0))": the node count, declared
    if (h.size() < 4) fail(start_, "expected a header (zone first last type [ND])");
    const auto nd = h.size() >= 5 ? h[4] : dim_;
    if (nd < 1 || nd > 3)
      fail(start_, h.size() >= 5 ? "ND " + std::to_string(nd) + " is not 1, 2 or 3"
                                 : "the header has no ND and no (2 dim) section came before");
    if (nd_ != 0 && nd != nd_)
      fail(start_,
           "ND " + std::to_string(nd) + " differs from the earlier nodes' " + std::to_string(nd_));
    if (first_node_ >= 0 && h[1] != next_node_)
      fail(start_, "the first node id " + std::to_string(h[1]) +
                       " does not follow the previous node section's last, " +
                       std::to_string(next_node_ - 1) +
                       " (node sections must be consecutive, as meshio reads them)");
    const Body kind = body_kind();
    const std::size_t width = value_bytes(kind);
    const auto n = count(h, width * static_cast<std::size_t>(nd), "nodes");
    if (first_node_ < 0) first_node_ = h[1];
    next_node_ = h[2] + 1;
    nd_ = nd;
    const std::size_t values = n * static_cast<std::size_t>(nd);
    const std::size_t at = xyz_.size();
    xyz_.resize(at + values);
    double* out = xyz_.data() + at;
    if (kind == Body::kAscii) {
      for (std::size_t k = 0; k < values; ++k) {
        file_.advance(pos_);
        if ((k & 4095) == 0) tick();
        out[k] = real();
      }
    } else {
      pos_ = binary_start(values * width);
      if (kind == Body::kInt64) {
        binary_rows<double>(out, values, 1, 1);
      } else {
        float32_ = true;
        binary_rows<float>(out, values, 1, 1);
      }
      tick();
    }
    end_body();
  }

  // `values` hexadecimal integers of an ascii body into out.
  void hex_ints(std::int64_t* out, std::size_t values, const char* what = "a node id") {
    for (std::size_t k = 0; k < values; ++k) {
      file_.advance(pos_);
      if ((k & 4095) == 0) tick();
      out[k] = hex(what);
    }
  }

  // A binary body's n rows of `row` values of type T at pos_ (int32 / int64 ids, float32 /
  // float64 coordinates), the first `keep` of each row into out (rows of keep), read with pread
  // (MappedFile::read_at): straight into out when nothing is converted or dropped, else through
  // a 1 MiB buffer. The mapping's pages are never touched, so a binary file is read at about
  // the size of its arrays (through the mapping, its pages would stay resident beside them).
  // The other values of each row (a face's c0 c1) go to `rest` where it is given.
  template <typename T, typename Out>
  void binary_rows(Out* out, std::size_t n, std::size_t row, std::size_t keep,
                   std::int64_t* rest = nullptr) {
    if constexpr (std::is_same_v<T, Out>) {
      if (keep == row) {
        file_.read_at(pos_, n * row * sizeof(T), reinterpret_cast<char*>(out));
        pos_ += n * row * sizeof(T);
        return;
      }
    }
    const std::size_t per = std::max<std::size_t>(1, (std::size_t{1} << 20) / (row * sizeof(T)));
    std::vector<T> buf(std::min(n, per) * row);
    for (std::size_t r = 0; r < n; r += per) {
      const auto k = std::min(per, n - r);
      file_.read_at(pos_ + r * row * sizeof(T), k * row * sizeof(T),
                    reinterpret_cast<char*>(buf.data()));
      for (std::size_t i = 0; i < k; ++i)
        for (std::size_t j = 0; j < keep; ++j)
          out[(r + i) * keep + j] = static_cast<Out>(buf[i * row + j]);
      if (rest)
        for (std::size_t i = 0; i < k; ++i)
          for (std::size_t j = keep; j < row; ++j)
            rest[(r + i) * (row - keep) + j - keep] = static_cast<std::int64_t>(buf[i * row + j]);
    }
    pos_ += n * row * sizeof(T);
  }

  // One value of a mixed face zone's body.
  std::int64_t one(Body kind, const char* what) {
    if (kind == Body::kAscii) return hex(what);
    const std::size_t w = kind == Body::kInt32 ? 4 : 8;
    if (d_.size() - pos_ < w) fail(pos_, std::string("expected ") + what + ": the file ends");
    std::int64_t v;
    if (kind == Body::kInt32) {
      std::int32_t v32;
      std::memcpy(&v32, d_.data() + pos_, 4);
      v = v32;
    } else {
      std::memcpy(&v, d_.data() + pos_, 8);
    }
    pos_ += w;
    return v;
  }

  void cells() {
    const auto h = header();
    if (!body_open()) {
      // "(12 (zone first last type elem))": cells given by their faces alone.
      if (h.size() >= 3 && h[0] != 0) face_zone(h, {});
      return;
    }
    if (h.size() < 5) fail(start_, "expected a header (zone first last type element-type)");
    if (h[3] == 0 || h[4] == 7) {
      skip_close(2);
      skip(h[3] == 0 ? "(12) dead cell zone" : "(12) polyhedral cell zone", [&] {
        return "zone " + std::to_string(h[0]) + ", element type " + std::to_string(h[4]);
      });
      return;
    }
    if (h[4] == 0) return face_zone(h, cell_types(h));
    if (h[4] < 0 || h[4] > 7)
      fail(start_, "element type " + std::to_string(h[4]) +
                       " is not 1 (triangle), 2 (tetra), 3 (quad), 4 (hexahedron), 5 (pyramid) "
                       "or 6 (wedge) (0 mixed and 7 polyhedral are skipped)");
    read_block(h, kCellTypes[h[4]], 0);
  }

  // A mixed cell zone's body: each cell's element type (1..7), checked.
  std::vector<std::uint8_t> cell_types(const std::vector<std::int64_t>& h) {
    const Body kind = body_kind();
    const std::size_t width = value_bytes(kind);
    const auto n = count(h, width, "cell types");
    std::vector<std::int64_t> t(n);
    const std::size_t at = pos_;
    if (kind == Body::kAscii) {
      hex_ints(t.data(), n, "a cell's element type");
    } else {
      pos_ = binary_start(n * width);
      if (kind == Body::kInt32)
        binary_rows<std::int32_t>(t.data(), n, 1, 1);
      else
        binary_rows<std::int64_t>(t.data(), n, 1, 1);
    }
    end_body();
    std::vector<std::uint8_t> types(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (t[i] < 1 || t[i] > 7)
        fail(at, "cell " + std::to_string(h[1] + static_cast<std::int64_t>(i)) +
                     " of the mixed zone has element type " + std::to_string(t[i]) + ", not 1..7");
      types[i] = static_cast<std::uint8_t>(t[i]);
    }
    return types;
  }

  // A cell zone whose cells the faces give (bodiless, or mixed with its types): built at the
  // end by fluent::cells_from_faces, or noted when it cannot be.
  void face_zone(const std::vector<std::int64_t>& h, std::vector<std::uint8_t> types) {
    const auto where = [&] {
      return "zone " + std::to_string(h[0]) + ", element type " +
             (h.size() >= 5 ? std::to_string(h[4]) : "?");
    };
    if (h.size() < 5 || (h[4] == 0 && types.empty()) || h[4] < 0 || h[4] > 7)
      return skip("(12) cell zones of no known element type;", where);
    if (h[3] == 0) return skip("(12) dead cell zone", where);
    if (h[3] == 32) return skip("(12) inactive (parent) cell zone", where);
    face_zones_.push_back(fluent::CellZone{h[0], h[1], h[2], static_cast<int>(h[4]),
                                           std::move(types), line_at(start_)});
  }

  // A fixed-type body: `extra` values a row after the nodes (a face's c0 c1) go to b.adj.
  void read_block(const std::vector<std::int64_t>& h, Type t, int extra) {
    const Body kind = body_kind();
    const std::size_t width = value_bytes(kind);
    const std::size_t row = static_cast<std::size_t>(t.nodes + extra);
    const auto n = count(h, width * row, "rows");
    Block b{t.name, t.nodes, start_, index_, {}, {}, h[0], extra != 0, {}};
    b.conn = Array::of<std::int64_t>({static_cast<std::int64_t>(n), t.nodes});
    b.adj.resize(n * static_cast<std::size_t>(extra));
    std::int64_t* out = b.conn.as<std::int64_t>();
    const auto keep = static_cast<std::size_t>(t.nodes);
    if (kind != Body::kAscii) {
      pos_ = binary_start(n * row * width);
      if (kind == Body::kInt32)
        binary_rows<std::int32_t>(out, n, row, keep, b.adj.data());
      else
        binary_rows<std::int64_t>(out, n, row, keep, b.adj.data());
      tick();
    } else if (extra == 0) {
      hex_ints(out, n * row);
    } else {
      for (std::size_t r = 0; r < n; ++r) {
        hex_ints(out + r * keep, keep);
        hex_ints(b.adj.data() + 2 * r, 2, "a face's cell (c0 or c1)");
      }
    }
    end_body();
    blocks_.push_back(std::move(b));
  }

  void faces() {
    const auto h = header();
    if (!body_open()) return;  // "(13 (0 first last 0 0))": the face count, declared
    if (h.size() < 5) fail(start_, "expected a header (zone first last bc-type face-type)");
    const auto et = h[4];
    if (et != 0 && (et < 2 || et > 5))
      fail(start_, "face type " + std::to_string(et) +
                       " is not 0 (mixed), 2 (line), 3 (triangle), 4 (quad) or 5 (polygonal)");
    faces_read_ = true;
    if (et != 0 && et != 5) return read_block(h, kFaceTypes[et], 2);
    // Mixed and polygonal zones: each row "x n0 .. n(x-1) c0 c1", x the face's node count; a
    // block a count (2 line, 3 triangle, 4 quad, more a "polygon" of that many, as the surface
    // readers split polygons) in the order they first appear (meshio's order for 2..4).
    const Body kind = body_kind();
    const std::size_t width = value_bytes(kind);
    const auto n = count(h, 5 * width, "rows");
    if (kind != Body::kAscii && pos_ < d_.size() && d_[pos_] == '\n') {
      // meshio's layout puts a newline after '('; Fluent's starts the bytes there. Only a
      // decagon's count reads 10 from a newline byte (then zeros); a newline before a row
      // reads 10 + 256 x (its count's first byte) at least.
      const std::size_t at = pos_;
      const bool decagon = one(kind, "a face's node count") == 10;
      pos_ = decagon ? at : at + 1;
    }
    std::map<std::int64_t, std::size_t> of_count;  // a node count -> its block
    for (std::size_t r = 0; r < n; ++r) {
      file_.advance(pos_);
      if ((r & 1023) == 0) tick();
      const std::size_t at = pos_;
      const auto x = one(kind, "a face's node count");
      if (x < 2 || x > (1 << 20) || static_cast<std::uint64_t>(x) > (d_.size() - pos_) / width)
        fail(at, "a face of " + std::to_string(x) + " nodes (" +
                     (x < 2 || x > (1 << 20) ? "2 to 2^20" : "more values than the bytes left") +
                     "; a mixed or polygonal zone's row is \"x n0 .. c0 c1\")");
      auto [it, added] = of_count.try_emplace(x, blocks_.size());
      if (added) {
        const char* name = x <= 4 ? kFaceTypes[x].name : "polygon";
        blocks_.push_back(Block{name, static_cast<int>(x), start_, index_, {}, {}, h[0], true, {}});
      }
      auto& ids = blocks_[it->second].ids;
      for (std::int64_t k = 0; k < x; ++k) ids.push_back(one(kind, "a node id"));
      blocks_[it->second].adj.push_back(one(kind, "the face's cell c0"));
      blocks_[it->second].adj.push_back(one(kind, "the face's cell c1"));
    }
    end_body();
  }

  Mesh finish() {
    if (first_node_ < 0)
      throw ReadError(path_ +
                      ": no node section with coordinates ((10), (2010) or (3010) "
                      "with a body): not an ANSYS Fluent mesh, or one without nodes");
    Mesh m;
    const auto points = static_cast<std::int64_t>(xyz_.size()) / nd_;
    m.points = Array::of<double>({points, nd_});
    if (!xyz_.empty()) std::memcpy(m.points.data(), xyz_.data(), xyz_.size() * sizeof(double));
    std::vector<double>().swap(xyz_);
    for (auto& b : blocks_) {
      if (!b.conn.valid()) {  // a mixed zone's type: its ids grown row by row
        b.conn =
            Array::of<std::int64_t>({static_cast<std::int64_t>(b.ids.size()) / b.nodes, b.nodes});
        if (!b.ids.empty())
          std::memcpy(b.conn.data(), b.ids.data(), b.ids.size() * sizeof(std::int64_t));
        std::vector<std::int64_t>().swap(b.ids);
      }
      auto* c = b.conn.as<std::int64_t>();
      const auto count = static_cast<std::size_t>(b.conn.size());
      // Ids to rows, checked in one branch-free pass (the loop the compiler vectorises).
      std::uint64_t bad = 0;
      for (std::size_t k = 0; k < count; ++k) {
        c[k] -= first_node_;
        bad |= static_cast<std::uint64_t>(c[k]) >= static_cast<std::uint64_t>(points);
      }
      if (bad) {
        for (std::size_t k = 0; k < count; ++k)
          if (static_cast<std::uint64_t>(c[k]) >= static_cast<std::uint64_t>(points)) {
            index_ = b.section;
            start_ = b.at;
            fail(b.at, "node id " + std::to_string(c[k] + first_node_) + " (row " +
                           std::to_string(k / static_cast<std::size_t>(b.nodes) + 1) +
                           ") is not one of the nodes' ids " + std::to_string(first_node_) + ".." +
                           std::to_string(first_node_ + points - 1));
          }
      }
      m.cells.push_back(CellBlock::fixed(b.type, std::move(b.conn)));
    }
    const std::string tag = "ansys: " + path_ + ": ";
    build_cells(m, tag);
    zone_regions(m);
    if (float32_)
      notes_.push_back(tag +
                       "single-precision (2010) node coordinates are read as float64 "
                       "(meshio keeps float32)");
    if (faces_read_)
      notes_.push_back(tag +
                       "the faces' adjacent cells (c0 c1) and boundary types are not kept "
                       "(meshio keeps neither; zones are regions where a (39) / (45) section "
                       "names them)");
    for (auto& [kind, list] : skipped_) {
      std::string s = tag + kind + " sections are skipped (as meshio skips them): ";
      if (kind == "(39) zone" || kind == "(45) zone")
        s = tag + kind +
            " sections: only their names are kept, as the zones' regions (meshio "
            "skips them): ";
      if (kind.back() == ';')
        s = tag + kind.substr(0, kind.size() - 1) + " give no cells (as meshio): ";
      for (std::size_t i = 0; i < list.size(); ++i) s += (i ? "; " : "") + list[i];
      notes_.push_back(std::move(s));
    }
    m.notes = std::move(notes_);
    return m;
  }

  // The cells of the zones the faces give, appended after the blocks meshio reads (so those
  // keep meshio's order), with a note: meshio reads none of them.
  void build_cells(Mesh& m, const std::string& tag) {
    if (face_zones_.empty()) return;
    std::vector<fluent::FaceRows> faces;
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      if (blocks_[i].face)
        faces.push_back({m.cells[i].connectivity.as<std::int64_t>(), blocks_[i].adj.data(),
                         m.cells[i].size(), blocks_[i].nodes});
    auto built = fluent::cells_from_faces(m.points, faces, face_zones_);
    for (auto& b : blocks_) std::vector<std::int64_t>().swap(b.adj);
    std::string summary;
    for (std::size_t i = 0; i < built.blocks.size(); ++i) {
      summary += (summary.empty() ? "" : ", ") + std::to_string(built.blocks[i].size()) + " " +
                 built.blocks[i].type + " (zone " + std::to_string(built.block_zone[i]) + ")";
      block_zone_.push_back(built.block_zone[i]);
      m.cells.push_back(std::move(built.blocks[i]));
    }
    if (!summary.empty())
      notes_.push_back(tag + "cells built from their faces, after the face blocks: " + summary +
                       " (meshio reads no cell of a zone without connectivity; VTK builds them)");
    for (auto& n : built.notes) notes_.push_back(tag + n);
  }

  // A cell region for each zone a (39) / (45) section names: its faces' or cells' global
  // numbers, tagged with the zone id, in the order the zones' blocks come.
  void zone_regions(Mesh& m) {
    std::vector<std::int64_t> zone_of(m.cells.size(), 0);
    for (std::size_t i = 0; i < blocks_.size(); ++i) zone_of[i] = blocks_[i].zone;
    for (std::size_t i = 0; i < block_zone_.size(); ++i)
      zone_of[blocks_.size() + i] = block_zone_[i];
    std::vector<std::int64_t> order;                      // named zones, first block first
    std::map<std::int64_t, std::vector<std::size_t>> of;  // zone -> its blocks
    for (std::size_t i = 0; i < m.cells.size(); ++i) {
      if (!zone_names_.contains(zone_of[i])) continue;
      auto& list = of[zone_of[i]];
      if (list.empty()) order.push_back(zone_of[i]);
      list.push_back(i);
    }
    std::vector<std::int64_t> first(m.cells.size() + 1, 0);  // each block's first cell number
    for (std::size_t i = 0; i < m.cells.size(); ++i) first[i + 1] = first[i] + m.cells[i].size();
    for (const auto zone : order) {
      const auto& list = of[zone];
      std::int64_t n = 0;
      int dim = 0;
      for (auto j : list) {
        n += m.cells[j].size();
        dim = std::max(dim, cell_dim(m.cells[j].type));
      }
      Region r{zone_names_[zone], RegionKind::kCell, dim, zone, Array::of<std::int64_t>({n})};
      auto* e = r.entries.as<std::int64_t>();
      for (auto j : list)
        for (std::int64_t k = 0; k < m.cells[j].size(); ++k) *e++ = first[j] + k;
      m.regions.push_back(std::move(r));
    }
  }
};

}  // namespace

Mesh read_ansys(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return Parser(data, file).parse(); },
      Access::window);
}

}  // namespace meshdock::mesh
