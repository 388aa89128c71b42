#!/usr/bin/python3
"""Writes the TetGen test pairs into tests/data/tetgen/ (meshio 5.0's tetgen writer for the
first; the rest written here by hand, as TetGen writes them: `tetgen` is not installed here)
and each pair as one fuzz seed (<name>.pair: the .node text, a NUL byte, the .ele text):

    /usr/bin/python3 tests/data/tools/make_tetgen.py

cube.node/.ele     meshio's writer on gmsh's tets of tools/cube.geo (0-based), a boundary
                   marker a point ("tetgen:ref": 1 on z = 0) and a region attribute a tet.
corners.node/.ele  by hand: 1-based, '#' comments and a blank line before the header (meshio
                   reads no comment after it; the C++ tests have those), CRLF line ends, 2
                   point attributes and a marker, a region attribute.
tet10.node/.ele    by hand: two 10-node tets (TetGen -o2: corners, then the midpoints of the
                   edges 12 23 31 14 24 34), 0-based, no attributes (meshio refuses these).
gaps.node/.ele     by hand: point indices not consecutive, out of order (meshio refuses these).
"""
import os
import subprocess
import tempfile

import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tetgen")


def cube():
    with tempfile.TemporaryDirectory() as tmp:
        msh = os.path.join(tmp, "cube.msh")
        subprocess.run(["gmsh", "-3", os.path.join(HERE, "cube.geo"), "-o", msh,
                        "-format", "msh22"], check=True, capture_output=True)
        m = meshio.read(msh)
    tets = np.vstack([b.data for b in m.cells if b.type == "tetra"])
    # Only the points the tets use, so that every point has a line of its own.
    used, inverse = np.unique(tets, return_inverse=True)
    pts = m.points[used]
    tets = inverse.reshape(tets.shape)
    out = meshio.Mesh(pts, [("tetra", tets)],
                      point_data={"tetgen:ref": (pts[:, 2] == 0).astype(float)},
                      cell_data={"tetgen:ref": [np.arange(len(tets)) % 3 + 1]})
    meshio.write(os.path.join(OUT, "cube.node"), out, file_format="tetgen")


def write(name, node, ele, newline="\n"):
    for ext, text in (("node", node), ("ele", ele)):
        with open(os.path.join(OUT, f"{name}.{ext}"), "w", newline=newline) as f:
            f.write(text)


def corners():
    node = ("# corners: 1-based, 2 attributes and a marker\n"
            "\n"
            "5  3  2  1\n"
            "1  0.0 0.0 0.0   10.5 -1   1\n"
            "2  1.0 0.0 0.0   11.5 -2   0\n"
            "3  0.0 1.0 0.0   12.5 -3   0\n"
            "4  0.0 0.0 1.0   13.5 -4   1\n"
            "5  1.0 1.0 1.0   14.5 -5   0\n")
    ele = ("# two tets, region attributes 1 and 2\n"
           "2  4  1\n"
           "1  1 2 3 4  1\n"
           "2  2 3 4 5  2\n")
    write("corners", node, ele, newline="\r\n")


def tet10():
    pts = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1)]
    edges = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3),  # tet 0 1 2 3
             (1, 4), (2, 4), (3, 4)]                           # tet 1 2 3 4 adds these
    mids = [tuple((np.array(pts[a]) + pts[b]) / 2) for a, b in edges]
    allp = pts + mids
    node = f"{len(allp)} 3 0 0\n" + "".join(
        f"{i} {x:.17g} {y:.17g} {z:.17g}\n" for i, (x, y, z) in enumerate(allp))
    mid = {frozenset(e): 5 + k for k, e in enumerate(edges)}

    def tet(a, b, c, d):
        order = [(a, b), (b, c), (c, a), (a, d), (b, d), (c, d)]
        return [a, b, c, d] + [mid[frozenset(e)] for e in order]

    rows = [tet(0, 1, 2, 3), tet(1, 2, 3, 4)]
    ele = "2 10 0\n" + "".join(f"{k} " + " ".join(map(str, r)) + "\n" for k, r in enumerate(rows))
    write("tet10", node, ele)


def gaps():
    node = ("4 3 0 0\n"
            "7 0 0 0\n"
            "3 1 0 0\n"
            "11 0 1 0\n"
            "5 0 0 1\n")
    ele = "1 4 0\n1 7 3 11 5\n"
    write("gaps", node, ele)


def seeds():
    for name in ("cube", "corners", "tet10", "gaps"):
        with open(os.path.join(OUT, name + ".node"), "rb") as f:
            node = f.read()
        with open(os.path.join(OUT, name + ".ele"), "rb") as f:
            ele = f.read()
        with open(os.path.join(OUT, name + ".pair"), "wb") as f:
            f.write(node + b"\0" + ele)
    # A crafted corner for the replay's own folder: huge, non-consecutive, negative indices.
    with open(os.path.join(HERE, "..", "fuzz", "tetgen_reader", "labels.pair"), "wb") as f:
        f.write(b"3 3 1 1\n-9223372036854775807 0 0 0 1 1\n9223372036854775807 1 0 0 2 0\n"
                b"0 0 1 0 3 1\0" b"1 4 1\n0 -9223372036854775807 0 9223372036854775807 0 4\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(os.path.join(HERE, "..", "fuzz", "tetgen_reader"), exist_ok=True)
    cube()
    corners()
    tet10()
    gaps()
    seeds()
