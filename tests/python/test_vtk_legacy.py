"""Legacy VTK beyond UNSTRUCTURED_GRID tetrahedra: POLYDATA, STRUCTURED_POINTS,
STRUCTURED_GRID, RECTILINEAR_GRID, COLOR_SCALARS / TENSORS / LOOKUP_TABLE and the cell types
meshio has no block for, each compared with what VTK 9.1 itself reads from the same file
(tests/data/meshes/{poly,spts,spts2d,sgrid,rgrid,ucells}.{ascii,bin}.vtk, written by
tests/data/tools/make_vtk_legacy.py). meshio 5.0 cannot read these (no POLYDATA; its
structured readers fail on VTK 9's 5.1 files), so VTK is the reference."""

import numpy as np
import pytest

import meshdock
from daemon_util import read_peak

vtk = pytest.importorskip("vtk")
from vtk.util import numpy_support as ns  # noqa: E402

FILES = [f"{stem}.{mode}.vtk" for stem in ("poly", "spts", "spts2d", "sgrid", "rgrid", "ucells")
         for mode in ("ascii", "bin")]

# VTK cell type -> (meshio type, how its ids become meshio cells).
_VOXEL = [0, 1, 3, 2, 4, 5, 7, 6]  # VTK's voxel -> hexahedron point order
_PIXEL = [0, 1, 3, 2]


def _vtk_cells(cell):
    """The meshio cells VTK's cell `cell` stands for: VTK's own decomposition for strips
    (Triangulate), the documented point reorder for voxels / pixels of structured data."""
    t = cell.GetCellType()
    ids = [cell.GetPointId(k) for k in range(cell.GetNumberOfPoints())]
    if t == vtk.VTK_VERTEX:
        return [("vertex", ids)]
    if t == vtk.VTK_POLY_VERTEX:
        return [("vertex", [i]) for i in ids]
    if t == vtk.VTK_LINE:
        return [("line", ids)]
    if t == vtk.VTK_POLY_LINE:
        return [("line", ids[k:k + 2]) for k in range(len(ids) - 1)]
    if t == vtk.VTK_TRIANGLE_STRIP:
        pt_ids, pts = vtk.vtkIdList(), vtk.vtkPoints()
        cell.Triangulate(0, pt_ids, pts)
        flat = [pt_ids.GetId(k) for k in range(pt_ids.GetNumberOfIds())]
        return [("triangle", flat[k:k + 3]) for k in range(0, len(flat), 3)]
    if t == vtk.VTK_VOXEL:
        return [("hexahedron", [ids[k] for k in _VOXEL])]
    if t == vtk.VTK_PIXEL:  # 2D image data: VTK's pixel, which meshdock writes as a quad
        return [("quad", [ids[k] for k in _PIXEL])]
    name = {vtk.VTK_TRIANGLE: "triangle", vtk.VTK_QUAD: "quad", vtk.VTK_POLYGON: "polygon",
            vtk.VTK_TETRA: "tetra", vtk.VTK_HEXAHEDRON: "hexahedron"}[t]
    return [(name, ids)]


def _read_vtk(path):
    r = vtk.vtkDataSetReader()
    r.SetFileName(str(path))
    for flag in ("Scalars", "Vectors", "Normals", "Tensors", "ColorScalars", "Fields",
                 "TCoords"):
        getattr(r, f"ReadAll{flag}On")()
    r.Update()
    return r.GetOutput()


def _arrays(data):
    out = {}
    for i in range(data.GetNumberOfArrays()):
        a = data.GetArray(i)
        out[a.GetName()] = ns.vtk_to_numpy(a)
    return out


@pytest.mark.parametrize("name", FILES)
def test_reads_like_vtk(data_dir, name):
    path = data_dir / "meshes" / name
    ds = _read_vtk(path)
    m = meshdock.read(path)

    ref_points = np.array([ds.GetPoint(i) for i in range(ds.GetNumberOfPoints())])
    assert m.points.dtype == np.float64
    np.testing.assert_allclose(m.points, ref_points, rtol=0, atol=1e-6)

    expect, source = [], []
    for c in range(ds.GetNumberOfCells()):
        pieces = _vtk_cells(ds.GetCell(c))
        expect += [(t, [int(i) for i in ids]) for t, ids in pieces]
        source += [c] * len(pieces)
    got = [(b.type, [int(i) for i in row]) for b in m.cells for row in np.asarray(b.data)]
    assert got == expect
    for b in m.cells:
        assert b.data.dtype == np.int64

    ref_pd = _arrays(ds.GetPointData())
    assert set(m.point_data) == set(ref_pd)
    for k, v in ref_pd.items():
        assert m.point_data[k].dtype == v.dtype, k
        np.testing.assert_array_equal(np.asarray(m.point_data[k]), v, err_msg=k)
    ref_cd = _arrays(ds.GetCellData())
    assert set(m.cell_data) == set(ref_cd)
    for k, v in ref_cd.items():
        assert len(m.cell_data[k]) == len(m.cells), k
        mine = np.concatenate([np.asarray(a) for a in m.cell_data[k]])
        assert mine.dtype == v.dtype, k
        np.testing.assert_array_equal(mine, v[source], err_msg=k)


def test_polydata_values_and_notes(data_dir):
    for mode in ("ascii", "bin"):
        m = meshdock.read(data_dir / "meshes" / f"poly.{mode}.vtk")
        assert [(b.type, len(b)) for b in m.cells] == [
            ("vertex", 4), ("line", 5), ("triangle", 1), ("quad", 1), ("polygon", 1),
            ("triangle", 7)]
        assert m.cells[4].data.tolist() == [[4, 6, 7, 5, 2]]
        # The 6-point strip: alternate triangles flipped, as VTK does.
        assert m.cells[5].data[1:5].tolist() == [[6, 7, 8], [8, 7, 9], [8, 9, 10], [10, 9, 11]]
        assert m.point_data["stress"].shape == (12, 9)
        assert m.point_data["stress"][1].tolist() == list(range(9, 18))
        rgba = np.concatenate(m.cell_data["rgba"])
        assert rgba.dtype == np.uint8 and rgba.shape == (19, 4)
        assert rgba[0].tolist() == [0, 7, 14, 21]  # the poly-vertex's colour, repeated:
        assert rgba[1:4].tolist() == [[28, 35, 42, 49]] * 3
        notes = "\n".join(m.notes)
        assert "1 poly-vertex cells converted to 3 vertices" in notes
        assert "1 poly-lines converted to 3 line segments" in notes
        assert "2 triangle strips converted to 6 triangles" in notes
        assert "lookup table 'lookup_table' (3 colours) not kept" in notes


def test_structured_values_and_notes(data_dir):
    m = meshdock.read(data_dir / "meshes" / "spts.bin.vtk")
    assert [(b.type, len(b)) for b in m.cells] == [("hexahedron", 6)]
    assert m.points[:4].tolist() == [[1.0, -2.0, 0.5], [1.5, -2.0, 0.5], [2.0, -2.0, 0.5],
                                     [1.0, -1.75, 0.5]]
    assert m.cells[0].data[0].tolist() == [0, 1, 4, 3, 12, 13, 16, 15]
    assert m.cell_data["cval"][0].tolist() == [0.0, 1.5, 3.0, 4.5, 6.0, 7.5]
    assert m.notes == ["vtk: DATASET STRUCTURED_POINTS 3x4x2 converted to 24 points and 6 "
                       "hexahedron cells"]
    m = meshdock.read(data_dir / "meshes" / "rgrid.ascii.vtk")
    assert m.points[-1].tolist() == [6.0, 2.0, 1.0]
    assert m.cell_data["id"][0].tolist() == [0, 10, 20, 30, 40, 50]
    m = meshdock.read(data_dir / "meshes" / "sgrid.bin.vtk")
    assert m.cells[0].data.tolist() == [[0, 1, 4, 3], [1, 2, 5, 4]]
    assert m.point_data["disp"][5].tolist() == [4.0, 2.4, 0.0]


def test_unstructured_cell_conversions(data_dir):
    m = meshdock.read(data_dir / "meshes" / "ucells.ascii.vtk")
    assert [(b.type, len(b)) for b in m.cells] == [
        ("vertex", 4), ("line", 3), ("triangle", 2), ("hexahedron", 1), ("tetra", 1),
        ("hexahedron", 1)]
    assert m.cells[3].data.tolist() == [[0, 1, 3, 2, 4, 5, 7, 6]]
    assert [a.tolist() for a in m.cell_data["mat"]] == [
        [0.5, 1.5, 1.5, 1.5], [2.5] * 3, [3.5] * 2, [4.5], [5.5], [6.5]]
    assert any("2 voxels converted to hexahedra" in n for n in m.notes)


def _refused(tmp_path, name, body, match):
    """The legacy ASCII file `name` of `body` (what follows its header) is refused, its
    ReadError matching `match`."""
    p = tmp_path / name
    p.write_text("# vtk DataFile Version 4.2\nt\nASCII\n" + body)
    with pytest.raises(meshdock.ReadError, match=match):
        meshdock.read(p)


def test_bad_polydata_names_file_and_section(tmp_path):
    _refused(tmp_path, "bad.vtk", "DATASET POLYDATA\nPOINTS 3 float\n0 0 0 1 0 0 0 1 0\n"
             "POLYGONS 1 3\n2 0 1\n", r"bad.vtk: POLYGONS cell 0 has 2 points")
    _refused(tmp_path, "bad.vtk", "DATASET STRUCTURED_POINTS\nDIMENSIONS 2 2 1\nPOINT_DATA 4\n"
             "SCALARS s float\nLOOKUP_TABLE default\n1 2 3\n", r"bad.vtk:\d+: expected number")
    _refused(tmp_path, "bad.vtk", "DATASET RECTILINEAR_GRID\nDIMENSIONS 2 2 1\n"
             "X_COORDINATES 2 float\n0 1\nY_COORDINATES 1 float\n0\nZ_COORDINATES 1 float\n0\n",
             r"bad.vtk: RECTILINEAR_GRID has 1 Y_COORDINATES")


def test_cell_data_shorter_than_the_cells_is_an_error(tmp_path):
    # CELL_DATA 1 for 2 cells of 2 kinds: the second block's slice would read past the array.
    # The message names the array's line and its CELL_DATA's (it named no line before).
    _refused(tmp_path, "short.vtk",
             "DATASET UNSTRUCTURED_GRID\nPOINTS 5 float\n0 0 0 1 0 0 0 1 0 0 0 1 1 1 1\n"
             "CELLS 2 9\n4 0 1 2 3\n3 1 2 4\nCELL_TYPES 2\n10\n5\nCELL_DATA 1\n"
             "SCALARS mat int 1\nLOOKUP_TABLE default\n7\n",
             r"/short.vtk:14: CELL_DATA array 'mat' has 1 rows for 2 cells "
             r"\(CELL_DATA 1 on line 13\)$")


@pytest.mark.parametrize("section", ["POINT_DATA 4", "CELL_DATA 1"])
def test_a_field_array_of_another_length_than_its_section_names_both_lines(tmp_path, section):
    """A FIELD array in POINT_DATA / CELL_DATA whose own tuple count is not its section's: the
    message names the array's line and the section's (it named the line of the array's last
    value), and comes before the values are read."""
    target, n = section.split()
    _refused(tmp_path, "field.vtk",
             "DATASET POLYDATA\nPOINTS 4 float\n0 0 0 1 0 0 0 1 0 1 1 0\nPOLYGONS 1 5\n4 0 1 3 2\n"
             f"{section}\nFIELD FieldData 1\nT 1 3 double\n1\n2\n3\n",
             rf"/field.vtk:11: {target} array 'T' has 3 tuples, expected {n} "
             rf"\({section} on line 9\)$")


@pytest.mark.parametrize("version", ["5.1", "4.2"])
def test_binary_read_holds_little_beyond_its_arrays(tmp_path, version):
    """A big-endian binary file is read with pread into the arrays and swapped there; a
    one-kind cell list keeps no offsets or types. 500k tetrahedra: 1.18x today; it was 2.81x
    (5.1: the file read whole, offsets and types widened beside the arrays) and 4.02x (4.2: the
    count-prefixed list widened, then copied twice)."""
    rng = np.random.default_rng(5)
    npts, n = 80_000, 500_000
    points = rng.random((npts, 3))
    tets = rng.integers(0, npts, (n, 4))
    head = f"# vtk DataFile Version {version}\npeak\nBINARY\nDATASET UNSTRUCTURED_GRID\n"
    path = tmp_path / "peak.vtk"
    with open(path, "wb") as f:
        f.write(f"{head}POINTS {npts} double\n".encode() + points.astype(">f8").tobytes())
        if version == "5.1":
            f.write(f"\nCELLS {n + 1} {4 * n}\nOFFSETS vtktypeint64\n".encode())
            f.write(np.arange(0, 4 * n + 1, 4, dtype=">i8").tobytes())
            f.write(b"\nCONNECTIVITY vtktypeint64\n" + tets.astype(">i8").tobytes())
        else:
            f.write(f"\nCELLS {n} {5 * n}\n".encode())
            f.write(np.hstack([np.full((n, 1), 4), tets]).astype(">i4").tobytes())
        f.write(f"\nCELL_TYPES {n}\n".encode() + np.full(n, 10, dtype=">i4").tobytes())
        f.write(f"\nCELL_DATA {n}\nFIELD FieldData 1\nmat 1 {n} int\n".encode())
        f.write(np.ones(n, dtype=">i4").tobytes() + b"\n")
    peak, ids, cells = read_peak(path)
    assert (ids, cells) == (int(tets.sum()), n)
    assert peak < 1.5, f"peak {peak:.2f}x the arrays"


# ---- what VTK 9.1's legacy writer puts beyond plain arrays (make_vtk_legacy_vtk9.py) ----------
V9_FILES = [f"{stem}.{mode}.vtk" for stem in ("v9names", "v9types", "v9poly.v42", "v9poly.v51")
            for mode in ("ascii", "bin")] + ["v9lower.vtk"]


def _vtk_values(a):
    """An array as VTK holds it: bit arrays value by value (numpy_support has no bits), string
    arrays as None (meshdock skips them)."""
    if isinstance(a, vtk.vtkStringArray):
        return None
    if isinstance(a, vtk.vtkBitArray):
        n = a.GetNumberOfTuples() * a.GetNumberOfComponents()
        v = np.array([a.GetValue(i) for i in range(n)], dtype=np.uint8)
        return v.reshape(a.GetNumberOfTuples(), -1).squeeze()
    return ns.vtk_to_numpy(a)


def _all_arrays(data):
    return {data.GetAbstractArray(i).GetName(): _vtk_values(data.GetAbstractArray(i))
            for i in range(data.GetNumberOfArrays())}


@pytest.mark.parametrize("name", V9_FILES)
def test_vtk9_writer_files_read_like_vtk(data_dir, name):
    """%XX-encoded names decoded, METADATA blocks skipped, vtkIdType / bit / signed_char /
    uint64 arrays, polyhedra from the inline face stream, float POINTS as float32 values, lower
    case keywords: every value as VTK 9.1 reads it; string arrays skipped with a note."""
    path = data_dir / "meshes" / name
    ds = _read_vtk(path)
    m = meshdock.read(path)
    ref_points = ns.vtk_to_numpy(ds.GetPoints().GetData()).astype(np.float64)
    np.testing.assert_array_equal(m.points, ref_points)  # exact: float32 rounding as VTK

    expect, source = [], []
    for c in range(ds.GetNumberOfCells()):
        cell = ds.GetCell(c)
        if cell.GetCellType() == vtk.VTK_POLYHEDRON:
            stream = vtk.vtkIdList()
            ds.GetFaceStream(c, stream)
            s = [stream.GetId(k) for k in range(stream.GetNumberOfIds())]
            faces, at = [], 1
            for _ in range(s[0]):
                faces.append(s[at + 1:at + 1 + s[at]])
                at += 1 + s[at]
            pieces = [("polyhedron", faces)]
        else:
            pieces = _vtk_cells(cell)
        expect += pieces
        source += [c] * len(pieces)
    got = []
    for b in m.cells:
        for i in range(len(b)):
            cell = b.cell(i)
            got.append((b.type, [[int(v) for v in f] for f in cell] if b.face_offsets is not None
                        else [int(v) for v in cell]))
    assert got == [(t, [list(f) for f in ids] if t == "polyhedron" else list(ids))
                   for t, ids in expect]

    strings = []
    for where, ref, mine in (("POINT_DATA", _all_arrays(ds.GetPointData()), m.point_data),
                             ("CELL_DATA", _all_arrays(ds.GetCellData()), None),
                             ("FIELD", _all_arrays(ds.GetFieldData()), m.field_data)):
        strings += [(k, where) for k, v in ref.items() if v is None]
        ref = {k: v for k, v in ref.items() if v is not None}
        if mine is None:
            assert set(m.cell_data) == set(ref)
            mine = {k: np.concatenate([np.asarray(a) for a in v]) for k, v in m.cell_data.items()}
            ref = {k: v[source] for k, v in ref.items()}
        assert set(mine) == set(ref), where
        for k, v in ref.items():
            assert np.asarray(mine[k]).dtype == v.dtype, k
            np.testing.assert_array_equal(np.asarray(mine[k]), v, err_msg=k)
    for k, where in strings:
        assert (f"vtk: string array '{k}' in {where} skipped: a mesh holds numeric arrays only"
                in m.notes)


def test_vtk9_names_metadata_and_types_values(data_dir):
    """The values themselves, beside VTK's word for them."""
    for mode in ("ascii", "bin"):
        m = meshdock.read(data_dir / "meshes" / f"v9names.{mode}.vtk")
        assert sorted(m.point_data) == ["a b", "c%d", "surface normals", "wall temperature"]
        assert m.cell_data["Druck_ü"][0].tolist() == [7, -8]
        assert m.field_data['100% "sure"'].tolist() == [1.5, 2.5, 3.5]
        assert m.point_data["c%d"].shape == (6, 3)
        if mode == "ascii":  # "POINTS 6 float": the digits' float32 values, not their float64
            assert m.points.tolist()[0] == [float(np.float32(v))
                                            for v in ("0.870249", "0.286817", "0.603148")]
        assert "vtk: component names of 'surface normals' ('n x', 'n_ü', '') not kept" in m.notes
        assert "vtk: component names of 'c%d' ('', 'mid dle', '') not kept" in m.notes
        t = meshdock.read(data_dir / "meshes" / f"v9types.{mode}.vtk")
        assert t.point_data["gid"].dtype == np.int64
        assert t.point_data["gid"].tolist() == [100, 101, 2 ** 31 - 1, -5, 7]
        # VTK 9.1's binary writer packs 5 tuples' bits into (5 - 1) // 8 + 1 bytes, not the 2
        # its reader (and meshdock) take for 10 bits: the last two read from the '\n' after it.
        assert t.point_data["bits"].tolist() == [[1, 0], [1, 1], [0, 0], [1, 0],
                                                 [0, 1] if mode == "ascii" else [0, 0]]
        assert t.point_data["sc"].dtype == np.int8
        assert t.point_data["u64"].tolist() == [2 ** 63 + 10 + i for i in range(5)]
        assert [a.tolist() for a in t.cell_data["after"]] == [[3.25, -1.0]]


# ---- arbitrary-order cells (tests/data/tools/make_vtk_lagrange.py) -------------------------

LAGRANGE = ["lagrange.ascii.vtk", "lagrange.bin.vtk", "lagrange.vtk-ascii.vtu",
            "lagrange.vtk-raw.vtu"]
_ORDER_NAMES = {68: "VTK_LAGRANGE_CURVE", 69: "VTK_LAGRANGE_TRIANGLE",
                70: "VTK_LAGRANGE_QUADRILATERAL", 71: "VTK_LAGRANGE_TETRAHEDRON",
                72: "VTK_LAGRANGE_HEXAHEDRON", 73: "VTK_LAGRANGE_WEDGE", 76: "VTK_BEZIER_TRIANGLE",
                5: "triangle"}


@pytest.mark.parametrize("name", LAGRANGE)
def test_arbitrary_order_cells_read_like_vtk_and_meshio(data_dir, name, tmp_path):
    """Before: "cell 0 has VTK type 68, which is not supported" for what dolfinx and ParaView
    write for higher-order meshes, which meshio reads (the .vtk; it refuses VTU 2.2). Now one
    block per run of one type and node count, named and in VTK's node order as meshio has them;
    they write back to VTU and legacy VTK (VTK reads them), and the other writers refuse them
    naming VTU."""
    path = data_dir / "meshes" / name
    if name.endswith(".vtu"):
        r = vtk.vtkXMLUnstructuredGridReader()
        r.SetFileName(str(path))
        r.Update()
        ds = r.GetOutput()
    else:
        ds = _read_vtk(path)
    m = meshdock.read(path)
    assert m.notes == []
    expect = []
    for c in range(ds.GetNumberOfCells()):
        cell = ds.GetCell(c)
        ids = [cell.GetPointId(k) for k in range(cell.GetNumberOfPoints())]
        expect.append((_ORDER_NAMES[cell.GetCellType()], ids))
    got = [(b.type, [int(i) for i in row]) for b in m.cells for row in np.asarray(b.data)]
    assert got == expect
    # one block per run of one type and node count: the two order-2 triangles share one
    assert [(b.type, len(b.data)) for b in m.cells][2:4] == [("VTK_LAGRANGE_TRIANGLE", 2),
                                                             ("VTK_LAGRANGE_TRIANGLE", 1)]
    deg = np.concatenate([np.asarray(a) for a in m.cell_data["HigherOrderDegrees"]])
    np.testing.assert_array_equal(deg, ns.vtk_to_numpy(ds.GetCellData().GetArray(0)))
    if name.endswith(".vtk"):
        meshio = pytest.importorskip("meshio")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mm = meshio.read(path)
        assert [(c.type, np.asarray(c.data).tolist()) for c in mm.cells] == \
            [(b.type, np.asarray(b.data).tolist()) for b in m.cells]
        np.testing.assert_array_equal(np.concatenate(mm.cell_data["HigherOrderDegrees"]), deg)
    else:
        assert "VTK_BEZIER_TRIANGLE" in [b.type for b in m.cells]
    # Written back: VTU and legacy VTK keep them (VTK reads the same cells); the others refuse.
    for out in ("o.vtu", "o.vtk"):
        meshdock.write(tmp_path / out, m)
        back = meshdock.read(tmp_path / out)
        assert [(b.type, np.asarray(b.data).tolist()) for b in back.cells] == \
            [(b.type, np.asarray(b.data).tolist()) for b in m.cells]
        r = (vtk.vtkXMLUnstructuredGridReader() if out.endswith(".vtu")
             else vtk.vtkUnstructuredGridReader())
        r.SetFileName(str(tmp_path / out))
        r.Update()
        g = r.GetOutput()
        assert [(g.GetCellType(c), g.GetCell(c).GetNumberOfPoints())
                for c in range(g.GetNumberOfCells())] == \
            [(ds.GetCellType(c), ds.GetCell(c).GetNumberOfPoints())
             for c in range(ds.GetNumberOfCells())]
    for out, fmt in (("o.msh", "msh"), ("o.stl", "stl"), ("o.ply", "ply"), ("o.vtp", "vtp")):
        with pytest.raises(meshdock.WriteError, match=r"cells\[0\] \(VTK_LAGRANGE_CURVE.*"
                                                      r"write it as VTU$"):
            meshdock.write(tmp_path / out, m)
