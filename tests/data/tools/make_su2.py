#!/usr/bin/python3
"""Writes the SU2 test files into tests/data/su2/ (gmsh's -format su2, meshio 5.0's su2 writer,
and hand-written corners):

    /usr/bin/python3 tests/data/tools/make_su2.py

gmsh-2d.su2        gmsh: a triangulated unit square, markers "inlet", "wall" (two curves) and
                   gmsh's name for an unnamed physical curve, "PhysicalLine7"; point and element
                   index columns.
gmsh-3d.su2        gmsh: a tetrahedral box, markers "bottom", "top" and "sides" (triangles).
meshio-mixed.su2   meshio's writer: 3-D tetra + pyramid + hexahedron cells, no markers (meshio
                   5.0's writer fails on any boundary cell: it unpacks a CellBlock as a tuple).
corners.su2        by hand, read alike by meshio: '%' comments and blank lines (between
                   sections: meshio counts a comment inside one as one of its lines), NPOIN with two
                   numbers, 2 extra point columns, element index columns in NELEM, none in the
                   markers, a marker of two types, markers with integer and name tags.
spaces.su2         by hand: keywords with blanks around '=' (meshio reads none of them: its
                   keyword is the text before '=' unstripped), NELEM before NDIME.
zones.su2          by hand: NZONE= 2, two IZONE sections (meshdock reads zone 1).
"""
import os
import subprocess
import tempfile

import meshio
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "su2")

SQUARE = """lc = 0.5;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Physical Curve("inlet") = {4}; Physical Curve("wall") = {1,3}; Physical Curve(7) = {2};
Physical Surface("fluid") = {1};
"""

BOX = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0, 1,1,0.5};
Mesh.CharacteristicLengthMax = 0.3;
Physical Surface("bottom") = {5}; Physical Surface("top") = {6};
Physical Surface("sides") = {1,2,3,4};
Physical Volume("solid") = {1};
"""


def gmsh(geo, dim, name):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.geo")
        with open(path, "w") as f:
            f.write(geo)
        subprocess.run(["gmsh", f"-{dim}", path, "-o", os.path.join(OUT, name), "-format", "su2"],
                       check=True, stdout=subprocess.DEVNULL)


def meshio_mixed():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                    [0.5, 0.5, 1.5], [0.5, 0.5, -0.5]], dtype=float)
    cells = [("tetra", [[0, 1, 3, 9], [1, 2, 3, 9]]), ("pyramid", [[4, 5, 6, 7, 8]]),
             ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]]), ("tetra", [[4, 5, 7, 8]])]
    m = meshio.Mesh(pts, cells)
    meshio.write(os.path.join(OUT, "meshio-mixed.su2"), m, file_format="su2")


CORNERS = """% a hand-written SU2 file
%
NDIME= 2

% quads and triangles, an index column
NELEM= 3
5 0 1 4 0
9 1 2 5 4 1
5 0 4 3 2
NPOIN= 6 5
0 0 0 0
1 0 1 1
2 0 2 2
0 1 3 3
1 1 4 4
2.5e0 1 5 5
NMARK= 3
MARKER_TAG= 12
MARKER_ELEMS= 2
3 0 1
3 1 2
MARKER_TAG= far field
MARKER_ELEMS= 1
3 3 0
% the last one
MARKER_TAG= 5
MARKER_ELEMS= 2
3 4 3
3 2 5
"""

SPACES = """NELEM = 2
5 0 1 2
5 0 2 3
NDIME =2
NPOIN  =  4
0 0
1 0
1 1
0 1
NMARK = 1
 MARKER_TAG = wall
MARKER_ELEMS = 2
3 0 1
3 1 2
"""

ZONES = """NZONE= 2
IZONE= 1
NDIME= 2
NELEM= 1
5 0 1 2
NPOIN= 3
0 0
1 0
0 1
NMARK= 0
IZONE= 2
NDIME= 2
NELEM= 1
5 0 1 2
NPOIN= 3
5 5
6 5
5 6
NMARK= 0
"""


def main():
    os.makedirs(OUT, exist_ok=True)
    gmsh(SQUARE, 2, "gmsh-2d.su2")
    gmsh(BOX, 3, "gmsh-3d.su2")
    meshio_mixed()
    for name, text in [("corners.su2", CORNERS), ("spaces.su2", SPACES), ("zones.su2", ZONES)]:
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
