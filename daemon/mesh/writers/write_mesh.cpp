#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/unique_fd.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

std::vector<std::string> write_mesh(const Mesh& m, const OutTarget& target,
                                    const WriteOptions& options) {
  const std::string& path = target.path;
  const std::string fmt =
      options.format.empty() ? format_of(target.leaf) : format_of("." + options.format);
  if (fmt.empty()) throw WriteError(path + ": no file extension; name the format explicitly");
  const auto& enc = options.encoding;
  if (fmt == "vtu") {
    if (enc.empty() || enc == "zlib")
      return write_vtu(m, target, VtuEncoding::kZlib, options.zlib_level);
    if (enc == "raw") return write_vtu(m, target, VtuEncoding::kRaw);
    if (enc == "ascii") return write_vtu(m, target, VtuEncoding::kAscii);
    throw WriteError(path + ": VTU encoding '" + enc + "' is not one of ascii, raw, zlib");
  }
  if (fmt == "msh" || fmt == "gmsh") {
    if (enc.empty() || enc == "binary") return write_msh(m, target, true);
    if (enc == "ascii") return write_msh(m, target, false);
    throw WriteError(path + ": MSH encoding '" + enc + "' is not one of ascii, binary");
  }
  throw WriteError(path + ": no writer for format '" + fmt + "' (writers: vtu, msh)");
}

std::vector<std::string> write_mesh(const Mesh& m, const std::string& path,
                                    const WriteOptions& options) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  OutTarget t;
  t.leaf = slash == std::string::npos ? path : path.substr(slash + 1);
  t.path = path;
  t.overwrite = true;
  const UniqueFd fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd)
    throw WriteError(path + ": cannot create the file (its directory " + dir + ": " +
                     std::strerror(errno) + ")");
  t.dir_fd = fd.get();
  return write_mesh(m, t, options);
}

}  // namespace meshdock::mesh
