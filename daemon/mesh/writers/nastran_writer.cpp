// Nastran bulk data writer (.bdf, .nas, .fem), free field: "BEGIN BULK", a GRID a point (ids
// 1..n, CP from point_data "nastran:ref" when it is one integer a point, else blank (as meshio;
// a CP not 0 is noted: the coordinates are basic and no CORD card is written); each
// coordinate the shortest text that reads back exactly, with the '.' Nastran needs in a real:
// small field's 8 columns would round them, large field's 16 too), then an element card a cell
// (ids 1..N over the blocks in order; PID from cell_data "nastran:ref", else blank: Nastran's
// default, the element id) with the card meshio 5.0 writes for its type (but CTETRA, CPENTA,
// CHEXA, CPYRAM for the second-order solids too: meshio writes its fictive CTETRA_, ... there,
// which no Nastran reads), 8 data fields a line, the next line a '+' continuation; "ENDDATA".
// Nodes in Nastran's order (CHEXA 20 and CPENTA 15 as meshio reorders them). meshio reads the
// file back with the same points, blocks and nastran:ref arrays. A block Nastran has no card
// for is a WriteError naming it; other data and regions are noted.
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

constexpr std::uint8_t kHex20[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
                                   10, 11, 16, 17, 18, 19, 12, 13, 14, 15};
constexpr std::uint8_t kWedge15[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 9, 10, 11};

struct NastranType {
  const char* type;
  const char* card;
  int nodes;
  const std::uint8_t* order;  // the card's grid k is meshio's node order[k]; nullptr: as is
};

constexpr NastranType kTypes[] = {
    {"vertex", "CELAS1", 1, nullptr},      {"line", "CBAR", 2, nullptr},
    {"triangle", "CTRIA3", 3, nullptr},    {"triangle6", "CTRIA6", 6, nullptr},
    {"quad", "CQUAD4", 4, nullptr},        {"quad8", "CQUAD8", 8, nullptr},
    {"quad9", "CQUAD9", 9, nullptr},       {"tetra", "CTETRA", 4, nullptr},
    {"tetra10", "CTETRA", 10, nullptr},    {"pyramid", "CPYRAM", 5, nullptr},
    {"pyramid13", "CPYRAM", 13, nullptr},  {"wedge", "CPENTA", 6, nullptr},
    {"wedge15", "CPENTA", 15, kWedge15},   {"hexahedron", "CHEXA", 8, nullptr},
    {"hexahedron20", "CHEXA", 20, kHex20},
};

const NastranType* nastran_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& t : kTypes)
    if (b.type == t.type && b.connectivity.dim(1) == t.nodes) return &t;
  return nullptr;
}

// A real as Nastran reads it: the shortest exact text, with a '.' ("1" is an integer there).
void real(wr::Sink& s, double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string_view t(buf, static_cast<std::size_t>(r.ptr - buf));
  if (t.find_first_of(".ni") != std::string_view::npos) {  // a '.', or inf / nan: as they are
    s.put(t);
    return;
  }
  const auto e = t.find('e');
  s.put(t.substr(0, e));
  s.put('.');
  if (e != std::string_view::npos) s.put(t.substr(e));
}

// `a` when it holds one integer a row (a point's CP, a cell's PID), else nullptr.
const Array* int_column(const Array& a) {
  return wr::is_integer_column(a) ? &a : nullptr;
}

}  // namespace

std::vector<std::string> write_nastran(const Mesh& m, const OutTarget& target) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b)
    if (!nastran_type(m.cells[b]))
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to Nastran bulk data, which has cards for vertex, "
                       "line, triangle, triangle6, quad, quad8, quad9, tetra, tetra10, pyramid, "
                       "pyramid13, wedge, wedge15, hexahedron, hexahedron20 only; write it as " +
                       wr::formats_for(m.cells[b]));
  if (m.points.dim(1) > 3)
    throw WriteError(target.path + ": points have " + std::to_string(m.points.dim(1)) +
                     " coordinates; a Nastran GRID has 3");
  std::vector<std::string> notes;
  std::vector<wr::KeptNames> kept;
  const Array* cp = nullptr;
  if (const auto it = m.point_data.find("nastran:ref"); it != m.point_data.end()) {
    cp = int_column(it->second);
    if (cp) kept.push_back({wr::kPointData, {"nastran:ref"}});
  }
  const std::vector<Array>* pid = nullptr;
  if (const auto it = m.cell_data.find("nastran:ref"); it != m.cell_data.end()) {
    bool ok = true;
    for (const auto& a : it->second) ok = ok && int_column(a);
    if (ok) {
      pid = &it->second;
      kept.push_back({wr::kCellData, {"nastran:ref"}});
    }
  }
  wr::note_point_dims(m, "Nastran", notes);
  wr::note_dropped(m, "Nastran", notes, wr::kAll, kept);
  OutFile out(target);
  wr::Sink s(out);
  s.put("$ written by meshdock\nBEGIN BULK\n");
  std::int64_t local_cp = 0;
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    s.put("GRID,");
    s.text(i + 1);
    s.put(',');
    if (cp) {
      const auto c = int_at(*cp, static_cast<std::size_t>(i));
      local_cp += c != 0;
      s.text(c);
    }
    for (int k = 0; k < 3; ++k) {
      s.put(',');
      real(s, wr::coord(m, i, k));
    }
    s.put('\n');
    s.maybe_flush();
  }
  std::int64_t id = 0;
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    const auto* t = nastran_type(m.cells[b]);
    std::int64_t row = 0;
    wr::each_cell(m.cells[b], [&](const std::int64_t* c, std::size_t n) {
      s.put(t->card);
      s.put(',');
      s.text(++id);
      s.put(',');
      if (pid) s.text(int_at((*pid)[b], static_cast<std::size_t>(row)));
      ++row;
      // Data fields 2 and 3 are the ids: 6 grids on the first line, 8 on each one after.
      for (std::size_t k = 0; k < n; ++k) {
        if (k == 6 || (k > 6 && (k - 6) % 8 == 0)) s.put(",+\n+");
        s.put(',');
        s.text(c[t->order ? t->order[k] : k] + 1);
      }
      s.put('\n');
      s.maybe_flush();
    });
  }
  s.put("ENDDATA\n");
  s.flush();
  out.commit();
  // meshdock's points are in the basic system (its reader takes GRIDs in CORD systems there), so
  // a CP kept from nastran:ref names a system these coordinates are not in, and no CORD card.
  if (local_cp > 0)
    notes.push_back("nastran: " + target.path + ": " + std::to_string(local_cp) +
                    " GRIDs written with their CP from nastran:ref (not 0) and basic "
                    "coordinates; no CORD cards are written (Nastran needs them defined)");
  return notes;
}

}  // namespace meshdock::mesh
