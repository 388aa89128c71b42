// Legacy VTK (.vtk) UNSTRUCTURED_GRID, ASCII and BINARY (big-endian by the format's rule):
// POINTS, CELLS (version 5.x OFFSETS / CONNECTIVITY, or the older count-prefixed list),
// CELL_TYPES, POINT_DATA / CELL_DATA with FIELD, SCALARS (+ LOOKUP_TABLE), VECTORS, NORMALS.
// Blocks and node order as the VTU reader (vtk_cells), data in the file's dtype, points float64.
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
    std::vector<std::int64_t> conn, ends, types;
    std::int64_t npoints = 0;
    bool have_points = false;
    std::string target;  // POINT_DATA or CELL_DATA
    std::int64_t target_n = 0;
    std::vector<std::pair<std::string, Array>> cell_arrays;
    while (true) {
      const auto key = c_.token();
      if (key.empty()) break;
      if (key == "DATASET") {
        const auto kind = c_.token();
        if (kind != "UNSTRUCTURED_GRID")
          c_.fail("DATASET " + std::string(kind) + " is not supported (UNSTRUCTURED_GRID is)");
      } else if (key == "POINTS") {
        npoints = count("point count");
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        const Array p = values(type, npoints * 3, "POINTS");
        if (type.code != 2) c_.fail("POINTS must be float or double");
        mesh_.points = Array::of<double>({npoints, 3});
        for (std::int64_t i = 0; i < 3 * npoints; ++i)
          mesh_.points.as<double>()[i] = as_double(p, static_cast<std::size_t>(i));
        have_points = true;
      } else if (key == "CELLS") {
        const auto a = count("cell count");
        const auto b = count("cell list size");
        c_.rest_of_line();
        if (version5_) {
          ends = read_named_ints("OFFSETS", a);
          if (ends.empty() || ends.front() != 0) c_.fail("OFFSETS must start with 0");
          ends.erase(ends.begin());
          conn = read_named_ints("CONNECTIVITY", b);
        } else {
          const auto flat = to_int64(values(DType{0, 32, 1}, b, "CELLS"));
          std::size_t i = 0;
          for (std::int64_t c = 0; c < a; ++c) {
            if (i >= flat.size())
              c_.fail("CELLS list ends after " + std::to_string(c) + " of " + std::to_string(a) +
                      " cells");
            const auto n = flat[i++];
            if (n < 0 || static_cast<std::size_t>(n) > flat.size() - i)
              c_.fail("cell " + std::to_string(c) + " claims " + std::to_string(n) +
                      " points, more than the list holds");
            conn.insert(
                conn.end(), flat.begin() + static_cast<std::ptrdiff_t>(i),
                flat.begin() + static_cast<std::ptrdiff_t>(i + static_cast<std::size_t>(n)));
            i += static_cast<std::size_t>(n);
            ends.push_back(static_cast<std::int64_t>(conn.size()));
          }
        }
      } else if (key == "CELL_TYPES") {
        const auto n = count("cell type count");
        c_.rest_of_line();
        types = to_int64(values(DType{0, 32, 1}, n, "CELL_TYPES"));
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
      } else if (key == "VECTORS" || key == "NORMALS") {
        const std::string name(c_.token());
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        add(target, target_n, name, shaped(values(type, 3 * target_n, name), 3), target_n,
            cell_arrays);
      } else if (key == "METADATA") {
        // Informational keys up to the next blank line.
        c_.rest_of_line();
        while (!c_.at_end() && !Cursor::trim(c_.rest_of_line()).empty()) {
        }
      } else {
        c_.fail("keyword '" + std::string(key.substr(0, 40)) + "' is not supported");
      }
    }
    if (!have_points) c_.fail("no POINTS section");
    append_vtk_cells<std::int64_t>(
        mesh_, conn, ends, types, npoints, 0, cell_arrays,
        [&](const std::string& what) { throw ReadError(c_.file() + ": " + what); });
    return std::move(mesh_);
  }

 private:
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

  std::vector<std::int64_t> read_named_ints(const char* name, std::int64_t n) {
    if (c_.token() != name) c_.fail(std::string("expected ") + name);
    const auto type = dtype(c_.token());
    c_.rest_of_line();
    return to_int64(values(type, n, name));
  }

  // `n` values of `type` into a flat Array (binary: big-endian raw bytes; ascii: text numbers).
  Array values(DType type, std::int64_t n, const std::string& what) {
    const std::size_t item = type.bits / 8;
    if (static_cast<std::uint64_t>(n) > c_.remaining() / (binary_ ? item : 1)) {
      c_.fail(what + ": " + std::to_string(n) + " values cannot fit in the " +
              std::to_string(c_.remaining()) + " bytes left");
    }
    Array a = Array::empty(type, {n});
    auto* dst = static_cast<std::uint8_t*>(a.data());
    if (binary_) {
      std::memcpy(dst, c_.raw(static_cast<std::size_t>(n) * item, what.c_str()),
                  static_cast<std::size_t>(n) * item);
      if (item > 1) {
        for (std::int64_t i = 0; i < n; ++i) std::reverse(dst + i * item, dst + (i + 1) * item);
      }
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

  static double as_double(const Array& a, std::size_t i) {
    if (a.dtype().bits == 32) {
      float f;
      std::memcpy(&f, static_cast<const char*>(a.data()) + 4 * i, 4);
      return f;
    }
    double d;
    std::memcpy(&d, static_cast<const char*>(a.data()) + 8 * i, 8);
    return d;
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
