#!/usr/bin/python3
"""Writes the MSH files with $NodeData / $ElementData that tests/data/meshes has no gmsh-written
twin for (gmsh writes model-based data only through its API, which Debian does not package for
Python), and records what meshio reads from them in REFERENCE.extra.json, in the schema of
../shared/meshes/REFERENCE.json.

    /usr/bin/python3 tests/data/tools/make_data_sections.py   # from the repository root
"""
import hashlib
import json
import pathlib

import meshio
import numpy as np

MESHES = pathlib.Path(__file__).resolve().parents[1] / "meshes"


def summary(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "sum": float(a.astype(np.float64).sum()),
            "sha1_f64": hashlib.sha1(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()}


def reference(name, m):
    return {"file": name, "points": summary(m.points),
            "cells": [{"type": c.type, "n": len(c.data), "conn": summary(c.data)} for c in m.cells],
            "point_data": {k: summary(v) for k, v in m.point_data.items()},
            "cell_data": {k: [summary(a) for a in v] for k, v in m.cell_data.items()},
            "field_data": {k: np.asarray(v).tolist() for k, v in m.field_data.items()}}


def main():
    refs = []
    for version, src in (("22", "plate.v22.msh"), ("41", "plate.v41.msh")):
        m = meshio.read(MESHES / src)
        x, y = m.points[:, 0], m.points[:, 1]
        m.point_data["temperature"] = 300.0 + 10.0 * x - 3.5 * y
        m.point_data["velocity"] = np.stack([y, -x, 0.25 * x * y], axis=1)
        m.cell_data["pressure"] = [np.arange(len(c.data), dtype=np.float64) * 0.5 + i
                                   for i, c in enumerate(m.cells)]
        for binary in (False, True):
            name = f"data.v{version}{'b' if binary else ''}.msh"
            fmt = "gmsh22" if version == "22" else "gmsh"
            meshio.write(MESHES / name, m, file_format=fmt, binary=binary)
            try:
                back, source = meshio.read(MESHES / name), "meshio.read"
            except ValueError as e:
                # meshio 5.0 cannot split 2.2 $ElementData when a vertex block is present
                # ("Incompatible cell data"): the reference is then the mesh it was given.
                back, source = m, f"the mesh written (meshio.read failed: {e})"
            refs.append(dict(reference(name, back), reference_from=source))
    (MESHES / "REFERENCE.extra.json").write_text(json.dumps(refs, indent=1) + "\n")
    print("wrote", [r["file"] for r in refs])


if __name__ == "__main__":
    main()
