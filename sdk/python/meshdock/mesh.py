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
    type: str
    data: np.ndarray  # (n, nodes_per_cell) int64

    def __len__(self) -> int:
        return len(self.data)


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
    return Mesh(points=d["points"], cells=[CellBlock(t, a) for t, a in d["cells"]],
                point_data=d["point_data"], cell_data=d["cell_data"],
                field_data=d["field_data"],
                regions=[Region(*r) for r in d["regions"]], notes=list(d["notes"]))
