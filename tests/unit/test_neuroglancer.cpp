// The Neuroglancer precomputed mesh reader and writer: a file made byte by byte here, meshio's
// file of gmsh's sphere (tests/data/surface/sphere_neuroglancer, tools/make_neuroglancer.py)
// against the same sphere read from OBJ, sizes that do not add up, and the writer's round trip
// and notes. The comparison with meshio's reader is in tests/python/test_surface_readers.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;

namespace {

using meshdock::test::doubles;
using meshdock::test::f4;
using meshdock::test::ints;
using meshdock::test::u4;

mesh::Mesh read_bytes(const std::string& bytes) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_neuroglancer(f); },
                                   bytes, "seg:0");
}

std::string error_of(const std::string& bytes) {
  return meshdock::test::read_error(
      [](const mesh::InFile& f) { return mesh::read_neuroglancer(f); }, bytes, "seg:0");
}

TEST(NeuroglancerReader, CountVerticesTriangles) {
  const auto m =
      read_bytes(u4({4}) + f4({0, 0, 0, 1, 0, 0, 0, 1, 0, 0.1f, 0.2f, 1}) + u4({0, 1, 2, 0, 2, 3}));
  mesh::validate_mesh(m, "seg:0");
  ASSERT_EQ(m.points.shape(), (std::vector<std::int64_t>{4, 3}));
  EXPECT_EQ(doubles(m.points)[9], static_cast<double>(0.1f));  // float32 widened exactly
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "triangle");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 0, 2, 3}));
  const auto empty = read_bytes(u4({0}));
  EXPECT_EQ(empty.points.shape(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_EQ(empty.cells[0].size(), 0);
}

TEST(NeuroglancerReader, MeshiosSphereIsTheObjSphere) {
  const std::string data = MESHDOCK_TEST_DATA;
  const auto m = mesh::read_mesh(data + "/surface/sphere_neuroglancer", "neuroglancer");
  const auto obj = mesh::read_mesh(data + "/meshes/sphere.obj");
  ASSERT_EQ(m.points.shape(), obj.points.shape());
  const auto a = doubles(m.points), b = doubles(obj.points);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i], static_cast<double>(static_cast<float>(b[i]))) << i;
  EXPECT_EQ(ints(m.cells[0].connectivity), ints(obj.cells[0].connectivity));
}

TEST(NeuroglancerReader, SizesThatDoNotAddUp) {
  EXPECT_EQ(error_of("ab"),
            "seg:0: 2 bytes: a Neuroglancer precomputed mesh starts with a 4-byte vertex count");
  EXPECT_EQ(error_of(u4({1000}) + f4({0, 0, 0})),
            "seg:0: byte 0: the vertex count 1000 needs 12004 bytes, the file has 16 (truncated, "
            "or not a Neuroglancer precomputed mesh)");
  EXPECT_EQ(error_of(u4({1}) + f4({0, 0, 0}) + u4({0, 0})),
            "seg:0: byte 16: the 8 bytes after the vertices are not whole triangles (12 bytes "
            "each): truncated, or not a Neuroglancer precomputed mesh");
  // Vertex n itself is out of range (meshio's check, `> n`, lets it through).
  EXPECT_EQ(error_of(u4({3}) + f4({0, 0, 0, 1, 0, 0, 0, 1, 0}) + u4({0, 1, 3})),
            "seg:0: byte 48: triangle 0 names vertex 3 of 3");
  EXPECT_NE(
      meshdock::test::path_error(std::string(MESHDOCK_TEST_DATA) + "/surface/sphere_neuroglancer")
          .find("no file extension; name the format"),
      std::string::npos);
}

TEST(NeuroglancerWriter, RoundTripAndNotes) {
  const meshdock::test::TempDir dir("neuroglancer-w");
  const auto src = mesh::read_mesh(std::string(MESHDOCK_TEST_DATA) + "/meshes/sphere.obj");
  mesh::WriteOptions o;
  o.format = "neuroglancer";
  const auto notes = mesh::write_mesh(src, dir.file("seg:1"), o);
  // The OBJ's coordinates are not all float32 values, and its group ids are cell data.
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "cell_data 'obj:group_ids' is not written: Neuroglancer holds no cell data");
  EXPECT_EQ(notes[1], "a Neuroglancer mesh stores float32 vertices: some coordinates were rounded");
  const auto back = mesh::read_mesh(dir.file("seg:1"), "neuroglancer");
  const auto meshios = mesh::read_mesh(
      std::string(MESHDOCK_TEST_DATA) + "/surface/sphere_neuroglancer", "neuroglancer");
  EXPECT_EQ(doubles(back.points), doubles(meshios.points));
  EXPECT_EQ(ints(back.cells[0].connectivity), ints(src.cells[0].connectivity));
  // 2-D points get z = 0; a block of quads is refused.
  mesh::Mesh flat;
  flat.points = mesh::Array::of<double>({3, 2});
  for (int k = 0; k < 6; ++k) flat.points.as<double>()[k] = k;
  auto conn = mesh::Array::of<std::int64_t>({1, 3});
  for (int k = 0; k < 3; ++k) conn.as<std::int64_t>()[k] = k;
  flat.cells.push_back(mesh::CellBlock::fixed("triangle", std::move(conn)));
  const auto flat_notes = mesh::write_mesh(flat, dir.file("flat"), o);
  EXPECT_EQ(flat_notes.at(0),
            "points have 2 coordinates; Neuroglancer stores 3, so the rest are written as 0");
  EXPECT_EQ(doubles(mesh::read_mesh(dir.file("flat"), "neuroglancer").points),
            (std::vector<double>{0, 1, 0, 2, 3, 0, 4, 5, 0}));
  flat.cells[0].type = "quad";
  auto quad = mesh::Array::of<std::int64_t>({1, 4});
  for (int k = 0; k < 4; ++k) quad.as<std::int64_t>()[k] = k % 3;
  flat.cells[0] = mesh::CellBlock::fixed("quad", std::move(quad));
  EXPECT_THROW(mesh::write_mesh(flat, dir.file("q"), o), mesh::WriteError);
}

}  // namespace
