"""FLAC3D: meshdock's reader against meshio 5.0's ("flac3d") on the files of tests/data/flac3d
(gmsh meshes written by meshio's writer, ascii and binary; hand-made corners;
tools/make_flac3d.py), meshdock's writer read back by both readers in both encodings, meshio's
writer read back by meshdock's, and errors naming the file and line or byte. meshio is asked
live."""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

STEMS = ["gmsh-tets", "gmsh-prisms", "gmsh-hex", "mixed"]
FILES = [f"{s}{e}" for s in STEMS for e in (".f3grid", ".bin.f3grid")] + ["corners.f3grid"]

_read = conftest.read_quietly


def _sets_as_meshio(m):
    """meshdock's cell_sets in meshio 5.0's flac3d form: each block's list holds the GLOBAL cell
    numbers of its cells (meshio's reader splits the set by block but does not subtract the
    block's start)."""
    starts = np.cumsum([0] + [len(b) for b in m.cells])
    return {k: [np.asarray(a) + starts[i] for i, a in enumerate(v)]
            for k, v in m.cell_sets.items()}


def assert_sets(m, ref):
    ours = _sets_as_meshio(m)
    assert sorted(ours) == sorted(ref.cell_sets)
    for k, blocks in ref.cell_sets.items():
        assert len(ours[k]) == len(blocks), k
        for a, b in zip(ours[k], blocks):
            np.testing.assert_array_equal(a, np.asarray(b, dtype=np.int64), err_msg=k)


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "flac3d" / name
    m = _read(path)
    ref = meshio.read(path)
    conftest.assert_same_as_meshio(m, ref, dtypes=True)
    assert_sets(m, ref)
    assert m.notes == []


def test_corners_regions(data_dir):
    m = _read(data_dir / "flac3d" / "corners.f3grid")
    assert [(r.name, r.kind, np.asarray(r.entries).tolist()) for r in m.regions] == [
        ("zone:rock mass:1", "cell", [2, 3, 4]), ("zone:single:Default", "cell", [5, 6]),
        ("face:base:2", "cell", [1, 0])]


@pytest.mark.parametrize("name", ["mixed.f3grid", "corners.f3grid", "gmsh-tets.bin.f3grid",
                                  "gmsh-hex.f3grid"])
@pytest.mark.parametrize("encoding", ["ascii", "binary"])
def test_meshdock_writer_read_back_by_both_readers(data_dir, tmp_path, name, encoding):
    src = _read(data_dir / "flac3d" / name)
    out = tmp_path / "o.f3grid"
    with pytest.warns(meshdock.MeshWarning):
        notes = meshdock.write(out, src, encoding=encoding)
    assert notes == ["cell_data 'cell_ids' is not written: FLAC3D holds no cell data"]
    back = _read(out)
    np.testing.assert_array_equal(back.points, src.points)
    assert [b.type for b in back.cells] == [b.type for b in src.cells]
    for ours, theirs in zip(back.cells, src.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    assert back.cell_sets.keys() == src.cell_sets.keys()
    for k in src.cell_sets:
        for a, b in zip(back.cell_sets[k], src.cell_sets[k]):
            np.testing.assert_array_equal(a, b)
    ref = meshio.read(out)
    conftest.assert_same_as_meshio(back, ref, dtypes=True)
    assert_sets(back, ref)


@pytest.mark.parametrize("binary", [False, True])
def test_meshio_writer_read_by_meshdock(tmp_path, binary):
    rng = np.random.default_rng(7)
    pts = rng.standard_normal((30, 3))
    cells = [("tetra", rng.integers(0, 30, (6, 4))), ("pyramid", rng.integers(0, 30, (3, 5))),
             ("wedge", rng.integers(0, 30, (2, 6))), ("hexahedron", rng.integers(0, 30, (2, 8)))]
    sets = {"g": [np.array([0, 5]), np.array([1]), np.array([], dtype=int), np.array([1])]}
    path = tmp_path / "r.f3grid"
    meshio.write(path, meshio.Mesh(pts, cells, cell_sets=sets), file_format="flac3d",
                 binary=binary)
    m = _read(path)
    ref = meshio.read(path)
    conftest.assert_same_as_meshio(m, ref, dtypes=True)
    assert_sets(m, ref)
    np.testing.assert_array_equal(m.points, pts)


def test_meshio_format_name_and_faces(data_dir, tmp_path):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "flac3d" / "mixed.f3grid", path)
    m = _read(path, file_format="flac3d")
    assert [b.type for b in m.cells] == ["tetra", "pyramid", "wedge", "hexahedron"]
    # A mesh with faces: meshio's writer fails on it (it asserts every block is a zone);
    # meshdock writes them as F T3 / Q4, which meshio's reader reads.
    mm = meshio.Mesh(m.points, [("tetra", m.cells[0].data), ("triangle", np.array([[0, 1, 2]]))])
    out = tmp_path / "f.f3grid"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(out, mm, file_format="flac3d", encoding="binary")
    ref = meshio.read(out)
    assert [b.type for b in ref.cells] == ["triangle", "tetra"]
    conftest.assert_same_as_meshio(_read(out), ref, dtypes=True)


def test_errors_name_file_and_line_or_byte(data_dir, tmp_path):
    with pytest.raises(meshdock.MeshError, match=r"lying\.bin\.f3grid: byte 8: 4294967295 grid "
                                                 r"points of 28 bytes at least do not fit"):
        meshdock.read(data_dir / "flac3d" / "lying.bin.f3grid")
    with pytest.raises(meshdock.MeshError, match=r"bad-node\.f3grid:5: zone 1 refers to grid "
                                                 r"point 99, which no G line before it defines"):
        meshdock.read(data_dir / "flac3d" / "bad-node.f3grid")
    with pytest.raises(meshdock.MeshError, match=r"truncated\.bin\.f3grid: byte \d+: "):
        meshdock.read(data_dir / "flac3d" / "truncated.bin.f3grid")


def test_writer_refuses_other_cells(tmp_path):
    m = meshio.Mesh(np.zeros((3, 3)), [("line", np.array([[0, 1]]))])
    with pytest.raises(meshdock.MeshError, match=r"cells\[0\] \(line\) cannot be written"):
        meshdock.write(tmp_path / "l.f3grid", m)
