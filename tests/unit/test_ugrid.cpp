// The UGRID reader and writer: the files of tests/data/ugrid (gmsh meshes written by meshio's
// ugrid writer in several variants, hand-made corners; tools/make_ugrid.py), bytes written here
// through a memfd under a name that picks the variant (errors name the file and the line or
// byte), and round trips through write_ugrid in every variant. The comparisons with meshio are in
// tests/python/test_ugrid.py.
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
  return std::string(MESHDOCK_TEST_DATA) + "/ugrid/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::f8;
using meshdock::test::i4;
using meshdock::test::ints;

mesh::Mesh read_bytes(const std::string& bytes, const std::string& name = "t.ugrid") {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_ugrid(f); }, bytes,
                                   name);
}

std::string error_of(const std::string& bytes, const std::string& name = "t.ugrid") {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_ugrid(f); },
                                    bytes, name);
}

TEST(UgridReader, CornersAsciiPyramidToVtkOrderSurfaceIdsAndTrailingVolumeIds) {
  const auto m = mesh::read_mesh(data("corners.ugrid"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(doubles(m.points),
            (std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0.5, 0.5, 1}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "pyramid"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 4, 1, 2, 4}));
  // The file's "2 1 5 4 3" (base 1 2 5 4, apex 3) -> VTK's base 0 1 3 2, apex 4 (as meshio).
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 3, 2, 4}));
  const auto& ref = m.cell_data.at("ugrid:ref");
  ASSERT_EQ(ref.size(), 2u);
  EXPECT_EQ(ref[0].dtype().bits, 32);
  EXPECT_EQ(ints(ref[0]), (std::vector<std::int64_t>{7, -3}));
  EXPECT_EQ(ref[1].dtype().bits, 64);
  EXPECT_EQ(ints(ref[1]), (std::vector<std::int64_t>{0}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("corners.ugrid:11: the text after the hexahedra is not read"),
            std::string::npos)
      << m.notes[0];
}

TEST(UgridReader, EveryVariantOfOneMeshReadsTheSame) {
  const auto ref = mesh::read_mesh(data("gmsh-tets.ugrid"));
  EXPECT_EQ(cell_types(ref), (std::vector<std::string>{"triangle", "tetra"}));
  EXPECT_GT(ref.cells[1].size(), 100);
  EXPECT_TRUE(ref.notes.empty());
  for (const char* v : {"b8", "lb4", "b8l", "lb8l", "r8", "lr4"}) {
    const auto m = mesh::read_mesh(data(std::string("gmsh-tets.") + v + ".ugrid"));
    mesh::validate_mesh(m, v);
    EXPECT_EQ(doubles(m.points), doubles(ref.points)) << v;
    ASSERT_EQ(cell_types(m), cell_types(ref)) << v;
    for (std::size_t b = 0; b < m.cells.size(); ++b) {
      EXPECT_EQ(ints(m.cells[b].connectivity), ints(ref.cells[b].connectivity)) << v;
      EXPECT_EQ(ints(m.cell_data.at("ugrid:ref")[b]), ints(ref.cell_data.at("ugrid:ref")[b])) << v;
    }
    // meshio's Fortran end marker is read as one; nothing is left over.
    EXPECT_TRUE(m.notes.empty()) << v << ": " << m.notes[0];
    // Surface ids in the file's integers: 8 bytes for b8l / lb8l.
    EXPECT_EQ(m.cell_data.at("ugrid:ref")[0].dtype().bits, std::strstr(v, "8l") ? 64 : 32) << v;
  }
}

TEST(UgridReader, MixedSixTypesInEveryVariant) {
  for (const char* name :
       {"mixed.ugrid", "mixed.b4.ugrid", "mixed.lr8.ugrid", "mixed.lb8l.ugrid"}) {
    const auto m = mesh::read_mesh(data(name));
    mesh::validate_mesh(m, name);
    EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "quad", "tetra", "pyramid",
                                                       "wedge", "hexahedron"}))
        << name;
    EXPECT_EQ(ints(m.cells[3].connectivity), (std::vector<std::int64_t>{4, 5, 6, 7, 8})) << name;
    EXPECT_EQ(ints(m.cells[4].connectivity), (std::vector<std::int64_t>{1, 10, 2, 5, 12, 6}))
        << name;
    EXPECT_EQ(doubles(m.points)[14 * 3 + 2], 2.125) << name;
  }
}

TEST(UgridReader, BinaryBytesBuiltHere) {
  // lb8: 4 nodes, 1 triangle (id 9), 1 tetra.
  const std::string bytes = i4({4, 1, 0, 1, 0, 0, 0}) + f8({0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}) +
                            i4({1, 2, 3, 9, 1, 2, 3, 4});
  const auto m = read_bytes(bytes, "x.lb8.ugrid");
  EXPECT_EQ(doubles(m.points)[3], 1.0);
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "tetra"}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ints(m.cell_data.at("ugrid:ref")[0]), (std::vector<std::int64_t>{9}));
  // Two more bytes: noted, not read.
  const auto more = read_bytes(bytes + "xy", "x.lb8.ugrid");
  ASSERT_EQ(more.notes.size(), 1u);
  EXPECT_EQ(more.notes[0],
            "ugrid: x.lb8.ugrid: 2 bytes after the hexahedra (at byte 156) are not read (volume "
            "ids?), as meshio reads nothing after them");
  // No cells at all: points only, no cell_data (meshio gives an empty list).
  const auto pts = read_bytes(i4({1, 0, 0, 0, 0, 0, 0}) + f8({1, 2, 3}), "x.lb8.ugrid");
  EXPECT_TRUE(pts.cells.empty());
  EXPECT_TRUE(pts.cell_data.empty());
}

TEST(UgridReader, CountsTheFileCannotHoldAllocateNothing) {
  // 2^31 - 1 of every count over 40 bytes: refused from the header, before any allocation.
  const std::string all =
      "2147483647 nodes, 2147483647 triangles, 2147483647 quads, "
      "2147483647 tetrahedra, 2147483647 pyramids, 2147483647 prisms, "
      "2147483647 hexahedra";
  EXPECT_EQ(error_of(i4({2147483647, 2147483647, 2147483647, 2147483647, 2147483647, 2147483647,
                         2147483647}) +
                         std::string(12, '\0'),
                     "x.lb8.ugrid"),
            "x.lb8.ugrid: byte 0: header: 2147483647 nodes of 24 bytes each do not fit in the "
            "file's 40 bytes (counts: " +
                all + ")");
  // 2^31 of each in 8-byte integers (b8l, big-endian).
  std::string big;
  for (int k = 0; k < 7; ++k) big += std::string("\0\0\0\0\x80\0\0\0", 8);
  EXPECT_NE(error_of(big, "x.b8l.ugrid")
                .find("x.b8l.ugrid: byte 0: header: 2147483648 nodes of 24 bytes each do not fit "
                      "in the file's 56 bytes"),
            std::string::npos);
  // The file of tools/make_ugrid.py, and mixed.b8 cut short in its hexahedra.
  // Seven zero counts are an empty mesh (the 12 bytes after them noted).
  const auto empty = read_bytes(std::string(40, '\0'), "x.lb8.ugrid");
  EXPECT_EQ(empty.num_points(), 0);
  EXPECT_EQ(empty.notes.size(), 1u);
  try {
    mesh::read_mesh(data("truncated.b8.ugrid"));
    ADD_FAILURE() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_EQ(std::string(e.what()), data("truncated.b8.ugrid") +
                                         ": byte 0: header: 1 hexahedra of 32 bytes each do not "
                                         "fit in the file's 528 bytes (counts: 15 nodes, 2 "
                                         "triangles, 1 quads, 2 tetrahedra, 1 pyramids, 1 "
                                         "prisms, 1 hexahedra)");
  }
  EXPECT_THROW(mesh::read_mesh(data("lying.lb8.ugrid")), mesh::ReadError);
  // Negative counts; a Fortran file names the byte of its counts.
  EXPECT_EQ(error_of(i4({28, 1, -2, 0, 0, 0, 0, 0, 28}), "x.lr8.ugrid"),
            "x.lr8.ugrid: byte 4: header: -2 triangles (a count below 0)");
  EXPECT_EQ(error_of(i4({1, 2, 3}), "x.lb8.ugrid"),
            "x.lb8.ugrid: byte 0: the header's 7 counts: needs 28 bytes but only 12 remain "
            "(truncated file?)");
}

TEST(UgridReader, ErrorsNameTheFileAndLineOrByte) {
  // Binary: a node number out of 1..4 at byte 28 + 96 + 8.
  EXPECT_EQ(error_of(i4({4, 1, 0, 0, 0, 0, 0}) + f8({0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}) +
                         i4({1, 2, 7, 5}),
                     "x.lb8.ugrid"),
            "x.lb8.ugrid: byte 132: triangles: cell 1 refers to node 7; nodes are numbered 1..4");
  EXPECT_EQ(error_of(i4({4, 0, 0, 1, 0, 0, 0}) + f8({0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}) +
                         i4({1, 2, 3, 0}),
                     "x.lb8.ugrid"),
            "x.lb8.ugrid: byte 136: tetrahedra: cell 1 refers to node 0; nodes are numbered 1..4");
  // ascii
  const std::string head = "3 1 0 0 0 0 0\n";
  EXPECT_EQ(error_of(head + "0 0 0\n1 0 0\n0 1 0\n1 2 9\n1\n"),
            "t.ugrid:5: triangles: cell 1 refers to node 9; nodes are numbered 1..3");
  EXPECT_EQ(error_of(head + "0 0 0\n1 x 0\n0 1 0\n1 2 3\n1\n"),
            "t.ugrid:3: expected a coordinate (a real), found 'x'");
  EXPECT_EQ(error_of(head + "0 0 0\n1 0 0\n0 1 0\n1 2 3\n1.5\n"),
            "t.ugrid:6: expected a surface id (an integer of 32 bits), found '1.5'");
  // A file short of its values: the end of file where the value was expected.
  EXPECT_EQ(error_of(head + "0 0 0\n1 0 0\n0 1 0\n1 2 3\n"),
            "t.ugrid:6: expected a surface id (an integer of 32 bits), found 'end of file'");
  // Counts the rest cannot hold, two bytes a value at least: refused from the header's line.
  EXPECT_EQ(error_of(head + "0 0 0\n1 0 0\n0 1 0\n"),
            "t.ugrid:1: header: 1 triangles of 8 bytes at least each do not fit in the file's 32 "
            "bytes (counts: 3 nodes, 1 triangles, 0 quads, 0 tetrahedra, 0 pyramids, 0 prisms, 0 "
            "hexahedra)");
  EXPECT_EQ(error_of("3 -1 0 0 0 0 0\n"), "t.ugrid:1: header: -1 triangles (a count below 0)");
  EXPECT_EQ(error_of("3 1 0\n"),
            "t.ugrid:2: expected a header count (an integer), found 'end of "
            "file'");
}

// The writer tests' files: a directory of their own (tests/support/temp_dir.hpp).
struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("ugridw") {}
};

TEST(UgridWriter, RoundTripInEveryVariant) {
  Tmp tmp;
  for (const char* name : {"mixed.lr8.ugrid", "corners.ugrid", "gmsh-prisms.ugrid"}) {
    const auto src = mesh::read_mesh(data(name));
    for (const char* v :
         {"", ".b8", ".lb8", ".b4", ".lb4", ".b8l", ".lb8l", ".r8", ".lr8", ".r4", ".lr4"}) {
      const auto out = tmp.file(std::string("o") + v + ".ugrid");
      EXPECT_TRUE(mesh::write_mesh(src, out).empty()) << name << v;
      const auto back = mesh::read_mesh(out);
      EXPECT_TRUE(back.notes.empty()) << name << v;
      EXPECT_EQ(doubles(back.points), doubles(src.points)) << name << v;
      ASSERT_EQ(cell_types(back), cell_types(src)) << name << v;
      for (std::size_t b = 0; b < src.cells.size(); ++b) {
        EXPECT_EQ(ints(back.cells[b].connectivity), ints(src.cells[b].connectivity)) << name << v;
        EXPECT_EQ(ints(back.cell_data.at("ugrid:ref")[b]), ints(src.cell_data.at("ugrid:ref")[b]))
            << name << v;
      }
    }
  }
}

TEST(UgridWriter, FortranRecordsCarryTheirTrueLengths) {
  Tmp tmp;
  const auto src = mesh::read_mesh(data("corners.ugrid"));
  mesh::write_mesh(src, tmp.file("c.lr8.ugrid"));
  std::string bytes(fs::file_size(tmp.file("c.lr8.ugrid")), '\0');
  FILE* f = std::fopen(tmp.file("c.lr8.ugrid").c_str(), "rb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  // 5 points (120 bytes), 2 triangles with ids (32), a pyramid (20).
  const std::int32_t rest = 120 + 32 + 20;
  EXPECT_EQ(bytes.substr(0, 4), i4({28}));
  EXPECT_EQ(bytes.substr(32, 8), i4({28, rest}));
  EXPECT_EQ(bytes.substr(bytes.size() - 4), i4({rest}));
  EXPECT_EQ(bytes.size(), 4 + 28 + 8 + static_cast<std::size_t>(rest) + 4);
}

TEST(UgridWriter, OtherBlocksAreErrorsDataAndMissingIdsNoted) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 1, 0, 0, 1}, {3, 2});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  m.point_data["T"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3});
  const auto notes = mesh::write_mesh(m, tmp.file("t.b8.ugrid"));
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0], "points have 2 coordinates; UGRID stores 3, so the rest are written as 0");
  EXPECT_EQ(notes[1],
            "the surface ids are written as 1: the mesh has no cell_data 'ugrid:ref' (nor other "
            "integer cell data of one value a cell)");
  EXPECT_EQ(notes[2], "point_data 'T' is not written: UGRID holds no point data");
  const auto back = mesh::read_mesh(tmp.file("t.b8.ugrid"));
  EXPECT_EQ(doubles(back.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(ints(back.cell_data.at("ugrid:ref")[0]), (std::vector<std::int64_t>{1}));
  // Another integer cell data stands for the ids (meshio's pick).
  m.cell_data["gmsh:physical"] = {mesh::Array::from_vector(std::vector<std::int32_t>{42})};
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("t.ugrid")).size(), 2u);
  EXPECT_EQ(ints(mesh::read_mesh(tmp.file("t.ugrid")).cell_data.at("ugrid:ref")[0]),
            (std::vector<std::int64_t>{42}));
  m.cells.push_back(mesh::CellBlock::fixed(
      "line", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1}, {1, 2})));
  m.cell_data["gmsh:physical"].push_back(mesh::Array::from_vector(std::vector<std::int32_t>{1}));
  try {
    mesh::write_mesh(m, tmp.file("l.ugrid"));
    ADD_FAILURE() << "no error";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()),
              tmp.file("l.ugrid") +
                  ": cells[1] (line) cannot be written: UGRID holds triangle, quad, tetra, "
                  "pyramid, wedge and hexahedron cells only");
  }
  EXPECT_FALSE(fs::exists(tmp.file("l.ugrid")));
  // The name says the encoding.
  mesh::WriteOptions o;
  o.format = "ugrid";
  o.encoding = "ascii";
  m.cells.pop_back();
  m.cell_data["gmsh:physical"].pop_back();
  EXPECT_THROW(mesh::write_mesh(m, tmp.file("x.b8.ugrid"), o), mesh::WriteError);
  o.encoding = "binary";
  EXPECT_NO_THROW(mesh::write_mesh(m, tmp.file("x.b8.ugrid"), o));
}

}  // namespace
