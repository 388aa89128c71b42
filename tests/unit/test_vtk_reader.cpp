// The legacy VTK reader (vtk_reader) on what write_vtk makes and on files written by hand:
// regions back from meshdock:region field data (region_fields, shared with the VTU reader,
// whose hostile cases are here too), FIELD data in every section, and the streamed cell lists
// (5.x OFFSETS / CONNECTIVITY of every width, the older count-prefixed list, cells that change
// size or type part way) read both from a file (binary: pread) and from memory. The files VTK
// writes are checked against VTK itself in tests/python/test_vtk_legacy.py.
#include <unistd.h>

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;

namespace {

using meshdock::test::doubles;
using meshdock::test::ints;
using meshdock::test::slurp;

struct TempDir : meshdock::test::TempDir {
  TempDir() : meshdock::test::TempDir("vtk-reader") {}
};

// Big-endian bytes of `v` (what a BINARY legacy file holds).
template <typename T>
std::string be(const std::vector<T>& v) {
  std::string s;
  for (T x : v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    for (std::size_t i = sizeof(T); i-- > 0;) s.push_back(static_cast<char>(b[i]));
  }
  return s;
}

// The region as (kind, dim, tag, entries), by name.
std::map<std::string, std::tuple<mesh::RegionKind, int, std::int64_t, std::vector<std::int64_t>>>
regions(const mesh::Mesh& m) {
  std::map<std::string, std::tuple<mesh::RegionKind, int, std::int64_t, std::vector<std::int64_t>>>
      out;
  for (const auto& r : m.regions) {
    EXPECT_EQ(r.entries.dtype(), mesh::kInt64) << r.name;
    out[r.name] = {r.kind, r.dim, r.tag, ints(r.entries)};
  }
  return out;
}

// Two triangles and a quad over 5 points; cell data, field data and three regions.
mesh::Mesh mesh_with_regions() {
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(
      std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 2, 0.5, 0}, {5, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 1, 3, 2}, {2, 3})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "quad", mesh::Array::from_vector(std::vector<std::int64_t>{1, 4, 3, 2}, {1, 4})));
  m.cell_data["mat"] = {mesh::Array::from_vector(std::vector<std::int32_t>{4, 5}),
                        mesh::Array::from_vector(std::vector<std::int32_t>{6})};
  m.field_data["time"] = mesh::Array::from_vector(std::vector<double>{0.25});
  m.regions.push_back({"left", mesh::RegionKind::kCell, 2, 3,
                       mesh::Array::from_vector(std::vector<std::int64_t>{0, 1})});
  m.regions.push_back({"right", mesh::RegionKind::kCell, 2, 4,
                       mesh::Array::from_vector(std::vector<std::int64_t>{2})});
  m.regions.push_back({"edge", mesh::RegionKind::kSide, 1, 9,
                       mesh::Array::from_vector(std::vector<std::int64_t>{0, 0, 2, 1}, {2, 2})});
  return m;
}

// An ascii 5.1 file of two triangles over four points, then `tail` (FIELD / data sections).
std::string two_triangles(const std::string& tail) {
  return "# vtk DataFile Version 5.1\nhand\nASCII\nDATASET UNSTRUCTURED_GRID\n"
         "POINTS 4 double\n0 0 0 1 0 0 0 1 0 1 1 0\n"
         "CELLS 3 6\nOFFSETS vtktypeint64\n0 3 6\nCONNECTIVITY vtktypeint64\n0 1 2 1 3 2\n"
         "CELL_TYPES 2\n5 5\n" +
         tail;
}

std::string read_error(const std::string& bytes) {
  try {
    mesh::read_vtk_bytes(bytes, "h.vtk");
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "(read)";
}

// `m` written as legacy VTK in encoding `enc` ("ascii" | "binary"); the writer's notes.
std::vector<std::string> write_vtk(const mesh::Mesh& m, const std::string& path, const char* enc) {
  mesh::WriteOptions o;
  o.format = "vtk";
  o.encoding = enc;
  return mesh::write_mesh(m, path, o);
}

TEST(LegacyVtk, RegionsRoundTripAsciiAndBinary) {
  TempDir tmp;
  const auto src = mesh_with_regions();
  for (const char* enc : {"ascii", "binary"}) {
    SCOPED_TRACE(enc);
    EXPECT_TRUE(write_vtk(src, tmp.file("r.vtk"), enc).empty());
    // From the file (binary: mapped lazily, read with pread) and from memory.
    for (const auto& back : {mesh::read_mesh(tmp.file("r.vtk")),
                             mesh::read_vtk_bytes(slurp(tmp.file("r.vtk")), "r")}) {
      EXPECT_TRUE(back.notes.empty()) << back.notes.front();
      const auto got = regions(back);
      ASSERT_EQ(got.size(), 3u);
      EXPECT_EQ(got.at("left"), std::make_tuple(mesh::RegionKind::kCell, 2, std::int64_t{3},
                                                std::vector<std::int64_t>{0, 1}));
      EXPECT_EQ(got.at("right"), std::make_tuple(mesh::RegionKind::kCell, 2, std::int64_t{4},
                                                 std::vector<std::int64_t>{2}));
      EXPECT_EQ(got.at("edge"), std::make_tuple(mesh::RegionKind::kSide, 1, std::int64_t{9},
                                                std::vector<std::int64_t>{0, 0, 2, 1}));
      for (const auto& r : back.regions)
        if (r.kind == mesh::RegionKind::kSide) {
          EXPECT_EQ(r.entries.shape(), (std::vector<std::int64_t>{2, 2}));
        }
      // The regions left field data; what was field data stays.
      ASSERT_EQ(back.field_data.size(), 1u);
      EXPECT_EQ(doubles(back.field_data.at("time")), std::vector<double>{0.25});
      ASSERT_EQ(back.cells.size(), 2u);
      EXPECT_EQ(back.cells[0].type, "triangle");
      EXPECT_EQ(back.cells[1].type, "quad");
      ASSERT_EQ(back.cell_data.at("mat").size(), 2u);
      EXPECT_EQ(ints(back.cell_data.at("mat")[0]), (std::vector<std::int64_t>{4, 5}));
      EXPECT_EQ(ints(back.cell_data.at("mat")[1]), (std::vector<std::int64_t>{6}));
    }
  }
}

TEST(LegacyVtk, FieldDataInEverySectionAndARegionNamedCellArray) {
  // Dataset FIELD (a region and a plain array), POINT_DATA with a FIELD of two arrays, CELL_DATA
  // with SCALARS and a FIELD of three, one of them named like a region: per-cell values are
  // cell data whatever their name, so only the dataset's field data become regions.
  const auto m =
      mesh::read_vtk_bytes(two_triangles("FIELD FieldData 2\n"
                                         "meshdock:region:point:0:7:tip 1 2 vtktypeint32\n3 0\n"
                                         "title 1 1 double\n1.5\n"
                                         "POINT_DATA 4\nFIELD FieldData 2\n"
                                         "u 2 4 float\n0 1 2 3 4 5 6 7\n"
                                         "k 1 4 vtktypeint64\n10 11 12 13\n"
                                         "CELL_DATA 2\nSCALARS s int 1\nLOOKUP_TABLE default\n8 9\n"
                                         "FIELD FieldData 3\n"
                                         "a 1 2 double\n0.5 1.5\n"
                                         "meshdock:region:cell:2:1:c 1 2 vtktypeint64\n1 0\n"
                                         "b 3 2 vtktypeuint8\n1 2 3 4 5 6\n"),
                           "f.vtk");
  EXPECT_TRUE(m.notes.empty()) << m.notes.front();
  const auto got = regions(m);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.at("tip"), std::make_tuple(mesh::RegionKind::kPoint, 0, std::int64_t{7},
                                           std::vector<std::int64_t>{3, 0}));
  ASSERT_EQ(m.field_data.size(), 1u);
  EXPECT_EQ(doubles(m.field_data.at("title")), std::vector<double>{1.5});
  ASSERT_EQ(m.point_data.size(), 2u);
  EXPECT_EQ(m.point_data.at("u").shape(), (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(m.point_data.at("u").dtype(), mesh::kFloat32);
  EXPECT_EQ(doubles(m.point_data.at("u")), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(ints(m.point_data.at("k")), (std::vector<std::int64_t>{10, 11, 12, 13}));
  ASSERT_EQ(m.cell_data.size(), 4u);
  EXPECT_EQ(ints(m.cell_data.at("s").at(0)), (std::vector<std::int64_t>{8, 9}));
  EXPECT_EQ(doubles(m.cell_data.at("a").at(0)), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(ints(m.cell_data.at("meshdock:region:cell:2:1:c").at(0)),
            (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(m.cell_data.at("b").at(0).shape(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(ints(m.cell_data.at("b").at(0)), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(LegacyVtk, HostileRegionFieldsAreErrorsOrNotes) {
  // Not integers, or the wrong shape: a ReadError naming the array.
  EXPECT_EQ(read_error(two_triangles("FIELD FieldData 1\nmeshdock:region:cell:2:1:r 1 2 double\n"
                                     "0 1\n")),
            "h.vtk: field data 'meshdock:region:cell:2:1:r' names a region but holds no integers");
  EXPECT_EQ(read_error(two_triangles("FIELD FieldData 1\nmeshdock:region:side:1:1:s 1 2 "
                                     "vtktypeint64\n0 1\n")),
            "h.vtk: field data 'meshdock:region:side:1:1:s' names a region but holds no (n, 2) "
            "integer pairs");
  EXPECT_EQ(read_error(two_triangles("FIELD FieldData 1\nmeshdock:region:cell:2:1:r 3 1 "
                                     "vtktypeint64\n0 1 1\n")),
            "h.vtk: field data 'meshdock:region:cell:2:1:r' names a region but holds a (1, 3) "
            "array, not a list of integers");
  // Entries that are not cells / points of this file (edited by another tool): kept as field
  // data, with a note; the rest of the file reads.
  const auto m =
      mesh::read_vtk_bytes(two_triangles("FIELD FieldData 5\n"
                                         "meshdock:region:cell:2:1:far 1 2 vtktypeint64\n1 2\n"
                                         "meshdock:region:point:0:2:neg 1 1 vtktypeint32\n-1\n"
                                         "meshdock:region:side:1:3:facet 2 1 vtktypeint64\n1 -4\n"
                                         "meshdock:region:cell:2:4:ok 1 1 vtktypeuint8\n1\n"
                                         "meshdock:region:bogus 1 1 double\n0.5\n"),
                           "h.vtk");
  EXPECT_EQ(m.notes, (std::vector<std::string>{
                         "field data 'meshdock:region:cell:2:1:far' names a region but its entry "
                         "1 is 2, outside the mesh's 2 cells; kept as field data",
                         "field data 'meshdock:region:point:0:2:neg' names a region but its "
                         "entry 0 is -1, outside the mesh's 4 points; kept as field data",
                         "field data 'meshdock:region:side:1:3:facet' names a region but its "
                         "entry 0 has facet -4; kept as field data"}));
  EXPECT_EQ(regions(m).size(), 1u);
  EXPECT_EQ(std::get<3>(regions(m).at("ok")), std::vector<std::int64_t>{1});
  EXPECT_EQ(m.field_data.size(), 4u);  // far, neg, facet, and a name that is no region's
  EXPECT_TRUE(m.field_data.count("meshdock:region:bogus"));

  // Binary: a uint64 past INT64_MAX, and a huge count claiming more than the file holds.
  TempDir tmp;
  const std::string head =
      "# vtk DataFile Version 5.1\nhand\nBINARY\nDATASET UNSTRUCTURED_GRID\nPOINTS 3 double\n" +
      be(std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}) + "\nCELLS 2 3\nOFFSETS vtktypeint64\n" +
      be(std::vector<std::int64_t>{0, 3}) + "\nCONNECTIVITY vtktypeint64\n" +
      be(std::vector<std::int64_t>{0, 1, 2}) + "\nCELL_TYPES 1\n" +
      be(std::vector<std::int32_t>{5}) + "\n";
  const auto big = head + "FIELD FieldData 1\nmeshdock:region:cell:2:1:r 1 1 vtktypeuint64\n" +
                   be(std::vector<std::uint64_t>{~std::uint64_t{0}}) + "\n";
  for (const auto& b : {mesh::read_mesh(tmp.write("b.vtk", big)), mesh::read_vtk_bytes(big, "b")}) {
    EXPECT_TRUE(b.regions.empty());
    ASSERT_EQ(b.notes.size(), 1u);
    EXPECT_NE(b.notes[0].find("entry 0 is -1, outside the mesh's 1 cells"), std::string::npos)
        << b.notes[0];
  }
  const auto huge = head + "FIELD FieldData 1\nmeshdock:region:cell:2:1:r 1 100 vtktypeint64\n" +
                    be(std::vector<std::int64_t>{0}) + "\n";
  try {
    mesh::read_mesh(tmp.write("h.vtk", huge));
    ADD_FAILURE() << "read";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot fit"), std::string::npos) << e.what();
  }
}

TEST(LegacyVtk, VtuRegionFieldsAreCheckedTheSameWay) {
  // The VTU reader shares regions_from_field_data: the same error and the same note.
  auto vtu = [](const std::string& field) {
    return R"(<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian">
<UnstructuredGrid><FieldData>)" +
           field + R"(</FieldData>
<Piece NumberOfPoints="3" NumberOfCells="1"><Points>
<DataArray type="Float64" NumberOfComponents="3" format="ascii">0 0 0 1 0 0 0 1 0</DataArray>
</Points><Cells><DataArray type="Int64" Name="connectivity" format="ascii">0 1 2</DataArray>
<DataArray type="Int64" Name="offsets" format="ascii">3</DataArray>
<DataArray type="UInt8" Name="types" format="ascii">5</DataArray></Cells></Piece>
</UnstructuredGrid></VTKFile>)";
  };
  try {
    mesh::read_vtu_bytes(
        vtu(R"(<DataArray type="Float32" Name="meshdock:region:cell:2:1:r" format="ascii">0</DataArray>)"),
        "v.vtu");
    ADD_FAILURE() << "read";
  } catch (const mesh::ReadError& e) {
    EXPECT_STREQ(e.what(),
                 "v.vtu: field data 'meshdock:region:cell:2:1:r' names a region but holds no "
                 "integers");
  }
  const auto m = mesh::read_vtu_bytes(
      vtu(R"(<DataArray type="Int64" Name="meshdock:region:cell:2:1:r" format="ascii">0 5</DataArray>
<DataArray type="Int32" Name="meshdock:region:point:0:2:p" format="ascii">2</DataArray>)"),
      "v.vtu");
  EXPECT_EQ(m.notes, std::vector<std::string>{"field data 'meshdock:region:cell:2:1:r' names a "
                                              "region but its entry 1 is 5, outside the mesh's 1 "
                                              "cells; kept as field data"});
  ASSERT_EQ(m.regions.size(), 1u);
  EXPECT_EQ(m.regions[0].name, "p");
  EXPECT_EQ(ints(m.regions[0].entries), std::vector<std::int64_t>{2});
  EXPECT_TRUE(m.field_data.count("meshdock:region:cell:2:1:r"));
}

// The cell-list paths: a one-kind list whose cells all have the same size (no offsets or types
// kept), lists that change size or type part way (offsets / types made at the change), in
// every integer width, from a file (pread) and from memory.
TEST(LegacyVtk, StreamedCellListsOfEveryShape) {
  TempDir tmp;
  const std::vector<double> pts{0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 0, 1};
  auto binary = [&](const std::string& cells, const std::string& types) {
    return "# vtk DataFile Version 5.1\nb\nBINARY\nDATASET UNSTRUCTURED_GRID\nPOINTS 6 float\n" +
           be(std::vector<float>(pts.begin(), pts.end())) + "\n" + cells + types;
  };
  auto offsets_conn = [&](const char* otype, const std::string& o, const char* ctype,
                          const std::string& c, int n, int b) {
    return "CELLS " + std::to_string(n) + " " + std::to_string(b) + "\nOFFSETS " + otype + "\n" +
           o + "\nCONNECTIVITY " + ctype + "\n" + c + "\n";
  };
  auto cell_types = [&](std::vector<std::int32_t> t) {
    return "CELL_TYPES " + std::to_string(t.size()) + "\n" + be(t) + "\n";
  };
  struct Case {
    std::string name, bytes;
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> blocks;
  };
  const std::vector<Case> cases = {
      {"tets int64",
       binary(offsets_conn("vtktypeint64", be(std::vector<std::int64_t>{0, 4, 8}), "vtktypeint64",
                           be(std::vector<std::int64_t>{0, 1, 2, 4, 1, 3, 2, 5}), 3, 8),
              cell_types({10, 10})),
       {{"tetra", {0, 1, 2, 4, 1, 3, 2, 5}}}},
      {"tets int32 / uint16",
       binary(offsets_conn("int", be(std::vector<std::int32_t>{0, 4, 8}), "unsigned_short",
                           be(std::vector<std::uint16_t>{0, 1, 2, 4, 1, 3, 2, 5}), 3, 8),
              cell_types({10, 10})),
       {{"tetra", {0, 1, 2, 4, 1, 3, 2, 5}}}},
      {"triangles then a quad (offsets change at the end)",
       binary(
           offsets_conn("vtktypeint64", be(std::vector<std::int64_t>{0, 3, 6, 10}), "vtktypeint32",
                        be(std::vector<std::int32_t>{0, 1, 2, 1, 3, 2, 0, 1, 5, 4}), 4, 10),
           cell_types({5, 5, 9})),
       {{"triangle", {0, 1, 2, 1, 3, 2}}, {"quad", {0, 1, 5, 4}}}},
      {"quad then tet (same size, types change)",
       binary(offsets_conn("vtktypeint64", be(std::vector<std::int64_t>{0, 4, 8}), "vtktypeint64",
                           be(std::vector<std::int64_t>{0, 1, 3, 2, 0, 1, 2, 4}), 3, 8),
              cell_types({9, 10})),
       {{"quad", {0, 1, 3, 2}}, {"tetra", {0, 1, 2, 4}}}},
      {"4.2 count-prefixed list, mixed",
       "# vtk DataFile Version 4.2\nb\nBINARY\nDATASET UNSTRUCTURED_GRID\nPOINTS 6 double\n" +
           be(pts) + "\nCELLS 3 13\n" +
           be(std::vector<std::int32_t>{3, 0, 1, 2, 3, 1, 3, 2, 4, 0, 1, 2, 4}) + "\n" +
           cell_types({5, 5, 10}),
       {{"triangle", {0, 1, 2, 1, 3, 2}}, {"tetra", {0, 1, 2, 4}}}},
      {"3.0 ascii list of one kind, entries to spare",
       "# vtk DataFile Version 3.0\na\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 6 float\n"
       "0 0 0 1 0 0 0 1 0 1 1 0 0 0 1 1 0 1\nCELLS 2 12\n4 0 1 2 4 4 1 3 2 5 7 7\n"
       "CELL_TYPES 2\n10\n10\n",
       {{"tetra", {0, 1, 2, 4, 1, 3, 2, 5}}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (const auto& m :
         {mesh::read_mesh(tmp.write("c.vtk", c.bytes)), mesh::read_vtk_bytes(c.bytes, "c.vtk")}) {
      EXPECT_EQ(doubles(m.points), pts);
      ASSERT_EQ(m.cells.size(), c.blocks.size());
      for (std::size_t b = 0; b < c.blocks.size(); ++b) {
        EXPECT_EQ(m.cells[b].type, c.blocks[b].first);
        EXPECT_EQ(ints(m.cells[b].connectivity), c.blocks[b].second);
      }
    }
  }
  // Errors: an offset past the connectivity, a list too short for its cells, a cell type
  // that changes to an unknown one after a run of good ones, an id outside the points.
  const auto errors = std::vector<std::pair<std::string, std::string>>{
      {binary(offsets_conn("vtktypeint64", be(std::vector<std::int64_t>{0, 4, 9}), "vtktypeint64",
                           be(std::vector<std::int64_t>{0, 1, 2, 4, 1, 3, 2, 5}), 3, 8),
              cell_types({10, 10})),
       "CELLS OFFSETS[2] = 9 is out of order or past the 8-entry CONNECTIVITY"},
      {"# vtk DataFile Version 4.2\nb\nBINARY\nDATASET UNSTRUCTURED_GRID\nPOINTS 6 double\n" +
           be(pts) + "\nCELLS 3 8\n" + be(std::vector<std::int32_t>{3, 0, 1, 2, 3, 1, 3, 2}) +
           "\n" + cell_types({5, 5, 5}),
       "CELLS list of 8 entries is too short for 3 cells (cell 1 ends too near its end for the 1 "
       "after it)"},
      {binary(offsets_conn("vtktypeint64", be(std::vector<std::int64_t>{0, 4, 8}), "vtktypeint64",
                           be(std::vector<std::int64_t>{0, 1, 2, 4, 1, 3, 2, 5}), 3, 8),
              cell_types({10, 99})),
       "cell 1 has VTK type 99, which is not supported"},
      {binary(offsets_conn("vtktypeint64", be(std::vector<std::int64_t>{0, 4, 8}), "vtktypeint64",
                           be(std::vector<std::int64_t>{0, 1, 2, 4, 1, 3, 2, 6}), 3, 8),
              cell_types({10, 10})),
       "cell 1 refers to point 6 of 6"},
  };
  for (const auto& [bytes, want] : errors) {
    SCOPED_TRACE(want);
    for (int from_file = 0; from_file < 2; ++from_file) {
      try {
        if (from_file)
          mesh::read_mesh(tmp.write("e.vtk", bytes));
        else
          mesh::read_vtk_bytes(bytes, "e.vtk");
        ADD_FAILURE() << "read";
      } catch (const mesh::ReadError& e) {
        EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace

namespace {

// Big-endian bytes of `v`, for hand-made binary files.
template <typename T>
std::string be(std::initializer_list<T> vs) {
  std::string out;
  for (T v : vs) {
    using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    const auto u = std::bit_cast<U>(v);
    for (int k = sizeof(T) - 1; k >= 0; --k)
      out.push_back(static_cast<char>((u >> (8 * k)) & 0xff));
  }
  return out;
}

}  // namespace

TEST(LegacyVtk, PercentNamesDecodeOnlyWholeHexPairs) {
  // VTK's writer encodes ' ', '%', '"' and bytes outside '!'..'~' as %XX; anything that is not
  // '%' and two hex digits stays as written (VTK's DecodeString would take garbage for it).
  const auto m = mesh::read_vtk_bytes(
      two_triangles("CELL_DATA 2\nSCALARS a%20b%C3%bc int\nLOOKUP_TABLE default\n1 2\n"
                    "FIELD f 3\nx%zz%4 1 2 int\n3 4\nNULL_ARRAY\nend%25 1 2 int\n5 6\n"),
      "h.vtk");
  ASSERT_EQ(m.cell_data.count("a b\xc3\xbc"), 1u);
  EXPECT_EQ(ints(m.cell_data.at("x%zz%4")[0]), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(ints(m.cell_data.at("end%")[0]), (std::vector<std::int64_t>{5, 6}));
}

TEST(LegacyVtk, BinaryIdTypeBitsStringsAndMetadata) {
  // What VTK 9.1 writes: vtkIdType as 4-byte ints (CONNECTIVITY too), bits packed first bit
  // highest, a string array (length bytes 11xxxxxx / 10xxxxxx xxxxxxxx), METADATA blocks after
  // OFFSETS and inside a FIELD.
  std::string f =
      "# vtk DataFile Version 5.1\nhand\nBINARY\nDATASET UNSTRUCTURED_GRID\n"
      "POINTS 3 double\n" +
      be<double>({0, 0, 0, 1, 0, 0, 0, 1, 0}) + "\nCELLS 2 3\nOFFSETS vtktypeint64\n" +
      be<std::int64_t>({0, 3}) + "\nMETADATA\nINFORMATION 0\n\nCONNECTIVITY vtkIdType\n" +
      be<std::int32_t>({0, 1, 2}) + "\nCELL_TYPES 1\n" + be<std::int32_t>({5}) +
      "\nPOINT_DATA 3\nFIELD FieldData 3\nids 1 3 vtkIdType\n" +
      be<std::int32_t>({-1, 7, 2147483647}) +
      "\nMETADATA\nCOMPONENT_NAMES\nthe%20id\nINFORMATION 1\nNAME L2_NORM_RANGE "
      "LOCATION vtkDataArray\nDATA 2 1 7\n\nlabels 1 3 string\n" +
      std::string("\xc2xy\x80\x01z\xc0", 7) + "\nbits 1 3 bit\n" + std::string("\xa0", 1) + "\n";
  const auto m = mesh::read_vtk_bytes(f, "b.vtk");
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(m.point_data.at("ids").dtype(), mesh::kInt64);
  EXPECT_EQ(ints(m.point_data.at("ids")), (std::vector<std::int64_t>{-1, 7, 2147483647}));
  EXPECT_EQ(ints(m.point_data.at("bits")), (std::vector<std::int64_t>{1, 0, 1}));
  EXPECT_EQ(m.point_data.count("labels"), 0u);
  EXPECT_NE(std::find(m.notes.begin(), m.notes.end(),
                      "vtk: string array 'labels' in POINT_DATA skipped: a mesh holds numeric "
                      "arrays only"),
            m.notes.end());
  EXPECT_NE(std::find(m.notes.begin(), m.notes.end(),
                      "vtk: component names of 'ids' ('the id') not kept"),
            m.notes.end());
}

TEST(LegacyVtk, BlockSizesThatDoNotFitAreNoted) {
  // Two triangles, "written" as blocks of 1 and 1: split; sizes 3: ignored with a note.
  auto m = mesh::read_vtk_bytes(
      two_triangles("FIELD FieldData 1\nmeshdock:block_sizes 1 2 vtktypeint64\n1 1\n"), "h.vtk");
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_TRUE(m.field_data.empty());
  m = mesh::read_vtk_bytes(
      two_triangles("FIELD FieldData 1\nmeshdock:block_sizes 1 1 vtktypeint64\n3\n"), "h.vtk");
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.notes, (std::vector<std::string>{"vtk: meshdock:block_sizes does not match the "
                                               "cells; blocks follow the cell types"}));
}

TEST(LegacyVtk, AsciiUint64AndOutOfRangeNamesTheArray) {
  const auto m = mesh::read_vtk_bytes(
      two_triangles("CELL_DATA 2\nFIELD f 1\nu 1 2 vtktypeuint64\n18446744073709551615 0\n"),
      "h.vtk");
  EXPECT_EQ(m.cell_data.at("u")[0].as<std::uint64_t>()[0], 18446744073709551615ull);
  EXPECT_NE(read_error(two_triangles("CELL_DATA 2\nFIELD f 1\nbig 1 2 long\n1 "
                                     "9223372036854775808\n"))
                .find("out of range (in 'big')"),
            std::string::npos);
}

// POINT_DATA's count must be the points' (as CELL_DATA's must be the cells'): an array of any
// other length would not belong to the points, so the file is refused where the count is
// written. meshio refuses such a file too; VTK drops the arrays.
TEST(LegacyVtk, PointDataCountOtherThanThePointsIsRefused) {
  const std::string scalars5 = "SCALARS T double 1\nLOOKUP_TABLE default\n1 2 3 4 5\n";
  EXPECT_EQ(read_error(two_triangles("POINT_DATA 5\n" + scalars5)),
            "h.vtk:14: POINT_DATA 5 does not match the 4 points of the dataset");
  EXPECT_EQ(read_error(two_triangles("POINT_DATA 3\nSCALARS T double 1\nLOOKUP_TABLE "
                                     "default\n1 2 3\n")),
            "h.vtk:14: POINT_DATA 3 does not match the 4 points of the dataset");
  EXPECT_EQ(read_error(two_triangles("CELL_DATA 2\nSCALARS c int\nLOOKUP_TABLE default\n1 2\n"
                                     "POINT_DATA 6\nVECTORS V double\n1 2 3\n1 2 3\n1 2 3\n"
                                     "1 2 3\n1 2 3\n1 2 3\n")),
            "h.vtk:18: POINT_DATA 6 does not match the 4 points of the dataset");
  // Points made from DIMENSIONS count the same, whether they come before POINT_DATA or after.
  const std::string grid = "# vtk DataFile Version 3.0\ns\nASCII\nDATASET STRUCTURED_POINTS\n";
  const std::string t3 = "POINT_DATA 3\nSCALARS T float\nLOOKUP_TABLE default\n1 2 3\n";
  EXPECT_EQ(read_error(grid + "DIMENSIONS 2 2 1\nORIGIN 0 0 0\nSPACING 1 1 1\n" + t3),
            "h.vtk:8: POINT_DATA 3 does not match the 4 points of the dataset");
  EXPECT_EQ(read_error(grid + t3 + "DIMENSIONS 2 2 1\n"),
            "h.vtk:5: POINT_DATA 3 does not match the 4 points of the dataset");
  // The right count reads as before.
  const auto m = mesh::read_vtk_bytes(
      two_triangles("POINT_DATA 4\nSCALARS T double 1\nLOOKUP_TABLE default\n1 2 3 4\n"), "h.vtk");
  EXPECT_EQ(m.point_data.at("T").shape(), (std::vector<std::int64_t>{4}));
  EXPECT_EQ(doubles(m.point_data.at("T")), (std::vector<double>{1, 2, 3, 4}));
}

// A CELL_DATA array whose rows (its CELL_DATA count) are not the cells, and a FIELD array in
// POINT_DATA / CELL_DATA of another tuple count than its section's: refused at the array's line,
// naming the line of its POINT_DATA / CELL_DATA (before, the first named no line at all and
// the second the line of its last value).
TEST(LegacyVtk, DataArraysOfTheWrongLengthNameTheirLineAndTheirSections) {
  // two_triangles(): 2 cells; its tail starts at line 14.
  EXPECT_EQ(read_error(two_triangles("POINT_DATA 4\nSCALARS T double\nLOOKUP_TABLE default\n"
                                     "1 2 3 4\nCELL_DATA 3\nSCALARS c int\nLOOKUP_TABLE "
                                     "default\n1 2 3\n")),
            "h.vtk:19: CELL_DATA array 'c' has 3 rows for 2 cells (CELL_DATA 3 on line 18)");
  // The first array that does not fit is named (a FIELD array here, with its own line).
  EXPECT_EQ(read_error(two_triangles("CELL_DATA 1\nFIELD FieldData 2\na 1 1 int\n7\n"
                                     "b 2 1 double\n1 2\n")),
            "h.vtk:16: CELL_DATA array 'a' has 1 rows for 2 cells (CELL_DATA 1 on line 14)");
  // Structured datasets make their cells from DIMENSIONS: 2 x 1 quads here.
  const std::string grid =
      "# vtk DataFile Version 3.0\ns\nASCII\nDATASET STRUCTURED_POINTS\n"
      "DIMENSIONS 3 2 1\nCELL_DATA 3\nCOLOR_SCALARS rgb 3\n"
      "0 0 0\n1 1 1\n0 1 0\n";
  EXPECT_EQ(read_error(grid),
            "h.vtk:7: CELL_DATA array 'rgb' has 3 rows for 2 cells (CELL_DATA 3 on line 6)");
  // A FIELD array's own tuple count, refused before its values are read.
  EXPECT_EQ(read_error(two_triangles("CELL_DATA 2\nSCALARS a int\nLOOKUP_TABLE default\n1 2\n"
                                     "FIELD FieldData 1\nb 1 3 double\n1 2 3\n")),
            "h.vtk:19: CELL_DATA array 'b' has 3 tuples, expected 2 (CELL_DATA 2 on line 14)");
  EXPECT_EQ(read_error(two_triangles("POINT_DATA 4\nFIELD f 1\nT 1 3 double\n1\n2\n3\n")),
            "h.vtk:16: POINT_DATA array 'T' has 3 tuples, expected 4 (POINT_DATA 4 on line 14)");
}

// An ascii integer must fit the type its array declares: stored in it as it was, 4294967296
// in an int became 0, 300 in an unsigned_char 44, a cell type 2^32 + 5 a triangle. The PLY
// reader refuses such values the same way.
TEST(LegacyVtk, AsciiIntegersThatDoNotFitTheirTypeAreRefused) {
  const auto scalars = [](const std::string& type, const std::string& values) {
    return two_triangles("POINT_DATA 4\nSCALARS I " + type + " 1\nLOOKUP_TABLE default\n" + values +
                         "\n");
  };
  EXPECT_EQ(read_error(scalars("int", "1 2 3 4294967296")),
            "h.vtk:17: value 4294967296 of 'I' does not fit its type int32 "
            "(-2147483648..2147483647)");
  EXPECT_EQ(read_error(scalars("unsigned_char", "1 2 3 300")),
            "h.vtk:17: value 300 of 'I' does not fit its type uint8 (0..255)");
  EXPECT_EQ(read_error(scalars("unsigned_int", "1 2\n-4 3")),
            "h.vtk:18: value -4 of 'I' does not fit its type uint32 (0..4294967295)");
  EXPECT_EQ(read_error(scalars("short", "1 2 3 32768")),
            "h.vtk:17: value 32768 of 'I' does not fit its type int16 (-32768..32767)");
  EXPECT_EQ(read_error(scalars("char", "-129 2 3 4")),
            "h.vtk:17: value -129 of 'I' does not fit its type int8 (-128..127)");
  EXPECT_EQ(read_error(two_triangles("CELL_DATA 2\nFIELD f 1\nu 1 2 vtktypeuint16\n65536 1\n")),
            "h.vtk:17: value 65536 of 'u' does not fit its type uint16 (0..65535)");
  // The edges of each type fit.
  auto m = mesh::read_vtk_bytes(scalars("int", "-2147483648 2147483647 0 1"), "h.vtk");
  EXPECT_EQ(ints(m.point_data.at("I")), (std::vector<std::int64_t>{-2147483648, 2147483647, 0, 1}));
  m = mesh::read_vtk_bytes(scalars("unsigned_char", "0 255 1 2"), "h.vtk");
  EXPECT_EQ(ints(m.point_data.at("I")), (std::vector<std::int64_t>{0, 255, 1, 2}));
  // The cell lists: types (int), and OFFSETS / CONNECTIVITY of the type they name.
  std::string f = two_triangles("");
  EXPECT_EQ(read_error(std::string(f).replace(f.find("5 5\n"), 3, "4294967301 4294967301")),
            "h.vtk:13: value 4294967301 of CELL_TYPES does not fit its type int32 "
            "(-2147483648..2147483647)");
  std::string conn32 = f;
  conn32.replace(conn32.find("CONNECTIVITY vtktypeint64\n0 1 2 1 3 2"), 37,
                 "CONNECTIVITY vtktypeint32\n0 1 2 1 3 4294967298");
  EXPECT_EQ(read_error(conn32),
            "h.vtk:11: value 4294967298 of CONNECTIVITY does not fit its type "
            "int32 (-2147483648..2147483647)");
  std::string offs8 = f;
  offs8.replace(offs8.find("OFFSETS vtktypeint64\n0 3 6"), 26, "OFFSETS vtktypeuint8\n0 3 262");
  EXPECT_EQ(read_error(offs8),
            "h.vtk:9: value 262 of OFFSETS does not fit its type uint8 (0..255)");
  // Values are checked a few thousand at a time: one deep in a long array still names its
  // line, read from memory or from a file (whose text passed through the window long before).
  TempDir tmp;
  for (const std::size_t bad : {std::size_t{4100}, std::size_t{299990}}) {
    std::string values;
    for (std::size_t i = 0; i < 300000; ++i)
      values += (i == bad ? "2147483648" : std::to_string(i % 1000)) + "\n";
    const auto text = two_triangles("FIELD FieldData 1\nbig 1 300000 int\n" + values);
    const auto want = ":" + std::to_string(16 + bad) +
                      ": value 2147483648 of 'big' does not fit its type int32 "
                      "(-2147483648..2147483647)";
    EXPECT_EQ(read_error(text), "h.vtk" + want);
    const auto path = tmp.write("long.vtk", text);
    try {
      mesh::read_mesh(path);
      ADD_FAILURE() << "read " << bad;
    } catch (const mesh::ReadError& e) {
      EXPECT_EQ(e.what(), path + want);
    }
  }
}

// More entries than a section's count leave a number where the next keyword should be: the
// message names the section before it and its count, not the number as a keyword.
TEST(LegacyVtk, ANumberWhereAKeywordIsExpectedNamesTheSectionBefore) {
  const std::string v42 =
      "# vtk DataFile Version 4.2\nh\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 4 double\n"
      "0 0 0\n1 0 0\n0 1 0\n0 0 1\n";
  EXPECT_EQ(read_error(v42 + "CELLS 1 5\n4 0 1 2 3\n3 0 1 2\nCELL_TYPES 1\n10\n"),
            "h.vtk:12: found '3' where a keyword is expected: the CELLS section on line 10 has "
            "more entries than its count says (1 cell, 5 entries)");
  EXPECT_EQ(read_error(v42 + "CELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10 5\n"),
            "h.vtk:13: found '5' where a keyword is expected: the CELL_TYPES section on line 12 "
            "has more entries than its count says (1 cell type)");
  EXPECT_EQ(read_error(std::string(v42).replace(v42.find("0 0 1\n"), 6, "0 0 1 7\n") +
                       "CELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\n"),
            "h.vtk:9: found '7' where a keyword is expected: the POINTS section on line 5 has "
            "more entries than its count says (4 points, 12 values)");
  std::string f = two_triangles(
      "POINT_DATA 4\nSCALARS T double 1\nLOOKUP_TABLE default\n"
      "1 2 3 4\n-5.5\n");
  EXPECT_EQ(read_error(f),
            "h.vtk:18: found '-5.5' where a keyword is expected: the SCALARS 'T' section on line "
            "15 has more entries than its count says (POINT_DATA 4, 1 component)");
  f = two_triangles("");
  EXPECT_EQ(read_error(f.replace(f.find("0 1 2 1 3 2"), 11, "0 1 2 1 3 2 0")),
            "h.vtk:11: found '0' where a keyword is expected: the CONNECTIVITY section on line "
            "10 has more entries than its count says (6 entries)");
  f = two_triangles("");
  EXPECT_EQ(read_error(f.replace(f.find("0 3 6"), 5, "0 3 6 6")),
            "h.vtk:9: found '6' where a keyword is expected: the OFFSETS section on line 8 has "
            "more entries than its count says (3 offsets)");
  EXPECT_EQ(read_error(two_triangles("POINT_DATA 4 5\n")),
            "h.vtk:14: found '5' where a keyword is expected: the POINT_DATA line on line 14 has "
            "more values than it takes");
  // A word that is no keyword is still named as one.
  EXPECT_EQ(read_error(two_triangles("BOGUS 1\n")), "h.vtk:14: keyword 'BOGUS' is not supported");
}

// A UTF-8 byte-order mark before the header (Windows editors write one) marks the encoding and
// is no part of the file's text: ascii and binary files read as without it, lines counted as
// the file's. One anywhere else is still text.
TEST(LegacyVtk, AUtf8ByteOrderMarkIsSkipped) {
  TempDir tmp;
  const std::string bom = "\xEF\xBB\xBF";
  const auto src = mesh_with_regions();
  for (const char* enc : {"ascii", "binary"}) {
    SCOPED_TRACE(enc);
    EXPECT_TRUE(write_vtk(src, tmp.file("plain.vtk"), enc).empty());
    const auto plain = slurp(tmp.file("plain.vtk"));
    const auto want = mesh::read_vtk_bytes(plain, "plain.vtk");
    // From the file (ascii: through a window; binary: pread) and from memory.
    for (const auto& got : {mesh::read_mesh(tmp.write("bom.vtk", bom + plain)),
                            mesh::read_vtk_bytes(bom + plain, "bom.vtk")}) {
      EXPECT_EQ(doubles(got.points), doubles(want.points));
      ASSERT_EQ(got.cells.size(), 2u);
      EXPECT_EQ(ints(got.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 1, 3, 2}));
      EXPECT_EQ(ints(got.cells[1].connectivity), (std::vector<std::int64_t>{1, 4, 3, 2}));
      EXPECT_EQ(ints(got.cell_data.at("mat")[1]), (std::vector<std::int64_t>{6}));
      EXPECT_EQ(regions(got), regions(want));
      EXPECT_EQ(got.notes, want.notes);
    }
  }
  EXPECT_EQ(read_error(bom + two_triangles("BOGUS 1\n")),
            "h.vtk:14: keyword 'BOGUS' is not supported");
  EXPECT_EQ(read_error("\n" + bom + two_triangles("")),
            "h.vtk:1: not a legacy VTK file (no '# vtk DataFile Version' line)");
}
