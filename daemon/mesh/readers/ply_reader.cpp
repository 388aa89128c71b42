// PLY: ascii, binary_little_endian, binary_big_endian (after a UTF-8 byte-order mark, if any).
// The vertex element's x, y, z become the points (float64; x and y alone: 2-D points (n, 2), as
// meshio writes and reads a 2-D mesh) and its other scalar properties point_data of the file's
// type (uchar -> uint8, int -> int32, float -> float32, ...; as meshio keeps them); a name
// declared several times becomes one array of its values interleaved row by row, float64
// (noted) if its declarations differ in type. The face element's vertex_indices
// (or vertex_index) list becomes triangle / quad / polygon blocks (one per face size) and each
// of its scalar properties cell_data of the file's type, split into the same blocks as the
// faces. A "tristrips" element's vertex_indices (strips separated by -1) become triangles in
// the same blocks, alternate ones flipped so all keep the strip's orientation, as
// vtkTriangleFilter does (noted); the element's scalar properties are not kept (noted), and
// face properties are then not kept either (noted), as the strips' triangles would have no
// values in the shared triangle block. Other elements and list properties other than the vertex
// indices are skipped with a note, and so is anything after the last element.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <type_traits>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/face_blocks.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

// int64 / uint64 are not in the PLY specification, but meshio writes them for int64 data (and
// reads them back): read, as long as a value is exact in a double (|v| <= 2^53; the values pass
// through one), else a ReadError naming the property.
enum class Scalar { kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kF32, kF64 };

std::optional<Scalar> scalar_type(std::string_view s) {
  static const std::map<std::string_view, Scalar> kTypes = {
      {"char", Scalar::kI8},     {"int8", Scalar::kI8},     {"uchar", Scalar::kU8},
      {"uint8", Scalar::kU8},    {"short", Scalar::kI16},   {"int16", Scalar::kI16},
      {"ushort", Scalar::kU16},  {"uint16", Scalar::kU16},  {"int", Scalar::kI32},
      {"int32", Scalar::kI32},   {"uint", Scalar::kU32},    {"uint32", Scalar::kU32},
      {"float", Scalar::kF32},   {"float32", Scalar::kF32}, {"double", Scalar::kF64},
      {"float64", Scalar::kF64}, {"int64", Scalar::kI64},   {"uint64", Scalar::kU64}};
  auto it = kTypes.find(s);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

DType dtype_of_scalar(Scalar t) {
  switch (t) {
    case Scalar::kI8:
      return DType{0, 8, 1};
    case Scalar::kU8:
      return DType{1, 8, 1};
    case Scalar::kI16:
      return DType{0, 16, 1};
    case Scalar::kU16:
      return DType{1, 16, 1};
    case Scalar::kI32:
      return DType{0, 32, 1};
    case Scalar::kU32:
      return DType{1, 32, 1};
    case Scalar::kI64:
      return DType{0, 64, 1};
    case Scalar::kU64:
      return DType{1, 64, 1};
    case Scalar::kF32:
      return kFloat32;
    case Scalar::kF64:
      return kFloat64;
  }
  return kFloat64;
}

struct Property {
  std::string name;
  Scalar type;
  bool list = false;
  Scalar count_type = Scalar::kU8;
};

struct Element {
  std::string name;
  std::int64_t count = 0;
  std::vector<Property> props;
};

class PlyReader {
 public:
  // `file` is what `data` views, read through a window (Access::window): the reader moves it on
  // row by row.
  PlyReader(std::string_view data, MappedFile& file)
      : c_(data, file.path(), file.progress()), file_(file) {}

  Mesh read() {
    c_.seek(utf8_bom(c_.data()));
    if (c_.nonempty_line() != "ply") c_.fail("the first line is not 'ply'");
    read_header();
    for (const auto& e : elements_) read_element(e);
    if (!have_vertices_) c_.fail("no 'vertex' element");
    // The faces' arrays are checked and made next; what follows the last element is only
    // looked at (read through the mapping).
    file_.release_before(c_.data().size());
    faces_.finish(mesh_, mesh_.num_points(), c_);
    keep_face_properties();
    if (strip_triangles_) {
      mesh_.notes.push_back("ply: triangle strips converted to " +
                            std::to_string(strip_triangles_) + " triangles");
    }
    if (ascii_) c_.skip_ws();
    if (!c_.at_end()) {
      mesh_.notes.push_back("ply: " + c_.file() +
                            (ascii_ ? ":" + std::to_string(c_.line_at(c_.offset()))
                                    : ": byte " + std::to_string(c_.offset())) +
                            ": data after the last element; not read");
    }
    return std::move(mesh_);
  }

 private:
  void read_header() {
    while (true) {
      const auto line = c_.nonempty_line();
      if (line.empty()) c_.fail("header has no 'end_header'");
      Cursor l(line, c_.file());
      const auto key = l.token();
      if (key == "end_header") break;
      if (key == "comment" || key == "obj_info") continue;
      if (key == "format") {
        const auto f = l.token();
        if (f == "ascii")
          ascii_ = true;
        else if (f == "binary_little_endian")
          swap_ = false;
        else if (f == "binary_big_endian")
          swap_ = true;
        else
          c_.fail("unknown PLY format '" + std::string(f) + "'");
        have_format_ = true;
      } else if (key == "element") {
        Element e;
        e.name = std::string(l.token());
        try {
          e.count = l.number<std::int64_t>("element count");
        } catch (const ReadError&) {
          c_.fail("bad count for element '" + e.name + "'");
        }
        if (e.count < 0) c_.fail("negative count for element '" + e.name + "'");
        elements_.push_back(std::move(e));
      } else if (key == "property") {
        if (elements_.empty()) c_.fail("'property' before any 'element'");
        Property p;
        auto t = l.token();
        if (t == "list") {
          p.list = true;
          auto ct = scalar_type(l.token());
          if (!ct || *ct == Scalar::kF32 || *ct == Scalar::kF64) c_.fail("bad list count type");
          p.count_type = *ct;
          t = l.token();
        }
        auto st = scalar_type(t);
        if (!st) c_.fail("unknown PLY property type '" + std::string(t) + "'");
        p.type = *st;
        p.name = std::string(l.token());
        elements_.back().props.push_back(p);
      } else {
        c_.fail("unknown header line '" + std::string(line.substr(0, 60)) + "'");
      }
    }
    if (!have_format_) c_.fail("header has no 'format' line");
  }

  double value(Scalar t) {
    if (ascii_) {
      // 64-bit integers as integers: through a double, 2^53 + 1 would read as 2^53 unnoticed.
      if (t == Scalar::kI64) return exact(c_.number<std::int64_t>("int64 property value"));
      if (t == Scalar::kU64) return exact(c_.number<std::uint64_t>("uint64 property value"));
      return c_.number<double>("property value");
    }
    switch (t) {
      case Scalar::kI8:
        return c_.binary_one<std::int8_t>(swap_, "int8");
      case Scalar::kU8:
        return c_.binary_one<std::uint8_t>(swap_, "uint8");
      case Scalar::kI16:
        return c_.binary_one<std::int16_t>(swap_, "int16");
      case Scalar::kU16:
        return c_.binary_one<std::uint16_t>(swap_, "uint16");
      case Scalar::kI32:
        return c_.binary_one<std::int32_t>(swap_, "int32");
      case Scalar::kU32:
        return c_.binary_one<std::uint32_t>(swap_, "uint32");
      case Scalar::kI64:
        return exact(c_.binary_one<std::int64_t>(swap_, "int64"));
      case Scalar::kU64:
        return exact(c_.binary_one<std::uint64_t>(swap_, "uint64"));
      case Scalar::kF32:
        return c_.binary_one<float>(swap_, "float32");
      case Scalar::kF64:
        return c_.binary_one<double>(swap_, "float64");
    }
    return 0;
  }

  // A 64-bit integer value as the double every value passes through; one beyond 2^53 would
  // change on the way, so it is a ReadError instead.
  template <typename T>
  double exact(T v) {
    constexpr T kExact = T{1} << 53;
    const bool beyond = v > kExact || (std::is_signed_v<T> && v < -kExact);
    if (beyond)
      c_.fail(std::string(std::is_signed_v<T> ? "an int64" : "a uint64") +
              " property value is beyond 2^53, which this reader cannot keep exactly");
    return static_cast<double>(v);
  }

  // `v` (read as `t`) appended to `out` in t's own type.
  void store(ScratchVector<unsigned char>& out, Scalar t, double v, const std::string& name) {
    const auto at = out.size();
    out.resize(at + dtype_of_scalar(t).bits / 8);
    put(out.data() + at, t, v, name);
  }

  // `v` (read as `t`) written at `out` in t's own type. Binary values convert back exactly; an
  // ascii value must fit the declared type (an int property of 1.5 or 300 for a uchar is a
  // ReadError naming the line).
  void put(unsigned char* out, Scalar t, double v, const std::string& name) {
    auto write = [&](auto typed) {
      using T = decltype(typed);
      if constexpr (std::is_integral_v<T>) {
        if (!(v >= static_cast<double>(std::numeric_limits<T>::min()) &&
              v <= static_cast<double>(std::numeric_limits<T>::max()) &&
              v == static_cast<double>(static_cast<T>(v)))) {
          char text[32];
          std::snprintf(text, sizeof text, "%.17g", v);
          c_.fail("value " + std::string(text) + " of property '" + name +
                  "' does not fit its type");
        }
      }
      if constexpr (std::is_same_v<T, float>) {
        if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())
          c_.fail("value of property '" + name + "' is out of float range");
      }
      const T x = static_cast<T>(v);
      std::memcpy(out, &x, sizeof(T));
    };
    switch (t) {
      case Scalar::kI8:
        return write(std::int8_t{});
      case Scalar::kU8:
        return write(std::uint8_t{});
      case Scalar::kI16:
        return write(std::int16_t{});
      case Scalar::kU16:
        return write(std::uint16_t{});
      case Scalar::kI32:
        return write(std::int32_t{});
      case Scalar::kU32:
        return write(std::uint32_t{});
      case Scalar::kI64:
        return write(std::int64_t{});
      case Scalar::kU64:
        return write(std::uint64_t{});
      case Scalar::kF32:
        return write(float{});
      case Scalar::kF64:
        return write(double{});
    }
  }

  // The face element's scalar properties as cell_data, split like the faces (one value per
  // face: a face row that held no or several index lists, or strips sharing the blocks, leave
  // them unkept, noted).
  void keep_face_properties() {
    ScratchVector<std::uint32_t> block_of;  // made for the first property kept
    for (auto& [name, fp] : face_props_) {
      const std::size_t item = dtype_of_scalar(fp.type).bits / 8;
      std::string why;
      if (fp.mixed_types)
        why = "declared with different types";
      else if (strip_triangles_)
        why = "the triangle block also holds triangles from strips, which have no such value";
      else if (!face_rows_ok_ || face_rows_ != row_faces_ || fp.bytes.size() != face_rows_ * item)
        why = "face rows do not hold exactly one vertex index list each";
      if (!why.empty()) {
        mesh_.notes.push_back("ply: face property '" + name + "' not kept: " + why);
        continue;
      }
      // Every face came from a face row (no strips): the blocks FaceBlocks gave them.
      if (block_of.empty()) block_of = faces_.block_of();
      mesh_.cell_data[name] =
          split_rows(fp.bytes, item, dtype_of_scalar(fp.type), {}, block_of, faces_.num_blocks());
    }
  }

  // A list entry as a vertex index: integral and in int64 range (a float list or a corrupt
  // value must not be cast blindly).
  std::int64_t index(double v) {
    if (!(v >= -9.0e18 && v <= 9.0e18) || v != static_cast<double>(static_cast<std::int64_t>(v)))
      c_.fail("vertex index " + std::to_string(v) + " is not an integer");
    return static_cast<std::int64_t>(v);
  }

  // One tristrips row: strips separated by -1; triangle k of a strip is (s[k], s[k+1], s[k+2]),
  // with the first two swapped for odd k so every triangle keeps the strip's orientation.
  void add_strips(const std::vector<std::int64_t>& row) {
    std::size_t b = 0;
    while (b < row.size()) {
      std::size_t e = b;
      while (e < row.size() && row[e] != -1) ++e;
      for (std::size_t k = b; k + 2 < e; ++k) {
        const bool odd = (k - b) % 2 == 1;
        const std::int64_t tri[3] = {row[odd ? k + 1 : k], row[odd ? k : k + 1], row[k + 2]};
        faces_.add(tri, 3, 0, c_);
        ++strip_triangles_;
      }
      b = e + 1;
    }
  }

  void read_element(const Element& e) {
    const std::size_t min_row = ascii_ ? 2 : 1;
    if (static_cast<std::size_t>(e.count) > c_.remaining() / min_row && !e.props.empty()) {
      c_.fail("element '" + e.name + "' count " + std::to_string(e.count) +
              " is more than the file holds");
    }
    const bool vertex = e.name == "vertex";
    const bool face = e.name == "face";
    const bool strips = e.name == "tristrips";
    int xyz[3] = {-1, -1, -1};
    std::int64_t dim = 3;
    if (vertex) {
      for (std::size_t k = 0; k < e.props.size(); ++k) {
        for (int a = 0; a < 3; ++a) {
          if (!e.props[k].list && e.props[k].name == std::string(1, "xyz"[a]))
            xyz[a] = static_cast<int>(k);
        }
      }
      // x and y without z: 2-D points (n, 2), as meshio writes a 2-D mesh and reads it back.
      if (xyz[0] < 0 || xyz[1] < 0)
        c_.fail(std::string("vertex element lacks ") + (xyz[0] < 0 ? "x" : "y") +
                " (a vertex has x, y and z, or x and y for a 2-D mesh)");
      dim = xyz[2] < 0 ? 2 : 3;
      mesh_.points = Array::of<double>({e.count, dim});
      have_vertices_ = true;
    }
    // The vertex element's other scalar properties, written in place (no vector grown and
    // copied per property).
    std::map<std::string, Array> extra;
    std::vector<Slot> extra_at(e.props.size());
    if (vertex) extra = extra_arrays(e, xyz, extra_at);
    bool noted_element = false;
    std::vector<std::int64_t> nodes;
    // The face element's scalar properties, by position (nullptr for the others).
    std::vector<FaceProperty*> kept(e.props.size(), nullptr);
    for (std::size_t k = 0; face && k < e.props.size(); ++k) {
      const auto& p = e.props[k];
      if (p.list) continue;
      auto [it, fresh] = face_props_.try_emplace(p.name);
      if (fresh) it->second.type = p.type;
      if (it->second.type != p.type) it->second.mixed_types = true;
      kept[k] = &it->second;
    }
    if (face) {
      face_rows_ += static_cast<std::size_t>(e.count);
      faces_.expect(e.count, c_.remaining());
    }
    if (e.props.empty()) return;  // rows of nothing: no bytes, whatever the count
    for (std::int64_t r = 0; r < e.count; ++r) {
      file_.advance(c_.offset());
      const auto faces_before = row_faces_;
      for (std::size_t k = 0; k < e.props.size(); ++k) {
        const auto& p = e.props[k];
        if (p.list) {
          const auto n = static_cast<std::int64_t>(value(p.count_type));
          if (n < 0 || n > 1 << 20)
            c_.fail("list length " + std::to_string(n) + " in element '" + e.name + "'");
          const bool indices =
              (face || strips) && (p.name == "vertex_indices" || p.name == "vertex_index");
          if (!indices) {
            for (std::int64_t i = 0; i < n; ++i) value(p.type);  // skipped, noted once
            if (r == 0) {
              mesh_.notes.push_back("ply: list property '" + p.name + "' of element '" + e.name +
                                    "' not kept");
            }
            continue;
          }
          nodes.clear();
          for (std::int64_t i = 0; i < n; ++i) nodes.push_back(index(value(p.type)));
          if (face) {
            faces_.add(nodes.data(), nodes.size(), 0, c_);
            ++row_faces_;
          } else
            add_strips(nodes);
          continue;
        }
        const double v = value(p.type);
        if (vertex && (static_cast<int>(k) == xyz[0] || static_cast<int>(k) == xyz[1] ||
                       static_cast<int>(k) == xyz[2])) {
          const int axis = static_cast<int>(k) == xyz[0]   ? 0
                           : static_cast<int>(k) == xyz[1] ? 1
                                                           : 2;
          mesh_.points.as<double>()[dim * r + axis] = v;
        } else if (vertex) {
          const Slot& at = extra_at[k];
          put(at.dst + at.item * (at.stride * static_cast<std::size_t>(r) + at.j), at.type, v,
              p.name);
        } else if (face) {
          store(kept[k]->bytes, p.type, v, p.name);
        } else if (strips) {
          if (r == 0) {
            mesh_.notes.push_back("ply: property '" + p.name +
                                  "' of element 'tristrips' not kept (its strips are)");
          }
        } else if (r == 0 && !noted_element) {
          mesh_.notes.push_back("ply: element '" + e.name + "' (" + std::to_string(e.count) +
                                ") not kept");
          noted_element = true;
        }
      }
      if (face && row_faces_ != faces_before + 1) face_rows_ok_ = false;
    }
    for (auto& [name, a] : extra) mesh_.point_data[name] = std::move(a);
  }

  // Where a vertex property's value of row r goes: value stride * r + j of dst, each `item`
  // bytes of `type`.
  struct Slot {
    unsigned char* dst = nullptr;
    std::size_t stride = 0, j = 0, item = 0;
    Scalar type = Scalar::kF64;
  };
  // The vertex element's scalar properties other than x, y, z: an array per name (of the
  // declared type, float64 for a name declared m times with different types, noted; count * m
  // values for a name declared m times, interleaved row by row as they come; none for no rows),
  // and where each property's values go.
  std::map<std::string, Array> extra_arrays(const Element& e, const int xyz[3],
                                            std::vector<Slot>& at) {
    std::map<std::string, Array> out;
    if (e.count == 0) return out;
    auto is_extra = [&](std::size_t k) {
      const auto i = static_cast<int>(k);
      return !e.props[k].list && i != xyz[0] && i != xyz[1] && i != xyz[2];
    };
    std::map<std::string, std::size_t> declared;
    std::map<std::string, Scalar> type;  // of the first declaration; kF64 when they differ
    std::map<std::string, bool> mixed;
    for (std::size_t k = 0; k < e.props.size(); ++k) {
      if (!is_extra(k)) continue;
      const auto& p = e.props[k];
      at[k].j = declared[p.name]++;
      auto [it, fresh] = type.try_emplace(p.name, p.type);
      if (!fresh && it->second != p.type) mixed[p.name] = true;
    }
    for (const auto& [name, m] : declared) {
      const Scalar t = mixed.count(name) ? Scalar::kF64 : type[name];
      type[name] = t;
      out[name] = Array::empty(dtype_of_scalar(t), {e.count * static_cast<std::int64_t>(m)});
      if (mixed.count(name)) {
        mesh_.notes.push_back("ply: vertex property '" + name + "' is declared " +
                              std::to_string(m) + " times with different types; kept as float64");
      }
    }
    for (std::size_t k = 0; k < e.props.size(); ++k) {
      if (!is_extra(k)) continue;
      const auto& name = e.props[k].name;
      at[k].type = type[name];
      at[k].item = dtype_of_scalar(at[k].type).bits / 8;
      at[k].dst = static_cast<unsigned char*>(out[name].data());
      at[k].stride = declared[name];
    }
    return out;
  }

  Cursor c_;
  MappedFile& file_;
  bool ascii_ = false, swap_ = false, have_format_ = false, have_vertices_ = false;
  std::vector<Element> elements_;
  struct FaceProperty {
    Scalar type = Scalar::kF64;
    bool mixed_types = false;            // two face elements declare it differently
    ScratchVector<unsigned char> bytes;  // one value per face row, in the declared type
  };
  FaceBlocks faces_{/*consecutive=*/false};
  std::map<std::string, FaceProperty> face_props_;
  std::size_t row_faces_ = 0;  // faces added from face rows (not strips)
  std::size_t face_rows_ = 0;
  bool face_rows_ok_ = true;  // every face row held exactly one vertex index list
  std::int64_t strip_triangles_ = 0;
  Mesh mesh_;
};

}  // namespace

Mesh read_ply(const InFile& in) {
  return parse_mapped(
      in, [&](std::string_view data, MappedFile& file) { return PlyReader(data, file).read(); },
      Access::window);
}

}  // namespace meshdock::mesh
