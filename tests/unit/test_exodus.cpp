// The netCDF classic parser (netcdf_classic.hpp) on byte buffers built here for its corners
// (record variables, a lone byte record variable, CDF-5 types, truncated and lying headers),
// and the Exodus II reader and writer on tests/data/exodus (tools/make_exodus.py). The
// comparisons with meshio are in tests/python/test_exodus.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/readers/netcdf_classic.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "daemon/mesh/writers/writers.hpp"
#include "tests/support/reader_text.hpp"

namespace mesh = meshdock::mesh;
namespace nc = meshdock::mesh::netcdf;

namespace {

using meshdock::test::doubles;
using meshdock::test::ints;

std::string data(const std::string& name) {
  return std::string(MESHDOCK_TEST_DATA) + "/exodus/" + name;
}

// A netCDF header written word by word: counts 32-bit (CDF-1, CDF-2) or 64-bit (CDF-5), begin
// 32-bit in CDF-1 only.
struct Bytes {
  int version = 1;
  std::string s;
  explicit Bytes(int v) : version(v) { s = std::string("CDF") + static_cast<char>(v); }
  Bytes& u32(std::uint32_t v) {
    for (int i = 3; i >= 0; --i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& u64(std::uint64_t v) {
    for (int i = 7; i >= 0; --i) s += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  Bytes& count(std::uint64_t v) {
    return version == 5 ? u64(v) : u32(static_cast<std::uint32_t>(v));
  }
  Bytes& begin(std::uint64_t v) {
    return version == 1 ? u32(static_cast<std::uint32_t>(v)) : u64(v);
  }
  Bytes& name(const std::string& n) {
    count(n.size());
    s += n;
    s.append((4 - n.size() % 4) % 4, '\0');
    return *this;
  }
  Bytes& absent() {
    u32(0);
    return count(0);
  }
  Bytes& dims(std::vector<std::pair<std::string, std::uint64_t>> d) {
    u32(10).count(d.size());
    for (const auto& [n, len] : d) name(n).count(len);
    return *this;
  }
  // A variable without attributes.
  Bytes& var(const std::string& n, std::vector<std::uint64_t> dimids, nc::Type t,
             std::uint64_t at) {
    name(n).count(dimids.size());
    for (const auto id : dimids) count(id);
    absent();
    u32(static_cast<std::uint32_t>(t));
    count(0);  // vsize: not trusted
    return begin(at);
  }
  Bytes& raw(const std::string& b) {
    s += b;
    return *this;
  }
  Bytes& pad_to(std::size_t n) {
    s.resize(n, '\0');
    return *this;
  }
};

std::string error_of(const std::string& bytes) {
  try {
    nc::File f(bytes, "t.nc");
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::int64_t> read_ints(const nc::File& f, const char* var, std::int64_t rec = -1) {
  const auto* v = f.find(var);
  EXPECT_NE(v, nullptr) << var;
  if (!v) return {};
  const auto n = v->record && rec < 0 ? v->values * f.records() : v->values;
  std::vector<std::int64_t> out(n);
  f.read_as(*v, out.data(), rec);
  return out;
}

// ---- netCDF ----------------------------------------------------------------------------------

TEST(ExodusNetcdf, FixedVariablesAndAttributes) {
  Bytes b(1);
  b.u32(0).dims({{"n", 3}});
  b.u32(12).count(1).name("title").u32(2).count(2).raw("hi").pad_to(b.s.size() + 2);
  b.u32(11).count(1);
  const auto header_without_var = b.s.size();
  b.var("x", {0}, nc::Type::kInt, 0);
  const auto begin = b.s.size();
  // Patch begin now that the header's size is known.
  b.s.resize(header_without_var);
  b.var("x", {0}, nc::Type::kInt, begin);
  b.u32(1).u32(2).u32(static_cast<std::uint32_t>(-3));
  const nc::File f(b.s, "t.nc");
  EXPECT_EQ(f.version(), 1);
  ASSERT_EQ(f.global_atts().size(), 1u);
  EXPECT_EQ(f.global_atts()[0].name, "title");
  EXPECT_EQ(read_ints(f, "x"), (std::vector<std::int64_t>{1, 2, -3}));
  const auto a = f.read(*f.find("x"));
  EXPECT_EQ(a.dtype(), mesh::kInt32);
  EXPECT_EQ(ints(a), (std::vector<std::int64_t>{1, 2, -3}));
}

// Two record variables: each record holds a (double) then b (two shorts): 12 bytes a record.
TEST(ExodusNetcdf, RecordVariablesInterleave) {
  Bytes b(2);
  b.u32(2).dims({{"t", 0}, {"two", 2}}).absent().u32(11).count(2);
  const auto fixed = b.s.size();
  // Both variables' entries have the same size: compute the header's end first.
  Bytes probe = b;
  probe.var("a", {0}, nc::Type::kDouble, 0).var("b", {0, 1}, nc::Type::kShort, 0);
  const auto start = probe.s.size();
  b.var("a", {0}, nc::Type::kDouble, start).var("b", {0, 1}, nc::Type::kShort, start + 8);
  (void)fixed;
  const double vals[2] = {1.5, -2.25};
  for (int r = 0; r < 2; ++r) {
    std::uint64_t u;
    std::memcpy(&u, &vals[r], 8);
    b.u64(u);
    b.raw(std::string("\x00\x07\xff\xfe", 4));  // b: 7 and -2 (4 bytes: no padding)
  }
  const nc::File f(b.s, "t.nc");
  EXPECT_EQ(f.records(), 2u);
  std::vector<double> a(2);
  f.read_as(*f.find("a"), a.data());
  EXPECT_EQ(a, (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(read_ints(f, "b"), (std::vector<std::int64_t>{7, -2, 7, -2}));
  EXPECT_EQ(read_ints(f, "b", 1), (std::vector<std::int64_t>{7, -2}));
  const auto whole = f.read(*f.find("b"));
  EXPECT_EQ(whole.shape(), (std::vector<std::int64_t>{2, 2}));
}

// A lone record variable of bytes is not padded: its records follow each other byte by byte.
TEST(ExodusNetcdf, SingleByteRecordVariableIsNotPadded) {
  Bytes b(1);
  b.u32(3).dims({{"t", 0}}).absent().u32(11).count(1);
  Bytes probe = b;
  probe.var("c", {0}, nc::Type::kByte, 0);
  b.var("c", {0}, nc::Type::kByte, probe.s.size());
  b.raw(std::string("\x05\xfb\x7f", 3));
  const nc::File f(b.s, "t.nc");
  EXPECT_EQ(read_ints(f, "c"), (std::vector<std::int64_t>{5, -5, 127}));
}

TEST(ExodusNetcdf, Cdf5TypesAndWideCounts) {
  Bytes b(5);
  b.u64(0).dims({{"n", 2}}).absent().u32(11).count(3);
  Bytes probe = b;
  probe.var("u8", {0}, nc::Type::kUByte, 0)
      .var("i64", {0}, nc::Type::kInt64, 0)
      .var("u64", {0}, nc::Type::kUInt64, 0);
  const auto h = probe.s.size();
  b.var("u8", {0}, nc::Type::kUByte, h)
      .var("i64", {0}, nc::Type::kInt64, h + 4)
      .var("u64", {0}, nc::Type::kUInt64, h + 20);
  b.raw(std::string("\xff\x01\0\0", 4));
  b.u64(static_cast<std::uint64_t>(-7)).u64(1ull << 40);
  b.u64(3).u64(4);
  const nc::File f(b.s, "t.nc");
  EXPECT_EQ(read_ints(f, "u8"), (std::vector<std::int64_t>{255, 1}));
  EXPECT_EQ(read_ints(f, "i64"), (std::vector<std::int64_t>{-7, 1ll << 40}));
  EXPECT_EQ(read_ints(f, "u64"), (std::vector<std::int64_t>{3, 4}));
  EXPECT_EQ(f.read(*f.find("u64")).dtype(), (mesh::DType{1, 64, 1}));
  // A CDF-5 type in a classic file is refused.
  Bytes c(1);
  c.u32(0).dims({{"n", 1}}).absent().u32(11).count(1).var("v", {0}, nc::Type::kInt64, 0);
  EXPECT_NE(error_of(c.s).find("nc_type 10 is not a type of CDF-1"), std::string::npos)
      << error_of(c.s);
}

TEST(ExodusNetcdf, TruncatedHeader) {
  const auto e = error_of(std::string("CDF\x01\0\0", 6));
  EXPECT_NE(e.find("t.nc: byte 4: netCDF: numrecs: needs 4 bytes but only 2 remain"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of("CDF\x03xxxx").find("not a netCDF classic file"), std::string::npos);
  EXPECT_NE(error_of("").find("byte 0"), std::string::npos);
}

TEST(ExodusNetcdf, CountsPastTheEnd) {
  Bytes b(1);
  b.u32(0).u32(10).u32(1000000);
  EXPECT_NE(error_of(b.s).find("byte 12: netCDF: dimension count 1000000 is more than the rest"),
            std::string::npos)
      << error_of(b.s);
  Bytes a(2);
  a.u32(0).absent().u32(12).u32(1).name("x").u32(6).u32(1u << 30);
  EXPECT_NE(error_of(a.s).find("attribute value count 1073741824 is more than the rest"),
            std::string::npos)
      << error_of(a.s);
}

TEST(ExodusNetcdf, VariablePastTheEnd) {
  Bytes b(2);
  b.u32(0).dims({{"n", 4}}).absent().u32(11).count(1);
  Bytes probe = b;
  probe.var("x", {0}, nc::Type::kDouble, 0);
  b.var("x", {0}, nc::Type::kDouble, probe.s.size());
  b.u64(1).u64(2).u64(3);  // one double short
  const auto e = error_of(b.s);
  EXPECT_NE(e.find("variable 'x' (double, 4 values) at byte"), std::string::npos) << e;
  EXPECT_NE(e.find("runs past the end of the file"), std::string::npos) << e;
  // A begin far past the end.
  Bytes c(2);
  c.u32(0).dims({{"n", 1}}).absent().u32(11).count(1).var("x", {0}, nc::Type::kInt, 1ull << 62);
  EXPECT_NE(error_of(c.s).find("runs past the end"), std::string::npos) << error_of(c.s);
  // Records past the end: numrecs 1000 of a record variable with one record written.
  Bytes r(1);
  r.u32(1000).dims({{"t", 0}}).absent().u32(11).count(1);
  Bytes probe2 = r;
  probe2.var("v", {0}, nc::Type::kInt, 0);
  r.var("v", {0}, nc::Type::kInt, probe2.s.size()).u32(5);
  EXPECT_NE(error_of(r.s).find("1000 records) at byte"), std::string::npos) << error_of(r.s);
}

TEST(ExodusNetcdf, NegativeAndHugeSizes) {
  Bytes b(1);
  b.u32(0).u32(10).u32(1).name("n").u32(static_cast<std::uint32_t>(-5));
  EXPECT_NE(error_of(b.s).find("dimension length -5 is negative"), std::string::npos)
      << error_of(b.s);
  Bytes n(1);
  n.u32(static_cast<std::uint32_t>(-2));
  EXPECT_NE(error_of(n.s).find("byte 4: netCDF: numrecs -2 is negative"), std::string::npos)
      << error_of(n.s);
  // Dimensions whose product is far more than the file holds (and would overflow 64 bits).
  Bytes h(5);
  h.u64(0).dims({{"a", 1ull << 40}, {"b", 1ull << 40}}).absent().u32(11).count(1);
  h.var("x", {0, 1}, nc::Type::kDouble, 0);
  EXPECT_NE(error_of(h.s).find("its dimensions hold more values than the file's"),
            std::string::npos)
      << error_of(h.s);
  // A dimension id that is not one.
  Bytes d(1);
  d.u32(0).dims({{"n", 1}}).absent().u32(11).count(1).var("x", {7}, nc::Type::kInt, 0);
  EXPECT_NE(error_of(d.s).find("dimension id 7 is not one of the file's 1"), std::string::npos);
}

TEST(ExodusNetcdf, NamesMustBeNulFree) {
  Bytes b(1);
  b.u32(0).u32(10).u32(1).name(std::string("a\0b", 3)).u32(1);
  EXPECT_NE(error_of(b.s).find("byte 16: netCDF: dimension name holds a NUL byte"),
            std::string::npos)
      << error_of(b.s);
  Bytes e(1);
  e.u32(0).u32(10).u32(1).u32(0).u32(1).pad_to(64);
  EXPECT_NE(error_of(e.s).find("dimension name is empty"), std::string::npos);
}

// ---- Exodus ----------------------------------------------------------------------------------

mesh::Mesh read_bytes(const std::string& bytes, const std::string& name = "t.exo") {
  return meshdock::test::read_text([](const mesh::InFile& f) { return mesh::read_mesh(f); }, bytes,
                                   name);
}
std::string exodus_error(const std::string& bytes) {
  return meshdock::test::read_error([](const mesh::InFile& f) { return mesh::read_exodus(f); },
                                    bytes, "t.exo");
}

// A triangle over three nodes, hand-built: coordx, coordy, connect1 "TRI3" with node `last`,
// int (or double when `real`: netCDF lets a writer store indices as reals).
std::string triangle(double last, bool real = false) {
  Bytes b(1);
  b.u32(0).dims({{"num_nodes", 3}, {"num_el_in_blk1", 1}, {"num_nod_per_el1", 3}}).absent();
  b.u32(11).count(3);
  auto vars = [&](Bytes& x, std::uint64_t h) {
    x.var("coordx", {0}, nc::Type::kDouble, h).var("coordy", {0}, nc::Type::kDouble, h + 24);
    x.name("connect1").count(2).count(1).count(2);
    x.u32(12).count(1).name("elem_type").u32(2).count(4).raw("TRI3");
    x.u32(real ? 6 : 4).count(real ? 24 : 12).begin(h + 48);
  };
  Bytes probe = b;
  vars(probe, 0);
  vars(b, probe.s.size());
  for (const double v : {0.0, 1.0, 0.0, 0.0, 0.0, 2.0}) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    b.u64(u);
  }
  if (!real) return b.u32(1).u32(2).u32(static_cast<std::uint32_t>(last)).s;
  for (const double v : {1.0, 2.0, last}) {
    std::uint64_t u;
    std::memcpy(&u, &v, 8);
    b.u64(u);
  }
  return b.s;
}

TEST(ExodusReader, HandBuiltTriangle) {
  const auto m = read_bytes(triangle(3));
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{3, 3}));  // 3 columns, as meshio
  EXPECT_EQ(doubles(m.points), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "triangle");
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  const auto e = exodus_error(triangle(4));
  EXPECT_NE(e.find("t.exo: byte"), std::string::npos) << e;
  EXPECT_NE(e.find("variable 'connect1': element 1 refers to node 4; nodes are numbered 1..3"),
            std::string::npos)
      << e;
  EXPECT_NE(exodus_error(triangle(0)).find("refers to node 0"), std::string::npos);
}

// Connectivity stored as doubles reads as integers when every value is a whole number; any
// other value (1e300 and NaN: converting them to int64 is undefined behaviour, found by
// fuzz_exodus_reader under UBSan; 2.5: truncated to node 2 before) is an error naming it.
TEST(ExodusReader, RealConnectivity) {
  const auto m = read_bytes(triangle(3, true));
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(ints(m.cells[0].connectivity), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_NE(exodus_error(triangle(4, true)).find("element 1 refers to node 4"), std::string::npos);
  for (const auto& [value, text] : std::vector<std::pair<double, std::string>>{
           {1e300, "1.0000000000000001e+300"}, {2.5, "2.5"}, {std::nan(""), "nan"}}) {
    const auto e = exodus_error(triangle(value, true));
    EXPECT_NE(e.find("variable 'connect1' (double): value 3 is " + text +
                     ", where a whole number is expected"),
              std::string::npos)
        << e;
  }
}

// num_nodes is a dimension no data backs: without a coordinate variable of that length it makes
// the reader allocate nothing.
TEST(ExodusReader, NodeCountWithoutCoordinates) {
  Bytes b(1);
  b.u32(0).dims({{"num_nodes", 0x7fffffff}}).absent().absent();
  const auto e = exodus_error(b.s);
  EXPECT_NE(e.find("t.exo: byte 0: netCDF: exodus: num_nodes is 2147483647 but there is no "
                   "coordx, coordy, coordz or coord variable"),
            std::string::npos)
      << e;
}

TEST(ExodusReader, Hdf5IsRefusedWithHowToConvert) {
  const auto e = exodus_error(std::string("\x89HDF\r\n\x1a\n", 8) + std::string(100, '\0'));
  EXPECT_NE(e.find("t.exo: a netCDF-4 (HDF5) file"), std::string::npos) << e;
  EXPECT_NE(e.find("nccopy -k cdf5 t.exo out.exo"), std::string::npos) << e;
  // meshio's own writer makes such files.
  try {
    mesh::read_mesh(data("mixed.meshio.exo"));
    ADD_FAILURE() << "read";
  } catch (const mesh::ReadError& x) {
    EXPECT_NE(std::string(x.what()).find("netCDF-4 (HDF5)"), std::string::npos);
  }
}

TEST(ExodusReader, MixedBlocksInEveryClassicVersion) {
  for (const char* f : {"mixed.cdf1.exo", "mixed.cdf2.exo", "mixed.cdf5.exo"}) {
    SCOPED_TRACE(f);
    const auto m = mesh::read_mesh(data(f));
    mesh::validate_mesh(m, f);
    std::vector<std::string> types;
    for (const auto& b : m.cells) types.push_back(b.type);
    EXPECT_EQ(types, (std::vector<std::string>{"tetra", "hexahedron", "wedge", "pyramid",
                                               "triangle", "quad", "line"}));
    EXPECT_EQ(ints(m.cells[2].connectivity), (std::vector<std::int64_t>{1, 9, 2, 5, 11, 6}));
    EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{12, 3}));
    ASSERT_TRUE(m.point_data.count("velocity_"));  // meshio's name for velocity_X/Y/Z
    EXPECT_EQ(m.point_data.at("velocity_").shape(), (std::vector<std::int64_t>{12, 3}));
    EXPECT_DOUBLE_EQ(mesh::value_at(m.point_data.at("velocity_"), 5), 5.0 / 7);
    ASSERT_EQ(m.regions.size(), 2u);
    EXPECT_EQ(m.regions[0].name, "bottom");
    EXPECT_EQ(m.regions[0].kind, mesh::RegionKind::kPoint);
    EXPECT_EQ(m.regions[0].tag, 100);
    EXPECT_EQ(ints(m.regions[0].entries), (std::vector<std::int64_t>{0, 1, 2, 3}));
  }
}

// numrecs all ones (the streaming form): the records are counted from the file's size.
TEST(ExodusReader, StreamingRecordCount) {
  const auto streamed =
      mesh::read_mesh(std::string(MESHDOCK_TEST_DATA) + "/fuzz/exodus_reader/seed-streaming.exo");
  const auto m = mesh::read_mesh(data("mixed.cdf1.exo"));
  EXPECT_EQ(doubles(streamed.point_data.at("temp")), doubles(m.point_data.at("temp")));
  EXPECT_EQ(doubles(streamed.point_data.at("velocity_")), doubles(m.point_data.at("velocity_")));
}

TEST(ExodusReader, StepsSetsMapsAndNotes) {
  const auto m = mesh::read_mesh(data("steps.cdf2.exo"));
  mesh::validate_mesh(m, "steps");
  EXPECT_EQ(doubles(m.point_data.at("u"))[3], 3.0);  // the first of three steps
  EXPECT_EQ(doubles(m.cell_data.at("stress")[0]), (std::vector<double>{1, 2}));
  EXPECT_EQ(doubles(m.cell_data.at("stress")[2]), (std::vector<double>{10}));
  std::string notes;
  for (const auto& n : m.notes) notes += n + "\n";
  EXPECT_NE(notes.find("3 time steps; point and cell data are read from the first only"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("node_num_map (the file's own ids) is not applied"), std::string::npos);
  EXPECT_NE(notes.find("2 info records and 1 QA records are not kept"), std::string::npos);
  EXPECT_NE(notes.find("variables not read: "), std::string::npos);
  EXPECT_NE(notes.find("vals_glo_var"), std::string::npos) << notes;
  // Block names (the second is empty: no region), the side set as (cell, side - 1).
  std::vector<std::string> names;
  for (const auto& r : m.regions) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"top", "tets", "prism", "floor"}));
  EXPECT_EQ(ints(m.regions[2].entries), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(m.regions[2].tag, 12);
  EXPECT_EQ(m.regions[3].kind, mesh::RegionKind::kSide);
  EXPECT_EQ(ints(m.regions[3].entries), (std::vector<std::int64_t>{0, 3, 2, 4, 3, 0}));
}

TEST(ExodusReader, TruthTableGapIsNaN) {
  const auto m = mesh::read_mesh(data("truth-table.cdf2.exo"));
  const auto& d = m.cell_data.at("damage");
  EXPECT_EQ(doubles(d[0]), (std::vector<double>{0.1, 0.2}));
  EXPECT_TRUE(std::isnan(mesh::value_at(d[1], 0)));
  EXPECT_EQ(doubles(d[2]), (std::vector<double>{0.7}));
  bool noted = false;
  for (const auto& n : m.notes)
    noted |= n.find("'damage' is not defined on blocks 2") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(ExodusReader, SecondOrderOldCoordAndInt64) {
  const auto m = mesh::read_mesh(data("tetra10.cdf5.exo"));
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "tetra10");
  EXPECT_EQ(m.cells[1].type, "tetra10");  // "TETRA" with 10 nodes
  EXPECT_EQ(ints(m.cells[1].connectivity)[0], 9);
  EXPECT_EQ(m.points.shape(), (std::vector<std::int64_t>{10, 3}));  // coord (num_dim, nodes)
  EXPECT_EQ(doubles(m.points)[3 * 8 + 2], 0.5);
}

TEST(ExodusReader, VtkWriterFile) {
  const auto m = mesh::read_mesh(data("cube.vtk-writer.exo"));
  mesh::validate_mesh(m, "cube");
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].type, "tetra");
  EXPECT_TRUE(m.point_data.count("temp"));
}

// ---- writer ------------------------------------------------------------------------------------

TEST(ExodusWriter, RoundTrip) {
  const auto m = mesh::read_mesh(data("steps.cdf2.exo"));
  char dir[] = "/tmp/exodus-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string out = std::string(dir) + "/out.exo";
  mesh::write_mesh(m, out);
  const auto back = mesh::read_mesh(out);
  unlink(out.c_str());
  rmdir(dir);
  EXPECT_EQ(doubles(back.points), doubles(m.points));
  ASSERT_EQ(back.cells.size(), m.cells.size());
  for (std::size_t b = 0; b < m.cells.size(); ++b) {
    EXPECT_EQ(back.cells[b].type, m.cells[b].type);
    EXPECT_EQ(ints(back.cells[b].connectivity), ints(m.cells[b].connectivity));
  }
  EXPECT_EQ(doubles(back.point_data.at("u")), doubles(m.point_data.at("u")));
  EXPECT_EQ(doubles(back.cell_data.at("stress")[2]), doubles(m.cell_data.at("stress")[2]));
  ASSERT_EQ(back.regions.size(), m.regions.size());
  for (std::size_t r = 0; r < m.regions.size(); ++r) {
    EXPECT_EQ(back.regions[r].name, m.regions[r].name);
    EXPECT_EQ(back.regions[r].kind, m.regions[r].kind);
    EXPECT_EQ(back.regions[r].tag, m.regions[r].tag);  // eb_prop1 / ns_prop1 / ss_prop1
    EXPECT_EQ(ints(back.regions[r].entries), ints(m.regions[r].entries));
  }
}

}  // namespace
