// Nastran bulk data (.bdf, .nas, .fem; meshio's "nastran"), read as meshio 5.0 reads it:
// - the executive and case control sections are skipped up to BEGIN BULK; without one (gmsh's
//   -format bdf writes none; meshio refuses such a file) the bulk data starts at the first
//   GRID or element card, noted. ENDDATA ends it (its absence is noted);
// - every line is small field (8-column fields, 10 a line), large field (the card name ends in
//   '*': 16-column data fields, 4 a line) or free field (a ',' on the line; more than 10 fields
//   on one free line are all data). A line whose field 1 starts with '+' (small) or '*' (large)
//   or is blank continues the card above; field 10 (the continuation marker) is not data, and
//   continuations are taken in file order (markers are not matched). '$' starts a comment
//   (whole lines, and the rest of a line); so do '#' and '//' at a line's start, as in meshio.
//   Tabs in fixed-field lines are a ReadError (not expanded);
// - reals as Nastran writes them: 1.0, 1., .5, 1.0E-3, 1.0-3 and 1.0+3 (implicit exponent),
//   1.0D-3; a blank coordinate is 0.0 (Nastran's default; meshio fails on it);
// - GRID id cp x1 x2 x3: ids are labels (any order; elements may come before their grids),
//   points in file order; a CP field that is not blank -> point_data "nastran:ref" (0 where
//   blank). Coordinates given in a local system (CP not 0) are taken to the basic system
//   through the deck's CORD1R / CORD1C / CORD1S / CORD2R / CORD2C / CORD2S cards
//   (nastran_coords.hpp; noted: meshio reads them as written, silently); a CP no card defines
//   is read as written and noted; a system that cannot be built (through itself, A = B, C on
//   the z axis, an unknown RID or grid) is a ReadError naming its card's line;
// - the element cards of meshio's table -> cell blocks of meshio's types, consecutive cells of
//   one type a block (meshio's rule), nodes in meshio's order (CTRIAX6 / CTRAX6 corners then
//   mid-sides, CHEXA 20 and CPENTA 15 as meshio reorders them); the property id (field 3) ->
//   cell_data "nastran:ref" (a blank one: the element id, Nastran's default, noted). Lines
//   (CBAR, CBEAM, CROD, CBUSH, CBUSH1D, CGAP) take their first two grids (the orientation is not
//   read), CELAS1 its first (a vertex); solids are first or second order by how many grids they
//   list (CTETRA 4 / 10, CPYRA(M) 5 / 13, CPENTA 6 / 15, CHEXA 8 / 20). meshio's own fictive
//   names (CTETRA_, CHEXA_, ...; its writer's) read as the card they stand for;
// - every other card is skipped, and one note lists them with their counts;
// - INCLUDE 'file name' (INCLUDE in columns 1-7, the name in single quotes, continued over as
//   many lines as it takes to its closing quote: each piece trimmed of its blanks and joined, as
//   MSC's Quick Reference shows a long path split over lines) is Nastran's textual inclusion:
//   the file's lines are read where the INCLUDE stands (a card may go on in it, ENDDATA in it
//   ends the bulk data; ids are global), opened through ReadOptions::open_sibling relative to
//   the including file's directory (the daemon opens it under its roots). Absolute names, any
//   '..', chains deeper than kMaxDepth and cycles are ReadErrors naming the file and line (and
//   the chain); so is any INCLUDE when open_sibling is unset. Errors inside an included file
//   name it and its line. meshio 5.0 does not follow INCLUDE (it skips the line as a card it
//   does not know). INCLUDEs before the main file's BEGIN BULK are in the executive or case
//   control sections: not opened (noted). Without a BEGIN BULK in the main file, INCLUDEs are
//   followed from its first line, so a BEGIN BULK, GRID or element card inside one starts the
//   bulk data there.
// A grid id no GRID defines is a ReadError naming the element's line.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/id_rows.hpp"
#include "daemon/mesh/readers/nastran_coords.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

struct ElementType {
  std::string_view card;
  const char* meshio;         // first order (or the only one)
  const char* meshio2;        // second order, nullptr when there is none
  std::uint8_t nodes;         // grids read (first order)
  std::uint8_t nodes2;        // second order
  const std::uint8_t* order;  // meshio's node k is the card's order[k]; nullptr: as listed
};

constexpr std::uint8_t kAxisym6[] = {0, 2, 4, 1, 3, 5};
constexpr std::uint8_t kHex20[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
                                   10, 11, 16, 17, 18, 19, 12, 13, 14, 15};
constexpr std::uint8_t kWedge15[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 9, 10, 11};

// meshio 5.0's nastran_to_meshio_type. nodes2 == 0: a fixed count (the fields after it, an
// orientation or a thickness, are not grids); else the card lists nodes or nodes2 grids.
constexpr ElementType kTypes[] = {
    {"CELAS1", "vertex", nullptr, 1, 0, nullptr},
    {"CBEAM", "line", nullptr, 2, 0, nullptr},
    {"CBUSH", "line", nullptr, 2, 0, nullptr},
    {"CBUSH1D", "line", nullptr, 2, 0, nullptr},
    {"CROD", "line", nullptr, 2, 0, nullptr},
    {"CGAP", "line", nullptr, 2, 0, nullptr},
    {"CBAR", "line", nullptr, 2, 0, nullptr},
    {"CTRIAR", "triangle", nullptr, 3, 0, nullptr},
    {"CTRIA3", "triangle", nullptr, 3, 0, nullptr},
    {"CTRAX6", "triangle6", nullptr, 6, 0, kAxisym6},
    {"CTRIAX6", "triangle6", nullptr, 6, 0, kAxisym6},
    {"CTRIA6", "triangle6", nullptr, 6, 0, nullptr},
    {"CQUADR", "quad", nullptr, 4, 0, nullptr},
    {"CSHEAR", "quad", nullptr, 4, 0, nullptr},
    {"CQUAD4", "quad", nullptr, 4, 0, nullptr},
    {"CQUAD8", "quad8", nullptr, 8, 0, nullptr},
    {"CQUAD9", "quad9", nullptr, 9, 0, nullptr},
    {"CTETRA", "tetra", "tetra10", 4, 10, nullptr},
    {"CTETRA_", "tetra", "tetra10", 4, 10, nullptr},
    {"CPYRAM", "pyramid", "pyramid13", 5, 13, nullptr},
    {"CPYRA", "pyramid", "pyramid13", 5, 13, nullptr},
    {"CPYRA_", "pyramid", "pyramid13", 5, 13, nullptr},
    {"CPENTA", "wedge", "wedge15", 6, 15, nullptr},
    {"CPENTA_", "wedge", "wedge15", 6, 15, nullptr},
    {"CHEXA", "hexahedron", "hexahedron20", 8, 20, nullptr},
    {"CHEXA_", "hexahedron", "hexahedron20", 8, 20, nullptr},
};

// Card names compare without case (Nastran's rule): same_name (text.hpp).
const ElementType* element_type(std::string_view name) {
  if (name.empty() || (name[0] != 'C' && name[0] != 'c')) return nullptr;
  for (const auto& t : kTypes)
    if (same_name(name, t.card)) return &t;
  return nullptr;
}

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

constexpr std::size_t kMaxDepth = 8;         // INCLUDE nesting
constexpr std::size_t kMaxFiles = 4096;      // distinct included files (each holds an fd)
constexpr std::size_t kMaxNameBytes = 4096;  // an INCLUDE's file name

// The files of the deck: the one read (index 0) and those its INCLUDEs name, each opened once;
// every file stays open to the end (errors quote lines of any of them).
class Sources {
 public:
  Sources(MappedFile& main, const ReadOptions& options) : options_(options) {
    files_.push_back(&main);
    names_.push_back(main.path());
    const auto slash = main.path().rfind('/');
    rels_.push_back(slash == std::string::npos ? main.path() : main.path().substr(slash + 1));
  }

  std::size_t size() const { return files_.size(); }
  MappedFile& file(std::size_t i) const { return *files_[i]; }
  std::string_view data(std::size_t i) const { return files_[i]->view(); }
  const std::string& name(std::size_t i) const { return names_[i]; }
  const std::string& rel(std::size_t i) const { return rels_[i]; }
  bool can_open() const { return static_cast<bool>(options_.open_sibling); }

  // The index of `rel` (relative to the main file's directory), opened on its first use.
  std::size_t open(const std::string& rel) {
    for (std::size_t i = 1; i < rels_.size(); ++i)
      if (rels_[i] == rel) return i;
    if (files_.size() >= kMaxFiles)
      throw ReadError("more than " + std::to_string(kMaxFiles) + " included files");
    UniqueFd fd = options_.open_sibling(rel);
    const auto slash0 = names_[0].rfind('/');
    std::string shown =
        (slash0 == std::string::npos ? std::string() : names_[0].substr(0, slash0 + 1)) + rel;
    // A big file goes through a 2 MiB window, a small one is mapped (a window each for a
    // thousand small includes would hold 2 GiB).
    struct stat st {};
    const auto access = ::fstat(fd.get(), &st) == 0 && st.st_size < (std::int64_t{2} << 20)
                            ? Access::map
                            : Access::window;
    owned_.push_back(std::make_unique<MappedFile>(InFile{fd.get(), shown}, access));
    files_.push_back(owned_.back().get());
    names_.push_back(std::move(shown));
    rels_.push_back(rel);
    return files_.size() - 1;
  }

  // The file holding byte `p` of some file's view.
  std::size_t locate(const char* p) const {
    for (std::size_t i = 0; i < files_.size(); ++i) {
      const auto d = data(i);
      if (p >= d.data() && p <= d.data() + d.size()) return i;
    }
    return 0;
  }

  void check_unchanged() const {
    for (const auto& f : owned_) f->check_unchanged();
  }

  [[noreturn]] void fail_at(const char* p, const std::string& what) const {
    const auto i = locate(p);
    const auto d = data(i);
    const auto at = static_cast<std::size_t>(p - d.data());
    const Cursor c(d, names_[i]);
    const auto nl = d.rfind('\n', at == 0 ? 0 : at - 1);
    const auto start = at == 0 || nl == std::string_view::npos ? 0 : nl + 1;
    throw ReadError(names_[i] + ":" + std::to_string(c.line_at(at)) + ": column " +
                    std::to_string(at - start + 1) + ": " + what);
  }

 private:
  const ReadOptions& options_;
  std::vector<MappedFile*> files_;
  std::vector<std::unique_ptr<MappedFile>> owned_;
  std::vector<std::string> names_;  // for messages
  std::vector<std::string> rels_;   // relative to the main file's directory
};

// Where the deck is being read: a file and an offset in it, one a level of INCLUDE.
struct Frame {
  std::size_t file = 0;
  std::size_t pos = 0;
};

// One card: its name (without the large-field '*') and its data fields (field 2 on, the
// continuation markers left out), each a view into its file (a blank one: empty, at its place).
struct Card {
  std::string_view name;
  const char* at = nullptr;  // the first line
  std::vector<std::string_view> fields;
};

// The cards of the bulk data section, one at a time, INCLUDEs read in place.
class Cards {
 public:
  Cards(Sources& sources, std::vector<Frame> from) : src_(sources), frames_(std::move(from)) {}

  // The next card into `card`; false at ENDDATA or the end of the file.
  bool next(Card& card) {
    Line line;
    if (!next_line(line)) return false;
    card.fields.clear();
    card.at = line.text.data();
    const auto first = field1(line);
    if (is_continuation(first)) fail_at(card.at, "a continuation line with no card before it");
    card.name = trim_spaces(first);
    const bool large = !card.name.empty() && card.name.back() == '*';
    if (large) card.name.remove_suffix(1);
    if (same_name(card.name, "ENDDATA")) {
      enddata_ = true;
      return false;
    }
    split(line, large, card.fields);
    while (next_line(line)) {
      const auto f1 = field1(line);
      if (!is_continuation(f1)) {
        pending_ = line;  // the next card's first line: read once, kept for next()
        has_pending_ = true;
        break;
      }
      split(line, !f1.empty() && f1[0] == '*', card.fields);
    }
    return true;
  }
  bool saw_enddata() const { return enddata_; }
  // Where the main file is read to (its progress).
  std::size_t main_offset() const { return frames_.empty() ? 0 : frames_[0].pos; }
  // Where the bulk data starts when the main file has no BEGIN BULK: after a BEGIN BULK in an
  // included file, or at the first GRID or element card (in column 1); INCLUDEs on the way are
  // followed. False when there is neither. The frames then say where (start()).
  bool find_bulk(bool& begin_bulk) {
    Line line;
    while (next_line(line)) {
      auto t = line.text;
      const auto b = t.find_first_not_of(" \t");
      t.remove_prefix(b);
      const auto word = t.substr(0, t.find_first_of(" \t,*\r"));
      if (same_name(word, "BEGIN")) {
        const auto rest = t.substr(word.size());
        const auto k = rest.find_first_not_of(" \t");
        if (k != std::string_view::npos && same_name(rest.substr(k, 4), "BULK")) {
          begin_bulk = true;
          return true;
        }
        continue;
      }
      if (b == 0 && (same_name(word, "GRID") || element_type(word))) {
        // The frames as they were before this line: a card begins with it.
        auto& f = frames_.back();
        f.pos = static_cast<std::size_t>(line.text.data() - src_.data(f.file).data());
        return true;
      }
    }
    return false;
  }
  const std::vector<Frame>& frames() const { return frames_; }

  [[noreturn]] void fail_at(const char* p, const std::string& what) const { src_.fail_at(p, what); }

 private:
  // A line without its comment and line end; `comma`: where its first ',' is (a free-field
  // line), npos on a fixed-field one.
  struct Line {
    std::string_view text;
    std::size_t comma = std::string_view::npos;
  };
  Sources& src_;
  std::vector<Frame> frames_;  // the include chain being read, the innermost last
  bool enddata_ = false;
  Line pending_;
  bool has_pending_ = false;

  // The next line that is not blank or a comment; an INCLUDE's file is read in its place.
  bool next_line(Line& line) {
    if (has_pending_) {
      has_pending_ = false;
      line = pending_;
      return true;
    }
    while (!frames_.empty()) {
      auto& f = frames_.back();
      const auto data = src_.data(f.file);
      if (f.pos >= data.size()) {
        if (frames_.size() == 1) return false;
        frames_.pop_back();  // the included file ends: on after its INCLUDE
        continue;
      }
      src_.file(f.file).advance(f.pos);
      const char* b = data.data() + f.pos;
      const char* nl = static_cast<const char*>(std::memchr(b, '\n', data.size() - f.pos));
      const std::size_t len = nl ? static_cast<std::size_t>(nl - b) : data.size() - f.pos;
      f.pos += len + (nl ? 1 : 0);
      auto text = std::string_view(b, len);
      if ((*b == 'I' || *b == 'i') && is_include(text)) {
        include(text);
        continue;
      }
      if (const auto d = text.find('$'); d != std::string_view::npos) text = text.substr(0, d);
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      if (text.empty() || text[0] == '#' || text.substr(0, 2) == "//") continue;
      if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      line.text = text;
      line.comma = text.find(',');
      return true;
    }
    return false;
  }

  static bool is_include(std::string_view text) {
    return text.size() >= 7 && same_name(text.substr(0, 7), "INCLUDE") &&
           (text.size() == 7 || text[7] == ' ' || text[7] == '\t' || text[7] == '\'' ||
            text[7] == '\r');
  }

  // The file name of the INCLUDE on `text` (the quoted string may go on over the lines after
  // it: the frame's position moves past them).
  std::string include_name(std::string_view text) {
    auto& f = frames_.back();
    const auto data = src_.data(f.file);
    auto rest = text.substr(7);
    const auto q = rest.find_first_not_of(" \t");
    if (q == std::string_view::npos || rest[q] != '\'')
      fail_at(text.data(), "INCLUDE: expected the file name in single quotes ('name')");
    rest.remove_prefix(q + 1);
    std::string name;
    while (true) {
      if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
      const auto close = rest.find('\'');
      name += trim_blanks(rest.substr(0, close));
      if (name.size() > kMaxNameBytes)
        fail_at(text.data(), "INCLUDE: a file name longer than " + std::to_string(kMaxNameBytes) +
                                 " bytes (no closing quote?)");
      if (close != std::string_view::npos) {
        auto after = trim_blanks(rest.substr(close + 1));
        if (!after.empty() && after[0] != '$')
          fail_at(after.data(), "INCLUDE: '" + terminal_safe(after.substr(0, 40)) +
                                    "' after the file name's closing quote");
        return name;
      }
      if (f.pos >= data.size())
        fail_at(text.data(), "INCLUDE: the file name's closing quote is missing");
      const char* b = data.data() + f.pos;
      const char* nl = static_cast<const char*>(std::memchr(b, '\n', data.size() - f.pos));
      const std::size_t len = nl ? static_cast<std::size_t>(nl - b) : data.size() - f.pos;
      f.pos += len + (nl ? 1 : 0);
      rest = std::string_view(b, len);
    }
  }

  static std::string_view trim_blanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  }

  void include(std::string_view text) {
    const char* at = text.data();
    const auto name = include_name(text);
    const auto quoted = "INCLUDE '" + terminal_safe(name) + "'";
    if (!src_.can_open())
      fail_at(at, quoted + ": no directory to open it in (read the file by path)");
    if (name.empty()) fail_at(at, "INCLUDE: an empty file name");
    if (name.front() == '/') fail_at(at, quoted + " is an absolute path; refused");
    for (std::size_t p = 0; p <= name.size();) {
      const auto next = std::min(name.find('/', p), name.size());
      if (name.compare(p, next - p, "..") == 0)
        fail_at(at, quoted + " leads out of the directory of the file; refused");
      p = next + 1;
    }
    if (name.find('\0') != std::string::npos) fail_at(at, "INCLUDE: the file name holds a NUL");
    const auto& here = src_.rel(frames_.back().file);
    const auto slash = here.rfind('/');
    const std::string rel =
        (slash == std::string::npos ? std::string() : here.substr(0, slash + 1)) + name;
    std::string chain;
    bool cycle = false;
    for (const auto& fr : frames_) {
      chain += src_.rel(fr.file) + " -> ";
      cycle = cycle || src_.rel(fr.file) == rel;
    }
    chain += rel;
    if (cycle) fail_at(at, "INCLUDE cycle: " + terminal_safe(chain));
    if (frames_.size() > kMaxDepth)
      fail_at(at, "INCLUDE nested deeper than " + std::to_string(kMaxDepth) + ": " +
                      terminal_safe(chain));
    std::size_t file = 0;
    try {
      file = src_.open(rel);
    } catch (const ReadError& e) {
      fail_at(at, quoted + ": " + e.what());
    }
    frames_.push_back(Frame{file, 0});
  }

  static std::string_view field1(const Line& line) {
    return line.comma != std::string_view::npos ? line.text.substr(0, line.comma)
                                                : line.text.substr(0, 8);
  }
  static bool is_continuation(std::string_view f1) {
    const auto t = trim_spaces(f1);
    return t.empty() || t[0] == '+' || t[0] == '*';
  }

  // Appends the data fields of `line` (fields 2 to 9 small, 2 to 5 large), blank ones padded.
  void split(const Line& l, bool large, std::vector<std::string_view>& out) {
    const std::size_t per_line = large ? 4 : 8;
    const std::string_view line = l.text;
    if (l.comma != std::string_view::npos) {
      const auto from = out.size();
      std::size_t p = l.comma + 1;
      while (true) {
        const auto e = line.find(',', p);
        auto f = line.substr(p, e == std::string_view::npos ? line.size() - p : e - p);
        while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
        while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.remove_suffix(1);
        out.push_back(f.empty() ? line.substr(p, 0) : f);
        if (e == std::string_view::npos) break;
        p = e + 1;
      }
      const auto n = out.size() - from;
      // Up to the continuation marker's place, the last field is the marker; a longer line
      // (what people write by hand: a CHEXA on one line) is all data.
      if (n == per_line + 1) out.pop_back();
      const auto end = line.substr(line.size());
      while ((out.size() - from) % per_line != 0) out.push_back(end);
      return;
    }
    if (line.find('\t') != std::string_view::npos)
      fail_at(line.data() + line.find('\t'),
              "a tab in a fixed-field line (tabs are not expanded: write spaces or commas)");
    const std::size_t width = large ? 16 : 8;
    for (std::size_t k = 0; k < per_line; ++k) {
      const std::size_t b = 8 + k * width;
      if (b >= line.size()) {
        out.push_back(line.substr(line.size()));
        continue;
      }
      const auto raw = line.substr(b, width);
      const auto f = trim_spaces(raw);
      out.push_back(f.empty() ? raw.substr(0, 0) : f);
    }
  }
};

// The card's data field `i` (blank past its end).
std::string_view field(const Card& card, std::size_t i) {
  return i < card.fields.size() ? card.fields[i] : std::string_view();
}

// An integer field; false when it is not one (blank included). Up to 18 digits (every id) are
// summed with no checks (from_chars was a tenth of a 1M-element read); more go to from_chars.
bool parse_int(std::string_view f, std::int64_t& v) {
  const char* p = f.data();
  const char* e = p + f.size();
  const bool plus = p < e && *p == '+';
  if (plus) ++p;
  const bool neg = !plus && p < e && *p == '-';
  const char* d = p + (neg ? 1 : 0);
  if (d < e && e - d <= 18) {
    std::int64_t x = 0;
    for (const char* q = d; q < e; ++q) {
      const auto c = static_cast<unsigned char>(*q - '0');
      if (c > 9) return false;
      x = x * 10 + c;
    }
    v = neg ? -x : x;
    return true;
  }
  if (plus && p < e && *p == '-') return false;
  const auto r = std::from_chars(p, e, v);
  return r.ec == std::errc() && r.ptr == e && p < e;
}

// Where the bulk data starts: after BEGIN BULK, else (gmsh's files) at the first GRID or element
// card; npos when neither is there. `includes`: the INCLUDE lines before it.
std::size_t bulk_start(std::string_view data, bool& begin_bulk, std::size_t& includes) {
  std::size_t pos = 0;
  begin_bulk = false;
  includes = 0;
  while (pos < data.size()) {
    const auto nl = data.find('\n', pos);
    const auto end = nl == std::string_view::npos ? data.size() : nl;
    auto line = data.substr(pos, end - pos);
    const auto start = pos;
    pos = end + (nl == std::string_view::npos ? 0 : 1);
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string_view::npos) continue;
    line.remove_prefix(b);
    const auto word_end = line.find_first_of(" \t,*\r$");
    const auto word = line.substr(0, word_end);
    if (b == 0 && same_name(word.substr(0, 7), "INCLUDE") &&
        (word.size() == 7 || word[7] == '\'')) {
      ++includes;
      continue;
    }
    if (same_name(word, "BEGIN")) {
      const auto rest = line.substr(word.size());
      const auto k = rest.find_first_not_of(" \t");
      if (k != std::string_view::npos && same_name(rest.substr(k, 4), "BULK")) {
        begin_bulk = true;
        return pos;
      }
      continue;
    }
    if (b == 0 && (same_name(word, "GRID") || element_type(word))) return start;
  }
  return std::string_view::npos;
}

// CORD1R / CORD1C / CORD1S (systems by three GRIDs, two a card) and CORD2R / CORD2C / CORD2S
// (a system by A, B and C in a reference system): 1 or 2 and the kind of axes; 0 for any
// other card.
int cord_card(std::string_view name, nastran::Axes& axes) {
  if (name.size() != 6 || !same_name(name.substr(0, 4), "CORD")) return 0;
  const char n = name[4];
  char k = name[5];
  if (k >= 'a' && k <= 'z') k = static_cast<char>(k - 'a' + 'A');
  if ((n != '1' && n != '2') || (k != 'R' && k != 'C' && k != 'S')) return 0;
  axes = k == 'R'   ? nastran::Axes::kRectangular
         : k == 'C' ? nastran::Axes::kCylindrical
                    : nastran::Axes::kSpherical;
  return n - '0';
}

struct Block {
  const char* type;
  std::int64_t nodes;
  std::int64_t rows = 0;
};

// Points whose CP is a system the deck defines, taken to the basic system in place; returns how
// many. GRIDs naming a system no card defines keep their coordinates (counted by CP in
// `unknown`). A system that cannot be built goes to `fail`, which throws.
template <typename Fail>
std::int64_t to_basic(nastran::CoordSystems& systems, double* p, const std::int64_t* cp,
                      std::int64_t np, std::map<std::int64_t, std::int64_t>& unknown,
                      const Fail& fail) {
  std::int64_t moved = 0;
  try {
    // Every system is built before a point moves: a CORD1 system reads its GRIDs as written.
    for (std::int64_t i = 0; i < np; ++i)
      if (cp[i] != 0 && systems.defines(cp[i])) systems.prepare(cp[i]);
    for (std::int64_t i = 0; i < np; ++i, p += 3) {
      if (cp[i] == 0) continue;
      if (!systems.defines(cp[i])) {
        ++unknown[cp[i]];
        continue;
      }
      const auto b = systems.to_basic(cp[i], {p[0], p[1], p[2]});
      std::copy(b.begin(), b.end(), p);
      ++moved;
    }
  } catch (const nastran::CoordError& e) {
    fail(e);
  }
  return moved;
}

// Error paths only: the bulk data read again from `start` up to the card numbered `k` (from 0)
// among those whose name `is` accepts, and a ReadError naming that card's line with
// `what(card)`; `otherwise` when the file holds fewer such cards. The fast pass keeps no card
// positions, so the error pays for finding the line.
template <class Is, class What>
[[noreturn]] void fail_at_nth_card(Sources& sources, const std::vector<Frame>& start, Is is,
                                   std::int64_t k, What what, const std::string& otherwise) {
  Cards again(sources, start);
  Card card;
  for (std::int64_t seen = -1; again.next(card);)
    if (is(card.name) && ++seen == k) again.fail_at(card.at, what(card));
  throw ReadError(otherwise);
}

Mesh parse_nastran(std::string_view data, MappedFile& file, Sources& sources) {
  const std::string& path = file.path();
  bool begin_bulk = false;
  std::size_t pre_bulk_includes = 0;
  const auto bulk_at = bulk_start(data, begin_bulk, pre_bulk_includes);
  std::vector<Frame> start{Frame{0, bulk_at}};
  Mesh m;
  if (begin_bulk) {
    if (pre_bulk_includes > 0)
      m.notes.push_back("nastran: " + path + ": " + std::to_string(pre_bulk_includes) +
                        " INCLUDE statements before BEGIN BULK (executive and case control "
                        "sections) not opened");
  } else {
    // No BEGIN BULK in the file: INCLUDEs from its first line on may hold the bulk data.
    Cards scan(sources, {Frame{0, 0}});
    if (!scan.find_bulk(begin_bulk))
      throw ReadError(path + ": no BEGIN BULK and no GRID or element card" +
                      (sources.size() > 1 ? " (in it or the files it includes)" : "") +
                      ": not Nastran bulk data");
    start = scan.frames();
    if (!begin_bulk)
      m.notes.push_back("nastran: " + path +
                        ": no BEGIN BULK; the bulk data is read from the first GRID or element "
                        "card (meshio reads no such file)");
  }
  Cursor progress(data, path, file.progress());
  Cards cards(sources, start);
  Card card;
  Chunks<double> xyz;
  Chunks<std::int64_t> cps, conn, refs;
  IdRows grid_ids;
  std::int64_t np = 0, local_cp = 0, blank_pid = 0;
  // Element k's ref (its property id, or its element id where that is blank) is stored only
  // from the first one that is not k + 1: files that number their elements 1..n and leave the
  // property blank (meshio's, gmsh's) store none (8 bytes a cell beside the connectivity).
  std::int64_t cells = 0;
  bool refs_stored = false;
  bool any_cp = false, any_pid = false;
  std::vector<Block> blocks;
  std::map<std::string, std::int64_t> skipped;
  std::array<std::int64_t, 20> nodes{};
  // A copy: a view would point at the run's first card, in a page the window has let go of.
  std::string last_name;
  const ElementType* last_type = nullptr;
  // The coordinate systems; their GRIDs are looked up in the points and CPs as read, once the
  // cards are all read (the arrays below).
  const double* raw_points = nullptr;
  const std::int64_t* raw_cps = nullptr;
  nastran::CoordSystems systems([&](std::int64_t id, std::int64_t& cp, nastran::Vec3& x) {
    const auto row = grid_ids.find(id, np);
    if (row < 0) return false;
    const auto i = static_cast<std::size_t>(row);
    cp = raw_cps ? raw_cps[i] : 0;
    x = {raw_points[3 * i], raw_points[3 * i + 1], raw_points[3 * i + 2]};
    return true;
  });
  std::size_t cord_cards = 0;

  auto bad = [&](std::string_view f, const std::string& what) {
    // A field past the card's last one has no place in the file: the card's line stands for it.
    cards.fail_at(f.data() ? f.data() : card.at,
                  terminal_safe(card.name) + ": " + what + ", found '" +
                      (f.empty() ? std::string("(blank)") : terminal_safe(f.substr(0, 40))) + "'");
  };
  auto int_field = [&](std::size_t i, const char* what) {
    const auto f = field(card, i);
    std::int64_t v = 0;
    if (!parse_int(f, v)) [[unlikely]]
      bad(f, std::string("expected an integer ") + what);
    return v;
  };
  auto real_field = [&](std::size_t i, const std::string& what) {
    const auto f = field(card, i);
    double v = 0;
    if (!f.empty() && !parse_real_implicit(f, v)) [[unlikely]]
      bad(f, "expected a real " + what);
    return v;
  };
  // A CORD card's systems into `systems`.
  auto read_cord = [&](int kind, nastran::Axes axes) {
    const auto add = [&](nastran::CoordCard& c, std::size_t cid_field) {
      c.axes = axes;
      c.card = cord_cards;
      if (c.cid <= 0) bad(field(card, cid_field), "a coordinate system id is a positive integer");
      if (!systems.add(c))
        bad(field(card, cid_field),
            "coordinate system " + std::to_string(c.cid) + " is defined a second time");
    };
    if (kind == 2) {
      nastran::CoordCard c;
      c.cid = int_field(0, "coordinate system id (CID)");
      if (!field(card, 1).empty()) c.rid = int_field(1, "reference system id (RID)");
      static constexpr const char* kNames[] = {"A1", "A2", "A3", "B1", "B2",
                                               "B3", "C1", "C2", "C3"};
      for (std::size_t k = 0; k < 9; ++k) c.abc[k] = real_field(2 + k, kNames[k]);
      add(c, 0);
    } else {
      // CIDA G1A G2A G3A, then CIDB G1B G2B G3B when the card goes on.
      const auto goes_on = [&] {
        for (std::size_t k = 4; k < card.fields.size(); ++k)
          if (!card.fields[k].empty()) return true;
        return false;
      };
      for (std::size_t at = 0; at == 0 || (at == 4 && goes_on()); at += 4) {
        const char* ab = at == 0 ? "A" : "B";
        nastran::CoordCard c;
        c.by_grids = true;
        c.cid = int_field(at, (std::string("coordinate system id (CID") + ab + ")").c_str());
        for (std::size_t k = 0; k < 3; ++k)
          c.grids[k] =
              int_field(at + 1 + k, ("grid id (G" + std::to_string(k + 1) + ab + ")").c_str());
        add(c, at);
      }
    }
    ++cord_cards;
  };

  while (true) {
    progress.seek(cards.main_offset());
    progress.tick();
    if (!cards.next(card)) break;
    if (same_name(card.name, "GRID")) {
      const auto id = int_field(0, "grid id");
      if (!grid_ids.add(id, np)) [[unlikely]]
        bad(field(card, 0), "grid id " + std::to_string(id) + " appears twice");
      const auto cp_field = field(card, 1);
      std::int64_t cp = 0;
      if (!cp_field.empty()) {
        if (!parse_int(cp_field, cp)) bad(cp_field, "expected an integer CP (coordinate system)");
        any_cp = true;
        if (cp != 0) ++local_cp;
      }
      cps.push_back(cp);
      for (std::size_t k = 0; k < 3; ++k) {
        const auto f = field(card, 2 + k);
        double x = 0;
        if (!f.empty() && !parse_real_implicit(f, x)) [[unlikely]]
          bad(f, "expected a real coordinate X" + std::to_string(k + 1));
        xyz.push_back(x);
      }
      ++np;
      continue;
    }
    // Element cards come in runs of one name: the last one's type is looked up once.
    if (card.name != last_name) {
      last_name.assign(card.name);
      last_type = element_type(card.name);
    }
    const ElementType* t = last_type;
    if (!t) {
      nastran::Axes axes;
      if (const int kind = cord_card(card.name, axes)) {
        read_cord(kind, axes);
        continue;
      }
      ++skipped[terminal_safe(ascii_upper(card.name.substr(0, 24)))];
      continue;
    }
    const auto eid = int_field(0, "element id");
    std::int64_t pid = eid;
    if (const auto f = field(card, 1); !f.empty()) {
      pid = int_field(1, "property id");
      any_pid = true;
    } else {
      ++blank_pid;
    }
    std::size_t n = t->nodes;
    const char* type = t->meshio;
    if (t->nodes2) {
      // A solid lists its corner grids, then its mid-side ones when it is second order.
      n = 0;
      while (n < t->nodes2 && !field(card, 2 + n).empty()) ++n;
      for (std::size_t k = n; k + 2 < card.fields.size(); ++k)
        if (!card.fields[k + 2].empty())
          bad(card.fields[k + 2], "grid " + std::to_string(k + 1) + " after a blank one (" +
                                      std::string(t->card) + " takes " + std::to_string(t->nodes) +
                                      " or " + std::to_string(t->nodes2) + " grids, none blank)");
      if (n != t->nodes && n != t->nodes2)
        bad(field(card, 2 + n), std::string(t->card) + " lists " + std::to_string(n) +
                                    " grids; it takes " + std::to_string(t->nodes) + " or " +
                                    std::to_string(t->nodes2));
      if (n == t->nodes2) type = t->meshio2;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const auto f = field(card, 2 + k);
      if (!parse_int(f, nodes[k])) [[unlikely]]
        bad(f, "expected grid id " + std::to_string(k + 1) + " of " + std::to_string(n));
    }
    const std::uint8_t* order = n == 20 ? kHex20 : n == 15 ? kWedge15 : t->order;
    for (std::size_t k = 0; k < n; ++k) conn.push_back(nodes[order ? order[k] : k]);
    if (!refs_stored && pid != cells + 1) [[unlikely]] {
      for (std::int64_t i = 1; i <= cells; ++i) refs.push_back(i);
      refs_stored = true;
    }
    if (refs_stored) refs.push_back(pid);
    ++cells;
    if (blocks.empty() || std::strcmp(blocks.back().type, type) != 0)
      blocks.push_back(Block{type, static_cast<std::int64_t>(n)});
    ++blocks.back().rows;
  }
  file.release_before(data.size());
  // No element gave a property id (meshio's and gmsh's files leave it blank): no cell_data is
  // made of them, so their values go now rather than sit beside the arrays (8 bytes a cell).
  if (!any_pid) refs.clear();

  m.points = Array::of<double>({np, 3});
  double* p = m.points.as<double>();
  xyz.drain([&](const double* v, std::size_t k) {
    std::memcpy(p, v, k * sizeof(double));
    p += k;
  });
  if (any_cp) {
    Array a = Array::of<std::int64_t>({np});
    auto* out = a.as<std::int64_t>();
    cps.drain([&](const std::int64_t* v, std::size_t k) {
      std::memcpy(out, v, k * sizeof(std::int64_t));
      out += k;
    });
    m.point_data["nastran:ref"] = std::move(a);
  }
  std::int64_t moved = 0;
  std::map<std::int64_t, std::int64_t> unknown_cp;  // CP -> GRIDs
  if (local_cp > 0) {
    raw_points = m.points.as<double>();
    raw_cps = m.point_data.at("nastran:ref").as<std::int64_t>();
    moved = to_basic(systems, m.points.as<double>(), raw_cps, np, unknown_cp,
                     [&](const nastran::CoordError& e) {
                       fail_at_nth_card(
                           sources, start,
                           [](std::string_view name) {
                             nastran::Axes axes;
                             return cord_card(name, axes) != 0;
                           },
                           static_cast<std::int64_t>(e.card),
                           [&](const Card& c) { return terminal_safe(c.name) + ": " + e.what; },
                           path + ": " + e.what);
                     });
  }

  // The blocks' arrays filled from the sequences, grid ids mapped to indices.
  std::vector<Array> ref_arrays;
  std::int64_t conn_at = 0;
  std::size_t b = 0, b_at = 0;
  for (const auto& blk : blocks) {
    m.cells.push_back(CellBlock::fixed(blk.type, Array::of<std::int64_t>({blk.rows, blk.nodes})));
    if (any_pid) ref_arrays.push_back(Array::of<std::int64_t>({blk.rows}));
  }
  auto missing = [&](std::int64_t id, std::int64_t at) {
    // Which element lists it: the cards read again up to it (error path only).
    std::int64_t c = 0, seen = 0;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
      if (at < seen + blocks[k].rows * blocks[k].nodes) {
        c += (at - seen) / blocks[k].nodes;
        break;
      }
      seen += blocks[k].rows * blocks[k].nodes;
      c += blocks[k].rows;
    }
    const auto what = "grid id " + std::to_string(id) + " is not one of the GRIDs";
    fail_at_nth_card(
        sources, start, [](std::string_view name) { return element_type(name) != nullptr; }, c,
        [&](const Card& e) {
          return terminal_safe(e.name) + " " + terminal_safe(field(e, 0)) + ": " + what;
        },
        path + ": " + what);
  };
  conn.drain([&](const std::int64_t* v, std::size_t k) {
    for (std::size_t i = 0; i < k; ++i, ++conn_at) {
      while (b_at == static_cast<std::size_t>(blocks[b].rows * blocks[b].nodes)) {
        ++b;
        b_at = 0;
      }
      const auto index = grid_ids.find(v[i], np);
      if (index < 0) [[unlikely]]
        missing(v[i], conn_at);
      m.cells[b].connectivity.as<std::int64_t>()[b_at++] = index;
    }
  });
  b = 0;
  b_at = 0;
  if (any_pid && !refs_stored) {  // every ref was its element's place + 1
    std::int64_t ref = 1;
    for (auto& a : ref_arrays) {
      auto* out = a.as<std::int64_t>();
      for (std::size_t i = 0; i < a.size(); ++i) out[i] = ref++;
    }
  }
  refs.drain([&](const std::int64_t* v, std::size_t k) {
    for (std::size_t i = 0; i < k; ++i) {
      while (b_at == static_cast<std::size_t>(blocks[b].rows)) {
        ++b;
        b_at = 0;
      }
      ref_arrays[b].as<std::int64_t>()[b_at++] = v[i];
    }
  });
  if (any_pid && !blocks.empty()) m.cell_data["nastran:ref"] = std::move(ref_arrays);

  const std::string where = "nastran: " + path + ": ";
  if (moved > 0)
    m.notes.push_back(where + std::to_string(moved) +
                      " GRIDs give their coordinates in a local coordinate system (CP not 0): "
                      "taken to the basic system through their CORD cards (meshio reads them as "
                      "written); nastran:ref keeps each GRID's CP");
  if (!unknown_cp.empty()) {
    std::int64_t grids = 0;
    std::string list;
    for (const auto& [cp, n] : unknown_cp) {
      grids += n;
      if (list.size() < 80) list += (list.empty() ? "" : ", ") + std::to_string(cp);
    }
    m.notes.push_back(where + std::to_string(grids) +
                      " GRIDs name coordinate systems no CORD card defines (CP " + list +
                      "); their coordinates are read as written");
  }
  if (any_pid && blank_pid > 0)
    m.notes.push_back(where + std::to_string(blank_pid) +
                      " elements have a blank property id; nastran:ref holds their element id "
                      "(Nastran's default)");
  if (!skipped.empty()) {
    std::string list;
    for (const auto& [name, count] : skipped)
      list += (list.empty() ? "" : ", ") + name + " (" + std::to_string(count) + ")";
    m.notes.push_back(where + "cards not read (meshdock reads GRID and element cards): " + list);
  }
  if (!cards.saw_enddata()) m.notes.push_back(where + "no ENDDATA; read to the end of the file");
  return m;
}

}  // namespace

Mesh read_nastran(const InFile& in, const ReadOptions& options) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        Sources sources(file, options);
        try {
          auto m = parse_nastran(data, file, sources);
          sources.check_unchanged();
          return m;
        } catch (const ReadError&) {
          sources.check_unchanged();
          throw;
        }
      },
      Access::window);
}

}  // namespace meshdock::mesh
