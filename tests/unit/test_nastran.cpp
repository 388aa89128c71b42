// The Nastran bulk data reader and writer: texts written here through a memfd (the field
// formats, continuations, Nastran reals, the cards read and skipped; errors name the file, the
// line and the column), the files of tests/data/nastran (tools/make_nastran.py), and a round
// trip through write_nastran. The comparisons with meshio are in tests/python/test_nastran.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;

namespace {

using meshdock::test::doubles;
using meshdock::test::has_note;
using meshdock::test::ints;

mesh::Mesh read_text(const std::string& text, const std::string& name = "t.bdf") {
  auto m = meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_nastran(f); },
                                     text, name);
  mesh::validate_mesh(m, name);
  return m;
}

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_nastran(f); },
                                    text, "t.bdf");
}

TEST(NastranReader, SmallFieldGridsAndElements) {
  const auto m = read_text(
      "BEGIN BULK\n"
      "GRID    1               0.      0.      0.\n"
      "GRID    2               1.      0.      0.\n"
      "GRID    3               0.      1.      0.\n"
      "GRID    4               0.      0.      1.\n"
      "CTETRA  9       5       1       2       3       4\n"
      "CTRIA3  10      6       1       2       3\n"
      "ENDDATA\n");
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.cells[1].type, "triangle");
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(ints(m.cell_data.at("nastran:ref")[0]), (std::vector<std::int64_t>{5}));
  EXPECT_EQ(ints(m.cell_data.at("nastran:ref")[1]), (std::vector<std::int64_t>{6}));
  EXPECT_EQ(m.point_data.count("nastran:ref"), 0u);  // every CP blank, as meshio
  EXPECT_TRUE(m.notes.empty());
}

TEST(NastranReader, NastranReals) {
  const auto m = read_text(
      "BEGIN BULK\n"
      "GRID    1               1.0-3   -2.5+2  1.\n"
      "GRID    2               .5      1.0D-3  7.E+0\n"
      "GRID,3,,70.-1,.7E1,-1.25d+1\n"
      "GRID    4               0.7+1   1       \n"  // an integer, and a blank X3 (0.0)
      "ENDDATA\n");
  EXPECT_EQ(doubles(m.points),
            (std::vector<double>{0.001, -250, 1, 0.5, 0.001, 7, 7, 7, -12.5, 7, 1, 0}));
}

TEST(NastranReader, LargeFieldWithContinuations) {
  // GRID* and CHEXA* (meshio reads no large-field element), '*' continuation lines.
  const auto m = read_text(
      "BEGIN BULK\n"
      "GRID*   1                               0.1234567890123 0.0             *G1\n"
      "*G1     -1.0E-12\n"
      "GRID    2               1.      0.      0.\n"
      "GRID    3               1.      1.      0.\n"
      "GRID    4               0.      1.      0.\n"
      "GRID    5               0.      0.      1.\n"
      "GRID    6               1.      0.      1.\n"
      "GRID    7               1.      1.      1.\n"
      "GRID    8               0.      1.      1.\n"
      "CHEXA*  1               3               1               2               *\n"
      "*       3               4               5               6               *\n"
      "*       7               8\n"
      "ENDDATA\n");
  EXPECT_EQ(doubles(m.points)[0], 0.1234567890123);
  EXPECT_EQ(doubles(m.points)[2], -1.0e-12);
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "hexahedron");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(ints(m.cell_data.at("nastran:ref")[0]), (std::vector<std::int64_t>{3}));
}

TEST(NastranReader, FreeFieldAndMixedFormats) {
  // Free field with a '+' continuation, a long free line (all data), a large free GRID*, a
  // blank field 1 continuation, a comment inside a card, lower-case names.
  const auto m = read_text(
      "BEGIN BULK\n"
      "GRID,1,,0.,0.,0.\n"
      "grid,2,,1.,0.,0.\n"
      "GRID*,3,,1.,1.,+\n"
      "*,0.\n"
      "GRID    4               0.      1.      0.\n"
      "GRID,5,,0.,0.,1.\n"
      "GRID,6,,1.,0.,1.\n"
      "GRID,7,,1.,1.,1.\n"
      "GRID,8,,0.,1.,1.\n"
      "CHEXA,1,2,1,2,3,4,5,6,+\n"
      "$ a comment inside the card\n"
      "+,7,8\n"
      "CHEXA,2,2,1,2,3,4,5,6,7,8\n"
      "CHEXA   3       2       1       2       3       4       5       6\n"
      "        7       8\n"
      "ENDDATA\n");
  ASSERT_EQ(m.num_points(), 8);
  EXPECT_EQ(doubles(m.points)[6], 1.0);
  EXPECT_EQ(doubles(m.points)[8], 0.0);
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].size(), 3);
  EXPECT_EQ(ints(m.cells[0].connectivity),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3,
                                       4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(NastranReader, IdsAsLabelsGridsAfterElements) {
  const auto m = read_text(
      "BEGIN BULK\n"
      "CTRIA3  7       1       30      10      20\n"
      "CQUAD4  8       1       10      20      30      40\n"
      "CTRIA3  9       1       40      10      20\n"
      "GRID    30              0.      1.      0.\n"
      "GRID    10              0.      0.      0.\n"
      "GRID    20              1.      0.      0.\n"
      "GRID    40              1.      1.      0.\n"
      "ENDDATA\n");
  ASSERT_EQ(m.cells.size(), 3u);  // meshio's rule: a type seen again starts a new block
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{1, 2, 0, 3}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (std::vector<std::int64_t>{3, 1, 2}));
}

// Refs equal to their element's place + 1 are not stored until one is not: each of these
// files starts with such a run and breaks it at a different point (or never).
TEST(NastranReader, RefsOfEveryRunOfPlaceNumberedElements) {
  const std::string grids =
      "GRID    1               0.      0.      0.\n"
      "GRID    2               1.      0.      0.\n"
      "GRID    3               0.      1.      0.\n";
  auto refs = [&](const std::string& elements) {
    const auto m = read_text("BEGIN BULK\n" + grids + elements + "ENDDATA\n");
    if (!m.cell_data.count("nastran:ref")) return std::vector<std::int64_t>{};
    std::vector<std::int64_t> all;
    for (const auto& a : m.cell_data.at("nastran:ref")) {
      const auto v = ints(a);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  // All blank, numbered 1..n: no cell_data (as before).
  EXPECT_EQ(refs("CTRIA3  1               1       2       3\n"
                 "CTRIA3  2               1       2       3\n"),
            (std::vector<std::int64_t>{}));
  // Blank then given: the blank ones are their element ids.
  EXPECT_EQ(refs("CTRIA3  1               1       2       3\n"
                 "CTRIA3  2               1       2       3\n"
                 "CTRIA3  3       7       1       2       3\n"
                 "CTRIA3  4               1       2       3\n"),
            (std::vector<std::int64_t>{1, 2, 7, 4}));
  // Given and equal to the place + 1 throughout: never stored, still 1..n.
  EXPECT_EQ(refs("CTRIA3  1       1       1       2       3\n"
                 "CQUAD4  2       2       1       2       3       1\n"
                 "CTRIA3  3       3       1       2       3\n"),
            (std::vector<std::int64_t>{1, 2, 3}));
  // Element ids out of order with blank properties: the first one breaks the run.
  EXPECT_EQ(refs("CTRIA3  1               1       2       3\n"
                 "CTRIA3  5       2       1       2       3\n"
                 "CTRIA3  9               1       2       3\n"),
            (std::vector<std::int64_t>{1, 2, 9}));
}

TEST(NastranReader, SecondOrderSolidsInMeshioOrder) {
  std::string grids;
  for (int i = 1; i <= 20; ++i) grids += "GRID," + std::to_string(i) + ",,0.,0.,0.\n";
  std::string hex = "CHEXA,1,1", wedge = "CPENTA,2,1", tet = "CTETRA,3,1", pyr = "CPYRAM,4,1";
  for (int i = 1; i <= 20; ++i) hex += "," + std::to_string(i);
  for (int i = 1; i <= 15; ++i) wedge += "," + std::to_string(i);
  for (int i = 1; i <= 10; ++i) tet += "," + std::to_string(i);
  for (int i = 1; i <= 13; ++i) pyr += "," + std::to_string(i);
  const auto m = read_text("BEGIN BULK\n" + grids + hex + "\n" + wedge + "\n" + tet + "\n" + pyr +
                           "\nCTRIAX6,5,1,1,2,3,4,5,6\nENDDATA\n");
  ASSERT_EQ(m.cells.size(), 5u);
  EXPECT_EQ(m.cells[0].type, "hexahedron20");
  EXPECT_EQ(ints(m.cells[0].connectivity),
            (std::vector<std::int64_t>{0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
                                       10, 11, 16, 17, 18, 19, 12, 13, 14, 15}));
  EXPECT_EQ(m.cells[1].type, "wedge15");
  EXPECT_EQ(ints(m.cells[1].connectivity),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 9, 10, 11}));
  EXPECT_EQ(m.cells[2].type, "tetra10");
  EXPECT_EQ(m.cells[3].type, "pyramid13");
  EXPECT_EQ(m.cells[4].type, "triangle6");  // corners, then mid-sides
  EXPECT_EQ(ints(m.cells[4].connectivity), (std::vector<std::int64_t>{0, 2, 4, 1, 3, 5}));
}

TEST(NastranReader, LinesTakeTwoGridsAndSkippedCardsAreNoted) {
  const auto m = read_text(
      "$ no BEGIN BULK: gmsh writes none\n"
      "GRID    1       0       0.      0.      0.\n"
      "GRID    2       0       1.      0.      0.\n"
      "GRID    3       3       1.      1.      0.\n"
      "CBAR    1       1       1       2       0.      0.      1.\n"
      "CROD    2       1       2       3\n"
      "CELAS1  3       1       3\n"
      "MAT1    1       2.1+5           .3\n"
      "MAT1    2       2.1+5           .3\n"
      "PSHELL  1       1       .1\n");
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "line");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(m.cells[1].type, "vertex");
  EXPECT_EQ(ints(m.point_data.at("nastran:ref")), (std::vector<std::int64_t>{0, 0, 3}));
  EXPECT_TRUE(has_note(m, "no BEGIN BULK"));
  EXPECT_TRUE(has_note(m,
                       "cards not read (meshdock reads GRID and element cards): MAT1 (2), "
                       "PSHELL (1)"));
  EXPECT_TRUE(has_note(m,
                       "1 GRIDs name coordinate systems no CORD card defines (CP 3); their "
                       "coordinates are read as written"));
  EXPECT_TRUE(has_note(m, "no ENDDATA"));
}

// Points of GRIDs given in local systems, against values worked out by hand: system 1 is
// rectangular, turned 90 degrees about z (x along basic y) at (1, 2, 3); 2 is cylindrical and
// 3 spherical on the basic axes; 5 is defined in 2 (cylindrical A, B, C) as the same turn at
// the origin; 6 and 7 by GRIDs 10, 11, 12 (one CORD1R card, small field); 4, in 1 (small
// field, a continuation), is 1 again (a chain).
TEST(NastranReader, GridsInLocalCoordinateSystems) {
  const auto m = read_text(
      "BEGIN BULK\n"
      "CORD2R,1,0,1.,2.,3.,1.,2.,4.,1.,3.,3.\n"
      "CORD2C,2,,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"
      "cord2s,3,0,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"
      "CORD2R  4       1       0.      0.      0.      0.      0.      1.      +C4\n"
      "+C4     1.      0.      0.\n"
      "CORD2R,5,2,0.,0.,0.,0.,0.,1.,1.,90.,0.\n"
      "CORD1R  6       10      11      12      7       10      12      11\n"
      "GRID,1,1,1.,0.,0.\n"
      "GRID,2,1,0.,1.,0.\n"
      "GRID,3,2,2.,90.,5.\n"
      "GRID,4,2,2.,180.,0.\n"
      "GRID,5,3,1.,90.,0.\n"
      "GRID,6,3,1.,90.,90.\n"
      "GRID,7,3,2.,0.,0.\n"
      "GRID,8,4,1.,0.,0.\n"
      "GRID,9,5,1.,0.,0.\n"
      "GRID,10,,5.,0.,0.\n"
      "GRID,11,0,5.,0.,1.\n"
      "GRID,12,0,6.,0.,0.\n"
      "GRID,13,6,1.,1.,1.\n"
      "GRID,14,7,1.,0.,0.\n"
      "GRID,15,7,0.,1.,0.\n"
      "CTETRA,1,1,1,2,3,4\n"
      "ENDDATA\n");
  const std::vector<double> want{1, 3, 3, 0, 2, 3, 0, 2, 5, -2, 0, 0, 1, 0,  0,
                                 0, 1, 0, 0, 0, 2, 1, 3, 3, 0,  1, 0, 5, 0,  0,
                                 5, 0, 1, 6, 0, 0, 6, 1, 1, 5,  0, 1, 5, -1, 0};
  const auto got = doubles(m.points);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12) << "point " << i / 3 + 1 << " coordinate " << i % 3;
  // nastran:ref keeps each GRID's CP, as meshio's.
  EXPECT_EQ(ints(m.point_data.at("nastran:ref")),
            (std::vector<std::int64_t>{1, 1, 2, 2, 3, 3, 3, 4, 5, 0, 0, 0, 6, 7, 7}));
  EXPECT_TRUE(has_note(m,
                       "12 GRIDs give their coordinates in a local coordinate system (CP not "
                       "0): taken to the basic system through their CORD cards"));
  EXPECT_FALSE(has_note(m, "cards not read"));  // CORD cards are read, not listed as skipped
}

TEST(NastranReader, CoordinateSystemErrorsNameTheirCard) {
  const std::string head = "BEGIN BULK\nGRID,1,9,1.,0.,0.\nGRID,2,8,1.,0.,0.\n";
  // A system no GRID uses is never built: a broken one costs nothing.
  EXPECT_EQ(read_text(head + "CORD2R,9,0,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"
                             "CORD2R,8,0,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"
                             "CORD2R,7,0,0.,0.,0.,0.,0.,0.,1.,0.,0.\n")
                .points.size(),
            6u);
  const std::string ok9 = "CORD2R,9,0,0.,0.,0.,0.,0.,1.,1.,0.,0.\n";
  EXPECT_EQ(error_of(head + ok9 + "CORD2R,8,0,0.,0.,0.,0.,0.,0.,1.,0.,0.\n"),
            "t.bdf:5: column 1: CORD2R: coordinate system 8: points A and B coincide (B - A sets "
            "the z axis)");
  EXPECT_EQ(error_of(head + ok9 + "CORD2C,8,0,0.,0.,0.,0.,0.,1.,0.,0.,3.\n"),
            "t.bdf:5: column 1: CORD2C: coordinate system 8: point C lies on the z axis through "
            "A and B (C sets the xz plane)");
  EXPECT_EQ(error_of(head + "CORD2R,9,8,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"
                            "CORD2R,8,9,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"),
            "t.bdf:4: column 1: CORD2R: coordinate system 9: it is defined through itself");
  EXPECT_EQ(error_of(head + ok9 + "CORD2R,8,3,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"),
            "t.bdf:5: column 1: CORD2R: coordinate system 8: its reference system RID 3 is not "
            "one a CORD card defines");
  EXPECT_EQ(error_of(head + ok9 + "CORD1R,8,1,77,2\n"),
            "t.bdf:5: column 1: CORD1R: coordinate system 8: grid 77 is not one of the GRIDs");
  EXPECT_EQ(error_of(head + ok9 + "CORD2R,9,0,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"),
            "t.bdf:5: column 8: CORD2R: coordinate system 9 is defined a second time, found '9'");
  EXPECT_EQ(error_of(head + "CORD2R,0,0,0.,0.,0.,0.,0.,1.,1.,0.,0.\n"),
            "t.bdf:4: column 8: CORD2R: a coordinate system id is a positive integer, found '0'");
  EXPECT_EQ(error_of(head + "CORD2R,9,0,0.,0.,x,0.,0.,1.,1.,0.,0.\n"),
            "t.bdf:4: column 18: CORD2R: expected a real A3, found 'x'");
  // A chain of 70 systems, each defined in the one before: deeper than kMaxChain.
  std::string chain = "BEGIN BULK\nGRID,1,70,1.,0.,0.\n";
  for (int k = 1; k <= 70; ++k)
    chain += "CORD2R," + std::to_string(k) + "," + std::to_string(k - 1) +
             ",0.,0.,1.,0.,0.,2.,1.,0.,1.\n";
  EXPECT_NE(error_of(chain).find("goes through more than 64 coordinate systems"),
            std::string::npos);
  // 64 deep is fine: the GRID ends 64 units up.
  std::string deep = "BEGIN BULK\nGRID,1,64,1.,0.,0.\n";
  for (int k = 1; k <= 64; ++k)
    deep += "CORD2R," + std::to_string(k) + "," + std::to_string(k - 1) +
            ",0.,0.,1.,0.,0.,2.,1.,0.,1.\n";
  EXPECT_EQ(doubles(read_text(deep).points), (std::vector<double>{1, 0, 64}));
}

TEST(NastranReader, ExecutiveControlSkippedAndTextAfterEnddata) {
  const auto m = read_text(
      "SOL 101\nCEND\nTITLE = x\nbegin bulk\n"
      "GRID,1,,0.,0.,0.\nCELAS1,1,,1\nENDDATA\nGRID,2,,zz\n");
  EXPECT_EQ(m.num_points(), 1);
  EXPECT_EQ(m.cell_data.count("nastran:ref"), 0u);  // no property id given
  EXPECT_TRUE(m.notes.empty());
}

TEST(NastranReader, ErrorsNameFileLineAndColumn) {
  const std::string head = "BEGIN BULK\nGRID    1               0.      0.      0.\n";
  EXPECT_EQ(error_of(head + "GRID    2               0.      x.      0.\n"),
            "t.bdf:3: column 33: GRID: expected a real coordinate X2, found 'x.'");
  EXPECT_EQ(error_of(head + "CTRIA3,1,1,1,1,9\n"),
            "t.bdf:3: column 1: CTRIA3 1: grid id 9 is not one of the GRIDs");
  EXPECT_EQ(error_of(head + "GRID    1               0.      0.      0.\n"),
            "t.bdf:3: column 9: GRID: grid id 1 appears twice, found '1'");
  EXPECT_EQ(error_of(head + "CTETRA  1       1       1       1       1\n"),
            "t.bdf:3: column 42: CTETRA: CTETRA lists 3 grids; it takes 4 or 10, found '(blank)'");
  EXPECT_EQ(error_of(head + "CTRIA3,1,1,1,+-1,1\n"),
            "t.bdf:3: column 14: CTRIA3: expected grid id 2 of 3, found '+-1'");
  EXPECT_EQ(error_of(head + "CTRIA3,+1,1,1,1,1234567890123456789012\n"),
            "t.bdf:3: column 17: CTRIA3: expected grid id 3 of 3, found '1234567890123456789012'");
  EXPECT_EQ(error_of(head + "CTRIA3  1       1       1       a\n"),
            "t.bdf:3: column 33: CTRIA3: expected grid id 2 of 3, found 'a'");
  EXPECT_EQ(error_of("BEGIN BULK\n$ c\n+       1\n"),
            "t.bdf:3: column 1: a continuation line with no card before it");
  EXPECT_EQ(error_of(head + "GRID\t2\t\t0.\t0.\t0.\n"),
            "t.bdf:3: column 5: a tab in a fixed-field line (tabs are not expanded: write spaces "
            "or commas)");
  // 40 signs: each gets an implicit exponent's 'E' before it (overflowed parse_real's buffer:
  // fuzz_nastran_reader under ASan).
  std::string signs;
  for (int i = 0; i < 20; ++i) signs += "+-";
  EXPECT_EQ(error_of(head + "GRID,2,," + signs + ",0.,0.\n"),
            "t.bdf:3: column 9: GRID: expected a real coordinate X1, found '" + signs + "'");
  EXPECT_EQ(error_of("hello\nworld\n"),
            "t.bdf: no BEGIN BULK and no GRID or element card: not Nastran bulk data");
}

TEST(NastranReader, ReadMeshDispatchesTheExtensions) {
  for (const char* ext : {".bdf", ".nas", ".fem"}) {
    const auto m = meshdock::test::read_text(
        [](const mesh::InFile& f) { return mesh::read_mesh(f); },
        "BEGIN BULK\nGRID,1,,0.,0.,0.\nENDDATA\n", std::string("t") + ext);
    EXPECT_EQ(m.num_points(), 1) << ext;
  }
}

TEST(NastranReader, GmshFiles) {
  const std::string dir = std::string(MESHDOCK_TEST_DATA) + "/nastran/";
  const auto cube = mesh::read_mesh(dir + "cube2.gmsh.bdf");
  ASSERT_EQ(cube.cells.size(), 1u);
  EXPECT_EQ(cube.cells[0].type, "tetra10");
  const auto square = mesh::read_mesh(dir + "square2.gmsh.nas");
  ASSERT_EQ(square.cells.size(), 2u);
  EXPECT_EQ(square.cells[0].type, "line");
  EXPECT_EQ(square.cells[1].type, "triangle6");
}

// A directory of files for INCLUDE tests, removed with it.
class IncludeDir {
 public:
  explicit IncludeDir(const std::string& tag)
      : dir_(fs::temp_directory_path() / ("nastran-" + tag + "-" + std::to_string(getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~IncludeDir() { fs::remove_all(dir_); }
  void put(const std::string& name, const std::string& text) const {
    fs::create_directories((dir_ / name).parent_path());
    FILE* f = fopen((dir_ / name).c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(text.c_str(), f);
    fclose(f);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string error(const std::string& name) const {
    try {
      mesh::read_mesh(path(name));
    } catch (const mesh::ReadError& e) {
      return e.what();
    }
    return "no error";
  }

 private:
  fs::path dir_;
};

TEST(NastranReader, IncludesAreReadInPlaceRelativeToTheIncludingFile) {
  const std::string dir = std::string(MESHDOCK_TEST_DATA) + "/nastran/include/";
  const auto m = mesh::read_mesh(dir + "deck.bdf");
  const auto inlined = mesh::read_mesh(dir + "inlined.bdf");
  EXPECT_EQ(doubles(m.points), doubles(inlined.points));
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1,
                                                    1, 0, 1, 1, 1, 1, 0, 1, 1, 2, 0, 0, 2, 1, 0}));
  ASSERT_EQ(m.cells.size(), 4u);
  // The CHEXA's last two grids are on its continuation line, in the next included file.
  const std::vector<std::string> types{"hexahedron", "triangle", "line", "triangle"};
  const std::vector<std::vector<std::int64_t>> conn{
      {0, 1, 2, 3, 4, 5, 6, 7}, {1, 8, 9, 9, 2, 3}, {0, 8}, {3, 8, 9}};
  for (std::size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(m.cells[b].type, types[b]);
    EXPECT_EQ(ints(m.cells[b].connectivity), conn[b]) << b;
    EXPECT_EQ(ints(m.cells[b].connectivity), ints(inlined.cells[b].connectivity)) << b;
    EXPECT_EQ(ints(m.cell_data.at("nastran:ref")[b]), ints(inlined.cell_data.at("nastran:ref")[b]));
  }
  // The case control INCLUDE is not opened (its file is not there): a note says so.
  EXPECT_TRUE(has_note(m, "1 INCLUDE statements before BEGIN BULK"));
  // Without open_sibling (an fd with no directory) an INCLUDE is a ReadError at its line.
  EXPECT_NE(error_of("BEGIN BULK\nGRID    1               0.      0.      0.\n"
                     "INCLUDE 'x.bdf'\n")
                .find("t.bdf:3: column 1: INCLUDE 'x.bdf': no directory to open it in"),
            std::string::npos)
      << error_of("BEGIN BULK\nINCLUDE 'x.bdf'\n");
}

TEST(NastranReader, BulkDataStartingInAnIncludedFile) {
  const IncludeDir d("bulk");
  // The executive and case control in the main file, BEGIN BULK in the included one.
  d.put("run.dat", "SOL 101\nCEND\nTITLE = t\ninclude 'model/bulk.bdf'\n");
  d.put("model/bulk.bdf",
        "BEGIN BULK\nINCLUDE 'grids.bdf'\nCTRIA3  1       1       1       2       3\nENDDATA\n"
        "GRID    9               9.      9.      9.\n");
  d.put("model/grids.bdf",
        "GRID    1               0.      0.      0.\nGRID    2               1.      0.      0.\n"
        "GRID    3               0.      1.      0.\n");
  const auto m = mesh::read_mesh(d.path("run.dat"), "nastran");
  EXPECT_EQ(m.points.shape()[0], 3);  // ENDDATA in bulk.bdf ends the bulk data
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_FALSE(has_note(m, "no BEGIN BULK"));
  // No BEGIN BULK anywhere (gmsh's way): the grids in an include before the first element.
  d.put("gmsh.bdf", "INCLUDE 'model/grids.bdf'\nCTRIA3  1       1       1       2       3\n");
  const auto g = mesh::read_mesh(d.path("gmsh.bdf"));
  EXPECT_EQ(g.points.shape()[0], 3);
  EXPECT_EQ(ints(g.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_TRUE(has_note(g, "no BEGIN BULK"));
  // The same file included twice: its grids twice, an error naming the second one's line.
  d.put("twice.bdf", "BEGIN BULK\nINCLUDE 'model/grids.bdf'\nINCLUDE 'model/grids.bdf'\n");
  EXPECT_NE(d.error("twice.bdf").find("grids.bdf:1: column 9: GRID: grid id 1 appears twice"),
            std::string::npos)
      << d.error("twice.bdf");
}

TEST(NastranReader, IncludeErrorsNameTheFileAndTheLine) {
  const IncludeDir d("errors");
  d.put("up.bdf", "BEGIN BULK\nINCLUDE '../x.bdf'\n");
  d.put("abs.bdf", "BEGIN BULK\n$ c\nINCLUDE '/etc/passwd'\n");
  d.put("cycle.bdf", "BEGIN BULK\nINCLUDE 'sub/a.bdf'\n");
  d.put("sub/a.bdf", "INCLUDE 'b.bdf'\n");
  d.put("sub/b.bdf", "$\nINCLUDE 'a.bdf'\n");
  for (int i = 0; i < 12; ++i)
    d.put("d" + std::to_string(i) + ".bdf",
          "BEGIN BULK\nINCLUDE 'd" + std::to_string(i + 1) + ".bdf'\n");
  d.put("missing.bdf", "BEGIN BULK\nINCLUDE 'none.bdf'\n");
  d.put("quote.bdf", "BEGIN BULK\nINCLUDE 'never\nclosed.bdf\n");
  d.put("noquote.bdf", "BEGIN BULK\nINCLUDE grids.bdf\n");
  d.put("after.bdf", "BEGIN BULK\nINCLUDE 'g.bdf' x\n");
  d.put("bad.bdf", "BEGIN BULK\nINCLUDE 'inner.bdf'\nCTRIA3  1       1       1       2       3\n");
  d.put("inner.bdf", "GRID    1               0.      0.      0.\nGRID    2               x\n");
  d.put("grid.bdf",
        "BEGIN BULK\nINCLUDE 'elems.bdf'\nGRID    1               0.      0.      0.\n");
  d.put("elems.bdf", "$ one element\nCTRIA3  1       1       1       2       3\n");
  const std::vector<std::pair<std::string, std::string>> cases{
      {"up.bdf", "up.bdf:2: column 1: INCLUDE '../x.bdf' leads out of the directory"},
      {"abs.bdf", "abs.bdf:3: column 1: INCLUDE '/etc/passwd' is an absolute path; refused"},
      {"cycle.bdf",
       "sub/b.bdf:2: column 1: INCLUDE cycle: cycle.bdf -> sub/a.bdf -> sub/b.bdf -> sub/a.bdf"},
      {"d0.bdf", "d8.bdf:2: column 1: INCLUDE nested deeper than 8: d0.bdf -> d1.bdf"},
      {"missing.bdf", "missing.bdf:2: column 1: INCLUDE 'none.bdf': "},
      {"quote.bdf", "quote.bdf:2: column 1: INCLUDE: the file name's closing quote is missing"},
      {"noquote.bdf", "noquote.bdf:2: column 1: INCLUDE: expected the file name in single quotes"},
      {"after.bdf", "after.bdf:2: column 17: INCLUDE: 'x' after the file name's closing quote"},
      // Errors inside an included file name it and its line.
      {"bad.bdf", "inner.bdf:2: column 25: GRID: expected a real coordinate X1, found 'x'"},
      {"grid.bdf", "elems.bdf:2: column 1: CTRIA3 1: grid id 2 is not one of the GRIDs"},
  };
  for (const auto& [name, message] : cases) {
    const auto e = d.error(name);
    EXPECT_NE(e.find(d.path("")), std::string::npos) << e;  // the path as the daemon shows it
    EXPECT_NE(e.find(message), std::string::npos) << name << ": " << e;
  }
}

TEST(NastranWriter, RoundTripsEveryTypeExactly) {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({20, 3});
  auto* p = m.points.as<double>();
  for (int i = 0; i < 60; ++i) p[i] = 0.1 * i + 1e-17 * i - (i % 7 == 0 ? 1e300 : 0);
  const std::vector<std::pair<const char*, int>> types = {
      {"vertex", 1},     {"line", 2},  {"triangle", 3}, {"triangle6", 6},  {"quad", 4},
      {"quad8", 8},      {"quad9", 9}, {"tetra", 4},    {"tetra10", 10},   {"pyramid", 5},
      {"pyramid13", 13}, {"wedge", 6}, {"wedge15", 15}, {"hexahedron", 8}, {"hexahedron20", 20}};
  std::vector<mesh::Array> refs;
  for (const auto& [type, n] : types) {
    auto a = mesh::Array::of<std::int64_t>({2, n});
    for (int i = 0; i < 2 * n; ++i) a.as<std::int64_t>()[i] = (i * 7 + n) % 20;
    m.cells.push_back(mesh::CellBlock::fixed(type, std::move(a)));
    auto r = mesh::Array::of<std::int64_t>({2});
    r.as<std::int64_t>()[0] = n;
    r.as<std::int64_t>()[1] = 100 + n;
    refs.push_back(std::move(r));
  }
  m.cell_data["nastran:ref"] = refs;
  const std::string path = ::testing::TempDir() + "nastran-round-trip.bdf";
  const auto notes = mesh::write_mesh(m, path);
  EXPECT_TRUE(notes.empty());
  const auto back = mesh::read_mesh(path);
  std::remove(path.c_str());
  EXPECT_EQ(doubles(back.points), doubles(m.points));
  ASSERT_EQ(back.cells.size(), m.cells.size());
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    EXPECT_EQ(back.cells[b].type, m.cells[b].type);
    EXPECT_EQ(ints(back.cells[b].connectivity), ints(m.cells[b].connectivity)) << b;
    EXPECT_EQ(ints(back.cell_data.at("nastran:ref")[b]), ints(refs[b]));
  }
}

TEST(NastranWriter, RefusesWhatNastranCannotHold) {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({3, 2});
  auto a = mesh::Array::of<std::int64_t>({1, 3});
  for (int i = 0; i < 3; ++i) a.as<std::int64_t>()[i] = i;
  for (int i = 0; i < 6; ++i) m.points.as<double>()[i] = i;
  m.cells.push_back(mesh::CellBlock::fixed("line3", std::move(a)));
  const std::string path = ::testing::TempDir() + "nastran-refused.bdf";
  EXPECT_THROW(mesh::write_mesh(m, path), mesh::WriteError);
  m.cells.clear();
  m.point_data["T"] = mesh::Array::of<double>({3});
  const auto notes = mesh::write_mesh(m, path);
  std::remove(path.c_str());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("points have 2 coordinates"), std::string::npos);
  EXPECT_NE(notes[1].find("point_data 'T' is not written"), std::string::npos);
}

// A CP kept from nastran:ref is written as meshio writes it, with a note: the coordinates are
// basic and no CORD card defines the system. meshdock reads the file back as written.
TEST(NastranWriter, LocalCoordinateSystemsAreNoted) {
  const auto m = read_text(
      "BEGIN BULK\nCORD2C,2,,1.,0.,0.,1.,0.,1.,2.,0.,0.\nGRID,1,2,1.,90.,0.\nGRID,2,,0.,0.,0.\n"
      "CROD,1,1,1,2\n");
  const std::string path = ::testing::TempDir() + "nastran-cp.bdf";
  const auto notes = mesh::write_mesh(m, path);
  const auto back = mesh::read_mesh(path);
  std::remove(path.c_str());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("1 GRIDs written with their CP from nastran:ref (not 0) and basic "
                          "coordinates; no CORD cards are written"),
            std::string::npos)
      << notes[0];
  EXPECT_EQ(ints(back.point_data.at("nastran:ref")), (std::vector<std::int64_t>{2, 0}));
  const auto p = doubles(back.points);
  EXPECT_NEAR(p[0], 1, 1e-15);  // (1, 90, 0) around the axis through (1, 0, 0): (1, 1, 0)
  EXPECT_NEAR(p[1], 1, 1e-15);
  EXPECT_EQ(p[2], 0);
}

}  // namespace
