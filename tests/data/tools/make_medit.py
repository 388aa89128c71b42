#!/usr/bin/python3
"""Writes the Medit files of the medit reader's tests into tests/data/medit/:

    /usr/bin/python3 tests/data/tools/make_medit.py

cube.gmsh.mesh       gmsh -3 cube.geo -format mesh (MeshVersionFormatted 2, Dimension 3,
                     Vertices, Edges, Triangles, Tetrahedra; refs from the physical groups).
plate.gmsh.mesh      gmsh -2 of a recombined square (quads and triangles, Dimension 3).
mixed.meshio.mesh    meshio's medit writer, ascii and binary (version 4: int64 cells), of MIXED
mixed.meshio.meshb   below (line, triangle, quad, tetra, wedge, pyramid, hexahedron) with refs.
mixed.v1.mesh        meshio's ascii writer of MIXED with float32 points: MeshVersionFormatted 1.
flat.meshio.mesh     meshio's ascii writer of a 2-D mesh (Dimension 2).
skips.mesh           hand-written: comments, "Dimension" and its number on two lines, the
                     sections meshio skips (Corners, Ridges, RequiredVertices, Normals,
                     NormalAtVertices, Tangents, Identifier), Dobrzynski's Hexaedra, then End
                     and a line after it.
v{1,2,3,4}.le.meshb  written here with struct (libMeshb's layout) from MIXED: each version,
v2.be.meshb          little-endian, and version 2 big-endian, each with a Corners section and
                     an unknown keyword (code 126: stepped over by its next-keyword position).
"""
import os
import struct
import subprocess
import tempfile

import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "medit")

POINTS = np.array(
    [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
     [0.5, 0.5, 1.75], [0.25, 0.125, 0.1]],
    dtype=np.float64,
)
MIXED = [
    ("line", np.array([[0, 1], [1, 2]])),
    ("triangle", np.array([[0, 1, 2], [0, 2, 3]])),
    ("quad", np.array([[4, 5, 6, 7]])),
    ("tetra", np.array([[0, 1, 3, 9]])),
    ("wedge", np.array([[0, 1, 2, 4, 5, 6]])),
    ("pyramid", np.array([[4, 5, 6, 7, 8]])),
    ("hexahedron", np.array([[0, 1, 2, 3, 4, 5, 6, 7]])),
]
POINT_REF = np.arange(10) % 3
CELL_REF = [np.array([1, 2]), np.array([3, 4]), np.array([5]), np.array([6]), np.array([7]),
            np.array([8]), np.array([-9])]
CODES = {"line": 5, "triangle": 6, "quad": 7, "tetra": 8, "wedge": 9, "pyramid": 49,
         "hexahedron": 10}


def meshio_files():
    m = meshio.Mesh(POINTS, MIXED, point_data={"medit:ref": POINT_REF},
                    cell_data={"medit:ref": CELL_REF})
    meshio.write(os.path.join(OUT, "mixed.meshio.mesh"), m, file_format="medit")
    meshio.write(os.path.join(OUT, "mixed.meshio.meshb"), m, file_format="medit")
    m32 = meshio.Mesh((POINTS * 1.1).astype(np.float32), MIXED,
                      point_data={"medit:ref": POINT_REF}, cell_data={"medit:ref": CELL_REF})
    meshio.write(os.path.join(OUT, "mixed.v1.mesh"), m32, file_format="medit")
    flat = meshio.Mesh(POINTS[:4, :2] * 3.5, [("triangle", np.array([[0, 1, 2], [0, 2, 3]]))],
                       point_data={"medit:ref": np.array([1, 1, 2, 2])},
                       cell_data={"medit:ref": [np.array([10, 20])]})
    meshio.write(os.path.join(OUT, "flat.meshio.mesh"), flat, file_format="medit")


def gmsh_files():
    subprocess.run(["gmsh", "-3", os.path.join(HERE, "cube.geo"), "-o",
                    os.path.join(OUT, "cube.gmsh.mesh"), "-format", "mesh"],
                   check=True, capture_output=True)
    with tempfile.TemporaryDirectory() as d:
        geo = os.path.join(d, "plate.geo")
        with open(geo, "w") as f:
            f.write("lc = 0.3;\nPoint(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc};"
                    " Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc}; Point(5) = {0.5,1.4,0,lc};\n"
                    "Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,5}; Line(4) = {5,4};"
                    " Line(5) = {4,1};\nCurve Loop(1) = {1,2,3,4,5}; Plane Surface(1) = {1};\n"
                    "Recombine Surface{1};\nPhysical Surface(7) = {1};"
                    " Physical Curve(3) = {1,2};\n")
        subprocess.run(["gmsh", "-2", geo, "-o", os.path.join(OUT, "plate.gmsh.mesh"),
                        "-format", "mesh"], check=True, capture_output=True)


SKIPS = """# hand-written: every construct meshio skips
MeshVersionFormatted
2

Dimension
3
# a comment between sections
Identifier
"skips test"
Vertices
5
0 0 0 1
1 0 0 1
0 1 0 2
0 0 1 2
1 1 1 0
Corners
2
1
2
Ridges
1
1
RequiredVertices
2
1 3
Normals
2
0 0 1
1 0 0
NormalAtVertices
2
1 1
2 2
Tangents
1
1 0 0
Tetrahedra
1
1 2 3 4 17
Hexaedra
1
1 2 3 4 5 5 5 5 0
Triangles
2
1 2 3 4
1 3 4 5
End
this line is after End
"""


def gmf_binary(version, big_endian):
    """MIXED in libMeshb's binary layout: the code word, the version, Dimension, Vertices, an
    unknown keyword (126), Corners, the element sections, End."""
    e = ">" if big_endian else "<"
    i = "q" if version == 4 else "i"
    r = "f" if version == 1 else "d"
    p = "q" if version >= 3 else "i"
    out = bytearray(struct.pack(e + "ii", 1, version))

    def keyword(code, body, count=None):
        head = struct.pack(e + "i", code)
        rest = (struct.pack(e + i, count) if count is not None else b"") + body
        nxt = len(out) + len(head) + struct.calcsize(e + p) + len(rest)
        out.extend(head + struct.pack(e + p, nxt) + rest)

    keyword(3, struct.pack(e + "i", 3))
    verts = b"".join(struct.pack(e + r * 3 + i, *x, ref) for x, ref in zip(POINTS, POINT_REF))
    keyword(4, verts, len(POINTS))
    # Unknown here (skipped by its position); meshio reads it as 13 integers (GmfByteFlow).
    keyword(126, b"\x07" * (13 * struct.calcsize(e + i)), 13)
    keyword(13, struct.pack(e + i * 2, 1, 2), 2)
    for (t, c), ref in zip(MIXED, CELL_REF):
        body = b"".join(struct.pack(e + i * (c.shape[1] + 1), *(row + 1), rf)
                        for row, rf in zip(c, ref))
        keyword(CODES[t], body, len(c))
    out.extend(struct.pack(e + "i" + p, 54, 0))
    return bytes(out)


def main():
    os.makedirs(OUT, exist_ok=True)
    meshio_files()
    gmsh_files()
    with open(os.path.join(OUT, "skips.mesh"), "w") as f:
        f.write(SKIPS)
    for v in (1, 2, 3, 4):
        with open(os.path.join(OUT, f"v{v}.le.meshb"), "wb") as f:
            f.write(gmf_binary(v, False))
    with open(os.path.join(OUT, "v2.be.meshb"), "wb") as f:
        f.write(gmf_binary(2, True))


if __name__ == "__main__":
    main()
