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
// reader (vtk_cells), data in the file's dtype, points float64. Dataset FIELD arrays named by
// region_field_name (what write_vtk makes of regions) become regions again.
//
// Memory: a BINARY file is mapped without its pages and every array is read with pread
// straight into its destination, then swapped in place a chunk at a time (through a 256 KiB
// buffer when it is widened: float -> double, int32 -> int64), so the file never adds to the
// read's peak. An ASCII file passes through a 2 MiB window (Access::window: copied in ahead
// of the parse with pread, released behind it; parsing text through a mapping costs more), so
// it adds 2 MiB to the peak, not its size. Offsets are kept only when the cells
// differ in size, cell types only when they differ in type: a one-kind mesh (what meshio and
// VTK write for a tet mesh) holds nothing but its arrays, its connectivity becoming the block
// as read.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <type_traits>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/block_sizes.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/region_fields.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {

// How VTK's reader compares keywords: case-insensitively (it lowercases what it reads).
int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A name as VTK's writer encodes it (vtkDataWriter::EncodeString: a space, '%', '"' and every
// byte outside '!'..'~' as %XX), decoded as VTK's reader does (DecodeString). Only a '%' with
// two hex digits after it is decoded: anything else stays as written (VTK would take garbage).
std::string decode_name(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < s.size() && (hi = hex_digit(s[i + 1])) >= 0 &&
        (lo = hex_digit(s[i + 2])) >= 0) {
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// Whether a token where a keyword belongs is a number: then it is a value the section before
// it did not count (VTK's keywords are words), and the message says so.
bool is_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double v;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && r.ec != std::errc::invalid_argument && r.ptr == s.data() + s.size();
}

// "1 cell", "5 entries": a count for a message.
std::string counted(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The values an integer type holds: an ascii number is read as int64 (a uint64 as itself), and
// one outside its type's range would wrap when stored in it or read as it (4294967296 in an int
// becomes 0; a cell type 2^32 + 5 a triangle), so it is refused instead, as VTK's stream read
// fails on it and the PLY reader refuses it. int64 (and vtkIdType, int64 in ascii) hold all.
// Passed by value: a reference would escape to the error path, and the range be reloaded in the
// hot loops.
struct IntRange {
  DType type;
  std::int64_t lo;
  std::uint64_t span;  // hi - lo: every int64 for a 64-bit type
  // v - lo <= hi - lo, unsigned: one compare a value, none failing for int64.
  bool fits(std::int64_t v) const {
    return static_cast<std::uint64_t>(v) - static_cast<std::uint64_t>(lo) <= span;
  }
  std::int64_t hi() const {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + span);
  }
};

IntRange int_range(DType t) {
  if (t.bits >= 64) return {t, std::numeric_limits<std::int64_t>::min(), ~std::uint64_t{0}};
  const std::uint64_t span = (std::uint64_t{1} << t.bits) - 1;
  return {t, t.code == 0 ? -(std::int64_t{1} << (t.bits - 1)) : 0, span};
}

// The ReadError of such a value: it names its array already, where a parse error gets the
// name added (values()).
struct DoesNotFit : ReadError {
  using ReadError::ReadError;
};

// An array type of the file: the dtype the Mesh holds and how the file stores it.
struct LegacyType {
  enum Kind {
    kPlain,   // big-endian items of dtype's width
    kIdType,  // int64 in the Mesh, but 4-byte ints in a binary file (VTK writes and reads
              // vtkIdType so: "currently writing vtkIdType as int")
    kBit,     // uint8 0 / 1 in the Mesh; a binary file packs them 8 a byte, first bit highest
    kString,  // not mesh data: skipped with a note
  };
  DType dtype;
  Kind kind = kPlain;
};

// The type names VTK's reader knows (compared lowercased, as it does): C's, whose widths are
// the ones VTK writes them with (long: 64 bits), and the vtkType ones (vtktypeint8 ..
// vtktypeuint64, vtktypefloat32 / 64), whose name spells the kind and width.
std::optional<LegacyType> legacy_type(std::string_view s) {
  using L = LegacyType;
  static const std::map<std::string, LegacyType> kTypes = [] {
    std::map<std::string, LegacyType> t = {{"bit", {{1, 8, 1}, L::kBit}},
                                           {"unsigned_char", {{1, 8, 1}}},
                                           {"char", {{0, 8, 1}}},
                                           {"signed_char", {{0, 8, 1}}},
                                           {"unsigned_short", {{1, 16, 1}}},
                                           {"short", {{0, 16, 1}}},
                                           {"unsigned_int", {{1, 32, 1}}},
                                           {"int", {{0, 32, 1}}},
                                           {"unsigned_long", {{1, 64, 1}}},
                                           {"long", {{0, 64, 1}}},
                                           {"float", {{2, 32, 1}}},
                                           {"double", {{2, 64, 1}}},
                                           {"vtkidtype", {{0, 64, 1}, L::kIdType}},
                                           {"string", {{1, 8, 1}, L::kString}},
                                           {"utf8_string", {{1, 8, 1}, L::kString}}};
    for (const std::uint8_t bits : {8, 16, 32, 64}) {
      t["vtktypeint" + std::to_string(bits)] = {{0, bits, 1}};
      t["vtktypeuint" + std::to_string(bits)] = {{1, bits, 1}};
    }
    t["vtktypefloat32"] = {{2, 32, 1}};
    t["vtktypefloat64"] = {{2, 64, 1}};
    return t;
  }();
  std::string lower(s);
  for (auto& c : lower)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  auto it = kTypes.find(lower);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// Calls f(U{}, swap) with the unsigned type of `size` bytes (2, 4 or 8) and its byte swap;
// false for any other size (bytes, which need no swap).
template <typename F>
bool with_swap_of_width(std::size_t size, F&& f) {
  switch (size) {
    case 2:
      f(std::uint16_t{}, [](std::uint16_t v) { return __builtin_bswap16(v); });
      return true;
    case 4:
      f(std::uint32_t{}, [](std::uint32_t v) { return __builtin_bswap32(v); });
      return true;
    case 8:
      f(std::uint64_t{}, [](std::uint64_t v) { return __builtin_bswap64(v); });
      return true;
    default:
      return false;
  }
}

// Big-endian items of `size` bytes from `src` into native (little-endian) order at `dst`: one
// tight loop per width, which the compiler turns into vector shuffles.
void swap_copy(std::uint8_t* dst, const char* src, std::size_t n, std::size_t size) {
  const bool swapped = with_swap_of_width(size, [&](auto zero, auto swap) {
    using U = decltype(zero);
    for (std::size_t i = 0; i < n; ++i) {
      U v;
      std::memcpy(&v, src + i * sizeof(U), sizeof(U));
      v = swap(v);
      std::memcpy(dst + i * sizeof(U), &v, sizeof(U));
    }
  });
  if (!swapped) std::memcpy(dst, src, n * size);
}

// The same in place (what was just read into its destination): the loop sees one pointer, so
// it vectorizes without the overlap check that would send swap_copy(p, p) to its scalar path.
void swap_in_place(std::uint8_t* p, std::size_t n, std::size_t size) {
  with_swap_of_width(size, [&](auto zero, auto swap) {
    using U = decltype(zero);
    for (std::size_t i = 0; i < n; ++i) {
      U v;
      std::memcpy(&v, p + i * sizeof(U), sizeof(U));
      v = swap(v);
      std::memcpy(p + i * sizeof(U), &v, sizeof(U));
    }
  });
}

// Big-endian integers of `type` (1-8 bytes, signed or not) at `src` into int64 at `dst`.
void ints_from_be(DType type, const char* src, std::size_t n, std::int64_t* dst) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    using U = std::make_unsigned_t<T>;
    for (std::size_t i = 0; i < n; ++i) {
      U u;
      std::memcpy(&u, src + i * sizeof(U), sizeof(U));
      if constexpr (sizeof(U) == 2) u = __builtin_bswap16(u);
      if constexpr (sizeof(U) == 4) u = __builtin_bswap32(u);
      if constexpr (sizeof(U) == 8) u = __builtin_bswap64(u);
      dst[i] = static_cast<std::int64_t>(static_cast<T>(u));
    }
  };
  const bool sign = type.code == 0;
  switch (type.bits) {
    case 8:
      sign ? run(std::int8_t{}) : run(std::uint8_t{});
      break;
    case 16:
      sign ? run(std::int16_t{}) : run(std::uint16_t{});
      break;
    case 32:
      sign ? run(std::int32_t{}) : run(std::uint32_t{});
      break;
    default:  // a uint64 past INT64_MAX wraps negative, which every range check refuses
      run(std::int64_t{});
  }
}

// The end offsets of a cell list as they are read. While every cell has as many ids as the
// first, none are stored (cell c ends at (c + 1) * stride); the first cell of another size
// makes the array, so a one-kind list costs no memory beyond its connectivity.
class Ends {
 public:
  explicit Ends(std::int64_t ncells) : ncells_(ncells) {}
  void push(std::int64_t end) {
    if (!kept_.valid()) {
      if (count_ == 0) stride_ = end;
      if (end == next_ + stride_) {
        next_ = end;
        ++count_;
        return;
      }
      kept_ = Array::of<std::int64_t>({ncells_ + 1});
      auto* o = kept_.as<std::int64_t>();
      for (std::int64_t c = 0; c <= count_; ++c) o[c] = c * stride_;
    }
    kept_.as<std::int64_t>()[++count_] = end;
  }
  std::int64_t count() const { return count_; }
  // Every cell's size when they are all the same (-1 once they differ).
  std::int64_t stride() const { return kept_.valid() ? -1 : stride_; }
  Array offsets() const { return kept_; }

 private:
  std::int64_t ncells_, count_ = 0, stride_ = 0, next_ = 0;
  Array kept_;
};

// One cell list of the file: int64 connectivity (an Array, so that a one-kind piece's becomes
// its block as it is) and the offsets (n + 1, from 0), which are not kept while every cell has
// `stride` ids (see Ends) and made only when a caller needs them (ends()).
struct CellList {
  Array conn = Array::of<std::int64_t>({0});
  std::int64_t ncells = 0;
  std::int64_t stride = 0;  // every cell's size; -1: see offsets
  Array offsets;            // when stride is -1

  std::span<const std::int64_t> ids() const { return {conn.as<std::int64_t>(), conn.size()}; }
  std::span<const std::int64_t> ends() {
    if (!offsets.valid()) {
      offsets = Array::of<std::int64_t>({ncells + 1});
      auto* o = offsets.as<std::int64_t>();
      for (std::int64_t c = 0; c <= ncells; ++c) o[c] = c * stride;
      stride = -1;
    }
    return {offsets.as<std::int64_t>() + 1, static_cast<std::size_t>(ncells)};
  }
  void set(std::int64_t n, const Ends& e) {
    ncells = n;
    stride = e.stride();
    offsets = e.offsets();
  }
};

// CELL_TYPES as they are read: one value while they are all the same (see Ends).
struct CellTypes {
  std::int64_t n = 0, first = 0;
  std::vector<std::int64_t> all;  // empty while all are `first`
  void push(std::int64_t t) {
    if (all.empty() && (n == 0 || t == first)) {
      first = t;
      ++n;
      return;
    }
    if (all.empty()) all.assign(static_cast<std::size_t>(n), first);
    all.push_back(t);
    ++n;
  }
  bool one_kind() const { return all.empty() && n > 0; }
  std::vector<std::int64_t>& values() {
    if (all.empty()) all.assign(static_cast<std::size_t>(n), first);
    return all;
  }
};

class VtkReader {
 public:
  // `file`, when given, is the lazily mapped file `data` views: binary arrays are then read
  // from it with pread rather than through the mapping. `text`, when given, is the file
  // `data` views through a window (Access::window), moved on as the parse goes.
  VtkReader(std::string_view data, const std::string& path, const MappedFile* file = nullptr,
            MappedFile* text = nullptr)
      : c_(data, path,
           file   ? file->progress()
           : text ? text->progress()
                  : nullptr),
        file_(file),
        text_(text) {}

  Mesh read() {
    // A UTF-8 byte-order mark (Windows editors write one) marks the encoding and is none of the
    // file's text: skipped at byte 0 only, as the XML and surface readers do, lines counted as
    // the file's.
    c_.seek(utf8_bom(c_.data()));
    const auto magic = c_.rest_of_line();
    if (magic.rfind("# vtk DataFile Version", 0) != 0)
      c_.fail("not a legacy VTK file (no '# vtk DataFile Version' line)");
    const auto ver = Cursor::trim(magic.substr(22));
    version5_ = !ver.empty() && ver[0] >= '5';
    c_.rest_of_line();  // title
    const auto mode = ascii_upper(Cursor::trim(c_.rest_of_line()));
    if (mode == "BINARY")
      binary_ = true;
    else if (mode != "ASCII")
      c_.fail("third line is '" + mode.substr(0, 40) + "', expected ASCII or BINARY");
    CellList cells;
    CellTypes types;
    std::map<std::string, CellList> poly;  // POLYDATA sections by keyword
    std::array<std::int64_t, 3> dims{};
    bool have_dims = false;
    std::array<double, 3> origin{0, 0, 0}, spacing{1, 1, 1};
    std::array<std::vector<double>, 3> axes;  // RECTILINEAR_GRID coordinates
    bool have_points = false;
    std::string target;  // POINT_DATA or CELL_DATA
    std::int64_t target_n = 0;
    // POINT_DATA sections read before the points were known (a STRUCTURED_POINTS' DIMENSIONS
    // after them): (offset of the keyword, count), checked once the points are made.
    std::vector<std::pair<std::size_t, std::int64_t>> point_data_later;
    // The points as far as they are known: POINTS, or DIMENSIONS where the points come from the
    // grid (-1 when neither came yet, or the grid is too big to be one: structured() says so).
    const auto points_known = [&]() -> std::int64_t {
      if (have_points) return mesh_.num_points();
      if (!have_dims || (dataset_ != "STRUCTURED_POINTS" && dataset_ != "RECTILINEAR_GRID"))
        return -1;
      std::int64_t n = 1;
      for (const auto d : dims)
        if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
      return n;
    };
    // POINT_DATA's count is the points', as CELL_DATA's is the cells' (checked at the end, for
    // the cells are made last): arrays of any other length do not belong to the points.
    // Refused, as meshio does (VTK drops the arrays), at the POINT_DATA line.
    const auto check_point_data = [&](std::size_t at, std::int64_t n, std::int64_t points) {
      if (n != points)
        throw ReadError(c_.file() + ":" + std::to_string(c_.line_at(at)) + ": POINT_DATA " +
                        std::to_string(n) + " does not match the " + std::to_string(points) +
                        " points of the dataset");
    };
    std::vector<std::pair<std::string, Array>> cell_arrays;
    // One attribute or FIELD array of `comps` components, named as written (%XX decoded),
    // kept unless it is a string array.
    auto attribute = [&](const std::string& name, const LegacyType& type, std::int64_t comps,
                         std::int64_t tuples) {
      check_tuples(target, target_n, name, tuples);  // before its values are read
      Array a = array(type, comps * tuples, comps, name);
      if (a.valid())
        add(target, target_n, name, shaped(std::move(a), comps), tuples, cell_arrays);
      else  // as read_vtu does
        mesh_.notes.push_back("vtk: string array '" + name + "' in " +
                              (target.empty() ? std::string("FIELD") : target) +
                              " skipped: a mesh holds numeric arrays only");
    };
    while (true) {
      follow();
      const auto word = c_.token();
      const auto key = ascii_upper(word);
      const auto at = c_.offset();  // on the keyword's line
      if (key.empty()) {
        if (text_) text_->release_before(c_.data().size());  // the arrays are all made
        break;
      }
      if (is_number(word)) more_than_counted(word);
      section_ = {key, "", at};  // what a number after it will blame; the data keywords count
      if (key == "DATASET") {
        dataset_ = ascii_upper(c_.token());
        if (dataset_ != "UNSTRUCTURED_GRID" && dataset_ != "POLYDATA" &&
            dataset_ != "STRUCTURED_POINTS" && dataset_ != "STRUCTURED_GRID" &&
            dataset_ != "RECTILINEAR_GRID") {
          c_.fail("DATASET " + dataset_.substr(0, 40) +
                  " is not supported (UNSTRUCTURED_GRID, POLYDATA, STRUCTURED_POINTS, "
                  "STRUCTURED_GRID, RECTILINEAR_GRID are)");
        }
      } else if (key == "POINTS") {
        const auto n = count("point count");
        const auto type = dtype(c_.token()).dtype;
        c_.rest_of_line();
        if (type.code != 2) c_.fail("POINTS must be float or double");
        check_fits(type, n * 3, "POINTS");  // before allocating what the header claims
        mesh_.points = Array::of<double>({n, 3});
        section_.count = counted(n, "point", "points") + ", " + counted(n * 3, "value", "values");
        doubles(type, n * 3, "POINTS", mesh_.points.as<double>());
        metadata("POINTS", 3);
        have_points = true;
      } else if (key == "CELLS") {
        cells = cell_list("CELLS");
      } else if (key == "VERTICES" || key == "LINES" || key == "POLYGONS" ||
                 key == "TRIANGLE_STRIPS") {
        if (poly.count(key)) c_.fail(key + " appears twice");
        poly[key] = cell_list(key);
      } else if (key == "CELL_TYPES") {
        const auto n = count("cell type count");
        c_.rest_of_line();
        section_.count = counted(n, "cell type", "cell types");
        types = CellTypes{};
        each_int(DType{0, 32, 1}, n, "CELL_TYPES", [&](const std::int64_t* v, std::size_t k) {
          for (std::size_t i = 0; i < k; ++i) types.push(v[i]);
        });
        metadata("CELL_TYPES", 1);
      } else if (key == "DIMENSIONS") {
        for (auto& d : dims) d = count("dimension");
        have_dims = true;
        section_.count = "3 values";
      } else if (key == "ORIGIN") {
        for (auto& o : origin) o = c_.number<double>("origin");
        section_.count = "3 values";
      } else if (key == "SPACING" || key == "ASPECT_RATIO") {
        for (auto& s : spacing) s = c_.number<double>("spacing");
        section_.count = "3 values";
      } else if (key == "X_COORDINATES" || key == "Y_COORDINATES" || key == "Z_COORDINATES") {
        const std::size_t axis = static_cast<std::size_t>(key[0] - 'X');
        const auto n = count("coordinate count");
        const auto type = dtype(c_.token()).dtype;
        c_.rest_of_line();
        section_.count = counted(n, "value", "values");
        axes[axis].resize(static_cast<std::size_t>(n));
        doubles(type, n, key, axes[axis].data());
        metadata(key, 1);
      } else if (key == "POINT_DATA" || key == "CELL_DATA") {
        target = key;
        target_at_ = at;
        target_n = count("tuple count");
        if (key == "POINT_DATA") {
          if (const auto points = points_known(); points >= 0)
            check_point_data(at, target_n, points);
          else
            point_data_later.emplace_back(at, target_n);
        }
      } else if (key == "FIELD") {
        c_.token();  // field name
        const auto k = count("number of arrays");
        c_.rest_of_line();
        for (std::int64_t i = 0; i < k; ++i) {
          follow();
          const auto array_name = c_.token();
          if (array_name == "NULL_ARRAY") continue;  // what VTK writes for a missing array
          const auto array_at = c_.offset();
          const auto name = decode_name(array_name);
          const auto comps = count("components");
          const auto tuples = count("tuples");
          const auto type = dtype(c_.token());
          c_.rest_of_line();
          section_ = {
              "FIELD array '" + name + "'",
              counted(tuples, "tuple", "tuples") + ", " + counted(comps, "component", "components"),
              array_at};
          attribute(name, type, comps, tuples);
        }
      } else if (key == "SCALARS") {
        const auto name = decode_name(c_.token());
        const auto type = dtype(c_.token());
        std::int64_t comps = 1;
        c_.skip_blanks();
        if (!c_.at_end() && c_.data()[c_.offset()] != '\n') comps = count("components");
        c_.rest_of_line();
        if (ascii_upper(c_.token()) != "LOOKUP_TABLE")
          c_.fail("SCALARS '" + name + "' is not followed by LOOKUP_TABLE");
        c_.rest_of_line();
        counts_per(name, target, target_n, comps);
        attribute(name, type, comps, target_n);
      } else if (key == "COLOR_SCALARS") {
        const auto name = decode_name(c_.token());
        const auto comps = count("components");
        c_.rest_of_line();
        counts_per(name, target, target_n, comps);
        add(target, target_n, name, shaped(colors(comps * target_n, name), comps), target_n,
            cell_arrays);
        metadata(name, comps);
      } else if (key == "LOOKUP_TABLE") {
        // A colour table for SCALARS (4 values a colour): not mesh data.
        const std::string name(c_.token());
        const auto n = count("colour count");
        c_.rest_of_line();
        section_.count = counted(n, "colour", "colours") + ", " + counted(4 * n, "value", "values");
        colors(4 * n, "LOOKUP_TABLE " + name);
        mesh_.notes.push_back("vtk: lookup table '" + name + "' (" + std::to_string(n) +
                              " colours) not kept");
      } else if (key == "VECTORS" || key == "NORMALS" || key == "TENSORS" || key == "TENSORS6") {
        const auto name = decode_name(c_.token());
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        const std::int64_t comps = key == "TENSORS" ? 9 : key == "TENSORS6" ? 6 : 3;
        counts_per(name, target, target_n, comps);
        attribute(name, type, comps, target_n);
      } else if (key == "TEXTURE_COORDINATES") {
        const auto name = decode_name(c_.token());
        const auto comps = count("components");
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        counts_per(name, target, target_n, comps);
        attribute(name, type, comps, target_n);
      } else if (key == "GLOBAL_IDS" || key == "PEDIGREE_IDS") {
        const auto name = decode_name(c_.token());
        const auto type = dtype(c_.token());
        c_.rest_of_line();
        counts_per(name, target, target_n, 1);
        attribute(name, type, 1, target_n);
      } else if (key == "METADATA") {
        skip_metadata("", 0);
      } else {
        c_.fail("keyword '" + std::string(key.substr(0, 40)) + "' is not supported");
      }
    }
    auto fail = [&](const std::string& what) { throw ReadError(c_.file() + ": " + what); };
    if (dataset_ == "STRUCTURED_POINTS" || dataset_ == "STRUCTURED_GRID" ||
        dataset_ == "RECTILINEAR_GRID") {
      if (!have_dims) fail(dataset_ + " without DIMENSIONS");
      structured(dims, origin, spacing, axes, have_points, cell_arrays);
      for (const auto& [pd_at, n] : point_data_later)
        check_point_data(pd_at, n, mesh_.num_points());
      regions_from_field_data(mesh_, c_.file());
      return std::move(mesh_);
    }
    if (!have_points) c_.fail("no POINTS section");
    for (const auto& [pd_at, n] : point_data_later) check_point_data(pd_at, n, mesh_.num_points());
    if (dataset_ == "POLYDATA") {
      if (types.n || cells.conn.size()) fail("POLYDATA with CELLS / CELL_TYPES");
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
          types.push(t);
          ends.push_back(base + end);
          begin = end;
        }
        conn.insert(conn.end(), sec_ids.begin(), sec_ids.end());
      }
      ends.insert(ends.begin(), 0);
      cells.conn = Array::from_vector(conn);
      cells.ncells = static_cast<std::int64_t>(ends.size()) - 1;
      cells.stride = -1;
      cells.offsets = Array::from_vector(ends);
    } else if (!poly.empty()) {
      fail(poly.begin()->first + " in a DATASET " +
           (dataset_.empty() ? std::string("(none)") : dataset_) + " file (POLYDATA only)");
    }
    // CELL_DATA's count is the file's word, not the cells': a shorter array must not be sliced.
    check_cell_rows(cell_arrays, types.n);
    finish_cells(cells, types, cell_arrays, fail);
    // The blocks write_vtk wrote, where the cell types alone would merge some.
    split_blocks_as_written(mesh_, "vtk: ");
    // What write_vtk made of regions becomes regions again (region_fields.hpp).
    regions_from_field_data(mesh_, c_.file());
    return std::move(mesh_);
  }

 private:
  // The cells read, as blocks. A list of one fixed-size kind whose every cell has that many
  // ids, in meshio's node order, with no ids to spare, becomes one block sharing the
  // connectivity as read, with no offsets or types ever made; anything else goes through
  // expand_vtk_cells / append_vtk_cells.
  void finish_cells(CellList& cells, CellTypes& types,
                    std::vector<std::pair<std::string, Array>>& cell_arrays,
                    const std::function<void(const std::string&)>& fail) {
    if (types.one_kind() && cells.stride > 0 && cells.ncells == types.n &&
        cells.conn.size() == static_cast<std::size_t>(cells.ncells * cells.stride)) {
      const auto kind = vtk_cell(static_cast<int>(types.first));
      if (kind && kind->nodes == cells.stride && vtk_order(kind->name).empty()) {
        append_rows_block(mesh_, *kind, types.n, cells.conn, mesh_.num_points(), cell_arrays, fail);
        return;
      }
    }
    const std::span<const std::int64_t> t = types.values();
    auto faces = polyhedron_faces(cells.ids(), cells.ends(), t);
    const VtkFaces* f = faces ? &*faces : nullptr;
    if (auto ex = expand_vtk_cells(cells.ids(), cells.ends(), t, fail)) {
      for (auto& [name, a] : cell_arrays) a = gather_rows(a, ex->source);
      for (auto& n : ex->notes) mesh_.notes.push_back("vtk: " + n);
      if (faces) {  // polyhedra are not split: each output cell keeps its source's stream
        std::vector<std::int64_t> ends(ex->source.size());
        for (std::size_t c = 0; c < ends.size(); ++c)
          ends[c] = faces->face_ends[static_cast<std::size_t>(ex->source[c])];
        faces->face_ends = std::move(ends);
      }
      append_vtk_cells<std::int64_t>(mesh_, ex->conn, ex->ends, ex->types, mesh_.num_points(), 0,
                                     cell_arrays, fail, f);
    } else {
      append_vtk_cells<std::int64_t>(mesh_, cells.ids(), cells.ends(), t, mesh_.num_points(), 0,
                                     cell_arrays, fail, f, &cells.conn);
    }
  }

  // Polyhedra (VTK 42): a legacy file (4.x and 5.x alike) holds a polyhedron's face stream as
  // its ids in CELLS (the number of faces, then each face's point count and points), where VTU
  // has faces / faceoffsets arrays and the points in the connectivity. The streams become the
  // VtkFaces read_vtu makes of those arrays, so the block is the same; nullopt without
  // polyhedra.
  static std::optional<VtkFaces> polyhedron_faces(std::span<const std::int64_t> ids,
                                                  std::span<const std::int64_t> ends,
                                                  std::span<const std::int64_t> types) {
    if (std::find(types.begin(), types.end(), 42) == types.end()) return std::nullopt;
    VtkFaces f;
    f.face_ends.assign(types.size(), -1);
    std::int64_t begin = 0;
    for (std::size_t c = 0; c < types.size() && c < ends.size(); ++c) {
      const auto end =
          std::clamp<std::int64_t>(ends[c], begin, static_cast<std::int64_t>(ids.size()));
      if (types[c] == 42) {
        f.faces.insert(f.faces.end(), ids.begin() + begin, ids.begin() + end);
        f.face_ends[c] = static_cast<std::int64_t>(f.faces.size());
      }
      begin = end;
    }
    return f;
  }

  // CELLS / VERTICES / LINES / POLYGONS / TRIANGLE_STRIPS: "<a> <b>" then the 5.x OFFSETS and
  // CONNECTIVITY arrays (a offsets, b ids) or the older list of a cells, b entries in all.
  // Both are read as they come, into the connectivity and Ends: no copy of the list is made.
  CellList cell_list(const std::string& section) {
    CellList out;
    const auto a = count("cell count");
    const auto b = count("cell list size");
    c_.rest_of_line();
    if (version5_) {
      if (ascii_upper(c_.token()) != "OFFSETS") c_.fail("expected OFFSETS");
      const auto offsets_at = c_.offset();
      const auto type = int_type("OFFSETS");
      if (a == 0) c_.fail(section + " OFFSETS must start with 0");
      Ends ends(a - 1);
      std::int64_t i = 0, last = 0;
      each_int(type, a, "OFFSETS", [&](const std::int64_t* v, std::size_t k) {
        for (std::size_t j = 0; j < k; ++j, ++i) {
          if (i == 0) {
            if (v[j] != 0) c_.fail(section + " OFFSETS must start with 0");
            continue;
          }
          if (v[j] < last || v[j] > b)
            c_.fail(section + " OFFSETS[" + std::to_string(i) + "] = " + std::to_string(v[j]) +
                    " is out of order or past the " + std::to_string(b) + "-entry CONNECTIVITY");
          ends.push(last = v[j]);
        }
      });
      out.set(a - 1, ends);
      metadata("OFFSETS", 1);
      const auto next = c_.token();
      if (ascii_upper(next) != "CONNECTIVITY") {
        if (is_number(next)) {
          section_ = {"OFFSETS", counted(a, "offset", "offsets"), offsets_at};
          more_than_counted(next);
        }
        c_.fail("expected CONNECTIVITY");
      }
      section_ = {"CONNECTIVITY", counted(b, "entry", "entries"), c_.offset()};
      const auto ctype = int_type("CONNECTIVITY");
      check_fits(ctype, b, "CONNECTIVITY");  // before allocating what the header claims
      out.conn = Array::of<std::int64_t>({b});
      int64s(ctype, b, "CONNECTIVITY", out.conn.as<std::int64_t>());
      metadata("CONNECTIVITY", 1);
      return out;
    }
    // Each cell: its number of ids, then the ids. A list of a cells holds at most b - a ids.
    // They are vtkIdType: 4-byte ints in a binary file, int64 in ascii (as VTK reads them).
    const DType list_type = binary_ ? DType{0, 32, 1} : DType{0, 64, 1};
    section_.count = counted(a, "cell", "cells") + ", " + counted(b, "entry", "entries");
    const std::int64_t room = b >= a ? b - a : 0;
    check_fits(list_type, b, section);  // before allocating what the header claims
    out.conn = Array::of<std::int64_t>({room});
    auto* ids = out.conn.as<std::int64_t>();
    Ends ends(a);
    std::int64_t used = 0, left = -1;  // left: ids still to come of the current cell (-1: none)
    std::int64_t seen = 0;             // entries of the list read
    each_int(list_type, b, section, [&](const std::int64_t* v, std::size_t k) {
      for (std::size_t j = 0; j < k && ends.count() < a; ++j) {
        ++seen;
        if (left < 0) {
          const auto n = v[j];
          const auto c = ends.count();
          if (n < 0 || n > b - seen)
            c_.fail(section + " cell " + std::to_string(c) + " claims " + std::to_string(n) +
                    " points, more than the list holds");
          if (n > room - used)  // the cells after it would not find their counts
            c_.fail(section + " list of " + std::to_string(b) + " entries is too short for " +
                    std::to_string(a) + " cells (cell " + std::to_string(c) +
                    " ends too near its end for the " + std::to_string(a - c - 1) + " after it)");
          left = n;
        } else {
          ids[used++] = v[j];
          --left;
        }
        if (left == 0) {
          ends.push(used);
          left = -1;
        }
      }
    });
    if (ends.count() < a)
      c_.fail(section + " list ends after " + std::to_string(ends.count()) + " of " +
              std::to_string(a) + " cells");
    if (used < room) out.conn = Array::view(out.conn.buffer(), kInt64, {used});
    out.set(a, ends);
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
    check_cell_rows(cell_arrays, ncells);
    for (const auto& [name, a] : cell_arrays) mesh_.cell_data[name].push_back(a);
    const char* kind = kKinds[active.size()];
    mesh_.cells.push_back(CellBlock::fixed(kind, std::move(block)));
    mesh_.notes.push_back("vtk: DATASET " + dataset_ + " " + std::to_string(nx) + "x" +
                          std::to_string(ny) + "x" + std::to_string(nz) + " converted to " +
                          std::to_string(npoints) + " points and " + std::to_string(ncells) + " " +
                          kind + " cells");
  }

  // A value where a keyword belongs: more values than the section before it counted (a CELLS
  // list with a cell more than its count, a SCALARS array longer than its POINT_DATA), which
  // the message names with its count and line rather than take the value for a keyword.
  [[noreturn]] void more_than_counted(std::string_view word) {
    std::string what =
        "found '" + std::string(word.substr(0, 40)) + "' where a keyword is expected";
    if (!section_.name.empty()) {
      const auto line = std::to_string(c_.line_at(section_.at));
      what += section_.count.empty()
                  ? ": the " + section_.name + " line on line " + line +
                        " has more values than it takes"
                  : ": the " + section_.name + " section on line " + line +
                        " has more entries than its count says (" + section_.count + ")";
    }
    c_.fail(what);
  }

  // An attribute section's name and count (SCALARS 'T', POINT_DATA 4, 1 component), for a
  // value past its end.
  void counts_per(const std::string& name, const std::string& target, std::int64_t tuples,
                  std::int64_t comps) {
    section_.name += " '" + name + "'";
    section_.count = (target.empty() ? counted(tuples, "tuple", "tuples")
                                     : target + " " + std::to_string(tuples)) +
                     ", " + counted(comps, "component", "components");
  }

  // `k` ascii integers of `what` into `out`, each in `range` (its type's). They are checked
  // after the parse, in a tight pass of their own: a compare per value inside the parse loop
  // added 2.5% to the instructions of a 1M-point read (callgrind). Should one not fit, the
  // values are read again up to it (cold), so that the message names its line.
  void ascii_ints(std::int64_t* out, std::size_t k, IntRange range, const std::string& what) {
    const auto from = c_.offset();
    for (std::size_t j = 0; j < k; ++j) {
      out[j] = c_.number<std::int64_t>("integer");
      follow();
    }
    if (range.span == ~std::uint64_t{0}) return;  // int64: every value read fits
    bool bad = false;
    for (std::size_t j = 0; j < k; ++j) bad |= !range.fits(out[j]);
    if (bad) [[unlikely]]
      does_not_fit(out, range, what, from);
  }

  // The first of the values read from byte `from` into `v` that does not fit `range`, as a
  // ReadError naming its line (the text behind the window is still readable: mapped_file.hpp).
  [[noreturn, gnu::cold, gnu::noinline]] void does_not_fit(const std::int64_t* v, IntRange range,
                                                           const std::string& what,
                                                           std::size_t from) {
    std::size_t j = 0;
    while (range.fits(v[j])) ++j;  // ascii_ints found one
    c_.seek(from);
    for (std::size_t m = 0; m <= j; ++m) c_.number<std::int64_t>("integer");
    throw DoesNotFit(c_.file() + ":" + std::to_string(c_.line()) + ": value " +
                     std::to_string(v[j]) + " of " + what + " does not fit its type " +
                     (range.type.code == 0 ? "int" : "uint") + std::to_string(range.type.bits) +
                     " (" + std::to_string(range.lo) + ".." + std::to_string(range.hi()) + ")");
  }

  std::int64_t count(const char* what) {
    const auto n = c_.number<std::int64_t>(what);
    if (n < 0 || static_cast<std::uint64_t>(n) > c_.data().size())
      c_.fail(std::string(what) + " " + std::to_string(n) + " is more than the file can hold");
    return n;
  }

  LegacyType dtype(std::string_view name) {
    auto t = legacy_type(name);
    if (!t) c_.fail("data type '" + std::string(name.substr(0, 40)) + "' is not supported");
    return *t;
  }

  // The integer type named after OFFSETS / CONNECTIVITY, and the rest of its line: vtkIdType
  // is 4 bytes wide in a binary file, as VTK writes and reads it.
  DType int_type(const char* name) {
    const auto type = dtype(c_.token());
    if (type.dtype.code == 2 || type.kind == LegacyType::kBit || type.kind == LegacyType::kString)
      c_.fail(std::string(name) + " must be an integer type");
    c_.rest_of_line();
    return type.kind == LegacyType::kIdType && binary_ ? DType{0, 32, 1} : type.dtype;
  }

  // `n` values of an attribute or FIELD array of `type` (`comps` to a tuple), then the METADATA
  // block VTK may write after it. An invalid Array for a string array, whose values are skipped.
  Array array(const LegacyType& type, std::int64_t n, std::int64_t comps, const std::string& name) {
    Array a;
    switch (type.kind) {
      case LegacyType::kString:
        skip_strings(n, name);
        break;
      case LegacyType::kIdType:
        if (binary_) {
          check_fits(DType{0, 32, 1}, n, name);
          a = Array::of<std::int64_t>({n});
          int64s(DType{0, 32, 1}, n, name, a.as<std::int64_t>());
        } else {
          a = values(type.dtype, n, name);
        }
        break;
      case LegacyType::kBit:
        a = bits(n, name);
        break;
      default:
        a = values(type.dtype, n, name);
    }
    metadata(name, comps);
    return a;
  }

  // A bit array as uint8 0 / 1. Binary: ceil(n / 8) bytes, value i in bit 7 - i % 8 of byte
  // i / 8 (vtkBitArray's layout, which VTK writes as it is); ascii: a number each, any nonzero
  // one a 1 (vtkBitArray::SetValue).
  Array bits(std::int64_t n, const std::string& what) {
    const auto bytes = (n + 7) / 8;
    check_fits(DType{1, 8, 1}, binary_ ? bytes : n, what);
    Array a = Array::of<std::uint8_t>({n});
    auto* dst = a.as<std::uint8_t>();
    if (!binary_) {
      for (std::int64_t i = 0; i < n; ++i) {
        dst[i] = c_.number<std::int64_t>("bit") != 0;
        follow();
      }
      return a;
    }
    std::int64_t i = 0;
    raw_chunks(static_cast<std::size_t>(bytes), 1, what, [&](const char* p, std::size_t k) {
      for (std::size_t b = 0; b < k; ++b)
        for (int bit = 7; bit >= 0 && i < n; --bit) dst[i++] = (p[b] >> bit) & 1;
    });
    return a;
  }

  // The `n` values of a string array, skipped. Binary (vtkDataWriter): each a big-endian
  // length whose top 2 bits say its width (11: 1 byte, 10: 2, 01: 4, 00: 8), then its bytes;
  // ascii: a line each.
  void skip_strings(std::int64_t n, const std::string& what) {
    for (std::int64_t i = 0; i < n; ++i) {
      if (!binary_) {
        if (c_.at_end())
          c_.fail(what + ": " + std::to_string(n) + " strings expected, found " +
                  std::to_string(i));
        c_.rest_of_line();
        follow();
        continue;
      }
      unsigned char head[8];
      bytes_at(1, head, what);
      const int width = head[0] >> 6 == 3 ? 1 : head[0] >> 6 == 2 ? 2 : head[0] >> 6 == 1 ? 4 : 8;
      if (width > 1) {
        c_.seek(c_.offset() - 1);
        bytes_at(static_cast<std::size_t>(width), head, what);
      }
      std::uint64_t len = head[0] & 0x3f;
      for (int k = 1; k < width; ++k) len = len << 8 | head[k];
      if (len > c_.remaining())
        c_.fail_at_byte(what + ": string " + std::to_string(i) + " of " + std::to_string(len) +
                        " bytes runs past the end of the file");
      c_.raw(static_cast<std::size_t>(len), what.c_str());
    }
  }

  // `k` bytes at the cursor copied to `out` (read with pread from a lazily mapped file).
  void bytes_at(std::size_t k, unsigned char* out, const std::string& what) {
    const char* p = c_.raw(k, what.c_str());
    if (file_)
      file_->read_at(static_cast<std::size_t>(p - c_.data().data()), k,
                     reinterpret_cast<char*>(out));
    else
      std::memcpy(out, p, k);
  }

  // A METADATA block, if one comes next (VTK writes it after an array whose range it computed
  // or whose components it named: COMPONENT_NAMES, a line per component, and INFORMATION keys,
  // up to a blank line). Neither is mesh data; component names are noted.
  void metadata(const std::string& name, std::int64_t comps) {
    follow();
    const auto at = c_.offset();
    if (ascii_upper(c_.token()) != "METADATA") {
      c_.seek(at);
      return;
    }
    skip_metadata(name, comps);
  }

  // The rest of a METADATA block, its keyword read.
  void skip_metadata(const std::string& name, std::int64_t comps) {
    c_.rest_of_line();
    std::string names;
    bool named = false;
    while (!c_.at_end()) {
      follow();
      const auto line = Cursor::trim(c_.rest_of_line());
      if (line.empty()) break;
      if (ascii_upper(line).rfind("COMPONENT_NAMES", 0) != 0) continue;  // INFORMATION and its keys
      for (std::int64_t k = 0; k < comps && !c_.at_end(); ++k) {
        const auto cn = decode_name(Cursor::trim(c_.rest_of_line()));
        named |= !cn.empty();
        names += (k ? ", '" : "'") + cn + "'";
      }
    }
    if (named)
      mesh_.notes.push_back("vtk: component names of '" + name + "' (" + names + ") not kept");
  }

  void check_fits(DType type, std::int64_t n, const std::string& what) {
    const std::size_t item = type.bits / 8;
    if (static_cast<std::uint64_t>(n) > c_.remaining() / (binary_ ? item : 1)) {
      c_.fail(what + ": " + std::to_string(n) + " values cannot fit in the " +
              std::to_string(c_.remaining()) + " bytes left");
    }
  }

  // The next `bytes` raw bytes at the cursor (whole items of `item` bytes), handed to
  // f(const char* p, std::size_t bytes) in pieces: at once when they are in memory; from a
  // lazily mapped file with pread, a 256 KiB buffer at a time (their pages never touched).
  template <typename F>
  void raw_chunks(std::size_t bytes, std::size_t item, const std::string& what, F&& f) {
    const char* src = c_.raw(bytes, what.c_str());
    if (bytes == 0) return;
    if (!file_) {
      f(src, bytes);
      return;
    }
    const auto at = static_cast<std::size_t>(src - c_.data().data());
    const std::size_t step = kChunk / item * item;
    if (!chunk_) chunk_ = std::make_unique<char[]>(kChunk);
    for (std::size_t done = 0; done < bytes; done += step) {
      const std::size_t n = std::min(step, bytes - done);
      file_->read_at(at + done, n, chunk_.get());
      f(static_cast<const char*>(chunk_.get()), n);
    }
  }

  // `n` big-endian items of `size` bytes at the cursor into native order at `dst`. From a
  // lazily mapped file: read into `dst` a chunk at a time and swapped there while in cache.
  void swapped(std::uint8_t* dst, std::size_t n, std::size_t size, const std::string& what) {
    const std::size_t bytes = n * size;  // check_fits bounded n by the bytes left
    const char* src = c_.raw(bytes, what.c_str());
    if (bytes == 0) return;
    if (!file_) {
      swap_copy(dst, src, n, size);
      return;
    }
    const auto at = static_cast<std::size_t>(src - c_.data().data());
    const std::size_t step = kChunk / size * size;
    for (std::size_t done = 0; done < bytes; done += step) {
      const std::size_t k = std::min(step, bytes - done);
      file_->read_at(at + done, k, reinterpret_cast<char*>(dst + done));
      swap_in_place(dst + done, k / size, size);
    }
  }

  // The next `n` integers of `type` as int64, handed to f(const std::int64_t* v, std::size_t k)
  // a few thousand at a time: streamed, no array of them all (CELL_TYPES, cell lists).
  template <typename F>
  void each_int(DType type, std::int64_t n, const std::string& what, F&& f) {
    check_fits(type, n, what);
    std::int64_t v[kInts];
    const auto count = static_cast<std::size_t>(n);
    if (!binary_) {
      const auto range = int_range(type);
      for (std::size_t i = 0; i < count;) {
        const std::size_t k = std::min(kInts, count - i);
        ascii_ints(v, k, range, what);
        f(static_cast<const std::int64_t*>(v), k);
        i += k;
      }
      return;
    }
    const std::size_t item = type.bits / 8;
    raw_chunks(count * item, item, what, [&](const char* p, std::size_t bytes) {
      for (std::size_t i = 0, m = bytes / item; i < m;) {
        const std::size_t k = std::min(kInts, m - i);
        ints_from_be(type, p + i * item, k, v);
        f(static_cast<const std::int64_t*>(v), k);
        i += k;
      }
    });
  }

  // `n` integers of `type` straight into `dst` as int64 (connectivity): no intermediate array.
  void int64s(DType type, std::int64_t n, const std::string& what, std::int64_t* dst) {
    check_fits(type, n, what);
    const auto count = static_cast<std::size_t>(n);
    if (!binary_) {
      const auto range = int_range(type);
      for (std::size_t i = 0; i < count; i += kInts)
        ascii_ints(dst + i, std::min(kInts, count - i), range, what);
    } else if (type.bits == 64) {
      swapped(reinterpret_cast<std::uint8_t*>(dst), count, 8, what);
    } else {
      std::size_t at = 0;
      each_int(type, n, what, [&](const std::int64_t* v, std::size_t k) {
        std::memcpy(dst + at, v, k * sizeof(std::int64_t));
        at += k;
      });
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
      // A float is rounded to float32, as VTK and the binary path hold it, then widened.
      const bool f32 = type.bits == 32;
      for (std::size_t i = 0; i < count; ++i) {
        const double v = c_.number<double>("number");
        dst[i] = f32 ? static_cast<double>(static_cast<float>(v)) : v;
        follow();
      }
      return;
    }
    if (type.bits == 64) {
      swapped(reinterpret_cast<std::uint8_t*>(dst), count, 8, what);
      return;
    }
    std::size_t at = 0;
    raw_chunks(count * 4, 4, what, [&](const char* src, std::size_t bytes) {
      for (std::size_t i = 0; i < bytes / 4; ++i) {
        std::uint32_t v;
        std::memcpy(&v, src + 4 * i, 4);
        v = __builtin_bswap32(v);
        float f;
        std::memcpy(&f, &v, 4);
        dst[at++] = f;
      }
    });
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
      follow();
    }
    return a;
  }

  // Text through a window: after each value, the window moves on when the parse nears its end
  // (one compare otherwise), the pages parsed so far leaving the process (mapped from the file
  // again should an error's line number need them), so an ascii read's peak is its arrays and
  // 2 MiB rather than its arrays and the file.
  void follow() {
    if (text_) text_->advance(c_.offset());
  }

  // `n` values of `type` into a flat Array (binary: big-endian raw bytes; ascii: text numbers).
  Array values(DType type, std::int64_t n, const std::string& what) {
    const std::size_t item = type.bits / 8;
    check_fits(type, n, what);
    Array a = Array::empty(type, {n});
    auto* dst = static_cast<std::uint8_t*>(a.data());
    if (binary_) {
      swapped(dst, static_cast<std::size_t>(n), item, what);
      return a;
    }
    const bool u64 = type.code == 1 && type.bits == 64;  // past INT64_MAX too
    try {
      if (type.code != 2 && !u64) {
        // Read as int64 a chunk at a time, each value checked against its type, then narrowed.
        const auto range = int_range(type);
        const auto quoted = "'" + what + "'";
        std::int64_t v[kInts];
        const auto count = static_cast<std::size_t>(n);
        for (std::size_t i = 0; i < count; i += kInts) {
          const std::size_t k = std::min(kInts, count - i);
          ascii_ints(v, k, range, quoted);
          narrow(dst + i * item, v, k, item);
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
          const auto v = c_.number<std::uint64_t>("integer");
          std::memcpy(dst + i * 8, &v, 8);
        }
        follow();
      }
    } catch (const DoesNotFit&) {
      throw;
    } catch (const ReadError& e) {
      throw ReadError(std::string(e.what()) + " (in '" + what + "')");
    }
    return a;
  }

  // `k` int64 values, each fitting `item` bytes, as `item`-byte ones at `dst` (little-endian,
  // as the Mesh holds them): a loop per width, which the compiler vectorizes.
  static void narrow(std::uint8_t* dst, const std::int64_t* v, std::size_t k, std::size_t item) {
    const auto to = [&](auto zero) {
      using T = decltype(zero);
      for (std::size_t j = 0; j < k; ++j) {
        const auto x = static_cast<T>(v[j]);
        std::memcpy(dst + j * sizeof(T), &x, sizeof(T));
      }
    };
    switch (item) {
      case 1:
        return to(std::uint8_t{});
      case 2:
        return to(std::uint16_t{});
      case 4:
        return to(std::uint32_t{});
      default:
        std::memcpy(dst, v, k * sizeof(std::int64_t));
    }
  }

  // `a` (comps * tuples values) as (tuples, comps): the same buffer, no copy.
  static Array shaped(Array a, std::int64_t comps) {
    if (comps <= 1) return a;
    return Array::view(a.buffer(), a.dtype(), {a.dim(0) / comps, comps});
  }

  void add(const std::string& target, std::int64_t target_n, const std::string& name, Array a,
           std::int64_t tuples, std::vector<std::pair<std::string, Array>>& cells) {
    if (target.empty()) {
      mesh_.field_data[name] = std::move(a);
      return;
    }
    check_tuples(target, target_n, name, tuples);
    if (target == "POINT_DATA") {
      mesh_.point_data[name] = std::move(a);
    } else {
      cells.emplace_back(name, std::move(a));
      cell_at_.emplace_back(section_.at, target_at_);
    }
  }

  // A POINT_DATA / CELL_DATA array of `tuples` tuples (a FIELD array's own count), refused
  // unless it is its section's `target_n`, at the array's line, naming the section's.
  void check_tuples(const std::string& target, std::int64_t target_n, const std::string& name,
                    std::int64_t tuples) const {
    if (target.empty() || tuples == target_n) return;
    throw ReadError(c_.file() + ":" + std::to_string(c_.line_at(section_.at)) + ": " + target +
                    " array '" + name + "' has " + std::to_string(tuples) + " tuples, expected " +
                    std::to_string(target_n) + " (" + target + " " + std::to_string(target_n) +
                    " on line " + std::to_string(c_.line_at(target_at_)) + ")");
  }

  // Each CELL_DATA array against the `cells` made: refused at its line (the section's too)
  // where its rows, which its CELL_DATA count gave, are not one a cell.
  void check_cell_rows(const std::vector<std::pair<std::string, Array>>& cell_arrays,
                       std::int64_t cells) const {
    for (std::size_t i = 0; i < cell_arrays.size(); ++i) {
      const auto& [name, a] = cell_arrays[i];
      if (a.dim(0) == cells) continue;
      const auto [array_at, section_at] = cell_at_.at(i);
      throw ReadError(c_.file() + ":" + std::to_string(c_.line_at(array_at)) +
                      ": CELL_DATA array '" + name + "' has " + std::to_string(a.dim(0)) +
                      " rows for " + std::to_string(cells) + " cells (CELL_DATA " +
                      std::to_string(a.dim(0)) + " on line " +
                      std::to_string(c_.line_at(section_at)) + ")");
    }
  }

  static constexpr std::size_t kChunk = std::size_t{1} << 18;
  static constexpr std::size_t kInts = 4096;  // integers parsed and checked at a time

  Cursor c_;
  const MappedFile* file_;         // lazily mapped: binary runs are read with pread
  MappedFile* text_;               // ascii, through a window moved on behind the parse
  std::unique_ptr<char[]> chunk_;  // raw_chunks' buffer (kChunk bytes), made on first use
  bool binary_ = false, version5_ = false;
  std::string dataset_;
  // The keyword read last, for a value where the next keyword belongs (more_than_counted): its
  // name ("CELLS", "SCALARS 'T'"), what its count says ("1 cell, 5 entries"; empty for one that
  // counts nothing) and where it is.
  struct Section {
    std::string name, count;
    std::size_t at = 0;
  } section_;
  std::size_t target_at_ = 0;  // the POINT_DATA / CELL_DATA keyword read last
  // Where each CELL_DATA array (cell_arrays, in its order) and its CELL_DATA keyword are.
  std::vector<std::pair<std::size_t, std::size_t>> cell_at_;
  Mesh mesh_;
};

}  // namespace

namespace {
// Whether the third line of a legacy VTK header (in the first bytes of the file) says BINARY.
bool binary_header(std::string_view head) {
  for (int line = 0; line < 2; ++line) {
    const auto nl = head.find('\n');
    if (nl == std::string_view::npos) return false;
    head.remove_prefix(nl + 1);
  }
  return ascii_upper(Cursor::trim(head.substr(0, head.find('\n')))) == "BINARY";
}
}  // namespace

Mesh read_vtk(const InFile& in) {
  // A binary file is mapped without its pages and its arrays read with pread (read_at): its
  // bytes never count against the read's peak. Text is parsed end to end, through a window.
  const bool binary = binary_header(peek_file(in, 1024));
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        return VtkReader(data, in.path, binary ? &file : nullptr, binary ? nullptr : &file).read();
      },
      binary ? Access::map_lazily : Access::window);
}

Mesh read_vtk_bytes(std::string_view data, const std::string& name) {
  return VtkReader(data, name).read();
}

}  // namespace meshdock::mesh
