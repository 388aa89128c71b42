// libFuzzer target for the surface reader family (STL, OFF, OBJ, PLY, Neuroglancer precomputed):
// the input is written to a memfd and each reader reads that fd, so the real file code (map,
// read) runs too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/mesh/readers/readers.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const meshdock::fuzz::MemfdInput input(data, size);
  if (input.fd() < 0) return 0;
  const mesh::InFile file{input.fd(), "fuzz"};
  for (auto* reader : {&mesh::read_stl, &mesh::read_off, &mesh::read_obj, &mesh::read_ply,
                       &mesh::read_neuroglancer}) {
    try {
      (void)reader(file);
    } catch (const mesh::ReadError&) {
    }
  }
  return 0;
}
