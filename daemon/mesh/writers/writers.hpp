// Writer entry points: Mesh -> file. Each validates the mesh first (MeshError), writes through
// a temporary linked or renamed into place in the target's directory fd (OutFile; WriteError
// naming the path on I/O failure, FileExists when the name exists and overwrite is false),
// opens no path itself except write_mesh(path) (for callers without roots), and returns its
// notes: every step that could not keep something (e.g. "VTU has no regions" is NOT such a
// step: regions travel as meshdock:region field data; a ragged block in MSH is an error).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/error.hpp"
#include "daemon/mesh/mesh.hpp"
#include "daemon/mesh/writers/out_file.hpp"

namespace meshdock::mesh {

enum class VtuEncoding { kAscii, kRaw, kZlib };

// VTK XML UnstructuredGrid: ascii, appended raw, or appended zlib (independent 1 MiB blocks
// compressed on every core), header_type UInt64, little-endian. Polyhedra as faces /
// faceoffsets; regions as FieldData arrays "meshdock:region:<kind>:<dim>:<tag>:<name>", which
// read_vtu turns back into regions.
std::vector<std::string> write_vtu(const Mesh& m, const OutTarget& target, VtuEncoding encoding,
                                   int zlib_level = 6);

// Gmsh MSH 4.1, ascii or binary: one entity per run of cells sharing a block and a set of
// physical groups, $PhysicalNames from regions, point regions as vertex elements, point_data /
// cell_data as $NodeData / $ElementData (float64).
std::vector<std::string> write_msh(const Mesh& m, const OutTarget& target, bool binary);

struct WriteOptions {
  std::string format;  // "vtu" | "msh"; empty: the path's extension
  std::string
      encoding;  // vtu: "ascii" | "raw" | "zlib" (default); msh: "ascii" | "binary" (default)
  int zlib_level = 6;
};
// The format is options.format or the extension of target.leaf.
std::vector<std::string> write_mesh(const Mesh& m, const OutTarget& target,
                                    const WriteOptions& options = {});
// Opens the parent directory of `path` (following symlinks: no roots here) and replaces an
// existing file: the in-process Python write and tests.
std::vector<std::string> write_mesh(const Mesh& m, const std::string& path,
                                    const WriteOptions& options = {});

}  // namespace meshdock::mesh
