#!/usr/bin/python3
"""Writes the Nastran bulk data test files into tests/data/nastran/:

    /usr/bin/python3 tests/data/tools/make_nastran.py

gmsh writes no BEGIN BULK (meshio 5.0 refuses such a file: the tests hand meshio a copy with
one); its Mesh.BdfFieldFormat picks free (0), small (1) or large (2) field:
square.gmsh.bdf        gmsh -2, first order, small field: CBAR lines (the physical curve) and
                       CTRIA3, GRID CP 0.
square2.gmsh.nas       gmsh -2 -order 2, large field (GRID* with '*' continuations, integers
                       where a coordinate is whole): 3-grid CBARs (meshio and meshdock read the
                       first two) and CTRIA6.
cube.gmsh.fem          gmsh -3, first order, free field: CTETRA.
cube2.gmsh.bdf         gmsh -3 -order 2, small field: 10-grid CTETRA over a continuation line.
every-type.meshio.bdf  meshio's writer (GRID* large field, small-field elements with '+'
                       continuation markers): one block of each type meshio writes (its own
                       CTETRA_ and CHEXA_ for the second-order solids), nastran:ref on points
                       and cells. (No wedge15 or pyramid13: meshio 5.0's Mesh holds neither, so
                       its reader fails on a 15-grid CPENTA; the C++ tests read them.)
free-points.meshio.bdf meshio's writer with point_format="free".
corners.bdf            by hand, every construct meshio 5.0 reads too: executive and case control
                       before BEGIN BULK, elements before their grids, ids not 1..n, large field
                       GRID* with a '*' continuation marker, free field, small field, implicit
                       exponents (1.0+0, 10.-1, -2.5+2), a comment inside a card, MAT1 / PSHELL
                       / PSOLID / FORCE / SPC (skipped), text after ENDDATA.
include/deck.bdf       by hand: INCLUDE (meshio 5.0 does not follow it: it skips the line as a
                       card it does not know, and the deck reads without grids). An INCLUDE in
                       the case control section (of a file that is not there: not opened), then
                       after BEGIN BULK 'mesh/grids.bdf' (which includes 'more-grids.bdf' beside
                       it, a CHEXA continued from grids.bdf into it) and 'mesh/elements.bdf'
                       with its name split over two lines; elements list grids of both files.
include/inlined.bdf    the same deck with every bulk INCLUDE replaced by the file's lines (what
                       meshio is compared on).
"""
import os
import subprocess
import tempfile

import meshio
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nastran")

SQUARE = """Point(1)={0,0,0,0.4};Point(2)={1,0,0,0.4};Point(3)={1,1,0,0.4};Point(4)={0,1,0,0.4};
Line(1)={1,2};Line(2)={2,3};Line(3)={3,4};Line(4)={4,1};Curve Loop(1)={1,2,3,4};
Plane Surface(1)={1};Physical Surface(5)={1};Physical Curve(7)={1};
"""
CUBE = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0,1,1,1.5};
Physical Volume(3) = {1};
"""


def gmsh(geo, out, dim, order, field_format, scale=1):
    with tempfile.TemporaryDirectory() as d:
        g = os.path.join(d, "x.geo")
        with open(g, "w") as f:
            f.write(geo)
        subprocess.run(["gmsh", f"-{dim}", "-order", str(order), g, "-o",
                        os.path.join(OUT, out), "-format", "bdf", "-setnumber",
                        "Mesh.BdfFieldFormat", str(field_format), "-clscale", str(scale)],
                       check=True, stdout=subprocess.DEVNULL)


def every_type():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1.5]], dtype=float)
    rng = np.random.default_rng(3)
    pts = np.vstack([pts, rng.random((20, 3))])
    cells = [("vertex", [[0]]), ("line", [[0, 1], [1, 2]]), ("triangle", [[0, 1, 2]]),
             ("triangle6", [list(range(8, 14))]), ("quad", [[0, 1, 2, 3]]),
             ("quad8", [list(range(8, 16))]), ("tetra", [[0, 1, 3, 4]]),
             ("tetra10", [list(range(8, 18))]), ("pyramid", [[0, 1, 2, 3, 6]]),
             ("wedge", [[0, 1, 2, 4, 5, 6]]),
             ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]]),
             ("hexahedron20", [list(range(8, 28))])]
    refs = [np.arange(len(c[1]), dtype=np.int64) + 10 * k for k, c in enumerate(cells)]
    m = meshio.Mesh(pts, cells, point_data={"nastran:ref": np.arange(len(pts)) % 3},
                    cell_data={"nastran:ref": refs})
    meshio.write(os.path.join(OUT, "every-type.meshio.bdf"), m, file_format="nastran")
    tets = meshio.Mesh(pts[:8] * 0.1 + 1e-7, [("tetra", [[0, 1, 3, 4], [1, 2, 3, 6]])])
    meshio.nastran.write(os.path.join(OUT, "free-points.meshio.bdf"), tets,
                         point_format="free")


CORNERS = """$ executive and case control: skipped up to BEGIN BULK
SOL 101
CEND
TITLE = corners
SUBCASE 1
  SPC = 1
BEGIN BULK
$ elements before their grids; ids not 1..n
CQUAD4  1       7       30      10      20      40
CTRIA3,2,7,20,50,40
CHEXA   3       8       10      20      40      30      11      21      +C3
$ a comment inside the card
+C3     41      31
GRID*   10                              0.0             0.0             *G10
*G10    0.0
GRID    20              1.0     0.      0.
GRID,30,,0.,1.,0.
GRID    40              1.0     1.0     0.0
GRID    50              2.      .5      0.
GRID    11              0.      0.      1.0+0
GRID    21              1.0     0.0     1.0-0
GRID    31              0.      1.      10.-1
GRID    41              1.      -2.5+2  100.0-2
MAT1    1       2.1+5           .3
PSHELL  7       1       .1
PSOLID  8       1
FORCE   1       40      0       1.      0.      0.      1.
SPC     1       10      123456  0.
ENDDATA
text after ENDDATA is not read
"""


INCLUDE_FILES = {
    "deck.bdf": """SOL 101
CEND
TITLE = split deck
INCLUDE 'loads-not-here.dat'
BEGIN BULK
$ the grids, then the elements, each in a file of its own
INCLUDE 'mesh/grids.bdf'
INCLUDE 'mesh/
   elements.bdf'   $ a name split over two lines
CTRIA3  7       3       4       5       6
ENDDATA
""",
    "mesh/grids.bdf": """GRID    1               0.      0.      0.
GRID    2               1.      0.      0.
GRID    3               1.      1.      0.
CHEXA   5       2       1       2       3       4       7       8       +C5
INCLUDE 'more-grids.bdf'
""",
    "mesh/more-grids.bdf": """+C5     9       10
GRID    4               0.      1.      0.
GRID    7               0.      0.      1.
GRID    8               1.      0.      1.
GRID    9               1.      1.      1.
GRID    10              0.      1.      1.
GRID,5,,2.,0.,0.
GRID*   6                               2.0             1.0             *G6
*G6     0.0
""",
    "mesh/elements.bdf": """$ elements of grids in both files
CTRIA3  1       1       2       5       6
CTRIA3  2       1       6       3       4
CBAR    3       4       1       5       0.      0.      1.
""",
}


def includes():
    """The split deck and its inlined copy (INCLUDE lines replaced by the files' lines)."""
    base = os.path.join(OUT, "include")
    for name, text in INCLUDE_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(base, name)), exist_ok=True)
        with open(os.path.join(base, name), "w") as f:
            f.write(text)

    def inline(text, here):
        out, lines = [], iter(text.splitlines(keepends=True))
        for line in lines:
            if not line.startswith("INCLUDE"):
                out.append(line)
                continue
            while line.count("'") < 2:
                line = line.rstrip() + next(lines).strip()
            name = line.split("'")[1]
            path = os.path.normpath(os.path.join(here, name))
            if path not in INCLUDE_FILES:
                out.append("$ " + line)  # executive / case control: no file
                continue
            out.append(inline(INCLUDE_FILES[path], os.path.dirname(path)))
        return "".join(out)

    with open(os.path.join(base, "inlined.bdf"), "w") as f:
        f.write(inline(INCLUDE_FILES["deck.bdf"], ""))


def main():
    os.makedirs(OUT, exist_ok=True)
    gmsh(SQUARE, "square.gmsh.bdf", 2, 1, 1)
    gmsh(SQUARE, "square2.gmsh.nas", 2, 2, 2)
    gmsh(CUBE, "cube.gmsh.fem", 3, 1, 0, 1.5)
    gmsh(CUBE, "cube2.gmsh.bdf", 3, 2, 1, 2)
    every_type()
    with open(os.path.join(OUT, "corners.bdf"), "w") as f:
        f.write(CORNERS)
    includes()


if __name__ == "__main__":
    main()
