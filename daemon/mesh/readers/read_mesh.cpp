#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/readers/readers.hpp"

namespace meshdock::mesh {

namespace {
std::string format_for(const std::string& path, std::string_view format) {
  std::string fmt = format.empty() ? format_of(path) : format_of("." + std::string(format));
  if (fmt.empty())
    throw ReadError(path + ": no file extension; name the format (format=, --format)");
  return fmt;
}
}  // namespace

Mesh read_mesh(const InFile& file, std::string_view format, const ReadOptions& options) {
  const std::string fmt = format_for(file.path, format);
  if (fmt == "msh" || fmt == "gmsh") return read_msh(file);
  if (fmt == "vtu" || fmt == "vtp" || fmt == "vts" || fmt == "vtr" || fmt == "vti" ||
      fmt == "pvtu" || fmt == "pvtp" || fmt == "pvts" || fmt == "pvtr" || fmt == "pvti")
    return read_vtu(file, options);
  if (fmt == "vtk") return read_vtk(file);
  if (fmt == "stl") return read_stl(file);
  if (fmt == "off") return read_off(file);
  if (fmt == "obj") return read_obj(file);
  if (fmt == "ply") return read_ply(file);
  throw ReadError(file.path + ": format '" + fmt +
                  "' is not supported yet (supported: msh, vtu, vtp, vts, vtr, vti, pvtu, pvtp, "
                  "pvts, pvtr, pvti, vtk, stl, off, obj, ply)");
}

Mesh read_mesh(const std::string& path, std::string_view format, const ReadOptions& options) {
  format_for(path, format);  // a name without a format is refused before anything is opened
  const UniqueFd fd = open_regular(path);
  ReadOptions opts = options;
  if (!opts.open_sibling) {  // a parallel file's (.pvtu, .pvts, ...) pieces: beside it
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    opts.open_sibling = [dir](const std::string& relative) { return open_regular(dir + relative); };
  }
  return read_mesh(InFile{fd.get(), path}, format, opts);
}

}  // namespace meshdock::mesh
