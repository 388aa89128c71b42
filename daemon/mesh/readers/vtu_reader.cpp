// VTK XML UnstructuredGrid (.vtu): ascii, inline base64, appended raw and appended base64;
// zlib, LZ4 and LZMA compression (VTK's three compressors: independent blocks, LZ4 raw blocks,
// LZMA .xz streams); header_type UInt32 / UInt64; Little / BigEndian; several Pieces (points
// concatenated, cells renumbered; point and cell data kept where every piece has them, in one
// type: choose_arrays); every numeric VTK dtype, ascii values checked against its range.
//
// The XML structure is parsed by expat over the part of the file before <AppendedData> (raw
// appended bytes are not XML); array payloads are decoded straight from the mapped file.
// Cells follow meshio: a block per run of one VTK type (polygons further split by size), VTK ->
// meshio node order (wedge), point/cell data in the file's dtype, points as float64.
// Polyhedra (VTK 42, "faces" / "faceoffsets" arrays) become ragged "polyhedron" blocks; the
// VTK 9.4 polyhedron layout (face_connectivity, polyhedron_offsets, ...) raises ReadError.
// Poly-vertices, poly-lines, triangle strips and voxels (vtkAppendFilter on image data makes
// voxels) are decomposed as the legacy reader does (expand_vtk_cells), with its notes: cell
// data repeated per part, meshdock Cell region fields renumbered to the parts (Side ones,
// which cannot follow, stay field data with a note).
//
// The rest of the XML family goes through the same parse and DataArray decoding:
// - PolyData (.vtp): Verts, Lines, Polys, Strips (VTK's cell order) -> vertex / line /
//   triangle / quad / polygon blocks; poly-vertices, poly-lines and triangle strips are split
//   as in .vtu (expand_vtk_cells).
// - StructuredGrid (.vts), RectilinearGrid (.vtr), ImageData (.vti): points in VTK's order
//   (x fastest), cells hexahedra / quads / lines (VTK's point order for hexahedron and quad, also
//   where VTK itself says voxel / pixel), with a note. Several pieces are read as VTK reads
//   them: one grid of their extent, each piece copied into its box (shared boundary points
//   once; empty pieces skipped; see begin_grid), with a note.
// - Parallel files: PUnstructuredGrid (.pvtu), PPolyData (.pvtp), PStructuredGrid (.pvts),
//   PRectilinearGrid (.pvtr), PImageData (.pvti): each <Piece Source> (relative, never leaving
//   the parallel file's directory) opened through ReadOptions::open_sibling and read as a file
//   of the serial type, only that type. Unstructured and PolyData pieces are concatenated
//   (points, blocks, point and cell data by name); structured ones make one grid as above.
// A piece holds one <Points> (of one array), one <Cells> (<Verts>, ..., <PointData>, ...) and
// one array of each name its cell sections are read by: a second is a ReadError naming both
// lines, for VTK and meshio read such a file differently (start(), check_unique()).
// String arrays (VTK's vtkStringArray) are skipped with a note naming them: a Mesh holds
// numeric arrays only. Bit arrays (vtkBitArray, type="Bit") are read as uint8 0/1, the values
// VTK gives (as the legacy reader's "bit"), with a note.
#include <expat.h>
#include <lz4.h>
#include <lzma.h>
#include <zlib.h>
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include "daemon/mesh/base64.hpp"
#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/parallel.hpp"
#include "daemon/mesh/readers/block_sizes.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/region_fields.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

Mesh read_vtu_as(const InFile& in, const ReadOptions& options, std::string only,
                 std::string parent);

std::optional<DType> vtk_dtype(std::string_view s) {
  static const std::map<std::string_view, DType> kTypes = {
      {"Int8", {0, 8, 1}},     {"UInt8", {1, 8, 1}},   {"Int16", {0, 16, 1}},
      {"UInt16", {1, 16, 1}},  {"Int32", {0, 32, 1}},  {"UInt32", {1, 32, 1}},
      {"Int64", {0, 64, 1}},   {"UInt64", {1, 64, 1}}, {"Float32", {2, 32, 1}},
      {"Float64", {2, 64, 1}}, {"Char", {0, 8, 1}}};
  auto it = kTypes.find(s);
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

// VTK's name of a numeric type ("Float64", "UInt8"), for messages.
std::string vtk_type_name(DType t) {
  return std::string(t.code == 2 ? "Float" : t.code == 1 ? "UInt" : "Int") + std::to_string(t.bits);
}

// The type that holds the values of both `a` and `b`: numpy's promotion, which meshio applies
// when it concatenates pieces (Int32 and Float64: Float64; UInt8 and Int16: Int16; UInt64 and
// a signed type: Float64, the one lossy case, as in numpy).
DType common_dtype(DType a, DType b) {
  if (a == b) return a;
  if (a.code == 2 || b.code == 2) {
    int bits = 32;  // float32 holds every 8 and 16 bit integer exactly, not wider ones
    for (const DType t : {a, b})
      bits = std::max(bits, t.code == 2 || t.bits > 16 ? int{t.bits} : 32);
    return DType{2, static_cast<std::uint8_t>(bits > 32 ? 64 : 32), 1};
  }
  if (a.code == b.code) return a.bits > b.bits ? a : b;
  const DType s = a.code == 0 ? a : b, u = a.code == 0 ? b : a;
  if (u.bits < s.bits) return s;
  if (u.bits < 64) return DType{0, static_cast<std::uint8_t>(2 * u.bits), 1};
  return kFloat64;
}

// `a` with its values in type `to`, one that holds them (common_dtype's).
Array converted(const Array& a, DType to) {
  Array out = Array::empty(to, a.shape());
  auto* dst = static_cast<std::uint8_t*>(out.data());
  auto put = [&](std::size_t i, auto v) { std::memcpy(dst + i * sizeof v, &v, sizeof v); };
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to.code == 2) {
      const double v = value_at(a, i);
      if (to.bits == 32)
        put(i, static_cast<float>(v));
      else
        put(i, v);
      continue;
    }
    const std::int64_t v = int_at(a, i);  // an integer type no wider than `to`
    switch (to.bits) {
      case 8:
        put(i, static_cast<std::uint8_t>(v));
        break;
      case 16:
        put(i, static_cast<std::uint16_t>(v));
        break;
      case 32:
        put(i, static_cast<std::uint32_t>(v));
        break;
      default:
        put(i, v);
        break;
    }
  }
  return out;
}

// One array as one piece gives it, for agree(): its type, its components (the values per
// point or cell), the piece as messages name it ("piece 1 (line 12)") and the line an error
// about it points at.
struct ArrayOrigin {
  DType dtype;
  std::int64_t components = 1;
  std::string label;
  std::size_t line = 0;
};

// `items` as "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& items) {
  std::string s;
  for (std::size_t i = 0; i < items.size(); ++i)
    s += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return s;
}

// The note for an array some pieces lack: "point data 'B' is in 1 of 2 pieces (not in piece
// 0): dropped". `counted` pieces have rows of it (points, or cells: `rows`), of `total`.
std::string missing_note(const std::string& what, std::size_t has, std::size_t counted,
                         std::size_t total, const std::vector<std::size_t>& missing,
                         const char* rows) {
  std::string which;
  for (std::size_t i = 0; i < missing.size() && i < 8; ++i)
    which += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 8) which += ", ...";
  return what + " is in " + std::to_string(has) + " of " + (counted == total ? "" : "the ") +
         std::to_string(counted) + " pieces" +
         (counted == total ? std::string() : std::string(" with ") + rows) + " (not in piece" +
         (missing.size() > 1 ? "s " : " ") + which + "): dropped";
}

// The note for a name given twice in one section: the last array is kept (choose_arrays).
std::string twice_note(const std::string& section, const std::string& name, std::size_t first,
                       std::size_t last) {
  return "<" + section + "> has two arrays named '" + name + "' (lines " + std::to_string(first) +
         " and " + std::to_string(last) + "): the one at line " + std::to_string(first) +
         " is dropped, the last kept";
}

// An ascii token that is an integer written out ("-4", "4294967299"), as opposed to one that is
// no number at all: a value the type cannot hold, not a syntax error.
bool integer_literal(std::string_view t) {
  if (!t.empty() && (t.front() == '-' || t.front() == '+')) t.remove_prefix(1);
  return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
}

struct DataArrayInfo {
  std::string name, section, format;
  DType dtype{};
  std::string type_name;
  std::int64_t components = 1;
  std::optional<std::uint64_t> offset;
  // Inline payload (ascii numbers or base64): byte ranges of the DataArray's own text in the
  // mapped file, so megabytes of base64 are never copied out of it.
  std::vector<std::pair<std::size_t, std::size_t>> text;
  int piece = -1;
  std::size_t line = 0;
  bool is_string = false;  // type="String": never decoded (skipped with a note)
  // type="Bit" (vtkBitArray): ascii 0/1 values, binary 8 per byte, first in the high bit;
  // decoded as uint8 0/1, the values VTK gives (and the legacy reader's "bit" type).
  bool is_bit = false;
  std::optional<std::int64_t> tuples;  // NumberOfTuples (field data)
};

struct PieceInfo {
  std::int64_t num_points = 0, num_cells = 0;
  std::int64_t num_verts = 0, num_lines = 0, num_strips = 0, num_polys = 0;  // PolyData
  std::array<std::int64_t, 6> extent{};  // structured grids: x0 x1 y0 y1 z0 z1
  std::string source;                    // parallel files: the piece's file
  bool empty = false;                    // structured: an extent without points ("0 -1 ...")
  std::size_t line = 0;
  std::vector<std::size_t> arrays;              // indices into arrays_
  std::map<std::string, std::size_t> sections;  // <Points>, <Cells>, ...: the line of each
};

bool is_structured(std::string_view grid) {
  return grid == "StructuredGrid" || grid == "RectilinearGrid" || grid == "ImageData";
}

// The serial type whose files a parallel type's pieces are ("PImageData" -> "ImageData"); ""
// for a type that is not parallel.
std::string serial_of(std::string_view grid) {
  if (grid == "PUnstructuredGrid" || grid == "PPolyData" || grid == "PStructuredGrid" ||
      grid == "PRectilinearGrid" || grid == "PImageData")
    return std::string(grid.substr(1));
  return {};
}

// One piece of a structured grid as decoded, before it is placed in the whole grid: its
// extent, its points (StructuredGrid, float64 rows) or coordinates (RectilinearGrid), and its
// point and cell data in the piece's own order (x fastest).
struct GridPart {
  std::array<std::int64_t, 6> extent{};
  std::size_t line = 0;
  std::string where;  // "piece 1", or "piece 0 of dir/a_1.vts" in a parallel file's piece
  Array points;
  std::array<Array, 3> coords;
  struct Data {
    std::string name;
    Array a;
    std::size_t line = 0;  // its DataArray's
  };
  std::vector<Data> pdata, cdata;
};

// What read_grid_parts gets from one piece file of a parallel structured grid.
struct GridFile {
  std::vector<GridPart> parts;
  std::map<std::string, Array> field_data;
  std::vector<std::string> notes;
};

GridFile read_grid_parts(const InFile& in, const ReadOptions& options, std::string only,
                         std::string parent);

class VtuReader {
 public:
  // `file`, when the data is a mapped file, lets the reader drop each array's source pages
  // once it is decoded.
  // `only`, when given, is the one VTKFile type accepted (the pieces of a parallel file, which
  // is `parent`: a .pvtu's are UnstructuredGrid).
  VtuReader(std::string_view data, const std::string& path, MappedFile* file = nullptr,
            ReadOptions options = {}, std::string only = {}, std::string parent = {})
      : data_(data),
        path_(path),
        file_(file),
        max_bytes_(options.max_bytes),
        options_(std::move(options)),
        only_(std::move(only)),
        parent_(std::move(parent)) {}

  void limit_made(std::uint64_t bytes) { made_limit_ = bytes; }

  Mesh read() {
    parse_xml();
    if (serial_ != grid_) return read_parallel();
    if (pieces_.empty()) fail(0, "no <Piece> in <" + grid_ + ">");
    choose_arrays();
    if (is_structured(grid_)) {
      // The pieces are parts of one grid: each is decoded and placed in it by its extent.
      std::vector<std::array<std::int64_t, 6>> extents;
      for (const auto& p : pieces_)
        if (!p.empty) extents.push_back(p.extent);
      begin_grid(extents, pieces_.front().line);
      for (std::size_t i = 0; i < pieces_.size(); ++i)
        if (!pieces_[i].empty) add_grid_part(grid_part(pieces_[i], static_cast<int>(i)));
      finish_grid(pieces_.size());
    } else {
      const std::int64_t total_points = check_counts();
      // Several pieces are copied into the points of all; one piece's points are its decoded
      // array itself (float64) or made once it is decoded (read_points).
      if (pieces_.size() > 1) mesh_.points = Array::of<double>({total_points, 3});
      std::int64_t point_base = 0;
      for (std::size_t i = 0; i < pieces_.size(); ++i) {
        if (grid_ == "PolyData")
          assemble_poly(pieces_[i], static_cast<int>(i), point_base);
        else
          assemble_piece(pieces_[i], static_cast<int>(i), point_base);
        point_base += pieces_[i].num_points;
      }
      if (!mesh_.points.valid()) mesh_.points = Array::of<double>({0, 3});
      for (auto& [name, parts] : point_parts_) mesh_.point_data[name] = concat(parts, name);
    }
    // What write_vtu made of regions becomes regions again (region_fields.hpp).
    remap_region_fields();
    mesh::regions_from_field_data(mesh_, path_);
    for (auto& [k, a] : kept_fields_) mesh_.field_data.emplace(k, std::move(a));
    split_blocks_as_written(mesh_, "");  // block_sizes.hpp, shared with read_vtk
    return std::move(mesh_);
  }

  // A piece file of a parallel structured grid: its pieces, decoded but not assembled.
  GridFile read_parts() {
    parse_xml();
    choose_arrays();
    GridFile out;
    for (std::size_t i = 0; i < pieces_.size(); ++i)
      if (!pieces_[i].empty) out.parts.push_back(grid_part(pieces_[i], static_cast<int>(i)));
    out.field_data = std::move(mesh_.field_data);
    out.notes = std::move(mesh_.notes);
    return out;
  }

 private:
  [[noreturn]] void fail(std::size_t line, const std::string& what) const {
    throw ReadError(path_ + (line ? ":" + std::to_string(line) : std::string()) + ": " + what);
  }

  // ---- XML ------------------------------------------------------------------------------------
  void parse_xml() {
    std::size_t xml_end = data_.size();
    const auto app = data_.find("<AppendedData");
    if (app != std::string_view::npos) {
      xml_end = app;
      const auto gt = data_.find('>', app);
      const auto tag =
          gt == std::string_view::npos ? std::string_view() : data_.substr(app, gt - app);
      appended_base64_ = tag.find("base64") != std::string_view::npos;
      const auto underscore = gt == std::string_view::npos ? gt : data_.find('_', gt);
      if (underscore == std::string_view::npos) fail(0, "<AppendedData> has no '_' marker");
      appended_ = underscore + 1;
      appended_end_ = data_.size();
      if (appended_base64_) {
        const auto close = data_.find("</AppendedData", *appended_);
        if (close != std::string_view::npos) appended_end_ = close;
      }
    }
    std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> parser(XML_ParserCreate(nullptr),
                                                                        &XML_ParserFree);
    XML_SetUserData(parser.get(), this);
    XML_SetElementHandler(parser.get(), &VtuReader::on_start, &VtuReader::on_end);
    XML_SetCharacterDataHandler(parser.get(), &VtuReader::on_text);
    parser_ = parser.get();
    auto feed = [&](const char* p, std::size_t n, bool last) {
      if (XML_Parse(parser.get(), p, static_cast<int>(n), last) == XML_STATUS_ERROR) {
        if (!error_.empty()) throw ReadError(error_);
        fail(XML_GetCurrentLineNumber(parser.get()),
             std::string("XML error: ") + XML_ErrorString(XML_GetErrorCode(parser.get())));
      }
      if (!error_.empty()) throw ReadError(error_);
    };
    if (xml_end > static_cast<std::size_t>(INT32_MAX)) fail(0, "XML part larger than 2 GiB");
    // The file was mapped without its pages (read_vtu): the XML part is all read, so it is
    // mapped in one call; appended arrays are mapped or read one at a time as they decode.
    if (file_) file_->populate(0, xml_end);
    // In pieces, so that a caller's cancel stops the parse of a large ascii file (hundreds of
    // MB of XML) within a piece, not after it. Offsets stay the file's: expat counts the bytes
    // of every call. No bytes are reported here: the arrays' decoding reports them after.
    ReadProgress* progress = file_ ? file_->progress() : nullptr;
    constexpr std::size_t kPiece = std::size_t{16} << 20;
    for (std::size_t at = 0;;) {
      if (progress && progress->cancelled()) progress->reached(at, path_);  // throws
      const std::size_t n = std::min(kPiece, xml_end - at);
      const bool last = at + n == xml_end;
      feed(data_.data() + at, n, last && app == std::string_view::npos);
      at += n;
      if (last) break;
    }
    if (app != std::string_view::npos) {
      // What follows <AppendedData> is not XML: close the open elements ourselves.
      std::string tail;
      for (auto it = open_.rbegin(); it != open_.rend(); ++it) tail += "</" + *it + ">";
      feed(tail.data(), tail.size(), true);
    }
  }

  void stop(const std::string& what) {
    if (error_.empty()) {
      error_ = path_ + ":" + std::to_string(XML_GetCurrentLineNumber(parser_)) + ": " + what;
    }
    XML_StopParser(parser_, XML_FALSE);
  }

  static std::map<std::string, std::string> attrs(const char** a) {
    std::map<std::string, std::string> m;
    for (; a && a[0]; a += 2) m[a[0]] = a[1];
    return m;
  }

  // Expat is C: no exception may cross its frames. Each handler runs inside this guard, which
  // turns a ReadError (or bad_alloc) into a stopped parse that parse_xml() rethrows.
  template <typename F>
  static void guarded(void* self, F&& f) {
    auto* r = static_cast<VtuReader*>(self);
    try {
      f(r);
    } catch (const ReadError& e) {
      if (r->error_.empty()) r->error_ = e.what();
      XML_StopParser(r->parser_, XML_FALSE);
    } catch (const std::bad_alloc&) {
      if (r->error_.empty()) r->error_ = r->path_ + ": out of memory while parsing";
      XML_StopParser(r->parser_, XML_FALSE);
    }
  }

  static void on_start(void* self, const char* name, const char** a) {
    guarded(self, [&](VtuReader* r) { r->start(name, attrs(a)); });
  }
  static void on_end(void* self, const char* name) {
    guarded(self, [&](VtuReader* r) { r->end(name); });
  }
  static void on_text(void* self, const char* s, int len) {
    auto* r = static_cast<VtuReader*>(self);
    (void)s;
    (void)len;
    if (r->in_array_ && r->open_.size() == r->array_depth_) {
      const auto at = static_cast<std::size_t>(XML_GetCurrentByteIndex(r->parser_));
      const auto n = static_cast<std::size_t>(XML_GetCurrentByteCount(r->parser_));
      auto& t = r->arrays_.back().text;
      if (!t.empty() && t.back().second == at)
        t.back().second = at + n;
      else
        t.emplace_back(at, at + n);
    }
  }

  std::int64_t int_attr(const std::map<std::string, std::string>& a, const char* key,
                        std::int64_t dflt) {
    auto it = a.find(key);
    if (it == a.end()) return dflt;
    std::int64_t v = 0;
    const auto& s = it->second;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) {
      // stop() only ends the parse once this callback returns: the caller goes on with what we
      // return, which must be a count it can add (a fuzzer's find: -2 overflowed a sum's check).
      stop(std::string("attribute ") + key + "=\"" + s + "\" is not a non-negative integer");
      return 0;
    }
    return v;
  }

  // Whitespace-separated doubles (ImageData Origin / Spacing / Direction); `dflt` when absent.
  std::vector<double> doubles_attr(const std::map<std::string, std::string>& a, const char* key,
                                   std::size_t n, std::vector<double> dflt) {
    auto it = a.find(key);
    if (it == a.end()) return dflt;
    std::vector<double> v;
    Cursor c(it->second, path_);
    try {
      for (c.skip_ws(); !c.at_end(); c.skip_ws()) v.push_back(c.number<double>("number"));
    } catch (const ReadError&) {
      v.clear();
    }
    if (v.size() != n) {
      stop(std::string("attribute ") + key + "=\"" + it->second + "\" is not " + std::to_string(n) +
           " numbers");
      return dflt;
    }
    return v;
  }

  // "x0 x1 y0 y1 z0 z1" (WholeExtent / Extent; indices may be negative).
  std::array<std::int64_t, 6> extent_attr(const std::map<std::string, std::string>& a,
                                          const char* key) {
    std::array<std::int64_t, 6> e{};
    auto it = a.find(key);
    if (it == a.end()) {
      stop(grid_ + " has no " + key);
      return e;
    }
    Cursor c(it->second, path_);
    std::size_t n = 0;
    try {
      for (c.skip_ws(); !c.at_end() && n < 7; c.skip_ws()) {
        const auto v = c.number<std::int64_t>("number");
        if (n < 6) e[n] = v;
        ++n;
      }
    } catch (const ReadError&) {
      n = 0;
    }
    // Every index within +-2^40, so that the callers' differences cannot overflow; zeros after
    // an error (stop() ends the parse only once the callback returns).
    constexpr std::int64_t kMax = std::int64_t{1} << 40;
    if (n != 6 ||
        std::any_of(e.begin(), e.end(), [](std::int64_t x) { return x < -kMax || x > kMax; })) {
      stop(std::string("attribute ") + key + "=\"" + it->second + "\" is not 6 integers");
      return {};
    }
    return e;
  }

  void note_string(const DataArrayInfo& d) {
    mesh_.notes.push_back("string array '" + d.name + "' in <" +
                          (d.section.empty() ? std::string("?") : d.section) +
                          "> skipped: a mesh holds numeric arrays only");
  }

  void start(const std::string& name, const std::map<std::string, std::string>& a) {
    open_.push_back(name);
    if (name == "VTKFile") {
      static const std::set<std::string> kGrids = {
          "UnstructuredGrid",  "PolyData",  "StructuredGrid",  "RectilinearGrid",
          "ImageData",         "PPolyData", "PStructuredGrid", "PRectilinearGrid",
          "PUnstructuredGrid", "PImageData"};
      auto t = a.find("type");
      grid_ = t == a.end() ? std::string() : t->second;
      serial_ = serial_of(grid_).empty() ? grid_ : serial_of(grid_);
      if (!only_.empty() && grid_ != only_)
        stop("VTKFile type is '" + grid_ + "', but " + parent_ + " (a P" + only_ +
             ") names this file as one of its pieces, which must be " + only_);
      else if (!kGrids.count(grid_))
        stop("VTKFile type is '" + grid_ +
             "'; UnstructuredGrid, PolyData, StructuredGrid, RectilinearGrid, ImageData and "
             "their parallel forms (PUnstructuredGrid, PPolyData, PStructuredGrid, "
             "PRectilinearGrid, PImageData) are read");
      if (auto b = a.find("byte_order"); b != a.end()) big_endian_ = b->second == "BigEndian";
      if (auto h = a.find("header_type"); h != a.end()) {
        if (h->second == "UInt64")
          header_size_ = 8;
        else if (h->second != "UInt32")
          stop("header_type '" + h->second + "' is not UInt32 or UInt64");
      }
      if (auto c = a.find("compressor"); c != a.end() && !c->second.empty()) {
        if (c->second == "vtkZLibDataCompressor")
          codec_ = Codec::zlib;
        else if (c->second == "vtkLZ4DataCompressor")
          codec_ = Codec::lz4;
        else if (c->second == "vtkLZMADataCompressor")
          codec_ = Codec::lzma;
        else
          stop("compressor '" + c->second +
               "' is not supported (vtkZLibDataCompressor, vtkLZ4DataCompressor and "
               "vtkLZMADataCompressor are)");
      }
    } else if (open_.size() == 2 && name == grid_) {
      if (is_structured(serial_)) whole_extent_ = extent_attr(a, "WholeExtent");
      if (serial_ == "ImageData") {
        origin_ = doubles_attr(a, "Origin", 3, {0, 0, 0});
        spacing_ = doubles_attr(a, "Spacing", 3, {1, 1, 1});
        direction_ = doubles_attr(a, "Direction", 9, {1, 0, 0, 0, 1, 0, 0, 0, 1});
      }
    } else if (name == "Piece") {
      PieceInfo p;
      p.line = XML_GetCurrentLineNumber(parser_);
      p.num_points = int_attr(a, "NumberOfPoints", 0);
      p.num_cells = int_attr(a, "NumberOfCells", 0);
      if (grid_ == "PolyData") {
        p.num_verts = int_attr(a, "NumberOfVerts", 0);
        p.num_lines = int_attr(a, "NumberOfLines", 0);
        p.num_strips = int_attr(a, "NumberOfStrips", 0);
        p.num_polys = int_attr(a, "NumberOfPolys", 0);
        p.num_cells = 0;
        for (const auto n : {p.num_verts, p.num_lines, p.num_strips, p.num_polys}) {
          // Each is checked against its section's offsets later (check_counts); their sum,
          // which the cell data is decoded against, must not overflow meanwhile.
          if (p.num_cells > INT64_MAX - n) {
            stop("the piece's cell counts add up to more than 2^63 - 1");
            return;
          }
          p.num_cells += n;
        }
      } else if (is_structured(serial_)) {
        p.extent = a.count("Extent") ? extent_attr(a, "Extent") : whole_extent_;
        // Points and cells as VTK counts them: an axis of one point has one layer of cells.
        // An axis of no points ("0 -1", what VTK writes for a piece it had nothing for) makes
        // an empty piece, which is skipped.
        std::int64_t points = 1, cells = 1;
        for (int i = 0; i < 3; ++i) p.empty |= p.extent[2 * i + 1] == p.extent[2 * i] - 1;
        for (int i = 0; i < 3 && !p.empty; ++i) {
          const auto n = p.extent[2 * i + 1] - p.extent[2 * i] + 1;
          if (n < 1 || n > (std::int64_t{1} << 31)) {
            stop("Piece Extent axis " + std::to_string(i) + " has " + std::to_string(n) +
                 " points");
            return;
          }
          if (points > (std::int64_t{1} << 40) / n) {
            stop("Piece Extent names more than 2^40 points");
            return;
          }
          points *= n;
          cells *= n > 1 ? n - 1 : 1;
        }
        p.num_points = p.empty ? 0 : points;
        p.num_cells = p.empty ? 0 : cells;
      }
      if (auto src = a.find("Source"); src != a.end()) p.source = src->second;
      pieces_.push_back(p);
      in_piece_ = true;
    } else if (name == "Points" || name == "Cells" || name == "PointData" || name == "CellData" ||
               name == "FieldData" || name == "Verts" || name == "Lines" || name == "Strips" ||
               name == "Polys" || name == "Coordinates") {
      section_ = name;
      // A piece holds each of these once. A second one (VTK reads the last, meshio refuses the
      // file or merges the two) is refused, naming both, rather than one of them read silently.
      // An empty piece's sections are never read. FieldData keeps its own rule (end()).
      const auto line = XML_GetCurrentLineNumber(parser_);
      if (name != "FieldData" && in_piece_ && open_.size() >= 2 &&
          open_[open_.size() - 2] == "Piece" && !pieces_.back().empty) {
        auto& p = pieces_.back();
        const auto [it, fresh] = p.sections.try_emplace(name, line);
        if (!fresh) {
          stop("piece " + std::to_string(pieces_.size() - 1) + " (line " + std::to_string(p.line) +
               ") has two <" + name + "> elements (lines " + std::to_string(it->second) + " and " +
               std::to_string(line) + "); a piece has one: which to read is ambiguous");
          return;
        }
      }
    } else if ((name == "DataArray" || name == "Array") && in_piece_ && pieces_.back().empty) {
      // An empty piece's arrays are never read: VTK writes them with offset="" when appended.
    } else if (name == "DataArray" || name == "Array") {
      DataArrayInfo d;
      d.line = XML_GetCurrentLineNumber(parser_);
      d.section = section_;
      d.piece = static_cast<int>(pieces_.size()) - 1;
      d.name = a.count("Name") ? a.at("Name") : "";
      d.type_name = a.count("type") ? a.at("type") : "";
      d.is_string = d.type_name == "String";
      d.is_bit = d.type_name == "Bit";
      auto dt = d.is_bit ? std::optional<DType>(DType{1, 8, 1}) : vtk_dtype(d.type_name);
      if (!dt && !d.is_string) {
        stop("DataArray '" + d.name + "' has type '" + d.type_name + "', not a numeric VTK type");
        return;
      }
      d.dtype = dt ? *dt : DType{1, 8, 1};
      d.components = int_attr(a, "NumberOfComponents", 1);
      if (a.count("NumberOfTuples")) d.tuples = int_attr(a, "NumberOfTuples", 0);
      if (d.components < 1) d.components = 1;
      d.format = a.count("format") ? a.at("format") : "ascii";
      if (d.format == "appended")
        d.offset = static_cast<std::uint64_t>(int_attr(a, "offset", 0));
      else if (d.format != "ascii" && d.format != "binary")
        stop("DataArray '" + d.name + "' has format '" + d.format + "'");
      if (!pieces_.empty() && !check_unique(d)) return;
      arrays_.push_back(std::move(d));
      if (!pieces_.empty() && section_ != "FieldData")
        pieces_.back().arrays.push_back(arrays_.size() - 1);
      else if (section_ == "FieldData")
        field_arrays_.push_back(arrays_.size() - 1);
      in_array_ = true;
      array_depth_ = open_.size();
    }
  }

  // `d`, about to join the current piece, against the arrays the piece has: <Points> holds one
  // array (VTK refuses more), a cell section (<Cells>, <Verts>, <Lines>, <Polys>, <Strips>)
  // one of each name it is read by (VTK reads the first of a name, meshio the last). Either
  // way a ReadError naming both lines; false when the parse was stopped so.
  bool check_unique(const DataArrayInfo& d) {
    const auto& s = d.section;
    const bool points = s == "Points";
    const bool cells =
        s == "Cells" || s == "Verts" || s == "Lines" || s == "Polys" || s == "Strips";
    if (!points && !cells) return true;
    static const std::set<std::string> kRead = {"connectivity", "offsets", "types", "faces",
                                                "faceoffsets"};
    if (cells && !kRead.count(d.name)) return true;
    const auto piece = std::to_string(pieces_.size() - 1);
    for (const auto idx : pieces_.back().arrays) {
      const auto& o = arrays_[idx];
      if (o.section != s || (cells && o.name != d.name)) continue;
      if (points)
        stop("piece " + piece + ": <Points> has two DataArrays (lines " + std::to_string(o.line) +
             " and " + std::to_string(d.line) + "); it holds one, the points");
      else
        stop("piece " + piece + ": <" + s + "> has two arrays named '" + d.name + "' (lines " +
             std::to_string(o.line) + " and " + std::to_string(d.line) +
             "); which to read is ambiguous (VTK reads the first, meshio the last)");
      return false;
    }
    return true;
  }

  void end(const std::string& name) {
    if (name == "Piece") in_piece_ = false;
    if ((name == "DataArray" || name == "Array") && open_.size() == array_depth_) in_array_ = false;
    if (name == "Points" || name == "Cells" || name == "PointData" || name == "CellData" ||
        name == "FieldData" || name == "Verts" || name == "Lines" || name == "Strips" ||
        name == "Polys" || name == "Coordinates")
      section_.clear();
    if (name == "FieldData") {
      for (auto i : field_arrays_) {
        const auto& d = arrays_[i];
        if (d.is_string) {
          note_string(d);
          continue;
        }
        // A name given twice: the last array is kept, as in <PointData> (choose_arrays).
        if (const auto old = field_lines_.find(d.name); old != field_lines_.end())
          mesh_.notes.push_back(twice_note("FieldData", d.name, old->second, d.line));
        field_lines_[d.name] = d.line;
        mesh_.field_data[d.name] = decode(d, -1);
      }
      field_arrays_.clear();
    }
    open_.pop_back();
  }

  // ---- payloads -------------------------------------------------------------------------------
  std::uint64_t header_value(const std::uint8_t* p) const {
    if (header_size_ == 4) {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return big_endian_ ? Cursor::byteswap(v) : v;
    }
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return big_endian_ ? Cursor::byteswap(v) : v;
  }

  // Header + (possibly compressed) data -> the raw array bytes. `avail` bytes are at `p`.
  using Alloc = std::function<std::uint8_t*(std::size_t)>;

  // Header + (possibly compressed) data -> the array's bytes, written where `alloc` says (the
  // final Array: no intermediate copy). `avail` bytes are at `p`.
  // `consumed(begin, end, last)`, when given, is told about source bytes the inflate is done
  // with, in order and in steps of 1 MiB (`last` on the final step), so the caller can drop
  // them while the output grows.
  using Consumed = std::function<void(const std::uint8_t*, const std::uint8_t*, bool)>;
  void unpack(const DataArrayInfo& d, const std::uint8_t* p, std::size_t avail, const Alloc& alloc,
              const Consumed& consumed = {}) {
    const std::size_t h = header_size_;
    auto need = [&](std::size_t n, const char* what) {
      if (n > avail)
        fail(d.line, "DataArray '" + d.name + "': " + what + " needs " + std::to_string(n) +
                         " bytes but only " + std::to_string(avail) + " are there (truncated?)");
    };
    if (codec_ == Codec::none) {
      need(h, "header");
      const auto n = header_value(p);
      claim(d, n);
      if (n > avail - h)
        fail(d.line, "DataArray '" + d.name + "': header says " + std::to_string(n) +
                         " bytes but only " + std::to_string(avail - h) +
                         " are there (truncated?)");
      std::uint8_t* dst = alloc(n);
      const char* src = reinterpret_cast<const char*>(p + h);
      if (n == 0) return;
      if (file_ && src >= data_.data() && src < data_.data() + data_.size()) {
        // Appended raw data is the file itself: read straight into the array with pread, so
        // its pages never enter this process (MappedFile::read_at).
        file_->read_at(static_cast<std::size_t>(src - data_.data()), n,
                       reinterpret_cast<char*>(dst));
      } else {
        std::memcpy(dst, src, n);
      }
      return;
    }
    need(3 * h, "compression header");
    const auto nblocks = header_value(p);
    const auto block = header_value(p + h);
    auto last = header_value(p + 2 * h);
    if (nblocks > avail / h)
      fail(d.line, "DataArray '" + d.name + "': " + std::to_string(nblocks) +
                       " compressed blocks cannot fit");
    need((3 + nblocks) * h, "block sizes");
    if (nblocks == 0) {
      alloc(0);
      return;
    }
    if (last == 0) last = block;
    if (block == 0 || last > block)
      fail(d.line, "DataArray '" + d.name + "': block size " + std::to_string(block) +
                       " / last block " + std::to_string(last) + " are inconsistent");
    const std::uint64_t total = (nblocks - 1) * block + last;
    claim(d, total);
    std::vector<std::uint64_t> src_off(nblocks + 1, 0);
    for (std::uint64_t i = 0; i < nblocks; ++i) {
      const auto c = header_value(p + (3 + i) * h);
      if (c > avail || src_off[i] + c > avail) need(avail + 1, "compressed blocks");
      src_off[i + 1] = src_off[i] + c;
    }
    const std::size_t base = (3 + nblocks) * h;
    need(base + src_off[nblocks], "compressed blocks");
    // Deflate expands by at most ~1032x, LZ4 by ~255x, LZMA (xz) by ~7000x (zeros): a header
    // claiming more than that is hostile, refused before anything is allocated.
    const std::uint64_t ratio = codec_ == Codec::zlib ? 1032 : codec_ == Codec::lz4 ? 256 : 8192;
    if (total > (src_off[nblocks] + 64) * ratio)
      fail(d.line, "DataArray '" + d.name + "': header claims " + std::to_string(total) +
                       " bytes from " + std::to_string(src_off[nblocks]) + " compressed");
    std::uint8_t* out = alloc(total);
    inflate_blocks(d, p + base, src_off, out, block, last, consumed);
  }

  // Counts `bytes` an array's header claims against ReadOptions::max_bytes, before they are
  // allocated or inflated: a zlib bomb is refused from its headers.
  void claim(const DataArrayInfo& d, std::uint64_t bytes) {
    if (!max_bytes_) return;
    if (bytes > max_bytes_ || claimed_ > max_bytes_ - bytes)
      throw SizeLimitError(path_ + ":" + std::to_string(d.line) + ": DataArray '" + d.name +
                           "' claims " + std::to_string(bytes) + " bytes (" +
                           std::to_string(claimed_ + bytes) + " with the arrays before it), " +
                           "over the " + std::to_string(max_bytes_) +
                           " bytes this file may decode to");
    claimed_ += bytes;
  }

  // Blocks are independent: decompressed on every core (zlib: libdeflate when built with it,
  // else zlib; LZ4: liblz4; LZMA: liblzma). The first failing block is reported.
  void inflate_blocks(const DataArrayInfo& d, const std::uint8_t* src,
                      const std::vector<std::uint64_t>& src_off, std::uint8_t* out,
                      std::uint64_t block, std::uint64_t last, const Consumed& consumed) {
    const std::uint64_t nblocks = src_off.size() - 1;
    const std::uint64_t total = (nblocks - 1) * block + last;
    std::mutex m;
    std::optional<std::pair<std::uint64_t, std::string>> error;  // the lowest failing block
    // The front of the source goes once every block before a point has been inflated.
    InOrder order(nblocks);
    std::uint64_t dropped = 0;
    auto finished = [&](std::uint64_t i) {
      if (!consumed) return;
      order.done(i, [&](std::size_t front) {
        if (src_off[front] - dropped >= (1u << 20) || front == nblocks) {
          consumed(src + dropped, src + src_off[front], front == nblocks);
          dropped = src_off[front];
        }
      });
    };
    // Small arrays inflate on this thread alone; larger ones on every core.
    parallel_for(nblocks, total < (1u << 20) ? 1 : 0, [&](std::size_t i) {
      const std::size_t want = static_cast<std::size_t>(i + 1 == nblocks ? last : block);
      const std::uint8_t* in = src + src_off[i];
      const std::size_t in_size = src_off[i + 1] - src_off[i];
      std::string why;
      if (codec_ == Codec::lz4) {
        // VTK's vtkLZ4DataCompressor: a raw LZ4 block (LZ4_compress_default), no frame.
        if (want > static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE) || in_size > INT32_MAX) {
          why = "block larger than LZ4 allows";
        } else {
          const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(in),
                                              reinterpret_cast<char*>(out + i * block),
                                              static_cast<int>(in_size), static_cast<int>(want));
          if (got < 0)
            why = "bad LZ4 data";
          else if (static_cast<std::size_t>(got) != want)
            why = "wrong size";
        }
      } else if (codec_ == Codec::lzma) {
        // VTK's vtkLZMADataCompressor and meshio's lzma: an .xz stream (lzma_easy_buffer_encode,
        // Python's lzma.compress). The decoder's memory is bounded: 256 MiB takes any preset's
        // dictionary (64 MiB at -9).
        std::uint64_t memlimit = std::uint64_t{256} << 20;
        std::size_t in_pos = 0, out_pos = 0;
        const auto rc = lzma_stream_buffer_decode(&memlimit, 0, nullptr, in, &in_pos, in_size,
                                                  out + i * block, &out_pos, want);
        if (rc == LZMA_BUF_ERROR && out_pos == want)
          why = "more data than its block size";
        else if (rc != LZMA_OK)
          why = lzma_why(rc);
        else if (out_pos != want)
          why = "wrong size";
        else if (in_pos != in_size)
          why = "stray bytes after the stream";
      } else {
        why = inflate_one(in, in_size, out + i * block, want);
      }
      if (!why.empty()) {
        std::lock_guard lock(m);
        if (!error || i < error->first) error.emplace(i, why);
        return;
      }
      finished(i);
    });
    if (error)
      fail(d.line, "DataArray '" + d.name + "': " + codec_name() + " block " +
                       std::to_string(error->first) + " is corrupt (" + error->second + ")");
  }

  const char* codec_name() const {
    return codec_ == Codec::lz4 ? "LZ4" : codec_ == Codec::lzma ? "LZMA" : "zlib";
  }

  static std::string lzma_why(lzma_ret rc) {
    switch (rc) {
      case LZMA_FORMAT_ERROR:
        return "not an .xz stream";
      case LZMA_OPTIONS_ERROR:
        return "unsupported .xz options";
      case LZMA_DATA_ERROR:
        return "bad LZMA data";
      case LZMA_BUF_ERROR:
        return "truncated .xz stream";
      case LZMA_MEMLIMIT_ERROR:
        return "needs more than 256 MiB to decode";
      case LZMA_MEM_ERROR:
        return "out of memory";
      default:
        return "lzma error " + std::to_string(static_cast<int>(rc));
    }
  }

  // One zlib block (libdeflate when built with it, else zlib): "" or why it failed.
  static std::string inflate_one(const std::uint8_t* in, std::size_t in_size, std::uint8_t* out,
                                 std::size_t want) {
    std::string why;
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
    thread_local std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)>
        dec(libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
    std::size_t got = 0;
    const auto rc = dec ? libdeflate_zlib_decompress(dec.get(), in, in_size, out, want, &got)
                        : LIBDEFLATE_BAD_DATA;
    if (rc != LIBDEFLATE_SUCCESS)
      why = "bad deflate data";
    else if (got != want)
      why = "wrong size";
#else
    uLongf got = static_cast<uLongf>(want);
    const int rc = uncompress(out, &got, in, static_cast<uLong>(in_size));
    if (rc != Z_OK)
      why = zError(rc);
    else if (got != want)
      why = "wrong size";
#endif
    return why;
  }

  // Compressed bytes decoded from base64 go as soon as they are inflated. Everything before
  // `end` is consumed, header included, so the drop runs from the buffer's start (a page that
  // straddles a step is dropped by the next one); the last step takes the whole buffer.
  static Consumed drop_scratch(const ScratchVector<std::uint8_t>& b64) {
    return [&b64](const std::uint8_t*, const std::uint8_t* end, bool last) {
      drop_pages(b64.data(), last ? scratch_end(b64) : end);
    };
  }
  const std::uint8_t* data_u8() const {
    return reinterpret_cast<const std::uint8_t*>(data_.data());
  }

  // The inline text of `d` (a view into the file; `scratch` only when it comes in pieces).
  std::string_view text_of(const DataArrayInfo& d, std::string& scratch) const {
    if (d.text.empty()) return {};
    if (d.text.size() == 1)
      return data_.substr(d.text[0].first, d.text[0].second - d.text[0].first);
    for (const auto& [a, b] : d.text) scratch.append(data_.substr(a, b - a));
    return scratch;
  }

  void raw_bytes(const DataArrayInfo& d, const Alloc& alloc) {
    if (d.format == "binary") {
      ScratchVector<std::uint8_t> b64;
      std::string scratch;
      if (auto bad = base64_decode(text_of(d, scratch), b64))
        fail(d.line,
             "DataArray '" + d.name + "': bad base64 character at offset " + std::to_string(*bad));
      release_source(d);  // the text is decoded: drop it before inflating
      return unpack(d, b64.data(), b64.size(), alloc, drop_scratch(b64));
    }
    // appended
    if (!appended_)
      fail(d.line, "DataArray '" + d.name + "' is appended but the file has no <AppendedData>");
    const std::uint64_t off = *d.offset;
    if (appended_base64_) {
      if (off > appended_end_ - *appended_)
        fail(d.line, "DataArray '" + d.name + "': offset " + std::to_string(off) +
                         " is past the appended data");
      const std::uint64_t next = appended_next(off);
      if (file_) file_->populate(*appended_ + off, *appended_ + next);
      ScratchVector<std::uint8_t> b64;
      if (auto bad = base64_decode(data_.substr(*appended_ + off, next - off), b64))
        fail(d.line, "DataArray '" + d.name + "': bad base64 character at appended offset " +
                         std::to_string(off + *bad));
      release_source(d);
      return unpack(d, b64.data(), b64.size(), alloc, drop_scratch(b64));
    }
    if (off > data_.size() - *appended_)
      fail(d.line, "DataArray '" + d.name + "': offset " + std::to_string(off) +
                       " is past the end of the file");
    // Compressed blocks are inflated from the mapping: its pages are mapped in one call.
    // Uncompressed data is read with pread (unpack) and needs only its header's page.
    if (file_ && codec_ != Codec::none)
      file_->populate(*appended_ + off, *appended_ + appended_next(off));
    return unpack(d, reinterpret_cast<const std::uint8_t*>(data_.data() + *appended_ + off),
                  data_.size() - *appended_ - off, alloc,
                  [&](const std::uint8_t* begin, const std::uint8_t* end, bool) {
                    if (file_)
                      file_->release(static_cast<std::size_t>(begin - data_u8()),
                                     static_cast<std::size_t>(end - data_u8()));
                  });
  }

  // Decodes `d` into an Array of its own dtype, shape (n) or (n, components); `expect` tuples
  // (-1: whatever the data holds).
  Array decode(const DataArrayInfo& d, std::int64_t expect) {
    const std::size_t item = d.dtype.bits / 8;
    Array out;
    if (d.is_bit) {
      note_bit(d);
      if (d.format != "ascii") {
        out = unpack_bits(d, expect);
        release_source(d);
        return out;
      }
    }
    if (d.format == "ascii") {
      std::string scratch;
      const std::string_view text = text_of(d, scratch);
      // Reports (and heeds a cancel) once a MiB: one ascii array can be most of a large file.
      Cursor c(text, path_, file_ ? file_->progress() : nullptr,
               d.text.empty() ? 0 : d.text.front().first);
      std::vector<double> fv;
      std::vector<std::int64_t> iv;
      const bool is_float = d.dtype.code == 2;
      // UInt64 is read as such (0 .. 2^64 - 1, no sign); every other integer type as int64,
      // which holds them all, each value then checked against its own type (store_ascii).
      const bool u64 = d.dtype.code == 1 && d.dtype.bits == 64;
      while (true) {
        c.skip_ws();
        if (c.at_end()) break;
        try {
          if (is_float)
            fv.push_back(c.number<double>("number"));
          else
            iv.push_back(u64 ? static_cast<std::int64_t>(c.number<std::uint64_t>("number"))
                             : c.number<std::int64_t>("number"));
        } catch (const ReadError& e) {
          // The cursor stops at the token it could not read. Its words for a number past
          // what the type (here int64, uint64 or double) holds: "number is out of range".
          bad_ascii(d, text, c.offset(), std::string_view(e.what()).ends_with("out of range"));
        }
      }
      out = make(d, is_float ? fv.size() : iv.size());
      store_ascii(d, text, fv, iv, out);
    } else {
      std::size_t n = 0;
      raw_bytes(d, [&](std::size_t bytes) {
        if (bytes % item)
          fail(d.line, "DataArray '" + d.name + "': " + std::to_string(bytes) +
                           " bytes is not a whole number of " + d.type_name);
        n = bytes / item;
        out = make(d, n);
        return static_cast<std::uint8_t*>(out.data());
      });
      if (big_endian_ && item > 1) swap_all(out.data(), n, item);
    }
    // (Divided, not multiplied: a count times its components may overflow.)
    if (expect >= 0 &&
        (out.size() % static_cast<std::size_t>(d.components) != 0 ||
         out.size() / static_cast<std::size_t>(d.components) != static_cast<std::size_t>(expect))) {
      fail(d.line, "DataArray '" + d.name + "' holds " + std::to_string(out.size()) + " values; " +
                       std::to_string(expect) + " tuples of " + std::to_string(d.components) +
                       " were expected");
    }
    release_source(d);
    return out;
  }

  // A binary Bit array: ceil(n / 8) bytes, value i in bit 7 - i % 8 of byte i / 8 (as
  // vtkBitArray keeps them), -> n uint8 0/1. n: the tuples expected (`expect`), else the
  // array's NumberOfTuples, else every bit of its bytes.
  Array unpack_bits(const DataArrayInfo& d, std::int64_t expect) {
    std::vector<std::uint8_t> packed;
    raw_bytes(d, [&](std::size_t bytes) {
      packed.resize(bytes);
      return packed.data();
    });
    const std::uint64_t n = expect >= 0 ? static_cast<std::uint64_t>(expect * d.components)
                            : d.tuples  ? static_cast<std::uint64_t>(*d.tuples * d.components)
                                        : packed.size() * 8;
    if (packed.size() != (n + 7) / 8)
      fail(d.line, "DataArray '" + d.name + "' (Bit) holds " + std::to_string(packed.size()) +
                       " bytes; " + std::to_string(n) + " bits take " +
                       std::to_string((n + 7) / 8));
    claim(d, n);  // the values, 8 times the bytes already claimed
    Array out = make(d, static_cast<std::size_t>(n));
    auto* dst = out.as<std::uint8_t>();
    for (std::uint64_t i = 0; i < n; ++i) dst[i] = (packed[i / 8] >> (7 - i % 8)) & 1;
    return out;
  }

  void note_bit(const DataArrayInfo& d) {
    const auto note = "bit array '" + d.name + "' in <" +
                      (d.section.empty() ? std::string("?") : d.section) +
                      "> read as uint8 0/1, the values VTK gives";
    if (std::find(mesh_.notes.begin(), mesh_.notes.end(), note) == mesh_.notes.end())
      mesh_.notes.push_back(note);
  }

  // The file pages `d` was decoded from leave the process (see MappedFile::release): the
  // peak is then the arrays plus what is still to decode, not plus the whole file.
  void release_source(const DataArrayInfo& d) const {
    if (!file_) return;
    for (const auto& [a, b] : d.text) file_->release(a, b);
    if (d.text.empty() && d.offset && appended_)
      file_->release(*appended_ + *d.offset, *appended_ + appended_next(*d.offset));
  }

  // Where the appended array at `off` ends: the next array's offset, or the end of the
  // appended data (both relative to its '_' marker).
  std::uint64_t appended_next(std::uint64_t off) const {
    std::uint64_t next = appended_end_ - *appended_;
    for (const auto& o : arrays_)
      if (o.offset && *o.offset > off) next = std::min(next, *o.offset);
    return next;
  }

  Array make(const DataArrayInfo& d, std::size_t n) {
    const auto comps = static_cast<std::size_t>(d.components);
    if (n % comps)
      fail(d.line, "DataArray '" + d.name + "': " + std::to_string(n) +
                       " values is not a multiple of " + std::to_string(comps) + " components");
    if (comps == 1) return Array::empty(d.dtype, {static_cast<std::int64_t>(n)});
    return Array::empty(d.dtype, {static_cast<std::int64_t>(n / comps), d.components});
  }

  static void swap_all(void* p, std::size_t n, std::size_t item) {
    auto* b = static_cast<std::uint8_t*>(p);
    for (std::size_t i = 0; i < n; ++i) std::reverse(b + i * item, b + (i + 1) * item);
  }

  // The ascii values of `d` (doubles for a float type, else int64) into `out`, of d's type. A
  // value outside the type's range is refused (value_does_not_fit): stored, it would wrap, and
  // 4294967299 as Int32 is 3, a valid-looking id, cell type or value that is wrong.
  void store_ascii(const DataArrayInfo& d, std::string_view text, const std::vector<double>& fv,
                   const std::vector<std::int64_t>& iv, Array& out) const {
    void* dst = out.data();
    const std::size_t n = out.size();
    if (n == 0) return;
    if (d.dtype.code == 2) {
      if (d.dtype.bits == 64) return void(std::memcpy(dst, fv.data(), n * sizeof(double)));
      auto* f = static_cast<float*>(dst);
      for (std::size_t i = 0; i < n; ++i) {
        f[i] = static_cast<float>(fv[i]);
        // Past FLT_MAX a finite value becomes inf. (Below the smallest float it becomes 0 or a
        // denormal, a value of the type, as strtof reads it.)
        if (std::isinf(f[i]) && !std::isinf(fv[i])) [[unlikely]]
          value_does_not_fit(d, text, i);
      }
      return;
    }
    if (d.is_bit) {
      auto* b = static_cast<std::uint8_t*>(dst);
      for (std::size_t i = 0; i < n; ++i) b[i] = iv[i] != 0;  // any non-zero sets it, as in VTK
      return;
    }
    const bool is_signed = d.dtype.code == 0;
    switch (d.dtype.bits) {
      case 8:
        return is_signed ? narrow<std::int8_t>(d, text, iv, dst)
                         : narrow<std::uint8_t>(d, text, iv, dst);
      case 16:
        return is_signed ? narrow<std::int16_t>(d, text, iv, dst)
                         : narrow<std::uint16_t>(d, text, iv, dst);
      case 32:
        return is_signed ? narrow<std::int32_t>(d, text, iv, dst)
                         : narrow<std::uint32_t>(d, text, iv, dst);
      default:  // Int64; UInt64, read as uint64 and kept in int64's bits
        std::memcpy(dst, iv.data(), n * sizeof(std::int64_t));
    }
  }

  template <typename T>
  void narrow(const DataArrayInfo& d, std::string_view text, const std::vector<std::int64_t>& iv,
              void* dst) const {
    constexpr auto lo = static_cast<std::int64_t>(std::numeric_limits<T>::min());
    constexpr auto hi = static_cast<std::int64_t>(std::numeric_limits<T>::max());
    auto* o = static_cast<T*>(dst);
    for (std::size_t i = 0; i < iv.size(); ++i) {
      const auto v = iv[i];
      if (v < lo || v > hi) [[unlikely]]
        value_does_not_fit(d, text, i);
      o[i] = static_cast<T>(v);
    }
  }

  // "piece 1: " for an array of a piece, "" for field data: the start of a message about it.
  static std::string piece_of(const DataArrayInfo& d) {
    return d.piece < 0 || d.section == "FieldData" ? std::string()
                                                   : "piece " + std::to_string(d.piece) + ": ";
  }

  // The file's line of byte `at` of `d`'s inline text (as text_of gives it). Error paths only:
  // it counts the newlines before it.
  std::size_t text_line(const DataArrayInfo& d, std::size_t at) const {
    std::size_t file_at = d.text.empty() ? 0 : d.text.back().second;
    for (const auto& [a, b] : d.text) {
      if (at < b - a) {
        file_at = a + at;
        break;
      }
      at -= b - a;
    }
    return 1 + static_cast<std::size_t>(std::count(
                   data_.begin(), data_.begin() + static_cast<std::ptrdiff_t>(file_at), '\n'));
  }

  // A token as a message quotes it (a long one cut).
  static std::string shown(std::string_view t) {
    return t.size() > 40 ? std::string(t.substr(0, 40)) + "..." : std::string(t);
  }

  // Value `index` of `d`'s ascii text does not fit d's type: found again (an error path), and
  // named with its own line.
  [[noreturn]] void value_does_not_fit(const DataArrayInfo& d, std::string_view text,
                                       std::size_t index) const {
    Cursor c(text, path_);
    for (std::size_t i = 0; i < index; ++i) c.token();
    c.skip_ws();
    const std::size_t at = c.offset();
    bad_value(d, at, c.token());
  }

  [[noreturn]] void bad_value(const DataArrayInfo& d, std::size_t at,
                              std::string_view token) const {
    fail(text_line(d, at), piece_of(d) + "value " + shown(token) + " of DataArray '" + d.name +
                               "' does not fit its type " + d.type_name);
  }

  // The token at `at` of `d`'s ascii text is no value of its type: a number past what the type
  // holds (`out_of_range`, or an integer written out, such as -4 for UInt64), or no number.
  [[noreturn]] void bad_ascii(const DataArrayInfo& d, std::string_view text, std::size_t at,
                              bool out_of_range) const {
    auto end = text.find_first_of(" \t\r\n", at);
    if (end == std::string_view::npos) end = text.size();
    const auto token = text.substr(at, end - at);
    const bool is_float = d.dtype.code == 2;
    if (out_of_range || (!is_float && integer_literal(token))) bad_value(d, at, token);
    fail(text_line(d, at), piece_of(d) + "DataArray '" + d.name + "': expected " +
                               (is_float ? "a number" : "an integer") + " (" + d.type_name +
                               "), found '" + shown(token) + "'");
  }

  // The pieces' parts of one point data array, stacked. choose_arrays() made them one type and
  // refused different components before they were decoded, so they agree here.
  Array concat(const std::vector<Array>& parts, const std::string& name) {
    if (first_mismatch(parts) != parts.size())
      throw ReadError(path_ + ": point data '" + name +
                      "' differs in type or components between pieces");
    return concat_rows(parts);
  }

  // ---- which arrays are read --------------------------------------------------------------------
  // Decided from the pieces' tags, before anything is decoded:
  // - A name given twice in one <PointData> / <CellData> (or <FieldData>, see end()): the last
  //   array is kept, as meshio reads it (VTK 9.1 keeps one for point data and crashes on cell
  //   data), the other dropped with a note. Both read, they were one array of twice the rows.
  // - Several pieces of an UnstructuredGrid / PolyData: an array is kept where every piece with
  //   points (for cell data: with cells) has it, as for the pieces of a .pvtu (join_pieces);
  //   one that a piece lacks has no values for that piece's points or cells, and is dropped
  //   with a note naming the pieces. A piece without points (cells) has no rows of it: its
  //   array is not read. (Structured pieces are one grid: finish_grid has the same rule.)
  // - Pieces that give one array different types: all read as their common type, with a note;
  //   different components: a ReadError naming both pieces (agree()).
  // - Cell data of a file without cells: dropped with a note (below).
  void choose_arrays() {
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      auto& list = pieces_[i].arrays;
      std::map<std::pair<std::string, std::string>, std::size_t> seen;  // -> position in list
      std::vector<bool> dropped(list.size(), false);
      for (std::size_t k = 0; k < list.size(); ++k) {
        const auto& d = arrays_[list[k]];
        if (d.is_string || (d.section != "PointData" && d.section != "CellData")) continue;
        const auto [it, fresh] = seen.try_emplace({d.section, d.name}, k);
        if (fresh) continue;
        mesh_.notes.push_back(
            "piece " + std::to_string(i) + ": " +
            twice_note(d.section, d.name, arrays_[list[it->second]].line, d.line));
        dropped[it->second] = true;
        it->second = k;
      }
      std::size_t kept = 0;
      for (std::size_t k = 0; k < list.size(); ++k)
        if (!dropped[k]) list[kept++] = list[k];
      list.resize(kept);
    }
    if (is_structured(serial_) || serial_ != grid_) return;
    for (const bool cells : {false, true}) {
      const std::string section = cells ? "CellData" : "PointData";
      const auto rows = [&](const PieceInfo& p) { return cells ? p.num_cells : p.num_points; };
      std::size_t counted = 0;  // pieces with rows
      for (const auto& p : pieces_) counted += rows(p) > 0;
      std::map<std::string, std::vector<std::pair<std::size_t, std::size_t>>> by_name;
      for (std::size_t i = 0; i < pieces_.size(); ++i)
        for (const auto idx : pieces_[i].arrays)
          if (!arrays_[idx].is_string && arrays_[idx].section == section)
            by_name[arrays_[idx].name].emplace_back(i, idx);
      std::set<std::size_t> drop;  // indices into arrays_
      for (const auto& [name, where] : by_name) {
        const std::string what = (cells ? "cell data '" : "point data '") + name + "'";
        if (cells && counted == 0) {
          // Cell data lives per block (Mesh::cell_data: one array per block of cells). With no
          // cells there is no block to carry it, and an entry of no arrays would keep its name
          // only, not its type or components (those are the arrays'), so it is dropped, its
          // type and components in the note. (VTK keeps it as an array of 0 tuples.)
          const auto& d = arrays_[where.front().second];
          mesh_.notes.push_back(what + " (" + d.type_name + ", " + std::to_string(d.components) +
                                " components) dropped: the file has no cells, and a mesh holds "
                                "cell data per block of cells");
          for (const auto& w : where) drop.insert(w.second);
          continue;
        }
        std::vector<ArrayOrigin> origins;
        std::vector<bool> has(pieces_.size(), false);
        for (const auto& [i, idx] : where) {
          if (counted > 0 && rows(pieces_[i]) == 0) {  // no rows of it (see above)
            drop.insert(idx);
            continue;
          }
          const auto& d = arrays_[idx];
          has[i] = true;
          origins.push_back(
              {d.dtype, d.components,
               "piece " + std::to_string(i) + " (line " + std::to_string(d.line) + ")", d.line});
        }
        if (origins.size() < counted) {
          std::vector<std::size_t> missing;
          for (std::size_t i = 0; i < pieces_.size(); ++i)
            if (rows(pieces_[i]) > 0 && !has[i]) missing.push_back(i);
          mesh_.notes.push_back(missing_note(what, origins.size(), counted, pieces_.size(), missing,
                                             cells ? "cells" : "points"));
          for (const auto& w : where) drop.insert(w.second);
          continue;
        }
        if (const auto t = agree(what, origins, mesh_.notes)) target_[{section, name}] = *t;
      }
      for (auto& p : pieces_)
        std::erase_if(p.arrays, [&](std::size_t idx) { return drop.count(idx) > 0; });
    }
  }

  // One array as several pieces give it (`v`, in piece order): the same components, else a
  // ReadError at the later piece's line naming both; one type, else their common type
  // (common_dtype: what meshio's concatenation gives; VTK reads the later pieces into the
  // first one's type, the same values where the first is the wider), with a note in `notes`
  // (which says so where the conversion can round values). Used for the pieces of a .vtu /
  // .vtp (choose_arrays), of a .pvtu / .pvtp (join_pieces) and of a structured grid
  // (finish_grid, which converts as place() meets the pieces).
  // The common type when the types differ; nullopt when they agree.
  std::optional<DType> agree(const std::string& what, const std::vector<ArrayOrigin>& v,
                             std::vector<std::string>& notes) const {
    if (v.empty()) return std::nullopt;
    for (const auto& o : v)
      if (o.components != v[0].components)
        fail(o.line, what + " has " + std::to_string(o.components) + " components in " + o.label +
                         " but " + std::to_string(v[0].components) + " in " + v[0].label);
    DType t = v[0].dtype;
    std::vector<DType> named{t};
    std::vector<std::string> kinds{vtk_type_name(t) + " in " + v[0].label};
    for (const auto& o : v) {
      if (std::find(named.begin(), named.end(), o.dtype) != named.end()) continue;
      named.push_back(o.dtype);
      kinds.push_back(vtk_type_name(o.dtype) + " in " + o.label);
      t = common_dtype(t, o.dtype);
    }
    if (named.size() == 1) return std::nullopt;
    // The one conversion that can change a value: a 64-bit integer type to Float64 (numpy's
    // promotion of Int64 with a float type, of UInt64 with a signed one), said in the note.
    std::vector<std::string> rounded;
    for (const DType d : named)
      if (t.code == 2 && d.code != 2 && d.bits == 64) rounded.push_back(vtk_type_name(d));
    notes.push_back(
        what + " is " + listed(kinds) + ": read as " + vtk_type_name(t) +
        " in every piece, their common type" +
        (rounded.empty()
             ? std::string()
             : "; " + listed(rounded) + " values beyond 2^53 in magnitude lose precision in it"));
    return t;
  }

  // A point or cell data array of a piece, decoded (`expect` rows) in the type choose_arrays()
  // chose for it.
  Array decode_data(const DataArrayInfo& d, std::int64_t expect) {
    Array a = decode(d, expect);
    const auto t = target_.find({d.section, d.name});
    return t == target_.end() || a.dtype() == t->second ? a : converted(a, t->second);
  }

  // ---- counts -----------------------------------------------------------------------------------
  // Each piece's counts against what its arrays can hold (room_values), before anything sized
  // by them is allocated: the points of several pieces are allocated before the first is
  // decoded, and NumberOfPoints="1000000000000" beside four points of data would otherwise be
  // "out of memory", naming nothing. NumberOfCells (against 'types', a value per cell) and
  // PolyData's NumberOfVerts / Lines / Polys / Strips (against their offsets) are held to the
  // same rule. The bound is loose but sound: a count a file holds is never refused; what the
  // arrays do hold is checked against the counts when they are decoded. Returns the points of
  // all pieces.
  std::int64_t check_counts() {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      const auto& p = pieces_[i];
      const std::string where = "piece " + std::to_string(i);
      const DataArrayInfo* points = nullptr;
      std::map<std::pair<std::string, std::string>, const DataArrayInfo*> named;
      for (const auto idx : p.arrays) {
        const auto& d = arrays_[idx];
        if (d.section == "Points")
          points = &d;  // the last, as read_points takes it
        else
          named[{d.section, d.name}] = &d;
      }
      const auto too_many = [&](const char* attr, std::int64_t count, const std::string& holder,
                                std::uint64_t room, const char* unit) {
        if (static_cast<std::uint64_t>(count) > room)
          fail(p.line, where + ": " + attr + " " + std::to_string(count) +
                           " is more than the file can hold (its " + holder + " has room for " +
                           std::to_string(room) + " " + unit + " at most)");
      };
      if (p.num_points > 0) {
        if (!points)
          fail(p.line,
               where + " has " + std::to_string(p.num_points) + " points but no <Points> array");
        if (points->components != 3)
          fail(points->line,
               "Points has " + std::to_string(points->components) + " components, expected 3");
        too_many("NumberOfPoints", p.num_points, "<Points> array", room_values(*points) / 3,
                 "points");
      }
      if (grid_ == "UnstructuredGrid" && p.num_cells > 0) {
        const auto types = named.find({"Cells", "types"});
        if (types != named.end())
          too_many("NumberOfCells", p.num_cells, "'types' array", room_values(*types->second),
                   "cells");
      }
      if (grid_ == "PolyData") {
        const std::pair<const char*, std::int64_t> sections[] = {{"Verts", p.num_verts},
                                                                 {"Lines", p.num_lines},
                                                                 {"Polys", p.num_polys},
                                                                 {"Strips", p.num_strips}};
        for (const auto& [sec, count] : sections) {
          const auto offs = named.find({sec, "offsets"});
          if (count > 0 && offs != named.end())
            too_many(("NumberOf" + std::string(sec)).c_str(), count,
                     "<" + std::string(sec) + "> offsets array", room_values(*offs->second),
                     "cells");
        }
      }
      // Pieces may all name one appended array, each count within its room: their sum must
      // still size an array of float64 rows of 3 (24 bytes a point) without overflowing.
      if (p.num_points > INT64_MAX / 24 - total)
        fail(p.line, where + ": the pieces' NumberOfPoints add up to more than 2^63 / 24");
      total += p.num_points;
    }
    return total;
  }

  // The most values `d` can decode to, from what the file holds, without decoding it: ascii,
  // a value and its separator take 2 bytes (the last one 1); binary, the size its header gives
  // (uncompressed: at most the bytes that follow, as unpack checks; compressed: the blocks'
  // sizes, which unpack holds to the compressed bytes' ratio before inflating, so a small file
  // may rightly give a lot), else what the encoded bytes can hold. Bit: 8 values a byte.
  std::uint64_t room_values(const DataArrayInfo& d) const {
    std::uint64_t text = 0;
    for (const auto& [a, b] : d.text) text += b - a;
    if (d.format == "ascii") return (text + 1) / 2;
    std::uint64_t payload = 0;  // the bytes the encoded array decodes to, at most
    std::string_view b64;       // base64: the start of its text (the header is in it)
    std::string head;           // the header, decoded where it is there
    std::string scratch;
    if (d.format == "binary") {
      payload = text / 4 * 3 + 3;
      for (const auto& [a, b] : d.text) {
        scratch.append(data_.substr(a, std::min<std::size_t>(b - a, 256 - scratch.size())));
        if (scratch.size() >= 256) break;
      }
      b64 = scratch;
    } else {
      if (!appended_ || !d.offset) return 0;
      const std::uint64_t off = *d.offset;
      if (appended_base64_) {
        if (off > appended_end_ - *appended_) return 0;
        const std::uint64_t next = appended_next(off);
        payload = (next - off) / 4 * 3 + 3;
        b64 = data_.substr(*appended_ + off, std::min<std::uint64_t>(next - off, 256));
      } else {
        if (off > data_.size() - *appended_) return 0;
        payload = data_.size() - *appended_ - off;
        head = data_.substr(*appended_ + off, std::min<std::uint64_t>(payload, 32));
      }
    }
    if (!b64.empty()) {
      std::vector<std::uint8_t> bytes;
      base64_decode(b64, bytes);  // what decodes before a bad character (decode names it)
      head.assign(bytes.begin(), bytes.end());
    }
    const auto* h = reinterpret_cast<const std::uint8_t*>(head.data());
    const std::size_t hs = header_size_;
    const auto saturated = [](unsigned __int128 v) {
      return v > UINT64_MAX ? UINT64_MAX : static_cast<std::uint64_t>(v);
    };
    std::uint64_t bytes = payload;
    if (codec_ == Codec::none) {
      if (head.size() >= hs) bytes = std::min(bytes, header_value(h));
    } else {
      const std::uint64_t ratio = codec_ == Codec::zlib ? 1032 : codec_ == Codec::lz4 ? 256 : 8192;
      bytes = saturated(static_cast<unsigned __int128>(payload + 64) * ratio);  // as unpack
      if (head.size() >= 3 * hs) {
        const auto nblocks = header_value(h), block = header_value(h + hs);
        auto last = header_value(h + 2 * hs);
        if (last == 0) last = block;
        const auto total =
            nblocks == 0 ? 0
                         : saturated(static_cast<unsigned __int128>(nblocks - 1) * block + last);
        bytes = std::min(bytes, total);
      }
    }
    if (d.is_bit) return saturated(static_cast<unsigned __int128>(bytes) * 8);
    return bytes / std::max<std::uint64_t>(1, d.dtype.bits / 8);
  }

  // ---- cells ----------------------------------------------------------------------------------
  void assemble_piece(const PieceInfo& p, int index, std::int64_t point_base) {
    const DataArrayInfo *conn_d = nullptr, *offs_d = nullptr, *types_d = nullptr, *pts_d = nullptr,
                        *faces_d = nullptr, *face_offs_d = nullptr;
    std::vector<const DataArrayInfo*> pdata, cdata;
    for (auto i : p.arrays) {
      const auto& d = arrays_[i];
      if (d.section == "Points")
        pts_d = &d;
      else if (d.section == "Cells" && d.name == "connectivity")
        conn_d = &d;
      else if (d.section == "Cells" && d.name == "offsets")
        offs_d = &d;
      else if (d.section == "Cells" && d.name == "types")
        types_d = &d;
      else if (d.section == "Cells" && d.name == "faces")
        faces_d = &d;
      else if (d.section == "Cells" && d.name == "faceoffsets")
        face_offs_d = &d;
      else if (d.section == "Cells" &&
               (d.name == "face_connectivity" || d.name == "polyhedron_offsets"))
        fail(d.line, "the VTK 9.4 polyhedron layout ('" + d.name +
                         "') is not supported yet; write the file with faces/faceoffsets");
      else if (d.is_string && (d.section == "PointData" || d.section == "CellData"))
        note_string(d);
      else if (d.section == "PointData")
        pdata.push_back(&d);
      else if (d.section == "CellData")
        cdata.push_back(&d);
    }
    const std::string where = "piece " + std::to_string(index);
    read_points(p, pts_d, point_base, where);
    for (auto* d : pdata) point_parts_[d->name].push_back(decode_data(*d, p.num_points));
    if (p.num_cells == 0) return;
    if (!conn_d || !offs_d || !types_d)
      fail(0, where + " has cells but lacks connectivity, offsets or types");
    std::vector<std::pair<std::string, Array>> named;
    for (auto* d : cdata) named.emplace_back(d->name, decode_data(*d, p.num_cells));
    std::optional<Int64s> offs(std::in_place, decode(*offs_d, p.num_cells));
    std::optional<Array> types_array = decode(*types_d, p.num_cells);
    const bool types_u8 = types_array->dtype() == dtype_of<std::uint8_t>();
    std::optional<Int64s> types_wide;
    if (!types_u8) types_wide.emplace(*types_array);
    const auto on_error = [&](const std::string& what) {
      fail(types_d->line, where + ": " + what);
    };
    // One plain kind of cell in int64 rows (a tet mesh, as meshio and VTK write it) needs only
    // the connectivity, shared as the block: offsets and types are checked and dropped before
    // it is decoded, so they are never in memory beside it.
    const bool plain_conn =
        point_base == 0 && !faces_d && conn_d->dtype == dtype_of<std::int64_t>();
    const auto kind = !plain_conn ? std::nullopt
                      : types_u8
                          ? rows_of_one_kind<std::uint8_t>(
                                *offs, {types_array->as<std::uint8_t>(), types_array->size()})
                          : rows_of_one_kind<std::int64_t>(*offs, *types_wide);
    if (kind && !face_offs_d) {
      offs.reset();
      types_wide.reset();
      types_array.reset();
      append_rows_block(mesh_, *kind, p.num_cells, decode(*conn_d, -1), p.num_points, named,
                        on_error);
      return;
    }
    const Int64s conn(decode(*conn_d, -1));
    std::optional<VtkFaces> faces;
    if (faces_d || face_offs_d) {
      if (!faces_d || !face_offs_d)
        fail(types_d->line, where + " has only one of faces/faceoffsets");
      faces.emplace(
          VtkFaces{to_int64(decode(*faces_d, -1)), to_int64(decode(*face_offs_d, p.num_cells))});
    }
    // Poly-vertices, poly-lines, triangle strips and voxels (vtkAppendFilter on image data, what
    // ParaView's Merge Blocks writes, makes voxels) are decomposed as the legacy reader does
    // (expand_vtk_cells), the cell data and face offsets following the cells they became.
    const auto odd = [](std::int64_t t) { return t == 2 || t == 4 || t == 6 || t == 11; };
    const bool expand =
        types_u8 ? std::any_of(types_array->as<std::uint8_t>(),
                               types_array->as<std::uint8_t>() + types_array->size(), odd)
                 : std::ranges::any_of(std::span<const std::int64_t>(*types_wide), odd);
    if (expand) {
      if (!types_wide) types_wide.emplace(*types_array);
      auto ex = expand_vtk_cells(conn, *offs, *types_wide, on_error);
      for (auto& [name, a] : named) a = gather_rows(a, ex->source);
      for (auto& n : ex->notes) mesh_.notes.push_back(where + ": " + n);
      split_.push_back({file_cells_before(index), mesh_.num_cells(), p.num_cells, ex->source});
      if (faces) {  // both decoded as num_cells entries, as the types
        std::vector<std::int64_t> ends(ex->source.size());
        for (std::size_t i = 0; i < ends.size(); ++i)
          ends[i] = faces->face_ends[static_cast<std::size_t>(ex->source[i])];
        faces->face_ends = std::move(ends);
      }
      append_vtk_cells<std::int64_t>(mesh_, ex->conn, ex->ends, ex->types, p.num_points, point_base,
                                     named, on_error, faces ? &*faces : nullptr);
      return;
    }
    if (types_u8)
      append_vtk_cells<std::uint8_t>(
          mesh_, conn, *offs, {types_array->as<std::uint8_t>(), types_array->size()}, p.num_points,
          point_base, named, on_error, faces ? &*faces : nullptr, conn.borrowed());
    else
      append_vtk_cells<std::int64_t>(mesh_, conn, *offs, *types_wide, p.num_points, point_base,
                                     named, on_error, faces ? &*faces : nullptr, conn.borrowed());
  }

  // The piece's <Points> (float32 or float64, 3 components) into mesh_.points at `point_base`.
  void read_points(const PieceInfo& p, const DataArrayInfo* pts_d, std::int64_t point_base,
                   const std::string& where) {
    if (p.num_points > 0 && !pts_d)
      fail(p.line,
           where + " has " + std::to_string(p.num_points) + " points but no <Points> array");
    if (pts_d) {
      if (pts_d->components != 3)
        fail(pts_d->line,
             "Points has " + std::to_string(pts_d->components) + " components, expected 3");
      const Array pts = decode(*pts_d, p.num_points);
      if (pts.dtype().code != 2)
        fail(pts_d->line, "Points must be Float32 or Float64, not " + pts_d->type_name);
      if (pieces_.size() == 1 && pts.dtype().bits == 64) {
        // One piece of float64 points: the decoded array is the points, no copy.
        mesh_.points = Array::view(pts.buffer(), pts.dtype(), {p.num_points, 3});
      } else {
        // One piece of float32: made now that its count is the data's (read() made the points
        // of several pieces, after check_counts).
        if (!mesh_.points.valid()) mesh_.points = Array::of<double>({p.num_points, 3});
        double* dst = mesh_.points.as<double>() + 3 * point_base;
        const auto* src = static_cast<const std::uint8_t*>(pts.data());
        for (std::size_t i = 0; i < pts.size(); ++i) {
          if (pts.dtype().bits == 64) {
            std::memcpy(dst + i, src + 8 * i, 8);
          } else {
            float f;
            std::memcpy(&f, src + 4 * i, 4);
            dst[i] = f;
          }
        }
      }
    }
  }

  // ---- the rest of the XML family ------------------------------------------------------------
  struct PieceArrays {
    const DataArrayInfo* points = nullptr;
    std::vector<const DataArrayInfo*> pdata, cdata, coords;
    std::map<std::pair<std::string, std::string>, const DataArrayInfo*> other;  // (section, name)
  };
  // The arrays of `p` by section; string arrays are noted and left out.
  PieceArrays arrays_of(const PieceInfo& p) {
    PieceArrays out;
    for (auto i : p.arrays) {
      const auto& d = arrays_[i];
      if (d.is_string)
        note_string(d);
      else if (d.section == "Points")
        out.points = &d;
      else if (d.section == "PointData")
        out.pdata.push_back(&d);
      else if (d.section == "CellData")
        out.cdata.push_back(&d);
      else if (d.section == "Coordinates")
        out.coords.push_back(&d);
      else
        out.other[{d.section, d.name}] = &d;
    }
    return out;
  }

  // PolyData: Verts, Lines, Polys, Strips (the order of VTK's cell ids and of its cell data)
  // as one stream of VTK cells, typed as vtkPolyData types them (one id in <Verts>: a vertex,
  // more: a poly-vertex; <Lines>: a line or a poly-line; <Polys>: triangle, quad or polygon;
  // <Strips>: a triangle strip); poly-vertices, poly-lines and strips are then split as in the
  // other VTK readers (expand_vtk_cells), their cell data repeated per part.
  void assemble_poly(const PieceInfo& p, int index, std::int64_t point_base) {
    const auto arrs = arrays_of(p);
    const std::string where = "piece " + std::to_string(index);
    read_points(p, arrs.points, point_base, where);
    for (auto* d : arrs.pdata) point_parts_[d->name].push_back(decode_data(*d, p.num_points));
    if (p.num_cells == 0) return;
    std::vector<std::pair<std::string, Array>> named;
    for (auto* d : arrs.cdata) named.emplace_back(d->name, decode_data(*d, p.num_cells));
    std::vector<std::int64_t> conn, ends, types;
    struct Section {
      const char* name;
      std::int64_t count;
    };
    const Section sections[] = {{"Verts", p.num_verts},
                                {"Lines", p.num_lines},
                                {"Polys", p.num_polys},
                                {"Strips", p.num_strips}};
    for (const auto& sec : sections) {
      if (sec.count == 0) continue;
      const std::string sname = sec.name;
      const auto c = arrs.other.find({sname, "connectivity"});
      const auto o = arrs.other.find({sname, "offsets"});
      if (c == arrs.other.end() || o == arrs.other.end())
        fail(p.line, where + ": <" + sname + "> of " + std::to_string(sec.count) +
                         " cells lacks its connectivity or offsets array");
      const Int64s ids_owner(decode(*c->second, -1));
      const Int64s offs_owner(decode(*o->second, sec.count));
      const std::span<const std::int64_t> ids = ids_owner, offs = offs_owner;
      std::int64_t begin = 0;
      for (std::int64_t k = 0; k < sec.count; ++k) {
        const auto e = offs[static_cast<std::size_t>(k)];
        if (e < begin || static_cast<std::uint64_t>(e) > ids.size())
          fail(o->second->line, where + ": <" + sname + "> offset " + std::to_string(e) +
                                    " of cell " + std::to_string(k) + " is outside [" +
                                    std::to_string(begin) + ", " + std::to_string(ids.size()) +
                                    "]");
        const auto n = e - begin;
        const std::int64_t least = sname == "Verts" ? 1 : sname == "Lines" ? 2 : 3;
        if (n < least)
          fail(o->second->line, where + ": <" + sname + "> cell " + std::to_string(k) + " has " +
                                    std::to_string(n) + " points");
        conn.insert(conn.end(), ids.begin() + begin, ids.begin() + e);
        ends.push_back(static_cast<std::int64_t>(conn.size()));
        types.push_back(sname == "Verts"   ? (n == 1 ? 1 : 2)
                        : sname == "Lines" ? (n == 2 ? 3 : 4)
                        : sname == "Polys" ? (n == 3   ? 5
                                              : n == 4 ? 9
                                                       : 7)
                                           : 6);
        begin = e;
      }
    }
    const auto on_error = [&](const std::string& what) { fail(p.line, where + ": " + what); };
    if (auto ex = expand_vtk_cells(conn, ends, types, on_error)) {
      for (auto& [name, a] : named) a = gather_rows(a, ex->source);
      for (auto& n : ex->notes) mesh_.notes.push_back(where + ": " + n);
      split_.push_back({file_cells_before(index), mesh_.num_cells(), p.num_cells, ex->source});
      conn = std::move(ex->conn);
      ends = std::move(ex->ends);
      types = std::move(ex->types);
    }
    append_vtk_cells<std::int64_t>(mesh_, conn, ends, types, p.num_points, point_base, named,
                                   on_error);
  }

  // Cells of the file split into several (expand_vtk_cells), piece by piece: `source[i]` is
  // the piece's cell that its cell `new_base + i` of the mesh came from.
  struct SplitPiece {
    std::int64_t file_base, new_base, file_cells;
    std::vector<std::int64_t> source;
  };
  std::int64_t file_cells_before(int index) const {
    std::int64_t n = 0;
    for (int i = 0; i < index; ++i) n += pieces_[static_cast<std::size_t>(i)].num_cells;
    return n;
  }

  // Region fields name the file's cells (write_vtu numbers them so; another tool's edit may
  // not): where cells were split, a Cell region's entry becomes every cell its cell became, so
  // the region covers the same cells. A Side region's (cell, facet) pairs have no such
  // translation (a voxel's facets are not numbered as a hexahedron's): it stays field data,
  // with a note. Without split cells, nothing changes.
  void remap_region_fields() {
    if (split_.empty()) return;
    std::int64_t file_total = 0;
    for (const auto& p : pieces_) file_total += p.num_cells;
    const std::int64_t new_total = mesh_.num_cells();
    // The mesh cells [first, last) the file's cell e became.
    auto cells_of = [&](std::int64_t e) -> std::pair<std::int64_t, std::int64_t> {
      if (e < 0) return {e, e + 1};
      if (e >= file_total) return {e - file_total + new_total, e - file_total + new_total + 1};
      std::int64_t shift = 0;  // what the split pieces before e added
      for (const auto& sp : split_) {
        if (e >= sp.file_base + sp.file_cells) {
          shift += static_cast<std::int64_t>(sp.source.size()) - sp.file_cells;
          continue;
        }
        if (e < sp.file_base) break;
        const auto local = e - sp.file_base;
        const auto lo = std::lower_bound(sp.source.begin(), sp.source.end(), local);
        const auto hi = std::upper_bound(lo, sp.source.end(), local);
        return {sp.new_base + (lo - sp.source.begin()), sp.new_base + (hi - sp.source.begin())};
      }
      return {e + shift, e + shift + 1};
    };
    for (auto it = mesh_.field_data.begin(); it != mesh_.field_data.end();) {
      Region r;
      const auto& a = it->second;
      if (!parse_region_field_name(it->first, r) || r.kind == RegionKind::kPoint || !a.valid() ||
          a.dtype().code > 1 || a.dtype().lanes != 1) {
        ++it;
        continue;
      }
      if (r.kind == RegionKind::kSide) {
        mesh_.notes.push_back("field data '" + it->first +
                              "' not made a region: it names facets of the file's cells, some "
                              "of which were split");
        kept_fields_.emplace(it->first, a);
        it = mesh_.field_data.erase(it);
        continue;
      }
      std::vector<std::int64_t> out;
      for (std::size_t i = 0; i < a.size(); ++i) {
        const auto [first, last] = cells_of(int_at(a, i));
        for (auto c = first; c < last; ++c) out.push_back(c);
      }
      it->second = Array::from_vector(out);
      ++it;
    }
  }

  // ---- structured grids ----------------------------------------------------------------------
  // StructuredGrid / RectilinearGrid / ImageData files may hold several pieces, and their
  // parallel forms name piece files; either way each piece is a box of the grid's index space
  // (its extent). VTK reads them as one grid of the whole extent, each piece copied into its
  // box (vtkXMLStructuredDataReader, vtkXMLPStructuredDataReader): points on the boundaries
  // pieces share (and ghost layers) are one point, written by the last piece that has them.
  // This reader does the same: begin_grid() with the pieces' extents, add_grid_part() for each
  // piece as it is decoded (so only one piece is in memory beside the grid), finish_grid().

  // Piece `p` of a StructuredGrid / RectilinearGrid / ImageData file, decoded.
  GridPart grid_part(const PieceInfo& p, int index) {
    const auto arrs = arrays_of(p);
    GridPart g;
    g.extent = p.extent;
    g.line = p.line;
    g.where = "piece " + std::to_string(index) + (parent_.empty() ? "" : " of " + path_);
    const auto& e = p.extent;
    if (serial_ == "StructuredGrid") {
      if (!arrs.points)
        fail(p.line,
             g.where + " has " + std::to_string(p.num_points) + " points but no <Points> array");
      const auto& d = *arrs.points;
      if (d.components != 3)
        fail(d.line, "Points has " + std::to_string(d.components) + " components, expected 3");
      Array pts = decode(d, p.num_points);
      if (pts.dtype().code != 2)
        fail(d.line, "Points must be Float32 or Float64, not " + d.type_name);
      if (pts.dtype().bits == 64) {
        g.points = std::move(pts);
      } else {
        g.points = Array::of<double>({p.num_points, 3});
        const float* src = pts.as<float>();
        double* dst = g.points.as<double>();
        for (std::size_t i = 0; i < pts.size(); ++i) dst[i] = src[i];
      }
    } else if (serial_ == "RectilinearGrid") {
      if (arrs.coords.size() != 3)
        fail(p.line, "<Coordinates> has " + std::to_string(arrs.coords.size()) +
                         " arrays; 3 (x, y, z) are needed");
      for (int i = 0; i < 3; ++i) {
        const auto& d = *arrs.coords[static_cast<std::size_t>(i)];
        if (d.components != 1)
          fail(d.line, "coordinate array '" + d.name + "' has " + std::to_string(d.components) +
                           " components, expected 1");
        g.coords[static_cast<std::size_t>(i)] = decode(d, e[2 * i + 1] - e[2 * i] + 1);
      }
    }
    // A name given twice in one section: choose_arrays() kept the last, with a note.
    auto put = [](std::vector<GridPart::Data>& v, const DataArrayInfo& d, Array a) {
      for (auto& old : v)
        if (old.name == d.name) return void(old = {d.name, std::move(a), d.line});
      v.push_back({d.name, std::move(a), d.line});
    };
    for (auto* d : arrs.pdata) put(g.pdata, *d, decode(*d, p.num_points));
    for (auto* d : arrs.cdata) put(g.cdata, *d, decode(*d, p.num_cells));
    return g;
  }

  // The grid the pieces' `extents` span (their bounding box; VTK's WholeExtent where the pieces
  // cover it), with what it makes counted against the limits before anything is allocated.
  void begin_grid(const std::vector<std::array<std::int64_t, 6>>& extents, std::size_t line) {
    if (extents.empty()) fail(line, "every piece of the " + grid_ + " is empty");
    box_ = extents.front();
    for (const auto& e : extents)
      for (int i = 0; i < 3; ++i) {
        box_[2 * i] = std::min(box_[2 * i], e[2 * i]);
        box_[2 * i + 1] = std::max(box_[2 * i + 1], e[2 * i + 1]);
      }
    std::int64_t points = 1, cells = 1;
    int dims = 0;
    for (int i = 0; i < 3; ++i) {
      gn_[i] = box_[2 * i + 1] - box_[2 * i] + 1;  // extent_attr bounds these to 2^41 + 1
      gc_[i] = std::max<std::int64_t>(gn_[i] - 1, 1);
      dims += gn_[i] > 1;
      if (points > (std::int64_t{1} << 40) / gn_[i])
        fail(line,
             "the pieces' extents span more than 2^40 points (extent " + extent_text(box_) + ")");
      points *= gn_[i];
      cells *= gc_[i];
    }
    grid_points_ = points;
    grid_cells_ = cells;
    // The points and cells no array header claims: a StructuredGrid's one piece is its points,
    // already claimed when decoded; of several pieces, the grid's points are made anew.
    const std::uint64_t point_bytes = serial_ == "StructuredGrid" && extents.size() == 1 ? 0 : 24;
    const auto bytes = static_cast<std::uint64_t>(points) * point_bytes +
                       static_cast<std::uint64_t>(cells) * (8u << dims);
    const std::uint64_t limit = max_bytes_ ? max_bytes_ : made_limit_;
    if (bytes > limit || claimed_ > limit - bytes)
      throw SizeLimitError(path_ + ":" + std::to_string(line) + ": the " + grid_ + " extent " +
                           extent_text(box_) + " makes " + std::to_string(bytes) +
                           " bytes of points and cells, over the " + std::to_string(limit) +
                           " bytes this file may decode to");
    claimed_ += bytes;
    if (serial_ == "RectilinearGrid")
      for (int i = 0; i < 3; ++i) axes_[i].assign(static_cast<std::size_t>(gn_[i]), 0.0);
  }

  static std::string extent_text(const std::array<std::int64_t, 6>& e) {
    std::string s;
    for (auto v : e) {
      if (!s.empty()) s += ' ';
      s += std::to_string(v);
    }
    return s;
  }

  // Copies a block of `count` items (x fastest) of `src`, laid out over `dims`, into `dst`,
  // laid out over `to`, at `at`; `item` bytes each.
  static void copy_box(const Array& src, const std::int64_t dims[3], Array& dst,
                       const std::int64_t to[3], const std::int64_t at[3],
                       const std::int64_t count[3], std::size_t item) {
    const auto* s = static_cast<const std::uint8_t*>(src.data());
    auto* d = static_cast<std::uint8_t*>(dst.data());
    const auto row = static_cast<std::size_t>(count[0]) * item;
    for (std::int64_t k = 0; k < count[2]; ++k)
      for (std::int64_t j = 0; j < count[1]; ++j) {
        const auto from = static_cast<std::size_t>((k * dims[1] + j) * dims[0]);
        const auto into =
            static_cast<std::size_t>(((at[2] + k) * to[1] + at[1] + j) * to[0] + at[0]);
        std::memcpy(d + into * item, s + from * item, row);
      }
  }

  struct GridArray {
    Array a;
    std::size_t pieces = 0;            // how many pieces had it
    std::vector<ArrayOrigin> origins;  // each piece's type, for the note (finish_grid)
  };

  // `a`, one piece's array over `dims` items, into the grid's array `w` of `rows` items over
  // `to`, at `at`. A piece that is the whole grid gives its array (no copy) when it is first.
  // `what` names the array ("point data 'T'"), `where` the piece, `line` its DataArray. As for
  // the pieces of a .vtu (agree()): the same components in every piece, else a ReadError naming
  // both; types that differ are read as their common type (the grid's array and this piece's
  // converted to it as they meet; finish_grid notes it).
  void place(GridArray& w, Array a, std::int64_t rows, bool whole, const std::int64_t dims[3],
             const std::int64_t to[3], const std::int64_t at[3], const std::int64_t count[3],
             const std::string& what, const std::string& where, std::size_t line) {
    ++w.pieces;
    std::int64_t components = 1;
    for (std::size_t ax = 1; ax < a.ndim(); ++ax) components *= a.dim(ax);
    const ArrayOrigin origin{a.dtype(), components, where + " (line " + std::to_string(line) + ")",
                             line};
    if (!w.a.valid()) {
      w.origins.push_back(origin);
      if (whole) return void(w.a = std::move(a));
      auto shape = a.shape();
      shape[0] = rows;
      w.a = Array::empty(a.dtype(), shape);
    } else {
      const auto& first = w.origins.front();
      if (components != first.components)
        fail(line, what + " has " + std::to_string(components) + " components in " + origin.label +
                       " but " + std::to_string(first.components) + " in " + first.label);
      w.origins.push_back(origin);
      if (a.dtype() != w.a.dtype()) {
        const DType t = common_dtype(w.a.dtype(), a.dtype());
        if (w.a.dtype() != t) w.a = converted(w.a, t);
        if (a.dtype() != t) a = converted(a, t);
      }
    }
    const std::size_t item = a.dim(0) ? a.nbytes() / static_cast<std::size_t>(a.dim(0)) : 0;
    copy_box(a, dims, w.a, to, at, count, item);
  }

  // Places one decoded piece in the grid begin_grid() set up.
  void add_grid_part(GridPart&& g) {
    const auto& e = g.extent;
    for (int i = 0; i < 3; ++i)
      if (e[2 * i] < box_[2 * i] || e[2 * i + 1] > box_[2 * i + 1])
        fail(g.line, g.where + " has extent " + extent_text(e) + ", outside the grid's " +
                         extent_text(box_));
    const bool whole = e == box_;
    // Points: the piece's box. Cells: its cells' box, in VTK's layout of the piece's cell data
    // (an axis of one point has one layer). A piece flat along an axis the grid is not flat
    // along has no cells of the grid (VTK writes such pieces; their points still count).
    std::int64_t pn[3], at[3], pc[3], cat[3], cn[3];
    bool has_cells = true;
    for (int i = 0; i < 3; ++i) {
      pn[i] = e[2 * i + 1] - e[2 * i] + 1;
      at[i] = e[2 * i] - box_[2 * i];
      pc[i] = std::max<std::int64_t>(pn[i] - 1, 1);
      cn[i] = gn_[i] == 1 ? 1 : pn[i] - 1;
      cat[i] = gn_[i] == 1 ? 0 : at[i];
      has_cells &= cn[i] > 0;
    }
    ++grid_parts_;
    if (serial_ == "StructuredGrid")
      place(gpoints_, std::move(g.points), grid_points_, whole, pn, gn_, at, pn, "<Points>",
            g.where, g.line);
    for (int i = 0; i < 3 && serial_ == "RectilinearGrid"; ++i) {
      const auto& c = g.coords[static_cast<std::size_t>(i)];
      for (std::size_t k = 0; k < c.size(); ++k)
        axes_[i][static_cast<std::size_t>(at[i]) + k] = value_at(c, k);
    }
    for (auto& d : g.pdata)
      place(gpoint_[d.name], std::move(d.a), grid_points_, whole, pn, gn_, at, pn,
            "point data '" + d.name + "'", g.where, d.line);
    if (!has_cells) return;
    ++grid_cell_parts_;
    for (auto& d : g.cdata)
      place(gcell_[d.name], std::move(d.a), grid_cells_, whole, pc, gc_, cat, cn,
            "cell data '" + d.name + "'", g.where, d.line);
    // Which cells are placed: every one must be (then so is every point, a corner of one).
    if (whole || covered_all_) {
      covered_all_ = true;
      covered_.clear();
      return;
    }
    // Pieces cover the grid about once (ghost layers overlap a little): a file whose pieces
    // cover it over and over (each costs its cells here, however few bytes it takes) is refused.
    marked_ += cn[0] * cn[1] * cn[2];
    if (marked_ / 64 > grid_cells_)
      fail(g.line, g.where + ": the pieces cover the grid's " + std::to_string(grid_cells_) +
                       " cells more than 64 times over");
    if (covered_.empty()) covered_.assign(static_cast<std::size_t>(grid_cells_), false);
    for (std::int64_t k = 0; k < cn[2]; ++k)
      for (std::int64_t j = 0; j < cn[1]; ++j) {
        const auto row =
            static_cast<std::size_t>(((cat[2] + k) * gc_[1] + cat[1] + j) * gc_[0] + cat[0]);
        std::fill_n(covered_.begin() + static_cast<std::ptrdiff_t>(row),
                    static_cast<std::size_t>(cn[0]), true);
      }
  }

  // The grid as a Mesh: points x fastest, then y, then z; cells of the dimension of the grid
  // in VTK's cell order; point and cell data where every piece has them.
  void finish_grid(std::size_t declared) {
    if (!covered_all_) {
      const auto it = std::find(covered_.begin(), covered_.end(), false);
      if (it != covered_.end()) {
        const auto c = static_cast<std::int64_t>(it - covered_.begin());
        fail(0, "no piece has cell (" + std::to_string(box_[0] + c % gc_[0]) + ", " +
                    std::to_string(box_[2] + c / gc_[0] % gc_[1]) + ", " +
                    std::to_string(box_[4] + c / gc_[0] / gc_[1]) + ") of the grid's extent " +
                    extent_text(box_) + "; the pieces must cover it");
      }
    }
    const auto* n = gn_;
    const std::int64_t stride[3] = {1, n[0], n[0] * n[1]};
    if (serial_ == "StructuredGrid") {
      mesh_.points = std::move(gpoints_.a);
    } else {
      mesh_.points = Array::of<double>({grid_points_, 3});
      double* out = mesh_.points.as<double>();
      const auto& e = box_;
      for (std::int64_t k = 0; k < n[2]; ++k)
        for (std::int64_t j = 0; j < n[1]; ++j)
          for (std::int64_t i = 0; i < n[0]; ++i, out += 3) {
            if (serial_ == "RectilinearGrid") {
              out[0] = axes_[0][static_cast<std::size_t>(i)];
              out[1] = axes_[1][static_cast<std::size_t>(j)];
              out[2] = axes_[2][static_cast<std::size_t>(k)];
              continue;
            }
            // ImageData: origin + direction * (index * spacing), index from the extent
            const double x = static_cast<double>(e[0] + i) * spacing_[0];
            const double y = static_cast<double>(e[2] + j) * spacing_[1];
            const double z = static_cast<double>(e[4] + k) * spacing_[2];
            for (int r = 0; r < 3; ++r)
              out[r] = origin_[r] + direction_[3 * r] * x + direction_[3 * r + 1] * y +
                       direction_[3 * r + 2] * z;
          }
    }
    for (auto& [name, w] : gpoint_) {
      if (w.pieces == grid_parts_) {
        agree("point data '" + name + "'", w.origins, mesh_.notes);  // a note where types differ
        mesh_.point_data[name] = std::move(w.a);
      } else {
        mesh_.notes.push_back("point data '" + name + "' is in " + std::to_string(w.pieces) +
                              " of " + std::to_string(grid_parts_) + " pieces: dropped");
      }
    }
    std::vector<int> axes;
    for (int i = 0; i < 3; ++i)
      if (n[i] > 1) axes.push_back(i);
    static const char* const kKinds[] = {"vertex", "line", "quad", "hexahedron"};
    const std::int64_t npc = std::int64_t{1} << axes.size();
    // The corners of a cell from its first point, in VTK's order (quad: (0,0) (1,0) (1,1) (0,1);
    // hexahedron: that quad, then the same one layer up).
    std::vector<std::int64_t> corner{0};
    if (axes.size() >= 1) corner.push_back(stride[axes[0]]);
    if (axes.size() >= 2) {
      const auto sa = stride[axes[0]], sb = stride[axes[1]];
      corner = {0, sa, sa + sb, sb};
    }
    if (axes.size() == 3)
      for (std::size_t m = 0; m < 4; ++m) corner.push_back(corner[m] + stride[2]);
    Array conn = Array::of<std::int64_t>({grid_cells_, npc});
    auto* out = conn.as<std::int64_t>();
    for (std::int64_t k = 0; k < gc_[2]; ++k)
      for (std::int64_t j = 0; j < gc_[1]; ++j)
        for (std::int64_t i = 0; i < gc_[0]; ++i) {
          const std::int64_t base = i + j * stride[1] + k * stride[2];
          for (const auto off : corner) *out++ = base + off;
        }
    mesh_.cells.push_back(CellBlock::fixed(kKinds[axes.size()], std::move(conn)));
    for (auto& [name, w] : gcell_) {
      if (w.pieces == grid_cell_parts_) {
        agree("cell data '" + name + "'", w.origins, mesh_.notes);
        mesh_.cell_data[name].push_back(std::move(w.a));
      } else {
        mesh_.notes.push_back("cell data '" + name + "' is in " + std::to_string(w.pieces) +
                              " of the " + std::to_string(grid_cell_parts_) +
                              " pieces with cells: dropped");
      }
    }
    mesh_.notes.push_back(serial_ + " of " + std::to_string(n[0]) + " x " + std::to_string(n[1]) +
                          " x " + std::to_string(n[2]) + " points converted to " +
                          std::to_string(grid_cells_) + " " + kKinds[axes.size()] + " cells");
    if (declared > 1)
      mesh_.notes.push_back(
          std::to_string(declared) + " pieces (" + std::to_string(grid_parts_) +
          " not empty) assembled into one grid of extent " + extent_text(box_) +
          ", as VTK reads them: points on the boundaries pieces share are one point each");
  }

  // A parallel file (PUnstructuredGrid, PPolyData, PStructuredGrid, PRectilinearGrid,
  // PImageData): every <Piece Source> opened through ReadOptions::open_sibling and read as a
  // file of the serial type (and only that type). Unstructured pieces are concatenated
  // (join_pieces); structured ones are placed in one grid by their extents, as a serial file's
  // pieces are.
  Mesh read_parallel() {
    if (pieces_.empty()) fail(0, "no <Piece Source=...> in <" + grid_ + ">");
    if (!options_.open_sibling)
      fail(0, "a " + grid_ + " file names other files, which cannot be opened here (read it " +
                  "from a path)");
    const auto slash = path_.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string() : path_.substr(0, slash + 1);
    const bool structured = is_structured(serial_);
    if (structured) {
      std::vector<std::array<std::int64_t, 6>> extents;
      for (const auto& p : pieces_)
        if (!p.empty) extents.push_back(p.extent);
      begin_grid(extents, pieces_.front().line);
    }
    std::vector<Mesh> parts;
    std::vector<ArrayOrigin> origins;  // each part's piece, for join_pieces' messages
    std::uint64_t used = 0;
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      const auto& p = pieces_[i];
      if (p.empty) continue;  // VTK lists pieces it had nothing for, with extent "0 -1 ..."
      const auto& src = p.source;
      UniqueFd fd = open_piece(p);
      ReadOptions opts;
      if (max_bytes_) {
        if (used >= max_bytes_ - std::min(max_bytes_, claimed_))
          throw SizeLimitError(path_ + ":" + std::to_string(p.line) + ": piece '" + src +
                               "': the pieces before it reach the " + std::to_string(max_bytes_) +
                               " bytes this file may decode to");
        opts.max_bytes = max_bytes_ - claimed_ - used;
      }
      const InFile in{fd.get(), dir + src};
      if (!structured) {
        parts.push_back(read_vtu_as(in, opts, serial_, path_));
        origins.push_back({{}, 1, "piece " + std::to_string(i) + " (" + src + ")", p.line});
        used += bytes_of(parts.back());
        continue;
      }
      GridFile got = read_grid_parts(in, opts, serial_, path_);
      for (auto& g : got.parts) {
        for (int a = 0; a < 3; ++a)
          if (g.extent[2 * a] < p.extent[2 * a] || g.extent[2 * a + 1] > p.extent[2 * a + 1])
            fail(p.line, "piece '" + src + "' holds extent " + extent_text(g.extent) +
                             ", outside the Extent " + extent_text(p.extent) + " given for it");
        used += g.points.nbytes();
        for (const auto& c : g.coords) used += c.nbytes();
        for (const auto& d : g.pdata) used += d.a.nbytes();
        for (const auto& d : g.cdata) used += d.a.nbytes();
        add_grid_part(std::move(g));
      }
      for (auto& [k, a] : got.field_data) mesh_.field_data.emplace(k, std::move(a));
      for (auto& n : got.notes) mesh_.notes.push_back("piece " + std::to_string(i) + ": " + n);
    }
    if (!structured) return join_pieces(std::move(parts), origins);
    finish_grid(pieces_.size());
    return std::move(mesh_);
  }

  // The file piece `p` of a parallel file names, opened: a relative name that stays in the
  // parallel file's directory (no absolute path, no '..'), else a ReadError naming both.
  UniqueFd open_piece(const PieceInfo& p) {
    const auto& src = p.source;
    if (src.empty()) fail(p.line, "<Piece> has no Source");
    if (src.front() == '/') fail(p.line, "piece '" + src + "' is an absolute path; refused");
    for (std::size_t at = 0; at <= src.size();) {
      const auto next = std::min(src.find('/', at), src.size());
      if (src.compare(at, next - at, "..") == 0)
        fail(p.line,
             "piece '" + src + "' leads out of the directory of the " + grid_ + " file; refused");
      at = next + 1;
    }
    if (src.find('\0') != std::string::npos) fail(p.line, "piece name holds a NUL");
    try {
      return options_.open_sibling(src);
    } catch (const ReadError& e) {
      fail(p.line, "piece '" + src + "': " + e.what());
    }
  }

  static std::uint64_t bytes_of(const Mesh& m) {
    std::uint64_t n = m.points.nbytes();
    for (const auto& b : m.cells)
      n += b.connectivity.nbytes() + b.offsets.nbytes() + b.face_offsets.nbytes();
    for (const auto& [k, a] : m.point_data) n += a.nbytes();
    for (const auto& [k, v] : m.cell_data)
      for (const auto& a : v) n += a.nbytes();
    return n;
  }

  // Pieces -> one mesh: points stacked, blocks renumbered (adjacent fixed blocks of one type
  // merged, as one grid would read), point and cell data by the rules of a .vtu's pieces
  // (choose_arrays): kept where every piece with points (cells) has them, else dropped with a
  // note naming the pieces without; one type (agree()); one number of components. `where`:
  // each part's piece, as messages name it, and the line of its <Piece>.
  Mesh join_pieces(std::vector<Mesh> parts, const std::vector<ArrayOrigin>& where) {
    Mesh out;
    const auto np = parts.size();
    std::vector<Array> pts;
    for (const auto& m : parts) pts.push_back(m.points);
    out.points = concat_rows(pts);
    std::set<std::string> pnames, cnames;
    for (const auto& m : parts) {
      for (const auto& [k, a] : m.point_data) pnames.insert(k);
      for (const auto& [k, a] : m.cell_data) cnames.insert(k);
    }
    // The parts an array must be in: those with points (cells); all when none has any.
    const auto counted_parts = [&](bool cells) {
      std::vector<std::size_t> v;
      for (std::size_t pi = 0; pi < np; ++pi)
        if ((cells ? parts[pi].num_cells() : parts[pi].num_points()) > 0) v.push_back(pi);
      if (v.empty())
        for (std::size_t pi = 0; pi < np; ++pi) v.push_back(pi);
      return v;
    };
    // Whether every counted part has `k`, else the note; then one type for all (converted).
    const auto kept = [&](bool cells, const std::string& k) {
      const std::string what = (cells ? "cell data '" : "point data '") + k + "'";
      const auto counted = counted_parts(cells);
      std::vector<std::size_t> missing;
      std::vector<ArrayOrigin> origins;
      for (const auto pi : counted) {
        const auto& m = parts[pi];
        const Array* a = nullptr;
        if (!cells && m.point_data.count(k)) a = &m.point_data.at(k);
        if (cells && m.cell_data.count(k) && !m.cell_data.at(k).empty())
          a = &m.cell_data.at(k).front();  // a piece's blocks share its array's type
        if (!a) {
          missing.push_back(pi);
          continue;
        }
        std::int64_t components = 1;
        for (std::size_t ax = 1; ax < a->ndim(); ++ax) components *= a->dim(ax);
        origins.push_back({a->dtype(), components, where[pi].label, where[pi].line});
      }
      if (!missing.empty()) {
        out.notes.push_back(missing_note(what, origins.size(), counted.size(), np, missing,
                                         cells ? "cells" : "points"));
        return false;
      }
      if (const auto t = agree(what, origins, out.notes))
        for (const auto pi : counted) {
          if (!cells) {
            auto& a = parts[pi].point_data.at(k);
            a = converted(a, *t);
          } else {
            for (auto& a : parts[pi].cell_data.at(k)) a = converted(a, *t);
          }
        }
      return true;
    };
    const auto pcounted = counted_parts(false);
    for (const auto& k : pnames) {
      if (!kept(false, k)) continue;
      std::vector<Array> v;
      for (const auto pi : pcounted) v.push_back(parts[pi].point_data.at(k));
      out.point_data[k] = concat(v, k);
    }
    std::vector<std::string> ckeep;
    for (const auto& k : cnames)
      if (kept(true, k)) ckeep.push_back(k);
    std::int64_t base = 0;
    std::vector<std::vector<Array>> run_data(ckeep.size());  // the open run's cell data
    std::vector<Array> run;                                  // the open run's blocks
    auto close_run = [&] {
      if (run.empty()) return;
      out.cells.push_back(CellBlock::fixed(out.cells.back().type, concat_rows(run)));
      out.cells.erase(out.cells.end() - 2);
      for (std::size_t i = 0; i < ckeep.size(); ++i) {
        if (first_mismatch(run_data[i]) != run_data[i].size())
          throw ReadError(path_ + ": cell data '" + ckeep[i] +
                          "' differs in type or components between pieces");
        out.cell_data[ckeep[i]].push_back(concat_rows(run_data[i]));
        run_data[i].clear();
      }
      run.clear();
    };
    for (std::size_t pi = 0; pi < np; ++pi) {
      auto& m = parts[pi];
      for (std::size_t b = 0; b < m.cells.size(); ++b) {
        CellBlock blk = m.cells[b];
        if (base) {  // renumber into a copy (the piece's block may share its file's array)
          Array c = Array::empty(blk.connectivity.dtype(), blk.connectivity.shape());
          const auto* s = blk.connectivity.as<std::int64_t>();
          auto* d = c.as<std::int64_t>();
          for (std::size_t i = 0; i < c.size(); ++i) d[i] = s[i] + base;
          blk.connectivity = std::move(c);
        }
        const bool joins = !blk.ragged() && !run.empty() && out.cells.back().type == blk.type &&
                           run.back().dim(1) == blk.connectivity.dim(1);  // polygons: per size
        if (!joins) {
          close_run();
          if (!blk.ragged()) {  // opens a run (a placeholder block stands for it meanwhile)
            run.push_back(blk.connectivity);
            out.cells.push_back(CellBlock::fixed(blk.type, Array()));
          } else {
            out.cells.push_back(blk);
          }
        } else {
          run.push_back(blk.connectivity);
        }
        for (std::size_t i = 0; i < ckeep.size(); ++i) {
          const auto& a = m.cell_data.at(ckeep[i]).at(b);
          if (blk.ragged())
            out.cell_data[ckeep[i]].push_back(a);
          else
            run_data[i].push_back(a);
        }
      }
      base += m.num_points();
      for (auto& [k, a] : m.field_data) out.field_data.emplace(k, a);
      if (!m.regions.empty())
        out.notes.push_back("piece " + std::to_string(pi) + ": " +
                            std::to_string(m.regions.size()) +
                            " regions not kept (their numbers are the piece's own)");
      for (auto& n : m.notes) out.notes.push_back("piece " + std::to_string(pi) + ": " + n);
    }
    close_run();
    out.notes.push_back(std::to_string(np) + " pieces of " + path_ + " concatenated");
    return out;
  }

  std::string_view data_;
  std::string path_;
  MappedFile* file_ = nullptr;
  std::uint64_t max_bytes_ = 0, claimed_ = 0;
  ReadOptions options_;
  // Without max_bytes, what an extent may make: 16 GiB (read_vtu_bytes: 256 MiB, for fuzzing).
  std::uint64_t made_limit_ = std::uint64_t{16} << 30;
  std::string only_, parent_, grid_;
  std::string serial_;  // grid_, or for a parallel file the type of its pieces
  std::array<std::int64_t, 6> whole_extent_{};
  std::vector<double> origin_{0, 0, 0}, spacing_{1, 1, 1}, direction_{1, 0, 0, 0, 1, 0, 0, 0, 1};
  // The structured grid being assembled (begin_grid .. finish_grid).
  std::array<std::int64_t, 6> box_{};
  std::int64_t gn_[3]{}, gc_[3]{};                              // points, cells along each axis
  std::int64_t grid_points_ = 0, grid_cells_ = 0, marked_ = 0;  // marked_: cells of pieces placed
  std::size_t grid_parts_ = 0, grid_cell_parts_ = 0;            // pieces placed; those with cells
  bool covered_all_ = false;
  std::vector<bool> covered_;                // cells placed, while no piece covered them all
  std::array<std::vector<double>, 3> axes_;  // RectilinearGrid coordinates
  GridArray gpoints_;
  std::map<std::string, GridArray> gpoint_, gcell_;
  XML_Parser parser_ = nullptr;
  std::string error_;
  std::vector<std::string> open_;
  std::string section_;
  bool in_array_ = false, in_piece_ = false;
  std::size_t array_depth_ = 0;
  bool big_endian_ = false, appended_base64_ = false;
  // The file's compressor: its arrays are blocks of this (header: count, block size, last
  // block size, compressed sizes), each compressed on its own.
  enum class Codec { none, zlib, lz4, lzma } codec_ = Codec::none;
  std::size_t header_size_ = 4;
  std::optional<std::size_t> appended_;
  std::size_t appended_end_ = 0;
  std::vector<DataArrayInfo> arrays_;
  std::vector<PieceInfo> pieces_;
  std::vector<std::size_t> field_arrays_;
  std::map<std::string, std::vector<Array>> point_parts_;
  // (section, name) -> the type its pieces' arrays are read as, where they differ (agree()).
  std::map<std::pair<std::string, std::string>, DType> target_;
  std::map<std::string, std::size_t> field_lines_;  // field data: the line of each name's array
  std::vector<SplitPiece> split_;                   // pieces whose cells expand_vtk_cells split
  std::map<std::string, Array> kept_fields_;        // region fields left as field data
  Mesh mesh_;
};

}  // namespace

namespace {
// Appended data is decoded array by array (raw arrays with read_at) after a short XML head:
// mapped lazily. Inline arrays make the whole file XML, parsed end to end: read into memory.
Access access_for(const InFile& in) {
  return peek_file(in, 1u << 16).find("<AppendedData") != std::string::npos ? Access::map_lazily
                                                                            : Access::read;
}

Mesh read_vtu_as(const InFile& in, const ReadOptions& options, std::string only,
                 std::string parent) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        return VtuReader(data, in.path, &file, options, only, parent).read();
      },
      access_for(in));
}

GridFile read_grid_parts(const InFile& in, const ReadOptions& options, std::string only,
                         std::string parent) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        return VtuReader(data, in.path, &file, options, only, parent).read_parts();
      },
      access_for(in));
}
}  // namespace

Mesh read_vtu(const InFile& in, const ReadOptions& options) {
  return read_vtu_as(in, options, {}, {});
}

Mesh read_vtu_bytes(std::string_view data, const std::string& name) {
  VtuReader r(data, name);
  r.limit_made(std::uint64_t{256} << 20);
  return r.read();
}

}  // namespace meshdock::mesh
