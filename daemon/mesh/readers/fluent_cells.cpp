// See fluent_cells.hpp.
#include "daemon/mesh/readers/fluent_cells.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <iterator>
#include <map>
#include <numeric>
#include <span>

namespace meshdock::mesh::fluent {

namespace {

struct Shape {
  const char* name;
  int nodes;
  int faces;
};
// Fluent's element types 1..7 (7: any number of faces and nodes).
constexpr Shape kShapes[8] = {{nullptr, 0, 0}, {"triangle", 3, 3},   {"tetra", 4, 4},
                              {"quad", 4, 4},  {"hexahedron", 8, 6}, {"pyramid", 5, 5},
                              {"wedge", 6, 5}, {"polyhedron", 0, 0}};

// A ragged polyhedron block as it grows (CellBlock's layout: conn, face_offsets, offsets).
struct Polyhedra {
  std::vector<std::int64_t> conn, face_off{0}, cell_off{0};
  CellBlock block() const {
    return CellBlock::polyhedra(Array::from_vector(conn), Array::from_vector(face_off),
                                Array::from_vector(cell_off));
  }
};

struct Face {
  const std::int64_t* n;
  int k;
  bool has(std::int64_t v) const { return std::find(n, n + k, v) != n + k; }
};

using Vec = std::array<double, 3>;
Vec sub(const Vec& a, const Vec& b) {
  return {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
}
Vec cross(const Vec& a, const Vec& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
double dot(const Vec& a, const Vec& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// Builds one cell's nodes from its faces; every check a malformed file can fail is here.
class CellMaker {
 public:
  explicit CellMaker(const Array& points)
      : xyz_(points.as<double>()), nd_(static_cast<int>(points.dim(1))) {}

  // A polyhedron's faces appended to `out`, each turned out of the cell: Fluent's right-hand
  // normal points into c0, so a face is reversed where the cell is its c0 (`c0[i]`). Checked
  // closed (every directed edge met once, and once the other way) and, by its volume, turned
  // out (all faces turned again where the file's turn is the other). Empty on success.
  std::string polyhedron(std::span<const Face> f, const std::vector<bool>& c0,
                         Polyhedra& out) const {
    if (f.size() < 4) return "has " + std::to_string(f.size()) + " faces, not 4 at least";
    const std::size_t first = out.face_off.size() - 1;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (f[i].k < 3) return "has a face of " + std::to_string(f[i].k) + " nodes";
      const auto at = out.conn.size();
      out.conn.insert(out.conn.end(), f[i].n, f[i].n + f[i].k);
      if (c0[i]) std::reverse(out.conn.begin() + static_cast<std::ptrdiff_t>(at), out.conn.end());
      out.face_off.push_back(static_cast<std::int64_t>(out.conn.size()));
    }
    edges_.clear();
    for (std::size_t g = first; g + 1 < out.face_off.size(); ++g) {
      const auto b = out.face_off[g], e = out.face_off[g + 1];
      for (auto k = b; k < e; ++k)
        edges_.push_back({out.conn[static_cast<std::size_t>(k)],
                          out.conn[static_cast<std::size_t>(k + 1 < e ? k + 1 : b)]});
    }
    std::sort(edges_.begin(), edges_.end());
    for (std::size_t k = 0; k < edges_.size(); ++k) {
      const auto [u, v] = edges_[k];
      if ((k + 1 < edges_.size() && edges_[k + 1] == edges_[k]) ||
          !std::binary_search(edges_.begin(), edges_.end(), std::pair{v, u}))
        return "has faces that do not close (edge " + std::to_string(u) + "-" + std::to_string(v) +
               ")";
    }
    double volume = 0;
    const Vec p0 = p(out.conn[static_cast<std::size_t>(out.face_off[first])]);
    for (std::size_t g = first; g + 1 < out.face_off.size(); ++g) {
      const auto* n = out.conn.data() + out.face_off[g];
      const auto k = out.face_off[g + 1] - out.face_off[g];
      for (std::int64_t j = 1; j + 1 < k; ++j)
        volume += dot(sub(p(n[0]), p0), cross(sub(p(n[j]), p0), sub(p(n[j + 1]), p0)));
    }
    if (volume < 0)
      for (std::size_t g = first; g + 1 < out.face_off.size(); ++g)
        std::reverse(out.conn.begin() + out.face_off[g], out.conn.begin() + out.face_off[g + 1]);
    out.cell_off.push_back(static_cast<std::int64_t>(out.face_off.size()) - 1);
    return {};
  }

  // Empty on success (out holds the cell's nodes in VTK's order), else why not.
  std::string make(int type, std::span<const Face> f, std::int64_t* out) const {
    const Shape& s = kShapes[type];
    if (static_cast<int>(f.size()) != s.faces)
      return "has " + std::to_string(f.size()) + " faces, not " + std::to_string(s.faces);
    bool ok = false;
    switch (type) {
      case 1:
      case 3:
        ok = polygon(f, s.nodes, out);
        break;
      case 2:
        ok = tetra(f, out);
        break;
      case 5:
        ok = pyramid(f, out);
        break;
      case 4:
      case 6:
        ok = prism(f, type == 4 ? 4 : 3, out);
        break;
      default:
        break;
    }
    if (ok) ok = distinct(out, s.nodes) && covered(f, out, s.nodes);
    if (!ok) return std::string("has faces that do not make a ") + s.name;
    orient(type, out);
    return {};
  }

 private:
  const double* xyz_;
  int nd_;
  mutable std::vector<std::pair<std::int64_t, std::int64_t>> edges_;  // scratch

  Vec p(std::int64_t i) const {
    Vec v{0, 0, 0};
    for (int d = 0; d < std::min(nd_, 3); ++d) v[d] = xyz_[i * nd_ + d];
    return v;
  }

  static bool distinct(const std::int64_t* n, int k) {
    for (int i = 0; i < k; ++i)
      for (int j = i + 1; j < k; ++j)
        if (n[i] == n[j]) return false;
    return true;
  }
  // Every face's nodes are the cell's.
  static bool covered(std::span<const Face> f, const std::int64_t* n, int k) {
    for (const auto& face : f)
      for (int i = 0; i < face.k; ++i)
        if (std::find(n, n + k, face.n[i]) == n + k) return false;
    return true;
  }

  // A 2-D cell from its k edges: the edges chained from the first.
  static bool polygon(std::span<const Face> f, int k, std::int64_t* out) {
    for (const auto& e : f)
      if (e.k != 2) return false;
    std::array<bool, 4> used{};
    out[0] = f[0].n[0];
    out[1] = f[0].n[1];
    used[0] = true;
    for (int i = 2; i <= k; ++i) {
      int next = -1;
      for (int e = 0; e < k && next < 0; ++e)
        if (!used[e] && f[e].has(out[i - 1])) next = e;
      if (next < 0) return false;
      used[next] = true;
      const std::int64_t other = f[next].n[0] == out[i - 1] ? f[next].n[1] : f[next].n[0];
      if (i == k) return other == out[0];  // the last edge closes the loop
      out[i] = other;
    }
    return false;
  }

  static bool tetra(std::span<const Face> f, std::int64_t* out) {
    for (const auto& t : f)
      if (t.k != 3) return false;
    std::copy(f[0].n, f[0].n + 3, out);
    for (int i = 0; i < 3; ++i)
      if (!f[0].has(f[1].n[i])) {
        out[3] = f[1].n[i];
        return true;
      }
    return false;
  }

  static bool pyramid(std::span<const Face> f, std::int64_t* out) {
    int quads = 0;
    const Face* base = nullptr;
    const Face* side = nullptr;
    for (const auto& g : f) {
      if (g.k == 4) {
        ++quads;
        base = &g;
      } else if (g.k == 3) {
        side = &g;
      } else {
        return false;
      }
    }
    if (quads != 1 || !side) return false;
    std::copy(base->n, base->n + 4, out);
    for (int i = 0; i < 3; ++i)
      if (!base->has(side->n[i])) {
        out[4] = side->n[i];
        return true;
      }
    return false;
  }

  // A hexahedron (k 4) or wedge (k 3): a k-gon base, the k-gon top, and k quads joining them;
  // each base node's partner on the top is the node a side quad puts next to it.
  static bool prism(std::span<const Face> f, int k, std::int64_t* out) {
    const Face* base = nullptr;
    const Face* top = nullptr;
    if (k == 3) {
      for (const auto& g : f) {
        if (g.k == 3) (base ? top : base) = &g;
        if (g.k != 3 && g.k != 4) return false;
      }
    } else {
      for (const auto& g : f)
        if (g.k != 4) return false;
      base = &f[0];
      for (const auto& g : f.subspan(1))
        if (std::none_of(g.n, g.n + 4, [&](std::int64_t v) { return base->has(v); })) top = &g;
    }
    if (!base || !top) return false;
    std::copy(base->n, base->n + k, out);
    std::array<std::int64_t, 4> partner{-1, -1, -1, -1};
    for (const auto& g : f) {
      if (&g == base || &g == top) continue;
      if (g.k != 4) return false;
      for (int i = 0; i < 4; ++i) {
        const std::int64_t u = g.n[i], v = g.n[(i + 1) % 4];
        for (const auto& [a, b] : {std::pair{u, v}, std::pair{v, u}}) {
          const auto* at = std::find(base->n, base->n + k, a);
          if (at == base->n + k || !top->has(b)) continue;
          auto& mate = partner[static_cast<std::size_t>(at - base->n)];
          if (mate >= 0 && mate != b) return false;
          mate = b;
        }
      }
    }
    for (int i = 0; i < k; ++i) {
      if (partner[static_cast<std::size_t>(i)] < 0) return false;
      out[k + i] = partner[static_cast<std::size_t>(i)];
    }
    return true;
  }

  // VTK's orientation, by the points: flips the base (and the top with it) where it runs the
  // wrong way. A degenerate cell (no volume, no area) keeps its faces' order.
  void orient(int type, std::int64_t* n) const {
    if (type == 1 || type == 3) {
      const int k = kShapes[type].nodes;
      double area = 0;
      for (int i = 0; i < k; ++i) {
        const Vec a = p(n[i]), b = p(n[(i + 1) % k]);
        area += a[0] * b[1] - a[1] * b[0];
      }
      if (area < 0) std::reverse(n + 1, n + k);
      return;
    }
    const Vec p0 = p(n[0]);
    if (type == 2) {
      if (dot(cross(sub(p(n[1]), p0), sub(p(n[2]), p0)), sub(p(n[3]), p0)) < 0)
        std::swap(n[1], n[2]);
    } else if (type == 5) {
      if (dot(cross(sub(p(n[2]), p0), sub(p(n[3]), p(n[1]))), sub(p(n[4]), p0)) < 0)
        std::swap(n[1], n[3]);
    } else if (type == 4) {
      if (dot(cross(sub(p(n[2]), p0), sub(p(n[3]), p(n[1]))), sub(p(n[4]), p0)) < 0) {
        std::swap(n[1], n[3]);
        std::swap(n[5], n[7]);
      }
    } else if (type == 6) {
      // The base's normal points to the top, as VTK's FLUENT reader builds wedges, as Gmsh's
      // prisms (which meshio and meshdock take as they are) run, and as the wedge's own
      // isoparametric map has a positive Jacobian (only vtkCellSizeFilter counts it negative).
      if (dot(cross(sub(p(n[1]), p0), sub(p(n[2]), p0)), sub(p(n[3]), p0)) < 0) {
        std::swap(n[1], n[2]);
        std::swap(n[4], n[5]);
      }
    }
  }
};

std::string zone_name(const CellZone& z) {
  return "cell zone " + std::to_string(z.zone) + " (line " + std::to_string(z.line) + ")";
}

// A Fluent id as the file writes it (hexadecimal).
std::string hex_id(std::int64_t id) {
  char buf[16];
  const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<std::uint64_t>(id), 16);
  return {buf, r.ptr};
}

}  // namespace

BuiltCells cells_from_faces(const Array& points, const std::vector<FaceRows>& faces,
                            const std::vector<CellZone>& zones) {
  BuiltCells out;
  // A note a zone left unbuilt, the first kMaxNotes of them (a hostile file may declare a
  // million zones), then a count.
  constexpr std::size_t kMaxNotes = 16;
  std::size_t unnoted = 0;
  auto refuse = [&](const CellZone& zone, const std::string& why) {
    if (out.notes.size() < kMaxNotes)
      out.notes.push_back(zone_name(zone) + "'s cells are not built from the faces: " + why);
    else
      ++unnoted;
  };
  // The face sides that name a cell: each built cell needs three at least, which bounds what
  // the zones may claim before anything is allocated per cell.
  std::vector<std::int64_t> face_start{0};
  std::int64_t sides = 0;
  for (const auto& f : faces) {
    face_start.push_back(face_start.back() + f.rows);
    for (std::int64_t r = 0; r < 2 * f.rows; ++r) sides += f.cells[r] != 0;
  }

  // The zones kept: in range, not overlapping one kept before, within the faces' bound.
  std::vector<std::size_t> kept;
  std::map<std::int64_t, std::size_t> kept_by_first;
  std::int64_t claimed = 0;
  for (std::size_t z = 0; z < zones.size(); ++z) {
    const auto& zone = zones[z];
    const std::int64_t n = zone.last - zone.first + 1;
    std::string why;
    if (zone.first < 1 || n < 1)
      why = "its ids " + hex_id(zone.first) + ".." + hex_id(zone.last) + " are no cells";
    if (why.empty()) {
      // The kept zones are disjoint: only the last one starting at or before this one's end
      // can overlap it.
      const auto it = kept_by_first.upper_bound(zone.last);
      if (it != kept_by_first.begin() && zones[std::prev(it)->second].last >= zone.first)
        why = "its ids overlap " + zone_name(zones[std::prev(it)->second]) + "'s";
    }
    if (why.empty() && n > (sides / 3) - claimed)
      why = "it claims " + std::to_string(n) + " cells, more than the " + std::to_string(sides) +
            " face sides naming a cell can bound";
    if (!why.empty()) {
      refuse(zone, why);
      continue;
    }
    claimed += n;
    kept.push_back(z);
    kept_by_first[zone.first] = z;
  }
  auto done = [&] {
    if (unnoted)
      out.notes.push_back(std::to_string(unnoted) +
                          " more cell zones are not built from the faces");
    return std::move(out);
  };
  if (kept.empty()) return done();

  // A cell id -> its row among the kept zones' cells (zones by first id, binary search).
  std::vector<std::size_t> by_first = kept;
  std::sort(by_first.begin(), by_first.end(),
            [&](auto a, auto b) { return zones[a].first < zones[b].first; });
  std::vector<std::int64_t> base(zones.size(), 0);
  std::int64_t cells = 0;
  for (auto z : by_first) {
    base[z] = cells;
    cells += zones[z].last - zones[z].first + 1;
  }
  auto row_of = [&](std::int64_t id) -> std::int64_t {
    auto it = std::upper_bound(by_first.begin(), by_first.end(), id,
                               [&](std::int64_t v, std::size_t z) { return v < zones[z].first; });
    if (it == by_first.begin()) return -1;
    const auto& z = zones[*std::prev(it)];
    return id <= z.last ? base[*std::prev(it)] + (id - z.first) : -1;
  };

  // Each cell's faces, as 2 x global face number + side (0: the cell is the face's c0; CSR:
  // two passes over the sides).
  std::vector<std::int64_t> start(static_cast<std::size_t>(cells) + 1, 0);
  auto each_side = [&](auto&& fn) {
    for (std::size_t s = 0; s < faces.size(); ++s)
      for (std::int64_t r = 0; r < faces[s].rows; ++r)
        for (int side = 0; side < 2; ++side) {
          const std::int64_t id = faces[s].cells[2 * r + side];
          if (id == 0) continue;
          const std::int64_t row = row_of(id);
          if (row >= 0) fn(row, 2 * (face_start[s] + r) + side);
        }
  };
  each_side([&](std::int64_t row, std::int64_t) { ++start[static_cast<std::size_t>(row) + 1]; });
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::int64_t> of(static_cast<std::size_t>(start.back()));
  {
    std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
    each_side([&](std::int64_t row, std::int64_t g) {
      of[static_cast<std::size_t>(fill[static_cast<std::size_t>(row)]++)] = g;
    });
  }
  auto face = [&](std::int64_t g) {
    const auto s = static_cast<std::size_t>(
        std::upper_bound(face_start.begin(), face_start.end(), g) - face_start.begin() - 1);
    const auto r = g - face_start[s];
    return Face{faces[s].nodes + r * faces[s].per, faces[s].per};
  };

  const CellMaker maker(points);
  std::vector<Face> cell_faces;
  std::vector<bool> cell_c0;
  for (auto z : kept) {
    const auto& zone = zones[z];
    const std::int64_t n = zone.last - zone.first + 1;
    auto type_of = [&](std::int64_t i) {
      return zone.types.empty() ? zone.type : static_cast<int>(zone.types[i]);
    };
    // The zone's blocks: one a type, in the order the types first appear.
    std::array<std::int64_t, 8> count{};
    for (std::int64_t i = 0; i < n; ++i) ++count[static_cast<std::size_t>(type_of(i))];
    std::array<std::int64_t, 8> block{-1, -1, -1, -1, -1, -1, -1, -1};
    std::array<std::int64_t, 8> filled{};
    std::vector<CellBlock> built;
    Polyhedra poly;
    for (std::int64_t i = 0; i < n; ++i) {
      const int t = type_of(i);
      if (t < 1 || t > 7 || block[static_cast<std::size_t>(t)] >= 0) continue;
      block[static_cast<std::size_t>(t)] = static_cast<std::int64_t>(built.size());
      built.push_back(
          t == 7 ? CellBlock{}
                 : CellBlock::fixed(kShapes[t].name,
                                    Array::of<std::int64_t>(
                                        {count[static_cast<std::size_t>(t)], kShapes[t].nodes})));
    }
    std::string why;
    for (std::int64_t i = 0; i < n && why.empty(); ++i) {
      const int t = type_of(i);
      if (t < 1 || t > 7) continue;
      const auto row = static_cast<std::size_t>(base[z] + i);
      cell_faces.clear();
      cell_c0.clear();
      for (auto k = start[row]; k < start[row + 1]; ++k) {
        cell_faces.push_back(face(of[static_cast<std::size_t>(k)] >> 1));
        cell_c0.push_back((of[static_cast<std::size_t>(k)] & 1) == 0);
      }
      if (t == 7) {
        why = maker.polyhedron(cell_faces, cell_c0, poly);
      } else {
        auto& b = built[static_cast<std::size_t>(block[static_cast<std::size_t>(t)])];
        auto& at = filled[static_cast<std::size_t>(t)];
        why = maker.make(t, cell_faces, b.connectivity.as<std::int64_t>() + at * kShapes[t].nodes);
        ++at;
      }
      if (!why.empty())
        why = "cell " + hex_id(zone.first + i) + " (a " + kShapes[t].name + ") " + why;
    }
    if (block[7] >= 0 && why.empty()) built[static_cast<std::size_t>(block[7])] = poly.block();
    if (!why.empty()) {
      refuse(zone, why);
      continue;
    }
    for (auto& b : built) {
      out.blocks.push_back(std::move(b));
      out.block_zone.push_back(zone.zone);
    }
  }
  return done();
}

}  // namespace meshdock::mesh::fluent
