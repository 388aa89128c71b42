// libFuzzer target for the TetGen reader: the input is the pair, the .node text, a NUL byte and
// the .ele text (no NUL: all of it is the .node file, and the .ele file is empty). Each goes
// into a memfd: read_tetgen reads the .node fd and opens the .ele one through open_sibling, so
// the real file code (window, advance) runs for both. What it reads must be a valid Mesh:
// validate_mesh's MeshError is not caught, so a bad index or shape let through is a crash here.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;
using meshdock::fuzz::memfd_with;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t node_size = nul ? static_cast<std::size_t>(nul - data) : size;
  const meshdock::fuzz::MemfdInput node(data, node_size);
  if (node.fd() < 0) return 0;
  const std::uint8_t* ele = nul ? nul + 1 : data + size;
  const std::size_t ele_size = static_cast<std::size_t>(data + size - ele);
  mesh::ReadOptions options;
  options.open_sibling = [&](const std::string&) {
    return mesh::UniqueFd(memfd_with(ele, ele_size));
  };
  try {
    const auto m = mesh::read_tetgen(mesh::InFile{node.fd(), "fuzz.node"}, options);
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
