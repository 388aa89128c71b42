// UGRID writer (.ugrid), in the variant the target's name says as meshio 5.0 names them
// (ugrid_variant.hpp: x.ugrid ascii, x.b8.ugrid / x.lb4.ugrid / x.b8l.ugrid ... C binary,
// x.r8.ugrid / x.lr4.ugrid ... Fortran unformatted), what read_ugrid and meshio's reader read
// back with the same arrays:
// - the 7 counts; the points' x y z (fewer than 3 coordinates padded with 0, noted); the
//   triangles' and quads' nodes (1-based); their surface ids; the tetrahedra's, pyramids'
//   (to UGRID's order: base 1 2 5 4, apex 3, meshio's out[:, [1, 0, 4, 2, 3]]), prisms' and
//   hexahedra's nodes. Several blocks of one type are written one after the other (meshio's
//   writer refuses them), in UGRID's type order.
// - surface ids: cell_data "ugrid:ref", else the first integer cell data of one value a cell
//   (meshio's choice, which its own writer then fails on), else 1 (meshio's default), noted.
// - Fortran records carry their true byte lengths (meshio writes the sizes of its int64 /
//   float64 arrays, which its reader, like read_ugrid, steps over unchecked).
// A block of another type is a WriteError naming it; other data and the regions are noted.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "daemon/mesh/readers/ugrid_variant.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// UGRID's cell sections, in its order, by meshio's names.
struct Type {
  const char* name;
  std::int64_t nodes;
};
constexpr Type kTypes[] = {{"triangle", 3}, {"quad", 4},  {"tetra", 4},
                           {"pyramid", 5},  {"wedge", 6}, {"hexahedron", 8}};
constexpr int kTypeCount = 6;
// The file's pyramid node k is VTK's node kPyramidToFile[k] (read_ugrid's inverse).
constexpr int kPyramidToFile[5] = {1, 0, 4, 2, 3};

int type_of(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return -1;
  for (int t = 0; t < kTypeCount; ++t)
    if (b.type == kTypes[t].name && b.connectivity.dim(1) == kTypes[t].nodes) return t;
  return -1;
}

class UgridWriter : wr::WriterState {
 public:
  UgridWriter(const Mesh& m, const OutTarget& target, const UgridVariant& v)
      : WriterState(m, target, v.kind != UgridVariant::kAscii), v_(v) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    if (m_.points.dim(1) > 3)
      throw WriteError(path_ + ": UGRID holds 3-D points; these have " +
                       std::to_string(m_.points.dim(1)) + " coordinates");
    wr::note_point_dims(m_, "UGRID", notes_);
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const int t = type_of(m_.cells[b]);
      if (t < 0)
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written: UGRID holds triangle, quad, tetra, pyramid, wedge "
                         "and hexahedron cells only");
      blocks_[t].push_back(b);
      counts_[t + 1] += m_.cells[b].size();
    }
    counts_[0] = m_.num_points();
    pick_ids();
    check_ranges();
    OutFile out(target_);
    wr::Sink s(out);
    if (v_.kind == UgridVariant::kAscii)
      ascii(s);
    else if (v_.int_bytes == 8)
      binary<std::int64_t>(s);
    else
      binary<std::int32_t>(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  UgridVariant v_;
  std::vector<std::size_t> blocks_[kTypeCount];
  std::int64_t counts_[7] = {};
  const std::vector<Array>* ids_ = nullptr;

  // "ugrid:ref", else meshio's pick: the first integer cell data of one value a cell.
  void pick_ids() {
    auto ok = [](const std::vector<Array>& blocks) {
      for (const auto& a : blocks)
        if (!wr::is_integer_column(a)) return false;
      return true;
    };
    std::string name;
    if (const auto it = m_.cell_data.find("ugrid:ref"); it != m_.cell_data.end() && ok(it->second))
      name = it->first;
    for (const auto& [key, blocks] : m_.cell_data)
      if (name.empty() && ok(blocks)) name = key;
    std::vector<wr::KeptNames> kept;
    if (!name.empty()) {
      ids_ = &m_.cell_data.at(name);
      kept.push_back({wr::kCellData, {name}});
    } else if (counts_[1] + counts_[2] > 0) {
      notes_.push_back(
          "the surface ids are written as 1: the mesh has no cell_data 'ugrid:ref' "
          "(nor other integer cell data of one value a cell)");
    }
    wr::note_dropped(m_, "UGRID", notes_, wr::kAll, kept);
  }

  std::int64_t surface_id(std::size_t b, std::int64_t i) const {
    return ids_ ? int_at((*ids_)[b], static_cast<std::size_t>(i)) : 1;
  }

  // 4-byte integers hold every count, node number and surface id, or the file cannot be written.
  void check_ranges() const {
    if (v_.kind != UgridVariant::kAscii && v_.int_bytes == 8) return;
    constexpr auto kMax = std::numeric_limits<std::int32_t>::max();
    constexpr auto kMin = std::numeric_limits<std::int32_t>::min();
    for (std::int64_t n : counts_)
      if (n > kMax)
        throw WriteError(path_ + ": " + std::to_string(n) +
                         " nodes or cells of a type do not fit UGRID's 4-byte counts (write "
                         "x.b8l.ugrid, 8-byte integers)");
    for (int t = 0; t < 2; ++t)
      for (const auto b : blocks_[t])
        for (std::int64_t i = 0; i < m_.cells[b].size(); ++i)
          if (const auto id = surface_id(b, i); id > kMax || id < kMin)
            throw WriteError(path_ + ": " + wr::block_name(m_, b) + " cell " + std::to_string(i) +
                             ": surface id " + std::to_string(id) +
                             " does not fit UGRID's 4-byte integers");
  }

  // How values are written: as text, one record a line (meshio's savetxt layout), or as I / F
  // in either byte order.
  struct Ascii {
    static constexpr bool kText = true;
  };
  template <typename I_, typename F_, bool Big>
  struct Binary {
    static constexpr bool kText = false;
    static constexpr bool kBig = Big;
    using I = I_;
    using F = F_;
  };

  template <typename Enc>
  static void real(wr::Sink& s, double x) {
    if constexpr (Enc::kText) {
      s.text(x);
    } else {
      using F = typename Enc::F;
      Enc::kBig ? s.be(static_cast<F>(x)) : s.le(static_cast<F>(x));
    }
  }

  template <typename Enc>
  static void integer(wr::Sink& s, std::int64_t x) {
    if constexpr (Enc::kText) {
      s.text(x);
    } else {
      using I = typename Enc::I;
      Enc::kBig ? s.be(static_cast<I>(x)) : s.le(static_cast<I>(x));
    }
  }

  // After value k of a record of `of`: a space, or the line's end (text only).
  template <typename Enc>
  static void after(wr::Sink& s, std::int64_t k, std::int64_t of) {
    if constexpr (Enc::kText) s.put(k + 1 == of ? '\n' : ' ');
  }

  template <typename Enc>
  void header(wr::Sink& s) {
    for (int k = 0; k < 7; ++k) {
      integer<Enc>(s, counts_[k]);
      after<Enc>(s, k, 7);
    }
  }

  // Everything after the counts.
  template <typename Enc>
  void sections(wr::Sink& s) {
    if constexpr (!Enc::kText) {
      binary_sections<Enc>(s);
      return;
    }
    for (std::int64_t i = 0; i < counts_[0]; ++i) {
      for (int k = 0; k < 3; ++k) {
        real<Enc>(s, wr::coord(m_, i, k));
        after<Enc>(s, k, 3);
      }
      s.maybe_flush();
    }
    cells<Enc>(s, 0);
    cells<Enc>(s, 1);
    for (int t = 0; t < 2; ++t)
      for (const auto b : blocks_[t])
        for (std::int64_t i = 0; i < m_.cells[b].size(); ++i) {
          integer<Enc>(s, surface_id(b, i));
          after<Enc>(s, 0, 1);
          s.maybe_flush();
        }
    for (int t = 2; t < kTypeCount; ++t) cells<Enc>(s, t);
  }

  template <typename Enc>
  void cells(wr::Sink& s, int t) {
    const auto k = kTypes[t].nodes;
    const bool pyramid = t == 3;
    for (const auto b : blocks_[t]) {
      const auto* c = m_.cells[b].connectivity.as<std::int64_t>();
      for (std::int64_t i = 0; i < m_.cells[b].size(); ++i, c += k) {
        for (std::int64_t j = 0; j < k; ++j) {
          integer<Enc>(s, c[pyramid ? kPyramidToFile[j] : j] + 1);
          after<Enc>(s, j, k);
        }
        s.maybe_flush();
      }
    }
  }

  // sections() of a binary variant: the same values in Sink runs (no append a value), which
  // took a 1M-tet lb8 write from 0.6x meshio's numpy tofile to (see docs/BENCHMARKS.md "Write").
  template <typename Enc>
  void binary_sections(wr::Sink& s) {
    using F = typename Enc::F;
    using I = typename Enc::I;
    const auto order = [](auto v) { return Enc::kBig ? wr::Sink::swapped(v) : v; };
    s.run<F>(static_cast<std::size_t>(counts_[0]) * 3, [&](F* out, std::size_t at, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i)
        out[i] = order(
            static_cast<F>(wr::coord(m_, static_cast<std::int64_t>((at + i) / 3), (at + i) % 3)));
    });
    const auto cells = [&](int t) {
      const bool pyramid = t == 3;
      for (const auto b : blocks_[t])
        wr::cell_ids<I>(s, m_.cells[b],
                        pyramid ? std::span<const int>(kPyramidToFile) : std::span<const int>{}, 1,
                        Enc::kBig);
    };
    cells(0);
    cells(1);
    for (int t = 0; t < 2; ++t)
      for (const auto b : blocks_[t])
        s.run<I>(static_cast<std::size_t>(m_.cells[b].size()), [&](I* out, std::size_t at,
                                                                   std::size_t n) {
          for (std::size_t i = 0; i < n; ++i)
            out[i] = order(static_cast<I>(surface_id(b, static_cast<std::int64_t>(at + i))));
        });
    for (int t = 2; t < kTypeCount; ++t) cells(t);
  }

  void ascii(wr::Sink& s) {
    header<Ascii>(s);
    sections<Ascii>(s);
  }

  template <typename I>
  void binary(wr::Sink& s) {
    if (v_.real_bytes == 4)
      v_.big_endian ? binary_as<Binary<I, float, true>>(s) : binary_as<Binary<I, float, false>>(s);
    else
      v_.big_endian ? binary_as<Binary<I, double, true>>(s)
                    : binary_as<Binary<I, double, false>>(s);
  }

  template <typename Enc>
  void binary_as(wr::Sink& s) {
    if (v_.kind != UgridVariant::kFortran) {
      header<Enc>(s);
      sections<Enc>(s);
      return;
    }
    // Two records, each between markers of its byte length: the counts, then the rest.
    constexpr auto kI = static_cast<std::int64_t>(sizeof(typename Enc::I));
    std::int64_t rest = counts_[0] * 3 * static_cast<std::int64_t>(sizeof(typename Enc::F));
    for (int t = 0; t < kTypeCount; ++t) rest += counts_[t + 1] * kTypes[t].nodes * kI;
    rest += (counts_[1] + counts_[2]) * kI;
    if (rest > std::numeric_limits<std::int32_t>::max())
      throw WriteError(path_ + ": the mesh takes " + std::to_string(rest) +
                       " bytes, more than a Fortran record's 4-byte length marker holds (write "
                       "x.b8.ugrid or x.lb8.ugrid, C binary, instead)");
    auto marker = [&](std::int64_t n) {
      Enc::kBig ? s.be(static_cast<std::int32_t>(n)) : s.le(static_cast<std::int32_t>(n));
    };
    marker(7 * kI);
    header<Enc>(s);
    marker(7 * kI);
    marker(rest);
    sections<Enc>(s);
    marker(rest);
  }
};

}  // namespace

std::vector<std::string> write_ugrid(const Mesh& m, const OutTarget& target) {
  return UgridWriter(m, target, ugrid_variant(target.leaf)).write();
}

}  // namespace meshdock::mesh
