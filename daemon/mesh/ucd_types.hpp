// AVS UCD's cell types, shared by read_ucd and write_ucd: the name in the file, meshio's type,
// the node count and the node order (meshio's, as its avsucd module reads and writes them). One
// table so that the reader and the writer cannot disagree on an order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace meshdock::mesh {

struct UcdType {
  std::string_view ucd;
  std::string_view meshio;
  std::size_t nodes;
  std::array<std::uint8_t, 8> order;  // meshio's node k is the file's node order[k]
};

inline constexpr std::array<UcdType, 8> kUcdTypes{{
    {"pt", "vertex", 1, {0}},
    {"line", "line", 2, {0, 1}},
    {"tri", "triangle", 3, {0, 1, 2}},
    {"quad", "quad", 4, {0, 1, 2, 3}},
    {"tet", "tetra", 4, {0, 1, 3, 2}},
    {"pyr", "pyramid", 5, {1, 2, 3, 4, 0}},
    {"prism", "wedge", 6, {3, 4, 5, 0, 1, 2}},
    {"hex", "hexahedron", 8, {4, 5, 6, 7, 0, 1, 2, 3}},
}};

}  // namespace meshdock::mesh
