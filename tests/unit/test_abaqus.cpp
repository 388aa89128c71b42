// The Abaqus .inp reader and writer: the files of tests/data/abaqus (gmsh's, meshio's and
// hand-written corners; tools/make_abaqus.py), texts written here through a memfd (errors name
// the file and the line), and write -> read round trips. The comparisons with meshio are in
// tests/python/test_abaqus.py.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/abaqus/" + name;
}

using meshdock::test::doubles;
using meshdock::test::has_note;
using meshdock::test::ints;

// Reads `text` as a file named "t.inp" (no directory: an *INCLUDE has nowhere to go).
mesh::Mesh read_text(const std::string& text, const mesh::ReadOptions& options = {}) {
  return meshdock::test::read_text(
      [&](const mesh::InFile& f) { return mesh::read_abaqus(f, options); }, text, "t.inp");
}

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_abaqus(f); },
                                    text, "t.inp");
}

const mesh::Region* region(const mesh::Mesh& m, const std::string& name, mesh::RegionKind kind) {
  for (const auto& r : m.regions)
    if (r.name == name && r.kind == kind) return &r;
  return nullptr;
}

}  // namespace

TEST(AbaqusReader, GmshCubeHasItsBlocksAndElementSets) {
  const auto m = mesh::read_mesh(data("cube.gmsh.inp"));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{45, 3}));
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(m.cells[0].type, "triangle");
  EXPECT_EQ(m.cells[2].type, "tetra");
  EXPECT_EQ(m.cells[2].connectivity.dim(0), 100);
  EXPECT_EQ(m.cells[2].connectivity.dim(1), 4);
  const auto* solid = region(m, "solid", mesh::RegionKind::kCell);
  ASSERT_NE(solid, nullptr);
  EXPECT_EQ(solid->entries.dim(0), 100);
  EXPECT_EQ(ints(solid->entries)[0], 28);  // global: after the two triangle blocks
  EXPECT_EQ(solid->dim, 0);
  EXPECT_EQ(solid->tag, 0);
  // gmsh numbers elements past its points and lines: the ids are not kept, and that is noted.
  EXPECT_TRUE(has_note(m, "element ids are not 1..n"));
}

TEST(AbaqusReader, Hex20OverTwoLinesAndNodeSets) {
  const auto m = mesh::read_mesh(data("hex20.gmsh.inp"));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "hexahedron20");
  EXPECT_EQ(m.cells[0].connectivity.dim(0), 12);
  // "2, 1, 9, 53, 22, 41, 62, 99, 85, 11, 55, 56, 24, 65, 102, 103,\n89, 42, 64, 101, 86"
  const auto c = ints(m.cells[0].connectivity);
  EXPECT_EQ(std::vector<std::int64_t>(c.begin(), c.begin() + 20),
            (std::vector<std::int64_t>{0,  8,  52, 21,  40,  61, 98, 84, 10,  54,
                                       55, 23, 64, 101, 102, 88, 41, 63, 100, 85}));
  const auto m2 = mesh::read_mesh(data("tet10.gmsh.inp"));
  const auto* origin = region(m2, "origin", mesh::RegionKind::kPoint);
  ASSERT_NE(origin, nullptr);
  EXPECT_EQ(ints(origin->entries), (std::vector<std::int64_t>{0}));
  EXPECT_NE(region(m2, "solid", mesh::RegionKind::kPoint), nullptr);
  EXPECT_NE(region(m2, "solid", mesh::RegionKind::kCell), nullptr);
}

TEST(AbaqusReader, Corners) {
  const auto m = mesh::read_mesh(data("corners.inp"));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{8, 3}));
  EXPECT_EQ(doubles(m.points)[3 * 6], 1.0);  // "+1.0"
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "hexahedron");  // "type=c3d8" on the line after "*Element,"
  EXPECT_EQ(m.cells[1].type, "line3");
  // B32 "8, 10, 11,\n 12": end, middle, end -> line3's end, end, middle
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 2, 1, 4, 6, 5}));
  EXPECT_EQ(ints(region(m, "Top", mesh::RegionKind::kPoint)->entries),
            (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(ints(region(m, "bottom", mesh::RegionKind::kPoint)->entries),
            (std::vector<std::int64_t>{0, 1, 2, 3}));  // GENERATE 10, 13, 1
  EXPECT_EQ(ints(region(m, "corners", mesh::RegionKind::kPoint)->entries),
            (std::vector<std::int64_t>{0, 2, 6}));
  // "bottom, TOP": names of sets, case-insensitive
  EXPECT_EQ(ints(region(m, "both", mesh::RegionKind::kPoint)->entries),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // ELSET=Beam on *ELEMENT, then "*ELSET, ELSET=beam" again: one set, element 9 once
  EXPECT_EQ(ints(region(m, "Beam", mesh::RegionKind::kCell)->entries),
            (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(region(m, "beam", mesh::RegionKind::kCell), nullptr);
  EXPECT_EQ(ints(region(m, "All", mesh::RegionKind::kCell)->entries),
            (std::vector<std::int64_t>{0, 1, 2}));
  // One note for every keyword skipped, with counts; none for *HEADING.
  int skipped = 0;
  for (const auto& n : m.notes)
    if (n.find("keywords not read") != std::string::npos) {
      ++skipped;
      EXPECT_NE(n.find("*MATERIAL x1"), std::string::npos) << n;
      EXPECT_NE(n.find("*STEP x1"), std::string::npos) << n;
      EXPECT_EQ(n.find("HEADING"), std::string::npos) << n;
    }
  EXPECT_EQ(skipped, 1);
}

TEST(AbaqusReader, IncludesAreReadInPlaceRelativeToTheIncludingFile) {
  const auto m = mesh::read_mesh(data("main.inp"));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{4, 2}));  // 2 coordinates a node
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 0, 2, 3}));
  EXPECT_EQ(ints(region(m, "tris", mesh::RegionKind::kCell)->entries),
            (std::vector<std::int64_t>{0, 1}));
  try {
    mesh::read_mesh(data("cycle.inp"));
    FAIL() << "a cycle was read";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("cycle.inp:3: *INCLUDE cycle: cycle.inp -> cycle.inp"),
              std::string::npos)
        << e.what();
  }
  // Without open_sibling (an fd with no directory) an *INCLUDE is a ReadError.
  EXPECT_NE(error_of("*INCLUDE, INPUT=x.inp\n").find("t.inp:1: *INCLUDE 'x.inp'"),
            std::string::npos);
}

TEST(AbaqusReader, IncludeNamesOutsideTheDirectoryAndDeepChainsAreRefused) {
  const auto dir = fs::temp_directory_path() / ("abaqus-" + std::to_string(getpid()));
  fs::create_directories(dir);
  auto put = [&](const std::string& name, const std::string& text) {
    FILE* f = fopen((dir / name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(text.c_str(), f);
    fclose(f);
  };
  put("up.inp", "*INCLUDE, INPUT=../x.inp\n");
  put("abs.inp", "*INCLUDE, INPUT=/etc/passwd\n");
  for (int i = 0; i < 12; ++i)
    put("d" + std::to_string(i) + ".inp", "*INCLUDE, INPUT=d" + std::to_string(i + 1) + ".inp\n");
  auto error = [&](const std::string& name) {
    try {
      mesh::read_mesh((dir / name).string());
    } catch (const mesh::ReadError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("up.inp").find("up.inp:1: *INCLUDE '../x.inp' leads out"), std::string::npos);
  EXPECT_NE(error("abs.inp").find("abs.inp:1: *INCLUDE '/etc/passwd' is an absolute path"),
            std::string::npos);
  const auto deep = error("d0.inp");
  EXPECT_NE(deep.find("d8.inp:1: *INCLUDE nested deeper than 8: d0.inp -> d1.inp"),
            std::string::npos)
      << deep;
  fs::remove_all(dir);
}

TEST(AbaqusReader, PartsNumberedFromOneHaveIdsOfTheirOwn) {
  // No *INSTANCE: each part once, in file order, in its own ids (both number nodes from 1).
  const auto m = mesh::read_mesh(data("parts.inp"));
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}));
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{2, 3}));
  ASSERT_NE(region(m, "b", mesh::RegionKind::kCell), nullptr);
  EXPECT_EQ(ints(region(m, "b", mesh::RegionKind::kCell)->entries), (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(has_note(m, "2 *PART read once each in ids of its own"));
  // Instances placed: part b's copy translated by (0, 0, 5); a's set "a" is "a-1.a".
  const auto p = mesh::read_mesh(data("parts-apart.inp"));
  EXPECT_EQ(doubles(p.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 5, 1, 1, 5}));
  EXPECT_EQ(p.cells.size(), 2u);
  ASSERT_NE(region(p, "a-1.a", mesh::RegionKind::kCell), nullptr);
  EXPECT_EQ(ints(region(p, "a-1.a", mesh::RegionKind::kCell)->entries),
            (std::vector<std::int64_t>{0}));
  EXPECT_TRUE(has_note(p, "2 *INSTANCE of 2 parts expanded"));
  EXPECT_TRUE(has_note(p, "1 translated, 0 rotated"));
}

namespace {

// A CAE-like model: part "plate" (a unit square, nodes and elements from 1, with sets), part
// "pin" (placed nowhere), and an assembly of three instances of the plate.
const std::string kPlate = R"(*Heading
** a CAE-like file
*Part, name=plate
*Node
      1,           0.,           0.,           0.
      2,           1.,           0.,           0.
      3,           1.,           2.,           0.
      4,           0.,           2.,           0.
*Element, type=S4R
1, 1, 2, 3, 4
*Nset, nset=corner
 3,
*Elset, elset=all, generate
 1,  1,  1
*End Part
*Part, name=pin
*Node
1, 0., 0., 0.
*End Part
*Assembly, name=Assembly
*Instance, name=plate-1, part=plate
*End Instance
*Instance, name=plate-2, part=plate
 10., 0., 0.
 0., 0., 0., 0., 0., 1., 90.
*End Instance
*Instance, name=plate-3, part=plate
 10., 0., 0.
 10., 0., 0., 10., 0., 1., 180.
*End Instance
*Node
      1,           5.,           5.,           5.
*Nset, nset=RP
 1,
*Nset, nset=pick, instance=plate-2
 1, 2
*Nset, nset=mixed
 plate-1.1, plate-3.corner, RP
*Elset, elset=twos, instance=plate-2, generate
 1, 1, 1
*End Assembly
)";

}  // namespace

TEST(AbaqusReader, InstancesAreTranslatedThenRotated) {
  const auto m = read_text(kPlate);
  // plate-1 as defined; plate-2: +10 in x, then 90 degrees about z through the origin:
  // (x, y) -> (x + 10, y) -> (-y, x + 10); plate-3: +10 in x, then 180 degrees about the line
  // x = 10 (parallel to z): (x + 10, y) -> (10 - x, -y); then the assembly's node.
  const std::vector<double> want = {0,  0,  0, 1, 0,  0, 1,  2,  0, 0,  2,  0,  //
                                    0,  10, 0, 0, 11, 0, -2, 11, 0, -2, 10, 0,  //
                                    10, 0,  0, 9, 0,  0, 9,  -2, 0, 10, -2, 0,  //
                                    5,  5,  5};
  ASSERT_EQ(m.points.shape(), (std::vector<std::int64_t>{13, 3}));
  const auto got = doubles(m.points);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(m.cells[2].type, "quad");
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (std::vector<std::int64_t>{8, 9, 10, 11}));
  EXPECT_TRUE(has_note(m, "3 *INSTANCE of 2 parts expanded"));
  EXPECT_TRUE(has_note(m, "2 translated, 2 rotated"));
  EXPECT_TRUE(has_note(m, "parts without an *INSTANCE are not in the mesh: 'pin'"));
  EXPECT_TRUE(has_note(m, "1 nodes outside any part"));
}

TEST(AbaqusReader, PartAndAssemblySets) {
  const auto m = read_text(kPlate);
  auto entries = [&](const std::string& name, mesh::RegionKind kind) {
    const auto* r = region(m, name, kind);
    return r ? ints(r->entries) : std::vector<std::int64_t>{-1};
  };
  using K = mesh::RegionKind;
  // A cell region for each instance, its part's sets for each instance.
  EXPECT_EQ(entries("plate-2", K::kCell), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(entries("plate-1.corner", K::kPoint), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(entries("plate-3.corner", K::kPoint), (std::vector<std::int64_t>{10}));
  EXPECT_EQ(entries("plate-3.all", K::kCell), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(region(m, "pin", K::kCell), nullptr);
  // Assembly sets: INSTANCE=, "I.id", "I.set", the assembly's own node and set.
  EXPECT_EQ(entries("RP", K::kPoint), (std::vector<std::int64_t>{12}));
  EXPECT_EQ(entries("pick", K::kPoint), (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(entries("mixed", K::kPoint), (std::vector<std::int64_t>{0, 10, 12}));
  EXPECT_EQ(entries("twos", K::kCell), (std::vector<std::int64_t>{1}));
}

TEST(AbaqusReader, TwoDimensionalPartsStayTwoDimensional) {
  const std::string part =
      "*Part, name=p\n*Node\n1, 1., 0.\n2, 0., 1.\n*Element, type=CPS3\n1, 1, 2, 1\n*End Part\n"
      "*Assembly, name=a\n*Instance, name=i, part=p\n";
  // A quarter turn in the plane keeps 2 coordinates; a translation out of it makes 3.
  const auto flat = read_text(part + "1., 0., 0.\n0., 0., 0., 0., 0., 1., 90.\n*End Instance\n");
  EXPECT_EQ(flat.points.shape(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(doubles(flat.points), (std::vector<double>{0, 2, -1, 1}));
  const auto lifted = read_text(part + "0., 0., 3.\n*End Instance\n");
  EXPECT_EQ(doubles(lifted.points), (std::vector<double>{1, 0, 3, 0, 1, 3}));
}

TEST(AbaqusReader, PartAndInstanceErrorsNameTheLine) {
  const std::string part =
      "*Part, name=p\n*Node\n1, 0., 0.\n2, 1., 0.\n*Element, type=T2D2\n1, 1, 2\n*End Part\n"
      "*Assembly, name=a\n";
  auto has = [](const std::string& error, const std::string& what) {
    EXPECT_NE(error.find(what), std::string::npos) << error;
  };
  has(error_of(part + "*Instance, name=i, part=nope\n"),
      "t.inp:9: *INSTANCE 'i' names part 'nope', which no *PART before it defines");
  has(error_of(part + "*Instance, name=i, part=p\n*End Instance\n*Nset, nset=s, instance=j\n1\n"),
      "t.inp:11: set 's' names instance 'j', which no *INSTANCE before it defines");
  has(error_of(part + "*Instance, name=i, part=p\n1., x, 0.\n"),
      "t.inp:10: *INSTANCE 'i': expected 'tx, ty, tz', found '1., x, 0.'");
  has(error_of(part + "*Instance, name=i, part=p\n0, 0, 0\n0, 0, 0, 0, 0, 1\n"),
      "t.inp:11: *INSTANCE 'i': a rotation line has 7 values");
  has(error_of(part + "*Instance, name=i, part=p\n0, 0, 0\n1, 1, 1, 1, 1, 1, 30\n"),
      "t.inp:11: *INSTANCE 'i': the rotation axis has points a and b equal");
  has(error_of(part + "*Instance, name=i, part=p\n*Node\n1, 0., 0.\n"),
      "t.inp:10: *NODE inside *INSTANCE 'i': an instance's own nodes");
  has(error_of(part + "*Instance, name=i, part=p\n*End Instance\n*Nset, nset=s, instance=i\n7\n"),
      "t.inp:12: *NSET 's': node 7 does not exist in part 'p'");
  has(error_of(part + "*Instance, name=i, part=p\n*End Instance\n*Nset, nset=s\ni.nope\n"),
      "t.inp:12: set 's' names set 'nope', which is not defined before it in part 'p'");
  has(error_of("*Part, name=p\n*Node\n1, 0.\n*End Part\n*Part, name=q\n*Element, type=T2D2\n"
               "1, 1, 2\n*End Part\n"),
      "t.inp:7: element 1 in part 'q' refers to node 1, which no *NODE there defines");
  has(error_of(part + "*End Assembly\n*Part, name=P\n*End Part\n"),
      "t.inp:10: part 'P' is defined again");
  has(error_of("*Part, name=p\n*Node\n1, 0.\n1, 1.\n*End Part\n"),
      "t.inp:4: node id 1 is defined again in part 'p' (first t.inp:3)");
}

TEST(AbaqusReader, InstancesAreHeldToMaxBytes) {
  // One line an instance makes a copy of the part: 1000 of them are held to max_bytes before
  // anything is allocated.
  std::string text = "*Part, name=p\n*Node\n";
  for (int i = 1; i <= 100; ++i) text += std::to_string(i) + ", 0\n";
  text += "*End Part\n*Assembly, name=a\n";
  for (int i = 0; i < 1000; ++i)
    text += "*Instance, name=i" + std::to_string(i) + ", part=p\n*End Instance\n";
  mesh::ReadOptions options;
  options.max_bytes = 100000;  // 4800 bytes an instance counted: the 21st is over
  try {
    read_text(text, options);
    ADD_FAILURE() << "no SizeLimitError";
  } catch (const mesh::SizeLimitError& e) {
    EXPECT_NE(std::string(e.what()).find("t.inp:145: *INSTANCE 'i20' brings the mesh's arrays "
                                         "to 100800 bytes, over the limit of 100000"),
              std::string::npos)
        << e.what();
  }
  options.max_bytes = 0;
  EXPECT_EQ(read_text(text, options).num_points(), 100000);
}

TEST(AbaqusReader, MixedDimensionsAndMeshioB33) {
  const auto m = read_text("*NODE\n1, 0., 1.\n2, 1., 2., 3.\n3, 4.\n");
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 1, 0, 1, 2, 3, 4, 0, 0}));
  EXPECT_TRUE(has_note(m, "2 nodes have fewer than 3 coordinates"));
  // meshio writes line3 as B33H with 3 nodes (a 2-node beam in Abaqus): read as written.
  const auto b = read_text("*NODE\n1,0\n2,1\n3,2\n*ELEMENT,TYPE=B33H\n1,1,2,3\n");
  EXPECT_EQ(b.cells[0].type, "line3");
  EXPECT_EQ(ints(b.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  const auto b2 = read_text("*NODE\n1,0\n2,1\n*ELEMENT,TYPE=B33\n1,1,2\n");
  EXPECT_EQ(b2.cells[0].type, "line");
}

TEST(AbaqusReader, ErrorsNameTheFileAndTheLine) {
  const std::string nodes = "*NODE\n1, 0, 0\n2, 1, 0\n3, 0, 1\n";
  EXPECT_NE(error_of(nodes + "*ELEMENT, TYPE=XYZ9\n1, 1, 2\n")
                .find("t.inp:5: element type 'XYZ9' is not supported (read: T2D2, "),
            std::string::npos);
  EXPECT_NE(error_of(nodes + "*ELEMENT\n1, 1, 2\n").find("t.inp:5: *ELEMENT without TYPE="),
            std::string::npos);
  EXPECT_NE(
      error_of(nodes + "2, 5, 5\n").find("t.inp:5: node id 2 is defined again (first t.inp:3)"),
      std::string::npos);
  EXPECT_NE(error_of(nodes + "*ELEMENT, TYPE=CPS3\n1, 1, 2, 3\n1, 3, 2, 1\n")
                .find("t.inp:7: element id 1 is defined again (first t.inp:6)"),
            std::string::npos);
  EXPECT_NE(error_of(nodes + "*ELEMENT, TYPE=CPS3\n1, 1, 2, 9\n")
                .find("t.inp:6: element 1 refers to node 9, which no *NODE defines"),
            std::string::npos);
  EXPECT_NE(error_of(nodes + "*ELEMENT, TYPE=CPS3\n1, 1, 2\n*NSET, NSET=a\n1\n")
                .find("t.inp:6: element 1 has 2 nodes where CPS3 has 3 (before line 7)"),
            std::string::npos);
  EXPECT_NE(error_of(nodes + "*ELEMENT, TYPE=CPS3\n1, 1, 2, 3, 4\n")
                .find("t.inp:6: values after the 3 nodes of CPS3 element 1"),
            std::string::npos);
  EXPECT_NE(
      error_of(nodes + "*NSET, NSET=a\n1, 7\n").find("t.inp:6: *NSET 'a': node 7 does not exist"),
      std::string::npos);
  EXPECT_NE(error_of(nodes + "*NSET, NSET=a, GENERATE\n1, 100000000000, 1\n")
                .find("t.inp:6: *NSET 'a': node 4 does not exist"),
            std::string::npos);
  EXPECT_NE(error_of(nodes + "*ELSET, ELSET=e\nnope\n")
                .find("t.inp:6: set 'e' names set 'nope', which is not defined before it"),
            std::string::npos);
  EXPECT_NE(error_of("*NODE\n1, 0, x\n").find("t.inp:2: node 1: expected a coordinate, found 'x'"),
            std::string::npos);
  EXPECT_NE(error_of("1, 0, 0\n").find("t.inp:1: a data line before any keyword"),
            std::string::npos);
}

TEST(AbaqusWriter, RoundTripsExactlyWithSets) {
  auto m = mesh::read_mesh(data("corners.inp"));
  // Values that need every digit.
  m.points.as<double>()[0] = 0.1 + 0.2;
  m.points.as<double>()[1] = -1e-300;
  m.point_data["t"] = mesh::Array::of<double>({m.num_points()});
  const auto path =
      (fs::temp_directory_path() / ("abaqus-rt-" + std::to_string(getpid()) + ".inp")).string();
  const auto notes = mesh::write_mesh(m, path);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("point_data 't' is not written"), std::string::npos) << notes[0];
  const auto back = mesh::read_mesh(path);
  fs::remove(path);
  EXPECT_EQ(doubles(back.points), doubles(m.points));
  ASSERT_EQ(back.cells.size(), m.cells.size());
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    EXPECT_EQ(back.cells[b].type, m.cells[b].type);
    EXPECT_EQ(ints(back.cells[b].connectivity), ints(m.cells[b].connectivity));
  }
  ASSERT_EQ(back.regions.size(), m.regions.size());
  for (std::size_t r = 0; r < m.regions.size(); ++r) {
    EXPECT_EQ(back.regions[r].name, m.regions[r].name);
    EXPECT_EQ(back.regions[r].kind, m.regions[r].kind);
    EXPECT_EQ(ints(back.regions[r].entries), ints(m.regions[r].entries));
  }
  EXPECT_TRUE(back.notes.empty()) << back.notes[0];  // ids 1..n, nothing skipped
}

TEST(AbaqusWriter, RefusesBlocksAbaqusHasNoElementFor) {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({1, 3});
  auto c = mesh::Array::of<std::int64_t>({1, 1});
  c.as<std::int64_t>()[0] = 0;
  m.cells.push_back(mesh::CellBlock::fixed("vertex", std::move(c)));
  const auto path = (fs::temp_directory_path() / "abaqus-refused.inp").string();
  try {
    mesh::write_mesh(m, path);
    FAIL() << "a vertex block was written";
  } catch (const mesh::WriteError& e) {
    EXPECT_NE(std::string(e.what()).find("cells[0] (vertex) cannot be written to Abaqus .inp"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST(AbaqusReader, SetsNamingSetsStayBounded) {
  // Each set names the two before it: without keeping entries once each they would double.
  std::string text = "*NODE\n1, 0\n2, 1\n*NSET, NSET=s0\n1\n*NSET, NSET=s1\n2\n";
  for (int i = 2; i < 80; ++i)
    text += "*NSET, NSET=s" + std::to_string(i) + "\ns" + std::to_string(i - 1) + ", S" +
            std::to_string(i - 2) + ", s" + std::to_string(i - 1) + "\n";
  // A set defined again may name its earlier definition.
  text += "*NSET, NSET=s0\ns0, 2\n";
  const auto m = read_text(text);
  EXPECT_EQ(ints(region(m, "s79", mesh::RegionKind::kPoint)->entries),
            (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(ints(region(m, "s0", mesh::RegionKind::kPoint)->entries),
            (std::vector<std::int64_t>{0, 1}));
  // Naming itself on its first definition names nothing defined before it.
  EXPECT_NE(error_of("*NODE\n1, 0\n*NSET, NSET=a\na\n")
                .find("t.inp:4: set 'a' names set 'a', which is not defined before it"),
            std::string::npos);
  // An id of a set that no node has: the line it is on, found again.
  EXPECT_NE(error_of("*NODE\n1, 0\n*NSET, NSET=a\n1,\n** c\n\n1, 1, 5\n")
                .find("t.inp:7: *NSET 'a': node 5 does not exist"),
            std::string::npos);
}

TEST(AbaqusReader, SetsAreHeldToMaxBytes) {
  // A set naming a big set, defined again and again: each copy is the big set's entries.
  std::string text = "*NODE\n";
  for (int i = 1; i <= 1000; ++i) text += std::to_string(i) + ", 0\n";
  text += "*NSET, NSET=big, GENERATE\n1, 1000\n";
  for (int i = 0; i < 100; ++i) text += "*NSET, NSET=c" + std::to_string(i) + "\nbig\n";
  mesh::ReadOptions options;
  options.max_bytes = 200000;  // the points (8000 bytes) and 24 copies of big; c24 is one more
  try {
    read_text(text, options);
    ADD_FAILURE() << "no SizeLimitError";
  } catch (const mesh::SizeLimitError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "t.inp:1053: set 'c24' makes the mesh's arrays and sets 208000 bytes"),
              std::string::npos)
        << e.what();
  }
  options.max_bytes = 0;
  EXPECT_EQ(read_text(text, options).regions.size(), 101u);
}
