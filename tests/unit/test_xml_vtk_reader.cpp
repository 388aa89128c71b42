// The XML VTK family beyond UnstructuredGrid (vtu_reader): PolyData, the structured grids,
// .pvtu and String arrays, on small files written by hand (the files VTK writes are checked
// against VTK itself in tests/python/test_read_xml_vtk.py) and on the VTK-written ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::vector<std::int64_t> ints(const mesh::Array& a) {
  std::vector<std::int64_t> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mesh::int_at(a, i);
  return v;
}

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/meshes/" + name;
}

const char* kPoly = R"(<VTKFile type="PolyData" version="0.1" byte_order="LittleEndian">
<PolyData>
<FieldData><Array type="String" Name="title" NumberOfTuples="1" format="ascii">104 105 0</Array>
</FieldData>
<Piece NumberOfPoints="5" NumberOfVerts="0" NumberOfLines="1" NumberOfStrips="1" NumberOfPolys="0">
<Points><DataArray type="Float32" NumberOfComponents="3" format="ascii">
0 0 0 1 0 0 0 1 0 1 1 0 2 1 0</DataArray></Points>
<CellData><DataArray type="Int32" Name="c" format="ascii">7 9</DataArray>
<DataArray type="String" Name="names" format="ascii">97 0 98 0</DataArray></CellData>
<Lines><DataArray type="Int64" Name="connectivity" format="ascii">0 1 3</DataArray>
<DataArray type="Int64" Name="offsets" format="ascii">3</DataArray></Lines>
<Strips><DataArray type="Int32" Name="connectivity" format="ascii">0 1 2 3 4</DataArray>
<DataArray type="Int32" Name="offsets" format="ascii">5</DataArray></Strips>
</Piece></PolyData></VTKFile>)";

TEST(XmlVtkReader, PolyDataSplitsPolyLinesAndStripsAndSkipsStrings) {
  const auto m = mesh::read_vtu_bytes(kPoly, "poly.vtp");
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "line");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 1, 3}));
  EXPECT_EQ(m.cells[1].type, "triangle");
  // VTK's decomposition: (0 1 2), (2 1 3) flipped, (2 3 4).
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 2, 2, 1, 3, 2, 3, 4}));
  EXPECT_EQ(ints(m.cell_data.at("c")[0]), (std::vector<std::int64_t>{7, 7}));
  EXPECT_EQ(ints(m.cell_data.at("c")[1]), (std::vector<std::int64_t>{9, 9, 9}));
  EXPECT_EQ(m.cell_data.count("names"), 0u);
  EXPECT_TRUE(m.field_data.empty());
  std::string notes;
  for (const auto& n : m.notes) notes += n + "\n";
  EXPECT_NE(notes.find("string array 'title' in <FieldData> skipped"), std::string::npos) << notes;
  EXPECT_NE(notes.find("string array 'names' in <CellData> skipped"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 poly-lines split into 2 line cells"), std::string::npos) << notes;
  EXPECT_NE(notes.find("1 triangle strips split into 3 triangles"), std::string::npos) << notes;
}

TEST(XmlVtkReader, PolyDataOffsetOutsideConnectivityNamesSection) {
  std::string bad = kPoly;
  bad.replace(bad.find(">5</DataArray></Strips>"), 2, ">9");
  try {
    mesh::read_vtu_bytes(bad, "bad.vtp");
    FAIL() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.vtp:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("<Strips> offset 9 of cell 0"), std::string::npos)
        << e.what();
  }
}

TEST(XmlVtkReader, ImageDataPointsAndHexahedra) {
  const std::string vti = R"(<VTKFile type="ImageData" version="0.1">
<ImageData WholeExtent="0 1 0 1 1 2" Origin="10 20 30" Spacing="1 2 3">
<Piece Extent="0 1 0 1 1 2"><CellData><DataArray type="UInt8" Name="m" format="ascii">4
</DataArray></CellData></Piece></ImageData></VTKFile>)";
  const auto m = mesh::read_vtu_bytes(vti, "a.vti");
  ASSERT_EQ(m.num_points(), 8);
  const double* p = m.points.as<double>();
  EXPECT_EQ((std::vector<double>(p, p + 6)), (std::vector<double>{10, 20, 33, 11, 20, 33}));
  EXPECT_EQ((std::vector<double>(p + 21, p + 24)), (std::vector<double>{11, 22, 36}));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "hexahedron");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 3, 2, 4, 5, 7, 6}));
  EXPECT_EQ(ints(m.cell_data.at("m")[0]), (std::vector<std::int64_t>{4}));
}

TEST(XmlVtkReader, HugeExtentIsRefusedBeforeAllocation) {
  const std::string vti = R"(<VTKFile type="ImageData" version="0.1">
<ImageData WholeExtent="0 2999 0 2999 0 2999" Origin="0 0 0" Spacing="1 1 1">
<Piece Extent="0 2999 0 2999 0 2999"></Piece></ImageData></VTKFile>)";
  EXPECT_THROW(mesh::read_vtu_bytes(vti, "huge.vti"), mesh::SizeLimitError);
}

TEST(XmlVtkReader, RectilinearGridFromFile) {
  const auto m = mesh::read_mesh(data("rect2d.vtk-ascii.vtr"));
  ASSERT_EQ(m.num_points(), 12);
  const double* p = m.points.as<double>();
  // x = 0 0.5 2 3.25, y = 1 1.1 1.5 (Float32), z = -1: point 5 is (x[1], y[1], z[0]).
  EXPECT_EQ(p[15], 0.5);
  EXPECT_EQ(p[16], static_cast<double>(1.1f));
  EXPECT_EQ(p[17], -1.0);
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "quad");
  const auto conn = ints(m.cells[0].connectivity);
  ASSERT_EQ(conn.size(), 6u * 4);
  EXPECT_EQ((std::vector<std::int64_t>(conn.begin(), conn.begin() + 8)),
            (std::vector<std::int64_t>{0, 1, 5, 4, 1, 2, 6, 5}));
}

TEST(XmlVtkReader, PvtuConcatenatesItsPieces) {
  const auto m = mesh::read_mesh(data("pieces-ascii.pvtu"));
  const auto a = mesh::read_mesh(data("pieces-ascii_0.vtu"));
  const auto b = mesh::read_mesh(data("pieces-ascii_1.vtu"));
  EXPECT_EQ(m.num_points(), a.num_points() + b.num_points());
  EXPECT_EQ(m.num_cells(), a.num_cells() + b.num_cells());
  ASSERT_EQ(m.cells.size(), 1u);
  const auto got = ints(m.cells[0].connectivity);
  const auto first = ints(a.cells[0].connectivity), second = ints(b.cells[0].connectivity);
  ASSERT_EQ(got.size(), first.size() + second.size());
  for (std::size_t i = 0; i < second.size(); ++i)
    ASSERT_EQ(got[first.size() + i], second[i] + a.num_points()) << i;
  EXPECT_EQ(m.point_data.at("h").size(), static_cast<std::size_t>(m.num_points()));
  EXPECT_EQ(m.notes.back().rfind("2 pieces of ", 0), 0u);
}

TEST(XmlVtkReader, PvtuWithoutAnOpenerIsAnError) {
  const std::string pvtu = R"(<VTKFile type="PUnstructuredGrid" version="0.1">
<PUnstructuredGrid><Piece Source="a.vtu"/></PUnstructuredGrid></VTKFile>)";
  EXPECT_THROW(mesh::read_vtu_bytes(pvtu, "x.pvtu"), mesh::ReadError);
}

}  // namespace
