"""meshdock.read on the XML VTK family (.vtp .vts .vtr .vti, structured files of several pieces,
the parallel .pvtu .pvtp .pvts .pvtr .pvti, and .vtu with string arrays)
against what VTK 9.1 itself reads from the same file (tests/data/tools/make_xml_vtk.py wrote
them with VTK's XML writers, in ascii, inline base64, appended raw / base64 and zlib): points,
every cell in VTK's order (VTK's own strip decomposition, poly-lines and poly-vertices split,
voxel / pixel as hexahedron / quad), point, cell and field data with their dtypes, and a note
for everything converted or skipped. VTK reads a structured grid's pieces (one file's or a
parallel file's) as one grid of their whole extent, shared points once: so does meshdock."""
import os
import pathlib

import numpy as np
import pytest

import meshdock

vtk = pytest.importorskip("vtk")
from vtk.util import numpy_support  # noqa: E402

FILES = sorted(
    f for f in os.listdir(pathlib.Path(__file__).resolve().parents[1] / "data" / "meshes")
    if f.endswith((".vtp", ".vts", ".vtr", ".vti", ".pvtu", ".pvtp", ".pvts", ".pvtr", ".pvti"))
    or f.startswith(("strings.", "merged.", "compressed.")))
PARALLEL = (".pvtu", ".pvtp", ".pvts", ".pvtr", ".pvti")

# VTK's point order for the cells VTK names differently from meshio's.
VOXEL = [0, 1, 3, 2, 4, 5, 7, 6]
PIXEL = [0, 1, 3, 2]
NAMES = {1: "vertex", 3: "line", 5: "triangle", 9: "quad", 10: "tetra", 12: "hexahedron"}


def _vtk_read(path):
    r = vtk.vtkXMLGenericDataObjectReader()
    r.SetFileName(str(path))
    r.Update()
    return r.GetOutput()


def _vtk_cells(g):
    """[(meshio type, ids, VTK cell id)] the way meshdock splits VTK's cells."""
    out = []
    for c in range(g.GetNumberOfCells()):
        t = g.GetCellType(c)
        ids = [g.GetCell(c).GetPointId(k) for k in range(g.GetCell(c).GetNumberOfPoints())]
        if t == 2:  # poly-vertex
            out += [("vertex", [i], c) for i in ids]
        elif t == 4:  # poly-line
            out += [("line", ids[k:k + 2], c) for k in range(len(ids) - 1)]
        elif t == 6:  # triangle strip: vtkTriangleStrip::DecomposeStrip
            out += [("triangle", [ids[k + 1], ids[k], ids[k + 2]] if k % 2 else ids[k:k + 3], c)
                    for k in range(len(ids) - 2)]
        elif t == 7:
            out.append(("triangle" if len(ids) == 3 else "quad" if len(ids) == 4 else "polygon",
                        ids, c))
        elif t == 8:
            out.append(("quad", [ids[k] for k in PIXEL], c))
        elif t == 11:
            out.append(("hexahedron", [ids[k] for k in VOXEL], c))
        else:
            out.append((NAMES[t], ids, c))
    return out


def _numeric(data):
    """{name: numpy array} of the numeric arrays of a vtkFieldData / vtkDataSetAttributes (a
    vtkBitArray, which numpy_support cannot convert, as uint8 0/1: its values)."""
    out = {}
    for i in range(data.GetNumberOfArrays()):
        a = data.GetAbstractArray(i)
        if isinstance(a, vtk.vtkBitArray):
            n = a.GetNumberOfTuples() * a.GetNumberOfComponents()
            v = np.array([a.GetValue(k) for k in range(n)], dtype=np.uint8)
            out[a.GetName()] = v.reshape(-1, a.GetNumberOfComponents()) if (
                a.GetNumberOfComponents() > 1) else v
        elif isinstance(a, vtk.vtkDataArray):
            out[a.GetName()] = numpy_support.vtk_to_numpy(a)
    return out


def _bit_names(g):
    return [d.GetAbstractArray(i).GetName()
            for d in (g.GetFieldData(), g.GetPointData(), g.GetCellData())
            for i in range(d.GetNumberOfArrays())
            if isinstance(d.GetAbstractArray(i), vtk.vtkBitArray)]


def _strings(data):
    return [data.GetAbstractArray(i).GetName() for i in range(data.GetNumberOfArrays())
            if isinstance(data.GetAbstractArray(i), vtk.vtkStringArray)]


@pytest.mark.parametrize("name", FILES)
def test_reads_like_vtk(data_dir, name):
    path = data_dir / "meshes" / name
    g = _vtk_read(path)
    m = meshdock.read(path)
    pts = np.array([g.GetPoint(i) for i in range(g.GetNumberOfPoints())]).reshape(-1, 3)
    assert m.points.dtype == np.float64
    np.testing.assert_allclose(m.points, pts, rtol=1e-15, atol=1e-15)

    want = _vtk_cells(g)
    got = [(b.type, [int(v) for v in b.cell(i)]) for b in m.cells for i in range(len(b))]
    assert got == [(t, ids) for t, ids, _ in want]
    assert all(b.data.dtype == np.int64 for b in m.cells)

    pd = _numeric(g.GetPointData())
    assert set(m.point_data) == set(pd)
    for k, a in pd.items():
        assert m.point_data[k].dtype == a.dtype, k
        np.testing.assert_array_equal(m.point_data[k], a, err_msg=k)
    cd = _numeric(g.GetCellData())
    assert set(m.cell_data) == set(cd)
    source = [c for _, _, c in want]
    if name.endswith(".pvtp"):
        # VTK 9.1's vtkXMLPPolyDataReader puts the cell data of the pieces' polygons out of
        # order (the triangle of piece 0 gets the quad's value of piece 1): the pieces, each
        # read by VTK, are what the cells hold.
        parts = [_vtk_read(path.parent / f"{name[:-5]}_{i}.vtp") for i in range(2)]
        cd = {k: np.concatenate([numpy_support.vtk_to_numpy(p.GetCellData().GetArray(k))[
            [c for _, _, c in _vtk_cells(p)]] for p in parts]) for k in cd}
        source = slice(None)
    for k, a in cd.items():
        mine = np.concatenate(m.cell_data[k])
        assert mine.dtype == a.dtype, k
        np.testing.assert_array_equal(mine, a[source], err_msg=k)
    fd = _numeric(g.GetFieldData())
    if name.endswith(PARALLEL):  # ... which meshdock keeps (the first piece's of each name)
        fd = {k: a for k, a in fd.items() if k in m.field_data}
    assert set(m.field_data) == set(fd)
    for k, a in fd.items():
        np.testing.assert_array_equal(m.field_data[k], a)

    # Nothing dropped silently: every string array VTK has is named in a note.
    skipped = _strings(g.GetFieldData()) + _strings(g.GetPointData()) + _strings(g.GetCellData())
    if name.endswith(PARALLEL):  # VTK's parallel readers keep no field data of the pieces
        skipped = []
    for s in skipped:
        assert any(f"string array '{s}'" in n for n in m.notes), (s, m.notes)
    if name.endswith((".vts", ".vtr", ".vti", ".pvts", ".pvtr", ".pvti")):
        assert any("points converted to" in n for n in m.notes), m.notes
    for a in _bit_names(g):
        assert any(f"bit array '{a}'" in n for n in m.notes), (a, m.notes)
    types = {g.GetCellType(c) for c in range(g.GetNumberOfCells())}
    for t, what in ((2, "poly-vertex cells converted to"), (4, "poly-lines converted to"),
                    (6, "triangle strips converted to"), (11, "voxels converted to hexahedra")):
        if t in types and name.endswith(".vtu"):
            assert any(what in n for n in m.notes), (what, m.notes)
    if name.endswith((".pvtu", ".pvtp")):
        assert any(n.startswith("2 pieces of") for n in m.notes), m.notes
    if "-pieces." in name or name.endswith((".pvts", ".pvtr", ".pvti")):
        assert any("assembled into one grid of extent" in n for n in m.notes), m.notes


def test_every_kind_and_encoding_is_covered(data_dir):
    kinds = {f.rsplit(".", 1)[1] for f in FILES}
    for f in FILES:  # and each reads
        assert len(meshdock.read(data_dir / "meshes" / f).cells) > 0, f
    assert kinds == {"vtp", "vts", "vtr", "vti", "pvtu", "pvtp", "pvts", "pvtr", "pvti", "vtu"}
    modes = {f.split(".")[1] for f in FILES if f.count(".") == 2}
    assert {"vtk-ascii", "vtk-inline64", "vtk-appraw", "vtk-app64", "vtk-appzlib",
            "vtk-inlinezlib"} <= modes
    # VTK's LZ4 and LZMA compressors (make_xml_vtk_cells.py), both header types, and meshio's
    assert {"vtk-applz4", "vtk-inlinelz4-u64", "vtk-app64lzma-u64", "vtk-inlinelzma",
            "meshio-lzma"} <= modes


def test_polydata_values(data_dir):
    """Fixed values of poly.vtp, independent of VTK: the strip's second triangle is flipped."""
    m = meshdock.read(data_dir / "meshes" / "poly.vtk-appzlib.vtp")
    assert [(b.type, len(b)) for b in m.cells] == [
        ("vertex", 4), ("line", 4), ("triangle", 1), ("quad", 1), ("polygon", 1), ("triangle", 5)]
    assert m.cells[5].data.tolist() == [[1, 2, 3], [4, 5, 6], [6, 5, 7], [6, 7, 8], [8, 7, 9]]
    assert m.cells[1].data.tolist() == [[0, 1], [2, 3], [3, 4], [4, 5]]
    assert [a.tolist() for a in m.cell_data["id"]] == [
        [0, 10, 10, 10], [20, 30, 30, 30], [40], [50], [60], [70, 80, 80, 80, 80]]
    assert m.field_data["time"].tolist() == [0.25]


def test_merged_values(data_dir):
    """Fixed values of merged.vtu (vtkAppendFilter of an image and a polydata), independent of
    VTK: voxels are hexahedra in VTK's point order, poly-vertices, poly-lines and strips are
    split with their cell data repeated, bit arrays are uint8 0/1."""
    m = meshdock.read(data_dir / "meshes" / "merged.vtk-appzlib.vtu")
    assert [(b.type, len(b)) for b in m.cells] == [
        ("hexahedron", 2), ("vertex", 4), ("line", 4), ("triangle", 1), ("quad", 1),
        ("triangle", 5)]
    assert m.cells[0].data.tolist() == [[0, 1, 4, 3, 6, 7, 10, 9], [1, 2, 5, 4, 7, 8, 11, 10]]
    assert m.cells[5].data.tolist() == [
        [13, 14, 15], [15, 14, 16], [15, 16, 17], [17, 16, 18], [18, 19, 20]]
    assert [a.tolist() for a in m.cell_data["id"]] == [
        [0, 1], [100, 101, 101, 101], [102, 103, 103, 103], [104], [105],
        [106, 106, 106, 106, 107]]
    assert [a.tolist() for a in m.cell_data["odd"]] == [
        [0, 1], [0, 1, 1, 1], [0, 1, 1, 1], [0], [1], [0, 0, 0, 0, 1]]
    assert m.cell_data["odd"][0].dtype == np.uint8
    assert m.point_data["on"].tolist() == [int(i % 3 == 0) for i in range(12)] + [
        int((i + 100) % 3 == 0) for i in range(10)]
    assert m.field_data["flags"].tolist() == [1, 0, 1, 1, 0, 0, 0, 0, 1]
    assert "piece 0: 2 voxels converted to hexahedra (VTK points 0,1,3,2,4,5,7,6)" in m.notes
    assert "piece 0: 2 triangle strips converted to 5 triangles (cell data repeated)" in m.notes


@pytest.mark.parametrize("name", ["compressed.vtk-app64lzma-u64.vtu",
                                  "compressed.vtk-inlinelzma.vtu", "compressed.meshio-lzma.vtu"])
def test_lzma_reads_like_meshio(data_dir, name):
    """meshio 5.0 reads VTK's LZMA files and its own compression="lzma" one (not LZ4, which
    test_reads_like_vtk compares with VTK): the same values."""
    import meshio
    ref = meshio.read(data_dir / "meshes" / name)
    m = meshdock.read(data_dir / "meshes" / name)
    np.testing.assert_array_equal(m.points, ref.points)
    assert [(b.type, b.data.tolist()) for b in m.cells] == [
        (b.type, b.data.tolist()) for b in ref.cells]
    for k, a in ref.point_data.items():
        assert m.point_data[k].dtype == a.dtype, k
        np.testing.assert_array_equal(m.point_data[k], a, err_msg=k)
    for k, parts in ref.cell_data.items():
        np.testing.assert_array_equal(np.concatenate(m.cell_data[k]), np.concatenate(parts))
    assert m.notes == []


def test_image_points(data_dir):
    m = meshdock.read(data_dir / "meshes" / "image.vtk-ascii.vti")
    # Extent 1..3, -1..1, 0..2; origin (0.5, -1, 2); spacing (0.25, 0.5, 1).
    np.testing.assert_array_equal(m.points[0], [0.75, -1.5, 2.0])
    np.testing.assert_array_equal(m.points[-1], [1.25, -0.5, 4.0])
    assert m.cells[0].data[0].tolist() == [0, 1, 4, 3, 9, 10, 13, 12]


def test_format_names(data_dir):
    for ext in ("vtp", "vts", "vtr", "vti", "pvtu", "pvtp", "pvts", "pvtr", "pvti"):
        src = next(f for f in FILES if f.endswith("." + ext))
        assert len(meshdock.read(data_dir / "meshes" / src, format=ext).points) > 0


def _pvtu(tmp_path, source):
    text = (pathlib.Path(__file__).resolve().parents[1] / "data" / "meshes" /
            "pieces-ascii.pvtu").read_text()
    p = tmp_path / "sub" / "bad.pvtu"
    p.parent.mkdir(exist_ok=True)
    (p.parent / "pieces-ascii_0.vtu").write_bytes(
        (pathlib.Path(__file__).resolve().parents[1] / "data" / "meshes" /
         "pieces-ascii_0.vtu").read_bytes())
    p.write_text(text.replace('Source="pieces-ascii_1.vtu"', f'Source="{source}"'))
    return p


@pytest.mark.parametrize("source", ["../outside.vtu", "/etc/passwd", "a/../../x.vtu"])
def test_pvtu_refuses_pieces_outside_its_directory(tmp_path, data_dir, source):
    (tmp_path / "outside.vtu").write_bytes(
        (data_dir / "meshes" / "pieces-ascii_1.vtu").read_bytes())
    with pytest.raises(meshdock.ReadError, match=f"piece '{source}'"):
        meshdock.read(_pvtu(tmp_path, source))


def test_pvtu_missing_piece_names_it(tmp_path):
    with pytest.raises(meshdock.ReadError, match=r"bad.pvtu:\d+: piece 'nothere.vtu': .*No such"):
        meshdock.read(_pvtu(tmp_path, "nothere.vtu"))


def test_structured_piece_given_twice_is_one_grid(tmp_path, data_dir):
    """Two pieces of one extent (VTK writes that for a dataset it cannot split) are one grid."""
    text = (data_dir / "meshes" / "grid.vtk-ascii.vts").read_text()
    a = text.index("<Piece")
    b = text.index("</Piece>") + len("</Piece>")
    p = tmp_path / "two.vts"
    p.write_text(text[:b] + text[a:b] + text[b:])
    one, two = meshdock.read(data_dir / "meshes" / "grid.vtk-ascii.vts"), meshdock.read(p)
    np.testing.assert_array_equal(two.points, one.points)
    assert two.cells[0].data.tolist() == one.cells[0].data.tolist()
    np.testing.assert_array_equal(two.cell_data["c"][0], one.cell_data["c"][0])
    assert any(n.startswith("2 pieces (2 not empty) assembled") for n in two.notes), two.notes


def test_daemon_reads_pvtu_pieces_under_its_root_only(tmp_path):
    """meshdockd opens a .pvtu's pieces under its roots: beside it they load; a piece that is a
    symlink out of the root, or a name with '..', is refused naming the piece."""
    import grpc
    from daemon_util import Daemon
    pieces = ("pieces-appzlib.pvtu", "pieces-appzlib_0.vtu", "pieces-appzlib_1.vtu")
    d = Daemon(tmp_path, pieces)
    try:
        progress = d.load("pieces-appzlib.pvtu", "p")
        assert any(p.message == "60 points, 60 cells" for p in progress), progress
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "x.vtu").write_bytes((d.root / "pieces-appzlib_1.vtu").read_bytes())
        text = (d.root / "pieces-appzlib.pvtu").read_text()
        os.symlink(outside / "x.vtu", d.root / "link.vtu")
        for source in ("link.vtu", "../outside/x.vtu"):
            (d.root / "bad.pvtu").write_text(
                text.replace('Source="pieces-appzlib_1.vtu"', f'Source="{source}"'))
            with pytest.raises(grpc.RpcError) as e:
                d.load("bad.pvtu", "bad", replace=True)
            assert f"piece '{source}'" in e.value.details(), e.value.details()
            assert e.value.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                                      grpc.StatusCode.PERMISSION_DENIED)
    finally:
        assert d.stop() == 0


def test_daemon_reads_pvts_pieces_under_its_root_only(tmp_path):
    """A .pvts goes the .pvtu's way in meshdockd: its pieces under the root load as one grid;
    a piece name with '..' is refused naming the piece, as is a piece of another type."""
    import grpc
    from daemon_util import Daemon
    pieces = ("pgrid-appzlib.pvts", "pgrid-appzlib_0.vts", "pgrid-appzlib_1.vts",
              "pieces-ascii_0.vtu")
    d = Daemon(tmp_path, pieces)
    try:
        progress = d.load("pgrid-appzlib.pvts", "g")
        assert any(p.message == "24 points, 6 cells" for p in progress), progress
        text = (d.root / "pgrid-appzlib.pvts").read_text()
        for source, why in (("../pgrid-appzlib_1.vts", "refused"),
                            ("pieces-ascii_0.vtu", "must be StructuredGrid")):
            (d.root / "bad.pvts").write_text(
                text.replace('Source="pgrid-appzlib_1.vts"', f'Source="{source}"'))
            with pytest.raises(grpc.RpcError) as e:
                d.load("bad.pvts", "bad", replace=True)
            assert source in e.value.details() and why in e.value.details(), e.value.details()
    finally:
        assert d.stop() == 0


@pytest.mark.parametrize("cell_type", [7, 69])  # a polygon, a Lagrange triangle
def test_a_hostile_offset_of_a_cell_sized_by_its_offsets_is_an_error(tmp_path, cell_type):
    """Before: a polygon's (or an arbitrary-order cell's) node count came from its offsets and
    sized the block before they were checked: an offset of 10**15 raised MemoryError (the fuzzer
    found it in appended offsets; tests/data/fuzz/vtu_reader/lagrange-huge-offset.vtu). Now a
    ReadError naming the cell."""
    p = tmp_path / "hostile.vtu"
    p.write_text(
        '<?xml version="1.0"?>\n<VTKFile type="UnstructuredGrid" version="1.0">\n'
        '<UnstructuredGrid><Piece NumberOfPoints="6" NumberOfCells="2">\n'
        '<Points><DataArray type="Float64" NumberOfComponents="3" format="ascii">'
        '0 0 0 1 0 0 0 1 0 0 0 1 1 1 1 2 2 2</DataArray></Points>\n<Cells>\n'
        '<DataArray type="Int64" Name="connectivity" format="ascii">0 1 2 3 4 5</DataArray>\n'
        '<DataArray type="Int64" Name="offsets" format="ascii">3 1000000000000000</DataArray>\n'
        f'<DataArray type="UInt8" Name="types" format="ascii">5 {cell_type}</DataArray>\n'
        '</Cells></Piece></UnstructuredGrid></VTKFile>\n')
    with pytest.raises(meshdock.ReadError, match=r"hostile.vtu:\d+: piece 0: cell 1 has "
                                                 r"999999999999997 nodes ending at "
                                                 r"1000000000000000, outside the 6-entry "
                                                 r"connectivity"):
        meshdock.read(p)


_TET = ('<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian">\n'
        '<UnstructuredGrid>\n<Piece NumberOfPoints="4" NumberOfCells="1">\n'
        '<Points><DataArray type="Float64" NumberOfComponents="3" format="ascii">'
        '0 0 0 1 0 0 0 1 0 0 0 1</DataArray></Points>\n'
        '<Cells><DataArray type="Int64" Name="connectivity" format="ascii">0 1 2 3</DataArray>\n'
        '<DataArray type="Int64" Name="offsets" format="ascii">4</DataArray>\n'
        '<DataArray type="UInt8" Name="types" format="ascii">10</DataArray></Cells>\n'
        '</Piece>\n</UnstructuredGrid>\n</VTKFile>\n')
_POINTS2 = ('<Points><DataArray type="Float64" NumberOfComponents="3" format="ascii">'
            '9 9 9 8 8 8 7 7 7 6 6 6</DataArray></Points>\n')
_CELLS2 = ('<Cells><DataArray type="Int64" Name="connectivity" format="ascii">3 2 1 0</DataArray>'
           '<DataArray type="Int64" Name="offsets" format="ascii">4</DataArray>'
           '<DataArray type="UInt8" Name="types" format="ascii">9</DataArray></Cells>\n')
_CONN2 = '<DataArray type="Int64" Name="connectivity" format="ascii">3 2 1 0</DataArray>\n'


@pytest.mark.parametrize("case", ["points", "cells", "connectivity"])
def test_a_second_points_cells_or_connectivity_is_refused_naming_both_lines(tmp_path, case):
    """What VTK reads of such a piece depends on the element (the last <Points> / <Cells>, the
    first array of a name) and meshio reads otherwise (refuses the first two, takes the last
    array of a name): meshdock refuses the file, naming both lines. It read the last of each."""
    text = {"points": _TET.replace("</Cells>\n", "</Cells>\n" + _POINTS2),
            "cells": _TET.replace("</Cells>\n", "</Cells>\n" + _CELLS2),
            "connectivity": _TET.replace("0 1 2 3</DataArray>\n", "0 1 2 3</DataArray>\n" + _CONN2),
            }[case]
    p = tmp_path / "two.vtu"
    p.write_text(text)
    g = vtk.vtkXMLUnstructuredGridReader()
    g.SetFileName(str(p))
    g.Update()
    out = g.GetOutput()
    cell = [out.GetCell(0).GetPointId(k) for k in range(out.GetCell(0).GetNumberOfPoints())]
    if case == "points":  # VTK: the second <Points>
        assert out.GetPoint(0) == (9.0, 9.0, 9.0)
        match = (r"two.vtu:8: piece 0 \(line 3\) has two <Points> elements \(lines 4 and 8\); a "
                 r"piece has one: which to read is ambiguous")
    elif case == "cells":  # VTK: the second <Cells> (a quad)
        assert out.GetCellType(0) == 9 and cell == [3, 2, 1, 0]
        match = (r"two.vtu:8: piece 0 \(line 3\) has two <Cells> elements \(lines 5 and 8\); a "
                 r"piece has one: which to read is ambiguous")
    else:  # VTK: the first connectivity
        assert out.GetCellType(0) == 10 and cell == [0, 1, 2, 3]
        match = (r"two.vtu:6: piece 0: <Cells> has two arrays named 'connectivity' \(lines 5 "
                 r"and 6\); which to read is ambiguous \(VTK reads the first, meshio the last\)")
    with pytest.raises(meshdock.ReadError, match=match):
        meshdock.read(p)
    assert meshdock.read(_write(tmp_path / "one.vtu", _TET)).cells[0].data.tolist() == [
        [0, 1, 2, 3]]


def _write(path, text):
    path.write_text(text)
    return path


def _vti_piece(extent, ktype, kvalues, qvalues):
    return (f'<Piece Extent="{extent}"><PointData><DataArray type="Int32" Name="q" '
            f'format="ascii">{qvalues}</DataArray></PointData>\n<CellData><DataArray '
            f'type="{ktype}" Name="k" format="ascii">{kvalues}</DataArray></CellData></Piece>\n')


_Q0 = "0 1 2 5 6 7 10 11 12 15 16 17 20 21 22 25 26 27"
_Q1 = "2 3 4 7 8 9 12 13 14 17 18 19 22 23 24 27 28 29"


@pytest.mark.parametrize("kind", ["vti", "pvti"])
def test_structured_pieces_of_different_types_are_read_in_their_common_type(tmp_path, kind):
    """Cell data 'k' is Int32 in one piece, Float64 in the other: meshdock reads it as Float64
    in both (their common type, with a note), as it reads the pieces of a .vtu; VTK's .vti
    reader reads every piece into the first one's type (Int32), the same values here. Before,
    a ReadError."""
    def vti(whole, pieces):
        return ('<VTKFile type="ImageData" version="0.1">\n<ImageData WholeExtent="' + whole +
                '" Origin="0 0 0" Spacing="1 1 1">\n' + "".join(pieces) +
                "</ImageData></VTKFile>\n")

    extents = ["0 2 0 2 0 1", "2 4 0 2 0 1"]
    pieces = [_vti_piece(extents[0], "Int32", "0 1 4 5", _Q0),
              _vti_piece(extents[1], "Float64", "2 3 6 7", _Q1)]
    if kind == "vti":  # each piece's q on one line, its k on the next
        p = _write(tmp_path / "t.vti", vti("0 4 0 2 0 1", pieces))
        r = vtk.vtkXMLImageDataReader()
        where = ["piece 0 (line 4)", "piece 1 (line 6)"]
    else:
        for i, piece in enumerate(pieces):
            _write(tmp_path / f"t_{i}.vti", vti(extents[i], [piece]))
        p = _write(tmp_path / "t.pvti", (
            '<VTKFile type="PImageData" version="0.1">\n<PImageData WholeExtent="0 4 0 2 0 1" '
            'GhostLevel="0" Origin="0 0 0" Spacing="1 1 1">\n'
            '<PPointData><PDataArray type="Int32" Name="q"/></PPointData>\n'
            '<PCellData><PDataArray type="Int32" Name="k"/></PCellData>\n'
            '<Piece Extent="0 2 0 2 0 1" Source="t_0.vti"/>\n'
            '<Piece Extent="2 4 0 2 0 1" Source="t_1.vti"/>\n</PImageData></VTKFile>\n'))
        where = [f"piece 0 of {tmp_path}/t_{i}.vti (line 4)" for i in range(2)]
    if kind == "vti":
        r.SetFileName(str(p))
        r.Update()
        theirs = numpy_support.vtk_to_numpy(r.GetOutput().GetCellData().GetArray("k"))
        assert theirs.dtype == np.int32  # the first piece's type
    else:
        # VTK 9.1's vtkXMLPImageDataReader copies the Float64 piece's bytes into its Int32
        # array (values like 1073741824): each piece as VTK reads it, placed in the grid's
        # cells (4 x 2; piece 0 has x 0..1, piece 1 x 2..3), is the reference.
        theirs = np.zeros(8)
        for i, cells in enumerate(([0, 1, 4, 5], [2, 3, 6, 7])):
            r = vtk.vtkXMLImageDataReader()
            r.SetFileName(str(tmp_path / f"t_{i}.vti"))
            r.Update()
            theirs[cells] = numpy_support.vtk_to_numpy(r.GetOutput().GetCellData().GetArray("k"))
    m = meshdock.read(p)
    k = m.cell_data["k"][0]
    assert k.dtype == np.float64
    np.testing.assert_array_equal(k, theirs)
    np.testing.assert_array_equal(k, np.arange(8.0))
    np.testing.assert_array_equal(m.point_data["q"], np.arange(30, dtype=np.int32))
    assert (f"cell data 'k' is Int32 in {where[0]} and Float64 in {where[1]}: read as Float64 "
            "in every piece, their common type") in m.notes, m.notes
