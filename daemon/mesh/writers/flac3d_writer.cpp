// FLAC3D grid writer (.f3grid), ascii or binary as meshio 5.0 writes them, read back by
// read_flac3d and by meshio's reader with the same arrays:
// - grid points "G id x y z" (ids 1..n; shortest round-trip reals; fewer than 3 coordinates
//   padded with 0, noted), binary u32 id + 3 float64 (header words 1375135718, 3 as meshio's);
// - zones from the tetra, pyramid, wedge and hexahedron blocks (their higher-order kinds by
//   their corners, noted, as meshio's writer takes them), ids 1.. in block order, each zone's
//   nodes in FLAC3D's order by the sign of its first four corners' triple product, as meshio
//   picks between its two tables (meshio_to_flac3d_order / _order_2): a zone whose first
//   corners turn the wrong way (det <= 0) is written turned, and reads back with other node
//   numbers (both readers), as meshio's writer turns it;
// - faces from triangle and quad blocks (and their higher-order kinds, corners, noted) as
//   "F T3 / Q4", ids going on after the zones' (meshio's writer means to skip them, and then
//   fails on any face block: FLAC3D holds faces and meshio's reader reads them);
// - cell regions as ZGROUP / FGROUP (a region of zones and faces gives one of each): a region
//   named "zone:<name>:<slot>" or "face:<name>:<slot>" (read_flac3d's and meshio's names) as
//   that name and slot, any other as its name in slot 1 (ascii) / "Default" (binary), as
//   meshio's writer; ids those the cells are written with. An empty region, point and side
//   regions and all data are noted as not written.
// Another block is a WriteError naming it, as is a name ascii cannot quote.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Type {
  const char* base;  // meshio's first-order type
  const char* flac;  // FLAC3D's type word
  int nodes;
  bool zone;
  std::array<int, 8> order, order2;  // FLAC3D node j = VTK node order[j]; order2 when det <= 0
};
constexpr Type kTypes[] = {
    {"triangle", "T3", 3, false, {0, 1, 2}, {0, 1, 2}},
    {"quad", "Q4", 4, false, {0, 1, 2, 3}, {0, 1, 2, 3}},
    {"tetra", "T4", 4, true, {0, 1, 2, 3}, {0, 2, 1, 3}},
    {"pyramid", "P5", 5, true, {0, 1, 3, 4, 2}, {0, 3, 1, 4, 2}},
    {"wedge", "W6", 6, true, {0, 1, 3, 2, 4, 5}, {0, 2, 3, 1, 5, 4}},
    {"hexahedron", "B8", 8, true, {0, 1, 3, 4, 2, 7, 5, 6}, {0, 3, 1, 4, 2, 5, 7, 6}},
};

// meshio's meshio_only table: each type FLAC3D holds by its corners.
int type_of(const CellBlock& b, bool& higher) {
  static const char* const kHigher[][4] = {
      {"triangle6", "triangle7", nullptr, nullptr},
      {"quad8", "quad9", nullptr, nullptr},
      {"tetra10", nullptr, nullptr, nullptr},
      {"pyramid13", nullptr, nullptr, nullptr},
      {"wedge12", "wedge15", "wedge18", nullptr},
      {"hexahedron20", "hexahedron24", "hexahedron27", nullptr}};
  if (b.ragged() || b.face_offsets.valid()) return -1;
  for (int t = 0; t < 6; ++t) {
    higher = false;
    if (b.type == kTypes[t].base) return b.connectivity.dim(1) == kTypes[t].nodes ? t : -1;
    for (const char* h : kHigher[t])
      if (h && b.type == h) {
        higher = true;
        return b.connectivity.dim(1) >= kTypes[t].nodes ? t : -1;
      }
  }
  return -1;
}

class Flac3dWriter : wr::WriterState {
 public:
  using WriterState::WriterState;

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    if (m_.points.dim(1) > 3)
      throw WriteError(path_ + ": FLAC3D holds 3-D points; these have " +
                       std::to_string(m_.points.dim(1)) + " coordinates");
    wr::note_point_dims(m_, "FLAC3D", notes_);
    classify();
    groups();
    wr::note_dropped(m_, "FLAC3D", notes_, wr::kPointData | wr::kCellData | wr::kFieldData);
    OutFile out(target_);
    wr::Sink s(out);
    binary_ ? binary(s) : ascii(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  std::vector<int> type_;          // a block's kTypes index
  std::vector<std::int64_t> id0_;  // the id of a block's first cell - 1
  std::int64_t counts_[2] = {};    // faces, zones
  struct Group {
    std::string name, slot;
    std::vector<std::int64_t> ids;
  };
  std::vector<Group> groups_[2];  // FGROUP, ZGROUP

  void classify() {
    type_.resize(m_.cells.size());
    id0_.resize(m_.cells.size());
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      bool higher = false;
      const int t = type_of(m_.cells[b], higher);
      if (t < 0)
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written: FLAC3D holds tetra, pyramid, wedge and hexahedron "
                         "zones and triangle and quad faces only");
      if (higher)
        notes_.push_back(wr::block_name(m_, b) + " is written as " + kTypes[t].base +
                         " (its corners): FLAC3D has no higher-order cells");
      type_[b] = t;
      counts_[kTypes[t].zone] += m_.cells[b].size();
    }
    if (counts_[0] + counts_[1] > std::numeric_limits<std::uint32_t>::max() ||
        m_.num_points() > std::numeric_limits<std::uint32_t>::max())
      throw WriteError(path_ + ": FLAC3D's ids are 32-bit; the mesh has more cells or points");
    // Zones 1.., then faces after the last zone (meshio's one running id).
    std::int64_t next[2] = {counts_[1], 0};
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      auto& n = next[kTypes[type_[b]].zone];
      id0_[b] = n;
      n += m_.cells[b].size();
    }
  }

  // The file's id of global cell number g.
  std::pair<bool, std::int64_t> cell_id(std::int64_t g) const {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      if (g < m_.cells[b].size()) return {kTypes[type_[b]].zone, id0_[b] + g + 1};
      g -= m_.cells[b].size();
    }
    return {false, -1};
  }

  void groups() {
    for (const auto& r : m_.regions) {
      if (r.kind != RegionKind::kCell) {
        notes_.push_back(wr::not_written("region '" + r.name + "'", "FLAC3D",
                                         std::string("sets of ") + region_kind_name(r.kind) + "s"));
        continue;
      }
      if (r.entries.size() == 0) {
        notes_.push_back("region '" + r.name +
                         "' is not written: it is empty (meshio's reader fails on an empty group)");
        continue;
      }
      std::string name = r.name, slot;
      if (name.starts_with("zone:") || name.starts_with("face:")) {
        const auto colon = name.rfind(':');
        if (colon > 4) {
          slot = name.substr(colon + 1);
          name = name.substr(5, colon - 5);
        }
      }
      for (const auto& text : {name, slot}) {
        if (binary_ ? text.size() > 0xffff : text.find_first_of("\"'\n\r") != std::string::npos)
          throw WriteError(path_ + ": region '" + r.name + "' cannot be written: " +
                           (binary_ ? "a name or slot over 65535 bytes"
                                    : "an ascii group's name or slot holds no quote or newline"));
      }
      if (slot.empty()) slot = binary_ ? "Default" : "1";
      Group g[2] = {{name, slot, {}}, {name, slot, {}}};
      const auto* e = r.entries.as<std::int64_t>();
      for (std::size_t i = 0; i < r.entries.size(); ++i) {
        const auto [zone, id] = cell_id(e[i]);
        g[zone].ids.push_back(id);
      }
      for (int k = 1; k >= 0; --k)
        if (!g[k].ids.empty()) groups_[k].push_back(std::move(g[k]));
    }
  }

  // Cell i of block b in FLAC3D's node order, 0-based.
  void flac_nodes(std::size_t b, std::int64_t i, std::int64_t* out) const {
    const auto& T = kTypes[type_[b]];
    const auto w = m_.cells[b].connectivity.dim(1);
    const auto* c = m_.cells[b].connectivity.as<std::int64_t>() + i * w;
    const auto* order = T.order.data();
    if (T.zone) {
      double p[4][3];
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 3; ++k) p[j][k] = wr::coord(m_, c[T.order[j]], k);
      double a[3], bb[3], cc[3];
      for (int k = 0; k < 3; ++k) {
        a[k] = p[1][k] - p[0][k];
        bb[k] = p[2][k] - p[0][k];
        cc[k] = p[3][k] - p[0][k];
      }
      const double det = a[0] * (bb[1] * cc[2] - bb[2] * cc[1]) +
                         a[1] * (bb[2] * cc[0] - bb[0] * cc[2]) +
                         a[2] * (bb[0] * cc[1] - bb[1] * cc[0]);
      if (!(det > 0)) order = T.order2.data();
    }
    for (int j = 0; j < T.nodes; ++j) out[j] = c[order[j]];
  }

  void ascii(wr::Sink& s) {
    s.put("* FLAC3D grid produced by meshdock\n* GRIDPOINTS\n");
    wr::numbered_points(s, m_, "G ");
    for (int zone = 1; zone >= 0; --zone) {
      s.put(zone ? "* ZONES\n" : "* FACES\n");
      std::int64_t nodes[8];
      for (std::size_t b = 0; b < m_.cells.size(); ++b) {
        const auto& T = kTypes[type_[b]];
        if (T.zone != static_cast<bool>(zone)) continue;
        for (std::int64_t i = 0; i < m_.cells[b].size(); ++i) {
          s.put(zone ? "Z " : "F ");
          s.put(T.flac);
          s.put(' ');
          s.text(id0_[b] + i + 1);
          flac_nodes(b, i, nodes);
          for (int j = 0; j < T.nodes; ++j) {
            s.put(' ');
            s.text(nodes[j] + 1);
          }
          s.put('\n');
          s.maybe_flush();
        }
      }
      s.put(zone ? "* ZONE GROUPS\n" : "* FACE GROUPS\n");
      for (const auto& g : groups_[zone]) {
        s.put(zone ? "ZGROUP \"" : "FGROUP \"");
        s.put(g.name);
        s.put("\" SLOT ");
        s.put(g.slot);
        s.put('\n');
        for (std::size_t i = 0; i < g.ids.size(); ++i) {
          s.put(' ');
          s.text(g.ids[i]);
          if (i % 20 == 19 || i + 1 == g.ids.size()) s.put('\n');
          s.maybe_flush();
        }
      }
    }
  }

  void binary(wr::Sink& s) {
    s.le(std::uint32_t{1375135718});
    s.le(std::uint32_t{3});
    s.le(static_cast<std::uint32_t>(m_.num_points()));
    s.rows(static_cast<std::size_t>(m_.num_points()), 28, [&](char* row, std::size_t i) {
      const auto id = static_cast<std::uint32_t>(i + 1);
      std::memcpy(row, &id, 4);
      for (int k = 0; k < 3; ++k) {
        const double x = wr::coord(m_, static_cast<std::int64_t>(i), k);
        std::memcpy(row + 4 + 8 * k, &x, 8);
      }
    });
    for (int zone = 1; zone >= 0; --zone) {
      s.le(static_cast<std::uint32_t>(counts_[zone]));
      for (std::size_t b = 0; b < m_.cells.size(); ++b) {
        const auto& T = kTypes[type_[b]];
        if (T.zone != static_cast<bool>(zone)) continue;
        const auto width = static_cast<std::size_t>(8 + 4 * T.nodes);
        s.rows(static_cast<std::size_t>(m_.cells[b].size()), width, [&](char* row, std::size_t i) {
          std::int64_t nodes[8];
          flac_nodes(b, static_cast<std::int64_t>(i), nodes);
          std::uint32_t v[10];
          v[0] = static_cast<std::uint32_t>(id0_[b] + static_cast<std::int64_t>(i) + 1);
          v[1] = static_cast<std::uint32_t>(T.nodes);
          for (int j = 0; j < T.nodes; ++j) v[2 + j] = static_cast<std::uint32_t>(nodes[j] + 1);
          std::memcpy(row, v, std::min(width, sizeof v));
        });
      }
      s.le(static_cast<std::uint32_t>(groups_[zone].size()));
      for (const auto& g : groups_[zone]) {
        for (const auto* text : {&g.name, &g.slot}) {
          s.le(static_cast<std::uint16_t>(text->size()));
          s.put(*text);
        }
        s.le(static_cast<std::uint32_t>(g.ids.size()));
        s.run<std::uint32_t>(g.ids.size(), [&](std::uint32_t* out, std::size_t at, std::size_t n) {
          for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint32_t>(g.ids[at + i]);
        });
      }
    }
  }
};

}  // namespace

std::vector<std::string> write_flac3d(const Mesh& m, const OutTarget& target, bool binary) {
  return Flac3dWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
