"""TetGen (.node + .ele): meshdock's reader against meshio 5.0's ("tetgen") on the pairs of
tests/data/tetgen (tools/make_tetgen.py), read from either file and by meshio's format name;
what meshio refuses (10-node tets, non-consecutive indices) against numbers written here; the
error of a pair missing its other file. meshio is asked live."""
import shutil

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

PAIRS = ["cube", "corners"]

_read = conftest.read_quietly


def _same_as_meshio(m, ref):
    conftest.assert_same_as_meshio(m, ref)


@pytest.mark.parametrize("ext", ["node", "ele"])
@pytest.mark.parametrize("name", PAIRS)
def test_reads_what_meshio_reads(data_dir, name, ext):
    path = data_dir / "tetgen" / f"{name}.{ext}"
    _same_as_meshio(_read(path), meshio.read(path))


@pytest.mark.parametrize("name", PAIRS)
def test_meshio_format_name(data_dir, name):
    path = data_dir / "tetgen" / f"{name}.node"
    _same_as_meshio(_read(path, file_format="tetgen"), meshio.read(path, file_format="tetgen"))


def test_meshio_writes_random_tets(tmp_path):
    rng = np.random.default_rng(5)
    pts = rng.random((50, 3))
    tets = rng.integers(0, 50, (80, 4))
    src = meshio.Mesh(pts, [("tetra", tets)],
                      point_data={"tetgen:ref": rng.integers(0, 3, 50).astype(float),
                                  "temperature": rng.random(50)},
                      cell_data={"tetgen:ref": [rng.integers(1, 4, 80)]})
    path = tmp_path / "random.ele"
    meshio.write(path, src, file_format="tetgen")
    _same_as_meshio(_read(path), meshio.read(path))


def test_ten_node_tets(data_dir):
    # meshio refuses them (4 nodes a tet only). TetGen's own -o2 output (tools/make_tetgen.py)
    # lists the mid-edge nodes for the edges 34 14 12 23 24 13: each must land where VTK's
    # (meshio's) tetra10 puts it.
    m = _read(data_dir / "tetgen" / "tet10.ele")
    assert [b.type for b in m.cells] == ["tetra10"]
    assert m.cells[0].data.shape == (6, 10)
    corners = m.points[m.cells[0].data[:, :4]]
    edges = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]
    for k, (a, b) in enumerate(edges):
        np.testing.assert_allclose(m.points[m.cells[0].data[:, 4 + k]],
                                   (corners[:, a] + corners[:, b]) / 2)


def test_non_consecutive_indices_are_mapped(data_dir):
    # meshio refuses them (its ReadError caught, it exits).
    with pytest.raises((meshio.ReadError, SystemExit)):
        meshio.read(data_dir / "tetgen" / "gaps.node")
    m = _read(data_dir / "tetgen" / "gaps.node")
    np.testing.assert_array_equal(m.cells[0].data, [[0, 1, 2, 3]])


def test_missing_other_file(data_dir, tmp_path):
    shutil.copy(data_dir / "tetgen" / "corners.node", tmp_path / "lone.node")
    with pytest.raises(meshdock.ReadError,
                       match=r"lone.node: the TetGen mesh's tetrahedra are in lone.ele, which "
                             r"cannot be opened"):
        meshdock.read(tmp_path / "lone.node")


def test_errors_name_file_and_line(data_dir, tmp_path):
    shutil.copy(data_dir / "tetgen" / "corners.node", tmp_path / "bad.node")
    (tmp_path / "bad.ele").write_text("1 4 0\n1 1 2 3 6\n")
    with pytest.raises(meshdock.ReadError,
                       match=r"bad.ele:2: tetrahedron 1: point index 6 is not one"):
        meshdock.read(tmp_path / "bad.node")


def test_a_buffer_is_refused(data_dir):
    with open(data_dir / "tetgen" / "cube.node", "rb") as f:
        with pytest.raises(meshdock.MeshError, match="a TetGen mesh is two files"):
            meshdock.read(f, file_format="tetgen")
