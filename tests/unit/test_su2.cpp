// The SU2 reader and writer: the files of tests/data/su2 (gmsh's, meshio's and hand-written ones;
// tools/make_su2.py), texts written here through a memfd (errors name the file and the line), and
// round trips through write_su2. The comparisons with meshio are in tests/python/test_su2.py.
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
  return std::string(MESHDOCK_TEST_DATA) + "/su2/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::ints;

mesh::Mesh read_text(const std::string& text) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_su2(f); }, text,
                                   "t.su2");
}

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_su2(f); }, text,
                                    "t.su2");
}

const mesh::Region& region(const mesh::Mesh& m, const std::string& name) {
  for (const auto& r : m.regions)
    if (r.name == name) return r;
  ADD_FAILURE() << "no region " << name;
  static const mesh::Region none;
  return none;
}

TEST(Su2Reader, Gmsh2dMarkersMergeIntoOneLineBlockWithMeshiosTags) {
  const auto m = mesh::read_mesh(data("gmsh-2d.su2"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{12, 2}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "line"}));
  EXPECT_EQ(ints(m.cells[0].connectivity)[0], 5);  // "5 5 2 10 0"
  EXPECT_EQ(ints(m.cells[1].connectivity),
            (std::vector<std::int64_t>{3, 7, 7, 0, 0, 4, 4, 1, 2, 6, 6, 3, 1, 5, 5, 2}));
  const auto& tags = m.cell_data.at("su2:tag");
  EXPECT_EQ(tags[0].dtype(), mesh::Array::of<std::int32_t>({0}).dtype());
  EXPECT_EQ(ints(tags[1]), (std::vector<std::int64_t>{1, 1, 2, 2, 2, 2, 3, 3}));
  ASSERT_EQ(m.regions.size(), 3u);
  EXPECT_EQ(ints(region(m, "inlet").entries), (std::vector<std::int64_t>{14, 15}));
  EXPECT_EQ(region(m, "wall").tag, 2);
  EXPECT_EQ(region(m, "wall").dim, 1);
  EXPECT_EQ(ints(region(m, "PhysicalLine7").entries), (std::vector<std::int64_t>{20, 21}));
  EXPECT_TRUE(m.notes.empty());
}

TEST(Su2Reader, Gmsh3dTrianglesOfEveryMarkerMakeOneBlock) {
  const auto m = mesh::read_mesh(data("gmsh-3d.su2"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"tetra", "triangle"}));
  EXPECT_EQ(m.cells[1].size(), 508);
  EXPECT_EQ(region(m, "sides").entries.size(), 272u);
  EXPECT_EQ(region(m, "top").dim, 2);
}

TEST(Su2Reader, CornersCommentsIndicesDomainPointsAndNamedTags) {
  const auto m = mesh::read_mesh(data("corners.su2"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "quad", "line"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 4, 0, 4, 3}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{1, 2, 5, 4}));
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 2.5, 1}));
  EXPECT_EQ(ints(m.cell_data.at("su2:tag")[2]), (std::vector<std::int64_t>{12, 12, 13, 5, 5}));
  EXPECT_EQ(region(m, "far field").tag, 13);
  EXPECT_TRUE(m.notes.empty());
}

TEST(Su2Reader, BlanksAroundTheEqualsSignAndCellsBeforeNdime) {
  const auto m = mesh::read_mesh(data("spaces.su2"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "line"}));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(ints(region(m, "wall").entries), (std::vector<std::int64_t>{2, 3}));
}

TEST(Su2Reader, MultiZoneReadsZoneOneWithANote) {
  const auto m = mesh::read_mesh(data("zones.su2"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 1, 0, 0, 1}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("zones.su2:11: NZONE= 2: zone 1 is read"), std::string::npos)
      << m.notes[0];
}

TEST(Su2Reader, UnknownKeywordIsNotedAndItsLinesSkipped) {
  const auto m = read_text(
      "NDIME= 2\nNPERIODIC= 1\n0 0 0\n1 1 1\nNPOIN= 3\n0 0\n1 0\n0 1\nNELEM= 1\n5 0 1 2\n");
  EXPECT_EQ(m.cells.size(), 1u);
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("t.su2:2: keyword 'NPERIODIC='"), std::string::npos) << m.notes[0];
}

TEST(Su2Reader, CrlfTabsAndAnIndexColumnAfterLinesWithout) {
  const auto m = read_text(
      "NDIME= 2\r\nNPOIN= 3\r\n0\t0\r\n1 0\r\n0 1\r\nNELEM= 2\r\n5\t0 1 2\r\n5 2 1 0\r\n");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 2, 1, 0}));
  EXPECT_EQ(error_of("NDIME= 2\nNPOIN= 3\n0 0\n1 0\n0 1\nNELEM= 2\n5 0 1 2\n5 0 1 2 1\n"),
            "t.su2:8: a triangle's line is its type, 3 nodes (as the section's first line)");
}

TEST(Su2Reader, NmarkCountDifferentFromTheMarkersIsNoted) {
  const auto m =
      read_text("NDIME= 2\nNPOIN= 2\n0 0\n1 0\nNMARK= 2\nMARKER_TAG= a\nMARKER_ELEMS= 1\n3 0 1\n");
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("NMARK= 2 but 1"), std::string::npos);
}

TEST(Su2Reader, ErrorsNameTheFileAndLine) {
  const std::string pts = "NDIME= 2\nNPOIN= 3\n0 0\n1 0\n0 1\n";
  EXPECT_EQ(error_of("NDIME= 4\n"), "t.su2:1: NDIME= 4: the dimension is 2 or 3");
  EXPECT_EQ(error_of("NPOIN= 1\n0 0\n"),
            "t.su2:1: NPOIN= before NDIME=: the points' coordinate count is not known");
  EXPECT_EQ(error_of(pts + "NELEM= 2\n5 0 1 2\n% a comment\n"),
            "t.su2:8: the file ends after 1 of the 2 elements its count gives");
  EXPECT_EQ(error_of(pts + "NELEM= 1\n5 0 1 2\n5 0 1 2\n"),
            "t.su2:8: expected a keyword line (NDIME=, NPOIN=, NELEM=, NMARK=, MARKER_TAG=, "
            "MARKER_ELEMS=), found '5 0 1 2' (more lines than the last count, NELEM= 1)");
  EXPECT_EQ(error_of(pts + "NELEM= 1\n7 0 1 2\n"),
            "t.su2:7: element type 7 is not one of 3 (line), 5 (triangle), 9 (quad), 10 "
            "(tetra), 12 (hexahedron), 13 (wedge), 14 (pyramid)");
  EXPECT_EQ(error_of(pts + "NELEM= 1\n5 0 1\n"),
            "t.su2:7: a triangle has 3 nodes; the line lists 2");
  EXPECT_EQ(error_of("NDIME= 2\nNELEM= 2\n5 0 1 2\n5 0 1 9\nNPOIN= 3\n0 0\n1 0\n0 1\n"),
            "t.su2:4: node index 9 is not one of the 3 points");
  EXPECT_EQ(error_of("NDIME= 2\nNPOIN= 2\n0 0 7\n1 0\n"),
            "t.su2:4: point 1's line has 2 values, the first point's 3");
  EXPECT_EQ(error_of("NDIME= 2\nNPOIN= 99999\n0 0\n"),
            "t.su2:2: NPOIN= 99999 is negative or more lines than the rest of the file holds");
  EXPECT_EQ(error_of("NDIME= x\n"), "t.su2:1: expected an integer after NDIME=, found 'x'");
  EXPECT_EQ(error_of("% nothing\n"), "t.su2: not an SU2 mesh: no NDIME=, NPOIN= or NELEM= line");
}

// The writer tests' files: a directory of their own (tests/support/temp_dir.hpp).
struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("su2w") {}
};

TEST(Su2Writer, RoundTripKeepsBlocksTagsAndMarkerNames) {
  Tmp tmp;
  for (const char* name : {"gmsh-2d.su2", "gmsh-3d.su2", "corners.su2", "meshio-mixed.su2"}) {
    const auto src = mesh::read_mesh(data(name));
    EXPECT_TRUE(mesh::write_mesh(src, tmp.file("o.su2")).empty()) << name;
    const auto back = mesh::read_mesh(tmp.file("o.su2"));
    EXPECT_EQ(doubles(back.points), doubles(src.points)) << name;
    ASSERT_EQ(cell_types(back), cell_types(src)) << name;
    for (std::size_t b = 0; b < src.cells.size(); ++b) {
      EXPECT_EQ(ints(back.cells[b].connectivity), ints(src.cells[b].connectivity)) << name;
      EXPECT_EQ(ints(back.cell_data.at("su2:tag")[b]), ints(src.cell_data.at("su2:tag")[b]))
          << name;
    }
    ASSERT_EQ(back.regions.size(), src.regions.size()) << name;
    for (std::size_t r = 0; r < src.regions.size(); ++r) {
      EXPECT_EQ(back.regions[r].name, src.regions[r].name);
      EXPECT_EQ(ints(back.regions[r].entries), ints(src.regions[r].entries));
    }
  }
}

TEST(Su2Writer, WhatSu2CannotHoldIsNoted) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 1, 0, 0, 1}, {3, 2});
  m.cells.push_back(mesh::CellBlock::fixed(
      "vertex", mesh::Array::from_vector(std::vector<std::int64_t>{0}, {1, 1})));
  m.point_data["T"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3});
  const auto notes = mesh::write_mesh(m, tmp.file("v.su2"));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "point_data 'T' is not written: SU2 holds no point data");
  EXPECT_NE(notes[1].find("cells[0] (vertex) is not written"), std::string::npos);
}

}  // namespace
