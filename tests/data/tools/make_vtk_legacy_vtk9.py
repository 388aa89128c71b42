#!/usr/bin/python3
"""Writes legacy VTK files with what VTK 9.1's own writer puts in them beyond plain arrays into
tests/data/meshes/, ascii and binary:

    /usr/bin/python3 tests/data/tools/make_vtk_legacy_vtk9.py

v9names.*    names VTK %XX-encodes (spaces, '%', UTF-8) on point SCALARS, a cell array, a
             dataset FIELD array and point-data FIELD arrays, with METADATA blocks (ranges
             computed: INFORMATION; COMPONENT_NAMES) after POINTS, attributes and FIELD arrays;
             float POINTS whose ascii digits are not float32 values.
v9types.*    vtkIdType GLOBAL_IDS and FIELD array (4-byte ints in binary), a bit array (packed
             in binary), signed_char, uint64 past 2**63, a string array and string
             PEDIGREE_IDS (which meshdock skips).
v9poly.v42.* / v9poly.v51.*  a tetrahedron, a cube polyhedron, a triangle strip, a pyramid-shaped
             polyhedron (face streams inline in CELLS, as VTK 9.1 writes them), with cell data.
v9lower.vtk  a hand-written ascii 5.1 file with every keyword and type name in lower case
             (VTK's reader compares them case-insensitively).
"""
import os
import sys

import numpy as np
import vtk

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_vtk_legacy  # noqa: E402
from make_vtk_legacy import OUT, arr  # noqa: E402


def write(data, stem, version=None):
    make_vtk_legacy.write(vtk.vtkUnstructuredGridWriter, data, stem, version)


def grid(npts, cells):
    g = vtk.vtkUnstructuredGrid()
    pts = vtk.vtkPoints()
    pts.SetDataTypeToFloat()
    rng = np.random.default_rng(9)
    for p in rng.random((npts, 3)):
        pts.InsertNextPoint(*p)
    g.SetPoints(pts)
    for t, ids in cells:
        lst = vtk.vtkIdList()
        for i in ids:
            lst.InsertNextId(i)
        g.InsertNextCell(t, lst)
    return g


def names():
    g = grid(6, [(vtk.VTK_TETRA, (0, 1, 2, 3)), (vtk.VTK_TETRA, (1, 2, 3, 4)),
                 (vtk.VTK_TRIANGLE, (3, 4, 5))])
    g.GetPoints().GetData().GetRange(0)  # a METADATA block after POINTS
    s = arr(np.linspace(-1, 1, 6), "wall temperature")
    s.GetRange(0)
    g.GetPointData().SetScalars(s)
    n = arr(np.arange(18, dtype=np.float32).reshape(6, 3) / 7, "surface normals")
    for k, c in enumerate(("n x", "n_ü", "")):  # the third left unnamed
        if c:
            n.SetComponentName(k, c)
    g.GetPointData().SetNormals(n)
    for name, col in (("a b", 1), ("c%d", 3)):  # two plain arrays: a point-data FIELD
        a = arr(np.arange(6 * col, dtype=np.float64).reshape(6, col).squeeze() + 0.5, name)
        a.GetRange(-1)
        g.GetPointData().AddArray(a)
    g.GetPointData().GetArray("c%d").SetComponentName(1, "mid dle")
    c = arr(np.array([7, -8, 9], dtype=np.int32), "Druck_ü")
    c.GetRange(0)
    g.GetCellData().AddArray(c)
    f = arr(np.array([1.5, 2.5, 3.5]), "100% \"sure\"")
    f.GetRange(0)
    g.GetFieldData().AddArray(f)
    write(g, "v9names")


def types():
    g = grid(5, [(vtk.VTK_TETRA, (0, 1, 2, 3)), (vtk.VTK_TETRA, (1, 2, 3, 4))])
    pd, cd = g.GetPointData(), g.GetCellData()
    pd.SetGlobalIds(arr(np.array([100, 101, 2 ** 31 - 1, -5, 7], dtype=np.int64), "gid",
                        vtk.VTK_ID_TYPE))
    pd.AddArray(arr(np.array([5, 4, 3, 2, 1], dtype=np.int64), "ids", vtk.VTK_ID_TYPE))
    b = vtk.vtkBitArray()
    b.SetName("bits")
    b.SetNumberOfComponents(2)  # 10 bits: a byte and a padded one
    for v in (1, 0, 1, 1, 0, 0, 1, 0, 0, 1):
        b.InsertNextValue(v)
    pd.AddArray(b)
    sc = vtk.vtkSignedCharArray()
    sc.SetName("sc")
    for v in (-128, -1, 0, 1, 127):
        sc.InsertNextValue(v)
    pd.AddArray(sc)
    pd.AddArray(arr(np.arange(5, dtype=np.uint64) + np.uint64(2 ** 63 + 10), "u64"))
    s = vtk.vtkStringArray()
    s.SetName("labels")
    for v in ("first cell", ""):
        s.InsertNextValue(v)
    cd.AddArray(s)
    p = vtk.vtkStringArray()
    p.SetName("pid")
    for v in ("p0", "a much longer pedigree id to take more than sixty-three bytes of its own..."):
        p.InsertNextValue(v)
    cd.SetPedigreeIds(p)
    cd.AddArray(arr(np.array([3.25, -1.0]), "after"))
    write(g, "v9types")


def poly():
    pts = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1),
           (0, 1, 1), (0.5, 0.5, 2), (2, 0, 0), (2, 1, 0)]
    g = vtk.vtkUnstructuredGrid()
    p = vtk.vtkPoints()
    for x in pts:
        p.InsertNextPoint(*x)
    g.SetPoints(p)

    def cell(t, ids):
        lst = vtk.vtkIdList()
        for i in ids:
            lst.InsertNextId(i)
        g.InsertNextCell(t, lst)

    def polyhedron(faces):
        stream = [len(faces)]
        for f in faces:
            stream += [len(f)] + list(f)
        cell(vtk.VTK_POLYHEDRON, stream)

    cell(vtk.VTK_TETRA, (0, 1, 3, 4))
    polyhedron([(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)])
    cell(vtk.VTK_TRIANGLE_STRIP, (1, 9, 2, 10))
    polyhedron([(7, 6, 5, 4), (4, 5, 8), (5, 6, 8), (6, 7, 8), (7, 4, 8)])
    g.GetCellData().AddArray(arr(np.array([10, 20, 30, 40], dtype=np.int32), "mat"))
    write(g, "v9poly.v42", 42)
    write(g, "v9poly.v51")


LOWER = """# vtk DataFile Version 5.1
lower case
ascii
dataset unstructured_grid
points 5 float
0 0 0 1 0 0 0 1 0 0 0 1 1 1 1
metadata
information 0

cells 3 7
offsets vtktypeint64
0 4 7
connectivity vtkidtype
0 1 2 3 1 2 4
cell_types 2
10
5
point_data 5
scalars temp double 1
lookup_table default
1 2 3 4 5
vectors vel float
1 0 0 0 1 0 0 0 1 1 1 1 0 0 0
cell_data 2
field fielddata 1
Mat%20id 1 2 int
7 8
"""


if __name__ == "__main__":
    names()
    types()
    poly()
    with open(os.path.join(OUT, "v9lower.vtk"), "w") as f:
        f.write(LOWER)
