// libFuzzer target for the Nastran bulk data reader:
// the input is written to a memfd and read_nastran reads that fd, so the real file code (map,
// window, read) runs too. What it reads must be a valid Mesh: validate_mesh's MeshError is not
// caught, so a reader that lets a bad index or shape through is a crash here. An INCLUDE whose
// name holds "grid" opens a small fixed file of GRIDs (ids 1-3, an element continued over its
// end); any other opens the input itself again, so includes in includes, their depth bound
// and their cycle check run as well.
#include <cstddef>
#include <cstdint>
#include <string>

#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/validate.hpp"
#include "tests/fuzz/memfd_input.hpp"

namespace mesh = meshdock::mesh;
using meshdock::fuzz::memfd_with;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const meshdock::fuzz::MemfdInput input(data, size);
  if (input.fd() < 0) return 0;
  static const std::string kGrids =
      "GRID    1               0.      0.      0.\nGRID    2               1.      0.      0.\n"
      "GRID    3               0.      1.      0.\nCTRIA3  100     1       1       2\n";
  mesh::ReadOptions options;
  options.open_sibling = [&](const std::string& name) {
    if (name.find("grid") != std::string::npos)
      return mesh::UniqueFd(
          memfd_with(reinterpret_cast<const std::uint8_t*>(kGrids.data()), kGrids.size()));
    return mesh::UniqueFd(memfd_with(data, size));
  };
  try {
    const auto m = mesh::read_nastran(mesh::InFile{input.fd(), "fuzz"}, options);
    mesh::validate_mesh(m, "fuzz");
  } catch (const mesh::ReadError&) {
  }
  return 0;
}
