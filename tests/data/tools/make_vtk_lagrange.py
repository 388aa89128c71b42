#!/usr/bin/python3
"""Writes VTK's arbitrary-order cells (what dolfinx / FEniCSx and ParaView write for higher-order
meshes) into tests/data/meshes/ with VTK 9.1's own writers:

    /usr/bin/python3 tests/data/tools/make_vtk_lagrange.py

lagrange.{ascii,bin}.vtk, lagrange.vtk-{ascii,raw}.vtu   an unstructured grid of Lagrange curves
    of order 2 and 3, triangles of order 2 (two) and 3, a quadrilateral of order 2, a
    tetrahedron of order 2, a hexahedron of order 2, a wedge of order 2, then a linear
    triangle (VTK types 68 68 69 69 69 70 71 72 73 5), and in the .vtu a Bezier triangle of
    order 2 (76) before the last, with HigherOrderDegrees cell data (3 components; int64, which
    meshio 5.0 reads in binary legacy files where it misreads VTK's "int") and a point field.
    VTK writes the .vtu as file version 2.2, which meshio 5.0 refuses; meshio reads the .vtk
    (it has no Bezier block: KeyError).
tests/python/test_vtk_legacy.py reads them with VTK and meshio and compares with meshdock."""
import pathlib
import sys

import numpy as np
import vtk
from vtk.util import numpy_support as ns

OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                   pathlib.Path(__file__).resolve().parents[1] / "meshes")

# (VTK type, point ids, degrees): every cell's node count is what its order gives.
CELLS = [
    (68, [0, 1, 2], (2, 0, 0)),
    (68, [2, 3, 4, 5], (3, 0, 0)),
    (69, [0, 1, 2, 3, 4, 5], (2, 2, 0)),
    (69, [6, 7, 8, 9, 10, 11], (2, 2, 0)),
    (69, list(range(10, 20)), (3, 3, 0)),
    (70, list(range(0, 9)), (2, 2, 0)),
    (71, list(range(20, 30)), (2, 2, 2)),
    (72, list(range(0, 27)), (2, 2, 2)),
    (73, list(range(12, 30)), (2, 2, 2)),
    (76, [30, 31, 32, 33, 34, 35], (2, 2, 0)),
    (5, [36, 37, 38], (1, 1, 0)),
]


def grid(bezier):
    pts = vtk.vtkPoints()
    pts.SetDataTypeToDouble()
    xyz = np.random.default_rng(68).random((40, 3))
    for p in xyz:
        pts.InsertNextPoint(*p)
    g = vtk.vtkUnstructuredGrid()
    g.SetPoints(pts)
    cells = [c for c in CELLS if bezier or c[0] != 76]
    for t, ids, _ in cells:
        lst = vtk.vtkIdList()
        for i in ids:
            lst.InsertNextId(i)
        g.InsertNextCell(t, lst)
    deg = ns.numpy_to_vtk(np.array([d for _, _, d in cells], dtype=np.int64), deep=True)
    deg.SetName("HigherOrderDegrees")
    g.GetCellData().AddArray(deg)
    x = ns.numpy_to_vtk(np.ascontiguousarray(xyz[:, 0]), deep=True)
    x.SetName("x")
    g.GetPointData().AddArray(x)
    return g


if __name__ == "__main__":
    g = grid(bezier=False)
    for mode, suffix in (("ascii", "ascii"), ("binary", "bin")):
        w = vtk.vtkUnstructuredGridWriter()
        w.SetInputData(g)
        w.SetFileName(str(OUT / f"lagrange.{suffix}.vtk"))
        w.SetFileTypeToBinary() if mode == "binary" else w.SetFileTypeToASCII()
        w.Write()
    g = grid(bezier=True)
    for mode in ("ascii", "raw"):
        w = vtk.vtkXMLUnstructuredGridWriter()
        w.SetInputData(g)
        w.SetFileName(str(OUT / f"lagrange.vtk-{mode}.vtu"))
        if mode == "ascii":
            w.SetDataModeToAscii()
        else:
            w.SetDataModeToAppended()
            w.EncodeAppendedDataOff()
            w.SetCompressorTypeToNone()
        w.Write()
