// libFuzzer target for the Gmsh reader family (4.1 / 4.0 / 2.x, ascii / binary; MSH 1): any input
// either reads or raises ReadError; never a crash, hang, leak or an allocation the input cannot
// back.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/mesh/readers/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)meshdock::mesh::read_msh_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.msh");
  } catch (const meshdock::mesh::ReadError&) {
  } catch (const std::bad_alloc&) {
    // Only acceptable if the input really describes that much data; checked_count prevents it.
    __builtin_trap();
  }
  return 0;
}
