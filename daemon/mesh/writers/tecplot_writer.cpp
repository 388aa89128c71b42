// Tecplot ASCII writer (.dat, .tec), what meshio 5.0 writes and reads back ("tecplot"):
// TITLE, VARIABLES "X", "Y"[, "Z"], the point data's and then the cell data's names, and one
// finite-element zone, DATAPACKING = BLOCK, with VARLOCATION = ([k-n] = CELLCENTERED) for the
// cell data. The zone type is the cells':
// - one type: FELINESEG, FETRIANGLE, FEQUADRILATERAL, FETETRAHEDRON or FEBRICK; pyramids and
//   wedges as FEBRICK with repeated nodes (meshio's orders; they read back as hexahedra: noted);
// - several: FEQUADRILATERAL (triangles with the last node twice) or FEBRICK (tetra, pyramid,
//   wedge with repeated nodes), as meshio; noted;
// blocks of a lower dimension than the highest, and of types Tecplot has no zone for, are noted
// and left out (meshio warns and skips them too). Point data and cell data of one value an
// entity are a variable each, (n, k) arrays k variables name_0 .. name_{k-1} (meshio's names);
// other shapes, names Tecplot cannot quote, the coordinates' names, field data and regions are
// noted as not written. Numbers are the shortest text that reads back to the same value.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct TecType {
  const char* name;
  std::int64_t nodes;
  int dim;
  const char* zone;          // the zone type when it is the only type
  std::array<int, 8> alone;  // its nodes in that zone (meshio's meshio_to_tecplot_order)
  std::array<int, 8> mixed;  // in a mixed zone (meshio_to_tecplot_order_2)
};

constexpr std::array<TecType, 7> kTypes{{
    {"line", 2, 1, "FELINESEG", {0, 1}, {0, 1}},
    {"triangle", 3, 2, "FETRIANGLE", {0, 1, 2}, {0, 1, 2, 2}},
    {"quad", 4, 2, "FEQUADRILATERAL", {0, 1, 2, 3}, {0, 1, 2, 3}},
    {"tetra", 4, 3, "FETETRAHEDRON", {0, 1, 2, 3}, {0, 1, 2, 2, 3, 3, 3, 3}},
    {"pyramid", 5, 3, "FEBRICK", {0, 1, 2, 3, 4, 4, 4, 4}, {0, 1, 2, 3, 4, 4, 4, 4}},
    {"wedge", 6, 3, "FEBRICK", {0, 1, 4, 3, 2, 2, 5, 5}, {0, 1, 4, 3, 2, 2, 5, 5}},
    {"hexahedron", 8, 3, "FEBRICK", {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}},
}};

const TecType* tec_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& t : kTypes)
    if (b.type == t.name && b.connectivity.dim(1) == t.nodes) return &t;
  return nullptr;
}

// A name Tecplot can hold in quotes and read back as itself.
bool quotable(const std::string& s) {
  return !s.empty() && s.find_first_of("\"\n\r") == std::string::npos;
}

bool is_coordinate_name(const std::string& s) {
  return s == "X" || s == "Y" || s == "Z" || s == "x" || s == "y" || s == "z";
}

// One variable: an array (or, for cell data, the kept blocks' arrays) and its component.
struct Var {
  std::string name;
  std::vector<const Array*> arrays;
  std::int64_t width = 1;
  std::int64_t component = 0;
};

class TecplotWriter : wr::WriterState {
 public:
  TecplotWriter(const Mesh& m, const OutTarget& target) : WriterState(m, target, false) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    dim_ = m_.points.dim(1);
    if (dim_ != 2 && dim_ != 3)
      throw WriteError(path_ + ": Tecplot's X, Y[, Z] hold 2-D or 3-D points; these have " +
                       std::to_string(dim_) + " coordinates");
    pick_blocks();
    pick_variables();
    OutFile out(target_);
    wr::Sink s(out);
    s.put("TITLE = \"Written by meshdock\"\nVARIABLES = \"X\", \"Y\"");
    if (dim_ == 3) s.put(", \"Z\"");
    for (const auto* vars : {&nodal_, &centred_})
      for (const auto& v : *vars) s.put(", \"" + v.name + "\"");
    std::int64_t cells = 0;
    for (const auto b : blocks_) cells += m_.cells[b].size();
    s.put("\nZONE NODES = " + std::to_string(m_.num_points()) +
          ", ELEMENTS = " + std::to_string(cells) + ",\nDATAPACKING = BLOCK, ZONETYPE = " + zone_);
    if (!centred_.empty()) {
      const auto first = dim_ + static_cast<std::int64_t>(nodal_.size()) + 1;
      const auto last = first + static_cast<std::int64_t>(centred_.size()) - 1;
      s.put(",\nVARLOCATION = ([" + std::to_string(first) +
            (last > first ? "-" + std::to_string(last) : std::string()) + "] = CELLCENTERED)");
    }
    s.put('\n');
    for (int k = 0; k < dim_; ++k) {
      Column col(s);
      for (std::int64_t i = 0; i < m_.num_points(); ++i) col.next(wr::coord(m_, i, k));
    }
    for (const auto& v : nodal_) write_var(s, v);
    for (const auto& v : centred_) write_var(s, v);
    write_cells(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  std::int64_t dim_ = 3;
  std::vector<std::size_t> blocks_;  // the blocks written, in mesh order
  bool mixed_ = false;
  std::string zone_;
  std::vector<Var> nodal_, centred_;

  // Ten values a line.
  class Column {
   public:
    explicit Column(wr::Sink& s) : s_(s) {}
    ~Column() {
      if (n_ % 10) s_.put('\n');
    }
    template <typename T>
    void next(T v) {
      if (n_ % 10) s_.put(' ');
      s_.text(v);
      if (++n_ % 10 == 0) {
        s_.put('\n');
        s_.maybe_flush();
      }
    }
    void value(const Array& a, std::size_t i) {
      if (n_ % 10) s_.put(' ');
      wr::text_value(s_, a, i);
      if (++n_ % 10 == 0) {
        s_.put('\n');
        s_.maybe_flush();
      }
    }

   private:
    wr::Sink& s_;
    std::size_t n_ = 0;
  };

  void pick_blocks() {
    int top = 0;
    for (const auto& b : m_.cells)
      if (const auto* t = tec_type(b)) top = std::max(top, t->dim);
    const TecType* first = nullptr;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto* t = tec_type(m_.cells[b]);
      if (!t) {
        notes_.push_back(wr::block_name(m_, b) +
                         " is not written: Tecplot's FE zones hold line, triangle, quad, tetra, "
                         "pyramid, wedge and hexahedron cells");
      } else if (t->dim < top) {
        notes_.push_back(wr::block_name(m_, b) + " is not written: the zone holds the mesh's " +
                         std::to_string(top) + "-D cells only (one zone, as meshio writes)");
      } else {
        if (first && t != first) mixed_ = true;
        if (!first) first = t;
        blocks_.push_back(b);
      }
    }
    if (!first)
      throw WriteError(path_ +
                       ": no cells Tecplot can hold (line, triangle, quad, tetra, pyramid, "
                       "wedge, hexahedron)");
    zone_ = mixed_ ? (top == 2 ? "FEQUADRILATERAL" : "FEBRICK") : first->zone;
    for (const auto b : blocks_) {
      const auto* t = tec_type(m_.cells[b]);
      const bool repeated =
          mixed_ ? t->nodes != (top == 2 ? 4 : 8) : t->nodes == 5 || t->nodes == 6;
      if (repeated)
        notes_.push_back(wr::block_name(m_, b) + " is written as " + zone_ +
                         " cells with repeated nodes (readers give them back as " +
                         (zone_ == std::string("FEBRICK") ? "hexahedron" : "quad") + ")");
    }
  }

  // point_data -> nodal variables, cell_data (of the blocks written) -> cell-centred ones.
  void pick_variables() {
    auto usable = [&](const std::string& what, const std::string& name) {
      if (is_coordinate_name(name)) {
        notes_.push_back(what + " '" + name + "' is not written: X, Y, Z name the coordinates");
        return false;
      }
      if (!quotable(name)) {
        notes_.push_back(what + " '" + name +
                         "' is not written: Tecplot quotes names, which cannot hold '\"' or a "
                         "newline");
        return false;
      }
      if (name.find(' ') != std::string::npos) {
        std::string back = name;
        std::replace(back.begin(), back.end(), ' ', '_');
        notes_.push_back(what + " '" + name + "' is read back as '" + back +
                         "' (Tecplot readers, meshdock's and meshio's, join its words with '_')");
      }
      return true;
    };
    auto add = [&](std::vector<Var>& out, const std::string& what, const std::string& name,
                   std::vector<const Array*> arrays) {
      const Array& a = *arrays.front();
      if (a.ndim() != 1 && a.ndim() != 2) {
        notes_.push_back(what + " '" + name +
                         "' is not written: Tecplot holds one value or a row of values an entity");
        return;
      }
      for (const auto* p : arrays)
        if (p->dtype().code != 2 || p->dtype().bits != 64) {
          notes_.push_back(what + " '" + name +
                           "' is not float64: written as its numbers, read back as float64");
          break;
        }
      const auto width = a.ndim() == 2 ? a.dim(1) : 1;
      for (std::int64_t k = 0; k < width; ++k)
        out.push_back(Var{a.ndim() == 2 ? name + "_" + std::to_string(k) : name, arrays, width, k});
    };
    for (const auto& [name, a] : m_.point_data)
      if (usable("point_data", name)) add(nodal_, "point_data", name, {&a});
    for (const auto& [name, arrays] : m_.cell_data) {
      if (!usable("cell_data", name)) continue;
      std::vector<const Array*> kept;
      for (const auto b : blocks_) kept.push_back(&arrays[b]);
      add(centred_, "cell_data", name, std::move(kept));
    }
    wr::note_dropped(m_, "Tecplot", notes_, wr::kFieldData | wr::kRegions);
  }

  void write_var(wr::Sink& s, const Var& v) {
    Column col(s);
    for (const auto* a : v.arrays) {
      const auto rows = a->ndim() == 0 ? 0 : a->dim(0);
      for (std::int64_t i = 0; i < rows; ++i)
        col.value(*a, static_cast<std::size_t>(i * v.width + v.component));
    }
  }

  // One element a line, 1-based, in the zone's node order.
  void write_cells(wr::Sink& s) {
    for (const auto b : blocks_) {
      const auto& block = m_.cells[b];
      const auto* t = tec_type(block);
      const auto& order = mixed_ ? t->mixed : t->alone;
      const std::size_t n = zone_ == "FEBRICK"           ? 8
                            : zone_ == "FEQUADRILATERAL" ? 4
                                                         : static_cast<std::size_t>(t->nodes);
      const auto* c = block.connectivity.as<std::int64_t>();
      for (std::int64_t i = 0; i < block.size(); ++i) {
        const auto* row = c + i * t->nodes;
        for (std::size_t k = 0; k < n; ++k) {
          if (k) s.put(' ');
          s.text(row[order[k]] + 1);
        }
        s.put('\n');
        s.maybe_flush();
      }
    }
  }
};

}  // namespace

std::vector<std::string> write_tecplot(const Mesh& m, const OutTarget& target) {
  return TecplotWriter(m, target).write();
}

}  // namespace meshdock::mesh
