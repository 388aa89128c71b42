// PERMAS writer (.post, .dato; x.post.gz / x.dato.gz gzipped through zlib's deflate): what
// meshio's permas writer writes, so that meshio and meshdock read it back alike:
// - "!" comment lines, $ENTER COMPONENT NAME=DFLT_COMP, $STRUCTURE, $COOR with "id x y z" rows
//   (ids 1..n, 2-D points padded with 0, each number the shortest text that reads back exactly);
// - per block "$ELEMENT TYPE=<name>" (meshio's name for the type: TET4, HEXFO8, TRIMS3, SHELL4,
//   PENTA6, PYRA5, FSCPIPE2, ...) and rows "id n1 .. nk", element ids running 1..N over the
//   blocks, nodes 1-based; TET10, TRIMS6, QUAMS9 and PENTA15 in PERMAS' order (meshio's
//   permutations), the others as VTK orders them (as meshio);
// - $END STRUCTURE, $EXIT COMPONENT, $FIN.
// A block PERMAS has no element for in meshio's table (polygons, polyhedra, pyramid13, the
// arbitrary-order VTK cells, ...) is a WriteError naming it. Point, cell and field data are
// noted (meshio writes none); so are regions: read_permas reads $NSET / $ESET, but meshio's
// reader fails on those lines, and what meshio cannot read back this writer does not write.
#include <array>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/text_out.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Entry {
  const char* type;
  const char* permas;  // meshio's meshio_to_permas_type: the last PERMAS name of the type
  int nodes;
  std::array<std::uint8_t, 15> order;  // PERMAS node k is VTK node order[k]; {} as written
};

constexpr std::array<Entry, 16> kTypes{{
    {"vertex", "PLOT1", 1, {}},
    {"line", "FSCPIPE2", 2, {}},
    {"line3", "PLOTL3", 3, {}},
    {"quad", "SHELL4", 4, {}},
    {"quad8", "QUAMS8", 8, {}},
    {"quad9", "QUAMS9", 9, {0, 4, 1, 7, 8, 5, 3, 6, 2}},
    {"triangle", "TRIMS3", 3, {}},
    {"triangle6", "TRIMS6", 6, {0, 3, 1, 4, 2, 5}},
    {"hexahedron", "HEXFO8", 8, {}},
    {"hexahedron20", "HEXE20", 20, {}},
    {"hexahedron27", "HEXE27", 27, {}},
    {"tetra", "TET4", 4, {}},
    {"tetra10", "TET10", 10, {0, 4, 1, 5, 2, 6, 7, 8, 9, 3}},
    {"pyramid", "PYRA5", 5, {}},
    {"wedge", "PENTA6", 6, {}},
    {"wedge15", "PENTA15", 15, {0, 6, 1, 7, 2, 8, 9, 10, 11, 3, 12, 4, 13, 5, 14}},
}};

const Entry* permas_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& e : kTypes)
    if (b.type == e.type && b.connectivity.dim(1) == e.nodes) return &e;
  return nullptr;
}

std::string permas_types() {
  std::string s;
  for (const auto& e : kTypes) {
    if (!s.empty()) s += ", ";
    s += e.type;
  }
  return s;
}

}  // namespace

std::vector<std::string> write_permas(const Mesh& m, const OutTarget& target, bool gzip) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b)
    if (!permas_type(m.cells[b]))
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to PERMAS, which has elements for " + permas_types() +
                       " only; write it as " + wr::formats_for(m.cells[b]));
  if (m.points.dim(1) > 3)
    throw WriteError(target.path + ": points have " + std::to_string(m.points.dim(1)) +
                     " coordinates; a PERMAS node has 3");
  std::vector<std::string> notes;
  wr::note_point_dims(m, "PERMAS", notes);
  wr::note_dropped(m, "PERMAS", notes, wr::kPointData | wr::kCellData | wr::kFieldData);
  for (const auto& r : m.regions)
    notes.push_back("region '" + r.name +
                    "' is not written: meshio's PERMAS reader fails on $NSET / $ESET lines, so "
                    "sets are left out as meshio's writer leaves them");
  OutFile out(target);
  wr::TextOut s(out, gzip, target.path);
  s.put(
      "!PERMAS DataFile Version 18.0\n!written by meshdock\n$ENTER COMPONENT "
      "NAME=DFLT_COMP\n$STRUCTURE\n$COOR\n");
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    s.text(i + 1);
    for (int k = 0; k < 3; ++k) {
      s.put(' ');
      s.text(wr::coord(m, i, k));
    }
    s.put('\n');
    s.maybe_flush();
  }
  std::int64_t id = 0;
  for (const auto& b : m.cells) {
    const Entry& e = *permas_type(b);
    s.put(std::string("!\n$ELEMENT TYPE=") + e.permas + "\n");
    const bool reorder = e.order != std::array<std::uint8_t, 15>{};
    wr::each_cell(b, [&](const std::int64_t* c, std::size_t n) {
      s.text(++id);
      for (std::size_t k = 0; k < n; ++k) {
        s.put(' ');
        s.text(c[reorder ? e.order[k] : k] + 1);
      }
      s.put('\n');
      s.maybe_flush();
    });
  }
  s.put("$END STRUCTURE\n$EXIT COMPONENT\n$FIN\n");
  s.finish();
  out.commit();
  return notes;
}

}  // namespace meshdock::mesh
