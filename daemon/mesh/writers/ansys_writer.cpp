// ANSYS Fluent mesh writer, as meshio 5.0's "ansys" writer writes it (binary by default), read
// back by read_ansys and by meshio's reader with the same arrays:
//   (1 "meshdock")  (2 dim)  (10 (0 1 n 0))  (12 (0 1 cells 0))       header and counts
//   (3010 (1 1 n 1 dim)(\n <float64 rows> \n)End of Binary Section 3010)      binary nodes
//   (3012 (1 first last 1 type)(\n <int64 rows> \n)End of Binary Section 3012)  a block each
// ascii: (10 ...)( rows )) with shortest round-trip reals, (12 ...)( rows )) with hexadecimal
// node ids. Ids are 1-based; a block's cell ids go on from the last block's (meshio's start
// at 0, which Fluent's ids never are). Types: triangle 1, tetra 2, quad 3, hexahedron 4,
// pyramid 5, wedge 6 with their nodes as they are (meshio reorders none); another block is a
// WriteError naming it (meshio: a KeyError). No faces (13) are written, as meshio writes none.
// Points must have 2 or 3 coordinates (meshio's rule); data and regions are noted.
// Fluent's own layout (format "fluent"), which Fluent reads (it reads no file without faces):
//   (1 "meshdock")  (2 dim)  (10 (0 1 n 0 dim))  (12 (0 1 cells 0))  (13 (0 1 faces 0))
//   the nodes as above (zone 1)
//   (12 (zone first last 1 type))                  a bodiless cell zone a region of volume
//                                                  cells or a volume block (AnsysWriter::zones;
//                                                  several types: a mixed zone listing them)
//   (13 (zone first last bc type)( rows ))         a face zone: interior (bc 2), a boundary
//   (2013 ...)( int32 rows )End of Binary Section  zone a region (or lower block) that names
//                                                  faces, the rest of the boundary (wall,
//                                                  bc 3); type 0 (mixed: each row its node
//                                                  count first) where node counts differ
//   (45 (zone kind name)())                        the zones' names
// Rows "n0 .. c0 c1", 1-based (fluent_faces.hpp: each face once, turned into c0); binary ids
// are int32 (2013) while they fit, else int64 (3013). Volume blocks: tetra, pyramid, wedge,
// hexahedron with 3-D points, triangle and quad with 2-D points; another block of their
// dimension is a WriteError naming it, lower ones are faces (a zone) or noted.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/fluent_faces.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Type {
  const char* name;
  int nodes;
  std::uint64_t fluent;
};
constexpr Type kTypes[] = {{"triangle", 3, 1},   {"tetra", 4, 2},   {"quad", 4, 3},
                           {"hexahedron", 8, 4}, {"pyramid", 5, 5}, {"wedge", 6, 6}};

class AnsysWriter : wr::WriterState {
 public:
  AnsysWriter(const Mesh& m, const OutTarget& target, bool binary, bool fluent_layout)
      : WriterState(m, target, binary), fluent_(fluent_layout) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    const auto dim = m_.points.dim(1);
    if (dim != 2 && dim != 3)
      throw WriteError(path_ + ": ANSYS Fluent holds 2-D or 3-D points; these have " +
                       std::to_string(dim) + " coordinates");
    if (fluent_) {
      const auto volume = volume_blocks(dim);
      const auto lower = lower_blocks(dim);
      zones(volume, lower);
      faces_ = fluent::faces_of(m_, volume, number_, lower, lower_zone_, boundary_names_, path_);
      for (auto& n : faces_.notes) notes_.push_back(path_ + ": " + n);
      wr::note_dropped(m_, "ANSYS Fluent", notes_, wr::kAll, {{wr::kRegions, zone_regions_}});
    } else {
      for (std::size_t b = 0; b < m_.cells.size(); ++b) type_.push_back(type_of(b));
      wr::note_dropped(m_, "ANSYS Fluent", notes_);
    }
    OutFile out(target_);
    wr::Sink s(out);
    if (fluent_)
      fluent_body(s, dim);
    else
      body(s, dim);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  bool fluent_;
  std::vector<const Type*> type_;
  fluent::FaceSet faces_;
  // Fluent's layout: the cell zones (name, cells, each cell's type in file order), each volume
  // cell's number in the file (flat over the volume blocks), each lower cell's boundary zone,
  // the boundary zones' names, the regions that name zones.
  struct CellZone {
    std::string name;
    std::vector<std::uint64_t> types;  // by number
  };
  std::vector<CellZone> cell_zones_;
  std::vector<std::int64_t> number_;
  std::vector<std::int32_t> lower_zone_;
  std::vector<std::string> boundary_names_;
  std::vector<std::string_view> zone_regions_;

  // The zones, from the cell regions (a Gmsh mesh's physical groups, a Fluent file's zones read
  // back): a volume cell's zone is the first region holding it, else its block's ("fluid-<b>");
  // a lower cell's boundary zone the first region holding it, else its block's
  // ("boundary-<b>"). Cells are numbered zone by zone (a Fluent zone is a run of ids), in the
  // order the zones first appear.
  void zones(const std::vector<std::size_t>& volume, const std::vector<std::size_t>& lower) {
    const auto blocks = m_.cells.size();
    std::vector<std::int64_t> start(blocks + 1, 0);  // each block's first global cell number
    for (std::size_t b = 0; b < blocks; ++b) start[b + 1] = start[b] + m_.cells[b].size();
    // Each block's first cell in the flat volume / lower lists, -1: neither.
    std::vector<std::int64_t> vflat(blocks, -1), lflat(blocks, -1);
    std::int64_t nv = 0, nl = 0;
    for (auto b : volume) vflat[b] = std::exchange(nv, nv + m_.cells[b].size());
    for (auto b : lower) lflat[b] = std::exchange(nl, nl + m_.cells[b].size());
    std::vector<std::int32_t> vkey(static_cast<std::size_t>(nv), -1);
    lower_zone_.assign(static_cast<std::size_t>(nl), -1);
    const auto regions = static_cast<std::int32_t>(m_.regions.size());
    std::vector<bool> used(m_.regions.size(), false);
    for (std::int32_t r = 0; r < regions; ++r) {
      const auto& reg = m_.regions[static_cast<std::size_t>(r)];
      if (reg.kind != RegionKind::kCell) continue;
      const auto* e = reg.entries.as<std::int64_t>();
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(reg.entries.size()); ++k) {
        if (e[k] < 0 || e[k] >= start.back()) continue;
        const auto b = static_cast<std::size_t>(std::upper_bound(start.begin(), start.end(), e[k]) -
                                                start.begin() - 1);
        std::int32_t* key =
            vflat[b] >= 0   ? &vkey[static_cast<std::size_t>(vflat[b] + e[k] - start[b])]
            : lflat[b] >= 0 ? &lower_zone_[static_cast<std::size_t>(lflat[b] + e[k] - start[b])]
                            : nullptr;  // a cell of neither: nothing to name
        if (key && *key < 0) {
          *key = r;
          used[static_cast<std::size_t>(r)] = true;
        }
      }
    }
    for (std::int32_t r = 0; r < regions; ++r)
      if (used[static_cast<std::size_t>(r)])
        zone_regions_.push_back(m_.regions[static_cast<std::size_t>(r)].name);
    // Volume zones, numbering: keys region r, or regions + k for volume block k.
    std::map<std::int64_t, std::size_t> zone_of;
    std::vector<std::size_t> zone_cell(static_cast<std::size_t>(nv));
    for (std::size_t k = 0, f = 0; k < volume.size(); ++k)
      for (std::int64_t i = 0; i < m_.cells[volume[k]].size(); ++i, ++f) {
        const std::int64_t key = vkey[f] >= 0 ? vkey[f] : regions + static_cast<std::int64_t>(k);
        auto [it, added] = zone_of.try_emplace(key, cell_zones_.size());
        if (added)
          cell_zones_.push_back({key < regions ? m_.regions[static_cast<std::size_t>(key)].name
                                               : "fluid-" + std::to_string(volume[k]),
                                 {}});
        zone_cell[f] = it->second;
        cell_zones_[it->second].types.push_back(type_[k]->fluent);
      }
    std::vector<std::int64_t> next(cell_zones_.size() + 1, 1);
    for (std::size_t z = 0; z < cell_zones_.size(); ++z)
      next[z + 1] = next[z] + static_cast<std::int64_t>(cell_zones_[z].types.size());
    number_.resize(static_cast<std::size_t>(nv));
    for (std::size_t f = 0; f < number_.size(); ++f) number_[f] = next[zone_cell[f]]++;
    // Boundary zones: keys region r, or regions + k for lower block k; then indices.
    zone_of.clear();
    for (std::size_t k = 0, f = 0; k < lower.size(); ++k)
      for (std::int64_t i = 0; i < m_.cells[lower[k]].size(); ++i, ++f) {
        const std::int64_t key =
            lower_zone_[f] >= 0 ? lower_zone_[f] : regions + static_cast<std::int64_t>(k);
        auto [it, added] = zone_of.try_emplace(key, boundary_names_.size());
        if (added)
          boundary_names_.push_back(key < regions ? m_.regions[static_cast<std::size_t>(key)].name
                                                  : "boundary-" + std::to_string(lower[k]));
        lower_zone_[f] = static_cast<std::int32_t>(it->second);
      }
  }

  // Fluent's layout: the blocks whose cells make the faces (the points' dimension's types).
  std::vector<std::size_t> volume_blocks(std::int64_t dim) {
    std::vector<std::size_t> v;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      if (cell_dim(blk.type) != dim) continue;
      const Type* t = nullptr;
      if (!blk.ragged() && !blk.face_offsets.valid())
        for (const auto& k : kTypes)
          if (blk.type == k.name && blk.connectivity.dim(1) == k.nodes) t = &k;
      if (!t)
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written: Fluent's faces are made of " +
                         (dim == 3 ? "tetra, pyramid, wedge and hexahedron" : "triangle and quad") +
                         " cells with " + std::to_string(dim) + "-D points");
      type_.push_back(t);
      v.push_back(b);
    }
    if (v.empty())
      throw WriteError(
          path_ + ": no cells of the points' dimension (" + std::to_string(dim) +
          "-D: " + (dim == 3 ? "tetra, pyramid, wedge, hexahedron" : "triangle, quad") +
          "): Fluent's layout is the faces of volume cells");
    return v;
  }

  // The lower blocks that can name boundary faces; the others are noted.
  std::vector<std::size_t> lower_blocks(std::int64_t dim) {
    std::vector<std::size_t> v;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      if (cell_dim(blk.type) == dim) continue;
      const bool face =
          !blk.ragged() && !blk.face_offsets.valid() &&
          (dim == 3 ? blk.type == "triangle" || blk.type == "quad" : blk.type == "line") &&
          blk.connectivity.dim(1) == (blk.type == "quad" ? 4 : dim);
      if (face)
        v.push_back(b);
      else
        notes_.push_back(path_ + ": " + wr::block_name(m_, b) +
                         " is not written (Fluent's layout holds the volume cells and their "
                         "faces)");
    }
    return v;
  }

  void fluent_body(wr::Sink& s, std::int64_t dim) {
    const auto n = static_cast<std::uint64_t>(m_.num_points());
    std::uint64_t cells = 0, faces = 0;
    for (auto b : faces_.volume) cells += static_cast<std::uint64_t>(m_.cells[b].size());
    for (const auto& z : faces_.zones) faces += static_cast<std::uint64_t>(z.faces);
    s.put(dim == 2 ? "(1 \"meshdock\")\n(2 2)\n(10 (0 1 " : "(1 \"meshdock\")\n(2 3)\n(10 (0 1 ");
    hex(s, n);
    s.put(dim == 2 ? " 0 2))\n(12 (0 1 " : " 0 3))\n(12 (0 1 ");
    hex(s, cells);
    s.put(" 0))\n(13 (0 1 ");
    hex(s, faces);
    s.put(" 0))\n");
    nodes(s, dim);
    // Zone ids: the nodes 1, the cell zones 2.., the face zones after them.
    std::uint64_t zone = 2, first = 1;
    std::string names;
    for (const auto& z : cell_zones_) {
      // One type: a bodiless zone of it; several: a mixed zone listing each cell's type.
      const auto count = static_cast<std::uint64_t>(z.types.size());
      const bool mixed =
          std::any_of(z.types.begin(), z.types.end(), [&](auto t) { return t != z.types[0]; });
      if (!mixed) {
        head(s, "(12 (", {zone, first, first + count - 1, 1, z.types[0]});
        s.put(")\n");
      } else if (binary_) {
        head(s, "(2012 (", {zone, first, first + count - 1, 1, 0});
        s.put('(');
        s.run<std::int32_t>(z.types.size(), [&](std::int32_t* out, std::size_t at, std::size_t k) {
          for (std::size_t i = 0; i < k; ++i) out[i] = static_cast<std::int32_t>(z.types[at + i]);
        });
        s.put(")End of Binary Section 2012)\n");
      } else {
        head(s, "(12 (", {zone, first, first + count - 1, 1, 0});
        s.put("(\n");
        for (std::size_t i = 0; i < z.types.size(); ++i) {
          s.put(i % 32 == 31 ? '\n' : ' ');
          hex(s, z.types[i]);
          s.maybe_flush();
        }
        s.put("\n))\n");
      }
      names += zone_name(zone, "fluid", z.name);
      first += count;
      ++zone;
    }
    std::int64_t largest = 0;
    for (const auto& z : faces_.zones)
      for (auto v : z.rows) largest = std::max(largest, v + 1);
    const bool int32 = largest <= INT32_MAX;
    first = 1;
    for (const auto& z : faces_.zones) {
      const auto count = static_cast<std::uint64_t>(z.faces);
      head(s, binary_ ? (int32 ? "(2013 (" : "(3013 (") : "(13 (",
           {zone, first, first + count - 1, static_cast<std::uint64_t>(z.bc),
            static_cast<std::uint64_t>(z.nodes)});
      s.put("(\n");
      // Each row: its node count (kept in a mixed zone only), nodes 1-based, c0, c1.
      const auto& r = z.rows;
      std::vector<std::int64_t> row;
      for (std::size_t at = 0; at < r.size();) {
        const auto k = static_cast<std::size_t>(r[at]);
        row.clear();
        if (z.nodes == 0) row.push_back(r[at]);
        for (std::size_t j = 1; j <= k; ++j) row.push_back(r[at + j] + 1);
        row.push_back(r[at + k + 1]);
        row.push_back(r[at + k + 2]);
        at += k + 3;
        if (binary_) {
          for (auto v : row) int32 ? s.le(static_cast<std::int32_t>(v)) : s.le(v);
          s.maybe_flush();
        } else {
          for (std::size_t j = 0; j < row.size(); ++j) {
            if (j) s.put(' ');
            hex(s, static_cast<std::uint64_t>(row[j]));
          }
          s.put('\n');
          s.maybe_flush();
        }
      }
      s.put(binary_
                ? (int32 ? "\n)End of Binary Section 2013)\n" : "\n)End of Binary Section 3013)\n")
                : "))\n");
      names += zone_name(zone, z.bc == 2 ? "interior" : "wall", z.name);
      first += count;
      ++zone;
    }
    s.put(names);
  }

  static std::string zone_name(std::uint64_t zone, const char* kind, const std::string& name) {
    char buf[20];
    const auto r = std::to_chars(buf, buf + sizeof buf, zone, 16);
    return "(45 (" + std::string(buf, r.ptr) + " " + kind + " " + name + ")())\n";
  }

  const Type* type_of(std::size_t b) const {
    const auto& blk = m_.cells[b];
    if (!blk.ragged() && !blk.face_offsets.valid())
      for (const auto& t : kTypes)
        if (blk.type == t.name && blk.connectivity.dim(1) == t.nodes) return &t;
    throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                     " cannot be written: ANSYS Fluent (as meshio writes it) holds triangle, "
                     "tetra, quad, hexahedron, pyramid and wedge cells only");
  }

  // A section's header: `open`, then the numbers (hexadecimal) apart, then ')'.
  static void head(wr::Sink& s, const char* open, std::initializer_list<std::uint64_t> v) {
    s.put(open);
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it != v.begin()) s.put(' ');
      hex(s, *it);
    }
    s.put(')');
  }

  static void hex(wr::Sink& s, std::uint64_t v) {
    char buf[20];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
    s.str().append(buf, r.ptr);
  }

  void body(wr::Sink& s, std::int64_t dim) {
    const auto n = static_cast<std::uint64_t>(m_.num_points());
    std::uint64_t total = 0;
    for (const auto& b : m_.cells) total += static_cast<std::uint64_t>(b.size());
    // dim is 2 or 3 (write() checked): a literal (GCC 12's -Wrestrict misfires at -O3 on the
    // number appended here).
    s.put(dim == 2 ? "(1 \"meshdock\")\n(2 2)\n(10 (0 1 " : "(1 \"meshdock\")\n(2 3)\n(10 (0 1 ");
    hex(s, n);
    s.put(" 0))\n(12 (0 1 ");
    hex(s, total);
    s.put(" 0))\n");
    nodes(s, dim);
    cell_bodies(s);
  }

  // The nodes, zone 1: (3010 ...) float64 rows, or (10 ...) shortest round-trip reals.
  void nodes(wr::Sink& s, std::int64_t dim) {
    const auto n = static_cast<std::uint64_t>(m_.num_points());
    s.put(binary_ ? "(3010 (1 1 " : "(10 (1 1 ");
    hex(s, n);
    s.put(" 1 ");
    hex(s, static_cast<std::uint64_t>(dim));
    s.put(")(\n");
    const auto values = n * static_cast<std::uint64_t>(dim);
    if (binary_) {
      if (m_.points.dtype() == kFloat64)  // the common case: the points' bytes as they are
        s.le_run(m_.points.as<double>(), values);
      else
        s.run<double>(values, [&](double* out, std::size_t at, std::size_t k) {
          for (std::size_t i = 0; i < k; ++i) out[i] = value_at(m_.points, at + i);
        });
      s.put("\n)End of Binary Section 3010)\n");
    } else {
      for (std::uint64_t i = 0; i < n; ++i) {
        for (std::int64_t k = 0; k < dim; ++k) {
          if (k) s.put(' ');
          s.text(wr::coord(m_, static_cast<std::int64_t>(i), static_cast<int>(k)));
        }
        s.put('\n');
        s.maybe_flush();
      }
      s.put("))\n");
    }
  }

  // meshio's layout: a (3012 / 12) section of each block's cells.
  void cell_bodies(wr::Sink& s) {
    std::uint64_t first = 1;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      const auto cells = static_cast<std::uint64_t>(blk.size());
      const auto* c = blk.connectivity.as<std::int64_t>();
      const auto w = static_cast<std::size_t>(type_[b]->nodes);
      head(s, binary_ ? "(3012 (" : "(12 (", {1, first, first + cells - 1, 1, type_[b]->fluent});
      s.put("(\n");
      if (binary_) {
        wr::cell_ids<std::int64_t>(s, blk, {}, 1, false);
        s.put("\n)End of Binary Section 3012)\n");
      } else {
        for (std::uint64_t i = 0; i < cells; ++i) {
          for (std::size_t j = 0; j < w; ++j) {
            if (j) s.put(' ');
            hex(s, static_cast<std::uint64_t>(c[i * w + j] + 1));
          }
          s.put('\n');
          s.maybe_flush();
        }
        s.put("))\n");
      }
      first += cells;
    }
  }
};

}  // namespace

std::vector<std::string> write_ansys(const Mesh& m, const OutTarget& target, bool binary,
                                     bool fluent_layout) {
  return AnsysWriter(m, target, binary, fluent_layout).write();
}

}  // namespace meshdock::mesh
