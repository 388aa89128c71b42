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
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Type {
  const char* name;
  int nodes;
  int fluent;
};
constexpr Type kTypes[] = {{"triangle", 3, 1},   {"tetra", 4, 2},   {"quad", 4, 3},
                           {"hexahedron", 8, 4}, {"pyramid", 5, 5}, {"wedge", 6, 6}};

class AnsysWriter : wr::WriterState {
 public:
  using WriterState::WriterState;

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    const auto dim = m_.points.dim(1);
    if (dim != 2 && dim != 3)
      throw WriteError(path_ + ": ANSYS Fluent holds 2-D or 3-D points; these have " +
                       std::to_string(dim) + " coordinates");
    for (std::size_t b = 0; b < m_.cells.size(); ++b) type_.push_back(type_of(b));
    wr::note_dropped(m_, "ANSYS Fluent", notes_);
    OutFile out(target_);
    wr::Sink s(out);
    body(s, dim);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  std::vector<const Type*> type_;

  const Type* type_of(std::size_t b) const {
    const auto& blk = m_.cells[b];
    if (!blk.ragged() && !blk.face_offsets.valid())
      for (const auto& t : kTypes)
        if (blk.type == t.name && blk.connectivity.dim(1) == t.nodes) return &t;
    throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                     " cannot be written: ANSYS Fluent (as meshio writes it) holds triangle, "
                     "tetra, quad, hexahedron, pyramid and wedge cells only");
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
    std::uint64_t first = 1;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      const auto cells = static_cast<std::uint64_t>(blk.size());
      const auto* c = blk.connectivity.as<std::int64_t>();
      const auto w = static_cast<std::size_t>(type_[b]->nodes);
      s.put(binary_ ? "(3012 (1 " : "(12 (1 ");
      hex(s, first);
      s.put(' ');
      hex(s, first + cells - 1);
      s.put(" 1 ");
      hex(s, static_cast<std::uint64_t>(type_[b]->fluent));
      s.put(")(\n");
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

std::vector<std::string> write_ansys(const Mesh& m, const OutTarget& target, bool binary) {
  return AnsysWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
