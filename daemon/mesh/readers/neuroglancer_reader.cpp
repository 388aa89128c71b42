// Neuroglancer's legacy precomputed mesh (one fragment file, no extension: meshio's
// "neuroglancer"; the meshes of connectomics segmentations): little-endian
//   uint32 n | n x (float32 x, y, z) | m x (uint32 v0, v1, v2)
// -> points (n, 3) float64 (the float32 values widened exactly; meshio keeps float32), one
// triangle block (m, 3) int64. The byte count must be 4 + 12 n + 12 m: a file shorter than its
// vertices or with a partial triangle is a ReadError naming the file and the sizes, as is a
// vertex number >= n (meshio lets n itself through: its check is `> n`). Vertices and
// triangles are read with pread a few thousand at a time, their pages never mapped.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {

constexpr std::size_t kChunk = 1 << 16;  // values a pread: 256 KiB of float32 / uint32

// `count` little-endian 32-bit values of T from byte `offset`, each passed to put(i, value).
template <typename T, typename Put>
void read_values(const MappedFile& file, std::size_t offset, std::size_t count, Put&& put) {
  std::vector<T> buf(std::min(count, kChunk));
  for (std::size_t i0 = 0; i0 < count; i0 += kChunk) {
    const std::size_t n = std::min(kChunk, count - i0);
    file.read_at(offset + 4 * i0, 4 * n, reinterpret_cast<char*>(buf.data()));
    for (std::size_t i = 0; i < n; ++i) put(i0 + i, buf[i]);
    if (file.progress()) file.progress()->reached(offset + 4 * (i0 + n), file.path());
  }
}

}  // namespace

Mesh read_neuroglancer(const InFile& in) {
  return parse_mapped(
      in,
      [&](std::string_view data, MappedFile& file) {
        const std::string& path = in.path;
        const std::size_t size = data.size();
        if (size < 4)
          throw ReadError(path + ": " + std::to_string(size) +
                          " bytes: a Neuroglancer precomputed mesh starts with a 4-byte vertex "
                          "count");
        std::uint32_t n = 0;
        file.read_at(0, 4, reinterpret_cast<char*>(&n));
        const std::uint64_t vertex_end = 4 + 12ull * n;
        if (vertex_end > size)
          throw ReadError(path + ": byte 0: the vertex count " + std::to_string(n) + " needs " +
                          std::to_string(vertex_end) + " bytes, the file has " +
                          std::to_string(size) +
                          " (truncated, or not a Neuroglancer precomputed mesh)");
        if ((size - vertex_end) % 12 != 0)
          throw ReadError(path + ": byte " + std::to_string(vertex_end) + ": the " +
                          std::to_string(size - vertex_end) +
                          " bytes after the vertices are not whole triangles (12 bytes each): "
                          "truncated, or not a Neuroglancer precomputed mesh");
        const auto tris = static_cast<std::int64_t>((size - vertex_end) / 12);
        Mesh m;
        m.points = Array::of<double>({static_cast<std::int64_t>(n), 3});
        double* p = m.points.as<double>();
        read_values<float>(file, 4, 3ull * n, [&](std::size_t i, float v) { p[i] = v; });
        auto conn = Array::of<std::int64_t>({tris, 3});
        auto* c = conn.as<std::int64_t>();
        read_values<std::uint32_t>(
            file, vertex_end, 3ull * static_cast<std::uint64_t>(tris),
            [&](std::size_t i, std::uint32_t v) {
              if (v >= n) [[unlikely]]
                throw ReadError(path + ": byte " + std::to_string(vertex_end + 4 * i) +
                                ": triangle " + std::to_string(i / 3) + " names vertex " +
                                std::to_string(v) + " of " + std::to_string(n));
              c[i] = v;
            });
        m.cells.push_back(CellBlock::fixed("triangle", std::move(conn)));
        return m;
      },
      Access::map_lazily);
}

}  // namespace meshdock::mesh
