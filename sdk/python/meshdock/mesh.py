"""The Mesh model in Python and `read`: C++ readers, in process, no daemon.

Arrays are numpy views of the buffers the C++ reader filled (no copy); each keeps its buffer
alive, so a Mesh can be dropped while its arrays live on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np

__all__ = ["ReadError", "CellBlock", "Region", "Mesh", "read"]


class ReadError(ValueError):
    """A file the readers cannot read; the message names the file and the line or byte."""


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
