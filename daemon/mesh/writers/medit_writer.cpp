// Medit writer (libMeshb / GMF): ascii .mesh (MeshVersionFormatted 2: float64 values, written
// as the shortest text that reads back to each, so a round trip is exact) or binary .meshb
// (little-endian, version 3: int32 integers, float64 reals, int64 positions; version 4, int64
// integers, where a count, an index or a ref does not fit int32). Dimension 2 or 3 (1-D points
// are padded to 2, noted); Vertices with their ref from point_data "medit:ref" when it is an
// integer array of one value a point, else 0; each block Medit has a keyword for (line, triangle,
// quad, tetra, wedge, pyramid, hexahedron) in the mesh's order, with its ref from cell_data
// "medit:ref" (integer, one value a cell) or 0; End. Every other block, array and region is
// noted as not written: Medit holds nothing else a reader maps back.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct MeditType {
  std::string_view meshio;
  const char* name;
  std::int32_t code;
  std::int64_t nodes;
};

constexpr MeditType kTypes[] = {
    {"line", "Edges", 5, 2},
    {"triangle", "Triangles", 6, 3},
    {"quad", "Quadrilaterals", 7, 4},
    {"tetra", "Tetrahedra", 8, 4},
    {"wedge", "Prisms", 9, 6},
    {"pyramid", "Pyramids", 49, 5},
    {"hexahedron", "Hexahedra", 10, 8},
};

constexpr std::int32_t kDimension = 3, kVertices = 4, kEnd = 54;

// Medit's keyword for a fixed block of a type it has, else null.
const MeditType* medit_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& t : kTypes)
    if (t.meshio == b.type && t.nodes == b.connectivity.dim(1)) return &t;
  return nullptr;
}

class MeditWriter : wr::WriterState {
 public:
  using WriterState::WriterState;

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    pick_refs();
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      if (medit_type(m_.cells[b]))
        blocks_.push_back(b);
      else
        notes_.push_back(wr::block_name(m_, b) + " is not written: Medit has no such cells");
    }
    dim_ = m_.points.dim(1) < 2 ? 2 : m_.points.dim(1);
    if (m_.points.dim(1) < 2)
      notes_.push_back(
          "points have 1 coordinate; Medit stores 2 or 3, so the rest are written "
          "as 0");
    OutFile out(target_);
    wr::Sink s(out);
    if (binary_)
      write_binary(s);
    else
      write_ascii(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  const Array* point_ref_ = nullptr;
  const std::vector<Array>* cell_ref_ = nullptr;
  std::vector<std::size_t> blocks_;  // those Medit has keywords for
  std::int64_t dim_ = 3;

  // "medit:ref" where it is one integer a point / cell; the rest of the data is noted.
  void pick_refs() {
    std::vector<wr::KeptNames> kept;
    if (const auto it = m_.point_data.find("medit:ref"); it != m_.point_data.end()) {
      if (wr::is_integer_column(it->second)) {
        point_ref_ = &it->second;
        kept.push_back({wr::kPointData, {"medit:ref"}});
      }
    }
    if (const auto it = m_.cell_data.find("medit:ref"); it != m_.cell_data.end()) {
      bool ok = true;
      for (const auto& a : it->second) ok = ok && wr::is_integer_column(a);
      if (ok) {
        cell_ref_ = &it->second;
        kept.push_back({wr::kCellData, {"medit:ref"}});
      }
    }
    wr::note_dropped(m_, "Medit", notes_, wr::kAll, kept);
  }

  std::int64_t point_ref(std::int64_t i) const {
    return point_ref_ ? int_at(*point_ref_, static_cast<std::size_t>(i)) : 0;
  }
  std::int64_t cell_ref(std::size_t b, std::int64_t i) const {
    return cell_ref_ ? int_at((*cell_ref_)[b], static_cast<std::size_t>(i)) : 0;
  }

  void write_ascii(wr::Sink& s) {
    s.put("MeshVersionFormatted 2\n\nDimension " + std::to_string(dim_) + "\n\nVertices\n" +
          std::to_string(m_.num_points()) + "\n");
    for (std::int64_t i = 0; i < m_.num_points(); ++i) {
      for (int k = 0; k < dim_; ++k) {
        s.text(wr::coord(m_, i, k));
        s.put(' ');
      }
      s.text(point_ref(i));
      s.put('\n');
      s.maybe_flush();
    }
    for (const auto b : blocks_) {
      const auto& blk = m_.cells[b];
      s.put(std::string("\n") + medit_type(blk)->name + "\n" + std::to_string(blk.size()) + "\n");
      std::int64_t i = 0;
      wr::each_cell(blk, [&](const std::int64_t* c, std::size_t n) {
        for (std::size_t k = 0; k < n; ++k) {
          s.text(c[k] + 1);
          s.put(' ');
        }
        s.text(cell_ref(b, i++));
        s.put('\n');
        s.maybe_flush();
      });
    }
    s.put("\nEnd\n");
  }

  // Whether every count, vertex number and ref fits the int32 of version 3.
  bool fits_int32() const {
    constexpr auto kMax = std::numeric_limits<std::int32_t>::max();
    constexpr auto kMin = std::numeric_limits<std::int32_t>::min();
    if (m_.num_points() >= kMax) return false;  // vertex numbers go to num_points
    for (std::int64_t i = 0; point_ref_ && i < m_.num_points(); ++i)
      if (point_ref(i) > kMax || point_ref(i) < kMin) return false;
    for (const auto b : blocks_) {
      if (m_.cells[b].size() > kMax) return false;
      for (std::int64_t i = 0; cell_ref_ && i < m_.cells[b].size(); ++i)
        if (cell_ref(b, i) > kMax || cell_ref(b, i) < kMin) return false;
    }
    return true;
  }

  template <typename I>
  void write_records(wr::Sink& s, std::uint64_t& pos) {
    const auto np = m_.num_points();
    // A keyword: its code, the position of the next one (after this keyword's records), the
    // record count.
    auto keyword = [&](std::int32_t code, std::int64_t count, std::uint64_t record_bytes) {
      pos += 4 + 8 + sizeof(I) + static_cast<std::uint64_t>(count) * record_bytes;
      s.le(code);
      s.le(static_cast<std::int64_t>(pos));
      s.le(static_cast<I>(count));
    };
    keyword(kVertices, np, static_cast<std::uint64_t>(dim_) * 8 + sizeof(I));
    for (std::int64_t i = 0; i < np; ++i) {
      for (int k = 0; k < dim_; ++k) s.le(wr::coord(m_, i, k));
      s.le(static_cast<I>(point_ref(i)));
      s.maybe_flush();
    }
    for (const auto b : blocks_) {
      const auto& blk = m_.cells[b];
      const auto* t = medit_type(blk);
      keyword(t->code, blk.size(), static_cast<std::uint64_t>(t->nodes + 1) * sizeof(I));
      std::int64_t i = 0;
      wr::each_cell(blk, [&](const std::int64_t* c, std::size_t n) {
        for (std::size_t k = 0; k < n; ++k) s.le(static_cast<I>(c[k] + 1));
        s.le(static_cast<I>(cell_ref(b, i++)));
        s.maybe_flush();
      });
    }
  }

  void write_binary(wr::Sink& s) {
    const bool small = fits_int32();
    const std::int32_t version = small ? 3 : 4;
    s.le(std::int32_t{1});  // the code word: a reader of the other byte order sees 1 << 24
    s.le(version);
    std::uint64_t pos = 8 + 4 + 8 + 4;  // after Dimension: code, next position, value
    s.le(kDimension);
    s.le(static_cast<std::int64_t>(pos));
    s.le(static_cast<std::int32_t>(dim_));
    if (small)
      write_records<std::int32_t>(s, pos);
    else
      write_records<std::int64_t>(s, pos);
    s.le(kEnd);
    s.le(std::int64_t{0});
  }
};

}  // namespace

std::vector<std::string> write_medit(const Mesh& m, const OutTarget& target, bool binary) {
  return MeditWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
