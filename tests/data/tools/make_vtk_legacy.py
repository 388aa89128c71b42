#!/usr/bin/python3
"""Writes the small legacy VTK files (non-UNSTRUCTURED_GRID datasets and the cell types that need
conversion) into tests/data/meshes/ with VTK 9.1's own writers, ascii and binary:

    /usr/bin/python3 tests/data/tools/make_vtk_legacy.py

poly.*       POLYDATA: 2 vertices (one poly-vertex), lines + a poly-line, triangle, quad,
             pentagon, a triangle strip; point scalars, cell vectors, point TENSORS,
             COLOR_SCALARS.
spts.*       STRUCTURED_POINTS 3x4x2 (hexahedra) with point and cell scalars.
sgrid.*      STRUCTURED_GRID 3x2x1 (quads) with point vectors.
rgrid.*      RECTILINEAR_GRID 4x3x2 (hexahedra) with cell data.
ucells.*     UNSTRUCTURED_GRID with vertex, poly-vertex, poly-line, triangle-strip, voxel.
"""
import os
import sys

import vtk
from vtk.util import numpy_support as ns
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "meshes")


def write(writer_cls, data, stem, version=None):
    """`stem`.ascii.vtk and `stem`.bin.vtk by VTK's `writer_cls` (file version `version`)."""
    for mode, suffix in (("ascii", "ascii"), ("binary", "bin")):
        w = writer_cls()
        w.SetInputData(data)
        w.SetFileName(os.path.join(OUT, f"{stem}.{suffix}.vtk"))
        if version:
            w.SetFileVersion(version)
        w.SetFileTypeToBinary() if mode == "binary" else w.SetFileTypeToASCII()
        w.Write()


def arr(a, name, vtk_type=None):
    v = ns.numpy_to_vtk(np.ascontiguousarray(a), deep=True, array_type=vtk_type)
    v.SetName(name)
    return v


def polydata():
    pd = vtk.vtkPolyData()
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0], [2, 1, 0.5],
                    [3, 0, 0], [3, 1, 0], [4, 0, 0.25], [4, 1, 0], [5, 0, 0], [5, 1, 1]],
                   dtype=np.float32)
    p = vtk.vtkPoints()
    p.SetData(arr(pts, "pts"))
    pd.SetPoints(p)

    def cells(lists):
        ca = vtk.vtkCellArray()
        for ids in lists:
            ca.InsertNextCell(len(ids), ids)
        return ca
    pd.SetVerts(cells([[0], [5, 7, 9]]))
    pd.SetLines(cells([[0, 1], [1, 4, 6, 8], [2, 3]]))
    pd.SetPolys(cells([[0, 1, 2], [1, 4, 5, 2], [4, 6, 7, 5, 2], [6, 8, 9]]))
    pd.SetStrips(cells([[6, 7, 8, 9, 10, 11], [0, 1, 3, 2]]))
    n = len(pts)
    pd.GetPointData().AddArray(arr(np.arange(n, dtype=np.float64) * 0.5, "temp"))
    pd.GetPointData().SetTensors(arr(np.arange(9 * n, dtype=np.float32).reshape(n, 9), "stress"))
    ncells = 2 + 3 + 4 + 2
    # unsigned char scalars are written as COLOR_SCALARS (floats in ascii); a lookup table on
    # the cell scalars makes a standalone LOOKUP_TABLE section.
    colors = ((np.arange(4 * ncells) * 7) % 256).astype(np.uint8).reshape(ncells, 4)
    pd.GetCellData().SetScalars(arr(colors, "rgba"))
    level = arr(np.arange(n, dtype=np.float32) * 0.25, "level")
    lut = vtk.vtkLookupTable()
    lut.SetNumberOfTableValues(3)
    lut.SetTableValue(0, 1.0, 0.0, 0.0, 1.0)
    lut.SetTableValue(1, 0.0, 1.0, 0.0, 0.5)
    lut.SetTableValue(2, 0.0, 0.0, 1.0, 1.0)
    level.SetLookupTable(lut)
    pd.GetPointData().SetScalars(level)
    pd.GetCellData().SetVectors(arr(np.arange(3 * ncells, dtype=np.float64).reshape(ncells, 3),
                                    "flux"))
    write(vtk.vtkPolyDataWriter, pd, "poly")


def structured_points():
    im = vtk.vtkImageData()
    im.SetDimensions(3, 4, 2)
    im.SetOrigin(1.0, -2.0, 0.5)
    im.SetSpacing(0.5, 0.25, 2.0)
    im.GetPointData().SetScalars(arr(np.arange(24, dtype=np.int32), "level"))
    im.GetCellData().SetScalars(arr(np.arange(6, dtype=np.float64) * 1.5, "cval"))
    write(vtk.vtkStructuredPointsWriter, im, "spts")
    # 2D: one layer of quads.
    im2 = vtk.vtkImageData()
    im2.SetDimensions(4, 3, 1)
    im2.SetSpacing(1.0, 2.0, 1.0)
    im2.GetPointData().SetScalars(arr(np.arange(12, dtype=np.float32), "h"))
    write(vtk.vtkStructuredPointsWriter, im2, "spts2d")


def structured_grid():
    sg = vtk.vtkStructuredGrid()
    sg.SetDimensions(3, 2, 1)
    pts = np.array([[0, 0, 0], [1, 0, 0.1], [2, 0, 0.2], [0, 1, 0], [1.1, 1, 0], [2, 1.2, 0]],
                   dtype=np.float64)
    p = vtk.vtkPoints()
    p.SetData(arr(pts, "pts"))
    sg.SetPoints(p)
    sg.GetPointData().SetVectors(arr(pts * 2.0, "disp"))
    write(vtk.vtkStructuredGridWriter, sg, "sgrid")


def rectilinear_grid():
    rg = vtk.vtkRectilinearGrid()
    rg.SetDimensions(4, 3, 2)
    rg.SetXCoordinates(arr(np.array([0, 1, 3, 6], dtype=np.float32), "x"))
    rg.SetYCoordinates(arr(np.array([0, 0.5, 2], dtype=np.float32), "y"))
    rg.SetZCoordinates(arr(np.array([-1, 1], dtype=np.float32), "z"))
    rg.GetCellData().SetScalars(arr(np.arange(6, dtype=np.int32) * 10, "id"))
    write(vtk.vtkRectilinearGridWriter, rg, "rgrid")


def unstructured_cells():
    ug = vtk.vtkUnstructuredGrid()
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0],
                    [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1],
                    [2, 0, 0], [2, 1, 0], [3, 0, 0], [3, 1, 0]], dtype=np.float64)
    p = vtk.vtkPoints()
    p.SetData(arr(pts, "pts"))
    ug.SetPoints(p)
    cells = [(vtk.VTK_VERTEX, [0]), (vtk.VTK_POLY_VERTEX, [1, 2, 3]),
             (vtk.VTK_POLY_LINE, [0, 1, 8, 10]), (vtk.VTK_TRIANGLE_STRIP, [8, 9, 10, 11]),
             (vtk.VTK_VOXEL, [0, 1, 2, 3, 4, 5, 6, 7]), (vtk.VTK_TETRA, [0, 1, 2, 4]),
             (vtk.VTK_VOXEL, [0, 1, 2, 3, 4, 5, 6, 7])]
    for t, ids in cells:
        ug.InsertNextCell(t, len(ids), ids)
    ug.GetCellData().SetScalars(arr(np.arange(len(cells), dtype=np.float64) + 0.5, "mat"))
    write(vtk.vtkUnstructuredGridWriter, ug, "ucells")


if __name__ == "__main__":
    polydata()
    structured_points()
    structured_grid()
    rectilinear_grid()
    unstructured_cells()
