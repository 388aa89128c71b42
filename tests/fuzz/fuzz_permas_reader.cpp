// libFuzzer target for the PERMAS reader (.dato / .post and, by the gzip magic, .post.gz):
// the input is written to a memfd and read_permas reads that fd, so the real file code (window,
// inflate) runs too (gzip_reader_input.hpp).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/gzip_reader_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return meshdock::fuzz::read_gzip_or_text(data, size, [](const auto& in, const auto& options) {
    return meshdock::mesh::read_permas(in, options);
  });
}
