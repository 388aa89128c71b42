// Kratos Multiphysics model part writer (.mdpa), in two layouts.
//
// Format "mdpa": what meshio 5.0's mdpa writer writes: an empty ModelPartData and "Properties 0",
// the points as Nodes "id x y z" (ids 1..n; 2-D points get z = 0, noted), each block as "Begin
// Elements <name>" in meshio's names (Triangle2D3, Tetrahedra3D4 ...; 3D in the names when any
// block is a solid, else 2D, as meshio) with lines "id 0 nodes" (ids consecutive over the blocks,
// property 0), point_data as NodalData and cell_data as ElementalData ("id v1 .. vk" lines, as
// meshio; read_mdpa reads both back, meshio neither). Kratos itself does not load such a file:
// those names are its geometries', not registered elements, and its data lines differ.
//
// Format "kratos": what Kratos' ModelPartIO reads. The cells of the mesh's highest dimension are
// Elements under KratosCore's generic names (Element2D3N, Element3D4N ...), the lower ones
// Conditions (SurfaceCondition3D3N, LineCondition2D2N, PointCondition3D1N), each numbered from 1
// (Kratos keeps element and condition ids apart); the domain is 2-D when the points are (or every
// z is 0 and no cell is a solid). NodalData lines "id 0 value" / "id 0 [k] (v1, .., vk)" (a
// free, not fixed, value), ElementalData / ConditionalData "id value" / "id [k] (..)", a cell
// data array split between the two by its blocks. Only the types whose node order Kratos shares
// with VTK (its own VTK output writes them unconverted) are written: vertex, line, line3,
// triangle, triangle6, quad, quad8, tetra, tetra10, wedge, hexahedron; the rest are noted.
//
// Both: numbers are the shortest that read back exactly. Beyond meshio: point and cell regions as
// SubModelParts (one per name, its SubModelPartNodes and SubModelPartElements /
// SubModelPartConditions; meshio's reader reads none). A block the layout has no name for
// (pyramid, wedge15, polygons ...) is not written, noted, as are side regions, field_data and
// names that cannot stand as one word.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Name {
  const char* meshio;
  const char* mdpa;  // meshio's, in 2-D; a solid's is 3-D anyway
  std::int64_t nodes;
  bool solid;
};

constexpr std::array<Name, 14> kNames{{
    {"line", "Line2D2", 2, false},
    {"triangle", "Triangle2D3", 3, false},
    {"quad", "Quadrilateral2D4", 4, false},
    {"tetra", "Tetrahedra3D4", 4, true},
    {"hexahedron", "Hexahedra3D8", 8, true},
    {"wedge", "Prism3D6", 6, true},
    {"line3", "Line2D3", 3, false},
    {"triangle6", "Triangle2D6", 6, false},
    {"quad9", "Quadrilateral2D9", 9, false},
    {"tetra10", "Tetrahedra3D10", 10, true},
    {"hexahedron27", "Hexahedra3D27", 27, true},
    {"vertex", "Point2D", 1, false},
    {"quad8", "Quadrilateral2D8", 8, false},
    {"hexahedron20", "Hexahedra3D20", 20, true},
}};

const Name* name_of(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& n : kNames)
    if (b.type == n.meshio && b.connectivity.dim(1) == n.nodes) return &n;
  return nullptr;
}

// KratosCore's generic elements and conditions (registered in every Kratos since 5.x) for the
// types whose node order is VTK's; a '#' in a name is the domain's size.
struct KratosName {
  const char* meshio;
  std::int64_t nodes;
  const char* element;    // nullptr: none
  const char* condition;  // nullptr: none
  int only_dim;           // 0: either domain; 2 or 3: that one only (for element and condition)
};

constexpr std::array<KratosName, 15> kKratos{{
    {"vertex", 1, nullptr, "PointCondition#D1N", 0},
    {"line", 2, "Element#D2N", "LineCondition#D2N", 0},
    {"line3", 3, nullptr, "LineCondition#D3N", 0},
    {"triangle", 3, "Element2D3N", nullptr, 2},
    {"triangle", 3, "Element3D3N", "SurfaceCondition3D3N", 3},
    {"triangle6", 6, "Element2D6N", nullptr, 2},
    {"triangle6", 6, nullptr, "SurfaceCondition3D6N", 3},
    {"quad", 4, "Element2D4N", nullptr, 2},
    {"quad", 4, nullptr, "SurfaceCondition3D4N", 3},
    {"quad8", 8, "Element2D8N", nullptr, 2},
    {"quad8", 8, nullptr, "SurfaceCondition3D8N", 3},
    {"tetra", 4, "Element3D4N", nullptr, 3},
    {"tetra10", 10, "Element3D10N", nullptr, 3},
    {"wedge", 6, "Element3D6N", nullptr, 3},
    {"hexahedron", 8, "Element3D8N", nullptr, 3},
}};

const KratosName* kratos_name_of(const CellBlock& b, int domain) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& n : kKratos)
    if (b.type == n.meshio && b.connectivity.dim(1) == n.nodes &&
        (n.only_dim == 0 || n.only_dim == domain))
      return &n;
  return nullptr;
}

// "Element#D2N" in a 2-D domain: "Element2D2N".
std::string in_domain(const char* name, int domain) {
  std::string s = name;
  if (const auto h = s.find('#'); h != std::string::npos) s[h] = static_cast<char>('0' + domain);
  return s;
}

// A block or SubModelPart name must be one word on its line.
bool one_word(const std::string& s) {
  return !s.empty() && s.find_first_of(" \t\r\n") == std::string::npos &&
         s.find("//") == std::string::npos;
}

// A C identifier: what Kratos names its variables with (TEMPERATURE, DISPLACEMENT_X).
bool identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

// A name Kratos can nest by its dots ("outer.inner"): no empty word, at most 64 deep (as read).
bool nestable(const std::string& s) {
  if (s.front() == '.' || s.back() == '.' || s.find("..") != std::string::npos) return false;
  return std::count(s.begin(), s.end(), '.') < 64;
}

class MdpaWriter : wr::WriterState {
 public:
  MdpaWriter(const Mesh& m, const OutTarget& target, bool kratos)
      : WriterState(m, target, false), kratos_(kratos) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    if (m_.points.dim(1) > 3)
      throw WriteError(path_ + ": mdpa holds 3-D points; these have " +
                       std::to_string(m_.points.dim(1)) + " coordinates");
    if (m_.points.dim(1) < 3)
      notes_.push_back("points have " + std::to_string(m_.points.dim(1)) +
                       " coordinates; mdpa's nodes have 3: z = 0 is written" +
                       (kratos_ ? "" : " (as meshio)"));
    if (kratos_)
      number_kratos();
    else
      number_cells();
    wr::note_dropped(m_, kratos_ ? "kratos" : "mdpa", notes_, wr::kFieldData);
    OutFile out(target_);
    wr::Sink s(out);
    s.put(
        "Begin ModelPartData\n//  VARIABLE_NAME value\nEnd ModelPartData\n\n"
        "Begin Properties 0\nEnd Properties\n\nBegin Nodes\n");
    wr::numbered_points(s, m_, " ");
    s.put("End Nodes\n\n");
    write_cells(s);
    for (const auto& [name, a] : m_.point_data)
      if (writable("point_data", name)) data(s, "NodalData", "point_data", name, {&a});
    for (const auto& [name, blocks] : m_.cell_data) {
      if (!writable("cell_data", name)) continue;
      std::vector<const Array*> elements, conditions;
      for (std::size_t b = 0; b < blocks.size(); ++b)
        if (kind_[b] != Kind::kNone)
          (kind_[b] == Kind::kElement ? elements : conditions).push_back(&blocks[b]);
      if (!elements.empty() || conditions.empty())
        data(s, "ElementalData", "cell_data", name, elements);
      if (!conditions.empty()) data(s, "ConditionalData", "cell_data", name, conditions);
    }
    write_parts(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  enum class Kind { kNone, kElement, kCondition };
  bool kratos_;
  std::map<std::string, std::pair<const Region*, const Region*>> parts_;  // name: point, cell
  std::vector<Kind> kind_;
  std::vector<std::string> name_;       // each block's Elements / Conditions name
  std::vector<std::int64_t> first_id_;  // each block's first element / condition id
  bool solid_ = false;

  void number_cells() {
    std::int64_t next = 1;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto* n = name_of(m_.cells[b]);
      kind_.push_back(n ? Kind::kElement : Kind::kNone);
      first_id_.push_back(n ? next : -1);
      if (!n) {
        notes_.push_back(wr::block_name(m_, b) +
                         " is not written: meshio's mdpa writer names vertex, line, line3, "
                         "triangle, triangle6, quad, quad8, quad9, tetra, tetra10, wedge, "
                         "hexahedron, hexahedron20, hexahedron27");
        continue;
      }
      next += m_.cells[b].size();
      solid_ = solid_ || n->solid;
    }
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto* n = name_of(m_.cells[b]);
      std::string name = n ? n->mdpa : "";
      if (solid_) {
        const auto d = name.find("2D");
        if (d != std::string::npos) name[d] = '3';
      }
      name_.push_back(std::move(name));
    }
  }

  // Kratos' own layout: the domain's size, then each block an Element or Condition name.
  void number_kratos() {
    int top = 0;
    bool solid = false;
    for (const auto& b : m_.cells) {
      top = std::max(top, cell_dim(b.type));
      solid = solid || cell_dim(b.type) == 3;
    }
    bool flat = m_.points.dim(1) < 3;
    if (!flat) {
      flat = true;
      const auto n = static_cast<std::size_t>(m_.points.dim(0));
      for (std::size_t i = 0; i < n && flat; ++i) flat = value_at(m_.points, 3 * i + 2) == 0;
    }
    const int domain = solid || !flat ? 3 : 2;
    std::int64_t next[2] = {1, 1};
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& block = m_.cells[b];
      const auto* n = kratos_name_of(block, domain);
      const bool top_cell = cell_dim(block.type) == top;
      Kind kind = Kind::kNone;
      std::string name;
      if (n && top_cell && n->element) {
        kind = Kind::kElement;
        name = in_domain(n->element, domain);
      } else if (n && n->condition) {
        kind = Kind::kCondition;
        name = in_domain(n->condition, domain);
        if (top_cell)
          notes_.push_back(wr::block_name(m_, b) + " is written as Conditions " + name +
                           ": KratosCore has no element for a " + block.type + " in a " +
                           std::to_string(domain) + "-D domain");
      } else {
        notes_.push_back(
            wr::block_name(m_, b) + " is not written: " +
            (n ? std::string("KratosCore has no condition for a ") + block.type + " in a " +
                     std::to_string(domain) + "-D domain"
               : std::string("the Kratos layout writes vertex, line, line3, triangle, "
                             "triangle6, quad, quad8, tetra, tetra10, wedge and hexahedron "
                             "cells (the types whose node order Kratos shares with VTK)")));
      }
      kind_.push_back(kind);
      name_.push_back(std::move(name));
      if (kind == Kind::kNone) {
        first_id_.push_back(-1);
        continue;
      }
      auto& id = next[kind == Kind::kElement ? 0 : 1];
      first_id_.push_back(id);
      id += block.size();
    }
  }

  void write_cells(wr::Sink& s) {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      if (kind_[b] == Kind::kNone) continue;
      const char* what = kind_[b] == Kind::kElement ? "Elements" : "Conditions";
      s.put(std::string("Begin ") + what + " " + name_[b] + "\n");
      const auto& block = m_.cells[b];
      const auto npc = block.connectivity.dim(1);
      const auto* c = block.connectivity.as<std::int64_t>();
      for (std::int64_t i = 0; i < block.size(); ++i) {
        s.put(' ');
        s.text(first_id_[b] + i);
        s.put(" 0");
        for (std::int64_t k = 0; k < npc; ++k) {
          s.put(' ');
          s.text(c[i * npc + k] + 1);
        }
        s.put('\n');
        s.maybe_flush();
      }
      s.put(std::string("End ") + what + "\n\n");
    }
  }

  // Whether a data array's name can head a data block (one word; in Kratos' layout a variable's
  // name); noted if not.
  bool writable(const char* what, const std::string& name) {
    if (!one_word(name)) {
      notes_.push_back(std::string(what) + " '" + name +
                       "' is not written: an mdpa data block's name is one word");
      return false;
    }
    if (kratos_ && !identifier(name)) {
      notes_.push_back(std::string(what) + " '" + name +
                       "' is not written: Kratos reads data only for a variable it knows by "
                       "name, an identifier (TEMPERATURE, VELOCITY ...)");
      return false;
    }
    return true;
  }

  // One NodalData / ElementalData / ConditionalData block of `arrays` (one, or the written
  // blocks' in turn), ids 1, 2, ... (in each kind's own numbering). meshio's lines "id v1 .. vk";
  // Kratos' "id v" / "id [k] (v1, .., vk)", in NodalData with a 0 after the id (not fixed).
  void data(wr::Sink& s, const char* block, const char* what, const std::string& name,
            const std::vector<const Array*>& arrays) {
    const bool nodal = block == std::string_view("NodalData");
    if (!kratos_ && !nodal)
      notes_.push_back(std::string(what) + " '" + name +
                       "' is written as meshio writes it (ElementalData), which meshio does not "
                       "read back");
    s.put(std::string("Begin ") + block + " " + name + "\n");
    std::int64_t id = 1;
    // meshio's layout: every row "id a b" with a 0 or 1 reads back as a fixed flag and a value.
    bool flags = !kratos_ && nodal && !arrays.empty();
    for (const auto* a : arrays) {
      const auto rows = a->dim(0);
      const auto width = rows ? static_cast<std::int64_t>(a->size()) / rows : 1;
      flags = flags && width == 2;
      for (std::int64_t i = 0; i < rows && flags; ++i) {
        const double v = value_at(*a, static_cast<std::size_t>(i * width));
        flags = v == 0 || v == 1;
      }
      const bool vector = kratos_ && (width != 1 || a->ndim() > 1);
      for (std::int64_t i = 0; i < rows; ++i) {
        s.text(id++);
        if (kratos_ && nodal) s.put(" 0");
        if (vector) {
          s.put(" [");
          s.text(width);
          s.put("] (");
        }
        for (std::int64_t k = 0; k < width; ++k) {
          s.put(vector ? (k ? ", " : "") : " ");
          wr::text_value(s, *a, static_cast<std::size_t>(i * width + k));
        }
        s.put(vector ? ")\n" : "\n");
        s.maybe_flush();
      }
    }
    s.put(std::string("End ") + block + " " + name + "\n\n");
    if (flags)
      notes_.push_back(std::string(what) + " '" + name +
                       "' has 2 values a point, the first of each 0 or 1: written as meshio "
                       "writes them (id a b), read_mdpa and Kratos read a fixed flag and a value");
  }

  // Writes the SubModelPartNodes of a part: `points`' nodes (if any) and those of `cells`' written
  // cells, each once, ascending. Returns how many the cells added.
  std::int64_t part_nodes(wr::Sink& s, const Region* points, const Region& cells,
                          const std::vector<std::int64_t>& starts) {
    std::vector<char> in(static_cast<std::size_t>(m_.points.dim(0)), 0);
    if (points) {
      const auto* e = points->entries.as<std::int64_t>();
      for (std::int64_t i = 0; i < points->entries.dim(0); ++i) in[e[i]] = 1;
    }
    const auto* e = cells.entries.as<std::int64_t>();
    std::int64_t added = 0;
    for (std::int64_t i = 0; i < cells.entries.dim(0); ++i) {
      const auto b = block_of(starts, e[i]);
      if (kind_[b] == Kind::kNone) continue;
      const auto& c = m_.cells[b].connectivity;
      const auto npc = c.dim(1);
      const auto* row = c.as<std::int64_t>() + (e[i] - starts[b]) * npc;
      for (std::int64_t k = 0; k < npc; ++k)
        if (!in[row[k]]) {
          in[row[k]] = 2;
          ++added;
        }
    }
    std::vector<std::int64_t> ids;
    for (std::size_t p = 0; p < in.size(); ++p)
      if (in[p]) ids.push_back(static_cast<std::int64_t>(p) + 1);
    id_block(s, "SubModelPartNodes", ids);
    return points ? added : 0;
  }

  // " Begin <what>", the ids (1-based) one a line, " End <what>".
  static void id_block(wr::Sink& s, const char* what, const std::vector<std::int64_t>& ids) {
    s.put(std::string(" Begin ") + what + "\n");
    for (const auto id : ids) {
      s.put("  ");
      s.text(id);
      s.put('\n');
      s.maybe_flush();
    }
    s.put(std::string(" End ") + what + "\n");
  }

  // Regions as SubModelParts, one per name: its point region's nodes, its cell region's
  // elements.
  void write_parts(wr::Sink& s) {
    std::vector<std::string> order;
    for (const auto& r : m_.regions) {
      const char* bad = r.kind == RegionKind::kSide
                            ? "mdpa's SubModelParts hold nodes and cells, not sides"
                        : !one_word(r.name) ? "a SubModelPart's name is one word"
                        : kratos_ && !nestable(r.name)
                            ? "Kratos nests SubModelParts by the dots of a name: no empty word "
                              "between them, at most 64 deep"
                            : nullptr;
      if (bad) {
        notes_.push_back("region '" + r.name + "' is not written: " + bad);
        continue;
      }
      auto [it, added] = parts_.try_emplace(r.name);
      if (added) order.push_back(r.name);
      auto& slot = r.kind == RegionKind::kPoint ? it->second.first : it->second.second;
      if (slot) {
        notes_.push_back("region '" + r.name + "' (" + region_kind_name(r.kind) +
                         ") is not written: a region of that kind and name came first");
        continue;
      }
      slot = &r;
    }
    const auto starts = block_starts(m_);
    if (!kratos_) {
      for (const auto& name : order) write_part(s, name, starts, {});
      return;
    }
    // Kratos nests SubModelParts ("outer.inner" as read_mdpa names a nested one): every part
    // and the ancestors its name implies, each inside its parent, in first appearance.
    std::map<std::string, std::vector<std::string>> children;
    for (const auto& name : order) {
      for (std::size_t dot = name.find('.'); dot != std::string::npos;
           dot = name.find('.', dot + 1))
        add_path(name.substr(0, dot), children);
      add_path(name, children);
    }
    const auto tops = children[""];
    for (const auto& top : tops) write_part(s, top, starts, children);
  }

  static void add_path(const std::string& path,
                       std::map<std::string, std::vector<std::string>>& children) {
    if (children.count(path)) return;
    const auto dot = path.rfind('.');
    children[dot == std::string::npos ? "" : path.substr(0, dot)].push_back(path);
    children[path];
  }

  // One SubModelPart `name`: its nodes, elements and conditions, then (Kratos' layout, where its
  // line says only the last word of a dotted name) the parts nested in it.
  void write_part(wr::Sink& s, const std::string& name, const std::vector<std::int64_t>& starts,
                  const std::map<std::string, std::vector<std::string>>& children) {
    const auto [points, cells] = parts_[name];
    s.put("Begin SubModelPart " + (kratos_ ? name.substr(name.rfind('.') + 1) : name) + "\n");
    if (kratos_ && cells) {
      // Kratos' processes act on a SubModelPart's nodes (a boundary condition on "inlet" sets
      // its nodes), and Kratos' own files list the nodes of every entity of a part: the point
      // region's nodes and its cells' ones, in order.
      const auto added = part_nodes(s, points, *cells, starts);
      if (added)
        notes_.push_back("region '" + name + "': " + std::to_string(added) +
                         " nodes of its cells are added to its SubModelPartNodes (Kratos' "
                         "SubModelParts hold their elements' and conditions' nodes)");
    } else if (points) {
      const auto* e = points->entries.as<std::int64_t>();
      std::vector<std::int64_t> ids(e, e + points->entries.dim(0));
      for (auto& id : ids) ++id;
      id_block(s, "SubModelPartNodes", ids);
    }
    if (cells) {
      // Its element ids, then its condition ids (the blocks each cell is in).
      std::vector<std::int64_t> ids[2];
      const auto* e = cells->entries.as<std::int64_t>();
      std::int64_t dropped = 0;
      for (std::int64_t i = 0; i < cells->entries.dim(0); ++i) {
        const auto b = block_of(starts, e[i]);
        if (kind_[b] == Kind::kNone) {
          ++dropped;
          continue;
        }
        ids[kind_[b] == Kind::kElement ? 0 : 1].push_back(first_id_[b] + (e[i] - starts[b]));
      }
      for (int k = 0; k < 2; ++k) {
        if (k == 1 && ids[1].empty()) continue;
        if (k == 0 && ids[0].empty() && !ids[1].empty()) continue;
        id_block(s, k == 0 ? "SubModelPartElements" : "SubModelPartConditions", ids[k]);
      }
      if (dropped)
        notes_.push_back("region '" + name + "': " + std::to_string(dropped) +
                         " cells of blocks not written are not in its SubModelPart");
    }
    if (const auto c = children.find(name); c != children.end())
      for (const auto& child : c->second) write_part(s, child, starts, children);
    s.put("End SubModelPart\n\n");
  }
};

}  // namespace

std::vector<std::string> write_mdpa(const Mesh& m, const OutTarget& target, bool kratos_layout) {
  return MdpaWriter(m, target, kratos_layout).write();
}

}  // namespace meshdock::mesh
