"""The Mesh model in Python and `read`: C++ readers, in process, no daemon.

Arrays are numpy views of the buffers the C++ reader filled (no copy); each keeps its buffer
alive, so a Mesh can be dropped while its arrays live on.
"""

from __future__ import annotations

import ctypes
import errno
import io
import itertools
import os
import sys
import warnings
from ctypes import c_void_p
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

__all__ = ["MeshError", "ReadError", "WriteError", "MeshWarning", "CellBlock", "Region", "Mesh",
           "MeshFileNotFoundError", "MeshPermissionError", "read", "write"]


class MeshError(ValueError):
    """The mesh I/O layer's error: a mesh that is inconsistent, unreadable or unwritable."""


class ReadError(MeshError):
    """A file the readers cannot read; the message names the file and the line or byte."""


class _ReaderOSError:
    """str() is the reader's message, which names the file already: OSError's own form would
    say it twice ("[Errno 2] x.vtu: cannot open (...): 'x.vtu'"). errno, strerror and filename
    are OSError's."""

    def __str__(self) -> str:
        return str(self.strerror)


class MeshFileNotFoundError(_ReaderOSError, FileNotFoundError, ReadError):
    """`read` of a path that does not exist: a FileNotFoundError (errno ENOENT, filename) and a
    ReadError, so both `except FileNotFoundError` and `except meshdock.ReadError` catch it."""


class MeshPermissionError(_ReaderOSError, PermissionError, ReadError):
    """`read` of a file this process may not read: a PermissionError and a ReadError."""


class WriteError(MeshError):
    """A mesh a writer cannot write; the message names the file and the block or array."""


class MeshWarning(UserWarning):
    """A lossy step a reader or writer took (the same text is in the notes it returns)."""


# Mesh, CellBlock and Region compare by identity (eq=False), as meshio's Mesh and CellBlock
# do: the == a dataclass generates compares the fields as a tuple, and two numpy arrays of more
# than one element have no truth value, so md.read(f) == md.read(f) raised ValueError ("The
# truth value of an array ... is ambiguous") instead of answering. What "equal" should mean for
# meshes (dtypes, float tolerance, block order, notes) is the caller's to say.
@dataclass(eq=False)
class CellBlock:
    """One block of cells of one type.

    Fixed-size types: ``data`` is (n, nodes_per_cell) int64. Ragged blocks (cells of varying
    size) keep CSR arrays: ``data`` is flat; for a polygon block ``offsets`` (n + 1) delimit the
    cells in ``data``; for a polyhedron block ``face_offsets`` delimit faces in ``data`` and
    ``offsets`` (n + 1) delimit each cell's faces.

    ``==`` is identity (as for Mesh): compare ``type`` and the arrays with np.array_equal.
    """

    type: str
    data: np.ndarray
    offsets: Optional[np.ndarray] = None
    face_offsets: Optional[np.ndarray] = None

    @property
    def ragged(self) -> bool:
        return self.offsets is not None

    def __len__(self) -> int:
        return len(self.offsets) - 1 if self.offsets is not None else len(self.data)

    def cell(self, i: int):
        """Cell i: a row of point ids, or for a polyhedron a list of faces (arrays of ids)."""
        if self.offsets is None:
            return self.data[i]
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        if self.face_offsets is None:
            return self.data[lo:hi]
        fo = self.face_offsets
        return [self.data[int(fo[f]):int(fo[f + 1])] for f in range(lo, hi)]


@dataclass(eq=False)
class Region:
    """A named set: ``kind`` "point" (``entries``: point ids), "cell" (global, block-major cell
    numbers) or "side" ((cell, local facet) pairs, shape (n, 2)); ``dim`` and ``tag`` as the
    file gave them (a Gmsh physical group's). ``==`` is identity (as for Mesh)."""

    name: str
    kind: str  # "point" | "cell" | "side"
    dim: int
    tag: int
    entries: np.ndarray


# Nodes per cell of meshio's fixed-size types: get_cells_type's empty (0, n) answer.
_NODES = {"vertex": 1, "line": 2, "line3": 3, "triangle": 3, "triangle6": 6, "quad": 4,
          "quad8": 8, "quad9": 9, "tetra": 4, "tetra10": 10, "hexahedron": 8,
          "hexahedron20": 20, "hexahedron27": 27, "wedge": 6, "wedge15": 15, "pyramid": 5,
          "pyramid13": 13}


def _block_of(b) -> CellBlock:
    """A CellBlock from what meshio users pass: a CellBlock, ("tetra", array), a meshio
    CellBlock (.type, .data), or a ragged ("polygon", [cell, cell, ...]) of varying sizes
    (stored as CSR: flat data + offsets)."""
    if isinstance(b, CellBlock):
        return b
    kind, data = (b.type, b.data) if isinstance(getattr(b, "type", None), str) else (b[0], b[1])
    if isinstance(data, (list, tuple)) and data and len({len(c) for c in data}) > 1:
        sizes = np.fromiter((len(c) for c in data), dtype=np.int64, count=len(data))
        offsets = np.zeros(len(data) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = np.concatenate([np.asarray(c, dtype=np.int64) for c in data])
        return CellBlock(str(kind), flat, offsets)
    return CellBlock(str(kind), np.asarray(data))


def _cells_of_blocks(blocks: List[CellBlock]):
    """meshio's view of several blocks of one type: one (n, k) array, or a list of cells when
    the blocks are ragged."""
    if any(b.ragged for b in blocks):
        return [b.cell(i) for b in blocks for i in range(len(b))]
    return blocks[0].data if len(blocks) == 1 else np.concatenate([b.data for b in blocks])


@dataclass(eq=False)
class Mesh:
    """A mesh: points, cell blocks, data and regions (docs/DESIGN.md "Data model").

    Built the meshio way too: ``Mesh(points, [("tetra", tets)])`` or ``Mesh(points,
    {"triangle": tris})``; and read the meshio way (``cells_dict``, ``cell_data_dict``,
    ``get_cells_type``, ``get_cell_data``, ``point_sets`` / ``cell_sets`` derived from the
    regions, ``write``). ``meshdock.to_meshio`` / ``from_meshio`` convert.

    ``==`` and hash() are identity, as for a meshio.Mesh (and CellBlock, Region): two reads of
    one file are two meshes. Compare contents array by array, e.g.
    ``np.array_equal(a.points, b.points)`` and each block's ``type`` and ``data``."""

    points: np.ndarray
    cells: List[CellBlock]
    point_data: Dict[str, np.ndarray] = field(default_factory=dict)
    cell_data: Dict[str, List[np.ndarray]] = field(default_factory=dict)
    field_data: Dict[str, np.ndarray] = field(default_factory=dict)
    regions: List[Region] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def __post_init__(self):
        self.points = np.asarray(self.points)
        cells = self.cells.items() if isinstance(self.cells, dict) else self.cells
        self.cells = [_block_of(b) for b in cells]
        self.point_data = {k: np.asarray(v) for k, v in (self.point_data or {}).items()}
        self.cell_data = {k: [np.asarray(a) for a in v] for k, v in (self.cell_data or {}).items()}
        self.field_data = dict(self.field_data or {})
        self.regions = list(self.regions or [])
        self.notes = list(self.notes or [])

    def __repr__(self) -> str:
        blocks = ", ".join(f"{b.type}:{len(b)}" for b in self.cells)
        text = f"<meshdock.Mesh {len(self.points)} points, {len(self.cells)} blocks ({blocks})"
        for what, d in (("point_data", self.point_data), ("cell_data", self.cell_data),
                        ("field_data", self.field_data)):
            if d:
                text += f", {what} [{', '.join(d)}]"
        return text + f", {len(self.regions)} regions>"

    # ---- meshio's accessors ------------------------------------------------------------
    def _by_type(self) -> Dict[str, List[int]]:
        out: Dict[str, List[int]] = {}
        for i, b in enumerate(self.cells):
            out.setdefault(b.type, []).append(i)
        return out

    @property
    def cells_dict(self) -> Dict[str, object]:
        """{cell type: connectivity of every block of that type, concatenated} (meshio)."""
        return {t: _cells_of_blocks([self.cells[i] for i in ix])
                for t, ix in self._by_type().items()}

    @property
    def cell_data_dict(self) -> Dict[str, Dict[str, np.ndarray]]:
        """{data name: {cell type: that data over every block of the type}} (meshio)."""
        by_type = self._by_type()
        return {name: {t: parts[ix[0]] if len(ix) == 1 else np.concatenate([parts[i] for i in ix])
                       for t, ix in by_type.items()}
                for name, parts in self.cell_data.items()}

    def get_cells_type(self, cell_type: str):
        """The connectivity of every `cell_type` cell, concatenated; an empty (0, nodes) array
        when there is none (meshio)."""
        ix = self._by_type().get(cell_type)
        if not ix:
            return np.empty((0, _NODES.get(cell_type, 0)), dtype=np.int64)
        return _cells_of_blocks([self.cells[i] for i in ix])

    def get_cell_data(self, name: str, cell_type: str) -> np.ndarray:
        """cell_data[name] over the blocks of `cell_type`, concatenated (meshio). KeyError
        naming the field when there is no such data."""
        if name not in self.cell_data:
            raise KeyError(f"no cell_data '{name}' (there is: {', '.join(self.cell_data) or 'none'})")
        parts = [d for b, d in zip(self.cells, self.cell_data[name]) if b.type == cell_type]
        return np.concatenate(parts) if parts else np.empty((0,), dtype=np.float64)

    @property
    def point_sets(self) -> Dict[str, np.ndarray]:
        """{name: point ids} of the point regions (meshio's point_sets). A name used by
        several regions keeps the first."""
        out: Dict[str, np.ndarray] = {}
        for r in self.regions:
            if r.kind == "point":
                out.setdefault(r.name, np.asarray(r.entries))
        return out

    @property
    def cell_sets(self) -> Dict[str, List[np.ndarray]]:
        """{name: [block-local cell ids, one array per block]} of the cell regions (meshio's
        cell_sets; meshdock stores global block-major ids). Side regions have no meshio form."""
        bases = np.zeros(len(self.cells) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in self.cells], out=bases[1:])
        out: Dict[str, List[np.ndarray]] = {}
        for r in self.regions:
            if r.kind != "cell" or r.name in out:
                continue
            e = np.asarray(r.entries, dtype=np.int64)
            which = np.searchsorted(bases, e, side="right") - 1
            out[r.name] = [e[which == k] - bases[k] for k in range(len(self.cells))]
        return out

    def write(self, path, file_format: Optional[str] = None, **kwargs) -> List[str]:
        """meshio's Mesh.write: `write(path, self, file_format, ...)`."""
        return write(path, self, file_format=file_format, **kwargs)


# meshio's format names that differ from meshdock's.
_FORMAT_ALIASES = {"gmsh": "msh", "gmsh22": "msh", "gmsh-ascii": "msh", "gmsh-binary": "msh",
                   "vtk-ascii": "vtk", "vtk-binary": "vtk", "vtu-ascii": "vtu", "vtu-binary": "vtu",
                   "stl-ascii": "stl", "stl-binary": "stl", "ply-ascii": "ply", "ply-binary": "ply",
                   "abaqus": "inp", "avsucd": "avs", "exodus": "exo", "nastran": "bdf",
                   "tetgen": "node"}
# ("su2", "tecplot", "ugrid", "flac3d", "netgen", "ansys", "mdpa", "permas", "neuroglancer" and
# "dolfin-xml" (read only) are meshio's names and meshdock's
# alike ("ansys-ascii" / "ansys-binary" set the encoding in the writer); "fluent" and "kratos" are
# meshdock's own: the layouts Fluent and Kratos read, which meshio does not write;
# meshdock reads and writes x.vol.gz gzipped, as meshio, and x.post.gz / x.dato.gz gzipped, which
# meshio writes as plain text.)


def _format(format: Optional[str], file_format: Optional[str]) -> str:
    if format and file_format and format != file_format:
        raise ValueError(f"format={format!r} and file_format={file_format!r} disagree")
    f = format or file_format or ""
    return _FORMAT_ALIASES.get(f, f)


_PARALLEL = ("pvtu", "pvtp", "pvts", "pvtr", "pvti")


def _is_buffer(obj) -> bool:
    return not isinstance(obj, (str, bytes, os.PathLike)) and (
        hasattr(obj, "read") or hasattr(obj, "write"))


def _buffer_name(buf) -> str:
    """How messages name a buffer: its file's name where it has one, else its type."""
    name = getattr(buf, "name", None)
    return name if isinstance(name, str) and name else f"<{type(buf).__name__}>"


def _buffer_format(verb: str, buf, format, file_format) -> str:
    fmt = _format(format, file_format)
    if not fmt:
        raise TypeError(f"meshdock.{verb}: {_buffer_name(buf)} is a buffer, which has no file "
                        "extension to tell its format by; pass file_format= (or format=)")
    if fmt in _PARALLEL:
        raise MeshError(f"meshdock.{verb}: {_buffer_name(buf)}: a parallel file ({fmt}) names "
                        "piece files beside it; read it from its path")
    if fmt in ("node", "ele"):
        raise MeshError(f"meshdock.{verb}: {_buffer_name(buf)}: a TetGen mesh is two files (.node "
                        "and .ele), which one buffer cannot hold; "
                        f"{verb} it {'from' if verb == 'read' else 'to'} a path")
    return fmt


def _renamed(e: Exception, was: str, now: str) -> Exception:
    """`e` (a MeshError) with the temporary path in its message said as the buffer's name."""
    return type(e)(str(e).replace(was, now))


def _read_buffer(buf, format, file_format) -> Mesh:
    # meshio.read takes an open file (file_format required); the readers take a path and map
    # it, so the bytes go into an anonymous memory file (memfd) read through /proc/self/fd.
    fmt = _buffer_format("read", buf, format, file_format)
    data = buf.read()
    if isinstance(data, str):  # a text buffer (io.StringIO, open(..., "r")): ascii formats
        data = data.encode("utf-8")
    fd = os.memfd_create("meshdock-read", os.MFD_CLOEXEC)
    try:
        with os.fdopen(os.dup(fd), "wb") as f:
            f.write(data)
        proc = f"/proc/self/fd/{fd}"
        try:
            m = read(proc, format=fmt)
        except MeshError as e:
            raise _renamed(e, proc, _buffer_name(buf)) from None
    finally:
        os.close(fd)
    m.notes = [n.replace(proc, _buffer_name(buf)) for n in m.notes]
    return m


def read(path, format: Optional[str] = None, file_format: Optional[str] = None) -> Mesh:
    """Read `path` (format from the extension unless given; `file_format` is meshio's name
    for it, and meshio's names such as "gmsh" work). Raises ReadError, which is also a
    FileNotFoundError when `path` does not exist and a PermissionError when it cannot be
    read. `path` may also be an open binary or text file / buffer (io.BytesIO), as meshio
    takes it: its format must then be given, and messages name it by its `name`."""
    from . import _capi

    if _is_buffer(path):
        return _read_buffer(path, format, file_format)
    a = _capi.api()
    out = c_void_p()
    try:
        _capi.check(a.mesh_read(os.fsencode(path), _format(format, file_format).encode(), out))
    except ReadError as e:
        if not os.path.lexists(path):
            raise MeshFileNotFoundError(errno.ENOENT, str(e), os.fspath(path)) from None
        if not os.access(path, os.R_OK):
            raise MeshPermissionError(errno.EACCES, str(e), os.fspath(path)) from None
        raise
    h = _capi.Handle(out.value, a.mesh_release)
    return _mesh_of(a, h)


def _mesh_of(a, h) -> Mesh:
    """The Mesh of a meshdock_mesh handle: numpy views of its arrays (no copies)."""
    from . import _capi
    from ._tensor import numpy_of

    p = h.ptr
    n = a.mesh_array_count(p)
    views: list = [None] * n

    def view(i):
        if i < 0:
            return None
        if views[i] is None:
            views[i] = numpy_of(a.mesh_array_dlpack_legacy, p, i)
        return views[i]

    info = _capi.ArrayInfo()
    info.struct_size = ctypes.sizeof(info)
    points = None
    point_data: Dict[str, np.ndarray] = {}
    cell_data: Dict[str, Dict[int, np.ndarray]] = {}
    field_data: Dict[str, np.ndarray] = {}
    for i in range(n):
        _capi.check(a.mesh_array(p, i, info))
        role = info.role
        if role == _capi.ROLE_POINTS:
            points = view(i)
        elif role == _capi.ROLE_POINT_DATA:
            point_data[info.key.decode()] = view(i)
        elif role == _capi.ROLE_CELL_DATA:
            cell_data.setdefault(info.key.decode(), {})[info.block] = view(i)
        elif role == _capi.ROLE_FIELD_DATA:
            field_data[info.key.decode()] = view(i)
    cells = []
    b = _capi.BlockInfo()
    b.struct_size = ctypes.sizeof(b)
    for k in range(a.mesh_block_count(p)):
        _capi.check(a.mesh_block(p, k, b))
        cells.append(CellBlock(b.type.decode(), view(b.connectivity), view(b.offsets),
                               view(b.face_offsets)))
    regions = []
    r = _capi.RegionInfo()
    r.struct_size = ctypes.sizeof(r)
    for k in range(a.mesh_region_count(p)):
        _capi.check(a.mesh_region(p, k, r))
        regions.append(Region(r.name.decode(), r.kind.decode(), r.dim, r.tag, view(r.entries)))
    return Mesh(points=points, cells=cells, point_data=point_data,
                cell_data={k: [v[b] for b in sorted(v)] for k, v in cell_data.items()},
                field_data=field_data, regions=regions,
                notes=_capi.strings(a.mesh_notes(p)))


def release_memory() -> int:
    """Give back to the system the big array buffers (1 MiB and up) that meshes read here have
    released. Up to 128 MiB of them are kept, so that reading a mesh of the same size again
    finds its memory already in place (about 30% of a binary read); call this when no such
    read is coming. Returns how many bytes went back."""
    from . import _capi

    n = ctypes.c_uint64()
    _capi.check(_capi.api().release_host_cache(n))
    return int(n.value)


def write(path, mesh, format: Optional[str] = None, encoding: Optional[str] = None,
          zlib_level: int = 6, file_format: Optional[str] = None) -> List[str]:
    """Write `mesh` to `path` with the C++ writers; the format comes from the extension unless
    given ("vtu" and "vtp" (XML PolyData): encoding "zlib" (default), "raw" or
    "ascii"; "msh": Gmsh 4.1 and "msh22" / "gmsh22": Gmsh 2.2, "vtk" (legacy), "stl", "ply":
    "binary" (default) or "ascii"; "obj", "off", "inp" (Abaqus; meshio's "abaqus"), "su2", "bdf" /
    "nas" / "fem" (Nastran free field; meshio's "nastran"), "dat" / "tec" (Tecplot; meshio's
    "tecplot"), "avs" / "ucd" (AVS UCD; meshio's "avsucd"), "node" / "ele" (TetGen: both x.node
    and x.ele are written; meshio's "tetgen"): ascii; "mesh" / "meshb" (meshio's
    "medit": by the extension): Medit ascii / binary; "exo" / "e" / "ex2" (meshio's "exodus"):
    Exodus II as netCDF CDF-2; "ugrid": the variant by the name as meshio's (x.ugrid ascii,
    x.b8.ugrid, x.lb4.ugrid, x.r8.ugrid ... binary); "f3grid" (meshio's "flac3d"): FLAC3D grid,
    "ascii" (default, as meshio's) or "binary"; "vol" / "netgen": Netgen, x.vol.gz gzipped;
    "post" / "dato" / "permas": PERMAS as meshio writes it (sets noted: meshio's reader fails on
    them), x.post.gz / x.dato.gz gzipped; "neuroglancer": Neuroglancer's legacy precomputed
    mesh (its files have no extension), float32 vertices (rounding noted), triangles only;
    "ansys" / "ansys-ascii" / "ansys-binary" (meshio's "ansys"): ANSYS Fluent, binary by
    default as meshio's (x.msh is Gmsh's unless the format is given; no faces, as meshio's,
    which Fluent does not open); "fluent" / "fluent-ascii": Fluent's own layout (the volume
    cells' faces with their cells c0 c1, boundary zones from the lower blocks), which Fluent
    and VTK read as cells;
    "mdpa": Kratos Multiphysics as meshio writes it, regions as SubModelParts (meshio's reader
    skips them); "kratos": an .mdpa that Kratos' ModelPartIO loads (the top-dimensional cells
    as KratosCore's generic elements, Element3D4N ..., the lower ones as conditions,
    SurfaceCondition3D3N ..., Kratos' data lines; meshio's names are Kratos' geometries, which
    Kratos does not load as elements);
    `file_format`: meshio's name for it).
    VTP holds vertices, lines and polygons, written in PolyData's order (vertices, lines,
    polygons; noted when that moves a block, cell data and regions move with it). STL, OBJ,
    PLY and OFF hold faces (STL: triangles; quads and polygons go as triangle fans, noted).
    Another cell type there is a WriteError naming its block. `mesh` is a meshdock.Mesh or
    any object with the same attributes (points, cells with .type/.data, point_data,
    cell_data, field_data, regions); arrays already C-contiguous are written without a copy.
    The file appears whole or not at all.

    Every lossy step (e.g. point data MSH stores as float64) is returned and also issued as a
    MeshWarning. Raises WriteError (or MeshError for an inconsistent mesh).

    `path` may also be an open file or buffer (io.BytesIO; a text one for ascii output), as
    meshio takes it: its format must then be given; the file is written whole to a temporary
    file first, so nothing reaches the buffer when the write fails.
    """
    from . import _capi

    if _is_buffer(path):
        import tempfile

        fmt = _buffer_format("write", path, format, file_format)
        with tempfile.TemporaryDirectory(prefix="meshdock-write-") as tmp:
            out_path = os.path.join(tmp, "mesh." + fmt.split("-")[0])
            try:
                with warnings.catch_warnings(record=True):  # issued below, renamed
                    warnings.simplefilter("always")
                    notes = write(out_path, mesh, format=format, encoding=encoding,
                                  zlib_level=zlib_level, file_format=file_format)
            except MeshError as e:
                raise _renamed(e, out_path, _buffer_name(path)) from None
            with open(out_path, "rb") as f:
                data = f.read()
        if isinstance(path, io.TextIOBase):
            try:
                path.write(data.decode("ascii"))
            except UnicodeDecodeError:
                raise WriteError(f"{_buffer_name(path)}: a text buffer cannot take this {fmt} "
                                 "file's binary bytes; use a binary one (io.BytesIO) or "
                                 "encoding='ascii'") from None
        else:
            path.write(data)
        notes = [n.replace(out_path, _buffer_name(path)) for n in notes]
        for n in notes:
            warnings.warn(n, MeshWarning, stacklevel=2)
        return notes
    a = _capi.api()
    h = c_mesh(as_dict(mesh))
    o = _capi.WriteOptions()
    a.write_options_init(o)
    f = format or file_format or ""
    # meshio's "gmsh22" names MSH 2.2 here (reading takes any version as "msh"); its "-ascii" /
    # "-binary" names carry the encoding.
    o.format = ("msh22" if f == "gmsh22" else _format(format, file_format)).encode()
    if encoding is None and f.endswith(("-ascii", "-binary")):
        # meshio's "vtu-binary" is zlib-compressed appended data: VTU's default here.
        encoding = f.rsplit("-", 1)[1] if f != "vtu-binary" else None
    o.encoding = (encoding or "").encode()
    o.zlib_level = zlib_level
    out = c_void_p()
    _capi.check(a.mesh_write(h.ptr, os.fsencode(path), o, out))
    try:
        notes = _capi.strings(out.value)
    finally:
        a.strings_release(out.value)
    for n in notes:
        warnings.warn(n, MeshWarning, stacklevel=2)
    return notes


# ---- building a C mesh from numpy arrays (borrowed, no copies) ------------------------------
_DL_CODE = {"i": 0, "u": 1, "f": 2, "b": 6, "c": 5}
_borrowed: Dict[int, object] = {}
_next_key = itertools.count(1)


def _release(ctx):
    # The library no longer uses the arrays lent under `ctx` (any thread; ctypes takes the GIL).
    _borrowed.pop(ctx, None)


_RELEASE = None


def _release_fn():
    global _RELEASE
    if _RELEASE is None:
        from . import _capi
        from ._dlpack import keep_forever
        fn = keep_forever(_capi.RELEASE(_release))  # may run late at exit
        _RELEASE = fn
    return _RELEASE


def _dltensor(arr, what: str, keep: list):
    """A DLTensor describing numpy array `arr` (C-contiguous, little-endian, numeric)."""
    from ._dlpack import DLDataType, DLDevice, DLTensor

    if arr is None:
        return None
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{what} is not an array")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{what} is not C-contiguous (pass np.ascontiguousarray)")
    dt = arr.dtype
    code = _DL_CODE.get(dt.kind)
    if code is None:
        raise TypeError(f"{what} has dtype {dt}, which is not numeric")
    if dt.byteorder == ">" or (dt.byteorder == "=" and sys.byteorder == "big"):
        raise ValueError(f"{what} is big-endian; convert it first")
    shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    t = DLTensor()
    t.data = arr.__array_interface__["data"][0] or None
    t.device = DLDevice(1, 0)
    t.ndim = arr.ndim
    t.dtype = DLDataType(code, dt.itemsize * 8, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    keep.append(shape)
    keep.append(arr)
    return ctypes.pointer(t)


def _lend(arrays) -> int:
    """Keeps `arrays` alive until the library calls the release callback with the key."""
    key = next(_next_key)
    _borrowed[key] = arrays
    return key


def c_mesh(d: dict):
    """A meshdock_mesh handle over the arrays of `d` (the dict form of as_dict), no copies."""
    from . import _capi

    a = _capi.api()
    out = c_void_p()
    _capi.check(a.mesh_new(out))
    h = _capi.Handle(out.value, a.mesh_release)
    p = h.ptr
    rel = _release_fn()

    def lend(setter, *args, arrays):
        keep: list = []
        ts = [_dltensor(arr, what, keep) for arr, what in arrays]
        key = _lend(keep)
        _capi.check(setter(p, *args, *ts, rel, key))

    if d["points"] is not None:
        lend(a.mesh_set_points, arrays=[(d["points"], "points")])
    for typ, data, offsets, face_offsets in d["cells"]:
        what = f"cells block '{typ}'"
        lend(a.mesh_add_cell_block, typ.encode(), arrays=[
            (data, what + " data"), (offsets, what + " offsets"),
            (face_offsets, what + " face_offsets")])
    for name, v in d["point_data"].items():
        lend(a.mesh_set_point_data, name.encode(), arrays=[(v, f"point_data '{name}'")])
    for name, parts in d["cell_data"].items():
        if not parts and d["cells"]:
            # The C ABI appends parts, so an empty list never reaches the C++ check.
            raise MeshError(f"cell_data '{name}' has 0 arrays for {len(d['cells'])} blocks")
        for v in parts:
            lend(a.mesh_add_cell_data, name.encode(), arrays=[(v, f"cell_data '{name}'")])
    for name, v in d["field_data"].items():
        lend(a.mesh_set_field_data, name.encode(), arrays=[(v, f"field_data '{name}'")])
    for name, kind, dim, tag, entries in d["regions"]:
        if kind not in ("point", "cell", "side"):
            raise ValueError(f"region kind '{kind}' is not point, cell or side")
        lend(a.mesh_add_region, name.encode(), kind.encode(), int(dim), int(tag),
             arrays=[(entries, f"region '{name}' entries")])
    return h


def as_dict(mesh, copies: Optional[List[str]] = None) -> dict:
    """The dict form the C++ core takes (the shape read returns): C-contiguous arrays, int64
    connectivity, from a meshdock.Mesh or any object with the same attributes (a meshio.Mesh
    works: its cells have .type and .data). Contiguous arrays of the right dtype pass through
    without a copy; every array that had to be copied is named in `copies` when given."""

    def c(a, name, dtype=None):
        if a is None:
            return None
        out = np.ascontiguousarray(a, dtype=dtype)
        if copies is not None and not np.shares_memory(out, np.asarray(a)):
            why = f"{np.asarray(a).dtype} -> {out.dtype}" if dtype is not None and \
                np.asarray(a).dtype != out.dtype else "made C-contiguous"
            copies.append(f"{name}: {why} (copy)")
        return out

    cells = []
    for i, b in enumerate(mesh.cells):
        kind, data = (b.type, b.data) if isinstance(getattr(b, "type", None), str) else (b[0], b[1])
        cells.append((kind, c(data, f"cells/{i}", np.int64),
                      c(getattr(b, "offsets", None), f"cells/{i} offsets", np.int64),
                      c(getattr(b, "face_offsets", None), f"cells/{i} face_offsets", np.int64)))
    return {
        "points": c(mesh.points, "points"),
        "cells": cells,
        "point_data": {k: c(v, f"point_data/{k}")
                       for k, v in (getattr(mesh, "point_data", None) or {}).items()},
        "cell_data": {k: [c(a, f"cell_data/{k}/{i}") for i, a in enumerate(v)]
                      for k, v in (getattr(mesh, "cell_data", None) or {}).items()},
        "field_data": {k: np.ascontiguousarray(np.atleast_1d(v))
                       for k, v in (getattr(mesh, "field_data", None) or {}).items()},
        "regions": [(r.name, r.kind, int(r.dim), int(r.tag), c(r.entries, f"regions/{r.name}", np.int64))
                    for r in (getattr(mesh, "regions", None) or [])],
    }
