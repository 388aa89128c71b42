// Netgen writer (.vol; .vol.gz gzipped through zlib's deflate), what meshio 5.0's netgen writer
// writes, so that both readers read it back with the same arrays:
// - "mesh3d", dimension (the points' 2 or 3 coordinates), geomtype 0;
// - surfaceelements "1 index 0 0 np nodes" (triangle, quad, triangle6, quad8), volumeelements
//   "index np nodes" (tetra, pyramid, wedge, hexahedron, tetra10, pyramid13, wedge15,
//   hexahedron20), edgesegmentsgi2 "index 0 p1 p2 -1 -1 0 0 1 0 1 0" (line), points (3 values a
//   row, 2-D padded with 0; shortest round-trip text), pointelements "p index" (vertex): nodes
//   1-based in Netgen's order (meshio's permutations, inverted). Any other block is a WriteError
//   naming it (meshio's writer fails on it too);
// - index: cell_data "netgen:index", else the first integer cell data of one value a cell
//   (meshio's choice), else 1 (the others are noted);
// - materials / bcnames / cd2names / cd3names: the names of field_data [index, dim] entries
//   (gmsh's and read_netgen's) of each codimension, else, as meshio, "cd<codim>_<index>" for
//   every index the cells of that dimension have; a name with blanks in it cannot be read back
//   and is noted, not written. Point data, other field data and regions are noted.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/readers/netgen_types.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

using NetgenType = netgen::Type;
using netgen::kTypes;

const NetgenType* netgen_type(const CellBlock& b) {
  if (b.ragged() || b.face_offsets.valid()) return nullptr;
  for (const auto& t : kTypes)
    if (b.type == t.meshio && b.connectivity.dim(1) == static_cast<std::int64_t>(t.nodes))
      return &t;
  return nullptr;
}

constexpr std::array<const char*, 4> kCodims{"materials", "bcnames", "cd2names", "cd3names"};
// The most name lines one section gets (meshio writes one for every index up to the largest).
constexpr std::int64_t kMaxNames = std::int64_t{1} << 24;

// The text, in 1 MiB pieces, to the file as it is or through zlib's deflate (gzip wrapper).
class TextOut {
 public:
  TextOut(OutFile& out, bool gzip, const std::string& path) : out_(out), path_(path) {
    s_.reserve(kChunk + 4096);
    if (!gzip) return;
    zbuf_.resize(kChunk);  // before the stream: nothing to end if this throws
    auto z = std::make_unique<z_stream>();
    if (deflateInit2(z.get(), 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw WriteError(path_ + ": zlib could not start");
    }
    z_.reset(z.release());  // started: from here the deleter ends it
  }
  std::string& str() { return s_; }
  void put(std::string_view x) { s_.append(x); }
  void put(char c) { s_ += c; }
  template <typename T>
  void text(T v) {
    append_number(s_, v);
  }
  void maybe_flush() {
    if (s_.size() >= kChunk) flush(false);
  }
  void finish() { flush(true); }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  OutFile& out_;
  const std::string& path_;
  std::string s_;
  struct DeflateEnd {
    void operator()(z_stream* z) const {
      deflateEnd(z);
      std::default_delete<z_stream>()(z);
    }
  };
  std::unique_ptr<z_stream, DeflateEnd> z_;
  std::string zbuf_;

  void flush(bool last) {
    if (!z_) {
      out_.put(s_);
      s_.clear();
      return;
    }
    z_->next_in = reinterpret_cast<Bytef*>(s_.data());
    z_->avail_in = static_cast<uInt>(s_.size());
    while (true) {
      z_->next_out = reinterpret_cast<Bytef*>(zbuf_.data());
      z_->avail_out = static_cast<uInt>(zbuf_.size());
      const int rc = deflate(z_.get(), last ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) throw WriteError(path_ + ": zlib's deflate failed");
      out_.write(zbuf_.data(), zbuf_.size() - z_->avail_out);
      if (last ? rc == Z_STREAM_END : (z_->avail_in == 0 && z_->avail_out != 0)) break;
    }
    s_.clear();
  }
};

class NetgenWriter : wr::WriterState {
 public:
  NetgenWriter(const Mesh& m, const OutTarget& target, bool gzip)
      : WriterState(m, target, false), gzip_(gzip) {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    dim_ = m_.points.dim(1);
    if (dim_ != 2 && dim_ != 3)
      throw WriteError(path_ + ": Netgen holds 2-D or 3-D points; these have " +
                       std::to_string(dim_) + " coordinates");
    types_.resize(m_.cells.size());
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      types_[b] = netgen_type(m_.cells[b]);
      if (!types_[b])
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written: Netgen holds vertex, line, triangle, triangle6, "
                         "quad, quad8, tetra, tetra10, pyramid, pyramid13, wedge, wedge15, "
                         "hexahedron and hexahedron20 cells (write VTU or MSH)");
    }
    pick_index();
    OutFile out(target_);
    TextOut s(out, gzip_, path_);
    s.put("# Generated by meshdock\nmesh3d\n\ndimension\n" + std::to_string(dim_) +
          "\n\ngeomtype\n0\n");
    s.put("\n# surfnr    bcnr   domin  domout      np      p1      p2      p3\nsurfaceelements\n");
    cells(s, 2);
    s.put("\n#  matnr      np      p1      p2      p3      p4\nvolumeelements\n");
    cells(s, 3);
    s.put(
        "\n# surfid  0   p1   p2   trignum1    trignum2   domin/surfnr1    domout/surfnr2   "
        "ednr1   dist1   ednr2   dist2\nedgesegmentsgi2\n");
    cells(s, 1);
    s.put("\n#          X             Y             Z\npoints\n" + std::to_string(m_.num_points()) +
          "\n");
    for (std::int64_t i = 0; i < m_.num_points(); ++i) {
      for (int k = 0; k < 3; ++k) {
        if (k) s.put(' ');
        s.text(wr::coord(m_, i, k));
      }
      s.put('\n');
      s.maybe_flush();
    }
    s.put("\n#          pnum             index\npointelements\n");
    cells(s, 0);
    for (int codim = 0; codim <= dim_; ++codim) names(s, codim);
    s.put("\nendmesh\n");
    s.finish();
    out.commit();
    note_rest();
    return std::move(notes_);
  }

 private:
  bool gzip_;
  int dim_ = 3;
  std::vector<const NetgenType*> types_;
  const std::vector<Array>* index_ = nullptr;
  std::string index_name_;
  std::set<std::string> names_written_;

  // "netgen:index", else the first integer cell data of one value a cell (meshio's choice).
  void pick_index() {
    auto ok = [](const std::vector<Array>& blocks) {
      for (const auto& a : blocks)
        if (!wr::is_integer_column(a)) return false;
      return true;
    };
    if (const auto it = m_.cell_data.find("netgen:index");
        it != m_.cell_data.end() && ok(it->second))
      index_name_ = it->first;
    for (const auto& [key, blocks] : m_.cell_data)
      if (index_name_.empty() && ok(blocks)) index_name_ = key;
    if (!index_name_.empty()) index_ = &m_.cell_data.at(index_name_);
  }

  std::int64_t index(std::size_t b, std::int64_t i) const {
    return index_ ? int_at((*index_)[b], static_cast<std::size_t>(i)) : 1;
  }

  // Every cell of dimension `dim`: the count, then a row each.
  void cells(TextOut& s, int dim) {
    std::int64_t n = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b)
      if (types_[b]->dim == dim) n += m_.cells[b].size();
    s.text(n);
    s.put('\n');
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& t = *types_[b];
      if (t.dim != dim) continue;
      const auto* c = m_.cells[b].connectivity.as<std::int64_t>();
      const auto perm = netgen::from_vtk(t);
      const auto npc = static_cast<std::int64_t>(t.nodes);
      for (std::int64_t i = 0; i < m_.cells[b].size(); ++i, c += npc) {
        const auto ix = index(b, i);
        if (dim == 2) {
          s.put("1 ");
          s.text(ix);
          s.put(" 0 0 ");
          s.text(npc);
        } else if (dim == 3) {
          s.text(ix);
          s.put(' ');
          s.text(npc);
        } else if (dim == 1) {
          s.text(ix);
          s.put(" 0");
        }
        for (std::int64_t k = 0; k < npc; ++k) {
          if (k || dim != 0) s.put(' ');
          s.text(c[perm[static_cast<std::size_t>(k)]] + 1);
        }
        if (dim == 1) s.put(" -1 -1 0 0 1 0 1 0");
        if (dim == 0) {
          s.put(' ');
          s.text(ix);
        }
        s.put('\n');
        s.maybe_flush();
      }
    }
  }

  // A name Netgen's line "index name" reads back as itself.
  static bool usable_name(const std::string& s) {
    return !s.empty() && s.find_first_of(" \t\r\n") == std::string::npos;
  }

  // The names section of codimension `codim`: field_data [index, dim - codim] entries, else
  // meshio's made-up "cd<codim>_<index>" for the indices of that dimension's cells.
  void names(TextOut& s, int codim) {
    const int edim = dim_ - codim;
    std::map<std::int64_t, std::string> data;
    for (const auto& [name, a] : m_.field_data) {
      if (!wr::is_integer(a) || a.size() != 2 || int_at(a, 1) != edim) continue;
      if (!usable_name(name)) {
        notes_.push_back("field_data '" + name +
                         "' is not written: a Netgen name has no blanks in it");
        continue;
      }
      data[int_at(a, 0)] = name;
      names_written_.insert(name);
    }
    if (data.empty() && index_) {
      for (std::size_t b = 0; b < m_.cells.size(); ++b) {
        if (types_[b]->dim != edim) continue;
        for (std::int64_t i = 0; i < m_.cells[b].size(); ++i) {
          const auto ix = index(b, i);
          if (!data.count(ix)) data[ix] = "cd" + std::to_string(codim) + "_" + std::to_string(ix);
        }
      }
    }
    if (data.empty()) return;
    const auto ncd = data.rbegin()->first;
    if (ncd > kMaxNames) {
      notes_.push_back(std::string(kCodims[static_cast<std::size_t>(codim)]) +
                       " is not written: its largest index " + std::to_string(ncd) +
                       " would take a line for every index up to it");
      return;
    }
    for (const auto& [ix, name] : data)
      if (ix < 1)
        notes_.push_back("the name '" + name + "' of index " + std::to_string(ix) +
                         " is not written: Netgen's names are of indices from 1");
    s.put("\n");
    s.put(kCodims[static_cast<std::size_t>(codim)]);
    s.put("\n");
    s.text(ncd);
    s.put('\n');
    for (std::int64_t ix = 1; ix <= ncd; ++ix) {
      s.text(ix);
      s.put(' ');
      if (const auto it = data.find(ix); it != data.end()) s.put(it->second);
      s.put('\n');
      s.maybe_flush();
    }
  }

  void note_rest() {
    std::vector<wr::KeptNames> kept;
    if (!index_name_.empty()) kept.push_back({wr::kCellData, {index_name_}});
    std::vector<std::string_view> fields(names_written_.begin(), names_written_.end());
    kept.push_back({wr::kFieldData, fields});
    kept.push_back({wr::kRegions, fields});
    wr::note_dropped(m_, "Netgen", notes_, wr::kAll, kept);
    if (index_name_ != "netgen:index" && !index_name_.empty())
      notes_.push_back("cell_data '" + index_name_ +
                       "' is written as Netgen's element index (read back as netgen:index)");
  }
};

}  // namespace

std::vector<std::string> write_netgen(const Mesh& m, const OutTarget& target, bool gzip) {
  return NetgenWriter(m, target, gzip).write();
}

}  // namespace meshdock::mesh
