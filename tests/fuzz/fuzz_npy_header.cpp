// libFuzzer target: random bytes as a .npy file for `meshdockctl publish`. The header parser
// must refuse garbage with NpyError and never crash, hang or read out of bounds; anything it
// accepts must describe exactly the bytes after its header.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // What meshdockctl reads: at most the first 64 KiB, and the file's size.
  const std::string head(reinterpret_cast<const char*>(data), size < 65536 ? size : 65536);
  try {
    const auto h = meshdockctl::parse_npy("fuzz.npy", head, size);
    if (h.data_offset + h.nbytes != size || h.shape.empty() || h.shape.size() > 4 || h.bits % 8 ||
        h.bits == 0 || h.bits > 64)
      std::abort();
  } catch (const meshdockctl::NpyError&) {
  }
  return 0;
}
