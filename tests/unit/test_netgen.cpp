// The Netgen reader and writer: the files of tests/data/netgen (meshio-written gmsh and made-up
// meshes, hand-written corners; tools/make_netgen.py), texts written here through a memfd (errors
// name the file, the line and the section), a gzip bomb, and round trips through write_netgen.
// The comparisons with meshio are in tests/python/test_netgen.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
  return std::string(MESHDOCK_TEST_DATA) + "/netgen/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::gzipped;
using meshdock::test::has_note;
using meshdock::test::ints;

mesh::Mesh read_text(const std::string& text) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_netgen(f); }, text,
                                   "t.vol");
}

std::string error_of(const std::string& text, const mesh::ReadOptions& o = {}) {
  return meshdock::test::read_error([&](const mesh::InFile& f) { return mesh::read_netgen(f, o); },
                                    text, "t.vol");
}

const mesh::Region& region(const mesh::Mesh& m, const std::string& name) {
  for (const auto& r : m.regions)
    if (r.name == name) return r;
  ADD_FAILURE() << "no region " << name;
  static const mesh::Region none;
  return none;
}

TEST(NetgenReader, CornersReadAsMeshioWithNotesForWhatItSkips) {
  const auto m = mesh::read_mesh(data("corners.vol"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{6, 3}));
  EXPECT_EQ(doubles(m.points)[15], -0.25);
  EXPECT_EQ(cell_types(m),
            (std::vector<std::string>{"triangle", "quad", "tetra", "pyramid", "line", "vertex"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 4, 3}));
  // Netgen's tetra 1 2 3 6 -> VTK's 1 3 2 6; pyramid 1 2 5 4 6 -> 1 4 5 2 6 (0-based here).
  EXPECT_EQ(ints(m.cells[2].connectivity), (std::vector<std::int64_t>{0, 2, 1, 5, 1, 3, 2, 5}));
  EXPECT_EQ(ints(m.cells[3].connectivity), (std::vector<std::int64_t>{0, 3, 4, 1, 5}));
  EXPECT_EQ(ints(m.cells[4].connectivity), (std::vector<std::int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(ints(m.cells[5].connectivity), (std::vector<std::int64_t>{4}));
  const auto& ix = m.cell_data.at("netgen:index");
  EXPECT_EQ(ints(ix[0]), (std::vector<std::int64_t>{1}));  // bcnr
  EXPECT_EQ(ints(ix[2]), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(ints(ix[3]), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ints(ix[4]), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(ints(ix[5]), (std::vector<std::int64_t>{9}));
  EXPECT_EQ(ints(m.field_data.at("steel")), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(ints(m.field_data.at("inner")), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(m.field_data.count("copper"), 0u);
  EXPECT_EQ(ints(region(m, "steel").entries), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(ints(region(m, "outer").entries), (std::vector<std::int64_t>{0, 1}));
  EXPECT_TRUE(has_note(m, "corners.vol:8: geomtype 42"));
  EXPECT_TRUE(has_note(m, "line '2 copper wire' is not 'index name'"));
  EXPECT_TRUE(has_note(m, "section 'face_colours' (2 rows) is not read"));
  EXPECT_TRUE(has_note(m, "section 'identifications' (1 entries"));
  EXPECT_TRUE(has_note(m, "section 'identificationtypes'"));
  EXPECT_TRUE(has_note(m, "section 'singular_points' (0 rows)"));
  EXPECT_TRUE(has_note(m,
                       "corners.vol:11: section 'surfaceelementsgi': the surfnr, domin and "
                       "domout columns (bcnr is netgen:index) are not read"));
  EXPECT_TRUE(has_note(m, "section 'surfaceelementsgi': the values after each element's nodes"));
  EXPECT_FALSE(has_note(m, "section 'volumeelements'"));
}

TEST(NetgenReader, TwoLineEdgeSegments) {
  const auto m = mesh::read_mesh(data("twoline.vol"));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"tetra", "line"}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (std::vector<std::int64_t>{0, 1, 1, 2}));
  EXPECT_EQ(ints(m.cell_data.at("netgen:index")[1]), (std::vector<std::int64_t>{1, 2}));
}

TEST(NetgenReader, QuadraticPyramidAndWedgeInVtkOrder) {
  const auto m = mesh::read_mesh(data("quadratic.vol"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"pyramid13", "wedge15"}));
  EXPECT_EQ(ints(m.cells[0].connectivity),
            (std::vector<std::int64_t>{0, 3, 2, 1, 4, 7, 6, 8, 5, 9, 12, 11, 10}));
  EXPECT_EQ(ints(m.cells[1].connectivity),
            (std::vector<std::int64_t>{0, 2, 1, 3, 5, 4, 7, 8, 6, 13, 14, 12, 9, 11, 10}));
  EXPECT_EQ(ints(m.cell_data.at("netgen:index")[1]), (std::vector<std::int64_t>{5}));
}

TEST(NetgenReader, TwoDimensionalMeshHasTwoColumnPoints) {
  const auto m = mesh::read_mesh(data("plate2d.vol"));
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.notes, std::vector<std::string>{});  // meshio's writer's columns: nothing dropped
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{7, 2}));
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"triangle", "quad", "line", "vertex"}));
  EXPECT_EQ(ints(m.field_data.at("steel")), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(ints(m.field_data.at("load")), (std::vector<std::int64_t>{2, 1}));
  EXPECT_EQ(ints(region(m, "steel").entries), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(ints(region(m, "load").entries), (std::vector<std::int64_t>{5}));
}

TEST(NetgenReader, GzippedFileReadsAsThePlainOne) {
  const auto a = mesh::read_mesh(data("gmsh-tets.vol"));
  const auto b = mesh::read_mesh(data("gmsh-tets.vol.gz"));
  EXPECT_EQ(doubles(a.points), doubles(b.points));
  ASSERT_EQ(cell_types(a), cell_types(b));
  for (std::size_t k = 0; k < a.cells.size(); ++k)
    EXPECT_EQ(ints(a.cells[k].connectivity), ints(b.cells[k].connectivity));
  EXPECT_EQ(ints(b.field_data.at("solid")), (std::vector<std::int64_t>{7, 3}));
  // The same bytes through the memfd, the format told by the gzip magic.
  std::ifstream f(data("gmsh-tets.vol.gz"), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(read_text(bytes).cells[1].size(), b.cells[1].size());
}

TEST(NetgenReader, GzipBombIsRefusedAtMaxBytes) {
  std::string text = "mesh3d\npoints\n0\n";
  text.append(std::size_t{8} << 20, '\n');
  text += "endmesh\n";
  mesh::ReadOptions o;
  o.max_bytes = 1 << 20;
  EXPECT_EQ(error_of(gzipped(text), o),
            "t.vol: the gzipped Netgen mesh inflates to more than the 1048576-byte limit "
            "(max_bytes; unset: half this machine's memory, at most 16 GiB); not read");
  EXPECT_EQ(read_text(gzipped(text)).points.dim(0), 0);
  const auto cut = gzipped(text).substr(0, 60);
  EXPECT_NE(error_of(cut).find("t.vol: the gzip data is truncated"), std::string::npos);
}

// A .vol.gz reports the compressed bytes as it inflates them (the daemon's READ progress) and
// stops when asked (its Cancel).
TEST(NetgenReader, GzipReportsProgressAndStopsWhenAsked) {
  std::string text = "mesh3d\npoints\n300000\n";
  std::uint64_t x = 12345;
  for (int i = 0; i < 300000; ++i)
    for (int k = 0; k < 3; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      text += std::to_string(static_cast<double>(x >> 11) * 0x1p-53) + (k == 2 ? "\n" : " ");
    }
  const auto gz = gzipped(text);
  ASSERT_GT(gz.size(), 2 * mesh::ReadProgress::kEvery);
  mesh::ReadProgress progress, cancelled;
  auto with = [](mesh::ReadProgress& p) {
    return [&p](const mesh::InFile& f) {
      return mesh::read_netgen(mesh::InFile{f.fd, f.path, &p});
    };
  };
  EXPECT_EQ(meshdock::test::read_text(with(progress), gz, "p.vol.gz").num_points(), 300000);
  EXPECT_EQ(progress.bytes(), gz.size());
  cancelled.cancel();
  EXPECT_EQ(meshdock::test::read_error(with(cancelled), gz, "p.vol.gz").substr(0, 42),
            "p.vol.gz: read stopped by its caller at by");
}

TEST(NetgenReader, ErrorsNameFileLineAndSection) {
  EXPECT_EQ(error_of("# c\nmesh2d\n"),
            "t.vol:2: not a Netgen mesh: expected 'mesh3d' as the first line, found 'mesh2d'");
  EXPECT_EQ(error_of("mesh3d\npoints\n4\n0 0 0\n1 0 0\n"),
            "t.vol:3: section 'points': count 4 is negative or more rows than the rest of the "
            "file holds");
  EXPECT_EQ(error_of("mesh3d\npoints\n2\n0 0 0\n1 0\n"),
            "t.vol:5: section 'points': point 2 has 2 coordinates, expected 3");
  EXPECT_EQ(error_of("mesh3d\nvolumeelements\n1\n1 7 1 2 3 4 5 6 7\npoints\n0\n"),
            "t.vol:4: section 'volumeelements': element 1 has 7 nodes, expected 4, 5, 6, 8, 10, "
            "13, 15 or 20");
  EXPECT_EQ(error_of("mesh3d\nvolumeelements\n1\n1 4 1 2 3\n\n\n\n"),
            "t.vol:4: section 'volumeelements': the row ends before its nodes");
  EXPECT_EQ(error_of("mesh3d\nvolumeelements\n1\n1 4 1 2 3 9\npoints\n4\n0 0 0\n1 0 0\n0 1 0\n"
                     "0 0 1\nendmesh\n"),
            "t.vol:4: node 9 is not one of the 4 points");
  EXPECT_EQ(error_of("mesh3d\nvolumeelements\n1\n1 4 1 0 3 2\n"),
            "t.vol:4: section 'volumeelements': node 0 (Netgen's nodes count from 1)");
  EXPECT_EQ(error_of("mesh3d\nsurfaceelements\nmany\n"),
            "t.vol:3: expected the count of section 'surfaceelements', found 'many'");
  EXPECT_EQ(error_of("mesh3d\nsurfaceelements\n999999999\n1 1 0 0 3 1 2 3\n"),
            "t.vol:3: section 'surfaceelements': count 999999999 is negative or more rows than "
            "the rest of the file holds");
  EXPECT_EQ(error_of("mesh3d\ndimension\n4\n"), "t.vol:3: dimension 4: Netgen's is 2 or 3");
  EXPECT_EQ(error_of("mesh3d\npoints\n3\n0 0 0\n1 0 0\n"),
            "t.vol:5: section 'points': the file ends after 2 of the 3 points its count gives");
  EXPECT_EQ(error_of("mesh3d\nbogus\n1\n").substr(0, 36), "t.vol:2: unknown Netgen section 'bog");
  EXPECT_EQ(error_of("mesh3d\npointelements\n1\n1 x\n"), "t.vol:4: expected index, found 'x'");
}

// The writer tests' files: a directory of their own (tests/support/temp_dir.hpp).
struct Tmp : meshdock::test::TempDir {
  Tmp() : TempDir("netgen") {}
};

TEST(NetgenWriter, RoundTripKeepsBlocksIndexAndNames) {
  Tmp tmp;
  for (const char* name :
       {"gmsh-tets.vol", "mixed.vol", "plate2d.vol", "corners.vol", "quadratic.vol"}) {
    const auto src = mesh::read_mesh(data(name));
    for (const char* out : {"o.vol", "o.vol.gz"}) {
      mesh::write_mesh(src, tmp.file(out));
      const auto back = mesh::read_mesh(tmp.file(out));
      EXPECT_EQ(doubles(back.points), doubles(src.points)) << name;
      ASSERT_EQ(cell_types(back).size(), cell_types(src).size()) << name;
      // Blocks come back by dimension (surface, volume, edge, point elements), as meshio's.
      for (std::size_t b = 0; b < src.cells.size(); ++b) {
        bool found = false;
        for (std::size_t k = 0; k < back.cells.size(); ++k)
          found |= back.cells[k].type == src.cells[b].type &&
                   ints(back.cells[k].connectivity) == ints(src.cells[b].connectivity) &&
                   ints(back.cell_data.at("netgen:index")[k]) ==
                       ints(src.cell_data.at("netgen:index")[b]);
        EXPECT_TRUE(found) << name << " " << out << " block " << b;
      }
      for (const auto& [field, a] : src.field_data)
        EXPECT_EQ(ints(back.field_data.at(field)), ints(a)) << name << " " << field;
    }
  }
  std::ifstream f(tmp.file("o.vol.gz"), std::ios::binary);
  EXPECT_EQ(f.get(), 0x1f);
}

TEST(NetgenWriter, RefusesBlocksNetgenCannotHoldAndNotesTheRest) {
  Tmp tmp;
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(std::vector<double>{0, 0, 1, 0, 0, 1}, {3, 2});
  m.cells.push_back(mesh::CellBlock::fixed(
      "line3", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3})));
  try {
    mesh::write_mesh(m, tmp.file("a.vol"));
    ADD_FAILURE() << "no WriteError";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, tmp.file("a.vol").size() + 28),
              tmp.file("a.vol") + ": cells[0] (line3) cannot be");
  }
  m.cells[0] = mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2}, {1, 3}));
  m.point_data["T"] = mesh::Array::from_vector(std::vector<double>{1, 2, 3});
  m.cell_data["mat"] = {mesh::Array::from_vector(std::vector<std::int64_t>{4})};
  const auto notes = mesh::write_mesh(m, tmp.file("a.vol"));
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "point_data 'T' is not written: Netgen holds no point data");
  EXPECT_EQ(notes[1],
            "cell_data 'mat' is written as Netgen's element index (read back as netgen:index)");
  const auto back = mesh::read_mesh(tmp.file("a.vol"));
  EXPECT_EQ(ints(back.cell_data.at("netgen:index")[0]), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(ints(back.field_data.at("cd0_4")), (std::vector<std::int64_t>{4, 2}));
}

}  // namespace
