// The DOLFIN XML reader: the files of tests/data/dolfin (written by legacy DOLFIN 2019 and by
// meshio; tools/make_dolfin.py), whose every marker is a function of the geometry, so each is
// checked here from the points: <domains> as cell data and side / cell / point regions, the
// mesh functions beside a mesh in both forms, and broken texts (errors name the file, the line
// and the attribute). The comparisons with meshio are in tests/python/test_dolfin.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/support/reader_text.hpp"
#include "tests/support/temp_dir.hpp"

namespace mesh = meshdock::mesh;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/dolfin/" + name;
}

using meshdock::test::doubles;
using meshdock::test::gzipped;
using meshdock::test::has_note;
using meshdock::test::ints;

std::string error_of(const std::string& text) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_dolfin(f); },
                                    text, "t.xml");
}

const mesh::Region* region(const mesh::Mesh& m, const std::string& name) {
  for (const auto& r : m.regions)
    if (r.name == name) return &r;
  return nullptr;
}

// Coordinate `axis` of point p (0 for an axis the points do not have).
double coord(const mesh::Mesh& m, std::int64_t p, int axis) {
  const auto w = m.points.dim(1);
  return axis < w ? m.points.as<double>()[p * w + axis] : 0.0;
}

// Cell c's point ids.
std::vector<std::int64_t> cell(const mesh::Mesh& m, std::int64_t c) {
  const auto k = m.cells[0].connectivity.dim(1);
  const auto* p = m.cells[0].connectivity.as<std::int64_t>() + c * k;
  return {p, p + k};
}

double centroid(const mesh::Mesh& m, std::int64_t c, int axis) {
  double s = 0;
  const auto v = cell(m, c);
  for (auto p : v) s += coord(m, p, axis);
  return s / static_cast<double>(v.size());
}

// The facet of cell c opposite its local vertex k: all on the plane coordinate `axis` = x?
bool facet_on(const mesh::Mesh& m, std::int64_t c, std::int64_t k, int axis, double x) {
  const auto v = cell(m, c);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (static_cast<std::int64_t>(i) != k && coord(m, v[i], axis) != x) return false;
  return true;
}

TEST(DolfinReader, CubeDomainsAndItsMeshFunctions) {
  const auto m = mesh::read_mesh(data("cube.xml"));
  mesh::validate_mesh(m, "cube.xml");
  ASSERT_EQ(m.points.shape(), (std::vector<std::int64_t>{27, 3}));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  ASSERT_EQ(m.cells[0].connectivity.dim(0), 48);
  EXPECT_EQ(coord(m, 26, 0), 1.0);  // UnitCubeMesh's last vertex (1, 1, 1)
  EXPECT_EQ(coord(m, 26, 2), 1.0);
  // Cell markers: every cell once -> cell data; the mesh function too (the same values).
  for (const char* name : {"dolfin:domains", "subdomains"}) {
    ASSERT_EQ(m.cell_data.count(name), 1u) << name;
    const auto v = ints(m.cell_data.at(name)[0]);
    ASSERT_EQ(v.size(), 48u);
    for (std::int64_t c = 0; c < 48; ++c)
      EXPECT_EQ(v[c], centroid(m, c, 0) < 0.5 ? 1 : 2) << name << " cell " << c;
  }
  EXPECT_EQ(m.cell_data.at("dolfin:domains")[0].dtype(), (mesh::DType{1, 64, 1}));  // uint
  // Facet markers in <domains>: side regions, every side on its plane (x = 0: 7, x = 1: 9),
  // the 8 triangles of each face.
  for (auto [name, x] : {std::pair{"dolfin:facets:7", 0.0}, std::pair{"dolfin:facets:9", 1.0}}) {
    const auto* r = region(m, name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->kind, mesh::RegionKind::kSide);
    EXPECT_EQ(r->dim, 2);
    EXPECT_EQ(r->tag, x == 0.0 ? 7 : 9);
    ASSERT_EQ(r->entries.shape(), (std::vector<std::int64_t>{8, 2}));
    const auto e = ints(r->entries);
    for (std::size_t i = 0; i < e.size(); i += 2)
      EXPECT_TRUE(facet_on(m, e[i], e[i + 1], 0, x)) << name << " side " << e[i] << "," << e[i + 1];
  }
  // The facet function (DOLFIN 2017+'s form): every side of every cell, by value.
  const auto* zero = region(m, "boundaries:0");
  const auto* seven = region(m, "boundaries:7");
  const auto* nine = region(m, "boundaries:9");
  ASSERT_TRUE(zero && seven && nine);
  EXPECT_EQ(zero->entries.dim(0) + seven->entries.dim(0) + nine->entries.dim(0), 48 * 4);
  const auto z = ints(zero->entries);
  for (std::size_t i = 0; i < z.size(); i += 2)
    EXPECT_FALSE(facet_on(m, z[i], z[i + 1], 0, 0.0) || facet_on(m, z[i], z[i + 1], 0, 1.0));
  // The boundary sides of x = 1 have one cell each: the same sides as <domains> names.
  const auto sides = [](const mesh::Region& r) {
    const auto e = ints(r.entries);
    std::set<std::pair<std::int64_t, std::int64_t>> s;
    for (std::size_t i = 0; i < e.size(); i += 2) s.emplace(e[i], e[i + 1]);
    return s;
  };
  EXPECT_EQ(sides(*nine), sides(*region(m, "dolfin:facets:9")));
  // The vertex function: x + 2y + 3z at every point (each cell lists its vertices: no conflict).
  ASSERT_EQ(m.point_data.count("temperature"), 1u);
  const auto t = doubles(m.point_data.at("temperature"));
  ASSERT_EQ(t.size(), 27u);
  for (std::int64_t p = 0; p < 27; ++p)
    EXPECT_DOUBLE_EQ(t[p], coord(m, p, 0) + 2 * coord(m, p, 1) + 3 * coord(m, p, 2)) << p;
  EXPECT_FALSE(has_note(m, "already had another"));
  // The edge function is noted; the second mesh named like a mesh function too.
  EXPECT_TRUE(has_note(m, "cube_edges.xml:4: values of the 288 entities of dimension 1 ('edges')"));
  EXPECT_TRUE(has_note(m, "cube_coarse.xml: a DOLFIN mesh, not a mesh function"));
  EXPECT_FALSE(has_note(m, "<data>"));  // DOLFIN writes an empty <data />: skipped, noted
}

TEST(DolfinReader, SquareWithSomeEntitiesMarked) {
  const auto m = mesh::read_mesh(data("square.xml"));
  mesh::validate_mesh(m, "square.xml");
  ASSERT_EQ(m.points.shape(), (std::vector<std::int64_t>{9, 2}));  // dim="2": (n, 2)
  EXPECT_EQ(m.cells[0].type, "triangle");
  ASSERT_EQ(m.cells[0].connectivity.dim(0), 8);
  EXPECT_TRUE(m.cell_data.empty());  // the cell markers cover half the cells: regions
  const auto* cells = region(m, "dolfin:domains:3");
  ASSERT_NE(cells, nullptr);
  EXPECT_EQ(cells->kind, mesh::RegionKind::kCell);
  std::vector<std::int64_t> upper;
  for (std::int64_t c = 0; c < 8; ++c)
    if (centroid(m, c, 1) > 0.5) upper.push_back(c);
  EXPECT_EQ(ints(cells->entries), upper);
  const auto* sides = region(m, "dolfin:facets:4");
  ASSERT_NE(sides, nullptr);
  EXPECT_EQ(sides->dim, 1);
  ASSERT_EQ(sides->entries.dim(0), 2);
  const auto s = ints(sides->entries);
  for (std::size_t i = 0; i < s.size(); i += 2) EXPECT_TRUE(facet_on(m, s[i], s[i + 1], 1, 0.0));
  const auto* points = region(m, "dolfin:vertices:5");
  ASSERT_NE(points, nullptr);
  EXPECT_EQ(points->kind, mesh::RegionKind::kPoint);
  std::vector<std::int64_t> left;
  for (std::int64_t p = 0; p < 9; ++p)
    if (coord(m, p, 0) == 0.0) left.push_back(p);
  EXPECT_EQ(ints(points->entries), left);
  EXPECT_TRUE(m.point_data.empty());
}

TEST(DolfinReader, IntervalEndsAsPointRegions) {
  const auto m = mesh::read_mesh(data("interval.xml"));
  mesh::validate_mesh(m, "interval.xml");
  ASSERT_EQ(m.points.shape(), (std::vector<std::int64_t>{5, 1}));
  EXPECT_EQ(m.cells[0].type, "line");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 1, 2, 2, 3, 3, 4}));
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  ASSERT_NE(region(m, "dolfin:vertices:1"), nullptr);
  EXPECT_EQ(ints(region(m, "dolfin:vertices:1")->entries), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(ints(region(m, "dolfin:vertices:2")->entries), (std::vector<std::int64_t>{4}));
}

TEST(DolfinReader, MeshioFilesAndTheirCellData) {
  const auto m = mesh::read_mesh(data("meshio-tet.xml"));
  mesh::validate_mesh(m, "meshio-tet.xml");
  ASSERT_EQ(m.cells[0].connectivity.dim(0), 935);
  const auto& material = m.cell_data.at("material")[0];
  EXPECT_EQ(material.dtype(), mesh::kInt64);
  const auto v = ints(material);
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], 1 + static_cast<std::int64_t>(i % 3));
  const auto t = mesh::read_mesh(data("meshio-tri.xml"));
  EXPECT_EQ(doubles(t.cell_data.at("heat")[0]), (std::vector<double>{0.25, 1.5, -2.0, 1e-3}));
  EXPECT_EQ(t.points.dim(1), 2);
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// DOLFIN reads x.xml.gz (FEniCS' demo meshes come so), and its mesh functions x_<name>.xml.gz:
// the same mesh as the plain files; a gzip bomb stops at max_bytes.
TEST(DolfinReader, GzippedMeshAndMeshFunctions) {
  const meshdock::test::TempDir dir("dolfin-gz");
  dir.write("cube.xml.gz", gzipped(file_text(data("cube.xml"))));
  dir.write("cube_subdomains.xml.gz", gzipped(file_text(data("cube_subdomains.xml"))));
  dir.write("cube_temperature.xml", file_text(data("cube_temperature.xml")));
  const auto gz = mesh::read_mesh(dir.file("cube.xml.gz"));
  const auto plain = mesh::read_mesh(data("cube.xml"));
  EXPECT_EQ(doubles(gz.points), doubles(plain.points));
  EXPECT_EQ(ints(gz.cells[0].connectivity), ints(plain.cells[0].connectivity));
  EXPECT_EQ(ints(gz.cell_data.at("subdomains")[0]), ints(plain.cell_data.at("subdomains")[0]));
  EXPECT_EQ(doubles(gz.point_data.at("temperature")), doubles(plain.point_data.at("temperature")));
  EXPECT_EQ(gz.cell_data.count("dolfin:domains"), 1u);
  mesh::ReadOptions small;
  small.max_bytes = 4096;
  const auto bomb = gzipped(std::string(1 << 20, ' '));
  EXPECT_EQ(
      meshdock::test::read_error([&](const mesh::InFile& f) { return mesh::read_dolfin(f, small); },
                                 bomb, "b.xml.gz"),
      "b.xml.gz: the gzipped DOLFIN XML file inflates to more than the 4096-byte limit "
      "(max_bytes; unset: half this machine's memory, at most 16 GiB); not read");
}

TEST(DolfinReader, AMeshFunctionReadAloneSaysWhichFileToRead) {
  EXPECT_NE(
      meshdock::test::path_error(data("cube_subdomains.xml"))
          .find("cube_subdomains.xml: a DOLFIN mesh function, not a mesh: read the mesh x.xml"),
      std::string::npos);
}

// The mesh functions beside a mesh: a broken one fails the read naming it; one for another
// mesh's stem or with a '.' in its name is not read (meshio's rule).
TEST(DolfinReader, SiblingFiles) {
  const meshdock::test::TempDir dir("dolfin");
  fs::copy_file(data("square.xml"), dir.file("sq.xml"));
  const auto write = [&](const std::string& name, const std::string& text) {
    dir.write(name, text);
  };
  write("sq_a.b.xml", "not xml");
  write("sqx_c.xml", "not xml");
  write("sq_mat.xml",
        "<dolfin><mesh_function type=\"int\" dim=\"2\" size=\"8\"><entity index=\"0\" value=\"4\"/>"
        "</mesh_function></dolfin>" +
            std::string(40, ' '));  // room for size="8" (16 bytes an entity at least)
  const auto e = meshdock::test::path_error(dir.file("sq.xml"));
  EXPECT_NE(e.find("sq_mat.xml:1: <entity index=\"1\"> is missing (1 of size=\"8\" given) (read "
                   "as the mesh function 'mat' of "),
            std::string::npos)
      << e;
  write("sq_mat.xml",
        "<dolfin><mesh_function><mesh_value_collection type=\"int\" dim=\"0\" size=\"1\">"
        "<value cell_index=\"8\" local_entity=\"0\" value=\"1\"/></mesh_value_collection>"
        "</mesh_function></dolfin>");
  EXPECT_NE(meshdock::test::path_error(dir.file("sq.xml"))
                .find("sq_mat.xml:1: value 0 cell_index=\"8\" is not a cell (0..7)"),
            std::string::npos);
  write("sq_mat.xml",
        "<dolfin><mesh_function><mesh_value_collection type=\"double\" dim=\"1\" size=\"1\">"
        "<value cell_index=\"0\" local_entity=\"2\" value=\"0.5\"/></mesh_value_collection>"
        "</mesh_function></dolfin>");
  const auto m = mesh::read_mesh(dir.file("sq.xml"));
  EXPECT_TRUE(has_note(m, "sq_mat.xml:1: double values of dimension 1 entities not read: 'mat'"));
  EXPECT_EQ(m.regions.size(), 3u);  // the <domains> ones only
}

TEST(DolfinReader, BrokenTextsAreNamed) {
  const std::string head =
      "<dolfin>\n<mesh celltype=\"triangle\" dim=\"2\">\n<vertices size=\"3\">\n"
      "<vertex index=\"0\" x=\"0\" y=\"0\"/>\n<vertex index=\"1\" x=\"1\" y=\"0\"/>\n"
      "<vertex index=\"2\" x=\"0\" y=\"1\"/>\n</vertices>\n<cells size=\"1\">\n";
  const std::string tail = "</cells>\n</mesh>\n</dolfin>\n";
  const std::string tri = "<triangle index=\"0\" v0=\"0\" v1=\"1\" v2=\"2\"/>\n";
  EXPECT_EQ(error_of(head + tri + tail), "no error");
  EXPECT_EQ(error_of(head + "<triangle index=\"0\" v0=\"0\" v1=\"1\" v2=\"3\"/>\n" + tail),
            "t.xml:9: <triangle index=\"0\"> v2=\"3\" is not a vertex (0..2)");
  EXPECT_EQ(error_of(head + "<triangle index=\"0\" v0=\"0\" v1=\"1\"/>\n" + tail),
            "t.xml:9: <triangle> has no v2 attribute");
  EXPECT_EQ(error_of(head + "<triangle index=\"0\" v0=\"0\" v1=\"x\" v2=\"2\"/>\n" + tail),
            "t.xml:9: <triangle> v1=\"x\" is not a whole number");
  EXPECT_EQ(error_of(head + tri + tri + tail), "t.xml:10: <triangle> index=\"0\" is given twice");
  EXPECT_EQ(
      error_of(head + "<tetrahedron index=\"0\" v0=\"0\" v1=\"1\" v2=\"2\" v3=\"0\"/>\n" + tail),
      "t.xml:9: <tetrahedron> in <cells> of a mesh of celltype \"triangle\"");
  EXPECT_EQ(error_of(head + tail),
            "t.xml:9: <triangle index=\"0\"> is missing (0 of size=\"1\" given)");
  EXPECT_EQ(error_of("<dolfin><mesh celltype=\"quadrilateral\" dim=\"2\"/></dolfin>"),
            "t.xml:1: <mesh> celltype=\"quadrilateral\" is not read (interval, triangle and "
            "tetrahedron are: the cells DOLFIN's XML holds)");
  EXPECT_EQ(error_of("<VTKFile/>"),
            "t.xml:1: not a DOLFIN XML file: its root element is "
            "<VTKFile>, not <dolfin>");
  EXPECT_EQ(error_of("<dolfin><mesh celltype=\"triangle\" dim=\"2\"><vertices size=\"99999\">"
                     "</vertices></mesh></dolfin>"),
            "t.xml:1: <vertices> size=\"99999\" is more than the file's 92 bytes can hold");
  EXPECT_EQ(error_of("<dolfin><mesh"), "t.xml:1: XML error: unclosed token");
  EXPECT_EQ(error_of("<dolfin/>"),
            "t.xml: a DOLFIN XML file holds a <mesh> or a <mesh_function> "
            "in its <dolfin> element; this one has neither");
  // <domains> of one collection (line 12) after the triangle: its dim, size and <value>s.
  const auto with_domains = [&](const char* dim, const char* size, const std::string& values) {
    return error_of(head + tri + "</cells>\n<domains>\n<mesh_value_collection name=\"m\" " +
                    "type=\"uint\" dim=\"" + dim + "\" size=\"" + size + "\">\n" + values +
                    "</mesh_value_collection>\n</domains>\n</mesh>\n</dolfin>\n");
  };
  // The local entity is checked against the cell's entities of that dimension.
  EXPECT_EQ(with_domains("1", "1", "<value cell_index=\"0\" local_entity=\"3\" value=\"4\"/>\n"),
            "t.xml:12: value 0 local_entity=\"3\" is not one of a triangle's 3 entities of "
            "dimension 1");
  EXPECT_EQ(with_domains("2", "2", "<value cell_index=\"0\" local_entity=\"0\" value=\"4\"/>\n"),
            "t.xml:14: <mesh_value_collection> of line 12 says size=\"2\" and holds 1 values");
  EXPECT_EQ(with_domains("2", "1", "<value cell_index=\"0\" local_entity=\"0\" value=\"-4\"/>\n"),
            "t.xml:13: <value> value=\"-4\" is not a uint");
}

TEST(DolfinReader, UnknownElementsAreNotedOnce) {
  const auto m = meshdock::test::read_text(
      [](const mesh::InFile& f) { return mesh::read_dolfin(f); },
      "<dolfin xmlns:dolfin=\"http://fenicsproject.org\"><dolfin:mesh celltype=\"interval\" "
      "dim=\"1\"><vertices size=\"2\"><vertex index=\"1\" x=\"2\"/><vertex index=\"0\" x=\"1\"/>"
      "</vertices><cells size=\"1\"><interval index=\"0\" v0=\"0\" v1=\"1\"/></cells><data>"
      "<data_entry name=\"a\"/><data_entry name=\"b\"/></data><coordinates/><coordinates/>"
      "</dolfin:mesh></dolfin>",
      "t.xml");
  EXPECT_EQ(doubles(m.points), (std::vector<double>{1, 2}));
  EXPECT_TRUE(has_note(m, "t.xml:1: <data> (DOLFIN's mesh data) is not read"));
  EXPECT_TRUE(has_note(m, "t.xml:1: <coordinates> is not read"));
  EXPECT_EQ(m.notes.size(), 2u);
}

}  // namespace
