// Google Benchmark micro-benchmarks of the hot paths that scripts/bench measures end to end:
// the Gmsh parser on an in-memory file (ascii and binary 4.1), base64 decoding, and the catalog
// seqlock. Run: build/tests/bench_core [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/base64.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "meshdock/shm.hpp"

namespace {

// A structured grid of n^3 cubes, 6 tetrahedra each, as an MSH 4.1 file.
std::string make_msh41(int n, bool binary) {
  const int m = n + 1;
  const std::size_t points = static_cast<std::size_t>(m) * m * m;
  const std::size_t tets = 6ull * n * n * n;
  std::string s = "$MeshFormat\n4.1 " + std::string(binary ? "1" : "0") + " 8\n";
  if (binary) {
    const int one = 1;
    s.append(reinterpret_cast<const char*>(&one), 4);
    s += "\n";
  }
  s += "$EndMeshFormat\n$Nodes\n";
  auto put_size = [&](std::uint64_t v) {
    if (binary)
      s.append(reinterpret_cast<const char*>(&v), 8);
    else
      s += std::to_string(v) + " ";
  };
  auto put_int = [&](std::int32_t v) {
    if (binary)
      s.append(reinterpret_cast<const char*>(&v), 4);
    else
      s += std::to_string(v) + " ";
  };
  put_size(1), put_size(points), put_size(1), put_size(points);
  if (!binary) s += "\n";
  put_int(3), put_int(1), put_int(0), put_size(points);
  if (!binary) s += "\n";
  for (std::size_t i = 0; i < points; ++i) {
    put_size(i + 1);
    if (!binary) s += "\n";
  }
  for (std::size_t i = 0; i < points; ++i) {
    const double xyz[3] = {static_cast<double>(i % m) / n, static_cast<double>((i / m) % m) / n,
                           static_cast<double>(i / m / m) / n};
    if (binary)
      s.append(reinterpret_cast<const char*>(xyz), 24);
    else
      s += std::to_string(xyz[0]) + " " + std::to_string(xyz[1]) + " " + std::to_string(xyz[2]) +
           "\n";
  }
  s += binary ? "\n$EndNodes\n$Elements\n" : "$EndNodes\n$Elements\n";
  put_size(1), put_size(tets), put_size(1), put_size(tets);
  if (!binary) s += "\n";
  put_int(3), put_int(1), put_int(4), put_size(tets);
  if (!binary) s += "\n";
  for (std::size_t t = 0; t < tets; ++t) {
    const std::size_t base = (t / 6) % points;
    put_size(t + 1);
    for (std::size_t k = 0; k < 4; ++k) put_size(1 + (base + k) % points);
    if (!binary) s += "\n";
  }
  s += binary ? "\n$EndElements\n" : "$EndElements\n";
  return s;
}

void BM_ReadMsh41(benchmark::State& state) {
  const auto file = make_msh41(static_cast<int>(state.range(0)), state.range(1) != 0);
  for (auto _ : state) {
    auto m = meshdock::mesh::read_msh_bytes(file, "bench.msh");
    benchmark::DoNotOptimize(m.points.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * file.size()));
  state.SetLabel(state.range(1) ? "binary" : "ascii");
}
BENCHMARK(BM_ReadMsh41)->Args({30, 0})->Args({30, 1})->Unit(benchmark::kMillisecond);

void BM_Base64Decode(benchmark::State& state) {
  std::string text;
  for (int i = 0; i < 1 << 20; ++i) text += "QUJD";
  std::vector<std::uint8_t> out;
  for (auto _ : state) {
    out.clear();
    benchmark::DoNotOptimize(meshdock::mesh::base64_decode(text, out));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_Base64Decode)->Unit(benchmark::kMillisecond);

void BM_SeqlockWriteRead(benchmark::State& state) {
  meshdock::shm::CatalogParams p;
  p.num_slots = 1;
  p.page_size = 65536;
  std::vector<std::uint64_t> mem(meshdock::shm::catalog_size(1, p.page_size) / 8);
  auto cat = meshdock::shm::CatalogView::initialize(mem.data(), mem.size() * 8, p);
  auto page = cat.page(0);
  const std::string manifest(2000, 'x');
  std::uint64_t frame = 0;
  for (auto _ : state) {
    page.write(++frame, manifest.size(), 1, manifest);
    auto snap = page.try_read();
    benchmark::DoNotOptimize(snap);
  }
}
BENCHMARK(BM_SeqlockWriteRead);

}  // namespace

BENCHMARK_MAIN();
