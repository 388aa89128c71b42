#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

Mesh read_mesh(const std::string& path, std::string_view format, const ReadOptions& options) {
  std::string fmt = format.empty() ? format_of(path) : format_of("." + std::string(format));
  if (fmt.empty()) throw ReadError(path + ": no file extension; name the format explicitly");
  if (fmt == "msh" || fmt == "gmsh") return read_msh(path);
  if (fmt == "vtu") return read_vtu(path, options);
  if (fmt == "vtk") return read_vtk(path);
  if (fmt == "stl") return read_stl(path);
  if (fmt == "off") return read_off(path);
  if (fmt == "obj") return read_obj(path);
  if (fmt == "ply") return read_ply(path);
  throw ReadError(path + ": format '" + fmt +
                  "' is not supported yet (supported: msh, vtu, vtk, stl, off, obj, ply)");
}

}  // namespace meshdock::mesh
