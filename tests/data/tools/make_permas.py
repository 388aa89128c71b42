#!/usr/bin/python3
"""Writes the PERMAS test files into tests/data/permas/ (meshio 5.0's permas writer, and one
file in the keyword forms PERMAS' own input takes), and the seeds of fuzz_permas_reader:

    /usr/bin/python3 tests/data/tools/make_permas.py

box.post          meshio's writer: gmsh's tests/data/meshes/box.v41.msh (935 tetrahedra, six
                  triangle blocks), no data (meshio's writer writes none).
box.post.gz       the same, gzipped (meshio writes x.post.gz as plain text; PERMAS reads gzip).
quadratic.dato    meshio's writer: one cell of each type meshio names a PERMAS element for,
                  every mid-side node at the middle of its edge (a quad9's centre node at the
                  centre), so a reader's node order is checked from the points alone: meshio's
                  writer puts TET10, TRIMS6 and QUAMS9 in PERMAS' order, which read_permas
                  takes back to VTK's. meshio 5.0 cannot hold a wedge15 (KeyError in its Mesh)
                  although its writer orders one: the PENTA15 block is appended here, in that
                  writer's order and form.
bracket.dato      by hand, as PERMAS' input is written: indented keywords in any case, blanks
                  around '=', '!' comments after values, $COOR NSET = ..., Fortran reals
                  (0.5+1), element ids that are not 1..n, a HEXE20 row over two lines ('&'
                  before the second), $ELEMENT ... ESET = ..., $NSET / $ESET NAME = ...,
                  keywords meshdock skips ($SYSTEM, $MATERIAL, $ELPROP), and text after $FIN.
"""
import gzip
import os
import shutil

import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "permas")
FUZZ = os.path.join(HERE, "..", "fuzz", "permas_reader")

# VTK's edges of each type, for the mid-side nodes (node k of the type is the middle of edge k
# after its corners).
EDGES = {
    "line3": [(0, 1)],
    "triangle6": [(0, 1), (1, 2), (2, 0)],
    "quad8": [(0, 1), (1, 2), (2, 3), (3, 0)],
    "tetra10": [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)],
    "wedge15": [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (0, 3), (1, 4), (2, 5)],
    "hexahedron20": [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4),
                     (0, 4), (1, 5), (2, 6), (3, 7)],
}
CORNERS = {
    "vertex": [[0, 0, 0]],
    "line": [[0, 0, 0], [1, 0.2, 0]],
    "line3": [[0, 0, 0], [1, 0.3, 0.1]],
    "triangle": [[0, 0, 0], [1, 0, 0], [0.2, 1, 0]],
    "triangle6": [[0, 0, 0], [1, 0.1, 0], [0.3, 1, 0.2]],
    "quad": [[0, 0, 0], [1, 0, 0], [1.1, 1, 0], [0, 1, 0]],
    "quad8": [[0, 0, 0], [1, 0, 0.1], [1.2, 1, 0], [0, 1.1, 0]],
    "quad9": [[0, 0, 0], [1, 0, 0.1], [1.2, 1, 0], [0, 1.1, 0]],
    "tetra": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]],
    "tetra10": [[0, 0, 0], [1.2, 0, 0], [0, 1.1, 0.1], [0.1, 0, 1.3]],
    "pyramid": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 1]],
    "wedge": [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1]],
    "wedge15": [[0, 0, 0], [1.1, 0, 0], [0, 1.2, 0], [0, 0, 1], [1, 0.1, 1.1], [0, 1, 1.2]],
    "hexahedron": [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                   [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]],
    "hexahedron20": [[0, 0, 0], [1.1, 0, 0], [1, 1.2, 0], [0, 1, 0.1],
                     [0, 0, 1], [1, 0, 1.1], [1.2, 1, 1], [0, 1.1, 1]],
}


def quadratic():
    points, cells = [], []
    for k, (t, corners) in enumerate(CORNERS.items()):
        c = np.array(corners, dtype=float) + [3.0 * k, 0, 0]  # cells apart
        nodes = list(c)
        for a, b in EDGES.get(t, []):
            nodes.append((c[a] + c[b]) / 2)
        if t == "quad9":
            nodes += [(c[0] + c[1]) / 2, (c[1] + c[2]) / 2, (c[2] + c[3]) / 2,
                      (c[3] + c[0]) / 2, c.mean(axis=0)]
        first = len(points)
        points += nodes
        cells.append((t, np.arange(first, first + len(nodes))[None, :]))
    wedge15 = [c for t, c in cells if t == "wedge15"][0][0]
    cells = [(t, c) for t, c in cells if t != "wedge15"]
    mesh = meshio.Mesh(np.array(points), cells)
    path = os.path.join(OUT, "quadratic.dato")
    meshio.write(path, mesh, file_format="permas")
    # meshio's writer's wedge15_order, its "!" line, keyword and row form.
    order = [0, 6, 1, 7, 2, 8, 9, 10, 11, 3, 12, 4, 13, 5, 14]
    row = " ".join(str(wedge15[i] + 1) for i in order)
    with open(path) as f:
        text = f.read()
    text = text.replace("$END STRUCTURE\n", f"!\n$ELEMENT TYPE=PENTA15\n{len(cells) + 1} {row}\n"
                        "$END STRUCTURE\n")
    with open(path, "w") as f:
        f.write(text)


def box():
    m = meshio.read(os.path.join(HERE, "..", "meshes", "box.v41.msh"))
    mesh = meshio.Mesh(m.points, [(b.type, b.data) for b in m.cells])
    path = os.path.join(OUT, "box.post")
    meshio.write(path, mesh, file_format="permas")
    with open(path, "rb") as f, open(path + ".gz", "wb") as g:
        g.write(gzip.compress(f.read(), mtime=0))


# Nodes of a 2 x 1 x 1 bracket of two hexahedra (ids 101.., not 1..n) and a HEXE20 on top of
# the first, in PERMAS' keyword forms; every value is checked by test_permas.cpp.
BRACKET = """\
! A bracket: two HEXE8, a HEXE20 and boundary quads, written as PERMAS input is.
$ENTER COMPONENT NAME = KOMPO_1 DOFTYPE = DISP
  $STRUCTURE
    $coor NSET = ALL_NODES   ! every node
      101  0.0      0.0  0.0
      102  1.0      0.0  0.0
      103  2.0      0.0  0.0
      104  0.0      1.0  0.0
      105  1.0      1.0  0.0
      106  2.0      1.0  0.0
      107  0.0      0.0  1.0
      108  1.0      0.0  1.0
      109  0.2+1    0.0  1.0   ! 0.2+1: 2.0 in Fortran's form
      110  0.0      1.0  1.0
      111  1.0      1.0  1.0
      112  2.0      1.0  1.0
    $COOR
      201  0.0  0.0  2.0
      202  1.0  0.0  2.0
      203  1.0  1.0  2.0
      204  0.0  1.0  2.0
      205  0.5  0.0  1.0
      206  1.0  0.5  1.0
      207  0.5  1.0  1.0
      208  0.0  0.5  1.0
      209  0.5  0.0  2.0
      210  1.0  0.5  2.0
      211  0.5  1.0  2.0
      212  0.0  0.5  2.0
      213  0.0  0.0  1.5
      214  1.0  0.0  1.5
      215  1.0  1.0  1.5
      216  0.0  1.0  1.5
    $ELEMENT TYPE = HEXE8 ESET = SOLID
      11  101 102 105 104 107 108 111 110
      12  102 103 106 105 108 109 112 111
    $ELEMENT TYPE = HEXE20 ESET = TOP_SOLID
      21  107 108 111 110 201 202 203 204 205 206
        & 207 208 209 210 211 212 213 214 215 216
    $ELEMENT TYPE = QUAD4 ESET = BOTTOM
      31  101 104 105 102
      32  102 105 106 103
    $SYSTEM
      ! not read
    $MATERIAL NAME = STEEL TYPE = ISO
      $ELASTIC GENERAL INPUT = DATA
        2.1E5 0.3
    $NSET NAME = FIXED
      101 104 107
      110
    $ESET NAME = SOLID
      21
    $ESET NAME = CORNER
      12 31
  $END STRUCTURE
  $ELPROP
    SOLID MATERIAL = STEEL
$EXIT COMPONENT
$FIN
anything after $FIN is not read
"""


def bracket():
    with open(os.path.join(OUT, "bracket.dato"), "w") as f:
        f.write(BRACKET)


def seeds():
    os.makedirs(FUZZ, exist_ok=True)
    for name in ("bracket.dato", "quadratic.dato"):
        shutil.copy(os.path.join(OUT, name), os.path.join(FUZZ, name))
    with open(os.path.join(OUT, "box.post")) as f:
        head = f.read().splitlines()
    small = head[:40] + ["!", "$ELEMENT TYPE=TET4", "1 1 2 3 4", "2 5 6 7 8",
                         "$END STRUCTURE", "$FIN"]
    with open(os.path.join(FUZZ, "box-head.post"), "w") as f:
        f.write("\n".join(small) + "\n")
    with open(os.path.join(FUZZ, "box-head.post.gz"), "wb") as g:
        g.write(gzip.compress(("\n".join(small) + "\n").encode(), mtime=0))
    broken = {
        "unknown-type.dato": "$COOR\n1 0 0 0\n$ELEMENT TYPE = HEXA99\n1 1\n",
        "short-row.dato": "$COOR\n1 0 0 0\n2 1 0 0\n$ELEMENT TYPE = TET4\n1 1 2\n$FIN\n",
        "missing-node.dato": "$COOR\n1 0 0 0\n$ELEMENT TYPE=PLOTL2\n7 1 2\n",
        "node-twice.dato": "$COOR\n1 0 0 0\n1 1 0 0\n",
        "set-unknown.dato": "$COOR\n1 0 0 0\n$NSET NAME = A\n1 2\n",
    }
    for name, text in broken.items():
        with open(os.path.join(FUZZ, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    box()
    quadratic()
    bracket()
    seeds()
