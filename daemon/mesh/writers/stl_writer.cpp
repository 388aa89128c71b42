// STL writer, ascii or binary. STL holds triangles and nothing else, so: triangle blocks as they
// are; quad and polygon blocks split into triangle fans around their first point (noted: the
// file reads back as triangles); any other block (lines, volumes, second-order faces) is a
// WriteError naming it rather than a surface silently missing. Normals come from cell_data
// "facet_normals" (what read_stl gives back) or are computed from the corners. Binary STL stores
// float32: a note says so when that changes a coordinate. Other data: noted.
#include <cmath>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

class StlWriter : wr::WriterState {
 public:
  using WriterState::WriterState;

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    std::uint64_t triangles = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      if (!wr::is_face_block(blk))
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written to STL, which holds triangles only (quad and "
                         "polygon blocks are split into triangles); write it as " +
                         wr::formats_for(blk));
      wr::each_cell(blk, [&](const std::int64_t*, std::size_t n) { triangles += n - 2; });
      if (blk.type != "triangle")
        notes_.push_back(wr::block_name(m_, b) +
                         " written as triangle fans: STL holds triangles only");
    }
    if (triangles > 0xffffffffu && binary_)
      throw WriteError(path_ + ": " + std::to_string(triangles) +
                       " triangles, more than binary STL's 32-bit count holds; write ascii");
    const auto normals = m_.cell_data.find("facet_normals");
    const bool have_normals = normals != m_.cell_data.end() && usable(normals->second);
    if (normals != m_.cell_data.end() && !have_normals)
      notes_.push_back("cell_data 'facet_normals' is not written: STL needs (n, 3) floats there");
    wr::note_dropped(m_, "STL", notes_, wr::kAll, {{wr::kCellData, {"facet_normals"}}});
    wr::note_point_dims(m_, "STL", notes_);

    OutFile out(target_);
    wr::Sink s(out);
    if (binary_) {
      std::string head = "meshdock binary STL";  // never "solid...": that reads as ascii
      head.resize(80, ' ');
      s.put(head);
      s.le(static_cast<std::uint32_t>(triangles));
    } else {
      s.put("solid meshdock\n");
    }
    bool narrowed = false;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const Array* nrm = have_normals ? &normals->second[b] : nullptr;
      std::int64_t cell = 0;
      wr::each_cell(m_.cells[b], [&](const std::int64_t* c, std::size_t n) {
        for (std::size_t k = 1; k + 1 < n; ++k) {
          double v[3][3], nv[3];
          for (int j = 0; j < 3; ++j)
            for (int d = 0; d < 3; ++d)
              v[j][d] = wr::coord(m_, c[j == 0 ? 0 : k + static_cast<std::size_t>(j) - 1], d);
          if (nrm) {
            for (int d = 0; d < 3; ++d)
              nv[d] = value_at(*nrm, static_cast<std::size_t>(cell * 3 + d));
          } else {
            normal(v, nv);
          }
          if (binary_) {
            for (double x : nv) wr::le_f32(s, x);  // normals: a direction, rounding expected
            for (auto& p : v)
              for (double x : p) narrowed |= wr::le_f32(s, x);
            s.le(std::uint16_t{0});
          } else {
            s.put("facet normal ");
            triple(s, nv);
            s.put("outer loop\n");
            for (auto& p : v) {
              s.put("vertex ");
              triple(s, p);
            }
            s.put("endloop\nendfacet\n");
          }
          s.maybe_flush();
        }
        ++cell;
      });
    }
    if (!binary_) s.put("endsolid meshdock\n");
    if (narrowed)
      notes_.push_back(
          "binary STL stores float32: some coordinates were rounded (ascii keeps them)");
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  bool usable(const std::vector<Array>& parts) const {
    for (const auto& p : parts)
      if (p.dtype().code != 2 || p.ndim() != 2 || p.dim(1) != 3) return false;
    return true;
  }

  static void normal(const double (&v)[3][3], double (&n)[3]) {
    const double a[3] = {v[1][0] - v[0][0], v[1][1] - v[0][1], v[1][2] - v[0][2]};
    const double b[3] = {v[2][0] - v[0][0], v[2][1] - v[0][1], v[2][2] - v[0][2]};
    n[0] = a[1] * b[2] - a[2] * b[1];
    n[1] = a[2] * b[0] - a[0] * b[2];
    n[2] = a[0] * b[1] - a[1] * b[0];
    const double len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    for (double& x : n) x = len > 0 ? x / len : 0.0;
  }

  static void triple(wr::Sink& s, const double* x) {
    for (int d = 0; d < 3; ++d) {
      s.text(x[d]);
      s.put(d == 2 ? '\n' : ' ');
    }
  }
};

}  // namespace

std::vector<std::string> write_stl(const Mesh& m, const OutTarget& target, bool binary) {
  return StlWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
