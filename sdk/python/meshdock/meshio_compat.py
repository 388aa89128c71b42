"""meshdock <-> meshio (5.x) without losing what meshio can hold.

``to_meshio(mesh)`` gives a meshio.Mesh: blocks, point/cell/field data, point regions as
``point_sets``, cell regions as ``cell_sets`` (block-local ids, meshio's form), and the
reader's notes in ``info["meshdock_notes"]``. What meshio cannot hold is said, not dropped
silently: side regions (pairs of cell and facet) and ragged polyhedron blocks raise
MeshError naming them unless ``lossy=True``, which leaves them out and says so in
``info["meshdock_notes"]``. Ragged polygon blocks become one meshio block per polygon size
(meshio's polygon blocks have one size each), their cell data split the same way (noted).

``from_meshio(mm)`` gives a meshdock.Mesh: ``point_sets`` / ``cell_sets`` become point and
cell regions (tag and dim from ``field_data[name] = [tag, dim]`` when meshio read them from
Gmsh physical names, else tag -1, dim -1), ``info["meshdock_notes"]`` the notes.
"""

from __future__ import annotations

from typing import List

import numpy as np

from .mesh import CellBlock, Mesh, MeshError, Region

__all__ = ["to_meshio", "from_meshio"]

NOTES_KEY = "meshdock_notes"


def to_meshio(mesh: Mesh, lossy: bool = False):
    """A meshio.Mesh holding `mesh` (arrays shared, not copied, where meshio allows)."""
    import meshio

    notes: List[str] = list(mesh.notes)
    cells = []
    # For each output block: (source block, row selection or None) to split cell data alike.
    parts = []
    for i, b in enumerate(mesh.cells):
        if not b.ragged:
            try:
                cells.append(meshio.CellBlock(b.type, b.data))
            except KeyError:  # a type meshio has no dimension for (5.0: VTK_BEZIER_*)
                what = f"cells/{i} ({b.type}, {len(b)} cells)"
                if not lossy:
                    raise MeshError(f"{what}: meshio has no {b.type} block; pass lossy=True "
                                    "to leave it out") from None
                notes.append(f"to_meshio: left out {what}: meshio cannot hold it")
                continue
            parts.append((i, None))
            continue
        if b.face_offsets is not None:
            what = f"cells/{i} ({b.type}, {len(b)} ragged polyhedra)"
            if not lossy:
                raise MeshError(f"{what}: meshio has no ragged polyhedron block; "
                                "pass lossy=True to leave it out")
            notes.append(f"to_meshio: left out {what}: meshio cannot hold it")
            continue
        sizes = np.diff(b.offsets)
        for n in np.unique(sizes):
            rows = np.flatnonzero(sizes == n)
            starts = b.offsets[rows]
            conn = b.data[starts[:, None] + np.arange(n)[None, :]]
            cells.append(meshio.CellBlock("polygon" if n > 4 else {3: "triangle", 4: "quad"}.get(
                int(n), "polygon"), conn))
            parts.append((i, rows))
        if len(np.unique(sizes)) > 1:
            notes.append(f"to_meshio: cells/{i} ({b.type}) split into {len(np.unique(sizes))} "
                         "blocks, one per polygon size (cell data and sets split alike)")
    cell_data = {name: [arrs[i] if rows is None else arrs[i][rows] for i, rows in parts]
                 for name, arrs in mesh.cell_data.items()}
    point_sets = mesh.point_sets
    cell_sets = {}
    kept = {i for i, _ in parts}
    for name, per_block in mesh.cell_sets.items():
        out = []
        for i, rows in parts:
            local = per_block[i]
            if rows is None:
                out.append(local)
            else:  # renumber inside the split block
                pos = np.full(len(mesh.cells[i]), -1, dtype=np.int64)
                pos[rows] = np.arange(len(rows))
                sel = pos[local]
                out.append(sel[sel >= 0])
        if len(kept) < len(mesh.cells) and any(
                len(per_block[i]) for i in range(len(mesh.cells)) if i not in kept):
            notes.append(f"to_meshio: cell set '{name}' lost the cells of left-out blocks")
        cell_sets[name] = out
    sides = [r.name for r in mesh.regions if r.kind == "side"]
    if sides:
        if not lossy:
            raise MeshError(f"side regions {sides} (cell, facet pairs) have no meshio form; "
                            "pass lossy=True to leave them out")
        notes.append(f"to_meshio: left out side regions {sides}: meshio has no such sets")
    return meshio.Mesh(mesh.points, cells, point_data=dict(mesh.point_data),
                       cell_data=cell_data, field_data=dict(mesh.field_data),
                       point_sets=point_sets, cell_sets=cell_sets,
                       info={NOTES_KEY: notes} if notes else None)


def from_meshio(mm) -> Mesh:
    """A meshdock.Mesh from a meshio.Mesh (arrays shared where their dtypes allow)."""
    blocks = [CellBlock(b.type, np.asarray(b.data)) if not isinstance(b.data, list)
              else CellBlock(b.type, *_csr(b.data)) for b in mm.cells]
    field_data = dict(getattr(mm, "field_data", None) or {})

    def tag_dim(name):
        v = np.asarray(field_data.get(name, [])).ravel()
        return (int(v[0]), int(v[1])) if v.size >= 2 else (-1, -1)

    regions = []
    for name, ids in (getattr(mm, "point_sets", None) or {}).items():
        tag, dim = tag_dim(name)
        regions.append(Region(name, "point", dim, tag, np.asarray(ids, dtype=np.int64)))
    bases = np.zeros(len(blocks) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blocks], out=bases[1:])
    for name, per_block in (getattr(mm, "cell_sets", None) or {}).items():
        tag, dim = tag_dim(name)
        ids = [np.asarray(a, dtype=np.int64) + bases[k] for k, a in enumerate(per_block)
               if a is not None and len(a)]
        entries = np.concatenate(ids) if ids else np.empty((0,), dtype=np.int64)
        regions.append(Region(name, "cell", dim, tag, entries))
    info = getattr(mm, "info", None) or {}
    notes = list(info.get(NOTES_KEY, [])) if isinstance(info, dict) else []
    return Mesh(mm.points, blocks, point_data=dict(mm.point_data),
                cell_data={k: list(v) for k, v in mm.cell_data.items()},
                field_data=field_data, regions=regions, notes=notes)


def _csr(cells):
    sizes = np.fromiter((len(c) for c in cells), dtype=np.int64, count=len(cells))
    offsets = np.zeros(len(cells) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate([np.asarray(c, dtype=np.int64).ravel() for c in cells]) if cells \
        else np.empty((0,), dtype=np.int64)
    return flat, offsets
