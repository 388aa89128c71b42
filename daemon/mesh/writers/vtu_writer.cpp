// VTK XML UnstructuredGrid writer: one Piece, little-endian, header_type UInt64; ascii inline,
// or every array appended raw / zlib-compressed (independent blocks, compressed in parallel).
// Cells in VTK order (meshio's, but wedge), polyhedra as faces / faceoffsets, cell data
// concatenated over blocks, regions as meshdock:region field data (region_fields.hpp).
#include <zlib.h>
#if defined(MESHDOCK_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

#include <memory>
#include <set>

#include "daemon/mesh/parallel.hpp"
#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/region_fields.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/out_file.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

constexpr std::size_t kZlibBlock = 1 << 20;

struct OutArray {
  std::string name;
  Array a;
  std::int64_t tuples = 0, components = 1;
  std::string packed;  // zlib: header + compressed blocks
  std::uint64_t offset = 0;
};

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

class VtuWriter {
 public:
  VtuWriter(const Mesh& m, const OutTarget& target, VtuEncoding enc, int level)
      : m_(m), target_(target), path_(target.path), enc_(enc), level_(level) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    collect();
    if (enc_ == VtuEncoding::kZlib) {
      for (auto& s : sections_)
        for (auto& a : s.second) compress(a);
    }
    std::uint64_t offset = 0;
    for (auto& s : sections_) {
      for (auto& a : s.second) {
        a.offset = offset;
        offset += appended_size(a);
      }
    }
    OutFile out(target_);
    emit(out);
    out.commit();
    return std::move(notes_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw WriteError(path_ + ": " + what); }

  static const char* vtk_type(DType d) {
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

  OutArray out_array(std::string name, const Array& a, const std::string& what) {
    if (!vtk_type(a.dtype()))
      fail(what + " has dtype (code " + std::to_string(a.dtype().code) + ", " +
           std::to_string(a.dtype().bits) + " bits), which VTK cannot hold");
    if (a.dtype().code == 6) notes_.push_back(what + ": bool written as UInt8");
    OutArray o;
    o.name = std::move(name);
    o.a = a;
    o.tuples = a.ndim() == 0 ? 1 : a.dim(0);
    o.components = o.tuples ? static_cast<std::int64_t>(a.size()) / o.tuples : 1;
    if (a.ndim() > 2)
      notes_.push_back(what + ": " + std::to_string(a.ndim()) + "-d array written as " +
                       std::to_string(o.components) + " components (reads back as 2-d)");
    return o;
  }

  void collect() {
    auto& field = sections_.emplace_back("FieldData", std::vector<OutArray>{}).second;
    for (const auto& [name, a] : m_.field_data)
      field.push_back(out_array(name, a, "field_data '" + name + "'"));
    for (const auto& r : m_.regions)
      field.push_back(out_array(region_field_name(r), r.entries, "region '" + r.name + "'"));
    bool runs_only = true;  // would a reader's type runs give these blocks back?
    for (std::size_t b = 1; b < m_.cells.size(); ++b)
      runs_only &= m_.cells[b].type != m_.cells[b - 1].type;
    if (!runs_only) {
      std::vector<std::int64_t> sizes;
      for (const auto& blk : m_.cells) sizes.push_back(blk.size());
      field.push_back(
          out_array(std::string(kBlockSizesField), Array::from_vector(sizes), "block sizes"));
    }

    auto& points = sections_.emplace_back("Points", std::vector<OutArray>{}).second;
    Array pts = m_.points;
    if (pts.dim(1) != 3) {
      notes_.push_back("points have " + std::to_string(pts.dim(1)) +
                       " coordinates; VTU needs 3, so the rest are written as 0");
      pts = Array::of<double>({m_.num_points(), 3});
      auto* dst = pts.as<double>();
      const auto d = m_.points.dim(1);
      for (std::int64_t i = 0; i < m_.num_points(); ++i) {
        for (std::int64_t k = 0; k < 3; ++k) {
          dst[3 * i + k] = k < d ? point(i * d + k) : 0.0;
        }
      }
    }
    points.push_back(out_array("Points", pts, "points"));

    auto& cells = sections_.emplace_back("Cells", std::vector<OutArray>{}).second;
    build_cells(cells);

    auto& pdata = sections_.emplace_back("PointData", std::vector<OutArray>{}).second;
    for (const auto& [name, a] : m_.point_data)
      pdata.push_back(out_array(name, a, "point_data '" + name + "'"));

    auto& cdata = sections_.emplace_back("CellData", std::vector<OutArray>{}).second;
    for (const auto& [name, parts] : m_.cell_data)
      cdata.push_back(out_array(name, concat_blocks(name, parts), "cell_data '" + name + "'"));
  }

  double point(std::int64_t flat) const {
    if (m_.points.dtype().bits == 32) return m_.points.as<float>()[flat];
    return m_.points.as<double>()[flat];
  }

  Array concat_blocks(const std::string& name, const std::vector<Array>& parts) {
    if (parts.empty()) return Array::of<double>({0});
    if (const auto b = first_mismatch(parts); b != parts.size())
      fail("cell_data '" + name + "' differs in dtype or shape between block 0 and block " +
           std::to_string(b) + "; VTU holds one array over all cells");
    return concat_rows(parts);
  }

  void build_cells(std::vector<OutArray>& cells) {
    std::vector<std::int64_t> conn, ends, faces, face_ends;
    std::vector<std::uint8_t> types;
    bool any_polyhedron = false;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      const auto t = vtk_type_number(blk.type);
      if (!t)
        fail("cells[" + std::to_string(b) + "] has type '" + blk.type +
             "', which VTK has no number for");
      const auto* c = blk.connectivity.as<std::int64_t>();
      const auto n = blk.size();
      if (blk.face_offsets.valid()) {
        any_polyhedron = true;
        const auto* off = blk.offsets.as<std::int64_t>();
        const auto* fo = blk.face_offsets.as<std::int64_t>();
        for (std::int64_t i = 0; i < n; ++i) {
          // connectivity: the cell's distinct points in order of first appearance.
          std::set<std::int64_t> seen;
          faces.push_back(off[i + 1] - off[i]);
          for (auto f = off[i]; f < off[i + 1]; ++f) {
            faces.push_back(fo[f + 1] - fo[f]);
            for (auto k = fo[f]; k < fo[f + 1]; ++k) {
              faces.push_back(c[k]);
              if (seen.insert(c[k]).second) conn.push_back(c[k]);
            }
          }
          ends.push_back(static_cast<std::int64_t>(conn.size()));
          face_ends.push_back(static_cast<std::int64_t>(faces.size()));
          types.push_back(static_cast<std::uint8_t>(*t));
        }
        continue;
      }
      if (blk.ragged()) {
        const auto* off = blk.offsets.as<std::int64_t>();
        for (std::int64_t i = 0; i < n; ++i) {
          conn.insert(conn.end(), c + off[i], c + off[i + 1]);
          ends.push_back(static_cast<std::int64_t>(conn.size()));
        }
      } else {
        const auto npc = blk.connectivity.dim(1);
        const auto perm = vtk_order(blk.type);
        for (std::int64_t i = 0; i < n; ++i) {
          for (std::int64_t k = 0; k < npc; ++k)
            conn.push_back(c[i * npc + (perm.empty() ? k : perm[static_cast<std::size_t>(k)])]);
          ends.push_back(static_cast<std::int64_t>(conn.size()));
        }
      }
      face_ends.insert(face_ends.end(), static_cast<std::size_t>(n), -1);
      types.insert(types.end(), static_cast<std::size_t>(n), static_cast<std::uint8_t>(*t));
    }
    cells.push_back(out_array("connectivity", Array::from_vector(conn), "connectivity"));
    cells.push_back(out_array("offsets", Array::from_vector(ends), "offsets"));
    cells.push_back(out_array("types", Array::from_vector(types), "types"));
    if (any_polyhedron) {
      cells.push_back(out_array("faces", Array::from_vector(faces), "faces"));
      cells.push_back(out_array("faceoffsets", Array::from_vector(face_ends), "faceoffsets"));
    }
  }

  // ---- zlib ----------------------------------------------------------------------------------
  void compress(OutArray& o) const {
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
      if (!c) throw WriteError(path_ + ": out of memory for the compressor");
      out.resize(libdeflate_zlib_compress_bound(c.get(), n));
      const auto got =
          libdeflate_zlib_compress(c.get(), src + i * kZlibBlock, n, out.data(), out.size());
      if (got == 0) throw WriteError(path_ + ": zlib compression of '" + o.name + "' failed");
      out.resize(got);
#else
      uLongf got = compressBound(static_cast<uLong>(n));
      out.resize(got);
      if (compress2(reinterpret_cast<Bytef*>(out.data()), &got, src + i * kZlibBlock,
                    static_cast<uLong>(n), level_) != Z_OK)
        throw WriteError(path_ + ": zlib compression of '" + o.name + "' failed");
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

  std::uint64_t appended_size(const OutArray& a) const {
    if (enc_ == VtuEncoding::kZlib) return a.packed.size();
    if (enc_ == VtuEncoding::kRaw) return 8 + a.a.nbytes();
    return 0;
  }

  // ---- output --------------------------------------------------------------------------------
  void emit(OutFile& out) {
    out.put(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"0.1\" "
        "byte_order=\"LittleEndian\" header_type=\"UInt64\"");
    if (enc_ == VtuEncoding::kZlib) out.put(" compressor=\"vtkZLibDataCompressor\"");
    out.put(">\n<UnstructuredGrid>\n");
    for (auto& [section, arrays] : sections_) {
      if (section == "FieldData") {
        if (arrays.empty()) continue;
      } else if (section == "Points") {
        out.put("<Piece NumberOfPoints=\"" + std::to_string(m_.num_points()) +
                "\" NumberOfCells=\"" + std::to_string(m_.num_cells()) + "\">\n");
      }
      out.put("<" + section + ">\n");
      for (auto& a : arrays) emit_array(out, a, section == "FieldData");
      out.put("</" + section + ">\n");
    }
    out.put("</Piece>\n</UnstructuredGrid>\n");
    if (enc_ != VtuEncoding::kAscii) {
      out.put("<AppendedData encoding=\"raw\">\n_");
      for (auto& [section, arrays] : sections_) {
        for (auto& a : arrays) {
          if (enc_ == VtuEncoding::kZlib) {
            out.put(a.packed);
          } else {
            out.pod(static_cast<std::uint64_t>(a.a.nbytes()));
            out.write(a.a.data(), a.a.nbytes());
          }
        }
      }
      out.put("\n</AppendedData>\n");
    }
    out.put("</VTKFile>\n");
  }

  void emit_array(OutFile& out, const OutArray& a, bool field) {
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

  static void ascii_values(OutFile& out, const Array& a) {
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

  const Mesh& m_;
  const OutTarget& target_;
  const std::string& path_;
  VtuEncoding enc_;
  int level_;
  std::vector<std::pair<std::string, std::vector<OutArray>>> sections_;
  std::vector<std::string> notes_;
};

}  // namespace

std::vector<std::string> write_vtu(const Mesh& m, const OutTarget& target, VtuEncoding encoding,
                                   int zlib_level) {
  if (zlib_level < 0 || zlib_level > 9)
    throw WriteError(target.path + ": zlib level " + std::to_string(zlib_level) + " is not 0..9");
  return VtuWriter(m, target, encoding, zlib_level).write();
}

}  // namespace meshdock::mesh
