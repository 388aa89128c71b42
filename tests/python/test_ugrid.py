"""UGRID: meshdock's reader against meshio 5.0's ("ugrid") on every variant of the files of
tests/data/ugrid (gmsh meshes written by meshio's writer, hand-made corners; tools/make_ugrid.py),
meshdock's writer read back by both readers in every variant, meshio's writer read back by
meshdock's, and errors naming the file and line or byte. meshio is asked live."""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

FILES = ["gmsh-tets.ugrid", "gmsh-tets.b8.ugrid", "gmsh-tets.lb4.ugrid", "gmsh-tets.b8l.ugrid",
         "gmsh-tets.lb8l.ugrid", "gmsh-tets.r8.ugrid", "gmsh-tets.lr4.ugrid",
         "gmsh-prisms.ugrid", "gmsh-prisms.lb8.ugrid", "gmsh-prisms.r4.ugrid",
         "mixed.ugrid", "mixed.b4.ugrid", "mixed.lr8.ugrid", "mixed.lb8l.ugrid", "corners.ugrid"]

# The variants meshio writes and reads, by their suffix before .ugrid.
VARIANTS = ["", "b8", "lb8", "b4", "lb4", "b8l", "lb8l", "r8", "lr8", "r4", "lr4"]

_read = conftest.read_quietly


def _meshio_read(path):
    """meshio's reading with its big-endian arrays ('>i4', '>f8') in native byte order: the same
    values and types, which conftest compares by dtype."""
    ref = meshio.read(path)
    ref.cell_data = {k: [np.asarray(a).astype(np.asarray(a).dtype.newbyteorder("=")) for a in v]
                     for k, v in ref.cell_data.items()}
    return ref


def _name(stem, v):
    return f"{stem}.{v}.ugrid" if v else f"{stem}.ugrid"


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "ugrid" / name
    m = _read(path)
    # Points: meshio reads ascii reals as float32, meshdock as written (float64): the files'
    # points are float32 values, the same numbers either way.
    conftest.assert_same_as_meshio(m, _meshio_read(path), dtypes=True)


def test_corners_notes_the_volume_ids_meshio_leaves_too(data_dir):
    m = _read(data_dir / "ugrid" / "corners.ugrid")
    assert m.notes == [f"ugrid: {data_dir / 'ugrid' / 'corners.ugrid'}:11: the text after the "
                       "hexahedra is not read (volume ids?), as meshio reads nothing after them"]
    assert m.cell_data["ugrid:ref"][0].tolist() == [7, -3]
    assert m.cells[1].data.tolist() == [[0, 1, 3, 2, 4]]  # pyramid in VTK's order


def test_ascii_reals_read_as_written(tmp_path):
    # meshio rounds ascii reals to float32; meshdock keeps every digit.
    path = tmp_path / "p.ugrid"
    path.write_text("3 1 0 0 0 0 0\n0.1 0.2 0.3\n1 0 0\n0 1 0\n1 2 3\n5\n")
    m = _read(path)
    assert m.points[0].tolist() == [0.1, 0.2, 0.3]
    ref = meshio.read(path)
    np.testing.assert_allclose(m.points, ref.points, rtol=1e-7)


@pytest.mark.parametrize("name", ["mixed.lr8.ugrid", "gmsh-prisms.ugrid", "corners.ugrid"])
@pytest.mark.parametrize("v", VARIANTS)
def test_meshdock_writer_read_back_by_both_readers(data_dir, tmp_path, name, v):
    src = _read(data_dir / "ugrid" / name)
    out = tmp_path / _name("o", v)
    meshdock.write(out, src)
    back = _read(out)
    np.testing.assert_array_equal(back.points, src.points)
    for ours, theirs in zip(back.cells, src.cells):
        assert ours.type == theirs.type
        np.testing.assert_array_equal(ours.data, theirs.data)
    for ours, theirs in zip(back.cell_data["ugrid:ref"], src.cell_data["ugrid:ref"]):
        np.testing.assert_array_equal(ours, theirs)
    ref = _meshio_read(out)
    if v in ("r4", "lr4", "b4", "lb4", ""):
        # 4-byte reals hold these files' float32 values exactly; ascii too (shortest digits).
        np.testing.assert_array_equal(ref.points, src.points)
    conftest.assert_same_as_meshio(back, ref, dtypes=True)


@pytest.mark.parametrize("v", VARIANTS)
def test_meshio_writer_read_by_meshdock(tmp_path, v):
    rng = np.random.default_rng(7)
    pts = rng.standard_normal((30, 3))
    cells = [("triangle", rng.integers(0, 30, (5, 3))), ("quad", rng.integers(0, 30, (4, 4))),
             ("tetra", rng.integers(0, 30, (6, 4))), ("pyramid", rng.integers(0, 30, (3, 5))),
             ("wedge", rng.integers(0, 30, (2, 6))), ("hexahedron", rng.integers(0, 30, (2, 8)))]
    path = tmp_path / _name("r", v)
    meshio.write(path, meshio.Mesh(pts, cells), file_format="ugrid")
    m = _read(path)
    ref = _meshio_read(path)
    if v == "":
        np.testing.assert_allclose(m.points, pts, rtol=0, atol=0)  # every digit of %r
        ref.points = m.points
    conftest.assert_same_as_meshio(m, ref, dtypes=True)
    for ours, theirs in zip(m.cells, cells):
        np.testing.assert_array_equal(ours.data, theirs[1])


def test_meshio_format_name(data_dir, tmp_path):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "ugrid" / "mixed.ugrid", path)
    m = _read(path, file_format="ugrid")
    assert [b.type for b in m.cells] == ["triangle", "quad", "tetra", "pyramid", "wedge",
                                         "hexahedron"]
    out = tmp_path / "w.lb8.ugrid"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(out, m, file_format="ugrid")
    assert meshio.read(out).cells[5].data.tolist() == [[0, 1, 2, 3, 4, 5, 6, 7]]


def test_errors_name_file_and_line_or_byte(data_dir, tmp_path):
    with pytest.raises(meshdock.MeshError, match=r"truncated\.b8\.ugrid: byte 0: header: 1 "
                                                 r"hexahedra of 32 bytes each do not fit"):
        meshdock.read(data_dir / "ugrid" / "truncated.b8.ugrid")
    with pytest.raises(meshdock.MeshError, match=r"lying\.lb8\.ugrid: byte 0: header: "
                                                 r"2147483647 nodes"):
        meshdock.read(data_dir / "ugrid" / "lying.lb8.ugrid")
    bad = tmp_path / "bad.ugrid"
    bad.write_text("3 1 0 0 0 0 0\n0 0 0\n1 0 0\n0 1 0\n1 2 4\n1\n")
    with pytest.raises(meshdock.MeshError, match=r"bad\.ugrid:5: triangles: cell 1 refers to "
                                                 r"node 4; nodes are numbered 1\.\.3"):
        meshdock.read(bad)


def test_writer_refuses_other_cells(tmp_path):
    m = meshio.Mesh(np.zeros((3, 3)), [("line", np.array([[0, 1]]))])
    with pytest.raises(meshdock.MeshError, match=r"cells\[0\] \(line\) cannot be written"):
        meshdock.write(tmp_path / "l.ugrid", m)
