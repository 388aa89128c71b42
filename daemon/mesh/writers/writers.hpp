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

// VTK XML PolyData, in VTU's encodings: vertex, line, triangle, quad and polygon blocks (pixel as
// quads, noted) in PolyData's order, Verts, Lines, Polys (noted when that reorders the blocks;
// cell data and the cell numbers of regions follow); regions and block sizes as in VTU. A
// volume or higher-order block is a WriteError naming it.
std::vector<std::string> write_vtp(const Mesh& m, const OutTarget& target, VtuEncoding encoding,
                                   int zlib_level = 6);

// Gmsh MSH 4.1, ascii or binary: one entity per run of cells sharing a block and a set of
// physical groups, $PhysicalNames from regions, point regions as vertex elements, point_data /
// cell_data as $NodeData / $ElementData (float64).
std::vector<std::string> write_msh(const Mesh& m, const OutTarget& target, bool binary);

// Gmsh MSH 2.2, ascii or binary: two tags per element (physical from gmsh:physical or the cell's
// region, elementary from gmsh:geometrical), $PhysicalNames from regions and from field_data
// entries [tag, dim] (meshio's form), data as $NodeData / $ElementData (float64). A cell in more
// than one physical group keeps one (noted): 2.2 has one physical tag per element.
std::vector<std::string> write_msh22(const Mesh& m, const OutTarget& target, bool binary);

// Legacy VTK 5.1 UNSTRUCTURED_GRID, ascii or binary (big-endian): every cell type but
// polyhedra, point / cell data as FIELD arrays in their own dtypes, field data and regions as a
// dataset FIELD (regions as VTU writes them).
std::vector<std::string> write_vtk(const Mesh& m, const OutTarget& target, bool binary);

// Surface formats: faces only (triangle, quad, polygon blocks, fixed or ragged); any other block
// is a WriteError naming it, except where a format says otherwise below. Data a format cannot
// carry is noted.
// STL (ascii, or binary float32: noted when a coordinate changes): triangles; quads and
// polygons are split into triangle fans (noted); normals from cell_data "facet_normals" (what
// read_stl gives) or computed.
std::vector<std::string> write_stl(const Mesh& m, const OutTarget& target, bool binary);
// Wavefront OBJ: v, vt / vn from point_data obj:vt / obj:vn, f, line blocks as l, g from
// cell_data obj:group_ids.
std::vector<std::string> write_obj(const Mesh& m, const OutTarget& target);
// PLY, ascii or binary_little_endian: vertex x y z plus scalar point_data as vertex properties,
// face vertex_indices plus scalar cell_data as face properties.
std::vector<std::string> write_ply(const Mesh& m, const OutTarget& target, bool binary);
// OFF: points and faces.
std::vector<std::string> write_off(const Mesh& m, const OutTarget& target);
// Medit (libMeshb): ascii .mesh (MeshVersionFormatted 2) or binary .meshb (version 3, or 4 where
// an integer needs 64 bits): Dimension, Vertices with point_data "medit:ref", the line, triangle,
// quad, tetra, wedge, pyramid and hexahedron blocks with cell_data "medit:ref" (0 where there is
// none). Other blocks, data and regions are noted as not written.
std::vector<std::string> write_medit(const Mesh& m, const OutTarget& target, bool binary);

// Abaqus .inp: *NODE, one *ELEMENT section per block (meshio's element types; a block Abaqus has
// no element for is a WriteError), *NSET / *ELSET from point and cell regions; data is noted.
std::vector<std::string> write_abaqus(const Mesh& m, const OutTarget& target);

// SU2 .su2 (ascii): NDIME, NPOIN, NELEM with the interior cells, a marker per boundary cell tag
// (from cell_data "su2:tag", "gmsh:physical" or the first integer cell data; named by the cell
// region of that tag where there is one), as meshio's su2 reader reads them back. Other blocks,
// data and regions are noted as not written.
std::vector<std::string> write_su2(const Mesh& m, const OutTarget& target);

// Exodus II (.e, .exo, .ex2): a netCDF CDF-2 (64-bit offset) file: coordinates, one connect<k>
// per block (meshio's Exodus names), point data as node variables and one-value-a-cell cell
// data as element variables of one time step, point regions as node sets, side regions as side
// sets, a cell region that is one block's cells as its eb_names entry; the rest is noted. A
// ragged or polyhedron block, or a type Exodus has no name for, is a WriteError naming it.
std::vector<std::string> write_exodus(const Mesh& m, const OutTarget& target);

// Nastran bulk data (.bdf, .nas, .fem), free field: GRID (CP from point_data "nastran:ref"), an
// element card a cell (meshio's cards; PID from cell_data "nastran:ref"); a block Nastran has no
// card for is a WriteError; other data and regions are noted.
std::vector<std::string> write_nastran(const Mesh& m, const OutTarget& target);

// Tecplot ASCII (.dat, .tec), as meshio writes it: one FE zone, BLOCK packing; one cell type
// as its zone type (pyramid / wedge as FEBRICK with repeated nodes), mixed blocks as
// FEQUADRILATERAL or FEBRICK with repeated nodes (noted), the blocks of lower dimension than
// the highest noted and left out; point_data nodal and cell_data CELLCENTERED variables
// (components as name_0, name_1, ...); the rest noted.
std::vector<std::string> write_tecplot(const Mesh& m, const OutTarget& target);

// AVS UCD (.avs, .ucd), ascii: nodes, cells with their material from cell_data
// "avsucd:material" (else 0), point_data / cell_data of 1 or 2 dimensions as component groups
// (meshio's layout). A block AVS UCD has no cell type for is a WriteError naming it; field data
// and regions are noted.
std::vector<std::string> write_ucd(const Mesh& m, const OutTarget& target);

// TetGen: x.node and x.ele, both written (in target.dir_fd) from a target named either: points
// with point_data tetgen:attr* / tetgen:ref* as attributes and markers, the tetra (or tetra10,
// in TetGen's -o2 order) blocks with cell_data tetgen:ref* as region attributes; the rest is
// noted, a mesh with no tetra block a WriteError. A FileExists for either name writes neither.
std::vector<std::string> write_tetgen(const Mesh& m, const OutTarget& target);
// The other name of a TetGen pair: "x.ele" for "x.node" and back (the extension's case aside,
// as read_tetgen names it); "" for a name that is neither.
std::string tetgen_sibling(const std::string& leaf);

// UGRID (.ugrid) in the variant the target's name says as meshio names them (x.ugrid ascii;
// x.b8 / .b4 / .lb8 / .lb4 / .b8l / .lb8l.ugrid C binary; x.r8 / .r4 / .lr8 / .lr4.ugrid
// Fortran unformatted): points, the triangle, quad, tetra, pyramid, wedge and hexahedron blocks
// (another block is a WriteError naming it), surface ids from cell_data "ugrid:ref" (else the
// first integer cell data, else 1, noted); other data and regions are noted.
std::vector<std::string> write_ugrid(const Mesh& m, const OutTarget& target);

// FLAC3D grid (.f3grid), ascii (the default, as meshio's) or binary: grid points, zones from
// the tetra / pyramid / wedge / hexahedron blocks and faces from the triangle / quad blocks
// (higher-order kinds by their corners, noted; another block is a WriteError naming it), cell
// regions as ZGROUP / FGROUP; data and other regions are noted.
std::vector<std::string> write_flac3d(const Mesh& m, const OutTarget& target, bool binary);
// Netgen (.vol; gzipped when `gzip`, as meshio for x.vol.gz): what meshio's netgen writer
// writes (surface, volume, edge segment and point elements; cell_data "netgen:index", else the
// first integer cell data; field_data [index, dim] names as materials / bcnames / cd2names).
// A block Netgen has no element for is a WriteError naming it; the rest is noted.
std::vector<std::string> write_netgen(const Mesh& m, const OutTarget& target, bool gzip);
// ANSYS Fluent mesh, binary (the default, as meshio's) or ascii, as meshio's "ansys" writes it:
// (2 dim), the node and cell counts, the nodes (3010 / 10) and a (3012 / 12) cell section a
// triangle, tetra, quad, hexahedron, pyramid or wedge block (another block is a WriteError
// naming it; no faces, as meshio); data and regions are noted. That file does not open in
// Fluent, whose solver is face based: with `fluent_layout`, the file is what Fluent writes and
// reads: bodiless cell zones (12) a volume block, and the faces (13 / 2013) with their cells
// c0 c1 (fluent_faces.hpp), interior and boundary zones, named by (45) sections; the cell
// regions (else the blocks) name the zones, lower cells that are boundary faces the boundary
// zones; other lower blocks are noted.
std::vector<std::string> write_ansys(const Mesh& m, const OutTarget& target, bool binary,
                                     bool fluent_layout = false);

// Kratos Multiphysics model part (.mdpa): what meshio's mdpa writer writes (Nodes, an Elements
// block per cell block in meshio's names, NodalData / ElementalData), and the point and cell
// regions as SubModelParts; a block meshio names no element for is noted, not written. With
// `kratos_layout` (format "kratos"), what Kratos' ModelPartIO loads: the top-dimensional cells as
// KratosCore's generic Elements (Element3D4N ...), the lower ones as Conditions
// (SurfaceCondition3D3N ...), data lines in Kratos' form (mdpa_writer.cpp says which).
std::vector<std::string> write_mdpa(const Mesh& m, const OutTarget& target,
                                    bool kratos_layout = false);

// PERMAS (.post, .dato; gzipped when `gzip`, for x.post.gz / x.dato.gz): what meshio's permas
// writer writes ($COOR, an $ELEMENT block per cell block in meshio's element names and node
// orders). A block PERMAS has no element for is a WriteError naming it; data and regions are
// noted (meshio's reader fails on $NSET / $ESET).
std::vector<std::string> write_permas(const Mesh& m, const OutTarget& target, bool gzip);
// Neuroglancer legacy precomputed mesh (format "neuroglancer"; no extension): uint32 count,
// float32 vertices (rounding noted), uint32 triangles, as meshio writes it. A block that is not
// triangles is a WriteError naming it; data and regions are noted.
std::vector<std::string> write_neuroglancer(const Mesh& m, const OutTarget& target);

struct WriteOptions {
  // "vtu" | "vtp" | "msh" (4.1) | "msh22" / "gmsh22" (2.2) | "vtk" | "stl" | "obj" | "ply" |
  // "off" | "mesh" / "meshb" / "medit" (Medit) | "inp" / "abaqus" | "su2" |
  // "e" / "exo" / "ex2" / "exodus" (Exodus II) | "bdf" / "nas" / "fem" / "nastran" |
  // "dat" / "tec" / "tecplot" | "avs" / "ucd" / "avsucd" (AVS UCD) | "node" / "ele" / "tetgen"
  // (TetGen) | "ugrid" (the variant from the name: x.b8.ugrid ...) | "f3grid" / "flac3d" |
  // "vol" / "netgen" (Netgen; gzipped when the name ends in .vol.gz) | "ansys" (ANSYS Fluent
  // as meshio writes it) | "fluent" (as Fluent writes it: faces with their cells; both named,
  // never by .msh, which is Gmsh's) | "mdpa" (Kratos, as meshio writes it) | "kratos" (.mdpa
  // as Kratos reads it: generic elements and conditions) | "post" / "dato" / "permas" (PERMAS;
  // gzipped when the name ends in .post.gz / .dato.gz) | "neuroglancer" (Neuroglancer
  // precomputed, binary; its files have no extension); empty: the path's extension
  // (.msh: 4.1). meshio's "-ascii" / "-binary" names ("vtk-ascii", "gmsh22-binary";
  // "vtu-binary" is zlib) set the encoding too.
  std::string format;
  // vtu, vtp: "ascii" | "raw" | "zlib" (default); msh, msh22, vtk, stl, ply: "ascii" | "binary"
  // (default); obj, off, inp, su2, bdf, dat, avs, node, vol, mdpa, kratos, post, dato: "ascii"
  // (the default,
  // the only one); e, exo, ex2, exodus: "binary" (the only one); mesh, meshb, medit: "ascii" |
  // "binary", by default what the path's extension says (.meshb: binary, else ascii); f3grid,
  // flac3d: "ascii" (the default, as meshio's) | "binary"; ansys, fluent: "binary" (the default, as
  // meshio's) | "ascii"
  std::string encoding;
  int zlib_level = 6;
};
// The format is options.format or the extension of target.leaf.
std::vector<std::string> write_mesh(const Mesh& m, const OutTarget& target,
                                    const WriteOptions& options = {});
// The names in the target's directory that write_mesh(m, target, options) writes: target.leaf,
// and for TetGen the other file of the pair (x.ele beside x.node and back). The daemon's Export
// checks each (never a loaded mesh's source) before writing. A format write_mesh would refuse
// gives target.leaf alone (the write then fails with its own message).
std::vector<std::string> written_names(const OutTarget& target, const WriteOptions& options = {});
// Opens the parent directory of `path` (following symlinks: no roots here) and replaces an
// existing file: the in-process Python write and tests.
std::vector<std::string> write_mesh(const Mesh& m, const std::string& path,
                                    const WriteOptions& options = {});

}  // namespace meshdock::mesh
