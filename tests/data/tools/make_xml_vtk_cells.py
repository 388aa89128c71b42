#!/usr/bin/python3
"""Writes the .vtu test files of tests/data/meshes that hold what meshio has no block or dtype
for, or VTK's other compressors, with VTK's own filters and XML writer (VTK 9.1, python3-vtk9)
and meshio 5.0's writer:

  merged.vtk-<mode>.vtu   vtkAppendFilter of an image (its cells are voxels: what ParaView's
                          Merge Blocks writes) and a polydata of vertices, a poly-vertex, a line,
                          a poly-line, polygons and triangle strips: VTK types 1 2 3 4 5 6 9 11;
                          cell data int32 and float64 (2 components); bit arrays (vtkBitArray:
                          VTK's type="Bit") as point and cell data and as field data.

in ascii, appended raw and appended zlib (the modes of make_xml_vtk.py), and

  compressed.vtk-<mode>.vtu   make_xml_vtk.py's tetrahedra with point and cell data, compressed
                              with vtkLZ4DataCompressor (raw LZ4 blocks) and
                              vtkLZMADataCompressor (.xz streams) in blocks of 256 bytes (several
                              per array), appended raw / base64 and inline, header UInt32 / UInt64
  compressed.meshio-lzma.vtu  the same through meshio.write(..., compression="lzma")

    /usr/bin/python3 tests/data/tools/make_xml_vtk_cells.py [out_dir]
tests/python/test_read_xml_vtk.py reads them with VTK again and compares with meshdock."""
import pathlib
import sys

import meshio
import numpy as np
import vtk
from vtk.util import numpy_support

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_xml_vtk import _array, _write, cells, unstructured  # noqa: E402

OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                   pathlib.Path(__file__).resolve().parents[1] / "meshes")


def _bits(name, values):
    a = vtk.vtkBitArray()
    a.SetName(name)
    for v in values:
        a.InsertNextValue(v)
    return a


def _label(data, offset):
    """The same named arrays on each input, so vtkAppendFilter keeps them."""
    n, c = data.GetNumberOfPoints(), data.GetNumberOfCells()
    data.GetPointData().AddArray(_bits("on", [(i + offset) % 3 == 0 for i in range(n)]))
    data.GetPointData().AddArray(
        _array(vtk.vtkFloatArray, "t", 1, [0.5 * (i + offset) for i in range(n)]))
    data.GetCellData().AddArray(_array(vtk.vtkIntArray, "id", 1, [i + offset for i in range(c)]))
    data.GetCellData().AddArray(
        _array(vtk.vtkDoubleArray, "w", 2, [0.25 * (i + offset) for i in range(2 * c)]))
    data.GetCellData().AddArray(_bits("odd", [(i + offset) % 2 for i in range(c)]))


def merged():
    img = vtk.vtkImageData()
    img.SetExtent(0, 2, 0, 1, 0, 1)  # 2 voxels
    img.SetOrigin(0.0, 0.0, 0.0)
    img.SetSpacing(0.5, 1.0, 2.0)
    _label(img, 0)

    pts = vtk.vtkPoints()
    pts.SetDataTypeToDouble()
    for i in range(10):
        pts.InsertNextPoint(3.0 + 0.5 * i, (i % 3) * 0.75, 0.1 * i * i)
    pd = vtk.vtkPolyData()
    pd.SetPoints(pts)

    pd.SetVerts(cells([[0], [1, 2, 3]]))                  # a vertex, a poly-vertex
    pd.SetLines(cells([[3, 4], [4, 5, 6, 7]]))             # a line, a poly-line
    pd.SetPolys(cells([[0, 1, 2], [2, 3, 4, 5]]))          # a triangle, a quad
    pd.SetStrips(cells([[1, 2, 3, 4, 5, 6], [6, 7, 8]]))   # strips of 4 and 1 triangles
    _label(pd, 100)

    app = vtk.vtkAppendFilter()
    app.AddInputData(img)
    app.AddInputData(pd)
    app.Update()
    g = app.GetOutput()
    g.GetFieldData().AddArray(_bits("flags", [1, 0, 1, 1, 0, 0, 0, 0, 1]))
    return g


# name -> (data mode, encode appended, compressor, header UInt64)
COMPRESSED = {
    "applz4": ("appended", False, "LZ4", False),
    "inlinelz4-u64": ("binary", False, "LZ4", True),
    "app64lzma-u64": ("appended", True, "LZMA", True),
    "inlinelzma": ("binary", False, "LZMA", False),
}


def compressed():
    g = unstructured()
    g.GetPointData().AddArray(
        _array(vtk.vtkFloatArray, "v", 3, [0.125 * i for i in range(3 * g.GetNumberOfPoints())]))
    return g


def write_compressed(g, mode):
    dm, enc, comp, u64 = COMPRESSED[mode]
    w = vtk.vtkXMLUnstructuredGridWriter()
    w.SetInputData(g)
    w.SetFileName(str(OUT / f"compressed.vtk-{mode}.vtu"))
    {"binary": w.SetDataModeToBinary, "appended": w.SetDataModeToAppended}[dm]()
    w.SetEncodeAppendedData(enc)
    {"LZ4": w.SetCompressorTypeToLZ4, "LZMA": w.SetCompressorTypeToLZMA}[comp]()
    w.SetBlockSize(256)
    if u64:
        w.SetHeaderTypeToUInt64()
    assert w.Write() == 1, mode


def write_meshio_lzma(g):
    pts = numpy_support.vtk_to_numpy(g.GetPoints().GetData()).astype(np.float64)
    conn = numpy_support.vtk_to_numpy(g.GetCells().GetConnectivityArray()).reshape(-1, 4)
    m = meshio.Mesh(pts, [("tetra", conn)],
                    point_data={k: numpy_support.vtk_to_numpy(g.GetPointData().GetArray(k))
                                for k in ("h", "v")},
                    cell_data={"k": [numpy_support.vtk_to_numpy(g.GetCellData().GetArray("k"))]})
    meshio.write(OUT / "compressed.meshio-lzma.vtu", m, binary=True, compression="lzma")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    g = compressed()
    for mode in COMPRESSED:
        write_compressed(g, mode)
    write_meshio_lzma(g)
    g = merged()
    for mode in ("ascii", "appraw", "appzlib"):
        _write(vtk.vtkXMLUnstructuredGridWriter(), g, OUT / f"merged.vtk-{mode}.vtu", mode)


if __name__ == "__main__":
    main()
