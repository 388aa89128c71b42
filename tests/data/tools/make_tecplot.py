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

Ordered (I, J, K) zones (meshio refuses them; tests compare with VTK's vtkTecplotReader), values
from a curved grid (ordered_grid) written here:
ordered-3d-point.dat  one 4 x 3 x 2 zone titled "blade", no DATAPACKING (POINT, Tecplot's
                      default), DT, AUXDATA, a nodal "P".
ordered-3d-block.dat  the same grid, DATAPACKING = BLOCK, VARLOCATION = ([5] = CELLCENTERED):
                      "C" has (I-1)(J-1)(K-1) = 6 values. (No ZONETYPE = ORDERED here:
                      vtkTecplotReader 9.1 reads such a zone's values as POINT whatever
                      DATAPACKING says; meshdock reads it as the guide says, test_tecplot.cpp.)
ordered-2d.dat        three planes, BLOCK with a cell-centred "C": I x J (K = 1), I x K (J = 1)
                      and J x K (I = 1) zones, each (n-1)(m-1) cell values.
ordered-line.dat      a 2 x 2 quad zone, the old F = BLOCK on an I = 5 line, a single-point zone
                      (I = J = K = 1: a vertex), a J line (I = 1, J = 3, default POINT).
                      (vtkTecplotReader 9.1 drops I-only and single-point zones unless a zone
                      before has two dimensions, and I-only zones POINT-packed: hence the
                      first zone and the BLOCK packing.)
ordered-xy.dat        2-D points (no Z): an I x J zone, POINT by default.
ordered-fe.dat        ordered and finite-element zones in one file: an ordered brick zone (the
                      old F = BLOCK), an FEBRICK zone, an ordered quad zone (ZONETYPE = ORDERED,
                      DATAPACKING = POINT).
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


def ordered_grid(ni, nj, nk, z=True):
    """A curved I x J x K grid, I fastest: rows of X Y [Z] P, P = 2 X + Y."""
    rows = []
    for k in range(nk):
        for j in range(nj):
            for i in range(ni):
                x = i + 0.125 * j
                y = j + 0.25 * k * i
                zz = 0.5 * k + 0.0625 * i * j
                rows.append([x, y] + ([zz] if z else []) + [2 * x + y])
    return np.array(rows)


def ordered_zone(header, rows, packing, cell=None):
    """A zone's text: its rows POINT-packed (a row a line) or BLOCK-packed (a variable a line),
    then the cell-centred values (BLOCK)."""
    lines = [header]
    fmt = lambda v: repr(float(v))
    if packing == "POINT":
        lines += [" ".join(fmt(v) for v in r) for r in rows]
    else:
        lines += [" ".join(fmt(v) for v in col) for col in rows.T]
        if cell is not None:
            lines.append(" ".join(fmt(v) for v in cell))
    return "\n".join(lines) + "\n"


def ordered_files():
    g = ordered_grid(4, 3, 2)
    files = {}
    files["ordered-3d-point.dat"] = (
        'TITLE = "ordered"\nVARIABLES = "X", "Y", "Z", "P"\n' +
        ordered_zone('ZONE T="blade", I=4, J=3, K=2, DT=(DOUBLE DOUBLE DOUBLE SINGLE)\n'
                     'AUXDATA solver="hand"', g, "POINT"))
    files["ordered-3d-block.dat"] = (
        'VARIABLES = "X" "Y" "Z" "P" "C"\n' +
        ordered_zone("ZONE T=\"blade\", I=4, J=3, K=2, DATAPACKING=BLOCK, "
                     "VARLOCATION=([5]=CELLCENTERED)", g, "BLOCK", np.arange(6) * 0.5 + 1))
    text = 'VARIABLES = "X" "Y" "Z" "P" "C"\n'
    planes = [("ij", 4, 3, 1), ("ik", 3, 1, 3), ("jk", 1, 2, 3)]
    for n, (name, ni, nj, nk) in enumerate(planes):
        cells = max(ni - 1, 1) * max(nj - 1, 1) * max(nk - 1, 1)
        text += ordered_zone(f'ZONE T="{name}", I={ni}, J={nj}, K={nk}, DATAPACKING=BLOCK, '
                             "VARLOCATION=([5]=CELLCENTERED)", ordered_grid(ni, nj, nk) + 10 * n,
                             "BLOCK", np.arange(cells) + 100 * n)
    files["ordered-2d.dat"] = text
    files["ordered-line.dat"] = (
        'VARIABLES = "X" "Y" "Z" "P"\n' +
        ordered_zone('ZONE T="quad", I=2, J=2', ordered_grid(2, 2, 1) + 20, "POINT") +
        ordered_zone('ZONE T="line", I=5, F=BLOCK', ordered_grid(5, 1, 1), "BLOCK") +
        ordered_zone('ZONE T="probe", I=1, J=1, K=1, DATAPACKING=BLOCK',
                     np.array([[7.0, 8.0, 9.0, 10.0]]), "BLOCK") +
        ordered_zone("ZONE I=1, J=3, K=1", ordered_grid(1, 3, 1), "POINT"))
    files["ordered-xy.dat"] = ('VARIABLES = "X" "Y" "P"\n' +
                               ordered_zone("ZONE I=3, J=2", ordered_grid(3, 2, 1, z=False), "POINT"))
    brick = ordered_grid(2, 2, 2) + [5, 0, 0, 1]
    files["ordered-fe.dat"] = (
        'VARIABLES = "X" "Y" "Z" "P"\n' +
        ordered_zone("ZONE T=\"o1\", I=3, J=2, K=2, F=BLOCK", ordered_grid(3, 2, 2),
                     "BLOCK") +
        ordered_zone('ZONE T="fe", N=8, E=1, ZONETYPE=FEBRICK, DATAPACKING=POINT', brick, "POINT") +
        "1 2 4 3 5 6 8 7\n" +
        ordered_zone('ZONE T="o2", ZONETYPE=ORDERED, I=2, J=2, DATAPACKING=POINT',
                     ordered_grid(2, 2, 1) - 3,
                     "POINT"))
    return files


def main():
    os.makedirs(OUT, exist_ok=True)
    meshio_files()
    for name, text in list(HAND.items()) + list(ordered_files().items()):
        with open(os.path.join(OUT, name), "w", newline="") as f:
            f.write(text)


if __name__ == "__main__":
    main()
