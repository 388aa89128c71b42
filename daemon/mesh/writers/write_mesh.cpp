#include <fcntl.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <utility>

#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/readers/ugrid_variant.hpp"
#include "daemon/mesh/unique_fd.hpp"
#include "daemon/mesh/writers/writers.hpp"

namespace meshdock::mesh {

namespace {

// meshio's format names carry the encoding ("vtk-ascii", "gmsh-binary", "vtu-binary"): the
// daemon's Export, the C ABI and meshdockctl take them as `meshdock convert` does. Splits one
// into the format and its encoding; a name without such a suffix is returned as it is.
std::pair<std::string, std::string> split_encoding(const std::string& format,
                                                   const std::string& encoding,
                                                   const std::string& path) {
  const auto dash = format.rfind('-');
  if (dash == std::string::npos) return {format, encoding};
  const auto base = format.substr(0, dash), suffix = format.substr(dash + 1);
  if (suffix != "ascii" && suffix != "binary") return {format, encoding};
  // meshio's "vtu-binary" is appended zlib-compressed data, VTU's default here.
  const std::string implied = (base == "vtu" || base == "vtp") && suffix == "binary" ? "" : suffix;
  if (!encoding.empty() && encoding != suffix && encoding != implied)
    throw WriteError(path + ": format '" + format + "' and encoding '" + encoding + "' disagree");
  return {base, encoding.empty() ? implied : encoding};
}

// Whether `leaf` ends in `suffix` (lower case) in any case: x.vol.gz, a gzipped Netgen mesh;
// x.post.gz / x.dato.gz, gzipped PERMAS.
bool leaf_ends_with(const std::string& leaf, std::string_view suffix) {
  if (leaf.size() < suffix.size()) return false;
  std::string tail = leaf.substr(leaf.size() - suffix.size());
  for (auto& ch : tail) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return tail == suffix;
}

}  // namespace

std::vector<std::string> write_mesh(const Mesh& m, const OutTarget& target,
                                    const WriteOptions& options) {
  const std::string& path = target.path;
  const std::string asked = options.format.empty() ? "" : format_of("." + options.format);
  // Not a structured binding: clang 14 lets no lambda below capture one.
  const auto split = split_encoding(asked, options.encoding, path);
  const std::string& enc = split.second;
  const std::string fmt = split.first.empty() ? format_of(target.leaf) : split.first;
  if (fmt.empty())
    throw WriteError(path + ": no file extension; name the format (format=, --format)");
  if (fmt == "vtu" || fmt == "vtp") {
    const auto writer = fmt == "vtu" ? &write_vtu : &write_vtp;
    if (enc.empty() || enc == "zlib")
      return writer(m, target, VtuEncoding::kZlib, options.zlib_level);
    if (enc == "raw") return writer(m, target, VtuEncoding::kRaw, 6);
    if (enc == "ascii") return writer(m, target, VtuEncoding::kAscii, 6);
    throw WriteError(path + ": " + (fmt == "vtu" ? "VTU" : "VTP") + " encoding '" + enc +
                     "' is not one of ascii, raw, zlib");
  }
  // ascii / binary formats: binary unless asked otherwise (smaller, faster, exact).
  auto binary = [&](const char* name) {
    if (enc.empty() || enc == "binary") return true;
    if (enc == "ascii") return false;
    throw WriteError(path + ": " + name + " encoding '" + enc + "' is not one of ascii, binary");
  };
  auto only = [&](const char* name, const char* encoding) {
    if (!enc.empty() && enc != encoding)
      throw WriteError(path + ": " + name + " encoding '" + enc + "' is not " + encoding +
                       " (its only one)");
  };
  auto ascii_only = [&](const char* name) { only(name, "ascii"); };
  if (fmt == "msh" || fmt == "gmsh" || fmt == "msh41" || fmt == "gmsh41")
    return write_msh(m, target, binary("MSH"));
  if (fmt == "msh22" || fmt == "gmsh22") return write_msh22(m, target, binary("MSH 2.2"));
  if (fmt == "vtk") return write_vtk(m, target, binary("VTK"));
  if (fmt == "stl") return write_stl(m, target, binary("STL"));
  if (fmt == "ply") return write_ply(m, target, binary("PLY"));
  if (fmt == "obj") {
    ascii_only("OBJ");
    return write_obj(m, target);
  }
  if (fmt == "off") {
    ascii_only("OFF");
    return write_off(m, target);
  }
  if (fmt == "mesh" || fmt == "meshb" || fmt == "medit") {
    // Medit is ascii .mesh or binary .meshb: the format's name says which, and for "medit" the
    // file's extension, as meshio writes and reads it.
    if (enc.empty())
      return write_medit(m, target,
                         fmt == "meshb" || (fmt == "medit" && format_of(target.leaf) == "meshb"));
    return write_medit(m, target, binary("Medit"));
  }
  if (fmt == "inp" || fmt == "abaqus") {
    ascii_only("Abaqus");
    return write_abaqus(m, target);
  }
  if (fmt == "su2") {
    ascii_only("SU2");
    return write_su2(m, target);
  }
  if (fmt == "e" || fmt == "exo" || fmt == "ex2" || fmt == "exodus") {
    only("Exodus", "binary");
    return write_exodus(m, target);
  }
  if (fmt == "bdf" || fmt == "nas" || fmt == "fem" || fmt == "nastran") {
    ascii_only("Nastran");
    return write_nastran(m, target);
  }
  if (fmt == "dat" || fmt == "tec" || fmt == "tecplot") {
    ascii_only("Tecplot");
    return write_tecplot(m, target);
  }
  if (fmt == "avs" || fmt == "ucd" || fmt == "avsucd") {
    ascii_only("AVS UCD");
    return write_ucd(m, target);
  }
  if (fmt == "node" || fmt == "ele" || fmt == "tetgen") {
    ascii_only("TetGen");
    return write_tetgen(m, target);
  }
  if (fmt == "ugrid") {
    // The variant is the name's (x.ugrid ascii, x.b8.ugrid binary, ...), as meshio tells it: an
    // encoding asked for must agree with it.
    const bool named_binary = ugrid_variant(target.leaf).kind != UgridVariant::kAscii;
    if (!enc.empty() && enc != (named_binary ? "binary" : "ascii"))
      throw WriteError(path + ": UGRID encoding '" + enc + "': the name '" + target.leaf +
                       "' says " + (named_binary ? "binary" : "ascii") +
                       " (x.ugrid is ascii; x.b8.ugrid, x.lb8.ugrid, x.r8.ugrid ... binary)");
    return write_ugrid(m, target);
  }
  if (fmt == "f3grid" || fmt == "flac3d") {
    // ascii unless asked: meshio's writer's default.
    if (!enc.empty() && enc != "ascii" && enc != "binary")
      throw WriteError(path + ": FLAC3D encoding '" + enc + "' is not one of ascii, binary");
    return write_flac3d(m, target, enc == "binary");
  }
  if (fmt == "ansys") return write_ansys(m, target, binary("ANSYS"));
  if (fmt == "fluent") return write_ansys(m, target, binary("Fluent"), true);
  if (fmt == "mdpa" || fmt == "kratos") {
    ascii_only("mdpa");
    return write_mdpa(m, target, fmt == "kratos");
  }
  const bool vol_gz = leaf_ends_with(target.leaf, ".vol.gz");
  if (fmt == "vol" || fmt == "netgen" || (fmt == "gz" && vol_gz)) {
    ascii_only("Netgen");
    return write_netgen(m, target, vol_gz);  // x.vol.gz is gzipped, as meshio writes it
  }
  const bool permas_gz =
      leaf_ends_with(target.leaf, ".post.gz") || leaf_ends_with(target.leaf, ".dato.gz");
  if (fmt == "post" || fmt == "dato" || fmt == "permas" || (fmt == "gz" && permas_gz)) {
    ascii_only("PERMAS");
    return write_permas(m, target, permas_gz);  // meshio writes x.post.gz as plain text
  }
  if (fmt == "neuroglancer") {
    only("Neuroglancer", "binary");
    return write_neuroglancer(m, target);
  }
  throw WriteError(
      path + ": no writer for format '" + fmt +
      "' (writers: vtu, vtp, msh, msh22, vtk, stl, obj, ply, off, mesh, meshb, inp, su2, exo, "
      "bdf, dat, avs, node, ugrid, f3grid, vol, ansys, fluent, mdpa, kratos, post, dato, "
      "neuroglancer; "
      "each may end in "
      "-ascii or -binary where it has both, as meshio's names do)");
}

std::vector<std::string> written_names(const OutTarget& target, const WriteOptions& options) {
  std::string fmt;
  try {
    const std::string asked = options.format.empty() ? "" : format_of("." + options.format);
    fmt = split_encoding(asked, options.encoding, target.path).first;
  } catch (const WriteError&) {
    return {target.leaf};
  }
  if (fmt.empty()) fmt = format_of(target.leaf);
  if (fmt != "node" && fmt != "ele" && fmt != "tetgen") return {target.leaf};
  const auto sibling = tetgen_sibling(target.leaf);
  if (sibling.empty()) return {target.leaf};
  return {target.leaf, sibling};
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
