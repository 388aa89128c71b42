// The AVS UCD reader and writer: the files of tests/data/ucd (meshio's and deal.II-style ones;
// tools/make_ucd.py), texts written here through a memfd (errors name the file and the line),
// and read_mesh's choice between Abaqus and UCD for .inp. The comparisons with meshio are in
// tests/python/test_ucd.py. write_ucd's files are read back by read_ucd (UcdWriter).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/ucd_types.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/ucd/" + name;
}

using meshdock::test::doubles;
using meshdock::test::ints;
using meshdock::test::slurp;

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

// --- write_ucd: written here, read back by read_ucd, compared exactly ---

std::string temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("meshdock-ucd-" + std::to_string(::getpid()) + "-" + name);
}

// An array of zeros (Array::of leaves its memory as it finds it).
template <typename T>
mesh::Array zeros(std::vector<std::int64_t> shape) {
  auto a = mesh::Array::of<T>(std::move(shape));
  std::fill_n(a.template as<T>(), a.size(), T{});
  return a;
}

TEST(UcdWriter, RoundTripsEveryTypeExactly) {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({20, 3});
  auto* p = m.points.as<double>();
  for (int i = 0; i < 60; ++i) p[i] = 0.1 * i + 1e-17 * i - (i % 7 == 0 ? 1e300 : 0);
  std::vector<mesh::Array> material, heat, flux;
  for (const auto& t : mesh::kUcdTypes) {
    const auto n = static_cast<std::int64_t>(t.nodes);
    auto a = mesh::Array::of<std::int64_t>({2, n});
    for (int i = 0; i < 2 * n; ++i) a.as<std::int64_t>()[i] = (i * 7 + n) % 20;
    m.cells.push_back(mesh::CellBlock::fixed(std::string(t.meshio), std::move(a)));
    auto mat = mesh::Array::of<std::int64_t>({2});
    mat.as<std::int64_t>()[0] = n;
    mat.as<std::int64_t>()[1] = -100 - n;
    material.push_back(std::move(mat));
    auto h = mesh::Array::of<double>({2});
    h.as<double>()[0] = 1.0 / 3 + n;
    h.as<double>()[1] = -2e-300;
    heat.push_back(std::move(h));
    auto f = mesh::Array::of<float>({2, 2});
    for (int i = 0; i < 4; ++i) f.as<float>()[i] = 0.1f * static_cast<float>(i + n);
    flux.push_back(std::move(f));
  }
  m.cell_data["avsucd:material"] = material;
  m.cell_data["heat"] = heat;
  m.cell_data["flux"] = flux;
  m.point_data["T"] = mesh::Array::of<double>({20});
  m.point_data["u"] = mesh::Array::of<std::int32_t>({20, 3});
  for (int i = 0; i < 20; ++i) m.point_data["T"].as<double>()[i] = 1.0 / (i + 1);
  for (int i = 0; i < 60; ++i) m.point_data["u"].as<std::int32_t>()[i] = i * 1000003 - 7;
  const auto path = temp_file("every-type.avs");
  EXPECT_EQ(mesh::write_mesh(m, path), std::vector<std::string>{});
  const auto back = mesh::read_mesh(path);
  std::remove(path.c_str());
  mesh::validate_mesh(back, "back");
  EXPECT_EQ(doubles(back.points), doubles(m.points));
  ASSERT_EQ(back.cells.size(), m.cells.size());
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    EXPECT_EQ(back.cells[b].type, m.cells[b].type);
    EXPECT_EQ(ints(back.cells[b].connectivity), ints(m.cells[b].connectivity)) << b;
    EXPECT_EQ(ints(back.cell_data.at("avsucd:material")[b]), ints(material[b]));
    EXPECT_EQ(doubles(back.cell_data.at("heat")[b]), doubles(heat[b]));
    EXPECT_EQ(doubles(back.cell_data.at("flux")[b]), doubles(flux[b]));  // float -> float64
    EXPECT_EQ(back.cell_data.at("flux")[b].shape(), (std::vector<std::int64_t>{2, 2}));
  }
  EXPECT_EQ(doubles(back.point_data.at("T")), doubles(m.point_data["T"]));
  EXPECT_EQ(doubles(back.point_data.at("u")), doubles(m.point_data["u"]));
  EXPECT_EQ(back.point_data.at("u").shape(), (std::vector<std::int64_t>{20, 3}));
}

// The file as meshio lays it out: AVS's node order (tet 0 1 3 2, pyr 4 0 1 2 3), material 0
// without avsucd:material, 2-D points padded, groups "label, real".
TEST(UcdWriter, WritesMeshiosLayout) {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({5, 2});
  for (int i = 0; i < 10; ++i) m.points.as<double>()[i] = i * 0.5;
  auto tet = mesh::Array::of<std::int64_t>({1, 4});
  auto pyr = mesh::Array::of<std::int64_t>({1, 5});
  for (int i = 0; i < 4; ++i) tet.as<std::int64_t>()[i] = i;
  for (int i = 0; i < 5; ++i) pyr.as<std::int64_t>()[i] = i;
  m.cells.push_back(mesh::CellBlock::fixed("tetra", std::move(tet)));
  m.cells.push_back(mesh::CellBlock::fixed("pyramid", std::move(pyr)));
  m.point_data["a b"] = zeros<std::int64_t>({5});
  std::vector<mesh::Array> v;
  v.push_back(zeros<double>({1, 2}));
  v.push_back(zeros<double>({1, 2}));
  v[1].as<double>()[1] = 2.5;
  m.cell_data["v"] = v;
  m.field_data["f"] = mesh::Array::of<double>({1});
  const auto path = temp_file("layout.ucd");
  const auto notes = mesh::write_mesh(m, path);
  EXPECT_EQ(slurp(path),
            "# written by meshdock\n"
            "5 2 1 2 0\n"
            "1 0 0.5 0\n2 1 1.5 0\n3 2 2.5 0\n4 3 3.5 0\n5 4 4.5 0\n"
            "1 0 tet 1 2 4 3\n"
            "2 0 pyr 5 1 2 3 4\n"
            "1 1\na_b, real\n1 0\n2 0\n3 0\n4 0\n5 0\n"
            "1 2\nv, real\n1 0 0\n2 0 2.5\n");
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0], "points have 2 coordinates; AVS UCD stores 3, so the rest are written as 0");
  EXPECT_EQ(notes[1], "field_data 'f' is not written: AVS UCD holds no field data");
  EXPECT_EQ(notes[2],
            "point_data 'a b' reads back as 'a_b' (AVS UCD readers turn blanks into '_')");
  const auto back = mesh::read_mesh(path);
  std::remove(path.c_str());
  EXPECT_EQ(ints(back.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(doubles(back.cell_data.at("v")[1]), (std::vector<double>{0, 2.5}));
}

TEST(UcdWriter, RefusesWhatUcdCannotHold) {
  mesh::Mesh m;
  m.points = zeros<double>({10, 3});
  auto a = mesh::Array::of<std::int64_t>({1, 10});
  for (int i = 0; i < 10; ++i) a.as<std::int64_t>()[i] = i;
  m.cells.push_back(mesh::CellBlock::fixed("tetra10", std::move(a)));
  const auto path = temp_file("refused.avs");
  try {
    mesh::write_mesh(m, path);
    ADD_FAILURE() << "no error";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cells[0] (tetra10) cannot be written to AVS "
                                                 "UCD, which has pt, line, tri, quad, tet",
                                          0),
              0u)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  m.cells.clear();
  m.point_data["x,y"] = mesh::Array::of<double>({10});
  m.point_data["#c"] = mesh::Array::of<double>({10});
  m.point_data["t"] = mesh::Array::of<double>({10, 2, 2});
  m.regions.push_back(mesh::Region{});
  m.regions.back().name = "r";
  m.regions.back().kind = mesh::RegionKind::kPoint;
  m.regions.back().entries = mesh::Array::of<std::int64_t>({0});
  mesh::WriteOptions o;
  o.format = "avsucd";
  const auto out = temp_file("refused.txt");
  const auto notes = mesh::write_mesh(m, out, o);
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(notes[0], "region 'r' is not written: AVS UCD holds no sets");
  EXPECT_NE(notes[1].find("point_data '#c' is not written: an AVS UCD label cannot"),
            std::string::npos);
  EXPECT_EQ(notes[2].find("point_data 't' is not written"), 0u) << notes[2];
  EXPECT_NE(notes[3].find("point_data 'x,y' is not written"), std::string::npos);
  EXPECT_EQ(slurp(out).substr(0, 33), "# written by meshdock\n10 0 0 0 0\n");
  std::remove(out.c_str());
  o.encoding = "binary";
  EXPECT_THROW(mesh::write_mesh(m, out, o), mesh::WriteError);
}

}  // namespace
