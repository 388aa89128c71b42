// AVS UCD writer (.avs, .ucd), ascii, as meshio 5.0's avsucd writer lays it out and read_ucd and
// meshio read it back: a '#' comment, the header "<#nodes> <#cells> <#node data components>
// <#cell data components> 0", a line "id x y z" a point (ids 1..n; 1-D and 2-D points padded
// with 0, noted), a line "id material type n1 .." a cell (ids 1..N over the blocks in order; AVS's
// type names and node order from ucd_types.hpp, the table read_ucd uses; material from cell_data
// "avsucd:material" when it is one integer a cell, else 0), then the node data and the cell data:
// "<#groups> <components of each>", a line "label, real" a group (meshio's unit), a line
// "id v1 v2 .." an entity with every group's values. Each point_data / cell_data array of 1 or 2
// dimensions is a group (1 component, or its columns: meshio's form), its values the shortest
// text that reads back to each as the float64 the readers make of it (meshio writes %.14e,
// which rounds). Labels: read_ucd and meshio
// read blanks back as '_', cut a label at ',' and skip a line starting '#': such a name is noted
// and not written, as is a second name that would read back as one already written.
// A block of any other type (polygons, polyhedra, higher order: AVS UCD has none) is a WriteError
// naming it; field data and regions are noted as not written.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/ucd_types.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

constexpr const char* kMaterial = "avsucd:material";

// AVS's entry for a fixed block of a type it has, else null.
const UcdType* ucd_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& t : kUcdTypes)
    if (t.meshio == b.type && static_cast<std::int64_t>(t.nodes) == b.connectivity.dim(1))
      return &t;
  return nullptr;
}

// One component group: its label and one array per part (one for point data, one a block for
// cell data), each (rows,) or (rows, width).
struct Group {
  std::string label;
  std::int64_t width;
  std::vector<const Array*> parts;
};

class UcdWriter : wr::WriterState {
 public:
  UcdWriter(const Mesh& m, const OutTarget& target) : WriterState(m, target, false) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    for (std::size_t b = 0; b < m_.cells.size(); ++b)
      if (!ucd_type(m_.cells[b]))
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written to AVS UCD, which has pt, line, tri, quad, tet, "
                         "pyr, prism and hex cells only (vertex, line, triangle, quad, tetra, "
                         "pyramid, wedge, hexahedron); write it as " +
                         wr::formats_for(m_.cells[b]));
    if (m_.points.dim(1) > 3)
      throw WriteError(path_ + ": points have " + std::to_string(m_.points.dim(1)) +
                       " coordinates; an AVS UCD node has 3");
    wr::note_point_dims(m_, "AVS UCD", notes_);
    wr::note_dropped(m_, "AVS UCD", notes_, wr::kFieldData | wr::kRegions);
    pick_groups();
    OutFile out(target_);
    wr::Sink s(out);
    s.put("# written by meshdock\n");
    s.text(m_.num_points());
    s.put(' ');
    s.text(m_.num_cells());
    s.put(' ');
    s.text(components(point_groups_));
    s.put(' ');
    s.text(components(cell_groups_));
    s.put(" 0\n");
    write_nodes(s);
    write_cells(s);
    write_data(s, point_groups_, m_.num_points());
    write_data(s, cell_groups_, m_.num_cells());
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  static std::int64_t components(const std::vector<Group>& groups) {
    std::int64_t n = 0;
    for (const auto& g : groups) n += g.width;
    return n;
  }

  // The label `name` reads back as, or why it cannot be written.
  std::string label_or_note(const std::string& what, const std::string& name) {
    auto drop = [&](const std::string& why) {
      notes_.push_back(what + " '" + name + "' is not written: " + why);
      return std::string();
    };
    if (name.empty() || name.find_first_of(",\n\r") != std::string::npos || name[0] == '#' ||
        name.find_first_not_of(" \t") == std::string::npos)
      return drop("an AVS UCD label cannot be empty, start with '#' or hold ',' or a line break");
    std::string label(name);
    label.erase(0, label.find_first_not_of(" \t"));
    label.erase(label.find_last_not_of(" \t") + 1);
    std::replace(label.begin(), label.end(), ' ', '_');
    if (label.find('\t') != std::string::npos)
      return drop("an AVS UCD label cannot hold a tab (readers split it)");
    if (!labels_.insert(label).second)
      return drop("it would read back as '" + label + "', the label of another array");
    if (label != name)
      notes_.push_back(what + " '" + name + "' reads back as '" + label +
                       "' (AVS UCD readers turn blanks into '_')");
    return label;
  }

  // The width of an array of 1 or 2 dimensions (1 for (n,)), else -1.
  static std::int64_t width_of(const Array& a) {
    if (a.ndim() == 1) return 1;
    if (a.ndim() == 2 && a.dim(1) > 0) return a.dim(1);
    return -1;
  }

  void pick_groups() {
    for (const auto& [name, a] : m_.point_data) {
      const auto w = width_of(a);
      if (w < 0) {
        notes_.push_back("point_data '" + name + "' is not written: AVS UCD holds scalars and " +
                         "vectors (arrays of 1 or 2 dimensions)");
        continue;
      }
      auto label = label_or_note("point_data", name);
      if (!label.empty()) point_groups_.push_back(Group{std::move(label), w, {&a}});
    }
    labels_.clear();  // cell data labels are a section of their own
    if (const auto it = m_.cell_data.find(kMaterial); it != m_.cell_data.end()) {
      bool ok = true;
      for (const auto& a : it->second) ok = ok && wr::is_integer_column(a);
      if (ok)
        material_ = &it->second;
      else
        notes_.push_back(std::string("cell_data '") + kMaterial +
                         "' is not written: AVS UCD's material is one integer a cell");
      labels_.insert(kMaterial);  // read_ucd's name for the materials: no group may take it
    }
    for (const auto& [name, parts] : m_.cell_data) {
      if (name == kMaterial) continue;
      if (parts.empty()) {
        notes_.push_back("cell_data '" + name + "' is not written: the mesh has no cells");
        continue;
      }
      Group g{std::string(), width_of(parts[0]), {}};
      for (const auto& a : parts) {
        if (width_of(a) != g.width) g.width = -1;
        g.parts.push_back(&a);
      }
      if (g.width < 0) {
        notes_.push_back("cell_data '" + name + "' is not written: AVS UCD holds scalars and " +
                         "vectors of one width in every block");
        continue;
      }
      g.label = label_or_note("cell_data", name);
      if (!g.label.empty()) cell_groups_.push_back(std::move(g));
    }
  }

  void write_nodes(wr::Sink& s) { wr::numbered_points(s, m_, ""); }

  void write_cells(wr::Sink& s) {
    std::int64_t id = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const UcdType* t = ucd_type(m_.cells[b]);
      std::string type(1, ' ');  // not " " + std::string(..): g++ 12 -O2 warns (-Wrestrict)
      type += t->ucd;
      const Array* mat = material_ ? &(*material_)[b] : nullptr;
      std::int64_t row = 0;
      std::int64_t file[8];
      wr::each_cell(m_.cells[b], [&](const std::int64_t* c, std::size_t n) {
        s.text(++id);
        s.put(' ');
        if (mat)
          s.text(int_at(*mat, static_cast<std::size_t>(row)));
        else
          s.put('0');
        ++row;
        s.put(type);
        // The file's node order[k] is meshio's node k (read_ucd's rule, inverted).
        for (std::size_t k = 0; k < n; ++k) file[t->order[k]] = c[k];
        for (std::size_t k = 0; k < n; ++k) {
          s.put(' ');
          s.text(file[k] + 1);
        }
        s.put('\n');
        s.maybe_flush();
      });
    }
  }

  // A data section: entity `i` of `count` is row i of the parts one after another.
  void write_data(wr::Sink& s, const std::vector<Group>& groups, std::int64_t count) {
    if (groups.empty()) return;
    s.text(groups.size());
    for (const auto& g : groups) {
      s.put(' ');
      s.text(g.width);
    }
    s.put('\n');
    for (const auto& g : groups) {
      s.put(g.label);
      s.put(", real\n");
    }
    std::vector<std::size_t> part(groups.size(), 0);
    std::vector<std::int64_t> base(groups.size(), 0);  // the entity of the part's first row
    for (std::int64_t i = 0; i < count; ++i) {
      s.text(i + 1);
      for (std::size_t j = 0; j < groups.size(); ++j) {
        const auto& g = groups[j];
        while (i - base[j] >= g.parts[part[j]]->dim(0)) base[j] += g.parts[part[j]++]->dim(0);
        const auto row = static_cast<std::size_t>(i - base[j]);
        for (std::int64_t k = 0; k < g.width; ++k) {
          s.put(' ');
          wr::text_f64(s, *g.parts[part[j]],
                       row * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(k));
        }
      }
      s.put('\n');
      s.maybe_flush();
    }
  }

  const std::vector<Array>* material_ = nullptr;
  std::vector<Group> point_groups_, cell_groups_;
  std::set<std::string> labels_;  // of the section being picked
};

}  // namespace

std::vector<std::string> write_ucd(const Mesh& m, const OutTarget& target) {
  return UcdWriter(m, target).write();
}

}  // namespace meshdock::mesh
