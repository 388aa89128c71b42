// Abaqus input files (.inp; meshio's "abaqus"): keyword lines ("*NODE, NSET=all": the keyword
// and its parameters case-insensitive, a line ending with ',' goes on on the next), data lines
// of comma-separated values, "**" comment lines, blank lines.
// - *NODE: "id, x[, y[, z]]". The points have as many coordinates as the node with the most
//   (2-D when every node has 2, as meshio); a node with fewer has the rest 0, as Abaqus reads
//   omitted coordinates (noted; meshio fails on such a file). Node ids are labels: the points
//   are in file order, the ids are not kept (noted when they are not 1..n in order). A second
//   *NODE section adds to the points (meshio keeps only the last section's). NSET= makes a
//   point Region of the section's nodes.
// - *ELEMENT, TYPE=t[, ELSET=name]: "id, n1, n2, ..."; an element's values may go on over
//   lines (C3D20 has 21 numbers: Abaqus writes 16 a line at most). Every section is one cell
//   block (as meshio: sections of one type are not merged), the types meshio 5.3 maps and more
//   (kTypes). Node order is Abaqus's, which is meshio's (VTK's) for every type but the 3-node
//   lines: Abaqus numbers them end, middle, end; they are reordered to end, end, middle (meshio
//   reads them unchanged, so its line3 cells have the middle node second). meshio writes line3
//   as B33H, which in Abaqus is a 2-node beam: a B33 / B33H section whose elements have 3 nodes
//   is read as meshio wrote it (noted). Element ids are not kept (as meshio; noted when they
//   are not 1..n in file order). ELSET= makes a cell Region of the section's cells.
// - *NSET, NSET=n / *ELSET, ELSET=n [, GENERATE]: ids, or names of sets defined before, or with
//   GENERATE "first, last[, step]" lines; a point or a cell Region (cell entries are global
//   block-major cell numbers), dim 0 and tag 0 (Abaqus sets have neither). Names are kept as
//   written (as meshio does); references to sets and repeated definitions match names
//   case-insensitively, as Abaqus does: a set defined again gets the new entries appended
//   (meshio keeps the last definition); a set that names sets, or is defined again, keeps each
//   entry once. An id that no node (element) has is a ReadError naming the set, the id and the
//   line. Sets are the one way an input makes more than its size (a set naming a big set, over
//   and over): they count against ReadOptions::max_bytes with the points and cells.
// - *INCLUDE, INPUT=f: the file is read in place (Abaqus's textual inclusion; meshio reads it as
//   a mesh of its own and appends its points and cells), opened through
//   ReadOptions::open_sibling relative to the including file's directory; absolute names and
//   '..' are refused, and so are chains deeper than kMaxDepth and cycles (naming the chain).
// - *PART, NAME=P ... *END PART: a name space of its own for node, element and set ids (as
//   Abaqus/CAE writes every part: numbered from 1). *ASSEMBLY ... *END ASSEMBLY holds
//   *INSTANCE, NAME=I, PART=P ... *END INSTANCE (P defined before) with optional data lines
//   "tx, ty, tz" then "ax, ay, az, bx, by, bz, angle": Abaqus's keyword reference says the
//   translation is applied first, then the rotation, by angle degrees (right-handed) about the
//   axis through a and b, those given in the assembly's frame: x -> a + R (x + t - a).
//   The mesh is then every instance's copy of its part, in instance order (its points placed,
//   its cell blocks on its copy's points), then the nodes and elements outside any part (the
//   assembly's reference nodes); a part without an instance is not in it (noted). One cell
//   Region per instance, named after it; a part's sets become "I.S" for each instance I.
//   Assembly sets keep their names: INSTANCE=I makes their ids (and names) I's, "I.12" and
//   "I.name" name a node / element or a set of I, the rest the assembly's own. With parts but
//   no instance, each part is read once in file order, in ids of its own (a cell Region per
//   part, its sets "P.S"). An instance copies its part from one line: the copies are held to
//   ReadOptions::max_bytes before anything is allocated. An instance's own *NODE / *ELEMENT /
//   sets are refused (CAE writes none), as are nested parts and a part name used twice.
// - Every other keyword (*MATERIAL, *STEP, *BOUNDARY, ...) is skipped with its data lines: one
//   note lists them with their counts. *HEADING's text is skipped without a note.
// Values are parsed in place (the file goes through a 2 MiB window); ids are resolved once the
// whole input is read (an element may come before its nodes), through a dense table when the
// ids are compact, else a sorted one. Nothing is kept per value but the value: an error's line
// is found again from where its section's data starts.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numbers>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

constexpr int kMaxDepth = 8;  // *INCLUDE nesting

struct ElementType {
  const char* abaqus;
  const char* type;  // meshio's
  int nodes;
};

// meshio 5.3's abaqus_to_meshio_type (C3D4H: "tetra" here, meshio's "tetra4" is no cell type),
// then the plane stress / strain, axisymmetric, heat transfer and other continuum variants
// meshio refuses.
constexpr ElementType kTypes[] = {
    {"T2D2", "line", 2},
    {"T2D2H", "line", 2},
    {"T2D3", "line3", 3},
    {"T2D3H", "line3", 3},
    {"T3D2", "line", 2},
    {"T3D2H", "line", 2},
    {"T3D3", "line3", 3},
    {"T3D3H", "line3", 3},
    {"B21", "line", 2},
    {"B21H", "line", 2},
    {"B22", "line3", 3},
    {"B22H", "line3", 3},
    {"B31", "line", 2},
    {"B31H", "line", 2},
    {"B32", "line3", 3},
    {"B32H", "line3", 3},
    {"B33", "line", 2},
    {"B33H", "line", 2},
    {"CPS4", "quad", 4},
    {"CPS4R", "quad", 4},
    {"S4", "quad", 4},
    {"S4R", "quad", 4},
    {"S4RS", "quad", 4},
    {"S4RSW", "quad", 4},
    {"S4R5", "quad", 4},
    {"S8R", "quad8", 8},
    {"S8R5", "quad8", 8},
    {"S9R5", "quad9", 9},
    {"CPS3", "triangle", 3},
    {"STRI3", "triangle", 3},
    {"S3", "triangle", 3},
    {"S3R", "triangle", 3},
    {"S3RS", "triangle", 3},
    {"R3D3", "triangle", 3},
    {"STRI65", "triangle6", 6},
    {"C3D8", "hexahedron", 8},
    {"C3D8H", "hexahedron", 8},
    {"C3D8I", "hexahedron", 8},
    {"C3D8IH", "hexahedron", 8},
    {"C3D8R", "hexahedron", 8},
    {"C3D8RH", "hexahedron", 8},
    {"C3D20", "hexahedron20", 20},
    {"C3D20H", "hexahedron20", 20},
    {"C3D20R", "hexahedron20", 20},
    {"C3D20RH", "hexahedron20", 20},
    {"C3D4", "tetra", 4},
    {"C3D4H", "tetra", 4},
    {"C3D10", "tetra10", 10},
    {"C3D10H", "tetra10", 10},
    {"C3D10I", "tetra10", 10},
    {"C3D10M", "tetra10", 10},
    {"C3D10MH", "tetra10", 10},
    {"C3D6", "wedge", 6},
    {"C3D15", "wedge15", 15},
    {"CAX4P", "quad", 4},
    {"CPE6", "triangle6", 6},
    // Beyond meshio's table.
    {"CPE3", "triangle", 3},
    {"CAX3", "triangle", 3},
    {"DC2D3", "triangle", 3},
    {"DS3", "triangle", 3},
    {"CPE4", "quad", 4},
    {"CPE4R", "quad", 4},
    {"CPE4H", "quad", 4},
    {"CPE4I", "quad", 4},
    {"CPS4I", "quad", 4},
    {"CAX4", "quad", 4},
    {"CAX4R", "quad", 4},
    {"CAX4H", "quad", 4},
    {"DC2D4", "quad", 4},
    {"DS4", "quad", 4},
    {"R3D4", "quad", 4},
    {"M3D4", "quad", 4},
    {"M3D3", "triangle", 3},
    {"CPS6", "triangle6", 6},
    {"CPS6M", "triangle6", 6},
    {"CPE6M", "triangle6", 6},
    {"CAX6", "triangle6", 6},
    {"S6", "triangle6", 6},
    {"CPS8", "quad8", 8},
    {"CPS8R", "quad8", 8},
    {"CPE8", "quad8", 8},
    {"CPE8R", "quad8", 8},
    {"CAX8", "quad8", 8},
    {"CAX8R", "quad8", 8},
    {"S8", "quad8", 8},
    {"DC3D4", "tetra", 4},
    {"DC3D8", "hexahedron", 8},
    {"DC3D10", "tetra10", 10},
    {"DC3D20", "hexahedron20", 20},
    {"DC3D6", "wedge", 6},
    {"DC3D15", "wedge15", 15},
    {"C3D6H", "wedge", 6},
    {"C3D15H", "wedge15", 15},
    {"SC6R", "wedge", 6},
    {"SC8R", "hexahedron", 8},
    {"C3D5", "pyramid", 5},
    {"C3D5H", "pyramid", 5},
};

const ElementType* element_type(std::string_view upper) {
  for (const auto& t : kTypes)
    if (upper == t.abaqus) return &t;
  return nullptr;
}

std::string known_types() {
  std::string s;
  for (const auto& t : kTypes) s += (s.empty() ? "" : ", ") + std::string(t.abaqus);
  return s;
}

std::string_view trim(std::string_view s) {
  return Cursor::trim(s);
}

// Where a value came from, in 64 bits: the file (of the include chain's files), the part, the
// byte offset of its line. Kept per node and element for the messages that name their lines
// once ids are resolved at the end.
constexpr int kIndexBits = 12;
constexpr std::uint64_t kMaxIndex = (std::uint64_t{1} << kIndexBits) - 1;
constexpr int kOffsetBits = 64 - 2 * kIndexBits;
std::uint64_t where(std::size_t file, std::size_t part, std::size_t offset) {
  return std::uint64_t{file} << (kOffsetBits + kIndexBits) | std::uint64_t{part} << kOffsetBits |
         offset;
}
std::size_t where_file(std::uint64_t w) {
  return w >> (kOffsetBits + kIndexBits);
}
std::size_t where_part(std::uint64_t w) {
  return (w >> kOffsetBits) & kMaxIndex;
}
std::size_t where_offset(std::uint64_t w) {
  return w & ((std::uint64_t{1} << kOffsetBits) - 1);
}

// A positive integer field ("12", blanks around it trimmed already); false when it is not one.
bool parse_id(std::string_view f, std::int64_t& v) {
  if (f.empty() || f.size() > 18) return false;
  std::int64_t x = 0;
  for (const char ch : f) {
    const auto d = static_cast<unsigned char>(ch - '0');
    if (d > 9) return false;
    x = x * 10 + d;
  }
  v = x;
  return x > 0;
}

bool parse_double(std::string_view f, double& v) {
  const char* b = f.data();
  const char* e = b + f.size();
  if (b < e && *b == '+') ++b;  // from_chars takes no '+'
  const auto r = std::from_chars(b, e, v);
  return b < e && r.ec == std::errc() && r.ptr == e;
}

// The comma-separated fields of a data line, each trimmed.
class Fields {
 public:
  explicit Fields(std::string_view line) : s_(line) {}
  bool done() const { return at_ > s_.size(); }
  std::string_view next() {
    const auto comma = s_.find(',', at_);
    const auto end = comma == std::string_view::npos ? s_.size() : comma;
    const auto f = s_.substr(at_, end - at_);
    at_ = end + 1;
    return trim(f);
  }

 private:
  std::string_view s_;
  std::size_t at_ = 0;
};

// Ids in file order, kept only once they stop being 1, 2, 3, ...: a file that numbers its nodes
// and elements 1..n in order (meshio's, gmsh's, most) keeps none of them, nor the table that
// maps them back (IdMap's identity). Kept, they were 8 bytes an element and another 8 for the
// table: a 1M-tet file peaked at 1.82x its arrays, 1.2x without.
class IdList {
 public:
  void push_back(std::int64_t id) {
    if (!listed_) {
      if (id == count_ + 1) {
        ++count_;
        return;
      }
      listed_ = true;  // out of order from here: the ids so far are 1..count_
      for (std::int64_t i = 1; i <= count_; ++i) kept_.push_back(i);
    }
    kept_.push_back(id);
  }
  std::int64_t back() { return listed_ ? kept_.back() : count_; }
  std::size_t size() const { return listed_ ? kept_.size() : static_cast<std::size_t>(count_); }
  // Every id is its index + 1.
  bool in_order() const { return !listed_; }
  // f(const std::int64_t* p, std::size_t n) over the ids in order, as Chunks::for_each.
  template <typename F>
  void for_each(F&& f) const {
    if (listed_) return kept_.for_each(f);
    std::int64_t run[4096];
    for (std::int64_t at = 0; at < count_;) {
      const auto n = std::min<std::int64_t>(4096, count_ - at);
      for (std::int64_t j = 0; j < n; ++j) run[j] = at + j + 1;
      f(static_cast<const std::int64_t*>(run), static_cast<std::size_t>(n));
      at += n;
    }
  }

 private:
  bool listed_ = false;
  std::int64_t count_ = 0;
  Chunks<std::int64_t> kept_;
};

// Node (or element) ids -> their index: a dense table when the ids are compact (the common
// case: 1..n), else the ids sorted with their indices.
class IdMap {
 public:
  // `ids` (Chunks, or anything with size() and for_each) in index order, `top` the largest.
  // `duplicate(i, j, id)` is called (and must throw) for two equal ids. `slack`: how far past 4 ids
  // a value the table may go (a part's map gets little: a file of a thousand one-node parts must
  // not make a thousand tables of 1024).
  template <typename Ids, typename Dup>
  void build(const Ids& ids, std::int64_t top, Dup&& duplicate, std::int64_t slack = 1024) {
    const auto n = static_cast<std::int64_t>(ids.size());
    if constexpr (requires { ids.in_order(); }) {
      if (ids.in_order()) {  // 1..n: no table, and no two alike
        identity_ = n;
        return;
      }
    }
    identity_ = -1;
    dense_ = top <= 4 * n + slack;
    std::int64_t i = 0;
    if (dense_) {
      table_.assign(static_cast<std::size_t>(top) + 1, -1);
      ids.for_each([&](const std::int64_t* p, std::size_t k) {
        for (std::size_t j = 0; j < k; ++j, ++i) {
          auto& slot = table_[static_cast<std::size_t>(p[j])];
          if (slot >= 0) duplicate(slot, i, p[j]);
          slot = i;
        }
      });
      return;
    }
    sorted_.reserve(ids.size());
    ids.for_each([&](const std::int64_t* p, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j) sorted_.emplace_back(p[j], i++);
    });
    std::sort(sorted_.begin(), sorted_.end());
    for (std::size_t k = 1; k < sorted_.size(); ++k)
      if (sorted_[k].first == sorted_[k - 1].first)
        duplicate(sorted_[k - 1].second, sorted_[k].second, sorted_[k].first);
  }
  // The index of `id`, -1 when no value has it.
  std::int64_t find(std::int64_t id) const {
    if (identity_ >= 0) return id >= 1 && id <= identity_ ? id - 1 : -1;
    if (dense_)
      return id >= 0 && static_cast<std::size_t>(id) < table_.size()
                 ? table_[static_cast<std::size_t>(id)]
                 : -1;
    const auto it = std::lower_bound(sorted_.begin(), sorted_.end(),
                                     std::pair<std::int64_t, std::int64_t>{id, -1});
    return it != sorted_.end() && it->first == id ? it->second : -1;
  }

 private:
  std::int64_t identity_ = -1;  // >= 0: the ids are 1..identity_, id i at index i - 1
  bool dense_ = true;
  ScratchVector<std::int64_t> table_;
  std::vector<std::pair<std::int64_t, std::int64_t>> sorted_;
};

// One *ELEMENT section: a cell block.
struct Section {
  const ElementType* type;
  std::string abaqus;         // the type as written, upper-cased
  std::uint64_t data;         // where its data lines start (the line after its keyword)
  bool meshio_line3 = false;  // a B33 / B33H section of 3-node elements (meshio's writer's)
  std::int64_t count = 0;
  std::int64_t first = 0;        // global number of its first element
  std::size_t scope = 0;         // its part (0: outside any *PART)
  std::int64_t local_first = 0;  // number of its first element among its part's
};

// A part of a set's data, in order: a run of its ids, a set it names, a GENERATE line, or the
// points / cells of a *NODE / *ELEMENT section with NSET= / ELSET=. Ids take 8 bytes each
// (where they are written is found again for an error), names once a set each.
struct SetItem {
  enum Kind { kIds, kName, kGenerate, kRun } kind;
  // kIds: ids [a, b) of SetDef::ids; kName: the SetDef named; kGenerate: its first, last, step
  // at ids [a, a + 3); kRun: a *NODE section's nodes [a, b), or *ELEMENT section a.
  std::int64_t a = 0, b = 0;
  std::uint64_t at = 0;  // kName, kGenerate: the line
  // An assembly set's ids (names) of instance `inst` ("I.12", "I.name", INSTANCE=I); -1: of
  // the set's own part (or of the assembly).
  std::int64_t inst = -1;
};

struct SetDef {
  std::string name;
  bool cell;
  std::uint64_t data;  // where its data lines start
  std::vector<std::int64_t> ids;
  std::vector<SetItem> items;
  std::size_t scope = 0;   // the part it is defined in (its name space); 0: outside any
  std::int64_t inst = -1;  // INSTANCE=: the instance its ids and names are of
};

// *INSTANCE, NAME=, PART=: a placed copy of a part.
struct Instance {
  std::string name;
  std::size_t part;
  std::uint64_t at;                        // its keyword line
  double t[3] = {0, 0, 0};                 // translation
  double axis[7] = {0, 0, 0, 0, 0, 0, 0};  // a, b, angle (degrees)
  int lines = 0;                           // 0: no transform, 1: translation, 2: and rotation
};

// What the mesh holds, in order: the copies of parts (every instance, or every part once when
// no instance places them) and last what is outside any part (the assembly's nodes).
struct Copy {
  std::size_t scope;
  std::int64_t inst;                   // -1: no instance (a part read once, or outside any part)
  std::int64_t points = 0, cells = 0;  // the first of each it has in the mesh
};

// A part's (or the outside's) ids: node and element ids -> their index among the part's.
struct Scope {
  IdMap nodes, elements;
  std::vector<std::int64_t> node_file;  // its nodes' indices in file order (parts only)
  std::int64_t n_nodes = 0, n_elems = 0;
  std::vector<std::size_t> sections;  // its *ELEMENT sections, in order
};

class AbaqusReader {
 public:
  AbaqusReader(const InFile& in, const ReadOptions& options) : in_(in), options_(options) {}

  Mesh read() {
    files_.push_back(std::make_unique<MappedFile>(in_, access(in_.fd)));
    names_.push_back(in_.path);
    const auto slash = in_.path.rfind('/');
    rel_.push_back(slash == std::string::npos ? in_.path : in_.path.substr(slash + 1));
    chain_.push_back(rel_[0]);
    parts_.emplace_back();  // part 0: outside any *PART
    Cursor progress(files_[0]->view(), in_.path, in_.progress);
    progress_ = &progress;
    try {
      parse(0, 0);
    } catch (const ReadError&) {
      for (const auto& f : files_) f->check_unchanged();
      throw;
    }
    for (const auto& f : files_) f->check_unchanged();
    Mesh m = build();
    for (const auto& f : files_) f->check_unchanged();
    return m;
  }

 private:
  enum class State { kNone, kSkip, kNode, kElement, kSet, kInstance };

  const InFile& in_;
  const ReadOptions& options_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<std::string> names_;  // for messages
  std::vector<std::string> rel_;    // relative to the first file's directory
  std::vector<std::string> chain_;  // the include chain being read, for its messages
  Cursor* progress_ = nullptr;
  std::size_t file_ = 0;  // being read
  std::size_t part_ = 0;
  std::vector<std::string> parts_;
  State state_ = State::kNone;
  std::string keyword_;  // of the section being read (messages)

  Chunks<double> coords_;  // 3 a node
  // Ids in file order. Where each node and element is written is not kept (16 bytes a node
  // and an element more, copied once more at the end: with them, the kernel zeroing fresh
  // pages was 43% of a 1M-hex read, 17% without); an error finds its line again from where its
  // section's data starts (line_of_node, line_of_element).
  IdList node_ids_, elem_ids_;
  // The node ids of every element as written, section after section: one sequence, not one a
  // section (a first chunk of 64 KiB for each of a file's thousand one-element sections would
  // make it allocate far more than its size).
  Chunks<std::int64_t> cell_nodes_;
  std::int64_t top_node_ = 0, top_element_ = 0;
  bool nodes_in_order_ = true, elements_in_order_ = true;  // ids 1..n in file order
  struct NodeRun {
    std::uint64_t data;  // where the *NODE section's data lines start
    std::int64_t first;  // its first node
  };
  std::vector<NodeRun> node_runs_;
  std::uint64_t data_at_ = 0;     // where the data lines of the keyword being read start
  std::uint64_t pending_at_ = 0;  // the first line of the element being read
  int dim_ = 0;
  std::size_t short_nodes_ = 0;  // with fewer coordinates than the points have
  std::vector<std::unique_ptr<Section>> sections_;
  std::int64_t elements_ = 0;
  std::int64_t pending_ = 0;  // values of the element being read so far (0: none)
  std::vector<SetDef> sets_;
  std::multimap<std::string, std::size_t>
      set_names_[2];             // upper-cased name -> SetDef (point, cell)
  std::set<std::string> named_;  // the names the set being read names
  bool generate_ = false;
  static constexpr std::size_t kNoRun = static_cast<std::size_t>(-1);
  std::size_t open_run_ = kNoRun;               // the set of the *NODE, NSET= section being read
  std::map<std::string, std::size_t> skipped_;  // keyword -> count
  std::size_t b33_meshio_ = 0;
  std::vector<Instance> instances_;
  // Upper-cased names -> index: a file of many parts or instances must not compare each with
  // every other.
  std::map<std::string, std::size_t> part_index_, instance_index_;
  bool in_assembly_ = false;
  std::int64_t in_instance_ = -1;  // the *INSTANCE being read
  // The mesh's layout (build): each part's ids, where a node is among its part's (parts only),
  // the copies of the parts in the mesh.
  std::vector<Scope> scopes_;
  std::vector<std::int64_t> node_local_;
  std::vector<Copy> copies_;

  // A big file goes through a 2 MiB window; a small one is mapped: every file stays open to the
  // end (errors quote lines of it), and a window each for a thousand small includes would hold
  // 2 GiB.
  static Access access(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_size < (std::int64_t{2} << 20) ? Access::map
                                                                         : Access::window;
  }

  // ---- messages

  std::size_t line_of(std::size_t file, std::size_t offset) const {
    const auto d = files_[file]->view();
    offset = std::min(offset, d.size());
    return 1 + static_cast<std::size_t>(std::count(d.begin(), d.begin() + offset, '\n'));
  }
  [[noreturn]] void fail_at(std::uint64_t w, const std::string& what) const {
    const auto f = where_file(w);
    throw ReadError(names_[f] + ":" + std::to_string(line_of(f, where_offset(w))) + ": " + what);
  }
  std::string line_name(std::uint64_t w) const {
    const auto f = where_file(w);
    return (f == file_ ? std::string("line ") : names_[f] + ":") +
           std::to_string(line_of(f, where_offset(w)));
  }
  std::string part_name(std::uint64_t w) const {
    const auto p = where_part(w);
    return p == 0 ? "outside any *PART" : "in part '" + parts_[p] + "'";
  }

  // ---- reading

  void parse(std::size_t fi, int depth) {
    const auto saved = file_;
    file_ = fi;
    MappedFile& file = *files_[fi];
    const auto d = file.view();
    if (d.size() >> kOffsetBits)  // past what where() holds: 1 TiB
      throw ReadError(names_[fi] + ": " + std::to_string(d.size()) + " bytes is too big a file");
    std::size_t pos = utf8_bom(d);
    while (pos < d.size()) {
      file.advance(pos);
      if (fi == 0) {
        progress_->seek(pos);
        progress_->tick();
      }
      const char* nl = static_cast<const char*>(std::memchr(d.data() + pos, '\n', d.size() - pos));
      const std::size_t end = nl ? static_cast<std::size_t>(nl - d.data()) : d.size();
      const std::size_t start = pos;
      pos = nl ? end + 1 : d.size();
      auto line = d.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const auto t = trim(line);
      if (t.empty()) continue;
      const std::uint64_t w = where(fi, part_, start);
      if (t[0] == '*') {
        if (t.size() > 1 && t[1] == '*') continue;  // a comment
        std::string joined;
        auto text = t;
        while (text.back() == ',' && pos < d.size()) {  // parameters go on on the next line
          const char* n2 =
              static_cast<const char*>(std::memchr(d.data() + pos, '\n', d.size() - pos));
          const std::size_t e2 = n2 ? static_cast<std::size_t>(n2 - d.data()) : d.size();
          joined.assign(text);
          joined += trim(d.substr(pos, e2 - pos));
          text = joined;
          pos = n2 ? e2 + 1 : d.size();
        }
        data_at_ = where(fi, part_, pos);
        keyword(text, w, depth);
        continue;
      }
      data_line(t, w);
    }
    file_ = saved;
  }

  struct Keyword {
    std::string name;                           // upper-cased, blanks single
    std::map<std::string, std::string> params;  // KEY (upper-cased) -> value as written
  };
  static Keyword parse_keyword(std::string_view text) {
    Keyword k;
    Fields f(text.substr(1));
    const auto name = ascii_upper(f.next());
    for (const char ch : name)
      if (ch != ' ' && ch != '\t')
        k.name += ch;
      else if (!k.name.empty() && k.name.back() != ' ')
        k.name += ' ';
    while (!f.done()) {
      const auto p = f.next();
      if (p.empty()) continue;
      const auto eq = p.find('=');
      auto value = eq == std::string_view::npos ? std::string_view() : trim(p.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
      k.params[ascii_upper(trim(p.substr(0, eq)))] = std::string(value);
    }
    return k;
  }

  std::string required(const Keyword& k, const char* key, std::uint64_t w) const {
    const auto it = k.params.find(key);
    if (it == k.params.end() || it->second.empty())
      fail_at(w, "*" + k.name + " without " + key + "=");
    return it->second;
  }

  void keyword(std::string_view text, std::uint64_t w, int depth) {
    end_section(w);
    const Keyword k = parse_keyword(text);
    keyword_ = k.name;
    state_ = State::kSkip;
    if (in_instance_ >= 0 &&
        (k.name == "NODE" || k.name == "ELEMENT" || k.name == "NSET" || k.name == "ELSET"))
      fail_at(w, "*" + k.name + " inside *INSTANCE '" +
                     instances_[static_cast<std::size_t>(in_instance_)].name +
                     "': an instance's own nodes, elements and sets are not supported (define "
                     "them in its part or the assembly)");
    if (k.name == "NODE") {
      state_ = State::kNode;
      node_runs_.push_back({data_at_, static_cast<std::int64_t>(node_ids_.size())});
      if (const auto it = k.params.find("NSET"); it != k.params.end() && !it->second.empty()) {
        open_run_ = sets_.size();
        new_set(it->second, false);
        sets_.back().items.push_back(
            {SetItem::kRun, static_cast<std::int64_t>(node_ids_.size()), 0, w});
      }
    } else if (k.name == "ELEMENT") {
      start_section(k, w);
    } else if (k.name == "NSET" || k.name == "ELSET") {
      const bool cell = k.name == "ELSET";
      new_set(required(k, cell ? "ELSET" : "NSET", w), cell);
      if (const auto it = k.params.find("INSTANCE"); it != k.params.end()) {
        if (part_ != 0)
          fail_at(w, "*" + k.name + " with INSTANCE= inside part '" + parts_[part_] + "'");
        sets_.back().inst = instance_named(it->second, sets_.back().name, w);
      }
      generate_ = k.params.count("GENERATE") > 0;
      state_ = State::kSet;
    } else if (k.name == "INCLUDE") {
      include(required(k, "INPUT", w), w, depth);
      state_ = State::kNone;  // the included file's last section ended with it
    } else if (k.name == "PART") {
      start_part(required(k, "NAME", w), w);
    } else if (k.name == "END PART") {
      part_ = 0;
    } else if (k.name == "ASSEMBLY") {
      if (part_ != 0) fail_at(w, "*ASSEMBLY inside part '" + parts_[part_] + "'");
      in_assembly_ = true;
    } else if (k.name == "END ASSEMBLY") {
      in_assembly_ = false;
    } else if (k.name == "INSTANCE") {
      start_instance(k, w);
    } else if (k.name == "END INSTANCE") {
      in_instance_ = -1;
    } else if (k.name == "HEADING") {
    } else {
      ++skipped_[k.name.substr(0, 40)];
    }
  }

  // Parts are name spaces of their own: a name used again would merge two (Abaqus refuses it).
  void start_part(const std::string& name, std::uint64_t w) {
    if (part_ != 0) fail_at(w, "*PART '" + name + "' inside part '" + parts_[part_] + "'");
    if (in_assembly_) fail_at(w, "*PART '" + name + "' inside the *ASSEMBLY");
    if (!part_index_.emplace(ascii_upper(name), parts_.size()).second)
      fail_at(w, "part '" + name + "' is defined again");
    parts_.push_back(name);
    if (parts_.size() > kMaxIndex) fail_at(w, "more than 4095 *PART sections");
    part_ = parts_.size() - 1;
  }
  // The part (1..) of that name, case-insensitively as Abaqus matches names; 0: none.
  std::size_t part_named(const std::string& name) const {
    const auto it = part_index_.find(ascii_upper(name));
    return it == part_index_.end() ? 0 : it->second;
  }
  // The instance of that name, case-insensitively; -1: none.
  std::int64_t find_instance(std::string_view name) const {
    const auto it = instance_index_.find(ascii_upper(name));
    return it == instance_index_.end() ? -1 : static_cast<std::int64_t>(it->second);
  }

  void start_instance(const Keyword& k, std::uint64_t w) {
    const auto name = required(k, "NAME", w);
    const auto part = required(k, "PART", w);
    if (!in_assembly_) fail_at(w, "*INSTANCE '" + name + "' outside an *ASSEMBLY");
    const auto p = part_named(part);
    if (p == 0)
      fail_at(w, "*INSTANCE '" + name + "' names part '" + part +
                     "', which no *PART before it defines");
    if (!instance_index_.emplace(ascii_upper(name), instances_.size()).second)
      fail_at(w, "instance '" + name + "' is defined again");
    instances_.push_back({name, p, w});
    in_instance_ = static_cast<std::int64_t>(instances_.size()) - 1;
    state_ = State::kInstance;
  }

  // The instance a set names (INSTANCE=I or "I.x"); a ReadError when none before it has that
  // name.
  std::int64_t instance_named(std::string_view name, const std::string& set,
                              std::uint64_t w) const {
    if (const auto i = find_instance(name); i >= 0) return i;
    fail_at(w, "set '" + set + "' names instance '" + std::string(name.substr(0, 60)) +
                   "', which no *INSTANCE before it defines");
  }

  // An *INSTANCE's data lines: "tx, ty, tz", then "ax, ay, az, bx, by, bz, angle".
  void instance_line(std::string_view t, std::uint64_t w) {
    auto& inst = instances_.back();
    const bool rotation = inst.lines == 1;
    if (inst.lines == 2)
      fail_at(w, "*INSTANCE '" + inst.name +
                     "': a third data line (a translation, then a rotation at most): '" +
                     std::string(t.substr(0, 60)) + "'");
    double* out = rotation ? inst.axis : inst.t;
    const int most = rotation ? 7 : 3;
    int n = 0;
    Fields f(t);
    while (!f.done()) {
      const auto v = f.next();
      if (v.empty() && f.done()) break;  // a trailing comma
      if (n == most || !parse_double(v, out[n]))
        fail_at(w, "*INSTANCE '" + inst.name + "': expected " +
                       (rotation ? "'ax, ay, az, bx, by, bz, angle'" : "'tx, ty, tz'") +
                       ", found '" + std::string(t.substr(0, 60)) + "'");
      ++n;
    }
    // Omitted translation components are 0, as Abaqus reads them; a rotation needs its axis.
    if (rotation && n != 7)
      fail_at(w, "*INSTANCE '" + inst.name +
                     "': a rotation line has 7 values (ax, ay, az, bx, by, bz, angle), found '" +
                     std::string(t.substr(0, 60)) + "'");
    if (rotation && inst.axis[0] == inst.axis[3] && inst.axis[1] == inst.axis[4] &&
        inst.axis[2] == inst.axis[5] && inst.axis[6] != 0)
      fail_at(w, "*INSTANCE '" + inst.name + "': the rotation axis has points a and b equal");
    ++inst.lines;
  }

  void start_section(const Keyword& k, std::uint64_t w) {
    const auto t = ascii_upper(required(k, "TYPE", w));
    const auto* type = element_type(t);
    if (!type)
      fail_at(w, "element type '" + t + "' is not supported (read: " + known_types() + ")");
    auto s = std::make_unique<Section>();
    s->type = type;
    s->abaqus = t;
    s->data = data_at_;
    s->first = elements_;
    s->scope = part_;
    if (const auto it = k.params.find("ELSET"); it != k.params.end() && !it->second.empty()) {
      new_set(it->second, true);
      sets_.back().items.push_back(
          {SetItem::kRun, static_cast<std::int64_t>(sections_.size()), 0, w});
    }
    sections_.push_back(std::move(s));
    state_ = State::kElement;
  }

  // A keyword or the end of the input ends the section being read: an element cut short there
  // is a ReadError.
  void end_section(std::uint64_t w) {
    if (open_run_ != kNoRun) {  // a *NODE, NSET= section: its set ends with it
      sets_[open_run_].items[0].b = static_cast<std::int64_t>(node_ids_.size());
      open_run_ = kNoRun;
    }
    if (state_ != State::kElement || pending_ == 0) return;
    const auto& s = *sections_.back();
    fail_at(pending_at_, "element " + std::to_string(elem_ids_.back()) + " has " +
                             std::to_string(pending_ - 1) + " nodes where " + s.abaqus + " has " +
                             std::to_string(s.type->nodes) + " (before " + line_name(w) + ")");
  }

  void data_line(std::string_view t, std::uint64_t w) {
    switch (state_) {
      case State::kNode:
        return node_line(t, w);
      case State::kElement:
        return element_line(t, w);
      case State::kSet:
        return set_line(t, w);
      case State::kInstance:
        return instance_line(t, w);
      case State::kSkip:
        return;
      case State::kNone:
        fail_at(w, "a data line before any keyword ('*NODE', ...): '" +
                       std::string(t.substr(0, 40)) + "'");
    }
  }

  void node_line(std::string_view t, std::uint64_t w) {
    Fields f(t);
    std::int64_t id = 0;
    const auto id_text = f.next();
    if (!parse_id(id_text, id))
      fail_at(w, "expected a node id (a positive integer), found '" +
                     std::string(id_text.substr(0, 40)) + "'");
    double x[3] = {0, 0, 0};
    int n = 0;
    while (!f.done()) {
      const auto v = f.next();
      if (v.empty() && f.done()) break;  // a trailing comma
      if (n == 3) fail_at(w, "node " + std::to_string(id) + " has more than 3 coordinates");
      if (!parse_double(v, x[n]))
        fail_at(w, "node " + std::to_string(id) + ": expected a coordinate, found '" +
                       std::string(v.substr(0, 40)) + "'");
      ++n;
    }
    if (n == 0) fail_at(w, "node " + std::to_string(id) + " has no coordinates");
    if (n != dim_) {
      if (n < dim_)
        ++short_nodes_;
      else if (dim_ != 0)
        short_nodes_ = node_ids_.size();  // every node before had fewer
      dim_ = std::max(dim_, n);
    }
    coords_.append(x, 3);
    nodes_in_order_ = nodes_in_order_ && id == static_cast<std::int64_t>(node_ids_.size()) + 1;
    top_node_ = std::max(top_node_, id);
    node_ids_.push_back(id);
  }

  void element_line(std::string_view t, std::uint64_t w) {
    auto& s = *sections_.back();
    if (s.count == 0 && pending_ == 0 && (s.abaqus == "B33" || s.abaqus == "B33H"))
      b33_layout(s, t);
    const std::int64_t need = 1 + s.type->nodes;
    // The hot loop of a big file: ids scanned in place (Fields and parse_id cost a third more).
    const char* p = t.data();
    const char* const e = p + t.size();
    auto blanks = [&] {
      while (p < e && (*p == ' ' || *p == '\t')) ++p;
    };
    while (p < e) {
      blanks();
      if (p == e) break;
      if (*p == ',') {  // an empty field (a trailing comma: the element goes on)
        ++p;
        continue;
      }
      const char* const b = p;
      std::int64_t id = 0;
      while (p < e && p - b < 18 && static_cast<unsigned char>(*p - '0') < 10)
        id = id * 10 + (*p++ - '0');
      const char* const digits_end = p;
      blanks();
      if (digits_end == b || id == 0 || (p < e && *p != ',')) {
        const auto field =
            trim(t.substr(static_cast<std::size_t>(b - t.data()))
                     .substr(0, t.substr(static_cast<std::size_t>(b - t.data())).find(',')));
        fail_at(w, std::string(pending_ == 0 ? "expected an element id" : "expected a node id") +
                       " (a positive integer), found '" + std::string(field.substr(0, 40)) + "'");
      }
      if (p < e) ++p;  // the comma
      if (pending_ == 0) {
        elem_ids_.push_back(id);
        pending_at_ = w;
        elements_in_order_ = elements_in_order_ && id == elements_ + 1;
        top_element_ = std::max(top_element_, id);
        ++s.count;
        ++elements_;
      } else {
        cell_nodes_.push_back(id);
      }
      if (++pending_ == need) {
        pending_ = 0;
        // Values after a whole element on its line would start the next in mid-line: Abaqus
        // writes one element a line (and meshio's reader would read them so; the file is
        // more likely wrong).
        for (; p < e; ++p)
          if (*p != ' ' && *p != '\t' && *p != ',')
            fail_at(w, "values after the " + std::to_string(s.type->nodes) + " nodes of " +
                           s.abaqus + " element " + std::to_string(elem_ids_.back()));
      }
    }
  }

  // B33 / B33H are 2-node beams in Abaqus; meshio writes its line3 cells as B33H with 3 nodes.
  // The first element's line says which (4 values: meshio's).
  void b33_layout(Section& s, std::string_view t) {
    Fields f(t);
    int n = 0;
    while (!f.done())
      if (!f.next().empty()) ++n;
    if (n != 4) return;
    static constexpr ElementType kMeshioB33{"B33H", "line3", 3};
    s.type = &kMeshioB33;
    s.meshio_line3 = true;
    ++b33_meshio_;
  }

  // Names are resolved as they are read: a set names sets defined before it (as meshio reads
  // them), each once.
  void new_set(const std::string& name, bool cell) {
    sets_.push_back({name, cell, data_at_, {}, {}, part_});
    set_names_[cell ? 1 : 0].emplace(set_key(part_, name), sets_.size() - 1);
    named_.clear();
  }
  // Each part is a name space of its own (0: outside any part, the assembly's).
  static std::string set_key(std::size_t scope, std::string_view name) {
    return std::to_string(scope) + ':' + ascii_upper(name);
  }

  // In an assembly set, "I.12" is node (element) 12 of instance I and "I.name" a set of I's
  // part: split when the text before the last '.' names an instance.
  std::int64_t dotted(std::string_view& v) const {
    const auto dot = v.rfind('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == v.size()) return -1;
    const auto i = find_instance(v.substr(0, dot));
    if (i >= 0) v.remove_prefix(dot + 1);
    return i;
  }

  void set_line(std::string_view t, std::uint64_t w) {
    auto& set = sets_.back();
    Fields f(t);
    std::int64_t g[3] = {0, 0, 1};
    int ng = 0;
    while (!f.done()) {
      auto v = f.next();
      if (v.empty()) continue;
      std::int64_t inst = set.inst;
      if (inst < 0 && set.scope == 0 && !generate_) inst = dotted(v);
      std::int64_t id = 0;
      const bool number = parse_id(v, id);
      if (generate_) {
        if (!number || ng == 3)
          fail_at(w, "set '" + set.name + "' (GENERATE): expected 'first, last[, step]', found '" +
                         std::string(t.substr(0, 60)) + "'");
        g[ng++] = id;
        continue;
      }
      if (number) {
        if (set.items.empty() || set.items.back().kind != SetItem::kIds ||
            set.items.back().inst != inst)
          set.items.push_back(
              {SetItem::kIds, static_cast<std::int64_t>(set.ids.size()), 0, 0, inst});
        set.ids.push_back(id);
        set.items.back().b = static_cast<std::int64_t>(set.ids.size());
      } else if (v.front() >= '0' && v.front() <= '9') {
        fail_at(w, "set '" + set.name + "': '" + std::string(v.substr(0, 40)) +
                       "' is no id (a positive integer) and no set name");
      } else {
        // A name of an instance's set is in the name space of the instance's part.
        const auto scope = inst >= 0 ? instances_[static_cast<std::size_t>(inst)].part : set.scope;
        const auto key = set_key(scope, v);
        const auto& names = set_names_[set.cell ? 1 : 0];
        const auto ref = names.lower_bound(key);  // its first definition
        // The set being defined is in `names` already: it may name an earlier definition of
        // itself, not this one.
        if (ref == names.end() || ref->first != key || ref->second == sets_.size() - 1)
          fail_at(w, "set '" + set.name + "' names set '" + std::string(v.substr(0, 40)) +
                         "', which is not defined before it" +
                         (inst >= 0 ? " in part '" + parts_[scope] + "'" : std::string()));
        if (named_.insert(std::to_string(inst) + key).second)
          set.items.push_back({SetItem::kName, static_cast<std::int64_t>(ref->second), 0, w, inst});
      }
    }
    if (generate_) {
      if (ng < 2 || g[0] > g[1] || g[2] <= 0)
        fail_at(w, "set '" + set.name +
                       "' (GENERATE): expected 'first, last[, step]' with first <= last and a "
                       "positive step, found '" +
                       std::string(t.substr(0, 60)) + "'");
      set.items.push_back(
          {SetItem::kGenerate, static_cast<std::int64_t>(set.ids.size()), 0, w, set.inst});
      set.ids.insert(set.ids.end(), g, g + 3);
    }
  }

  void include(const std::string& name, std::uint64_t w, int depth) {
    if (!options_.open_sibling)
      fail_at(w, "*INCLUDE '" + name + "': no directory to open it in (read it by path)");
    if (name.front() == '/') fail_at(w, "*INCLUDE '" + name + "' is an absolute path; refused");
    for (std::size_t at = 0; at <= name.size();) {
      const auto next = std::min(name.find('/', at), name.size());
      if (name.compare(at, next - at, "..") == 0)
        fail_at(w, "*INCLUDE '" + name + "' leads out of the directory of the file; refused");
      at = next + 1;
    }
    if (name.find('\0') != std::string::npos) fail_at(w, "*INCLUDE name holds a NUL");
    const auto& here = rel_[file_];
    const auto slash = here.rfind('/');
    const std::string rel =
        (slash == std::string::npos ? std::string() : here.substr(0, slash + 1)) + name;
    std::string chain;
    for (const auto& c : chain_) chain += c + " -> ";
    chain += rel;
    if (std::find(chain_.begin(), chain_.end(), rel) != chain_.end())
      fail_at(w, "*INCLUDE cycle: " + chain);
    if (depth + 1 > kMaxDepth)
      fail_at(w, "*INCLUDE nested deeper than " + std::to_string(kMaxDepth) + ": " + chain);
    if (files_.size() >= kMaxIndex) fail_at(w, "more than 4095 included files");
    UniqueFd fd;
    try {
      fd = options_.open_sibling(rel);
    } catch (const ReadError& e) {
      fail_at(w, "*INCLUDE '" + name + "': " + e.what());
    }
    const auto slash0 = names_[0].rfind('/');
    const std::string shown =
        (slash0 == std::string::npos ? std::string() : names_[0].substr(0, slash0 + 1)) + rel;
    files_.push_back(std::make_unique<MappedFile>(InFile{fd.get(), shown}, access(fd.get())));
    names_.push_back(shown);
    rel_.push_back(rel);
    chain_.push_back(rel);
    parse(files_.size() - 1, depth + 1);
    end_section(where(files_.size() - 1, part_, files_.back()->view().size()));
    chain_.pop_back();
  }

  // ---- finding lines again (error paths only)

  template <typename Ids>
  static std::int64_t nth(const Ids& c, std::int64_t i) {
    std::int64_t v = 0, at = 0;
    c.for_each([&](const std::int64_t* p, std::size_t k) {
      const auto n = static_cast<std::int64_t>(k);
      if (i >= at && i < at + n) v = p[i - at];
      at += n;
    });
    return v;
  }

  // Where the data line holding value `value` (0-based, values counted over the data lines from
  // `data` on) starts; the values of a section's lines are read again as data_line counted them.
  std::uint64_t line_of_value(std::uint64_t data, std::int64_t value, bool one_a_line) const {
    std::int64_t seen = 0;
    return find_data_line(data, [&](std::string_view t) {
      std::int64_t k = 1;
      if (!one_a_line) {
        k = 0;
        Fields f(t);
        while (!f.done())
          if (!f.next().empty()) ++k;
      }
      if (value < seen + k) return true;
      seen += k;
      return false;
    });
  }
  // Where the first data line from `data` on for which found(trimmed text) says true starts (the
  // end of the file when none does): data lines skip blank and "**" ones.
  template <typename Found>
  std::uint64_t find_data_line(std::uint64_t data, Found&& found) const {
    const auto fi = where_file(data);
    const auto d = files_[fi]->view();
    std::size_t pos = where_offset(data);
    while (pos < d.size()) {
      const auto nl = d.find('\n', pos);
      const auto end = nl == std::string_view::npos ? d.size() : nl;
      const auto t = trim(d.substr(pos, end - pos));
      if (!t.empty() && t.substr(0, 2) != "**" && found(t)) break;
      pos = nl == std::string_view::npos ? d.size() : nl + 1;
    }
    return where(fi, where_part(data), pos);
  }
  std::uint64_t line_of_node(std::int64_t i) const {
    const auto run =
        std::prev(std::upper_bound(node_runs_.begin(), node_runs_.end(), i,
                                   [](std::int64_t v, const NodeRun& r) { return v < r.first; }));
    return line_of_value(run->data, i - run->first, true);
  }
  std::uint64_t line_of_element(std::int64_t e) const {
    const auto it = std::prev(std::upper_bound(
        sections_.begin(), sections_.end(), e,
        [](std::int64_t v, const std::unique_ptr<Section>& s) { return v < s->first; }));
    const auto& s = **it;
    return line_of_value(s.data, (e - s.first) * (1 + s.type->nodes), false);
  }

  // ---- the mesh

  Mesh build() {
    end_section(where(0, part_, files_[0]->view().size()));
    Mesh m;
    scopes_.resize(parts_.size());
    for (std::size_t k = 0; k < sections_.size(); ++k) {
      auto& sc = scopes_[sections_[k]->scope];
      sections_[k]->local_first = sc.n_elems;
      sc.n_elems += sections_[k]->count;
      sc.sections.push_back(k);
    }
    if (parts_.size() == 1) {  // no *PART: one id space, the file's order (the common case)
      auto& sc = scopes_[0];
      sc.n_nodes = static_cast<std::int64_t>(node_ids_.size());
      sc.nodes.build(node_ids_, top_node_, [&](std::int64_t i, std::int64_t j, std::int64_t id) {
        duplicate("node", id, line_of_node(i), line_of_node(j));
      });
      sc.elements.build(elem_ids_, top_element_,
                        [&](std::int64_t i, std::int64_t j, std::int64_t id) {
                          duplicate("element", id, line_of_element(i), line_of_element(j));
                        });
      copies_.push_back({0, -1});
      points(m, sc.n_nodes);
      blocks(m, sc.nodes);
    } else {
      part_maps();
      lay_out();
      check_size();
      copy_points(m);
      copy_blocks(m);
    }
    regions(m);
    notes(m);
    return m;
  }

  [[noreturn]] void duplicate(const char* what, std::int64_t id, std::uint64_t first,
                              std::uint64_t again) const {
    const auto f = where_file(first);
    fail_at(again, std::string(what) + " id " + std::to_string(id) + " is defined again " +
                       (where_part(again) ? part_name(again) + " " : "") + "(first " + names_[f] +
                       ":" + std::to_string(line_of(f, where_offset(first))) + ")");
  }

  // ---- parts: each its own ids, copied once per instance

  // A part's ids, gathered from the file's, for IdMap::build.
  struct Ids {
    std::vector<std::int64_t> v;
    std::int64_t top = 0;
    std::size_t size() const { return v.size(); }
    template <typename F>
    void for_each(F&& f) const {
      f(v.data(), v.size());
    }
  };

  // Element `l` of part `scope` (its index among the part's) in the file's numbering.
  std::int64_t element_file(std::size_t scope, std::int64_t l) const {
    const auto& secs = scopes_[scope].sections;
    const auto it =
        std::prev(std::upper_bound(secs.begin(), secs.end(), l, [&](std::int64_t v, std::size_t k) {
          return v < sections_[k]->local_first;
        }));
    return sections_[*it]->first + (l - sections_[*it]->local_first);
  }

  // The node and element ids of each part apart (and of what is outside any part).
  void part_maps() {
    std::vector<Ids> nodes(parts_.size()), elements(parts_.size());
    node_local_.resize(node_ids_.size());
    std::size_t run = 0;
    std::int64_t i = 0;
    node_ids_.for_each([&](const std::int64_t* p, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j, ++i) {
        while (run + 1 < node_runs_.size() && node_runs_[run + 1].first <= i) ++run;
        const auto sc = where_part(node_runs_[run].data);
        node_local_[static_cast<std::size_t>(i)] = scopes_[sc].n_nodes++;
        scopes_[sc].node_file.push_back(i);
        nodes[sc].v.push_back(p[j]);
        nodes[sc].top = std::max(nodes[sc].top, p[j]);
      }
    });
    std::size_t sec = 0;
    i = 0;
    elem_ids_.for_each([&](const std::int64_t* p, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j, ++i) {
        while (i >= sections_[sec]->first + sections_[sec]->count) ++sec;
        const auto sc = sections_[sec]->scope;
        elements[sc].v.push_back(p[j]);
        elements[sc].top = std::max(elements[sc].top, p[j]);
      }
    });
    for (std::size_t s = 0; s < parts_.size(); ++s) {
      auto& sc = scopes_[s];
      // Little slack: a file of many small parts must not make a big table for each.
      sc.nodes.build(
          nodes[s], nodes[s].top,
          [&](std::int64_t a, std::int64_t b, std::int64_t id) {
            duplicate("node", id, line_of_node(sc.node_file[static_cast<std::size_t>(a)]),
                      line_of_node(sc.node_file[static_cast<std::size_t>(b)]));
          },
          16);
      sc.elements.build(
          elements[s], elements[s].top,
          [&](std::int64_t a, std::int64_t b, std::int64_t id) {
            duplicate("element", id, line_of_element(element_file(s, a)),
                      line_of_element(element_file(s, b)));
          },
          16);
    }
  }

  // The copies in the mesh: every instance in order (a part without one is left out), or
  // every part once when no instance places them; then what is outside any part (the
  // assembly's reference nodes).
  void lay_out() {
    if (instances_.empty())
      for (std::size_t p = 1; p < parts_.size(); ++p) copies_.push_back({p, -1});
    for (std::size_t i = 0; i < instances_.size(); ++i)
      copies_.push_back({instances_[i].part, static_cast<std::int64_t>(i)});
    copies_.push_back({0, -1});
    std::int64_t points = 0, cells = 0;
    for (auto& c : copies_) {
      c.points = points;
      c.cells = cells;
      points += scopes_[c.scope].n_nodes;
      cells += scopes_[c.scope].n_elems;
    }
  }

  std::string copy_name(const Copy& c) const {
    return c.inst >= 0 ? instances_[static_cast<std::size_t>(c.inst)].name : parts_[c.scope];
  }

  // An instance copies its part: a line makes as much as the part's arrays, so N instances of a
  // big part are held to ReadOptions::max_bytes before anything is allocated (points: 3-D, and
  // once more when packed to fewer coordinates).
  void check_size() const {
    if (!options_.max_bytes) return;
    std::uint64_t bytes = 0;
    for (const auto& c : copies_) {
      const auto& sc = scopes_[c.scope];
      bytes += 2 * 3 * 8 * static_cast<std::uint64_t>(sc.n_nodes);
      for (const auto k : sc.sections)
        bytes += 8 * static_cast<std::uint64_t>(sections_[k]->count * sections_[k]->type->nodes);
      if (bytes <= options_.max_bytes) continue;
      const auto at =
          c.inst >= 0 ? instances_[static_cast<std::size_t>(c.inst)].at : where(0, 0, 0);
      const auto f = where_file(at);
      throw SizeLimitError(names_[f] + ":" + std::to_string(line_of(f, where_offset(at))) + ": " +
                           (c.inst >= 0 ? "*INSTANCE '" : "part '") + copy_name(c) +
                           "' brings the mesh's arrays to " + std::to_string(bytes) +
                           " bytes, over the limit of " + std::to_string(options_.max_bytes));
    }
  }

  // An instance's placement as a matrix. Abaqus's *INSTANCE: "the translation is applied
  // first, followed by the rotation"; the rotation's axis runs through points a and b given in
  // the assembly's frame (where the part is once translated), right-handed, by the angle in
  // degrees. So x goes to a + R (x + t - a), R by Rodrigues' formula about u = (b - a) / |b - a|.
  struct Placement {
    double t[3] = {0, 0, 0}, a[3] = {0, 0, 0};
    double r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    void apply(const double* x, double* o) const {
      double y[3];
      for (int k = 0; k < 3; ++k) y[k] = x[k] + t[k] - a[k];
      for (int k = 0; k < 3; ++k)
        o[k] = a[k] + r[3 * k] * y[0] + r[3 * k + 1] * y[1] + r[3 * k + 2] * y[2];
    }
  };
  static Placement placement(const Instance* inst) {
    Placement p;
    if (!inst) return p;
    std::copy(inst->t, inst->t + 3, p.t);
    if (inst->lines < 2 || inst->axis[6] == 0) return p;
    double u[3] = {inst->axis[3] - inst->axis[0], inst->axis[4] - inst->axis[1],
                   inst->axis[5] - inst->axis[2]};
    const double len = std::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    for (auto& x : u) x /= len;
    std::copy(inst->axis, inst->axis + 3, p.a);
    // Quarter turns exactly (cos 90 degrees is 6e-17 in double): CAE writes 90 and 180 often.
    const double deg = std::fmod(inst->axis[6], 360.0);
    double c = std::cos(deg * std::numbers::pi / 180), s = std::sin(deg * std::numbers::pi / 180);
    if (std::fmod(deg, 90.0) == 0) {
      static constexpr double kCos[] = {1, 0, -1, 0}, kSin[] = {0, 1, 0, -1};
      const int q = (static_cast<int>(deg / 90) % 4 + 4) % 4;
      c = kCos[q];
      s = kSin[q];
    }
    const double k[9] = {0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0};
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        p.r[3 * i + j] = (i == j ? c : 0) + (1 - c) * u[i] * u[j] + s * k[3 * i + j];
    return p;
  }

  void copy_points(Mesh& m) {
    std::vector<double> xyz(coords_.size());
    coords_.drain_to(xyz.data());
    const auto n = copies_.back().points + scopes_[0].n_nodes;
    Array a = Array::of<double>({n, 3});
    double* out = a.as<double>();
    for (const auto& c : copies_) {
      const auto& sc = scopes_[c.scope];
      const auto place =
          placement(c.inst >= 0 ? &instances_[static_cast<std::size_t>(c.inst)] : nullptr);
      for (std::int64_t l = 0; l < sc.n_nodes; ++l)
        place.apply(&xyz[3 * static_cast<std::size_t>(sc.node_file[static_cast<std::size_t>(l)])],
                    out + 3 * (c.points + l));
    }
    // As many coordinates as the nodes have, unless a placement moved them out of that plane.
    int dim = dim_ == 0 ? 3 : dim_;
    for (std::int64_t i = 0; i < n && dim < 3; ++i)
      for (int k = dim; k < 3; ++k)
        if (out[3 * i + k] != 0) dim = 3;
    if (dim == 3) {
      m.points = std::move(a);
      return;
    }
    m.points = Array::of<double>({n, dim});
    double* p = m.points.as<double>();
    for (std::int64_t i = 0; i < n; ++i)
      for (int k = 0; k < dim; ++k) p[i * dim + k] = out[3 * i + k];
  }

  // The cell blocks of every copy: each section's node ids resolved once among its part's,
  // then copied with the copy's first point added.
  void copy_blocks(Mesh& m) {
    std::vector<std::int64_t> conn(cell_nodes_.size());
    cell_nodes_.drain_to(conn.data());
    std::vector<std::size_t> start(sections_.size());
    std::size_t at = 0;
    for (std::size_t k = 0; k < sections_.size(); ++k) {
      const auto& s = *sections_[k];
      const auto& sc = scopes_[s.scope];
      const auto nodes = static_cast<std::size_t>(s.type->nodes);
      start[k] = at;
      for (std::size_t i = 0; i < static_cast<std::size_t>(s.count) * nodes; ++i) {
        const auto idx = sc.nodes.find(conn[at + i]);
        if (idx < 0) {
          const auto e = s.first + static_cast<std::int64_t>(i / nodes);
          fail_at(line_of_element(e), "element " + std::to_string(nth(elem_ids_, e)) + " " +
                                          part_name(s.data) + " refers to node " +
                                          std::to_string(conn[at + i]) +
                                          ", which no *NODE there defines");
        }
        conn[at + i] = idx;
      }
      // Abaqus's 3-node lines are end, middle, end; line3 is end, end, middle.
      if (!s.meshio_line3 && std::string_view(s.type->type) == "line3")
        for (std::size_t c = 0; c < static_cast<std::size_t>(s.count); ++c)
          std::swap(conn[at + 3 * c + 1], conn[at + 3 * c + 2]);
      at += static_cast<std::size_t>(s.count) * nodes;
    }
    for (const auto& c : copies_)
      for (const auto k : scopes_[c.scope].sections) {
        const auto& s = *sections_[k];
        auto a = Array::of<std::int64_t>({s.count, std::int64_t{s.type->nodes}});
        auto* out = a.as<std::int64_t>();
        const auto len = static_cast<std::size_t>(s.count * s.type->nodes);
        for (std::size_t i = 0; i < len; ++i) out[i] = conn[start[k] + i] + c.points;
        m.cells.push_back(CellBlock::fixed(s.type->type, std::move(a)));
      }
  }

  // ---- no parts: the file's arrays as they are
  void points(Mesh& m, std::int64_t n) {
    const int dim = dim_ == 0 ? 3 : dim_;  // no nodes: (0, 3), as every reader's empty mesh
    m.points = Array::of<double>({n, dim});
    double* p = m.points.as<double>();
    std::int64_t i = 0;
    coords_.drain([&](const double* c, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j, ++i)
        if (i % 3 < dim) p[i / 3 * dim + i % 3] = c[j];
    });
  }

  // The cell blocks, the node ids of cell_nodes_ resolved into them in order (freed as they go).
  void blocks(Mesh& m, const IdMap& nodes) {
    std::vector<std::int64_t*> outs;
    for (const auto& s : sections_) {
      m.cells.push_back(CellBlock::fixed(
          s->type->type, Array::of<std::int64_t>({s->count, std::int64_t{s->type->nodes}})));
      outs.push_back(m.cells.back().connectivity.as<std::int64_t>());
    }
    std::size_t b = 0;
    std::int64_t i = 0;  // in section b's values
    cell_nodes_.drain([&](const std::int64_t* ids, std::size_t len) {
      for (std::size_t j = 0; j < len; ++j, ++i) {
        while (i == sections_[b]->count * sections_[b]->type->nodes) {
          ++b;
          i = 0;
        }
        const auto idx = nodes.find(ids[j]);
        if (idx < 0) {
          const auto& s = *sections_[b];
          const auto e = s.first + i / s.type->nodes;
          fail_at(line_of_element(e), "element " + std::to_string(nth(elem_ids_, e)) +
                                          " refers to node " + std::to_string(ids[j]) +
                                          ", which no *NODE defines");
        }
        outs[b][i] = idx;
      }
    });
    for (std::size_t k = 0; k < sections_.size(); ++k) {
      const auto& s = *sections_[k];
      // Abaqus's 3-node lines are end, middle, end; line3 is end, end, middle.
      if (!s.meshio_line3 && std::string_view(s.type->type) == "line3")
        for (std::int64_t c = 0; c < s.count; ++c)
          std::swap(outs[k][3 * c + 1], outs[k][3 * c + 2]);
    }
  }

  // `entries` with each kept once, in order; `seen` (false everywhere, as it is left) marks them.
  static void unique(std::vector<std::int64_t>& entries, std::vector<bool>& seen) {
    std::size_t k = 0;
    for (const auto e : entries) {
      if (seen[static_cast<std::size_t>(e)]) continue;
      seen[static_cast<std::size_t>(e)] = true;
      entries[k++] = e;
    }
    entries.resize(k);
    for (const auto e : entries) seen[static_cast<std::size_t>(e)] = false;
  }

  // Where id `k` of `set` (not a GENERATE one) is written: its data lines read again.
  std::uint64_t line_of_id(const SetDef& set, std::int64_t k) const {
    std::int64_t seen = 0;
    bool hit = false;
    const auto at = find_data_line(set.data, [&](std::string_view t) {
      Fields f(t);
      while (!f.done()) {
        std::int64_t id = 0;
        if (parse_id(f.next(), id) && seen++ == k) return hit = true;
      }
      return false;
    });
    return hit ? at : set.data;
  }

  // Which part's ids an item of `set` lists, and where that part's copy starts in the mesh: a
  // part's set is kept in its part's numbering (copied per instance at the end); an assembly
  // set's entries are the mesh's.
  struct Target {
    std::size_t scope;
    std::int64_t base;
  };
  Target target(const SetDef& set, std::int64_t inst) const {
    auto base = [&](const Copy& c) { return set.cell ? c.cells : c.points; };
    if (inst >= 0)
      return {instances_[static_cast<std::size_t>(inst)].part,
              base(copies_[static_cast<std::size_t>(inst)])};
    if (set.scope != 0) return {set.scope, 0};
    return {0, base(copies_.back())};
  }

  void regions(Mesh& m) {
    // Each set's entries, by the first definition of its (case-insensitive) name and kind.
    std::vector<std::vector<std::int64_t>> entries(sets_.size());
    std::vector<std::size_t> owner(sets_.size());  // the definition whose entries a set adds to
    std::vector<bool> redefined(sets_.size());
    const auto most = std::max(
        {m.num_points(), m.num_cells(), static_cast<std::int64_t>(node_ids_.size()), elements_});
    std::vector<bool> seen(static_cast<std::size_t>(most));
    std::size_t again = 0;
    std::uint64_t bytes = m.points.nbytes();
    for (const auto& b : m.cells) bytes += b.connectivity.nbytes();
    // Sets are the one place an input can make more than its size: a set naming a big set,
    // defined a thousand times over (or a part's set copied to each of its instances). Held
    // to ReadOptions::max_bytes with the mesh's arrays.
    auto room = [&](std::size_t more, std::uint64_t at, const std::string& name) {
      bytes += 8 * more;
      if (options_.max_bytes && bytes > options_.max_bytes) {
        const auto f = where_file(at);
        throw SizeLimitError(names_[f] + ":" + std::to_string(line_of(f, where_offset(at))) +
                             ": set '" + name + "' makes the mesh's arrays and sets " +
                             std::to_string(bytes) + " bytes, over the limit of " +
                             std::to_string(options_.max_bytes));
      }
    };
    copy_regions(m, [&](std::size_t more, const Copy& c) {
      room(more, c.inst >= 0 ? instances_[static_cast<std::size_t>(c.inst)].at : where(0, 0, 0),
           copy_name(c));
    });
    for (std::size_t d = 0; d < sets_.size(); ++d) {
      const auto& set = sets_[d];
      const auto range = set_names_[set.cell ? 1 : 0].equal_range(set_key(set.scope, set.name));
      owner[d] = range.first->second;  // the first definition (multimap: in order)
      auto& out = entries[owner[d]];
      if (owner[d] != d) {
        ++again;
        redefined[owner[d]] = true;
      }
      bool names = false;
      for (const auto& item : set.items) {
        const auto to = target(set, item.inst);
        const auto& ids = scopes_[to.scope];
        auto id = [&](std::int64_t v, auto&& line) {
          const auto i = set.cell ? ids.elements.find(v) : ids.nodes.find(v);
          if (i < 0)
            fail_at(line(), std::string(set.cell ? "*ELSET" : "*NSET") + " '" + set.name +
                                "': " + (set.cell ? "element " : "node ") + std::to_string(v) +
                                " does not exist" +
                                (to.scope ? " in part '" + parts_[to.scope] + "'" : ""));
          out.push_back(to.base + i);
        };
        switch (item.kind) {
          case SetItem::kIds:
            for (auto k = item.a; k < item.b; ++k)
              id(set.ids[static_cast<std::size_t>(k)], [&] { return line_of_id(set, k); });
            break;
          case SetItem::kGenerate: {
            const auto* g = set.ids.data() + item.a;
            // Every generated id must exist: at most as many as the mesh has do, so a range of
            // more fails at its first missing id before it grows past the mesh.
            for (std::int64_t v = g[0]; v <= g[1]; v += g[2]) {
              id(v, [&] { return item.at; });
              if (g[1] - v < g[2]) break;
            }
            break;
          }
          case SetItem::kRun:
            if (set.cell) {
              const auto& s = *sections_[static_cast<std::size_t>(item.a)];
              room(static_cast<std::size_t>(s.count), item.at, set.name);
              for (std::int64_t c = 0; c < s.count; ++c) out.push_back(to.base + s.local_first + c);
            } else {
              for (std::int64_t p = item.a; p < item.b; ++p) out.push_back(to.base + node_local(p));
            }
            break;
          case SetItem::kName: {
            names = true;
            const auto& e = entries[owner[static_cast<std::size_t>(item.a)]];
            if (&e == &out) break;  // itself, defined again: nothing to add
            room(e.size(), item.at, set.name);
            // A part's set named through an instance ("I.name"): moved to that instance's copy.
            const auto base = item.inst >= 0 ? to.base : 0;
            for (const auto x : e) out.push_back(base + x);
            break;
          }
        }
      }
      // A set naming sets would grow with every name (and a chain of sets naming the two
      // before them exponentially): its entries are kept once each, in order, as the sets
      // Abaqus makes of them.
      if (names) unique(out, seen);
    }
    for (std::size_t d = 0; d < sets_.size(); ++d) {
      if (owner[d] != d) continue;
      if (redefined[d]) unique(entries[d], seen);  // the entries of all its definitions
      const auto& set = sets_[d];
      const auto kind = set.cell ? RegionKind::kCell : RegionKind::kPoint;
      if (set.scope == 0) {
        m.regions.push_back(region(set.name, kind, entries[d], 0));
      } else {  // a part's set: "I.S" for each copy of its part
        for (const auto& c : copies_) {
          if (c.scope != set.scope) continue;
          room(entries[d].size(), set.data, set.name);
          m.regions.push_back(region(copy_name(c) + "." + set.name, kind, entries[d],
                                     set.cell ? c.cells : c.points));
        }
      }
      std::vector<std::int64_t>().swap(entries[d]);
    }
    if (again)
      m.notes.push_back("abaqus: " + std::to_string(again) +
                        " sets are defined again under a name used before (names match "
                        "case-insensitively): their entries were appended, as Abaqus does "
                        "(meshio keeps the last definition)");
  }

  std::int64_t node_local(std::int64_t file_index) const {
    return node_local_.empty() ? file_index : node_local_[static_cast<std::size_t>(file_index)];
  }

  static Region region(std::string name, RegionKind kind, const std::vector<std::int64_t>& e,
                       std::int64_t base) {
    Region r;
    r.name = std::move(name);
    r.kind = kind;
    if (base == 0) {
      r.entries = Array::from_vector(e);
      return r;
    }
    r.entries = Array::of<std::int64_t>({static_cast<std::int64_t>(e.size())});
    auto* p = r.entries.as<std::int64_t>();
    for (std::size_t i = 0; i < e.size(); ++i) p[i] = base + e[i];
    return r;
  }

  // A cell Region for each copy of a part (named after its instance, or its part): its cells.
  template <typename Room>
  void copy_regions(Mesh& m, Room&& room) {
    for (const auto& c : copies_) {
      if (c.scope == 0) continue;
      const auto n = scopes_[c.scope].n_elems;
      room(static_cast<std::size_t>(n), c);
      Region r;
      r.name = copy_name(c);
      r.kind = RegionKind::kCell;
      r.entries = Array::of<std::int64_t>({n});
      auto* p = r.entries.as<std::int64_t>();
      for (std::int64_t i = 0; i < n; ++i) p[i] = c.cells + i;
      m.regions.push_back(std::move(r));
    }
  }

 private:
  void notes(Mesh& m) {
    const bool parts = parts_.size() > 1;  // ids restart in each part: their order says nothing
    if (!nodes_in_order_ && !parts)
      m.notes.push_back(
          "abaqus: node ids are not 1..n in file order; the points are in file order and the "
          "ids are not kept");
    if (!elements_in_order_ && !parts)
      m.notes.push_back(
          "abaqus: element ids are not 1..n in file order; the cells are in file order and the "
          "ids are not kept");
    if (short_nodes_)
      m.notes.push_back("abaqus: " + std::to_string(short_nodes_) + " nodes have fewer than " +
                        std::to_string(dim_) + " coordinates; the rest were read as 0");
    if (b33_meshio_)
      m.notes.push_back("abaqus: " + std::to_string(b33_meshio_) +
                        " B33/B33H sections have 3 nodes an element (meshio's line3; Abaqus's "
                        "B33 has 2): read as line3 in the order written");
    if (parts) part_notes(m);
    if (!skipped_.empty()) {
      std::string s;
      for (const auto& [k, count] : skipped_)
        s += (s.empty() ? "" : ", ") + ("*" + k) + " x" + std::to_string(count);
      m.notes.push_back("abaqus: keywords not read (no mesh data meshdock keeps): " + s);
    }
  }

  void part_notes(Mesh& m) const {
    const auto n_parts = std::to_string(parts_.size() - 1);
    if (instances_.empty()) {
      m.notes.push_back("abaqus: " + n_parts +
                        " *PART read once each in ids of its own (no *INSTANCE places them): a "
                        "cell region named after each part, its sets named 'part.set'; the ids "
                        "are not kept");
    } else {
      std::size_t moved = 0, turned = 0;
      for (const auto& i : instances_) {
        moved += i.lines >= 1 && (i.t[0] != 0 || i.t[1] != 0 || i.t[2] != 0);
        turned += i.lines == 2 && i.axis[6] != 0;
      }
      m.notes.push_back(
          "abaqus: " + std::to_string(instances_.size()) + " *INSTANCE of " + n_parts +
          " parts expanded: each a copy of its part's points and cells, in instance order, a "
          "cell region named after it, its part's sets named 'instance.set'; " +
          std::to_string(moved) + " translated, " + std::to_string(turned) +
          " rotated (translation first, then rotation, as Abaqus applies them); the ids are not "
          "kept");
      std::string alone;
      for (std::size_t p = 1; p < parts_.size(); ++p) {
        bool placed = false;
        for (const auto& i : instances_) placed = placed || i.part == p;
        if (!placed) alone += (alone.empty() ? "'" : ", '") + parts_[p] + "'";
      }
      if (!alone.empty())
        m.notes.push_back("abaqus: parts without an *INSTANCE are not in the mesh: " + alone);
    }
    if (scopes_[0].n_nodes)
      m.notes.push_back("abaqus: " + std::to_string(scopes_[0].n_nodes) +
                        " nodes outside any part (the assembly's) follow the parts' points");
  }
};

}  // namespace

Mesh read_abaqus(const InFile& file, const ReadOptions& options) {
  AbaqusReader r(file, options);
  return r.read();
}

}  // namespace meshdock::mesh
