// The TetGen reader and writer (TetgenWriter: written, read back exactly): pairs written here (the
// other file served through open_sibling from a memfd, or both in a temporary folder read by path),
// the files of tests/data/tetgen (tools/make_tetgen.py), and errors that name the file (.node or
// .ele) and the line. The comparisons with meshio are in tests/python/test_tetgen.py.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;

namespace {

using meshdock::test::doubles;
using meshdock::test::ints;

mesh::UniqueFd memfd_of(const std::string& text) {
  const int fd = memfd_create("tetgen-test", MFD_CLOEXEC);
  EXPECT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  return mesh::UniqueFd(fd);
}

// `main` read as `name` (t.node or t.ele); the other file, `other`, served as open_sibling's;
// `asked` gets the name it was asked for.
mesh::Mesh read_pair(const std::string& main, const std::string& other,
                     const std::string& name = "dir/t.node", std::string* asked = nullptr) {
  mesh::ReadOptions options;
  options.open_sibling = [&](const std::string& rel) {
    if (asked) *asked = rel;
    return memfd_of(other);
  };
  return meshdock::test::read_text(
      [&](const mesh::InFile& f) { return mesh::read_tetgen(f, options); }, main, name);
}

std::string error_of(const std::string& node, const std::string& ele,
                     const std::string& name = "t.node") {
  try {
    read_pair(name == "t.node" ? node : ele, name == "t.node" ? ele : node, name);
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "no error";
}

const char* kNode =
    "# two tets, 1-based\n"
    "5 3 1 1\n"
    "1 0 0 0 0.5 1\n"
    "2 1 0 0 1.5 0\n"
    "3 0 1 0 2.5 0  # a comment after the values\n"
    "\n"
    "4 0 0 1 3.5 2\n"
    "5 1 1 1 4.5 0\n";
const char* kEle =
    "2 4 1\n"
    "# first tet\n"
    "1 1 2 3 4 7\n"
    "2 2 3 4 5 8\n";

TEST(TetgenReader, PointsAttributesMarkersAndRegions) {
  std::string asked;
  const auto m = read_pair(kNode, kEle, "dir/t.node", &asked);
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(asked, "t.ele");  // the base name only: open_sibling resolves it beside the file
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3, 1, 2, 3, 4}));
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(doubles(m.point_data.at("tetgen:attr1")),
            (std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5}));
  // float64, as meshio's (its markers come out of the coordinates' array).
  EXPECT_EQ(m.point_data.at("tetgen:ref").dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(m.point_data.at("tetgen:ref")), (std::vector<double>{1, 0, 0, 2, 0}));
  EXPECT_EQ(m.cell_data.at("tetgen:ref")[0].dtype(), mesh::kInt64);
  EXPECT_EQ(ints(m.cell_data.at("tetgen:ref")[0]), (std::vector<std::int64_t>{7, 8}));
  EXPECT_TRUE(m.notes.empty());
}

TEST(TetgenReader, ReadFromTheEleFileToo) {
  std::string asked;
  const auto m = read_pair(kEle, kNode, "t.ele", &asked);
  EXPECT_EQ(asked, "t.node");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2, 3, 1, 2, 3, 4}));
}

TEST(TetgenReader, ZeroBasedShortHeadersAndCrlf) {
  // TetGen's defaults for a header that stops early: dimension 3, no attributes or markers; 4
  // nodes a tet.
  const auto m =
      read_pair("4\r\n0 0 0 0\r\n1 1 0 0\r\n2 0 1 0\r\n3 0 0 1\r\n", "1\r\n0 3 2 1 0\r\n");
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{3, 2, 1, 0}));
  EXPECT_TRUE(m.point_data.empty());
  EXPECT_TRUE(m.cell_data.empty());
}

TEST(TetgenReader, NonConsecutiveIndicesAreMapped) {
  // meshio refuses these; meshdock maps them as labels.
  const auto m =
      read_pair("4 3 0 0\n10 0 0 0\n30 1 0 0\n20 0 1 0\n-5 0 0 1\n", "1 4 0\n1 -5 20 30 10\n");
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{3, 2, 1, 0}));
}

TEST(TetgenReader, TenNodeTetsAndSeveralRegionAttributes) {
  std::string node = "10 3 0 2\n";
  for (int i = 0; i < 10; ++i)
    node += std::to_string(i) + " " + std::to_string(i) + " 0 0 1 " + std::to_string(i) + "\n";
  const auto m = read_pair(node, "1 10 2\n0 0 1 2 3 4 5 6 7 8 9 3 2.5\n");
  mesh::validate_mesh(m, "t");
  EXPECT_EQ(m.cells[0].type, "tetra10");
  // TetGen's mid-edge nodes (edges 34 14 12 23 24 13) in VTK's places (12 23 13 14 24 34).
  EXPECT_EQ(ints(m.cells[0].connectivity),
            (std::vector<std::int64_t>{0, 1, 2, 3, 6, 7, 9, 5, 8, 4}));
  EXPECT_EQ(doubles(m.point_data.at("tetgen:ref2"))[9], 9.0);
  EXPECT_EQ(ints(m.cell_data.at("tetgen:ref")[0]), (std::vector<std::int64_t>{3}));
  // Not a whole number: float64, noted.
  EXPECT_EQ(m.cell_data.at("tetgen:ref2")[0].dtype(), mesh::kFloat64);
  EXPECT_EQ(doubles(m.cell_data.at("tetgen:ref2")[0]), (std::vector<double>{2.5}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("'tetgen:ref2'"), std::string::npos) << m.notes[0];
}

TEST(TetgenReader, BothFilesInAFolderReadByPath) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("meshdock-tetgen-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "box.node") << kNode;
  std::ofstream(dir / "box.ele") << kEle;
  for (const char* name : {"box.node", "box.ele"}) {
    const auto m = mesh::read_mesh((dir / name).string());
    EXPECT_EQ(m.cells[0].connectivity.shape(), (std::vector<std::int64_t>{2, 4})) << name;
    EXPECT_EQ(m.point_data.size(), 2u);
  }
  const auto m = mesh::read_mesh((dir / "box.node").string(), "tetgen");
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{5, 3}));
  std::filesystem::remove(dir / "box.ele");
  try {
    mesh::read_mesh((dir / "box.node").string());
    ADD_FAILURE() << "no error";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("box.node: the TetGen mesh's tetrahedra are in box.ele"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(TetgenReader, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(error_of("4 2 0 0\n", kEle).rfind("t.node:1: dimension 2", 0), 0u)
      << error_of("4 2 0 0\n", kEle);
  EXPECT_NE(
      error_of("2 3 0 0\n1 0 0 0\n2 1 0     \n", kEle).find("t.node:3: point 2's line holds fewer"),
      std::string::npos);
  EXPECT_NE(
      error_of("2 3 0 0\n1 0 0 0\n1 1 0 0\n", kEle).find("t.node:3: point index 1 appears twice"),
      std::string::npos);
  EXPECT_NE(error_of("2 3 0 0\n1 0 0 0 9\n2 0 0 0\n", kEle).find("t.node:2: values left over"),
            std::string::npos);
  EXPECT_NE(
      error_of(kNode, "1 4 0\n1 1 2 3 9\n").find("t.ele:2: tetrahedron 1: point index 9 is not"),
      std::string::npos)
      << error_of(kNode, "1 4 0\n1 1 2 3 9\n");
  EXPECT_NE(error_of(kNode, "1 6 0\n").find("t.ele:1: nodes per tetrahedron 6"), std::string::npos);
  EXPECT_NE(error_of(kNode, "3 4 0\n1 1 2 3 4\n# a comment, no more tets\n")
                .find("t.ele:3: the file ends after 1 of the 3"),
            std::string::npos)
      << error_of(kNode, "3 4 0\n1 1 2 3 4\n# a comment, no more tets\n");
  // A count the file cannot hold is refused before anything is allocated.
  EXPECT_NE(
      error_of("900000000000 3 0 0\n", kEle).find("t.node:1: point count 900000000000 is more"),
      std::string::npos);
  EXPECT_NE(error_of(kNode, "1 4 99999999999999\n").find("t.ele:1: region attribute count"),
            std::string::npos);
  EXPECT_NE(error_of(kNode, "").find("t.ele:1: no header"), std::string::npos)
      << error_of(kNode, "");
  // The error names the file it is in when reading from the .ele file.
  EXPECT_NE(error_of("2 3 0 0\n1 0 0\n# a comment, no more\n", kEle, "t.ele").find("t.node:2:"),
            std::string::npos)
      << error_of("2 3 0 0\n1 0 0\n# a comment, no more\n", kEle, "t.ele");
  const auto e = meshdock::test::read_error(
      [](const mesh::InFile& f) { return mesh::read_tetgen(f); }, kNode, "x.node");
  EXPECT_EQ(e,
            "x.node: the TetGen mesh's tetrahedra are in x.ele, and there is no directory to "
            "open it in");
  const auto t = meshdock::test::read_error(
      [](const mesh::InFile& f) { return mesh::read_tetgen(f); }, kNode, "x.txt");
  EXPECT_NE(t.find("x.txt: a TetGen mesh is read from its .node or .ele file"), std::string::npos);
}

TEST(TetgenReader, TextAfterTheRecordsIsNoted) {
  const auto m = read_pair(kNode, std::string(kEle) + "3 1 2 3 4 9\n");
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("dir/t.ele:5: text after"), std::string::npos) << m.notes[0];
}

TEST(TetgenReader, FilesOfTestData) {
  const std::string dir = std::string(MESHDOCK_TEST_DATA) + "/tetgen/";
  for (const char* name : {"cube.node", "cube.ele", "corners.node", "tet10.ele"}) {
    const auto m = mesh::read_mesh(dir + name);
    mesh::validate_mesh(m, name);
    EXPECT_GT(m.cells[0].connectivity.shape()[0], 0) << name;
  }
  // TetGen's own -o2 output: every mid-edge node at the middle of the edge VTK's tetra10 puts
  // it on (corners a b c d, then ab bc ac ad bd cd).
  const auto m = mesh::read_mesh(dir + "tet10.ele");
  ASSERT_EQ(m.cells[0].type, "tetra10");
  const auto conn = ints(m.cells[0].connectivity);
  const auto xyz = doubles(m.points);
  constexpr int kEdges[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};
  ASSERT_EQ(conn.size(), 60u);
  for (std::size_t t = 0; t < conn.size() / 10; ++t)
    for (int e = 0; e < 6; ++e)
      for (int k = 0; k < 3; ++k) {
        const auto at = [&](std::size_t node) {
          return xyz[static_cast<std::size_t>(conn[t * 10 + node]) * 3 + k];
        };
        EXPECT_DOUBLE_EQ(at(4 + static_cast<std::size_t>(e)),
                         (at(static_cast<std::size_t>(kEdges[e][0])) +
                          at(static_cast<std::size_t>(kEdges[e][1]))) /
                             2)
            << "tet " << t << " edge " << e;
      }
}

// --- write_tetgen: both files written from either name, read back by read_tetgen ---

// A temporary folder, opened as the daemon opens a root's directory (an O_PATH fd).
class Folder {
 public:
  Folder() {
    path_ = std::filesystem::temp_directory_path() /
            ("meshdock-tetgen-w-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
    fd_ = mesh::UniqueFd(::open(path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  }
  ~Folder() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  mesh::OutTarget target(const std::string& leaf, bool overwrite) const {
    return mesh::OutTarget{fd_.get(), leaf, file(leaf), overwrite};
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string slurp(const std::string& name) const {
    std::ifstream f(file(name));
    return std::string(std::istreambuf_iterator<char>(f), {});
  }

 private:
  std::filesystem::path path_;
  mesh::UniqueFd fd_;
};

mesh::Mesh two_tets() {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({5, 3});
  const double p[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1.0 / 3, 1e-300, -2.5e17};
  std::copy(std::begin(p), std::end(p), m.points.as<double>());
  auto c = mesh::Array::of<std::int64_t>({2, 4});
  const std::int64_t cs[] = {0, 1, 2, 3, 1, 2, 3, 4};
  std::copy(std::begin(cs), std::end(cs), c.as<std::int64_t>());
  m.cells.push_back(mesh::CellBlock::fixed("tetra", std::move(c)));
  for (const char* name : {"tetgen:attr1", "tetgen:attr2", "tetgen:ref"}) {
    auto a = mesh::Array::of<double>({5});
    for (int i = 0; i < 5; ++i) a.as<double>()[i] = 0.1 * i + std::string(name).size();
    m.point_data[name] = std::move(a);
  }
  for (const char* name : {"tetgen:ref", "tetgen:ref2"}) {
    std::vector<mesh::Array> v;
    v.push_back(mesh::Array::of<std::int64_t>({2}));
    v[0].as<std::int64_t>()[0] = -7;
    v[0].as<std::int64_t>()[1] = std::string(name).size();
    m.cell_data[name] = std::move(v);
  }
  return m;
}

TEST(TetgenWriter, BothFilesFromEitherNameReadBackExactly) {
  const Folder d;
  const auto m = two_tets();
  for (const char* leaf : {"a.node", "b.ele"}) {
    EXPECT_EQ(mesh::write_mesh(m, d.file(leaf)), std::vector<std::string>{}) << leaf;
    const auto back = mesh::read_mesh(d.file(leaf));
    EXPECT_EQ(doubles(back.points), doubles(m.points));
    ASSERT_EQ(back.cells.size(), 1u);
    EXPECT_EQ(back.cells[0].type, "tetra");
    EXPECT_EQ(ints(back.cells[0].connectivity), ints(m.cells[0].connectivity));
    ASSERT_EQ(back.point_data.size(), 3u);
    for (const auto& [name, a] : m.point_data)
      EXPECT_EQ(doubles(back.point_data.at(name)), doubles(a)) << name;
    ASSERT_EQ(back.cell_data.size(), 2u);
    for (const auto& [name, a] : m.cell_data)
      EXPECT_EQ(ints(back.cell_data.at(name)[0]), ints(a[0])) << name;
  }
  EXPECT_EQ(d.names(), (std::vector<std::string>{"a.ele", "a.node", "b.ele", "b.node"}));
  EXPECT_EQ(d.slurp("a.ele"), "# written by meshdock\n2 4 2\n0 0 1 2 3 -7 -7\n1 1 2 3 4 10 11\n");
  EXPECT_EQ(d.slurp("a.node").substr(0, 47), "# written by meshdock\n5 3 2 1\n0 0 0 0 12 12 10\n");
}

// TetGen -o2's order back from VTK's: the inverse of what TenNodeTetsAndSeveralRegionAttributes
// reads; the reader's mid-edge check then holds for a tet written here.
TEST(TetgenWriter, TenNodeTetsInTetgensOrder) {
  const Folder d;
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({10, 3});
  const double corners[4][3] = {{0, 0, 0}, {2, 0, 0}, {0, 2, 0}, {0, 0, 2}};
  const int edges[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};  // VTK's
  auto* p = m.points.as<double>();
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < 3; ++k) p[3 * i + k] = corners[i][k];
  for (int e = 0; e < 6; ++e)
    for (int k = 0; k < 3; ++k)
      p[3 * (4 + e) + k] = (corners[edges[e][0]][k] + corners[edges[e][1]][k]) / 2;
  auto c = mesh::Array::of<std::int64_t>({1, 10});
  for (int i = 0; i < 10; ++i) c.as<std::int64_t>()[i] = i;
  m.cells.push_back(mesh::CellBlock::fixed("tetra10", std::move(c)));
  mesh::write_mesh(m, d.file("q.ele"));
  // Edges 34 14 12 23 24 13: VTK's nodes 9 7 4 5 8 6.
  EXPECT_EQ(d.slurp("q.ele"), "# written by meshdock\n1 10 0\n0 0 1 2 3 9 7 4 5 8 6\n");
  const auto back = mesh::read_mesh(d.file("q.node"));
  EXPECT_EQ(back.cells[0].type, "tetra10");
  EXPECT_EQ(ints(back.cells[0].connectivity), ints(m.cells[0].connectivity));
}

// An existing x.ele and overwrite false: FileExists, and neither file is written (the .node's
// temporary is made first, and goes).
TEST(TetgenWriter, AnExistingNameWritesNeither) {
  const Folder d;
  std::ofstream(d.file("x.ele")) << "old";
  mesh::WriteOptions o;
  EXPECT_THROW(mesh::write_mesh(two_tets(), d.target("x.node", false), o), mesh::FileExists);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"x.ele"}));
  EXPECT_EQ(d.slurp("x.ele"), "old");
  std::ofstream(d.file("y.node")) << "old";
  EXPECT_THROW(mesh::write_mesh(two_tets(), d.target("y.ele", false), o), mesh::FileExists);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"x.ele", "y.node"}));
  // Asked to: both replaced.
  mesh::write_mesh(two_tets(), d.target("x.node", true), o);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"x.ele", "x.node", "y.node"}));
  EXPECT_EQ(ints(mesh::read_mesh(d.file("x.ele")).cells[0].connectivity),
            ints(two_tets().cells[0].connectivity));
}

TEST(TetgenWriter, RefusesAndNotesWhatTetgenCannotHold) {
  const Folder d;
  auto m = two_tets();
  auto zeros = [](mesh::Array a) {
    std::memset(a.data(), 0, a.size() * a.itemsize());
    return a;
  };
  m.cells.insert(m.cells.begin(),
                 mesh::CellBlock::fixed("triangle", zeros(mesh::Array::of<std::int64_t>({1, 3}))));
  for (auto& [name, v] : m.cell_data)
    v.insert(v.begin(), zeros(mesh::Array::of<std::int64_t>({1})));
  m.point_data["tetgen:attr3x"] = zeros(mesh::Array::of<double>({5}));
  m.point_data.erase("tetgen:attr1");  // attr2 without attr1: not an attribute
  m.field_data["f"] = mesh::Array::of<double>({1});
  const auto notes = mesh::write_mesh(m, d.file("n.node"));
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(notes[0],
            "cells[0] (triangle) is not written: TetGen holds tetra and tetra10 cells only");
  EXPECT_EQ(notes[1].find("point_data 'tetgen:attr2' is not written: TetGen holds no point "
                          "data but tetgen:attr1"),
            0u)
      << notes[1];
  EXPECT_EQ(notes[2].find("point_data 'tetgen:attr3x' is not written"), 0u) << notes[2];
  EXPECT_EQ(notes[3], "field_data 'f' is not written: TetGen holds no field data");
  EXPECT_EQ(ints(mesh::read_mesh(d.file("n.ele")).cell_data.at("tetgen:ref2")[0]),
            (std::vector<std::int64_t>{-7, 11}));
  m.cells.erase(m.cells.begin() + 1);
  for (auto& [name, v] : m.cell_data) v.erase(v.begin() + 1);
  try {
    mesh::write_mesh(m, d.file("none.node"));
    ADD_FAILURE() << "no error";
  } catch (const mesh::WriteError& e) {
    EXPECT_EQ(std::string(e.what()), d.file("none.node") +
                                         ": the mesh has no tetra or tetra10 block, the only "
                                         "cells a TetGen mesh holds; write it as VTU or MSH");
  }
  mesh::WriteOptions o;
  o.format = "tetgen";
  EXPECT_THROW(mesh::write_mesh(two_tets(), d.file("t.vtu"), o), mesh::WriteError);
  EXPECT_EQ(d.names(), (std::vector<std::string>{"n.ele", "n.node"}));
}

}  // namespace
