// What the VTK XML writers (VTU, VTP) share: a file of one Piece, little-endian, header_type
// UInt64, version 0.1 (end offsets, no leading 0); every DataArray ascii inline, or appended raw
// / zlib-compressed (independent 1 MiB blocks, compressed in parallel). The writer adds its
// arrays section by section; field data, points, point and cell data are made the same way for
// every grid type, the cell sections are each writer's own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/mesh/array.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/writers/out_file.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh::wr {

// One DataArray: its values and, for zlib, the compressed bytes (header + blocks).
struct XmlArray {
  std::string name;
  Array a;
  std::int64_t tuples = 0, components = 1;
  std::string packed;
  std::uint64_t offset = 0;  // in the appended data
};

class VtkXmlFile {
 public:
  // `format` names the format in messages and notes ("VTU", "VTP").
  VtkXmlFile(const Mesh& m, const OutTarget& target, VtuEncoding enc, int zlib_level,
             const char* format);

  [[noreturn]] void fail(const std::string& what) const;

  // An array to write; WriteError naming `what` for a dtype VTK cannot hold, a note for bool
  // (as UInt8) and for more than 2 dimensions (read back as 2-d).
  XmlArray array(std::string name, const Array& a, const std::string& what);

  // FieldData (before the Piece): every field_data array, then `regions` as meshdock:region
  // arrays, then `block_sizes` as meshdock:block_sizes unless it is empty (region_fields.hpp).
  void add_field_data(const std::vector<Region>& regions,
                      const std::vector<std::int64_t>& block_sizes);
  // <Points>: the points, with a note when they have fewer than 3 coordinates (padded with 0).
  void add_points();
  // <PointData>: every point_data array.
  void add_point_data();
  // <CellData>: every cell_data array, its blocks' parts stacked in the order `blocks` gives
  // (the order the file holds the cells in); WriteError when they differ in dtype or shape.
  void add_cell_data(const std::vector<std::size_t>& blocks);
  // A section inside the Piece (made empty at first use), written in the order first asked for.
  std::vector<XmlArray>& section(const std::string& name);

  // Writes <VTKFile type="grid"><grid>[FieldData]<Piece piece_attributes>sections</Piece>... and
  // commits it; returns the notes.
  std::vector<std::string> write(std::string_view grid, const std::string& piece_attributes);

  std::vector<std::string> notes;

 private:
  void compress(XmlArray& o) const;
  std::uint64_t appended_size(const XmlArray& a) const;
  void emit(OutFile& out, std::string_view grid, const std::string& piece_attributes);
  void emit_array(OutFile& out, const XmlArray& a, bool field) const;

  const Mesh& m_;
  const OutTarget& target_;
  const std::string& path_;
  VtuEncoding enc_;
  int level_;
  const char* format_;
  std::vector<XmlArray> field_;
  std::vector<std::pair<std::string, std::vector<XmlArray>>> sections_;
};

// The block order of `m` as the identity: 0, 1, ..., size - 1.
std::vector<std::size_t> block_order(const Mesh& m);

}  // namespace meshdock::mesh::wr
