// The Kratos mdpa reader and writer: the files of tests/data/mdpa (meshio-written gmsh meshes and
// hand-written corners; tools/make_mdpa.py), texts written here through a memfd (errors name the
// file and the line), and round trips through write_mdpa. The comparisons with meshio are in
// tests/python/test_mdpa.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/mdpa/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::has_note;
using meshdock::test::ints;
using meshdock::test::path_error;

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_mdpa(f); }, text,
                                    "t.mdpa");
}

using I = std::vector<std::int64_t>;

void add_region(mesh::Mesh& m, const char* name, mesh::RegionKind kind,
                std::vector<std::int64_t> entries) {
  mesh::Region r;
  r.name = name;
  r.kind = kind;
  r.entries = mesh::Array::from_vector(entries);
  m.regions.push_back(std::move(r));
}

mesh::WriteOptions kratos() {
  mesh::WriteOptions o;
  o.format = "kratos";
  return o;
}

TEST(MdpaReader, MeshioWrittenGmshTrianglesMergeLineBlocks) {
  const auto m = mesh::read_mesh(data("gmsh-tri.mdpa"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (I{30, 3}));
  // meshio's two Line2D2 blocks make one block, as meshio reads them.
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"vertex", "line", "triangle"}));
  EXPECT_EQ(m.cells[1].size(), 8);
  EXPECT_EQ(m.cells[2].size(), 42);
  EXPECT_EQ(doubles(m.points)[4 * 3], 2.4999999999941089e-01);
  // temp = 2 x + 1 (scalar: point_data); vel, 3 values a line as meshio writes vectors: the
  // points; area (ElementalData): each of meshio's blocks 0, 1, .., the two line blocks merged.
  ASSERT_EQ(m.point_data.count("temp"), 1u);
  EXPECT_EQ(doubles(m.point_data.at("temp"))[1], 3.0);
  ASSERT_EQ(m.point_data.count("vel"), 1u);
  EXPECT_EQ(m.point_data.at("vel").shape(), (I{30, 3}));
  EXPECT_EQ(doubles(m.point_data.at("vel")), doubles(m.points));
  ASSERT_EQ(m.cell_data.count("area"), 1u);
  const auto& area = m.cell_data.at("area");
  ASSERT_EQ(area.size(), 3u);
  EXPECT_EQ(area[1].shape(), (I{8}));
  EXPECT_EQ(doubles(area[0]), (std::vector<double>{0}));
  EXPECT_EQ(doubles(area[1]), (std::vector<double>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(doubles(area[2])[41], 41.0);
  EXPECT_TRUE(m.notes.empty());
}

TEST(MdpaReader, EveryKindMeshioWrites) {
  const auto m2 = mesh::read_mesh(data("every2d.mdpa"));
  EXPECT_EQ(cell_types(m2), (std::vector<std::string>{"vertex", "line", "line3", "triangle",
                                                      "triangle6", "quad", "quad8", "quad9"}));
  EXPECT_EQ(ints(m2.cells[7].connectivity), (I{12, 14, 24, 22, 13, 19, 23, 17, 18}));
  EXPECT_TRUE(m2.notes.empty());
  const auto m3 = mesh::read_mesh(data("every3d.mdpa"));
  EXPECT_EQ(cell_types(m3),
            (std::vector<std::string>{"triangle", "tetra", "tetra10", "wedge", "hexahedron",
                                      "hexahedron20", "hexahedron27"}));
  // Node order as in the file (meshio 5.0 reorders neither way).
  I seq(27);
  for (std::int64_t i = 0; i < 27; ++i) seq[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(ints(m3.cells[6].connectivity), seq);
}

TEST(MdpaReader, CornersIdsCommentsKratosNamesDataAndNestedSubModelParts) {
  for (const char* name : {"corners.mdpa", "crlf.mdpa"}) {
    const auto m = mesh::read_mesh(data(name));
    mesh::validate_mesh(m, "t");
    EXPECT_EQ(doubles(m.points),
              (std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 2, 0.5, -1.5e-3}))
        << name;
    EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "quad", "line"}));
    EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 2, 0, 2, 3}));
    EXPECT_EQ(ints(m.cells[1].connectivity), (I{1, 4, 2, 2}));
    EXPECT_EQ(ints(m.cells[2].connectivity), (I{0, 1, 1, 4}));
    const auto t = doubles(m.point_data.at("TEMPERATURE"));
    EXPECT_EQ(t[0], 300.0);
    EXPECT_TRUE(std::isnan(t[1]));
    EXPECT_EQ(t[2], 310.5);
    EXPECT_EQ(t[4], -4.0);
    EXPECT_EQ(doubles(m.point_data.at("PRESSURE"))[1], 7.25);
    // "10 0 [3] (1.0, 2.0, 3.0)": Kratos' vector with its fixed flag; node 10 is row 0.
    const auto v = doubles(m.point_data.at("VELOCITY"));
    ASSERT_EQ(v.size(), 15u);
    EXPECT_EQ(std::vector<double>(v.begin(), v.begin() + 3), (std::vector<double>{1, 2, 3}));
    EXPECT_TRUE(std::isnan(v[3]));
    // ElementalData THICKNESS "5 0.1": element 5 is the triangles' first cell.
    const auto& thick = m.cell_data.at("THICKNESS");
    ASSERT_EQ(thick.size(), 3u);
    EXPECT_EQ(doubles(thick[0])[0], 0.1);
    EXPECT_TRUE(std::isnan(doubles(thick[0])[1]));
    EXPECT_TRUE(std::isnan(doubles(thick[2])[1]));
    ASSERT_EQ(m.regions.size(), 5u);
    EXPECT_EQ(m.regions[0].name, "Body");
    EXPECT_EQ(m.regions[0].kind, mesh::RegionKind::kPoint);
    EXPECT_EQ(ints(m.regions[0].entries), (I{0, 1, 2, 3}));
    EXPECT_EQ(m.regions[1].name, "Body");
    EXPECT_EQ(m.regions[1].kind, mesh::RegionKind::kCell);
    EXPECT_EQ(ints(m.regions[1].entries), (I{0, 1}));
    EXPECT_EQ(m.regions[1].dim, 2);
    EXPECT_EQ(m.regions[2].name, "Body.Left");
    EXPECT_EQ(ints(m.regions[2].entries), (I{0, 3}));
    EXPECT_EQ(m.regions[3].name, "Body.Left.Corner");
    EXPECT_EQ(ints(m.regions[3].entries), (I{0}));
    EXPECT_EQ(m.regions[4].name, "Boundary");
    EXPECT_EQ(ints(m.regions[4].entries), (I{2, 4, 3}));  // element 9, conditions 2, 1
    for (const char* n :
         {"block 'ModelPartData' is not read", "block 'Properties 1' is not read",
          "block 'Table 1 TIME DISPLACEMENT_X' is not read", "TEMPERATURE: the fixed flags",
          "VELOCITY: the fixed flags", "property ids are not kept"})
      EXPECT_TRUE(has_note(m, n)) << n;
    EXPECT_EQ(m.notes.size(), 6u) << name;
  }
}

TEST(MdpaReader, KratosSolidAndSurfaceNames) {
  const auto m = mesh::read_mesh(data("kratos3d.mdpa"));
  EXPECT_EQ(cell_types(m),
            (std::vector<std::string>{"hexahedron", "tetra", "wedge", "quad", "triangle"}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (I{0, 1, 3, 4, 5, 7}));
  EXPECT_TRUE(has_note(m, "kratos3d.mdpa:28: block 'Geometries Triangle3D3' is not read"));
}

TEST(MdpaReader, ErrorsNameFileLineAndWhatWasExpected) {
  EXPECT_NE(path_error(data("bad-node.mdpa"))
                .find("bad-node.mdpa:7: node 9 is in no Nodes block before this line"),
            std::string::npos);
  const auto name = path_error(data("bad-name.mdpa"));
  EXPECT_NE(name.find("bad-name.mdpa:7: unknown Elements name 'MyOwnThing': known are Line2D2"),
            std::string::npos)
      << name;
  EXPECT_NE(name.find("Element2D3N"), std::string::npos);
  EXPECT_NE(path_error(data("bad-count.mdpa"))
                .find("bad-count.mdpa:9: a Triangle2D3 (triangle) has 3 nodes; the line lists 2"),
            std::string::npos);
  EXPECT_NE(path_error(data("unclosed.mdpa"))
                .find("unclosed.mdpa:3: the file ends in a Nodes block (no End)"),
            std::string::npos);
  EXPECT_NE(error_of("Begin Nodes\n 1 0 0 0\n 1 1 0 0\nEnd Nodes\n")
                .find("t.mdpa:3: node id 1 is given twice"),
            std::string::npos);
  EXPECT_NE(
      error_of("Begin Nodes\n 1 0 0\nEnd Nodes\n").find("t.mdpa:2: node 1: expected 'id x y z'"),
      std::string::npos);
  EXPECT_NE(error_of("Nodes\n").find("t.mdpa:1: expected a block's 'Begin <Name>' line"),
            std::string::npos);
  EXPECT_NE(error_of("Begin SubModelPart P\n Begin SubModelPartElements\n 4\n End "
                     "SubModelPartElements\nEnd SubModelPart\n")
                .find("t.mdpa:3: element 4 is in no Elements block before this line"),
            std::string::npos);
  EXPECT_NE(error_of("Begin SubModelPart P\n").find("t.mdpa:1: SubModelPart P has no 'End"),
            std::string::npos);
}

// What a hostile file's shape could make slow or large: a note a skipped block (each names its
// line: a scan from the start), SubModelParts nested without end (each name holds its parents'),
// many blocks and long SubModelParts (a cell's block found by a search). Cells of blocks with an
// empty block between them are still found.
TEST(MdpaReader, ManyBlocksDeepNestingAndEmptyBlocksStayBounded) {
  std::string text = "Begin Nodes\n1 0 0 0\n2 1 0 0\n3 0 1 0\nEnd Nodes\n";
  for (int i = 0; i < 100; ++i) text += "Begin Table " + std::to_string(i) + "\n1 2\nEnd Table\n";
  text +=
      "Begin Elements Element2D3N\n10 0 1 2 3\n11 0 3 2 1\nEnd Elements\n"
      "Begin Elements Element2D4N\nEnd Elements\n"
      "Begin Elements Element2D2N\n12 0 1 2\nEnd Elements\n"
      "Begin SubModelPart P\nBegin SubModelPartElements\n12 10\nEnd SubModelPartElements\n"
      "End SubModelPart\n";
  const auto m = meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_mdpa(f); },
                                           text, "t.mdpa");
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "line"}));
  ASSERT_EQ(m.regions.size(), 1u);
  EXPECT_EQ(ints(m.regions[0].entries), (I{2, 0}));
  EXPECT_EQ(m.regions[0].dim, 2);
  EXPECT_EQ(m.notes.size(), 33u);
  EXPECT_TRUE(has_note(m, "t.mdpa:6: block 'Table 0' is not read"));
  EXPECT_TRUE(has_note(m, "t.mdpa:9: block 'Table 1' is not read"));  // lines counted on
  EXPECT_TRUE(has_note(m, "t.mdpa:99: block 'Table 31' is not read"));
  EXPECT_TRUE(has_note(m, "t.mdpa: 68 more blocks are not read"));

  std::string deep = "Begin Nodes\n1 0 0 0\nEnd Nodes\n";
  for (int i = 0; i < 65; ++i) deep += "Begin SubModelPart p\n";
  EXPECT_NE(error_of(deep).find("t.mdpa:68: SubModelParts nested more than 64 deep"),
            std::string::npos)
      << error_of(deep);
}

mesh::Mesh read_text(const std::string& text) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_mdpa(f); }, text,
                                   "t.mdpa");
}

// Data blocks in every layout Kratos and meshio write, and each layout refused: read, NaN where
// a block lists nothing, or skipped with a note naming the line; an id no block gives fails.
TEST(MdpaReader, DataBlocksInKratosAndMeshioLayouts) {
  const std::string head =
      "Begin Nodes\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 1 1 0\nEnd Nodes\n"
      "Begin Elements Element2D3N\n7 0 1 2 3\n8 0 2 4 3\nEnd Elements\n"
      "Begin Conditions LineCondition2D2N\n20 0 1 2\n21 0 2 4\nEnd Conditions\n";
  const auto m = read_text(
      head +
      "Begin NodalData DISP\n1 1 [3] (0.5, -1, 2e-3)\n3 0 [3](1,2,3) // a comment\nEnd NodalData\n"
      "Begin NodalData UV\n2 0.5 0.25\n4 1 2\nEnd NodalData\n"
      "Begin NodalData FLAG\n2 0 7.5\n4 1 8.5\nEnd NodalData\n"
      "Begin ElementalData LOCAL_AXIS\n8 [2] ( 0.0 , 1.0 )\nEnd ElementalData\n"
      "Begin ElementalData RHO\n7 2.5\nEnd ElementalData RHO\n"
      "Begin ConditionalData RHO\n21 -1\nEnd ConditionalData\n"
      "Begin ConditionalData PRESSURE\n20 1 2 3\n21 4 5 6\nEnd ConditionalData\n"
      "Begin ElementalData M\n7 [2,2] ((1,0),(0,1))\nEnd ElementalData\n"
      "Begin ElementalData MIXED\n7 1\n8 1 2\nEnd ElementalData\n"
      "Begin ElementalData WORD\n7 abc\nEnd ElementalData\n"
      "Begin ConditionalData LOCAL_AXIS\n20 5\nEnd ConditionalData\n");
  ASSERT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "line"}));
  const auto nan = std::numeric_limits<double>::quiet_NaN();
  const auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
    return true;
  };
  EXPECT_EQ(m.point_data.at("DISP").shape(), (I{4, 3}));
  EXPECT_TRUE(same(doubles(m.point_data.at("DISP")),
                   {0.5, -1, 2e-3, nan, nan, nan, 1, 2, 3, nan, nan, nan}));
  // "id a b" with an a that is not 0 or 1: a 2-vector; with every a 0 or 1: a flag and a value.
  EXPECT_EQ(m.point_data.at("UV").shape(), (I{4, 2}));
  EXPECT_TRUE(same(doubles(m.point_data.at("UV")), {nan, nan, 0.5, 0.25, nan, nan, 1, 2}));
  EXPECT_EQ(m.point_data.at("FLAG").shape(), (I{4}));
  EXPECT_TRUE(same(doubles(m.point_data.at("FLAG")), {nan, 7.5, nan, 8.5}));
  // Elements and conditions of one name fill one entry; its blocks are the cell blocks.
  ASSERT_EQ(m.cell_data.at("RHO").size(), 2u);
  EXPECT_TRUE(same(doubles(m.cell_data.at("RHO")[0]), {2.5, nan}));
  EXPECT_TRUE(same(doubles(m.cell_data.at("RHO")[1]), {nan, -1}));
  EXPECT_EQ(m.cell_data.at("LOCAL_AXIS")[0].shape(), (I{2, 2}));
  EXPECT_TRUE(same(doubles(m.cell_data.at("LOCAL_AXIS")[0]), {nan, nan, 0, 1}));
  EXPECT_EQ(m.cell_data.at("PRESSURE")[1].shape(), (I{2, 3}));
  EXPECT_TRUE(same(doubles(m.cell_data.at("PRESSURE")[1]), {1, 2, 3, 4, 5, 6}));
  for (const char* gone : {"M", "MIXED", "WORD"}) EXPECT_EQ(m.cell_data.count(gone), 0u) << gone;
  for (const char* n :
       {"t.mdpa:15: NodalData DISP: the fixed flags are not kept",
        "t.mdpa:23: NodalData FLAG: the fixed flags are not kept",
        "t.mdpa:41: ElementalData M is not read: its lines are not 'id value', 'id v1 .. vk' or "
        "'id [k] (v1, .., vk)'",
        "t.mdpa:45: ElementalData MIXED is not read: its lines do not all hold the same number",
        "t.mdpa:48: ElementalData WORD is not read",
        "t.mdpa:50: ConditionalData LOCAL_AXIS is not read: its values are one a row, where an "
        "earlier block of that name holds 2"})
    EXPECT_TRUE(has_note(m, n)) << n;
  EXPECT_EQ(m.notes.size(), 6u);

  EXPECT_NE(error_of(head + "Begin ElementalData RHO\n7 1\n9 2\nEnd ElementalData\n")
                .find("t.mdpa:17: element 9 is in no Elements block before this line"),
            std::string::npos);
  EXPECT_NE(error_of(head + "Begin ConditionalData P\n7 1\nEnd ConditionalData\n")
                .find("t.mdpa:16: condition 7 is in no Conditions block before this line"),
            std::string::npos);
  EXPECT_NE(error_of(head + "Begin NodalData T\n5 1\nEnd NodalData\n")
                .find("t.mdpa:16: node 5 is in no Nodes block before this line"),
            std::string::npos);
  EXPECT_NE(error_of(head + "Begin ElementalData T\n7 1\n")
                .find("the file ends in a ElementalData block (no End)"),
            std::string::npos);
}

struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("mdpaw") {}
};

TEST(MdpaWriter, RoundTripKeepsPointsBlocksDataAndRegions) {
  Tmp tmp;
  for (const char* name : {"gmsh-tri.mdpa", "gmsh-tet.mdpa", "every2d.mdpa", "every3d.mdpa",
                           "corners.mdpa", "kratos3d.mdpa"}) {
    const auto src = mesh::read_mesh(data(name));
    mesh::write_mesh(src, tmp.file("o.mdpa"));
    const auto back = mesh::read_mesh(tmp.file("o.mdpa"));
    EXPECT_EQ(doubles(back.points), doubles(src.points)) << name;
    ASSERT_EQ(cell_types(back), cell_types(src)) << name;
    for (std::size_t b = 0; b < src.cells.size(); ++b)
      EXPECT_EQ(ints(back.cells[b].connectivity), ints(src.cells[b].connectivity)) << name;
    ASSERT_EQ(back.point_data.size(), src.point_data.size()) << name;
    for (const auto& [k, a] : src.point_data) {
      const auto x = doubles(a), y = doubles(back.point_data.at(k));
      for (std::size_t i = 0; i < x.size(); ++i)
        EXPECT_TRUE(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) << name << k;
    }
    ASSERT_EQ(back.cell_data.size(), src.cell_data.size()) << name;
    for (const auto& [k, blocks] : src.cell_data)
      for (std::size_t b = 0; b < blocks.size(); ++b) {
        const auto x = doubles(blocks[b]), y = doubles(back.cell_data.at(k)[b]);
        ASSERT_EQ(x.size(), y.size()) << name << k;
        for (std::size_t i = 0; i < x.size(); ++i)
          EXPECT_TRUE(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) << name << k;
      }
    ASSERT_EQ(back.regions.size(), src.regions.size()) << name;
    for (std::size_t r = 0; r < src.regions.size(); ++r) {
      EXPECT_EQ(back.regions[r].name, src.regions[r].name);
      EXPECT_EQ(back.regions[r].kind, src.regions[r].kind);
      EXPECT_EQ(ints(back.regions[r].entries), ints(src.regions[r].entries));
    }
  }
}

TEST(MdpaWriter, MeshiosNamesPropertyZeroAndNotes) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 1, 0, 0, 1, 1, 1, 0.5, 2}, {5, 2});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "pyramid", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 3, 2, 4}, {1, 5})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "line", mesh::Array::from_vector(std::vector<std::int64_t>{3, 4}, {1, 2})));
  m.field_data["F"] = mesh::Array::from_vector(std::vector<std::int64_t>{1, 2});
  mesh::Region side;
  side.name = "s";
  side.kind = mesh::RegionKind::kSide;
  side.entries = mesh::Array::from_vector(std::vector<std::int64_t>{0, 0}, {1, 2});
  m.regions.push_back(side);
  mesh::Region cells;
  cells.name = "all";
  cells.kind = mesh::RegionKind::kCell;
  cells.entries = mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2});
  m.regions.push_back(cells);
  const auto notes = mesh::write_mesh(m, tmp.file("w.mdpa"));
  const auto back = mesh::read_mesh(tmp.file("w.mdpa"));
  EXPECT_EQ(cell_types(back), (std::vector<std::string>{"triangle", "line"}));
  EXPECT_EQ(ints(back.cells[1].connectivity), (I{3, 4}));
  EXPECT_EQ(doubles(back.points)[14], 0.0);  // z = 0 added
  ASSERT_EQ(back.regions.size(), 1u);
  EXPECT_EQ(ints(back.regions[0].entries), (I{0, 1}));  // the pyramid's cell is not written
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  for (const char* n : {"points have 2 coordinates", "cells[1] (pyramid) is not written",
                        "field_data 'F' is not written", "region 's' is not written",
                        "region 'all': 1 cells of blocks not written"})
    EXPECT_NE(all.find(n), std::string::npos) << n << "\n" << all;
  EXPECT_TRUE(back.notes.empty());
}

// Format "kratos": what Kratos' ModelPartIO loads. A 3-D mesh's solids are Elements under
// KratosCore's generic names, its lower cells Conditions (numbered apart), data lines in Kratos'
// form, SubModelParts with their cells' nodes; read back to the same mesh.
TEST(MdpaWriter, KratosLayoutElementsConditionsDataAndParts) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(
      std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2}, {6, 3});
  auto block = [&](const char* type, std::vector<std::int64_t> c, std::int64_t npc) {
    const auto rows = static_cast<std::int64_t>(c.size()) / npc;
    m.cells.push_back(mesh::CellBlock::fixed(type, mesh::Array::from_vector(c, {rows, npc})));
  };
  block("tetra", {0, 1, 2, 3, 1, 2, 3, 4}, 4);
  block("triangle", {0, 1, 2}, 3);
  block("pyramid", {0, 1, 4, 2, 3}, 5);
  block("line", {3, 4}, 2);
  block("vertex", {5}, 1);
  m.point_data["TEMPERATURE"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6.5});
  m.point_data["VELOCITY"] = mesh::Array::from_vector(
      std::vector<double>{0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6}, {6, 3});
  m.point_data["gmsh:dim_tags"] = mesh::Array::from_vector(std::vector<double>(6, 0));
  m.cell_data["DENSITY"] = {mesh::Array::from_vector(std::vector<double>{7, 8}),
                            mesh::Array::from_vector(std::vector<double>{9}),
                            mesh::Array::from_vector(std::vector<double>{10}),
                            mesh::Array::from_vector(std::vector<double>{11}),
                            mesh::Array::from_vector(std::vector<double>{12})};
  add_region(m, "solid", mesh::RegionKind::kCell, {0, 1});
  add_region(m, "inlet", mesh::RegionKind::kCell, {2, 4});  // the triangle and the line
  add_region(m, "inlet", mesh::RegionKind::kPoint, {5});
  const auto notes = mesh::write_mesh(m, tmp.file("k.mdpa"), kratos());
  const auto text = meshdock::test::slurp(tmp.file("k.mdpa"));
  for (const char* want :
       {"Begin Elements Element3D4N\n 1 0 1 2 3 4\n 2 0 2 3 4 5\nEnd Elements\n",
        "Begin Conditions SurfaceCondition3D3N\n 1 0 1 2 3\nEnd Conditions\n",
        "Begin Conditions LineCondition3D2N\n 2 0 4 5\nEnd Conditions\n",
        "Begin Conditions PointCondition3D1N\n 3 0 6\nEnd Conditions\n",
        "Begin NodalData TEMPERATURE\n1 0 1\n2 0 2\n", "6 0 6.5\nEnd NodalData TEMPERATURE\n",
        "Begin NodalData VELOCITY\n1 0 [3] (0, 0, 1)\n2 0 [3] (0, 0, 2)\n",
        "Begin ElementalData DENSITY\n1 7\n2 8\nEnd ElementalData DENSITY\n",
        "Begin ConditionalData DENSITY\n1 9\n2 11\n3 12\nEnd ConditionalData DENSITY\n",
        "Begin SubModelPart solid\n Begin SubModelPartNodes\n  1\n  2\n  3\n  4\n  5\n End "
        "SubModelPartNodes\n Begin SubModelPartElements\n  1\n  2\n End SubModelPartElements\nEnd "
        "SubModelPart\n",
        "Begin SubModelPart inlet\n Begin SubModelPartNodes\n  1\n  2\n  3\n  4\n  5\n  6\n End "
        "SubModelPartNodes\n Begin SubModelPartConditions\n  1\n  2\n End "
        "SubModelPartConditions\nEnd SubModelPart\n"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n---\n" << text;
  EXPECT_EQ(text.find("gmsh:dim_tags"), std::string::npos);
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  for (const char* n : {"cells[2] (pyramid) is not written: the Kratos layout writes vertex",
                        "point_data 'gmsh:dim_tags' is not written: Kratos reads data only",
                        "region 'inlet': 5 nodes of its cells are added to its SubModelPartNodes"})
    EXPECT_NE(all.find(n), std::string::npos) << n << "\n" << all;

  const auto back = mesh::read_mesh(tmp.file("k.mdpa"));
  EXPECT_EQ(doubles(back.points), doubles(m.points));
  EXPECT_EQ(cell_types(back), (std::vector<std::string>{"tetra", "triangle", "line", "vertex"}));
  EXPECT_EQ(ints(back.cells[0].connectivity), (I{0, 1, 2, 3, 1, 2, 3, 4}));
  EXPECT_EQ(doubles(back.point_data.at("VELOCITY")), doubles(m.point_data.at("VELOCITY")));
  EXPECT_EQ(back.point_data.at("VELOCITY").dim(1), 3);
  EXPECT_EQ(doubles(back.point_data.at("TEMPERATURE")), doubles(m.point_data.at("TEMPERATURE")));
  const auto& density = back.cell_data.at("DENSITY");
  ASSERT_EQ(density.size(), 4u);
  EXPECT_EQ(doubles(density[0]), (std::vector<double>{7, 8}));
  EXPECT_EQ(doubles(density[1]), (std::vector<double>{9}));
  EXPECT_EQ(doubles(density[2]), (std::vector<double>{11}));
  EXPECT_EQ(doubles(density[3]), (std::vector<double>{12}));
  std::map<std::string, I> regions;
  for (const auto& r : back.regions)
    regions[r.name + (r.kind == mesh::RegionKind::kPoint ? ":points" : ":cells")] = ints(r.entries);
  EXPECT_EQ(regions["solid:cells"], (I{0, 1}));
  EXPECT_EQ(regions["inlet:cells"], (I{2, 3}));  // the triangle and the line, pyramid gone
  EXPECT_EQ(regions["inlet:points"], (I{0, 1, 2, 3, 4, 5}));
}

// The domain and the dimension decide the names: a flat mesh is 2-D (Element2D3N,
// LineCondition2D2N), a surface in 3-D has triangle elements, and its quads, which no generic
// element takes there, go as SurfaceCondition3D4N (noted); types whose node order Kratos does not
// share with VTK are left.
TEST(MdpaWriter, KratosLayoutNamesByDomainAndDimension) {
  Tmp tmp;
  auto names = [&](std::vector<double> pts, std::int64_t dim,
                   std::vector<std::pair<const char*, std::vector<std::int64_t>>> blocks,
                   std::string& all_notes) {
    mesh::Mesh m;
    const auto n = static_cast<std::int64_t>(pts.size()) / dim;
    m.points = mesh::Array::from_vector(pts, {n, dim});
    for (auto& [type, c] : blocks) {
      std::int64_t k = std::string(type) == "triangle"       ? 3
                       : std::string(type) == "quad"         ? 4
                       : std::string(type) == "line"         ? 2
                       : std::string(type) == "triangle6"    ? 6
                       : std::string(type) == "hexahedron20" ? 20
                                                             : 1;
      m.cells.push_back(mesh::CellBlock::fixed(
          type, mesh::Array::from_vector(c, {static_cast<std::int64_t>(c.size()) / k, k})));
    }
    for (const auto& note : mesh::write_mesh(m, tmp.file("n.mdpa"), kratos()))
      all_notes += note + "\n";
    std::string heads;
    std::istringstream text(meshdock::test::slurp(tmp.file("n.mdpa")));
    for (std::string line; std::getline(text, line);)
      if (line.rfind("Begin Elements", 0) == 0 || line.rfind("Begin Conditions", 0) == 0)
        heads += line.substr(6) + ";";
    return heads;
  };
  std::string notes;
  // 2-D points; z = 0 everywhere is 2-D as well.
  EXPECT_EQ(names({0, 0, 1, 0, 0, 1, 1, 1, 0.5, 0.5, 2, 2}, 2,
                  {{"triangle", {0, 1, 2}},
                   {"quad", {0, 1, 3, 2}},
                   {"line", {0, 1}},
                   {"triangle6", {0, 1, 2, 3, 4, 5}}},
                  notes),
            "Elements Element2D3N;Elements Element2D4N;Conditions LineCondition2D2N;Elements "
            "Element2D6N;");
  EXPECT_EQ(names({0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}, 3, {{"triangle", {0, 1, 2}}}, notes),
            "Elements Element2D3N;");
  notes.clear();
  EXPECT_EQ(names({0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 1}, 3,
                  {{"triangle", {0, 1, 2}}, {"quad", {0, 1, 3, 2}}, {"line", {0, 3}}}, notes),
            "Elements Element3D3N;Conditions SurfaceCondition3D4N;Conditions LineCondition3D2N;");
  EXPECT_NE(notes.find("cells[1] (quad) is written as Conditions SurfaceCondition3D4N: KratosCore "
                       "has no element for a quad in a 3-D domain"),
            std::string::npos)
      << notes;
  notes.clear();
  std::vector<double> cube;
  for (int i = 0; i < 20; ++i)
    cube.insert(cube.end(), {double(i % 2), double(i / 2 % 2), double(i)});
  std::vector<std::int64_t> hex20(20);
  for (int i = 0; i < 20; ++i) hex20[i] = i;
  EXPECT_EQ(names(cube, 3, {{"hexahedron20", hex20}, {"triangle", {0, 1, 2}}}, notes),
            "Conditions SurfaceCondition3D3N;");
  EXPECT_NE(notes.find("cells[0] (hexahedron20) is not written"), std::string::npos) << notes;
}

// Kratos nests SubModelParts; read_mdpa names a nested one "outer.inner". The Kratos layout
// writes such names nested (ancestors a name implies as parts of their own), read back to the
// same names; a name Kratos cannot nest is noted.
TEST(MdpaWriter, KratosLayoutNestsDottedSubModelParts) {
  Tmp tmp;
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "tetra", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3}, {1, 4})));
  add_region(m, "outer", mesh::RegionKind::kCell, {0});
  add_region(m, "outer.inner", mesh::RegionKind::kPoint, {2});
  add_region(m, "a.b.c", mesh::RegionKind::kPoint, {1, 3});
  add_region(m, "bad..name", mesh::RegionKind::kPoint, {0});
  const auto notes = mesh::write_mesh(m, tmp.file("n.mdpa"), kratos());
  const auto text = meshdock::test::slurp(tmp.file("n.mdpa"));
  EXPECT_NE(text.find("Begin SubModelPart outer\n Begin SubModelPartNodes\n  1\n  2\n  3\n  4\n"
                      " End SubModelPartNodes\n Begin SubModelPartElements\n  1\n End "
                      "SubModelPartElements\nBegin SubModelPart inner\n Begin SubModelPartNodes\n"
                      "  3\n End SubModelPartNodes\nEnd SubModelPart\n\nEnd SubModelPart\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Begin SubModelPart a\nBegin SubModelPart b\nBegin SubModelPart c\n"),
            std::string::npos)
      << text;
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  EXPECT_NE(all.find("region 'bad..name' is not written: Kratos nests SubModelParts by the dots"),
            std::string::npos)
      << all;
  const auto back = mesh::read_mesh(tmp.file("n.mdpa"));
  std::vector<std::string> names;
  for (const auto& r : back.regions)
    names.push_back(r.name + (r.kind == mesh::RegionKind::kPoint ? ":points" : ":cells") + "=" +
                    std::to_string(ints(r.entries).size()));
  EXPECT_EQ(names, (std::vector<std::string>{"outer:points=4", "outer:cells=1",
                                             "outer.inner:points=1", "a.b.c:points=2"}));
}

// Every file of tests/data/meshes through the Kratos layout and back: the points (2-D ones with
// z = 0), the written blocks' cells in order (consecutive blocks of a type read back as one),
// and every block either written or noted.
TEST(MdpaWriter, KratosLayoutEveryMeshFileReadsBack) {
  Tmp tmp;
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MESHDOCK_TEST_DATA) + "/meshes")) {
    const auto ext = entry.path().extension().string();
    if (ext != ".msh" && ext != ".vtu" && ext != ".vtk" && ext != ".stl" && ext != ".off" &&
        ext != ".obj" && ext != ".ply")
      continue;
    const auto name = entry.path().filename().string();
    SCOPED_TRACE(name);
    ++files;
    const auto src = mesh::read_mesh(entry.path().string());
    const auto notes = mesh::write_mesh(src, tmp.file("k.mdpa"), kratos());
    const auto back = mesh::read_mesh(tmp.file("k.mdpa"));
    const auto d = src.points.dim(1), n = src.points.dim(0);
    ASSERT_EQ(back.points.dim(0), n);
    const auto p = doubles(src.points), q = doubles(back.points);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < 3; ++k)
        ASSERT_EQ(q[static_cast<std::size_t>(3 * i + k)],
                  k < d ? p[static_cast<std::size_t>(d * i + k)] : 0.0);
    std::vector<std::string> types;
    std::vector<std::int64_t> nodes;
    for (std::size_t b = 0; b < src.cells.size(); ++b) {
      const bool noted = std::any_of(notes.begin(), notes.end(), [&](const std::string& x) {
        return x.rfind("cells[" + std::to_string(b) + "] (", 0) == 0 &&
               x.find("is not written") != std::string::npos;
      });
      if (noted) continue;
      if (types.empty() || types.back() != src.cells[b].type) types.push_back(src.cells[b].type);
      const auto c = ints(src.cells[b].connectivity);
      nodes.insert(nodes.end(), c.begin(), c.end());
    }
    std::vector<std::int64_t> got;
    for (const auto& b : back.cells) {
      const auto c = ints(b.connectivity);
      got.insert(got.end(), c.begin(), c.end());
    }
    EXPECT_EQ(cell_types(back), types);
    EXPECT_EQ(got, nodes);
  }
  EXPECT_EQ(files, 101);
}

}  // namespace
