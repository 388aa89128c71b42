#!/usr/bin/python3
"""Writes the MSH files of every version the Gmsh reader reads besides 2.2 / 4.1 (cube.*.msh,
from gmsh 4.8 and cube.geo) and records what meshio 5.0 reads from them in
REFERENCE.versions.json, in the schema of REFERENCE.json.

    /usr/bin/python3 tests/data/tools/make_msh_versions.py   # from the repository root

  cube.v1.msh            gmsh -format msh1: legacy $NOD / $ELM, no $MeshFormat
  cube.v20.msh           gmsh -format msh22, "2.0 0 8" and no $PhysicalNames (as MSH 2.0 was)
  cube.v20b.msh          gmsh -format msh22 -bin, "2.0 1 8" (2.1 and 2 are read too)
  cube.v22f.msh          gmsh -format msh22, "2.200000 0 8" (the version printed with %f)
  cube.comments.v41.msh  gmsh -format msh41 after a $Comments section
  cube.v30.msh           gmsh -format msh3 ("3 0 8": MSH 3.0, gmsh 3's own format: $Entities,
                         nodes "tag x y z entity [dim params]", elements "tag type entity n data")
  cube.v30b.msh          gmsh -format msh3 -bin ("3 1 8")
  cube.v40.msh           gmsh -format msh40 ("4 0 8": MSH 4.0 as gmsh writes it)
  cube.v40b.msh          the same in binary 4.0 ("4 1 8"), converted here: gmsh 4.8 writes 4.0
                         only in ascii (binary 4.0 came from gmsh 4.0.x; meshio reads it)

meshio reads "4" with its 4.1 reader and fails, and does not read MSH 1 or 3.0: the 4.0
references come from meshio's 4.0 reader (meshio.gmsh._gmsh40), the MSH 1 one from meshio
reading the 2.2 file gmsh wrote from the same mesh (without field_data: MSH 1 has no
$PhysicalNames), the 3.0 ones likewise (ascii from ascii, binary from binary), with the blocks
in the 3.0 file's order (gmsh writes its elements volumes first).
"""
import hashlib
import io
import json
import pathlib
import struct
import subprocess
import tempfile

import meshio
import numpy as np
from meshio.gmsh import _gmsh40, main as gmsh_main

HERE = pathlib.Path(__file__).resolve().parent
MESHES = HERE.parents[0] / "meshes"


def summary(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "sum": float(a.astype(np.float64).sum()),
            "sha1_f64": hashlib.sha1(np.ascontiguousarray(a, dtype=np.float64).tobytes()).hexdigest()}


def reference(name, m, source):
    return {"file": name, "points": summary(m.points),
            "cells": [{"type": c.type, "n": len(c.data), "conn": summary(c.data)} for c in m.cells],
            "point_data": {k: summary(v) for k, v in m.point_data.items()},
            "cell_data": {k: [summary(a) for a in v] for k, v in m.cell_data.items()},
            "field_data": {k: np.asarray(v).tolist() for k, v in m.field_data.items()},
            "reference_from": source}


def gmsh(fmt, binary, out):
    subprocess.run(["gmsh", "-3", str(HERE / "cube.geo"), "-format", fmt, *(["-bin"] if binary else []),
                    "-o", str(out)], check=True, capture_output=True)
    return out.read_bytes()


def section(text, name):
    """The lines of section $name (without its header and $End line)."""
    lines = text.splitlines()
    b = lines.index("$" + name)
    e = lines.index("$End" + name)
    return lines[b + 1:e]


def binary40(text):
    """ASCII MSH 4.0 -> binary MSH 4.0 (gmsh 4.0's layout, as meshio's 4.0 reader reads it):
    counts size_t, entity / node / element tags int, coordinates and boxes double."""
    out = io.BytesIO()
    w = out.write
    w(b"$MeshFormat\n4 1 8\n" + struct.pack("<i", 1) + b"\n$EndMeshFormat\n")
    w(("$PhysicalNames\n" + "\n".join(section(text, "PhysicalNames")) + "\n$EndPhysicalNames\n").encode())
    ent = [l.split() for l in section(text, "Entities")]
    counts = [int(x) for x in ent[0]]
    w(b"$Entities\n" + struct.pack("<4Q", *counts))
    row = 1
    for d, n in enumerate(counts):
        for _ in range(n):
            v = ent[row]
            row += 1
            tag, box, rest = int(v[0]), [float(x) for x in v[1:7]], [int(x) for x in v[7:]]
            nphys = rest[0]
            w(struct.pack("<i6dQ", tag, *box, nphys) + struct.pack(f"<{nphys}i", *rest[1:1 + nphys]))
            if d > 0:
                nb = rest[1 + nphys]
                w(struct.pack("<Q", nb) + struct.pack(f"<{nb}i", *rest[2 + nphys:2 + nphys + nb]))
    w(b"\n$EndEntities\n")
    for name, per in (("Nodes", None), ("Elements", None)):
        lines = [l.split() for l in section(text, name)]
        w(f"${name}\n".encode() + struct.pack("<2Q", *(int(x) for x in lines[0])))
        i = 1
        while i < len(lines):
            tag, dim, kind, n = (int(x) for x in lines[i])
            w(struct.pack("<3iQ", tag, dim, kind, n))
            for r in lines[i + 1:i + 1 + n]:
                if name == "Nodes":
                    w(struct.pack("<i3d", int(r[0]), *(float(x) for x in r[1:4])))
                else:
                    w(struct.pack(f"<{len(r)}i", *(int(x) for x in r)))
            i += 1 + n
        w(f"\n$End{name}\n".encode())
    return out.getvalue()


def read40(path):
    with open(path, "rb") as f:
        f.readline()
        _, data_size, is_ascii = gmsh_main._read_header(f)
        return _gmsh40.read_buffer(f, is_ascii, data_size)


def main():
    refs = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        v22 = gmsh("msh22", False, tmp / "v22.msh").decode()
        v22b = gmsh("msh22", True, tmp / "v22b.msh")
        v41 = gmsh("msh41", False, tmp / "v41.msh").decode()
        v40 = gmsh("msh40", False, tmp / "v40.msh").decode()
        v1 = gmsh("msh1", False, tmp / "v1.msh")
        v30 = gmsh("msh3", False, tmp / "v30.msh")
        v30b = gmsh("msh3", True, tmp / "v30b.msh")
        m22 = meshio.read(tmp / "v22.msh")
        m22b = meshio.read(tmp / "v22b.msh")

    assert v22.startswith("$MeshFormat\n2.2 0 8\n") and v22b.startswith(b"$MeshFormat\n2.2 1 8\n")
    assert v40.startswith("$MeshFormat\n4 0 8\n") and v1.startswith(b"$NOD\n")
    names = "\n".join(["$PhysicalNames", *section(v22, "PhysicalNames"), "$EndPhysicalNames"]) + "\n"
    files = {
        "cube.v20.msh": v22.replace("2.2 0 8", "2.0 0 8", 1).replace(names, "", 1).encode(),
        "cube.v20b.msh": v22b.replace(b"2.2 1 8", b"2.0 1 8", 1),
        "cube.v22f.msh": v22.replace("2.2 0 8", "2.200000 0 8", 1).encode(),
        "cube.comments.v41.msh": ("$Comments\nmade by gmsh 4.8 from cube.geo; $MeshFormat follows\n"
                                  "$EndComments\n" + v41).encode(),
        "cube.v40.msh": v40.encode(),
        "cube.v40b.msh": binary40(v40),
        "cube.v1.msh": v1,
        "cube.v30.msh": v30,
        "cube.v30b.msh": v30b,
    }
    assert v30.startswith(b"$MeshFormat\n3 0 8\n") and v30b.startswith(b"$MeshFormat\n3 1 8\n")
    for name, data in files.items():
        (MESHES / name).write_bytes(data)
        if name.startswith("cube.v40"):
            m, source = read40(MESHES / name), "meshio.gmsh._gmsh40.read_buffer (meshio.read takes '4' for 4.1)"
        elif name.startswith("cube.v30"):
            twin = m22b if name == "cube.v30b.msh" else m22
            order = ["tetra", "triangle", "vertex"]
            at = [[c.type for c in twin.cells].index(t) for t in order]
            m = meshio.Mesh(twin.points, [twin.cells[i] for i in at],
                            cell_data={k: [v[i] for i in at] for k, v in twin.cell_data.items()},
                            field_data=twin.field_data)
            source = ("meshio.read of gmsh -format msh22" + (" -bin" if "b." in name else "") +
                      " of the same mesh, blocks in this file's order (meshio reads no 3.0)")
        elif name == "cube.v1.msh":
            m = meshio.Mesh(m22.points, m22.cells, cell_data=m22.cell_data)  # and no field_data
            source = "meshio.read of gmsh -format msh22 of the same mesh (meshio reads no MSH 1)"
        else:
            m, source = meshio.read(MESHES / name), "meshio.read"
        refs.append(reference(name, m, source))
    (MESHES / "REFERENCE.versions.json").write_text(json.dumps(refs, indent=1) + "\n")
    print("wrote", [r["file"] for r in refs])


if __name__ == "__main__":
    main()
