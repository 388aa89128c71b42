#include <algorithm>
#include <cctype>

#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

Mesh read_mesh(const std::string& path, std::string_view format) {
  std::string fmt(format);
  if (fmt.empty()) {
    const auto dot = path.find_last_of('.');
    if (dot == std::string::npos || path.find('/', dot) != std::string::npos) {
      throw ReadError(path + ": no file extension; name the format explicitly");
    }
    fmt = path.substr(dot + 1);
  }
  std::transform(fmt.begin(), fmt.end(), fmt.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (fmt == "msh" || fmt == "gmsh") return read_msh(path);
  if (fmt == "vtu") return read_vtu(path);
  if (fmt == "vtk") return read_vtk(path);
  if (fmt == "stl") return read_stl(path);
  if (fmt == "off") return read_off(path);
  if (fmt == "obj") return read_obj(path);
  if (fmt == "ply") return read_ply(path);
  throw ReadError(path + ": format '" + fmt +
                  "' is not supported yet (supported: msh, vtu, vtk, stl, off, obj, ply)");
}

}  // namespace meshdock::mesh
