// Kratos Multiphysics model part writer (.mdpa), what meshio 5.0's mdpa writer writes: an empty
// ModelPartData and "Properties 0", the points as Nodes "id x y z" (ids 1..n; 2-D points get
// z = 0, noted), each block as "Begin Elements <name>" in meshio's names (Triangle2D3,
// Tetrahedra3D4 ...; 3D in the names when any block is a solid, else 2D, as meshio) with lines
// "id 0 nodes" (ids consecutive over the blocks, property 0), point_data as NodalData and
// cell_data as ElementalData ("id v1 .. vk" lines, as meshio; read_mdpa reads both back, meshio
// neither). Numbers are the shortest that read back
// exactly. Beyond meshio: point and cell regions as SubModelParts (one per name, its
// SubModelPartNodes and SubModelPartElements; meshio's reader reads none). A block meshio's
// writer has no name for (pyramid, wedge15, polygons ...) is not written, noted, as are side
// regions, field_data and names that cannot stand as one word.
#include <array>
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

// A block or SubModelPart name must be one word on its line.
bool one_word(const std::string& s) {
  return !s.empty() && s.find_first_of(" \t\r\n") == std::string::npos &&
         s.find("//") == std::string::npos;
}

class MdpaWriter : wr::WriterState {
 public:
  MdpaWriter(const Mesh& m, const OutTarget& target) : WriterState(m, target, false) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    if (m_.points.dim(1) > 3)
      throw WriteError(path_ + ": mdpa holds 3-D points; these have " +
                       std::to_string(m_.points.dim(1)) + " coordinates");
    if (m_.points.dim(1) < 3)
      notes_.push_back("points have " + std::to_string(m_.points.dim(1)) +
                       " coordinates; mdpa's nodes have 3: z = 0 is written (as meshio)");
    number_cells();
    wr::note_dropped(m_, "mdpa", notes_, wr::kFieldData);
    OutFile out(target_);
    wr::Sink s(out);
    s.put(
        "Begin ModelPartData\n//  VARIABLE_NAME value\nEnd ModelPartData\n\n"
        "Begin Properties 0\nEnd Properties\n\nBegin Nodes\n");
    wr::numbered_points(s, m_, " ");
    s.put("End Nodes\n\n");
    write_cells(s);
    for (const auto& [name, a] : m_.point_data) data(s, "NodalData", "point_data", name, {&a});
    for (const auto& [name, blocks] : m_.cell_data) {
      std::vector<const Array*> written;
      for (std::size_t b = 0; b < blocks.size(); ++b)
        if (first_id_[b] >= 0) written.push_back(&blocks[b]);
      data(s, "ElementalData", "cell_data", name, written);
    }
    write_parts(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  std::vector<std::int64_t> first_id_;  // each block's first element id; -1: not written
  bool solid_ = false;

  void number_cells() {
    std::int64_t next = 1;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto* n = name_of(m_.cells[b]);
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
  }

  void write_cells(wr::Sink& s) {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto* n = name_of(m_.cells[b]);
      if (!n) continue;
      std::string name = n->mdpa;
      if (solid_) {
        const auto d = name.find("2D");
        if (d != std::string::npos) name[d] = '3';
      }
      s.put("Begin Elements " + name + "\n");
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
      s.put("End Elements\n\n");
    }
  }

  // One NodalData / ElementalData block of `arrays` (one, or the written blocks' in turn), ids
  // 1, 2, ... as meshio's.
  void data(wr::Sink& s, const char* block, const char* what, const std::string& name,
            const std::vector<const Array*>& arrays) {
    if (!one_word(name)) {
      notes_.push_back(std::string(what) + " '" + name +
                       "' is not written: an mdpa data block's name is one word");
      return;
    }
    if (block == std::string_view("ElementalData"))
      notes_.push_back(std::string(what) + " '" + name +
                       "' is written as meshio writes it (ElementalData), which meshio does not "
                       "read back");
    s.put(std::string("Begin ") + block + " " + name + "\n");
    std::int64_t id = 1;
    bool flags = !arrays.empty();  // every row "id a b" with a 0 or 1: read back as a fixed flag
    for (const auto* a : arrays) {
      const auto rows = a->dim(0);
      const auto width = rows ? static_cast<std::int64_t>(a->size()) / rows : 1;
      flags = flags && width == 2;
      for (std::int64_t i = 0; i < rows && flags; ++i) {
        const double v = value_at(*a, static_cast<std::size_t>(i * width));
        flags = v == 0 || v == 1;
      }
      for (std::int64_t i = 0; i < rows; ++i) {
        s.text(id++);
        for (std::int64_t k = 0; k < width; ++k) {
          s.put(' ');
          wr::text_value(s, *a, static_cast<std::size_t>(i * width + k));
        }
        s.put('\n');
        s.maybe_flush();
      }
    }
    s.put(std::string("End ") + block + " " + name + "\n\n");
    if (flags && block == std::string_view("NodalData"))
      notes_.push_back(std::string(what) + " '" + name +
                       "' has 2 values a point, the first of each 0 or 1: written as meshio "
                       "writes them (id a b), read_mdpa and Kratos read a fixed flag and a value");
  }

  // Regions as SubModelParts, one per name: its point region's nodes, its cell region's
  // elements.
  void write_parts(wr::Sink& s) {
    std::vector<std::string> order;
    std::map<std::string, std::pair<const Region*, const Region*>> parts;
    for (const auto& r : m_.regions) {
      if (r.kind == RegionKind::kSide || !one_word(r.name)) {
        notes_.push_back("region '" + r.name + "' is not written: " +
                         (r.kind == RegionKind::kSide
                              ? std::string("mdpa's SubModelParts hold nodes and cells, not sides")
                              : std::string("a SubModelPart's name is one word")));
        continue;
      }
      auto [it, added] = parts.try_emplace(r.name);
      if (added) order.push_back(r.name);
      auto& slot = r.kind == RegionKind::kPoint ? it->second.first : it->second.second;
      if (slot) {
        notes_.push_back("region '" + r.name + "' (" + region_kind_name(r.kind) +
                         ") is not written: a region of that kind and name came first");
        continue;
      }
      slot = &r;
    }
    std::vector<std::int64_t> starts;
    std::int64_t total = 0;
    for (const auto& b : m_.cells) {
      starts.push_back(total);
      total += b.size();
    }
    for (const auto& name : order) {
      const auto [points, cells] = parts[name];
      s.put("Begin SubModelPart " + name + "\n");
      if (points) {
        s.put(" Begin SubModelPartNodes\n");
        const auto* e = points->entries.as<std::int64_t>();
        for (std::int64_t i = 0; i < points->entries.dim(0); ++i) {
          s.put("  ");
          s.text(e[i] + 1);
          s.put('\n');
          s.maybe_flush();
        }
        s.put(" End SubModelPartNodes\n");
      }
      if (cells) {
        s.put(" Begin SubModelPartElements\n");
        const auto* e = cells->entries.as<std::int64_t>();
        std::int64_t dropped = 0;
        for (std::int64_t i = 0; i < cells->entries.dim(0); ++i) {
          std::size_t b = 0;
          while (b + 1 < starts.size() && starts[b + 1] <= e[i]) ++b;
          if (first_id_[b] < 0) {
            ++dropped;
            continue;
          }
          s.put("  ");
          s.text(first_id_[b] + (e[i] - starts[b]));
          s.put('\n');
          s.maybe_flush();
        }
        s.put(" End SubModelPartElements\n");
        if (dropped)
          notes_.push_back("region '" + name + "': " + std::to_string(dropped) +
                           " cells of blocks not written are not in its SubModelPart");
      }
      s.put("End SubModelPart\n\n");
    }
  }
};

}  // namespace

std::vector<std::string> write_mdpa(const Mesh& m, const OutTarget& target) {
  return MdpaWriter(m, target).write();
}

}  // namespace meshdock::mesh
