// Abaqus .inp writer: *HEADING, *NODE (ids 1..n, the points' own coordinates, each the shortest
// text that reads back exactly), one *ELEMENT, TYPE=... section per block (ids 1..N over the
// blocks in order) with the element type meshio 5.3 writes for the cell type (but line3: B32,
// an Abaqus 3-node beam, nodes reordered end, middle, end; meshio writes B33H, a 2-node beam in
// Abaqus), *NSET / *ELSET from point and cell regions. Data lines hold 16 values at most (an
// Abaqus limit), a line ending with ',' going on on the next. A block Abaqus has no element for
// (vertex, polygon, polyhedron, pyramid, the higher-order VTK cells, ...) is a WriteError naming
// it; point / cell / field data and side regions have no place in a plain .inp: each is noted.
#include <cstring>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// meshio 5.3's meshio_to_abaqus_type (its last Abaqus name for each type), line3 apart.
const char* abaqus_type(const CellBlock& b) {
  struct Entry {
    const char* type;
    const char* abaqus;
    int nodes;
  };
  static constexpr Entry kTypes[] = {
      {"line", "B31H", 2},      {"line3", "B32", 3},         {"quad", "CAX4P", 4},
      {"quad8", "S8R5", 8},     {"quad9", "S9R5", 9},        {"triangle", "R3D3", 3},
      {"triangle6", "CPE6", 6}, {"hexahedron", "C3D8RH", 8}, {"hexahedron20", "C3D20RH", 20},
      {"tetra", "C3D4", 4},     {"tetra10", "C3D10MH", 10},  {"wedge", "C3D6", 6},
      {"wedge15", "C3D15", 15},
  };
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& e : kTypes)
    if (b.type == e.type && b.connectivity.dim(1) == e.nodes) return e.abaqus;
  return nullptr;
}

std::string abaqus_types() {
  return "line, line3, triangle, triangle6, quad, quad8, quad9, tetra, tetra10, hexahedron, "
         "hexahedron20, wedge, wedge15";
}

// A set name Abaqus reads back as written: no comma (parameters), '=', quote or control
// character, and not blank.
bool writable_name(const std::string& name) {
  if (name.empty() || name.front() == ' ' || name.back() == ' ') return false;
  for (const unsigned char ch : name)
    if (ch < 0x20 || ch == 0x7f || ch == ',' || ch == '=' || ch == '"') return false;
  return true;
}

// Ids `base + v` of `values`, 16 a line.
void id_lines(wr::Sink& s, const std::int64_t* values, std::size_t n, std::int64_t base) {
  for (std::size_t i = 0; i < n; ++i) {
    s.text(values[i] + base);
    s.put(i + 1 == n ? "\n" : i % 16 == 15 ? ",\n" : ", ");
  }
}

}  // namespace

std::vector<std::string> write_abaqus(const Mesh& m, const OutTarget& target) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b)
    if (!abaqus_type(m.cells[b]))
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to Abaqus .inp, which has elements for " +
                       abaqus_types() + " only; write it as " + wr::formats_for(m.cells[b]));
  if (m.points.dim(1) > 3)
    throw WriteError(target.path + ": points have " + std::to_string(m.points.dim(1)) +
                     " coordinates; an Abaqus node has 3 at most");
  for (const auto& r : m.regions)
    if (r.kind != RegionKind::kSide && !writable_name(r.name))
      throw WriteError(target.path + ": region '" + r.name +
                       "' cannot be an Abaqus set name (a comma, '=', '\"', a control character "
                       "or blanks at its ends)");
  std::vector<std::string> notes;
  wr::note_dropped(m, "Abaqus .inp", notes, wr::kPointData | wr::kCellData | wr::kFieldData);
  for (const auto& r : m.regions)
    if (r.kind == RegionKind::kSide)
      notes.push_back(wr::not_written("side region '" + r.name + "'", "Abaqus .inp",
                                      "side sets (*SURFACE is not written)"));
  OutFile out(target);
  wr::Sink s(out);
  s.put("*HEADING\nwritten by meshdock\n*NODE\n");
  const auto dim = m.points.dim(1);
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    s.text(i + 1);
    for (std::int64_t k = 0; k < dim; ++k) {
      s.put(", ");
      s.text(wr::coord(m, i, static_cast<int>(k)));
    }
    s.put('\n');
    s.maybe_flush();
  }
  std::int64_t id = 0;
  for (const auto& b : m.cells) {
    s.put(std::string("*ELEMENT, TYPE=") + abaqus_type(b) + "\n");
    const bool line3 = b.type == "line3";
    wr::each_cell(b, [&](const std::int64_t* c, std::size_t n) {
      s.text(++id);
      for (std::size_t k = 0; k < n; ++k) {
        // 16 values a line: the id and 15 nodes, then a line of the rest.
        s.put(k == 15 ? ",\n" : ", ");
        const std::size_t from = line3 && k > 0 ? 3 - k : k;  // end, middle, end
        s.text(c[from] + 1);
      }
      s.put('\n');
      s.maybe_flush();
    });
  }
  for (const auto& r : m.regions) {
    if (r.kind == RegionKind::kSide) continue;
    const bool cell = r.kind == RegionKind::kCell;
    s.put(std::string(cell ? "*ELSET, ELSET=" : "*NSET, NSET=") + r.name + "\n");
    id_lines(s, r.entries.as<std::int64_t>(), static_cast<std::size_t>(r.entries.dim(0)), 1);
  }
  s.flush();
  out.commit();
  return notes;
}

}  // namespace meshdock::mesh
