// Writers in C++ (so the ASan/UBSan pass covers them): write -> read round trips of every file in
// tests/data/meshes through every writer, a multi-block zlib array written and inflated on every
// core, validation errors that name the array, and no file (or temporary) left by a failed write.
// The value-by-value comparison against REFERENCE.json lives in tests/python/test_write.py.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include "daemon/mesh/parallel.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/write_util.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;
using meshdock::test::slurp;

namespace {

bool same_bytes(const mesh::Array& a, const mesh::Array& b) {
  return a.valid() == b.valid() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

// Every cell's point ids in order, across blocks (fixed blocks only).
std::vector<std::int64_t> all_ids(const mesh::Mesh& m) {
  std::vector<std::int64_t> v;
  for (const auto& b : m.cells) {
    const auto* p = b.connectivity.as<std::int64_t>();
    v.insert(v.end(), p, p + b.connectivity.size());
  }
  return v;
}

struct TempDir : meshdock::test::TempDir {
  TempDir() : meshdock::test::TempDir("writers") {}
};

bool msh_writable(const mesh::Mesh& m) {
  for (const auto& b : m.cells)
    if (b.ragged() || b.type == "polygon" || b.type == "pixel" || b.type.starts_with("VTK_"))
      return false;
  return true;
}

mesh::Mesh tet() {
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "tetra", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3}, {1, 4})));
  return m;
}

std::string error_of(const mesh::Mesh& m, const std::string& path) {
  try {
    mesh::write_mesh(m, path);
  } catch (const mesh::MeshError& e) {
    return e.what();
  }
  return "no error";
}

std::string error_of2(const mesh::Mesh& m, const std::string& path, const mesh::WriteOptions& o) {
  try {
    mesh::write_mesh(m, path, o);
  } catch (const mesh::MeshError& e) {
    return e.what();
  }
  return "no error";
}

// Every file of tests/data/meshes a reader takes (101: + 8 .vtu files of
// tests/data/tools/make_xml_vtk.py (strings.*, pieces-*_N), + 8 of make_xml_vtk_cells.py
// (merged.*, compressed.*), + 12 .vtk of tests/data/tools/make_vtk_legacy.py, + 9 .vtk of
// make_vtk_legacy_vtk9.py, + 4 lagrange.* of make_vtk_lagrange.py).
std::vector<fs::path> mesh_files() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(std::string(MESHDOCK_TEST_DATA) + "/meshes")) {
    const auto ext = entry.path().extension().string();
    if (ext == ".msh" || ext == ".vtu" || ext == ".vtk" || ext == ".stl" || ext == ".off" ||
        ext == ".obj" || ext == ".ply")
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(Writers, EveryFileRoundTripsThroughEveryWriter) {
  TempDir tmp;
  int files = 0, writes = 0;
  for (const auto& file : mesh_files()) {
    ++files;
    const auto src = mesh::read_mesh(file.string());
    const auto name = file.filename().string();
    for (const auto& [file, enc] :
         std::vector<std::pair<std::string, std::string>>{{"o.vtu", "ascii"},
                                                          {"o.vtu", "raw"},
                                                          {"o.vtu", "zlib"},
                                                          {"o.msh", "ascii"},
                                                          {"o.msh", "binary"}}) {
      SCOPED_TRACE(name + " -> " + file + " " + enc);
      mesh::WriteOptions o;
      o.encoding = enc;
      if (file == "o.msh" && !msh_writable(src)) {
        EXPECT_THROW(mesh::write_mesh(src, tmp.file(file), o), mesh::WriteError);
        continue;
      }
      const auto notes = mesh::write_mesh(src, tmp.file(file), o);
      ++writes;
      const auto back = mesh::read_mesh(tmp.file(file));
      EXPECT_TRUE(same_bytes(back.points, src.points));
      EXPECT_EQ(back.num_cells(), src.num_cells());
      if (msh_writable(src)) {
        EXPECT_EQ(all_ids(back), all_ids(src));
      }
      ASSERT_EQ(back.regions.size(), src.regions.size());
      if (file == "o.vtu") {
        EXPECT_TRUE(notes.empty());
        ASSERT_EQ(back.cells.size(), src.cells.size());
        for (std::size_t b = 0; b < src.cells.size(); ++b) {
          EXPECT_EQ(back.cells[b].type, src.cells[b].type);
          EXPECT_TRUE(same_bytes(back.cells[b].connectivity, src.cells[b].connectivity) ||
                      back.cells[b].type == "polygon");
          EXPECT_TRUE(same_bytes(back.cells[b].offsets, src.cells[b].offsets));
          EXPECT_TRUE(same_bytes(back.cells[b].face_offsets, src.cells[b].face_offsets));
        }
        for (const auto& [k, v] : src.point_data) {
          ASSERT_TRUE(back.point_data.count(k)) << k;
          EXPECT_EQ(back.point_data.at(k).dtype(), v.dtype()) << k;
          EXPECT_EQ(back.point_data.at(k).nbytes(), v.nbytes()) << k;
        }
        EXPECT_EQ(back.cell_data.size(), src.cell_data.size());
      }
    }
  }
  EXPECT_EQ(files, 101);
  // ragged.*.vtu, v9poly.* (polyhedra), poly.*.vtk (a pentagon) and lagrange.* (VTK's
  // arbitrary-order cells) are the 12 files MSH cannot hold.
  EXPECT_EQ(writes, 101 * 3 + 89 * 2);
}

namespace {

bool faces_only(const mesh::Mesh& m) {
  for (const auto& b : m.cells)
    if (b.face_offsets.valid() || (b.type != "triangle" && b.type != "quad" && b.type != "polygon"))
      return false;
  return !m.cells.empty();
}

// OBJ holds line and vertex blocks too ("l", "p"; read_obj puts them after the face blocks).
bool obj_writable(const mesh::Mesh& m) {
  bool faces = false;
  for (const auto& b : m.cells) {
    if (b.face_offsets.valid() || (b.type != "triangle" && b.type != "quad" &&
                                   b.type != "polygon" && b.type != "line" && b.type != "vertex"))
      return false;
    faces = faces || (b.type != "line" && b.type != "vertex");
  }
  return faces;
}

bool vtk_writable(const mesh::Mesh& m) {
  for (const auto& b : m.cells)
    if (b.face_offsets.valid()) return false;
  return true;
}

// Every cell as its corner coordinates (so meshes whose points were merged or renumbered, as
// STL readers do, compare equal); quads and polygons as the triangle fans STL writes.
// Faces, then lines, then vertices, each kind in block order: the order read_obj gives them.
std::vector<double> corner_coords(const mesh::Mesh& m, bool fans) {
  std::vector<double> v;
  auto put = [&](std::int64_t p) {
    for (int k = 0; k < 3; ++k) v.push_back(mesh::value_at(m.points, std::size_t(p * 3 + k)));
  };
  auto kind = [](const mesh::CellBlock& b) { return b.type == "vertex" ? 2 : b.type == "line"; };
  std::vector<const mesh::CellBlock*> blocks;
  for (int k = 0; k < 3; ++k)
    for (const auto& b : m.cells)
      if (kind(b) == k) blocks.push_back(&b);
  for (const auto* bp : blocks) {
    const auto& b = *bp;
    const auto* c = b.connectivity.as<std::int64_t>();
    const auto* off = b.ragged() ? b.offsets.as<std::int64_t>() : nullptr;
    const auto npc = b.ragged() ? 0 : b.connectivity.dim(1);
    for (std::int64_t i = 0; i < b.size(); ++i) {
      const auto lo = off ? off[i] : i * npc, hi = off ? off[i + 1] : (i + 1) * npc;
      if (!fans) {
        for (auto k = lo; k < hi; ++k) put(c[k]);
        continue;
      }
      for (auto k = lo + 1; k + 1 < hi; ++k) {
        put(c[lo]);
        put(c[k]);
        put(c[k + 1]);
      }
    }
  }
  return v;
}

}  // namespace

// The formats added for issue 14: every file through every writer that can hold it, read back
// by meshdock's own reader; files a writer cannot hold are refused naming the block.
TEST(Writers, EveryFileRoundTripsThroughTheOtherWriters) {
  TempDir tmp;
  int files = 0, writes = 0, refused = 0;
  for (const auto& file : mesh_files()) {
    ++files;
    const auto src = mesh::read_mesh(file.string());
    const auto name = file.filename().string();
    struct Case {
      std::string file, format, enc;
    };
    for (const auto& [file, format, enc] : std::vector<Case>{{"o.vtk", "", "ascii"},
                                                             {"o.vtk", "", "binary"},
                                                             {"o.msh", "msh22", "ascii"},
                                                             {"o.msh", "msh22", "binary"},
                                                             {"o.stl", "", "ascii"},
                                                             {"o.stl", "", "binary"},
                                                             {"o.obj", "", ""},
                                                             {"o.ply", "", "ascii"},
                                                             {"o.ply", "", "binary"},
                                                             {"o.off", "", ""}}) {
      SCOPED_TRACE(name + " -> " + file + " " + format + " " + enc);
      mesh::WriteOptions o;
      o.format = format;
      o.encoding = enc;
      const bool surface = file != "o.vtk" && file != "o.msh";
      const bool ok = file == "o.vtk"   ? vtk_writable(src)
                      : file == "o.msh" ? msh_writable(src)
                      : file == "o.obj" ? obj_writable(src)
                                        : faces_only(src);
      if (!ok) {
        try {
          mesh::write_mesh(src, tmp.file(file), o);
          ADD_FAILURE() << "written";
        } catch (const mesh::WriteError& e) {
          EXPECT_NE(std::string(e.what()).find("cells["), std::string::npos) << e.what();
        }
        EXPECT_EQ(tmp.entries(), 0u);
        ++refused;
        continue;
      }
      const auto notes = mesh::write_mesh(src, tmp.file(file), o);
      ++writes;
      const auto back = mesh::read_mesh(tmp.file(file));
      fs::remove(tmp.file(file));
      EXPECT_EQ(back.num_cells(),
                file == "o.stl" ? static_cast<std::int64_t>(corner_coords(src, true).size() / 9)
                                : src.num_cells());
      if (file == "o.stl") {
        if (enc == "ascii") {  // binary rounds to float32 (noted)
          EXPECT_EQ(corner_coords(back, false), corner_coords(src, true));
        }
        continue;
      }
      EXPECT_TRUE(same_bytes(back.points, src.points));
      if (surface) {
        EXPECT_EQ(corner_coords(back, false), corner_coords(src, false));
      } else {
        EXPECT_EQ(all_ids(back), all_ids(src));
      }
      if (file == "o.vtk") {
        EXPECT_TRUE(notes.empty()) << notes.front();
        for (const auto& [k, v] : src.point_data) {
          ASSERT_TRUE(back.point_data.count(k)) << k;
          EXPECT_EQ(back.point_data.at(k).dtype(), v.dtype()) << k;
          EXPECT_EQ(back.point_data.at(k).nbytes(), v.nbytes()) << k;
        }
        EXPECT_EQ(back.cell_data.size(), src.cell_data.size());
        // Regions travel as meshdock:region field data, as in VTU.
        EXPECT_EQ(back.field_data.size() + back.regions.size(),
                  src.field_data.size() + src.regions.size());
      }
      if (file == "o.msh") {
        ASSERT_EQ(back.regions.size(), src.regions.size());
        for (std::size_t r = 0; r < src.regions.size(); ++r) {
          EXPECT_EQ(back.regions[r].name, src.regions[r].name);
          EXPECT_TRUE(same_bytes(back.regions[r].entries, src.regions[r].entries))
              << src.regions[r].name;
        }
      }
    }
  }
  EXPECT_EQ(files, 101);
  EXPECT_EQ(writes + refused, 101 * 10);
  EXPECT_GT(writes, 101 * 4);
}

TEST(Writers, MshKeepsMeshioPhysicalNames) {
  // A mesh as meshio gives it: gmsh:physical cell data and field_data {name: [tag, dim]}, no
  // regions. Both MSH versions write $PhysicalNames, so the groups come back named.
  TempDir tmp;
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 1, 3, 2}, {2, 3})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "line", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1}, {1, 2})));
  m.cell_data["gmsh:physical"] = {mesh::Array::from_vector(std::vector<std::int64_t>{7, 7}),
                                  mesh::Array::from_vector(std::vector<std::int64_t>{3})};
  m.field_data["plate"] = mesh::Array::from_vector(std::vector<std::int64_t>{7, 2});
  m.field_data["bottom"] = mesh::Array::from_vector(std::vector<std::int64_t>{3, 1});
  m.field_data["unused"] = mesh::Array::from_vector(std::vector<std::int64_t>{9, 3});
  m.field_data["other"] = mesh::Array::from_vector(std::vector<double>{1.5, 2, 3});
  for (const auto& [format, enc] : std::vector<std::pair<std::string, std::string>>{
           {"msh", "ascii"}, {"msh", "binary"}, {"msh22", "ascii"}, {"msh22", "binary"}}) {
    SCOPED_TRACE(format + " " + enc);
    mesh::WriteOptions o;
    o.format = format;
    o.encoding = enc;
    const auto notes = mesh::write_mesh(m, tmp.file("p.msh"), o);
    EXPECT_EQ(notes, std::vector<std::string>{
                         "field_data 'other' is not written: MSH holds no field data but "
                         "physical names [tag, dim]"});
    const auto back = mesh::read_mesh(tmp.file("p.msh"));
    for (const char* k : {"plate", "bottom", "unused"}) {
      ASSERT_TRUE(back.field_data.count(k)) << k;
      EXPECT_TRUE(same_bytes(back.field_data.at(k), m.field_data.at(k))) << k;
    }
    std::map<std::string, std::vector<std::int64_t>> regions;
    for (const auto& r : back.regions) {
      const auto* e = r.entries.as<std::int64_t>();
      regions[r.name].assign(e, e + r.entries.size());
    }
    EXPECT_EQ(regions["plate"], (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(regions["bottom"], (std::vector<std::int64_t>{2}));
    EXPECT_EQ(regions["unused"], (std::vector<std::int64_t>{}));
  }
}

// A partitioned mesh (gmsh -part 3) written as MSH 2.2 keeps its partitions in the element
// tags, as gmsh writes them, so it reads back partitioned: before, gmsh:partition went out as
// float64 $ElementData and came back as a field of floats, not as partitions.
TEST(Writers, Msh22WritesPartitionsAsElementTags) {
  TempDir tmp;
  const auto m = mesh::read_mesh(std::string(MESHDOCK_TEST_DATA) + "/gmsh/partbox.p3.v41.msh");
  const auto& parts = m.cell_data.at("gmsh:partition");
  for (const char* enc : {"ascii", "binary"}) {
    SCOPED_TRACE(enc);
    mesh::WriteOptions o;
    o.format = "msh22";
    o.encoding = enc;
    const auto notes = mesh::write_mesh(m, tmp.file("p.msh"), o);
    EXPECT_NE(std::find_if(notes.begin(), notes.end(),
                           [](const std::string& n) {
                             return n.find(
                                        "gmsh:partition is written as each element's "
                                        "partition tags") == 0;
                           }),
              notes.end());
    const auto back = mesh::read_mesh(tmp.file("p.msh"));
    ASSERT_TRUE(back.cell_data.count("gmsh:partition"));
    std::vector<std::int64_t> want, got;
    for (const auto& a : parts)
      for (std::size_t i = 0; i < a.size(); ++i) want.push_back(mesh::int_at(a, i));
    for (const auto& a : back.cell_data.at("gmsh:partition")) {
      ASSERT_EQ(a.dtype().code, 0) << "read back as a field of floats";
      for (std::size_t i = 0; i < a.size(); ++i) got.push_back(mesh::int_at(a, i));
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(back.num_cells(), m.num_cells());
  }
}

TEST(Writers, StlSplitsQuadsIntoFansAndRefusesVolumes) {
  TempDir tmp;
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "quad", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3}, {1, 4})));
  mesh::WriteOptions o;
  o.encoding = "ascii";
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("q.stl"), o),
            std::vector<std::string>{
                "cells[0] (quad) written as triangle fans: STL holds triangles only"});
  const auto back = mesh::read_mesh(tmp.file("q.stl"));
  ASSERT_EQ(back.cells.size(), 1u);
  EXPECT_EQ(back.cells[0].type, "triangle");
  EXPECT_EQ(all_ids(back), (std::vector<std::int64_t>{0, 1, 2, 0, 2, 3}));
  { std::ofstream(tmp.file("keep.stl")) << "old"; }
  EXPECT_EQ(error_of(tet(), tmp.file("keep.stl")),
            tmp.file("keep.stl") +
                ": cells[0] (tetra) cannot be written to STL, which holds triangles only (quad "
                "and polygon blocks are split into triangles); write it as VTU or MSH");
  EXPECT_EQ(slurp(tmp.file("keep.stl")), "old");
  EXPECT_EQ(tmp.entries(), 2u);
}

TEST(Writers, ObjWritesVertexBlocksAsPointsThatReadBackAfterTheFaces) {
  TempDir tmp;
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "vertex", mesh::Array::from_vector(std::vector<std::int64_t>{3, 1}, {2, 1})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("p.obj")),
            std::vector<std::string>{
                "cells[0] (vertex) is written as p lines; OBJ readers put points after the "
                "faces and lines, so it reads back as a later block"});
  EXPECT_NE(slurp(tmp.file("p.obj")).find("\np 4\np 2\nf 1 2 3\n"), std::string::npos)
      << slurp(tmp.file("p.obj"));
  const auto back = mesh::read_mesh(tmp.file("p.obj"));
  ASSERT_EQ(back.cells.size(), 2u);
  EXPECT_EQ(back.cells[0].type, "triangle");
  EXPECT_EQ(back.cells[1].type, "vertex");
  EXPECT_EQ(all_ids(back), (std::vector<std::int64_t>{0, 1, 2, 3, 1}));
}

TEST(Writers, LegacyVtkBinaryIsBigEndian) {
  TempDir tmp;
  mesh::WriteOptions o;
  o.encoding = "binary";
  EXPECT_TRUE(mesh::write_mesh(tet(), tmp.file("t.vtk"), o).empty());
  const auto bytes = slurp(tmp.file("t.vtk"));
  const auto at = bytes.find("POINTS 4 double\n");
  ASSERT_NE(at, std::string::npos);
  // Point 1 is (1, 0, 0): its x, 1.0, big-endian is 3f f0 00 .. 00.
  const auto x1 = bytes.substr(at + 16 + 24, 8);
  EXPECT_EQ(x1, std::string("\x3f\xf0\0\0\0\0\0\0", 8));
  const auto back = mesh::read_mesh(tmp.file("t.vtk"));
  EXPECT_TRUE(same_bytes(back.points, tet().points));
  EXPECT_EQ(all_ids(back), (std::vector<std::int64_t>{0, 1, 2, 3}));
}

TEST(Writers, EncodingsAreCheckedPerFormat) {
  TempDir tmp;
  mesh::WriteOptions o;
  o.encoding = "zlib";
  EXPECT_EQ(error_of2(tet(), tmp.file("a.vtk"), o),
            tmp.file("a.vtk") + ": VTK encoding 'zlib' is not one of ascii, binary");
  o.encoding = "binary";
  EXPECT_EQ(error_of2(tet(), tmp.file("a.off"), o),
            tmp.file("a.off") + ": OFF encoding 'binary' is not ascii (its only one)");
  o.encoding = "ascii";
  EXPECT_EQ(error_of2(tet(), tmp.file("a.exo"), o),
            tmp.file("a.exo") + ": Exodus encoding 'ascii' is not binary (its only one)");
  o = {};
  EXPECT_EQ(error_of2(tet(), tmp.file("a.xyz"), o),
            tmp.file("a.xyz") +
                ": no writer for format 'xyz' (writers: vtu, vtp, msh, msh22, vtk, stl, obj, ply, "
                "off, mesh, meshb, inp, su2, exo, bdf, dat, avs, node, ugrid, f3grid, vol, ansys, "
                "fluent, mdpa, kratos, post, dato, neuroglancer; "
                "each may end in "
                "-ascii or -binary where it has "
                "both, as "
                "meshio's names do)");
  o.encoding = "binary";
  EXPECT_EQ(error_of2(tet(), tmp.file("a.vtp"), o),
            tmp.file("a.vtp") + ": VTP encoding 'binary' is not one of ascii, raw, zlib");
  EXPECT_EQ(tmp.entries(), 0u);
}

// meshio's names carry the encoding. Export (format only) answered "no writer for format
// 'vtk-ascii'" while `meshdock convert -o vtk-ascii` wrote ASCII.
TEST(Writers, MeshioFormatNamesCarryTheEncoding) {
  TempDir tmp;
  mesh::WriteOptions o;
  o.format = "VTK-ascii";
  EXPECT_TRUE(mesh::write_mesh(tet(), tmp.file("a.out"), o).empty());
  EXPECT_NE(slurp(tmp.file("a.out")).find("\nASCII\n"), std::string::npos);
  o.format = "gmsh22-binary";
  mesh::write_mesh(tet(), tmp.file("b.out"), o);
  EXPECT_EQ(slurp(tmp.file("b.out")).rfind("$MeshFormat\n2.2 1 8\n", 0), 0u);
  o.format = "vtu-binary";  // meshio's: appended zlib, VTU's default here
  mesh::write_mesh(tet(), tmp.file("c.out"), o);
  EXPECT_NE(slurp(tmp.file("c.out")).find("vtkZLibDataCompressor"), std::string::npos);
  o.format = "vtu-ascii";
  mesh::write_mesh(tet(), tmp.file("d.out"), o);
  EXPECT_NE(slurp(tmp.file("d.out")).find("format=\"ascii\""), std::string::npos);
  o.format = "vtk-ascii";
  o.encoding = "binary";
  EXPECT_EQ(error_of2(tet(), tmp.file("e.vtk"), o),
            tmp.file("e.vtk") + ": format 'vtk-ascii' and encoding 'binary' disagree");
  o.format = "off-binary";  // split, then refused by OFF as any binary request is
  o.encoding = "";
  EXPECT_EQ(error_of2(tet(), tmp.file("f.off"), o),
            tmp.file("f.off") + ": OFF encoding 'binary' is not ascii (its only one)");
}

// ---- VTP (XML PolyData) ------------------------------------------------------------------------

namespace {

mesh::Array i64(std::vector<std::int64_t> v, std::vector<std::int64_t> shape = {}) {
  return mesh::Array::from_vector(v, std::move(shape));
}

// Vertices, lines and faces in interleaved blocks, as PolyData never holds them: every block
// moves when written, so cell data and regions read back right only if they moved with it.
//   blocks   0 triangle (2)  1 vertex (2)  2 line (3)  3 quad (1)  4 vertex (1)  5 line (1)
//            6 polygon (1, five points)
//   cells    0-1             2-3           4-6         7           8             9   10
mesh::Mesh mixed_surface() {
  mesh::Mesh m;
  std::vector<double> xyz;
  for (int i = 0; i < 7; ++i)
    for (int k = 0; k < 3; ++k) xyz.push_back(0.125 * i + 1.5 * k - 0.3 * (i % 3));
  m.points = mesh::Array::from_vector(xyz, {7, 3});
  m.cells.push_back(mesh::CellBlock::fixed("triangle", i64({0, 1, 2, 2, 3, 0}, {2, 3})));
  m.cells.push_back(mesh::CellBlock::fixed("vertex", i64({4, 5}, {2, 1})));
  m.cells.push_back(mesh::CellBlock::fixed("line", i64({0, 4, 4, 5, 5, 6}, {3, 2})));
  m.cells.push_back(mesh::CellBlock::fixed("quad", i64({1, 4, 5, 2}, {1, 4})));
  m.cells.push_back(mesh::CellBlock::fixed("vertex", i64({6}, {1, 1})));
  m.cells.push_back(mesh::CellBlock::fixed("line", i64({6, 0}, {1, 2})));
  m.cells.push_back(mesh::CellBlock::fixed("polygon", i64({0, 1, 4, 5, 6}, {1, 5})));
  std::int64_t cell = 0;
  for (const auto& b : m.cells) {
    std::vector<double> t;
    std::vector<std::int32_t> v;
    for (std::int64_t i = 0; i < b.size(); ++i, ++cell) {
      t.push_back(100 + 1.5 * static_cast<double>(cell));
      v.push_back(static_cast<std::int32_t>(cell));
      v.push_back(static_cast<std::int32_t>(-cell));
    }
    m.cell_data["temperature"].push_back(mesh::Array::from_vector(t));
    m.cell_data["pair"].push_back(mesh::Array::from_vector(v, {b.size(), 2}));
  }
  m.point_data["T"] = mesh::Array::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7.5f});
  m.field_data["info"] = i64({7, 8, 9});
  m.regions.push_back({"mixed", mesh::RegionKind::kCell, 2, 3, i64({0, 2, 9, 7})});
  m.regions.push_back({"edges", mesh::RegionKind::kSide, 2, 4, i64({1, 2, 8, 0}, {2, 2})});
  m.regions.push_back({"corner", mesh::RegionKind::kPoint, 0, 5, i64({0, 6})});
  return m;
}

}  // namespace

TEST(Writers, VtpWritesBlocksInPolyDataOrderWithTheirCellDataAndRegions) {
  TempDir tmp;
  const auto src = mixed_surface();
  // PolyData's order: Verts (blocks 1, 4), Lines (2, 5), Polys (0, 3, 6).
  const std::vector<std::size_t> order = {1, 4, 2, 5, 0, 3, 6};
  for (const char* enc : {"ascii", "raw", "zlib"}) {
    SCOPED_TRACE(enc);
    mesh::WriteOptions o;
    o.encoding = enc;
    const auto notes = mesh::write_mesh(src, tmp.file("m.vtp"), o);
    EXPECT_EQ(notes, std::vector<std::string>{
                         "blocks written in PolyData's order (vertices, lines, polygons): they "
                         "read back as cells[1, 4, 2, 5, 0, 3, 6] of this mesh, cell data and "
                         "regions with them"});
    const auto back = mesh::read_mesh(tmp.file("m.vtp"));
    EXPECT_TRUE(back.notes.empty()) << back.notes.front();
    EXPECT_TRUE(same_bytes(back.points, src.points));
    EXPECT_TRUE(same_bytes(back.point_data.at("T"), src.point_data.at("T")));
    ASSERT_EQ(back.cells.size(), order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto& want = src.cells[order[k]];
      EXPECT_EQ(back.cells[k].type, want.type) << k;
      EXPECT_TRUE(same_bytes(back.cells[k].connectivity, want.connectivity)) << k;
      for (const char* name : {"temperature", "pair"})
        EXPECT_TRUE(same_bytes(back.cell_data.at(name)[k], src.cell_data.at(name)[order[k]]))
            << name << " of block " << k;
    }
    // Only the user's field data: regions and block sizes were taken back out of it.
    ASSERT_EQ(back.field_data.size(), 1u);
    EXPECT_TRUE(same_bytes(back.field_data.at("info"), src.field_data.at("info")));
    // Cell numbers follow the blocks: old cell 0 (block 0) is cell 7 now, 2 (block 1) is 0, 9
    // (block 5) is 6, 7 (block 3) is 9, 1 is 8 and 8 (block 4) is 2; point ids stay.
    // (read_vtu gives regions in the order of their field names: looked up by name)
    ASSERT_EQ(back.regions.size(), 3u);
    std::map<std::string, const mesh::Region*> by_name;
    for (const auto& r : back.regions) by_name[r.name] = &r;
    ASSERT_EQ(by_name.size(), 3u);
    const auto& mixed = *by_name.at("mixed");
    EXPECT_EQ(mixed.kind, mesh::RegionKind::kCell);
    EXPECT_EQ(mixed.dim, 2);
    EXPECT_EQ(mixed.tag, 3);
    EXPECT_TRUE(same_bytes(mixed.entries, i64({7, 0, 6, 9})));
    EXPECT_EQ(by_name.at("edges")->kind, mesh::RegionKind::kSide);
    EXPECT_TRUE(same_bytes(by_name.at("edges")->entries, i64({8, 2, 2, 0}, {2, 2})));
    EXPECT_EQ(by_name.at("corner")->kind, mesh::RegionKind::kPoint);
    EXPECT_TRUE(same_bytes(by_name.at("corner")->entries, i64({0, 6})));
  }
}

TEST(Writers, VtpInPolyDataOrderAlreadyNotesNothingAndWritesNoBlockSizes) {
  TempDir tmp;
  mesh::Mesh m = mixed_surface();
  m.cells = {m.cells[1], m.cells[2], m.cells[0]};  // vertex, line, triangle: one run each
  m.cell_data.clear();
  m.regions = {{"tris", mesh::RegionKind::kCell, 2, 1, i64({5, 6})}};
  mesh::WriteOptions o;
  o.encoding = "ascii";
  EXPECT_TRUE(mesh::write_mesh(m, tmp.file("m.vtp"), o).empty());
  const auto text = slurp(tmp.file("m.vtp"));
  EXPECT_EQ(text.find("meshdock:block_sizes"), std::string::npos);
  EXPECT_NE(text.find("NumberOfVerts=\"2\" NumberOfLines=\"3\" NumberOfStrips=\"0\" "
                      "NumberOfPolys=\"2\""),
            std::string::npos);
  const auto back = mesh::read_mesh(tmp.file("m.vtp"));
  ASSERT_EQ(back.cells.size(), 3u);
  EXPECT_TRUE(same_bytes(back.cells[2].connectivity, m.cells[2].connectivity));
  ASSERT_EQ(back.regions.size(), 1u);
  EXPECT_TRUE(same_bytes(back.regions[0].entries, i64({5, 6})));
}

TEST(Writers, VtpRefusesVolumeCellsNamingTheFirstBlock) {
  TempDir tmp;
  auto m = tet();
  m.cells.insert(m.cells.begin(), mesh::CellBlock::fixed("triangle", i64({0, 1, 2}, {1, 3})));
  m.cells.push_back(mesh::CellBlock::fixed("pyramid", i64({0, 1, 2, 3, 0}, {1, 5})));
  { std::ofstream(tmp.file("keep.vtp")) << "old"; }
  EXPECT_EQ(error_of(m, tmp.file("keep.vtp")),
            tmp.file("keep.vtp") +
                ": cells[1] (tetra) cannot be written to VTP, which holds vertices, lines and "
                "polygons only (PolyData has no volume or higher-order cells); write it as VTU");
  EXPECT_EQ(slurp(tmp.file("keep.vtp")), "old");
  m.cells[1] = mesh::CellBlock::fixed("line3", i64({0, 1, 2}, {1, 3}));
  EXPECT_NE(error_of(m, tmp.file("a.vtp")).find(": cells[1] (line3) cannot be written to VTP"),
            std::string::npos);
  EXPECT_EQ(tmp.entries(), 1u);  // no file, no temporary
}

TEST(Writers, VtpPolygonsOfThreeOrFourPointsAreNotedAsTheyReadBack) {
  TempDir tmp;
  mesh::Mesh m;
  m.points = tet().points;
  mesh::CellBlock poly;
  poly.type = "polygon";
  poly.connectivity = i64({0, 1, 2, 0, 1, 2, 3, 3, 2, 1});
  poly.offsets = i64({0, 3, 7, 10});
  m.cells.push_back(poly);
  m.cell_data["c"] = {mesh::Array::from_vector(std::vector<double>{1, 2, 3})};
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("p.vtp")),
            std::vector<std::string>{
                "cells[0] (polygon) reads back as 3 blocks (triangle, quad): VTP's Polys hold no "
                "cell types, a reader names polygons by size"});
  const auto back = mesh::read_mesh(tmp.file("p.vtp"));
  ASSERT_EQ(back.cells.size(), 3u);
  EXPECT_EQ(back.cells[0].type, "triangle");
  EXPECT_EQ(back.cells[1].type, "quad");
  EXPECT_EQ(back.cells[2].type, "triangle");
  EXPECT_EQ(all_ids(back), (std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 3, 3, 2, 1}));
  EXPECT_EQ(back.cell_data.at("c")[2].as<double>()[0], 3.0);
}

TEST(Writers, VtpWritesPixelsAsQuadsInQuadOrder) {
  TempDir tmp;
  mesh::Mesh m;
  m.points =
      mesh::Array::from_vector(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0}, {4, 3});
  m.cells.push_back(mesh::CellBlock::fixed("pixel", i64({0, 1, 2, 3}, {1, 4})));
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("p.vtp")),
            std::vector<std::string>{"cells[0] (pixel) written as quads (its points 0, 1, 3, 2): "
                                     "PolyData has no pixels"});
  const auto back = mesh::read_mesh(tmp.file("p.vtp"));
  ASSERT_EQ(back.cells.size(), 1u);
  EXPECT_EQ(back.cells[0].type, "quad");
  EXPECT_EQ(all_ids(back), (std::vector<std::int64_t>{0, 1, 3, 2}));  // around the square
}

namespace {

// The cells of `m` as lists of point ids, blocks taken in `order` (all blocks when empty).
std::vector<std::vector<std::int64_t>> cell_lists(const mesh::Mesh& m,
                                                  std::vector<std::size_t> order = {}) {
  if (order.empty())
    for (std::size_t b = 0; b < m.cells.size(); ++b) order.push_back(b);
  std::vector<std::vector<std::int64_t>> out;
  for (const auto b : order) {
    const auto& blk = m.cells[b];
    const auto* c = blk.connectivity.as<std::int64_t>();
    for (std::int64_t i = 0; i < blk.size(); ++i) {
      const auto lo =
          blk.ragged() ? blk.offsets.as<std::int64_t>()[i] : i * blk.connectivity.dim(1);
      const auto hi =
          blk.ragged() ? blk.offsets.as<std::int64_t>()[i + 1] : (i + 1) * blk.connectivity.dim(1);
      out.emplace_back(c + lo, c + hi);
    }
  }
  return out;
}

int vtp_section(const mesh::CellBlock& b) {
  if (b.face_offsets.valid()) return -1;
  if (b.type == "vertex") return 0;
  if (b.type == "line") return 1;
  return b.type == "triangle" || b.type == "quad" || b.type == "polygon" ? 2 : -1;
}

}  // namespace

TEST(Writers, EveryFileRoundTripsThroughVtp) {
  TempDir tmp;
  int files = 0, writes = 0;
  for (const auto& file : mesh_files()) {
    ++files;
    const auto src = mesh::read_mesh(file.string());
    SCOPED_TRACE(file.filename().string());
    std::vector<std::size_t> order;
    bool ok = true;
    for (int s = 0; s < 3; ++s)
      for (std::size_t b = 0; b < src.cells.size(); ++b) {
        ok &= vtp_section(src.cells[b]) >= 0;
        if (vtp_section(src.cells[b]) == s) order.push_back(b);
      }
    if (!ok) {
      EXPECT_THROW(mesh::write_mesh(src, tmp.file("o.vtp")), mesh::WriteError);
      EXPECT_EQ(tmp.entries(), 0u);
      continue;
    }
    mesh::WriteOptions o;
    o.encoding = writes % 2 ? "raw" : "zlib";
    mesh::write_mesh(src, tmp.file("o.vtp"), o);
    ++writes;
    const auto back = mesh::read_mesh(tmp.file("o.vtp"));
    fs::remove(tmp.file("o.vtp"));
    EXPECT_TRUE(same_bytes(back.points, src.points));
    EXPECT_EQ(cell_lists(back), cell_lists(src, order));
    EXPECT_EQ(back.point_data.size(), src.point_data.size());
    for (const auto& [k, v] : src.point_data)
      EXPECT_TRUE(same_bytes(back.point_data.at(k), v)) << k;
    for (const auto& [k, parts] : src.cell_data) {
      std::vector<mesh::Array> want;
      for (const auto b : order) want.push_back(parts[b]);
      EXPECT_TRUE(same_bytes(mesh::concat_rows(back.cell_data.at(k)), mesh::concat_rows(want)))
          << k;
    }
    EXPECT_EQ(back.field_data.size(), src.field_data.size());
    EXPECT_EQ(back.regions.size(), src.regions.size());
  }
  EXPECT_EQ(files, 101);
  EXPECT_GT(writes, 30);
}

// Every writer pads points of fewer than 3 coordinates with 0 and says so in the same words.
TEST(Writers, EveryWriterNotesPaddedPointsNamingItsFormat) {
  TempDir tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 1, 0, 0, 1}, {3, 2});
  m.cells.push_back(mesh::CellBlock::fixed("triangle", i64({0, 1, 2}, {1, 3})));
  for (const auto& [file, format, name] :
       std::vector<std::array<std::string, 3>>{{"a.vtu", "", "VTU"},
                                               {"a.vtp", "", "VTP"},
                                               {"a.msh", "", "MSH"},
                                               {"a.msh", "msh22", "MSH 2.2"},
                                               {"a.vtk", "", "legacy VTK"},
                                               {"a.stl", "", "STL"},
                                               {"a.obj", "", "OBJ"},
                                               {"a.ply", "", "PLY"},
                                               {"a.off", "", "OFF"}}) {
    mesh::WriteOptions o;
    o.format = format;
    const auto notes = mesh::write_mesh(m, tmp.file(file), o);
    ASSERT_FALSE(notes.empty()) << name;
    EXPECT_EQ(notes.front(),
              "points have 2 coordinates; " + name + " stores 3, so the rest are written as 0");
    const auto back = mesh::read_mesh(tmp.file(file));
    EXPECT_EQ(mesh::value_at(back.points, 3), 1.0) << name;  // point 1 is (1, 0, 0)
    EXPECT_EQ(mesh::value_at(back.points, 7), 1.0) << name;  // point 2 is (0, 1, 0)
    EXPECT_EQ(mesh::value_at(back.points, 8), 0.0) << name;
  }
}

// What a format cannot hold is noted in one wording: "<what> is not written: <FORMAT> holds no
// <kind>", naming what it does keep of that kind.
TEST(Writers, DroppedDataIsNotedInOneWording) {
  TempDir tmp;
  mesh::Mesh m;
  m.points = tet().points;
  m.cells.push_back(mesh::CellBlock::fixed("triangle", i64({0, 1, 2}, {1, 3})));
  m.point_data["t"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3, 4});
  m.cell_data["c"] = {mesh::Array::from_vector(std::vector<double>{5})};
  m.field_data["f"] = i64({1, 2, 3});
  m.regions.push_back({"r", mesh::RegionKind::kCell, 2, 1, i64({0})});
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("a.off")),
            (std::vector<std::string>{"point_data 't' is not written: OFF holds no point data",
                                      "cell_data 'c' is not written: OFF holds no cell data",
                                      "field_data 'f' is not written: OFF holds no field data",
                                      "region 'r' is not written: OFF holds no sets"}));
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("a.obj")),
            (std::vector<std::string>{
                "point_data 't' is not written: OBJ holds no point data but obj:vt, obj:vn",
                "cell_data 'c' is not written: OBJ holds no cell data but obj:group_ids",
                "field_data 'f' is not written: OBJ holds no field data",
                "region 'r' is not written: OBJ holds no sets"}));
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("a.stl")),
            (std::vector<std::string>{
                "point_data 't' is not written: STL holds no point data",
                "cell_data 'c' is not written: STL holds no cell data but facet_normals",
                "field_data 'f' is not written: STL holds no field data",
                "region 'r' is not written: STL holds no sets"}));
  EXPECT_EQ(mesh::write_mesh(m, tmp.file("a.ply")),
            (std::vector<std::string>{"field_data 'f' is not written: PLY holds no field data",
                                      "region 'r' is not written: PLY holds no sets"}));
}

TEST(Writers, LargeZlibArrayUsesManyBlocksAndRoundTrips) {
  TempDir tmp;
  mesh::Mesh m;
  const std::int64_t n = 400000;  // 9.6 MB of points: ten 1 MiB zlib blocks, several workers
  m.points = mesh::Array::of<double>({n, 3});
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::int64_t i = 0; i < 3 * n; ++i) m.points.as<double>()[i] = u(rng);
  auto line = mesh::Array::of<std::int64_t>({n - 1, 2});
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    line.as<std::int64_t>()[2 * i] = i;
    line.as<std::int64_t>()[2 * i + 1] = i + 1;
  }
  m.cells.push_back(mesh::CellBlock::fixed("line", line));
  mesh::WriteOptions o;
  o.zlib_level = 1;
  EXPECT_TRUE(mesh::write_mesh(m, tmp.file("big.vtu"), o).empty());
  const auto back = mesh::read_mesh(tmp.file("big.vtu"));
  EXPECT_TRUE(same_bytes(back.points, m.points));
  EXPECT_TRUE(same_bytes(back.cells[0].connectivity, line));
}

TEST(Writers, InconsistentMeshesAreRefusedNamingTheArray) {
  TempDir tmp;
  auto m = tet();
  m.cells[0].connectivity.as<std::int64_t>()[2] = 4;
  EXPECT_EQ(error_of(m, tmp.file("a.vtu")),
            tmp.file("a.vtu") + ": cells[0] (tetra) connectivity entry 2 is 4, outside [0, 4)");
  m = tet();
  m.cell_data["c"].push_back(mesh::Array::of<double>({2}));
  EXPECT_EQ(error_of(m, tmp.file("a.msh")),
            tmp.file("a.msh") + ": cell_data 'c'[0] has 2 rows for 1 cells");
  m = tet();
  mesh::CellBlock poly;
  poly.type = "polygon";
  poly.connectivity = mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2});
  poly.offsets = mesh::Array::from_vector(std::vector<std::int64_t>{0, 2, 1});
  m.cells.push_back(poly);
  EXPECT_EQ(error_of(m, tmp.file("a.vtu")),
            tmp.file("a.vtu") + ": cells[1] (polygon) offsets decreases at 2 (2 -> 1)");
  EXPECT_EQ(tmp.entries(), 0u);  // nothing written, no temporary left
}

TEST(Writers, FailedWriteLeavesTheOldFile) {
  TempDir tmp;
  { std::ofstream(tmp.file("keep.msh")) << "old"; }
  auto m = tet();
  m.cells[0].type = "hexa_prism";  // VTK has it, Gmsh does not
  EXPECT_THROW(mesh::write_mesh(m, tmp.file("keep.msh")), mesh::WriteError);
  std::ifstream f(tmp.file("keep.msh"));
  std::string s;
  f >> s;
  EXPECT_EQ(s, "old");
  EXPECT_EQ(tmp.entries(), 1u);
}

TEST(Parallel, RunsEveryItemOnceAndRethrowsTheFirstError) {
  std::vector<std::atomic<int>> hits(1000);
  mesh::parallel_for(hits.size(), 4, [&](std::size_t i) { ++hits[i]; });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_THROW(mesh::parallel_for(100, 4,
                                  [&](std::size_t i) {
                                    if (i == 37) throw mesh::WriteError("item 37");
                                  }),
               mesh::WriteError);
  mesh::parallel_for(0, 4, [&](std::size_t) { FAIL() << "no items"; });
}

// ---- OutFile: the write half of the daemon's confinement ---------------------------------------

namespace {

void write_whole(int dir, const std::string& leaf, const std::string& bytes, bool overwrite) {
  mesh::OutFile out(mesh::OutTarget{dir, leaf, leaf, overwrite});
  out.write(bytes.data(), bytes.size());
  out.commit();
}

struct DirFd {
  explicit DirFd(const std::string& path) : fd(::open(path.c_str(), O_PATH | O_DIRECTORY)) {}
  ~DirFd() { ::close(fd); }
  int fd;
};

}  // namespace

TEST(Writers, OutFileRefusesAnExistingNameUnlessAskedToOverwrite) {
  TempDir tmp;
  { std::ofstream(tmp.file("t.vtu")) << "old"; }
  DirFd dir(tmp.file(""));
  EXPECT_THROW(write_whole(dir.fd, "t.vtu", "new", false), mesh::FileExists);
  EXPECT_EQ(slurp(tmp.file("t.vtu")), "old");
  write_whole(dir.fd, "t.vtu", "new", true);
  EXPECT_EQ(slurp(tmp.file("t.vtu")), "new");
  write_whole(dir.fd, "u.vtu", "fresh", false);
  EXPECT_EQ(slurp(tmp.file("u.vtu")), "fresh");
  EXPECT_EQ(tmp.entries(), 2u);  // no temporary left behind
  EXPECT_THROW(write_whole(dir.fd, "..", "x", true), mesh::WriteError);
}

TEST(Writers, OutFileNeverFollowsASymlinkAtItsNameOrAtTheOldTempName) {
  TempDir tmp;
  const std::string victim = tmp.file("victim");
  { std::ofstream(victim) << "precious"; }
  fs::create_directories(tmp.file("d"));
  // The pre-fix temp name was "<path>.tmp-<pid>": a symlink planted there was opened O_TRUNC.
  fs::create_symlink(victim, tmp.file("d/out.vtu.tmp-" + std::to_string(::getpid())));
  fs::create_symlink(victim, tmp.file("d/link.vtu"));
  DirFd dir(tmp.file("d"));
  write_whole(dir.fd, "out.vtu", "exported", false);
  EXPECT_THROW(write_whole(dir.fd, "link.vtu", "exported", false), mesh::FileExists);
  write_whole(dir.fd, "link.vtu", "exported", true);  // replaces the link itself
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_FALSE(fs::is_symlink(tmp.file("d/link.vtu")));
  EXPECT_EQ(slurp(tmp.file("d/link.vtu")), "exported");
  EXPECT_EQ(slurp(tmp.file("d/out.vtu")), "exported");
}

TEST(Writers, ConcurrentOutFilesOfOneNameLeaveOneWholeFile) {
  TempDir tmp;
  DirFd dir(tmp.file(""));
  const std::string a(3 << 20, 'a'), b((3 << 20) + 17, 'b');  // past the 1 MiB flush size
  for (int round = 0; round < 10; ++round) {
    std::thread t1([&] { write_whole(dir.fd, "same.vtu", a, true); });
    std::thread t2([&] { write_whole(dir.fd, "same.vtu", b, true); });
    t1.join();
    t2.join();
    const auto got = slurp(tmp.file("same.vtu"));
    ASSERT_TRUE(got == a || got == b) << "round " << round << ": " << got.size() << " bytes";
  }
  EXPECT_EQ(tmp.entries(), 1u);
}

// Sink::run and Sink::rows hand pieces of at most 1 MiB to the file: values and rows that
// straddle a piece, and rows longer than a piece (written one at a time), arrive whole and in
// order after what was put before them.
TEST(Writers, SinkRunsAndRowsCrossTheirPiecesInOrder) {
  TempDir tmp;
  DirFd dir(tmp.file(""));
  const std::size_t n = (1 << 20) / 8 * 2 + 5;  // two pieces of uint64 and a bit
  const std::size_t width = (1 << 20) + 3;      // a row longer than a piece
  {
    mesh::OutFile out(mesh::OutTarget{dir.fd, "sink.bin", "sink.bin", false});
    mesh::wr::Sink s(out);
    s.put("head");
    s.run<std::uint64_t>(n, [](std::uint64_t* o, std::size_t at, std::size_t k) {
      for (std::size_t i = 0; i < k; ++i) o[i] = at + i;
    });
    s.rows(3, width, [](char* row, std::size_t i) {
      std::memset(row, 'a' + static_cast<int>(i), (1 << 20) + 3);
    });
    s.rows(100003, 7, [](char* row, std::size_t i) { std::memcpy(row, &i, 7); });
    s.put("tail");
    s.flush();
    out.commit();
  }
  const auto got = slurp(tmp.file("sink.bin"));
  ASSERT_EQ(got.size(), 4 + n * 8 + 3 * width + 100003 * 7 + 4);
  EXPECT_EQ(got.substr(0, 4), "head");
  std::size_t at = 4;
  for (std::size_t i = 0; i < n; ++i, at += 8) {
    std::uint64_t v;
    std::memcpy(&v, got.data() + at, 8);
    ASSERT_EQ(v, i) << "value " << i;
  }
  for (int r = 0; r < 3; ++r, at += width)
    ASSERT_EQ(got.find_first_not_of(static_cast<char>('a' + r), at), at + width) << "row " << r;
  for (std::size_t i = 0; i < 100003; ++i, at += 7) {
    std::uint64_t v = 0;
    std::memcpy(&v, got.data() + at, 7);
    ASSERT_EQ(v, i) << "row " << i;
  }
  EXPECT_EQ(got.substr(at), "tail");
}
