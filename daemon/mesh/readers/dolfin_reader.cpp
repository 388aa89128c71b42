// DOLFIN XML (legacy FEniCS: dolfin-convert, File("x.xml") << mesh; meshio's "dolfin-xml"), and
// gzipped (x.xml.gz, which DOLFIN reads and meshio does not; told by the magic bytes, inflated
// under ReadOptions::max_bytes as gzip_text.hpp does for Netgen):
// - <dolfin> holds one <mesh celltype="interval|triangle|tetrahedron" dim="gdim">: <vertices
//   size="n"> with <vertex index="i" x=".." [y=".."] [z=".."]/> (the coordinates gdim asks for:
//   points (n, gdim) float64, as meshio; a gdim below the cells' dimension, which meshio's writer
//   writes for 2-D points, read as written, noted), <cells size="m"> with <tetrahedron index="j"
//   v0=".."
//   .. v3=".."/> (one block: "line", "triangle" or "tetra"; simplices keep their order). Every
//   index from 0 to size - 1 exactly once, in any order; vertex ids below n.
// - <domains> (DOLFIN's mesh markers, which meshio does not read): <mesh_value_collection
//   type dim size> with <value cell_index local_entity value/>, read by the entity dimension:
//   cells (dim = the cells'): every cell once -> cell_data "dolfin:domains", else cell regions
//   "dolfin:domains:<value>"; facets -> side regions "dolfin:facets:<value>" (entries (cell,
//   local facet), DOLFIN's local facet k being the one opposite vertex k); vertices -> point_data
//   "dolfin:vertices" when every point got a value, else point regions; edges of tetrahedra are
//   noted, not read.
// - Beside x.xml, every x_<name>.xml ("<name>" without a '.', as meshio finds them; names from
//   ReadOptions::list_siblings, files through open_sibling; unset: not looked for) that holds a
//   <mesh_function> is read as meshio reads it, under <name>: the old form (type dim size;
//   <entity index value/>, what meshio writes, giving the points' dimension as dim: a dim above
//   the cells', or the points' own, is the cells') of the cells -> cell_data, of the vertices ->
//   point_data (other dimensions are numbered by DOLFIN's own entity numbering: noted); the form
//   DOLFIN 2017+ writes (a <mesh_value_collection> inside, which meshio cannot read) as <domains>
//   above with <name> for the prefix. A sibling that is not a mesh function (another mesh) is noted
//   and skipped.
// Value types: int -> int64, uint -> uint64 (meshio's), float / double -> float64, bool -> uint8;
// regions need whole values (a float collection of facets is noted). A value given twice for
// one point (a vertex collection lists each cell's vertices) keeps the last, as DOLFIN does; a
// conflicting one is noted. Unknown elements (<data> entries, <coordinates>) are noted and
// skipped. Sizes are checked against the file's bytes (and ReadOptions::max_bytes) before
// anything is allocated; errors name the file, the line and the attribute.
#include <expat.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/gzip_text.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

// The least bytes one element of a kind can take in a file (<vertex index="0" x="0"/> is 24): a
// size attribute over file size / this cannot be true, and nothing is allocated for it.
constexpr std::uint64_t kMinElementBytes = 16;

// Expat without namespace processing sees "dolfin:mesh" for a prefixed element: the local name.
std::string_view local_name(const char* name) {
  std::string_view n(name);
  const auto colon = n.rfind(':');
  return colon == std::string_view::npos ? n : n.substr(colon + 1);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// One <mesh_value_collection> (or an old <mesh_function>'s entities: local = -1).
struct Collection {
  std::string type;  // int, uint, float / double, bool
  int dim = 0;
  std::int64_t size = 0;
  long line = 0;
  bool indexed = false;  // an old <mesh_function>: `cell` is the entity index, no `local`
  std::vector<std::int64_t> cell, local;
  std::vector<std::int64_t> ints;  // int / uint / bool values
  std::vector<double> reals;       // float / double values
  bool real() const { return type == "float" || type == "double"; }
  std::size_t count() const { return cell.size(); }
};

// The value types DOLFIN writes (and meshio's "float").
bool known_type(const std::string& t) {
  return t == "int" || t == "uint" || t == "float" || t == "double" || t == "bool";
}

// The parse of one file (the mesh or a sibling mesh function) with expat.
class DolfinXml {
 public:
  DolfinXml(const std::string& path, std::uint64_t file_size)
      : path_(path), file_size_(file_size) {}

  // What the file held.
  int tdim = -1, gdim = 0, nodes_per_cell = 0;
  std::string celltype;
  Array points, cells;
  std::vector<Collection> domains;     // the mesh's <domains>
  std::optional<Collection> function;  // a mesh function file's
  std::string root_child;              // the first element in <dolfin>: "mesh", "mesh_function"
  std::vector<std::string> notes;
  std::uint64_t max_bytes = 0;

  // Parses `data`: the view of `file` (Access::window: each piece given to expat is one 2 MiB
  // page of it, copied in as the parse reaches it and released behind; expat copies what it
  // keeps of a piece, a token cut at its end, so the file's bytes never all stay resident beside
  // the arrays), or an inflated .xml.gz in memory (`file` null). `progress` (may be null) hears
  // the offsets reached and may stop the parse.
  void parse(std::string_view data, MappedFile* file, ReadProgress* progress) {
    std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate(nullptr),
                                                                        &XML_ParserFree);
    if (!parser) throw std::bad_alloc();
    XML_SetUserData(parser.get(), this);
    XML_SetElementHandler(parser.get(), &DolfinXml::on_start, &DolfinXml::on_end);
    parser_ = parser.get();
    // In pieces, so that a caller's cancel stops a large file within a piece too.
    constexpr std::size_t kPiece = std::size_t{2} << 20;
    for (std::size_t at = 0;;) {
      if (progress) progress->reached(at, path_);  // throws once cancelled
      if (file) file->advance(at);
      const std::size_t n = std::min(kPiece, data.size() - at);
      const bool last = at + n == data.size();
      if (XML_Parse(parser_, data.data() + at, static_cast<int>(n), last) == XML_STATUS_ERROR) {
        if (!error_.empty()) throw ReadError(error_);
        fail(std::string("XML error: ") + XML_ErrorString(XML_GetErrorCode(parser_)));
      }
      at += n;
      if (last) break;
    }
    if (!error_.empty()) throw ReadError(error_);
    if (root_child.empty())
      throw ReadError(path_ +
                      ": a DOLFIN XML file holds a <mesh> or a <mesh_function> in its "
                      "<dolfin> element; this one has neither");
  }

 private:
  std::string path_;
  std::uint64_t file_size_;
  XML_Parser parser_ = nullptr;
  std::string error_;
  std::vector<std::string> open_;                     // local names of the elements open
  int skip_depth_ = 0;                                // > 0: inside an element skipped
  std::set<std::string> noted_;                       // elements noted once each
  std::pair<std::string, std::string> pending_note_;  // skip(.., if_not_empty): element, why
  std::int64_t nverts_ = -1, ncells_ = -1;
  std::vector<std::uint8_t> seen_;
  std::int64_t filled_ = 0;
  Collection* current_ = nullptr;  // the collection being read

  long line() const { return static_cast<long>(XML_GetCurrentLineNumber(parser_)); }
  [[noreturn]] void fail(const std::string& what) const {
    throw ReadError(path_ + ":" + std::to_string(line()) + ": " + what);
  }

  // Expat is C: no exception may cross its frames. A ReadError (or bad_alloc) stops the parse,
  // which parse() rethrows.
  template <typename F>
  static void guarded(void* self, F&& f) {
    auto* r = static_cast<DolfinXml*>(self);
    if (!r->error_.empty()) return;
    try {
      f(r);
    } catch (const ReadError& e) {
      r->error_ = e.what();
      XML_StopParser(r->parser_, XML_FALSE);
    } catch (const std::bad_alloc&) {
      r->error_ = r->path_ + ": out of memory while parsing";
      XML_StopParser(r->parser_, XML_FALSE);
    }
  }
  static void on_start(void* self, const char* name, const char** a) {
    guarded(self, [&](DolfinXml* r) { r->start(local_name(name), a); });
  }
  static void on_end(void* self, const char* name) {
    guarded(self, [&](DolfinXml* r) { r->end(local_name(name)); });
  }

  // The attribute `key` of `a` (nullptr when it has none).
  static const char* find(const char** a, std::string_view key) {
    for (; a && a[0]; a += 2)
      if (key == a[0]) return a[1];
    return nullptr;
  }
  const char* need(const char** a, std::string_view el, std::string_view key) const {
    const char* v = find(a, key);
    if (!v) fail("<" + std::string(el) + "> has no " + std::string(key) + " attribute");
    return v;
  }
  template <typename T>
  T number(const char* text, std::string_view el, std::string_view key) const {
    const auto s = trim(text);
    T v{};
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size())
      fail("<" + std::string(el) + "> " + std::string(key) + "=\"" +
           std::string(text).substr(0, 64) + "\" is not " +
           (std::is_floating_point_v<T> ? "a number" : "a whole number") +
           (ec == std::errc::result_out_of_range ? " in range" : ""));
    return v;
  }
  std::int64_t count_attr(const char** a, std::string_view el) const {
    const auto n = number<std::int64_t>(need(a, el, "size"), el, "size");
    if (n < 0) fail("<" + std::string(el) + "> size=\"" + std::to_string(n) + "\" is negative");
    if (static_cast<std::uint64_t>(n) > file_size_ / kMinElementBytes)
      fail("<" + std::string(el) + "> size=\"" + std::to_string(n) + "\" is more than the file's " +
           std::to_string(file_size_) + " bytes can hold");
    return n;
  }
  // An index attribute below `limit`, seen for the first time (seen_ tracks them).
  std::int64_t fresh_index(const char** a, std::string_view el, std::int64_t limit) {
    const auto i = number<std::int64_t>(need(a, el, "index"), el, "index");
    if (i < 0 || i >= limit)
      fail("<" + std::string(el) + "> index=\"" + std::to_string(i) + "\" is outside 0.." +
           std::to_string(limit - 1) + " (the size given)");
    auto& s = seen_[static_cast<std::size_t>(i)];
    if (s) fail("<" + std::string(el) + "> index=\"" + std::to_string(i) + "\" is given twice");
    s = 1;
    ++filled_;
    return i;
  }
  void check_budget(std::uint64_t bytes, const std::string& what) const {
    if (max_bytes && bytes > max_bytes)
      throw SizeLimitError(path_ + ":" + std::to_string(line()) + ": " + what + " take " +
                           std::to_string(bytes) + " bytes, over the limit of " +
                           std::to_string(max_bytes));
  }
  void note_once(std::string_view el, const std::string& why) {
    if (noted_.insert(std::string(el)).second)
      notes.push_back(path_ + ":" + std::to_string(line()) + ": <" + std::string(el) + "> " + why);
  }

  std::string_view parent() const {
    return open_.empty() ? std::string_view() : std::string_view(open_.back());
  }

  void start(std::string_view el, const char** a) {
    if (skip_depth_ > 0) {
      if (!pending_note_.first.empty()) note_once(pending_note_.first, pending_note_.second);
      pending_note_ = {};
      ++skip_depth_;
      return;
    }
    const std::string_view in = parent();
    if (open_.empty()) {
      if (el != "dolfin")
        fail("not a DOLFIN XML file: its root element is <" + std::string(el) + ">, not <dolfin>");
    } else if (in == "dolfin") {
      if (el == "mesh" || el == "mesh_function" || el == "mesh_value_collection") {
        if (!root_child.empty())
          fail("a second <" + std::string(el) + "> in <dolfin> (after <" + root_child +
               ">): a DOLFIN XML file holds one");
        root_child = std::string(el);
        if (el == "mesh") start_mesh(a);
        if (el == "mesh_function") start_function(a);
        if (el == "mesh_value_collection") start_collection(a, function.emplace());
      } else {
        return skip(el, "is not read (a DOLFIN file's <mesh> or <mesh_function> is)");
      }
    } else if (in == "mesh") {
      if (el == "vertices") {
        if (nverts_ >= 0) fail("a second <vertices> in <mesh>");
        nverts_ = count_attr(a, el);
        check_budget(static_cast<std::uint64_t>(nverts_) * static_cast<std::uint64_t>(gdim) * 8,
                     "the points");
        points = Array::of<double>({nverts_, gdim});
        seen_.assign(static_cast<std::size_t>(nverts_), 0);
        filled_ = 0;
      } else if (el == "cells") {
        if (nverts_ < 0) fail("<cells> before <vertices>: the cells' vertex ids need them");
        if (ncells_ >= 0) fail("a second <cells> in <mesh>");
        ncells_ = count_attr(a, el);
        check_budget(static_cast<std::uint64_t>(nverts_) * static_cast<std::uint64_t>(gdim) * 8 +
                         static_cast<std::uint64_t>(ncells_) *
                             static_cast<std::uint64_t>(nodes_per_cell) * 8,
                     "the points and cells");
        cells = Array::of<std::int64_t>({ncells_, nodes_per_cell});
        seen_.assign(static_cast<std::size_t>(ncells_), 0);
        filled_ = 0;
      } else if (el == "domains") {
        if (ncells_ < 0) fail("<domains> before <cells>: its values name cells");
      } else if (el == "data") {
        return skip(el, "(DOLFIN's mesh data) is not read", true);
      } else {
        return skip(el, "is not read");
      }
    } else if (in == "vertices") {
      if (el != "vertex") return skip(el, "in <vertices> is not read");
      vertex(a);
    } else if (in == "cells") {
      if (el != celltype)
        fail("<" + std::string(el) + "> in <cells> of a mesh of celltype \"" + celltype + "\"");
      cell(a);
    } else if (in == "domains") {
      if (el != "mesh_value_collection") return skip(el, "in <domains> is not read");
      start_collection(a, domains.emplace_back());
    } else if (in == "mesh_value_collection") {
      if (el != "value") return skip(el, "in <mesh_value_collection> is not read");
      value(a);
    } else if (in == "mesh_function") {
      if (el == "mesh_value_collection") {
        if (function->indexed)
          fail("<mesh_value_collection> in a <mesh_function> that has attributes or entities");
        start_collection(a, *function);
      } else if (el == "entity") {
        entity(a);
      } else {
        return skip(el, "in <mesh_function> is not read");
      }
    } else {
      return skip(el, "is not read");
    }
    open_.emplace_back(el);
  }

  // Skips `el` and what it holds, noted once (`if_not_empty`: only when it holds an element:
  // DOLFIN writes an empty <data />).
  void skip(std::string_view el, const std::string& why, bool if_not_empty = false) {
    if (if_not_empty)
      pending_note_ = {std::string(el), why};
    else
      note_once(el, why);
    skip_depth_ = 1;
  }

  void end(std::string_view el) {
    if (skip_depth_ > 0) {
      if (--skip_depth_ == 0) pending_note_ = {};
      return;
    }
    if (el == "vertices" && filled_ != nverts_) missing("vertex", nverts_);
    if (el == "cells" && filled_ != ncells_) missing(celltype, ncells_);
    if (el == "mesh") {
      if (nverts_ < 0) fail("<mesh> has no <vertices>");
      if (ncells_ < 0) fail("<mesh> has no <cells>");
    }
    if (el == "mesh_value_collection" && current_) {
      if (static_cast<std::int64_t>(current_->count()) != current_->size)
        fail("<mesh_value_collection> of line " + std::to_string(current_->line) + " says size=\"" +
             std::to_string(current_->size) + "\" and holds " + std::to_string(current_->count()) +
             " values");
      current_ = nullptr;
    }
    if (el == "mesh_function") {
      if (function->indexed && filled_ != function->size) missing("entity", function->size);
      if (!function->indexed && function->type.empty())
        fail(
            "<mesh_function> has neither type, dim and size attributes nor a "
            "<mesh_value_collection>");
    }
    open_.pop_back();
  }

  [[noreturn]] void missing(const std::string& el, std::int64_t size) const {
    const auto it = std::find(seen_.begin(), seen_.end(), 0);
    fail("<" + el + " index=\"" + std::to_string(it - seen_.begin()) + "\"> is missing (" +
         std::to_string(filled_) + " of size=\"" + std::to_string(size) + "\" given)");
  }

  void start_mesh(const char** a) {
    celltype = need(a, "mesh", "celltype");
    if (celltype == "interval") {
      tdim = 1;
    } else if (celltype == "triangle") {
      tdim = 2;
    } else if (celltype == "tetrahedron") {
      tdim = 3;
    } else {
      fail("<mesh> celltype=\"" + celltype.substr(0, 64) +
           "\" is not read (interval, triangle and tetrahedron are: the cells DOLFIN's XML "
           "holds)");
    }
    nodes_per_cell = tdim + 1;
    const char* d = need(a, "mesh", "dim");
    const auto g = number<int>(d, "mesh", "dim");
    if (g < 1 || g > 3)
      fail("<mesh> dim=\"" + std::string(d).substr(0, 64) + "\" is not 1, 2 or 3");
    if (g < tdim)  // no DOLFIN mesh; meshio's writer writes its 2-D points' tetrahedra so
      notes.push_back(path_ + ":" + std::to_string(line()) + ": <mesh> dim=\"" + std::to_string(g) +
                      "\" is less than a " + celltype + "'s " + std::to_string(tdim) +
                      ": points (n, " + std::to_string(g) + ") as written (as meshio reads them)");
    gdim = g;
  }

  void vertex(const char** a) {
    const auto i = fresh_index(a, "vertex", nverts_);
    double* p = points.as<double>() + i * gdim;
    static constexpr const char* kAxes[] = {"x", "y", "z"};
    for (int k = 0; k < gdim; ++k)
      p[k] = number<double>(need(a, "vertex", kAxes[k]), "vertex", kAxes[k]);
  }

  void cell(const char** a) {
    const auto j = fresh_index(a, celltype, ncells_);
    std::int64_t* c = cells.as<std::int64_t>() + j * nodes_per_cell;
    static constexpr const char* kVs[] = {"v0", "v1", "v2", "v3"};
    for (int k = 0; k < nodes_per_cell; ++k) {
      const auto v = number<std::int64_t>(need(a, celltype, kVs[k]), celltype, kVs[k]);
      if (v < 0 || v >= nverts_)
        fail("<" + celltype + " index=\"" + std::to_string(j) + "\"> " + kVs[k] + "=\"" +
             std::to_string(v) + "\" is not a vertex (0.." + std::to_string(nverts_ - 1) + ")");
      c[k] = v;
    }
  }

  // The type, dim and size attributes of `el` (a <mesh_value_collection> or an old
  // <mesh_function>) into `c`, each checked.
  void type_dim_size(const char** a, std::string_view el, Collection& c) {
    const std::string e(el);
    c.type = need(a, el, "type");
    if (!known_type(c.type))
      fail("<" + e + "> type=\"" + c.type.substr(0, 64) +
           "\" is not int, uint, float, double or bool");
    c.dim = number<int>(need(a, el, "dim"), el, "dim");
    if (c.dim < 0 || c.dim > 3)
      fail("<" + e + "> dim=\"" + std::to_string(c.dim) + "\" is not 0..3");
    c.size = count_attr(a, el);
    c.line = line();
  }

  void start_collection(const char** a, Collection& c) {
    type_dim_size(a, "mesh_value_collection", c);
    c.cell.reserve(static_cast<std::size_t>(c.size));
    c.local.reserve(static_cast<std::size_t>(c.size));
    (c.real() ? c.reals.reserve(static_cast<std::size_t>(c.size))
              : c.ints.reserve(static_cast<std::size_t>(c.size)));
    current_ = &c;
  }

  void start_function(const char** a) {
    Collection& c = function.emplace();
    c.size = -1;
    if (!find(a, "type")) return;  // the new form: a <mesh_value_collection> inside
    type_dim_size(a, "mesh_function", c);
    c.indexed = true;
    c.cell.assign(static_cast<std::size_t>(c.size), 0);  // by entity index
    (c.real() ? c.reals.assign(static_cast<std::size_t>(c.size), 0.0)
              : c.ints.assign(static_cast<std::size_t>(c.size), 0));
    seen_.assign(static_cast<std::size_t>(c.size), 0);
    filled_ = 0;
  }

  void store(Collection& c, const char* text, std::string_view el, std::size_t at) {
    if (c.real()) {
      const double v = number<double>(text, el, "value");
      if (at < c.reals.size())
        c.reals[at] = v;
      else
        c.reals.push_back(v);
      return;
    }
    const auto v = number<std::int64_t>(text, el, "value");
    if ((c.type == "uint" && v < 0) || (c.type == "bool" && v != 0 && v != 1))
      fail("<" + std::string(el) + "> value=\"" + std::to_string(v) + "\" is not a " + c.type);
    if (at < c.ints.size())
      c.ints[at] = v;
    else
      c.ints.push_back(v);
  }

  void value(const char** a) {
    Collection& c = *current_;
    if (static_cast<std::int64_t>(c.count()) >= c.size)
      fail("<value> past the size=\"" + std::to_string(c.size) +
           "\" of the <mesh_value_collection> of line " + std::to_string(c.line));
    const auto cell = number<std::int64_t>(need(a, "value", "cell_index"), "value", "cell_index");
    const auto local =
        number<std::int64_t>(need(a, "value", "local_entity"), "value", "local_entity");
    c.cell.push_back(cell);
    c.local.push_back(local);
    store(c, need(a, "value", "value"), "value", c.count() - 1);
  }

  void entity(const char** a) {
    Collection& c = *function;
    if (!c.indexed) fail("<entity> in a <mesh_function> without type, dim and size");
    const auto i = fresh_index(a, "entity", c.size);
    c.cell[static_cast<std::size_t>(i)] = i;
    store(c, need(a, "entity", "value"), "entity", static_cast<std::size_t>(i));
  }
};

// Entities of dimension d in a simplex of dimension t: C(t + 1, d + 1).
int entities_of(int t, int d) {
  static constexpr int kC[5][5] = {{1}, {1, 1}, {1, 2, 1}, {1, 3, 3, 1}, {1, 4, 6, 4, 1}};
  return d > t ? 0 : kC[t + 1][d + 1];
}

// The array of one value per entity (`n` of them), from `at(i)`, the entity of value i.
template <typename At>
Array per_entity(const Collection& c, std::int64_t n, At&& at) {
  Array out = c.real()           ? Array::of<double>({n})
              : c.type == "int"  ? Array::of<std::int64_t>({n})
              : c.type == "bool" ? Array::of<std::uint8_t>({n})
                                 : Array::empty(DType{1, 64, 1}, {n});
  for (std::size_t i = 0; i < c.count(); ++i) {
    const auto e = at(i);
    if (c.real())
      out.as<double>()[e] = c.reals[i];
    else if (c.type == "bool")
      out.as<std::uint8_t>()[e] = static_cast<std::uint8_t>(c.ints[i]);
    else
      out.as<std::int64_t>()[e] = c.ints[i];  // uint64's bits: the values are not negative
  }
  return out;
}

// Puts collection `c` (from `where`: a file and line) into `m` under `name`, by its dimension.
void place(Mesh& m, const DolfinXml& mesh, const Collection& c, const std::string& name,
           const std::string& where) {
  const int t = mesh.tdim;
  const std::int64_t ncells = mesh.cells.dim(0), npoints = mesh.points.dim(0);
  const auto* conn = mesh.cells.as<std::int64_t>();
  const int k = entities_of(t, c.dim);
  for (std::size_t i = 0; i < c.count(); ++i) {
    if (c.cell[i] < 0 || c.cell[i] >= ncells)
      throw ReadError(where + ": value " + std::to_string(i) + " cell_index=\"" +
                      std::to_string(c.cell[i]) + "\" is not a cell (0.." +
                      std::to_string(ncells - 1) + ")");
    if (c.local[i] < 0 || c.local[i] >= k)
      throw ReadError(where + ": value " + std::to_string(i) + " local_entity=\"" +
                      std::to_string(c.local[i]) + "\" is not one of a " + mesh.celltype + "'s " +
                      std::to_string(k) + " entities of dimension " + std::to_string(c.dim));
  }
  auto regions = [&](RegionKind kind, auto&& entry) {
    if (c.real()) {
      m.notes.push_back(where + ": " + c.type + " values of dimension " + std::to_string(c.dim) +
                        " entities not read: '" + name +
                        "' would be regions, which need whole-number values");
      return;
    }
    std::map<std::int64_t, std::vector<std::int64_t>> by_value;
    for (std::size_t i = 0; i < c.count(); ++i) entry(by_value[c.ints[i]], i);
    for (auto& [v, entries] : by_value) {
      Region r;
      r.name = name + ":" + std::to_string(v);
      if (std::any_of(m.regions.begin(), m.regions.end(),
                      [&](const Region& o) { return o.name == r.name; })) {
        m.notes.push_back(where + ": region '" + r.name + "' given twice: the second not read");
        continue;
      }
      r.kind = kind;
      r.dim = c.dim;
      r.tag = v;
      if (kind == RegionKind::kPoint) {
        std::sort(entries.begin(), entries.end());
        entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
      }
      const auto n = static_cast<std::int64_t>(entries.size());
      r.entries = kind == RegionKind::kSide ? Array::from_vector(entries, {n / 2, 2})
                                            : Array::from_vector(entries);
      m.regions.push_back(std::move(r));
    }
  };
  if (c.dim == t) {
    std::vector<std::uint8_t> seen(static_cast<std::size_t>(ncells), 0);
    std::int64_t distinct = 0;
    for (auto j : c.cell) distinct += seen[static_cast<std::size_t>(j)]++ == 0;
    if (distinct == ncells && static_cast<std::int64_t>(c.count()) == ncells) {
      if (m.cell_data.count(name))
        m.notes.push_back(where + ": cell data '" + name + "' given twice: the second not read");
      else
        m.cell_data[name].push_back(
            per_entity(c, ncells, [&](std::size_t i) { return c.cell[i]; }));
      return;
    }
    regions(RegionKind::kCell, [&](auto& e, std::size_t i) { e.push_back(c.cell[i]); });
  } else if (c.dim == 0) {  // before facets: an interval's facets are its vertices
    const auto point = [&](std::size_t i) { return conn[c.cell[i] * (t + 1) + c.local[i]]; };
    std::vector<std::int64_t> first(static_cast<std::size_t>(npoints), -1);
    std::int64_t given = 0, conflicts = 0;
    for (std::size_t i = 0; i < c.count(); ++i) {
      auto& f = first[static_cast<std::size_t>(point(i))];
      if (f < 0) {
        f = static_cast<std::int64_t>(i);
        ++given;
      } else if (c.real() ? c.reals[static_cast<std::size_t>(f)] != c.reals[i]
                          : c.ints[static_cast<std::size_t>(f)] != c.ints[i]) {
        ++conflicts;
      }
    }
    if (conflicts)
      m.notes.push_back(where + ": " + std::to_string(conflicts) +
                        " values for a vertex that already had another (each cell lists its "
                        "vertices): the last kept, as DOLFIN");
    if (given == npoints) {
      if (m.point_data.count(name))
        m.notes.push_back(where + ": point data '" + name + "' given twice: the second not read");
      else
        m.point_data[name] = per_entity(c, npoints, point);
      return;
    }
    regions(RegionKind::kPoint, [&](auto& e, std::size_t i) { e.push_back(point(i)); });
  } else if (c.dim == t - 1) {
    regions(RegionKind::kSide, [&](auto& e, std::size_t i) {
      e.push_back(c.cell[i]);
      e.push_back(c.local[i]);
    });
  } else {
    m.notes.push_back(where + ": values of the " + std::to_string(c.count()) +
                      " entities of dimension " + std::to_string(c.dim) + " ('" + name +
                      "') not read: meshdock keeps cells, facets and vertices");
  }
}

// An old-form <mesh_function> (entities by DOLFIN's index): the cells' and the vertices' only.
void place_indexed(Mesh& m, const DolfinXml& mesh, const Collection& c, const std::string& name,
                   const std::string& where) {
  const auto ident = [](std::size_t i) { return static_cast<std::int64_t>(i); };
  // meshio's writer gives the points' dimension (2 when every z is 0, else 3) as the cells':
  // dim="3" for a surface's triangles is theirs (a triangle mesh has no entities of dimension
  // 3), and dim="2" for the tetrahedra of 2-D points.
  if ((c.dim >= mesh.tdim || c.dim == mesh.gdim) && c.size == mesh.cells.dim(0)) {
    if (!m.cell_data.count(name)) {
      m.cell_data[name].push_back(per_entity(c, c.size, ident));
      return;
    }
  } else if (c.dim == 0 && c.size == mesh.points.dim(0)) {
    if (!m.point_data.count(name)) {
      m.point_data[name] = per_entity(c, c.size, ident);
      return;
    }
  } else {
    m.notes.push_back(
        where + ": a mesh function of the " + std::to_string(c.size) + " entities of dimension " +
        std::to_string(c.dim) +
        " not read: they are numbered by DOLFIN's own entity numbering (only cells and vertices, "
        "all of them, are read from this form)");
    return;
  }
  m.notes.push_back(where + ": '" + name + "' given twice: the second not read");
}

// x_<name>.xml (or x_<name>.xml.gz) for the mesh x.xml (or x.xml.gz): "<name>", or "" when
// `file` is not one (meshio's rule: the name has no '.').
std::string function_name(const std::string& stem, const std::string& file) {
  const std::size_t tail = file.ends_with(".xml") ? 4 : file.ends_with(".xml.gz") ? 7 : 0;
  if (!tail || file.size() <= stem.size() + 1 + tail || file.compare(0, stem.size(), stem) != 0 ||
      file[stem.size()] != '_')
    return {};
  std::string name = file.substr(stem.size() + 1, file.size() - stem.size() - 1 - tail);
  if (name.find('.') != std::string::npos) return {};
  return name;
}

// A mesh or mesh function file, plain or gzipped (DOLFIN reads x.xml.gz; FEniCS' demo meshes
// come so): inflated into memory under max_bytes (unset: default_inflate_limit()).
DolfinXml parse_file(const InFile& in, std::uint64_t max_bytes) {
  return parse_maybe_gzipped(in, max_bytes, "DOLFIN XML file",
                             [&](std::string_view text, MappedFile* file, ReadProgress* progress) {
                               DolfinXml x(in.path, text.size());
                               x.max_bytes = max_bytes;
                               x.parse(text, file, progress);
                               return x;
                             });
}

}  // namespace

Mesh read_dolfin(const InFile& in, const ReadOptions& options) {
  DolfinXml x = parse_file(in, options.max_bytes);
  if (x.root_child != "mesh")
    throw ReadError(in.path +
                    ": a DOLFIN mesh function, not a mesh: read the mesh x.xml it "
                    "belongs to (its x_<name>.xml files are read with it)");
  Mesh m;
  m.notes = std::move(x.notes);
  m.points = x.points;
  static constexpr const char* kBlock[] = {"", "line", "triangle", "tetra"};
  m.cells.push_back(CellBlock::fixed(kBlock[x.tdim], x.cells));
  for (const auto& c : x.domains) {
    const std::string name = c.dim == x.tdim ? "dolfin:domains"
                             : c.dim == 0    ? "dolfin:vertices"
                                             : "dolfin:facets";
    place(m, x, c, name, in.path + ":" + std::to_string(c.line));
  }
  if (!options.list_siblings || !options.open_sibling) return m;
  const auto slash = in.path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : in.path.substr(0, slash + 1);
  const std::string file = in.path.substr(dir.size());
  const std::string plain = file.ends_with(".gz") ? file.substr(0, file.size() - 3) : file;
  const std::string stem = plain.substr(0, plain.rfind('.'));
  std::vector<std::string> names = options.list_siblings();
  std::sort(names.begin(), names.end());
  for (const auto& sibling : names) {
    const std::string name = function_name(stem, sibling);
    if (name.empty()) continue;
    const std::string path = dir + sibling;
    DolfinXml fx = [&] {
      try {
        const UniqueFd fd = options.open_sibling(sibling);
        return parse_file(InFile{fd.get(), path, nullptr}, options.max_bytes);
      } catch (const SizeLimitError&) {
        throw;
      } catch (const ReadError& e) {
        throw ReadError(std::string(e.what()) + " (read as the mesh function '" + name + "' of " +
                        in.path + ")");
      }
    }();
    if (fx.root_child == "mesh") {
      m.notes.push_back(path + ": a DOLFIN mesh, not a mesh function: not read as '" + name +
                        "' of " + in.path);
      continue;
    }
    for (auto& note : fx.notes) m.notes.push_back(std::move(note));
    const Collection& c = *fx.function;
    const std::string where = path + ":" + std::to_string(c.line);
    if (c.indexed)
      place_indexed(m, x, c, name, where);
    else
      place(m, x, c, name, where);
  }
  return m;
}

}  // namespace meshdock::mesh
