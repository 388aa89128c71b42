// The surface readers (OBJ, OFF, PLY) on what issue 14 made them keep: OBJ point elements, OFF
// colours / normals / texture coordinates (and its line checks), PLY face properties in their
// own types split like the faces. Files from tests/data/surface plus small texts written here
// (through a memfd, so the real file code runs); the comparisons with meshio and VTK are in
// tests/python/test_surface_readers.py.

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;

namespace {

using meshdock::test::doubles;
using meshdock::test::read_text;

std::string surface(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/surface/" + name;
}

std::string error_of(mesh::Mesh (*reader)(const mesh::InFile&), const std::string& text) {
  return meshdock::test::read_error(reader, text, "t");
}

constexpr mesh::DType kU8{1, 8, 1};
constexpr mesh::DType kI16{0, 16, 1};

}  // namespace

TEST(SurfaceReaders, ObjPointsAreAVertexBlockAfterFacesAndLines) {
  const auto m = mesh::read_mesh(surface("points.obj"));
  ASSERT_EQ(m.cells.size(), 4u);
  EXPECT_EQ(m.cells[3].type, "vertex");
  EXPECT_EQ(m.cells[3].connectivity.shape(), (std::vector<std::int64_t>{6, 1}));
  EXPECT_EQ(doubles(m.cells[3].connectivity), (std::vector<double>{0, 1, 4, 2, 3, 3}));
  EXPECT_EQ(doubles(m.cell_data.at("obj:group_ids")[3]), (std::vector<double>{-1, -1, 0, 0, 0, 0}));
  ASSERT_EQ(m.notes.size(), 1u);  // "p 1 2" and "p 3 -2 4" split
  EXPECT_NE(m.notes[0].find("obj: 2 'p' statements with more than 1 vertex split"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_obj, "v 0 0 0\np 1 2\n").find("t:2: a point refers to vertex 1"),
            std::string::npos);
}

TEST(SurfaceReaders, CoffKeepsVertexAndFaceColoursPerBlock) {
  const auto m = mesh::read_mesh(surface("colours.off"));
  const auto& c = m.point_data.at("colors");
  EXPECT_EQ(c.dtype(), kU8);
  EXPECT_EQ(c.shape(), (std::vector<std::int64_t>{5, 4}));
  EXPECT_EQ(doubles(c)[10], 255);  // vertex 2: 0 0 255 128
  EXPECT_EQ(doubles(c)[11], 128);
  const auto& fc = m.cell_data.at("colors");
  ASSERT_EQ(fc.size(), 3u);  // triangles, the quad, the pentagon
  EXPECT_EQ(fc[0].dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(fc[0]), (std::vector<double>{0.5, 0.25, 1, 0, 0, 0}));
  EXPECT_EQ(doubles(fc[1]), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(doubles(fc[2]), (std::vector<double>{0.1, 0.2, 0.3}));
}

TEST(SurfaceReaders, CnoffNormalsAndColormapIndices) {
  const auto m = mesh::read_mesh(surface("normals.off"));
  EXPECT_EQ(doubles(m.point_data.at("normals")),
            (std::vector<double>{0, 0, 1, 0, 0, 1, 0, 0.6, 0.8, 0, 0, -1}));
  EXPECT_EQ(m.point_data.at("colors").dtype(), mesh::kFloat64);
  EXPECT_EQ(m.cell_data.at("color_index")[0].dtype(), mesh::kInt64);
  EXPECT_EQ(doubles(m.cell_data.at("color_index")[0]), (std::vector<double>{7, 2}));
}

TEST(SurfaceReaders, OffLinesAreCheckedValueByValue) {
  const std::string head = "OFF\n3 1 0\n";
  EXPECT_NE(error_of(mesh::read_off, head + "0 0 0\n1 0\n0 1 0\n3 0 1 2\n")
                .find("t:4: vertex 1 has 2 values; 3 or more needed"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_off, head + "0 0 0\n1 0 0\n0 1 0\n3 0 1\n2\n")
                .find("t:6: face 0 lists 2 of its 3 vertex indices"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_off, "COFF\n3 1 0\n0 0 0 1 2 3\n1 0 0 1 2 3\n0 1 0 1 2 256\n")
                .find("t:5: vertex colour value 256 is outside 0..255"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_off, "4OFF\n1 0 0\n0 0 0 1\n").find("'4OFF'"), std::string::npos);
  EXPECT_NE(error_of(mesh::read_off, "nOFF\n3\n").find("'nOFF'"), std::string::npos);
  // The vertex values stay on their line (a colour is not taken for the next coordinate).
  const auto m =
      read_text(mesh::read_off, head + "0 0 0 9 9 9\n1 0 0 8 8 8\n0 1 0 7 7 7\n3 0 1 2\n", "t.off");
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(doubles(m.point_data.at("colors")), (std::vector<double>{9, 9, 9, 8, 8, 8, 7, 7, 7}));
}

TEST(SurfaceReaders, PlyFacePropertiesKeepTheirTypesInEveryBlock) {
  for (const char* name : {"faceprops.bin.ply", "faceprops.be.ply"}) {
    SCOPED_TRACE(name);
    const auto m = mesh::read_mesh(surface(name));
    ASSERT_EQ(m.cells.size(), 3u);
    const auto& red = m.cell_data.at("red");
    ASSERT_EQ(red.size(), 3u);
    EXPECT_EQ(red[0].dtype(), kU8);
    EXPECT_EQ(doubles(red[0]), (std::vector<double>{10, 30}));
    EXPECT_EQ(doubles(red[1]), (std::vector<double>{20, 40}));
    EXPECT_EQ(doubles(red[2]), (std::vector<double>{50}));
    const auto& flags = m.cell_data.at("flags");
    EXPECT_EQ(flags[0].dtype(), kI16);
    EXPECT_EQ(doubles(flags[0]), (std::vector<double>{-5, 32767}));
    EXPECT_EQ(doubles(flags[2]), (std::vector<double>{-32768}));
    EXPECT_EQ(m.cell_data.at("quality")[1].dtype(), mesh::kFloat64);
    EXPECT_EQ(doubles(m.cell_data.at("quality")[1]), (std::vector<double>{0.25, -2}));
  }
  const auto a = mesh::read_mesh(surface("faceprops.ascii.ply"));
  EXPECT_EQ(a.cell_data.at("flags")[0].dtype(), mesh::kInt32);
  EXPECT_EQ(a.cell_data.at("quality")[0].dtype(), mesh::kFloat32);
  EXPECT_EQ(doubles(a.cell_data.at("flags")[2]), (std::vector<double>{-2147483648.0}));
}

// Trial C: files of tests/data/tools/make_surface_text.py (VTK / meshio wrote them) and texts.
namespace {
const std::vector<double> kTextPoints{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0.5};
const std::vector<double> kTextTriangles{0, 1, 2, 0, 2, 3, 1, 3, 2};
}  // namespace

TEST(SurfaceReaders, PlyVertexPropertiesKeepTheirTypes) {
  for (const char* name : {"vertex-props.ascii.ply", "vertex-props.bin.ply"}) {
    SCOPED_TRACE(name);
    const auto m = mesh::read_mesh(surface(name));
    EXPECT_EQ(doubles(m.points), kTextPoints);
    EXPECT_EQ(m.point_data.at("red").dtype(), kU8);
    EXPECT_EQ(doubles(m.point_data.at("red")), (std::vector<double>{0, 128, 255, 7}));
    EXPECT_EQ(m.point_data.at("label").dtype(), mesh::kInt32);
    EXPECT_EQ(doubles(m.point_data.at("label")),
              (std::vector<double>{-5, 0, 2147483647.0, -2147483648.0}));
    EXPECT_EQ(m.point_data.at("flags").dtype(), (mesh::DType{1, 16, 1}));
    EXPECT_EQ(doubles(m.point_data.at("flags")), (std::vector<double>{0, 1, 65535, 300}));
    EXPECT_EQ(m.point_data.at("tiny").dtype(), (mesh::DType{0, 8, 1}));
    EXPECT_EQ(doubles(m.point_data.at("tiny")), (std::vector<double>{-128, 127, 0, -1}));
    EXPECT_EQ(m.point_data.at("big").dtype(), (mesh::DType{1, 32, 1}));
    EXPECT_EQ(doubles(m.point_data.at("big"))[1], 4294967295.0);
    EXPECT_EQ(m.point_data.at("weight").dtype(), mesh::kFloat32);
    EXPECT_EQ(m.point_data.at("quality").dtype(), mesh::kFloat64);
    EXPECT_TRUE(m.notes.empty());
  }
}

TEST(SurfaceReaders, StlUppercaseWrongCountAndTrailingBytes) {
  for (const char* name : {"upper.stl", "countzero.stl", "solid-countzero.stl", "trailing.stl"}) {
    SCOPED_TRACE(name);
    const auto m = mesh::read_mesh(surface(name));
    EXPECT_EQ(doubles(m.points), kTextPoints);
    ASSERT_EQ(m.cells.size(), 1u);
    EXPECT_EQ(doubles(m.cells[0].connectivity), kTextTriangles);
    if (std::string(name) == "upper.stl") {
      EXPECT_TRUE(m.notes.empty());
    } else {
      ASSERT_EQ(m.notes.size(), 1u);
      EXPECT_NE(
          m.notes[0].find(std::string(name) == "trailing.stl"
                              ? ": 10 bytes after the 3 triangles (from byte 234) not read"
                              : ": the binary header counts 0 triangles but the file holds 3"),
          std::string::npos)
          << m.notes[0];
    }
  }
  EXPECT_NE(error_of(mesh::read_stl,
                     "SOLID a\nFACET NORMAL 0 0 1\nOUTER LOOP\nVERTEX 0 0 0\n"
                     "VERTEX 1 0 0\nENDLOOP\n")
                .find("t:6: expected 'vertex' (only triangles are valid STL)"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_stl, "hello\n")
                .find("t:1: not an STL file: ascii STL starts with 'solid', this one with 'hello'"),
            std::string::npos);
  std::string truncated(80, ' ');
  truncated += std::string("\x02\0\0\0", 4) + std::string(50, '\x01');
  EXPECT_NE(error_of(mesh::read_stl, truncated)
                .find("t: byte 80: binary STL (its first bytes are not text): the header counts 2 "
                      "triangles (184 bytes) but the file has 134 bytes (truncated?)"),
            std::string::npos);
}

TEST(SurfaceReaders, Utf8ByteOrderMarkIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  const auto obj = read_text(mesh::read_obj, bom + "v 9 9 9\nv 0 0 0\nv 1 0 0\nf 1 2 3\n", "t.obj");
  EXPECT_EQ(doubles(obj.points), (std::vector<double>{9, 9, 9, 0, 0, 0, 1, 0, 0}));
  EXPECT_TRUE(obj.notes.empty());
  const auto off =
      read_text(mesh::read_off, bom + "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", "t.off");
  EXPECT_EQ(doubles(off.cells[0].connectivity), (std::vector<double>{0, 1, 2}));
  for (const char* name : {"bom.stl", "bom.obj", "bom.off", "bom.ply"}) {
    SCOPED_TRACE(name);
    const auto m = mesh::read_mesh(surface(name));
    EXPECT_EQ(doubles(m.points), kTextPoints);
    EXPECT_EQ(doubles(m.cells[0].connectivity), kTextTriangles);
    EXPECT_TRUE(m.notes.empty());
  }
  // Line numbers stay the file's.
  EXPECT_NE(error_of(mesh::read_obj, bom + "v 0 0 0\nv 1 x 0\n").find("t:2: bad vertex coordinate"),
            std::string::npos);
}

TEST(SurfaceReaders, ObjVertexColoursAndStylingStatementsAreNoted) {
  const auto m =
      read_text(mesh::read_obj,
                "o a\nv 0 0 0 1 0 0\nv 1 0 0 0 1 0\nv 0 1 0 0 0 1\nusemtl m\nf 1 2 3\n", "t.obj");
  EXPECT_EQ(m.notes, (std::vector<std::string>{
                         "obj: 1 'o' statements not read (object names are not kept)",
                         "obj: 1 'usemtl' statements not read (materials are not kept)",
                         "obj: 3 vertices have a colour ('v x y z r g b'); the colours were not "
                         "kept"}));
}

// meshio writes a 2-D mesh's PLY with x and y only (and reads it back as (n, 2) points); it was
// refused as "vertex element lacks x, y or z".
TEST(SurfaceReaders, PlyWithXAndYOnlyHasTwoDimensionalPoints) {
  const std::string head =
      "ply\nformat ascii 1.0\nelement vertex 3\nproperty double x\nproperty double y\n"
      "property int label\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
  const auto m = read_text(mesh::read_ply, head + "0 0.5 7\n1 0 -8\n0 1 9\n3 0 1 2\n", "t.ply");
  ASSERT_EQ(m.points.ndim(), 2u);
  EXPECT_EQ(m.points.dim(1), 2);
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0.5, 1, 0, 0, 1}));
  EXPECT_EQ(doubles(m.point_data.at("label")), (std::vector<double>{7, -8, 9}));
  EXPECT_EQ(doubles(m.cells[0].connectivity), (std::vector<double>{0, 1, 2}));

  // The same in binary, little endian: float x, y.
  std::string bin =
      "ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\n"
      "property float y\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n";
  for (float v : {0.f, 0.5f, 1.f, 0.f, 0.f, 1.f}) bin.append(reinterpret_cast<const char*>(&v), 4);
  bin.push_back(3);
  for (std::int32_t i : {0, 1, 2}) bin.append(reinterpret_cast<const char*>(&i), 4);
  const auto b = read_text(mesh::read_ply, bin, "t.ply");
  EXPECT_EQ(b.points.dim(1), 2);
  EXPECT_EQ(doubles(b.points), (std::vector<double>{0, 0.5, 1, 0, 0, 1}));

  // x and z without y is no mesh: the message names what is missing.
  EXPECT_NE(error_of(mesh::read_ply,
                     "ply\nformat ascii 1.0\nelement vertex 1\nproperty double x\n"
                     "property double z\nend_header\n0 0\n")
                .find("vertex element lacks y"),
            std::string::npos);
}

// meshio writes int64 data as PLY "int64" properties (not in the PLY specification; meshio reads
// them back): kept as int64 while exact in the double every value passes through.
TEST(SurfaceReaders, PlyInt64PropertiesAsMeshioWritesThem) {
  const std::string head =
      "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
      "property float z\nproperty int64 id\nproperty uint64 n\nend_header\n";
  const auto m =
      read_text(mesh::read_ply, head + "0 0 0 -5 7\n1 0 0 9007199254740992 0\n", "t.ply");
  EXPECT_EQ(m.point_data.at("id").dtype(), (mesh::DType{0, 64, 1}));
  EXPECT_EQ(m.point_data.at("id").as<std::int64_t>()[0], -5);
  EXPECT_EQ(m.point_data.at("id").as<std::int64_t>()[1], std::int64_t{1} << 53);
  EXPECT_EQ(m.point_data.at("n").dtype(), (mesh::DType{1, 64, 1}));
  EXPECT_EQ(m.point_data.at("n").as<std::uint64_t>()[0], 7u);
  EXPECT_NE(error_of(mesh::read_ply, head + "0 0 0 9007199254740993 0\n1 0 0 0 0\n")
                .find("an int64 property value is beyond 2^53"),
            std::string::npos);

  std::string bin =
      "ply\nformat binary_little_endian 1.0\nelement vertex 1\nproperty float x\n"
      "property float y\nproperty float z\nproperty int64 id\nend_header\n";
  for (float v : {1.f, 2.f, 3.f}) bin.append(reinterpret_cast<const char*>(&v), 4);
  const std::int64_t id = -(std::int64_t{1} << 40);
  EXPECT_EQ(
      read_text(mesh::read_ply, bin + std::string(reinterpret_cast<const char*>(&id), 8), "t.ply")
          .point_data.at("id")
          .as<std::int64_t>()[0],
      id);
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  EXPECT_NE(error_of(mesh::read_ply, bin + std::string(reinterpret_cast<const char*>(&big), 8))
                .find("beyond 2^53"),
            std::string::npos);
}

// OFF vertex values on any lines, as Geomview's spec has them ("dimension * NVertices values");
// they were refused unless one vertex per line. kTextPoints / kTextTriangles in every layout.
TEST(SurfaceReaders, OffVertexValuesMayBeLaidOutOnAnyLines) {
  const std::string faces = "3 0 1 2\n3 0 2 3\n3 1 3 2\n";
  for (const char* vertices : {
           "0 0 0 1 0 0\n1 1 0 0 1 0.5\n",                  // two a line
           "0 0 0 1 0 0 1 1 0 0 1 0.5\n",                   // all on one
           "0\n0\n0\n1\n0\n0\n1\n1\n0\n0\n1\n0.5\n",        // one value a line
           "0 0 0\n1 0 0 1 1 0\n0 1 0.5\n",                 // one, then two
           "0 0 # the origin\n\n0 1 0 0 1 1\n0 0 1 0.5\n",  // with a comment and a blank line
           // Two a line with comments, blank lines and CRLF between: the reader counts value lines
           // to the one where the stream's faces start (line 2 after vertex 0's) to tell
           // vertices with colours from two vertices a line.
           "0 0 0 1 0 0 # two\r\n# a comment\n\n \t\n1 1 0 0 1 0.5\r\n\n",
           "\t0 0 0   1 0 0\n  # indented comment\n1 1 0 0 1 0.5 # last\n# before the faces\n",
       }) {
    SCOPED_TRACE(vertices);
    const auto m =
        read_text(mesh::read_off, "OFF\n4 3 0\n" + std::string(vertices) + faces, "t.off");
    EXPECT_EQ(doubles(m.points), kTextPoints);
    ASSERT_EQ(m.cells.size(), 1u);
    EXPECT_EQ(doubles(m.cells[0].connectivity), kTextTriangles);
    EXPECT_TRUE(m.point_data.empty());
    EXPECT_TRUE(m.notes.empty());
  }
  // Normals and texture coordinates are in the stream too.
  const auto n =
      read_text(mesh::read_off,
                "STNOFF 3 1 0\n0 0 0 0 0 1 0.25 0.5 1 0 0\n0 0 1 1 0.5 0 1 0 0 0 1\n0 1\n"
                "3 0 1 2\n",
                "t.off");
  EXPECT_EQ(doubles(n.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(doubles(n.point_data.at("normals")), (std::vector<double>{0, 0, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(doubles(n.point_data.at("texture_coords")),
            (std::vector<double>{0.25, 0.5, 1, 0.5, 0, 1}));
  // A bad value names its own line; a stream that does not end with a line (or runs out) leaves
  // the first line that is not one vertex in error, as before.
  EXPECT_NE(error_of(mesh::read_off, "OFF\n3 1 0\n0 0 0 1 0 0\n0 x 0\n3 0 1 2\n")
                .find("t:4: expected vertex coordinate, found 'x'"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_off, "OFF\n3 1 0\n0 0\n0 1 0 0 1\n0 3 0 1 2\n")
                .find("t:3: vertex 0 has 2 values; 3 or more needed"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_off, "OFF\n3 1 0\n0 0 0\n1 0\n0 1 # and no more\n")
                .find("t:4: vertex 1 has 2 values; 3 or more needed"),
            std::string::npos);
  // With colours (a C header) a vertex is its line: what would 3 or 4 colour values be?
  EXPECT_NE(error_of(mesh::read_off, "COFF\n2 0 0\n0 0 0 255 0 0 1 0 0 0 255 0\n")
                .find("t:3: too many values on a vertex line (with a C header each vertex and its "
                      "colour have a line of their own)"),
            std::string::npos);
}

// A plain OFF line of 6 values is a vertex and its colour, or two vertices: the colours while
// that reading holds to the last vertex, the stream when it breaks before and the stream fits,
// the colours with a note when both fit.
TEST(SurfaceReaders, OffSixValueVertexLinesAreColoursUnlessOnlyTheStreamFits) {
  const auto two = read_text(mesh::read_off, "OFF\n2 0 0\n0 0 0 1 0 0\n", "t.off");
  EXPECT_EQ(doubles(two.points), (std::vector<double>{0, 0, 0, 1, 0, 0}));
  EXPECT_TRUE(two.point_data.empty());
  const auto coloured =
      read_text(mesh::read_off, "OFF\n2 0 0\n0 0 0 1 0 0\n1 0 0 0 1 0\n", "t.off");
  EXPECT_EQ(doubles(coloured.points), (std::vector<double>{0, 0, 0, 1, 0, 0}));
  EXPECT_EQ(doubles(coloured.point_data.at("colors")), (std::vector<double>{1, 0, 0, 0, 1, 0}));
  EXPECT_TRUE(coloured.notes.empty());
  // A colour value outside 0..255 breaks the colour reading too.
  const auto big = read_text(mesh::read_off, "OFF\n2 0 0\n0 0 0 300 0 0\n", "t.off");
  EXPECT_EQ(doubles(big.points), (std::vector<double>{0, 0, 0, 300, 0, 0}));
  EXPECT_NE(error_of(mesh::read_off, "OFF\n3 0 0\n0 0 0 1 0 0\n0 0 0 300 0 0\n0 0 0 1 0 0\n")
                .find("t:4: vertex colour value 300 is outside 0..255"),
            std::string::npos);
  // Lines 5 and 6 are vertices with a colour, or faces (a quad and a colormap index, a
  // pentagon): both fit.
  const auto both = read_text(mesh::read_off,
                              "OFF\n4 2 0\n0 0 0 1 0 0\n1 1 0 0 1 0\n4 0 1 2 3 7\n5 0 1 2 3 3\n"
                              "3 0 1 2\n3 0 2 3\n",
                              "t.off");
  EXPECT_EQ(doubles(both.points), (std::vector<double>{0, 0, 0, 1, 1, 0, 4, 0, 1, 5, 0, 1}));
  EXPECT_EQ(doubles(both.point_data.at("colors")),
            (std::vector<double>{1, 0, 0, 0, 1, 0, 2, 3, 7, 2, 3, 3}));
  EXPECT_EQ(both.notes, (std::vector<std::string>{
                            "off: every vertex line holds a vertex and 3 colour values, read so; "
                            "read as a stream of values (as Geomview reads OFF, without colours) "
                            "the vertices would end before t.off:5 and the faces start there"}));
}

// A line ending with '\' goes on on the next one (OBJ's line continuation); it was refused.
TEST(SurfaceReaders, ObjBackslashContinuesALine) {
  const auto m = read_text(mesh::read_obj,
                           "v 0 0 0\nv 1 0 \\\n0\nv 1 \\\n 1 \\\n\t0\nv 0 1 0.5 \\  \r\n\n"
                           "vt 0 0\nvt 1 0\nvt 1 \\\n1\nvt 0 1\nvn 0 0 \\\n1\nvn 0 0 1\nvn 0 0 1\n"
                           "vn 0 0 1\ng a \\\nb\nf 1/1/1 2/2/2 \\\n3/3/3\nf 1 3 \\\n4\n"
                           "f 2 4 3 \\\n\nl 1 \\\n2 3\np \\\n4\nusemtl x \\\ny\n# a note \\\n"
                           "p 1\n",
                           "t.obj");
  EXPECT_EQ(doubles(m.points), kTextPoints);
  ASSERT_EQ(m.cells.size(), 3u);
  EXPECT_EQ(doubles(m.cells[0].connectivity), kTextTriangles);
  EXPECT_EQ(doubles(m.cells[1].connectivity), (std::vector<double>{0, 1, 1, 2}));
  EXPECT_EQ(doubles(m.cells[2].connectivity), (std::vector<double>{3, 0}));
  EXPECT_EQ(doubles(m.cell_data.at("obj:group_ids")[0]), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(doubles(m.point_data.at("obj:vt")), (std::vector<double>{0, 0, 1, 0, 1, 1, 0, 1}));
  EXPECT_EQ(doubles(m.point_data.at("obj:vn")),
            (std::vector<double>{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1}));
  EXPECT_EQ(m.notes,
            (std::vector<std::string>{
                "obj: 1 polylines ('l' with more than 2 vertices) split into line segments; 2 "
                "segments in the line block",
                "obj: 1 'usemtl' statements not read (materials are not kept)",
                "obj: 1 comment lines end with '\\' (a line continuation elsewhere); a comment "
                "ends with its line, the line after each was read as a statement"}));
  // A lone '\' before a blank line continues nothing.
  const auto lone =
      read_text(mesh::read_obj, "v 0 0 0\n\\\n\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "t.obj");
  EXPECT_EQ(doubles(lone.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_TRUE(lone.notes.empty());
  // Errors name the statement's first line; the lines after it keep their numbers.
  EXPECT_NE(
      error_of(mesh::read_obj, "v 0 0 0\nv 1 \\\n0 \\\nx\n").find("t:2: bad vertex coordinate"),
      std::string::npos);
  EXPECT_NE(error_of(mesh::read_obj, "v 0 0 0\nv 0 \\\n0 0\nv 1 x 0\n")
                .find("t:4: bad vertex coordinate"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_obj, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 \\\n2 \\\n\n")
                .find("t:4: a face with 2 vertices"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_obj, "v 0 0 0\nl 1 \\\n0\n").find("t:2: bad face vertex '0'"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_obj, "v 0 0 0\nv 1 0\\\n0\n")
                .find("t:2: a line continuation '\\' touches the value before it"),
            std::string::npos);
  EXPECT_NE(error_of(mesh::read_obj, "v 0 0 0\nv 1 0 0 \\\n")
                .find("t:2: the file ends in a line continuation ('\\')"),
            std::string::npos);
}
