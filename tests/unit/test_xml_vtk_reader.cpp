// The XML VTK family beyond UnstructuredGrid (vtu_reader): PolyData, the structured grids,
// structured files of several pieces, the parallel files (.pvtu .pvtp .pvts .pvtr .pvti) and
// String arrays, on small files written by hand (the files VTK writes are checked
// against VTK itself in tests/python/test_read_xml_vtk.py) and on the VTK-written ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::vector<std::int64_t> ints(const mesh::Array& a) {
  std::vector<std::int64_t> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mesh::int_at(a, i);
  return v;
}

std::string notes_of(const mesh::Mesh& m) {
  std::string s;
  for (const auto& n : m.notes) s += n + "\n";
  return s;
}

// Whether `text` (a mesh's notes, an error message) holds `part`; when not, the failure shows
// all of `text`, as the `<< text` of an EXPECT_NE(text.find(part), npos) would.
::testing::AssertionResult holds(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' is not in:\n" << text;
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
  const auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes, "string array 'title' in <FieldData> skipped"));
  EXPECT_TRUE(holds(notes, "string array 'names' in <CellData> skipped"));
  // The legacy reader's words (expand_vtk_cells), with the piece.
  EXPECT_TRUE(
      holds(notes, "piece 0: 1 poly-lines converted to 2 line segments (cell data repeated)"));
  EXPECT_TRUE(
      holds(notes, "piece 0: 1 triangle strips converted to 3 triangles (cell data repeated)"));
}

// An UnstructuredGrid of a poly-line, a voxel and a tetrahedron, a packed Bit array (inline
// base64: 1 0 1 in the high bits of one byte) and meshdock region fields naming the file's
// cells: 1 (the voxel) and 2 (the tetrahedron), 0 (the poly-line), a side of cell 1.
const char* kOddVtu = R"(<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian">
<UnstructuredGrid>
<FieldData>
<DataArray type="Int64" Name="meshdock:region:cell:3:1:vol" NumberOfTuples="2" format="ascii">1 2</DataArray>
<DataArray type="Int64" Name="meshdock:region:cell:1:2:curve" NumberOfTuples="1" format="ascii">0</DataArray>
<DataArray type="Int64" Name="meshdock:region:side:2:3:skin" NumberOfComponents="2" NumberOfTuples="1" format="ascii">1 0</DataArray>
</FieldData>
<Piece NumberOfPoints="12" NumberOfCells="3">
<Points><DataArray type="Float64" NumberOfComponents="3" format="ascii">
0 0 0 1 0 0 0 1 0 1 1 0 0 0 1 1 0 1 0 1 1 1 1 1 5 0 0 6 0 0 5 1 0 5 0 1</DataArray></Points>
<CellData><DataArray type="Int32" Name="c" format="ascii">7 8 9</DataArray>
<DataArray type="Bit" Name="b" format="binary">AQAAAKA=</DataArray></CellData>
<Cells><DataArray type="Int64" Name="connectivity" format="ascii">0 1 2 0 1 2 3 4 5 6 7 8 9 10 11</DataArray>
<DataArray type="Int64" Name="offsets" format="ascii">3 11 15</DataArray>
<DataArray type="UInt8" Name="types" format="ascii">4 11 10</DataArray></Cells>
</Piece></UnstructuredGrid></VTKFile>)";

TEST(XmlVtkReader, VtuSplitsPolyLinesAndVoxelsWithCellDataAndRegionsAligned) {
  const auto m = mesh::read_vtu_bytes(kOddVtu, "odd.vtu");
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(m.cells[0].type, "line");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(m.cells[1].type, "hexahedron");  // VTK's voxel points 0,1,3,2,4,5,7,6
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 3, 2, 4, 5, 7, 6}));
  EXPECT_EQ(m.cells[2].type, "tetra");
  EXPECT_EQ(ints(m.cells[2].connectivity), (std::vector<std::int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(ints(m.cell_data.at("c")[0]), (std::vector<std::int64_t>{7, 7}));
  EXPECT_EQ(ints(m.cell_data.at("c")[1]), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(ints(m.cell_data.at("c")[2]), (std::vector<std::int64_t>{9}));
  ASSERT_EQ(m.cell_data.at("b")[0].dtype(), mesh::dtype_of<std::uint8_t>());
  EXPECT_EQ(ints(m.cell_data.at("b")[0]), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(ints(m.cell_data.at("b")[1]), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(ints(m.cell_data.at("b")[2]), (std::vector<std::int64_t>{1}));
  // Regions name the cells the file's cells became: the voxel is mesh cell 2, the tetrahedron
  // 3, the poly-line cells 0 and 1. A side region cannot follow: it stays field data.
  ASSERT_EQ(m.regions.size(), 2u);
  EXPECT_EQ(m.regions[0].name, "curve");
  EXPECT_EQ(ints(m.regions[0].entries), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(m.regions[1].name, "vol");
  EXPECT_EQ(ints(m.regions[1].entries), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(m.field_data.count("meshdock:region:side:2:3:skin"), 1u);
  const auto notes = notes_of(m);
  EXPECT_TRUE(
      holds(notes, "piece 0: 1 poly-lines converted to 2 line segments (cell data repeated)"));
  EXPECT_TRUE(
      holds(notes, "piece 0: 1 voxels converted to hexahedra (VTK points 0,1,3,2,4,5,7,6)"));
  EXPECT_TRUE(holds(notes, "bit array 'b' in <CellData> read as uint8 0/1"));
  EXPECT_TRUE(holds(notes, "field data 'meshdock:region:side:2:3:skin' not made a region"));
}

// A one-point .vtu whose Points are one compressed block of `claimed` bytes, `packed` the
// block as stored (appended raw, header UInt32: 1 block, its size, the last's, its stored size).
std::string one_block_vtu(const std::string& compressor, std::uint32_t claimed,
                          const std::string& packed) {
  std::string head =
      "<VTKFile type=\"UnstructuredGrid\" version=\"0.1\" "
      "byte_order=\"LittleEndian\" compressor=\"" +
      compressor +
      "\">\n<UnstructuredGrid><Piece NumberOfPoints=\"1\" NumberOfCells=\"0\">"
      "<Points><DataArray type=\"Float64\" Name=\"Points\" "
      "NumberOfComponents=\"3\" format=\"appended\" offset=\"0\"/></Points>"
      "</Piece></UnstructuredGrid>\n<AppendedData encoding=\"raw\">_";
  const std::uint32_t header[4] = {1, claimed, claimed, static_cast<std::uint32_t>(packed.size())};
  head.append(reinterpret_cast<const char*>(header), sizeof header);
  return head + packed + "\n</AppendedData></VTKFile>\n";
}

std::string error_of(const std::string& vtu, const std::string& name) {
  try {
    mesh::read_vtu_bytes(vtu, name);
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "no error";
}

TEST(XmlVtkReader, CorruptLz4AndLzmaBlocksNameTheirCompressor) {
  const std::string junk(32, '\xff');
  EXPECT_NE(error_of(one_block_vtu("vtkLZ4DataCompressor", 24, junk), "a.vtu")
                .find("a.vtu:2: DataArray 'Points': LZ4 block 0 is corrupt (bad LZ4 data)"),
            std::string::npos)
      << error_of(one_block_vtu("vtkLZ4DataCompressor", 24, junk), "a.vtu");
  EXPECT_NE(error_of(one_block_vtu("vtkLZMADataCompressor", 24, junk), "b.vtu")
                .find("b.vtu:2: DataArray 'Points': LZMA block 0 is corrupt (not an .xz stream)"),
            std::string::npos)
      << error_of(one_block_vtu("vtkLZMADataCompressor", 24, junk), "b.vtu");
  EXPECT_NE(error_of(one_block_vtu("vtkSnappyDataCompressor", 24, junk), "c.vtu")
                .find("compressor 'vtkSnappyDataCompressor' is not supported"),
            std::string::npos);
}

TEST(XmlVtkReader, Lz4AndLzmaBombsAreRefusedFromTheirHeaders) {
  // More than each format can expand to (LZ4 ~255x, LZMA ~7000x), refused before allocating:
  // 100000 bytes from 100 is within deflate's 1032x, not LZ4's.
  const std::string packed(100, '\0');
  EXPECT_NE(error_of(one_block_vtu("vtkLZ4DataCompressor", 100000, packed), "a.vtu")
                .find("header claims 100000 bytes from 100 compressed"),
            std::string::npos);
  EXPECT_NE(error_of(one_block_vtu("vtkLZMADataCompressor", 2000000, packed), "b.vtu")
                .find("header claims 2000000 bytes from 100 compressed"),
            std::string::npos);
  // ReadOptions::max_bytes holds for them as for zlib: the headers' sizes count.
  mesh::ReadOptions small;
  small.max_bytes = 100;
  for (const char* f : {"compressed.vtk-applz4.vtu", "compressed.vtk-inlinelzma.vtu"}) {
    EXPECT_THROW(mesh::read_mesh(data(f), "", small), mesh::SizeLimitError) << f;
    EXPECT_GT(mesh::read_mesh(data(f)).num_points(), 0) << f;
  }
}

TEST(XmlVtkReader, BitArrayOfTheWrongSizeNamesIt) {
  std::string bad = kOddVtu;
  bad.replace(bad.find("AQAAAKA="), 8, "AgAAAKAA");  // 2 bytes for 3 bits
  try {
    mesh::read_vtu_bytes(bad, "bad.vtu");
    FAIL() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.vtu:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("DataArray 'b' (Bit) holds 2 bytes; 3 bits take 1"),
              std::string::npos)
        << e.what();
  }
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

// A negative count is named; under UBSan (scripts/test's sanitizer pass) this also checks that
// the reader goes on with no negative count until the parse stops (a fuzzer's find: the cell
// counts' sum check computed INT64_MAX - (-2)).
TEST(XmlVtkReader, PolyDataNegativeCountIsNamed) {
  std::string bad = kPoly;
  bad.replace(bad.find("NumberOfStrips=\"1\""), 18, "NumberOfStrips=\"-2\"");
  const auto e = error_of(bad, "neg.vtp");
  EXPECT_NE(e.find("neg.vtp:"), std::string::npos) << e;
  EXPECT_NE(e.find("attribute NumberOfStrips=\"-2\" is not a non-negative integer"),
            std::string::npos)
      << e;
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

// An extent index past +-2^40 is refused where it is read (an upper index of -2^63 made the
// points-per-axis difference overflow: UBSan in the sanitizer pass).
TEST(XmlVtkReader, ExtentIndicesOutOfRangeAreNamed) {
  const std::string vti = R"(<VTKFile type="ImageData" version="0.1">
<ImageData WholeExtent="5 -9223372036854775808 0 0 0 0" Origin="0 0 0" Spacing="1 1 1">
<Piece Extent="5 -9223372036854775808 0 0 0 0"></Piece></ImageData></VTKFile>)";
  const auto e = error_of(vti, "far.vti");
  EXPECT_NE(e.find("far.vti:2: attribute WholeExtent=\"5 -9223372036854775808 0 0 0 0\" is not 6 "
                   "integers"),
            std::string::npos)
      << e;
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

// ---- structured grids of several pieces, parallel files of every kind (issue 14) ------------
// The values are what VTK 9.1 reads from the same files (vtkXMLGenericDataObjectReader):
// a structured grid's pieces are one grid of their whole extent, shared points once.

namespace {

std::vector<double> doubles(const mesh::Array& a) {
  std::vector<double> v(a.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = mesh::value_at(a, i);
  return v;
}

// make_xml_vtk.py's structured(): 3 x 4 x 2 float32 points, p = 0.3 i, c = (2 i, 2 i + 1).
void expect_structured_grid(const mesh::Mesh& m) {
  ASSERT_EQ(m.num_points(), 24);
  const double* p = m.points.as<double>();
  for (int k = 0, n = 0; k < 2; ++k)
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 3; ++i, ++n) {
        ASSERT_EQ(p[3 * n], static_cast<double>(static_cast<float>(i + 0.1 * j))) << n;
        ASSERT_EQ(p[3 * n + 1], static_cast<double>(static_cast<float>(j * 1.5 + 0.05 * k * k)));
        ASSERT_EQ(p[3 * n + 2], static_cast<double>(static_cast<float>(k * 2 + 0.01 * i)));
      }
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "hexahedron");
  const auto conn = ints(m.cells[0].connectivity);
  ASSERT_EQ(conn.size(), 6u * 8);
  // Cell 5 (i 1, j 2): first point 1 + 2 * 3 = 7, VTK's hexahedron order.
  EXPECT_EQ((std::vector<std::int64_t>(conn.begin() + 40, conn.end())),
            (std::vector<std::int64_t>{7, 8, 11, 10, 19, 20, 23, 22}));
  const auto pd = doubles(m.point_data.at("p"));
  ASSERT_EQ(pd.size(), 24u);
  for (std::size_t i = 0; i < pd.size(); ++i) ASSERT_EQ(pd[i], i * 0.3) << i;
  ASSERT_EQ(m.cell_data.at("c").size(), 1u);
  EXPECT_EQ(m.cell_data.at("c")[0].shape(), (std::vector<std::int64_t>{6, 2}));
  EXPECT_EQ(ints(m.cell_data.at("c")[0]),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

}  // namespace

TEST(XmlVtkReader, StructuredGridPiecesAreOneGridAsVtkReadsThem) {
  const auto m = mesh::read_mesh(data("grid-pieces.vtk-ascii.vts"));  // 3 pieces along y
  expect_structured_grid(m);
  EXPECT_NE(
      notes_of(m).find("3 pieces (3 not empty) assembled into one grid of extent 0 2 0 3 0 1"),
      std::string::npos)
      << notes_of(m);
}

TEST(XmlVtkReader, EmptyAndFlatPiecesAsVtkWritesThem) {
  // 8 pieces for 6 cells: two empty ("0 -1 0 -1 0 -1", appended arrays with offset=""), zlib.
  const auto m = mesh::read_mesh(data("grid-pieces.vtk-appzlib.vts"));
  expect_structured_grid(m);
  EXPECT_NE(notes_of(m).find("8 pieces (6 not empty) assembled"), std::string::npos) << notes_of(m);
}

TEST(XmlVtkReader, ImageDataPiecesWithAFlatOne) {
  // Pieces z 0..0 (points only, no cells of the grid), 0..1, 1..2; appended base64.
  const auto m = mesh::read_mesh(data("image-pieces.vtk-app64.vti"));
  ASSERT_EQ(m.num_points(), 27);
  const double* p = m.points.as<double>();
  EXPECT_EQ((std::vector<double>(p, p + 3)), (std::vector<double>{0.75, -1.5, 2.0}));
  EXPECT_EQ((std::vector<double>(p + 15, p + 18)), (std::vector<double>{1.25, -1.0, 2.0}));
  EXPECT_EQ((std::vector<double>(p + 78, p + 81)), (std::vector<double>{1.25, -0.5, 4.0}));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].size(), 8);
  const auto u = doubles(m.point_data.at("u"));
  ASSERT_EQ(u.size(), 81u);
  for (std::size_t i = 0; i < u.size(); ++i) ASSERT_EQ(u[i], i * 0.1) << i;
  EXPECT_EQ(ints(m.cell_data.at("m")[0]), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 0, 1, 2}));
}

TEST(XmlVtkReader, RectilinearGridPiecesJoinTheirCoordinates) {
  for (const char* f : {"rect-pieces.vtk-inline64.vtr", "prect-ascii.pvtr"}) {
    const auto m = mesh::read_mesh(data(f));
    ASSERT_EQ(m.num_points(), 24) << f;
    const double* p = m.points.as<double>();
    // x = 0 0.5 2 3.25 (pieces 0..1 and 1..3), y = 1 1.1 1.5 (Float32), z = -1 4.
    EXPECT_EQ((std::vector<double>(p + 3, p + 6)), (std::vector<double>{0.5, 1.0, -1.0})) << f;
    EXPECT_EQ((std::vector<double>(p + 15, p + 18)),
              (std::vector<double>{0.5, static_cast<double>(1.1f), -1.0}))
        << f;
    EXPECT_EQ((std::vector<double>(p + 69, p + 72)), (std::vector<double>{3.25, 1.5, 4.0})) << f;
    const auto fd = doubles(m.point_data.at("f"));
    for (std::size_t i = 0; i < fd.size(); ++i) ASSERT_EQ(fd[i], i * 1.5) << f << i;
    EXPECT_EQ(ints(m.cell_data.at("cid")[0]), (std::vector<std::int64_t>{0, 7, 14, 21, 28, 35}))
        << f;
  }
}

TEST(XmlVtkReader, PvtsWithGhostLayersIsOneGrid) {
  // Two pieces overlapping by a ghost layer; VTK adds vtkGhostType, the last piece's values.
  const auto m = mesh::read_mesh(data("pgrid-appzlib.pvts"));
  expect_structured_grid(m);
  EXPECT_EQ(ints(m.point_data.at("vtkGhostType")),
            (std::vector<std::int64_t>{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                       1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ints(m.cell_data.at("vtkGhostType")[0]), (std::vector<std::int64_t>{1, 1, 0, 0, 0, 0}));
}

TEST(XmlVtkReader, PvtiIsOneImage) {
  const auto m = mesh::read_mesh(data("pimage-appraw.pvti"));
  const auto serial = mesh::read_mesh(data("image.vtk-ascii.vti"));
  ASSERT_EQ(m.num_points(), 27);
  EXPECT_EQ(doubles(m.points), doubles(serial.points));
  EXPECT_EQ(ints(m.cells[0].connectivity), ints(serial.cells[0].connectivity));
  EXPECT_EQ(doubles(m.point_data.at("u")), doubles(serial.point_data.at("u")));
  EXPECT_EQ(ints(m.cell_data.at("m")[0]), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 0, 1, 2}));
}

TEST(XmlVtkReader, PvtpConcatenatesItsPieces) {
  const auto m = mesh::read_mesh(data("ppoly-ascii.pvtp"));
  const auto a = mesh::read_mesh(data("ppoly-ascii_0.vtp"));
  EXPECT_EQ(m.num_points(), 17);
  ASSERT_EQ(m.cells.size(), 6u);
  EXPECT_EQ(m.cells[3].type, "quad");
  // Piece 1's cells renumbered past piece 0's points; cell data stays with its cell (the
  // original cell ids x 10: VTK 9.1's own pvtp reader swaps 40 and 50).
  EXPECT_EQ(ints(m.cells[2].connectivity), ints(a.cells[2].connectivity));
  std::vector<std::int64_t> ids;
  for (const auto& part : m.cell_data.at("id"))
    for (auto v : ints(part)) ids.push_back(v);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{0, 10, 10, 10, 20, 30, 30, 30, 40, 50, 60, 70, 80, 80,
                                            80, 80}));
  EXPECT_EQ(m.notes.back().rfind("2 pieces of ", 0), 0u);
}

namespace {

// Two ImageData pieces of 2 x 2 x 1 cells sharing the plane x = 2 (points 2, 5, 8, ...).
std::string two_piece_vti(const std::string& second_extent, const std::string& second_type) {
  return R"(<VTKFile type="ImageData" version="0.1">
<ImageData WholeExtent="0 4 0 2 0 1" Origin="0 0 0" Spacing="1 1 1">
<Piece Extent="0 2 0 2 0 1"><PointData><DataArray type="Int32" Name="q" format="ascii">
0 1 2 5 6 7 10 11 12 15 16 17 20 21 22 25 26 27</DataArray></PointData>
<CellData><DataArray type="Int32" Name="k" format="ascii">0 1 4 5</DataArray></CellData></Piece>
<Piece Extent=")" +
         second_extent + R"("><PointData><DataArray type="Int32" Name="q" format="ascii">
2 3 4 7 8 9 12 13 14 17 18 19 22 23 24 27 28 29</DataArray></PointData>
<CellData><DataArray type=")" +
         second_type +
         R"(" Name="k" format="ascii">2 3 6 7</DataArray></CellData></Piece>
</ImageData></VTKFile>)";
}

}  // namespace

TEST(XmlVtkReader, ImagePiecesKeepPointAndCellDataAligned) {
  const auto m = mesh::read_vtu_bytes(two_piece_vti("2 4 0 2 0 1", "Int32"), "two.vti");
  ASSERT_EQ(m.num_points(), 30);  // 5 x 3 x 2: the shared plane once
  std::vector<std::int64_t> seq(30);
  for (int i = 0; i < 30; ++i) seq[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(ints(m.point_data.at("q")), seq);
  EXPECT_EQ(ints(m.cell_data.at("k")[0]), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const double* p = m.points.as<double>();
  EXPECT_EQ((std::vector<double>(p + 3 * 13, p + 3 * 14)), (std::vector<double>{3, 2, 0}));
  // Cell 2 (i 2, j 0): points 2 3 8 7, then 17 18 23 22.
  const auto conn = ints(m.cells[0].connectivity);
  EXPECT_EQ((std::vector<std::int64_t>(conn.begin() + 16, conn.begin() + 24)),
            (std::vector<std::int64_t>{2, 3, 8, 7, 17, 18, 23, 22}));
}

TEST(XmlVtkReader, PiecesThatLeaveAHoleAreAnError) {
  // The second piece covers x 3..4 only: cells (2, 0, 0) and (2, 1, 0) are nobody's.
  std::string vti = two_piece_vti("2 4 0 2 0 1", "Int32");
  vti.replace(vti.find("Extent=\"2 4"), 11, "Extent=\"3 4");
  vti.replace(vti.find("2 3 4 7 8 9 12 13 14 17 18 19 22 23 24 27 28 29"), 47,
              "3 4 8 9 13 14 18 19 23 24 28 29");
  vti.replace(vti.find(">2 3 6 7<"), 9, ">3 7<");
  try {
    mesh::read_vtu_bytes(vti, "hole.vti");
    FAIL() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("hole.vti: no piece has cell (2, 0, 0) of the grid's "
                                         "extent 0 4 0 2 0 1"),
              std::string::npos)
        << e.what();
  }
}

namespace {

// A directory of its own with a .pvts (pieces as given) beside copies of pgrid-appzlib's.
class ParallelDir {
 public:
  explicit ParallelDir(const std::string& name) {
    dir_ = std::filesystem::temp_directory_path() /
           ("meshdock-xmlpar-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "sub");
    for (const char* f : {"pgrid-appzlib_0.vts", "pgrid-appzlib_1.vts", "pieces-ascii_0.vtu"})
      std::filesystem::copy_file(data(f), dir_ / "sub" / f);
    std::filesystem::copy_file(data("pgrid-appzlib_1.vts"), dir_ / "outside.vts");
  }
  ~ParallelDir() { std::filesystem::remove_all(dir_); }
  // sub/a.pvts naming `second` (as written there) for its second piece.
  std::string pvts(const std::string& second, const std::string& extent = "0 2 0 3 0 1") {
    std::ifstream in(data("pgrid-appzlib.pvts"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string from = R"(Extent="0 2 0 3 0 1" Source="pgrid-appzlib_1.vts")";
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, from.size(), "Extent=\"" + extent + "\" Source=\"" + second + "\"");
    const auto path = (dir_ / "sub" / "a.pvts").string();
    std::ofstream(path) << text;
    return path;
  }

 private:
  std::filesystem::path dir_;
};

using meshdock::test::path_error;

}  // namespace

TEST(XmlVtkReader, PvtsPiecesStayInItsDirectory) {
  ParallelDir d("dots");
  EXPECT_EQ(mesh::read_mesh(d.pvts("pgrid-appzlib_1.vts")).num_points(), 24);
  for (const std::string src : {"../outside.vts", "x/../../outside.vts", "/etc/passwd"}) {
    const auto what = path_error(d.pvts(src));
    EXPECT_TRUE(holds(what, "a.pvts:"));
    EXPECT_TRUE(holds(what, "piece '" + src + "'"));
    EXPECT_TRUE(holds(what, "refused"));
  }
}

TEST(XmlVtkReader, PvtsPieceOfTheWrongTypeNamesBoth) {
  ParallelDir d("type");
  const auto what = path_error(d.pvts("pieces-ascii_0.vtu"));
  EXPECT_TRUE(holds(what, "pieces-ascii_0.vtu:"));
  EXPECT_TRUE(holds(what, "VTKFile type is 'UnstructuredGrid'"));
  EXPECT_TRUE(holds(what, "a.pvts (a PStructuredGrid)"));
  EXPECT_TRUE(holds(what, "must be StructuredGrid"));
}

TEST(XmlVtkReader, PvtsMissingPieceNamesIt) {
  ParallelDir d("missing");
  const auto what = path_error(d.pvts("nothere.vts"));
  EXPECT_TRUE(holds(what, "a.pvts:"));
  EXPECT_TRUE(holds(what, "piece 'nothere.vts': "));
}

TEST(XmlVtkReader, PvtsPieceOutsideItsExtentIsAnError) {
  ParallelDir d("extent");
  const auto what = path_error(d.pvts("pgrid-appzlib_1.vts", "0 2 0 2 0 1"));
  EXPECT_TRUE(holds(what, "a.pvts:"));
  EXPECT_TRUE(holds(what,
                    "piece 'pgrid-appzlib_1.vts' holds extent 0 2 0 3 0 1, outside the Extent "
                    "0 2 0 2 0 1 given for it"));
}

TEST(XmlVtkReader, PiecesCoveringTheGridOverAndOverAreRefused) {
  // 200 pieces of one cell each (no arrays: ImageData needs none) over a grid of 2 cells.
  std::string vti = R"(<VTKFile type="ImageData" version="0.1">
<ImageData WholeExtent="0 2 0 1 0 1" Origin="0 0 0" Spacing="1 1 1">)";
  for (int i = 0; i < 200; ++i) vti += R"(<Piece Extent="0 1 0 1 0 1"></Piece>)";
  vti += R"(<Piece Extent="1 2 0 1 0 1"></Piece></ImageData></VTKFile>)";
  try {
    mesh::read_vtu_bytes(vti, "over.vti");
    FAIL() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("over.vti:2: piece 191: the pieces cover the grid's 2 "
                                         "cells more than 64 times over"),
              std::string::npos)
        << e.what();
  }
  // Fewer times over is read (VTK reads both: the last piece's values where pieces overlap).
  vti.erase(vti.find("<Piece"),
            150 * std::string(R"(<Piece Extent="0 1 0 1 0 1"></Piece>)").size());
  EXPECT_EQ(mesh::read_vtu_bytes(vti, "over.vti").num_cells(), 2);
}

// ---- pieces, duplicate names, ascii ranges, counts, cell data without cells (review) ----------

namespace {

// An UnstructuredGrid of the given pieces. A piece from tet_piece() takes 8 lines: with no
// newline in `pd` / `cd`, piece k starts at line 3 + 8 k, its PointData at 4 + 8 k, its
// CellData at 5 + 8 k, Points 6 + 8 k, connectivity 7 + 8 k, offsets 8 + 8 k, types 9 + 8 k.
std::string ug_file(const std::vector<std::string>& pieces) {
  std::string s =
      "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\">\n"
      "<UnstructuredGrid>\n";
  for (const auto& p : pieces) s += p;
  return s + "</UnstructuredGrid></VTKFile>\n";
}

// 4 points, one tetrahedron; `pd` / `cd` inside its PointData / CellData.
std::string tet_piece(const std::string& pd, const std::string& cd = "",
                      const std::string& counts = "NumberOfPoints=\"4\" NumberOfCells=\"1\"") {
  return "<Piece " + counts + ">\n<PointData>" + pd + "</PointData>\n<CellData>" + cd +
         "</CellData>\n"
         "<Points><DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">"
         "0 0 0 1 0 0 0 1 0 0 0 1</DataArray></Points>\n"
         "<Cells><DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">0 1 2 3"
         "</DataArray>\n"
         "<DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">4</DataArray>\n"
         "<DataArray type=\"UInt8\" Name=\"types\" format=\"ascii\">10</DataArray></Cells>\n"
         "</Piece>\n";
}

std::string array(const std::string& type, const std::string& name, const std::string& values,
                  int components = 1) {
  return "<DataArray type=\"" + type + "\" Name=\"" + name + "\" NumberOfComponents=\"" +
         std::to_string(components) + "\" format=\"ascii\">" + values + "</DataArray>";
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST(XmlVtkReader, VtuPieceWithoutAnArrayDropsItWithANote) {
  // Piece 0 has point data A and cell data c, piece 1 point data B: none covers the mesh.
  const auto m = mesh::read_vtu_bytes(
      ug_file({tet_piece(array("Float64", "A", "1 2 3 4"), array("Int32", "c", "7")),
               tet_piece(array("Float64", "B", "5 6 7 8"))}),
      "missing.vtu");
  ASSERT_EQ(m.num_points(), 8);
  EXPECT_TRUE(m.point_data.empty());
  EXPECT_TRUE(m.cell_data.empty());
  const auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes, "point data 'A' is in 1 of 2 pieces (not in piece 1): dropped"));
  EXPECT_TRUE(holds(notes, "point data 'B' is in 1 of 2 pieces (not in piece 0): dropped"));
  EXPECT_TRUE(holds(notes, "cell data 'c' is in 1 of 2 pieces (not in piece 1): dropped"));
}

TEST(XmlVtkReader, VtuPiecesOfDifferentTypesArePromotedWithANote) {
  // A: Float64 then Int32 (VTK and meshio read it: float64); c: UInt8 then Int16.
  const auto m = mesh::read_vtu_bytes(
      ug_file({tet_piece(array("Float64", "A", "1.5 2 3 4"), array("UInt8", "c", "200")),
               tet_piece(array("Int32", "A", "5 6 7 -8"), array("Int16", "c", "-3"))}),
      "dtype.vtu");
  ASSERT_EQ(m.point_data.at("A").dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(m.point_data.at("A")), (std::vector<double>{1.5, 2, 3, 4, 5, 6, 7, -8}));
  ASSERT_EQ(m.cell_data.at("c").size(), 2u);
  for (const auto& a : m.cell_data.at("c")) EXPECT_EQ(a.dtype(), (mesh::DType{0, 16, 1}));
  EXPECT_EQ(ints(m.cell_data.at("c")[0]), (std::vector<std::int64_t>{200}));
  EXPECT_EQ(ints(m.cell_data.at("c")[1]), (std::vector<std::int64_t>{-3}));
  const auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes,
                    "point data 'A' is Float64 in piece 0 (line 4) and Int32 in piece 1 (line "
                    "12): read as Float64 in every piece, their common type"));
  EXPECT_TRUE(holds(notes,
                    "cell data 'c' is UInt8 in piece 0 (line 5) and Int16 in piece 1 (line "
                    "13): read as Int16 in every piece, their common type"));
}

TEST(XmlVtkReader, VtuPiecesOfDifferentComponentsNameBothPieces) {
  const auto what = error_of(ug_file({tet_piece(array("Float64", "A", "1 2 3 4")),
                                      tet_piece(array("Float64", "A", "1 2 3 4 5 6 7 8", 2))}),
                             "ncomp.vtu");
  EXPECT_EQ(what,
            "ncomp.vtu:12: point data 'A' has 2 components in piece 1 (line 12) but 1 in piece 0 "
            "(line 4)");
}

TEST(XmlVtkReader, DuplicateArrayNamesKeepTheLastWithANote) {
  // Two T in one piece's PointData (of 1 and 2 components), two c in its CellData, two f in
  // FieldData: each name once, the last array (as meshio reads them), a note for the other.
  std::string vtu = ug_file({tet_piece(
      array("Float64", "T", "1 2 3 4") + "\n" + array("Float64", "T", "5 6 7 8 1 1 1 1", 2),
      array("Float64", "c", "1") + array("Float64", "c", "2"))});
  vtu = replaced(vtu, "<UnstructuredGrid>\n",
                 "<UnstructuredGrid>\n<FieldData>" + array("Int32", "f", "1") +
                     array("Int32", "f", "2 3") + "</FieldData>");
  const auto m = mesh::read_vtu_bytes(vtu, "dup.vtu");
  ASSERT_EQ(m.point_data.size(), 1u);
  EXPECT_EQ(m.point_data.at("T").shape(), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(doubles(m.point_data.at("T")), (std::vector<double>{5, 6, 7, 8, 1, 1, 1, 1}));
  ASSERT_EQ(m.cell_data.at("c").size(), 1u);
  EXPECT_EQ(doubles(m.cell_data.at("c")[0]), (std::vector<double>{2}));
  EXPECT_EQ(ints(m.field_data.at("f")), (std::vector<std::int64_t>{2, 3}));
  const auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes,
                    "piece 0: <PointData> has two arrays named 'T' (lines 4 and 5): the one "
                    "at line 4 is dropped, the last kept"));
  EXPECT_TRUE(holds(notes,
                    "piece 0: <CellData> has two arrays named 'c' (lines 6 and 6): the one at "
                    "line 6 is dropped, the last kept"));
  EXPECT_TRUE(holds(notes,
                    "<FieldData> has two arrays named 'f' (lines 3 and 3): the one at line 3 "
                    "is dropped, the last kept"));
}

TEST(XmlVtkReader, AsciiValuesOutsideTheirTypeAreRefused) {
  const std::string ok = ug_file({tet_piece("")});
  struct Case {
    std::string from, to, message;
  };
  const std::string conn = "type=\"Int64\" Name=\"connectivity\" format=\"ascii\">0 1 2 3";
  const std::string offs = "type=\"Int64\" Name=\"offsets\" format=\"ascii\">4";
  const std::string pd = "<PointData>";
  const std::vector<Case> cases = {
      {conn, "type=\"Int32\" Name=\"connectivity\" format=\"ascii\">0 1 2 4294967299",
       "r.vtu:7: piece 0: value 4294967299 of DataArray 'connectivity' does not fit its type "
       "Int32"},
      {conn, "type=\"Int64\" Name=\"connectivity\" format=\"ascii\">0 1 2 18446744073709551619",
       "r.vtu:7: piece 0: value 18446744073709551619 of DataArray 'connectivity' does not fit its "
       "type Int64"},
      {"format=\"ascii\">10<", "format=\"ascii\">266<",
       "r.vtu:9: piece 0: value 266 of DataArray 'types' does not fit its type UInt8"},
      {offs, "type=\"Int32\" Name=\"offsets\" format=\"ascii\">4294967300",
       "r.vtu:8: piece 0: value 4294967300 of DataArray 'offsets' does not fit its type Int32"},
      {pd, pd + array("Int32", "I", "1 2 3 4294967296"),
       "r.vtu:4: piece 0: value 4294967296 of DataArray 'I' does not fit its type Int32"},
      {pd, pd + array("UInt8", "I", "1 2 3 300"),
       "r.vtu:4: piece 0: value 300 of DataArray 'I' does not fit its type UInt8"},
      {pd, pd + array("UInt32", "I", "1 2 3 -4"),
       "r.vtu:4: piece 0: value -4 of DataArray 'I' does not fit its type UInt32"},
      {pd, pd + array("UInt64", "I", "1 2 3 -4"),
       "r.vtu:4: piece 0: value -4 of DataArray 'I' does not fit its type UInt64"},
      {pd, pd + array("Int8", "I", "-129 0 0 0"),
       "r.vtu:4: piece 0: value -129 of DataArray 'I' does not fit its type Int8"},
      {pd, pd + array("Float32", "F", "1 2 3 1e39"),
       "r.vtu:4: piece 0: value 1e39 of DataArray 'F' does not fit its type Float32"},
      {pd, pd + array("Float64", "F", "1 2 3 1e400"),
       "r.vtu:4: piece 0: value 1e400 of DataArray 'F' does not fit its type Float64"},
      // The value's own line, not the array's.
      {pd, pd + array("Int16", "I", "1\n2\n3\n40000"),
       "r.vtu:7: piece 0: value 40000 of DataArray 'I' does not fit its type Int16"},
      {pd, pd + array("Int16", "I", "1\n2\n3\n4.5"),
       "r.vtu:7: piece 0: DataArray 'I': expected an integer (Int16), found '4.5'"},
      {pd, pd + array("Float64", "F", "1 2\n x 4"),
       "r.vtu:5: piece 0: DataArray 'F': expected a number (Float64), found 'x'"},
  };
  for (const auto& c : cases) EXPECT_EQ(error_of(replaced(ok, c.from, c.to), "r.vtu"), c.message);
  // Each type's own limits are read as they are.
  const auto m = mesh::read_vtu_bytes(
      replaced(ok, pd,
               pd + array("Int8", "a", "-128 127 0 -1") + array("UInt32", "b", "0 4294967295 1 2") +
                   array("Int64", "c", "-9223372036854775808 9223372036854775807 0 0") +
                   array("UInt64", "d", "18446744073709551615 0 1 2") +
                   array("Float32", "e", "3.4e38 -3.4e38 inf 1e-50")),
      "ok.vtu");
  EXPECT_EQ(ints(m.point_data.at("a")), (std::vector<std::int64_t>{-128, 127, 0, -1}));
  EXPECT_EQ(ints(m.point_data.at("b")), (std::vector<std::int64_t>{0, 4294967295, 1, 2}));
  EXPECT_EQ(ints(m.point_data.at("c")), (std::vector<std::int64_t>{INT64_MIN, INT64_MAX, 0, 0}));
  EXPECT_EQ(doubles(m.point_data.at("d"))[0], 18446744073709551615.0);
  const auto e = doubles(m.point_data.at("e"));
  EXPECT_EQ(e[0], static_cast<double>(3.4e38f));
  EXPECT_TRUE(std::isinf(e[2]));
  EXPECT_EQ(e[3], 0.0);  // an underflow is a value of the type (0), not a wrap
}

TEST(XmlVtkReader, CountsTheFileCannotHoldAreRefusedBeforeAllocating) {
  const std::string huge = "NumberOfPoints=\"1000000000000\" NumberOfCells=\"1\"";
  EXPECT_EQ(error_of(ug_file({tet_piece("", "", huge)}), "h.vtu"),
            "h.vtu:3: piece 0: NumberOfPoints 1000000000000 is more than the file can hold (its "
            "<Points> array has room for 4 points at most)");
  EXPECT_EQ(error_of(ug_file({tet_piece(""), tet_piece("", "", huge)}), "h.vtu"),
            "h.vtu:11: piece 1: NumberOfPoints 1000000000000 is more than the file can hold (its "
            "<Points> array has room for 4 points at most)");
  EXPECT_EQ(
      error_of(ug_file({tet_piece("", "", "NumberOfPoints=\"4\" NumberOfCells=\"1000000000000\"")}),
               "h.vtu"),
      "h.vtu:3: piece 0: NumberOfCells 1000000000000 is more than the file can hold (its "
      "'types' array has room for 1 cells at most)");
  // Compressed: the block headers' sizes bound it (a small file may decode to a lot, so the
  // file's size could not): 24 bytes (zlib of 24 zeros) are one point.
  const std::string zeros("\x78\x9c\x63\x60\xc0\x0e\x00\x00\x18\x00\x01", 11);
  std::string z = one_block_vtu("vtkZLibDataCompressor", 24, zeros);
  EXPECT_EQ(mesh::read_vtu_bytes(z, "z.vtu").num_points(), 1);
  z = replaced(z, "NumberOfPoints=\"1\"", "NumberOfPoints=\"1000000000000\"");
  EXPECT_EQ(error_of(z, "z.vtu"),
            "z.vtu:2: piece 0: NumberOfPoints 1000000000000 is more than the file can hold (its "
            "<Points> array has room for 1 points at most)");
  // PolyData: each section's count against its offsets.
  std::string vtp = replaced(kPoly, "NumberOfLines=\"1\"", "NumberOfLines=\"1000000000000\"");
  EXPECT_EQ(error_of(vtp, "p.vtp"),
            "p.vtp:5: piece 0: NumberOfLines 1000000000000 is more than the file can hold (its "
            "<Lines> offsets array has room for 1 cells at most)");
  vtp = replaced(kPoly, "NumberOfLines=\"1\"", "NumberOfLines=\"9223372036854775807\"");
  vtp = replaced(vtp, "NumberOfStrips=\"1\"", "NumberOfStrips=\"9223372036854775807\"");
  EXPECT_NE(error_of(vtp, "p.vtp").find("p.vtp:5: the piece's cell counts add up to more than"),
            std::string::npos)
      << error_of(vtp, "p.vtp");
}

TEST(XmlVtkReader, CellDataOfAFileWithoutCellsIsDroppedWithANote) {
  // What VTK writes for a point cloud with an (empty) cell array: 0 cells, so no block.
  const auto m = mesh::read_vtu_bytes(
      ug_file({tet_piece(array("Float64", "T", "1 2 3 4"), array("Float64", "emptycell", ""),
                         "NumberOfPoints=\"4\" NumberOfCells=\"0\"")}),
      "nocells.vtu");
  EXPECT_EQ(m.num_cells(), 0);
  EXPECT_EQ(doubles(m.point_data.at("T")), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_TRUE(m.cell_data.empty());
  EXPECT_NE(notes_of(m).find("cell data 'emptycell' (Float64, 1 components) dropped: the file has "
                             "no cells, and a mesh holds cell data per block of cells"),
            std::string::npos)
      << notes_of(m);
}

namespace {

// A .pvtu of two piece files, in a directory of its own.
class PvtuDir {
 public:
  PvtuDir(const std::string& name, const std::string& piece0, const std::string& piece1) {
    dir_ = std::filesystem::temp_directory_path() /
           ("meshdock-pvtu-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "a_0.vtu") << piece0;
    std::ofstream(dir_ / "a_1.vtu") << piece1;
    std::ofstream(dir_ / "a.pvtu")
        << "<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\">\n<PUnstructuredGrid>\n"
           "<Piece Source=\"a_0.vtu\"/>\n<Piece Source=\"a_1.vtu\"/>\n"
           "</PUnstructuredGrid></VTKFile>\n";
  }
  ~PvtuDir() { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "a.pvtu").string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace

TEST(XmlVtkReader, PvtuPiecesFollowTheSameRules) {
  PvtuDir d(
      "rules",
      ug_file({tet_piece(array("Float64", "A", "1.5 2 3 4") + array("Float64", "B", "1 1 1 1"),
                         array("UInt8", "c", "200"))}),
      ug_file({tet_piece(array("Int32", "A", "5 6 7 -8"), array("Int16", "c", "-3"))}));
  const auto m = mesh::read_mesh(d.path());
  ASSERT_EQ(m.point_data.at("A").dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(m.point_data.at("A")), (std::vector<double>{1.5, 2, 3, 4, 5, 6, 7, -8}));
  EXPECT_EQ(m.point_data.count("B"), 0u);
  ASSERT_EQ(m.cells.size(), 1u);  // the two tetrahedra are one block
  EXPECT_EQ(m.cell_data.at("c")[0].dtype(), (mesh::DType{0, 16, 1}));
  EXPECT_EQ(ints(m.cell_data.at("c")[0]), (std::vector<std::int64_t>{200, -3}));
  const auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes, "point data 'B' is in 1 of 2 pieces (not in piece 1): dropped"));
  EXPECT_TRUE(holds(notes,
                    "point data 'A' is Float64 in piece 0 (a_0.vtu) and Int32 in piece 1 "
                    "(a_1.vtu): read as Float64 in every piece, their common type"));
  EXPECT_TRUE(holds(notes,
                    "cell data 'c' is UInt8 in piece 0 (a_0.vtu) and Int16 in piece 1 "
                    "(a_1.vtu): read as Int16 in every piece, their common type"));
  PvtuDir bad("ncomp", ug_file({tet_piece(array("Float64", "A", "1 2 3 4"))}),
              ug_file({tet_piece(array("Float64", "A", "1 2 3 4 5 6 7 8", 2))}));
  EXPECT_EQ(path_error(bad.path()),
            bad.path() +
                ":4: point data 'A' has 2 components in piece 1 (a_1.vtu) but 1 in piece "
                "0 (a_0.vtu)");
}

// Pieces that give an array in different types: read in their common type with a note, as the
// pieces of a .vtu are (VTK reads every piece into the first one's type: a UInt8 piece, then
// -3 in an Int16 one, gives 253). Were a ReadError ("differs in type or components").
TEST(XmlVtkReader, StructuredPiecesOfDifferentTypesArePromotedWithANote) {
  // k: Int32 in piece 0 (line 5), Float64 in piece 1 (line 8).
  auto m = mesh::read_vtu_bytes(
      replaced(two_piece_vti("2 4 0 2 0 1", "Float64"), ">2 3 6 7<", ">2.5 3 6 7<"), "t.vti");
  ASSERT_EQ(m.cell_data.at("k").size(), 1u);
  EXPECT_EQ(m.cell_data.at("k")[0].dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(m.cell_data.at("k")[0]), (std::vector<double>{0, 1, 2.5, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.point_data.at("q").dtype(), (mesh::DType{0, 32, 1}));  // one type: unchanged
  auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes,
                    "cell data 'k' is Int32 in piece 0 (line 5) and Float64 in piece 1 (line "
                    "8): read as Float64 in every piece, their common type\n"));
  // UInt8 then Int16: Int16, -3 kept. q: Float32 then Int64 (2^53 + 1): Float64, which rounds
  // it, and the note says so.
  std::string vti = replaced(two_piece_vti("2 4 0 2 0 1", "Int16"), ">2 3 6 7<", ">2 -3 6 7<");
  vti = replaced(vti, R"(type="Int32" Name="k")", R"(type="UInt8" Name="k")");
  vti = replaced(vti, R"(type="Int32" Name="q")", R"(type="Float32" Name="q")");
  vti = replaced(vti, R"(type="Int32" Name="q" format="ascii">
2 3)",
                 R"(type="Int64" Name="q" format="ascii">
2 9007199254740993)");
  m = mesh::read_vtu_bytes(vti, "t.vti");
  EXPECT_EQ(m.cell_data.at("k")[0].dtype(), (mesh::DType{0, 16, 1}));
  EXPECT_EQ(ints(m.cell_data.at("k")[0]), (std::vector<std::int64_t>{0, 1, 2, -3, 4, 5, 6, 7}));
  ASSERT_EQ(m.point_data.at("q").dtype(), mesh::kFloat64);
  const auto q = doubles(m.point_data.at("q"));
  ASSERT_EQ(q.size(), 30u);
  EXPECT_EQ(q[2], 2);  // on the shared plane: the last piece's value
  EXPECT_EQ(q[3], 9007199254740992.0);
  EXPECT_EQ(q[29], 29);
  notes = notes_of(m);
  EXPECT_TRUE(holds(notes,
                    "cell data 'k' is UInt8 in piece 0 (line 5) and Int16 in piece 1 (line "
                    "8): read as Int16 in every piece, their common type\n"));
  EXPECT_TRUE(holds(notes,
                    "point data 'q' is Float32 in piece 0 (line 3) and Int64 in piece 1 (line "
                    "6): read as Float64 in every piece, their common type; Int64 values "
                    "beyond 2^53 in magnitude lose precision in it\n"));
  // Components that differ are a ReadError naming both pieces.
  EXPECT_EQ(error_of(replaced(replaced(two_piece_vti("2 4 0 2 0 1", "Int32"), ">2 3 6 7<",
                                       ">2 2 3 3 6 6 7 7<"),
                              R"(type="Int32" Name="k" format="ascii">2)",
                              R"(type="Int32" Name="k" NumberOfComponents="2" format="ascii">2)"),
                     "c.vti"),
            "c.vti:8: cell data 'k' has 2 components in piece 1 (line 8) but 1 in piece 0 (line "
            "5)");
}

TEST(XmlVtkReader, VtuPiecesWhoseCommonTypeRoundsSaySo) {
  // UInt64 and Int8: Float64 (numpy's promotion), which holds 2^64 - 1 as 2^64.
  const auto m =
      mesh::read_vtu_bytes(ug_file({tet_piece(array("UInt64", "A", "1 2 3 18446744073709551615")),
                                    tet_piece(array("Int8", "A", "-1 -2 -3 -4"))}),
                           "round.vtu");
  ASSERT_EQ(m.point_data.at("A").dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(m.point_data.at("A")),
            (std::vector<double>{1, 2, 3, 18446744073709551616.0, -1, -2, -3, -4}));
  const auto notes = notes_of(m);
  EXPECT_TRUE(holds(notes,
                    "point data 'A' is UInt64 in piece 0 (line 4) and Int8 in piece 1 (line "
                    "12): read as Float64 in every piece, their common type; UInt64 values "
                    "beyond 2^53 in magnitude lose precision in it"));
}

// A piece holds one <Points>, one <Cells> (one <PointData>, ...), and a cell section one array
// of each name it is read by. VTK 9.1 reads the last of two <Points> / <Cells> but the first of
// two 'connectivity' arrays, and refuses a <Points> of two arrays; meshio 5.0 refuses the
// first two and reads the last array of a name. Which one to read is ambiguous: refused,
// naming both lines (before, one of them was read silently: the last).
TEST(XmlVtkReader, ASecondPointsCellsOrCellArrayOfOneNameNamesBothLines) {
  // tet_piece(): <Piece> at line 3, <Points> 6, <Cells> and connectivity 7, offsets 8, types 9.
  const std::string vtu = ug_file({tet_piece("")});
  const std::string points =
      "<Points><DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">"
      "9 9 9 8 8 8 7 7 7 6 6 6</DataArray></Points>\n";
  const std::string cells =
      "<Cells><DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">3 2 1 0</DataArray>"
      "<DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">4</DataArray>"
      "<DataArray type=\"UInt8\" Name=\"types\" format=\"ascii\">9</DataArray></Cells>\n";
  EXPECT_EQ(error_of(replaced(vtu, "</Cells>\n", "</Cells>\n" + points), "two.vtu"),
            "two.vtu:10: piece 0 (line 3) has two <Points> elements (lines 6 and 10); a piece has "
            "one: which to read is ambiguous");
  EXPECT_EQ(error_of(replaced(vtu, "</Cells>\n", "</Cells>\n" + cells), "two.vtu"),
            "two.vtu:10: piece 0 (line 3) has two <Cells> elements (lines 7 and 10); a piece has "
            "one: which to read is ambiguous");
  EXPECT_EQ(
      error_of(replaced(vtu, "<CellData></CellData>", "<CellData></CellData><CellData></CellData>"),
               "two.vtu"),
      "two.vtu:5: piece 0 (line 3) has two <CellData> elements (lines 5 and 5); a piece has "
      "one: which to read is ambiguous");
  EXPECT_EQ(error_of(replaced(vtu, "0 0 1</DataArray></Points>",
                              "0 0 1</DataArray>\n<DataArray type=\"Float64\" "
                              "NumberOfComponents=\"3\" format=\"ascii\">9 9 9 8 8 8 7 7 7 6 6 6"
                              "</DataArray></Points>"),
                     "two.vtu"),
            "two.vtu:7: piece 0: <Points> has two DataArrays (lines 6 and 7); it holds one, the "
            "points");
  // Each second array is one the file could mean (a tetrahedron still): read silently before.
  struct Again {
    const char *name, *values, *first_line;
  };
  for (const auto& [name, values, first] :
       {Again{"connectivity", "3 2 1 0", "7"}, Again{"offsets", "4", "8"},
        Again{"types", "10", "9"}}) {
    const std::string again = std::string("<DataArray type=\"Int64\" Name=\"") + name +
                              "\" format=\"ascii\">" + values + "</DataArray></Cells>";
    EXPECT_EQ(error_of(replaced(vtu, "</Cells>", "\n" + again), "two.vtu"),
              std::string("two.vtu:10: piece 0: <Cells> has two arrays named '") + name +
                  "' (lines " + first +
                  " and 10); which to read is ambiguous (VTK reads the first, meshio the last)");
  }
  // PolyData's cell sections and the structured kinds' sections alike. kPoly: <Strips> at
  // line 12, its offsets at 13.
  EXPECT_EQ(error_of(replaced(kPoly, "offsets\" format=\"ascii\">5</DataArray>",
                              "offsets\" format=\"ascii\">5</DataArray>\n<DataArray "
                              "type=\"Int32\" Name=\"offsets\" format=\"ascii\">4</DataArray>"),
                     "poly.vtp"),
            "poly.vtp:14: piece 0: <Strips> has two arrays named 'offsets' (lines 13 and 14); "
            "which to read is ambiguous (VTK reads the first, meshio the last)");
  EXPECT_EQ(error_of(replaced(two_piece_vti("2 4 0 2 0 1", "Int32"), "</PointData>\n<CellData>",
                              "</PointData>\n<PointData></PointData><CellData>"),
                     "two.vti"),
            "two.vti:5: piece 0 (line 3) has two <PointData> elements (lines 3 and 5); a piece "
            "has one: which to read is ambiguous");
  // One of each reads as before.
  const auto m = mesh::read_vtu_bytes(vtu, "one.vtu");
  EXPECT_EQ(ints(m.cells.at(0).connectivity), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

// A cancel reaches an ascii file's read while expat parses it (in 16 MiB pieces) and while an
// array's text is decoded (its cursor reports once a MiB). Before, the whole XML was parsed and
// the first array decoded before the read looked: a 300 MB ascii VTU kept its name busy for a
// second after Ctrl-C.
TEST(XmlVtkReader, AnAsciiReadHeedsACancelBeforeItsFirstArray) {
  const std::string path = data("box.meshio-ascii.vtu");
  const auto fd = mesh::open_regular(path);
  mesh::ReadProgress progress;
  progress.cancel();
  try {
    mesh::read_vtu(mesh::InFile{fd.get(), path, &progress});
    ADD_FAILURE() << "a cancelled read completed";
  } catch (const mesh::ReadError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": read stopped by its caller at byte 0");
  }
}
