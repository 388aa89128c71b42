"""TetGen (.node + .ele): meshdock's reader against meshio 5.0's ("tetgen") on the pairs of
tests/data/tetgen (tools/make_tetgen.py), read from either file and by meshio's format name;
what meshio refuses (10-node tets, non-consecutive indices) against numbers written here; the
error of a pair missing its other file. meshdock's writer (write_tetgen: both files from either
name): meshio reads what it writes as meshdock reads it back, and as it reads its own pair of the
same mesh; 10-node tets back in TetGen's order. meshio is asked live."""
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


# --- meshdock's writer ---

@pytest.mark.parametrize("ext", ["node", "ele"])
@pytest.mark.parametrize("name", PAIRS)
def test_meshio_reads_what_meshdock_writes(data_dir, tmp_path, name, ext):
    m = _read(data_dir / "tetgen" / f"{name}.node")
    out = tmp_path / f"ours.{ext}"
    assert meshdock.write(out, m) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours.ele", "ours.node"]
    ours = meshio.read(out, file_format="tetgen")
    _same_as_meshio(m, ours)
    _same_as_meshio(_read(out), ours)
    # meshio's own pair of the same mesh reads the same.
    theirs = tmp_path / "theirs" / "t.node"
    theirs.parent.mkdir()
    meshio.write(theirs, meshio.Mesh(m.points, [(b.type, b.data) for b in m.cells],
                                     point_data=dict(m.point_data),
                                     cell_data=dict(m.cell_data)), file_format="tetgen")
    _same_as_meshio(ours, meshio.read(theirs, file_format="tetgen"))


def test_ten_node_tets_written_in_tetgens_order(data_dir, tmp_path):
    # TetGen's own -o2 pair, read, written, read back: the same arrays, every mid-edge node at
    # the middle of the edge VTK puts it on, and the .ele rows TetGen's own (0-based here).
    src = _read(data_dir / "tetgen" / "tet10.ele")
    out = tmp_path / "q.node"
    meshdock.write(out, src, file_format="tetgen")
    m = _read(out)
    _same_as_meshio(m, src)
    corners = m.points[m.cells[0].data[:, :4]]
    edges = [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 3)]
    for k, (a, b) in enumerate(edges):
        np.testing.assert_allclose(m.points[m.cells[0].data[:, 4 + k]],
                                   (corners[:, a] + corners[:, b]) / 2)
    def rows(path):
        lines = [ln.split("#")[0].split() for ln in path.read_text().splitlines()]
        return [[int(v) for v in ln] for ln in lines if ln][1:]
    theirs = np.array(rows(data_dir / "tetgen" / "tet10.ele"))
    np.testing.assert_array_equal(np.array(rows(tmp_path / "q.ele"))[:, 1:], theirs[:, 1:] - 1)


def test_what_tetgen_cannot_hold(tmp_path, data_dir):
    # What is not a tet is noted; a mesh without tets, and a buffer, are refused.
    m = _read(data_dir / "tetgen" / "cube.node")
    mesh = meshio.Mesh(m.points, [("triangle", [[0, 1, 2]]), ("tetra", m.cells[0].data)],
                       field_data={"f": np.array([1.0])})
    with pytest.warns(meshdock.MeshWarning) as notes:
        meshdock.write(tmp_path / "w.ele", mesh)
    assert [str(n.message) for n in notes] == [
        "cells[0] (triangle) is not written: TetGen holds tetra and tetra10 cells only",
        "field_data 'f' is not written: TetGen holds no field data"]
    np.testing.assert_array_equal(meshio.read(tmp_path / "w.node").cells[0].data,
                                  m.cells[0].data)
    with pytest.raises(meshdock.MeshError, match=r"no tetra or tetra10 block"):
        meshdock.write(tmp_path / "none.node", meshio.Mesh(m.points, [("triangle", [[0, 1, 2]])]))
    assert not (tmp_path / "none.node").exists() and not (tmp_path / "none.ele").exists()
    import io
    with pytest.raises(meshdock.MeshError, match=r"a TetGen mesh is two files .* write it to a path"):
        meshdock.write(io.BytesIO(), m, file_format="tetgen")


def test_the_daemon_exports_both_files_under_its_root(data_dir, tmp_path):
    """Export to x.node writes x.ele beside it in the same root-confined directory fd; an
    existing x.ele without overwrite fails the export with neither file written; the other
    file of the pair is never a loaded mesh's source either."""
    import grpc
    from daemon_util import Daemon
    from meshdock.v1 import meshdock_pb2 as pb

    d = Daemon(tmp_path)
    try:
        for ext in ("node", "ele"):
            shutil.copy(data_dir / "tetgen" / f"cube.{ext}", d.root / f"cube.{ext}")
        d.load("cube.node", "cube")
        rep = d.stub.Export(pb.ExportRequest(name="cube", path=str(d.root / "out.node")))
        assert rep.bytes_written == (d.root / "out.node").stat().st_size > 0
        _same_as_meshio(_read(d.root / "out.ele"), meshio.read(data_dir / "tetgen" / "cube.node"))

        (d.root / "x.ele").write_text("old")
        with pytest.raises(grpc.RpcError) as e:
            d.stub.Export(pb.ExportRequest(name="cube", path=str(d.root / "x.node")))
        assert e.value.code() == grpc.StatusCode.ALREADY_EXISTS
        assert "x.ele exists" in e.value.details(), e.value.details()
        assert not (d.root / "x.node").exists() and (d.root / "x.ele").read_text() == "old"

        # cube.node is the loaded mesh's source: exporting to cube.ele would replace it.
        with pytest.raises(grpc.RpcError) as e:
            d.stub.Export(pb.ExportRequest(name="cube", path=str(d.root / "cube.ele"),
                                           overwrite=True))
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "cube.node is the source of the loaded mesh 'cube'" in e.value.details()
        assert sorted(p.name for p in d.root.iterdir()) == [
            "cube.ele", "cube.node", "out.ele", "out.node", "x.ele"]
    finally:
        assert d.stop() == 0, d.stderr
