#!/usr/bin/python3
"""Cross-checks meshdock's readers against the tools that wrote the files: writes many files
with VTK's and gmsh's own writers and compares what meshdock reads with what VTK, meshio or
another format of the same mesh reads. Not a test (minutes, and the tools' versions decide what
it finds): run it after a reader change. Session 22's run found the duplicated gmsh nodes and
the short node count of gmsh's MSH 2.2 of the same mesh (both readers now say what they met);
the meshio writers' sweep lives in the suite (tests/python/test_meshio_sweep.py).

    /usr/bin/python3 tests/data/tools/crosscheck_readers.py vtk [--seeds N]
        unstructured grids through vtkXMLUnstructuredGridWriter (ascii / binary / appended x
        none / zlib / LZ4 / LZMA x UInt32 / UInt64 headers x raw / base64 appended data) and the
        legacy writer (4.2, 5.1; ascii, binary), against VTK's own reader
    /usr/bin/python3 tests/data/tools/crosscheck_readers.py vtk-structured [--seeds N]
        image data, rectilinear and structured grids and polydata through their XML and legacy
        writers, against VTK's own reader (poly-vertices and poly-lines split, as documented)
    /usr/bin/python3 tests/data/tools/crosscheck_readers.py gmsh
        3 models x order 1 / 2 x 0 / 3 partitions x recombined or not through `gmsh -format`
        msh1, msh22, msh31, msh40, msh41 (ascii, binary), against meshio where it reads the file
        and against the same mesh's MSH 4.1 ascii read (cells compared as point sets) otherwise

Prints each disagreement and a count; exit status 1 when there was one. Needs python3-vtk9,
python3-meshio and gmsh (Debian), and a build (build/python, or $MESHDOCK_BUILD_DIR)."""
import argparse
import collections
import contextlib
import io
import itertools
import os
import pathlib
import subprocess
import sys
import tempfile
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(pathlib.Path(os.environ.get("MESHDOCK_BUILD_DIR", ROOT / "build")) /
                       "python"))

import numpy as np  # noqa: E402

import meshdock  # noqa: E402

warnings.simplefilter("ignore")


def meshio_read(path):
    """meshio's read, or None where meshio refuses the file (it may even sys.exit)."""
    import meshio
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return meshio.read(path)
    except (Exception, SystemExit):
        return None


def compare_with_meshio(m, ref):
    """Disagreements of meshdock's Mesh `m` with meshio's read `ref` (points float64 and cells
    int64 on meshdock's side, byte order native, STL facet normals and a partitioned file's
    gmsh:partition extra: all by design)."""
    out = []

    def same(a, b, what, widen=False):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape and a.size == b.size:
            a = a.reshape(b.shape)
        if a.shape != b.shape:
            return out.append(f"{what}: shape {a.shape}, meshio {b.shape}")
        if not widen and a.dtype != b.dtype.newbyteorder("="):
            out.append(f"{what}: dtype {a.dtype}, meshio {b.dtype}")
        if b.dtype.kind == "f":
            if not np.allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True):
                out.append(f"{what}: values differ")
        elif not np.array_equal(a, b):
            out.append(f"{what}: values differ")

    same(m.points, ref.points, "points", widen=True)
    if [c.type for c in m.cells] != [c.type for c in ref.cells]:
        return out + [f"cell types {[c.type for c in m.cells]}, meshio "
                      f"{[c.type for c in ref.cells]}"]
    for i, (a, b) in enumerate(zip(m.cells, ref.cells)):
        same(a.data, b.data, f"cells[{i}] {a.type}", widen=True)
    for k, v in ref.point_data.items():
        if k in m.point_data:
            same(m.point_data[k], v, f"point_data {k!r}")
        else:
            out.append(f"point_data {k!r} missing")
    for k, blocks in ref.cell_data.items():
        if k not in m.cell_data:
            out.append(f"cell_data {k!r} missing")
            continue
        for i, (a, b) in enumerate(zip(m.cell_data[k], blocks)):
            same(a, b, f"cell_data {k!r}[{i}]")
    return out


def vtk_read(path):
    import vtk
    if path.endswith(".vtk"):
        r = vtk.vtkDataSetReader()
        r.ReadAllScalarsOn()
        r.ReadAllVectorsOn()
        r.ReadAllFieldsOn()
    else:
        r = vtk.vtkXMLGenericDataObjectReader()
    r.SetFileName(path)
    r.Update()
    return r.GetOutput()


def compare_with_vtk(m, path):
    """Disagreements with VTK's own read: points, cells as point sets (structured cells are
    VTK pixels / voxels, meshdock's quads / hexahedra), and every array by name and dtype
    (cell values compared sorted, as meshdock groups cells by type)."""
    import vtk
    from vtk.util import numpy_support as ns
    ds, out = vtk_read(path), []
    pts = np.array([ds.GetPoint(i) for i in range(ds.GetNumberOfPoints())]).reshape(-1, 3)
    if m.points.shape[0] != len(pts) or not np.allclose(m.points[:, :3], pts, atol=1e-6):
        out.append(f"points differ from VTK's ({m.points.shape} vs {pts.shape})")
    want = []
    for i in range(ds.GetNumberOfCells()):
        c = ds.GetCell(i)
        ids = [c.GetPointId(j) for j in range(c.GetNumberOfPoints())]
        if c.GetCellType() == vtk.VTK_POLY_VERTEX:
            want += [(x,) for x in ids]
        elif c.GetCellType() == vtk.VTK_POLY_LINE:
            want += [tuple(sorted(ids[j:j + 2])) for j in range(len(ids) - 1)]
        else:
            want.append(tuple(sorted(ids)))
    got = []
    for c in m.cells:
        if c.offsets is not None and c.face_offsets is None:
            got += [tuple(sorted(c.data[c.offsets[i]:c.offsets[i + 1]]))
                    for i in range(len(c.offsets) - 1)]
        elif c.face_offsets is None:
            got += [tuple(sorted(r)) for r in c.data]
    if sorted(got) != sorted(want) and all(c.face_offsets is None for c in m.cells):
        out.append(f"cells differ from VTK's ({len(got)} vs {len(want)})")
    for data, ours, kind in ((ds.GetPointData(), m.point_data, "point"),
                             (ds.GetCellData(), m.cell_data, "cell")):
        for i in range(data.GetNumberOfArrays()):
            a = data.GetArray(i)
            if a is None:  # string arrays: skipped by meshdock, with a note
                continue
            name, theirs = a.GetName(), ns.vtk_to_numpy(a)
            if name not in ours:
                out.append(f"{kind}_data {name!r} missing")
                continue
            mine = ours[name] if kind == "point" else np.concatenate(
                [np.asarray(x).reshape(len(x), -1) for x in ours[name]])
            mine = np.asarray(mine)
            if mine.size != theirs.size:
                continue  # poly-vertices / poly-lines split: values repeated (documented)
            mine = mine.reshape(theirs.shape)
            if mine.dtype != theirs.dtype:
                out.append(f"{kind}_data {name!r}: dtype {mine.dtype}, VTK {theirs.dtype}")
            elif kind == "point" and not np.array_equal(mine, theirs):
                out.append(f"point_data {name!r} differs from VTK's")
            elif kind == "cell" and not np.array_equal(np.sort(mine, 0), np.sort(theirs, 0)):
                out.append(f"cell_data {name!r} differs from VTK's")
    return out


def add_arrays(rng, ds, points, cells, point_arrays, cell_arrays):
    from vtk.util import numpy_support as ns
    for (name, dtype, comps), n, data in [(p, points, ds.GetPointData()) for p in point_arrays] + \
            [(c, cells, ds.GetCellData()) for c in cell_arrays]:
        a = (rng.standard_normal((n, comps)) * 50).astype(dtype)
        arr = ns.numpy_to_vtk(a if comps > 1 else a[:, 0], deep=1)
        arr.SetName(name)
        data.AddArray(arr)


def unstructured(rng):
    import vtk
    kinds = {vtk.VTK_TETRA: 4, vtk.VTK_HEXAHEDRON: 8, vtk.VTK_TRIANGLE: 3, vtk.VTK_QUAD: 4,
             vtk.VTK_WEDGE: 6, vtk.VTK_PYRAMID: 5, vtk.VTK_LINE: 2, vtk.VTK_VERTEX: 1,
             vtk.VTK_QUADRATIC_TETRA: 10}
    n = int(rng.integers(10, 50))
    ug, pts = vtk.vtkUnstructuredGrid(), vtk.vtkPoints()
    pts.SetDataTypeToDouble() if rng.random() < 0.7 else pts.SetDataTypeToFloat()
    for p in rng.standard_normal((n, 3)):
        pts.InsertNextPoint(*p)
    ug.SetPoints(pts)
    cells = int(rng.integers(1, 30))
    for _ in range(cells):
        t = list(kinds)[int(rng.integers(0, len(kinds)))]
        ids = vtk.vtkIdList()
        for v in rng.integers(0, n, kinds[t]):
            ids.InsertNextId(int(v))
        ug.InsertNextCell(t, ids)
    point_arrays = [a for a in [("pf", np.float64, 1), ("pv", np.float32, 3), ("pi", np.int32, 1),
                                ("pu8", np.uint8, 1), ("pi64", np.int64, 2)] if rng.random() < 0.6]
    cell_arrays = [a for a in [("cf", np.float64, 1), ("ci", np.int32, 1), ("cv", np.float32, 3)]
                   if rng.random() < 0.6]
    add_arrays(rng, ug, n, cells, point_arrays, cell_arrays)
    return ug


def write_xml(writer, ds, path, mode, compressor, header="UInt32", encode=True):
    w = writer()
    w.SetFileName(path)
    w.SetInputData(ds)
    {"ascii": w.SetDataModeToAscii, "binary": w.SetDataModeToBinary,
     "appended": w.SetDataModeToAppended}[mode]()
    {None: w.SetCompressorTypeToNone, "zlib": w.SetCompressorTypeToZLib,
     "lz4": w.SetCompressorTypeToLZ4, "lzma": w.SetCompressorTypeToLZMA}[compressor]()
    w.SetHeaderTypeToUInt32() if header == "UInt32" else w.SetHeaderTypeToUInt64()
    w.SetEncodeAppendedData(encode)
    w.Write()


def write_legacy(writer, ds, path, binary, version):
    w = writer()
    w.SetFileName(path)
    w.SetInputData(ds)
    w.SetFileTypeToBinary() if binary else w.SetFileTypeToASCII()
    w.SetFileVersion(w.VTK_LEGACY_READER_VERSION_4_2 if version == 42 else
                     w.VTK_LEGACY_READER_VERSION_5_1)
    w.Write()


def check(path, report):
    """Compares meshdock's read of a VTK file with VTK's own (the authority on its formats;
    meshio reads no LZ4 and gives legacy 5.1 `int` arrays as int64)."""
    try:
        m = meshdock.read(path)
    except Exception as e:  # noqa: BLE001 (any refusal is a finding)
        return report(path, [f"meshdock refuses it: {e}"])
    report(path, compare_with_vtk(m, path))


def sweep_vtk(args, tmp, report):
    import vtk
    for seed in range(args.seeds):
        ug = unstructured(np.random.default_rng(seed))
        for mode, comp, header, encode in itertools.product(
                ["ascii", "binary", "appended"], [None, "zlib", "lz4", "lzma"],
                ["UInt32", "UInt64"], [True, False]):
            if (mode == "ascii" and (comp or header == "UInt64" or not encode)) or \
                    (mode != "appended" and not encode):
                continue
            path = f"{tmp}/u{seed}-{mode}-{comp}-{header}-{int(encode)}.vtu"
            write_xml(vtk.vtkXMLUnstructuredGridWriter, ug, path, mode, comp, header, encode)
            check(path, report)
        for binary, version in itertools.product([False, True], [42, 51]):
            path = f"{tmp}/u{seed}-legacy-{int(binary)}-{version}.vtk"
            write_legacy(vtk.vtkUnstructuredGridWriter, ug, path, binary, version)
            check(path, report)


def structured(rng):
    import vtk
    from vtk.util import numpy_support as ns
    for d in ([3, 4, 2], [5, 1, 3], [4, 3, 1], [6, 1, 1]):
        im = vtk.vtkImageData()
        im.SetDimensions(*d)
        im.SetOrigin(0.5, -1, 2)
        im.SetSpacing(0.1, 0.2, 0.3)
        rg = vtk.vtkRectilinearGrid()
        rg.SetDimensions(*d)
        for k, setter in enumerate((rg.SetXCoordinates, rg.SetYCoordinates, rg.SetZCoordinates)):
            setter(ns.numpy_to_vtk(np.cumsum(rng.random(d[k])), deep=1))
        sg, pts = vtk.vtkStructuredGrid(), vtk.vtkPoints()
        sg.SetDimensions(*d)
        for p in rng.standard_normal((d[0] * d[1] * d[2], 3)):
            pts.InsertNextPoint(*p)
        sg.SetPoints(pts)
        for kind, ds in (("image", im), ("rect", rg), ("sgrid", sg)):
            yield kind, ds
    src = vtk.vtkSphereSource()
    src.Update()
    pd = vtk.vtkPolyData()
    pd.DeepCopy(src.GetOutput())
    lines, verts = vtk.vtkCellArray(), vtk.vtkCellArray()
    lines.InsertNextCell(3)
    for i in (0, 1, 2):
        lines.InsertCellPoint(i)
    verts.InsertNextCell(2)
    for i in (3, 4):
        verts.InsertCellPoint(i)
    pd.SetLines(lines)
    pd.SetVerts(verts)
    pd.GetPointData().Initialize()
    pd.GetCellData().Initialize()
    yield "poly", pd


def sweep_vtk_structured(args, tmp, report):
    import vtk
    xml = {"image": (vtk.vtkXMLImageDataWriter, ".vti"),
           "rect": (vtk.vtkXMLRectilinearGridWriter, ".vtr"),
           "sgrid": (vtk.vtkXMLStructuredGridWriter, ".vts"),
           "poly": (vtk.vtkXMLPolyDataWriter, ".vtp")}
    legacy = {"image": vtk.vtkStructuredPointsWriter, "rect": vtk.vtkRectilinearGridWriter,
              "sgrid": vtk.vtkStructuredGridWriter, "poly": vtk.vtkPolyDataWriter}
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        for k, (kind, ds) in enumerate(structured(rng)):
            add_arrays(rng, ds, ds.GetNumberOfPoints(), ds.GetNumberOfCells(),
                       [("pf", np.float64, 1), ("pv", np.float32, 3), ("pi", np.int32, 1),
                        ("pu", np.uint16, 1)], [("cf", np.float32, 1), ("cv", np.float64, 3)])
            writer, ext = xml[kind]
            for mode, comp in [("ascii", None)] + list(itertools.product(
                    ["binary", "appended"], [None, "zlib", "lz4"])):
                path = f"{tmp}/s{seed}-{k}-{kind}-{mode}-{comp}{ext}"
                write_xml(writer, ds, path, mode, comp)
                report(path, compare_with_vtk(meshdock.read(path), path))
            for binary, version in itertools.product([False, True], [42, 51]):
                path = f"{tmp}/s{seed}-{k}-{kind}-legacy-{int(binary)}-{version}.vtk"
                write_legacy(legacy[kind], ds, path, binary, version)
                report(path, compare_with_vtk(meshdock.read(path), path))


GEO = {
    "box2": 'SetFactory("OpenCASCADE");\nBox(1)={0,0,0,1,1,1};\nBox(2)={1,0,0,1,1,1};\n'
            'Coherence;\nPhysical Volume("left")={1};\nPhysical Volume(7)={2};\n'
            'Physical Surface("skin")={1,2,3};\nMesh.CharacteristicLengthMax=0.4;\n',
    "sphere": 'SetFactory("OpenCASCADE");\nSphere(1)={0,0,0,1};\nPhysical Volume("ball")={1};\n'
              'Physical Surface("s")={1};\nMesh.CharacteristicLengthMax=0.5;\n',
    "rect": 'SetFactory("OpenCASCADE");\nRectangle(1)={0,0,0,2,1};\n'
            'Physical Surface("plate")={1};\nPhysical Curve("edge")={1,2};\n'
            'Mesh.CharacteristicLengthMax=0.3;\n',
}


def canon(m):
    """Each cell type's cells as sorted point-coordinate sets: comparable across formats whose
    node order differs."""
    p = np.round(np.asarray(m.points, float), 9)
    out = collections.defaultdict(list)
    for c in m.cells:
        out[c.type] += [tuple(sorted(map(tuple, p[r]))) for r in c.data]
    return {t: sorted(v) for t, v in out.items()}


def sweep_gmsh(args, tmp, report):
    for name, geo in GEO.items():
        geo_path = f"{tmp}/{name}.geo"
        pathlib.Path(geo_path).write_text(geo)
        dim = "-2" if name == "rect" else "-3"
        for order, parts, recombine in itertools.product([1, 2], [0, 3], [0, 1]):
            extra = (["-part", str(parts)] if parts else []) + \
                    (["-setnumber", "Mesh.RecombineAll", "1", "-setnumber",
                      "Mesh.SubdivisionAlgorithm", "0"] if recombine else [])
            base = f"{tmp}/{name}-o{order}-p{parts}-r{recombine}"
            written = {}
            for fmt, binary in itertools.product(["msh41", "msh40", "msh31", "msh22", "msh1"],
                                                 [False, True]):
                if fmt == "msh1" and binary:
                    continue
                path = f"{base}-{fmt}-{int(binary)}.msh"
                # gmsh may crash on exit after writing (a recombined two-volume box): what it
                # wrote is read all the same, and an empty file is skipped.
                subprocess.run(["gmsh", dim, geo_path, "-order", str(order), "-format", fmt,
                                "-o", path, "-v", "0"] + extra + (["-bin"] if binary else []),
                               capture_output=True)
                if os.path.exists(path) and os.path.getsize(path):
                    written[(fmt, binary)] = path
            reference = None
            if ("msh41", False) in written:
                try:
                    reference = canon(meshdock.read(written[("msh41", False)]))
                except Exception:  # noqa: BLE001 (reported below as that file's finding)
                    pass
            for path in written.values():
                ref = meshio_read(path)
                try:
                    m = meshdock.read(path)
                except Exception as e:  # noqa: BLE001
                    report(path, [f"meshdock refuses it: {e}"] if ref is not None else [])
                    continue
                found = []
                if ref is not None:
                    found = [f for f in compare_with_meshio(m, ref)
                             if "gmsh:partition" not in f]
                if reference is not None and canon(m) != reference:
                    found.append("cells differ from the MSH 4.1 ascii read of the same mesh")
                report(path, found)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["vtk", "vtk-structured", "gmsh"])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--keep", metavar="DIR", help="write the files here and keep the ones that "
                   "disagree (default: a temporary directory, removed)")
    args = p.parse_args()
    counts = collections.Counter()

    def report(path, found):
        counts["files"] += 1
        if found:
            counts["disagree"] += 1
            print(f"== {path}")
            for f in found[:5]:
                print(f"   {f}")
        elif args.keep:
            os.unlink(path)

    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        {"vtk": sweep_vtk, "vtk-structured": sweep_vtk_structured,
         "gmsh": sweep_gmsh}[args.what](args, tmp, report)
    print(f"{args.what}: {counts['files']} files, {counts['disagree']} disagree")
    return 1 if counts["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main())
