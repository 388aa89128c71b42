// Tecplot ASCII data (.dat, .tec; Fluent, SU2, OpenFOAM's foamToTecplot, FUN3D, Tecplot 360), as
// meshio 5.0 reads it ("tecplot"), from Tecplot's Data Format Guide:
// - records TITLE = "..", FILETYPE = FULL, VARIABLES = names (quoted names may go on over
//   several lines, blanks in them become '_' as meshio joins two words), ZONE; keywords in any
//   case; values separated by blanks, tabs, commas or newlines; '#' starts a comment that runs to
//   the end of its line; DATASETAUXDATA / VARAUXDATA / TEXT / CUSTOMLABELS lines noted, not read;
// - ZONE records of finite-element zones: ZONETYPE = FELINESEG | FETRIANGLE | FEQUADRILATERAL |
//   FETETRAHEDRON | FEBRICK with DATAPACKING = BLOCK (default) | POINT, or the old F = FEPOINT |
//   FEBLOCK with ET = LINESEG | TRIANGLE | QUADRILATERAL | TETRAHEDRON | BRICK; N / NODES, E /
//   ELEMENTS; VARLOCATION = ([3-5] = CELLCENTERED, ...) (BLOCK only) or meshio's NV = k (the
//   variables from k on cell-centred); DT, T, STRANDID, SOLUTIONTIME, C, AUXDATA read past. The
//   header may span lines; the zone's values start with the first number where a key would be;
// - ZONE records of ordered zones (ZONETYPE = ORDERED, or no ZONETYPE and no F = FE...): I, J, K
//   (J, K 1 when not given), DATAPACKING = POINT (default) | BLOCK or the old F = POINT | BLOCK,
//   VARLOCATION as above; I*J*K points, I varying fastest, then J, then K; no connectivity in the
//   file: the cells are made as VTK's vtkStructuredGrid makes them (hexahedron, quad, line by how
//   many of I, J, K exceed 1; a vertex for a single point), (I-1)(J-1)(K-1) of them (a dimension
//   of 1 counted as 1), which is also the count of a cell-centred variable's values in ASCII;
// - values: N (nodal) or E (cell-centred) per variable, one variable after another (BLOCK) or
//   a node's variables after another's (POINT); "3*0.5" repeat counts, Fortran 'D' exponents;
//   then (finite-element zones) E lines of 1-based node numbers. Every zone's counts are checked
//   against the bytes left (2 a value) before anything is allocated (I*J*K overflow checked).
// - the coordinate variables X, Y and Z (else x, y, z; Z optional: points (n, 2)), as meshio
//   picks them, -> points; the other nodal variables -> point_data, the cell-centred ones ->
//   cell_data, float64 (meshio's too, whatever DT says);
// - each zone -> one cell block (vertex, line, triangle, quad, tetra, hexahedron); collapsed
//   corners (a triangle as a quad with its last node twice, a tet / wedge / pyramid as a brick)
//   stay as written, as meshio keeps them. Every zone is read, its points after the zone
//   before's and its connectivity offset by them (meshio reads the first zone only): noted when
//   there are several. A variable must be nodal in every zone or cell-centred in every zone. An
//   ordered zone is noted (its I, J, K structure is not kept; meshio refuses ordered zones).
// FEPOLYGON / FEPOLYHEDRON zones, VARSHARELIST, CONNECTIVITYSHAREZONE, PASSIVEVARLIST and face
// neighbour connections are ReadErrors naming the line and the zone.
// Writer: tecplot_writer.cpp.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
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

struct FeType {
  std::string_view zonetype;  // ZONETYPE=
  std::string_view et;        // the old ET=
  const char* meshio;
  std::size_t nodes;
};

constexpr std::array<FeType, 5> kTypes{{
    {"FELINESEG", "LINESEG", "line", 2},
    {"FETRIANGLE", "TRIANGLE", "triangle", 3},
    {"FEQUADRILATERAL", "QUADRILATERAL", "quad", 4},
    {"FETETRAHEDRON", "TETRAHEDRON", "tetra", 4},
    {"FEBRICK", "BRICK", "hexahedron", 8},
}};

bool is_sep(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',';
}
bool starts_number(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}
// Ends a bare word of a header (a key, a value, a variable name).
bool ends_word(char c) {
  return is_sep(c) || c == '=' || c == '(' || c == ')' || c == '"';
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

// The cells of an ordered zone by how many of I, J, K exceed 1 (VTK's vtkStructuredGrid's).
constexpr std::array<const char*, 4> kOrderedTypes{"vertex", "line", "quad", "hexahedron"};

// One zone as read: its block, its points, and each variable's values (invalid for the
// coordinates, which are in `points`).
struct Zone {
  const char* cell_type = nullptr;  // meshio's name
  std::size_t npe = 0;              // nodes a cell
  bool ordered = false;
  std::array<std::int64_t, 3> ijk{};  // an ordered zone's I, J, K
  std::int64_t nodes = 0, cells = 0;
  Array points;
  Array conn;
  std::vector<Array> values;
};

class TecplotParser {
 public:
  TecplotParser(std::string_view data, MappedFile& file)
      : data_(data), file_(file), path_(file.path()), c_(data, path_, file.progress()) {
    c_.seek(utf8_bom(data));
  }

  Mesh parse() {
    while (true) {
      file_.advance(c_.offset());
      skip_gap();
      if (c_.at_end()) break;
      const auto at = c_.offset();
      if (starts_number(peek())) {
        c_.fail(
            "expected a record (TITLE, VARIABLES, ZONE), found the value '" +
            std::string(preview()) + "'" +
            (zones_.empty() ? std::string() : " (more values than the last zone's counts take)"));
      }
      const auto key = upper(word());
      if (key == "TITLE") {
        equals("TITLE");
        value();
      } else if (key == "FILETYPE") {
        equals("FILETYPE");
        if (const auto v = upper(value()); v != "FULL") {
          c_.seek(at);
          c_.fail("FILETYPE = " + v + ": only FULL files (grid and solution in one) are read");
        }
      } else if (key == "VARIABLES") {
        variables(at);
      } else if (key == "ZONE") {
        zone(at);
      } else if (key == "DATASETAUXDATA" || key == "VARAUXDATA" || key == "TEXT" ||
                 key == "CUSTOMLABELS") {
        notes_.push_back("tecplot: " + where(at) + ": " + key + " record not read");
        c_.next_line();
      } else {
        c_.seek(at);
        c_.fail("expected a record (TITLE, VARIABLES, ZONE), found '" + std::string(preview()) +
                "'");
      }
    }
    return finish();
  }

 private:
  std::string_view data_;
  MappedFile& file_;
  const std::string& path_;
  Cursor c_;
  std::vector<std::string> names_;
  bool have_variables_ = false;
  std::vector<int> cell_centred_;  // the first zone's location of each variable
  int xi_ = -1, yi_ = -1, zi_ = -1;
  std::vector<Zone> zones_;
  std::int64_t total_nodes_ = 0;
  std::int64_t repeat_left_ = 0;  // values left of an "n*v" repeat
  double repeat_value_ = 0;
  std::vector<std::string> notes_;

  std::string where(std::size_t at) const { return path_ + ":" + std::to_string(c_.line_at(at)); }
  char peek() const { return c_.at_end() ? '\0' : data_[c_.offset()]; }
  std::string_view preview() const {
    const auto b = c_.offset();
    auto e = b;
    while (e < data_.size() && e - b < 40 && !is_sep(data_[e])) ++e;
    return data_.substr(b, e - b);
  }

  // Skips blanks, newlines, commas and '#' comments.
  void skip_gap() {
    while (!c_.at_end()) {
      const char ch = data_[c_.offset()];
      if (ch == '#')
        c_.next_line();
      else if (is_sep(ch))
        c_.seek(c_.offset() + 1);
      else
        return;
    }
  }
  // Skips blanks and commas on this line only.
  void skip_blanks() {
    while (!c_.at_end()) {
      const char ch = data_[c_.offset()];
      if (ch != ' ' && ch != '\t' && ch != '\r' && ch != ',') return;
      c_.seek(c_.offset() + 1);
    }
  }

  std::string_view word() {
    const auto b = c_.offset();
    auto e = b;
    while (e < data_.size() && !ends_word(data_[e])) ++e;
    c_.seek(e);
    return data_.substr(b, e - b);
  }

  void equals(std::string_view key) {
    skip_gap();
    if (peek() != '=')
      c_.fail("expected '=' after " + std::string(key) + ", found '" + std::string(preview()) +
              "'");
    c_.seek(c_.offset() + 1);
    skip_gap();
  }

  // A quoted string (no quotes), a parenthesised list (with its parentheses) or a bare word.
  std::string value() {
    skip_gap();
    const auto b = c_.offset();
    if (peek() == '"') {
      const auto e = data_.find('"', b + 1);
      if (e == std::string_view::npos) c_.fail("a quoted string that is never closed");
      c_.seek(e + 1);
      return std::string(data_.substr(b + 1, e - b - 1));
    }
    if (peek() == '(') {
      const auto e = data_.find(')', b);
      if (e == std::string_view::npos) c_.fail("a '(' list that is never closed");
      c_.seek(e + 1);
      return std::string(data_.substr(b, e + 1 - b));
    }
    const auto w = word();
    if (w.empty()) c_.fail("expected a value, found '" + std::string(preview()) + "'");
    return std::string(w);
  }

  // VARIABLES = "X" "Y" ...: bare or quoted names on its line, and quoted names on the lines
  // after it that start with one.
  void variables(std::size_t at) {
    if (have_variables_) {
      c_.seek(at);
      c_.fail("a second VARIABLES record");
    }
    have_variables_ = true;
    equals("VARIABLES");
    while (true) {
      skip_blanks();
      if (c_.at_end()) break;
      if (peek() == '\n' || peek() == '#') {
        // The list goes on when the next line that is not blank starts with a quoted name.
        const auto line_end = c_.offset();
        skip_gap();
        if (peek() != '"') {
          c_.seek(line_end);
          break;
        }
      }
      std::string name;
      if (peek() == '"') {
        name = value();
        std::replace(name.begin(), name.end(), ' ', '_');
      } else {
        name = std::string(word());
      }
      if (name.empty()) c_.fail("an empty variable name");
      for (const auto& n : names_)
        if (n == name) c_.fail("variable '" + name + "' is named twice");
      names_.push_back(std::move(name));
    }
    auto find = [&](const char* upper_name, const char* lower_name) {
      for (std::size_t i = 0; i < names_.size(); ++i)
        if (names_[i] == upper_name) return static_cast<int>(i);
      for (std::size_t i = 0; i < names_.size(); ++i)
        if (names_[i] == lower_name) return static_cast<int>(i);
      return -1;
    };
    xi_ = find("X", "x");
    yi_ = find("Y", "y");
    zi_ = find("Z", "z");
    if (xi_ < 0 || yi_ < 0) {
      c_.seek(at);
      c_.fail(std::string("VARIABLES names no ") + (xi_ < 0 ? "X (or x)" : "Y (or y)") +
              " coordinate");
    }
  }

  // The zone's header, as read.
  struct Header {
    std::int64_t nodes = -1, cells = -1;
    std::string zonetype, packing, f, et, varlocation;
    std::int64_t nv = -1;
    std::array<std::string, 3> ijk;  // I, J, K as written (read in ordered zones only)
    std::string title;               // T =
  };

  std::int64_t int_value(const std::string& key, const std::string& v) {
    std::int64_t n = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 0)
      c_.fail("expected a count after " + key + " =, found '" + v.substr(0, 40) + "'");
    return n;
  }

  Header header(const std::string& zname) {
    Header h;
    while (true) {
      skip_gap();
      if (c_.at_end() || starts_number(peek())) break;
      const auto key_at = c_.offset();
      const auto key = upper(word());
      if (key.empty())
        c_.fail(zname + ": expected a ZONE key, found '" + std::string(preview()) + "'");
      if (key == "AUXDATA") {
        skip_gap();
        word();
        equals("AUXDATA");
        value();
        continue;
      }
      skip_gap();
      if (peek() != '=') {
        c_.seek(key_at);
        break;  // a record (ZONE, TEXT ...) after a zone with no values
      }
      equals(key);
      const auto v = value();
      if (key == "N" || key == "NODES") {
        h.nodes = int_value(key, v);
      } else if (key == "E" || key == "ELEMENTS") {
        h.cells = int_value(key, v);
      } else if (key == "ZONETYPE") {
        h.zonetype = upper(v);
      } else if (key == "DATAPACKING") {
        h.packing = upper(v);
      } else if (key == "F") {
        h.f = upper(v);
      } else if (key == "ET") {
        h.et = upper(v);
      } else if (key == "VARLOCATION") {
        h.varlocation = upper(v);
      } else if (key == "NV") {
        h.nv = int_value(key, v);
      } else if (key == "I" || key == "J" || key == "K") {
        h.ijk[static_cast<std::size_t>(key[0] - 'I')] = v;
      } else if (key == "T") {
        h.title = v;
      } else if (key == "DT" || key == "STRANDID" || key == "SOLUTIONTIME" || key == "C" ||
                 key == "PARENTZONE" || key == "FACENEIGHBORMODE") {
        // Read past: nothing of the mesh (DT: values are read as float64 whatever it says).
      } else {
        c_.seek(key_at);
        c_.fail(zname + ": ZONE key " + key +
                " is not read by meshdock (VARSHARELIST, CONNECTIVITYSHAREZONE, PASSIVEVARLIST, "
                "face neighbours and polygon / polyhedron face counts are not supported)");
      }
    }
    return h;
  }

  // VARLOCATION = ([3-5, 7] = CELLCENTERED, [1-2] = NODAL), or a location per variable.
  std::vector<int> locations(const Header& h, const std::string& zname, bool block) {
    std::vector<int> cell(names_.size(), 0);
    if (block && h.nv >= 0)
      for (std::size_t i = static_cast<std::size_t>(h.nv); i < cell.size(); ++i) cell[i] = 1;
    std::string_view s = h.varlocation;
    if (s.empty()) return cell;
    auto bad = [&](const std::string& why) {
      c_.fail(zname + ": VARLOCATION = " + h.varlocation.substr(0, 80) + ": " + why);
    };
    if (s.front() != '(' || s.back() != ')') bad("expected a '(' list");
    s = s.substr(1, s.size() - 2);
    std::size_t next_var = 0;  // for a plain list of locations, one a variable
    while (true) {
      while (!s.empty() && is_sep(s.front())) s.remove_prefix(1);
      if (s.empty()) break;
      std::vector<std::size_t> vars;
      if (s.front() == '[') {
        const auto close = s.find(']');
        if (close == std::string_view::npos) bad("a '[' with no ']'");
        auto set = s.substr(1, close - 1);
        s.remove_prefix(close + 1);
        while (!s.empty() && (is_sep(s.front()))) s.remove_prefix(1);
        if (s.empty() || s.front() != '=') bad("expected '=' after a [variables] set");
        s.remove_prefix(1);
        while (!set.empty()) {
          while (!set.empty() && is_sep(set.front())) set.remove_prefix(1);
          if (set.empty()) break;
          std::int64_t lo = 0, hi = 0;
          auto r = std::from_chars(set.data(), set.data() + set.size(), lo);
          if (r.ec != std::errc()) bad("expected a variable number");
          set.remove_prefix(static_cast<std::size_t>(r.ptr - set.data()));
          hi = lo;
          if (!set.empty() && set.front() == '-') {
            set.remove_prefix(1);
            r = std::from_chars(set.data(), set.data() + set.size(), hi);
            if (r.ec != std::errc()) bad("expected a variable number after '-'");
            set.remove_prefix(static_cast<std::size_t>(r.ptr - set.data()));
          }
          if (lo < 1 || hi < lo || hi > static_cast<std::int64_t>(names_.size()))
            bad("variables " + std::to_string(lo) + "-" + std::to_string(hi) + " are not 1.." +
                std::to_string(names_.size()));
          for (auto v = lo; v <= hi; ++v) vars.push_back(static_cast<std::size_t>(v - 1));
        }
        while (!s.empty() && is_sep(s.front())) s.remove_prefix(1);
      } else {
        if (next_var >= names_.size()) bad("more locations than variables");
        vars.push_back(next_var++);
      }
      std::size_t e = 0;
      while (e < s.size() && !is_sep(s[e])) ++e;
      const auto loc = s.substr(0, e);
      s.remove_prefix(e);
      int is_cell = 0;
      if (loc == "CELLCENTERED")
        is_cell = 1;
      else if (loc != "NODAL")
        bad("location '" + std::string(loc.substr(0, 20)) + "' is not NODAL or CELLCENTERED");
      for (const auto v : vars) cell[v] = is_cell;
    }
    return cell;
  }

  // Tecplot's two kinds of zone: finite-element ones name their type (ZONETYPE = FE..., or the
  // old F = FEPOINT / FEBLOCK); any other is ordered (ZONETYPE = ORDERED, F = POINT / BLOCK, or
  // neither, as Tecplot's default).
  static bool is_ordered(const Header& h) {
    if (!h.zonetype.empty()) return h.zonetype == "ORDERED";
    return h.f != "FEPOINT" && h.f != "FEBLOCK";
  }

  [[noreturn]] void fail_zone(std::size_t at, const std::string& zname, const std::string& why) {
    c_.seek(at);
    c_.fail(zname + ": " + why);
  }

  // A finite-element zone's type and counts from its header; returns whether it is BLOCK-packed.
  bool fe_shape(const Header& h, Zone& z, const std::string& zname, std::size_t at) {
    auto fail_at = [&](const std::string& why) { fail_zone(at, zname, why); };
    std::string type_name;
    bool block = true;
    if (!h.zonetype.empty()) {
      type_name = h.zonetype;
      if (!h.packing.empty() && h.packing != "BLOCK" && h.packing != "POINT")
        fail_at("DATAPACKING = " + h.packing + " is not BLOCK or POINT");
      block = h.packing != "POINT";
    } else {
      if (h.et.empty()) fail_at("F = " + h.f + " with no ET = element type");
      block = h.f == "FEBLOCK";
      for (const auto& t : kTypes)
        if (t.et == h.et) type_name = t.zonetype;
      if (type_name.empty())
        fail_at("ET = " + h.et + " is not LINESEG, TRIANGLE, QUADRILATERAL, TETRAHEDRON or BRICK");
    }
    const FeType* type = nullptr;
    for (const auto& t : kTypes)
      if (t.zonetype == type_name) type = &t;
    if (!type)
      fail_at("ZONETYPE = " + type_name +
              " is not ORDERED, FELINESEG, FETRIANGLE, FEQUADRILATERAL, FETETRAHEDRON or FEBRICK "
              "(FEPOLYGON and FEPOLYHEDRON are not read)");
    if (h.nodes < 0) fail_at("no N = (NODES =) count");
    if (h.cells < 0) fail_at("no E = (ELEMENTS =) count");
    z.cell_type = type->meshio;
    z.npe = type->nodes;
    z.nodes = h.nodes;
    z.cells = h.cells;
    return block;
  }

  // An ordered zone's I, J, K (J and K 1 when not given), its point count I*J*K (overflow
  // checked: the counts come from the file) and its cells: the product of those of (I-1),
  // (J-1), (K-1) that are not 0, of the type VTK's vtkStructuredGrid makes (a hexahedron, a quad in
  // the two directions that vary, a line; a vertex for a zone of one point, as VTK, so a probe's
  // point zone reads). The count of a cell-centred variable is the same product, each dimension of
  // 1 counted as 1 (Tecplot's Data Format Guide for ASCII; vtkTecplotReader 9.1 reads that many).
  // Packing: DATAPACKING, else the old F = POINT / BLOCK, else POINT (Tecplot's default for ordered
  // zones, and vtkTecplotReader's). Returns whether it is BLOCK-packed.
  bool ordered_shape(const Header& h, Zone& z, const std::string& zname, std::size_t at) {
    auto fail_at = [&](const std::string& why) { fail_zone(at, zname, why); };
    if (!h.f.empty() && h.f != "POINT" && h.f != "BLOCK")
      fail_at("F = " + h.f + " is not POINT, BLOCK (ordered zones), FEPOINT or FEBLOCK");
    if (h.nodes >= 0 || h.cells >= 0)
      fail_at(
          "N = / E = in a zone with no finite-element ZONETYPE = (or F = FEPOINT / FEBLOCK): "
          "an ordered zone's size is I, J, K");
    if (h.ijk[0].empty())
      fail_at("an ordered zone (no finite-element ZONETYPE = or F =) with no I = count");
    const std::string packing = !h.packing.empty() ? h.packing : !h.f.empty() ? h.f : "POINT";
    if (packing != "BLOCK" && packing != "POINT")
      fail_at("DATAPACKING = " + packing + " is not BLOCK or POINT");
    for (std::size_t d = 0; d < 3; ++d) {
      const std::string key(1, static_cast<char>('I' + d));
      const auto& v = h.ijk[d];
      std::int64_t n = 1;
      if (!v.empty()) {
        const auto r = std::from_chars(v.data(), v.data() + v.size(), n);
        if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < 0)
          fail_at("expected a count after " + key + " =, found '" + v.substr(0, 40) + "'");
        if (n == 0) fail_at(key + " = 0 (an ordered zone has 1 point at least in each direction)");
      }
      z.ijk[d] = n;
    }
    std::int64_t nodes = 1, cells = 1;
    std::size_t varying = 0;
    for (const auto n : z.ijk) {
      if (__builtin_mul_overflow(nodes, n, &nodes))
        fail_at("I*J*K = " + std::to_string(z.ijk[0]) + "*" + std::to_string(z.ijk[1]) + "*" +
                std::to_string(z.ijk[2]) + " overflows");
      if (n > 1) {
        cells *= n - 1;  // no overflow: cells <= nodes
        ++varying;
      }
    }
    z.ordered = true;
    z.cell_type = kOrderedTypes[varying];
    z.npe = std::size_t{1} << varying;
    z.nodes = nodes;
    z.cells = cells;
    return packing == "BLOCK";
  }

  void zone(std::size_t at) {
    std::string zname = "zone " + std::to_string(zones_.size() + 1);
    if (!have_variables_) {
      c_.seek(at);
      c_.fail(zname + ": ZONE before VARIABLES (the variables' names are not known)");
    }
    const Header h = header(zname);
    auto fail_at = [&](const std::string& why) { fail_zone(at, zname, why); };
    Zone z;
    const bool ordered = is_ordered(h);
    // An ordered zone is named by its title too: structured codes write many, named by block.
    if (ordered && !h.title.empty()) zname += " ('" + terminal_safe(h.title.substr(0, 40)) + "')";
    const bool block = ordered ? ordered_shape(h, z, zname, at) : fe_shape(h, z, zname, at);
    const auto cell = locations(h, zname, block);
    for (std::size_t v = 0; v < cell.size(); ++v) {
      if (cell[v] && !block)
        fail_at("variable '" + names_[v] +
                "' is CELLCENTERED in a POINT-packed zone (Tecplot allows it in BLOCK only)");
      if (cell[v] &&
          (static_cast<int>(v) == xi_ || static_cast<int>(v) == yi_ || static_cast<int>(v) == zi_))
        fail_at("coordinate variable '" + names_[v] + "' is CELLCENTERED");
    }
    if (zones_.empty()) {
      cell_centred_ = cell;
    } else {
      for (std::size_t v = 0; v < cell.size(); ++v)
        if (cell[v] != cell_centred_[v])
          fail_at("variable '" + names_[v] + "' is " + (cell[v] ? "cell-centred" : "nodal") +
                  " here, " + (cell[v] ? "nodal" : "cell-centred") +
                  " in zone 1 (meshdock appends the zones' values)");
    }
    check_counts(z, cell, zname, at);
    const int dim = zi_ >= 0 ? 3 : 2;
    z.points = Array::of<double>({z.nodes, dim});
    z.values.resize(names_.size());
    std::vector<double*> out(names_.size());
    std::vector<std::size_t> stride(names_.size(), 1);
    double* pts = z.points.as<double>();
    for (std::size_t v = 0; v < names_.size(); ++v) {
      const int iv = static_cast<int>(v);
      if (iv == xi_ || iv == yi_ || iv == zi_) {
        out[v] = pts + (iv == xi_ ? 0 : iv == yi_ ? 1 : 2);
        stride[v] = static_cast<std::size_t>(dim);
      } else {
        z.values[v] = Array::of<double>({cell[v] ? z.cells : z.nodes});
        out[v] = z.values[v].as<double>();
      }
    }
    if (block) {
      for (std::size_t v = 0; v < names_.size(); ++v)
        read_values(out[v], static_cast<std::size_t>(cell[v] ? z.cells : z.nodes), stride[v], zname,
                    v);
    } else {
      std::vector<double> row(names_.size());
      for (std::int64_t i = 0; i < z.nodes; ++i) {
        read_values(row.data(), row.size(), 1, zname, names_.size());
        for (std::size_t v = 0; v < row.size(); ++v)
          out[v][static_cast<std::size_t>(i) * stride[v]] = row[v];
      }
    }
    if (repeat_left_ > 0)
      c_.fail(zname + ": a repeat count runs " + std::to_string(repeat_left_) +
              " values past the zone's values");
    z.conn = Array::of<std::int64_t>({z.cells, static_cast<std::int64_t>(z.npe)});
    if (ordered) {
      ordered_connectivity(z);
      notes_.push_back("tecplot: " + where(at) + ": " + zname +
                       ": ordered zone I, J, K = " + std::to_string(z.ijk[0]) + ", " +
                       std::to_string(z.ijk[1]) + ", " + std::to_string(z.ijk[2]) + " read as " +
                       std::to_string(z.cells) + " " + z.cell_type +
                       " cells (the I, J, K structure is not kept; meshio refuses "
                       "ordered zones)");
    } else {
      read_connectivity(z, zname);
    }
    total_nodes_ += z.nodes;
    zones_.push_back(std::move(z));
  }

  // Every value the zone's counts claim takes 2 bytes at least ("0 "): checked before anything
  // is allocated (a repeat count "1000*0" packs more, and a zone that needs it is refused).
  void check_counts(const Zone& z, const std::vector<int>& cell, const std::string& zname,
                    std::size_t at) {
    const std::size_t budget = c_.remaining() / 2;
    std::size_t need = 0;
    auto add = [&](std::int64_t count, std::size_t per, const char* what) {
      const auto n = static_cast<std::size_t>(count);
      if (per != 0 && n > (budget - need) / per) {
        c_.seek(at);
        c_.fail(zname + ": " + what + " " + std::to_string(count) +
                " is more than the rest of the file holds (" + std::to_string(per) +
                " values each, at least 2 bytes a value)");
      }
      need += n * per;
    };
    std::size_t nodal = 0, centred = 0;
    for (const auto c : cell) (c ? centred : nodal) += 1;
    if (z.ordered) {  // the connectivity is not in the file
      add(z.nodes, nodal, "I*J*K =");
      add(z.cells, centred, "cell count");
    } else {
      add(z.nodes, nodal, "N =");
      add(z.cells, centred + z.npe, "E =");
    }
  }

  // n values into out[0], out[stride], ...: variable `var` of the zone (names_.size(): a POINT
  // row) for messages.
  void read_values(double* out, std::size_t n, std::size_t stride, const std::string& zname,
                   std::size_t var) {
    const char* const begin = data_.data();
    const char* const end = begin + data_.size();
    std::size_t i = 0;
    while (i < n) {
      const std::size_t stop = std::min(n, i + 4096);
      const char* p = begin + c_.offset();
      while (i < stop) {
        if (repeat_left_ > 0) [[unlikely]] {
          out[i++ * stride] = repeat_value_;
          --repeat_left_;
          continue;
        }
        while (p < end && is_sep(*p)) ++p;
        double v;
        const auto r = std::from_chars(p, end, v);
        if (r.ec == std::errc() && (r.ptr == end || is_sep(*r.ptr))) [[likely]] {
          out[i++ * stride] = v;
          p = r.ptr;
          continue;
        }
        c_.seek(static_cast<std::size_t>(p - begin));
        slow_value(zname, var, i, n);
        p = begin + c_.offset();
      }
      c_.seek(static_cast<std::size_t>(p - begin));
      c_.tick();
      file_.advance(c_.offset());
    }
  }

  // What the fast path could not read: the end of the file, a '#' comment, "n*v", "+1.5",
  // "1.5D+00"; sets repeat_left_ (1 for a plain value) or skips the comment.
  void slow_value(const std::string& zname, std::size_t var, std::size_t i, std::size_t n) {
    auto what = [&] {
      return zname + ": " +
             (var < names_.size() ? "variable '" + names_[var] + "' (value " +
                                        std::to_string(i + 1) + " of " + std::to_string(n) + ")"
                                  : std::string("a POINT row's values"));
    };
    if (c_.at_end()) c_.fail("the file ends in " + what());
    if (peek() == '#') {
      c_.next_line();
      return;
    }
    const auto b = c_.offset();
    auto e = b;
    while (e < data_.size() && !is_sep(data_[e])) ++e;
    c_.seek(b);
    const auto tok = data_.substr(b, e - b);
    std::int64_t count = 1;
    auto num = tok;
    if (const auto star = tok.find('*'); star != std::string_view::npos) {
      const auto r = std::from_chars(tok.data(), tok.data() + star, count);
      if (r.ec != std::errc() || r.ptr != tok.data() + star || count < 1)
        c_.fail(what() + ": expected a repeat count before '*', found '" +
                std::string(tok.substr(0, 40)) + "'");
      num = tok.substr(star + 1);
    }
    if (!num.empty() && num.front() == '+') num.remove_prefix(1);
    char buf[64];
    if (num.size() < sizeof buf) {
      std::memcpy(buf, num.data(), num.size());
      for (std::size_t k = 0; k < num.size(); ++k)
        if (buf[k] == 'D' || buf[k] == 'd') buf[k] = 'E';  // Fortran's double exponent
      double v = 0;
      const auto r = std::from_chars(buf, buf + num.size(), v);
      if (r.ec == std::errc() && r.ptr == buf + num.size() && !num.empty()) {
        repeat_left_ = count;
        repeat_value_ = v;
        c_.seek(e);
        return;
      }
    }
    c_.fail(
        "expected a number in " + what() + ", found '" + std::string(tok.substr(0, 40)) + "'" +
        (upper(tok.substr(0, 4)) == "ZONE" ? " (fewer values than the zone's counts need)" : ""));
  }

  // E lines of 1-based node numbers of the zone, stored 0-based after the zones before.
  void read_connectivity(Zone& z, const std::string& zname) {
    const char* const begin = data_.data();
    const char* const end = begin + data_.size();
    const auto npe = z.npe;
    const std::size_t n = static_cast<std::size_t>(z.cells) * npe;
    auto* out = z.conn.as<std::int64_t>();
    const auto base = total_nodes_;
    const auto max = static_cast<std::uint64_t>(z.nodes);
    std::size_t i = 0;
    while (i < n) {
      const std::size_t stop = std::min(n, i + 4096);
      const char* p = begin + c_.offset();
      while (i < stop) {
        while (p < end && is_sep(*p)) ++p;
        std::int64_t v;
        const char* q = plain_digits(p, end, v);
        if (q > p && (q == end || is_sep(*q)) && v >= 1 && static_cast<std::uint64_t>(v) <= max)
            [[likely]] {
          out[i++] = v - 1 + base;
          p = q;
          continue;
        }
        c_.seek(static_cast<std::size_t>(p - begin));
        if (p < end && *p == '#') {
          c_.next_line();
          p = begin + c_.offset();
          continue;
        }
        const std::string cell = zname + ": element " + std::to_string(i / npe + 1) + " of " +
                                 std::to_string(z.cells) + " (" + z.cell_type + ", " +
                                 std::to_string(npe) + " nodes)";
        if (p == end) c_.fail("the file ends in " + cell);
        const auto tok = preview();
        if (q > p && (q == end || is_sep(*q)))
          c_.fail(cell + ": node " + std::string(tok) + " is not one of the zone's " +
                  std::to_string(z.nodes) + " nodes (1-based)");
        c_.fail(cell + ": expected a node number, found '" + std::string(tok) + "'");
      }
      c_.seek(static_cast<std::size_t>(p - begin));
      c_.tick();
      file_.advance(c_.offset());
    }
  }

  // The cells of an ordered zone, I varying fastest, then J, then K (the order of its points and
  // of its cell-centred values): each (a, b, c) cell of the directions that vary, with the
  // corners of VTK's (meshio's) hexahedron, quad and line: (a,b,c) (a+1,b,c) (a+1,b+1,c) (a,b+1,c),
  // then the same at c+1.
  void ordered_connectivity(Zone& z) const {
    std::array<std::int64_t, 3> n{1, 1, 1}, s{0, 0, 0};  // the varying directions' sizes, strides
    std::size_t k = 0;
    std::int64_t stride = 1;
    for (std::size_t d = 0; d < 3; ++d) {
      if (z.ijk[d] > 1) {
        n[k] = z.ijk[d];
        s[k++] = stride;
      }
      stride *= z.ijk[d];
    }
    const std::array<std::int64_t, 8> corner{0,    s[0],        s[0] + s[1],        s[1],
                                             s[2], s[0] + s[2], s[0] + s[1] + s[2], s[1] + s[2]};
    auto* out = z.conn.as<std::int64_t>();
    const auto npe = z.npe;
    const auto na = std::max<std::int64_t>(n[0] - 1, 1), nb = std::max<std::int64_t>(n[1] - 1, 1),
               nc = std::max<std::int64_t>(n[2] - 1, 1);
    for (std::int64_t c = 0; c < nc; ++c)
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::int64_t row = total_nodes_ + b * s[1] + c * s[2];
        for (std::int64_t a = 0; a < na; ++a) {
          const std::int64_t p = row + a * s[0];
          for (std::size_t q = 0; q < npe; ++q) *out++ = p + corner[q];
        }
      }
  }

  Mesh finish() {
    if (zones_.empty())
      throw ReadError(path_ + ": no ZONE record" +
                      (have_variables_ ? std::string() : " and no VARIABLES record") +
                      ": not a Tecplot ASCII file with a zone");
    file_.release_before(c_.offset());
    Mesh m;
    const bool one = zones_.size() == 1;
    if (!one)
      notes_.push_back("tecplot: " + path_ + ": " + std::to_string(zones_.size()) +
                       " zones read, each a cell block, their points appended in zone order "
                       "(meshio reads the first zone only)");
    m.points = one ? std::move(zones_[0].points) : concat(&Zone::points, -1);
    for (auto& z : zones_) m.cells.push_back(CellBlock::fixed(z.cell_type, std::move(z.conn)));
    for (std::size_t v = 0; v < names_.size(); ++v) {
      const int iv = static_cast<int>(v);
      if (iv == xi_ || iv == yi_ || iv == zi_) continue;
      if (cell_centred_[v]) {
        std::vector<Array> blocks;
        for (auto& z : zones_) blocks.push_back(std::move(z.values[v]));
        m.cell_data[names_[v]] = std::move(blocks);
      } else {
        m.point_data[names_[v]] =
            one ? std::move(zones_[0].values[v]) : concat(nullptr, static_cast<int>(v));
      }
    }
    m.notes = std::move(notes_);
    return m;
  }

  // The zones' points (member) or nodal variable `var`, one after another.
  Array concat(Array Zone::*member, int var) {
    auto part = [&](Zone& z) -> Array& {
      return member ? z.*member : z.values[static_cast<std::size_t>(var)];
    };
    const auto width = member ? part(zones_[0]).dim(1) : 1;
    std::vector<std::int64_t> shape{total_nodes_};
    if (member) shape.push_back(width);
    Array a = Array::of<double>(std::move(shape));
    auto* p = static_cast<char*>(a.data());
    for (auto& z : zones_) {
      Array& src = part(z);
      const auto bytes = static_cast<std::size_t>(z.nodes * width) * sizeof(double);
      if (bytes) std::memcpy(p, src.data(), bytes);
      p += bytes;
      src = Array();  // freed as it goes: the zones are held once and a half at most
    }
    return a;
  }
};

}  // namespace

Mesh read_tecplot(const InFile& in) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) { return TecplotParser(data, file).parse(); },
      Access::window);
}

}  // namespace meshdock::mesh
