// libFuzzer target for the Kratos mdpa reader:
// the input is written to a memfd and read_mdpa reads that fd, so the real file code (map,
// window, read) runs too. What it reads must be a valid Mesh: validate_mesh's MeshError is not
// caught, so a reader that lets a bad index or shape through is a crash here.
#include <cstddef>
#include <cstdint>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const meshdock::fuzz::MemfdInput input(data, size);
  if (input.fd() < 0) return 0;
  try {
    const auto m = mesh::read_mdpa(mesh::InFile{input.fd(), "fuzz"});
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
