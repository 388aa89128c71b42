#!/usr/bin/python3
"""Writes the FLAC3D test files into tests/data/flac3d/ (gmsh meshes written by meshio 5.0's
flac3d writer, ascii and binary, since gmsh writes no FLAC3D, and hand-made corners):

    /usr/bin/python3 tests/data/tools/make_flac3d.py

gmsh-tets.f3grid / .bin.f3grid    gmsh: a tetrahedral box, with two zone groups (meshio
                                  cell_sets) "low" (the first 30 tets) and "every7th".
gmsh-prisms[.bin].f3grid          gmsh: a triangulated square extruded in 3 layers (wedges).
gmsh-hex[.bin].f3grid             gmsh: a quad-meshed square extruded in 2 layers (hexahedra).
mixed[.bin].f3grid                meshio: every zone type meshio writes (tetra, pyramid, wedge,
                                  hexahedron), each once as given and once mirrored (its
                                  first corners' triple product negative: meshio's second
                                  node table), groups over two blocks.
corners.f3grid                    by hand: comments, grid point and zone ids not 1..n and out of
                                  order, a B7 (degenerate brick), faces (T3, Q4) between zones,
                                  a group over several lines, single quotes, a face group,
                                  CRLF-free tabs.
bad-node.f3grid                   by hand: a zone naming a grid point no G line has (line 5).
lying.bin.f3grid                  binary: a grid point count of 2^32 - 1 over 16 bytes.
truncated.bin.f3grid              mixed.bin's bytes cut short in the zones.
../fuzz/flac3d_reader/<file>      fuzz_flac3d_reader's seeds: the small files above.
(meshio's writer cannot write faces: it asserts every block is a zone type.)
"""
import os
import shutil
import subprocess
import tempfile

import meshio
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "flac3d")

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

HEX = """lc = 0.4;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Transfinite Surface{1}; Recombine Surface{1};
Extrude {0,0,0.5} { Surface{1}; Layers{2}; Recombine; }
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
    keep = [b for b in m.cells if b.type in ("tetra", "pyramid", "wedge", "hexahedron")]
    return meshio.Mesh(m.points, [(b.type, b.data) for b in keep])


def write(mesh, stem):
    for binary in (False, True):
        name = f"{stem}.bin.f3grid" if binary else f"{stem}.f3grid"
        # meshio's writer shifts the cell_sets arrays in place: a copy each time.
        m = meshio.Mesh(mesh.points, mesh.cells,
                        cell_sets={k: [np.array(a) for a in v] for k, v in mesh.cell_sets.items()})
        meshio.write(os.path.join(OUT, name), m, file_format="flac3d", binary=binary)


def mixed():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                    [0.5, 0.5, 1.5], [0.5, 0.5, -0.5], [2, 0, 0], [2, 1, 0],
                    [2, 0, 1], [2, 1, 1], [0.25, 0.75, 2.125]])
    cells = [("tetra", [[0, 1, 3, 9], [1, 3, 2, 9]]), ("pyramid", [[4, 5, 6, 7, 8], [4, 7, 6, 5, 8]]),
             ("wedge", [[1, 10, 2, 5, 12, 6], [1, 2, 10, 5, 6, 12]]),
             ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7], [0, 3, 2, 1, 4, 7, 6, 5]])]
    sets = {"left": [np.array([0]), np.array([1]), np.array([], dtype=int), np.array([0, 1])],
            "upper": [np.array([], dtype=int), np.array([0, 1]), np.array([1]),
                      np.array([], dtype=int)]}
    return meshio.Mesh(pts, [(t, np.array(c)) for t, c in cells], cell_sets=sets)


CORNERS = """* FLAC3D grid written by hand: the corners meshio's writer never makes
* ids are labels: not 1..n, not in order
G 10 0 0 0
G 11 1.0 0 0
G\t12\t1 1 0
G 13 0 1 0
G 20 0 0 1
G 21 1 0 1
G 22 1 1 1
G 23 0.5 0.5 1.5e0
G 7 2 0 0
* ZONES
Z B8 100 10 11 13 20 12 23 21 22
Z T4 5 10 11 13 20
F T3 40 10 11 13
Z P5 101 20 21 22 23 7
Z B7 102 10 11 13 20 12 23 21
F Q4 41 10 11 12 13
Z W6 7 10 11 13 20 21 23

* ZONE GROUPS
ZGROUP "rock mass" SLOT 1
 100 5
 101
ZGROUP 'single' SLOT Default
102 7
* a comment between groups
FGROUP "base" SLOT 2
 41 40
"""

BAD_NODE = """* a zone naming grid point 99, which no G line has
G 1 0 0 0
G 2 1 0 0
G 3 0 1 0
Z T4 1 1 2 3 99
"""


def main():
    os.makedirs(OUT, exist_ok=True)
    tets = gmsh(BOX)
    n = len(tets.cells[0].data)
    tets.cell_sets = {"low": [np.arange(30)], "every7th": [np.arange(0, n, 7)]}
    write(tets, "gmsh-tets")
    write(gmsh(PRISMS), "gmsh-prisms")
    write(gmsh(HEX), "gmsh-hex")
    write(mixed(), "mixed")
    with open(os.path.join(OUT, "corners.f3grid"), "w") as f:
        f.write(CORNERS)
    with open(os.path.join(OUT, "bad-node.f3grid"), "w") as f:
        f.write(BAD_NODE)
    with open(os.path.join(OUT, "mixed.bin.f3grid"), "rb") as f:
        data = f.read()
    with open(os.path.join(OUT, "truncated.bin.f3grid"), "wb") as f:
        f.write(data[:8 + 4 + 15 * 28 + 4 + 30])
    with open(os.path.join(OUT, "lying.bin.f3grid"), "wb") as f:
        f.write(np.array([1375135718, 3, 2**32 - 1, 0], dtype="<u4").tobytes())
    seeds = os.path.join(OUT, "..", "fuzz", "flac3d_reader")
    os.makedirs(seeds, exist_ok=True)
    for name in ["corners.f3grid", "mixed.f3grid", "mixed.bin.f3grid", "gmsh-prisms.bin.f3grid",
                 "truncated.bin.f3grid", "lying.bin.f3grid", "bad-node.f3grid"]:
        shutil.copy(os.path.join(OUT, name), os.path.join(seeds, name))


if __name__ == "__main__":
    main()
