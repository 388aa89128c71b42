// Every reader reports how far it got (ReadProgress) and stops when asked: a mesh of ~180k
// triangles written in every format and encoding meshdock writes (files of 4-20 MB, several
// reports each), read back with a ReadProgress. The daemon's READ progress bar and a client's
// cancel during a long read depend on it (daemon/service/registry.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace mesh = meshdock::mesh;

namespace {

// An n x n grid of points in the plane, two triangles per square, with point and cell data.
mesh::Mesh grid(std::int64_t n) {
  mesh::Mesh m;
  m.points = mesh::Array::of<double>({n * n, 3});
  auto* p = m.points.as<double>();
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < n; ++i) {
      // a little noise, so that zlib cannot squeeze the file under a few MiB
      const auto noise = static_cast<double>((i * 2654435761u + j * 40503u) % 1000003u) * 1e-9;
      p[3 * (j * n + i)] = 0.001 * static_cast<double>(i) + noise;
      p[3 * (j * n + i) + 1] = 0.001 * static_cast<double>(j) - noise;
      p[3 * (j * n + i) + 2] = noise;
    }
  const std::int64_t tris = 2 * (n - 1) * (n - 1);
  auto conn = mesh::Array::of<std::int64_t>({tris, 3});
  auto* c = conn.as<std::int64_t>();
  std::int64_t t = 0;
  for (std::int64_t j = 0; j + 1 < n; ++j)
    for (std::int64_t i = 0; i + 1 < n; ++i) {
      const std::int64_t a = j * n + i, b = a + 1, d = a + n, e = d + 1;
      c[3 * t] = a, c[3 * t + 1] = b, c[3 * t + 2] = e, ++t;
      c[3 * t] = a, c[3 * t + 1] = e, c[3 * t + 2] = d, ++t;
    }
  m.cells.push_back(mesh::CellBlock::fixed("triangle", std::move(conn)));
  auto temp = mesh::Array::of<double>({n * n});
  for (std::int64_t k = 0; k < n * n; ++k) temp.as<double>()[k] = 0.25 * static_cast<double>(k);
  m.point_data["T"] = std::move(temp);
  return m;
}

struct Case {
  const char* file;
  const char* encoding;
  const char* format = "";
};

class EveryReader : public ::testing::TestWithParam<Case> {
 protected:
  // The file, written with meshdock's writer into the temporary directory.
  static std::string write(const Case& c) {
    const std::string path = std::filesystem::temp_directory_path() /
                             ("meshdock-progress-" + std::to_string(::getpid()) + "-" + c.file);
    mesh::WriteOptions o;
    o.encoding = c.encoding;
    o.format = c.format;
    mesh::write_mesh(grid(300), path, o);
    return path;
  }
};

TEST_P(EveryReader, ReportsUpToTheLastMiBAndStopsWhenAsked) {
  const std::string path = write(GetParam());
  const auto size = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  ASSERT_GT(size, 2 * mesh::ReadProgress::kEvery) << "too small to show progress";
  const auto fd = mesh::open_regular(path);
  {
    mesh::ReadProgress progress;
    const auto m = mesh::read_mesh(mesh::InFile{fd.get(), path, &progress});
    EXPECT_EQ(m.num_points(), 300 * 300);
    EXPECT_LE(progress.bytes(), size);
    EXPECT_GT(progress.bytes() + mesh::ReadProgress::kEvery, size)
        << "the last report is at byte " << progress.bytes() << " of " << size;
  }
  mesh::ReadProgress cancelled;
  cancelled.cancel();
  try {
    mesh::read_mesh(mesh::InFile{fd.get(), path, &cancelled});
    ADD_FAILURE() << "a cancelled read of " << path << " completed";
  } catch (const mesh::ReadError& e) {
    EXPECT_NE(std::string(e.what()).find("read stopped by its caller at byte"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, EveryReader,
    ::testing::Values(
        Case{"g.msh", "ascii"}, Case{"g.msh", "binary"}, Case{"g22.msh", "ascii", "msh22"},
        Case{"g22b.msh", "binary", "msh22"}, Case{"g.vtu", "ascii"}, Case{"g.vtu", "raw"},
        Case{"g.vtu", "zlib"}, Case{"g.vtp", "ascii"}, Case{"g.vtp", "zlib"},
        Case{"g.vtk", "ascii"}, Case{"g.vtk", "binary"}, Case{"g.stl", "ascii"},
        Case{"g.stl", "binary"}, Case{"g.obj", ""}, Case{"g.ply", "ascii"}, Case{"g.ply", "binary"},
        Case{"g.off", ""}, Case{"g.ugrid", ""}, Case{"g.b8.ugrid", ""}, Case{"g.lr4.ugrid", ""},
        Case{"g.f3grid", "ascii"}, Case{"g.f3grid", "binary"}, Case{"g.vol", ""},
        Case{"ga.msh", "ascii", "ansys"}, Case{"gb.msh", "binary", "ansys"}, Case{"g.mdpa", ""}),
    [](const auto& info) {
      std::string s = std::string(info.param.file) + "_" + info.param.encoding;
      for (auto& ch : s)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

}  // namespace
