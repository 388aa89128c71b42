// SU2 writer (.su2), what meshio 5.0's su2 reader reads back with the same arrays:
// NDIME (the points' 2 or 3 coordinates), NPOIN and a point a line, NELEM with the interior
// cells (triangle, quad in 2-D; tetra, hexahedron, wedge, pyramid in 3-D) as "vtk_type nodes",
// then NMARK and a marker per tag of the boundary cells (line in 2-D; triangle, quad in 3-D).
// The tags come from cell_data "su2:tag", else "gmsh:physical", else the first integer cell data
// of one value a cell (meshio's choice), else every boundary cell is tag 1 (meshio's too). A marker
// is named by the cell region of its tag and the boundary's dimension where there is one
// (read_su2's regions), else by its number. Other blocks, data and regions are noted as not
// written.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

int su2_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return 0;
  struct T {
    const char* name;
    int vtk;
    std::int64_t nodes;
  };
  static constexpr T kTypes[] = {{"line", 3, 2},    {"triangle", 5, 3},    {"quad", 9, 4},
                                 {"tetra", 10, 4},  {"hexahedron", 12, 8}, {"wedge", 13, 6},
                                 {"pyramid", 14, 5}};
  for (const auto& t : kTypes)
    if (b.type == t.name && b.connectivity.dim(1) == t.nodes) return t.vtk;
  return 0;
}

bool interior(int vtk, std::int64_t dim) {
  return dim == 2 ? (vtk == 5 || vtk == 9) : (vtk == 10 || vtk == 12 || vtk == 13 || vtk == 14);
}
bool boundary(int vtk, std::int64_t dim) {
  return dim == 2 ? vtk == 3 : (vtk == 5 || vtk == 9);
}

// Signed or unsigned integers (not bool, whose code is another).
// A marker name must stay on its line and read back as itself.
bool usable_name(const std::string& s) {
  return !s.empty() && s.find_first_of("\n\r=%") == std::string::npos && s.front() != ' ' &&
         s.back() != ' ' && s.front() != '\t' && s.back() != '\t';
}

class Su2Writer : wr::WriterState {
 public:
  Su2Writer(const Mesh& m, const OutTarget& target) : WriterState(m, target, false) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    dim_ = m_.points.dim(1);
    if (dim_ != 2 && dim_ != 3)
      throw WriteError(path_ + ": SU2 holds 2-D or 3-D points; these have " + std::to_string(dim_) +
                       " coordinates");
    pick_labels();
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const int t = su2_type(m_.cells[b]);
      if (!interior(t, dim_) && !boundary(t, dim_))
        notes_.push_back(wr::block_name(m_, b) + " is not written: SU2 holds " +
                         (dim_ == 2 ? "triangles and quads with line markers in 2-D"
                                    : "tetra, hexahedron, wedge and pyramid cells with triangle "
                                      "and quad markers in 3-D"));
    }
    OutFile out(target_);
    wr::Sink s(out);
    s.put("NDIME= " + std::to_string(dim_) + "\nNPOIN= " + std::to_string(m_.num_points()) + "\n");
    for (std::int64_t i = 0; i < m_.num_points(); ++i) {
      for (int k = 0; k < dim_; ++k) {
        if (k) s.put(' ');
        s.text(wr::coord(m_, i, k));
      }
      s.put('\n');
      s.maybe_flush();
    }
    std::int64_t n = 0;
    for (const auto& b : m_.cells)
      if (interior(su2_type(b), dim_)) n += b.size();
    s.put("NELEM= " + std::to_string(n) + "\n");
    for (const auto& b : m_.cells)
      if (const int t = su2_type(b); interior(t, dim_))
        for (std::int64_t i = 0; i < b.size(); ++i) cell(s, b, i, t);
    write_markers(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  std::int64_t dim_ = 3;
  const std::vector<Array>* labels_ = nullptr;

  // "su2:tag", else "gmsh:physical" (the boundary's physical groups, where meshio would pick
  // gmsh:geometrical, first by name), else the first integer cell data of one value a cell.
  void pick_labels() {
    auto ok = [](const std::vector<Array>& blocks) {
      for (const auto& a : blocks)
        if (!wr::is_integer_column(a)) return false;
      return true;
    };
    std::string name;
    for (const char* key : {"su2:tag", "gmsh:physical"})
      if (const auto it = m_.cell_data.find(key);
          name.empty() && it != m_.cell_data.end() && ok(it->second))
        name = key;
    for (const auto& [key, blocks] : m_.cell_data)
      if (name.empty() && ok(blocks)) name = key;
    std::vector<wr::KeptNames> kept;
    if (!name.empty()) {
      labels_ = &m_.cell_data.at(name);
      kept.push_back({wr::kCellData, {name}});
    }
    wr::note_dropped(m_, "SU2", notes_, wr::kPointData | wr::kCellData | wr::kFieldData, kept);
  }

  std::int64_t label(std::size_t b, std::int64_t i) const {
    return labels_ ? int_at((*labels_)[b], static_cast<std::size_t>(i)) : 1;
  }

  // One cell's line: its VTK type and nodes.
  void cell(wr::Sink& s, const CellBlock& b, std::int64_t i, int vtk) {
    const auto npc = b.connectivity.dim(1);
    const auto* c = b.connectivity.as<std::int64_t>() + i * npc;
    s.text(vtk);
    for (std::int64_t k = 0; k < npc; ++k) {
      s.put(' ');
      s.text(c[k]);
    }
    s.put('\n');
    s.maybe_flush();
  }

  // The marker name of `tag`: the cell region of that tag on the boundary's dimension.
  std::string marker_name(std::int64_t tag, std::set<std::size_t>& used) const {
    for (std::size_t r = 0; r < m_.regions.size(); ++r) {
      const auto& reg = m_.regions[r];
      if (reg.kind == RegionKind::kCell && reg.tag == tag && reg.dim == dim_ - 1 &&
          usable_name(reg.name)) {
        used.insert(r);
        return reg.name;
      }
    }
    return std::to_string(tag);
  }

  // Tags in the order they first appear (meshio's writer sorts each block's: a merged block
  // read from SU2, its markers in file order, then came back in another order). The boundary
  // cells are bucketed by tag in one pass (one scan a tag was quadratic in a mesh of many).
  void write_markers(wr::Sink& s) {
    std::vector<std::int64_t> tags;
    std::vector<std::size_t> starts;         // counts, then where each tag's cells start in `order`
    std::map<std::int64_t, std::size_t> at;  // tag -> its index in tags
    std::vector<std::size_t> which;          // each boundary cell's tag index, in mesh order
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      if (!boundary(su2_type(m_.cells[b]), dim_)) continue;
      for (std::int64_t i = 0; i < m_.cells[b].size(); ++i) {
        const auto [it, added] = at.emplace(label(b, i), tags.size());
        if (added) {
          tags.push_back(it->first);
          starts.push_back(0);
        }
        ++starts[it->second];
        which.push_back(it->second);
      }
    }
    const std::vector<std::size_t> counts = starts;
    std::size_t sum = 0;
    for (auto& v : starts) sum += std::exchange(v, sum);
    std::vector<std::pair<std::size_t, std::int64_t>> order(which.size());  // (block, cell)
    std::size_t n = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      if (!boundary(su2_type(m_.cells[b]), dim_)) continue;
      for (std::int64_t i = 0; i < m_.cells[b].size(); ++i) order[starts[which[n++]]++] = {b, i};
    }
    s.put("NMARK= " + std::to_string(tags.size()) + "\n");
    std::set<std::size_t> used;
    std::size_t next = 0;
    for (std::size_t k = 0; k < tags.size(); ++k) {
      s.put("MARKER_TAG= " + marker_name(tags[k], used) +
            "\nMARKER_ELEMS= " + std::to_string(counts[k]) + "\n");
      for (std::size_t j = 0; j < counts[k]; ++j, ++next) {
        const auto [b, i] = order[next];
        cell(s, m_.cells[b], i, su2_type(m_.cells[b]));
      }
    }
    for (std::size_t r = 0; r < m_.regions.size(); ++r)
      if (!used.count(r))
        notes_.push_back(wr::not_written("region '" + m_.regions[r].name + "'", "SU2",
                                         "sets but its markers (cell regions named by a boundary "
                                         "cell tag)"));
  }
};

}  // namespace

std::vector<std::string> write_su2(const Mesh& m, const OutTarget& target) {
  return Su2Writer(m, target).write();
}

}  // namespace meshdock::mesh
