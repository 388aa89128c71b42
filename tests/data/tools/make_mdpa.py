#!/usr/bin/python3
"""Writes the Kratos mdpa test files into tests/data/mdpa/ (gmsh meshes and meshio-made meshes
written by meshio 5.0's mdpa writer, since gmsh writes no mdpa, and hand-made corners):

    /usr/bin/python3 tests/data/tools/make_mdpa.py

gmsh-tri.mdpa        gmsh: a triangulated square (2-D names: Triangle2D3, Line2D2, Point2D),
                     point_data "temp" (scalar) and "vel" (3 values), cell_data "area".
gmsh-tet.mdpa        gmsh: a tetrahedral box (3-D names: Tetrahedra3D4, Triangle3D3, Line3D2,
                     Point3D).
every2d.mdpa         meshio: every 2-D kind meshio writes (vertex, line, line3, triangle,
                     triangle6, quad, quad8, quad9) on a grid, 2-D points (z = 0 written).
every3d.mdpa         meshio: every 3-D kind (tetra, tetra10, wedge, hexahedron, hexahedron20,
                     hexahedron27) and a triangle block.
corners.mdpa         by hand: comments (whole lines and after values), Properties with values,
                     a Table, ModelPartData with a value, node ids from 10 with gaps and out of
                     order, Kratos names (Element2D3N, Element2D4N, LineCondition2D2N),
                     SubModelParts nested two deep, NodalData "id fixed value" and "id value",
                     a vector NodalData, ElementalData, tabs.
crlf.mdpa            corners.mdpa's every-kind part with CRLF line ends.
kratos3d.mdpa        by hand: Element3D4N, Element3D8N, Element3D6N, SurfaceCondition3D3N,
                     SurfaceCondition3D4N, with Geometries.
bad-node.mdpa        by hand: an element naming node 9, which no Nodes line gives.
bad-name.mdpa        by hand: Elements of an unknown name (line 7).
bad-count.mdpa       by hand: a Triangle2D3 line of 2 nodes (line 9).
unclosed.mdpa        by hand: a Nodes block with no End.
data.mdpa            by hand: NodalData, ElementalData and ConditionalData in Kratos' and
                     meshio's layouts (vectors "[k] (..)" with and without the fixed flag,
                     several values a line), and a matrix (skipped).
../fuzz/mdpa_reader/<file>  fuzz_mdpa_reader's seeds: the small files above.
"""
import os
import shutil
import subprocess
import tempfile

import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "mdpa")
FUZZ = os.path.join(HERE, "..", "fuzz", "mdpa_reader")

SQUARE = """lc = 0.3;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Physical Point(5) = {1}; Physical Curve(6) = {1,2}; Physical Surface(7) = {1};
"""

BOX = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0, 1,1,0.5};
Mesh.CharacteristicLengthMax = 0.4;
Physical Volume(1) = {1}; Physical Surface(2) = {1, 2}; Physical Curve(3) = {1};
Physical Point(4) = {1};
"""


def gmsh(geo, dim):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.geo")
        with open(path, "w") as f:
            f.write(geo)
        out = os.path.join(d, "g.msh")
        subprocess.run(["gmsh", f"-{dim}", path, "-o", out, "-format", "msh41"], check=True,
                       stdout=subprocess.DEVNULL)
        m = meshio.read(out)
    return meshio.Mesh(m.points, [(b.type, b.data) for b in m.cells])


def write(mesh, name):
    meshio.write(os.path.join(OUT, name), mesh, file_format="mdpa")


def grid2d():
    x, y = np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 1, 5))
    return np.column_stack([x.ravel(), y.ravel()])


def every2d():
    p = grid2d()
    cells = [("vertex", [[0], [24]]), ("line", [[0, 1], [1, 2]]), ("line3", [[0, 2, 1]]),
             ("triangle", [[0, 1, 5], [1, 6, 5]]), ("triangle6", [[0, 2, 10, 1, 6, 5]]),
             ("quad", [[6, 7, 12, 11]]), ("quad8", [[0, 2, 12, 10, 1, 7, 11, 5]]),
             ("quad9", [[12, 14, 24, 22, 13, 19, 23, 17, 18]])]
    return meshio.Mesh(p, cells)


def every3d():
    g = np.linspace(0, 1, 3)
    x, y, z = np.meshgrid(g, g, g, indexing="ij")
    p = np.column_stack([x.ravel(), y.ravel(), z.ravel()]) + 0.1 * np.arange(27)[:, None] / 27
    n = lambda i, j, k: 9 * i + 3 * j + k
    hex8 = [n(0, 0, 0), n(2, 0, 0), n(2, 2, 0), n(0, 2, 0), n(0, 0, 2), n(2, 0, 2), n(2, 2, 2),
            n(0, 2, 2)]
    cells = [("triangle", [[0, 1, 3]]), ("tetra", [[0, 1, 3, 9], [1, 4, 3, 10]]),
             ("tetra10", [list(range(10))]), ("wedge", [[0, 1, 3, 9, 10, 12]]),
             ("hexahedron", [hex8]), ("hexahedron20", [list(range(20))]),
             ("hexahedron27", [list(range(27))])]
    return meshio.Mesh(p, cells)


CORNERS = """// a Kratos model part written by hand
Begin ModelPartData
  DENSITY 1000.0 // a value: noted
End ModelPartData

Begin Properties 1
  YOUNG_MODULUS 2.1e11
End Properties

Begin Table 1 TIME DISPLACEMENT_X
  0.0 0.0
  1.0 0.5
End Table

Begin Nodes
\t10   0.0   0.0   0.0
  12   1.0   0.0   0.0 // a comment after a node
  11   1.0   1.0   0.0

  20   0.0   1.0   0.0
  15   2.0   0.5   -1.5e-3
End Nodes

Begin Elements Element2D3N // Kratos' name
  5 1 10 12 11
  7 1 10 11 20
End Elements

Begin Elements Element2D4N
  9 1 12 15 11 11
End Elements

Begin Conditions LineCondition2D2N
  1 2 10 12
  2 2 12 15
End Conditions

Begin NodalData TEMPERATURE
  10 1 300.0
  11 0 310.5
  15 0 -4.0
End NodalData

Begin NodalData PRESSURE
  12 7.25
End NodalData

Begin NodalData VELOCITY
  10 0 [3] (1.0, 2.0, 3.0)
End NodalData

Begin ElementalData THICKNESS
  5 0.1
End ElementalData

Begin SubModelPart Body
  Begin SubModelPartData
  End SubModelPartData
  Begin SubModelPartNodes
    10 12
    11 20
  End SubModelPartNodes
  Begin SubModelPartElements
    5 7
  End SubModelPartElements
  Begin SubModelPart Left
    Begin SubModelPartNodes
      10 20
    End SubModelPartNodes
    Begin SubModelPart Corner
      Begin SubModelPartNodes
        10
      End SubModelPartNodes
    End SubModelPart
  End SubModelPart
End SubModelPart

Begin SubModelPart Boundary
  Begin SubModelPartConditions
    2 1
  End SubModelPartConditions
  Begin SubModelPartElements
    9
  End SubModelPartElements
End SubModelPart
"""

KRATOS3D = """Begin Properties 0
End Properties
Begin Nodes
 1 0 0 0
 2 1 0 0
 3 1 1 0
 4 0 1 0
 5 0 0 1
 6 1 0 1
 7 1 1 1
 8 0 1 1
End Nodes
Begin Elements Element3D8N
 1 0 1 2 3 4 5 6 7 8
End Elements
Begin Elements Element3D4N
 2 0 1 2 4 5
End Elements
Begin Elements Element3D6N
 3 0 1 2 4 5 6 8
End Elements
Begin Conditions SurfaceCondition3D4N
 1 0 1 2 3 4
End Conditions
Begin Conditions SurfaceCondition3D3N
 2 0 5 6 7
End Conditions
Begin Geometries Triangle3D3
 1 1 2 3
End Geometries
"""

BAD_NODE = """Begin Nodes
 1 0 0 0
 2 1 0 0
 3 0 1 0
End Nodes
Begin Elements Triangle2D3
 1 0 1 2 9
End Elements
"""

BAD_NAME = """Begin Nodes
 1 0 0 0
 2 1 0 0
 3 0 1 0
End Nodes

Begin Elements MyOwnThing
 1 0 1 2 3
End Elements
"""

BAD_COUNT = """Begin Nodes
 1 0 0 0
 2 1 0 0
 3 0 1 0
End Nodes

Begin Elements Triangle2D3
 1 0 1 2 3
 2 0 1 2
End Elements
"""

DATA = """Begin Nodes
1 0 0 0
2 1 0 0
3 0 1 0
4 1 1 0
End Nodes
Begin Elements Element2D3N
7 0 1 2 3
8 0 2 4 3
End Elements
Begin Conditions LineCondition2D2N
20 0 1 2
21 0 2 4
End Conditions
Begin NodalData DISP
1 1 [3] (0.5, -1, 2e-3)
3 0 [3](1,2,3) // a comment
End NodalData
Begin NodalData UV
2 0.5 0.25
4 1 2
End NodalData
Begin ElementalData LOCAL_AXIS
8 [2] ( 0.0 , 1.0 )
End ElementalData
Begin ElementalData RHO
7 2.5
End ElementalData RHO
Begin ConditionalData RHO
21 -1
End ConditionalData
Begin ConditionalData PRESSURE
20 1 2 3
21 4 5 6
End ConditionalData
Begin ElementalData M
7 [2,2] ((1,0),(0,1))
End ElementalData
"""

UNCLOSED = """Begin Nodes
 1 0 0 0
 2 1 0 0
"""


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(FUZZ, exist_ok=True)
    tri = gmsh(SQUARE, 2)
    tri.point_data = {"temp": tri.points[:, 0] * 2 + 1, "vel": tri.points.copy()}
    tri.cell_data = {"area": [np.arange(len(b.data), dtype=float) for b in tri.cells]}
    tri.points = tri.points[:, :2]
    write(tri, "gmsh-tri.mdpa")
    write(gmsh(BOX, 3), "gmsh-tet.mdpa")
    write(every2d(), "every2d.mdpa")
    write(every3d(), "every3d.mdpa")
    hand = {"corners.mdpa": CORNERS, "kratos3d.mdpa": KRATOS3D, "bad-node.mdpa": BAD_NODE,
            "bad-name.mdpa": BAD_NAME, "bad-count.mdpa": BAD_COUNT, "unclosed.mdpa": UNCLOSED,
            "data.mdpa": DATA}
    for name, text in hand.items():
        with open(os.path.join(OUT, name), "w", newline="\n") as f:
            f.write(text)
    with open(os.path.join(OUT, "crlf.mdpa"), "w", newline="\r\n") as f:
        f.write(CORNERS)
    for name in ["every2d.mdpa", "every3d.mdpa", "corners.mdpa", "crlf.mdpa", "kratos3d.mdpa",
                 "bad-node.mdpa", "bad-name.mdpa", "bad-count.mdpa", "data.mdpa"]:
        shutil.copy(os.path.join(OUT, name), os.path.join(FUZZ, name))


if __name__ == "__main__":
    main()
