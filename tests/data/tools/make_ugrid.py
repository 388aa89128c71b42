#!/usr/bin/python3
"""Writes the UGRID test files into tests/data/ugrid/ (gmsh meshes written by meshio 5.0's ugrid
writer, since gmsh writes no UGRID, and hand-made corners):

    /usr/bin/python3 tests/data/tools/make_ugrid.py

gmsh-tets.<v>.ugrid  gmsh: a tetrahedral box (triangles + tetra; gmsh's lines and vertices left
                     out), written by meshio in the variants v = ascii (no suffix), b8, lb4, b8l,
                     lb8l, r8, lr4. Points rounded to float32 first, so that meshio's reading
                     of the ascii file (as float32) and meshdock's (float64) are the same numbers.
                     meshio writes every surface id as 1 (its writer fails on any integer
                     cell data: it reshapes the per-block list).
gmsh-prisms.<v>.ugrid gmsh: a triangulated square extruded in 3 layers (wedge cells, quad and
                     triangle faces), v = ascii, lb8, r4.
mixed.<v>.ugrid      meshio: all six types (triangle, quad, tetra, pyramid, wedge, hexahedron)
                     around a unit cube, v = ascii, b4, lr8, lb8l.
corners.ugrid        by hand: values spread over lines as no writer spreads them, surface ids
                     other than 1, a pyramid (UGRID's order: base 1 2 5 4, apex 3), and 2 volume
                     ids after the last cell (meshio and meshdock read nothing after them).
truncated.b8.ugrid   mixed.b8's bytes cut short in the hexahedra.
lying.lb8.ugrid      a header claiming 2^31 - 1 of every count over 40 bytes of file.
../fuzz/ugrid_reader/<file>  fuzz_ugrid_reader's seeds: a byte that picks the variant (its
                     kNames index) and then the file.
"""
import os
import subprocess
import tempfile

import meshio
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ugrid")

BOX = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0, 1,1,0.5};
Mesh.CharacteristicLengthMax = 0.35;
"""

PRISMS = """lc = 0.4;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Extrude {0,0,0.6} { Surface{1}; Layers{3}; Recombine; }
"""


def gmsh(geo):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.geo")
        with open(path, "w") as f:
            f.write(geo)
        out = os.path.join(d, "g.msh")
        subprocess.run(["gmsh", "-3", path, "-o", out, "-format", "msh41"], check=True,
                       stdout=subprocess.DEVNULL)
        m = meshio.read(out)
    keep = [b for b in m.cells if b.type in ("triangle", "quad", "tetra", "pyramid", "wedge",
                                             "hexahedron")]
    # One block a type (meshio's writer refuses two).
    merged = {}
    for b in keep:
        merged.setdefault(b.type, []).append(b.data)
    cells = [(t, np.concatenate(v)) for t, v in merged.items()]
    return meshio.Mesh(m.points.astype(np.float32).astype(np.float64), cells)


def write(mesh, stem, variants):
    for v in variants:
        name = f"{stem}.{v}.ugrid" if v else f"{stem}.ugrid"
        meshio.write(os.path.join(OUT, name), mesh, file_format="ugrid")


def mixed():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                    [0.5, 0.5, 1.5], [0.5, 0.5, -0.5], [2, 0, 0], [2, 1, 0],
                    [2, 0, 1], [2, 1, 1], [0.25, 0.75, 2.125]])
    cells = [("triangle", [[4, 5, 8], [9, 1, 0]]), ("quad", [[1, 10, 11, 2]]),
             ("tetra", [[0, 1, 3, 9], [1, 2, 3, 9]]), ("pyramid", [[4, 5, 6, 7, 8]]),
             ("wedge", [[1, 10, 2, 5, 12, 6]]), ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]])]
    return meshio.Mesh(pts, [(t, np.array(c)) for t, c in cells])


CORNERS = """5 2 0 0 1 0 0
0 0 0   1 0 0
1 1 0 0 1 0
0.5 0.5 1e0
1 2 5
2
3 5
7
-3
2 1 5 4 3
11 12
"""


def main():
    os.makedirs(OUT, exist_ok=True)
    write(gmsh(BOX), "gmsh-tets", ["", "b8", "lb4", "b8l", "lb8l", "r8", "lr4"])
    write(gmsh(PRISMS), "gmsh-prisms", ["", "lb8", "r4"])
    write(mixed(), "mixed", ["", "b4", "lr8", "lb8l", "b8"])
    with open(os.path.join(OUT, "corners.ugrid"), "w") as f:
        f.write(CORNERS)
    b8 = os.path.join(OUT, "mixed.b8.ugrid")
    with open(b8, "rb") as f:
        data = f.read()
    os.remove(b8)
    with open(os.path.join(OUT, "truncated.b8.ugrid"), "wb") as f:
        f.write(data[:-20])
    with open(os.path.join(OUT, "lying.lb8.ugrid"), "wb") as f:
        f.write(np.full(7, 2**31 - 1, dtype="<i4").tobytes() + bytes(12))
    fuzz_seeds()


# fuzz_ugrid_reader's kNames, in its order.
FUZZ_VARIANTS = ["", "b8", "lb8", "b4", "lb4", "b8l", "lb8l", "r8", "lr8", "r4", "lr4"]


def fuzz_seeds():
    out = os.path.join(OUT, "..", "fuzz", "ugrid_reader")
    os.makedirs(out, exist_ok=True)
    for name in ["corners.ugrid", "mixed.ugrid", "mixed.b4.ugrid", "mixed.lr8.ugrid",
                 "mixed.lb8l.ugrid", "gmsh-prisms.lb8.ugrid", "gmsh-prisms.r4.ugrid",
                 "truncated.b8.ugrid", "lying.lb8.ugrid"]:
        parts = name.split(".")
        variant = parts[-2] if len(parts) > 2 else ""
        with open(os.path.join(OUT, name), "rb") as f:
            data = f.read()
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([FUZZ_VARIANTS.index(variant)]) + data)


if __name__ == "__main__":
    main()
