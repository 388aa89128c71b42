// PLY writer, ascii or binary_little_endian. element vertex: x y z (float or double, as the
// points) then every scalar point_data array as a property; element face: vertex_indices (list
// uint8 int32; int32 counts for faces past 255 points) then every scalar cell_data array. Faces
// only (triangle, quad, polygon, fixed or ragged): any other block is a WriteError naming it. PLY
// has no 64-bit integers: int64 / uint64 data go as int / uint when every value fits and as double
// otherwise (noted either way); bool as uint8 (noted); arrays that are not scalar, names with
// whitespace, field data and regions are noted and not written.
#include <algorithm>
#include <climits>

#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

struct Prop {
  std::string name;
  Array a;
  DType out;  // what the file holds
};

// The sized names (PLY's second spelling, what meshio writes): meshio 5 reads no "char",
// "short" or "ushort" in binary files and takes "uchar" for int8.
const char* ply_type(DType d) {
  if (d.code == 0) return d.bits == 8 ? "int8" : d.bits == 16 ? "int16" : "int32";
  if (d.code == 1) return d.bits == 8 ? "uint8" : d.bits == 16 ? "uint16" : "uint32";
  return d.bits == 32 ? "float" : "double";
}

class PlyWriter : wr::WriterState {
 public:
  using WriterState::WriterState;

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    std::size_t widest = 0;
    for (std::size_t b = 0; b < m_.cells.size(); ++b) {
      if (!wr::is_face_block(m_.cells[b]))
        throw WriteError(path_ + ": " + wr::block_name(m_, b) +
                         " cannot be written to PLY, which holds polygonal faces only; write it "
                         "as " +
                         wr::formats_for(m_.cells[b]));
      wr::each_cell(m_.cells[b],
                    [&](const std::int64_t*, std::size_t n) { widest = std::max(widest, n); });
    }
    if (m_.num_points() > INT32_MAX)
      throw WriteError(path_ + ": " + std::to_string(m_.num_points()) +
                       " points, more than PLY's int vertex indices reach");
    wr::note_point_dims(m_, "PLY", notes_);
    std::vector<Prop> vprops, fprops;
    for (const auto& [name, a] : m_.point_data) add(vprops, "point_data", name, a);
    for (const auto& [name, parts] : m_.cell_data) {
      if (parts.empty()) continue;
      if (first_mismatch(parts) != parts.size()) {
        notes_.push_back("cell_data '" + name +
                         "' is not written: its blocks differ in dtype or shape, and PLY holds "
                         "one property over all faces");
        continue;
      }
      add(fprops, "cell_data", name, concat_rows(parts));
    }
    wr::note_dropped(m_, "PLY", notes_, wr::kFieldData | wr::kRegions);

    const bool pf32 = m_.points.dtype() == kFloat32 && m_.points.dim(1) == 3;
    std::string h = "ply\nformat ";
    h += binary_ ? "binary_little_endian 1.0\n" : "ascii 1.0\n";
    h += "comment written by meshdock\nelement vertex " + std::to_string(m_.num_points()) + "\n";
    for (const char* c : {"x", "y", "z"})
      h += std::string("property ") + (pf32 ? "float " : "double ") + c + "\n";
    for (const auto& p : vprops)
      h += "property " + std::string(ply_type(p.out)) + " " + p.name + "\n";
    const bool wide = widest > 255;
    if (!m_.cells.empty()) {
      h += "element face " + std::to_string(m_.num_cells()) + "\n";
      h += wide ? "property list int32 int32 vertex_indices\n"
                : "property list uint8 int32 vertex_indices\n";
      for (const auto& p : fprops)
        h += "property " + std::string(ply_type(p.out)) + " " + p.name + "\n";
    }
    h += "end_header\n";

    OutFile out(target_);
    wr::Sink s(out);
    s.put(h);
    const auto np = m_.num_points();
    const bool raw_points = binary_ && vprops.empty() && m_.points.dim(1) == 3 &&
                            (pf32 || m_.points.dtype() == kFloat64);
    if (raw_points)  // the points' own bytes are the vertex rows
      s.le_run(static_cast<const char*>(m_.points.data()), m_.points.nbytes());
    for (std::int64_t i = 0; !raw_points && i < np; ++i) {
      for (int k = 0; k < 3; ++k) {
        if (binary_) {
          if (pf32)
            s.le(m_.points.as<float>()[3 * i + k]);
          else
            s.le(wr::coord(m_, i, k));
        } else {
          if (pf32)
            s.text(m_.points.as<float>()[3 * i + k]);
          else
            s.text(wr::coord(m_, i, k));
          s.put(' ');
        }
      }
      for (const auto& p : vprops) value(s, p, static_cast<std::size_t>(i));
      end_row(s);
    }
    std::size_t face = 0;
    for (const auto& b : m_.cells) {
      if (binary_ && !wide && fprops.empty() && !b.ragged()) {
        // Fixed faces with nothing after their ids: rows of the count byte and int32 ids.
        const auto npc = static_cast<std::size_t>(b.connectivity.dim(1));
        const auto* c = b.connectivity.as<std::int64_t>();
        s.rows(static_cast<std::size_t>(b.size()), 1 + 4 * npc, [&](char* row, std::size_t i) {
          row[0] = static_cast<char>(npc);
          for (std::size_t k = 0; k < npc; ++k) {
            const auto id = static_cast<std::int32_t>(c[i * npc + k]);
            std::memcpy(row + 1 + 4 * k, &id, 4);
          }
        });
        face += static_cast<std::size_t>(b.size());
        continue;
      }
      wr::each_cell(b, [&](const std::int64_t* c, std::size_t n) {
        if (binary_) {
          if (wide)
            s.le(static_cast<std::int32_t>(n));
          else
            s.le(static_cast<std::uint8_t>(n));
          for (std::size_t k = 0; k < n; ++k) s.le(static_cast<std::int32_t>(c[k]));
        } else {
          s.text(n);
          for (std::size_t k = 0; k < n; ++k) {
            s.put(' ');
            s.text(c[k]);
          }
          s.put(' ');
        }
        for (const auto& p : fprops) value(s, p, face);
        ++face;
        end_row(s);
      });
    }
    s.flush();
    out.commit();
    return std::move(notes_);
  }

 private:
  void add(std::vector<Prop>& to, const char* kind, const std::string& name, const Array& a) {
    const auto what = std::string(kind) + " '" + name + "'";
    const bool scalar = a.ndim() == 1 || (a.ndim() == 2 && a.dim(1) == 1);
    if (!scalar) {
      notes_.push_back(what + " is not written: PLY properties are scalars");
      return;
    }
    if (name.empty() ||
        std::any_of(name.begin(), name.end(), [](unsigned char c) { return c <= ' '; })) {
      notes_.push_back(what + " is not written: PLY names cannot hold whitespace");
      return;
    }
    if (name == "x" || name == "y" || name == "z" || name == "vertex_indices") {
      notes_.push_back(what + " is not written: PLY uses that name itself");
      return;
    }
    const auto d = a.dtype();
    DType out = d;
    if (d.code == 6) {
      out = DType{1, 8, 1};
      notes_.push_back(what + ": bool written as uint8");
    } else if (d.code == 2 && d.bits != 32 && d.bits != 64) {
      notes_.push_back(what + " is not written: PLY has no " + std::to_string(d.bits) +
                       "-bit floats");
      return;
    } else if (d.code <= 1 && d.bits == 64) {
      bool fits = true;
      for (std::size_t i = 0; i < a.size() && fits; ++i) {
        if (d.code == 0) {
          const auto v = int_at(a, i);
          fits = v >= INT32_MIN && v <= INT32_MAX;
        } else {
          fits = static_cast<std::uint64_t>(int_at(a, i)) <= UINT32_MAX;
        }
      }
      out = fits ? DType{d.code, 32, 1} : kFloat64;
      notes_.push_back(what +
                       (fits ? (d.code == 0 ? " written as int32" : " written as uint32")
                             : " written as double") +
                       ": PLY has no 64-bit integers");
    } else if (d.code > 2) {
      notes_.push_back(what + " is not written: PLY has no such type");
      return;
    }
    to.push_back({name, a, out});
  }

  void value(wr::Sink& s, const Prop& p, std::size_t i) {
    const auto in = p.a.dtype();
    if (!binary_) {
      if (p.out.code == 2 && in.code != 2)
        s.text(value_at(p.a, i));
      else
        wr::text_value(s, p.a, i);
      s.put(' ');
      return;
    }
    if (in == p.out) {
      const auto item = p.a.itemsize();
      s.str().append(static_cast<const char*>(p.a.data()) + i * item, item);
    } else if (p.out.code == 2) {
      s.le(value_at(p.a, i));
    } else if (p.out.bits == 32) {
      s.le(static_cast<std::int32_t>(int_at(p.a, i)));
    } else {
      s.le(static_cast<std::uint8_t>(int_at(p.a, i)));  // bool
    }
  }

  void end_row(wr::Sink& s) {
    if (!binary_) s.str().back() = '\n';
    s.maybe_flush();
  }
};

}  // namespace

std::vector<std::string> write_ply(const Mesh& m, const OutTarget& target, bool binary) {
  return PlyWriter(m, target, binary).write();
}

}  // namespace meshdock::mesh
