// libFuzzer target for the Abaqus .inp reader: the input is written to a memfd and read through
// read_abaqus, so the real file code (window, advance) runs too. Every *INCLUDE opens a small
// fixed file (nodes, an element, a set, and an *INCLUDE of a set of its own), so includes, their
// depth bound and their cycle check run as well.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/mesh/readers/readers.hpp"

namespace mesh = meshdock::mesh;

namespace {

int memfd_with(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0) return -1;
  std::size_t done = 0;
  while (done < size) {
    const auto n = write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_with(data, size);
  if (fd < 0) return 0;
  static const std::string kIncluded =
      "*NODE\n100, 0, 0, 1\n101, 1, 0, 1\n*ELEMENT, TYPE=T3D2\n100, 100, 101\n"
      "*NSET, NSET=inc\n100\n*INCLUDE, INPUT=deeper.inp\n";
  static const std::string kDeeper = "*ELSET, ELSET=deep\n100\n";
  mesh::ReadOptions options;
  options.open_sibling = [](const std::string& name) {
    const auto& text = name.find("deeper") == std::string::npos ? kIncluded : kDeeper;
    return mesh::UniqueFd(
        memfd_with(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  };
  try {
    (void)mesh::read_abaqus(mesh::InFile{fd, "fuzz"}, options);
  } catch (const mesh::ReadError&) {
  }
  close(fd);
  return 0;
}
