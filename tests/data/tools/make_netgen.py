#!/usr/bin/python3
"""Writes the Netgen test files into tests/data/netgen/ (gmsh meshes and hand-made meshes written
by meshio 5.0's netgen writer, since gmsh writes no Netgen, and hand-written corners):

    /usr/bin/python3 tests/data/tools/make_netgen.py

gmsh-tets.vol      gmsh: a tetrahedral box with physical groups (a volume "solid", surfaces
                   "bottom" / "top", the rest unnamed), written by meshio with gmsh:physical as
                   netgen:index and gmsh's field_data names as materials / bcnames. gmsh's
                   lines and vertices left out.
gmsh-tets.vol.gz   the same, gzipped (meshio writes x.vol.gz so).
mixed.vol          meshio: every cell type its netgen writer takes (vertex, line, triangle,
                   triangle6, quad, quad8, tetra, tetra10, pyramid, wedge, hexahedron,
                   hexahedron20), netgen:index 1.. per block, no names (meshio then makes up
                   cd<codim>_<index> ones). Not pyramid13 / wedge15: meshio 5.0's Mesh has no
                   dimension for them (its netgen reader and writer fail on them).
quadratic.vol      by hand: a pyramid13 and a wedge15 (meshdock reads them; meshio cannot).
plate2d.vol        meshio: a 2-D mesh (points (n, 2)): triangles, quads, boundary lines, a
                   vertex; field_data names of dimension 2 and 1 (materials, bcnames).
corners.vol        by hand: '#' comments and blank lines between and inside sections, Netgen's
                   surfaceelementsgi / volumeelements / edgesegmentsgi2 rows with the trailing
                   columns meshio does not read, a names line that is not two words, the
                   sections meshio skips (face_colours, identifications, identificationtypes,
                   singular_points), a geomtype Netgen has none for, text after endmesh.
twoline.vol        by hand: a "surf1 surf2 p1 p2" line and edge segments of two lines a row.
../fuzz/netgen_reader/  fuzz_netgen_reader's seeds: the files above and a few broken ones.
"""
import gzip
import os
import shutil
import subprocess
import tempfile

import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "netgen")
FUZZ = os.path.join(HERE, "..", "fuzz", "netgen_reader")

BOX = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0, 1,1,0.5};
Mesh.CharacteristicLengthMax = 0.4;
Physical Volume("solid", 7) = {1};
Physical Surface("bottom", 3) = {5};
Physical Surface("top", 4) = {6};
Physical Surface(5) = {1, 2, 3, 4};
"""


def gmsh_tets():
    with tempfile.TemporaryDirectory() as d:
        geo = os.path.join(d, "box.geo")
        with open(geo, "w") as f:
            f.write(BOX)
        msh = os.path.join(d, "box.msh")
        subprocess.run(["gmsh", "-3", geo, "-o", msh, "-format", "msh41"], check=True,
                       stdout=subprocess.DEVNULL)
        m = meshio.read(msh)
    keep = [i for i, b in enumerate(m.cells) if b.type in ("triangle", "tetra")]
    cells = [(m.cells[i].type, m.cells[i].data) for i in keep]
    index = [m.cell_data["gmsh:physical"][i] for i in keep]
    return meshio.Mesh(m.points, cells, cell_data={"netgen:index": index},
                       field_data=m.field_data)


def mixed():
    # Nodes made up per type: what matters is that each type's node order goes through.
    pts = np.array([[x * 0.5, y * 0.25, z * 0.125] for x in range(3) for y in range(3)
                    for z in range(3)], dtype=float)
    n = len(pts)
    rng = np.random.default_rng(7)
    types = [("vertex", 1), ("line", 2), ("triangle", 3), ("triangle6", 6), ("quad", 4),
             ("quad8", 8), ("tetra", 4), ("tetra10", 10), ("pyramid", 5), ("wedge", 6),
             ("hexahedron", 8), ("hexahedron20", 20)]
    cells, index = [], []
    for k, (t, npc) in enumerate(types):
        data = np.array([rng.choice(n, npc, replace=False) for _ in range(2)])
        cells.append((t, data))
        index.append(np.array([k + 1, k + 2]))
    return meshio.Mesh(pts, cells, cell_data={"netgen:index": index})


def plate2d():
    pts = np.array([[0, 0], [1, 0], [2, 0], [0, 1], [1, 1], [2, 1], [0.5, 2]], dtype=float)
    cells = [("triangle", np.array([[3, 4, 6]])), ("quad", np.array([[0, 1, 4, 3], [1, 2, 5, 4]])),
             ("line", np.array([[0, 1], [1, 2], [2, 5]])), ("vertex", np.array([[6]]))]
    index = [np.array([2]), np.array([1, 1]), np.array([1, 1, 2]), np.array([1])]
    field = {"steel": np.array([1, 2]), "glass": np.array([2, 2]), "clamp": np.array([1, 1]),
             "load": np.array([2, 1])}
    return meshio.Mesh(pts, cells, cell_data={"netgen:index": index}, field_data=field)


CORNERS = """# a Netgen mesh by hand
mesh3d

# comment between sections
dimension
3
geomtype
42

# surfnr    bcnr   domin  domout      np      p1      p2      p3
surfaceelementsgi
2
   2    1    1    0    3    1    2    3    0 0 0
# a comment between rows

   2    1    1    0    4    1    2    5    4    0 0 0 0

#  matnr      np      p1      p2      p3      p4
volumeelements
3
1 4 1 2 3 6
1 4 2 3 4 6
2 5 1 2 5 4 6

face_colours
2
1 1 0.0 1.0 0.0
2 1 1.0 0.0 0.0

materials
3
1 steel
2 copper wire

bcnames
2
1 outer
2 inner

identifications
1
1 4 1

identificationtypes
1
2

singular_points
0

points
6
0.0 0.0 0.0
1.0 0.0 0.0
1.0 1.0 0.0
0.0 1.0 0.0
0.5 0.5 1.0e0
-2.5e-1   0.25 0.125

# surfid  0   p1   p2   trignum1    trignum2   domin/surfnr1    domout/surfnr2   ednr1   dist1   ednr2   dist2
edgesegmentsgi2
2
1 0 1 2 -1 -1 0 0 1 0.0 1 1.0
3 0 2 3 -1 -1 0 0 1 0.5 1 1.25

#          pnum             index
pointelements
1
5 9

endmesh

text after endmesh is not read
"""

TWOLINE = """mesh3d
dimension
3
geomtype
0
volumeelements
1
1 4 1 2 3 4
points
4
0 0 0
1 0 0
0 1 0
0 0 1
surf1 surf2 p1 p2
edgesegmentsgi2
2
1 0 1 2
-1 -1 0 0
2 0 2 3
-1 -1 0 0
endmesh
"""

QUADRATIC = "mesh3d\ndimension\n3\nvolumeelements\n2\n" + \
    "4 13 " + " ".join(str(i) for i in range(1, 14)) + "\n" + \
    "5 15 " + " ".join(str(i) for i in range(1, 16)) + "\n" + \
    "points\n15\n" + "".join(f"{i} {i * 0.5} {-i}\n" for i in range(15)) + "endmesh\n"

BROKEN = {
    "short-points.vol": "mesh3d\ndimension\n3\npoints\n3\n0 0 0\n1 0 0\n",
    "bad-np.vol": "mesh3d\nvolumeelements\n1\n1 7 1 2 3 4 5 6 7\npoints\n0\n",
    "node-range.vol": "mesh3d\nvolumeelements\n1\n1 4 1 2 3 9\npoints\n4\n0 0 0\n1 0 0\n0 1 0\n"
                      "0 0 1\nendmesh\n",
    "lying-count.vol": "mesh3d\nsurfaceelements\n999999999\n1 1 0 0 3 1 2 3\n",
}


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(FUZZ, exist_ok=True)
    box = gmsh_tets()
    meshio.write(os.path.join(OUT, "gmsh-tets.vol"), box, file_format="netgen")
    meshio.write(os.path.join(OUT, "gmsh-tets.vol.gz"), box, file_format="netgen")
    meshio.write(os.path.join(OUT, "mixed.vol"), mixed(), file_format="netgen")
    meshio.write(os.path.join(OUT, "plate2d.vol"), plate2d(), file_format="netgen")
    for name, text in (("corners.vol", CORNERS), ("twoline.vol", TWOLINE),
                       ("quadratic.vol", QUADRATIC)):
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)
    for name in ("corners.vol", "twoline.vol", "mixed.vol", "plate2d.vol"):
        shutil.copy(os.path.join(OUT, name), os.path.join(FUZZ, name))
    for name, text in BROKEN.items():
        with open(os.path.join(FUZZ, name), "w") as f:
            f.write(text)
    with open(os.path.join(OUT, "mixed.vol"), "rb") as f:
        with gzip.open(os.path.join(FUZZ, "mixed.vol.gz"), "wb") as g:
            g.write(f.read())


if __name__ == "__main__":
    main()
