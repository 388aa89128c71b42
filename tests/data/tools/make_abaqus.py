#!/usr/bin/python3
"""Writes the Abaqus .inp test files into tests/data/abaqus/ (gmsh 4 and meshio 5.3 write the
first ones; the rest are hand-written corners):

    /usr/bin/python3 tests/data/tools/make_abaqus.py

cube.gmsh.inp          gmsh -3 of tools/cube.geo: C3D4 and two CPS3 sections, each with ELSET=,
                       then *ELSET sets of element ids (gmsh's ids start past its points/lines).
tet10.gmsh.inp         gmsh -3 -order 2 of a cube with a physical volume and point: C3D10 and
                       *NSET sets (Mesh.SaveGroupsOfNodes).
hex20.gmsh.inp         gmsh -3 -order 2 (serendipity) of an extruded transfinite block: C3D20,
                       each element over two lines (16 values, then 5).
quad.gmsh.inp          gmsh -2 of a recombined square: CPS4 (quad) with 3 coordinates a node.
blocks.meshio.inp      meshio's writer: 2-D points, triangle, quad, line blocks, cell and point
                       sets.
corners.inp            lower-case keywords, comments, a keyword line going on on the next, a
                       *MATERIAL / *STEP to skip, GENERATE sets, sets naming sets, a set defined
                       twice, B32 (3-node beam, end-middle-end), ids not 1..n, *NODE, NSET=.
main.inp               *INCLUDE of sub/nodes.inp, which includes elems.inp beside it
(sub/nodes.inp,        (relative to the including file), then sets in main.inp.
 sub/elems.inp)
parts.inp              two *PART sections with ids of their own (node 1 in both), no assembly.
parts-apart.inp        two parts numbered apart, an *ASSEMBLY with *INSTANCE (a translation).
cae.inp                as Abaqus/CAE writes a model (hand-written): two parts each numbered
                       from 1 with sets, three instances (a translation; a translation then a
                       rotation), an assembly node and sets (INSTANCE=, "I.set"), a material and
                       a step to skip.
cycle.inp              includes itself (a cycle).
"""
import os
import subprocess
import tempfile

import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "abaqus")

TET10 = """SetFactory("Built-in");
Point(1) = {0,0,0,0.5}; Point(2) = {1,0,0,0.5}; Point(3) = {1,1,0,0.5}; Point(4) = {0,1,0,0.5};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Extrude {0,0,1} { Surface{1}; }
Physical Volume("solid") = {1};
Physical Point("origin") = {1};
"""
HEX20 = """SetFactory("Built-in");
Point(1) = {0,0,0,1}; Point(2) = {2,0,0,1}; Point(3) = {2,1,0,1}; Point(4) = {0,1,0,1};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Transfinite Curve{1,3} = 4; Transfinite Curve{2,4} = 3; Transfinite Surface{1};
Recombine Surface{1};
Extrude {0,0,1} { Surface{1}; Layers{2}; Recombine; }
Physical Volume("block") = {1};
Physical Point("corner") = {1};
"""
QUAD = """SetFactory("Built-in");
Point(1) = {0,0,0,0.3}; Point(2) = {1,0,0,0.3}; Point(3) = {1,1,0,0.3}; Point(4) = {0,1,0,0.3};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Recombine Surface{1};
Physical Surface("plate") = {1};
"""

CORNERS = """** hand-written corners
*heading
 a heading line, *not a keyword* since it does not start with one
*Node, nset=
  10, 0.0, 0.0, 0.0
  11, 1.0, 0.0, 0.0
  12, 1.0, 1.0, 0.0
  13, 0.0, 1.0, 0.0
**  a comment between sections
*NODE, NSET=Top
20, 0.0, 0.0, 1.
21, 1., 0.0, 1.0e0
22, +1.0, 1.0, 1.0
23, 0, 1, 1
*Element,
  type=c3d8, Elset=Solid
7, 10, 11, 12, 13, 20, 21, 22, 23
*ELEMENT, TYPE=B32, ELSET=Beam
8, 10, 11,
 12
9, 20, 21, 22
*MATERIAL, NAME=steel
*ELASTIC
210000., 0.3
*ELSET, ELSET=beam
9
*NSET, NSET=bottom, GENERATE
10, 13, 1
*NSET, NSET=corners
10, 12,
22
*NSET, NSET=both
bottom, TOP
*ELSET, ELSET=All, generate
7, 9, 1
*STEP
*STATIC
*BOUNDARY
bottom, 1, 3
*END STEP
"""

MAIN = """*HEADING
main file
*INCLUDE, INPUT=sub/nodes.inp
*NSET, NSET=first
1, 2
*ELSET, ELSET=tris
1, 2
"""
NODES = """*NODE
1, 0., 0.
2, 1., 0.
3, 1., 1.
4, 0., 1.
*INCLUDE, INPUT=elems.inp
"""
ELEMS = """*ELEMENT, TYPE=CPS3
1, 1, 2, 3
2, 1, 3, 4
"""

PARTS = """*PART, NAME=a
*NODE
1, 0., 0., 0.
2, 1., 0., 0.
*ELEMENT, TYPE=T3D2
1, 1, 2
*END PART
*PART, NAME=b
*NODE
1, 0., 1., 0.
2, 1., 1., 0.
*ELEMENT, TYPE=T3D2
1, 1, 2
*END PART
"""
PARTS_APART = """*PART, NAME=a
*NODE
1, 0., 0., 0.
2, 1., 0., 0.
*ELEMENT, TYPE=T3D2, ELSET=a
1, 1, 2
*END PART
*PART, NAME=b
*NODE
3, 0., 1., 0.
4, 1., 1., 0.
*ELEMENT, TYPE=T3D2
2, 3, 4
*END PART
*ASSEMBLY, NAME=asm
*INSTANCE, NAME=a-1, PART=a
*END INSTANCE
*INSTANCE, NAME=b-1, PART=b
0., 0., 5.
*END INSTANCE
*END ASSEMBLY
"""
CAE = """*Heading
** Job name: cae Model name: Model-1
*Preprint, echo=NO, model=NO, history=NO, contact=NO
**
** PARTS
**
*Part, name=block
*Node
      1,           0.,           0.,           0.
      2,           1.,           0.,           0.
      3,           1.,           1.,           0.
      4,           0.,           1.,           0.
      5,           0.,           0.,           1.
      6,           1.,           0.,           1.
      7,           1.,           1.,           1.
      8,           0.,           1.,           1.
*Element, type=C3D8R
1, 1, 2, 3, 4, 5, 6, 7, 8
*Nset, nset=top
 5, 6, 7, 8
*Elset, elset=Set-1, generate
 1,  1,  1
** Section: Section-1
*Solid Section, elset=Set-1, material=steel
,
*End Part
**
*Part, name=rod
*Node
      1,           0.,           0.,           0.
      2,           1.,           0.,           0.
*Element, type=T3D2
1, 1, 2
*End Part
**
** ASSEMBLY
**
*Assembly, name=Assembly
**
*Instance, name=block-1, part=block
*End Instance
**
*Instance, name=block-2, part=block
          2.,           0.,           0.
*End Instance
**
*Instance, name=rod-1, part=rod
          0.,           0.,           1.
          0.,           0.,           1.,           0.,           0.,           2.,          90.
*End Instance
**
*Node
      1,           1.,           1.,           3.
*Nset, nset=RP
 1,
*Nset, nset=ends, instance=rod-1
 1, 2
*Elset, elset=blocks
 block-1.Set-1, block-2.Set-1
*End Assembly
**
** MATERIALS
**
*Material, name=steel
*Elastic
 210000., 0.3
*Step, name=Step-1
*Static
1., 1., 1e-05, 1.
*End Step
"""
CYCLE = """*NODE
1, 0., 0., 0.
*INCLUDE, INPUT=cycle.inp
"""


def gmsh(geo_text, name, *args):
    with tempfile.TemporaryDirectory() as tmp:
        geo = os.path.join(tmp, "m.geo")
        with open(geo, "w") as f:
            f.write(geo_text)
        subprocess.run(["gmsh", *args, geo, "-o", os.path.join(OUT, name), "-format", "inp"],
                       check=True, stdout=subprocess.DEVNULL)


def write(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def main():
    os.makedirs(os.path.join(OUT, "sub"), exist_ok=True)
    with open(os.path.join(HERE, "cube.geo")) as f:
        gmsh(f.read(), "cube.gmsh.inp", "-3")
    gmsh(TET10, "tet10.gmsh.inp", "-3", "-order", "2", "-setnumber", "Mesh.SaveGroupsOfNodes",
         "1")
    gmsh(HEX20, "hex20.gmsh.inp", "-3", "-order", "2", "-setnumber",
         "Mesh.SecondOrderIncomplete", "1")
    gmsh(QUAD, "quad.gmsh.inp", "-2")
    rng = np.random.default_rng(3)
    points = rng.standard_normal((12, 2))
    cells = [("triangle", np.array([[0, 1, 2], [2, 3, 4], [5, 6, 7]])),
             ("quad", np.array([[0, 1, 5, 6], [8, 9, 10, 11]])),
             ("line", np.array([[0, 11], [3, 4], [6, 7]]))]
    mesh = meshio.Mesh(points, cells,
                       point_sets={"left": np.array([0, 3, 8]), "right": np.array([11, 1])},
                       cell_sets={"mixed": [np.array([1]), np.array([0, 1]), np.array([], int)]})
    meshio.write(os.path.join(OUT, "blocks.meshio.inp"), mesh, file_format="abaqus")
    write("corners.inp", CORNERS)
    write("main.inp", MAIN)
    write("sub/nodes.inp", NODES)
    write("sub/elems.inp", ELEMS)
    write("parts.inp", PARTS)
    write("parts-apart.inp", PARTS_APART)
    write("cycle.inp", CYCLE)
    write("cae.inp", CAE)


if __name__ == "__main__":
    main()
