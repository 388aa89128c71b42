// VTK XML UnstructuredGrid writer: cells in VTK order (meshio's, but wedge), polyhedra as faces /
// faceoffsets; the rest of the file (encodings, field data with regions and block sizes, points,
// point and cell data) is vtk_xml.hpp's, shared with the VTP writer.
#include <set>

#include "daemon/mesh/readers/vtk_cells.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/vtk_xml.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

class VtuWriter {
 public:
  VtuWriter(const Mesh& m, const OutTarget& target, VtuEncoding enc, int level)
      : m_(m), path_(target.path), file_(m, target, enc, level, "VTU") {}

  std::vector<std::string> write() {
    validate_mesh(m_, path_);
    bool runs_only = true;  // would a reader's type runs give these blocks back?
    for (std::size_t b = 1; b < m_.cells.size(); ++b)
      runs_only &= m_.cells[b].type != m_.cells[b - 1].type;
    std::vector<std::int64_t> sizes;
    if (!runs_only)
      for (const auto& blk : m_.cells) sizes.push_back(blk.size());
    file_.add_field_data(m_.regions, sizes);
    file_.add_points();
    build_cells(file_.section("Cells"));
    file_.add_point_data();
    file_.add_cell_data(wr::block_order(m_));
    return file_.write("UnstructuredGrid", "NumberOfPoints=\"" + std::to_string(m_.num_points()) +
                                               "\" NumberOfCells=\"" +
                                               std::to_string(m_.num_cells()) + "\"");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { file_.fail(what); }
  wr::XmlArray out_array(std::string name, const Array& a, const std::string& what) {
    return file_.array(std::move(name), a, what);
  }

  void build_cells(std::vector<wr::XmlArray>& cells) {
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

  const Mesh& m_;
  const std::string& path_;
  wr::VtkXmlFile file_;
};

}  // namespace

std::vector<std::string> write_vtu(const Mesh& m, const OutTarget& target, VtuEncoding encoding,
                                   int zlib_level) {
  return VtuWriter(m, target, encoding, zlib_level).write();
}

}  // namespace meshdock::mesh
