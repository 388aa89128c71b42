// The FLAC3D reader and writer: the files of tests/data/flac3d (gmsh meshes written by meshio's
// flac3d writer, ascii and binary; hand-made corners; tools/make_flac3d.py), bytes written here
// through a memfd (errors name the file and the line or byte), and round trips through
// write_flac3d in both encodings. The comparisons with meshio are in tests/python/test_flac3d.py.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
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
  return std::string(MESHDOCK_TEST_DATA) + "/flac3d/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::f8;
using meshdock::test::ints;
using meshdock::test::u4;

mesh::Mesh read_bytes(const std::string& bytes) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_flac3d(f); },
                                   bytes, "t.f3grid");
}

std::string error_of(const std::string& bytes) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_flac3d(f); },
                                    bytes, "t.f3grid");
}

using I = std::vector<std::int64_t>;

TEST(Flac3dReader, CornersLabelsB7FacesFirstAndGroups) {
  const auto m = mesh::read_mesh(data("corners.f3grid"));
  EXPECT_TRUE(m.notes.empty());
  EXPECT_EQ(m.points.dim(0), 9);
  EXPECT_EQ(doubles(m.points)[3 * 7 + 2], 1.5);
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "quad", "hexahedron", "tetra",
                                                     "pyramid", "hexahedron", "wedge"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 3}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{0, 1, 2, 3}));
  // B8 10 11 13 20 12 23 21 22: FLAC3D's brick order to VTK's (meshio's table).
  EXPECT_EQ(ints(m.cells[2].connectivity), (I{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(ints(m.cells[3].connectivity), (I{0, 1, 3, 4}));
  EXPECT_EQ(ints(m.cells[4].connectivity), (I{4, 5, 8, 6, 7}));
  // B7: the last node doubled, then the brick's order.
  EXPECT_EQ(ints(m.cells[5].connectivity), (I{0, 1, 2, 3, 4, 5, 5, 7}));
  EXPECT_EQ(ints(m.cells[6].connectivity), (I{0, 1, 4, 3, 5, 7}));
  // cell_ids: faces' ids, zones' ids + the 2 faces (meshio's numbers).
  std::vector<I> ids;
  for (const auto& a : m.cell_data.at("cell_ids")) ids.push_back(ints(a));
  EXPECT_EQ(ids, (std::vector<I>{{40}, {41}, {102}, {7}, {103}, {104}, {9}}));
  ASSERT_EQ(m.regions.size(), 3u);
  EXPECT_EQ(m.regions[0].name, "zone:rock mass:1");
  EXPECT_EQ(ints(m.regions[0].entries), (I{2, 3, 4}));
  EXPECT_EQ(m.regions[0].dim, 3);
  EXPECT_EQ(m.regions[1].name, "zone:single:Default");
  EXPECT_EQ(ints(m.regions[1].entries), (I{5, 6}));
  EXPECT_EQ(m.regions[2].name, "face:base:2");
  EXPECT_EQ(ints(m.regions[2].entries), (I{1, 0}));
  EXPECT_EQ(m.regions[2].dim, 2);
  EXPECT_NO_THROW(mesh::validate_mesh(m, "corners"));
}

TEST(Flac3dReader, AsciiAndBinaryOfOneMeshReadTheSame) {
  for (const char* stem : {"mixed", "gmsh-tets", "gmsh-prisms", "gmsh-hex"}) {
    const auto a = mesh::read_mesh(data(std::string(stem) + ".f3grid"));
    const auto b = mesh::read_mesh(data(std::string(stem) + ".bin.f3grid"));
    EXPECT_EQ(doubles(a.points), doubles(b.points)) << stem;
    ASSERT_EQ(cell_types(a), cell_types(b)) << stem;
    for (std::size_t k = 0; k < a.cells.size(); ++k)
      EXPECT_EQ(ints(a.cells[k].connectivity), ints(b.cells[k].connectivity)) << stem;
    ASSERT_EQ(a.regions.size(), b.regions.size()) << stem;
    for (std::size_t k = 0; k < a.regions.size(); ++k)
      EXPECT_EQ(ints(a.regions[k].entries), ints(b.regions[k].entries)) << stem;
  }
  const auto m = mesh::read_mesh(data("mixed.bin.f3grid"));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"tetra", "pyramid", "wedge", "hexahedron"}));
  ASSERT_EQ(m.regions.size(), 2u);
  EXPECT_EQ(m.regions[0].name, "zone:left:Default");
  EXPECT_EQ(ints(m.regions[0].entries), (I{0, 3, 6, 7}));
}

TEST(Flac3dReader, BinaryBytesBuiltHere) {
  // 4 points (ids 9 8 7 6), one tetra (B7 rule not involved), one triangle face, a face group.
  std::string b = u4({1375135718, 3, 4});
  const double xyz[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (std::uint32_t i = 0; i < 4; ++i) b += u4({9 - i}) + f8({xyz[i][0], xyz[i][1], xyz[i][2]});
  b += u4({1, 5, 4, 9, 8, 7, 6, 0});  // 1 zone, id 5; no zone groups
  b += u4({1, 3, 3, 9, 8, 7, 1});     // 1 face, id 3; 1 face group
  b += std::string("\x02\x00", 2) + "ab" + std::string("\x01\x00", 2) + "s" + u4({1, 3});
  const auto m = read_bytes(b);
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "tetra"}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{0, 1, 2, 3}));
  EXPECT_EQ(ints(m.cell_data.at("cell_ids")[1]), (I{6}));
  ASSERT_EQ(m.regions.size(), 1u);
  EXPECT_EQ(m.regions[0].name, "face:ab:s");
  EXPECT_EQ(ints(m.regions[0].entries), (I{0}));
  // Bytes after the face groups are noted.
  EXPECT_EQ(read_bytes(b + "xyz").notes.size(), 1u);
}

TEST(Flac3dReader, ErrorsNameTheFileAndLineOrByte) {
  const auto lying = [] {
    try {
      mesh::read_mesh(data("lying.bin.f3grid"));
    } catch (const mesh::ReadError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  }();
  EXPECT_EQ(lying, data("lying.bin.f3grid") +
                       ": byte 8: 4294967295 grid points of 28 bytes at least do not fit in the "
                       "4 bytes left");
  try {
    mesh::read_mesh(data("bad-node.f3grid"));
    ADD_FAILURE() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_EQ(std::string(e.what()),
              data("bad-node.f3grid") +
                  ":5: zone 1 refers to grid point 99, which no G line before it defines");
  }
  EXPECT_THROW(mesh::read_mesh(data("truncated.bin.f3grid")), mesh::ReadError);
  const std::string g = "G 1 0 0 0\nG 2 1 0 0\nG 3 0 1 0\nG 4 0 0 1\n";
  EXPECT_EQ(error_of(g + "G 1 5 5 5\n"), "t.f3grid:5: grid point 1 is given twice");
  EXPECT_EQ(error_of("G 1 0 0\n"), "t.f3grid:1: grid point 1: expected x y z");
  EXPECT_EQ(error_of("G 1 0 0 x\n"), "t.f3grid:1: expected a coordinate (a real), found 'x'");
  EXPECT_EQ(error_of(g + "Z T4 1 1 2 3\n"),
            "t.f3grid:5: zone 1 has 3 nodes; a zone has 4 (T4), 5 (P5), 6 (W6), 7 (B7) or 8 (B8)");
  EXPECT_EQ(error_of(g + "F Q4 1 1 2 3 4 1\n"),
            "t.f3grid:5: face 1 has 5 nodes; a face has 3 (T3) or 4 (Q4)");
  EXPECT_EQ(error_of(g + "Z T4 1 1 2 3 4\nZ T4 1 4 3 2 1\n"),
            "t.f3grid:6: zone id 1 is given twice");
  EXPECT_EQ(error_of(g + "Z T4 1 1 2 3 4\nZGROUP \"a\" SLOT 1\n 1 2\n"),
            "t.f3grid: line 6: group 'a' names zone 2, which no zone record has");
  EXPECT_EQ(error_of(g + "ZGROUP a SLOT 1\n"),
            "t.f3grid:5: expected 'ZGROUP \"name\" SLOT k', found 'ZGROUP a SLOT 1'");
  EXPECT_EQ(error_of(g + "Z\n"), "t.f3grid:5: expected 'Z type id nodes...'");
  // Binary: a node id no grid point has names its byte.
  std::string b = u4({1375135718, 3, 1, 1}) + f8({0, 0, 0}) + u4({1, 1, 4, 1, 1, 1, 2});
  EXPECT_EQ(error_of(b),
            "t.f3grid: byte 64: zone 1 refers to grid point 2, which no grid point has");
  b = u4({1375135718, 3, 0, 7});
  EXPECT_EQ(error_of(b),
            "t.f3grid: byte 12: 7 zones of 24 bytes at least do not fit in the 0 bytes left");
}

TEST(Flac3dReader, UnknownLinesNotedGroupsEndAtABlankLine) {
  const auto m = read_bytes(
      "G 1 0 0 0\nG 2 1 0 0\nG 3 0 1 0\nG 4 0 0 1\nZ T4 1 1 2 3 4\nZ T4 2 1 3 2 4\n"
      "ZGROUP \"a\" SLOT 1\n1\n\n2\nWHATEVER\n");
  ASSERT_EQ(m.regions.size(), 1u);
  EXPECT_EQ(ints(m.regions[0].entries), (I{0}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("2 lines that are no G, Z, F"), std::string::npos) << m.notes[0];
  EXPECT_NE(m.notes[0].find("line 10"), std::string::npos) << m.notes[0];
}

// The writer tests' files: a directory of their own (tests/support/temp_dir.hpp).
struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("flac3dw") {}
};

TEST(Flac3dWriter, RoundTripInBothEncodings) {
  Tmp tmp;
  for (const char* name : {"mixed.f3grid", "corners.f3grid", "gmsh-tets.bin.f3grid"}) {
    const auto src = mesh::read_mesh(data(name));
    for (const char* enc : {"ascii", "binary"}) {
      mesh::WriteOptions o;
      o.encoding = enc;
      const auto out = tmp.file(std::string("o-") + enc + ".f3grid");
      const auto notes = mesh::write_mesh(src, out, o);
      // cell_ids are the file's own numbering, written anew.
      ASSERT_EQ(notes.size(), 1u) << name << enc;
      EXPECT_EQ(notes[0], "cell_data 'cell_ids' is not written: FLAC3D holds no cell data");
      const auto back = mesh::read_mesh(out);
      EXPECT_TRUE(back.notes.empty()) << name << enc;
      EXPECT_EQ(doubles(back.points), doubles(src.points)) << name << enc;
      // Faces come back first (they are first already in what read_flac3d gives).
      ASSERT_EQ(cell_types(back), cell_types(src)) << name << enc;
      for (std::size_t b = 0; b < src.cells.size(); ++b)
        EXPECT_EQ(ints(back.cells[b].connectivity), ints(src.cells[b].connectivity))
            << name << enc << b;
      ASSERT_EQ(back.regions.size(), src.regions.size()) << name << enc;
      for (std::size_t r = 0; r < src.regions.size(); ++r) {
        EXPECT_EQ(back.regions[r].name, src.regions[r].name) << name << enc;
        EXPECT_EQ(ints(back.regions[r].entries), ints(src.regions[r].entries)) << name << enc;
      }
    }
  }
}

TEST(Flac3dWriter, OtherBlocksAreErrorsHigherOrderAndDataNoted) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 1, 0, 0, 1}, {3, 2});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle6", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 0, 1, 2}, {1, 6})));
  m.point_data["T"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3});
  mesh::Region r;
  r.name = "pts";
  r.kind = mesh::RegionKind::kPoint;
  r.entries = mesh::Array::from_vector(std::vector<std::int64_t>{0});
  m.regions.push_back(r);
  const auto notes = mesh::write_mesh(m, tmp.file("t.f3grid"));
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(notes[0], "points have 2 coordinates; FLAC3D stores 3, so the rest are written as 0");
  EXPECT_EQ(notes[1],
            "cells[0] (triangle6) is written as triangle (its corners): FLAC3D has no "
            "higher-order cells");
  EXPECT_EQ(notes[2], "region 'pts' is not written: FLAC3D holds no sets of points");
  EXPECT_EQ(notes[3], "point_data 'T' is not written: FLAC3D holds no point data");
  const auto back = mesh::read_mesh(tmp.file("t.f3grid"));
  EXPECT_EQ(doubles(back.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(cell_types(back), (std::vector<std::string>{"triangle"}));
  m.cells.push_back(mesh::CellBlock::fixed(
      "line", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1}, {1, 2})));
  try {
    mesh::write_mesh(m, tmp.file("l.f3grid"));
    ADD_FAILURE() << "no error";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()),
              tmp.file("l.f3grid") +
                  ": cells[1] (line) cannot be written: FLAC3D holds tetra, pyramid, wedge and "
                  "hexahedron zones and triangle and quad faces only");
  }
  EXPECT_FALSE(fs::exists(tmp.file("l.f3grid")));
  mesh::WriteOptions o;
  o.encoding = "zlib";
  m.cells.pop_back();
  EXPECT_THROW(mesh::write_mesh(m, tmp.file("x.f3grid"), o), mesh::WriteError);
}

TEST(Flac3dWriter, MirroredZonesTakeMeshiosSecondOrder) {
  // A tetra whose first three corners turn clockwise seen from the fourth is written 0 2 1 3.
  Tmp tmp;
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "tetra",
      mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 0, 2, 1, 3}, {2, 4})));
  mesh::write_mesh(m, tmp.file("t.f3grid"));
  std::string text(fs::file_size(tmp.file("t.f3grid")), '\0');
  FILE* f = std::fopen(tmp.file("t.f3grid").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fread(text.data(), 1, text.size(), f), text.size());
  std::fclose(f);
  EXPECT_NE(text.find("Z T4 1 1 2 3 4\nZ T4 2 1 2 3 4\n"), std::string::npos) << text;
}

}  // namespace
