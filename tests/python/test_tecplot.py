"""Tecplot ASCII: meshdock's reader against meshio 5.0's ("tecplot") on meshio-written files of
gmsh's meshes and hand-written ones (tests/data/tecplot, tools/make_tecplot.py), meshdock's writer
read back by both readers, meshio's writer read by meshdock, the format's names and extensions,
the zones meshio does not read, and errors naming file and line. meshio is asked live. Ordered
(I, J, K) zones, which meshio refuses, are compared with VTK's vtkTecplotReader (python3-vtk9):
points, cells by point ids, point and cell data."""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

# The files meshio reads as meshdock does (repeat.dat it cannot read; zones.dat and varloc.dat
# below).
FILES = ["meshio-tri.dat", "meshio-tet.dat", "meshio-mixed.dat", "point.dat", "fepoint.dat",
         "feblock.dat"]

_read = conftest.read_quietly


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return meshio.read(path, file_format="tecplot")


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "tecplot" / name
    m = _read(path)
    assert m.notes == []
    conftest.assert_same_as_meshio(m, _meshio_read(path), dtypes=True)


@pytest.mark.parametrize("name", ["meshio-tri.dat", "point.dat"])
def test_meshio_format_name_and_tec_extension(data_dir, tmp_path, name):
    txt = tmp_path / "grid.txt"
    tec = tmp_path / "grid.tec"
    shutil.copy(data_dir / "tecplot" / name, txt)
    shutil.copy(data_dir / "tecplot" / name, tec)
    ref = _meshio_read(txt)
    conftest.assert_same_as_meshio(_read(txt, file_format="tecplot"), ref)
    conftest.assert_same_as_meshio(_read(tec), ref)


def test_zones_meshio_reads_the_first_only(data_dir):
    path = data_dir / "tecplot" / "zones.dat"
    m = _read(path)
    ref = _meshio_read(path)
    assert [b.type for b in m.cells] == ["triangle", "quad"]
    np.testing.assert_array_equal(m.points[:3], ref.points)
    np.testing.assert_array_equal(m.cells[0].data, ref.cells[0].data)
    np.testing.assert_array_equal(m.point_data["s"][:3], ref.point_data["s"])
    np.testing.assert_array_equal(m.cells[1].data, [[3, 4, 5, 6]])
    np.testing.assert_array_equal(m.points[3:], [[2, 0], [3, 0], [3, 1], [2, 1]])
    assert len(m.notes) == 1 and "2 zones read" in m.notes[0]


def test_variables_over_lines_keep_their_case(data_dir):
    # meshio upper-cases the names on VARIABLES' continuation lines ("VELOCITY_X"); meshdock
    # keeps them as written, and the values are the same.
    path = data_dir / "tecplot" / "varloc.dat"
    m = _read(path)
    ref = _meshio_read(path)
    np.testing.assert_array_equal(m.points, ref.points)
    np.testing.assert_array_equal(m.cells[0].data, ref.cells[0].data)
    assert sorted(m.cell_data) == ["Q", "Velocity_X"]
    np.testing.assert_array_equal(m.cell_data["Velocity_X"][0], ref.cell_data["VELOCITY_X"][0])
    np.testing.assert_array_equal(m.cell_data["Q"][0], ref.cell_data["Q"][0])


def test_hand_written_corners_meshio_cannot_read(data_dir):
    m = _read(data_dir / "tecplot" / "repeat.dat")
    np.testing.assert_array_equal(m.points, np.eye(4, 3, -1))
    np.testing.assert_array_equal(m.point_data["s"], [0.5] * 4)
    np.testing.assert_array_equal(m.cells[0].data, [[0, 1, 2, 3]])


@pytest.mark.parametrize("name", FILES + ["varloc.dat"])
def test_round_trip_through_both_readers(data_dir, tmp_path, name):
    src = _read(data_dir / "tecplot" / name)
    src.points[3, :2] = [0.1 + 0.2, -1e-300]  # the shortest text must keep these exactly
    out = tmp_path / "o.dat"
    assert meshdock.write(out, src) == []
    back = _read(out)
    conftest.assert_same_as_meshio(back, src)  # exactly what was written, every array
    conftest.assert_same_as_meshio(back, _meshio_read(out))


def test_meshio_writes_meshdock_reads(tmp_path):
    # meshio's writer on a mesh of its own: a 2-component point data and int cell data.
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=float)
    mesh = meshio.Mesh(pts, [("tetra", [[0, 1, 2, 3], [1, 2, 3, 4]])],
                       point_data={"u": pts[:, :2] * 0.1},
                       cell_data={"c": [np.array([3, 4])]})
    out = tmp_path / "m.dat"
    mesh.write(out, file_format="tecplot")
    m = _read(out)
    conftest.assert_same_as_meshio(m, _meshio_read(out))
    np.testing.assert_array_equal(m.point_data["u_1"], pts[:, 1] * 0.1)


def test_writer_mixed_blocks_as_meshio(tmp_path):
    src = meshdock.Mesh(np.array([[0, 0], [1, 0], [1, 1], [0, 1], [2, 0]], dtype=float),
                        [("quad", np.array([[0, 1, 2, 3]])), ("triangle", np.array([[1, 4, 2]]))])
    out = tmp_path / "m.dat"
    with pytest.warns(meshdock.MeshWarning):
        notes = meshdock.write(out, src, file_format="tecplot")
    assert notes == ["cells[1] (triangle) is written as FEQUADRILATERAL cells with repeated nodes "
                     "(readers give them back as quad)"]
    ref = meshio.Mesh(src.points, [("quad", [[0, 1, 2, 3]]), ("triangle", [[1, 4, 2]])])
    theirs = tmp_path / "r.dat"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref.write(theirs, file_format="tecplot")
    conftest.assert_same_as_meshio(_read(out), _meshio_read(theirs))


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.dat"
    p.write_text('VARIABLES = "X" "Y"\nZONE T="blade", I=2, J=0\n0 1 0 1\n0 0 1 1\n')
    with pytest.raises(meshdock.ReadError, match=r"bad.dat:2: zone 1 \('blade'\): J = 0"):
        meshdock.read(p)
    p.write_text('VARIABLES = "X" "Y"\nZONE I=3037000500, J=3037000500, K=2\n')
    with pytest.raises(meshdock.ReadError, match=r"bad.dat:2: zone 1: I\*J\*K = .* overflows"):
        meshdock.read(p)
    p.write_text('VARIABLES = "X" "Y"\nZONE N=3, E=1, ZONETYPE=FETRIANGLE\n0 1 0\n0 0 1\n1 2 9\n')
    with pytest.raises(meshdock.ReadError, match=r"bad.dat:5: zone 1: element 1 of 1 .*node 9"):
        meshdock.read(p)


def test_names_with_blanks_come_back_joined(tmp_path):
    src = meshdock.Mesh(np.array([[0, 0], [1, 0], [0, 1]], dtype=float),
                        [("triangle", np.array([[0, 1, 2]]))],
                        point_data={"wall shear": np.array([1.0, 2.0, 3.0])})
    out = tmp_path / "m.tec"
    with pytest.warns(meshdock.MeshWarning):
        notes = meshdock.write(out, src)
    assert notes == ["point_data 'wall shear' is read back as 'wall_shear' (Tecplot readers, "
                     "meshdock's and meshio's, join its words with '_')"]
    conftest.assert_same_as_meshio(_read(out), _meshio_read(out))
    np.testing.assert_array_equal(_read(out).point_data["wall_shear"], [1, 2, 3])


# Ordered (I, J, K) zones against VTK's reader (meshio refuses them).
ORDERED = ["ordered-3d-point.dat", "ordered-3d-block.dat", "ordered-2d.dat", "ordered-line.dat",
           "ordered-xy.dat", "ordered-fe.dat"]
_VTK_TYPES = {1: "vertex", 3: "line", 9: "quad", 12: "hexahedron"}


def _vtk_read(path):
    """vtkTecplotReader's zones as meshdock appends them: points, [(type, point ids)] offset by
    the zones before, point data appended, cell data a list per zone."""
    vtk = pytest.importorskip("vtk")
    from vtk.util.numpy_support import vtk_to_numpy

    r = vtk.vtkTecplotReader()
    r.SetFileName(str(path))
    r.Update()
    out = r.GetOutput()
    points, cells, point_data, cell_data = [], [], {}, {}
    offset = 0
    for b in range(out.GetNumberOfBlocks()):
        g = out.GetBlock(b)
        assert g is not None, f"VTK dropped zone {b + 1} of {path}"
        points.append(vtk_to_numpy(g.GetPoints().GetData()))
        ids = vtk.vtkIdList()
        conn, kind = [], set()
        for c in range(g.GetNumberOfCells()):
            g.GetCellPoints(c, ids)
            conn.append([ids.GetId(i) + offset for i in range(ids.GetNumberOfIds())])
            kind.add(_VTK_TYPES[g.GetCellType(c)])
        assert len(kind) == 1
        cells.append((kind.pop(), np.array(conn)))
        for data, into in ((g.GetPointData(), point_data), (g.GetCellData(), cell_data)):
            for i in range(data.GetNumberOfArrays()):
                into.setdefault(data.GetArrayName(i), []).append(vtk_to_numpy(data.GetArray(i)))
        offset += g.GetNumberOfPoints()
    return (np.concatenate(points), cells, {k: np.concatenate(v) for k, v in point_data.items()},
            cell_data)


@pytest.mark.parametrize("name", ORDERED)
def test_ordered_zones_as_vtk_reads_them(data_dir, name):
    path = data_dir / "tecplot" / name
    m = _read(path)
    points, cells, point_data, cell_data = _vtk_read(path)
    dim = m.points.shape[1]
    np.testing.assert_array_equal(m.points, points[:, :dim])  # VTK pads 2-D points with 0
    if dim == 2:
        assert not points[:, 2].any()
    assert [b.type for b in m.cells] == [t for t, _ in cells]
    for block, (_, conn) in zip(m.cells, cells):
        np.testing.assert_array_equal(block.data, conn)
    assert sorted(m.point_data) == sorted(point_data)
    for k, v in point_data.items():
        np.testing.assert_array_equal(m.point_data[k], v)
    assert sorted(m.cell_data) == sorted(cell_data)
    for k, blocks in cell_data.items():
        assert len(m.cell_data[k]) == len(blocks)
        for mine, theirs in zip(m.cell_data[k], blocks):
            np.testing.assert_array_equal(mine, theirs)
    assert all("ordered zone I, J, K" in n or "zones read" in n for n in m.notes)


def test_ordered_round_trip_through_both_readers(data_dir, tmp_path):
    # meshdock's writer writes one FE zone: the ordered bricks come back as FEBRICK cells.
    src = _read(data_dir / "tecplot" / "ordered-3d-block.dat")
    out = tmp_path / "o.dat"
    assert meshdock.write(out, src) == []
    back = _read(out)
    conftest.assert_same_as_meshio(back, src)
    conftest.assert_same_as_meshio(back, _meshio_read(out))


@pytest.mark.parametrize("name", ["ordered-3d-point.dat", "ordered-xy.dat", "ordered-2d.dat"])
def test_meshio_cannot_read_ordered_zones(data_dir, name):
    # KeyError 'DT'; "Zone type 'ZONETYPE' not found" and sys.exit(1) ...
    with pytest.raises((Exception, SystemExit)):
        _meshio_read(data_dir / "tecplot" / name)
