#!/usr/bin/python3
"""Writes the XML VTK test files of tests/data/meshes with VTK's own XML writers (VTK 9.1,
python3-vtk9): PolyData (.vtp), StructuredGrid (.vts), RectilinearGrid (.vtr), ImageData (.vti),
the structured ones also in several pieces (*-pieces.*: VTK's extent split, with a flat piece
and empty ones), the parallel files .pvtu, .pvtp, .pvts, .pvtr, .pvti with their pieces
(p*-<mode>.pvt?, p*-<mode>_<i>.vt?; ghost levels overlap the structured ones) and a .vtu with
string arrays, each in several of ascii / inline base64 / appended raw / appended base64 / zlib.
    /usr/bin/python3 tests/data/tools/make_xml_vtk.py [out_dir]
tests/python/test_read_xml_vtk.py reads them with VTK again and compares with meshdock."""
import math
import pathlib
import sys

import vtk
from vtk.util.vtkAlgorithm import VTKPythonAlgorithmBase

OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                   pathlib.Path(__file__).resolve().parents[1] / "meshes")

# mode name -> (data mode, encode appended, compressor)
MODES = {
    "ascii": ("ascii", False, None),
    "inline64": ("binary", False, None),
    "appraw": ("appended", False, None),
    "app64": ("appended", True, None),
    "appzlib": ("appended", False, "zlib"),
    "inlinezlib": ("binary", False, "zlib"),
}


def _write(writer, data, path, mode, big_endian_u64=False):
    dm, enc, comp = MODES[mode]
    if big_endian_u64:
        writer.SetByteOrderToBigEndian()
        writer.SetHeaderTypeToUInt64()
    writer.SetInputData(data)
    writer.SetFileName(str(path))
    {"ascii": writer.SetDataModeToAscii, "binary": writer.SetDataModeToBinary,
     "appended": writer.SetDataModeToAppended}[dm]()
    writer.SetEncodeAppendedData(enc)
    if comp:
        writer.SetCompressorTypeToZLib()
    else:
        writer.SetCompressorTypeToNone()
    assert writer.Write() == 1, path


class Streamed(VTKPythonAlgorithmBase):
    """A structured dataset given one extent at a time, as a writer asks for its pieces (a
    dataset set with SetInputData is written whole into every piece)."""

    def __init__(self, data):
        VTKPythonAlgorithmBase.__init__(self, nInputPorts=0, nOutputPorts=1,
                                        outputType=data.GetClassName())
        self.data = data

    def RequestInformation(self, request, in_info, out_info):
        oi = out_info.GetInformationObject(0)
        oi.Set(vtk.vtkStreamingDemandDrivenPipeline.WHOLE_EXTENT(), self.data.GetExtent(), 6)
        oi.Set(vtk.vtkAlgorithm.CAN_PRODUCE_SUB_EXTENT(), 1)
        if self.data.IsA("vtkImageData"):
            oi.Set(vtk.vtkDataObject.ORIGIN(), self.data.GetOrigin(), 3)
            oi.Set(vtk.vtkDataObject.SPACING(), self.data.GetSpacing(), 3)
        return 1

    def RequestData(self, request, in_info, out_info):
        oi = out_info.GetInformationObject(0)
        extent = oi.Get(vtk.vtkStreamingDemandDrivenPipeline.UPDATE_EXTENT())
        if any(extent[2 * i + 1] < extent[2 * i] for i in range(3)):
            return 1  # a piece the split left empty ("0 -1 0 -1 0 -1")
        cut = {"vtkStructuredGrid": vtk.vtkExtractGrid,
               "vtkRectilinearGrid": vtk.vtkExtractRectilinearGrid,
               "vtkImageData": vtk.vtkExtractVOI}[self.data.GetClassName()]()
        cut.SetInputData(self.data)
        cut.SetVOI(*extent)
        cut.Update()
        oi.Get(vtk.vtkDataObject.DATA_OBJECT()).ShallowCopy(cut.GetOutput())
        return 1


def _pieces(writer, source, path, mode, pieces, ghost=None):
    """`source` (an algorithm) written in `pieces` pieces: into one file, or, by a parallel
    writer (ghost: its GhostLevel), as a parallel file and one file per piece."""
    dm, enc, comp = MODES[mode]
    writer.SetInputConnection(source.GetOutputPort())
    writer.SetNumberOfPieces(pieces)
    if ghost is not None:
        writer.SetStartPiece(0)
        writer.SetEndPiece(pieces - 1)
        writer.SetGhostLevel(ghost)
    writer.SetFileName(str(path))
    {"ascii": writer.SetDataModeToAscii, "binary": writer.SetDataModeToBinary,
     "appended": writer.SetDataModeToAppended}[dm]()
    writer.SetEncodeAppendedData(enc)
    if comp:
        writer.SetCompressorTypeToZLib()
    else:
        writer.SetCompressorTypeToNone()
    assert writer.Write() == 1, path


def _array(cls, name, comps, values):
    a = cls()
    a.SetName(name)
    a.SetNumberOfComponents(comps)
    for v in values:
        a.InsertNextValue(v)
    return a


def _strings(name, values):
    a = vtk.vtkStringArray()
    a.SetName(name)
    for v in values:
        a.InsertNextValue(v)
    return a


def _add_field(data):
    data.GetFieldData().AddArray(_strings("title", ["a test mesh"]))
    data.GetFieldData().AddArray(_array(vtk.vtkDoubleArray, "time", 1, [0.25]))


def cells(lists):
    """A vtkCellArray of the point-id lists."""
    ca = vtk.vtkCellArray()
    for ids in lists:
        ca.InsertNextCell(len(ids))
        for i in ids:
            ca.InsertCellPoint(i)
    return ca


def polydata():
    pts = vtk.vtkPoints()
    pts.SetDataTypeToDouble()
    for i in range(12):
        pts.InsertNextPoint(math.cos(i), 0.5 * i, math.sin(2 * i))
    pd = vtk.vtkPolyData()
    pd.SetPoints(pts)

    pd.SetVerts(cells([[0], [1, 2, 3]]))                      # a vertex, a poly-vertex
    pd.SetLines(cells([[0, 1], [2, 3, 4, 5]]))                 # a line, a poly-line
    pd.SetPolys(cells([[0, 1, 2], [3, 4, 5, 6], [6, 7, 8, 9, 10], [1, 2, 3]]))
    pd.SetStrips(cells([[4, 5, 6, 7, 8, 9]]))                  # a strip of 4 triangles
    n = pd.GetNumberOfCells()
    pd.GetPointData().AddArray(_array(vtk.vtkDoubleArray, "temp", 1, [0.5 * i for i in range(12)]))
    pd.GetPointData().AddArray(
        _array(vtk.vtkFloatArray, "vel", 3, [float(i % 7) for i in range(36)]))
    pd.GetPointData().AddArray(_strings("label", [f"p{i}" for i in range(12)]))
    pd.GetCellData().AddArray(_array(vtk.vtkIntArray, "id", 1, [10 * i for i in range(n)]))
    _add_field(pd)
    return pd


def structured():
    nx, ny, nz = 3, 4, 2
    pts = vtk.vtkPoints()
    pts.SetDataTypeToFloat()
    for k in range(nz):
        for j in range(ny):
            for i in range(nx):
                pts.InsertNextPoint(i + 0.1 * j, j * 1.5 + 0.05 * k * k, k * 2 + 0.01 * i)
    g = vtk.vtkStructuredGrid()
    g.SetDimensions(nx, ny, nz)
    g.SetPoints(pts)
    g.GetPointData().AddArray(
        _array(vtk.vtkDoubleArray, "p", 1, [i * 0.3 for i in range(nx * ny * nz)]))
    g.GetCellData().AddArray(
        _array(vtk.vtkIntArray, "c", 2, [i for i in range(2 * g.GetNumberOfCells())]))
    _add_field(g)
    return g


def rectilinear(dims):
    g = vtk.vtkRectilinearGrid()
    g.SetDimensions(*dims)
    coords = [[0.0, 0.5, 2.0, 3.25][:dims[0]], [1.0, 1.1, 1.5][:dims[1]], [-1.0, 4.0][:dims[2]]]
    g.SetXCoordinates(_array(vtk.vtkDoubleArray, "x", 1, coords[0]))
    g.SetYCoordinates(_array(vtk.vtkFloatArray, "y", 1, coords[1]))
    g.SetZCoordinates(_array(vtk.vtkDoubleArray, "z", 1, coords[2]))
    g.GetPointData().AddArray(
        _array(vtk.vtkFloatArray, "f", 1, [i * 1.5 for i in range(g.GetNumberOfPoints())]))
    g.GetCellData().AddArray(
        _array(vtk.vtkLongLongArray, "cid", 1, [7 * i for i in range(g.GetNumberOfCells())]))
    return g


def image(extent, origin, spacing):
    g = vtk.vtkImageData()
    g.SetExtent(*extent)
    g.SetOrigin(*origin)
    g.SetSpacing(*spacing)
    g.GetPointData().AddArray(
        _array(vtk.vtkDoubleArray, "u", 3, [i * 0.1 for i in range(3 * g.GetNumberOfPoints())]))
    g.GetCellData().AddArray(
        _array(vtk.vtkUnsignedCharArray, "m", 1, [i % 5 for i in range(g.GetNumberOfCells())]))
    return g


def unstructured():
    """A hexahedron grid with tetrahedra cut from it: pieces of it have both kinds."""
    src = vtk.vtkImageData()
    src.SetDimensions(4, 3, 3)
    tets = vtk.vtkDataSetTriangleFilter()
    tets.SetInputData(src)
    tets.Update()
    g = tets.GetOutput()
    g.GetPointData().AddArray(
        _array(vtk.vtkDoubleArray, "h", 1, [i * 0.5 for i in range(g.GetNumberOfPoints())]))
    g.GetCellData().AddArray(
        _array(vtk.vtkIntArray, "k", 1, [i for i in range(g.GetNumberOfCells())]))
    return g


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    pd = polydata()
    for mode in ("ascii", "inline64", "appraw", "app64", "appzlib"):
        _write(vtk.vtkXMLPolyDataWriter(), pd, OUT / f"poly.vtk-{mode}.vtp", mode)
    _write(vtk.vtkXMLPolyDataWriter(), pd, OUT / "poly.vtk-appzlib-be64.vtp", "appzlib", True)
    _write(vtk.vtkXMLPolyDataWriter(), pd, OUT / "poly.vtk-inline64-be64.vtp", "inline64", True)
    sg = structured()
    for mode in ("ascii", "inline64", "appzlib", "app64"):
        _write(vtk.vtkXMLStructuredGridWriter(), sg, OUT / f"grid.vtk-{mode}.vts", mode)
    for mode in ("ascii", "appraw", "inlinezlib"):
        _write(vtk.vtkXMLRectilinearGridWriter(), rectilinear((4, 3, 2)),
               OUT / f"rect.vtk-{mode}.vtr", mode)
    _write(vtk.vtkXMLRectilinearGridWriter(), rectilinear((4, 3, 1)),
           OUT / "rect2d.vtk-ascii.vtr", "ascii")
    for mode in ("ascii", "appzlib", "app64"):
        _write(vtk.vtkXMLImageDataWriter(), image((1, 3, -1, 1, 0, 2), (0.5, -1.0, 2.0),
                                                  (0.25, 0.5, 1.0)),
               OUT / f"image.vtk-{mode}.vti", mode)
    _write(vtk.vtkXMLImageDataWriter(), image((0, 4, 0, 0, 0, 0), (1.0, 2.0, 3.0),
                                              (0.5, 1.0, 1.0)),
           OUT / "image1d.vtk-ascii.vti", "ascii")
    _write(vtk.vtkXMLImageDataWriter(), image((0, 2, 0, 0, 0, 3), (0, 0, 0), (1.0, 1.0, 0.5)),
           OUT / "image2d.vtk-inline64.vti", "inline64")
    _write(vtk.vtkXMLImageDataWriter(), image((1, 3, -1, 1, 0, 2), (0.5, -1.0, 2.0),
                                              (0.25, 0.5, 1.0)),
           OUT / "image.vtk-appraw-be64.vti", "appraw", True)
    # Two pieces, cut by VTK (vtkExtractUnstructuredGridPiece), written as .pvtu + .vtu.
    for mode in ("appzlib", "ascii"):
        piece = vtk.vtkExtractUnstructuredGridPiece()
        piece.SetInputData(unstructured())
        w = vtk.vtkXMLPUnstructuredGridWriter()
        w.SetInputConnection(piece.GetOutputPort())
        w.SetNumberOfPieces(2)
        w.SetStartPiece(0)
        w.SetEndPiece(1)
        w.SetFileName(str(OUT / f"pieces-{mode}.pvtu"))
        dm, enc, comp = MODES[mode]
        w.SetDataModeToAscii() if dm == "ascii" else w.SetDataModeToAppended()
        w.SetCompressorTypeToZLib() if comp else w.SetCompressorTypeToNone()
        assert w.Write() == 1
    # Structured files of several pieces, split by VTK's extent translator.
    img = image((1, 3, -1, 1, 0, 2), (0.5, -1.0, 2.0), (0.25, 0.5, 1.0))
    _pieces(vtk.vtkXMLStructuredGridWriter(), Streamed(sg), OUT / "grid-pieces.vtk-ascii.vts",
            "ascii", 3)
    _pieces(vtk.vtkXMLStructuredGridWriter(), Streamed(sg), OUT / "grid-pieces.vtk-appzlib.vts",
            "appzlib", 8)  # more pieces than the grid has cells: empty and flat pieces
    _pieces(vtk.vtkXMLRectilinearGridWriter(), Streamed(rectilinear((4, 3, 2))),
            OUT / "rect-pieces.vtk-inline64.vtr", "inline64", 3)
    _pieces(vtk.vtkXMLImageDataWriter(), Streamed(img), OUT / "image-pieces.vtk-app64.vti",
            "app64", 3)  # one piece flat along z
    # Parallel files: the structured ones with a ghost layer (pieces overlap).
    _pieces(vtk.vtkXMLPStructuredGridWriter(), Streamed(sg), OUT / "pgrid-appzlib.pvts",
            "appzlib", 2, ghost=1)
    _pieces(vtk.vtkXMLPRectilinearGridWriter(), Streamed(rectilinear((4, 3, 2))),
            OUT / "prect-ascii.pvtr", "ascii", 3, ghost=0)
    _pieces(vtk.vtkXMLPImageDataWriter(), Streamed(img), OUT / "pimage-appraw.pvti", "appraw", 3,
            ghost=0)
    poly = vtk.vtkExtractPolyDataPiece()
    poly.SetInputData(polydata())
    _pieces(vtk.vtkXMLPPolyDataWriter(), poly, OUT / "ppoly-ascii.pvtp", "ascii", 2, ghost=0)
    ug = unstructured()
    ug.GetPointData().AddArray(_strings("names", [f"n{i}" for i in range(ug.GetNumberOfPoints())]))
    ug.GetCellData().AddArray(_strings("cnames", [f"c{i}" for i in range(ug.GetNumberOfCells())]))
    _add_field(ug)
    for mode in ("ascii", "appzlib", "app64", "inline64"):
        _write(vtk.vtkXMLUnstructuredGridWriter(), ug, OUT / f"strings.vtk-{mode}.vtu", mode)


if __name__ == "__main__":
    main()
