// The body of the fuzz targets of readers that take gzipped input by its magic bytes (Netgen's
// .vol.gz, PERMAS' .post.gz): the input in a memfd, read under a 64 MiB max_bytes (what a gzip
// input may inflate to), and what it reads validated (validate_mesh's MeshError is not caught:
// a reader must never hand on a broken mesh).
#pragma once

#include <cstddef>
#include <cstdint>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace meshdock::fuzz {

// `read`: mesh::Mesh(const mesh::InFile&, const mesh::ReadOptions&).
template <typename Read>
int read_gzip_or_text(const std::uint8_t* data, std::size_t size, Read&& read) {
  const MemfdInput input(data, size);
  if (input.fd() < 0) return 0;
  mesh::ReadOptions options;
  options.max_bytes = std::uint64_t{64} << 20;
  try {
    const auto m = read(mesh::InFile{input.fd(), "fuzz"}, options);
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}

}  // namespace meshdock::fuzz
