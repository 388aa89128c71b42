// libFuzzer target for the PERMAS reader (.dato / .post and, by the gzip magic, .post.gz):
// the input is written to a memfd and read_permas reads that fd, so the real file code (window,
// inflate) runs too. max_bytes bounds what a gzip input inflates to. What it reads must be a
// valid Mesh: validate_mesh's MeshError is not caught.
#include <cstddef>
#include <cstdint>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const meshdock::fuzz::MemfdInput input(data, size);
  if (input.fd() < 0) return 0;
  mesh::ReadOptions options;
  options.max_bytes = std::uint64_t{64} << 20;
  try {
    const auto m = mesh::read_permas(mesh::InFile{input.fd(), "fuzz"}, options);
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
