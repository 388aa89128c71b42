#include "daemon/mesh/writers/vtk_xml.hpp"

#include <zlib.h>
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

#include <cstring>
#include <memory>
#include <numeric>

#include "daemon/mesh/parallel.hpp"
#include "daemon/mesh/region_fields.hpp"
#include "daemon/mesh/writers/write_util.hpp"

namespace meshdock::mesh::wr {

namespace {

constexpr std::size_t kZlibBlock = 1 << 20;

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* vtk_type(DType d) {
  if (d.lanes != 1) return nullptr;
  if (d.code == 0)
    return d.bits == 8 ? "Int8" : d.bits == 16 ? "Int16" : d.bits == 32 ? "Int32" : "Int64";
  if (d.code == 1)
    return d.bits == 8 ? "UInt8" : d.bits == 16 ? "UInt16" : d.bits == 32 ? "UInt32" : "UInt64";
  if (d.code == 2 && d.bits == 32) return "Float32";
  if (d.code == 2 && d.bits == 64) return "Float64";
  if (d.code == 6 && d.bits == 8) return "UInt8";  // bool
  return nullptr;
}

void ascii_values(OutFile& out, const Array& a) {
  std::string text;
  const auto d = a.dtype();
  const auto* p = static_cast<const std::uint8_t*>(a.data());
  const std::size_t n = a.size(), item = a.itemsize();
  for (std::size_t i = 0; i < n; ++i) {
    const auto* v = p + i * item;
    if (d.code == 2 && d.bits == 64) {
      double x;
      std::memcpy(&x, v, 8);
      append_number(text, x);
    } else if (d.code == 2) {
      float x;
      std::memcpy(&x, v, 4);
      append_number(text, x);
    } else if (d.code == 0) {
      append_number(text, int_at(a, i));
    } else {
      append_number(text, static_cast<std::uint64_t>(int_at(a, i)));  // unsigned, bool
    }
    text += (i % 12 == 11 || i + 1 == n) ? '\n' : ' ';
    if (text.size() > (1 << 16)) {
      out.put(text);
      text.clear();
    }
  }
  out.put(text);
}

}  // namespace

VtkXmlFile::VtkXmlFile(const Mesh& m, const OutTarget& target, VtuEncoding enc, int zlib_level,
                       const char* format)
    : m_(m), target_(target), path_(target.path), enc_(enc), level_(zlib_level), format_(format) {
  if (zlib_level < 0 || zlib_level > 9)
    fail("zlib level " + std::to_string(zlib_level) + " is not 0..9");
}

void VtkXmlFile::fail(const std::string& what) const {
  throw WriteError(path_ + ": " + what);
}

XmlArray VtkXmlFile::array(std::string name, const Array& a, const std::string& what) {
  if (!vtk_type(a.dtype()))
    fail(what + " has dtype (code " + std::to_string(a.dtype().code) + ", " +
         std::to_string(a.dtype().bits) + " bits), which VTK cannot hold");
  if (a.dtype().code == 6) notes.push_back(what + ": bool written as UInt8");
  XmlArray o;
  o.name = std::move(name);
  o.a = a;
  o.tuples = a.ndim() == 0 ? 1 : a.dim(0);
  // From the shape, not size / tuples: an empty (0, 3) array still has 3 components.
  o.components = 1;
  for (std::size_t d = 1; d < a.ndim(); ++d) o.components *= a.dim(d);
  if (a.ndim() > 2)
    notes.push_back(what + ": " + std::to_string(a.ndim()) + "-d array written as " +
                    std::to_string(o.components) + " components (reads back as 2-d)");
  return o;
}

void VtkXmlFile::add_field_data(const std::vector<Region>& regions,
                                const std::vector<std::int64_t>& block_sizes) {
  for (const auto& [name, a] : m_.field_data)
    field_.push_back(array(name, a, "field_data '" + name + "'"));
  for (const auto& r : regions)
    field_.push_back(array(region_field_name(r), r.entries, "region '" + r.name + "'"));
  if (!block_sizes.empty())
    field_.push_back(
        array(std::string(kBlockSizesField), Array::from_vector(block_sizes), "block sizes"));
}

void VtkXmlFile::add_points() {
  Array pts = m_.points;
  if (pts.dim(1) != 3) {
    note_point_dims(m_, format_, notes);
    pts = Array::of<double>({m_.num_points(), 3});
    auto* dst = pts.as<double>();
    for (std::int64_t i = 0; i < m_.num_points(); ++i)
      for (int k = 0; k < 3; ++k) dst[3 * i + k] = coord(m_, i, k);
  }
  section("Points").push_back(array("Points", pts, "points"));
}

void VtkXmlFile::add_point_data() {
  auto& pdata = section("PointData");
  for (const auto& [name, a] : m_.point_data)
    pdata.push_back(array(name, a, "point_data '" + name + "'"));
}

void VtkXmlFile::add_cell_data(const std::vector<std::size_t>& blocks) {
  auto& cdata = section("CellData");
  for (const auto& [name, parts] : m_.cell_data) {
    const std::string what = "cell_data '" + name + "'";
    if (parts.empty()) {
      cdata.push_back(array(name, Array::of<double>({0}), what));
      continue;
    }
    if (const auto b = first_mismatch(parts); b != parts.size())
      fail(what + " differs in dtype or shape between block 0 and block " + std::to_string(b) +
           "; " + format_ + " holds one array over all cells");
    std::vector<Array> ordered;
    for (const auto b : blocks) ordered.push_back(parts[b]);
    cdata.push_back(array(name, concat_rows(ordered), what));
  }
}

std::vector<XmlArray>& VtkXmlFile::section(const std::string& name) {
  for (auto& [n, arrays] : sections_)
    if (n == name) return arrays;
  return sections_.emplace_back(name, std::vector<XmlArray>{}).second;
}

std::vector<std::string> VtkXmlFile::write(std::string_view grid,
                                           const std::string& piece_attributes) {
  if (enc_ == VtuEncoding::kZlib) {
    for (auto& a : field_) compress(a);
    for (auto& s : sections_)
      for (auto& a : s.second) compress(a);
  }
  std::uint64_t offset = 0;
  auto place = [&](XmlArray& a) {
    a.offset = offset;
    offset += appended_size(a);
  };
  for (auto& a : field_) place(a);
  for (auto& s : sections_)
    for (auto& a : s.second) place(a);
  OutFile out(target_);
  emit(out, grid, piece_attributes);
  out.commit();
  return std::move(notes);
}

// ---- zlib ------------------------------------------------------------------------------------
void VtkXmlFile::compress(XmlArray& o) const {
  const auto* src = static_cast<const std::uint8_t*>(o.a.data());
  const std::size_t total = o.a.nbytes();
  const std::size_t nblocks = total ? (total + kZlibBlock - 1) / kZlibBlock : 0;
  std::vector<std::string> blocks(nblocks);
  parallel_for(nblocks, total < 4 * kZlibBlock ? 1 : 0, [&](std::size_t i) {
    const std::size_t n = std::min(kZlibBlock, total - i * kZlibBlock);
    auto& out = blocks[i];
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
    std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)> c(
        libdeflate_alloc_compressor(level_), &libdeflate_free_compressor);
    if (!c) fail("out of memory for the compressor");
    out.resize(libdeflate_zlib_compress_bound(c.get(), n));
    const auto got =
        libdeflate_zlib_compress(c.get(), src + i * kZlibBlock, n, out.data(), out.size());
    if (got == 0) fail("zlib compression of '" + o.name + "' failed");
    out.resize(got);
#else
    uLongf got = compressBound(static_cast<uLong>(n));
    out.resize(got);
    if (compress2(reinterpret_cast<Bytef*>(out.data()), &got, src + i * kZlibBlock,
                  static_cast<uLong>(n), level_) != Z_OK)
      fail("zlib compression of '" + o.name + "' failed");
    out.resize(got);
#endif
  });
  auto put = [&](std::uint64_t v) { o.packed.append(reinterpret_cast<const char*>(&v), 8); };
  put(nblocks);
  put(kZlibBlock);
  put(nblocks ? total - (nblocks - 1) * kZlibBlock : 0);
  for (const auto& b : blocks) put(b.size());
  for (const auto& b : blocks) o.packed += b;
}

std::uint64_t VtkXmlFile::appended_size(const XmlArray& a) const {
  if (enc_ == VtuEncoding::kZlib) return a.packed.size();
  if (enc_ == VtuEncoding::kRaw) return 8 + a.a.nbytes();
  return 0;
}

// ---- output ----------------------------------------------------------------------------------
void VtkXmlFile::emit(OutFile& out, std::string_view grid, const std::string& piece_attributes) {
  const std::string g(grid);
  out.put("<?xml version=\"1.0\"?>\n<VTKFile type=\"" + g +
          "\" version=\"0.1\" byte_order=\"LittleEndian\" header_type=\"UInt64\"");
  if (enc_ == VtuEncoding::kZlib) out.put(" compressor=\"vtkZLibDataCompressor\"");
  out.put(">\n<" + g + ">\n");
  if (!field_.empty()) {
    out.put("<FieldData>\n");
    for (const auto& a : field_) emit_array(out, a, true);
    out.put("</FieldData>\n");
  }
  out.put("<Piece " + piece_attributes + ">\n");
  for (const auto& [section, arrays] : sections_) {
    out.put("<" + section + ">\n");
    for (const auto& a : arrays) emit_array(out, a, false);
    out.put("</" + section + ">\n");
  }
  out.put("</Piece>\n</" + g + ">\n");
  if (enc_ != VtuEncoding::kAscii) {
    out.put("<AppendedData encoding=\"raw\">\n_");
    auto put = [&](const XmlArray& a) {
      if (enc_ == VtuEncoding::kZlib) {
        out.put(a.packed);
      } else {
        out.pod(static_cast<std::uint64_t>(a.a.nbytes()));
        out.write(a.a.data(), a.a.nbytes());
      }
    };
    for (const auto& a : field_) put(a);
    for (const auto& s : sections_)
      for (const auto& a : s.second) put(a);
    out.put("\n</AppendedData>\n");
  }
  out.put("</VTKFile>\n");
}

void VtkXmlFile::emit_array(OutFile& out, const XmlArray& a, bool field) const {
  std::string head = "<DataArray type=\"" + std::string(vtk_type(a.a.dtype())) + "\" Name=\"" +
                     xml_escape(a.name) + "\"";
  if (a.components != 1) head += " NumberOfComponents=\"" + std::to_string(a.components) + "\"";
  if (field) head += " NumberOfTuples=\"" + std::to_string(a.tuples) + "\"";
  if (enc_ == VtuEncoding::kAscii) {
    out.put(head + " format=\"ascii\">\n");
    ascii_values(out, a.a);
    out.put("</DataArray>\n");
  } else {
    out.put(head + " format=\"appended\" offset=\"" + std::to_string(a.offset) + "\"/>\n");
  }
}

std::vector<std::size_t> block_order(const Mesh& m) {
  std::vector<std::size_t> order(m.cells.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  return order;
}

}  // namespace meshdock::mesh::wr
