// libFuzzer target for the DOLFIN XML reader: the input up to its first NUL byte is the mesh
// (x.xml), what follows it a mesh function beside it (x_f.xml, found through list_siblings and
// opened through open_sibling), so that the placing of collections by dimension is fuzzed too.
// Both are written to memfds, read through the real file code. What it reads must be a valid
// Mesh: validate_mesh's MeshError is not caught.
#include <fcntl.h>
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* nul = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t head = nul ? static_cast<std::size_t>(nul - data) : size;
  const meshdock::fuzz::MemfdInput input(data, head);
  const meshdock::fuzz::MemfdInput sibling(nul ? nul + 1 : data, nul ? size - head - 1 : 0);
  if (input.fd() < 0 || sibling.fd() < 0) return 0;
  mesh::ReadOptions options;
  options.max_bytes = std::uint64_t{64} << 20;
  if (nul) {
    options.list_siblings = [] { return std::vector<std::string>{"x_f.xml", "y_f.xml"}; };
    options.open_sibling = [&](const std::string&) {
      return mesh::UniqueFd(::fcntl(sibling.fd(), F_DUPFD_CLOEXEC, 0));
    };
  }
  try {
    const auto m = mesh::read_dolfin(mesh::InFile{input.fd(), "x.xml"}, options);
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
