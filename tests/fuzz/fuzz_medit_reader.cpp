// libFuzzer target for the Medit reader (ascii .mesh and binary .meshb, told apart by content):
// the input is written to a memfd and read_medit reads that fd, so the real file code (map,
// window, read) runs too. What it reads must be a valid Mesh: validate_mesh's MeshError is not
// caught, so a reader that lets a bad index or shape through is a crash here.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"

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
  try {
    const auto m = mesh::read_medit(mesh::InFile{fd, "fuzz"});
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  close(fd);
  return 0;
}
