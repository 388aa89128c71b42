// Legacy VTK (.vtk), ASCII and BINARY (big-endian by the format's rule), every DATASET kind:
//   UNSTRUCTURED_GRID: POINTS, CELLS (version 5.x OFFSETS / CONNECTIVITY, or the older
//     count-prefixed list), CELL_TYPES;
//   POLYDATA: POINTS, VERTICES, LINES, POLYGONS, TRIANGLE_STRIPS, in that (VTK's) cell order,
//     each cell typed as vtkPolyData does (1 id: vertex, 2: line, 3: triangle, 4: quad, ...);
//   STRUCTURED_POINTS (DIMENSIONS, ORIGIN, SPACING), STRUCTURED_GRID (DIMENSIONS, POINTS),
//   RECTILINEAR_GRID (DIMENSIONS, X/Y/Z_COORDINATES): points x fastest, hexahedra / quads /
//     lines in VTK's cell order, with a note;
//   POINT_DATA / CELL_DATA with FIELD, SCALARS (+ LOOKUP_TABLE), COLOR_SCALARS (uint8, as
//     VTK keeps them), VECTORS, NORMALS, TENSORS ((n, 9)), TENSORS6, TEXTURE_COORDINATES,
//     GLOBAL_IDS, PEDIGREE_IDS; a standalone LOOKUP_TABLE is skipped with a note.
// Cell types meshio has no block for (poly-vertex, poly-line, triangle strip, voxel) are
// decomposed as VTK does (expand_vtk_cells), with a note. Blocks and node order as the VTU
// reader (vtk_cells), data in the file's dtype, points float64.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/readers/vtk_cells.hpp"

namespace meshdock::mesh {

namespace {

std::optional<DType> legacy_dtype(std::string_view s) {
  static const std::map<std::string_view, DType> kTypes = {{"bit", {1, 8, 1}},
                                                           {"unsigned_char", {1, 8, 1}},
                                                           {"char", {0, 8, 1}},
                                                           {"unsigned_short", {1, 16, 1}},
                                                           {"short", {0, 16, 1}},
                                                           {"unsigned_int", {1, 32, 1}},
                                                           {"int", {0, 32, 1}},
                                                           {"unsigned_long", {1, 64, 1}},
                                                           {"long", {0, 64, 1}},
                                                           {"float", {2, 32, 1}},
                                                           {"double", {2, 64, 1}},
                                                           {"vtktypeint64", {0, 64, 1}},
                                                           {"vtktypeuint64", {1, 64, 1}},
                                                           {"vtkIdType", {0, 64, 1}},
                                                           {"vtktypeint8", {0, 8, 1}},
                                                           {"vtktypeuint8", {1, 8, 1}},
                                                           {"vtktypeint16", {0, 16, 1}},
                                                           {"vtktypeuint16", {1, 16, 1}},
                                                           {"vtktypeint32", {0, 32, 1}},
                                                           {"vtktypeuint32", {1, 32, 1}},
                                                           {"vtktypefloat32", {2, 32, 1}},
                                                           {"vtktypefloat64", {2, 64, 1}}};
  auto it = kTypes.find(s);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// Big-endian items of `size` bytes from `src` into native (little-endian) order at `dst`: one
// tight loop per width, which the compiler turns into vector shuffles.
void swap_copy(std::uint8_t* dst, const char* src, std::size_t n, std::size_t size) {
  auto run = [&](auto zero, auto swap) {
    using U = decltype(zero);
    for (std::size_t i = 0; i < n; ++i) {
      U v;
      std::memcpy(&v, src + i * sizeof(U), sizeof(U));
      v = swap(v);
      std::memcpy(dst + i * sizeof(U), &v, sizeof(U));
    }
  };
  switch (size) {
    case 2:
      run(std::uint16_t{}, [](std::uint16_t v) { return __builtin_bswap16(v); });
      break;
    case 4:
      run(std::uint32_t{}, [](std::uint32_t v) { return __builtin_bswap32(v); });
      break;
    case 8:
      run(std::uint64_t{}, [](std::uint64_t v) { return __builtin_bswap64(v); });
      break;
    default:
      std::memcpy(dst, src, n * size);
  }
}

// One cell list of the file: int64 connectivity and offsets (n + 1, from 0), as Arrays so that
// a 5.x file's int64 arrays are used as read (no widening copy) and a one-kind piece's
// connectivity becomes its block as it is.
struct CellList {
  Array conn = Array::of<std::int64_t>({0});
  Array offsets = Array::from_vector(std::vector<std::int64_t>{0});
  std::span<const std::int64_t> ids() const { return {conn.as<std::int64_t>(), conn.size()}; }
  std::span<const std::int64_t> ends() const {
    return {offsets.as<std::int64_t>() + 1, offsets.size() - 1};
  }
};

// An integer Array as int64: itself when it is int64 already, else widened.
Array int64_array(Array a) {
  if (a.dtype().code == 0 && a.dtype().bits == 64) return a;
  return Array::from_vector(to_int64(a));
}

class VtkReader {
 public:
  VtkReader(std::string_view data, const std::string& path) : c_(data, path) {}

  Mesh read() {
    const auto magic = c_.rest_of_line();
    if (magic.rfind("# vtk DataFile Version", 0) != 0)
      c_.fail("not a legacy VTK file (no '# vtk DataFile Version' line)");
    const auto ver = Cursor::trim(magic.substr(22));
    version5_ = !ver.empty() && ver[0] >= '5';
    c_.rest_of_line();  // title
    const auto mode = Cursor::trim(c_.rest_of_line());
    if (mode == "BINARY")
      binary_ = true;
    else if (mode != "ASCII")
      c_.fail("third line is '" + std::string(mode) + "', expected ASCII or BINARY");
    CellList cells;
    std::vector<std::int64_t> types;
    std::map<std::string, CellList> poly;  // POLYDATA sections by keyword
    std::array<std::int64_t, 3> dims{};
    bool have_dims = false;
    std::array<double, 3> origin{0, 0, 0}, spacing{1, 1, 1};
    std::array<std::vector<double>, 3> axes;  // RECTILINEAR_GRID coordinates
    bool have_points = false;
    std::string target;  // POINT_DATA or CELL_DATA
    std::int64_t target_n = 0;
    std::vector<std::pair<std::string, Array>> cell_arrays;
    while (true) {
      const auto key = c_.token();
      if (key.empty()) break;
      if (key == "DATASET") {
        dataset_ = std::string(c_.token());
        if (dataset_ != "UNSTRUCTURED_GRID" && dataset_ != "POLYDATA" &&
            dataset_ != "STRUCTURED_POINTS" && dataset_ != "STRUCTURED_GRID" &&
            dataset_ != "RECTILINEAR_GRID") {
          c_.fail("DATASET " + dataset_.substr(0, 40) +
                  " is not supported (UNSTRUCTURED_GRID, POLYDATA, STRUCTURED_POINTS, "
                  "STRUCTURED_GRID, RECTILINEAR_GRID are)");
        }
      } else if (key == "POINTS") {
        const auto n = count("point count");
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        if (type.code != 2) c_.fail("POINTS must be float or double");
        mesh_.points = Array::of<double>({n, 3});
        doubles(type, n * 3, "POINTS", mesh_.points.as<double>());
        have_points = true;
      } else if (key == "CELLS") {
        cells = cell_list("CELLS");
      } else if (key == "VERTICES" || key == "LINES" || key == "POLYGONS" ||
                 key == "TRIANGLE_STRIPS") {
        const std::string k(key);
        if (poly.count(k)) c_.fail(k + " appears twice");
        poly[k] = cell_list(k);
      } else if (key == "CELL_TYPES") {
        const auto n = count("cell type count");
        c_.rest_of_line();
        types = to_int64(values(DType{0, 32, 1}, n, "CELL_TYPES"));
      } else if (key == "DIMENSIONS") {
        for (auto& d : dims) d = count("dimension");
        have_dims = true;
      } else if (key == "ORIGIN") {
        for (auto& o : origin) o = c_.number<double>("origin");
      } else if (key == "SPACING" || key == "ASPECT_RATIO") {
        for (auto& s : spacing) s = c_.number<double>("spacing");
      } else if (key == "X_COORDINATES" || key == "Y_COORDINATES" || key == "Z_COORDINATES") {
        const std::size_t axis = static_cast<std::size_t>(key[0] - 'X');
        const auto n = count("coordinate count");
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        axes[axis].resize(static_cast<std::size_t>(n));
        doubles(type, n, std::string(key), axes[axis].data());
      } else if (key == "POINT_DATA" || key == "CELL_DATA") {
        target = std::string(key);
        target_n = count("tuple count");
      } else if (key == "FIELD") {
        c_.token();  // field name
        const auto k = count("number of arrays");
        c_.rest_of_line();
        for (std::int64_t i = 0; i < k; ++i) {
          const std::string name(c_.token());
          const auto comps = count("components");
          const auto tuples = count("tuples");
          const auto type = dtype(c_.token());
          c_.rest_of_line();
          add(target, target_n, name, shaped(values(type, comps * tuples, name), comps), tuples,
              cell_arrays);
        }
      } else if (key == "SCALARS") {
        const std::string name(c_.token());
        const auto type = dtype(c_.token());
        std::int64_t comps = 1;
        c_.skip_blanks();
        if (!c_.at_end() && c_.data()[c_.offset()] != '\n') comps = count("components");
        c_.rest_of_line();
        if (c_.token() != "LOOKUP_TABLE")
          c_.fail("SCALARS '" + name + "' is not followed by LOOKUP_TABLE");
        c_.rest_of_line();
        add(target, target_n, name, shaped(values(type, comps * target_n, name), comps), target_n,
            cell_arrays);
      } else if (key == "COLOR_SCALARS") {
        const std::string name(c_.token());
        const auto comps = count("components");
        c_.rest_of_line();
        add(target, target_n, name, shaped(colors(comps * target_n, name), comps), target_n,
            cell_arrays);
      } else if (key == "LOOKUP_TABLE") {
        // A colour table for SCALARS (4 values a colour): not mesh data.
        const std::string name(c_.token());
        const auto n = count("colour count");
        c_.rest_of_line();
        colors(4 * n, "LOOKUP_TABLE " + name);
        mesh_.notes.push_back("vtk: lookup table '" + name + "' (" + std::to_string(n) +
                              " colours) not kept");
      } else if (key == "VECTORS" || key == "NORMALS" || key == "TENSORS" || key == "TENSORS6") {
        const std::string name(c_.token());
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        const std::int64_t comps = key == "TENSORS" ? 9 : key == "TENSORS6" ? 6 : 3;
        add(target, target_n, name, shaped(values(type, comps * target_n, name), comps), target_n,
            cell_arrays);
      } else if (key == "TEXTURE_COORDINATES") {
        const std::string name(c_.token());
        const auto comps = count("components");
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        add(target, target_n, name, shaped(values(type, comps * target_n, name), comps), target_n,
            cell_arrays);
      } else if (key == "GLOBAL_IDS" || key == "PEDIGREE_IDS") {
        const std::string name(c_.token());
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        add(target, target_n, name, values(type, target_n, name), target_n, cell_arrays);
      } else if (key == "METADATA") {
        // Informational keys up to the next blank line.
        c_.rest_of_line();
        while (!c_.at_end() && !Cursor::trim(c_.rest_of_line()).empty()) {
        }
      } else {
        c_.fail("keyword '" + std::string(key.substr(0, 40)) + "' is not supported");
      }
    }
    auto fail = [&](const std::string& what) { throw ReadError(c_.file() + ": " + what); };
    if (dataset_ == "STRUCTURED_POINTS" || dataset_ == "STRUCTURED_GRID" ||
        dataset_ == "RECTILINEAR_GRID") {
      if (!have_dims) fail(dataset_ + " without DIMENSIONS");
      structured(dims, origin, spacing, axes, have_points, cell_arrays);
      return std::move(mesh_);
    }
    if (!have_points) c_.fail("no POINTS section");
    if (dataset_ == "POLYDATA") {
      if (!types.empty() || cells.conn.size()) fail("POLYDATA with CELLS / CELL_TYPES");
      std::vector<std::int64_t> conn, ends;
      for (const char* k : {"VERTICES", "LINES", "POLYGONS", "TRIANGLE_STRIPS"}) {
        auto it = poly.find(k);
        if (it == poly.end()) continue;
        std::int64_t begin = 0;
        const auto base = static_cast<std::int64_t>(conn.size());
        const auto sec_ends = it->second.ends();
        const auto sec_ids = it->second.ids();
        for (std::size_t c = 0; c < sec_ends.size(); ++c) {
          const auto end = sec_ends[c];
          const auto n = end - begin;
          if (n < 1 || static_cast<std::size_t>(end) > sec_ids.size())
            fail(std::string(k) + " cell " + std::to_string(c) + " has offset " +
                 std::to_string(end) + " after " + std::to_string(begin));
          const std::string_view kv(k);
          std::int64_t t = 6;  // TRIANGLE_STRIPS
          if (kv == "VERTICES") t = n == 1 ? 1 : 2;
          if (kv == "LINES") t = n == 2 ? 3 : 4;
          if (kv == "POLYGONS") t = n == 3 ? 5 : n == 4 ? 9 : 7;
          if ((kv == "LINES" && n < 2) || (kv != "VERTICES" && kv != "LINES" && n < 3))
            fail(std::string(k) + " cell " + std::to_string(c) + " has " + std::to_string(n) +
                 " points");
          types.push_back(t);
          ends.push_back(base + end);
          begin = end;
        }
        conn.insert(conn.end(), sec_ids.begin(), sec_ids.end());
      }
      ends.insert(ends.begin(), 0);
      cells.conn = Array::from_vector(conn);
      cells.offsets = Array::from_vector(ends);
    } else if (!poly.empty()) {
      fail(poly.begin()->first + " in a DATASET " +
           (dataset_.empty() ? std::string("(none)") : dataset_) + " file (POLYDATA only)");
    }
    // CELL_DATA's count is the file's word, not the cells': a shorter array must not be sliced.
    for (const auto& [name, a] : cell_arrays) {
      if (a.dim(0) != static_cast<std::int64_t>(types.size()))
        fail("CELL_DATA array '" + name + "' has " + std::to_string(a.dim(0)) + " rows for " +
             std::to_string(types.size()) + " cells");
    }
    if (auto ex = expand_vtk_cells(cells.ids(), cells.ends(), types, fail)) {
      for (auto& [name, a] : cell_arrays) a = gather_rows(a, ex->source);
      for (auto& n : ex->notes) mesh_.notes.push_back("vtk: " + n);
      append_vtk_cells<std::int64_t>(mesh_, ex->conn, ex->ends, ex->types, mesh_.num_points(), 0,
                                     cell_arrays, fail);
    } else {
      append_vtk_cells<std::int64_t>(mesh_, cells.ids(), cells.ends(), types, mesh_.num_points(), 0,
                                     cell_arrays, fail, nullptr, &cells.conn);
    }
    return std::move(mesh_);
  }

 private:
  // CELLS / VERTICES / LINES / POLYGONS / TRIANGLE_STRIPS: "<a> <b>" then the 5.x OFFSETS and
  // CONNECTIVITY arrays (a offsets, b ids) or the older list of a cells, b entries in all.
  CellList cell_list(const std::string& section) {
    CellList out;
    const auto a = count("cell count");
    const auto b = count("cell list size");
    c_.rest_of_line();
    if (version5_) {
      out.offsets = read_named_ints("OFFSETS", a);
      const auto* o = out.offsets.as<std::int64_t>();
      if (out.offsets.size() == 0 || o[0] != 0) c_.fail(section + " OFFSETS must start with 0");
      bool ok = true;
      for (std::size_t i = 1; i < out.offsets.size(); ++i) ok &= o[i] >= o[i - 1] && o[i] <= b;
      for (std::size_t i = 1; !ok && i < out.offsets.size(); ++i) {
        if (o[i] < o[i - 1] || o[i] > b)
          c_.fail(section + " OFFSETS[" + std::to_string(i) + "] = " + std::to_string(o[i]) +
                  " is out of order or past the " + std::to_string(b) + "-entry CONNECTIVITY");
      }
      out.conn = read_named_ints("CONNECTIVITY", b);
      return out;
    }
    const auto flat = to_int64(values(DType{0, 32, 1}, b, section));
    std::size_t i = 0;
    std::vector<std::int64_t> conn, ends{0};
    conn.reserve(flat.size());
    ends.reserve(static_cast<std::size_t>(a) + 1);
    for (std::int64_t c = 0; c < a; ++c) {
      if (i >= flat.size())
        c_.fail(section + " list ends after " + std::to_string(c) + " of " + std::to_string(a) +
                " cells");
      const auto n = flat[i++];
      if (n < 0 || static_cast<std::size_t>(n) > flat.size() - i)
        c_.fail(section + " cell " + std::to_string(c) + " claims " + std::to_string(n) +
                " points, more than the list holds");
      conn.insert(conn.end(), flat.begin() + static_cast<std::ptrdiff_t>(i),
                  flat.begin() + static_cast<std::ptrdiff_t>(i + static_cast<std::size_t>(n)));
      i += static_cast<std::size_t>(n);
      ends.push_back(static_cast<std::int64_t>(conn.size()));
    }
    out.conn = Array::from_vector(conn);
    out.offsets = Array::from_vector(ends);
    return out;
  }

  // STRUCTURED_POINTS / STRUCTURED_GRID / RECTILINEAR_GRID: the points (x fastest) and the
  // cells VTK makes of the grid: hexahedra over 3 axes longer than 1, quads over 2, lines over
  // 1, one vertex for a single point.
  void structured(const std::array<std::int64_t, 3>& dims, const std::array<double, 3>& origin,
                  const std::array<double, 3>& spacing,
                  const std::array<std::vector<double>, 3>& axes, bool have_points,
                  std::vector<std::pair<std::string, Array>>& cell_arrays) {
    auto fail = [&](const std::string& what) { throw ReadError(c_.file() + ": " + what); };
    const auto [nx, ny, nz] = dims;
    if (nx < 1 || ny < 1 || nz < 1 || nx > (std::int64_t{1} << 21) ||
        ny > (std::int64_t{1} << 21) || nz > (std::int64_t{1} << 21) ||
        static_cast<std::uint64_t>(nx * ny) > c_.data().size() ||
        static_cast<std::uint64_t>(nx * ny * nz) > c_.data().size() * 8)
      fail("DIMENSIONS " + std::to_string(nx) + " " + std::to_string(ny) + " " +
           std::to_string(nz) + " is not a grid this file can describe");
    const std::int64_t npoints = nx * ny * nz;
    if (dataset_ == "STRUCTURED_GRID") {
      if (!have_points) fail("STRUCTURED_GRID without POINTS");
      if (mesh_.num_points() != npoints)
        fail("STRUCTURED_GRID has " + std::to_string(mesh_.num_points()) +
             " POINTS for DIMENSIONS of " + std::to_string(npoints));
    } else {
      if (have_points) fail(dataset_ + " with POINTS");
      mesh_.points = Array::of<double>({npoints, 3});
      auto* p = mesh_.points.as<double>();
      const bool rect = dataset_ == "RECTILINEAR_GRID";
      for (std::size_t a = 0; rect && a < 3; ++a) {
        if (static_cast<std::int64_t>(axes[a].size()) != dims[a])
          fail("RECTILINEAR_GRID has " + std::to_string(axes[a].size()) + " " +
               static_cast<char>('X' + a) + "_COORDINATES for dimension " +
               std::to_string(dims[a]));
      }
      std::size_t i = 0;
      for (std::int64_t k = 0; k < nz; ++k)
        for (std::int64_t j = 0; j < ny; ++j)
          for (std::int64_t x = 0; x < nx; ++x, i += 3) {
            const std::int64_t ijk[3] = {x, j, k};
            for (std::size_t a = 0; a < 3; ++a)
              p[i + a] = rect ? axes[a][static_cast<std::size_t>(ijk[a])]
                              : origin[a] + static_cast<double>(ijk[a]) * spacing[a];
          }
    }
    std::vector<std::int64_t> active;  // point-index strides of the axes longer than 1
    std::vector<std::int64_t> lens;
    const std::int64_t stride[3] = {1, nx, nx * ny};
    for (std::size_t a = 0; a < 3; ++a) {
      if (dims[a] > 1) {
        active.push_back(stride[a]);
        lens.push_back(dims[a] - 1);
      }
    }
    static constexpr const char* kKinds[] = {"vertex", "line", "quad", "hexahedron"};
    const auto npc = std::int64_t{1} << active.size();
    std::int64_t ncells = 1;
    for (const auto l : lens) ncells *= l;
    Array block = Array::of<std::int64_t>({ncells, npc});
    auto* out = block.as<std::int64_t>();
    // VTK's cell order (first active axis fastest) and node order: the base corner, +a, +a+b,
    // +b, then the same one layer up.
    std::vector<std::int64_t> idx(active.size(), 0);
    for (std::int64_t c = 0; c < ncells; ++c) {
      std::int64_t base = 0;
      for (std::size_t a = 0; a < active.size(); ++a) base += idx[a] * active[a];
      std::int64_t* row = out + c * npc;
      if (active.empty()) {
        row[0] = base;
      } else if (active.size() == 1) {
        row[0] = base;
        row[1] = base + active[0];
      } else {
        const auto da = active[0], db = active[1];
        const std::int64_t quad[4] = {base, base + da, base + da + db, base + db};
        for (int q = 0; q < 4; ++q) row[q] = quad[q];
        if (active.size() == 3)
          for (int q = 0; q < 4; ++q) row[4 + q] = quad[q] + active[2];
      }
      for (std::size_t a = 0; a < idx.size(); ++a) {
        if (++idx[a] < lens[a]) break;
        idx[a] = 0;
      }
    }
    for (const auto& [name, a] : cell_arrays) {
      if (a.dim(0) != ncells)
        fail("CELL_DATA array '" + name + "' has " + std::to_string(a.dim(0)) + " rows for " +
             std::to_string(ncells) + " cells");
      mesh_.cell_data[name].push_back(a);
    }
    const char* kind = kKinds[active.size()];
    mesh_.cells.push_back(CellBlock::fixed(kind, std::move(block)));
    mesh_.notes.push_back("vtk: DATASET " + dataset_ + " " + std::to_string(nx) + "x" +
                          std::to_string(ny) + "x" + std::to_string(nz) + " converted to " +
                          std::to_string(npoints) + " points and " + std::to_string(ncells) + " " +
                          kind + " cells");
  }

  std::int64_t count(const char* what) {
    const auto n = c_.number<std::int64_t>(what);
    if (n < 0 || static_cast<std::uint64_t>(n) > c_.data().size())
      c_.fail(std::string(what) + " " + std::to_string(n) + " is more than the file can hold");
    return n;
  }

  DType dtype(std::string_view name) {
    auto t = legacy_dtype(name);
    if (!t) c_.fail("data type '" + std::string(name) + "' is not supported");
    return *t;
  }

  Array read_named_ints(const char* name, std::int64_t n) {
    if (c_.token() != name) c_.fail(std::string("expected ") + name);
    const auto type = dtype(c_.token());
    if (type.code == 2) c_.fail(std::string(name) + " must be an integer type");
    c_.rest_of_line();
    return int64_array(values(type, n, name));
  }

  void check_fits(DType type, std::int64_t n, const std::string& what) {
    const std::size_t item = type.bits / 8;
    if (static_cast<std::uint64_t>(n) > c_.remaining() / (binary_ ? item : 1)) {
      c_.fail(what + ": " + std::to_string(n) + " values cannot fit in the " +
              std::to_string(c_.remaining()) + " bytes left");
    }
  }

  // `n` float / double values straight into `dst` as float64 (points, coordinates): one pass,
  // no intermediate array.
  void doubles(DType type, std::int64_t n, const std::string& what, double* dst) {
    if (type.code != 2) {
      const Array a = values(type, n, what);
      for (std::int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<double>(int_at(a, static_cast<std::size_t>(i)));
      return;
    }
    check_fits(type, n, what);
    const auto count = static_cast<std::size_t>(n);
    if (!binary_) {
      for (std::size_t i = 0; i < count; ++i) dst[i] = c_.number<double>("number");
      return;
    }
    if (type.bits == 64) {
      swap_copy(reinterpret_cast<std::uint8_t*>(dst), c_.raw(count * 8, what.c_str()), count, 8);
      return;
    }
    const char* src = c_.raw(count * 4, what.c_str());
    for (std::size_t i = 0; i < count; ++i) {
      std::uint32_t v;
      std::memcpy(&v, src + 4 * i, 4);
      v = __builtin_bswap32(v);
      float f;
      std::memcpy(&f, &v, 4);
      dst[i] = f;
    }
  }

  // COLOR_SCALARS and LOOKUP_TABLE values: unsigned char in binary, floats in [0, 1] in ascii;
  // kept as uint8 either way, as VTK does.
  Array colors(std::int64_t n, const std::string& what) {
    if (binary_) return values(DType{1, 8, 1}, n, what);
    check_fits(DType{1, 8, 1}, n, what);
    Array a = Array::of<std::uint8_t>({n});
    auto* dst = a.as<std::uint8_t>();
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = c_.number<double>("colour component");
      if (!(v >= 0.0 && v <= 1.0))
        c_.fail(what + ": colour component " + std::to_string(v) + " is outside [0, 1]");
      dst[i] = static_cast<std::uint8_t>(std::lround(v * 255.0));
    }
    return a;
  }

  // `n` values of `type` into a flat Array (binary: big-endian raw bytes; ascii: text numbers).
  Array values(DType type, std::int64_t n, const std::string& what) {
    const std::size_t item = type.bits / 8;
    check_fits(type, n, what);
    Array a = Array::empty(type, {n});
    auto* dst = static_cast<std::uint8_t*>(a.data());
    if (binary_) {
      const auto count = static_cast<std::size_t>(n);
      swap_copy(dst, c_.raw(count * item, what.c_str()), count, item);
      return a;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      if (type.code == 2) {
        const double v = c_.number<double>("number");
        if (type.bits == 32) {
          const float f = static_cast<float>(v);
          std::memcpy(dst + i * 4, &f, 4);
        } else
          std::memcpy(dst + i * 8, &v, 8);
      } else {
        const auto v = c_.number<std::int64_t>("integer");
        std::memcpy(dst + i * item, &v, item);  // little-endian: low bytes first
      }
    }
    return a;
  }

  static Array shaped(Array a, std::int64_t comps) {
    if (comps <= 1) return a;
    Array out = Array::empty(a.dtype(), {a.dim(0) / comps, comps});
    std::memcpy(out.data(), a.data(), a.nbytes());
    return out;
  }

  void add(const std::string& target, std::int64_t target_n, const std::string& name, Array a,
           std::int64_t tuples, std::vector<std::pair<std::string, Array>>& cells) {
    if (target.empty()) {
      mesh_.field_data[name] = std::move(a);
      return;
    }
    if (tuples != target_n)
      c_.fail(target + " array '" + name + "' has " + std::to_string(tuples) +
              " tuples, expected " + std::to_string(target_n));
    if (target == "POINT_DATA")
      mesh_.point_data[name] = std::move(a);
    else
      cells.emplace_back(name, std::move(a));
  }

  Cursor c_;
  bool binary_ = false, version5_ = false;
  std::string dataset_;
  Mesh mesh_;
};

}  // namespace

Mesh read_vtk(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data) { return VtkReader(data, in.path).read(); }, Access::read);
}

Mesh read_vtk_bytes(std::string_view data, const std::string& name) {
  return VtkReader(data, name).read();
}

}  // namespace meshdock::mesh
