// The AVS UCD reader: the files of tests/data/ucd (meshio's and deal.II-style ones;
// tools/make_ucd.py), texts written here through a memfd (errors name the file and the line),
// and read_mesh's choice between Abaqus and UCD for .inp. The comparisons with meshio are in
// tests/python/test_ucd.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/ucd/" + name;
}

using meshdock::test::doubles;
using meshdock::test::ints;

mesh::Mesh read_text(const std::string& text, const std::string& name = "t.avs") {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_ucd(f); }, text,
                                   name);
}

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_ucd(f); }, text,
                                    "t.avs");
}

// Through read_mesh's dispatch, by the name's extension.
mesh::Mesh read_as(const std::string& text, const std::string& name) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_mesh(f); }, text,
                                   name);
}

const char* kTwoTets =
    "# two tets\n"
    "5 2 0 0 0\n"
    "10 0 0 0\n"
    "20 1 0 0\n"
    "30 0 1 0\n"
    "40 0 0 1\n"
    "50 1 1 1\n"
    "1 7 tet 10 20 30 40\n"
    "2 8 tet 20 30 40 50\n";

TEST(UcdReader, NodeIdsAreLabelsAndTetOrderIsMeshios) {
  const auto m = read_text(kTwoTets);
  mesh::validate_mesh(m, "t");
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  // meshio: file nodes 0 1 3 2.
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 3, 2, 1, 2, 4, 3}));
  EXPECT_EQ(ints(m.cell_data.at("avsucd:material")[0]), (std::vector<std::int64_t>{7, 8}));
  EXPECT_EQ(doubles(m.points)[3], 1.0);
  EXPECT_TRUE(m.notes.empty());
}

TEST(UcdReader, EveryTypeInMeshiosOrder) {
  const auto m = mesh::read_mesh(data("every-type.meshio.avs"));
  mesh::validate_mesh(m, "t");
  std::vector<std::string> types;
  for (const auto& b : m.cells) types.push_back(b.type);
  EXPECT_EQ(types, (std::vector<std::string>{"vertex", "line", "triangle", "quad", "tetra",
                                             "pyramid", "wedge", "hexahedron"}));
  EXPECT_EQ(ints(m.cells[5].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3, 6}));
  EXPECT_EQ(ints(m.cells[6].connectivity), (std::vector<std::int64_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(ints(m.cells[7].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(ints(m.cell_data.at("avsucd:material")[1]), (std::vector<std::int64_t>{10, 11}));
  EXPECT_EQ(m.point_data.at("T").shape(), (std::vector<std::int64_t>{8}));
  EXPECT_EQ(m.point_data.at("velocity").shape(), (std::vector<std::int64_t>{8, 3}));
}

TEST(UcdReader, ConsecutiveCellsOfATypeMakeABlock) {
  const auto m = mesh::read_mesh(data("tets.meshio.avs"));
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  EXPECT_EQ(m.cells[1].type, "triangle");
  EXPECT_EQ(m.cells[2].type, "tetra");
}

TEST(UcdReader, DataOutOfOrderAndSplitIntoBlocks) {
  const auto m = read_text(
      "3 3 2 3 0\n"
      "1 0 0 0\n2 1 0 0\n3 0 1 0\n"
      "1 1 line 1 2\n2 1 line 2 3\n3 2 tri 1 2 3\n"
      "1 2\nvel ocity, m/s\n"
      "3 5 6\n1 1 2\n2 3 4\n"
      "2 1 2\nheat, J\nflux, W\n"
      "3 30 31 32\n1 10 11 12\n2 20 21 22\n");
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(doubles(m.point_data.at("vel_ocity")), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(m.cell_data.at("heat").size(), 2u);
  EXPECT_EQ(doubles(m.cell_data.at("heat")[0]), (std::vector<double>{10, 20}));
  EXPECT_EQ(doubles(m.cell_data.at("heat")[1]), (std::vector<double>{30}));
  EXPECT_EQ(m.cell_data.at("flux")[0].shape(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(doubles(m.cell_data.at("flux")[1]), (std::vector<double>{31, 32}));
}

TEST(UcdReader, DealIIGrid) {
  const auto m = mesh::read_mesh(data("dealii-quads.inp"));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "quad");
  EXPECT_EQ(m.cells[0].size(), 4);
  EXPECT_EQ(ints(m.cell_data.at("avsucd:material")[0]), (std::vector<std::int64_t>{0, 1, 0, 1}));
  const auto h = mesh::read_mesh(data("dealii-hex.ucd"));
  EXPECT_EQ(doubles(h.point_data.at("solution_value"))[7], 8.5);
  EXPECT_EQ(doubles(h.cell_data.at("cell_flux")[0]), (std::vector<double>{-1.0, 2e-3}));
}

TEST(UcdReader, InpPicksTheReaderByContent) {
  // A UCD .inp (deal.II's) and an Abaqus one, the latter with a "**" comment first.
  const auto u = read_as(kTwoTets, "grid.inp");
  EXPECT_EQ(u.cells[0].type, "tetra");
  EXPECT_EQ(u.cell_data.count("avsucd:material"), 1u);
  const auto a = read_as(
      "** written by hand\n*NODE\n1, 0, 0, 0\n2, 1, 0, 0\n3, 0, 1, 0\n*ELEMENT, TYPE=CPS3\n1, 1, "
      "2, 3\n",
      "t.inp");
  EXPECT_EQ(a.cells[0].type, "triangle");
  EXPECT_EQ(a.cell_data.count("avsucd:material"), 0u);
  EXPECT_EQ(read_as(kTwoTets, "t.ucd").cells[0].size(), 2);
  // Neither a keyword nor a count first: Abaqus's words, unless '#' comments say UCD.
  const auto read_any = [](const mesh::InFile& f) { return mesh::read_mesh(f); };
  EXPECT_NE(meshdock::test::read_error(read_any, "hello\n", "t.inp")
                .find("t.inp:1: a data line before any keyword"),
            std::string::npos);
  EXPECT_NE(meshdock::test::read_error(read_any, "# deal.II\nhello\n", "t.inp")
                .find("t.inp:2: expected the AVS UCD header"),
            std::string::npos);
}

TEST(UcdReader, Errors) {
  EXPECT_EQ(error_of("2 1 0 0 0\n1 0 0 0\n2 1 0 0\n1 0 line 1 3\n"),
            "t.avs:4: cell 1: node id 3 is not one of the nodes");
  EXPECT_NE(error_of("1 0 0 0\n").find("t.avs:1: expected the AVS UCD header"), std::string::npos);
  EXPECT_NE(error_of("1000000 0 0 0 0\n1 0 0 0\n").find("node count 1000000 is more than"),
            std::string::npos);
  EXPECT_NE(error_of("2 1 0 0 0\n1 0 0 0\n2 1 0 0\n1 0 quad8 1 2\n")
                .find("t.avs:4: cell 1: "
                      "cell type 'quad8'"),
            std::string::npos);
  EXPECT_NE(error_of("2 1 0 0 0\n1 0 0 0\n2 1 0 0\n1 0 tri 1 2\n").find("lists 2 of its 3"),
            std::string::npos);
  EXPECT_NE(error_of("2 0 0 0 0\n1 0 0 0\n1 1 0 0\n").find("t.avs:3: node id 1 appears twice"),
            std::string::npos);
  EXPECT_NE(
      error_of("2 0 0 0 0\n1 0.0 0.0\n2 1.0 0.0 0.0\n").find("t.avs:2: node 1 has 2 coordinates"),
      std::string::npos);
  EXPECT_NE(
      error_of("2 0 1 0 0\n1 0 0 0\n2 1 0 0\n1 1\nT, K\n1 5\n1 6\n").find("has a line already"),
      std::string::npos);
  EXPECT_NE(error_of("1 0 1 0 0\n1 0 0 0\n99999 1\nT, K\n1 5\n")
                .find("t.avs:3: node data: "
                      "component group count "
                      "99999"),
            std::string::npos);
  EXPECT_NE(error_of("2 0 0 0 0\n1 0.000 0.000 0.000\n").find("ends after 1 of the 2 nodes"),
            std::string::npos);
}

TEST(UcdReader, Notes) {
  const auto m = read_text("1 0 0 0 0\n1 0 0 0\nleft over\n");
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("t.avs:3: text after the last record"), std::string::npos);
  const auto n = read_text("1 0 0 0 2\n1 0 0 0\n");
  ASSERT_EQ(n.notes.size(), 1u);
  EXPECT_NE(n.notes[0].find("model data"), std::string::npos);
  const auto e = read_text("\xEF\xBB\xBF# c\n\n0 0 0 0 0\n");
  EXPECT_EQ(e.points.dim(0), 0);
  EXPECT_TRUE(e.cells.empty());
}

}  // namespace
