"""AVS UCD: meshdock's reader against meshio 5.3's ("avsucd") on files meshio wrote and
deal.II-style ones (tests/data/ucd, tools/make_ucd.py), the same files named .inp (read_mesh
tells UCD from Abaqus by content), meshio's format name, and errors naming file and line.
meshdock's writer (write_ucd): meshio reads what it writes as meshdock reads it back, and as it
reads its own file of the same mesh. meshio is asked live."""
import shutil

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

FILES = ["every-type.meshio.avs", "tets.meshio.avs", "dealii-quads.inp", "dealii-hex.ucd"]


_read = conftest.read_quietly


def _same_as_meshio(m, ref):
    conftest.assert_same_as_meshio(m, ref)


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "ucd" / name
    _same_as_meshio(_read(path), meshio.read(path, file_format="avsucd"))


@pytest.mark.parametrize("name", FILES)
def test_inp_copies_are_read_as_ucd(data_dir, tmp_path, name):
    path = tmp_path / (name.split(".")[0] + ".inp")
    shutil.copy(data_dir / "ucd" / name, path)
    _same_as_meshio(_read(path), meshio.read(path, file_format="avsucd"))


@pytest.mark.parametrize("name", FILES)
def test_meshio_format_name(data_dir, tmp_path, name):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "ucd" / name, path)
    _same_as_meshio(_read(path, file_format="avsucd"), meshio.read(path, file_format="avsucd"))


def test_abaqus_inp_stays_abaqus(data_dir):
    m = _read(data_dir / "abaqus" / "cube.gmsh.inp")
    assert "avsucd:material" not in m.cell_data
    assert m.cells


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.inp"
    p.write_text("# deal.II\n2 1 0 0 0\n1 0.0 0.0 0.0\n2 1.0 0.0 0.0\n1 0 line 1 3\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.inp:5: cell 1: node id 3 is not one"):
        meshdock.read(p)
    p.write_text("# deal.II\nnot a header\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.inp:2: expected the AVS UCD header"):
        meshdock.read(p)


# --- meshdock's writer ---

def _meshio_mesh(m):
    return meshio.Mesh(m.points, [(b.type, b.data) for b in m.cells],
                       point_data=dict(m.point_data), cell_data=dict(m.cell_data))


@pytest.mark.parametrize("name", FILES)
def test_meshio_reads_what_meshdock_writes(data_dir, tmp_path, name):
    m = _read(data_dir / "ucd" / name)
    out = tmp_path / "ours.avs"
    assert meshdock.write(out, m) == []
    # meshio reads the same arrays as meshdock read from the original file, and as meshdock
    # reads back from its own.
    conftest.assert_same_as_meshio(m, meshio.read(out, file_format="avsucd"))
    conftest.assert_same_as_meshio(_read(out), meshio.read(out, file_format="avsucd"))
    # meshio's reader on meshdock's file = on meshio's own file of the same mesh (these files'
    # values are exact in meshio's %.14e).
    theirs = tmp_path / "theirs.avs"
    meshio.write(theirs, _meshio_mesh(m), file_format="avsucd")
    conftest.assert_same_as_meshio(meshio.read(out, file_format="avsucd"),
                                   meshio.read(theirs, file_format="avsucd"))


def _every_type(rng, n=30):
    nodes = {"vertex": 1, "line": 2, "triangle": 3, "quad": 4, "tetra": 4, "pyramid": 5,
             "wedge": 6, "hexahedron": 8}
    cells = [(t, rng.integers(0, n, (int(rng.integers(1, 6)), k))) for t, k in nodes.items()]
    return cells


def test_round_trip_exact_through_both_readers(tmp_path):
    rng = np.random.default_rng(3)
    cells = _every_type(rng)
    mesh = meshio.Mesh(
        rng.standard_normal((30, 3)) * 1e5, cells,
        point_data={"T": rng.standard_normal(30) / 3, "velocity": rng.standard_normal((30, 3))},
        cell_data={"avsucd:material": [rng.integers(-9, 99, len(c)) for _, c in cells],
                   "p": [rng.standard_normal(len(c)) for _, c in cells],
                   "g": [rng.standard_normal((len(c), 2)) for _, c in cells]})
    out = tmp_path / "every.ucd"
    assert meshdock.write(out, mesh, file_format="avsucd") == []
    # Shortest round-trip text: both readers give back every bit (meshio's %.14e would not).
    conftest.assert_same_as_meshio(_read(out), mesh)
    # meshio 5.0's reader fails on cell data (but the material) over more than one block
    # ("'CellBlock' object is not subscriptable", whoever wrote the file): without it, and
    # with it on one block.
    del mesh.cell_data["p"], mesh.cell_data["g"]
    meshdock.write(out, mesh, file_format="avsucd")
    conftest.assert_same_as_meshio(meshio.read(out, file_format="avsucd"), mesh)
    one = meshio.Mesh(mesh.points, cells[4:5],
                      cell_data={"avsucd:material": [np.arange(len(cells[4][1]))],
                                 "g": [rng.standard_normal((len(cells[4][1]), 2))]})
    meshdock.write(out, one, file_format="avsucd")
    conftest.assert_same_as_meshio(meshio.read(out, file_format="avsucd"), one)


def test_two_d_points_and_what_ucd_cannot_hold(tmp_path):
    mesh = meshio.Mesh(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), [("triangle", [[0, 1, 2]])],
                       point_data={"a b": np.arange(3.0)})
    with pytest.warns(meshdock.MeshWarning) as notes:
        meshdock.write(tmp_path / "t.avs", mesh)
    assert [str(n.message) for n in notes] == [
        "points have 2 coordinates; AVS UCD stores 3, so the rest are written as 0",
        "point_data 'a b' reads back as 'a_b' (AVS UCD readers turn blanks into '_')"]
    back = meshio.read(tmp_path / "t.avs", file_format="avsucd")
    np.testing.assert_array_equal(back.points[:, 2], 0)
    np.testing.assert_array_equal(back.point_data["a_b"], [0, 1, 2])
    mesh = meshio.Mesh(np.zeros((6, 3)), [("triangle6", [[0, 1, 2, 3, 4, 5]])])
    with pytest.raises(meshdock.MeshError,
                       match=r"cells\[0\] \(triangle6\) cannot be written to AVS UCD"):
        meshdock.write(tmp_path / "q.avs", mesh)
    assert not (tmp_path / "q.avs").exists()
