// Legacy VTK writer: "# vtk DataFile Version 5.1" UNSTRUCTURED_GRID (what meshio 5 and VTK 9
// write), ASCII or BINARY (big-endian, as the format requires). POINTS in the points' own float
// type, CELLS as OFFSETS / CONNECTIVITY vtktypeint64 in VTK node order, CELL_TYPES int,
// POINT_DATA / CELL_DATA as FIELD arrays in each array's own dtype (cell data concatenated over
// blocks), field data and regions (meshdock:region:... arrays, as in VTU) as a dataset FIELD
// after CELL_TYPES (where meshio and VTK read it as field data), with meshdock:block_sizes when
// the cell types alone would merge blocks (as VTU; read_vtk splits them again). Names are
// %XX-encoded as VTK's writer does (spaces, '%', non-ASCII bytes); an empty name is noted and
// skipped. Polyhedra are refused (VTU holds them).
#include <algorithm>

#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/region_fields.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// Integers by the names VTK's own writer uses: VTK's legacy reader (and so ParaView) knows
// "vtktypeint64" / "vtktypeuint64" but no other vtktype spelling, and refuses the whole file on
// "vtktypeint32". meshio 5 knows only the vtktype spellings (and takes "int" for int64), so it
// reads the 64-bit and float arrays of what is written here but not the narrower integers;
// docs/architecture.md "Writers" says so, and VTU is what both read losslessly.
const char* legacy_type(DType d) {
  if (d.lanes != 1) return nullptr;
  if (d.code == 0)
    return d.bits == 8    ? "signed_char"
           : d.bits == 16 ? "short"
           : d.bits == 32 ? "int"
           : d.bits == 64 ? "vtktypeint64"
                          : nullptr;
  if (d.code == 1 || (d.code == 6 && d.bits == 8))  // bool as uint8 ("bit" is packed bits)
    return d.bits == 8    ? "unsigned_char"
           : d.bits == 16 ? "unsigned_short"
           : d.bits == 32 ? "unsigned_int"
           : d.bits == 64 ? "vtktypeuint64"
                          : nullptr;
  if (d.code == 2) return d.bits == 32 ? "float" : d.bits == 64 ? "double" : nullptr;
  return nullptr;
}

// A name as VTK's writer puts it (vtkDataWriter::EncodeString): a space, '%', '"' and every
// byte outside '!'..'~' as %XX (upper-case hex), which VTK's reader and read_vtk decode, so a
// name with spaces or UTF-8 reads back as it was.
std::string encode_name(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 33 || c > 126 || c == '"' || c == '%') {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

class VtkWriter : wr::WriterState {
 public:
  using WriterState::WriterState;

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    check();
    OutFile out(target_);
    wr::Sink s(out);
    s.put("# vtk DataFile Version 5.1\nwritten by meshdock\n");
    s.put(binary_ ? "BINARY\n" : "ASCII\n");
    s.put("DATASET UNSTRUCTURED_GRID\n");
    points(s);
    cells(s);
    dataset_fields(s);
    data(s);
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw WriteError(path_ + ": " + what); }

  void check() {
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      const auto& blk = m_.cells[b];
      if (blk.face_offsets.valid())
        fail(block_name(b) + ": legacy VTK polyhedra are not written; write it as VTU");
      if (!vtk_type_number(blk.type))
        fail(block_name(b) + " has no VTK cell type; write it as MSH or VTU");
    }
  }
  std::string block_name(std::size_t b) const { return wr::block_name(m_, b); }

  // One array: `tuples` rows of `comps` values, ascii (a row a line) or big-endian.
  void values(wr::Sink& s, const Array& a, std::int64_t comps) {
    if (binary_) {
      wr::be_array(s, a);
      s.put('\n');
      return;
    }
    const std::size_t n = a.size();
    for (std::size_t i = 0; i < n; ++i) {
      wr::text_value(s, a, i);
      s.put((i + 1) % static_cast<std::size_t>(comps) == 0 ? '\n' : ' ');
      if ((i & 1023) == 0) s.maybe_flush();
    }
  }

  void points(wr::Sink& s) {
    const auto np = m_.num_points();
    Array pts = m_.points;
    if (pts.dim(1) != 3 || (pts.dtype() != kFloat64 && pts.dtype() != kFloat32)) {
      wr::note_point_dims(m_, "legacy VTK", notes_);
      pts = Array::of<double>({np, 3});
      for (std::int64_t i = 0; i < np; ++i)
        for (int k = 0; k < 3; ++k) pts.as<double>()[3 * i + k] = wr::coord(m_, i, k);
    }
    s.put("POINTS " + std::to_string(np) + " " + legacy_type(pts.dtype()) + "\n");
    values(s, pts, 3);
  }

  void cells(wr::Sink& s) {
    const auto nc = m_.num_cells();
    std::int64_t total = 0;
    for (const auto& b : m_.cells) total += static_cast<std::int64_t>(b.connectivity.size());
    s.put("CELLS " + std::to_string(nc + 1) + " " + std::to_string(total) + "\n");
    s.put("OFFSETS vtktypeint64\n");
    std::int64_t end = 0;
    auto id = [&](std::int64_t v) {
      if (binary_) {
        s.be(v);
      } else {
        s.text(v);
        s.put('\n');
      }
    };
    id(0);
    for (const auto& b : m_.cells) {
      if (binary_ && !b.ragged()) {  // a fixed block's offsets: in runs, no append a value
        const auto npc = b.connectivity.dim(1);
        s.run<std::int64_t>(static_cast<std::size_t>(b.size()), [&](std::int64_t* out,
                                                                    std::size_t at, std::size_t k) {
          for (std::size_t i = 0; i < k; ++i)
            out[i] = wr::Sink::swapped(end + static_cast<std::int64_t>(at + i + 1) * npc);
        });
        end += b.size() * npc;
        continue;
      }
      wr::each_cell(b, [&](const std::int64_t*, std::size_t n) {
        end += static_cast<std::int64_t>(n);
        id(end);
        s.maybe_flush();
      });
    }
    if (binary_) s.put('\n');
    s.put("CONNECTIVITY vtktypeint64\n");
    for (const auto& b : m_.cells) {
      const auto perm = b.ragged() ? std::span<const int>{} : vtk_order(b.type);
      if (binary_ && !b.ragged()) {
        wr::cell_ids<std::int64_t>(s, b, perm, 0, true);
        continue;
      }
      wr::each_cell(b, [&](const std::int64_t* c, std::size_t n) {
        for (std::size_t k = 0; k < n; ++k) {
          const auto v = c[perm.empty() ? k : static_cast<std::size_t>(perm[k])];
          if (binary_) {
            s.be(v);
          } else {
            s.text(v);
            s.put(k + 1 == n ? '\n' : ' ');
          }
        }
        s.maybe_flush();
      });
    }
    if (binary_) s.put('\n');
    s.put("CELL_TYPES " + std::to_string(nc) + "\n");
    for (const auto& b : m_.cells) {
      const auto t = static_cast<std::int32_t>(*vtk_type_number(b.type));
      if (binary_) {
        s.run<std::int32_t>(static_cast<std::size_t>(b.size()),
                            [t](std::int32_t* out, std::size_t, std::size_t k) {
                              std::fill_n(out, k, wr::Sink::swapped(t));
                            });
        continue;
      }
      for (std::int64_t i = 0; i < b.size(); ++i) {
        if (binary_) {
          s.be(t);
        } else {
          s.text(t);
          s.put('\n');
        }
        if ((i & 1023) == 0) s.maybe_flush();
      }
    }
    if (binary_) s.put('\n');
  }

  struct Field {
    std::string name;
    Array a;
  };

  // Checks one array's name and dtype; false (noted) when it cannot be written.
  bool writable(const std::string& name, const Array& a, const std::string& what) {
    if (name.empty()) {
      notes_.push_back(what + " is not written: legacy VTK names cannot be empty (VTU's can)");
      return false;
    }
    if (!legacy_type(a.dtype()))
      fail(what + " has dtype (code " + std::to_string(a.dtype().code) + ", " +
           std::to_string(a.dtype().bits) + " bits), which VTK cannot hold");
    if (a.dtype().code == 6) notes_.push_back(what + ": bool written as vtktypeuint8");
    if (a.ndim() > 2)
      notes_.push_back(what + ": " + std::to_string(a.ndim()) +
                       "-d array written as rows of components (reads back as 2-d)");
    return true;
  }

  void fields(wr::Sink& s, const std::string& head, const std::vector<Field>& fs) {
    if (fs.empty()) return;
    s.put(head);
    s.put("FIELD FieldData " + std::to_string(fs.size()) + "\n");
    for (const auto& f : fs) {
      const auto tuples = f.a.ndim() == 0 ? 1 : f.a.dim(0);
      const auto comps = tuples ? static_cast<std::int64_t>(f.a.size()) / tuples : 1;
      s.put(encode_name(f.name) + " " + std::to_string(comps) + " " + std::to_string(tuples) + " " +
            legacy_type(f.a.dtype()) + "\n");
      values(s, f.a, comps);
    }
  }

  void dataset_fields(wr::Sink& s) {
    std::vector<Field> fs;
    for (const auto& [name, a] : m_.field_data)
      if (writable(name, a, "field_data '" + name + "'")) fs.push_back({name, a});
    for (const auto& r : m_.regions) {
      const auto name = region_field_name(r);
      if (writable(name, r.entries, "region '" + r.name + "'")) fs.push_back({name, r.entries});
    }
    // The blocks, where a reader's runs of one cell type would merge two of them (VTU's rule).
    bool runs_only = true;
    for (std::size_t b = 1; b < m_.cells.size(); ++b)
      runs_only &= m_.cells[b].type != m_.cells[b - 1].type;
    if (!runs_only) {
      std::vector<std::int64_t> sizes;
      for (const auto& blk : m_.cells) sizes.push_back(blk.size());
      fs.push_back({std::string(kBlockSizesField), Array::from_vector(sizes)});
    }
    fields(s, "", fs);
  }

  void data(wr::Sink& s) {
    std::vector<Field> pd, cd;
    for (const auto& [name, a] : m_.point_data)
      if (writable(name, a, "point_data '" + name + "'")) pd.push_back({name, a});
    for (const auto& [name, parts] : m_.cell_data) {
      if (parts.empty()) continue;
      if (const auto b = first_mismatch(parts); b != parts.size())
        fail("cell_data '" + name + "' differs in dtype or shape between block 0 and block " +
             std::to_string(b) + "; VTK holds one array over all cells");
      if (writable(name, parts[0], "cell_data '" + name + "'"))
        cd.push_back({name, concat_rows(parts)});
    }
    fields(s, "POINT_DATA " + std::to_string(m_.num_points()) + "\n", pd);
    fields(s, "CELL_DATA " + std::to_string(m_.num_cells()) + "\n", cd);
  }
};

}  // namespace

std::vector<std::string> write_vtk(const Mesh& m, const OutTarget& target, bool binary) {
  return VtkWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
