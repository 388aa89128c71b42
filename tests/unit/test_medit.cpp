// The Medit reader and writer (.mesh ascii, .meshb binary): the files of tests/data/medit
// (tests/data/tools/make_medit.py: gmsh, meshio and libMeshb's layout written with struct), small
// texts written here through a memfd for the corners and the errors, and round trips through the
// writer. The comparisons with meshio are in tests/python/test_medit.py.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;

namespace {

using meshdock::test::doubles;

std::string medit(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/medit/" + name;
}

// Reads `bytes` as a file named "t" (through a memfd: the real file code runs).
mesh::Mesh read_bytes(const std::string& bytes) {
  return meshdock::test::read_text(mesh::read_medit, bytes, "t");
}

std::string error_of(const std::string& bytes) {
  return meshdock::test::read_error(mesh::read_medit, bytes, "t");
}

// libMeshb's binary layout, little-endian, version 2 (int32 integers and positions, float64
// reals), built a field at a time.
struct Gmf {
  std::string b;
  template <typename T>
  Gmf& put(T v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  Gmf& i(std::int32_t v) { return put(v); }
  Gmf& r(double v) { return put(v); }
};

// Code word, version 2, Dimension 3: the start of every binary text below.
Gmf gmf_head() {
  Gmf g;
  g.i(1).i(2).i(3).i(20).i(3);
  return g;
}

const std::string kTet =
    "MeshVersionFormatted 2\nDimension 3\nVertices\n4\n0 0 0 1\n1 0 0 1\n0 1 0 2\n0 0 1 2\n"
    "Tetrahedra\n1\n1 2 3 4 7\nEnd\n";

constexpr mesh::DType kI32{0, 32, 1};
constexpr mesh::DType kI64{0, 64, 1};

}  // namespace

TEST(MeditReader, GmshAsciiFileGivesPointsBlocksAndRefs) {
  const auto m = mesh::read_mesh(medit("cube.gmsh.mesh"));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{45, 3}));
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "triangle");
  EXPECT_EQ(m.cells[0].connectivity.shape(), (std::vector<std::int64_t>{28, 3}));
  EXPECT_EQ(m.cells[1].type, "tetra");
  EXPECT_EQ(m.cells[1].connectivity.shape(), (std::vector<std::int64_t>{100, 4}));
  const auto& pref = m.point_data.at("medit:ref");
  EXPECT_EQ(pref.dtype(), kI64);
  EXPECT_EQ(doubles(pref)[6], 10);  // "1 1 1 10": gmsh writes the geometric entity
  const auto& cref = m.cell_data.at("medit:ref");
  ASSERT_EQ(cref.size(), 2u);
  EXPECT_EQ(doubles(cref[1])[0], 1);  // gmsh writes the elementary entity (Volume 1)
  EXPECT_TRUE(m.notes.empty());
}

TEST(MeditReader, EveryMeditTypeInFileOrderWithRefs) {
  for (const auto* name : {"mixed.meshio.mesh", "mixed.meshio.meshb", "v1.le.meshb", "v2.le.meshb",
                           "v2.be.meshb", "v3.le.meshb", "v4.le.meshb"}) {
    SCOPED_TRACE(name);
    const auto m = mesh::read_mesh(medit(name));
    ASSERT_EQ(m.cells.size(), 7u);
    const std::vector<std::string> types{"line",  "triangle", "quad",      "tetra",
                                         "wedge", "pyramid",  "hexahedron"};
    for (std::size_t b = 0; b < 7; ++b) EXPECT_EQ(m.cells[b].type, types[b]);
    EXPECT_EQ(doubles(m.cells[5].connectivity), (std::vector<double>{4, 5, 6, 7, 8}));
    EXPECT_EQ(doubles(m.points)[24], 0.5);
    EXPECT_NEAR(doubles(m.points)[29], 0.1, 1e-8);  // float32 in version 1
    EXPECT_EQ(doubles(m.point_data.at("medit:ref")),
              (std::vector<double>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0}));
    EXPECT_EQ(doubles(m.cell_data.at("medit:ref")[6]), (std::vector<double>{-9}));
    EXPECT_EQ(doubles(m.cell_data.at("medit:ref")[1]), (std::vector<double>{3, 4}));
  }
  // ascii refs are int64 (meshio's astype(int)); binary ones the file's integer type.
  EXPECT_EQ(mesh::read_mesh(medit("mixed.meshio.mesh")).point_data.at("medit:ref").dtype(), kI64);
  EXPECT_EQ(mesh::read_mesh(medit("v2.be.meshb")).point_data.at("medit:ref").dtype(), kI32);
  EXPECT_EQ(mesh::read_mesh(medit("v4.le.meshb")).cell_data.at("medit:ref")[0].dtype(), kI64);
  // Version 1's float32 reals widen exactly.
  EXPECT_EQ(doubles(mesh::read_mesh(medit("v1.le.meshb")).points)[29], double(0.1f));
}

TEST(MeditReader, BinaryStepsOverKeywordsWithOneNote) {
  const auto m = mesh::read_mesh(medit("v3.le.meshb"));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("v3.le.meshb: sections skipped (meshdock maps them to nothing, as "
                            "meshio): keyword 126 (unknown here: stepped over), Corners (2)"),
            std::string::npos)
      << m.notes[0];
}

TEST(MeditReader, AsciiSkipsWhatMeshioSkipsInOneNote) {
  const auto m = mesh::read_mesh(medit("skips.mesh"));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{5, 3}));
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  EXPECT_EQ(m.cells[1].type, "hexahedron");  // Hexaedra
  EXPECT_EQ(m.cells[2].type, "triangle");
  EXPECT_EQ(doubles(m.cells[2].connectivity), (std::vector<double>{0, 1, 2, 0, 2, 3}));
  EXPECT_EQ(doubles(m.cell_data.at("medit:ref")[2]), (std::vector<double>{4, 5}));
  EXPECT_EQ(doubles(m.cell_data.at("medit:ref")[0]), (std::vector<double>{17}));
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_NE(m.notes[0].find(": sections skipped (meshdock maps them to nothing, as meshio): "
                            "Identifier, Corners (2), Ridges (1), RequiredVertices (2), Normals "
                            "(2), NormalAtVertices (2), Tangents (1)"),
            std::string::npos)
      << m.notes[0];
  EXPECT_NE(m.notes[1].find("skips.mesh:49: text after End; not read"), std::string::npos);
}

TEST(MeditReader, TwoDimensionalFileGivesTwoDimensionalPoints) {
  const auto m = mesh::read_mesh(medit("flat.meshio.mesh"));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 3.5, 0, 3.5, 3.5, 0, 3.5}));
  const auto b = read_bytes(
      "MeshVersionFormatted 1\nDimension 2\nVertices 3\n0 0 1 1 0 1 0 1 1\n"
      "Triangles 1 1 2 3 0\n");  // values laid out on lines any way
  EXPECT_EQ(b.points.shape(), (std::vector<std::int64_t>{3, 2}));
  EXPECT_EQ(doubles(b.cells[0].connectivity), (std::vector<double>{0, 1, 2}));
}

TEST(MeditReader, CellsBeforeVerticesAreCheckedOnceTheVerticesAreRead) {
  const auto m = read_bytes(
      "Dimension 3\nTriangles\n1\n1 2 3 0\nVertices\n3\n0 0 0 0\n1 0 0 0\n"
      "0 1 0 0\n");
  EXPECT_EQ(doubles(m.cells[0].connectivity), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(error_of("Dimension 3\nTriangles\n1\n1 2 4 0\nVertices\n3\n0 0 0 0\n1 0 0 0\n"
                     "0 1 0 0\n"),
            "t:2: Triangles refer to vertex 4; the file has 3");
}

TEST(MeditReader, AsciiErrorsNameTheFileAndLine) {
  EXPECT_EQ(error_of("MeshVersionFormatted 2\nDimension 3\nVertices\n1\n0 0 0 0\nFoo\n3\n1 2 3\n"),
            "t:6: unknown keyword 'Foo': its records' layout is not known, so nothing after it "
            "can be read");
  EXPECT_EQ(error_of("Dimension 3\nVertices\n1000\n0 0 0 0\n"),
            "t:3: Vertices: record count 1000 is more than the rest of the file holds");
  EXPECT_EQ(error_of("Dimension 3\nVertices\n-1\n"),
            "t:3: Vertices: record count -1 is more than the rest of the file holds");
  EXPECT_EQ(error_of(kTet.substr(0, kTet.find("1 2 3 4")) + "1 2 3 5 7\nEnd\n"),
            "t:11: Tetrahedra record 1 refers to vertex 5; vertices are numbered 1..4");
  EXPECT_EQ(error_of(kTet.substr(0, kTet.find("1 2 3 4")) + "0 2 3 4 7\nEnd\n"),
            "t:11: Tetrahedra record 1 refers to vertex 0; vertices are numbered 1..4");
  EXPECT_EQ(error_of("Vertices\n1\n0 0 0 0\n"), "t:1: Vertices before Dimension");
  EXPECT_EQ(error_of("Dimension 4\n"), "t:1: Dimension 4 is not 2 or 3");
  EXPECT_EQ(error_of("Dimension 3\nVertices\n2\n0 0 0 0\n1 0 x 0\n"),
            "t:5: expected vertex coordinate, found 'x'");
  // A count too big for its records runs into the next keyword: refused, never read past.
  EXPECT_EQ(error_of("Dimension 3\nVertices\n1\n0 0 0 0\nCorners\n3\n1\nEnd\n"),
            "t:8: Corners: expected value 1 of record 2 of 3, found 'End'");
  EXPECT_EQ(error_of("Dimension 3\nVertices\n2\n0 0 0 0\n1 1 1 1\nVertices\n1\n0 0 0 0\n"),
            "t:6: a second Vertices section");
  EXPECT_EQ(error_of("MeshVersionFormatted 2\nDimension 3\n"),
            "t: no Vertices section (a Medit mesh lists its vertices)");
  EXPECT_EQ(error_of("Dimension 3\nVertices\n1\n0 0 0 1.5\n"),
            "t:4: expected vertex ref (an integer), found '1.5'");
}

TEST(MeditReader, BinaryErrorsNameTheFileAndByte) {
  // A count more than the file holds: refused before anything is allocated.
  EXPECT_EQ(error_of(gmf_head().i(4).i(0).i(1 << 30).r(0).r(0).r(0).i(0).b),
            "t: byte 20: Vertices: record count 1073741824 is more than the rest of the file "
            "holds");
  // An unknown keyword whose next position points back (a loop) or past the end.
  EXPECT_EQ(error_of(gmf_head().i(200).i(4).i(0).b),
            "t: byte 20: keyword 200: its next keyword position 4 is not after it inside the "
            "file (32 bytes)");
  EXPECT_EQ(error_of(gmf_head().i(200).i(1000).i(0).b),
            "t: byte 20: keyword 200: its next keyword position 1000 is not after it inside the "
            "file (32 bytes)");
  Gmf bad_version;
  bad_version.i(1).i(7);
  EXPECT_EQ(error_of(bad_version.b), "t: byte 4: version 7 is not 1..4");
  const auto tri =
      gmf_head().i(4).i(0).i(1).r(0).r(0).r(0).i(0).i(6).i(0).i(1).i(1).i(1).i(2).i(0).b;
  EXPECT_EQ(error_of(tri),
            "t: byte 72: Triangles record 1 refers to vertex 2; vertices are numbered 1..1");
  EXPECT_NE(error_of(tri.substr(0, 76)).find("t: byte 60: Triangles: record count 1 is more"),
            std::string::npos);
  // The file just ends: read, noted.
  const auto m = read_bytes(gmf_head().i(4).i(0).i(1).r(0).r(1).r(2).i(5).b);
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 1, 2}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_EQ(m.notes[0], "medit: t: the file ends without its End keyword");
}

TEST(MeditReader, ContentNotNameTellsAsciiFromBinary) {
  // The memfd is named "t": no extension; read_mesh by format name too.
  EXPECT_EQ(read_bytes(kTet).cells[0].type, "tetra");
  const fs::path p = fs::temp_directory_path() / ("meshdock-medit-" + std::to_string(getpid()));
  fs::create_directories(p);
  fs::copy_file(medit("v2.le.meshb"), p / "x.mesh", fs::copy_options::overwrite_existing);
  EXPECT_EQ(mesh::read_mesh((p / "x.mesh").string()).cells.size(), 7u);
  EXPECT_EQ(mesh::read_mesh((p / "x.mesh").string(), "medit").cells.size(), 7u);
  fs::remove_all(p);
}

namespace {

// The writer tests' files: a directory of their own (tests/support/temp_dir.hpp).
struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("meditw") {}
};

bool same_bytes(const mesh::Array& a, const mesh::Array& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

}  // namespace

TEST(MeditWriter, RoundTripIsExactInBothEncodings) {
  Tmp tmp;
  auto src = mesh::read_mesh(medit("mixed.meshio.mesh"));
  // Values the shortest text must keep exactly.
  src.points.as<double>()[0] = 0.1 + 0.2;
  src.points.as<double>()[1] = -1e-300;
  for (const auto* name : {"o.mesh", "o.meshb"}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(mesh::write_mesh(src, tmp.file(name)).empty());
    const auto back = mesh::read_mesh(tmp.file(name));
    EXPECT_TRUE(same_bytes(back.points, src.points));
    ASSERT_EQ(back.cells.size(), src.cells.size());
    for (std::size_t b = 0; b < src.cells.size(); ++b) {
      EXPECT_EQ(back.cells[b].type, src.cells[b].type);
      EXPECT_TRUE(same_bytes(back.cells[b].connectivity, src.cells[b].connectivity));
      EXPECT_EQ(doubles(back.cell_data.at("medit:ref")[b]),
                doubles(src.cell_data.at("medit:ref")[b]));
    }
    EXPECT_EQ(doubles(back.point_data.at("medit:ref")), doubles(src.point_data.at("medit:ref")));
  }
  // Binary: version 3 (int32) while everything fits, 4 (int64) once a ref does not.
  auto version = [&](const std::string& name) {
    std::int32_t v[2] = {};
    const int fd = ::open(tmp.file(name).c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(::read(fd, v, sizeof v), 8);
    ::close(fd);
    return v[1];
  };
  EXPECT_EQ(version("o.meshb"), 3);
  src.cell_data.at("medit:ref")[0].as<std::int64_t>()[0] = std::int64_t{1} << 40;
  mesh::write_mesh(src, tmp.file("big.meshb"));
  EXPECT_EQ(version("big.meshb"), 4);
  EXPECT_EQ(doubles(mesh::read_mesh(tmp.file("big.meshb")).cell_data.at("medit:ref")[0])[0],
            double(std::int64_t{1} << 40));
  // The format name "medit" picks the encoding by the extension, "meshb" is binary.
  mesh::WriteOptions o;
  o.format = "medit";
  mesh::write_mesh(src, tmp.file("n.meshb"), o);
  EXPECT_EQ(version("n.meshb"), 4);
  o.format = "meshb";
  mesh::write_mesh(src, tmp.file("n.mesh"), o);
  EXPECT_EQ(version("n.mesh"), 4);
  o.format = "medit";
  o.encoding = "ascii";
  mesh::write_mesh(src, tmp.file("a.meshb"), o);
  EXPECT_EQ(mesh::read_mesh(tmp.file("a.meshb")).cells.size(), 7u);
}

TEST(MeditWriter, WhatMeditCannotHoldIsNoted) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 1, 2}, {3, 1});
  m.cells.push_back(mesh::CellBlock::fixed(
      "vertex", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1}, {2, 1})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "line", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 1, 2}, {2, 2})));
  m.point_data["medit:ref"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3});
  m.cell_data["medit:ref"] = {mesh::Array::from_vector(std::vector<std::int32_t>{4, 5}),
                              mesh::Array::from_vector(std::vector<std::int32_t>{6, 7})};
  m.field_data["f"] = mesh::Array::from_vector(std::vector<std::int64_t>{1});
  m.regions.push_back(
      {"r", mesh::RegionKind::kCell, 1, 1, mesh::Array::from_vector(std::vector<std::int64_t>{2})});
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("o.mesh")),
            (std::vector<std::string>{
                "point_data 'medit:ref' is not written: Medit holds no point data",
                "field_data 'f' is not written: Medit holds no field data",
                "region 'r' is not written: Medit holds no sets",
                "cells[0] (vertex) is not written: Medit has no such cells",
                "points have 1 coordinate; Medit stores 2 or 3, so the rest are written as 0"}));
  const auto back = mesh::read_mesh(tmp.file("o.mesh"));
  EXPECT_EQ(doubles(back.points), (std::vector<double>{0, 0, 1, 0, 2, 0}));
  ASSERT_EQ(back.cells.size(), 1u);
  EXPECT_EQ(doubles(back.cell_data.at("medit:ref")[0]), (std::vector<double>{6, 7}));
  EXPECT_EQ(doubles(back.point_data.at("medit:ref")), (std::vector<double>{0, 0, 0}));
}
