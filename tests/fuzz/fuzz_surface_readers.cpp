// libFuzzer target for the surface reader family (STL, OFF, OBJ, PLY): the input is written to a
// memfd and each reader reads that fd, so the real file code (map, read) runs too.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/mesh/readers/readers.hpp"

namespace mesh = meshdock::mesh;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t done = 0;
  while (done < size) {
    const auto n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const mesh::InFile file{fd, "fuzz"};
  for (auto* reader : {&mesh::read_stl, &mesh::read_off, &mesh::read_obj, &mesh::read_ply}) {
    try {
      (void)reader(file);
    } catch (const mesh::ReadError&) {
    }
  }
  close(fd);
  return 0;
}
