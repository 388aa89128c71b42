// The PERMAS reader and writer: the files of tests/data/permas (meshio's writer, and bracket.dato
// in PERMAS' own keyword forms; tools/make_permas.py). quadratic.dato puts every mid-side node at
// the middle of its edge, so the node order a reader gives is checked from the points alone.
// The comparisons with meshio's reader are in tests/python/test_permas.py.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/permas/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::gzipped;
using meshdock::test::has_note;
using meshdock::test::ints;

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_permas(f); },
                                    text, "t.dato");
}

const mesh::Region* region(const mesh::Mesh& m, const std::string& name) {
  for (const auto& r : m.regions)
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<std::int64_t> row(const mesh::CellBlock& b, std::int64_t i) {
  const auto k = b.connectivity.dim(1);
  const auto* p = b.connectivity.as<std::int64_t>() + i * k;
  return {p, p + k};
}

TEST(PermasReader, BracketInPermasKeywordForms) {
  const auto m = mesh::read_mesh(data("bracket.dato"));
  mesh::validate_mesh(m, "bracket.dato");
  ASSERT_EQ(m.points.shape(), (std::vector<std::int64_t>{28, 3}));
  const auto* p = m.points.as<double>();
  EXPECT_EQ(p[8 * 3], 2.0);  // node 109's "0.2+1"
  EXPECT_EQ(p[11 * 3 + 0], 2.0);
  EXPECT_EQ(p[27 * 3 + 2], 1.5);  // node 216, the second $COOR block's last
  EXPECT_EQ(cell_types(m), (std::vector<std::string>{"hexahedron", "hexahedron20", "quad"}));
  // Ids 101.. and 201.. are rows 0.. and 12..: "11  101 102 105 104 107 108 111 110".
  EXPECT_EQ(row(m.cells[0], 0), (std::vector<std::int64_t>{0, 1, 4, 3, 6, 7, 10, 9}));
  EXPECT_EQ(row(m.cells[0], 1), (std::vector<std::int64_t>{1, 2, 5, 4, 7, 8, 11, 10}));
  // The HEXE20 row over two lines ('&' before the second), read as written (VTK's order).
  std::vector<std::int64_t> hex20{6, 7, 10, 9};
  for (std::int64_t r = 12; r < 28; ++r) hex20.push_back(r);
  EXPECT_EQ(row(m.cells[1], 0), hex20);
  EXPECT_EQ(row(m.cells[2], 1), (std::vector<std::int64_t>{1, 4, 5, 2}));
  // Sets: the NSET = / ESET = parameters and $NSET / $ESET NAME = ..., one region a name.
  ASSERT_NE(region(m, "ALL_NODES"), nullptr);
  EXPECT_EQ(ints(region(m, "ALL_NODES")->entries).size(), 12u);
  EXPECT_EQ(region(m, "ALL_NODES")->kind, mesh::RegionKind::kPoint);
  EXPECT_EQ(ints(region(m, "FIXED")->entries), (std::vector<std::int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ints(region(m, "SOLID")->entries), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(region(m, "SOLID")->kind, mesh::RegionKind::kCell);
  EXPECT_EQ(region(m, "SOLID")->dim, 3);
  EXPECT_EQ(ints(region(m, "TOP_SOLID")->entries), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(ints(region(m, "BOTTOM")->entries), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(region(m, "BOTTOM")->dim, 2);
  EXPECT_EQ(ints(region(m, "CORNER")->entries), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(m.regions.size(), 6u);
  // The keywords not read, each noted once, with its first line.
  EXPECT_TRUE(has_note(m, "bracket.dato:43: $SYSTEM is not read"));
  EXPECT_TRUE(has_note(m, "$MATERIAL is not read"));
  EXPECT_TRUE(has_note(m, "$ELASTIC is not read"));
  EXPECT_TRUE(has_note(m, "$ELPROP is not read"));
  EXPECT_EQ(m.notes.size(), 4u);
}

// meshio's writer puts TET10, TRIMS6, QUAMS9 and PENTA15 in PERMAS' order: read back, every
// mid-side node is the middle of its VTK edge.
TEST(PermasReader, QuadraticCellsInVtkOrder) {
  const auto m = mesh::read_mesh(data("quadratic.dato"));
  mesh::validate_mesh(m, "quadratic.dato");
  EXPECT_EQ(cell_types(m),
            (std::vector<std::string>{"vertex", "line", "line3", "triangle", "triangle6", "quad",
                                      "quad8", "quad9", "tetra", "tetra10", "pyramid", "wedge",
                                      "hexahedron", "hexahedron20", "wedge15"}));
  struct Edges {
    const char* type;
    std::size_t corners;
    std::vector<std::pair<int, int>> edges;
  };
  const std::vector<Edges> table{
      {"line3", 2, {{0, 1}}},
      {"triangle6", 3, {{0, 1}, {1, 2}, {2, 0}}},
      {"quad8", 4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}},
      {"quad9", 4, {{0, 1}, {1, 2}, {2, 3}, {3, 0}}},
      {"tetra10", 4, {{0, 1}, {1, 2}, {2, 0}, {0, 3}, {1, 3}, {2, 3}}},
      {"wedge15", 6, {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}, {0, 3}, {1, 4}, {2, 5}}},
      {"hexahedron20",
       8,
       {{0, 1},
        {1, 2},
        {2, 3},
        {3, 0},
        {4, 5},
        {5, 6},
        {6, 7},
        {7, 4},
        {0, 4},
        {1, 5},
        {2, 6},
        {3, 7}}},
  };
  const auto* p = m.points.as<double>();
  std::size_t checked = 0;
  for (const auto& b : m.cells) {
    for (const auto& t : table) {
      if (b.type != t.type) continue;
      const auto r = row(b, 0);
      for (std::size_t e = 0; e < t.edges.size(); ++e) {
        const auto a = r[static_cast<std::size_t>(t.edges[e].first)];
        const auto c = r[static_cast<std::size_t>(t.edges[e].second)];
        const auto mid = r[t.corners + e];
        for (int k = 0; k < 3; ++k)
          EXPECT_DOUBLE_EQ(p[mid * 3 + k], (p[a * 3 + k] + p[c * 3 + k]) / 2)
              << b.type << " edge " << e << " axis " << k;
      }
      if (b.type == "quad9") {
        for (int k = 0; k < 3; ++k)
          EXPECT_DOUBLE_EQ(
              p[r[8] * 3 + k],
              (p[r[0] * 3 + k] + p[r[1] * 3 + k] + p[r[2] * 3 + k] + p[r[3] * 3 + k]) / 4);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, table.size());
}

TEST(PermasReader, GzippedAsPlain) {
  const auto plain = mesh::read_mesh(data("box.post"));
  const auto gz = mesh::read_mesh(data("box.post.gz"));
  EXPECT_EQ(doubles(gz.points), doubles(plain.points));
  ASSERT_EQ(cell_types(gz), cell_types(plain));
  for (std::size_t b = 0; b < gz.cells.size(); ++b)
    EXPECT_EQ(ints(gz.cells[b].connectivity), ints(plain.cells[b].connectivity));
  EXPECT_EQ(plain.cells.back().type, "tetra");
  EXPECT_EQ(plain.cells.back().size(), 935);
  mesh::ReadOptions small;
  small.max_bytes = 4096;
  EXPECT_EQ(
      meshdock::test::read_error([&](const mesh::InFile& f) { return mesh::read_permas(f, small); },
                                 gzipped(std::string(1 << 20, ' ')), "b.post.gz"),
      "b.post.gz: the gzipped PERMAS file inflates to more than the 4096-byte limit "
      "(max_bytes; unset: half this machine's memory, at most 16 GiB); not read");
}

TEST(PermasReader, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n$ELEMENT TYPE = HEXA99\n1 1\n").substr(0, 68),
            "t.dato:3: element type 'HEXA99' is not one meshdock reads (PLOT1, PL");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n2 1 0 0\n$ELEMENT TYPE = TET4\n1 1 2\n$FIN\n"),
            "t.dato:5: element 1 ($ELEMENT TYPE = TET4) has 2 of its 4 nodes when the next "
            "keyword starts");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n2 1 0 0\n$ELEMENT TYPE = TET4\n1 1 2\n"),
            "t.dato:5: element 1 ($ELEMENT TYPE = TET4) has 2 of its 4 nodes when the file ends");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n$ELEMENT TYPE=PLOTL2\n7 1 2\n"),
            "t.dato:4: node 2 of an element of $ELEMENT TYPE = PLOTL2 is not one of the file's 1 "
            "nodes ($COOR)");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n\n  ! again\n1 1 0 0\n"),
            "t.dato:5: node id 1 is given twice (first on line 2)");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n$NSET NAME = A\n1 2\n"),
            "t.dato:3: node set 'A': node 2 is not one of the file's 1 nodes");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n$ESET NAME = B\n9\n"),
            "t.dato:3: element set 'B': element 9 is not one of the file's 0 elements");
  EXPECT_EQ(error_of("$COOR\n1 0 0\n"),
            "t.dato:2: node 1 has 2 coordinates; a PERMAS node has 3 (x y z)");
  EXPECT_EQ(error_of("$COOR\n1 0 0 x\n"), "t.dato:2: expected a coordinate, found 'x'");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0 0\n"), "t.dato:2: node 1 has more than 3 coordinates");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n$ELEMENT TYPE=PLOT1\n1 1 1\n"),
            "t.dato:4: element 1 has more than the 1 nodes of PLOT1");
  EXPECT_EQ(error_of("$COOR\n1 0 0 0\n$ELEMENT TYPE=PLOT1\n1 1\n1 1\n"),
            "t.dato:5: element id 1 is given twice");
  EXPECT_TRUE(error_of("$COOR\n1 0 0 0\n$ELEMENT ESET = A\n")
                  .starts_with("t.dato:3: $ELEMENT without TYPE = <element type> (one of PLOT1, "));
  EXPECT_EQ(error_of("1 0 0 0\n"),
            "t.dato:1: a data line before any keyword ('$COOR', '$ELEMENT ...')");
  EXPECT_EQ(error_of("$NSET\n1\n"), "t.dato:1: $NSET without NAME = <set name>");
}

// Keywords in any case, '!' comments anywhere, $FIN ends the input, an empty file is an empty
// mesh.
TEST(PermasReader, KeywordFormsAndComments) {
  const auto m =
      meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_permas(f); },
                                "  $Coor   ! nodes\n 5 1.5 -2.5E-1 3.0D0 ! D exponent\n 7 0 0 0\n"
                                "$element type=plotl2 eset=E\n 3 7 5 ! a line\n$fin\n$COOR\n1 x\n",
                                "t.post");
  EXPECT_EQ(doubles(m.points), (std::vector<double>{1.5, -0.25, 3.0, 0, 0, 0}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(region(m, "E")->kind, mesh::RegionKind::kCell);
  const auto empty = meshdock::test::read_text(
      [](const mesh::InFile& f) { return mesh::read_permas(f); }, "", "e.post");
  EXPECT_EQ(empty.points.shape(), (std::vector<std::int64_t>{0, 3}));
  EXPECT_TRUE(empty.cells.empty());
}

// The writer writes what meshio's writer writes: its element rows of quadratic.dato come out
// the same, and both files read back to the same mesh; gzipped for x.post.gz.
TEST(PermasWriter, WritesWhatMeshioWrites) {
  const auto src = mesh::read_mesh(data("quadratic.dato"));
  const meshdock::test::TempDir dir("permas-w");
  const auto notes = mesh::write_mesh(src, dir.file("q.dato"));
  EXPECT_TRUE(notes.empty());
  auto element_lines = [](const std::string& text) {
    std::vector<std::string> out;
    std::size_t at = text.find("$ELEMENT");
    while (at != std::string::npos && at < text.size()) {
      const auto nl = text.find('\n', at);
      const auto line = text.substr(at, nl - at);
      if (line.starts_with("$END")) break;
      if (line != "!") out.push_back(line);
      at = nl + 1;
    }
    return out;
  };
  EXPECT_EQ(element_lines(file_text(dir.file("q.dato"))),
            element_lines(file_text(data("quadratic.dato"))));
  for (const char* name : {"q.dato", "q.post.gz"}) {
    if (std::string(name) != "q.dato") mesh::write_mesh(src, dir.file(name));
    const auto back = mesh::read_mesh(dir.file(name));
    EXPECT_EQ(doubles(back.points), doubles(src.points)) << name;
    ASSERT_EQ(cell_types(back), cell_types(src)) << name;
    for (std::size_t b = 0; b < src.cells.size(); ++b)
      EXPECT_EQ(ints(back.cells[b].connectivity), ints(src.cells[b].connectivity)) << name;
  }
  EXPECT_EQ(file_text(dir.file("q.post.gz")).substr(0, 2), "\x1f\x8b");
  // Sets are noted, not written (meshio's reader fails on them); so is 2-D padding.
  auto with_sets = mesh::read_mesh(data("bracket.dato"));
  const auto set_notes = mesh::write_mesh(with_sets, dir.file("b.post"));
  EXPECT_EQ(set_notes.size(), 6u);
  EXPECT_NE(set_notes[0].find("meshio's PERMAS reader fails on $NSET / $ESET lines"),
            std::string::npos);
  mesh::Mesh poly;
  poly.points = mesh::Array::of<double>({3, 2});
  auto conn = mesh::Array::of<std::int64_t>({1, 3});
  for (int k = 0; k < 6; ++k) poly.points.as<double>()[k] = k;
  for (int k = 0; k < 3; ++k) conn.as<std::int64_t>()[k] = k;
  poly.cells.push_back(mesh::CellBlock::fixed("polygon", std::move(conn)));
  EXPECT_THROW(mesh::write_mesh(poly, dir.file("p.post")), mesh::WriteError);
}

}  // namespace
