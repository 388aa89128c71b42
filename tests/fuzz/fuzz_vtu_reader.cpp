// libFuzzer target for the VTU reader (XML via expat, base64, zlib, appended raw/base64).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/mesh/readers/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    (void)meshdock::mesh::read_vtu_bytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.vtu");
  } catch (const meshdock::mesh::ReadError&) {
  }
  return 0;
}
