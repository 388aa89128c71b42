// Wavefront OBJ writer: "v x y z" per point; point_data "obj:vt" / "obj:vn" (what read_obj and
// meshio give) as vt / vn lines, referenced from every face ("f 1/1/1"); triangle, quad and
// polygon blocks as f, line blocks as l, vertex blocks as p (one point each; meshio skips l
// and p, read_obj reads both); cell_data "obj:group_ids" as g lines where the id changes. Any
// other block is a WriteError naming it; any other data is noted.
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

std::vector<std::string> write_obj(const Mesh& m, const OutTarget& target) {
  validate_mesh(m, target.path);
  for (std::size_t b = 0; b < m.cells.size(); ++b)
    if (!wr::is_face_block(m.cells[b]) && m.cells[b].type != "line" && m.cells[b].type != "vertex")
      throw WriteError(target.path + ": " + wr::block_name(m, b) +
                       " cannot be written to OBJ, which holds faces, lines and points only; "
                       "write it as " +
                       wr::formats_for(m.cells[b]));
  std::vector<std::string> notes;
  // read_obj gives p elements a block after the faces and lines, as they come in no order of
  // their own there: a vertex block written before them reads back moved.
  for (std::size_t b = 0; b + 1 < m.cells.size(); ++b)
    if (m.cells[b].type == "vertex" && m.cells[b + 1].type != "vertex") {
      notes.push_back(wr::block_name(m, b) +
                      " is written as p lines; OBJ readers put points after the faces and "
                      "lines, so it reads back as a later block");
      break;
    }
  auto float_rows = [&](const char* name, std::int64_t lo, std::int64_t hi) -> const Array* {
    auto it = m.point_data.find(name);
    if (it == m.point_data.end()) return nullptr;
    const auto& a = it->second;
    if (a.dtype().code != 2 || a.ndim() != 2 || a.dim(1) < lo || a.dim(1) > hi) {
      notes.push_back(std::string("point_data '") + name + "' is not written: OBJ needs (n, " +
                      std::to_string(lo) + ".." + std::to_string(hi) + ") floats there");
      return nullptr;
    }
    return &a;
  };
  const Array* vt = float_rows("obj:vt", 1, 3);
  const Array* vn = float_rows("obj:vn", 3, 3);
  const std::vector<Array>* groups = nullptr;
  if (auto it = m.cell_data.find("obj:group_ids"); it != m.cell_data.end()) {
    bool ok = true;
    for (const auto& p : it->second) ok &= wr::is_integer_column(p);
    if (ok)
      groups = &it->second;
    else
      notes.push_back("cell_data 'obj:group_ids' is not written: OBJ needs 1-d integers there");
  }
  wr::note_dropped(m, "OBJ", notes, wr::kAll,
                   {{wr::kPointData, {"obj:vt", "obj:vn"}}, {wr::kCellData, {"obj:group_ids"}}});
  wr::note_point_dims(m, "OBJ", notes);

  OutFile out(target);
  wr::Sink s(out);
  s.put("# written by meshdock\n");
  const auto np = m.num_points();
  for (std::int64_t i = 0; i < np; ++i) {
    s.put("v ");
    for (int k = 0; k < 3; ++k) {
      s.text(wr::coord(m, i, k));
      s.put(k == 2 ? '\n' : ' ');
    }
    s.maybe_flush();
  }
  auto rows = [&](const Array* a, const char* key) {
    if (!a) return;
    const auto w = a->dim(1);
    for (std::int64_t i = 0; i < np; ++i) {
      s.put(key);
      for (std::int64_t k = 0; k < w; ++k) {
        s.put(' ');
        wr::text_value(s, *a, static_cast<std::size_t>(i * w + k));
      }
      s.put('\n');
      s.maybe_flush();
    }
  };
  rows(vt, "vt");
  rows(vn, "vn");
  const char* suffix = vt ? "/" : vn ? "//" : nullptr;  // v/vt[/vn] or v//vn
  std::int64_t group = -1;                              // what a reader counts before the first g
  bool renumbered = false;
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    const bool line = m.cells[b].type == "line";
    const bool point = m.cells[b].type == "vertex";
    std::int64_t cell = 0;
    wr::each_cell(m.cells[b], [&](const std::int64_t* c, std::size_t n) {
      if (groups) {
        const auto g = int_at((*groups)[b], static_cast<std::size_t>(cell));
        // Readers number groups by counting g lines: as many as reach the id again.
        if (g != group) {
          const bool counted = g > group && g - group <= 1024;
          renumbered |= !counted;
          for (auto k = counted ? g - group : 1; k > 0; --k) s.put("g\n");
          group = g;
        }
      }
      ++cell;
      s.put(point ? "p" : line ? "l" : "f");
      for (std::size_t k = 0; k < n; ++k) {
        s.put(' ');
        s.text(c[k] + 1);
        if (suffix && !line && !point) {
          s.put(suffix);
          s.text(c[k] + 1);
          if (vt && vn) {
            s.put('/');
            s.text(c[k] + 1);
          }
        }
      }
      s.put('\n');
      s.maybe_flush();
    });
  }
  if (renumbered)
    notes.push_back(
        "cell_data 'obj:group_ids' is not increasing in small steps; OBJ groups read back "
        "renumbered");
  s.flush();
  out.commit();
  return notes;
}

}  // namespace meshdock::mesh
