// The Tecplot ASCII reader and writer: the files of tests/data/tecplot (meshio's writer on gmsh's
// meshes, and hand-written corners; tools/make_tecplot.py), texts written here through a memfd
// (errors name the file, the line and the zone), and round trips through write_tecplot. The
// comparisons with meshio are in tests/python/test_tecplot.py.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/tecplot/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::ints;

mesh::Mesh read_text(const std::string& text) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_tecplot(f); },
                                   text, "t.dat");
}

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_tecplot(f); },
                                    text, "t.dat");
}

using D = std::vector<double>;
using I = std::vector<std::int64_t>;

TEST(TecplotReader, MeshioTriangles2dWithNodalAndCellCentredVariables) {
  const auto m = mesh::read_mesh(data("meshio-tri.dat"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (I{30, 2}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle"}));
  EXPECT_EQ(m.cells[0].size(), 42);
  ASSERT_EQ(m.point_data.size(), 3u);  // p, v_0, v_1
  const auto p = doubles(m.point_data.at("p"));
  const auto pts = doubles(m.points);
  for (std::size_t i = 0; i < 30; ++i) {
    EXPECT_DOUBLE_EQ(p[i], pts[2 * i] * 2 + pts[2 * i + 1]);
    EXPECT_DOUBLE_EQ(doubles(m.point_data.at("v_1"))[i], pts[2 * i + 1] * 3.25);
  }
  const auto& q = m.cell_data.at("q");
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(doubles(q[0])[41], 20.5);
  EXPECT_TRUE(m.notes.empty());
}

TEST(TecplotReader, MeshioMixedIsOneBrickZoneKeptWithRepeatedNodes) {
  const auto m = mesh::read_mesh(data("meshio-mixed.dat"));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"hexahedron"}));
  // meshio writes tets as 0 1 2 2 3 3 3 3 and pyramids 0 1 2 3 4 4 4 4; both read them so.
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 3, 3, 9, 9, 9, 9, 1, 2, 3, 3, 9, 9, 9, 9,
                                              4, 5, 6, 7, 8, 8, 8, 8, 0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(doubles(m.cell_data.at("id")[0]), (D{1, 2, 3, 4}));
}

TEST(TecplotReader, PointPackingCommentsAndLowerCaseCoordinates) {
  const auto m = mesh::read_mesh(data("point.dat"));
  EXPECT_EQ(m.points.shape(), (I{6, 3}));
  EXPECT_EQ(doubles(m.points)[14], 0.25);
  EXPECT_EQ(doubles(m.point_data.at("P")), (D{1.5, 2.5, 3.5, 4.5, 5.5, 6.5}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"quad"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 4, 3, 1, 2, 5, 4}));
}

TEST(TecplotReader, OldFePointAndFeBlockHeaders) {
  const auto a = mesh::read_mesh(data("fepoint.dat"));
  EXPECT_EQ(a.points.shape(), (I{4, 2}));
  EXPECT_EQ(doubles(a.point_data.at("T")), (D{10, 11, 12, 13}));
  EXPECT_EQ(ints(a.cells[0].connectivity), (I{0, 1, 2, 0, 2, 3}));
  const auto b = mesh::read_mesh(data("feblock.dat"));  // NV=4: "id" is cell-centred
  EXPECT_EQ(doubles(b.point_data.at("rho")), (D{1.5, 2.5, 3.5, 4.5, 5.5}));
  EXPECT_EQ(doubles(b.cell_data.at("id")[0]), (D{7, 8}));
  EXPECT_EQ(cell_types(b), (std::vector<std::string>{"tetra"}));
  EXPECT_EQ(ints(b.cells[0].connectivity), (I{0, 1, 2, 3, 0, 2, 1, 4}));
}

TEST(TecplotReader, VarlocationAndNamesOverTwoLines) {
  const auto m = mesh::read_mesh(data("varloc.dat"));
  EXPECT_TRUE(m.point_data.empty());
  EXPECT_EQ(doubles(m.cell_data.at("Velocity_X")[0]), (D{0.125}));
  EXPECT_EQ(doubles(m.cell_data.at("Q")[0]), (D{-2.5}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"hexahedron"}));
}

TEST(TecplotReader, RepeatCountsFortranExponentsCommasCrlf) {
  const auto m = mesh::read_mesh(data("repeat.dat"));
  EXPECT_EQ(doubles(m.points), (D{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(doubles(m.point_data.at("s")), (D{0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 2, 3}));
}

TEST(TecplotReader, EveryZoneIsReadPointsAppended) {
  const auto m = mesh::read_mesh(data("zones.dat"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (I{7, 2}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "quad"}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{3, 4, 5, 6}));
  EXPECT_EQ(doubles(m.point_data.at("s")), (D{1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("2 zones read"), std::string::npos);
}

TEST(TecplotReader, MultiLineHeaderKeysInAnyCaseAndAuxData) {
  const auto m = read_text(
      "title=\"t\"\nvariables = x y\nDATASETAUXDATA a=\"1\"\nzone t=\"z\" nodes=3 elements=1\n"
      "zonetype=fetriangle datapacking=point AUXDATA k=\"v\" STRANDID=1 SOLUTIONTIME=0.5\n"
      "0 0 1 0 0 1\n1 2 3\n");
  EXPECT_EQ(doubles(m.points), (D{0, 0, 1, 0, 0, 1}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0], "tecplot: t.dat:3: DATASETAUXDATA record not read");
}

TEST(TecplotReader, ErrorsNameFileLineAndZone) {
  const std::string vars = "VARIABLES = X Y\n";
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1\n0 1 0\n"),
            "t.dat:2: zone 1: N = / E = in a zone with no finite-element ZONETYPE = (or F = "
            "FEPOINT / FEBLOCK): an ordered zone's size is I, J, K");
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1, ZONETYPE=FEPOLYGON\n"),
            "t.dat:2: zone 1: ZONETYPE = FEPOLYGON is not ORDERED, FELINESEG, FETRIANGLE, "
            "FEQUADRILATERAL, FETETRAHEDRON or FEBRICK (FEPOLYGON and FEPOLYHEDRON are not read)");
  EXPECT_EQ(error_of("ZONE N=3, E=1, ZONETYPE=FETRIANGLE\n"),
            "t.dat:1: zone 1: ZONE before VARIABLES (the variables' names are not known)");
  EXPECT_EQ(error_of("VARIABLES = A B\n"), "t.dat:1: VARIABLES names no X (or x) coordinate");
  // 3 nodes of 2 values and 1 cell of 3 need 18 bytes at least.
  EXPECT_EQ(error_of(vars + "ZONE N=300, E=1, ZONETYPE=FETRIANGLE\n0 0\n"),
            "t.dat:2: zone 1: N = 300 is more than the rest of the file holds (2 values each, "
            "at least 2 bytes a value)");
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1, ZONETYPE=FETRIANGLE\n0 1 x 0 0 1\n1 2 3\n"),
            "t.dat:3: expected a number in zone 1: variable 'X' (value 3 of 3), found 'x'");
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1, ZONETYPE=FETRIANGLE\n0 1 0\n0 0 1\n1 2 4\n"),
            "t.dat:5: zone 1: element 1 of 1 (triangle, 3 nodes): node 4 is not one of the "
            "zone's 3 nodes (1-based)");
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1, ZONETYPE=FETRIANGLE\n0 1 0\n0 0 1\n1 2\n\n\n\n"),
            "t.dat:9: the file ends in zone 1: element 1 of 1 (triangle, 3 nodes)");
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1, ZONETYPE=FETRIANGLE, VARSHARELIST=([1]=1)\n"),
            "t.dat:2: zone 1: ZONE key VARSHARELIST is not read by meshdock (VARSHARELIST, "
            "CONNECTIVITYSHAREZONE, PASSIVEVARLIST, face neighbours and polygon / polyhedron face "
            "counts are not supported)");
  EXPECT_EQ(error_of("VARIABLES = X Y P\nZONE N=3, E=1, ZONETYPE=FETRIANGLE, DATAPACKING=POINT, "
                     "VARLOCATION=([3]=CELLCENTERED)\n"),
            "t.dat:2: zone 1: variable 'P' is CELLCENTERED in a POINT-packed zone (Tecplot allows "
            "it in BLOCK only)");
  EXPECT_EQ(
      error_of(vars + "ZONE N=3, E=1, ZONETYPE=FETRIANGLE\n7*0\n1 2 3\n# 18 bytes at least\n"),
      "t.dat:3: zone 1: a repeat count runs 1 values past the zone's values");
  EXPECT_EQ(error_of(vars + "ZONE N=3, E=1, ZONETYPE=FETRIANGLE\n0 1 0 0 0 1\n1 2 3\n7\n"),
            "t.dat:5: expected a record (TITLE, VARIABLES, ZONE), found the value '7' (more values "
            "than the last zone's counts take)");
  EXPECT_EQ(error_of(vars), "t.dat: no ZONE record: not a Tecplot ASCII file with a zone");
}

// Ordered (I, J, K) zones: the cells as VTK's vtkStructuredGrid makes them (tests/python/
// test_tecplot.py compares the files of tools/make_tecplot.py with vtkTecplotReader).

TEST(TecplotOrdered, LineIsIOnlyPointPackedByDefault) {
  const auto m = read_text("VARIABLES = X Y P\nZONE T=\"l\", I=4\n0 0 1\n1 0 2\n2 0 3\n3 1 4\n");
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(doubles(m.points), (D{0, 0, 1, 0, 2, 0, 3, 1}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"line"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 1, 2, 2, 3}));
  EXPECT_EQ(doubles(m.point_data.at("P")), (D{1, 2, 3, 4}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0],
            "tecplot: t.dat:2: zone 1 ('l'): ordered zone I, J, K = 4, 1, 1 read as 3 line cells "
            "(the I, J, K structure is not kept; meshio refuses ordered zones)");
}

TEST(TecplotOrdered, PlanesIjIkJkAreQuadsInTheirTwoDirections) {
  // I x J: ids i + 4 j; I x K (J = 1): i + 3 k; J x K (I = 1): j + 2 k, points appended.
  const auto m = mesh::read_mesh(data("ordered-2d.dat"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (I{12 + 9 + 6, 3}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"quad", "quad", "quad"}));
  EXPECT_EQ(ints(m.cells[0].connectivity),
            (I{0, 1, 5, 4, 1, 2, 6, 5, 2, 3, 7, 6, 4, 5, 9, 8, 5, 6, 10, 9, 6, 7, 11, 10}));
  EXPECT_EQ(ints(m.cells[1].connectivity),
            (I{12, 13, 16, 15, 13, 14, 17, 16, 15, 16, 19, 18, 16, 17, 20, 19}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (I{21, 22, 24, 23, 23, 24, 26, 25}));
  // (n-1)(m-1) cell-centred values a plane, a dimension of 1 counted as 1.
  const auto& c = m.cell_data.at("C");
  EXPECT_EQ(doubles(c[0]), (D{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(doubles(c[1]), (D{100, 101, 102, 103}));
  EXPECT_EQ(doubles(c[2]), (D{200, 201}));
  EXPECT_EQ(m.notes.size(), 4u);  // three ordered zones, several zones
}

TEST(TecplotOrdered, BricksPointAndBlockPackingReadTheSameMesh) {
  const auto p = mesh::read_mesh(data("ordered-3d-point.dat"));
  const auto b = mesh::read_mesh(data("ordered-3d-block.dat"));
  mesh::validate_mesh(p, "t");
  EXPECT_EQ(p.points.shape(), (I{24, 3}));
  EXPECT_EQ(doubles(p.points), doubles(b.points));
  EXPECT_EQ(doubles(p.point_data.at("P")), doubles(b.point_data.at("P")));
  // (i, j, k) = i + 4 j + 12 k; VTK's hexahedron: the k face counter-clockwise, then k + 1.
  const I first{0, 1, 5, 4, 12, 13, 17, 16}, last{6, 7, 11, 10, 18, 19, 23, 22};
  for (const auto* m : {&p, &b}) {
    EXPECT_EQ(cell_types(*m), (std::vector<std::string>{"hexahedron"}));
    const auto c = ints(m->cells[0].connectivity);
    ASSERT_EQ(c.size(), 6u * 8);
    EXPECT_EQ(I(c.begin(), c.begin() + 8), first);
    EXPECT_EQ(I(c.end() - 8, c.end()), last);
  }
  // x = i + j / 8, y = j + k i / 4, z = k / 2 + i j / 16 (tools/make_tecplot.py).
  const auto pts = doubles(p.points);
  EXPECT_EQ((D{pts[69], pts[70], pts[71]}), (D{3.25, 2.75, 0.875}));
  EXPECT_EQ(doubles(b.cell_data.at("C")[0]), (D{1, 1.5, 2, 2.5, 3, 3.5}));
  EXPECT_TRUE(p.cell_data.empty());
}

TEST(TecplotOrdered, ZonetypeOrderedBlockAndCellCentredValuesInCellOrder) {
  // (I-1)(J-1) = 2 cell values for a 3 x 2 zone, in the order of the cells (I fastest).
  const auto m = read_text(
      "VARIABLES = X Y C\nZONE ZONETYPE=ORDERED, I=3, J=2, DATAPACKING=BLOCK, "
      "VARLOCATION=([3]=CELLCENTERED)\n0 1 2 0 1 2\n0 0 0 1 1 1\n7 8\n");
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 4, 3, 1, 2, 5, 4}));
  EXPECT_EQ(doubles(m.cell_data.at("C")[0]), (D{7, 8}));
  EXPECT_EQ(m.points.shape(), (I{6, 2}));
}

TEST(TecplotOrdered, SinglePointIsAVertexAndOldFBlock) {
  const auto m = mesh::read_mesh(data("ordered-line.dat"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"quad", "line", "vertex", "line"}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{4, 5, 5, 6, 6, 7, 7, 8}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (I{9}));
  EXPECT_EQ(ints(m.cells[3].connectivity), (I{10, 11, 11, 12}));
  EXPECT_EQ(doubles(m.point_data.at("P"))[9], 10);
}

TEST(TecplotOrdered, OrderedAndFiniteElementZonesAppended) {
  const auto m = mesh::read_mesh(data("ordered-fe.dat"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (I{12 + 8 + 4, 3}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"hexahedron", "hexahedron", "quad"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 4, 3, 6, 7, 10, 9, 1, 2, 5, 4, 7, 8, 11, 10}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{12, 13, 15, 14, 16, 17, 19, 18}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (I{20, 21, 23, 22}));
  EXPECT_EQ(doubles(m.point_data.at("P"))[23], 0.25);
  ASSERT_EQ(m.notes.size(), 3u);
  EXPECT_NE(m.notes[2].find("3 zones read"), std::string::npos);
}

TEST(TecplotOrdered, ErrorsNameFileLineZoneAndWhatWasExpected) {
  const std::string vars = "VARIABLES = X Y\n";
  EXPECT_EQ(error_of(vars + "ZONE T=\"blade\", I=0, J=2\n"),
            "t.dat:2: zone 1 ('blade'): I = 0 (an ordered zone has 1 point at least in each "
            "direction)");
  EXPECT_EQ(error_of(vars + "ZONE I=4294967296, J=4294967296, K=2\n"),
            "t.dat:2: zone 1: I*J*K = 4294967296*4294967296*2 overflows");
  EXPECT_EQ(error_of(vars + "ZONE I=99999999999999999999\n"),
            "t.dat:2: zone 1: expected a count after I =, found '99999999999999999999'");
  EXPECT_EQ(error_of(vars + "ZONE I=2, J=-3\n"),
            "t.dat:2: zone 1: expected a count after J =, found '-3'");
  EXPECT_EQ(error_of(vars + "ZONE I=3, J=2\n1 2 3\n"),
            "t.dat:2: zone 1: I*J*K = 6 is more than the rest of the file holds (2 values each, "
            "at least 2 bytes a value)");
  EXPECT_EQ(error_of(vars + "ZONE I=9223372036854775807\n"),
            "t.dat:2: zone 1: I*J*K = 9223372036854775807 is more than the rest of the file "
            "holds (2 values each, at least 2 bytes a value)");
  EXPECT_EQ(error_of("VARIABLES = X Y C\nZONE I=2, J=2, DATAPACKING=BLOCK, "
                     "VARLOCATION=([3]=CELLCENTERED)\n0 1 0 1 0 0 1 1\n"),
            "t.dat:2: zone 1: cell count 1 is more than the rest of the file holds (1 values "
            "each, at least 2 bytes a value)");
  EXPECT_EQ(error_of(vars + "ZONE T=\"w\", I=3, DATAPACKING=BLOCK\n0 1 2\n0 0\n# padding\n"),
            "t.dat:6: the file ends in zone 1 ('w'): variable 'Y' (value 3 of 3)");
  EXPECT_EQ(error_of(vars + "ZONE I=2, J=2\n0 0 1 0 0 1 1\nZONE I=1\n0 0\n"),
            "t.dat:4: expected a number in zone 1: a POINT row's values, found 'ZONE' (fewer "
            "values than the zone's counts need)");
  EXPECT_EQ(error_of(vars + "ZONE T=\"b\", DATAPACKING=POINT\n0 0\n"),
            "t.dat:2: zone 1 ('b'): an ordered zone (no finite-element ZONETYPE = or F =) with no "
            "I = count");
  EXPECT_EQ(error_of(vars + "ZONE I=2, F=FOO\n0 0 1 1\n"),
            "t.dat:2: zone 1: F = FOO is not POINT, BLOCK (ordered zones), FEPOINT or FEBLOCK");
  EXPECT_EQ(error_of(vars + "ZONE I=2, DATAPACKING=FEPOINT\n0 0 1 1\n"),
            "t.dat:2: zone 1: DATAPACKING = FEPOINT is not BLOCK or POINT");
  EXPECT_EQ(error_of("VARIABLES = X Y C\nZONE I=2, VARLOCATION=([3]=CELLCENTERED)\n0 0 1 1 2\n"),
            "t.dat:2: zone 1: variable 'C' is CELLCENTERED in a POINT-packed zone (Tecplot "
            "allows it in BLOCK only)");
  EXPECT_EQ(error_of("VARIABLES = X Y C\nZONE I=2, DATAPACKING=BLOCK\n0 1 0 0 5 6\nZONE I=2, "
                     "DATAPACKING=BLOCK, VARLOCATION=([3]=CELLCENTERED)\n0 1 0 0 5\n"),
            "t.dat:4: zone 2: variable 'C' is cell-centred here, nodal in zone 1 (meshdock "
            "appends the zones' values)");
}

// The writer tests' files: a directory of their own (tests/support/temp_dir.hpp).
struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("tecw") {}
};

TEST(TecplotWriter, RoundTripKeepsPointsCellsAndData) {
  Tmp tmp;
  for (const char* name :
       {"meshio-tri.dat", "meshio-tet.dat", "meshio-mixed.dat", "point.dat", "varloc.dat"}) {
    const auto src = mesh::read_mesh(data(name));
    EXPECT_TRUE(mesh::write_mesh(src, tmp.file("o.tec")).empty()) << name;
    const auto back = mesh::read_mesh(tmp.file("o.tec"));
    EXPECT_EQ(doubles(back.points), doubles(src.points)) << name;
    ASSERT_EQ(cell_types(back), cell_types(src)) << name;
    EXPECT_EQ(ints(back.cells[0].connectivity), ints(src.cells[0].connectivity)) << name;
    ASSERT_EQ(back.point_data.size(), src.point_data.size()) << name;
    for (const auto& [k, a] : src.point_data)
      EXPECT_EQ(doubles(back.point_data.at(k)), doubles(a)) << name << " " << k;
    ASSERT_EQ(back.cell_data.size(), src.cell_data.size()) << name;
    for (const auto& [k, a] : src.cell_data)
      EXPECT_EQ(doubles(back.cell_data.at(k)[0]), doubles(a[0])) << name << " " << k;
  }
}

TEST(TecplotWriter, MixedBlocksAreBricksWithRepeatedNodesAndLowerDimensionsNoted) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(
      std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0}, {6, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "tetra", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3}, {1, 4})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "wedge", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}, {1, 6})));
  m.cell_data["k"] = {mesh::Array::from_vector(std::vector<std::int32_t>{7}),
                      mesh::Array::from_vector(std::vector<std::int32_t>{8}),
                      mesh::Array::from_vector(std::vector<std::int32_t>{9})};
  m.field_data["f"] = mesh::Array::from_vector(std::vector<double>{1});
  const auto notes = mesh::write_mesh(m, tmp.file("m.dat"));
  ASSERT_EQ(notes.size(), 5u);
  EXPECT_EQ(notes[0],
            "cells[0] (triangle) is not written: the zone holds the mesh's 3-D cells only (one "
            "zone, as meshio writes)");
  EXPECT_EQ(notes[1],
            "cells[1] (tetra) is written as FEBRICK cells with repeated nodes (readers give them "
            "back as hexahedron)");
  EXPECT_EQ(notes[3], "cell_data 'k' is not float64: written as its numbers, read back as float64");
  EXPECT_EQ(notes[4], "field_data 'f' is not written: Tecplot holds no field data");
  const auto back = mesh::read_mesh(tmp.file("m.dat"));
  EXPECT_EQ(cell_types(back), (std::vector<std::string>{"hexahedron"}));
  EXPECT_EQ(ints(back.cells[0].connectivity), (I{0, 1, 2, 2, 3, 3, 3, 3, 0, 1, 4, 3, 2, 2, 5, 5}));
  EXPECT_EQ(doubles(back.cell_data.at("k")[0]), (D{8, 9}));
}

}  // namespace
