#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

std::vector<std::string> write_mesh(const Mesh& m, const std::string& path,
                                    const WriteOptions& options) {
  const std::string fmt =
      options.format.empty() ? format_of(path) : format_of("." + options.format);
  if (fmt.empty()) throw WriteError(path + ": no file extension; name the format explicitly");
  const auto& enc = options.encoding;
  if (fmt == "vtu") {
    if (enc.empty() || enc == "zlib")
      return write_vtu(m, path, VtuEncoding::kZlib, options.zlib_level);
    if (enc == "raw") return write_vtu(m, path, VtuEncoding::kRaw);
    if (enc == "ascii") return write_vtu(m, path, VtuEncoding::kAscii);
    throw WriteError(path + ": VTU encoding '" + enc + "' is not one of ascii, raw, zlib");
  }
  if (fmt == "msh" || fmt == "gmsh") {
    if (enc.empty() || enc == "binary") return write_msh(m, path, true);
    if (enc == "ascii") return write_msh(m, path, false);
    throw WriteError(path + ": MSH encoding '" + enc + "' is not one of ascii, binary");
  }
  throw WriteError(path + ": no writer for format '" + fmt + "' (writers: vtu, msh)");
}

}  // namespace meshdock::mesh
