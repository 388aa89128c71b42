// Reader entry points: file -> Mesh. Each throws ReadError naming the file and line or byte.
// Each reads an already open file (InFile: the fd and its name for messages) and opens nothing
// itself; read_mesh(path) is the one entry point that opens a path (open_regular), for callers
// without roots.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/mesh/error.hpp"
#include "daemon/mesh/mapped_file.hpp"
#include "daemon/mesh/mesh.hpp"

namespace meshdock::mesh {

// Limits a caller (the daemon) sets on what a file may make the reader allocate.
struct ReadOptions {
  // The most bytes a file's arrays may decode to, summed over the file and checked from the
  // headers before anything is inflated (a compressed VTU claims its sizes up front); 0: none.
  std::uint64_t max_bytes = 0;
  // Opens a piece a parallel XML file (.pvtu, .pvtp, .pvts, .pvtr, .pvti) or a file an Abaqus
  // *INCLUDE or a Nastran INCLUDE names (relative to the including file's directory), given as
  // written there (relative to its directory; the reader has refused absolute names and any
  // '..' already). The daemon opens it under its roots; read_mesh(path) beside the path.
  // Unset: such a file is a ReadError. (Pieces report no progress: READ counts the parallel
  // file's own bytes.)
  std::function<UniqueFd(const std::string& relative)> open_sibling;
  // The names of the entries in the file's directory (one component each), for a reader that
  // looks for files by a pattern (a DOLFIN mesh's x_<name>.xml mesh functions); opened with
  // open_sibling. The daemon lists the directory under its roots; read_mesh(path) beside the
  // path. Unset: no such files are looked for.
  std::function<std::vector<std::string>()> list_siblings;
};

// A file whose headers claim more than ReadOptions::max_bytes; names file, array and size.
class SizeLimitError : public ReadError {
 public:
  explicit SizeLimitError(const std::string& what) : ReadError(what) {}
};

Mesh read_msh(const InFile& file);  // Gmsh MSH 4.1 / 4.0 / 2.x, ascii / binary; MSH 1
// The same parser over bytes in memory; `name` stands for the file in error messages.
Mesh read_msh_bytes(std::string_view data, const std::string& name);

// VTK XML: UnstructuredGrid (.vtu), PolyData (.vtp), StructuredGrid (.vts), RectilinearGrid
// (.vtr), ImageData (.vti) and their parallel forms (.pvtu .pvtp .pvts .pvtr .pvti, through
// options.open_sibling); every encoding (ascii, inline base64, appended raw / base64; zlib, LZ4,
// LZMA).
Mesh read_vtu(const InFile& file, const ReadOptions& options = {});
Mesh read_vtu_bytes(std::string_view data, const std::string& name);
Mesh read_vtk(const InFile& file);  // legacy VTK UNSTRUCTURED_GRID, ascii / binary
Mesh read_vtk_bytes(std::string_view data, const std::string& name);
Mesh read_stl(const InFile& file);  // ascii and binary
Mesh read_off(const InFile& file);
Mesh read_obj(const InFile& file);
Mesh read_ply(const InFile& file);  // ascii, binary little / big endian
// Medit / libMeshb: ascii .mesh and binary .meshb (versions 1-4, either byte order), told apart
// by content.
Mesh read_medit(const InFile& file);
// Abaqus .inp: *NODE, *ELEMENT, *NSET, *ELSET, *INCLUDE (through options.open_sibling; unset:
// a file with *INCLUDE is a ReadError).
Mesh read_abaqus(const InFile& file, const ReadOptions& options = {});
// AVS UCD ascii (.avs, .ucd, deal.II's .inp): nodes, cells of the 8 UCD types, material ids,
// node and cell data.
Mesh read_ucd(const InFile& file);
// SU2 native mesh (.su2): NDIME, NPOIN, NELEM, NMARK / MARKER_TAG / MARKER_ELEMS (markers ->
// cell_data "su2:tag" as meshio numbers them, and cell regions named by their tags); zone 1 of a
// multi-zone file.
Mesh read_su2(const InFile& file);
// Exodus II (.e, .exo, .ex2) in the netCDF classic formats (CDF-1, CDF-2, CDF-5), over
// meshdock's own netCDF parser: points, blocks, point / cell data of the first time step, node
// sets, side sets, block names. A netCDF-4 (HDF5) file is a ReadError saying how to convert it.
Mesh read_exodus(const InFile& file);
// Nastran bulk data (.bdf, .nas, .fem): small, large and free field; GRID and the element cards
// meshio reads, property ids; every other card skipped (noted); INCLUDE 'f' read in place
// (through options.open_sibling; unset: a file with an INCLUDE is a ReadError).
Mesh read_nastran(const InFile& file, const ReadOptions& options = {});

// TetGen .node + .ele, read from either: the other is opened through options.open_sibling by
// the base name and its extension (unset: a ReadError). Points with attributes and markers,
// 4- and 10-node tets with region attributes, as meshio names them.
Mesh read_tetgen(const InFile& file, const ReadOptions& options = {});

// Tecplot ASCII data (.dat, .tec; meshio's "tecplot"): finite-element zones (FELINESEG,
// FETRIANGLE, FEQUADRILATERAL, FETETRAHEDRON, FEBRICK; ZONETYPE / DATAPACKING or the old F= /
// ET=), ordered (I, J, K) zones as VTK's structured-grid cells (hexahedron, quad, line, vertex),
// BLOCK and POINT packing, nodal and cell-centred variables; every zone read, a block each,
// points appended. Polygon / polyhedron zones are ReadErrors.
Mesh read_tecplot(const InFile& file);

// UGRID (.ugrid; AFLR3, FUN3D, USM3D): the variant from the name's suffix before .ugrid
// (ascii; .b8 .b4 .lb8 .lb4 .b8l .lb8l C binary; .r8 .r4 .lr8 .lr4 Fortran unformatted), as
// meshio names them: points, the six cell types, surface ids as cell_data "ugrid:ref".
Mesh read_ugrid(const InFile& file);

// FLAC3D grid (.f3grid; meshio's "flac3d"), ascii or binary told by content as meshio: grid
// points, zones (tetra, pyramid, wedge, hexahedron) and faces (triangle, quad) in VTK's node
// order, cell_data "cell_ids", zone / face groups as cell regions "zone:<name>:<slot>".
Mesh read_flac3d(const InFile& file);
// ANSYS Fluent mesh (.msh told from Gmsh's by content: a first '(' ; formats "ansys" /
// "fluent"), as meshio's "ansys": nodes (10 / 2010 / 3010), cell blocks with bodies (12 / 2012
// / 3012: triangle tetra quad hexahedron pyramid wedge), face zones (13 / 2013 / 3013: line
// triangle quad; mixed zones a block a type, binary too) in file order; other sections noted.
Mesh read_ansys(const InFile& file);
// Kratos Multiphysics model part (.mdpa; meshio's "mdpa"): Nodes as points (n, 3), Elements and
// Conditions blocks by their Kratos name (meshio's names, or <Name><d>D<k>N), node / element /
// condition ids as labels, SubModelParts as point and cell regions "outer.inner", scalar
// NodalData as point_data; other blocks noted.
Mesh read_mdpa(const InFile& file);
// Netgen (.vol, .vol.gz gzipped; Netgen / NGSolve's Mesh.Save) as meshio's "netgen": points,
// vertex / line / triangle(6) / quad(8) / tetra(10) / pyramid(13) / wedge(15) / hexahedron(20)
// in VTK's order, cell_data "netgen:index", materials / bcnames / cd2names as field_data and
// cell regions. A gzipped file inflates to at most options.max_bytes (else half the
// machine's memory, at most 16 GiB).
Mesh read_netgen(const InFile& file, const ReadOptions& options = {});

// DOLFIN XML (.xml, .xml.gz gzipped (inflated to at most options.max_bytes, else
// default_inflate_limit()); meshio's "dolfin-xml"; legacy FEniCS): interval / triangle /
// tetrahedron meshes, points (n, gdim); <domains> markers as cell_data "dolfin:domains" or cell
// regions, side regions "dolfin:facets:<value>", point data or regions "dolfin:vertices"; the mesh
// functions x_<name>.xml beside x.xml (options.list_siblings + open_sibling) under <name>, in
// meshio's form and DOLFIN 2017+'s.
Mesh read_dolfin(const InFile& file, const ReadOptions& options = {});
// PERMAS (.dato, .post; gzipped .dato.gz / .post.gz under options.max_bytes, else
// default_inflate_limit(); meshio's "permas"): $COOR nodes (n, 3), an $ELEMENT block per
// keyword (meshio's element names; TET10 / TRIA6 / QUAD9 / PENTA15 taken from PERMAS' node order
// to VTK's), $NSET / $ESET and the NSET = / ESET = parameters as point / cell regions; every other
// keyword noted, not read.
Mesh read_permas(const InFile& file, const ReadOptions& options = {});
// Neuroglancer's legacy precomputed mesh (no extension; format "neuroglancer", meshio's): a
// uint32 vertex count, float32 vertices (widened to float64), uint32 triangles.
Mesh read_neuroglancer(const InFile& file);

// Picks the reader by `format` ("msh", ...) or, when empty, by the extension of file.path.
Mesh read_mesh(const InFile& file, std::string_view format = "", const ReadOptions& options = {});
// Opens `path` (open_regular), then read_mesh(InFile).
Mesh read_mesh(const std::string& path, std::string_view format = "",
               const ReadOptions& options = {});

}  // namespace meshdock::mesh
