// The ANSYS Fluent mesh reader and writer: the files of tests/data/ansys (meshes written by
// meshio's ansys writer, ascii and binary; hand-made files in Fluent's own layout with faces,
// zones, comments, CRLF; tools/make_ansys.py), bytes written here through a memfd (errors name
// the file, the line and the section), .msh told from Gmsh's by content, and round trips
// through write_ansys in both encodings. The comparisons with meshio are in
// tests/python/test_ansys.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/ansys/" + name;
}

using meshdock::test::cell_types;
using meshdock::test::doubles;
using meshdock::test::has_note;
using meshdock::test::ints;
using meshdock::test::path_error;

mesh::Mesh read_bytes(const std::string& bytes) {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_ansys(f); }, bytes,
                                   "t.msh");
}

std::string error_of(const std::string& bytes) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_ansys(f); },
                                    bytes, "t.msh");
}

using I = std::vector<std::int64_t>;
using D = std::vector<double>;
using S = std::vector<std::string>;

}  // namespace

TEST(AnsysReader, FluentLayoutFacesZonesAndMixedZone) {
  // .msh with a '(' first: told from Gmsh's by content.
  const auto m = mesh::read_mesh(data("fluent-3d.msh"));
  ASSERT_EQ(m.points.dim(0), 12);
  ASSERT_EQ(m.points.dim(1), 3);
  EXPECT_EQ(doubles(m.points)[3], 1.0);
  EXPECT_EQ(doubles(m.points)[6 * 3 + 2], 1.0);
  // interior, wall, then the mixed zone's quads and triangles (first seen first).
  EXPECT_EQ(cell_types(m), (S{"quad", "quad", "quad", "triangle"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{1, 4, 10, 7}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{0, 6, 9, 3, 2, 5, 11, 8, 0, 1, 7, 6, 1, 2, 8, 7}));
  EXPECT_EQ(m.cells[2].size(), 5);
  EXPECT_EQ(ints(m.cells[3].connectivity), (I{1, 4, 5, 1, 5, 2}));
  EXPECT_TRUE(has_note(m, "(45) zone sections: only their names are kept, as the zones' regions"));
  EXPECT_TRUE(has_note(m, "3 wall walls"));
  EXPECT_TRUE(has_note(m, "(39) zone sections: only their names"));
  EXPECT_TRUE(has_note(m, "(18) periodic shadow face sections are skipped"));
  // Cell 2's faces are a hexahedron's with one quad split in two: zone 5 stays unbuilt.
  EXPECT_TRUE(has_note(m,
                       "cell zone 5 (line 27)'s cells are not built from the faces: cell 2 "
                       "(a hexahedron) has 7 faces, not 6"));
  EXPECT_TRUE(has_note(m, "adjacent cells (c0 c1)"));
  // Zones a (39) / (45) section names are regions of their faces.
  ASSERT_EQ(m.regions.size(), 2u);
  EXPECT_EQ(m.regions[0].name, "walls");
  EXPECT_EQ(m.regions[0].tag, 3);
  EXPECT_EQ(m.regions[0].dim, 2);
  EXPECT_EQ(ints(m.regions[0].entries), (I{1, 2, 3, 4}));
  EXPECT_EQ(m.regions[1].name, "top-and-sides");
  EXPECT_EQ(ints(m.regions[1].entries), (I{5, 6, 7, 8, 9, 10, 11}));
}

namespace {

// A 3-D cell's volume by VTK's node order (positive when the cell is oriented as VTK's).
double volume(const mesh::Mesh& m, const std::string& type, const std::int64_t* n) {
  const double* p = m.points.as<double>();
  auto tet = [&](std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    double u[3], v[3], w[3];
    for (int k = 0; k < 3; ++k) {
      u[k] = p[3 * b + k] - p[3 * a + k];
      v[k] = p[3 * c + k] - p[3 * a + k];
      w[k] = p[3 * d + k] - p[3 * a + k];
    }
    return (u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
            u[2] * (v[0] * w[1] - v[1] * w[0])) /
           6;
  };
  if (type == "tetra") return tet(n[0], n[1], n[2], n[3]);
  if (type == "pyramid") return tet(n[0], n[1], n[2], n[4]) + tet(n[0], n[2], n[3], n[4]);
  if (type == "wedge")  // the base (0 1 2) faces the top, as VTK's FLUENT reader builds it
    return tet(n[0], n[1], n[2], n[3]) + tet(n[1], n[2], n[3], n[4]) + tet(n[2], n[3], n[4], n[5]);
  // hexahedron: five tetrahedra
  return tet(n[0], n[1], n[3], n[4]) + tet(n[1], n[2], n[3], n[6]) + tet(n[1], n[4], n[5], n[6]) +
         tet(n[3], n[4], n[6], n[7]) + tet(n[1], n[3], n[4], n[6]);
}

}  // namespace

TEST(AnsysReader, CellsAreBuiltFromTheirFaces) {
  // A grid of 16 unit boxes in Fluent's layout (tools/make_ansys.py): a tetra zone and a mixed
  // zone (hexahedra, pyramids, wedges) given by their faces alone, in ascii and binary.
  for (const char* name : {"fluent-hybrid.msh", "fluent-hybrid.bin.msh"}) {
    SCOPED_TRACE(name);
    const auto m = mesh::read_mesh(data(name));
    // The face zones first (as meshio reads them), then the built cells, zone by zone.
    EXPECT_EQ(cell_types(m), (S{"triangle", "quad", "quad", "triangle", "quad", "tetra",
                                "hexahedron", "pyramid", "wedge"}));
    ASSERT_EQ(m.cells.size(), 9u);
    EXPECT_EQ(m.cells[5].size(), 40);
    EXPECT_EQ(m.cells[6].size(), 4);
    EXPECT_EQ(m.cells[7].size(), 28);
    EXPECT_EQ(m.cells[8].size(), 8);
    // Every cell has its volume, with VTK's orientation: tetrahedra 1/12 (a pyramid of the
    // unit box's centre, halved), hexahedra 1, pyramids 1/6, wedges 1/2.
    const std::map<std::string, double> want{
        {"tetra", 1.0 / 12}, {"hexahedron", 1}, {"pyramid", 1.0 / 6}, {"wedge", 0.5}};
    for (std::size_t b = 5; b < 9; ++b) {
      const auto& blk = m.cells[b];
      const auto k = blk.connectivity.dim(1);
      for (std::int64_t c = 0; c < blk.size(); ++c)
        ASSERT_NEAR(volume(m, blk.type, blk.connectivity.as<std::int64_t>() + c * k),
                    want.at(blk.type), 1e-12)
            << blk.type << " " << c;
    }
    // The first hexahedron is the box at the origin: nodes 0 1 6 5 / 15 16 21 20.
    auto first = ints(m.cells[6].connectivity);
    first.resize(8);
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, (I{0, 1, 5, 6, 15, 16, 20, 21}));
    EXPECT_TRUE(has_note(m,
                         "cells built from their faces, after the face blocks: 40 tetra "
                         "(zone 2), 4 hexahedron (zone 3), 28 pyramid (zone 3), 8 wedge "
                         "(zone 3)"));
    // Every zone is named: a region each, cells and faces alike.
    S names;
    for (const auto& r : m.regions) names.push_back(r.name);
    EXPECT_EQ(names, (S{"int_fluid", "inlet-wall", "outer", "tets", "hybrid"}));
    EXPECT_EQ(m.regions[3].dim, 3);
    EXPECT_EQ(m.regions[3].tag, 2);
    EXPECT_EQ(m.regions[3].entries.dim(0), 40);
    EXPECT_EQ(m.regions[4].entries.dim(0), 40);
    EXPECT_EQ(ints(m.regions[4].entries).back(), m.num_cells() - 1);
  }
}

TEST(AnsysReader, TwoDimensionalCellsFromLineFaces) {
  const auto m = mesh::read_mesh(data("fluent-2d-cells.msh"));
  EXPECT_EQ(cell_types(m), (S{"line", "line", "line", "quad", "triangle"}));
  ASSERT_EQ(m.cells[3].size(), 4);
  ASSERT_EQ(m.cells[4].size(), 4);
  // Counter-clockwise (VTK's order): every square's area 1, every triangle's 1/2 ...
  const double* p = m.points.as<double>();
  for (const auto& blk : {m.cells[3], m.cells[4]}) {
    const auto k = blk.connectivity.dim(1);
    const auto* n = blk.connectivity.as<std::int64_t>();
    for (std::int64_t c = 0; c < blk.size(); ++c) {
      double area = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        const auto a = n[c * k + i], b = n[c * k + (i + 1) % k];
        area += p[2 * a] * p[2 * b + 1] - p[2 * b] * p[2 * a + 1];
      }
      EXPECT_DOUBLE_EQ(area / 2, blk.type == "quad" ? 1.0 : 0.5) << blk.type << " " << c;
    }
  }
  // ... and the square of the 2-D CRLF file's two quads too.
  const auto crlf = mesh::read_mesh(data("fluent-2d.crlf.msh"));
  EXPECT_EQ(cell_types(crlf), (S{"line", "line", "quad"}));
  EXPECT_EQ(ints(crlf.cells[2].connectivity), (I{1, 4, 3, 0, 1, 2, 5, 4}));
  ASSERT_EQ(crlf.regions.size(), 1u);
  EXPECT_EQ(crlf.regions[0].name, "surface");
  EXPECT_EQ(ints(crlf.regions[0].entries), (I{7, 8}));
}

TEST(AnsysReader, PolyhedraAndPolygonalFaces) {
  // A box and a pentagonal prism beside it, polyhedra (element type 7) given by their faces;
  // the pentagons a polygonal (5) face zone (meshio fails on it: KeyError 5).
  const auto m = mesh::read_mesh(data("fluent-poly.msh"));
  EXPECT_EQ(cell_types(m), (S{"quad", "quad", "quad", "polygon", "polyhedron"}));
  EXPECT_EQ(ints(m.cells[3].connectivity), (I{1, 8, 9, 10, 3, 7, 13, 12, 11, 5}));
  const auto& poly = m.cells[4];
  ASSERT_TRUE(poly.ragged());
  EXPECT_EQ(ints(poly.offsets), (I{0, 6, 13}));
  const auto fo = ints(poly.face_offsets);
  const auto conn = ints(poly.connectivity);
  ASSERT_EQ(fo.size(), 14u);
  // Each cell's faces turned out of it: its volume (divergence theorem) is positive, every
  // directed edge meets its reverse.
  const double* p = m.points.as<double>();
  for (std::size_t c = 0; c < 2; ++c) {
    double v = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> edges;
    for (auto f = poly.offsets.as<std::int64_t>()[c]; f < poly.offsets.as<std::int64_t>()[c + 1];
         ++f) {
      const auto b = fo[static_cast<std::size_t>(f)], e = fo[static_cast<std::size_t>(f) + 1];
      for (auto k = b; k < e; ++k)
        edges.push_back({conn[static_cast<std::size_t>(k)],
                         conn[static_cast<std::size_t>(k + 1 < e ? k + 1 : b)]});
      const double* a = p + 3 * conn[static_cast<std::size_t>(b)];
      for (auto k = b + 1; k + 1 < e; ++k) {
        const double* q = p + 3 * conn[static_cast<std::size_t>(k)];
        const double* r = p + 3 * conn[static_cast<std::size_t>(k) + 1];
        v += (a[0] * (q[1] * r[2] - q[2] * r[1]) - a[1] * (q[0] * r[2] - q[2] * r[0]) +
              a[2] * (q[0] * r[1] - q[1] * r[0])) /
             6;
      }
    }
    EXPECT_NEAR(v, c == 0 ? 1.0 : 1.25, 1e-12) << c;
    for (const auto& [u, w] : edges)
      EXPECT_EQ(std::count(edges.begin(), edges.end(), std::pair{w, u}), 1) << c;
  }
  ASSERT_EQ(m.regions.size(), 5u);
  EXPECT_EQ(m.regions[3].name, "pentagons");
  EXPECT_EQ(m.regions[4].name, "hybrid");
  // Mixed zones carry polygons too: a block a node count, in the order first seen.
  const auto mixed = read_bytes(
      "(10 (1 1 5 1 3)(0 0 0 1 0 0 1 1 0 0 1 0 0.5 1.5 0))\n"
      "(13 (3 1 3 3 0)(3 1 2 3 1 0\n5 1 2 3 5 4 1 0\n3 2 3 4 1 0))\n");
  EXPECT_EQ(cell_types(mixed), (S{"triangle", "polygon"}));
  EXPECT_EQ(ints(mixed.cells[0].connectivity), (I{0, 1, 2, 1, 2, 3}));
  EXPECT_EQ(ints(mixed.cells[1].connectivity), (I{0, 1, 2, 4, 3}));
  EXPECT_EQ(error_of("(10 (1 1 3 1 3)(0 0 0 1 0 0 0 1 0))\n(13 (3 1 1 3 0)(1 1 1 0))\n"),
            "t.msh:2: section (13 opened at line 2): a face of 1 nodes (2 to 2^20; a mixed or "
            "polygonal zone's row is \"x n0 .. c0 c1\")");
}

TEST(AnsysReader, ZonesTheFacesCannotBuildAreNoted) {
  // Two tetrahedra's worth of faces around nodes 1..5 (the two share the face 1 2 3), each
  // face's right-hand normal into its c0, as Fluent writes them.
  const std::string head = "(10 (1 1 5 1 3)(0 0 0 1 0 0 0 1 0 0 0 1 0 0 -1))\n";
  const std::string faces =
      "(13 (3 1 7 3 3)(1 2 3 1 2\n1 4 2 1 0\n2 4 3 1 0\n1 3 4 1 0\n"
      "1 2 5 2 0\n2 3 5 2 0\n1 5 3 2 0))\n";
  // Built: the two tetrahedra.
  auto m = read_bytes(head + "(12 (2 1 2 1 2))\n" + faces);
  EXPECT_EQ(cell_types(m), (S{"triangle", "tetra"}));
  // Zones claiming more cells than 7 faces can bound (8 sides name a cell: 2 at most), ids from 0,
  // overlapping ids: noted, not built, the read goes on.
  m = read_bytes(head + "(12 (2 1 5 1 2))\n" + faces);
  EXPECT_EQ(cell_types(m), S{"triangle"});
  EXPECT_TRUE(has_note(m,
                       "cell zone 2 (line 2)'s cells are not built from the faces: it claims "
                       "5 cells, more than the 8 face sides naming a cell can bound"));
  m = read_bytes(head + "(12 (2 0 1 1 2))\n" + faces);
  EXPECT_TRUE(has_note(m, "its ids 0..1 are no cells"));
  m = read_bytes(head + "(12 (2 1 2 1 2))\n(12 (4 2 2 1 2))\n" + faces);
  EXPECT_EQ(cell_types(m), (S{"triangle", "tetra"}));
  EXPECT_TRUE(has_note(m,
                       "cell zone 4 (line 3)'s cells are not built from the faces: its ids "
                       "overlap cell zone 2 (line 2)'s"));
  // A wedge zone whose faces are a tetrahedron's.
  m = read_bytes(head + "(12 (2 1 2 1 6))\n" + faces);
  EXPECT_TRUE(has_note(m, "cell 1 (a wedge) has 4 faces, not 5"));
  // A mixed zone's types: tetra, then a polyhedron (7: the second tetrahedron as one).
  m = read_bytes(head + "(12 (2 1 2 1 0)(2 7))\n" + faces);
  EXPECT_EQ(cell_types(m), (S{"triangle", "tetra", "polyhedron"}));
  EXPECT_EQ(m.cells[1].size(), 1);
  EXPECT_EQ(m.cells[2].size(), 1);
  // Polyhedra: at least 4 faces, closed.
  m = read_bytes(head + "(12 (2 1 2 1 7))\n" + faces);
  EXPECT_EQ(cell_types(m), (S{"triangle", "polyhedron"}));
  m = read_bytes(head + "(12 (2 1 2 1 7))\n" +
                 "(13 (3 1 6 3 3)(1 2 3 1 2\n1 4 2 1 0\n2 4 3 1 0\n1 3 4 1 0\n"
                 "1 2 5 2 0\n2 3 5 2 0))\n");
  EXPECT_TRUE(has_note(m, "cell 2 (a polyhedron) has 3 faces, not 4 at least"));
  m = read_bytes(head + "(12 (2 1 1 1 7))\n" +
                 "(13 (3 1 4 3 3)(1 2 3 1 0\n1 2 4 1 0\n2 3 4 1 0\n1 3 5 1 0))\n");
  EXPECT_TRUE(has_note(m, "cell 1 (a polyhedron) has faces that do not close"));
  // Dead and inactive zones are noted, never built.
  for (const char* z : {"(12 (2 1 2 0 2))", "(12 (2 1 2 20 2))"}) {
    m = read_bytes(head + z + "\n" + faces);
    EXPECT_EQ(cell_types(m), S{"triangle"}) << z;
  }
  // A hostile file's zones: a hundred thousand overlapping ones read in linear time (one pass
  // for their line numbers), 16 of them named in notes, the rest counted.
  std::string many = head + "(12 (2 1 2 1 2))\n";
  for (int i = 0; i < 100000; ++i) many += "(12 (4 1 1 1 2))\n";
  m = read_bytes(many + faces);
  EXPECT_EQ(cell_types(m), (S{"triangle", "tetra"}));
  EXPECT_TRUE(has_note(m, "cell zone 4 (line 17)'s cells are not built"));
  EXPECT_TRUE(has_note(m, "(line 18)"));
  EXPECT_FALSE(has_note(m, "(line 19)"));
  EXPECT_TRUE(has_note(m, "99984 more cell zones are not built from the faces"));
  EXPECT_EQ(error_of(head + "(12 (2 1 2 1 0)(2 9))\n" + faces),
            "t.msh:2: section (12 opened at line 2): cell 2 of the mixed zone has element type "
            "9, not 1..7");
}

TEST(AnsysReader, TwoDimensionalCrlfLineFaces) {
  const auto m = mesh::read_mesh(data("fluent-2d.crlf.msh"));
  ASSERT_EQ(m.points.dim(1), 2);
  EXPECT_EQ(doubles(m.points), (D{0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 2, 1}));
  EXPECT_EQ(cell_types(m), (S{"line", "line", "quad"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{1, 4}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{0, 1, 1, 2, 2, 5, 5, 4, 4, 3, 3, 0}));
}

TEST(AnsysReader, FluentBinaryLayoutAndBinaryMixedZone) {
  // meshio cannot read this layout (bytes right after '('), nor binary mixed zones.
  const auto m = mesh::read_mesh(data("fluent-bin.msh"));
  EXPECT_EQ(doubles(m.points), (D{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(cell_types(m), (S{"triangle", "triangle", "quad", "line"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 2, 0, 2, 3}));
  EXPECT_EQ(ints(m.cells[1].connectivity), (I{0, 1, 3, 1, 4, 3}));
  EXPECT_EQ(ints(m.cells[2].connectivity), (I{1, 2, 3, 4}));
  EXPECT_EQ(ints(m.cells[3].connectivity), (I{2, 0}));
}

TEST(AnsysReader, MeshioAsciiAndBinaryReadTheSame) {
  for (const char* stem : {"meshio-tets", "meshio-mixed", "meshio-2d"}) {
    const auto a = mesh::read_mesh(data(std::string(stem) + ".ascii.msh"));
    const auto b = mesh::read_mesh(data(std::string(stem) + ".msh"));
    EXPECT_EQ(doubles(a.points), doubles(b.points)) << stem;
    ASSERT_EQ(cell_types(a), cell_types(b)) << stem;
    for (std::size_t k = 0; k < a.cells.size(); ++k)
      EXPECT_EQ(ints(a.cells[k].connectivity), ints(b.cells[k].connectivity)) << stem;
    EXPECT_TRUE(a.notes.empty()) << stem;
  }
  const auto m = mesh::read_mesh(data("meshio-int32.msh"));
  EXPECT_EQ(cell_types(m),
            (S{"triangle", "tetra", "quad", "hexahedron", "pyramid", "wedge", "tetra"}));
  EXPECT_EQ(ints(m.cells[5].connectivity), (I{1, 10, 2, 5, 12, 6}));
}

TEST(AnsysReader, Float32NodesNoNdAndFormatNames) {
  const auto m = mesh::read_mesh(data("float32.msh"));
  EXPECT_EQ(doubles(m.points), (D{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1.5}));
  EXPECT_TRUE(has_note(m, "single-precision (2010)"));
  const auto n = mesh::read_mesh(data("no-nd.msh"), "ansys");
  EXPECT_EQ(n.points.dim(1), 3);
  EXPECT_EQ(ints(n.cells[0].connectivity), (I{0, 1, 2}));
  EXPECT_EQ(mesh::read_mesh(data("no-nd.msh"), "fluent").points.dim(0), 3);
}

TEST(AnsysReader, ErrorsNameTheFileLineAndSection) {
  EXPECT_EQ(path_error(data("bad-node.msh")),
            data("bad-node.msh") +
                ":6: section (13 opened at line 6): node id 32 (row 1) is not one of the nodes' "
                "ids 1..3");
  EXPECT_EQ(path_error(data("bad-hex.msh")),
            data("bad-hex.msh") +
                ":5: section (13 opened at line 4): expected a node id (hexadecimal), found 'g'");
  const auto lying = path_error(data("lying.msh"));
  EXPECT_NE(lying.find(":1: section (10 opened at line 1): 1152921504606846975 nodes"),
            std::string::npos)
      << lying;
  EXPECT_NE(lying.find("do not fit in the"), std::string::npos) << lying;
  EXPECT_EQ(
      path_error(data("reversed.msh")),
      data("reversed.msh") + ":1: section (10 opened at line 1): first id 5 is after last id 2");
  const auto trunc = path_error(data("truncated.bin.msh"));
  EXPECT_NE(trunc.find("section (3012"), std::string::npos) << trunc;
  EXPECT_EQ(error_of("(10 (1 1 2 1 3)(\n0 0 0\n1 1 1\n2 2 2\n))\n"),
            "t.msh:4: section (10 opened at line 1): expected ')' closing the body after the "
            "values its header counts, found '2'");
  EXPECT_EQ(error_of("(10 (1 1 1 1 3)(\n0 0 0\n))\n(13 (1 1 1 3 3)(\n1 1 1 0 0\n"),
            "t.msh:6: section (13 opened at line 4): expected ')' closing the body after the "
            "values its header counts, found end of file");
  EXPECT_EQ(error_of("(10 (1 1 1 1 3)(\n0 0 x\n))\n"),
            "t.msh:2: section (10 opened at line 1): expected a coordinate (a real number), "
            "found 'x'");
  EXPECT_EQ(error_of("hello"), "t.msh:1: expected '(' starting a section, found 'hello'");
  EXPECT_EQ(error_of("(0 \"x\")\n"),
            "t.msh: no node section with coordinates ((10), (2010) or (3010) with a body): not "
            "an ANSYS Fluent mesh, or one without nodes");
  EXPECT_EQ(error_of("(10 (1 1 1 1 3)(\n0 0 0\n))\n(13 (1 1 1 3 6)(\n"),
            "t.msh:4: section (13 opened at line 4): face type 6 is not 0 (mixed), 2 (line), 3 "
            "(triangle), 4 (quad) or 5 (polygonal)");
  EXPECT_EQ(error_of("(10 (1 1 1 1 3)(\n0 0 0\n))\n(10 (1 3 3 1 3)(\n0 0 0\n))\n"),
            "t.msh:4: section (10 opened at line 4): the first node id 3 does not follow the "
            "previous node section's last, 1 (node sections must be consecutive, as meshio "
            "reads them)");
  EXPECT_EQ(error_of("(0 \"never closed\"\n"),
            "t.msh:2: section (0 opened at line 1): the section is not closed (a ')' is missing)");
}

TEST(AnsysReader, HexInEitherCaseBomAndSectionsOnOneLine) {
  const auto m = read_bytes(
      "\xEF\xBB\xBF(2 2)(10 (1 A f 1 2)(1 2 3 4 5 6 7 8 9 10 11 12))\r\n"
      "(13 (2 1 2 3 2)(A b 0 0\r\nF e 1 0))(0 \"done\")");
  EXPECT_EQ(m.points.dim(0), 6);
  EXPECT_EQ(cell_types(m), (S{"line"}));
  EXPECT_EQ(ints(m.cells[0].connectivity), (I{0, 1, 5, 4}));
}

TEST(AnsysReader, MshNeitherGmshNorFluentNamesBoth) {
  meshdock::test::TempDir tmp("ansys-neither");
  const auto p = tmp.file("x.msh");
  {
    FILE* f = fopen(p.c_str(), "w");
    fputs("hello world\n", f);
    fclose(f);
  }
  const auto e = path_error(p);  // Gmsh's error, and Fluent ruled out
  EXPECT_EQ(e.rfind(p + ":1: expected a section header", 0), 0u) << e;
  EXPECT_NE(e.find("found 'hello world'"), std::string::npos) << e;
  EXPECT_NE(e.find(" (nor is it an ANSYS Fluent mesh, whose first section starts with '(')"),
            std::string::npos)
      << e;
}

// A million skipped sections, or sections of a million kinds, must not cost a line scan each:
// a kind keeps its first 8 summaries (each names its line), the 17th kind and on are "(other)".
TEST(AnsysReader, SkippedSectionsAreSummarisedWithinBounds) {
  std::string text = "(10 (1 1 1 1 3)(\n0 0 0\n))\n";
  for (int i = 0; i < 40; ++i)
    text += "(39 (" + std::to_string(i) + " wall w" + std::to_string(i) + ")())\n";
  for (int i = 0; i < 40; ++i) text += "(" + std::to_string(100 + i) + " x)\n";
  const auto m = read_bytes(text);
  ASSERT_EQ(m.notes.size(), 17u);  // (39), 15 kinds, (other)
  EXPECT_TRUE(
      has_note(m,
               "(39) zone sections: only their names are kept, as the zones' regions (meshio skips "
               "them): line 4 (0 wall w0); line 5"));
  EXPECT_TRUE(has_note(m, "line 11 (7 wall w7); ..."));
  EXPECT_FALSE(has_note(m, "w8)"));
  EXPECT_TRUE(has_note(m, "(114) sections are skipped (as meshio skips them): line 58"));
  EXPECT_TRUE(has_note(m, "(other) sections are skipped (as meshio skips them): line 59; line 60"));
  EXPECT_FALSE(has_note(m, "(115)"));
}

TEST(AnsysWriter, RoundTripInBothEncodings) {
  meshdock::test::TempDir tmp("ansys-writer");
  for (const char* name : {"meshio-mixed.msh", "meshio-2d.msh", "meshio-tets.ascii.msh"}) {
    const auto src = mesh::read_mesh(data(name));
    for (const char* fmt : {"ansys", "ansys-ascii", "ansys-binary"}) {
      mesh::WriteOptions o;
      o.format = fmt;
      const auto out = tmp.file(std::string("o-") + fmt + ".msh");
      EXPECT_TRUE(mesh::write_mesh(src, out, o).empty()) << name << fmt;
      const auto back = mesh::read_mesh(out);
      EXPECT_TRUE(back.notes.empty()) << name << fmt;
      EXPECT_EQ(doubles(back.points), doubles(src.points)) << name << fmt;
      ASSERT_EQ(cell_types(back), cell_types(src)) << name << fmt;
      for (std::size_t b = 0; b < src.cells.size(); ++b)
        EXPECT_EQ(ints(back.cells[b].connectivity), ints(src.cells[b].connectivity))
            << name << fmt << b;
    }
  }
}

TEST(AnsysWriter, FluentLayoutFacesWithTheirCells) {
  // Two tetrahedra sharing the face 0 1 2, a triangle block naming one boundary face, a vertex.
  meshdock::test::TempDir tmp("fluent-writer");
  mesh::Mesh m;
  m.points = mesh::Array::from_vector(
      std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1}, {5, 3});
  m.cells.push_back(mesh::CellBlock::fixed(
      "tetra",
      mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 2, 3, 0, 2, 1, 4}, {2, 4})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "triangle", mesh::Array::from_vector(std::vector<std::int64_t>{0, 1, 3}, {1, 3})));
  m.cells.push_back(mesh::CellBlock::fixed(
      "vertex", mesh::Array::from_vector(std::vector<std::int64_t>{4}, {1, 1})));
  mesh::WriteOptions o;
  o.format = "fluent-ascii";
  const auto out = tmp.file("o.msh");
  EXPECT_EQ(mesh::write_mesh(m, out, o),
            S{out + ": cells[2] (vertex) is not written (Fluent's layout holds the volume cells "
                    "and their faces)"});
  // Each face once, its right-hand normal into c0 (the interior face 2 3 1 faces cell 1, above
  // it), the triangle block's face a zone of its own, the rest of the boundary a wall.
  EXPECT_EQ(meshdock::test::slurp(out),
            "(1 \"meshdock\")\n(2 3)\n(10 (0 1 5 0 3))\n(12 (0 1 2 0))\n(13 (0 1 7 0))\n"
            "(10 (1 1 5 1 3)(\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n0 0 -1\n))\n"
            "(12 (2 1 2 1 2))\n"
            "(13 (3 1 1 2 3)(\n2 3 1 1 2\n))\n"
            "(13 (4 2 2 3 3)(\n4 2 1 1 0\n))\n"
            "(13 (5 3 7 3 3)(\n4 3 2 1 0\n3 4 1 1 0\n5 3 1 2 0\n5 2 3 2 0\n2 5 1 2 0\n))\n"
            "(45 (2 fluid fluid-0)())\n(45 (3 interior interior)())\n"
            "(45 (4 wall boundary-1)())\n(45 (5 wall wall)())\n");
  // Read back (ascii and binary): the two tetrahedra, rebuilt from the faces as they were.
  for (const char* fmt : {"fluent-ascii", "fluent"}) {
    o.format = fmt;
    mesh::write_mesh(m, out, o);
    const auto back = mesh::read_mesh(out);
    EXPECT_EQ(cell_types(back), (S{"triangle", "triangle", "triangle", "tetra"})) << fmt;
    EXPECT_EQ(ints(back.cells[3].connectivity), (I{1, 2, 0, 3, 1, 0, 2, 4}))
        << fmt;  // 0 1 2 3 and 0 2 1 4, turned
  }
  // Cell regions name the zones (a Gmsh mesh's physical groups), and a zone is a run of ids:
  // with a third tetrahedron on the first's face 1 2 3 and a region of the first and third,
  // those two are numbered first (zone "A"), the second after them (its block's zone).
  auto named = m;
  named.points = mesh::Array::from_vector(
      std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1, 1, 1, 1}, {6, 3});
  named.cells[0] = mesh::CellBlock::fixed(
      "tetra", mesh::Array::from_vector(
                   std::vector<std::int64_t>{0, 1, 2, 3, 0, 2, 1, 4, 1, 2, 3, 5}, {3, 4}));
  auto region = [](const char* name, std::vector<std::int64_t> cells) {
    mesh::Region r;
    r.name = name;
    r.entries = mesh::Array::from_vector(cells, {static_cast<std::int64_t>(cells.size())});
    return r;
  };
  named.regions = {region("A", {0, 2}), region("inlet", {3})};
  o.format = "fluent-ascii";
  EXPECT_EQ(mesh::write_mesh(named, out, o).size(), 1u);  // the vertex
  const auto text = meshdock::test::slurp(out);
  EXPECT_NE(text.find("(12 (2 1 2 1 2))\n(12 (3 3 3 1 2))\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(45 (2 fluid A)())\n(45 (3 fluid fluid-0)())\n(45 (4 interior "
                      "interior)())\n(45 (5 wall inlet)())\n(45 (6 wall wall)())\n"),
            std::string::npos)
      << text;
  const auto back = mesh::read_mesh(out);
  ASSERT_EQ(back.regions.size(), 5u);
  EXPECT_EQ(back.regions[3].name, "A");
  EXPECT_EQ(back.regions[3].entries.size(), 2u);
  EXPECT_EQ(back.regions[2].name, "wall");
  // Read back a block a zone: A's two tetrahedra, then the other.
  ASSERT_EQ(cell_types(back).back(), "tetra");
  auto tets = ints(back.cells[back.cells.size() - 2].connectivity);
  const auto other = ints(back.cells.back().connectivity);
  tets.insert(tets.end(), other.begin(), other.end());
  ASSERT_EQ(tets.size(), 12u);
  auto sorted_cell = [&](std::size_t c) {
    std::vector<std::int64_t> v(tets.begin() + 4 * static_cast<std::ptrdiff_t>(c),
                                tets.begin() + 4 * static_cast<std::ptrdiff_t>(c) + 4);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(sorted_cell(0), (I{0, 1, 2, 3}));
  EXPECT_EQ(sorted_cell(1), (I{1, 2, 3, 5}));
  EXPECT_EQ(sorted_cell(2), (I{0, 1, 2, 4}));
  // A face of three cells; no volume cells; a volume block Fluent has no type for.
  auto error = [&](const mesh::Mesh& bad) {
    try {
      mesh::write_mesh(bad, out, o);
    } catch (const mesh::WriteError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto three = m;
  three.cells[0] = mesh::CellBlock::fixed(
      "tetra", mesh::Array::from_vector(
                   std::vector<std::int64_t>{0, 1, 2, 3, 0, 2, 1, 4, 1, 0, 2, 4}, {3, 4}));
  EXPECT_EQ(error(three), out +
                              ": cells 1, 2 and 3 share a face: a Fluent face bounds two cells "
                              "at most");
  auto flat = m;
  flat.cells.erase(flat.cells.begin());
  EXPECT_EQ(error(flat), out +
                             ": no cells of the points' dimension (3-D: tetra, pyramid, wedge, "
                             "hexahedron): Fluent's layout is the faces of volume cells");
  auto higher = mesh::read_mesh(std::string(MESHDOCK_TEST_DATA) + "/meshes/box2nd.v22.msh");
  EXPECT_EQ(error(higher), out +
                               ": cells[1] (tetra10) cannot be written: Fluent's faces are made "
                               "of tetra, pyramid, wedge and hexahedron cells with 3-D points");
}

TEST(AnsysWriter, OtherBlocksAreErrorsDataNoted) {
  meshdock::test::TempDir tmp("ansys-writer-errors");
  auto m = mesh::read_mesh(data("fluent-2d.crlf.msh"));  // line blocks (faces)
  mesh::WriteOptions o;
  o.format = "ansys";
  const auto out = tmp.file("o.msh");
  try {
    mesh::write_mesh(m, out, o);
    ADD_FAILURE() << "no error";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()),
              out +
                  ": cells[0] (line) cannot be written: ANSYS Fluent (as meshio writes it) "
                  "holds triangle, tetra, quad, hexahedron, pyramid and wedge cells only");
  }
  auto t = mesh::read_mesh(data("meshio-mixed.msh"));
  t.point_data["p"] = mesh::Array::from_vector(std::vector<double>(15, 1.0), {15});
  const auto notes = mesh::write_mesh(t, out, o);
  EXPECT_EQ(notes, (S{"point_data 'p' is not written: ANSYS Fluent holds no point data"}));
  o.encoding = "zlib";
  try {
    mesh::write_mesh(t, out, o);
    ADD_FAILURE() << "no error";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()), out + ": ANSYS encoding 'zlib' is not one of ascii, binary");
  }
}
