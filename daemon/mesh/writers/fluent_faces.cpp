// See fluent_faces.hpp.
#include "daemon/mesh/writers/fluent_faces.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <string_view>

#include "daemon/mesh/error.hpp"

namespace meshdock::mesh::fluent {

namespace {

struct Local {
  int k;
  std::array<std::int8_t, 4> n;
};
struct Shape {
  std::string_view type;
  std::vector<Local> faces;  // each turned out of the cell (VTK's orientation)
};
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> kShapes{
      {"tetra", {{3, {0, 2, 1}}, {3, {0, 1, 3}}, {3, {1, 2, 3}}, {3, {0, 3, 2}}}},
      {"pyramid",
       {{4, {0, 3, 2, 1}}, {3, {0, 1, 4}}, {3, {1, 2, 4}}, {3, {2, 3, 4}}, {3, {3, 0, 4}}}},
      // The base 0 1 2 faces the top 3 4 5 (as VTK's FLUENT reader and Gmsh's prisms).
      {"wedge",
       {{3, {0, 2, 1}}, {3, {3, 4, 5}}, {4, {0, 1, 4, 3}}, {4, {1, 2, 5, 4}}, {4, {2, 0, 3, 5}}}},
      {"hexahedron",
       {{4, {0, 3, 2, 1}},
        {4, {4, 5, 6, 7}},
        {4, {0, 1, 5, 4}},
        {4, {1, 2, 6, 5}},
        {4, {2, 3, 7, 6}},
        {4, {3, 0, 4, 7}}}},
      {"triangle", {{2, {0, 1}}, {2, {1, 2}}, {2, {2, 0}}}},
      {"quad", {{2, {0, 1}}, {2, {1, 2}}, {2, {2, 3}}, {2, {3, 0}}}},
  };
  return kShapes;
}

const Shape& shape_of(const std::string& type) {
  for (const auto& s : shapes())
    if (s.type == type) return s;
  throw std::logic_error("fluent faces: no shape " + type);  // the writer checked the types
}

using Key = std::array<std::int64_t, 4>;  // a face's nodes sorted, padded with -1

}  // namespace

FaceSet faces_of(const Mesh& m, const std::vector<std::size_t>& volume,
                 const std::vector<std::int64_t>& number, const std::vector<std::size_t>& lower,
                 const std::vector<std::int32_t>& lower_zone, const std::vector<std::string>& names,
                 const std::string& path) {
  FaceSet out;
  out.volume = volume;
  // Every face of every cell: (cell, its block among `volume`, which face).
  struct Inst {
    std::int64_t row;
    std::uint32_t block;
    std::uint8_t face;
  };
  std::vector<const Shape*> shape;
  std::vector<std::int64_t> base{0};  // each volume block's first cell number
  std::size_t total = 0;
  for (auto b : volume) {
    shape.push_back(&shape_of(m.cells[b].type));
    total += static_cast<std::size_t>(m.cells[b].size()) * shape.back()->faces.size();
    base.push_back(base.back() + m.cells[b].size());
  }
  auto nodes_of = [&](const Inst& i, std::array<std::int64_t, 4>& n) {
    const auto& blk = m.cells[volume[i.block]];
    const auto w = blk.connectivity.dim(1);
    const auto* c = blk.connectivity.as<std::int64_t>() + i.row * w;
    const auto& f = shape[i.block]->faces[i.face];
    for (int j = 0; j < f.k; ++j)
      n[static_cast<std::size_t>(j)] = c[f.n[static_cast<std::size_t>(j)]];
    return f.k;
  };
  auto key_of = [](const std::array<std::int64_t, 4>& n, int k) {
    Key key{-1, -1, -1, -1};
    // An insertion sort of at most 4 (std::sort's 16-wide threshold trips GCC 12's
    // -Warray-bounds on a 4-array).
    for (int a = 0; a < k && a < 4; ++a) {
      key[static_cast<std::size_t>(a)] = n[static_cast<std::size_t>(a)];
      for (int b = a;
           b > 0 && key[static_cast<std::size_t>(b) - 1] > key[static_cast<std::size_t>(b)]; --b)
        std::swap(key[static_cast<std::size_t>(b) - 1], key[static_cast<std::size_t>(b)]);
    }
    return key;
  };
  std::vector<Inst> inst;
  inst.reserve(total);
  for (std::uint32_t vb = 0; vb < volume.size(); ++vb)
    for (std::int64_t r = 0; r < m.cells[volume[vb]].size(); ++r)
      for (std::size_t f = 0; f < shape[vb]->faces.size(); ++f)
        inst.push_back({r, vb, static_cast<std::uint8_t>(f)});

  // Bucketed by the face's smallest node (a counting sort), matched within a bucket: a
  // handful of faces each, so matching stays linear in the faces.
  const auto points = static_cast<std::size_t>(m.num_points());
  std::vector<std::int64_t> start(points + 1, 0);
  std::array<std::int64_t, 4> n{};
  auto smallest = [&](const Inst& i) {
    const int k = nodes_of(i, n);
    return static_cast<std::size_t>(*std::min_element(n.begin(), n.begin() + k));
  };
  // `partner` holds each face's smallest node until the faces are bucketed (one gather of the
  // nodes a face, not two), then its matched face.
  std::vector<std::int64_t> partner(inst.size());
  for (std::size_t i = 0; i < inst.size(); ++i) {
    partner[i] = static_cast<std::int64_t>(smallest(inst[i]));
    ++start[static_cast<std::size_t>(partner[i]) + 1];
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<std::int64_t> sorted(inst.size());
  {
    std::vector<std::int64_t> fill(start.begin(), start.end() - 1);
    for (std::size_t i = 0; i < inst.size(); ++i)
      sorted[static_cast<std::size_t>(fill[static_cast<std::size_t>(partner[i])]++)] =
          static_cast<std::int64_t>(i);
  }
  std::fill(partner.begin(), partner.end(), -1);
  std::vector<Key> keys;
  auto cell_number = [&](std::int64_t i) {  // in the file
    const auto& x = inst[static_cast<std::size_t>(i)];
    return number[static_cast<std::size_t>(base[x.block] + x.row)];
  };
  for (std::size_t p = 0; p < points; ++p) {
    const auto b = start[p], e = start[p + 1];
    keys.clear();
    for (auto s = b; s < e; ++s) {
      const int k =
          nodes_of(inst[static_cast<std::size_t>(sorted[static_cast<std::size_t>(s)])], n);
      keys.push_back(key_of(n, k));
    }
    for (auto s = b; s < e; ++s) {
      const auto i = sorted[static_cast<std::size_t>(s)];
      for (auto t = s + 1; t < e; ++t) {
        if (keys[static_cast<std::size_t>(t - b)] != keys[static_cast<std::size_t>(s - b)])
          continue;
        const auto j = sorted[static_cast<std::size_t>(t)];
        if (partner[static_cast<std::size_t>(i)] >= 0 ||
            partner[static_cast<std::size_t>(j)] >= 0) {
          const auto other = partner[static_cast<std::size_t>(i)] >= 0
                                 ? partner[static_cast<std::size_t>(i)]
                                 : partner[static_cast<std::size_t>(j)];
          std::array<std::int64_t, 3> c{cell_number(other), cell_number(i), cell_number(j)};
          std::sort(c.begin(), c.end());
          throw WriteError(path + ": cells " + std::to_string(c[0]) + ", " + std::to_string(c[1]) +
                           " and " + std::to_string(c[2]) +
                           " share a face: a Fluent face bounds two cells at most");
        }
        partner[static_cast<std::size_t>(i)] = j;
        partner[static_cast<std::size_t>(j)] = i;
      }
    }
  }

  // The lower blocks' cells: a boundary face each (the same key, in its smallest node's
  // bucket), which names the face's zone.
  std::vector<std::int32_t> zone_of(inst.size(), -1);  // index into `names`
  std::size_t flat = 0;                                // the lower cell's index in lower_zone
  for (std::size_t l = 0; l < lower.size(); ++l) {
    const auto& blk = m.cells[lower[l]];
    const auto w = blk.connectivity.dim(1);
    const auto* c = blk.connectivity.as<std::int64_t>();
    std::int64_t unmatched = 0;
    for (std::int64_t r = 0; r < blk.size(); ++r, ++flat) {
      std::copy(c + r * w, c + (r + 1) * w, n.begin());
      const auto key = key_of(n, static_cast<int>(w));
      const auto p = static_cast<std::size_t>(key[0]);
      bool found = false;
      for (auto s = start[p]; s < start[p + 1] && !found; ++s) {
        const auto i = static_cast<std::size_t>(sorted[static_cast<std::size_t>(s)]);
        // An interior face is named on the instance it is written from (its first cell's).
        if ((partner[i] >= 0 && static_cast<std::size_t>(partner[i]) < i) || zone_of[i] >= 0)
          continue;
        std::array<std::int64_t, 4> f{};
        const int k = nodes_of(inst[i], f);
        if (k != w || key_of(f, k) != key) continue;
        zone_of[i] = lower_zone[flat];
        found = true;
      }
      unmatched += !found;
    }
    if (unmatched)
      out.notes.push_back(std::to_string(unmatched) + " of the " + std::to_string(blk.size()) +
                          " " + blk.type + " cells of block " + std::to_string(lower[l]) +
                          " are no face of the volume cells: not written");
  }

  // The zones: the interior faces no lower cell names, the named interior zones (an internal
  // surface: bc 2), the named boundary zones (bc 3), the rest of the boundary. A name with both
  // interior and boundary faces gives its interior zone the suffix "-interior".
  const std::size_t named = names.size();
  std::vector<FaceZone> zones(2 * named + 2);
  zones[0].name = "interior";
  zones[0].bc = 2;
  for (std::size_t l = 0; l < named; ++l) {
    zones[1 + l].name = names[l];
    zones[1 + l].bc = 2;
    zones[1 + named + l].name = names[l];
    zones[1 + named + l].bc = 3;
  }
  zones.back().name = "wall";
  zones.back().bc = 3;
  auto zone_index = [&](std::size_t i) {
    const bool interior = partner[i] >= 0;
    if (zone_of[i] < 0) return interior ? std::size_t{0} : zones.size() - 1;
    return 1 + static_cast<std::size_t>(zone_of[i]) + (interior ? 0 : named);
  };
  for (auto& z : zones) z.nodes = -1;
  {  // Each zone's rows sized first: grown face by face, they were copied over and over.
    std::vector<std::size_t> values(zones.size(), 0);
    for (std::size_t i = 0; i < inst.size(); ++i) {
      const auto j = partner[i];
      if (j >= 0 && static_cast<std::size_t>(j) < i) continue;
      values[zone_index(i)] +=
          static_cast<std::size_t>(shape[inst[i].block]->faces[inst[i].face].k) + 3;
    }
    for (std::size_t z = 0; z < zones.size(); ++z) zones[z].rows.reserve(values[z]);
  }
  for (std::size_t i = 0; i < inst.size(); ++i) {
    const auto j = partner[i];
    if (j >= 0 && static_cast<std::size_t>(j) < i) continue;  // written from its first cell
    auto& z = zones[zone_index(i)];
    const int k = nodes_of(inst[i], n);
    z.nodes = z.nodes == -1 ? k : z.nodes == k ? k : 0;
    z.rows.push_back(k);
    // Turned out of its first cell by the table: reversed, its normal points into it (c0).
    for (int q = k - 1; q >= 0; --q) z.rows.push_back(n[static_cast<std::size_t>(q)]);
    z.rows.push_back(cell_number(static_cast<std::int64_t>(i)));  // c0
    z.rows.push_back(j >= 0 ? cell_number(j) : 0);
    ++z.faces;
  }
  for (std::size_t l = 0; l < named; ++l)
    if (zones[1 + l].faces && zones[1 + named + l].faces) zones[1 + l].name += "-interior";
  for (auto& z : zones)
    if (z.faces) out.zones.push_back(std::move(z));
  return out;
}

}  // namespace meshdock::mesh::fluent
