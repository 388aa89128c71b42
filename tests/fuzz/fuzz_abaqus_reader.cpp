// libFuzzer target for the Abaqus .inp reader: the input is written to a memfd and read through
// read_abaqus, so the real file code (window, advance) runs too. Every *INCLUDE opens a small
// fixed file (nodes, an element, a set, and an *INCLUDE of a set of its own), so includes, their
// depth bound and their cycle check run as well.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/mesh/readers/readers.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;
using meshdock::fuzz::memfd_with;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const meshdock::fuzz::MemfdInput input(data, size);
  if (input.fd() < 0) return 0;
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
    (void)mesh::read_abaqus(mesh::InFile{input.fd(), "fuzz"}, options);
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
