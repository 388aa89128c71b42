#!/usr/bin/python3
"""Writes the Tecplot ASCII test files into tests/data/tecplot/ (gmsh's meshes through meshio
5.0's tecplot writer, and hand-written corners):

    /usr/bin/python3 tests/data/tools/make_tecplot.py

meshio-tri.dat     gmsh's triangulated unit square (2-D points) through meshio's writer: point
                   data "p" and a 2-component "v" (v_0, v_1), cell data "q" (CELLCENTERED).
meshio-tet.dat     gmsh's tetrahedral box through meshio's writer: point data "T", cell data
                   "rank" and a 3-component "g" (g_0 .. g_2).
meshio-mixed.dat   meshio's writer: tetra + pyramid + hexahedron as one FEBRICK zone with repeated
                   nodes (meshio's orders), cell data "id".
point.dat          by hand: DATAPACKING = POINT, FEQUADRILATERAL, '#' comments, tabs between
                   values, a zone header over three lines, lower-case x y z.
fepoint.dat        by hand: the old F = FEPOINT, ET = TRIANGLE header, a TITLE, 2-D (no Z).
feblock.dat        by hand: the old F = FEBLOCK, ET = TETRAHEDRON with NV = 4 (meshio: the
                   variables from the 5th on are cell-centred), values over several lines.
varloc.dat         by hand: BLOCK with VARLOCATION = ([4-5] = CELLCENTERED), variables on two
                   lines (quoted), a name with a blank ("Velocity X" -> Velocity_X).
repeat.dat         by hand (meshio cannot read it): repeat counts "4*0.5", DT = (...), Fortran
                   'D' exponents, '+' signs, commas between values, CRLF line ends.
zones.dat          by hand: two zones, a triangle and a quad one (meshio reads the first only;
                   meshdock both, points appended).
"""
import os
import subprocess
import tempfile

import meshio
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tecplot")

SQUARE = """lc = 0.3;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
"""

BOX = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0, 1,1,0.5};
Mesh.CharacteristicLengthMax = 0.35;
"""


def gmsh(geo, dim):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.geo")
        with open(path, "w") as f:
            f.write(geo)
        out = os.path.join(d, "g.msh")
        subprocess.run(["gmsh", f"-{dim}", path, "-o", out, "-format", "msh22"], check=True,
                       stdout=subprocess.DEVNULL)
        return meshio.read(out)


def meshio_files():
    m = gmsh(SQUARE, 2)
    tri = m.get_cells_type("triangle")
    pts = m.points[:, :2]
    mesh = meshio.Mesh(pts, [("triangle", tri)],
                       point_data={"p": pts[:, 0] * 2 + pts[:, 1], "v": pts * 3.25},
                       cell_data={"q": [np.arange(len(tri)) * 0.5]})
    meshio.write(os.path.join(OUT, "meshio-tri.dat"), mesh, file_format="tecplot")

    m = gmsh(BOX, 3)
    tet = m.get_cells_type("tetra")
    pts = m.points
    mesh = meshio.Mesh(pts, [("tetra", tet)],
                       point_data={"T": np.sin(pts[:, 0]) + pts[:, 2]},
                       cell_data={"rank": [np.arange(len(tet)) % 4],
                                  "g": [np.column_stack([np.arange(len(tet)) * 1.5,
                                                         -np.arange(len(tet)) / 3.0,
                                                         np.ones(len(tet))])]})
    meshio.write(os.path.join(OUT, "meshio-tet.dat"), mesh, file_format="tecplot")

    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                    [0.5, 0.5, 1.5], [0.5, 0.5, -0.5]], dtype=float)
    cells = [("tetra", [[0, 1, 3, 9], [1, 2, 3, 9]]), ("pyramid", [[4, 5, 6, 7, 8]]),
             ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]])]
    mesh = meshio.Mesh(pts, cells, cell_data={"id": [np.array([1.0, 2.0]), np.array([3.0]),
                                                     np.array([4.0])]})
    meshio.write(os.path.join(OUT, "meshio-mixed.dat"), mesh, file_format="tecplot")


HAND = {
    "point.dat": """# a POINT-packed quad zone
VARIABLES = "x", "y", "z", "P"
ZONE T="plate", N=6, E=2
, DATAPACKING=POINT
, ZONETYPE=FEQUADRILATERAL
# x y z P
0.0 0.0 0.0 1.5
1.0\t0.0\t0.0\t2.5
2.0 0.0 0.0 3.5
0.0 1.0 0.0 4.5
1.0 1.0 0.25 5.5
2.0 1.0 0.5 6.5
# connectivity
1 2 5 4
2 3 6 5
""",
    "fepoint.dat": """TITLE = "old style"
VARIABLES = "X" "Y" "T"
ZONE N=4, E=2, F=FEPOINT, ET=TRIANGLE
0 0 10
1 0 11
1 1 12
0 1 13
1 2 3
1 3 4
""",
    "feblock.dat": """VARIABLES = "X", "Y", "Z", "rho", "id"
ZONE N=5, E=2, F=FEBLOCK, ET=TETRAHEDRON, NV=4
0 1 0 0 0
0 0 1 0 0
0 0 0 1 -1
1.5 2.5 3.5 4.5 5.5
7 8
1 2 3 4
1 3 2 5
""",
    "varloc.dat": """TITLE = "cell-centred"
VARIABLES = "X", "Y", "Z"
"Velocity X", "Q"
ZONE NODES = 8, ELEMENTS = 1, DATAPACKING = BLOCK, ZONETYPE = FEBRICK
, VARLOCATION = ([4-5] = CELLCENTERED)
0 1 1 0 0 1 1 0
0 0 1 1 0 0 1 1
0 0 0 0 1 1 1 1
0.125
-2.5
1 2 3 4 5 6 7 8
""",
    "repeat.dat": ("VARIABLES = \"X\" \"Y\" \"Z\" \"s\"\r\n"
                   "ZONE T=\"rep\", NODES=4, ELEMENTS=1, DATAPACKING=BLOCK, "
                   "ZONETYPE=FETETRAHEDRON, DT=(DOUBLE DOUBLE SINGLE SINGLE)\r\n"
                   "0 1D0 0 0\r\n"
                   "0, 0, +1.0, 0\r\n"
                   "3*0 1.0d+00\r\n"
                   "4*0.5\r\n"
                   "1 2 3 4\r\n"),
    "zones.dat": """VARIABLES = "X", "Y", "s"
ZONE T="tri", N=3, E=1, DATAPACKING=BLOCK, ZONETYPE=FETRIANGLE
0 1 0
0 0 1
1 2 3
1 2 3
ZONE T="quad", N=4, E=1, DATAPACKING=BLOCK, ZONETYPE=FEQUADRILATERAL
2 3 3 2
0 0 1 1
4 5 6 7
1 2 3 4
""",
}


def main():
    os.makedirs(OUT, exist_ok=True)
    meshio_files()
    for name, text in HAND.items():
        with open(os.path.join(OUT, name), "w", newline="") as f:
            f.write(text)


if __name__ == "__main__":
    main()
