"""SU2: meshdock's reader against meshio 5.0's ("su2") on gmsh's, meshio's and hand-written files
(tests/data/su2, tools/make_su2.py), meshdock's writer read back by both readers, meshio's
format name, the marker regions meshio does not give, and errors naming file and line. meshio is
asked live."""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

# The files meshio reads: spaces.su2 (blanks before '=') and zones.su2 (NZONE) it misreads.
FILES = ["gmsh-2d.su2", "gmsh-3d.su2", "meshio-mixed.su2", "corners.su2"]

_read = conftest.read_quietly


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its "tags of string type" warnings
        return meshio.read(path, file_format="su2")


def _same_as_meshio(m, ref):
    np.testing.assert_array_equal(m.points, ref.points)
    assert [b.type for b in m.cells] == [b.type for b in ref.cells]
    for ours, theirs in zip(m.cells, ref.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    assert m.point_data == {} and ref.point_data == {}
    assert sorted(m.cell_data) == sorted(ref.cell_data) == ["su2:tag"]
    assert len(m.cell_data["su2:tag"]) == len(ref.cell_data["su2:tag"])
    for ours, theirs in zip(m.cell_data["su2:tag"], ref.cell_data["su2:tag"]):
        assert ours.dtype == theirs.dtype == np.int32
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "su2" / name
    _same_as_meshio(_read(path), _meshio_read(path))


@pytest.mark.parametrize("name", FILES)
def test_meshio_format_name(data_dir, tmp_path, name):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "su2" / name, path)
    _same_as_meshio(_read(path, file_format="su2"), _meshio_read(path))


def test_markers_are_cell_regions(data_dir):
    m = _read(data_dir / "su2" / "gmsh-2d.su2")
    sets = m.cell_sets
    assert sorted(sets) == ["PhysicalLine7", "inlet", "wall"]
    np.testing.assert_array_equal(sets["inlet"][1], [0, 1])
    np.testing.assert_array_equal(sets["wall"][1], [2, 3, 4, 5])
    assert [r.tag for r in m.regions] == [1, 2, 3]  # meshio's su2:tag numbers


def test_hand_written_corners_meshio_cannot_read(data_dir):
    m = _read(data_dir / "su2" / "spaces.su2")
    np.testing.assert_array_equal(m.points, [[0, 0], [1, 0], [1, 1], [0, 1]])
    np.testing.assert_array_equal(m.cells[0].data, [[0, 1, 2], [0, 2, 3]])
    np.testing.assert_array_equal(m.cells[1].data, [[0, 1], [1, 2]])
    z = _read(data_dir / "su2" / "zones.su2")
    assert z.notes == [f"su2: {data_dir / 'su2' / 'zones.su2'}:11: NZONE= 2: zone 1 is read, the "
                       "other zones are not"]
    np.testing.assert_array_equal(z.points, [[0, 0], [1, 0], [0, 1]])


@pytest.mark.parametrize("name", FILES)
def test_round_trip_through_both_readers(data_dir, tmp_path, name):
    src = _read(data_dir / "su2" / name)
    src.points[3, :2] = [0.1 + 0.2, -1e-300]  # the shortest text must keep these exactly
    out = tmp_path / "o.su2"
    assert meshdock.write(out, src) == []
    back = _read(out)
    np.testing.assert_array_equal(back.points, src.points)
    assert [b.type for b in back.cells] == [b.type for b in src.cells]
    for ours, theirs in zip(back.cells, src.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    for ours, theirs in zip(back.cell_data["su2:tag"], src.cell_data["su2:tag"]):
        np.testing.assert_array_equal(ours, theirs)
    assert [(r.name, r.tag) for r in back.regions] == [(r.name, r.tag) for r in src.regions]
    _same_as_meshio(back, _meshio_read(out))


def test_gmsh_physical_groups_become_markers(data_dir, tmp_path):
    # Through MSH (meshdock's writer and reader): the boundary's gmsh:physical tags are the
    # markers, named by the physical groups.
    msh = tmp_path / "o.msh"
    out = tmp_path / "o.su2"
    with pytest.warns(meshdock.MeshWarning):  # MSH's doubles; SU2 keeps no other data
        meshdock.write(msh, _read(data_dir / "su2" / "gmsh-3d.su2"))
        notes = meshdock.write(out, _read(msh), file_format="su2")
    assert "cell_data 'su2:tag' is not written: SU2 holds no cell data but gmsh:physical" in notes
    back = _read(out)
    assert [r.name for r in back.regions] == ["bottom", "top", "sides"]
    assert [len(r.entries) for r in back.regions] == [118, 118, 272]
    _same_as_meshio(back, _meshio_read(out))


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.su2"
    p.write_text("NDIME= 2\nNELEM= 1\n5 0 1 7\nNPOIN= 3\n0 0\n1 0\n0 1\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.su2:3: node index 7 is not one of the 3"):
        meshdock.read(p)
    p.write_text("NDIME= 2\nNPOIN= 1\n0 0\n0 0\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.su2:4: expected a keyword line"):
        meshdock.read(p)
