#!/usr/bin/python3
"""Writes the surface files of the trial-C fixes into tests/data/surface/ (meshio 5.0 and VTK 9
write them; the variants are byte edits of what they wrote):

    /usr/bin/python3 tests/data/tools/make_surface_text.py

upper.stl              vtkSTLWriter ascii of TRIANGLES, the whole text upper-cased (SOLID, FACET
                       NORMAL, OUTER LOOP, VERTEX, ENDLOOP, ENDFACET, ENDSOLID), as some CAD
                       exporters write it; vtkSTLReader reads it.
countzero.stl          vtkSTLWriter binary of TRIANGLES with the header's triangle count set to 0
                       (exporters that never fill it in); vtkSTLReader reads the triangles the
                       size holds.
solid-countzero.stl    the same, its 80-byte header starting with "solid" as well.
trailing.stl           vtkSTLWriter binary of TRIANGLES followed by 10 NUL bytes.
bom.stl, bom.obj,      vtkSTLWriter ascii / meshio's OBJ, OFF and ascii PLY writers of TRIANGLES,
bom.off, bom.ply       each after a UTF-8 byte-order mark (EF BB BF; the OBJ without meshio's
                       comment line, so the mark is right before its first "v"); the tests
                       compare with the file less its first 3 bytes.
vertex-props.ascii.ply meshio's PLY writer, ascii and binary_little_endian, of TRIANGLES with the
vertex-props.bin.ply   vertex properties VERTEX_PROPS (uint8, int32, uint16, int8, uint32, float32,
                       float64: meshio writes each in its numpy type's PLY name).
The tests compare against TRIANGLES / VERTEX_PROPS below and against meshio / VTK, live.
"""
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "surface")

POINTS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0.5]], dtype=np.float64)
TRIANGLES = np.array([[0, 1, 2], [0, 2, 3], [1, 3, 2]])
VERTEX_PROPS = {
    "red": np.array([0, 128, 255, 7], np.uint8),
    "green": np.array([1, 2, 3, 250], np.uint8),
    "blue": np.array([9, 8, 7, 6], np.uint8),
    "label": np.array([-5, 0, 2 ** 31 - 1, -2 ** 31], np.int32),
    "flags": np.array([0, 1, 65535, 300], np.uint16),
    "tiny": np.array([-128, 127, 0, -1], np.int8),
    "big": np.array([0, 2 ** 32 - 1, 5, 6], np.uint32),
    "weight": np.array([0.5, -1.25, 3, 4], np.float32),
    "quality": np.array([1 / 3, 2, 3, 4], np.float64),
}
BOM = b"\xef\xbb\xbf"


def path(name):
    return os.path.join(OUT, name)


def vtk_stl(name, binary):
    import vtk
    pts = vtk.vtkPoints()
    for p in POINTS:
        pts.InsertNextPoint(*p)
    polys = vtk.vtkCellArray()
    for t in TRIANGLES:
        polys.InsertNextCell(3)
        for i in t:
            polys.InsertCellPoint(int(i))
    pd = vtk.vtkPolyData()
    pd.SetPoints(pts)
    pd.SetPolys(polys)
    w = vtk.vtkSTLWriter()
    w.SetInputData(pd)
    w.SetFileName(path(name))
    (w.SetFileTypeToBinary if binary else w.SetFileTypeToASCII)()
    w.Write()
    with open(path(name), "rb") as f:
        return f.read()


def put(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def main():
    import meshio
    ascii_stl = vtk_stl("upper.stl", False)
    put("upper.stl", ascii_stl.upper())
    put("bom.stl", BOM + ascii_stl)
    binary = vtk_stl("countzero.stl", True)
    assert len(binary) == 84 + 50 * len(TRIANGLES)
    put("countzero.stl", binary[:80] + b"\0\0\0\0" + binary[84:])
    put("solid-countzero.stl", b"solid part".ljust(80) + b"\0\0\0\0" + binary[84:])
    put("trailing.stl", binary + b"\0" * 10)
    mesh = meshio.Mesh(POINTS, [("triangle", TRIANGLES)])
    for ext in ("obj", "off", "ply"):
        tmp = path("bom.tmp." + ext)
        meshio.write(tmp, mesh, **({"binary": False} if ext == "ply" else {}))
        with open(tmp, "rb") as f:
            text = f.read()
        if ext == "obj":  # the mark right before the first "v", not before meshio's comment
            text = b"".join(ln for ln in text.splitlines(True) if not ln.startswith(b"#"))
        put("bom." + ext, BOM + text)
        os.remove(tmp)
    props = meshio.Mesh(POINTS, [("triangle", TRIANGLES)], point_data=VERTEX_PROPS)
    meshio.write(path("vertex-props.ascii.ply"), props, binary=False)
    meshio.write(path("vertex-props.bin.ply"), props, binary=True)


if __name__ == "__main__":
    main()
