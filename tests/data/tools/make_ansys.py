#!/usr/bin/python3
"""Writes the ANSYS Fluent mesh test files into tests/data/ansys/ (gmsh meshes written by
meshio 5.0's ansys writer, ascii and binary, since gmsh writes no Fluent mesh, and hand-made
files in Fluent's own layout: faces, zones, comments):

    /usr/bin/python3 tests/data/tools/make_ansys.py

meshio-tets[.ascii].msh      gmsh: a tetrahedral box (meshio: binary (3010 / 3012) or ascii).
meshio-mixed[.ascii].msh     meshio: every type meshio writes (triangle, tetra, quad,
                             hexahedron, pyramid, wedge), 3-D points.
meshio-2d[.ascii].msh        gmsh: a square of triangles and quads, 2-D points.
meshio-int32.msh             meshio-mixed with int32 cells (meshio writes 2012 sections).
float32.msh                  meshio's binary layout with (2010) float32 nodes (by hand).
fluent-3d.msh                by hand, Fluent's layout: two hexahedra given by their faces:
                             comments with parentheses, header, (2 3), declarations, two node
                             sections (upper / lower case hex, '(' on the next line), an
                             interior, a wall and a mixed face zone (quads and two
                             triangles), a cell zone without a body, (18), (39), (45).
fluent-2d.crlf.msh           by hand: two quads given by their line faces, CRLF line ends.
fluent-bin.msh               by hand, Fluent's binary layout (bytes right after '('): 3010
                             nodes, 2013 int32 faces, a mixed 3013 zone (meshio refuses it;
                             its readline cannot read this layout at all).
fluent-hybrid[.bin].msh      generated, Fluent's layout, ascii / binary (3010, 2012, 2013):
                             16 unit boxes as hexahedra, pyramids, wedges and tetrahedra,
                             given by their faces alone (a tetra zone without a body, a mixed
                             zone listing its types), zones named; VTK's FLUENT reader is the
                             reference (test_ansys.py).
fluent-2d-cells.msh          generated: 2-D quads and triangles given by their line faces.
fluent-poly.msh              generated: two polyhedra (a box, a pentagonal prism), a polygonal
                             (5) face zone of pentagons.
no-nd.msh                    by hand: a node header without ND (meshio refuses; (2 3) gives it).
bad-node.msh                 by hand: a face naming node 0x20 of 4 (line 6's section).
lying.msh                    by hand: a node count of 2^60 - 1 in a 60-byte file.
reversed.msh                 by hand: nodes first 5 > last 2.
bad-hex.msh                  by hand: a face row with 'g' (line 5).
truncated.bin.msh            meshio-mixed.msh cut inside its cell bodies.
../fuzz/ansys_reader/<file>  fuzz_ansys_reader's seeds: the small files above.
"""
import os
import shutil
import subprocess
import tempfile

import meshio
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ansys")

BOX = """SetFactory("OpenCASCADE");
Box(1) = {0,0,0, 1,1,0.5};
Mesh.CharacteristicLengthMax = 0.35;
"""

SQUARE = """lc = 0.3;
Point(1) = {0,0,0,lc}; Point(2) = {1,0,0,lc}; Point(3) = {1,1,0,lc}; Point(4) = {0,1,0,lc};
Point(5) = {2,0,0,lc}; Point(6) = {2,1,0,lc};
Line(1) = {1,2}; Line(2) = {2,3}; Line(3) = {3,4}; Line(4) = {4,1};
Line(5) = {2,5}; Line(6) = {5,6}; Line(7) = {6,3};
Curve Loop(1) = {1,2,3,4}; Plane Surface(1) = {1};
Curve Loop(2) = {5,6,7,-2}; Plane Surface(2) = {2};
Transfinite Surface{2}; Recombine Surface{2};
"""


def gmsh(geo, dim, types):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "g.geo")
        with open(path, "w") as f:
            f.write(geo)
        out = os.path.join(d, "g.msh")
        subprocess.run(["gmsh", f"-{dim}", path, "-o", out, "-format", "msh41"], check=True,
                       stdout=subprocess.DEVNULL)
        m = meshio.read(out)
    return meshio.Mesh(m.points, [(b.type, b.data) for b in m.cells if b.type in types])


def write(mesh, stem):
    for binary in (False, True):
        name = f"{stem}.msh" if binary else f"{stem}.ascii.msh"
        meshio.write(os.path.join(OUT, name), mesh, file_format="ansys", binary=binary)


def mixed():
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                    [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],
                    [0.5, 0.5, 1.5], [0.5, 0.5, -0.5], [2, 0, 0], [2, 1, 0],
                    [2, 0, 1], [2, 1, 1], [0.25, 0.75, 2.125]])
    cells = [("triangle", [[0, 1, 2], [2, 3, 0]]), ("tetra", [[0, 1, 3, 9], [1, 3, 2, 9]]),
             ("quad", [[0, 1, 5, 4]]), ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]]),
             ("pyramid", [[4, 5, 6, 7, 8]]), ("wedge", [[1, 10, 2, 5, 12, 6]]),
             ("tetra", [[4, 5, 7, 14]])]
    return meshio.Mesh(pts, [(t, np.array(c)) for t, c in cells])


# Node id = 1 + i + 3 j + 6 k at (i, j, k): two unit hexahedra side by side along x.
FLUENT_3D = """(0 "Fluent mesh written by hand (two hexahedra; a comment with (parentheses))")
(1 "meshdock test")

(0 "Dimensions:")
(2 3)
(10 (0 1 c 0 3))
(12 (0 1 2 0))
(13 (0 1 c 0))
(10 (1 1 6 1 3)(
0 0 0
1.0 0 0
2 0 0
0 1 0
1 1 0
2 1 0
))
(10 (2 7 C 1 3)
(
0 0 1.0e0
1 0 1
2 0 1
0 1 1
1 1 1
2 1 1
))
(0 "Cells:")
(12 (5 1 2 1 4))
(0 "Faces:")
(13 (2 1 1 2 4)(
2 5 b 8 1 2
))
(13 (3 2 5 3 4)(
1 7 A 4 1 0
3 6 C 9 2 0
1 2 8 7 1 0
2 3 9 8 2 0
))
(13 (4 6 c 3 0)(
4 4 a b 5 1 0
4 5 b c 6 2 0

4 1 4 5 2 1 0
3 2 5 6 2 0
3 2 6 3 2 0
4 7 8 b a 1 0
4 8 9 c b 2 0
))
(18 (1 1 2 3)(
1 1
))
(39 (5 fluid fluid-1)())
(45 (3 wall walls)())
(45 (4 wall top-and-sides)())
"""

# Node id = 1 + i + 3 j: two unit quads side by side along x, given by their line faces.
FLUENT_2D = """(0 "2-d, CRLF line ends")
(2 2)
(10 (0 1 6 0 2))
(10 (1 1 6 1 2)(
0 0
1 0
2 0
0 1
1 1
2 1
))
(12 (0 1 2 0))
(12 (7 1 2 1 3))
(13 (2 1 1 2 2)(
2 5 1 2
))
(13 (3 2 7 3 2)(
1 2 1 0
2 3 2 0
3 6 2 0
6 5 2 0
5 4 1 0
4 1 1 0
))
(45 (7 fluid surface)())
""".replace("\n", "\r\n")


def fluent_bin():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype="<f8")
    out = b'(1 "Fluent binary layout")\n(2 3)\n(10 (0 1 5 0 3))\n'
    out += b"(3010 (1 1 5 1 3)(" + pts.tobytes() + b")End of Binary Section   3010)\n"
    # A fixed triangle zone (int32 rows n0 n1 n2 c0 c1), then a mixed one (type n.. c0 c1).
    tri = np.array([[1, 2, 3, 1, 0], [1, 3, 4, 1, 0]], dtype="<i4")
    out += b"(2013 (3 1 2 3 3)(" + tri.tobytes() + b")End of Binary Section   2013)\n"
    mixed = np.array([3, 1, 2, 4, 1, 0, 4, 2, 3, 4, 5, 1, 2, 3, 2, 5, 4, 2, 0, 2, 3, 1, 1, 0],
                     dtype="<i8")
    out += b"(3013 (4 3 6 3 0)(" + mixed.tobytes() + b")End of Binary Section   3013)\n"
    out += b"(12 (2 1 2 1 2))\n"
    return out


# A hybrid 3-D mesh in Fluent's layout, its cells given by their faces alone (as Fluent writes
# every mesh): a grid of 4 x 2 x 2 unit boxes, by x: a hexahedron; six pyramids around the
# box's centre; two wedges (split by the plane through its (x0, z0) and (x1, z1) edges); and
# pyramids (faces shared with the wedges) and tetrahedra (the other faces, each split by its
# lowest-to-highest corner diagonal, the same from either side) around the centre. Shared faces
# agree on both sides, so every face bounds one or two cells.
def hybrid_cells():
    nx, ny, nz = 4, 2, 2
    pts = [(i, j, k) for k in range(nz + 1) for j in range(ny + 1) for i in range(nx + 1)]

    def c(i, j, k):
        return i + (nx + 1) * (j + (ny + 1) * k)

    cells = []  # (fluent element type, nodes)
    for k in range(nz):
        for j in range(ny):
            for i in range(nx):
                v = [c(i + a, j + b, k + d) for d in (0, 1) for b in (0, 1) for a in (0, 1)]
                # v: 000 100 010 110 001 101 011 111 ((x, y, z) offsets)
                box = [v[0], v[1], v[3], v[2], v[4], v[5], v[7], v[6]]
                faces = [(v[0], v[2], v[3], v[1]), (v[4], v[5], v[7], v[6]),
                         (v[0], v[1], v[5], v[4]), (v[2], v[6], v[7], v[3]),
                         (v[0], v[4], v[6], v[2]), (v[1], v[3], v[7], v[5])]
                if i == 0:
                    cells.append((4, box))
                elif i in (1, 3):
                    pts.append((i + 0.5, j + 0.5, k + 0.5))
                    m = len(pts) - 1
                    for f in faces:
                        if i == 1 or f == faces[4]:  # i 3: its x- face is the wedges'
                            cells.append((5, list(f) + [m]))
                            continue
                        a = f.index(min(f))
                        q = f[a:] + f[:a]
                        cells.append((2, [q[0], q[1], q[2], m]))
                        cells.append((2, [q[0], q[2], q[3], m]))
                else:
                    cells.append((6, [v[0], v[1], v[5], v[2], v[3], v[7]]))
                    cells.append((6, [v[0], v[5], v[4], v[2], v[7], v[6]]))
    return np.array(pts, dtype=float), cells


def local_faces(t, n):
    if t == 2:
        a, b, c_, d = n
        return [(a, b, c_), (a, b, d), (b, c_, d), (a, c_, d)]
    if t == 5:
        a, b, c_, d, e = n
        return [(a, b, c_, d), (a, b, e), (b, c_, e), (c_, d, e), (d, a, e)]
    if t == 6:
        a, b, c_, d, e, f = n
        return [(a, b, c_), (d, e, f), (a, b, e, d), (b, c_, f, e), (c_, a, d, f)]
    if t == 4:
        a, b, c_, d, e, f, g, h = n
        return [(a, b, c_, d), (e, f, g, h), (a, b, f, e), (b, c_, g, f), (c_, d, h, g),
                (d, a, e, h)]
    if t in (1, 3):
        return [(n[i], n[(i + 1) % len(n)]) for i in range(len(n))]
    if t == 7:  # a polyhedron: its faces
        return [tuple(f) for f in n]
    raise ValueError(t)


def fluent_faces(pts, cells):
    """Each face once: its nodes ordered so that the right-hand normal points into c0 (Fluent's
    rule: c0 is the cell on the right of the face, and VTK's reader builds cells so; into the
    domain on the boundary), c0, c1 (1-based cell ids, c1 0 on the boundary)."""
    found = {}
    for cid, (t, n) in enumerate(cells, start=1):
        centre = pts[sorted({v for f in n for v in f}) if t == 7 else n].mean(axis=0)
        for f in local_faces(t, n):
            key = frozenset(f)
            if key in found:
                assert found[key][2] == 0, f
                found[key][2] = cid
                continue
            f = list(f)
            if len(f) >= 3:
                p = pts[f]
                normal = np.cross(p[1] - p[0], p[2] - p[0])
                if np.dot(normal, p.mean(axis=0) - centre) > 0:
                    f.reverse()
            else:  # 2-D: the edge's right-hand normal (dy, -dx)
                d = pts[f[1]] - pts[f[0]]
                mid = pts[f].mean(axis=0)
                if d[1] * (mid[0] - centre[0]) - d[0] * (mid[1] - centre[1]) > 0:
                    f.reverse()
            found[key] = [f, cid, 0]
    return list(found.values())


def fluent_text(pts, cells, tet_zone, binary):
    """Fluent's layout: declarations, one node zone, a tetra cell zone (ids 1..tet_zone) and a
    mixed one (the rest, its types listed), an interior face zone (mixed), the boundary split
    into an x = 0 wall (quads) and the rest (mixed), zone names."""
    nd = pts.shape[1]
    faces = fluent_faces(pts, cells)
    interior = [f for f in faces if f[2] != 0]
    wall = [f for f in faces if f[2] == 0 and all(pts[n][0] == 0 for n in f[0])]
    outer = [f for f in faces if f[2] == 0 and f not in wall]
    # Polygons: a polygonal (5) zone of their own where the outer zone has quads too.
    polygons = [f for f in outer if len(f[0]) > 4]
    if polygons:
        outer = [f for f in outer if len(f[0]) <= 4]
    hx = lambda v: format(v, "x")
    out = [b'(0 "meshdock test: cells given by their faces")\n', b"(2 %d)\n" % nd,
           b"(10 (0 1 %s 0 %d))\n" % (hx(len(pts)).encode(), nd),
           b"(12 (0 1 %s 0))\n" % hx(len(cells)).encode(),
           b"(13 (0 1 %s 0))\n" % hx(len(faces)).encode()]
    if binary:
        out.append(b"(3010 (1 1 %s 1 %d)(" % (hx(len(pts)).encode(), nd) +
                   pts.astype("<f8").tobytes() + b")End of Binary Section 3010)\n")
    else:
        out.append(b"(10 (1 1 %s 1 %d)(\n" % (hx(len(pts)).encode(), nd) +
                   "".join(" ".join(repr(float(x)) for x in p) + "\n" for p in pts).encode()
                   + b"))\n")
    n = len(cells)
    if tet_zone:
        out.append(b"(12 (2 1 %s 1 %d))\n" % (hx(tet_zone).encode(), cells[0][0]))
    types = [t for t, _ in cells[tet_zone:]]
    head = b"(%s (3 %s %s 1 0)(" % (b"2012" if binary else b"12", hx(tet_zone + 1).encode(),
                                      hx(n).encode())
    if len(set(types)) == 1:  # one type: no body (Fluent's usual)
        out.append(b"(12 (3 %s %s 1 %d))\n" % (hx(tet_zone + 1).encode(), hx(n).encode(),
                                                types[0]))
    elif binary:
        out.append(head + np.array(types, dtype="<i4").tobytes() +
                   b")End of Binary Section 2012)\n")
    else:
        out.append(head + b"\n" + " ".join(hx(t) for t in types).encode() + b"\n))\n")
    first = 1
    for zone, bc, rows in ((4, 2, interior), (5, 3, wall), (6, 3, outer), (7, 3, polygons)):
        if not rows:
            continue
        kinds = {len(f[0]) for f in rows}
        mixed = len(kinds) > 1 or max(kinds) > 4
        et = 0 if len(kinds) > 1 else 5 if max(kinds) > 4 else kinds.pop()
        vals = []
        for f, c0, c1 in rows:
            vals.append(([len(f)] if mixed else []) + [v + 1 for v in f] + [c0, c1])
        last = first + len(rows) - 1
        head = b"(%s (%s %s %s %s %s)(" % (b"2013" if binary else b"13", hx(zone).encode(),
                                          hx(first).encode(), hx(last).encode(),
                                          hx(bc).encode(), hx(et).encode())
        if binary:
            out.append(head + np.array([x for r in vals for x in r], dtype="<i4").tobytes()
                       + b")End of Binary Section 2013)\n")
        else:
            out.append(head + b"\n" + "".join(" ".join(hx(x) for x in r) + "\n"
                                              for r in vals).encode() + b"))\n")
        first = last + 1
    names = [(2, "fluid", "tets"), (3, "fluid", "hybrid"), (4, "interior", "int_fluid"),
             (5, "wall", "inlet-wall"), (6, "wall", "outer")] + (
                 [(7, "wall", "pentagons")] if polygons else [])
    if not tet_zone:
        names = names[1:]
    out += [b"(45 (%s %s %s)())\n" % (hx(z).encode(), k.encode(), nm.encode())
            for z, k, nm in names]
    return b"".join(out)


def hybrid(binary):
    pts, cells = hybrid_cells()
    # Tetrahedra first: their own zone; the rest a mixed zone.
    cells = [c for c in cells if c[0] == 2] + [c for c in cells if c[0] != 2]
    tets = sum(1 for c in cells if c[0] == 2)
    return fluent_text(pts, cells, tets, binary)


# Polyhedra (a zone of element type 7, no body): the unit box and, beside it, a pentagonal
# prism sharing its x = 1 face; the prism's pentagons a polygonal (5) face zone.
def poly():
    pts = np.array([(x, y, z) for z in (0, 1) for y in (0, 1) for x in (0, 1)]
                   + [(2, 0, 0), (2.5, 0.5, 0), (2, 1, 0), (2, 0, 1), (2.5, 0.5, 1), (2, 1, 1)],
                   dtype=float)
    box = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
    prism = [(1, 8, 9, 10, 3), (5, 11, 12, 13, 7), (1, 8, 11, 5), (8, 9, 12, 11),
             (9, 10, 13, 12), (10, 3, 7, 13), (3, 1, 5, 7)]
    return fluent_text(pts, [(7, box), (7, prism)], 0, False)


# A 2-D mixed zone: a 3 x 2 grid of unit squares, the middle column split into triangles.
def cells_2d():
    pts = np.array([(i, j) for j in range(3) for i in range(4)], dtype=float)
    cells = []
    for j in range(2):
        for i in range(3):
            a, b, c_, d = i + 4 * j, i + 1 + 4 * j, i + 5 + 4 * j, i + 4 + 4 * j
            if i == 1:
                cells += [(1, [a, b, c_]), (1, [a, c_, d])]
            else:
                cells.append((3, [a, b, c_, d]))
    return fluent_text(pts, cells, 0, False)


def float32():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.5]], dtype="<f4")
    out = b'(1 "float32 nodes")\n(2 3)\n(10 (0 1 4 0))\n(12 (0 1 1 0))\n'
    out += b"(2010 (1 1 4 1 3)(\n" + pts.tobytes() + b"\n)End of Binary Section 2010)\n"
    cells = np.array([[1, 2, 3, 4]], dtype="<i8")
    out += b"(3012 (1 1 1 1 2)(\n" + cells.tobytes() + b"\n)End of Binary Section 3012)\n"
    return out


NO_ND = """(2 3)
(10 (1 1 3 1)(
0 0 0
1 0 0
0 1 0
))
(13 (2 1 1 3 3)(
1 2 3 1 0
))
"""

BAD_NODE = """(2 3)
(10 (1 1 3 1 3)(
0 0 0 1 0 0 0 1 0
))
(0 "a face naming node 20 (hex) of 1..3")
(13 (2 1 1 3 3)(
1 2 20 1 0
))
"""

LYING = """(10 (1 1 fffffffffffffff 1 3)(
0 0 0
))
"""

REVERSED = """(10 (1 5 2 1 3)(
0 0 0
))
"""

BAD_HEX = """(10 (1 1 3 1 3)(
0 0 0 1 0 0 0 1 0
))
(13 (2 1 1 3 3)(
1 2 g 1 0
))
"""


def main():
    os.makedirs(OUT, exist_ok=True)
    write(gmsh(BOX, 3, ("tetra",)), "meshio-tets")
    write(mixed(), "meshio-mixed")
    sq = gmsh(SQUARE, 2, ("triangle", "quad"))
    write(meshio.Mesh(sq.points[:, :2], sq.cells), "meshio-2d")
    m = mixed()
    meshio.write(os.path.join(OUT, "meshio-int32.msh"),
                 meshio.Mesh(m.points, [(b.type, b.data.astype(np.int32)) for b in m.cells]),
                 file_format="ansys")
    files = {"float32.msh": float32(), "fluent-3d.msh": FLUENT_3D.encode(),
             "fluent-2d.crlf.msh": FLUENT_2D.encode(), "fluent-bin.msh": fluent_bin(),
             "no-nd.msh": NO_ND.encode(), "bad-node.msh": BAD_NODE.encode(),
             "lying.msh": LYING.encode(), "reversed.msh": REVERSED.encode(),
             "bad-hex.msh": BAD_HEX.encode(), "fluent-hybrid.msh": hybrid(False),
             "fluent-hybrid.bin.msh": hybrid(True), "fluent-2d-cells.msh": cells_2d(),
             "fluent-poly.msh": poly()}
    with open(os.path.join(OUT, "meshio-mixed.msh"), "rb") as f:
        files["truncated.bin.msh"] = f.read()[:700]
    for name, data in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    seeds = os.path.join(OUT, "..", "fuzz", "ansys_reader")
    os.makedirs(seeds, exist_ok=True)
    for name in ["fluent-3d.msh", "fluent-2d.crlf.msh", "fluent-bin.msh", "float32.msh",
                 "fluent-hybrid.msh", "fluent-hybrid.bin.msh", "fluent-2d-cells.msh",
                 "fluent-poly.msh",
                 "meshio-mixed.msh", "meshio-mixed.ascii.msh", "meshio-int32.msh", "no-nd.msh",
                 "lying.msh", "truncated.bin.msh", "bad-node.msh"]:
        shutil.copy(os.path.join(OUT, name), os.path.join(seeds, name))


if __name__ == "__main__":
    main()
