"""Nastran bulk data: meshdock's reader against meshio 5.0's ("nastran") on gmsh's small, large
and free field files, meshio's own and a hand-written one (tests/data/nastran,
tools/make_nastran.py); meshio's format name; a round trip through meshdock's writer read back
by both readers; notes and errors naming file and line; INCLUDE (a split deck against meshio
on the same deck inlined, and the daemon's includes under its roots). meshio is asked live.

gmsh writes no BEGIN BULK, which meshio 5.0 requires: meshio reads a copy with one put first
(meshdock reads the file as it is, noted)."""
import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

GMSH = ["square.gmsh.bdf", "square2.gmsh.nas", "cube.gmsh.fem", "cube2.gmsh.bdf"]
OTHERS = ["every-type.meshio.bdf", "free-points.meshio.bdf", "corners.bdf"]

_read = conftest.read_quietly


def _meshio_read(path, tmp_path):
    text = path.read_text()
    if "BEGIN BULK" not in text:
        path = tmp_path / ("with-begin-bulk" + path.suffix)
        path.write_text("BEGIN BULK\n" + text)
    return meshio.read(path, file_format="nastran")


def _same_as_meshio(m, ref):
    conftest.assert_same_as_meshio(m, ref)


@pytest.mark.parametrize("name", GMSH + OTHERS)
def test_reads_what_meshio_reads(data_dir, tmp_path, name):
    path = data_dir / "nastran" / name
    _same_as_meshio(_read(path), _meshio_read(path, tmp_path))


def test_meshio_format_name(data_dir, tmp_path):
    path = tmp_path / "model.dat"
    path.write_bytes((data_dir / "nastran" / "corners.bdf").read_bytes())
    _same_as_meshio(_read(path, file_format="nastran"), meshio.read(path, file_format="nastran"))


def test_notes(data_dir):
    m = _read(data_dir / "nastran" / "corners.bdf")
    assert any("cards not read (meshdock reads GRID and element cards): FORCE (1), MAT1 (1), "
               "PSHELL (1), PSOLID (1), SPC (1)" in n for n in m.notes)
    g = _read(data_dir / "nastran" / "square.gmsh.bdf")
    assert any("no BEGIN BULK" in n for n in g.notes)


@pytest.mark.parametrize("name", ["every-type.meshio.bdf", "cube2.gmsh.bdf", "square.gmsh.bdf"])
def test_round_trip_through_meshdocks_writer(data_dir, tmp_path, name):
    src = _read(data_dir / "nastran" / name)
    out = tmp_path / "back.bdf"
    meshdock.write(out, src)
    ours = _read(out)
    _same_as_meshio(ours, meshio.read(out, file_format="nastran"))
    np.testing.assert_array_equal(ours.points, src.points)  # exact: shortest round-trip text
    for a, b in zip(ours.cells, src.cells):
        assert a.type == b.type
        np.testing.assert_array_equal(a.data, b.data)
    for name_, blocks in src.cell_data.items():
        for a, b in zip(ours.cell_data[name_], blocks):
            np.testing.assert_array_equal(a, b)


def test_meshio_mesh_written_with_file_format(tmp_path):
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0 / 3.0]])
    m = meshio.Mesh(pts, [("triangle", [[0, 1, 2]])])
    out = tmp_path / "tri.nastran"
    with pytest.warns(meshdock.MeshWarning, match="points have 2 coordinates"):
        notes = meshdock.write(out, m, file_format="nastran")
    assert any("points have 2 coordinates" in n for n in notes)
    back = meshio.read(out, file_format="nastran")
    np.testing.assert_array_equal(back.points[:, :2], pts)
    np.testing.assert_array_equal(back.cells[0].data, [[0, 1, 2]])


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.bdf"
    p.write_text("BEGIN BULK\nGRID    1               0.      0.      0.\n"
                 "CTRIA3  1       1       1       1       7\nENDDATA\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.bdf:3: column 1: CTRIA3 1: grid id 7 is"):
        meshdock.read(p)
    p.write_text("BEGIN BULK\nGRID    1               0.      0.      1.0-x\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.bdf:2: column 41: GRID: expected a real"):
        meshdock.read(p)


def test_includes_read_as_meshio_reads_the_inlined_deck(data_dir):
    """include/deck.bdf (INCLUDEs after BEGIN BULK, one nested, one name over two lines, a CHEXA
    continued into the next file) reads as meshio reads include/inlined.bdf, the same deck with
    the files' lines in place of the INCLUDEs. meshio 5.0 does not follow INCLUDE: it skips the
    line as a card it does not know, so on deck.bdf it finds no GRID for the elements' ids and
    fails (a KeyError)."""
    d = data_dir / "nastran" / "include"
    m = _read(d / "deck.bdf")
    _same_as_meshio(m, meshio.read(d / "inlined.bdf", file_format="nastran"))
    assert m.points.shape == (10, 3)
    assert any("1 INCLUDE statements before BEGIN BULK" in n for n in m.notes)
    with pytest.raises(KeyError):
        meshio.read(d / "deck.bdf", file_format="nastran")


def test_include_errors_name_the_included_file_and_its_line(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "main.bdf").write_text("BEGIN BULK\n$ grids\nINCLUDE 'sub/grids.bdf'\n")
    (tmp_path / "sub" / "grids.bdf").write_text("GRID    1               0.      x\n")
    with pytest.raises(meshdock.ReadError, match=r"sub/grids.bdf:1: column 33: GRID: expected a"):
        meshdock.read(tmp_path / "main.bdf")
    (tmp_path / "up.bdf").write_text("BEGIN BULK\nINCLUDE '../x.bdf'\n")
    with pytest.raises(meshdock.ReadError, match=r"up.bdf:2: column 1: INCLUDE '../x.bdf' leads"):
        meshdock.read(tmp_path / "up.bdf")


def test_the_daemon_reads_includes_under_its_roots_and_never_outside(data_dir, tmp_path):
    """meshdockd opens every INCLUDE as it opens the file itself: under its roots (openat2
    RESOLVE_BENEATH), so an include that is a symlink out of the root, or names an absolute
    path, is refused at its line, no byte of the outside file is published, and the daemon
    goes on serving."""
    import grpc
    import shutil
    from daemon_util import Daemon
    from meshdock.v1 import meshdock_pb2 as pb

    d = Daemon(tmp_path)
    try:
        shutil.copytree(data_dir / "nastran" / "include", d.root / "deck")
        d.load("deck/deck.bdf", "bdf")
        info = d.stub.Describe(pb.NameRequest(name="bdf"), timeout=10).slot
        assert (info.num_points, info.num_cells) == (10, 5)

        outside = tmp_path / "outside.bdf"
        outside.write_text("GRID    1               7.      7.      7.\n"
                           "GRID    2               8.      8.      8.\n"
                           "GRID    3               9.      9.      9.\n")
        (d.root / "link.bdf").symlink_to(outside)
        for name, include in (("escape", "link.bdf"), ("absolute", str(outside))):
            (d.root / f"{name}.bdf").write_text(
                f"BEGIN BULK\nINCLUDE '{include}'\nCTRIA3  1       1       1       2       3\n")
            with pytest.raises(grpc.RpcError) as e:
                d.load(f"{name}.bdf", name)
            assert f"{name}.bdf:2" in e.value.details(), e.value.details()
            assert "7." not in e.value.details()
        assert sorted(s.name for s in d.stub.List(pb.ListRequest(), timeout=5).slots) == ["bdf"]
    finally:
        assert d.stop() == 0, d.stderr
