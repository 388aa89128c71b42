// Gmsh reader: values against REFERENCE.json are checked in tests/python/test_read_msh.py; here
// the contract on bad input (a ReadError naming file and line/byte, never a crash or a huge
// allocation), tag mapping, node reordering and regions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "daemon/mesh/cursor.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"

#include <unistd.h>

namespace mesh = meshdock::mesh;

namespace {

std::string data_file(const std::string& name) {
  std::ifstream f(std::string(MESHDOCK_TEST_DATA) + "/meshes/" + name, std::ios::binary);
  EXPECT_TRUE(f.good()) << name;
  return {std::istreambuf_iterator<char>(f), {}};
}

// tests/data/gmsh: files of tests/data/tools/make_msh_partitions.py (Gmsh reader only).
std::string gmsh_file(const std::string& name) {
  return data_file("../gmsh/" + name);
}

std::string error_of(const std::string& text) {
  try {
    mesh::read_msh_bytes(text, "t.msh");
  } catch (const mesh::ReadError& e) {
    return e.what();
  }
  return "no error";
}

const char* kTiny22 =
    "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
    "$PhysicalNames\n1\n2 7 \"top face\"\n$EndPhysicalNames\n"
    "$Nodes\n4\n10 0 0 0\n20 1 0 0\n30 0 1 0\n40 0 0 1\n$EndNodes\n"
    "$Elements\n2\n1 2 2 7 1 10 20 30\n2 4 2 0 1 10 20 30 40\n$EndElements\n";

}  // namespace

TEST(MshReader, TinyFileWithSparseTags) {
  const auto m = mesh::read_msh_bytes(kTiny22, "tiny.msh");
  ASSERT_EQ(m.num_points(), 4);
  EXPECT_EQ(m.points.as<double>()[3 * 3 + 2], 1.0);
  ASSERT_EQ(m.cells.size(), 2u);
  EXPECT_EQ(m.cells[0].type, "triangle");
  EXPECT_EQ(m.cells[1].type, "tetra");
  const auto* tet = m.cells[1].connectivity.as<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(tet, tet + 4), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int32_t>()[0], 7);
  ASSERT_EQ(m.regions.size(), 1u);
  EXPECT_EQ(m.regions[0].name, "top face");
  EXPECT_EQ(m.regions[0].kind, mesh::RegionKind::kCell);
  EXPECT_EQ(m.regions[0].entries.size(), 1u);
  EXPECT_EQ(m.regions[0].entries.as<std::int64_t>()[0], 0);
  EXPECT_EQ(m.field_data.at("top face").as<std::int64_t>()[0], 7);
  EXPECT_EQ(m.field_data.at("top face").as<std::int64_t>()[1], 2);
}

TEST(MshReader, Tetra10IsReorderedLikeMeshio) {
  std::string s = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n10\n";
  for (int i = 1; i <= 10; ++i) s += std::to_string(i) + " " + std::to_string(i) + " 0 0\n";
  s += "$EndNodes\n$Elements\n1\n1 11 0 1 2 3 4 5 6 7 8 9 10\n$EndElements\n";
  const auto m = mesh::read_msh_bytes(s, "t10.msh");
  const auto* c = m.cells[0].connectivity.as<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(c, c + 10),
            (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 9, 8}));
}

TEST(MshReader, BadInputNamesFileAndLine) {
  EXPECT_EQ(error_of(""), "t.msh: empty file or no $MeshFormat");
  EXPECT_EQ(error_of("garbage\n"),
            "t.msh:1: expected a section header like $Nodes, found 'garbage'");
  std::string s = kTiny22;
  EXPECT_EQ(error_of(s.substr(0, s.find("$Elements"))), "t.msh: no $Elements section");
  EXPECT_EQ(error_of(std::string(kTiny22).replace(s.find("1 2 2 7"), 7, "1 99 2 7")),
            "t.msh:17: unknown Gmsh element type 99");
  EXPECT_EQ(
      error_of(std::string(kTiny22).replace(s.find("10 20 30 40"), 11, "10 20 30 41")),
      "t.msh:18: element 0 of a tetra block refers to node tag 41, which $Nodes does not define");
  EXPECT_EQ(error_of(std::string(kTiny22).replace(s.find("20 1 0 0"), 8, "20 1 x 0")),
            "t.msh:11: expected coordinate, found 'x'");
  EXPECT_EQ(error_of(std::string(kTiny22).replace(s.find("$Nodes\n4"), 8, "$Nodes\n99999999999")),
            error_of(std::string(kTiny22).replace(s.find("$Nodes\n4"), 8, "$Nodes\n99999999999")));
  EXPECT_NE(error_of(std::string(kTiny22).replace(s.find("$Nodes\n4"), 8, "$Nodes\n99999999999"))
                .find("node count 99999999999 is more than the remaining"),
            std::string::npos);
  EXPECT_NE(error_of(std::string(kTiny22).replace(s.find("$EndNodes"), 9, "$EndNodez"))
                .find("expected '$EndNodes'"),
            std::string::npos);
  EXPECT_EQ(error_of("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$NodeData\n$EndNodeData\n"),
            "t.msh:4: $NodeData comes before the entities it refers to");
}

TEST(MshReader, EveryTruncationOfABinaryFileIsAReadError) {
  for (const char* name : {"plate.v41b.msh", "plate.v22b.msh", "plate.v41.msh", "cube.v40b.msh",
                           "cube.v40.msh", "cube.v1.msh"}) {
    const auto full = data_file(name);
    EXPECT_NO_THROW(mesh::read_msh_bytes(full, name));
    for (std::size_t cut = 0; cut < full.size(); cut += 97) {
      EXPECT_THROW(mesh::read_msh_bytes(full.substr(0, cut), name), mesh::ReadError)
          << name << " cut at " << cut;
    }
  }
}

TEST(MshReader, BigEndianBinaryIsDetectedAndSwapped) {
  // Build a big-endian MSH 2.2 binary file by hand: one node block, one triangle.
  auto be32 = [](std::int32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i)
      s[i] = static_cast<char>((static_cast<std::uint32_t>(v) >> (24 - 8 * i)) & 0xff);
    return s;
  };
  auto be64d = [](double d) {
    std::uint64_t u;
    std::memcpy(&u, &d, 8);
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((u >> (56 - 8 * i)) & 0xff);
    return s;
  };
  std::string f = "$MeshFormat\n2.2 1 8\n" + be32(1) + "\n$EndMeshFormat\n$Nodes\n3\n";
  for (int i = 0; i < 3; ++i) f += be32(i + 1) + be64d(i * 1.5) + be64d(-i) + be64d(0.25);
  f += "\n$EndNodes\n$Elements\n1\n" + be32(2) + be32(1) + be32(2) + be32(1) + be32(5) + be32(6) +
       be32(3) + be32(2) + be32(1) + "\n$EndElements\n";
  const auto m = mesh::read_msh_bytes(f, "be.msh");
  EXPECT_EQ(m.points.as<double>()[3 * 2 + 0], 3.0);
  EXPECT_EQ(m.points.as<double>()[3 * 2 + 1], -2.0);
  const auto* c = m.cells[0].connectivity.as<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(c, c + 3), (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int32_t>()[0], 5);
  EXPECT_EQ(m.cell_data.at("gmsh:geometrical")[0].as<std::int32_t>()[0], 6);
}

TEST(MshReader, AllocatorHookIsUsedForEveryArray) {
  static int allocations = 0;
  mesh::Allocator counting = mesh::host_allocator();
  counting.name = "counting";
  counting.allocate = [](std::size_t n, void*) -> void* {
    ++allocations;
    return mesh::host_allocator().allocate(n, nullptr);
  };
  const auto old = mesh::set_allocator(counting);
  allocations = 0;
  const auto m = mesh::read_msh_bytes(kTiny22, "tiny.msh");
  mesh::set_allocator(old);
  // points, 2 connectivity blocks, 2x2 cell_data, field_data, region entries
  EXPECT_EQ(allocations, 1 + 2 + 4 + 1 + 1);
  EXPECT_STREQ(m.points.buffer()->allocator_name(), "counting");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.points.data()) % 4096, 0u);
}

TEST(MappedFileGuard, TruncatedUnderTheMappingIsAReadErrorNotACrash) {
  const std::string path = "/tmp/meshdock-trunc-" + std::to_string(::getpid()) + ".msh";
  {
    std::ofstream f(path, std::ios::binary);
    f << data_file("plate.v41.msh");
  }
  try {
    const auto fd = mesh::open_regular(path);
    mesh::parse_mapped(mesh::InFile{fd.get(), path}, [&](std::string_view data) {
      // Another process truncates the file while we read it: the pages past the new end are
      // gone, and touching them raises SIGBUS, which the guard turns into zeros + a flag.
      if (::truncate(path.c_str(), 100) != 0) throw std::runtime_error("truncate failed");
      volatile char sink = 0;
      for (std::size_t i = 0; i < data.size(); i += 4096) sink = sink + data[i];
      return mesh::read_msh_bytes(data, path);
    });
    FAIL() << "a truncated file must not read as a mesh";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("changed while it was being read (truncated)"),
              std::string::npos)
        << e.what();
  }
  ::unlink(path.c_str());
}

namespace {

// An ascii MSH 4.1 file whose last element block (n tetrahedra over 8 nodes, tags from 1) is
// big enough for the parallel parse; element e uses nodes (e+k) % 8 + 1.
std::string big_ascii41(std::size_t n) {
  std::string s =
      "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 8 1 8\n3 1 0 8\n1\n2\n3\n4\n5\n6\n7\n8\n";
  for (int i = 0; i < 8; ++i) s += std::to_string(i) + " 0 0\n";
  s += "$EndNodes\n$Elements\n1 " + std::to_string(n) + " 1 " + std::to_string(n) + "\n3 1 4 " +
       std::to_string(n) + "\n";
  for (std::size_t e = 0; e < n; ++e) {
    s += std::to_string(e + 1);
    for (std::size_t k = 0; k < 4; ++k) {
      s += ' ';  // not " " + to_string(...): GCC 12 -O2 sees a false -Wrestrict in that
      s += std::to_string((e + k) % 8 + 1);
    }
    s += "\n";
  }
  return s + "$EndElements\n";
}

}  // namespace

TEST(MshReader, BigAsciiElementBlockParsesInPiecesToTheSameRows) {
  const std::size_t n = 100'000;
  const auto text = big_ascii41(n);
  const auto m = mesh::read_msh_bytes(text, "big.msh");
  ASSERT_EQ(m.cells.size(), 1u);
  ASSERT_EQ(m.cells[0].connectivity.dim(0), static_cast<std::int64_t>(n));
  const auto* c = m.cells[0].connectivity.as<std::int64_t>();
  for (std::size_t e = 0; e < n; ++e)
    for (std::size_t k = 0; k < 4; ++k)
      ASSERT_EQ(c[4 * e + k], static_cast<std::int64_t>((e + k) % 8)) << e << " " << k;
  // A bad number deep in the block: the serial parse reports it with its line.
  auto bad = text;
  const auto at = bad.find("\n77777 ") + 1;
  bad.replace(bad.find(' ', at) + 1, 1, "x");
  const auto line =
      1 + std::count(bad.begin(), bad.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  EXPECT_EQ(error_of(bad).rfind("t.msh:" + std::to_string(line) + ": expected node tag", 0), 0u)
      << error_of(bad);
  // Tags out of order (two rows swapped): read serially, rows as written.
  auto swapped = text;
  const auto r1 = swapped.find("\n50000 ") + 1;
  const auto r2 = swapped.find('\n', r1) + 1;
  const auto r3 = swapped.find('\n', r2) + 1;
  const auto row1 = swapped.substr(r1, r2 - r1), row2 = swapped.substr(r2, r3 - r2);
  swapped.replace(r1, r3 - r1, row2 + row1);
  const auto s = mesh::read_msh_bytes(swapped, "swapped.msh");
  const auto* sc = s.cells[0].connectivity.as<std::int64_t>();
  EXPECT_EQ(sc[4 * 49999], static_cast<std::int64_t>(50000 % 8));  // row 49999 holds tag 50001
  EXPECT_EQ(sc[4 * 50000], static_cast<std::int64_t>(49999 % 8));
}

namespace {

// A binary MSH 4.1 file: `nodes` nodes with tags tag_of(i), one block of n elements of gmsh
// type `type` with npc nodes each; element e uses node indices (e * 7 + k) % nodes.
template <typename TagOf>
std::string big_binary41(std::size_t nodes, std::size_t n, int type, std::size_t npc,
                         TagOf tag_of) {
  auto put = [](std::string& s, auto v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
  std::string s = "$MeshFormat\n4.1 1 8\n";
  put(s, std::int32_t{1});
  s += "\n$EndMeshFormat\n$Nodes\n";
  for (std::uint64_t v : {std::uint64_t{1}, std::uint64_t{nodes}, std::uint64_t{tag_of(0)},
                          std::uint64_t{tag_of(nodes - 1)}})
    put(s, v);
  put(s, std::int32_t{3});
  put(s, std::int32_t{1});
  put(s, std::int32_t{0});
  put(s, std::uint64_t{nodes});
  for (std::size_t i = 0; i < nodes; ++i) put(s, std::uint64_t{tag_of(i)});
  for (std::size_t i = 0; i < nodes; ++i)
    for (int k = 0; k < 3; ++k) put(s, static_cast<double>(i) + 0.25 * k);
  s += "\n$EndNodes\n$Elements\n";
  for (std::uint64_t v : {std::uint64_t{1}, std::uint64_t{n}, std::uint64_t{1}, std::uint64_t{n}})
    put(s, v);
  put(s, std::int32_t{3});
  put(s, std::int32_t{1});
  put(s, std::int32_t{type});
  put(s, std::uint64_t{n});
  for (std::size_t e = 0; e < n; ++e) {
    put(s, std::uint64_t{e + 1});
    for (std::size_t k = 0; k < npc; ++k) put(s, std::uint64_t{tag_of((e * 7 + k) % nodes)});
  }
  return s + "\n$EndElements\n";
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = "/tmp/meshdock-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST(MshReader, BigBinaryBlockFromAFileMapsEveryTagKind) {
  // Streamed from the file with pread on every core: consecutive tags (offset), sparse tags (a
  // table) and scattered tags (a hash), for tets (an unrolled row) and hexahedra.
  const std::size_t nodes = 3000, n = 70'000;
  struct Case {
    const char* name;
    std::uint64_t (*tag_of)(std::size_t);
  };
  const Case cases[] = {{"consecutive", [](std::size_t i) -> std::uint64_t { return i + 1; }},
                        {"sparse", [](std::size_t i) -> std::uint64_t { return 3 * i + 2; }},
                        {"hashed", [](std::size_t i) -> std::uint64_t { return 1000003 * i + 5; }}};
  for (const auto& c : cases) {
    for (auto [type, npc] : {std::pair{4, std::size_t{4}}, std::pair{5, std::size_t{8}}}) {
      const auto path =
          write_temp(std::string(c.name) + ".msh", big_binary41(nodes, n, type, npc, c.tag_of));
      const auto m = mesh::read_mesh(path);
      ::unlink(path.c_str());
      ASSERT_EQ(m.cells.size(), 1u) << c.name;
      ASSERT_EQ(m.cells[0].connectivity.dim(0), static_cast<std::int64_t>(n));
      ASSERT_EQ(m.cells[0].connectivity.dim(1), static_cast<std::int64_t>(npc));
      const auto* conn = m.cells[0].connectivity.as<std::int64_t>();
      for (std::size_t e = 0; e < n; ++e)
        for (std::size_t k = 0; k < npc; ++k)
          ASSERT_EQ(conn[e * npc + k], static_cast<std::int64_t>((e * 7 + k) % nodes))
              << c.name << " type " << type << " element " << e << " node " << k;
      EXPECT_EQ(m.points.as<double>()[3 * 2999 + 2], 2999.5) << c.name;
    }
  }
}

TEST(MappedFileGuard, ReadAtPastATruncatedEndIsAReadError) {
  const auto path = write_temp("read-at.bin", std::string(1 << 20, 'x'));
  mesh::MappedFile file(path);
  std::string buf(4096, '\0');
  file.read_at(4096, buf.size(), buf.data());
  EXPECT_EQ(buf, std::string(4096, 'x'));
  ASSERT_EQ(::truncate(path.c_str(), 6000), 0);
  try {
    file.read_at(4096, buf.size(), buf.data());
    FAIL() << "reading past the new end must throw";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": cannot read 2192 bytes at byte 6000 (the file "
                                                "is shorter than when opened)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(file.check_unchanged(), mesh::ReadError);
  ::unlink(path.c_str());
}

TEST(Cursor, IntegersAreExactAtEveryEdge) {
  // The unchecked fast path (up to 18 digits) and from_chars behind it must agree.
  mesh::Cursor c(
      "0 -7 123456789012345678 9223372036854775807 -9223372036854775808 "
      "18446744073709551615 2147483647 -2147483648 007",
      "n.txt");
  EXPECT_EQ(c.number<std::int64_t>("a"), 0);
  EXPECT_EQ(c.number<std::int64_t>("a"), -7);
  EXPECT_EQ(c.number<std::int64_t>("a"), 123456789012345678);
  EXPECT_EQ(c.number<std::int64_t>("a"), INT64_MAX);
  EXPECT_EQ(c.number<std::int64_t>("a"), INT64_MIN);
  EXPECT_EQ(c.number<std::uint64_t>("a"), UINT64_MAX);
  EXPECT_EQ(c.number<std::int32_t>("a"), INT32_MAX);
  EXPECT_EQ(c.number<std::int32_t>("a"), INT32_MIN);
  EXPECT_EQ(c.number<std::int32_t>("a"), 7);
  EXPECT_TRUE(c.at_end() || (c.skip_ws(), c.at_end()));
  auto error = [](const char* text, auto type) {
    mesh::Cursor k(text, "n.txt");
    try {
      k.number<decltype(type)>("node tag");
    } catch (const mesh::ReadError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("2147483648", std::int32_t{}), "n.txt:1: node tag is out of range");
  EXPECT_EQ(error("9223372036854775808", std::int64_t{}), "n.txt:1: node tag is out of range");
  EXPECT_EQ(error("-1", std::uint64_t{}), "n.txt:1: expected node tag, found '-1'");
  EXPECT_EQ(error("+5", std::int64_t{}), "n.txt:1: expected node tag, found '+5'");
  EXPECT_EQ(error("12x", std::int64_t{}), "n.txt:1: expected node tag, found '12x'");
  EXPECT_EQ(error("-", std::int64_t{}), "n.txt:1: expected node tag, found '-'");
  EXPECT_EQ(error("1.5", std::int64_t{}), "n.txt:1: expected node tag, found '1.5'");
}

TEST(MappedFileGuard, AFileReadIntoMemoryStillReadsWhatItDropped) {
  // Access::read: the file is copied in; released parts become file mappings again, so a
  // second look (an error's line number, a fallback parse) reads the file, not zeros.
  std::string bytes(8u << 20, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + i % 23);
  const auto path = write_temp("read-access.txt", bytes);
  {
    mesh::MappedFile file(path, mesh::Access::read);
    ASSERT_EQ(file.view(), bytes);
    file.release(4096 * 3 + 17, 5u << 20);
    file.release_before(3u << 20);
    EXPECT_EQ(file.view(), bytes);
    EXPECT_NO_THROW(file.check_unchanged());
    // Truncated now: the dropped pages past the new end would raise SIGBUS; the guard turns
    // that into zeros and the change into a ReadError.
    ASSERT_EQ(::truncate(path.c_str(), 4096), 0);
    volatile char sink = file.view()[(4u << 20) + 1];
    (void)sink;
    try {
      file.check_unchanged();
      FAIL() << "a truncated file must be reported";
    } catch (const mesh::ReadError& e) {
      EXPECT_NE(std::string(e.what()).find("(truncated)"), std::string::npos) << e.what();
    }
  }
  ::unlink(path.c_str());
}

// ---- versions other than 2.2 / 4.1 (tests/data/tools/make_msh_versions.py wrote the cube.*
// files with gmsh 4.8; the values below are what meshio 5.0 reads, as REFERENCE.versions.json
// records them) ------------------------------------------------------------------------------

namespace {

std::vector<std::int64_t> row(const mesh::Mesh& m, std::size_t block, std::int64_t r) {
  const auto& c = m.cells[block].connectivity;
  const auto npc = c.dim(1);
  const auto* p = c.as<std::int64_t>() + r * npc;
  return {p, p + npc};
}

std::vector<std::string> types(const mesh::Mesh& m) {
  std::vector<std::string> t;
  for (const auto& b : m.cells) t.push_back(b.type + ":" + std::to_string(b.size()));
  return t;
}

bool all_equal(const mesh::Array& a, std::int32_t value) {
  const auto* v = a.as<std::int32_t>();
  return a.size() > 0 && std::all_of(v, v + a.size(), [&](std::int32_t x) { return x == value; });
}

// gmsh:physical / gmsh:geometrical of each block: its first value, after checking the block is
// constant (every cube block is one physical group on one entity).
template <typename T>
std::vector<std::int64_t> per_block(const mesh::Mesh& m, const std::string& key) {
  std::vector<std::int64_t> out;
  for (const auto& a : m.cell_data.at(key)) {
    const auto* v = a.as<T>();
    EXPECT_TRUE(std::all_of(v, v + a.size(), [&](T x) { return x == v[0]; })) << key;
    out.push_back(v[0]);
  }
  return out;
}

// The cube (45 nodes; 1 vertex, 28 triangles on two physical surfaces, 100 tetrahedra) as
// meshio reads it, whatever the version.
void expect_cube_geometry(const mesh::Mesh& m, const std::string& name, std::size_t tri_blocks) {
  SCOPED_TRACE(name);
  ASSERT_EQ(m.num_points(), 45);
  const double* p = m.points.as<double>();
  EXPECT_EQ(std::vector<double>(p + 3, p + 9), (std::vector<double>{1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(p[3 * 8], 0.4999999999986918);
  ASSERT_EQ(m.cells.size(), 2 + tri_blocks);
  EXPECT_EQ(row(m, 0, 0), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(row(m, 1, 0), (std::vector<std::int64_t>{0, 8, 21}));
  EXPECT_EQ(row(m, 1, 1), (std::vector<std::int64_t>{11, 0, 21}));
  EXPECT_EQ(row(m, tri_blocks, m.cells[tri_blocks].size() - 1),
            (std::vector<std::int64_t>{42, 41, 43}));
  const auto tet = tri_blocks + 1;
  EXPECT_EQ(m.cells[tet].type, "tetra");
  EXPECT_EQ(row(m, tet, 0), (std::vector<std::int64_t>{26, 43, 24, 44}));
  EXPECT_EQ(row(m, tet, 99), (std::vector<std::int64_t>{23, 9, 29, 31}));
}

mesh::Mesh read_file(const std::string& name) {
  return mesh::read_msh_bytes(data_file(name), name);
}

}  // namespace

TEST(MshReader, VersionIsANumberNotText) {
  // What gmsh and other writers print: "2", "2.0", "2.1", "2.2", "2.200000" are all MSH 2.
  for (const char* v : {"2", "2.0", "2.1", "2.2", "2.200000", "2.2000000000"}) {
    std::string s = kTiny22;
    s.replace(s.find("2.2 0 8"), 3, v);
    const auto m = mesh::read_msh_bytes(s, "v.msh");
    EXPECT_EQ(m.num_points(), 4) << v;
    EXPECT_EQ(m.cells.size(), 2u) << v;
    EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int32_t>()[0], 7) << v;
  }
  const std::string list = "(4.1, 4.0, 3.0, 2.2, 2.1, 2.0 and 1 (no $MeshFormat) are read)";
  for (const char* v : {"2.25", "4.2", "5", "1.0", "3.1", "x", "2.2.0", "-2.2", "nan"}) {
    EXPECT_EQ(error_of(std::string("$MeshFormat\n") + v + " 0 8\n$EndMeshFormat\n"),
              std::string("t.msh:2: MSH version ") + v + " is not supported " + list)
        << v;
  }
  // "3" and "3.0" are MSH 3.0: past the format line, the missing sections are what is wrong
  EXPECT_EQ(error_of("$MeshFormat\n3 0 8\n$EndMeshFormat\n"), "t.msh: no $Nodes section");
  EXPECT_EQ(error_of("$MeshFormat\n3.0 0 8\n$EndMeshFormat\n"), "t.msh: no $Nodes section");
}

TEST(MshReader, Msh40AsciiAndBinaryReadLikeMeshio) {
  const auto ascii = read_file("cube.v40.msh");    // "4 0 8", as gmsh -format msh40 writes it
  const auto binary = read_file("cube.v40b.msh");  // "4 1 8": int tags, size_t counts
  for (const auto* m : {&ascii, &binary}) {
    expect_cube_geometry(*m, m == &ascii ? "cube.v40.msh" : "cube.v40b.msh", 2);
    EXPECT_EQ(types(*m),
              (std::vector<std::string>{"vertex:1", "triangle:14", "triangle:14", "tetra:100"}));
    // physical groups from $Entities (4.0 gives points a 6-value box), one block per entity
    EXPECT_EQ(per_block<std::int64_t>(*m, "gmsh:physical"),
              (std::vector<std::int64_t>{31, 11, 12, 21}));
    EXPECT_EQ(per_block<std::int64_t>(*m, "gmsh:geometrical"),
              (std::vector<std::int64_t>{1, 1, 26, 1}));
    EXPECT_EQ(m->point_data.count("gmsh:dim_tags"), 0u);  // meshio's 4.0 reader gives none
    EXPECT_EQ(m->field_data.at("solid").as<std::int64_t>()[0], 21);
    ASSERT_EQ(m->regions.size(), 4u);
    EXPECT_EQ(m->regions[3].name, "solid");
    EXPECT_EQ(m->regions[3].entries.size(), 100u);
    EXPECT_EQ(m->regions[3].entries.as<std::int64_t>()[0], 29);  // after 1 + 14 + 14 cells
    EXPECT_TRUE(m->notes.empty());
  }
}

TEST(MshReader, Msh20AsciiAndBinaryReadLikeMeshio) {
  const auto ascii = read_file("cube.v20.msh");    // "2.0 0 8", no $PhysicalNames
  const auto binary = read_file("cube.v20b.msh");  // "2.0 1 8"
  for (const auto* m : {&ascii, &binary}) {
    expect_cube_geometry(*m, m == &ascii ? "cube.v20.msh" : "cube.v20b.msh", 1);
    EXPECT_EQ(types(*m), (std::vector<std::string>{"vertex:1", "triangle:28", "tetra:100"}));
    const auto& phys = m->cell_data.at("gmsh:physical");
    EXPECT_EQ(phys[1].as<std::int32_t>()[0], 11);
    EXPECT_EQ(phys[1].as<std::int32_t>()[27], 12);
    EXPECT_EQ(m->cell_data.at("gmsh:geometrical")[1].as<std::int32_t>()[27], 26);
    EXPECT_TRUE(all_equal(phys[2], 21));
  }
  EXPECT_TRUE(ascii.regions.empty());
  EXPECT_EQ(binary.regions.size(), 4u);
}

TEST(MshReader, Msh1NodAndElmSectionsReadLikeTheSameMeshIn22) {
  const auto m = read_file("cube.v1.msh");  // gmsh -format msh1: $NOD / $ELM, no $MeshFormat
  expect_cube_geometry(m, "cube.v1.msh", 1);
  EXPECT_EQ(types(m), (std::vector<std::string>{"vertex:1", "triangle:28", "tetra:100"}));
  // "tag type physical elementary nnodes nodes": the tags become cell data as in 2.x
  const auto& phys = m.cell_data.at("gmsh:physical");
  EXPECT_EQ(phys[0].as<std::int32_t>()[0], 31);
  EXPECT_EQ(phys[1].as<std::int32_t>()[0], 11);
  EXPECT_EQ(phys[1].as<std::int32_t>()[27], 12);
  EXPECT_EQ(m.cell_data.at("gmsh:geometrical")[1].as<std::int32_t>()[27], 26);
  EXPECT_TRUE(all_equal(phys[2], 21));
  EXPECT_TRUE(m.field_data.empty());
  EXPECT_TRUE(m.notes.empty());
  // the same arrays as the 2.0 file gmsh wrote from this mesh
  const auto v20 = read_file("cube.v20b.msh");
  for (std::size_t b = 0; b < 3; ++b)
    EXPECT_EQ(m.cells[b].connectivity.size(), v20.cells[b].connectivity.size());
  EXPECT_EQ(0, std::memcmp(m.cells[2].connectivity.data(), v20.cells[2].connectivity.data(),
                           400 * sizeof(std::int64_t)));
  // errors name the MSH 1 sections
  EXPECT_EQ(error_of("$NOD\n1\n1 0 0 0\n$ENDNOD\n"), "t.msh: no $ELM section");
  EXPECT_EQ(error_of("$NOD\n2\n1 0 0 0\n2 1 0 0\n$ENDNOD\n$ELM\n1\n1 1 5 6 3 1 2\n$ENDELM\n"),
            "t.msh:8: a line element has 2 nodes, not 3");
  EXPECT_EQ(error_of("$NOD\n0\n$ENDNOD\n$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"),
            "t.msh:4: $MeshFormat in an MSH 1 file (after $NOD)");
  EXPECT_EQ(error_of("$ELM\n0\n$ENDELM\n"),
            "t.msh:1: the file does not start with $MeshFormat (found $ELM)");
}

TEST(MshReader, ASecondMeshFormatIsReadAgain) {
  // gmsh appends post-processing views to a mesh file after a $MeshFormat of their own
  std::string s = kTiny22;
  s += "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$NodeData\n1\n\"t\"\n0\n3\n0\n1\n1\n30 2.5\n"
       "$EndNodeData\n";
  const auto m = mesh::read_msh_bytes(s, "views.msh");
  EXPECT_EQ(m.num_points(), 4);
  EXPECT_EQ(m.point_data.at("t").as<double>()[2], 2.5);
}

TEST(MshReader, CommentsOrUnknownSectionsBeforeMeshFormatAreSkipped) {
  const auto m = read_file("cube.comments.v41.msh");
  expect_cube_geometry(m, "cube.comments.v41.msh", 2);
  EXPECT_EQ(per_block<std::int64_t>(m, "gmsh:physical"),
            (std::vector<std::int64_t>{31, 11, 12, 21}));
  EXPECT_EQ(m.point_data.count("gmsh:dim_tags"), 1u);
  EXPECT_TRUE(m.notes.empty());
  const auto other = mesh::read_msh_bytes(
      std::string("$MyTool\n$MeshFormat is not here\n$EndMyTool\n") + kTiny22, "t.msh");
  EXPECT_EQ(other.num_points(), 4);
  EXPECT_EQ(other.notes, (std::vector<std::string>{"skipped section $MyTool"}));
  EXPECT_EQ(error_of("$Comments\nno end\n"), "t.msh:1: section $Comments has no $EndComments");
  EXPECT_EQ(error_of("$Comments\n$EndComments\n$Nodes\n0\n$EndNodes\n"),
            "t.msh:3: the file does not start with $MeshFormat (found $Nodes)");
}

TEST(MshReader, BigEndianBinary40IsSwapped) {
  // MSH 4.0 binary from a big-endian machine, by hand: size_t counts, int tags, double boxes
  // and coordinates; one surface entity (tag 5, physical 9) with 3 nodes and one triangle.
  auto be = [](auto v) {
    std::uint64_t u = 0;
    std::memcpy(&u, &v, sizeof v);
    std::string s(sizeof v, '\0');
    for (std::size_t i = 0; i < sizeof v; ++i)
      s[i] = static_cast<char>((u >> (8 * (sizeof v - 1 - i))) & 0xff);
    return s;
  };
  const auto i32 = [&](std::int32_t v) { return be(v); };
  const auto u64 = [&](std::uint64_t v) { return be(v); };
  std::string f = "$MeshFormat\n4 1 8\n" + i32(1) + "\n$EndMeshFormat\n$Entities\n" + u64(0) +
                  u64(0) + u64(1) + u64(0) + i32(5);
  for (int k = 0; k < 6; ++k) f += be(k < 3 ? 0.0 : 1.0);
  f += u64(1) + i32(9) + u64(0) + "\n$EndEntities\n$Nodes\n" + u64(1) + u64(3) + i32(5) + i32(2) +
       i32(0) + u64(3);
  for (int i = 0; i < 3; ++i) f += i32(10 + i) + be(i * 1.5) + be(-1.0 * i) + be(0.25);
  f += "\n$EndNodes\n$Elements\n" + u64(1) + u64(1) + i32(5) + i32(2) + i32(2) + u64(1) + i32(7) +
       i32(12) + i32(11) + i32(10) + "\n$EndElements\n";
  const auto m = mesh::read_msh_bytes(f, "be40.msh");
  ASSERT_EQ(m.num_points(), 3);
  EXPECT_EQ(m.points.as<double>()[3 * 2 + 0], 3.0);
  EXPECT_EQ(m.points.as<double>()[3 * 2 + 1], -2.0);
  EXPECT_EQ(m.points.as<double>()[3 * 2 + 2], 0.25);
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(row(m, 0, 0), (std::vector<std::int64_t>{2, 1, 0}));
  EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int64_t>()[0], 9);
  EXPECT_EQ(m.cell_data.at("gmsh:geometrical")[0].as<std::int64_t>()[0], 5);
  // and every truncation of it is a ReadError (but the final newline's, and one right after
  // $EndEntities: a geometry-only file, read as an empty mesh with a note)
  for (std::size_t cut = 0; cut + 1 < f.size(); ++cut) {
    const auto part = f.substr(0, cut);
    if (part.ends_with("$EndEntities") || part.ends_with("$EndEntities\n")) {
      EXPECT_EQ(mesh::read_msh_bytes(part, "be40.msh").notes.size(), 1u);
      continue;
    }
    EXPECT_THROW(mesh::read_msh_bytes(part, "be40.msh"), mesh::ReadError) << cut;
  }
}

TEST(MshReader, Msh30AsciiAndBinaryReadLikeTheSameMeshIn22) {
  // gmsh -format msh3 ("3 0 8" / "3 1 8"): elements volumes first, physical groups on the
  // entities of an ascii $Entities section; blocks per run of one type, as in 2.x.
  const auto ascii = read_file("cube.v30.msh");
  const auto binary = read_file("cube.v30b.msh");
  const auto twin = read_file("cube.v20b.msh");  // the same mesh (vertex, triangle, tetra)
  for (const auto* m : {&ascii, &binary}) {
    SCOPED_TRACE(m == &ascii ? "cube.v30.msh" : "cube.v30b.msh");
    EXPECT_EQ(types(*m), (std::vector<std::string>{"tetra:100", "triangle:28", "vertex:1"}));
    ASSERT_EQ(m->num_points(), 45);
    EXPECT_EQ(m->points.as<double>()[3 * 8], 0.4999999999986918);
    EXPECT_EQ(row(*m, 0, 0), (std::vector<std::int64_t>{26, 43, 24, 44}));
    EXPECT_EQ(row(*m, 0, 99), (std::vector<std::int64_t>{23, 9, 29, 31}));
    EXPECT_EQ(row(*m, 1, 0), (std::vector<std::int64_t>{0, 8, 21}));
    EXPECT_EQ(row(*m, 1, 27), (std::vector<std::int64_t>{42, 41, 43}));
    EXPECT_EQ(row(*m, 2, 0), (std::vector<std::int64_t>{0}));
    for (std::size_t b = 0; b < 3; ++b) {  // block b here is block 2 - b of the 2.x twin
      const auto& mine = m->cells[b].connectivity;
      const auto& theirs = twin.cells[2 - b].connectivity;
      ASSERT_EQ(mine.size(), theirs.size());
      EXPECT_EQ(0, std::memcmp(mine.data(), theirs.data(), mine.size() * sizeof(std::int64_t)));
      for (const char* key : {"gmsh:physical", "gmsh:geometrical"}) {
        const auto& a = m->cell_data.at(key)[b];
        const auto& t = twin.cell_data.at(key)[2 - b];
        ASSERT_EQ(a.size(), t.size()) << key;
        EXPECT_EQ(0, std::memcmp(a.data(), t.data(), a.size() * sizeof(std::int32_t))) << key;
      }
    }
    EXPECT_EQ(m->cell_data.at("gmsh:physical")[1].as<std::int32_t>()[27], 12);
    EXPECT_EQ(m->cell_data.at("gmsh:geometrical")[1].as<std::int32_t>()[27], 26);
    ASSERT_EQ(m->regions.size(), 4u);
    EXPECT_EQ(m->regions[3].name, "solid");
    EXPECT_EQ(m->regions[3].entries.size(), 100u);
    EXPECT_EQ(m->regions[3].entries.as<std::int64_t>()[0], 0);  // the tetra block comes first
    EXPECT_TRUE(m->notes.empty());
  }
  // a node on an entity gives its dimension and that many parametric coordinates
  const std::string nodes =
      "$MeshFormat\n3 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0 0 0\n2 1 0 0 7 1 0.5\n"
      "3 0 1 0 4 2 0.25 0.75\n$EndNodes\n$Elements\n1\n9 2 4 4 1 2 3 99\n$EndElements\n";
  const auto m = mesh::read_msh_bytes(nodes, "p.msh");
  EXPECT_EQ(std::vector<double>(m.points.as<double>(), m.points.as<double>() + 9),
            (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(row(m, 0, 0), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(m.cell_data.at("gmsh:geometrical")[0].as<std::int32_t>()[0], 4);
  EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int32_t>()[0], 0);  // no $Entities
  EXPECT_EQ(error_of(std::string(nodes).replace(nodes.find("9 2 4 4"), 7, "9 2 4 2")),
            "t.msh:12: a triangle element has 2 data values, not its 3 nodes and a few more");
  EXPECT_EQ(error_of(std::string(nodes).replace(nodes.find("4 2 0.25"), 3, "4 5")),
            "t.msh:8: node entity dimension 5 is not 0..3");
}

namespace {
// A temporary ascii MSH 4.1 file of about `nodes` * 60 bytes, for the progress tests.
std::string big_ascii_msh(std::size_t nodes) {
  char name[] = "/tmp/meshdock-progress-XXXXXX.msh";
  const int fd = ::mkstemps(name, 4);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream f(name);
  f << "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 " << nodes << " 1 " << nodes << "\n3 1 0 "
    << nodes << "\n";
  for (std::size_t i = 1; i <= nodes; ++i) f << i << "\n";
  for (std::size_t i = 1; i <= nodes; ++i)
    f << i * 1.25e-3 << " " << i * 2.5e-3 << " 0.123456789012345678\n";
  f << "$EndNodes\n$Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 4\n$EndElements\n";
  return name;
}
}  // namespace

TEST(ReadProgress, TheReaderReportsTheFurthestByteParsed) {
  const std::string path = big_ascii_msh(200000);  // ~8 MB: eight reports
  const auto size = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  const auto fd = mesh::open_regular(path);
  mesh::ReadProgress progress;
  const auto m = mesh::read_msh(mesh::InFile{fd.get(), path, &progress});
  EXPECT_EQ(m.num_points(), 200000);
  // Not the size (the reads report once a MiB and when they release what they parsed), but
  // within the last MiB of it; and never more than the file.
  EXPECT_LE(progress.bytes(), size);
  EXPECT_GT(progress.bytes() + mesh::ReadProgress::kEvery, size);
  ::unlink(path.c_str());
}

TEST(ReadProgress, ACancelStopsTheReadAtItsNextReport) {
  const std::string path = big_ascii_msh(200000);
  const auto fd = mesh::open_regular(path);
  mesh::ReadProgress progress;
  progress.cancel();
  try {
    mesh::read_msh(mesh::InFile{fd.get(), path, &progress});
    ADD_FAILURE() << "a cancelled read completed";
  } catch (const mesh::ReadError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": read stopped by its caller at byte 0");
  }
  // Without a ReadProgress nothing is reported and nothing stops the read.
  EXPECT_EQ(mesh::read_msh(mesh::InFile{fd.get(), path}).num_points(), 200000);
  ::unlink(path.c_str());
}

TEST(ReadProgress, ACursorReportsOnceAMiBFromItsBase) {
  const std::string text = std::string(3 * mesh::ReadProgress::kEvery, ' ') + "1";
  mesh::ReadProgress progress;
  mesh::Cursor c(text, "p.txt", &progress, 1000);
  c.tick();
  EXPECT_EQ(progress.bytes(), 1000u);  // the first read reports where it starts
  c.seek(mesh::ReadProgress::kEvery - 1);
  c.tick();
  EXPECT_EQ(progress.bytes(), 1000u);    // not yet a MiB further
  EXPECT_EQ(c.number<int>("value"), 1);  // ticks (no report) before it skips the blanks
  c.seek(2 * mesh::ReadProgress::kEvery);
  c.tick();
  EXPECT_EQ(progress.bytes(), 1000u + 2 * mesh::ReadProgress::kEvery);
  c.seek(0);  // a look back never lowers it
  c.tick();
  EXPECT_EQ(progress.bytes(), 1000u + 2 * mesh::ReadProgress::kEvery);
}

// MSH 2.2 with Mesh.SaveParametric writes $ParametricNodes instead of $Nodes: said so, as the
// 4.1 path says it of a parametric node block (it was "$Elements comes before $Nodes").
TEST(MshReader, ParametricNodesAreRefusedByName) {
  const std::string text =
      "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
      "$ParametricNodes\n1\n1 0 0 0 0 1\n$EndParametricNodes\n"
      "$Elements\n1\n1 15 2 0 1 1\n$EndElements\n";
  const auto e = error_of(text);
  EXPECT_NE(e.find("t.msh:4: parametric nodes ($ParametricNodes"), std::string::npos) << e;
  EXPECT_NE(e.find("not supported"), std::string::npos) << e;
}

// tests/data/gmsh/partplate.p2.v41.msh (gmsh -part 2; tests/data/tools/make_msh_partitions.py): 2
// lines and 2 quads of the model, plus a vertex and a line gmsh added on the interface between the
// partitions. Physical groups come from $PartitionedEntities, the model entity is the parent.
TEST(MshReader, PartitionedEntitiesGiveEachElementItsGroupEntityAndPartition) {
  const auto text = gmsh_file("partplate.p2.v41.msh");
  const auto m = mesh::read_msh_bytes(text, "plate.msh");
  ASSERT_EQ(m.cells.size(), 4u);
  const auto column = [&](const char* name) {
    std::vector<std::int64_t> v;
    for (const auto& a : m.cell_data.at(name)) v.push_back(a.as<std::int64_t>()[0]);
    return v;
  };
  EXPECT_EQ(column("gmsh:physical"), (std::vector<std::int64_t>{5, 5, 6, 6}));
  EXPECT_EQ(column("gmsh:geometrical"), (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(column("gmsh:partition"), (std::vector<std::int64_t>{2, 1, 2, 1}));
  ASSERT_EQ(m.regions.size(), 2u);
  EXPECT_EQ(m.regions[0].name, "bottom");
  EXPECT_EQ(m.regions[0].entries.size(), 2u);
  EXPECT_EQ(m.regions[1].name, "plate");
  EXPECT_EQ(m.regions[1].entries.size(), 2u);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_EQ(m.notes[1].rfind("dropped 2 elements gmsh added on the interfaces", 0), 0u);
  // every node names its model entity (the interface point 10 is a piece of curve 1)
  const auto* dt = m.point_data.at("gmsh:dim_tags").as<std::int64_t>();
  for (std::int64_t i = 0; i < m.num_points(); ++i) {
    EXPECT_LE(dt[2 * i], 2);
    EXPECT_LE(dt[2 * i + 1], 4);
  }
}

TEST(MshReader, PartitionedEntitiesErrorsNameTheLine) {
  auto text = gmsh_file("partplate.p2.v41.msh");
  // point entity 10 (a piece of curve 1) given a parent of dimension -1
  const auto at = text.find("\n10 1 1 2 1 2 ");
  ASSERT_NE(at, std::string::npos);
  auto bad = text;
  bad.replace(at, 5, "\n10 -1");
  auto e = error_of(bad);
  EXPECT_NE(e.find("partitioned entity (0, 10) has parent dimension -1"), std::string::npos) << e;
  const auto lines_before = std::count(text.begin(), text.begin() + at + 1, '\n') + 1;
  EXPECT_NE(e.find("t.msh:" + std::to_string(lines_before) + ":"), std::string::npos) << e;
  // cut short: the count of partitioned entities promises more than the file holds
  bad = text.substr(0, text.find("$PartitionedEntities") + 30);
  e = error_of(bad);
  EXPECT_NE(e.find("t.msh:"), std::string::npos) << e;
}

// gmsh -0 of points: 4.1 writes $Entities but no $Nodes / $Elements (2.2 writes empty ones).
TEST(MshReader, GeometryOnlyMsh41IsAnEmptyMesh) {
  const auto m = mesh::read_msh_bytes(gmsh_file("points.v41.msh"), "points.msh");
  EXPECT_EQ(m.num_points(), 0);
  EXPECT_TRUE(m.cells.empty());
  ASSERT_EQ(m.regions.size(), 1u);
  EXPECT_EQ(m.regions[0].name, "ends");
  EXPECT_EQ(m.field_data.at("ends").as<std::int64_t>()[0], 7);
  // without $Entities it is still a file with no mesh section
  EXPECT_NE(error_of("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n").find("no $Nodes section"),
            std::string::npos);
}

// Partitioned MSH 2.2 (gmsh -part N -format msh22): an element's tags are physical, elementary,
// numPartitions, its partition, then the other partitions it touches, negated (-part_ghosts).
// The cells, groups and partitions against the 4.1 file of the same partitioning are checked in
// tests/python/test_read_reference.py; here the tags' reading and their errors.
namespace {

const char* kPart22 =
    "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
    "$Nodes\n4\n10 0 0 0\n20 1 0 0\n30 0 1 0\n40 0 0 1\n$EndNodes\n"
    "$Elements\n3\n"
    "1 2 4 7 1 1 2 10 20 30\n"           // line 13: partition 2
    "2 4 6 0 1 3 1 -2 -3 10 20 30 40\n"  // line 14: partition 1, touching 2 and 3
    "3 4 2 0 1 10 20 30 40\n"            // line 15: no partition tags
    "$EndElements\n";

std::string le32(std::int32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

// A binary 2.2 file of one tetrahedron whose tags are `tags` (in one run of its own).
std::string binary22_tet(const std::vector<std::int32_t>& tags) {
  std::string f = "$MeshFormat\n2.2 1 8\n" + le32(1) + "\n$EndMeshFormat\n$Nodes\n4\n";
  for (int i = 0; i < 4; ++i) {
    const double xyz[3] = {i == 1 ? 1.0 : 0.0, i == 2 ? 1.0 : 0.0, i == 3 ? 1.0 : 0.0};
    f += le32(i + 1) + std::string(reinterpret_cast<const char*>(xyz), sizeof xyz);
  }
  f += "\n$EndNodes\n$Elements\n1\n" + le32(4) + le32(1) +
       le32(static_cast<std::int32_t>(tags.size())) + le32(9);
  for (auto t : tags) f += le32(t);
  for (int n = 1; n <= 4; ++n) f += le32(n);
  return f + "\n$EndElements\n";
}

}  // namespace

TEST(MshReader, PartitionedMsh22TagsGivePartitions) {
  const auto m = mesh::read_msh_bytes(kPart22, "p.msh");
  ASSERT_EQ(m.cells.size(), 2u);
  const auto& parts = m.cell_data.at("gmsh:partition");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].as<std::int64_t>()[0], 2);
  EXPECT_EQ(parts[1].as<std::int64_t>()[0], 1);
  EXPECT_EQ(parts[1].as<std::int64_t>()[1], 0);  // the tetrahedron with 2 tags
  EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int32_t>()[0], 7);
  EXPECT_EQ(m.cell_data.at("gmsh:geometrical")[1].as<std::int32_t>()[0], 1);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_EQ(m.notes[0].rfind("partitioned MSH 2.2 (numPartitions, partition, ghost partitions", 0),
            0u);
  EXPECT_EQ(m.notes[1],
            "1 elements have no partition tags (3 tags or fewer): gmsh:partition "
            "gives them 0");
  // binary: the same tags, one run per tag count
  const auto b = mesh::read_msh_bytes(binary22_tet({0, 1, 3, 2, -1, -3}), "b.msh");
  EXPECT_EQ(b.cell_data.at("gmsh:partition")[0].as<std::int64_t>()[0], 2);
  EXPECT_EQ(b.notes.size(), 1u);
  // 2 tags (and 3, whose third gmsh ignores in 2.2): no gmsh:partition, no note, as before
  for (const auto& tags : {std::vector<std::int32_t>{0, 1}, std::vector<std::int32_t>{0, 1, 5}}) {
    const auto plain = mesh::read_msh_bytes(binary22_tet(tags), "b.msh");
    EXPECT_EQ(plain.cell_data.count("gmsh:partition"), 0u);
    EXPECT_TRUE(plain.notes.empty());
  }
}

// Tags after the elementary one that are not gmsh's partition layout (another writer's own):
// gmsh and meshio read past them, so the file reads, the element gets no partition, and a note
// names the first such element (ascii: its line; binary: its byte).
TEST(MshReader, PartitionedMsh22OddTagsAreReadWithoutAPartitionAndNoted) {
  const std::string s = kPart22;
  const auto row = s.find("2 4 6 0 1 3 1 -2 -3");
  const auto odd_note = [](const mesh::Mesh& m) {
    for (const auto& n : m.notes)
      if (n.find("not gmsh's partition tags") != std::string::npos) return n;
    return std::string("no such note");
  };
  // numPartitions 2 but 3 tags after it
  auto m = mesh::read_msh_bytes(std::string(s).replace(row, 19, "2 4 6 0 1 2 1 -2 -3"), "t.msh");
  EXPECT_EQ(odd_note(m),
            "1 elements have tags after the elementary tag that are not gmsh's partition tags "
            "(the first: t.msh:14: element 2: its partition count (the third tag) is not the "
            "number of tags after it (a partitioned MSH 2.2 element has 3 + numPartitions "
            "tags)): read without a partition, those tags ignored");
  EXPECT_EQ(m.cell_data.at("gmsh:physical")[0].as<std::int32_t>()[0], 7);
  m = mesh::read_msh_bytes(std::string(s).replace(row, 19, "2 4 6 0 1 3 0 -2 -3"), "t.msh");
  EXPECT_NE(odd_note(m).find("t.msh:14: element 2: its partition (the fourth tag) is not "
                             "positive (gmsh numbers partitions from 1"),
            std::string::npos)
      << odd_note(m);
  // binary names the element and its byte; a file of odd tags alone has no gmsh:partition
  m = mesh::read_msh_bytes(binary22_tet({0, 1, 1, 2, -1}), "t.msh");
  EXPECT_NE(odd_note(m).find("(the first: t.msh: element 9 (byte "), std::string::npos)
      << odd_note(m);
  EXPECT_NE(odd_note(m).find("): its partition count (the third tag) is not the number of tags "
                             "after it"),
            std::string::npos)
      << odd_note(m);
  EXPECT_EQ(m.cell_data.count("gmsh:partition"), 0u);
  ASSERT_EQ(m.cells.size(), 1u);
  m = mesh::read_msh_bytes(binary22_tet({0, 1, 1, -2}), "t.msh");
  EXPECT_NE(odd_note(m).find("its partition (the fourth tag) is not positive"), std::string::npos)
      << odd_note(m);
  // every truncation of gmsh's binary file with ghosts (runs of 4 to 6 tags) is a ReadError
  const auto full = gmsh_file("partbox.p3-ghosts.v22b.msh");
  EXPECT_NO_THROW(mesh::read_msh_bytes(full, "g.msh"));
  for (std::size_t cut = 0; cut < full.size(); cut += 89)
    EXPECT_THROW(mesh::read_msh_bytes(full.substr(0, cut), "g.msh"), mesh::ReadError) << cut;
  // 2.0 / 2.1 give the third tag another meaning (gmsh reads a partition there): not checked
  auto v21 = std::string(s).replace(row, 19, "2 4 6 0 1 2 1 -2 -3");
  v21.replace(v21.find("2.2 0 8"), 7, "2.1 0 8");
  EXPECT_EQ(error_of(v21), "no error");
  const auto m21 = mesh::read_msh_bytes(v21, "v21.msh");
  EXPECT_EQ(m21.cell_data.count("gmsh:partition"), 0u);  // as before: the tags are skipped
  EXPECT_TRUE(m21.notes.empty());
}

// gmsh 4.11 writes some nodes twice, in two entities' blocks at the same coordinates (a
// recombined two-volume box: 44 of 2,423); meshio reads such a file, the later definition
// winning. It was refused ("node tag 1245 is defined twice"); a tag at two places still is.
TEST(MshReader, ANodeWrittenTwiceAtTheSameCoordinatesIsReadAsMeshioReadsIt) {
  for (const std::string far : {"", "000000000"}) {  // dense tags, then hashed ones
    SCOPED_TRACE(far.empty() ? "dense" : "hashed");
    const std::string t20 = "20" + far;
    const std::string text =
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
        "$Nodes\n5\n10 0 0 0\n" +
        t20 + " 1 0 0\n30 0 1 0\n" + t20 +
        " 1 0 0\n40 0 0 1\n"
        "$EndNodes\n$Elements\n1\n2 4 2 0 1 10 " +
        t20 + " 30 40\n$EndElements\n";
    const auto m = mesh::read_msh_bytes(text, "t.msh");
    ASSERT_EQ(m.num_points(), 5);
    const auto* tet = m.cells[0].connectivity.as<std::int64_t>();
    EXPECT_EQ(std::vector<std::int64_t>(tet, tet + 4), (std::vector<std::int64_t>{0, 3, 2, 4}));
    ASSERT_EQ(m.notes.size(), 1u);
    EXPECT_NE(m.notes[0].find(
                  "1 node tag is defined twice at the same coordinates (the first: " + t20 + ")"),
              std::string::npos)
        << m.notes[0];

    std::string moved = text;
    moved.replace(moved.rfind(t20 + " 1 0 0"), t20.size() + 6, t20 + " 2 0 0");
    EXPECT_NE(error_of(moved).find("node tag " + t20 +
                                   " is defined twice (nodes 2 and 4 of the section), at "
                                   "(1, 0, 0) and at (2, 0, 0)"),
              std::string::npos)
        << error_of(moved);
  }
}

// gmsh wrote the same two-volume box in MSH 2.2 with a node count short of its rows (2,379 for
// 2,423 rows; meshio refuses it too): the message says which count the end was expected after.
TEST(MshReader, ASectionLongerThanItsCountNamesTheCount) {
  const std::string text =
      "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n2\n1 0 0 0\n2 1 0 0\n3 0 1 0\n$EndNodes\n";
  EXPECT_NE(error_of(text).find("t.msh:8: expected '$EndNodes' after the 2 nodes its count gives, "
                                "found '3 0 1 0'"),
            std::string::npos)
      << error_of(text);
  const std::string elements =
      "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n2\n1 0 0 0\n2 1 0 0\n$EndNodes\n"
      "$Elements\n1\n1 1 2 0 1 1 2\n2 1 2 0 1 2 1\n$EndElements\n";
  EXPECT_NE(error_of(elements).find("after the 1 elements its count gives"), std::string::npos)
      << error_of(elements);
}

// A UTF-8 byte-order mark at the start (Windows editors write one) marks the encoding and is no
// part of the file's text: ascii and binary files, from memory and from a file (binary 4.1
// streamed with pread, binary 2.2 mapped, ascii read in), read as without it, their lines
// counted as the file's. One anywhere but at byte 0 is still text.
TEST(MshReader, AUtf8ByteOrderMarkAtTheStartIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  for (const char* name :
       {"plate.v41b.msh", "plate.v22b.msh", "plate.v41.msh", "cube.v30.msh", "cube.v1.msh"}) {
    SCOPED_TRACE(name);
    const auto plain = data_file(name);
    const auto want = mesh::read_msh_bytes(plain, name);
    const auto path = write_temp(std::string("bom-") + name, bom + plain);
    for (const auto& got : {mesh::read_msh_bytes(bom + plain, name), mesh::read_mesh(path)}) {
      ASSERT_EQ(got.num_points(), want.num_points());
      EXPECT_EQ(0, std::memcmp(got.points.data(), want.points.data(),
                               want.points.size() * sizeof(double)));
      ASSERT_EQ(types(got), types(want));
      for (std::size_t b = 0; b < want.cells.size(); ++b) {
        const auto& w = want.cells[b].connectivity;
        EXPECT_EQ(0, std::memcmp(got.cells[b].connectivity.data(), w.data(),
                                 w.size() * sizeof(std::int64_t)))
            << b;
      }
      EXPECT_EQ(got.field_data.size(), want.field_data.size());
      EXPECT_EQ(got.notes, want.notes);
    }
    ::unlink(path.c_str());
  }
  EXPECT_EQ(error_of(bom + "$MeshFormat\n9.9 0 8\n$EndMeshFormat\n"),
            "t.msh:2: MSH version 9.9 is not supported (4.1, 4.0, 3.0, 2.2, 2.1, 2.0 and 1 (no "
            "$MeshFormat) are read)");
  EXPECT_EQ(error_of("\n" + bom + kTiny22),
            "t.msh:2: expected a section header like $Nodes, found '" + bom + "$MeshFormat'");
}

// MSH 3.0 is read (gmsh -format msh3: nodes "tag x y z entity [dim u v w]"). A 2.x body under a
// $MeshFormat of 3.0 misreads from its first node on and fails further down: the message says
// the header and the rows disagree, where the failure alone pointed at $EndNodes.
TEST(MshReader, A2xBodyUnderA30HeaderNamesTheHeader) {
  std::string text = kTiny22;
  text.replace(text.find("2.2 0 8"), 3, "3.0");
  EXPECT_EQ(error_of(text),
            "t.msh:14: expected node entity, found '$EndNodes' (the $MeshFormat on line 2 says "
            "3.0, whose node rows are 'tag x y z entity [dim u v w]', but the first, on line 10, "
            "has the 4 values of an MSH 2.x row)");
  // The review's file: three nodes and a triangle.
  EXPECT_EQ(error_of("$MeshFormat\n3.0 0 8\n$EndMeshFormat\n$Nodes\n3\n1 0 0 0\n2 1 0 0\n3 0 1 "
                     "0\n$EndNodes\n$Elements\n1\n1 2 2 0 1 1 2 3\n$EndElements\n"),
            "t.msh:9: expected node tag, found '$EndNodes' (the $MeshFormat on line 2 says 3.0, "
            "whose node rows are 'tag x y z entity [dim u v w]', but the first, on line 6, has "
            "the 4 values of an MSH 2.x row)");
}
