// libFuzzer target for the UGRID reader: the first input byte picks the file name's variant
// suffix (ascii, C binary of either byte order and word sizes, Fortran unformatted), the rest is
// written to a memfd that read_ugrid reads under that name, so the real file code (window, lazy
// map, populate / release) runs too. What it reads must be a valid Mesh: validate_mesh's
// MeshError is not caught, so a reader that lets a bad index or shape through is a crash here.
#include <cstddef>
#include <cstdint>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kNames[] = {"fuzz.ugrid",      "fuzz.b8.ugrid",  "fuzz.lb8.ugrid",
                                       "fuzz.b4.ugrid",   "fuzz.lb4.ugrid", "fuzz.b8l.ugrid",
                                       "fuzz.lb8l.ugrid", "fuzz.r8.ugrid",  "fuzz.lr8.ugrid",
                                       "fuzz.r4.ugrid",   "fuzz.lr4.ugrid"};
  constexpr std::size_t kCount = sizeof kNames / sizeof kNames[0];
  // Seeds in tests/data/fuzz/ugrid_reader start with the byte of their variant; a test file
  // taken whole lets its first byte pick one.
  const std::size_t pick = data[0] % kCount;
  const meshdock::fuzz::MemfdInput input(data + 1, size - 1);
  if (input.fd() < 0) return 0;
  try {
    const auto m = mesh::read_ugrid(mesh::InFile{input.fd(), kNames[pick]});
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
