#include <cctype>
#include <filesystem>

#include "daemon/mesh/formats.hpp"
#include "daemon/mesh/readers/readers.hpp"
#include "daemon/mesh/text.hpp"

namespace meshdock::mesh {

namespace {
std::string format_for(const std::string& path, std::string_view format) {
  std::string fmt = format.empty() ? format_of(path) : format_of(std::string(".").append(format));
  if (fmt.empty()) {
    std::error_code ec;  // a folder has no extension either: say what it is (as open() does)
    if (std::filesystem::is_directory(path, ec)) throw ReadError(path + ": not a regular file");
    throw ReadError(path + ": no file extension; name the format (format=, --format)");
  }
  return fmt;
}
// Every name a file gave the mesh, as UTF-8: names go into the manifest's JSON, gRPC strings and
// Python str, which hold nothing else (a PLY property named "t\xff" failed a Load with an
// INTERNAL JSON error, and md.read with UnicodeDecodeError). Others are read as Latin-1, noted.
void utf8_names(Mesh& m, const std::string& path) {
  auto fix = [&](const char* what, const std::string& name) {
    std::string good = utf8_name(name);
    if (good != name)
      m.notes.push_back(path + ": " + what + " name '" + terminal_safe(name) +
                        "' is not UTF-8: read as Latin-1, '" + good + "'");
    return good;
  };
  auto keys = [&](const char* what, auto& map) {
    for (auto it = map.begin(); it != map.end();) {
      std::string good = fix(what, it->first);
      if (good == it->first) {
        ++it;
        continue;
      }
      auto node = map.extract(it++);
      node.key() = std::move(good);
      map.insert(std::move(node));  // a clash keeps the first: names are distinct bytes
    }
  };
  keys("point_data", m.point_data);
  keys("cell_data", m.cell_data);
  keys("field_data", m.field_data);
  for (auto& r : m.regions) r.name = fix("region", r.name);
}

// An .inp file is Abaqus or AVS UCD (deal.II's GridOut::write_ucd names it .inp): the first line
// that is neither blank nor a '#' comment starts with '*' in Abaqus (a keyword or a "**"
// comment), with a count (a digit) in UCD. Any other line, or none in the first 64 KiB: UCD
// when the file has a '#' comment (Abaqus has none), else Abaqus, whose reader says what is
// wrong in Abaqus's terms (a title line before *HEADING is a misplaced data line there).
bool inp_is_ucd(const InFile& file) {
  const std::string head = peek_file(file, 64 * 1024);
  std::string_view rest(head);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);
  bool comment = false;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) continue;
    if (line[b] == '#') {
      comment = true;
      continue;
    }
    if (line[b] == '*') return false;
    if (line[b] >= '0' && line[b] <= '9') return true;
    break;
  }
  return comment;
}

// Whether `path` ends in `suffix` (lower case), whatever the case of its letters.
bool ends_with_lower(const std::string& path, std::string_view suffix) {
  if (path.size() < suffix.size()) return false;
  std::string tail = path.substr(path.size() - suffix.size());
  for (auto& ch : tail) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return tail == suffix;
}

// x.vol.gz: a gzipped Netgen mesh (as meshio); x.xml.gz: a gzipped DOLFIN XML mesh (as DOLFIN).
bool is_vol_gz(const std::string& path) {
  return ends_with_lower(path, ".vol.gz");
}

// .msh is Gmsh's and ANSYS Fluent's: a Fluent file's first byte that is not blank is the '(' of
// a section, and it goes to the Fluent reader; anything else to Gmsh's (the default, as meshio).
// A file that starts with neither '$' nor '(' gets Gmsh's error (the line, what was expected,
// what was found) with a word that Fluent was ruled out too.
Mesh msh_kind(const InFile& file) {
  const std::string head = peek_file(file, 4096);
  const auto bom = head.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // Gmsh's reader skips one
  const auto b = head.find_first_not_of(" \t\r\n", bom);
  if (b != std::string::npos && head[b] == '(') return read_ansys(file);
  if (b == std::string::npos || head[b] == '$') return read_msh(file);
  try {
    return read_msh(file);
  } catch (const ReadError& e) {
    throw ReadError(std::string(e.what()) +
                    " (nor is it an ANSYS Fluent mesh, whose first section starts with '(')");
  }
}

Mesh read_any(const InFile& file, const std::string& fmt, const ReadOptions& options) {
  if (fmt == "msh") return msh_kind(file);
  if (fmt == "gmsh") return read_msh(file);
  if (fmt == "ansys" || fmt == "fluent") return read_ansys(file);
  if (fmt == "vtu" || fmt == "vtp" || fmt == "vts" || fmt == "vtr" || fmt == "vti" ||
      fmt == "pvtu" || fmt == "pvtp" || fmt == "pvts" || fmt == "pvtr" || fmt == "pvti")
    return read_vtu(file, options);
  if (fmt == "vtk") return read_vtk(file);
  if (fmt == "stl") return read_stl(file);
  if (fmt == "off") return read_off(file);
  if (fmt == "obj") return read_obj(file);
  if (fmt == "ply") return read_ply(file);
  if (fmt == "mesh" || fmt == "meshb" || fmt == "medit") return read_medit(file);
  if (fmt == "inp") return inp_is_ucd(file) ? read_ucd(file) : read_abaqus(file, options);
  if (fmt == "abaqus") return read_abaqus(file, options);
  if (fmt == "avs" || fmt == "ucd" || fmt == "avsucd") return read_ucd(file);
  if (fmt == "su2") return read_su2(file);
  if (fmt == "e" || fmt == "exo" || fmt == "ex2" || fmt == "exodus") return read_exodus(file);
  if (fmt == "bdf" || fmt == "nas" || fmt == "fem" || fmt == "nastran")
    return read_nastran(file, options);
  if (fmt == "node" || fmt == "ele" || fmt == "tetgen") return read_tetgen(file, options);
  if (fmt == "ugrid") return read_ugrid(file);
  if (fmt == "f3grid" || fmt == "flac3d") return read_flac3d(file);
  if (fmt == "mdpa" || fmt == "kratos") return read_mdpa(file);
  if (fmt == "dat" || fmt == "tec" || fmt == "tecplot") return read_tecplot(file);
  if (fmt == "vol" || fmt == "netgen") return read_netgen(file, options);
  if (fmt == "gz" && is_vol_gz(file.path)) return read_netgen(file, options);
  if (fmt == "gz" && ends_with_lower(file.path, ".xml.gz")) return read_dolfin(file, options);
  if (fmt == "xml" || fmt == "dolfin" || fmt == "dolfin-xml") return read_dolfin(file, options);
  if (fmt == "post" || fmt == "dato" || fmt == "permas") return read_permas(file, options);
  if (fmt == "neuroglancer") return read_neuroglancer(file);
  if (fmt == "gz" &&
      (ends_with_lower(file.path, ".post.gz") || ends_with_lower(file.path, ".dato.gz")))
    return read_permas(file, options);
  throw ReadError(
      file.path + ": format '" + fmt +
      "' is not supported yet (supported: msh, vtu, vtp, vts, vtr, vti, pvtu, pvtp, "
      "pvts, pvtr, pvti, vtk, stl, off, obj, ply, mesh, meshb, inp, avs, ucd, su2, e, "
      "exo, ex2, bdf, nas, fem, node, ele, dat, tec, ugrid, f3grid, vol, ansys, mdpa, "
      "xml, post, dato), or x.vol.gz / x.xml.gz / x.post.gz / x.dato.gz gzipped; a Neuroglancer "
      "precomputed mesh, which has no extension, with the format neuroglancer");
}
}  // namespace

Mesh read_mesh(const InFile& file, std::string_view format, const ReadOptions& options) {
  Mesh m = read_any(file, format_for(file.path, format), options);
  utf8_names(m, file.path);
  return m;
}

Mesh read_mesh(const std::string& path, std::string_view format, const ReadOptions& options) {
  format_for(path, format);  // a name without a format is refused before anything is opened
  const UniqueFd fd = open_regular(path);
  ReadOptions opts = options;
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  if (!opts.open_sibling)  // a parallel file's (.pvtu, ...) pieces, *INCLUDEs: beside it
    opts.open_sibling = [dir](const std::string& relative) { return open_regular(dir + relative); };
  if (!opts.list_siblings)
    opts.list_siblings = [dir] { return list_directory(dir.empty() ? "." : dir); };
  return read_mesh(InFile{fd.get(), path}, format, opts);
}

}  // namespace meshdock::mesh
