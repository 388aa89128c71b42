"""Abaqus .inp: meshdock's reader against meshio 5.3's on files gmsh and meshio wrote
(tests/data/abaqus, tools/make_abaqus.py), a round trip through meshdock's writer read back by
both readers, meshio's format names, *INCLUDE beside the file, and the notes of what a write
drops. meshio is asked live."""

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

GMSH_FILES = ["cube.gmsh.inp", "tet10.gmsh.inp", "hex20.gmsh.inp", "quad.gmsh.inp"]


_read = conftest.read_quietly


def _same_as_meshio(m, ref, sets=True):
    np.testing.assert_array_equal(m.points, ref.points)
    assert [b.type for b in m.cells] == [b.type for b in ref.cells]
    for ours, theirs in zip(m.cells, ref.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    assert not m.point_data and not ref.point_data
    if not sets:
        return
    assert sorted(m.point_sets) == sorted(ref.point_sets)
    for name, ids in ref.point_sets.items():
        np.testing.assert_array_equal(m.point_sets[name], ids)
    assert sorted(m.cell_sets) == sorted(ref.cell_sets)
    for name, blocks in ref.cell_sets.items():
        assert len(m.cell_sets[name]) == len(blocks)
        for ours, theirs in zip(m.cell_sets[name], blocks):
            np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", GMSH_FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "abaqus" / name
    _same_as_meshio(_read(path), meshio.read(path))


def test_meshio_written_file(data_dir):
    """meshio writes a cell set once per block that holds some of it ("*ELSET, ELSET=mixed"
    twice) and reads back only the last; meshdock appends the second, as Abaqus does, so it
    reads the set meshio was given."""
    path = data_dir / "abaqus" / "blocks.meshio.inp"
    m = _read(path)
    _same_as_meshio(m, meshio.read(path), sets=False)
    assert m.points.shape == (12, 2)
    assert [list(x) for x in m.cell_sets["mixed"]] == [[1], [0, 1], []]
    np.testing.assert_array_equal(m.point_sets["left"], [0, 3, 8])
    np.testing.assert_array_equal(m.point_sets["right"], [11, 1])


@pytest.mark.parametrize("name", GMSH_FILES)
def test_round_trip_through_both_readers(data_dir, tmp_path, name):
    m = _read(data_dir / "abaqus" / name)
    out = tmp_path / "out.inp"
    assert meshdock.write(out, m) == []
    back = _read(out)
    assert back.notes == []  # ids 1..n in order, no keyword skipped
    np.testing.assert_array_equal(back.points, m.points)
    for a, b in zip(back.cells, m.cells):
        assert a.type == b.type
        np.testing.assert_array_equal(a.data, b.data)
    assert [(r.name, r.kind) for r in back.regions] == [(r.name, r.kind) for r in m.regions]
    for a, b in zip(back.regions, m.regions):
        np.testing.assert_array_equal(a.entries, b.entries)
    # meshio reads meshdock's file the same (sets too: each written once, the types meshio's).
    _same_as_meshio(back, meshio.read(out))


def test_line3_is_written_end_middle_end(data_dir, tmp_path):
    """Abaqus's 3-node beams (B32) are numbered end, middle, end; meshdock's line3 (meshio's,
    VTK's) is end, end, middle: read and written reordered. meshio keeps the file's order."""
    m = _read(data_dir / "abaqus" / "corners.inp")
    assert m.cells[1].type == "line3"
    np.testing.assert_array_equal(m.cells[1].data, [[0, 2, 1], [4, 6, 5]])
    out = tmp_path / "l3.inp"
    meshdock.write(out, m)
    text = out.read_text()
    assert "*ELEMENT, TYPE=B32\n2, 1, 2, 3\n3, 5, 6, 7\n" in text
    np.testing.assert_array_equal(_read(out).cells[1].data, m.cells[1].data)


def test_meshio_format_names_and_includes(data_dir, tmp_path):
    m = _read(data_dir / "abaqus" / "main.inp", file_format="abaqus")
    assert m.points.shape == (4, 2)
    np.testing.assert_array_equal(m.cells[0].data, [[0, 1, 2], [0, 2, 3]])
    out = tmp_path / "x.txt"
    meshdock.write(out, m, file_format="abaqus")
    assert out.read_text().startswith("*HEADING\n")
    np.testing.assert_array_equal(_read(out, file_format="abaqus").points, m.points)


def test_write_notes_what_inp_cannot_hold(tmp_path):
    m = meshdock.Mesh(np.zeros((3, 3)), [("triangle", np.array([[0, 1, 2]]))],
                      point_data={"t": np.arange(3.0)}, cell_data={"c": [np.ones(1)]})
    with pytest.warns(meshdock.MeshWarning):
        notes = meshdock.write(tmp_path / "d.inp", m)
    assert any("point_data 't' is not written" in n for n in notes)
    assert any("cell_data 'c' is not written" in n for n in notes)


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.inp"
    p.write_text("*NODE\n1, 0, 0\n*ELEMENT, TYPE=C3D99\n1, 1\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.inp:3: element type 'C3D99'"):
        meshdock.read(p)
    with pytest.raises(meshdock.WriteError, match=r"cells\[0\] \(vertex\)"):
        meshdock.write(tmp_path / "v.inp",
                       meshdock.Mesh(np.zeros((1, 3)), [("vertex", np.array([[0]]))]))


def test_the_daemon_reads_includes_under_its_roots_and_never_outside(data_dir, tmp_path):
    """meshdockd opens every *INCLUDE as it opens the file itself: under its roots (openat2
    RESOLVE_BENEATH), so an include that is a symlink out of the root, or names an absolute
    path, is refused at its line and no byte of the outside file is published."""
    import grpc
    import shutil
    from daemon_util import Daemon
    from meshdock.v1 import meshdock_pb2 as pb

    d = Daemon(tmp_path)
    try:
        shutil.copy(data_dir / "abaqus" / "main.inp", d.root / "main.inp")
        shutil.copytree(data_dir / "abaqus" / "sub", d.root / "sub")
        d.load("main.inp", "inp")
        info = d.stub.Describe(pb.NameRequest(name="inp"), timeout=10).slot
        assert (info.num_points, info.num_cells) == (4, 2)

        outside = tmp_path / "outside.inp"
        outside.write_text("*NODE\n1, 7., 7.\n2, 8., 8.\n3, 9., 9.\n")
        (d.root / "link.inp").symlink_to(outside)
        for name, include in (("escape", "link.inp"), ("absolute", str(outside))):
            (d.root / f"{name}.inp").write_text(
                f"*HEADING\n*INCLUDE, INPUT={include}\n*ELEMENT, TYPE=CPS3\n1, 1, 2, 3\n")
            with pytest.raises(grpc.RpcError) as e:
                d.load(f"{name}.inp", name)
            assert f"{name}.inp:2" in e.value.details(), e.value.details()
            assert "7." not in e.value.details()
        assert sorted(s.name for s in d.stub.List(pb.ListRequest(), timeout=5).slots) == ["inp"]
    finally:
        assert d.stop() == 0, d.stderr


def test_cae_parts_and_instances(data_dir):
    """An Abaqus/CAE model (cae.inp): parts each numbered from 1, placed by *INSTANCE (block-2
    translated by (2, 0, 0); rod-1 translated by (0, 0, 1), then turned 90 degrees about the
    line through (0, 0, 1) and (0, 0, 2)). meshio (5.3) is no reference here: it reads the
    parts' ids as one space and places no instance (on this file it fails with a KeyError on an
    assembly set; on parts.inp it keeps the last part's nodes only, both parts' lines pointing
    at them), so the numbers are written out below."""
    m = _read(data_dir / "abaqus" / "cae.inp")
    cube = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                     [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], float)
    rod = [[0, 0, 1], [0, 1, 1]]  # (0,0,0), (1,0,0) + (0,0,1), then the quarter turn
    np.testing.assert_allclose(m.points, np.vstack([cube, cube + [2, 0, 0], rod, [[1, 1, 3]]]),
                               atol=1e-12)
    assert [b.type for b in m.cells] == ["hexahedron", "hexahedron", "line"]
    np.testing.assert_array_equal(m.cells[1].data, [list(range(8, 16))])
    np.testing.assert_array_equal(m.cells[2].data, [[16, 17]])
    regions = {(r.name, r.kind): list(r.entries) for r in m.regions}
    assert regions == {
        ("block-1", "cell"): [0], ("block-2", "cell"): [1], ("rod-1", "cell"): [2],
        ("block-1.top", "point"): [4, 5, 6, 7], ("block-2.top", "point"): [12, 13, 14, 15],
        ("block-1.Set-1", "cell"): [0], ("block-2.Set-1", "cell"): [1],
        ("RP", "point"): [18], ("ends", "point"): [16, 17], ("blocks", "cell"): [0, 1],
    }
    assert any("3 *INSTANCE of 2 parts expanded" in n for n in m.notes)
    assert any("2 translated, 1 rotated" in n for n in m.notes)


def test_ids_in_order_and_then_not(tmp_path):
    """Ids 1..n in order are not kept (IdList): ids that leave that order part way through (7
    after 3, 9 after 2) must still map nodes, cells and sets to what the file says."""
    p = tmp_path / "ord.inp"
    p.write_text("*NODE\n1, 0., 0.\n2, 1., 0.\n3, 1., 1.\n7, 0., 1.\n"
                 "*ELEMENT, TYPE=CPS3\n1, 1, 2, 3\n2, 1, 3, 7\n9, 2, 3, 7\n"
                 "*ELSET, ELSET=e\n9, 2\n*NSET, NSET=n\n7, 1\n")
    m = _read(p)
    assert m.cells[0].data.tolist() == [[0, 1, 2], [0, 2, 3], [1, 2, 3]]
    assert [a.tolist() for a in m.cell_sets["e"]] == [[2, 1]]
    assert m.point_sets["n"].tolist() == [3, 0]
    p.write_text("*NODE\n1, 0., 0.\n2, 1., 0.\n*ELEMENT, TYPE=T2D2\n1, 1, 2\n2, 2, 3\n")
    with pytest.raises(meshdock.ReadError, match=r"ord.inp:6: .*element 2 refers to node 3"):
        _read(p)
