// libFuzzer target for the legacy VTK reader (ascii and big-endian binary).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/mesh/readers/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)meshdock::mesh::read_vtk_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.vtk");
  } catch (const meshdock::mesh::ReadError&) {
  }
  return 0;
}
