#!/usr/bin/python3
"""Writes the DOLFIN XML test files into tests/data/dolfin/, with legacy DOLFIN itself (Debian
12's python3-dolfin 2019.2, installed only to make them: the tests do not need it) and meshio
5.0's dolfin-xml writer:

    /usr/bin/python3 tests/data/tools/make_dolfin.py

Every marker is a function of the geometry, so that the tests check it from the points alone:

cube.xml                DOLFIN: UnitCubeMesh(2, 2, 2) (48 tetrahedra) with <domains>: every
                        cell marked 1 (centroid x < 0.5) or 2; facets on x = 0 marked 7, on
                        x = 1 marked 9 (dim 2).
cube_subdomains.xml     DOLFIN 2017+'s mesh function form: the cells, 1 / 2 as above (size_t).
cube_boundaries.xml     the facets: 7 on x = 0, 9 on x = 1, 0 elsewhere (every cell's four).
cube_temperature.xml    the vertices: x + 2y + 3z (double).
cube_edges.xml          the edges (dim 1): -1 (int): meshdock notes them, not read.
cube_coarse.xml         a second DOLFIN mesh (UnitCubeMesh(1, 1, 1)) named like a mesh
                        function of cube.xml: noted, skipped.
square.xml              DOLFIN: UnitSquareMesh(2, 2), points (n, 2), <domains> marking only
                        some entities: cells with centroid y > 0.5 -> 3, facets on y = 0 -> 4,
                        vertices on x = 0 -> 5.
interval.xml            DOLFIN: UnitIntervalMesh(4), <domains> vertices x = 0 -> 1, x = 1 -> 2.
meshio-tet.xml          meshio's writer: a tetrahedral box (gmsh's tests/data/meshes/box.v41.msh
                        tetrahedra), cell data "material" (int64: 1 + cell index % 3) in
                        meshio-tet_material.xml (the old <mesh_function> form meshio writes).
meshio-tri.xml          meshio's writer: triangles with 2-D points, cell data "heat" (float64)
                        in meshio-tri_heat.xml.
../fuzz/dolfin_reader/  fuzz_dolfin_reader's seeds: cube.xml, square.xml, interval.xml,
                        meshio-tet_material.xml, square.xml.gz, a few broken files, and *.pair: a mesh, a NUL
                        and a mesh function (of it, or of another mesh: square+cube_subdomains).
"""
import gzip
import os
import shutil

import dolfin as df
import meshio
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "dolfin")
FUZZ = os.path.join(HERE, "..", "fuzz", "dolfin_reader")


def check_local_facets(mesh):
    """DOLFIN's local facet k of a simplex is the one opposite vertex k (what meshdock's side
    regions say): checked on every cell."""
    tdim = mesh.topology().dim()
    mesh.init(tdim - 1, 0)
    for c in df.cells(mesh):
        vs = list(c.entities(0))
        for k, f in enumerate(c.entities(tdim - 1)):
            facet = set(df.Facet(mesh, int(f)).entities(0))
            assert facet == set(vs) - {vs[k]}, (c.index(), k)


def cube():
    m = df.UnitCubeMesh(2, 2, 2)
    check_local_facets(m)
    cf = df.MeshFunction("size_t", m, 3, 0)
    for c in df.cells(m):
        cf[c] = 1 if c.midpoint().x() < 0.5 else 2
    ff = df.MeshFunction("size_t", m, 2, 0)
    df.CompiledSubDomain("near(x[0], 0.0) && on_boundary").mark(ff, 7)
    df.CompiledSubDomain("near(x[0], 1.0) && on_boundary").mark(ff, 9)
    for c in df.cells(m):
        m.domains().set_marker((c.index(), cf[c]), 3)
    for f in df.facets(m):
        if ff[f]:
            m.domains().set_marker((f.index(), ff[f]), 2)
    vf = df.MeshFunction("double", m, 0, 0.0)
    for v in df.vertices(m):
        p = v.point()
        vf[v] = p.x() + 2 * p.y() + 3 * p.z()
    ef = df.MeshFunction("int", m, 1, -1)
    df.File(os.path.join(OUT, "cube.xml")) << m
    df.File(os.path.join(OUT, "cube_subdomains.xml")) << cf
    df.File(os.path.join(OUT, "cube_boundaries.xml")) << ff
    df.File(os.path.join(OUT, "cube_temperature.xml")) << vf
    df.File(os.path.join(OUT, "cube_edges.xml")) << ef
    df.File(os.path.join(OUT, "cube_coarse.xml")) << df.UnitCubeMesh(1, 1, 1)


def square():
    m = df.UnitSquareMesh(2, 2)
    check_local_facets(m)
    for c in df.cells(m):
        if c.midpoint().y() > 0.5:
            m.domains().set_marker((c.index(), 3), 2)
    ff = df.MeshFunction("size_t", m, 1, 0)
    df.CompiledSubDomain("near(x[1], 0.0) && on_boundary").mark(ff, 4)
    for f in df.facets(m):
        if ff[f]:
            m.domains().set_marker((f.index(), 4), 1)
    for v in df.vertices(m):
        if abs(v.point().x()) < 1e-12:
            m.domains().set_marker((v.index(), 5), 0)
    df.File(os.path.join(OUT, "square.xml")) << m


def interval():
    m = df.UnitIntervalMesh(4)
    for v in df.vertices(m):
        x = v.point().x()
        if x in (0.0, 1.0):
            m.domains().set_marker((v.index(), 1 if x == 0.0 else 2), 0)
    df.File(os.path.join(OUT, "interval.xml")) << m


def with_meshio():
    box = meshio.read(os.path.join(HERE, "..", "meshes", "box.v41.msh"))
    tets = box.get_cells_type("tetra")
    material = 1 + np.arange(len(tets), dtype=np.int64) % 3
    meshio.write(os.path.join(OUT, "meshio-tet.xml"),
                 meshio.Mesh(box.points, [("tetra", tets)], cell_data={"material": [material]}),
                 file_format="dolfin-xml")
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.5, 0.5]])
    tris = np.array([[0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]])
    heat = np.array([0.25, 1.5, -2.0, 1e-3])
    meshio.write(os.path.join(OUT, "meshio-tri.xml"),
                 meshio.Mesh(pts, [("triangle", tris)], cell_data={"heat": [heat]}),
                 file_format="dolfin-xml")


BROKEN = {
    "vertex-twice.xml": """<dolfin><mesh celltype="triangle" dim="2"><vertices size="3">
<vertex index="0" x="0" y="0"/><vertex index="0" x="1" y="0"/><vertex index="2" x="0" y="1"/>
</vertices><cells size="1"><triangle index="0" v0="0" v1="1" v2="2"/></cells></mesh></dolfin>
""",
    "bad-vertex-id.xml": """<dolfin><mesh celltype="triangle" dim="2"><vertices size="3">
<vertex index="0" x="0" y="0"/><vertex index="1" x="1" y="0"/><vertex index="2" x="0" y="1"/>
</vertices><cells size="1"><triangle index="0" v0="0" v1="1" v2="3"/></cells></mesh></dolfin>
""",
    "lying-size.xml": """<dolfin><mesh celltype="tetrahedron" dim="3">
<vertices size="999999999999"><vertex index="0" x="0" y="0" z="0"/></vertices></mesh></dolfin>
""",
    "bad-local.xml": """<dolfin><mesh celltype="triangle" dim="2"><vertices size="3">
<vertex index="0" x="0" y="0"/><vertex index="1" x="1" y="0"/><vertex index="2" x="0" y="1"/>
</vertices><cells size="1"><triangle index="0" v0="0" v1="1" v2="2"/></cells><domains>
<mesh_value_collection name="m" type="uint" dim="1" size="2">
<value cell_index="0" local_entity="1" value="4"/><value cell_index="0" local_entity="3" value="4"/>
</mesh_value_collection></domains></mesh></dolfin>
""",
}


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    cube()
    square()
    interval()
    with_meshio()
    os.makedirs(FUZZ, exist_ok=True)
    for f in ("cube.xml", "square.xml", "interval.xml", "meshio-tet_material.xml"):
        shutil.copy(os.path.join(OUT, f), os.path.join(FUZZ, f))
    # A mesh, a NUL and a mesh function of it (fuzz_dolfin_reader reads the second as x_f.xml).
    for mesh, function in (("cube.xml", "cube_boundaries.xml"), ("square.xml", None),
                           ("meshio-tri.xml", "meshio-tri_heat.xml"),
                           ("cube.xml", "cube_temperature.xml")):
        function = function or "cube_subdomains.xml"
        with open(os.path.join(FUZZ, f"{mesh[:-4]}+{function[:-4]}.pair"), "wb") as f:
            for k, part in enumerate((mesh, function)):
                with open(os.path.join(OUT, part), "rb") as g:
                    f.write((b"\0" if k else b"") + g.read())
    with open(os.path.join(OUT, "square.xml"), "rb") as f, \
            gzip.GzipFile(os.path.join(FUZZ, "square.xml.gz"), "wb", mtime=0) as g:
        g.write(f.read())
    for name, text in BROKEN.items():
        with open(os.path.join(FUZZ, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
