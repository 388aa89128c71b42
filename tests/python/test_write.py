"""meshdock.write -> meshdock.read round trips for every writer (VTU and VTP ascii / raw / zlib,
MSH 4.1 and 2.2 ascii / binary, legacy VTK ascii / binary, STL ascii / binary, OBJ, PLY ascii /
binary, OFF) on every file of tests/data/meshes, the same files read back by meshio 5.0 (VTK's
reader for VTP, which meshio cannot read), and the writers' errors and notes.

What "lossless" means per format:
- VTU keeps everything: the same blocks (their boundaries travel as meshdock:block_sizes), the
  same dtypes, regions (as meshdock:region field data) and field data; writing notes nothing.
- MSH keeps points, every cell in order, regions, gmsh:physical / gmsh:geometrical /
  gmsh:dim_tags (4.1); data comes back as float64 (noted when it was not), field data only as
  physical names [tag, dim] (others noted), blocks split only where a note says so (4.1).
- VTP keeps what VTU keeps for vertex, line and polygon blocks, the blocks in PolyData's order
  (vertices, lines, polygons; noted when that moves one) with cell data and the cell numbers of
  regions moved along; volume and higher-order blocks are refused naming the block.
- Legacy VTK keeps points, cells (as runs of one type), data in its dtypes, field data, and
  regions as meshdock:region field data; writing notes nothing. Polyhedra are refused.
- STL / OBJ / PLY / OFF hold faces only (other blocks are refused naming the block); STL splits
  quads and polygons into triangle fans (noted) and binary STL rounds to float32 (noted); data
  they cannot hold is noted.
"""
import warnings

import numpy as np
import pytest

import meshdock

ENCODINGS = [("vtu", "ascii"), ("vtu", "raw"), ("vtu", "zlib"), ("msh", "ascii"), ("msh", "binary")]
READABLE = (".msh", ".vtu", ".vtk", ".stl", ".off", ".obj", ".ply")


def _files(data_dir):
    return sorted(p.name for p in (data_dir / "meshes").iterdir() if p.suffix in READABLE)


def pytest_generate_tests(metafunc):
    if "mesh_file" in metafunc.fixturenames:
        import conftest
        metafunc.parametrize("mesh_file", _files(conftest.DATA))


def _eq(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, what
    assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), what


def _cell_runs(mesh):
    """Cells as runs of one type: [(type, connectivity...)] with consecutive blocks merged
    (those of one node count: polygons and VTK's arbitrary-order cells come in several)."""
    runs = []
    for b in mesh.cells:
        parts = [b.data] + ([b.offsets] if b.offsets is not None else [])
        if runs and runs[-1][0] == b.type and b.offsets is None and \
                runs[-1][1][-1].shape[1:] == b.data.shape[1:]:
            runs[-1][1].append(b.data)
        else:
            runs.append((b.type, parts))
    return [(t, np.concatenate(p)) for t, p in runs]


def _concat(parts):
    return np.concatenate([np.asarray(p) for p in parts]) if parts else np.zeros(0)


def _eq_cells(back, src, fmt):
    """The cell runs of `back` (read from a `fmt` file) equal those of `src`, in the order the
    reader gives them: read_obj gives faces, then lines, then points, each in file order."""
    want = src
    if fmt == "obj":
        order = {"line": 1, "vertex": 2}
        want = meshdock.Mesh(src.points, sorted(src.cells, key=lambda b: order.get(b.type, 0)))
    assert [t for t, _ in _cell_runs(back)] == [t for t, _ in _cell_runs(want)]
    for (t, a), (_, b) in zip(_cell_runs(back), _cell_runs(want)):
        _eq(a, b, f"cells of type {t}")


def _regions(mesh):
    return {(r.name, r.kind, r.dim, r.tag): np.sort(r.entries, axis=0).tolist() for r in mesh.regions}


def _assert_same_data(back, src, order):
    """Point, cell and field data of `back` are those of `src` in their dtypes, the cell data
    of src's blocks taken in `order` (VTU: as they are; VTP: PolyData's order)."""
    assert set(back.point_data) == set(src.point_data)
    for k, v in src.point_data.items():
        assert back.point_data[k].dtype == v.dtype, k
        _eq(back.point_data[k].reshape(v.shape), v, k)
    assert set(back.cell_data) == set(src.cell_data)
    for k, parts in src.cell_data.items():
        want, got = _concat([parts[b] for b in order]), _concat(back.cell_data[k])
        assert got.dtype == want.dtype, k
        _eq(got.reshape(want.shape), want, k)
    assert {k: v.tolist() for k, v in back.field_data.items()} == \
        {k: np.atleast_1d(v).tolist() for k, v in src.field_data.items()}


def _write_to(out, mesh, **kwargs):
    """meshdock.write(out, mesh, **kwargs), its notes checked to be the MeshWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes = meshdock.write(out, mesh, **kwargs)
    assert [str(w.message) for w in caught if w.category is meshdock.MeshWarning] == notes
    return out, notes


def _write(tmp_path, mesh, fmt, enc):
    return _write_to(tmp_path / f"out.{fmt}", mesh, encoding=enc)  # the format from the name


def _assert_msh_cell_and_field_data(back, src, notes):
    """What MSH 4.1 and 2.2 both keep of `src`'s cell and field data, read `back`."""
    for k, parts in src.cell_data.items():
        if k == "gmsh:physical" and not np.any(_concat(parts)):
            continue  # all zero: no physical groups, which gmsh does not write
        got = _concat(back.cell_data[k])
        _eq(got.reshape(_concat(parts).shape), _concat(parts).astype(got.dtype), k)
    for k, v in src.field_data.items():
        if k in back.field_data:
            _eq(back.field_data[k], v, k)
        else:
            assert f"field_data '{k}' is not written: MSH holds no field data but physical " \
                "names [tag, dim]" in notes


def _unwritable_in_msh(mesh):
    ok = {"vertex", "line", "triangle", "quad", "tetra", "hexahedron", "wedge", "pyramid", "line3",
          "triangle6", "quad9", "tetra10", "hexahedron27", "quad8", "hexahedron20", "wedge15",
          "pyramid13"}
    return [b.type for b in mesh.cells if b.type not in ok or b.offsets is not None]


@pytest.mark.parametrize("fmt,enc", ENCODINGS)
def test_round_trip(data_dir, tmp_path, mesh_file, fmt, enc):
    src = meshdock.read(data_dir / "meshes" / mesh_file)
    if fmt == "msh" and _unwritable_in_msh(src):
        with pytest.raises(meshdock.WriteError, match="has no Gmsh element type; write it as VTU"):
            meshdock.write(tmp_path / "out.msh", src, encoding=enc)
        assert not (tmp_path / "out.msh").exists()
        assert list(tmp_path.iterdir()) == []  # no temporary left behind
        return
    out, notes = _write(tmp_path, src, fmt, enc)
    back = meshdock.read(out)
    assert back.notes == []
    _eq(back.points, src.points, "points")
    _eq_cells(back, src, fmt)
    assert _regions(back) == _regions(src)

    if fmt == "vtu":
        assert notes == []
        assert [(b.type, len(b)) for b in back.cells] == [(b.type, len(b)) for b in src.cells]
        for x, y in zip(back.cells, src.cells):
            _eq(x.data, y.data, x.type)
            for attr in ("offsets", "face_offsets"):
                assert (getattr(x, attr) is None) == (getattr(y, attr) is None)
                if getattr(x, attr) is not None:
                    _eq(getattr(x, attr), getattr(y, attr), attr)
        _assert_same_data(back, src, range(len(src.cells)))
        return

    # MSH
    split = [n for n in notes if " split at cell " in n]
    if not split:
        assert [(b.type, len(b)) for b in back.cells] == [(b.type, len(b)) for b in src.cells]
    for k, v in src.point_data.items():
        if k == "gmsh:dim_tags":
            _eq(back.point_data[k], v, k)
            continue
        assert back.point_data[k].dtype == np.float64
        _eq(back.point_data[k].reshape(v.shape), v.astype(np.float64), k)
        if v.dtype != np.float64:
            assert f"point_data '{k}' written as float64 (MSH data holds doubles only)" in notes
    _assert_msh_cell_and_field_data(back, src, notes)


def test_round_trip_counts(data_dir):
    # The parametrisation above covers every readable file: 101 files x 5 writers (8 of them the
    # .vtu files of tests/data/tools/make_xml_vtk.py: strings.*, pieces-*_N; 8 those of
    # tests/data/tools/make_xml_vtk_cells.py: merged.*, compressed.*; 9 the MSH versions
    # of tests/data/tools/make_msh_versions.py; 5 the surface files of test_surface_readers.py;
    # 12 the legacy .vtk of tests/data/tools/make_vtk_legacy.py; 9 those of
    # make_vtk_legacy_vtk9.py; 4 the lagrange.* of make_vtk_lagrange.py).
    assert len(_files(data_dir)) == 101


def test_write_keeps_a_user_built_mesh(tmp_path):
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=np.float64)
    mesh = meshdock.Mesh(
        points=pts,
        cells=[meshdock.CellBlock("tetra", np.array([[0, 1, 2, 3]])),
               meshdock.CellBlock("triangle", np.array([[1, 2, 4], [0, 1, 2]]))],
        point_data={"t": np.arange(5, dtype=np.float32)},
        cell_data={"id": [np.array([7], dtype=np.int32), np.array([8, 9], dtype=np.int32)]},
        regions=[meshdock.Region("top", "cell", 2, 5, np.array([1, 2])),
                 meshdock.Region("tip", "point", 0, 9, np.array([4]))])
    for fmt in ("vtu", "msh"):
        out, notes = _write(tmp_path, mesh, fmt, None)
        back = meshdock.read(out)
        _eq(back.points, pts, "points")
        assert back.cells[0].data.tolist() == [[0, 1, 2, 3]]
        assert back.cells[1].data.tolist() == [[1, 2, 4], [0, 1, 2]]
        assert _regions(back)[("top", "cell", 2, 5)] == [1, 2]
        assert _regions(back)[("tip", "point", 0, 9)] == [4]
        if fmt == "vtu":
            assert notes == [] and back.point_data["t"].dtype == np.float32
        else:
            # The point region needs a vertex element; int / float32 data become float64.
            assert notes == ["added 1 vertex elements to carry point region tags 9 (gmsh keeps "
                             "point groups on vertices)",
                             "point_data 't' written as float64 (MSH data holds doubles only)",
                             "cell_data 'id' written as float64 (MSH data holds doubles only)"]
            assert back.cells[-1].type == "vertex" and back.cells[-1].data.tolist() == [[4]]
            assert back.cell_data["id"][0].tolist() == [7.0]
            assert back.cell_data["id"][1].tolist() == [8.0, 9.0]
            assert back.cell_data["gmsh:physical"][0].tolist() == [0]
            assert back.cell_data["gmsh:physical"][1].tolist() == [5, 5]


def test_partial_region_splits_msh_blocks_with_a_note(tmp_path):
    pts = np.random.default_rng(1).random((6, 3))
    mesh = meshdock.Mesh(points=pts,
                         cells=[meshdock.CellBlock("triangle", np.array([[0, 1, 2], [1, 2, 3], [3, 4, 5]]))],
                         regions=[meshdock.Region("mid", "cell", 2, 3, np.array([1]))])
    out, notes = _write(tmp_path, mesh, "msh", "ascii")
    assert notes == ["cells[0] (triangle) split at cell 1: its physical groups or entity change there",
                     "cells[0] (triangle) split at cell 2: its physical groups or entity change there"]
    back = meshdock.read(out)
    assert [len(b) for b in back.cells] == [1, 1, 1]
    assert _regions(back) == {("mid", "cell", 2, 3): [1]}


def test_polyhedra_round_trip_through_vtu_and_refuse_msh(data_dir, tmp_path):
    src = meshdock.read(data_dir / "meshes" / "ragged.vtk-ascii.vtu")
    out, notes = _write(tmp_path, src, "vtu", "raw")
    back = meshdock.read(out)
    assert [f.tolist() for f in back.cells[1].cell(0)] == [f.tolist() for f in src.cells[1].cell(0)]
    with pytest.raises(meshdock.WriteError,
                       match=r"cells\[1\] \(polyhedron, ragged\) has no Gmsh element type"):
        meshdock.write(tmp_path / "x.msh", src)


def test_ragged_polygon_block_writes_to_vtu(tmp_path):
    pts = np.random.default_rng(2).random((7, 3))
    block = meshdock.CellBlock("polygon", np.array([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3]),
                               offsets=np.array([0, 7, 11]))
    out, _ = _write(tmp_path, meshdock.Mesh(points=pts, cells=[block]), "vtu", "ascii")
    back = meshdock.read(out)
    # VTU readers split polygons by size (meshio's rule), so the ragged block comes back as two
    # fixed-size polygon blocks holding the same cells.
    assert [(b.type, b.data.tolist()) for b in back.cells] == [
        ("polygon", [[0, 1, 2, 3, 4, 5, 6]]), ("polygon", [[0, 1, 2, 3]])]


@pytest.mark.parametrize("mutate,message", [
    (lambda m: m.cells[0].data.__setitem__((0, 0), 99), r"cells\[0\] \(tetra\) connectivity entry 0 is 99, outside \[0, 4\)"),
    (lambda m: m.point_data.__setitem__("x", np.zeros(3)), "point_data 'x' has 3 rows for 4 points"),
    (lambda m: m.cell_data.__setitem__("c", []), "cell_data 'c' has 0 arrays for 1 blocks"),
    (lambda m: m.regions.append(meshdock.Region("r", "cell", 3, 1, np.array([5]))),
     "region 'r' entry 0 is 5, outside \\[0, 1\\)"),
])
def test_inconsistent_meshes_are_refused(tmp_path, mutate, message):
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[meshdock.CellBlock("tetra", np.array([[0, 1, 2, 3]]))])
    mutate(m)
    for name in ("a.vtu", "a.msh"):
        with pytest.raises(meshdock.MeshError, match=message):
            meshdock.write(tmp_path / name, m)
    assert list(tmp_path.iterdir()) == []


def test_write_errors_name_the_problem(tmp_path):
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[meshdock.CellBlock("tetra", np.array([[0, 1, 2, 3]]))])
    with pytest.raises(meshdock.WriteError, match="no writer for format 'xyz'"):
        meshdock.write(tmp_path / "a.xyz", m)
    with pytest.raises(meshdock.WriteError, match="cells\\[0\\] \\(tetra\\) cannot be written to STL"):
        meshdock.write(tmp_path / "a.stl", m)
    with pytest.raises(meshdock.WriteError, match="VTK encoding 'zlib' is not one of ascii, binary"):
        meshdock.write(tmp_path / "a.vtk", m, encoding="zlib")
    with pytest.raises(meshdock.WriteError, match="VTU encoding 'base64' is not one of ascii, raw, zlib"):
        meshdock.write(tmp_path / "a.vtu", m, encoding="base64")
    with pytest.raises(meshdock.WriteError, match="cannot create the file"):
        meshdock.write(tmp_path / "missing" / "a.vtu", m)
    m.point_data["s"] = np.array(["a", "b", "c", "d"])
    with pytest.raises(TypeError, match="point_data 's' has dtype <U1, which is not numeric"):
        meshdock.write(tmp_path / "a.vtu", m)


def test_failed_write_keeps_the_existing_file(tmp_path):
    target = tmp_path / "keep.msh"
    target.write_text("precious")
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[meshdock.CellBlock("polygon", np.array([[0, 1, 2, 3, 0]]))])
    with pytest.raises(meshdock.WriteError):
        meshdock.write(target, m)
    assert target.read_text() == "precious"


def test_writers_take_numpy_arrays_without_a_copy(tmp_path):
    # A C-contiguous int64 connectivity is adopted by the C++ writer (its refcount rises while
    # C++ holds it and falls back after), not copied.
    import sys
    conn = np.array([[0, 1, 2, 3]], dtype=np.int64)
    before = sys.getrefcount(conn)
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[meshdock.CellBlock("tetra", conn)])
    meshdock.write(tmp_path / "a.vtu", m)
    assert sys.getrefcount(conn) == before + 1  # only the CellBlock holds it now


def test_vtu_written_is_read_by_meshio(data_dir, tmp_path):
    meshio = pytest.importorskip("meshio")
    src = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    for enc in ("ascii", "raw", "zlib"):
        out = tmp_path / f"m-{enc}.vtu"
        meshdock.write(out, src, encoding=enc)
        m = meshio.read(out)
        np.testing.assert_array_equal(m.points, src.points)
        assert sum(len(c.data) for c in m.cells) == sum(len(b) for b in src.cells)
        np.testing.assert_array_equal(np.concatenate(m.cell_data["gmsh:physical"]),
                                      np.concatenate(src.cell_data["gmsh:physical"]))


def test_msh_written_is_read_by_meshio_and_gmsh(data_dir, tmp_path):
    meshio = pytest.importorskip("meshio")
    src = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    for enc in ("ascii", "binary"):
        out = tmp_path / f"m-{enc}.msh"
        meshdock.write(out, src, encoding=enc)
        m = meshio.read(out)
        np.testing.assert_array_equal(m.points, src.points)
        assert [(c.type, len(c.data)) for c in m.cells] == [(b.type, len(b)) for b in src.cells]
        assert {k: v.tolist() for k, v in m.field_data.items()} == \
            {k: v.tolist() for k, v in src.field_data.items()}


def test_gmsh_reads_back_what_we_write(data_dir, tmp_path):
    """gmsh itself loads our MSH 4.1 (ascii and binary) and re-saves it; that file reads to the
    same points, cells and physical groups."""
    import shutil
    import subprocess
    gmsh = shutil.which("gmsh")
    if gmsh is None:
        pytest.skip("gmsh is not installed (scripts/setup installs it)")
    src = meshdock.read(data_dir / "meshes" / "box2nd.v41.msh")
    for enc in ("ascii", "binary"):
        ours, again = tmp_path / f"ours-{enc}.msh", tmp_path / f"gmsh-{enc}.msh"
        meshdock.write(ours, src, encoding=enc)
        run = subprocess.run([gmsh, str(ours), "-0", "-format", "msh41", "-o", str(again)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "Error" not in run.stdout + run.stderr, run.stdout + run.stderr
        back = meshdock.read(again)
        _eq(back.points, src.points, "points")
        assert [(t, a.tolist()) for t, a in _cell_runs(back)] == \
            [(t, a.tolist()) for t, a in _cell_runs(src)]
        assert _regions(back) == _regions(src)


def test_vtk_reads_what_we_write(data_dir, tmp_path):
    """VTK's own XML reader loads every encoding, polyhedra included."""
    vtk = pytest.importorskip("vtk")
    src = meshdock.read(data_dir / "meshes" / "ragged.vtk-ascii.vtu")
    for enc in ("ascii", "raw", "zlib"):
        out = tmp_path / f"r-{enc}.vtu"
        meshdock.write(out, src, encoding=enc)
        r = vtk.vtkXMLUnstructuredGridReader()
        r.SetFileName(str(out))
        r.Update()
        g = r.GetOutput()
        assert (g.GetNumberOfPoints(), g.GetNumberOfCells()) == (12, 3)
        assert [g.GetCellType(i) for i in range(3)] == [12, 42, 7]
        poly = g.GetCell(1)
        assert (poly.GetNumberOfFaces(), poly.GetNumberOfPoints()) == (6, 8)
        assert [g.GetCellData().GetArray("q").GetValue(i) for i in range(3)] == [1.0, 2.0, 3.0]
        pts = np.array([g.GetPoint(i) for i in range(12)])
        np.testing.assert_array_equal(pts, src.points)


def test_read_only_arrays_can_be_written(tmp_path, data_dir):
    # np.from_dlpack hands out read-only arrays; writers only read, so they take them.
    src = meshdock.read(data_dir / "meshes" / "plate.v41.msh")
    p = meshdock.to_dlpack(src)
    ro = meshdock.Mesh(points=np.from_dlpack(p.points),
                       cells=[meshdock.CellBlock(t, np.from_dlpack(a)) for t, a in zip(p.cell_types, p.cells)])
    assert not ro.points.flags.writeable
    meshdock.write(tmp_path / "ro.vtu", ro)
    np.testing.assert_array_equal(meshdock.read(tmp_path / "ro.vtu").points, src.points)


# ---- the other writers (issue 14) ------------------------------------------------------------
OTHER = [("vtk", "ascii"), ("vtk", "binary"), ("msh22", "ascii"), ("msh22", "binary"),
         ("stl", "ascii"), ("stl", "binary"), ("obj", None), ("ply", "ascii"), ("ply", "binary"),
         ("off", None), ("inp", None)]
SURFACE = ("stl", "obj", "ply", "off")
# The blocks Abaqus .inp holds (each as the element type meshio writes; line3 as B32).
INP_TYPES = ("line", "line3", "triangle", "triangle6", "quad", "quad8", "quad9", "tetra", "tetra10",
             "hexahedron", "hexahedron20", "wedge", "wedge15")


def _faces_only(mesh):
    return bool(mesh.cells) and all(b.type in ("triangle", "quad", "polygon") and b.face_offsets is None
                                    for b in mesh.cells)


def _cells_of(block):
    """A block's cells as lists of point ids (fixed or ragged)."""
    if block.offsets is None:
        return [list(map(int, c)) for c in np.asarray(block.data)]
    o = np.asarray(block.offsets)
    return [list(map(int, block.data[o[i]:o[i + 1]])) for i in range(len(o) - 1)]


def _triangles(mesh, fans):
    """Every cell as its corners' coordinates; quads / polygons as STL's triangle fans."""
    out = []
    pts = np.asarray(mesh.points, dtype=np.float64)
    for b in mesh.cells:
        for c in _cells_of(b):
            if fans:
                for k in range(1, len(c) - 1):
                    out.append(pts[[c[0], c[k], c[k + 1]]])
            else:
                out.append(pts[c])
    return np.array(out)


def _other_refused(src, fmt):
    if fmt == "vtk":
        return any(b.face_offsets is not None for b in src.cells)
    if fmt == "msh22":
        return bool(_unwritable_in_msh(src))
    if fmt == "inp":
        return any(b.type not in INP_TYPES or b.offsets is not None for b in src.cells)
    if fmt == "obj":  # OBJ holds lines and points too ("l", "p"; read after the faces)
        return not (_faces_only(src) or (
            any(b.type not in ("line", "vertex") for b in src.cells) and
            all(b.type in ("triangle", "quad", "polygon", "line", "vertex") and
                b.face_offsets is None for b in src.cells)))
    return not _faces_only(src)


@pytest.mark.parametrize("fmt,enc", OTHER)
def test_round_trip_other_formats(data_dir, tmp_path, mesh_file, fmt, enc):
    src = meshdock.read(data_dir / "meshes" / mesh_file)
    out = tmp_path / f"out.{'msh' if fmt == 'msh22' else fmt}"
    if _other_refused(src, fmt):
        with pytest.raises(meshdock.WriteError, match=r"cells\[\d+\] \("):
            meshdock.write(out, src, format=fmt, encoding=enc)
        assert list(tmp_path.iterdir()) == []  # no file, no temporary
        return
    out, notes = _write_as(tmp_path, src, fmt, enc)
    back = meshdock.read(out)
    if fmt == "stl":
        got, want = _triangles(back, False), _triangles(src, True)
        if enc == "ascii":
            _eq(got, want, "triangle corners")
        else:
            _eq(got, want.astype(np.float32).astype(np.float64), "triangle corners (float32)")
            if not np.array_equal(want, want.astype(np.float32)):
                assert "binary STL stores float32: some coordinates were rounded (ascii keeps them)" in notes
        for b in src.cells:
            if b.type != "triangle":
                assert any(n.endswith(f"({b.type}) written as triangle fans: STL holds triangles only")
                           for n in notes)
        return
    _eq(back.points, src.points, "points")
    _eq_cells(back, src, fmt)
    if fmt == "inp":
        # Sets keep their names and entries (Abaqus sets have no dim / tag; names that differ
        # in case only, or a cell and a point... name one set each kind); data is noted.
        assert _inp_sets(back) == _inp_sets(src)
        for kind in ("point_data", "cell_data", "field_data"):
            for k in getattr(src, kind):
                assert any(n.startswith(f"{kind} '{k}' is not written") for n in notes), k
        return
    if fmt in SURFACE:
        for k, v in src.point_data.items():
            if fmt == "ply" and v.ndim == 1:
                _eq(back.point_data[k], v, k)
            elif fmt == "obj" and k in ("obj:vt", "obj:vn"):
                _eq(back.point_data[k], v, k)
            else:
                assert any(n.startswith(f"point_data '{k}' is not written") for n in notes), k
        return
    if fmt == "vtk":
        assert notes == [] and back.notes == []
        for k, v in src.point_data.items():
            assert back.point_data[k].dtype == v.dtype, k
            _eq(back.point_data[k].reshape(v.shape), v, k)
        for k, parts in src.cell_data.items():
            got = _concat(back.cell_data[k])
            assert got.dtype == parts[0].dtype, k
            _eq(got.reshape(_concat(parts).shape), _concat(parts), k)
        for k, v in src.field_data.items():
            _eq(back.field_data[k], np.atleast_1d(v), k)
        if back.regions:  # a reader that turns meshdock:region arrays back into regions
            assert _regions(back) == _regions(src)
        else:
            for r in src.regions:
                key = f"meshdock:region:{r.kind}:{r.dim}:{r.tag}:{r.name}"
                _eq(np.sort(back.field_data[key], axis=0), np.sort(r.entries, axis=0), key)
        return
    # MSH 2.2
    assert _regions(back) == _regions(src)
    for k, v in src.point_data.items():
        if k == "gmsh:dim_tags":
            assert "point_data 'gmsh:dim_tags' is not written: MSH 2.2 has no node entities" in notes
            continue
        _eq(back.point_data[k].reshape(v.shape), v.astype(np.float64), k)
    _assert_msh_cell_and_field_data(back, src, notes)


def _inp_sets(mesh):
    """{(NAME, kind): sorted entries} of the point and cell regions, regions of one name
    (case-insensitively) and kind joined: Abaqus's sets."""
    out = {}
    for r in mesh.regions:
        if r.kind != "side":
            out.setdefault((r.name.upper(), r.kind), set()).update(np.asarray(r.entries).tolist())
    return {k: sorted(v) for k, v in out.items()}


def _write_as(tmp_path, mesh, fmt, enc):
    return _write_to(tmp_path / f"out.{'msh' if fmt == 'msh22' else fmt}", mesh, format=fmt,
                     encoding=enc)


@pytest.mark.parametrize("fmt,enc", [(f, e) for f, e in ENCODINGS if f != "msh"] + OTHER +
                         [("msh", "ascii"), ("msh", "binary"), ("vtp", "ascii"), ("vtp", "raw")])
def test_an_empty_mesh_round_trips(tmp_path, fmt, enc):
    """Before: an empty mesh written as VTU read back as "Points has 1 components, expected 3"
    (the writer took components from size / tuples), and written as OBJ as "not an OBJ mesh"."""
    out, notes = _write_as(tmp_path, meshdock.Mesh(np.zeros((0, 3)), []), fmt, enc)
    back = meshdock.read(out)
    assert back.points.shape == (0, 3), (fmt, enc)
    assert back.cells == [] and back.notes == [], (fmt, enc, back.notes)


def _meshio_cells(m):
    """meshio cells as (type, connectivity) runs of one type."""
    runs = []
    for c in m.cells:
        if runs and runs[-1][0] == c.type:
            runs[-1][1].append(np.asarray(c.data))
        else:
            runs.append((c.type, [np.asarray(c.data)]))
    return [(t, np.concatenate(p)) for t, p in runs]


MESHIO_SOURCES = ["sphere.obj", "sphere.bin.ply", "box.v41.msh", "data.v41.msh", "blocks.v41.msh",
                  "box2nd.v41.msh"]


def _meshio_misreads(src, fmt, enc):
    """Files meshio 5.0 cannot read back, for bugs of its own (checked on files others wrote)."""
    if fmt == "msh22" and any(b.type == "vertex" for b in src.cells) and src.cell_data.keys() - {
            "gmsh:physical", "gmsh:geometrical"}:
        # $ElementData beside a vertex block in a 2.2 file: meshio fails on
        # tests/data/meshes/data.v22.msh (written by gmsh) the same way.
        return True
    # Binary PLY face properties: meshio reads the list for every face first, then the rest.
    return fmt == "ply" and enc == "binary" and bool(src.cell_data)


@pytest.mark.parametrize("source", MESHIO_SOURCES)
@pytest.mark.parametrize("fmt,enc", OTHER)
def test_other_formats_are_read_by_meshio(data_dir, tmp_path, source, fmt, enc):
    meshio = pytest.importorskip("meshio")
    src = meshdock.read(data_dir / "meshes" / source)
    if _other_refused(src, fmt):
        return
    out, notes = _write_as(tmp_path, src, fmt, enc)
    if _meshio_misreads(src, fmt, enc):
        with pytest.raises(ValueError):
            meshio.read(out, file_format="gmsh" if fmt == "msh22" else None)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = meshio.read(out, file_format="gmsh" if fmt == "msh22" else None)
    if fmt == "stl":  # meshio merges and sorts the points: compare the corners
        got = np.asarray(m.points)[np.concatenate([c.data for c in m.cells])]
        want = _triangles(src, True)
        _eq(got, want if enc == "ascii" else want.astype(np.float32).astype(np.float64), "corners")
        return
    _eq(m.points, src.points, "points")
    want = src
    if fmt == "obj":  # meshio 5.0 skips OBJ's l and p lines
        want = meshdock.Mesh(src.points, [b for b in src.cells if b.type not in ("line", "vertex")])
    if fmt == "inp":  # meshio keeps B32's end, middle, end order (line3 is end, end, middle)
        want = meshdock.Mesh(src.points, [(b.type, b.data[:, [0, 2, 1]] if b.type == "line3"
                                           else b.data) for b in src.cells])
    assert [(t, a.tolist()) for t, a in _meshio_cells(m)] == \
        [(t, a.tolist()) for t, a in _cell_runs(want)]
    if fmt == "vtk":
        for k, v in src.point_data.items():
            _eq(np.asarray(m.point_data[k]).reshape(v.shape), v, k)
            got = m.point_data[k].dtype  # big-endian as the file holds it
            assert (got.kind, got.itemsize) == (v.dtype.kind, v.dtype.itemsize), k
        for k, parts in src.cell_data.items():
            _eq(np.concatenate(m.cell_data[k]).reshape(_concat(parts).shape), _concat(parts), k)
        for k, v in src.field_data.items():
            _eq(np.asarray(m.field_data[k]).ravel(), np.atleast_1d(v), k)
    elif fmt == "msh22":
        # meshio keeps physical names in field_data {name: [tag, dim]}: all of them come back.
        assert {k: list(v) for k, v in m.field_data.items()} == \
            {k: list(v) for k, v in src.field_data.items()}
        if "gmsh:physical" in src.cell_data:
            _eq(np.concatenate(m.cell_data["gmsh:physical"]), _concat(src.cell_data["gmsh:physical"]),
                "gmsh:physical")
        for k, v in src.point_data.items():
            if k != "gmsh:dim_tags":
                _eq(np.asarray(m.point_data[k]).reshape(v.shape), v, k)
    elif fmt == "ply":
        for k, v in src.point_data.items():
            if v.ndim == 1:
                _eq(m.point_data[k], v, k)
        if enc == "ascii":  # meshio 5.0 misreads face properties of binary files
            for k, parts in src.cell_data.items():
                if _concat(parts).ndim == 1:
                    _eq(np.concatenate([np.atleast_1d(x) for x in np.atleast_1d(m.cell_data[k])]),
                        _concat(parts), k)
    elif fmt == "obj" and "obj:group_ids" in src.cell_data:
        _eq(np.concatenate([np.full(len(c.data), g) for c, g in zip(m.cells, m.cell_data["obj:group_ids"])]),
            _concat(src.cell_data["obj:group_ids"]), "obj:group_ids")


def test_msh_keeps_meshio_physical_names(tmp_path):
    """A mesh built by meshio (gmsh:physical + field_data {name: [tag, dim]}, no regions) keeps
    its names through both MSH versions, for meshio and for meshdock."""
    meshio = pytest.importorskip("meshio")
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=np.float64)
    mm = meshio.Mesh(pts, [("triangle", np.array([[0, 1, 2], [1, 3, 2]])), ("line", np.array([[0, 1]]))],
                     cell_data={"gmsh:physical": [np.array([7, 7]), np.array([3])],
                                "gmsh:geometrical": [np.array([1, 1]), np.array([1])]},
                     field_data={"plate": np.array([7, 2]), "bottom": np.array([3, 1])})
    for fmt in ("msh", "msh22"):
        for enc in ("ascii", "binary"):
            out = tmp_path / f"{fmt}-{enc}.msh"
            notes = meshdock.write(out, mm, format=fmt, encoding=enc)
            assert notes == []
            back = meshio.read(out)
            assert {k: v.tolist() for k, v in back.field_data.items()} == \
                {"plate": [7, 2], "bottom": [3, 1]}
            ours = meshdock.read(out)
            assert _regions(ours) == {("plate", "cell", 2, 7): [0, 1], ("bottom", "cell", 1, 3): [2]}


def test_msh22_notes_blocks_of_one_type_that_read_back_as_one(tmp_path):
    """Before: two triangle blocks in a row were written as one run of elements and read back as
    one block, and the writer said nothing (MSH 4.1 keeps them as two entities)."""
    tri = meshdock.CellBlock("triangle", np.array([[0, 1, 2]]))
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[tri, tri, meshdock.CellBlock("line", np.array([[0, 1]])), tri])
    for enc in ("ascii", "binary"):
        with pytest.warns(meshdock.MeshWarning, match="read back as one block"):
            notes = meshdock.write(tmp_path / "a.msh", m, format="msh22", encoding=enc)
        assert notes == ["cells[0] and cells[1] (triangle) read back as one block: MSH 2.2 has no "
                         "entities to keep blocks of one type apart (MSH 4.1 keeps them)"]
        assert [(b.type, len(b.data)) for b in meshdock.read(tmp_path / "a.msh").cells] == \
            [("triangle", 2), ("line", 1), ("triangle", 1)]
        assert meshdock.write(tmp_path / "b.msh", m, format="msh", encoding=enc) == []
        assert [(b.type, len(b.data)) for b in meshdock.read(tmp_path / "b.msh").cells] == \
            [("triangle", 1), ("triangle", 1), ("line", 1), ("triangle", 1)]


def test_meshio_format_names_pick_the_writer(tmp_path):
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[meshdock.CellBlock("triangle", np.array([[0, 1, 2]]))])
    meshdock.write(tmp_path / "a.msh", m, file_format="gmsh22")
    assert (tmp_path / "a.msh").read_bytes().startswith(b"$MeshFormat\n2.2 1 8\n")
    meshdock.write(tmp_path / "b.vtk", m, file_format="vtk-ascii")
    assert b"\nASCII\n" in (tmp_path / "b.vtk").read_bytes()
    meshdock.write(tmp_path / "c.stl", m, file_format="stl-ascii")
    assert (tmp_path / "c.stl").read_bytes().startswith(b"solid ")
    meshdock.write(tmp_path / "d.ply", m)
    assert b"format binary_little_endian 1.0\n" in (tmp_path / "d.ply").read_bytes()
    # meshio's "vtu-binary" is compressed appended data: VTU's zlib default, not an error
    meshdock.write(tmp_path / "e.vtu", m, file_format="vtu-binary")
    assert b'compressor="vtkZLibDataCompressor"' in (tmp_path / "e.vtu").read_bytes()


def test_surface_writers_note_what_they_drop(tmp_path):
    m = meshdock.Mesh(points=np.eye(4, 3),
                      cells=[meshdock.CellBlock("quad", np.array([[0, 1, 2, 3]]))],
                      point_data={"t": np.arange(4.0), "v": np.ones((4, 3))},
                      cell_data={"big": [np.array([2 ** 40])]},
                      regions=[meshdock.Region("r", "cell", 2, 1, np.array([0]))])
    _, notes = _write_as(tmp_path, m, "off", None)
    assert notes == ["point_data 't' is not written: OFF holds no point data",
                     "point_data 'v' is not written: OFF holds no point data",
                     "cell_data 'big' is not written: OFF holds no cell data",
                     "region 'r' is not written: OFF holds no sets"]
    out, notes = _write_as(tmp_path, m, "ply", "binary")
    assert notes == ["point_data 'v' is not written: PLY properties are scalars",
                     "cell_data 'big' written as double: PLY has no 64-bit integers",
                     "region 'r' is not written: PLY holds no sets"]
    back = meshdock.read(out)
    assert back.point_data["t"].tolist() == [0, 1, 2, 3]
    if "big" in back.cell_data:  # read_ply may keep face properties or note that it does not
        assert back.cell_data["big"][0].tolist() == [2.0 ** 40]
    else:
        assert "ply: face property 'big' not kept" in back.notes
    head = out.read_bytes().split(b"end_header\n")[0].decode()
    assert "element face 1\nproperty list uint8 int32 vertex_indices\nproperty double big\n" in head


def _vtk_legacy_grid(vtk, path):
    """The vtkUnstructuredGrid VTK's legacy reader makes of `path`, every array read."""
    r = vtk.vtkUnstructuredGridReader()
    r.SetFileName(str(path))
    r.ReadAllScalarsOn()
    r.ReadAllFieldsOn()
    r.Update()
    return r.GetOutput()


def test_vtk_reads_legacy_vtk_we_write(data_dir, tmp_path):
    """VTK 9's own legacy reader: points, cells, data (VTK's type names) and field data."""
    vtk = pytest.importorskip("vtk")
    from vtk.util import numpy_support as ns
    src = meshdock.read(data_dir / "meshes" / "data.v41.msh")
    for enc in ("ascii", "binary"):
        out = tmp_path / f"d-{enc}.vtk"
        assert meshdock.write(out, src, encoding=enc) == []
        g = _vtk_legacy_grid(vtk, out)
        _eq(ns.vtk_to_numpy(g.GetPoints().GetData()), src.points, "points")
        assert g.GetNumberOfCells() == sum(len(b) for b in src.cells)
        assert [g.GetCellType(i) for i in (0, 1, 13, 86)] == [1, 3, 9, 5]  # vertex line quad tri
        _eq(ns.vtk_to_numpy(g.GetPointData().GetArray("velocity")), src.point_data["velocity"], "velocity")
        phys = ns.vtk_to_numpy(g.GetCellData().GetArray("gmsh:physical"))
        _eq(phys, _concat(src.cell_data["gmsh:physical"]), "gmsh:physical")
        _eq(ns.vtk_to_numpy(g.GetFieldData().GetArray("tris")), src.field_data["tris"], "tris")


DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
          "float64")


def test_vtk_reads_every_dtype_of_legacy_vtk_we_write(tmp_path):
    """Before: 8-, 16- and 32-bit integers were written as vtktypeint32 etc., which VTK's legacy
    reader (ParaView's) refuses ("Unsupported data type: vtktypeint32", no arrays read): a
    gmsh:physical read from MSH 2.2 (int32) made the .vtk unreadable there. Now VTK's own names
    ("int", "unsigned_char", ...), which VTK and meshdock read in every dtype."""
    vtk = pytest.importorskip("vtk")
    from vtk.util import numpy_support as ns
    tri = meshdock.CellBlock("triangle", np.array([[0, 1, 2], [1, 3, 2]]))
    m = meshdock.Mesh(np.eye(4, 3), [tri],
                      point_data={f"p_{t}": np.array([0, 1, 100, 127], t) for t in DTYPES},
                      cell_data={f"c_{t}": [np.array([[1, 2], [3, 120]], t)] for t in DTYPES},
                      field_data={f"f_{t}": np.array([5, 6, 7], t) for t in DTYPES})
    for enc in ("ascii", "binary"):
        out = tmp_path / f"d-{enc}.vtk"
        assert meshdock.write(out, m, encoding=enc) == []
        g = _vtk_legacy_grid(vtk, out)
        for name, want, where in (
                [(k, v, g.GetPointData()) for k, v in m.point_data.items()] +
                [(k, v[0], g.GetCellData()) for k, v in m.cell_data.items()] +
                [(k, v, g.GetFieldData()) for k, v in m.field_data.items()]):
            arr = where.GetArray(name)
            assert arr is not None, (enc, name)
            got = ns.vtk_to_numpy(arr)
            assert got.dtype == want.dtype, (enc, name, got.dtype)
            _eq(got.reshape(want.shape), want, f"{enc} {name}")
        back = meshdock.read(out)
        for k, v in m.point_data.items():
            assert back.point_data[k].dtype == v.dtype, k
            _eq(back.point_data[k], v, k)


def test_legacy_vtk_names_and_blocks_round_trip(data_dir, tmp_path):
    """Names with spaces, '%', '"' and UTF-8 are %XX-encoded as VTK's writer does: VTK 9.1 and
    meshdock read them back as they were (before: noted and not written). Blocks of one cell
    type (box.v41b.msh: 6 triangle blocks) come back as written through meshdock:block_sizes
    (before: 2 blocks, cell data merged with no note); VTK sees it as one more field array."""
    vtk = pytest.importorskip("vtk")
    src = meshdock.read(data_dir / "meshes" / "box.v41b.msh")
    n = len(src.points)
    src.point_data["wall temperature 100%"] = np.arange(n, dtype=np.float64)
    src.field_data['Druck_ü "x"'] = np.array([1.5, 2.5])
    src.cell_data["mat id"] = [np.full(len(b), i, dtype=np.int64) for i, b in enumerate(src.cells)]
    for enc in ("ascii", "binary"):
        out = tmp_path / f"names-{enc}.vtk"
        assert meshdock.write(out, src, encoding=enc) == []
        assert b"wall%20temperature%20100%25 1" in out.read_bytes()
        back = meshdock.read(out)
        assert [(b.type, len(b)) for b in back.cells] == [(b.type, len(b)) for b in src.cells]
        for k, parts in src.cell_data.items():
            assert [p.tolist() for p in back.cell_data[k]] == [p.tolist() for p in parts], k
        assert back.point_data["wall temperature 100%"].tolist() == list(range(n))
        assert back.field_data['Druck_ü "x"'].tolist() == [1.5, 2.5]
        assert "meshdock:block_sizes" not in back.field_data
        assert sorted((r.name, len(r.entries)) for r in back.regions) == \
            sorted((r.name, len(r.entries)) for r in src.regions)
        g = _vtk_legacy_grid(vtk, out)
        pd = g.GetPointData()
        assert {pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays())} == set(src.point_data)
        cd = g.GetCellData()
        assert {cd.GetArrayName(i) for i in range(cd.GetNumberOfArrays())} == set(src.cell_data)
        fd = g.GetFieldData()
        names = {fd.GetArrayName(i) for i in range(fd.GetNumberOfArrays())}
        assert set(src.field_data) | {"meshdock:block_sizes"} <= names
        from vtk.util import numpy_support as ns
        assert ns.vtk_to_numpy(fd.GetArray('Druck_ü "x"')).tolist() == [1.5, 2.5]
        assert ns.vtk_to_numpy(fd.GetArray("meshdock:block_sizes")).tolist() == \
            [len(b) for b in src.cells]


def test_gmsh_reads_msh22_we_write(data_dir, tmp_path):
    """gmsh loads our MSH 2.2 (ascii and binary) and re-saves it: the same cells (gmsh renumbers
    the nodes and prints 16 digits, so compared by corner coordinates) and physical groups."""
    import shutil
    import subprocess
    gmsh = shutil.which("gmsh")
    if gmsh is None:
        pytest.skip("gmsh is not installed (scripts/setup installs it)")
    src = meshdock.read(data_dir / "meshes" / "box2nd.v41.msh")

    def corners(m):
        pts = np.asarray(m.points)
        return {t: np.sort(np.round(pts[a].reshape(len(a), -1), 12), axis=0) for t, a in _cell_runs(m)}

    for enc in ("ascii", "binary"):
        ours, again = tmp_path / f"ours-{enc}.msh", tmp_path / f"gmsh-{enc}.msh"
        with pytest.warns(meshdock.MeshWarning, match="'gmsh:dim_tags' is not written: MSH 2.2"):
            meshdock.write(ours, src, format="msh22", encoding=enc)
        run = subprocess.run([gmsh, str(ours), "-0", "-format", "msh22", "-o", str(again)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "Error" not in run.stdout + run.stderr, run.stdout + run.stderr
        back = meshdock.read(again)
        want, got = corners(src), corners(back)
        assert got.keys() == want.keys()
        for t in want:
            np.testing.assert_allclose(got[t], want[t], rtol=0, atol=1e-12, err_msg=t)
        assert {(r.name, r.kind, r.dim, r.tag, len(r.entries)) for r in back.regions} == \
            {(r.name, r.kind, r.dim, r.tag, len(r.entries)) for r in src.regions}


# ---- VTP (XML PolyData) ------------------------------------------------------------------------
# PolyData keeps vertices, then lines, then polygons; the writer puts the blocks in that order
# and moves cell data and the cell numbers of regions with them. meshio 5.0 reads no PolyData
# (no ".vtp" reader; as "vtu" it refuses the file type), so the checks are meshdock's reader and
# VTK's vtkXMLPolyDataReader; a meshio.Mesh is written as VTP below.
_VTP_SECTION = {"vertex": 0, "line": 1, "triangle": 2, "quad": 2, "polygon": 2}


def _vtp_order(mesh):
    """The block order PolyData gives: stable by section; None when a block cannot be written."""
    if any(b.type not in _VTP_SECTION or b.face_offsets is not None for b in mesh.cells):
        return None
    return sorted(range(len(mesh.cells)), key=lambda b: _VTP_SECTION[mesh.cells[b].type])


def _renumbered_regions(mesh, order):
    """_regions(mesh) with cell numbers as they are once the blocks stand in `order`."""
    sizes = [len(b) for b in mesh.cells]
    old = np.concatenate([[0], np.cumsum(sizes)])
    new = np.zeros(len(sizes), dtype=np.int64)
    at = 0
    for b in order:
        new[b], at = at, at + sizes[b]

    def renumber(c):
        b = int(np.searchsorted(old, c, side="right")) - 1
        return int(new[b] + c - old[b])

    out = {}
    for r in mesh.regions:
        e = np.array(r.entries, dtype=np.int64)
        if r.kind == "cell":
            e = np.array([renumber(c) for c in e], dtype=np.int64)
        elif r.kind == "side":
            e = np.array([[renumber(c), f] for c, f in e], dtype=np.int64).reshape(-1, 2)
        out[(r.name, r.kind, r.dim, r.tag)] = np.sort(e, axis=0).tolist()
    return out


@pytest.mark.parametrize("enc", ["ascii", "zlib"])
def test_round_trip_vtp(data_dir, tmp_path, mesh_file, enc):
    src = meshdock.read(data_dir / "meshes" / mesh_file)
    order = _vtp_order(src)
    out = tmp_path / "out.vtp"
    if order is None:
        bad = next(i for i, b in enumerate(src.cells)
                   if b.type not in _VTP_SECTION or b.face_offsets is not None)
        with pytest.raises(meshdock.WriteError,
                           match=rf"cells\[{bad}\] \([A-Za-z0-9_]+\) cannot be written to VTP, .*write it as VTU"):
            meshdock.write(out, src, encoding=enc)
        assert list(tmp_path.iterdir()) == []
        return
    out, notes = _write(tmp_path, src, "vtp", enc)
    assert (order != sorted(order)) == any(n.startswith("blocks written in PolyData's order") for n in notes)
    back = meshdock.read(out)
    assert back.notes == []
    _eq(back.points, src.points, "points")
    assert [c for b in back.cells for c in _cells_of(b)] == [c for b in order for c in _cells_of(src.cells[b])]
    _assert_same_data(back, src, order)
    assert _regions(back) == _renumbered_regions(src, order)


def _mixed_surface():
    """Vertices, lines and faces interleaved (PolyData moves every block), with data and sets."""
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0.5], [2, 1, 0.25], [3, 0.5, 0]])
    cells = [meshdock.CellBlock("triangle", np.array([[0, 1, 2], [2, 3, 0]])),   # cells 0-1
             meshdock.CellBlock("vertex", np.array([[4], [5]])),                 # 2-3
             meshdock.CellBlock("line", np.array([[0, 4], [4, 5], [5, 6]])),     # 4-6
             meshdock.CellBlock("quad", np.array([[1, 4, 5, 2]])),               # 7
             meshdock.CellBlock("vertex", np.array([[6]])),                      # 8
             meshdock.CellBlock("line", np.array([[6, 0]]))]                     # 9
    sizes = [len(b) for b in cells]
    ids = np.split(np.arange(sum(sizes)), np.cumsum(sizes)[:-1])
    return meshdock.Mesh(points=pts, cells=cells,
                         point_data={"T": np.arange(7, dtype=np.float32) * 0.5},
                         cell_data={"id": [100 + i for i in ids],
                                    "vec": [np.stack([i * 0.5, -i * 1.0], axis=1) for i in ids]},
                         field_data={"info": np.array([7, 8, 9])},
                         regions=[meshdock.Region("mixed", "cell", 2, 3, np.array([0, 2, 9, 7])),
                                  meshdock.Region("edges", "side", 2, 4, np.array([[1, 2], [8, 0]])),
                                  meshdock.Region("corner", "point", 0, 5, np.array([0, 6]))])


def test_vtk_reads_vtp_we_write(tmp_path):
    """VTK's own PolyData reader sees the blocks in PolyData's order, the cell data moved with
    them, and the regions (as meshdock:region field data) renumbered to that order."""
    vtk = pytest.importorskip("vtk")
    from vtk.util import numpy_support as ns
    src = _mixed_surface()
    order = [1, 4, 2, 5, 0, 3]
    for enc in ("ascii", "raw", "zlib"):
        out = tmp_path / f"m-{enc}.vtp"
        with pytest.warns(meshdock.MeshWarning, match="PolyData's order"):
            notes = meshdock.write(out, src, encoding=enc)
        assert notes == [
            "blocks written in PolyData's order (vertices, lines, polygons): they read back as "
            "cells[1, 4, 2, 5, 0, 3] of this mesh, cell data and regions with them"]
        r = vtk.vtkXMLPolyDataReader()
        r.SetFileName(str(out))
        r.Update()
        g = r.GetOutput()
        assert (g.GetNumberOfVerts(), g.GetNumberOfLines(), g.GetNumberOfPolys(),
                g.GetNumberOfStrips()) == (3, 4, 3, 0)
        _eq(ns.vtk_to_numpy(g.GetPoints().GetData()), src.points, "points")
        n = g.GetNumberOfCells()
        assert [g.GetCellType(i) for i in range(n)] == [1, 1, 1, 3, 3, 3, 3, 5, 5, 9]
        got = [[g.GetCell(i).GetPointId(k) for k in range(g.GetCell(i).GetNumberOfPoints())]
               for i in range(n)]
        assert got == [c for b in order for c in _cells_of(src.cells[b])]
        for k in ("id", "vec"):
            want = _concat([src.cell_data[k][b] for b in order])
            _eq(ns.vtk_to_numpy(g.GetCellData().GetArray(k)).reshape(want.shape), want, k)
        _eq(ns.vtk_to_numpy(g.GetPointData().GetArray("T")), src.point_data["T"], "T")
        fd = g.GetFieldData()
        _eq(ns.vtk_to_numpy(fd.GetArray("info")), [7, 8, 9], "info")
        # old cell 0 is cell 7 in the file, 2 is 0, 9 is 6, 7 is 9; 1 is 8, 8 is 2
        _eq(ns.vtk_to_numpy(fd.GetArray("meshdock:region:cell:2:3:mixed")), [7, 0, 6, 9], "mixed")
        _eq(ns.vtk_to_numpy(fd.GetArray("meshdock:region:side:2:4:edges")), [[8, 2], [2, 0]], "edges")
        _eq(ns.vtk_to_numpy(fd.GetArray("meshdock:region:point:0:5:corner")), [0, 6], "corner")
        _eq(ns.vtk_to_numpy(fd.GetArray("meshdock:block_sizes")), [2, 1, 3, 1, 2, 1], "block sizes")
        back = meshdock.read(out)
        assert _regions(back) == _renumbered_regions(src, order) == {
            ("mixed", "cell", 2, 3): [0, 6, 7, 9], ("edges", "side", 2, 4): [[2, 0], [8, 2]],
            ("corner", "point", 0, 5): [0, 6]}


def test_meshio_mesh_writes_as_vtp(tmp_path):
    """A meshio.Mesh (what md.write takes besides ours) as VTP: the Python write path to the
    VTP writer, meshio's cell lists and cell data included."""
    meshio = pytest.importorskip("meshio")
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=np.float64)
    mm = meshio.Mesh(pts, [("triangle", np.array([[0, 1, 2], [1, 3, 2]])), ("line", np.array([[0, 1]]))],
                     cell_data={"mat": [np.array([1.5, 2.5]), np.array([3.5])]})
    out = tmp_path / "mm.vtp"
    with pytest.warns(meshdock.MeshWarning, match="PolyData's order"):
        notes = meshdock.write(out, mm, file_format="vtp", encoding="raw")
    assert notes == ["blocks written in PolyData's order (vertices, lines, polygons): they read "
                     "back as cells[1, 0] of this mesh, cell data and regions with them"]
    back = meshdock.read(out)
    assert [(b.type, b.data.tolist()) for b in back.cells] == [("line", [[0, 1]]),
                                                               ("triangle", [[0, 1, 2], [1, 3, 2]])]
    assert [p.tolist() for p in back.cell_data["mat"]] == [[3.5], [1.5, 2.5]]
    with pytest.raises(meshio.ReadError):  # meshio 5.0 has no PolyData reader
        meshio.read(out)


def test_vtp_refuses_volume_cells(tmp_path):
    m = meshdock.Mesh(points=np.eye(4, 3), cells=[meshdock.CellBlock("triangle", np.array([[0, 1, 2]])),
                                                  meshdock.CellBlock("tetra", np.array([[0, 1, 2, 3]]))])
    with pytest.raises(meshdock.WriteError, match=r": cells\[1\] \(tetra\) cannot be written to VTP, which "
                       r"holds vertices, lines and polygons only \(PolyData has no volume or "
                       r"higher-order cells\); write it as VTU$"):
        meshdock.write(tmp_path / "a.vtp", m)
    assert list(tmp_path.iterdir()) == []


def test_convert_writes_vtp(data_dir, tmp_path):
    import subprocess
    import sys
    out = tmp_path / "plate.vtp"
    run = subprocess.run([sys.executable, "-m", "meshdock", "convert",
                          str(data_dir / "meshes" / "plate.v41.msh"), str(out), "--ascii"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert b'<VTKFile type="PolyData" version="0.1"' in out.read_bytes()
    src, back = meshdock.read(data_dir / "meshes" / "plate.v41.msh"), meshdock.read(out)
    _eq(back.points, src.points, "points")
    assert _regions(back) == _regions(src)


def test_the_command_names_its_version_and_exit_statuses():
    """What help2man makes meshdock(1) from: --version and the exit statuses in --help."""
    import subprocess
    import sys
    v = subprocess.run([sys.executable, "-m", "meshdock", "--version"], capture_output=True,
                       text=True, timeout=60)
    assert (v.returncode, v.stdout) == (0, f"meshdock {meshdock.__version__}\n"), v
    h = subprocess.run([sys.executable, "-m", "meshdock", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert h.returncode == 0 and "Exit status: 0 done, 1 the file could not be read" in h.stdout, h
    # plain text (the docstring's reST literals are not printed), and every argument explained
    assert "``" not in h.stdout and "The meshdock command:" in h.stdout, h.stdout
    for verb, args in (("info", ("the mesh file to read",)),
                       ("convert", ("the mesh file to read", "the file to write",
                                    "IN's format", "OUT's format"))):
        vh = subprocess.run([sys.executable, "-m", "meshdock", verb, "--help"],
                            capture_output=True, text=True, timeout=60)
        assert vh.returncode == 0 and all(a in vh.stdout for a in args), vh.stdout
