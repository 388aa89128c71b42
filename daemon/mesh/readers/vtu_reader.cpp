// VTK XML UnstructuredGrid (.vtu): ascii, inline base64, appended raw and appended base64;
// zlib compression (independent blocks); header_type UInt32 / UInt64; Little / BigEndian;
// several Pieces (points concatenated, cells renumbered); every numeric VTK dtype.
//
// The XML structure is parsed by expat over the part of the file before <AppendedData> (raw
// appended bytes are not XML); array payloads are decoded straight from the mapped file.
// Cells follow meshio: a block per run of one VTK type (polygons further split by size), VTK ->
// meshio node order (wedge), point/cell data in the file's dtype, points as float64.
// Polyhedra (VTK 42, "faces" / "faceoffsets" arrays) become ragged "polyhedron" blocks; the
// VTK 9.4 polyhedron layout (face_connectivity, polyhedron_offsets, ...) raises ReadError.
#include <expat.h>
#include <zlib.h>
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "daemon/mesh/base64.hpp"
#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/parallel.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/region_fields.hpp"
#include "daemon/mesh/scratch.hpp"

namespace meshdock::mesh {

namespace {

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
};

struct PieceInfo {
  std::int64_t num_points = 0, num_cells = 0;
  std::vector<std::size_t> arrays;  // indices into arrays_
};

class VtuReader {
 public:
  // `file`, when the data is a mapped file, lets the reader drop each array's source pages
  // once it is decoded.
  VtuReader(std::string_view data, const std::string& path, MappedFile* file = nullptr,
            std::uint64_t max_bytes = 0)
      : data_(data), path_(path), file_(file), max_bytes_(max_bytes) {}

  Mesh read() {
    parse_xml();
    if (pieces_.empty()) fail(0, "no <Piece> in <UnstructuredGrid>");
    std::int64_t total_points = 0;
    for (const auto& p : pieces_) total_points += p.num_points;
    mesh_.points = Array::of<double>({total_points, 3});
    std::int64_t point_base = 0;
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      assemble_piece(pieces_[i], static_cast<int>(i), point_base);
      point_base += pieces_[i].num_points;
    }
    for (auto& [name, parts] : point_parts_) mesh_.point_data[name] = concat(parts, name);
    regions_from_field_data();
    split_blocks_as_written();
    return std::move(mesh_);
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
    feed(data_.data(), xml_end, app == std::string_view::npos);
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
      stop(std::string("attribute ") + key + "=\"" + s + "\" is not a non-negative integer");
    }
    return v;
  }

  void start(const std::string& name, const std::map<std::string, std::string>& a) {
    open_.push_back(name);
    if (name == "VTKFile") {
      auto t = a.find("type");
      if (t == a.end() || t->second != "UnstructuredGrid") {
        stop("VTKFile type is '" + (t == a.end() ? std::string() : t->second) +
             "'; only UnstructuredGrid is read");
      }
      if (auto b = a.find("byte_order"); b != a.end()) big_endian_ = b->second == "BigEndian";
      if (auto h = a.find("header_type"); h != a.end()) {
        if (h->second == "UInt64")
          header_size_ = 8;
        else if (h->second != "UInt32")
          stop("header_type '" + h->second + "' is not UInt32 or UInt64");
      }
      if (auto c = a.find("compressor"); c != a.end() && !c->second.empty()) {
        if (c->second != "vtkZLibDataCompressor")
          stop("compressor '" + c->second + "' is not supported (vtkZLibDataCompressor is)");
        zlib_ = true;
      }
    } else if (name == "Piece") {
      PieceInfo p;
      p.num_points = int_attr(a, "NumberOfPoints", 0);
      p.num_cells = int_attr(a, "NumberOfCells", 0);
      pieces_.push_back(p);
    } else if (name == "Points" || name == "Cells" || name == "PointData" || name == "CellData" ||
               name == "FieldData") {
      section_ = name;
    } else if (name == "DataArray" || name == "Array") {
      DataArrayInfo d;
      d.line = XML_GetCurrentLineNumber(parser_);
      d.section = section_;
      d.piece = static_cast<int>(pieces_.size()) - 1;
      d.name = a.count("Name") ? a.at("Name") : "";
      d.type_name = a.count("type") ? a.at("type") : "";
      auto dt = vtk_dtype(d.type_name);
      if (!dt) {
        stop("DataArray '" + d.name + "' has type '" + d.type_name + "', not a numeric VTK type");
        return;
      }
      d.dtype = *dt;
      d.components = int_attr(a, "NumberOfComponents", 1);
      if (d.components < 1) d.components = 1;
      d.format = a.count("format") ? a.at("format") : "ascii";
      if (d.format == "appended")
        d.offset = static_cast<std::uint64_t>(int_attr(a, "offset", 0));
      else if (d.format != "ascii" && d.format != "binary")
        stop("DataArray '" + d.name + "' has format '" + d.format + "'");
      arrays_.push_back(std::move(d));
      if (!pieces_.empty() && section_ != "FieldData")
        pieces_.back().arrays.push_back(arrays_.size() - 1);
      else if (section_ == "FieldData")
        field_arrays_.push_back(arrays_.size() - 1);
      in_array_ = true;
      array_depth_ = open_.size();
    }
  }

  void end(const std::string& name) {
    if ((name == "DataArray" || name == "Array") && open_.size() == array_depth_) in_array_ = false;
    if (name == "Points" || name == "Cells" || name == "PointData" || name == "CellData" ||
        name == "FieldData")
      section_.clear();
    if (name == "FieldData") {
      for (auto i : field_arrays_) mesh_.field_data[arrays_[i].name] = decode(arrays_[i], -1);
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
    if (!zlib_) {
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
    // Deflate expands by at most ~1032x; a header claiming more than that is hostile.
    if (total > (src_off[nblocks] + 64) * 1032)
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

  // Blocks are independent: inflate them on every core (libdeflate when built with it, else
  // zlib). The first failing block is reported.
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
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
      thread_local std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)>
          dec(libdeflate_alloc_decompressor(), &libdeflate_free_decompressor);
#endif
      const std::size_t want = static_cast<std::size_t>(i + 1 == nblocks ? last : block);
      std::string why;
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
      std::size_t got = 0;
      const auto rc =
          dec ? libdeflate_zlib_decompress(dec.get(), src + src_off[i], src_off[i + 1] - src_off[i],
                                           out + i * block, want, &got)
              : LIBDEFLATE_BAD_DATA;
      if (rc != LIBDEFLATE_SUCCESS)
        why = "bad deflate data";
      else if (got != want)
        why = "wrong size";
#else
      uLongf got = static_cast<uLongf>(want);
      const int rc = uncompress(out + i * block, &got, src + src_off[i],
                                static_cast<uLong>(src_off[i + 1] - src_off[i]));
      if (rc != Z_OK)
        why = zError(rc);
      else if (got != want)
        why = "wrong size";
#endif
      if (!why.empty()) {
        std::lock_guard lock(m);
        if (!error || i < error->first) error.emplace(i, why);
        return;
      }
      finished(i);
    });
    if (error)
      fail(d.line, "DataArray '" + d.name + "': zlib block " + std::to_string(error->first) +
                       " is corrupt (" + error->second + ")");
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
    if (file_ && zlib_) file_->populate(*appended_ + off, *appended_ + appended_next(off));
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
    if (d.format == "ascii") {
      std::string scratch;
      Cursor c(text_of(d, scratch), path_);
      std::vector<double> fv;
      std::vector<std::int64_t> iv;
      const bool is_float = d.dtype.code == 2;
      while (true) {
        c.skip_ws();
        if (c.at_end()) break;
        try {
          if (is_float)
            fv.push_back(c.number<double>("number"));
          else
            iv.push_back(d.dtype.code == 1 && d.dtype.bits == 64
                             ? static_cast<std::int64_t>(c.number<std::uint64_t>("number"))
                             : c.number<std::int64_t>("number"));
        } catch (const ReadError& e) {
          fail(d.line,
               "DataArray '" + d.name + "': " + std::string(e.what()).substr(path_.size() + 1));
        }
      }
      const std::size_t n = is_float ? fv.size() : iv.size();
      out = make(d, n);
      auto* dst = static_cast<std::uint8_t*>(out.data());
      for (std::size_t i = 0; i < n; ++i)
        store(dst + i * item, d.dtype, is_float ? fv[i] : 0.0, is_float ? 0 : iv[i]);
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
    if (expect >= 0 && out.size() != static_cast<std::size_t>(expect * d.components)) {
      fail(d.line, "DataArray '" + d.name + "' holds " + std::to_string(out.size()) + " values; " +
                       std::to_string(expect) + " tuples of " + std::to_string(d.components) +
                       " were expected");
    }
    release_source(d);
    return out;
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

  static void store(std::uint8_t* dst, DType t, double f, std::int64_t i) {
    auto put = [&](auto v) { std::memcpy(dst, &v, sizeof v); };
    if (t.code == 2) {
      if (t.bits == 32)
        put(static_cast<float>(f));
      else
        put(f);
      return;
    }
    switch (t.bits) {
      case 8:
        put(static_cast<std::uint8_t>(i));
        break;
      case 16:
        put(static_cast<std::uint16_t>(i));
        break;
      case 32:
        put(static_cast<std::uint32_t>(i));
        break;
      default:
        put(i);
        break;
    }
  }

  Array concat(const std::vector<Array>& parts, const std::string& name) {
    if (first_mismatch(parts) != parts.size())
      throw ReadError(path_ + ": point data '" + name +
                      "' differs in type or components between pieces");
    return concat_rows(parts);
  }

  // Field arrays named by region_field_name (what write_vtu makes of regions) become regions.
  void regions_from_field_data() {
    for (auto it = mesh_.field_data.begin(); it != mesh_.field_data.end();) {
      Region r;
      if (!parse_region_field_name(it->first, r)) {
        ++it;
        continue;
      }
      const auto& a = it->second;
      const bool side = r.kind == RegionKind::kSide;
      if (a.dtype().code == 2 || (side && (a.ndim() != 2 || a.dim(1) != 2)))
        throw ReadError(path_ + ": field data '" + it->first + "' names a region but holds " +
                        (side ? "no (n, 2) integer pairs" : "no integers"));
      r.entries = Array::from_vector(to_int64(a), a.shape());
      mesh_.regions.push_back(std::move(r));
      it = mesh_.field_data.erase(it);
    }
  }

  // "meshdock:block_sizes" (write_vtu) splits the type runs back into the blocks written.
  void split_blocks_as_written() {
    auto it = mesh_.field_data.find(std::string(kBlockSizesField));
    if (it == mesh_.field_data.end()) return;
    const auto sizes = to_int64(it->second);
    mesh_.field_data.erase(it);
    // Every boundary the reader made must be one of the written ones, or the sizes do not
    // describe this file (edited by another tool): then they are ignored, with a note.
    std::set<std::int64_t> wanted;
    std::int64_t at = 0;
    for (auto n : sizes) {
      if (n < 0) at = -1;
      if (at < 0) break;
      wanted.insert(at += n);
    }
    bool fits = at == mesh_.num_cells();
    at = 0;
    for (const auto& blk : mesh_.cells)
      fits &= wanted.count(at += blk.size()) > 0 || blk.size() == 0;
    if (!fits) {
      mesh_.notes.push_back(std::string(kBlockSizesField) +
                            " does not match the cells; blocks follow the cell types");
      return;
    }
    Mesh out;
    std::int64_t base = 0;
    for (std::size_t b = 0; b < mesh_.cells.size(); ++b) {
      const auto& blk = mesh_.cells[b];
      std::int64_t begin = 0;
      for (auto cut = wanted.upper_bound(base); begin < blk.size(); ++cut) {
        const auto end = std::min(*cut - base, blk.size());
        out.cells.push_back(slice_block(blk, begin, end));
        for (auto& [name, parts] : mesh_.cell_data) {
          out.cell_data[name].push_back(
              slice_rows(parts[b], static_cast<std::size_t>(begin), static_cast<std::size_t>(end)));
        }
        begin = end;
      }
      base += blk.size();
    }
    mesh_.cells = std::move(out.cells);
    mesh_.cell_data = std::move(out.cell_data);
  }

  // Cells [begin, end) of a block (fixed-size or ragged) as a block of their own.
  static CellBlock slice_block(const CellBlock& blk, std::int64_t begin, std::int64_t end) {
    if (begin == 0 && end == blk.size()) return blk;
    if (!blk.ragged()) {
      return CellBlock::fixed(blk.type,
                              slice_rows(blk.connectivity, static_cast<std::size_t>(begin),
                                         static_cast<std::size_t>(end)));
    }
    // Ragged: re-base the CSR levels on the slice.
    const auto* off = blk.offsets.as<std::int64_t>();
    const auto* fo = blk.face_offsets.valid() ? blk.face_offsets.as<std::int64_t>() : nullptr;
    const auto* conn = blk.connectivity.as<std::int64_t>();
    CellBlock out;
    out.type = blk.type;
    std::vector<std::int64_t> offsets, face_offsets, ids;
    for (auto c = begin; c <= end; ++c) offsets.push_back(off[c] - off[begin]);
    if (fo) {
      for (auto f = off[begin]; f <= off[end]; ++f) face_offsets.push_back(fo[f] - fo[off[begin]]);
      ids.assign(conn + fo[off[begin]], conn + fo[off[end]]);
      out.face_offsets = Array::from_vector(face_offsets);
    } else {
      ids.assign(conn + off[begin], conn + off[end]);
    }
    out.offsets = Array::from_vector(offsets);
    out.connectivity = Array::from_vector(ids);
    return out;
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
      else if (d.section == "PointData")
        pdata.push_back(&d);
      else if (d.section == "CellData")
        cdata.push_back(&d);
    }
    const std::string where = "piece " + std::to_string(index);
    if (p.num_points > 0 && !pts_d)
      fail(0, where + " has " + std::to_string(p.num_points) + " points but no <Points> array");
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
    for (auto* d : pdata) point_parts_[d->name].push_back(decode(*d, p.num_points));
    if (p.num_cells == 0) return;
    if (!conn_d || !offs_d || !types_d)
      fail(0, where + " has cells but lacks connectivity, offsets or types");
    std::vector<std::pair<std::string, Array>> named;
    for (auto* d : cdata) named.emplace_back(d->name, decode(*d, p.num_cells));
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
    if (types_u8)
      append_vtk_cells<std::uint8_t>(
          mesh_, conn, *offs, {types_array->as<std::uint8_t>(), types_array->size()}, p.num_points,
          point_base, named, on_error, faces ? &*faces : nullptr, conn.borrowed());
    else
      append_vtk_cells<std::int64_t>(mesh_, conn, *offs, *types_wide, p.num_points, point_base,
                                     named, on_error, faces ? &*faces : nullptr, conn.borrowed());
  }

  std::string_view data_;
  std::string path_;
  MappedFile* file_ = nullptr;
  std::uint64_t max_bytes_ = 0, claimed_ = 0;
  XML_Parser parser_ = nullptr;
  std::string error_;
  std::vector<std::string> open_;
  std::string section_;
  bool in_array_ = false;
  std::size_t array_depth_ = 0;
  bool big_endian_ = false, zlib_ = false, appended_base64_ = false;
  std::size_t header_size_ = 4;
  std::optional<std::size_t> appended_;
  std::size_t appended_end_ = 0;
  std::vector<DataArrayInfo> arrays_;
  std::vector<PieceInfo> pieces_;
  std::vector<std::size_t> field_arrays_;
  std::map<std::string, std::vector<Array>> point_parts_;
  Mesh mesh_;
};

}  // namespace

Mesh read_vtu(const InFile& in, const ReadOptions& options) {
  // Appended data is decoded array by array (raw arrays with read_at) after a short XML head:
  // mapped lazily. Inline arrays make the whole file XML, parsed end to end: read into memory.
  const bool appended = peek_file(in, 1u << 16).find("<AppendedData") != std::string::npos;
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        return VtuReader(data, in.path, &file, options.max_bytes).read();
      },
      appended ? Access::map_lazily : Access::read);
}

Mesh read_vtu_bytes(std::string_view data, const std::string& name) {
  return VtuReader(data, name).read();
}

}  // namespace meshdock::mesh
