"""The Mesh model in Python and `read`: C++ readers, in process, no daemon.

Arrays are numpy views of the buffers the C++ reader filled (no copy); each keeps its buffer
alive, so a Mesh can be dropped while its arrays live on.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

__all__ = ["MeshError", "ReadError", "WriteError", "MeshWarning", "CellBlock", "Region", "Mesh",
           "read", "write"]


class MeshError(ValueError):
    """The mesh I/O layer's error: a mesh that is inconsistent, unreadable or unwritable."""


class ReadError(MeshError):
    """A file the readers cannot read; the message names the file and the line or byte."""


class WriteError(MeshError):
    """A mesh a writer cannot write; the message names the file and the block or array."""


class MeshWarning(UserWarning):
    """A lossy step a reader or writer took (the same text is in the notes it returns)."""


@dataclass
class CellBlock:
    """One block of cells of one type.

    Fixed-size types: ``data`` is (n, nodes_per_cell) int64. Ragged blocks (cells of varying
    size) keep CSR arrays: ``data`` is flat; for a polygon block ``offsets`` (n + 1) delimit the
    cells in ``data``; for a polyhedron block ``face_offsets`` delimit faces in ``data`` and
    ``offsets`` (n + 1) delimit each cell's faces.
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


@dataclass
class Region:
    name: str
    kind: str  # "point" | "cell" | "side"
    dim: int
    tag: int
    entries: np.ndarray


@dataclass
class Mesh:
    points: np.ndarray
    cells: List[CellBlock]
    point_data: Dict[str, np.ndarray] = field(default_factory=dict)
    cell_data: Dict[str, List[np.ndarray]] = field(default_factory=dict)
    field_data: Dict[str, np.ndarray] = field(default_factory=dict)
    regions: List[Region] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def __repr__(self) -> str:
        blocks = ", ".join(f"{b.type}:{len(b)}" for b in self.cells)
        return (f"<meshdock.Mesh {len(self.points)} points, {len(self.cells)} blocks ({blocks}), "
                f"{len(self.regions)} regions>")


def read(path, format: Optional[str] = None) -> Mesh:
    """Read `path` (format from the extension unless given). Raises ReadError."""
    from . import _meshdock

    d = _meshdock.read_mesh(os.fspath(path), format or "")
    return Mesh(points=d["points"], cells=[CellBlock(*c) for c in d["cells"]],
                point_data=d["point_data"], cell_data=d["cell_data"],
                field_data=d["field_data"],
                regions=[Region(*r) for r in d["regions"]], notes=list(d["notes"]))


def release_memory() -> int:
    """Give back to the system the big array buffers (1 MiB and up) that meshes read here have
    released. Up to 128 MiB of them are kept, so that reading a mesh of the same size again
    finds its memory already in place (about 30% of a binary read); call this when no such
    read is coming. Returns how many bytes went back."""
    from . import _meshdock

    return int(_meshdock.release_host_cache())


def write(path, mesh, format: Optional[str] = None, encoding: Optional[str] = None,
          zlib_level: int = 6) -> List[str]:
    """Write `mesh` to `path` with the C++ writers; the format comes from the extension unless
    given ("vtu": encoding "zlib" (default), "raw" or "ascii"; "msh": Gmsh 4.1, "binary"
    (default) or "ascii"). `mesh` is a meshdock.Mesh or any object with the same attributes
    (points, cells with .type/.data, point_data, cell_data, field_data, regions); arrays
    already C-contiguous are written without a copy. The file appears whole or not at all.

    Every lossy step (e.g. point data MSH stores as float64) is returned and also issued as a
    MeshWarning. Raises WriteError (or MeshError for an inconsistent mesh).
    """
    from . import _meshdock

    notes = list(_meshdock.write_mesh(os.fspath(path), as_dict(mesh), format or "",
                                      encoding or "", zlib_level))
    for n in notes:
        warnings.warn(n, MeshWarning, stacklevel=2)
    return notes


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
