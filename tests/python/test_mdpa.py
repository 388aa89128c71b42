"""Kratos mdpa: meshdock's reader against meshio 5.0's ("mdpa") on the files of tests/data/mdpa
(gmsh meshes and meshio-made meshes written by meshio's writer; tools/make_mdpa.py), meshdock's
writer read back by both readers, meshio's writer read back by meshdock's, what meshdock reads
beyond meshio (SubModelParts, scalar NodalData, Kratos names, id labels) and errors naming the
file and line. meshio is asked live."""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

# The files meshio reads (its reader stops at comments inside blocks and maps Kratos' own
# element names by node count: corners.mdpa and kratos3d.mdpa are compared by number instead).
FILES = ["gmsh-tri.mdpa", "gmsh-tet.mdpa", "every2d.mdpa", "every3d.mdpa"]

_read = conftest.read_quietly


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return meshio.read(path, file_format="mdpa")


def _without_data(m):
    """meshio 5.0's mdpa reader reads no NodalData / ElementalData: meshdock's data aside."""
    m.point_data = {}
    m.cell_data = {}
    return m


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "mdpa" / name
    m = _read(path)
    ref = _meshio_read(path)
    conftest.assert_same_as_meshio(_without_data(m), ref, dtypes=True)
    assert m.cell_sets == {} and m.point_sets == {}


def test_nodal_and_elemental_data(data_dir):
    """What make_mdpa.py gave meshio's writer comes back: point_data temp (scalar) and vel (the
    points, 3 values a line), cell_data area (each meshio block's 0, 1, ..; meshdock merges the
    two line blocks, as meshio's reader merges their cells)."""
    m = _read(data_dir / "mdpa" / "gmsh-tri.mdpa")
    np.testing.assert_array_equal(m.point_data["temp"], 2 * m.points[:, 0] + 1)
    np.testing.assert_array_equal(m.point_data["vel"], m.points)
    assert [b.type for b in m.cells] == ["vertex", "line", "triangle"]
    area = m.cell_data["area"]
    np.testing.assert_array_equal(area[0], [0])
    np.testing.assert_array_equal(area[1], [0, 1, 2, 3, 0, 1, 2, 3])
    np.testing.assert_array_equal(area[2], np.arange(42))
    assert m.notes == []


def test_corners_beyond_meshio(data_dir):
    for name in ["corners.mdpa", "crlf.mdpa"]:
        m = _read(data_dir / "mdpa" / name)
        np.testing.assert_array_equal(m.points[:, 0], [0, 1, 1, 0, 2])
        assert [b.type for b in m.cells] == ["triangle", "quad", "line"]
        np.testing.assert_array_equal(m.cells[0].data, [[0, 1, 2], [0, 2, 3]])
        np.testing.assert_array_equal(m.point_data["TEMPERATURE"],
                                      [300, np.nan, 310.5, np.nan, -4])
        assert [(r.name, r.kind, np.asarray(r.entries).tolist()) for r in m.regions] == [
            ("Body", "point", [0, 1, 2, 3]), ("Body", "cell", [0, 1]),
            ("Body.Left", "point", [0, 3]), ("Body.Left.Corner", "point", [0]),
            ("Boundary", "cell", [2, 4, 3])]
        nan = np.nan
        np.testing.assert_array_equal(m.point_data["VELOCITY"],  # "10 0 [3] (1.0, 2.0, 3.0)"
                                      [[1, 2, 3]] + [[nan] * 3] * 4)
        np.testing.assert_array_equal(m.cell_data["THICKNESS"][0], [0.1, nan])  # element 5
        assert len(m.notes) == 6


def test_kratos_names(data_dir):
    m = _read(data_dir / "mdpa" / "kratos3d.mdpa")
    assert [b.type for b in m.cells] == ["hexahedron", "tetra", "wedge", "quad", "triangle"]


@pytest.mark.parametrize("name", FILES + ["corners.mdpa"])
def test_meshdock_writer_read_back_by_both_readers(data_dir, tmp_path, name):
    src = _read(data_dir / "mdpa" / name)
    out = tmp_path / "o.mdpa"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(out, src)
    back = _read(out)
    np.testing.assert_array_equal(back.points, src.points)
    assert [b.type for b in back.cells] == [b.type for b in src.cells]
    for ours, theirs in zip(back.cells, src.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    assert sorted(back.point_data) == sorted(src.point_data)
    for k in src.point_data:
        np.testing.assert_array_equal(back.point_data[k], src.point_data[k])
    assert sorted(back.cell_data) == sorted(src.cell_data)
    for k in src.cell_data:
        for ours, theirs in zip(back.cell_data[k], src.cell_data[k]):
            np.testing.assert_array_equal(ours, theirs)
    assert [(r.name, r.kind, np.asarray(r.entries).tolist()) for r in back.regions] == [
        (r.name, r.kind, np.asarray(r.entries).tolist()) for r in src.regions]
    ref = _meshio_read(out)
    conftest.assert_same_as_meshio(_without_data(back), ref, dtypes=True)


def test_meshio_writer_read_by_meshdock(tmp_path):
    rng = np.random.default_rng(7)
    pts = rng.standard_normal((30, 3))
    cells = [("tetra", rng.integers(0, 30, (6, 4))), ("triangle", rng.integers(0, 30, (3, 3))),
             ("hexahedron20", rng.integers(0, 30, (2, 20))), ("line", rng.integers(0, 30, (2, 2)))]
    p = rng.standard_normal(30)
    path = tmp_path / "r.mdpa"
    meshio.write(path, meshio.Mesh(pts, cells, point_data={"p": p}), file_format="mdpa")
    m = _read(path)
    np.testing.assert_array_equal(m.points, pts)
    np.testing.assert_array_equal(m.point_data["p"], p)  # meshio writes repr(): exact
    conftest.assert_same_as_meshio(_without_data(m), _meshio_read(path), dtypes=True)


def test_meshio_format_name(data_dir, tmp_path):
    path = tmp_path / "model.txt"
    shutil.copy(data_dir / "mdpa" / "every3d.mdpa", path)
    m = _read(path, file_format="mdpa")
    assert [b.type for b in m.cells][:2] == ["triangle", "tetra"]


def test_errors_name_file_and_line(data_dir):
    with pytest.raises(meshdock.MeshError,
                       match=r"bad-node\.mdpa:7: node 9 is in no Nodes block before this line"):
        meshdock.read(data_dir / "mdpa" / "bad-node.mdpa")
    with pytest.raises(meshdock.MeshError,
                       match=r"bad-name\.mdpa:7: unknown Elements name 'MyOwnThing': known are"):
        meshdock.read(data_dir / "mdpa" / "bad-name.mdpa")
    with pytest.raises(meshdock.MeshError, match=r"bad-count\.mdpa:9: a Triangle2D3 \(triangle\) "
                                                 r"has 3 nodes; the line lists 2"):
        meshdock.read(data_dir / "mdpa" / "bad-count.mdpa")


def test_data_blocks_in_kratos_and_meshio_layouts(data_dir):
    """data.mdpa: vectors "[k] (..)" with and without Kratos' fixed flag, meshio's several
    values a line, ElementalData and ConditionalData of one name in one cell_data entry, and a
    matrix block skipped with a note naming its line."""
    m = _read(data_dir / "mdpa" / "data.mdpa")
    nan = np.nan
    np.testing.assert_array_equal(m.point_data["DISP"],
                                  [[0.5, -1, 2e-3], [nan] * 3, [1, 2, 3], [nan] * 3])
    np.testing.assert_array_equal(m.point_data["UV"], [[nan, nan], [0.5, 0.25], [nan, nan], [1, 2]])
    np.testing.assert_array_equal(m.cell_data["RHO"][0], [2.5, nan])
    np.testing.assert_array_equal(m.cell_data["RHO"][1], [nan, -1])
    np.testing.assert_array_equal(m.cell_data["LOCAL_AXIS"][0], [[nan, nan], [0, 1]])
    np.testing.assert_array_equal(m.cell_data["PRESSURE"][1], [[1, 2, 3], [4, 5, 6]])
    assert "M" not in m.cell_data
    assert any("data.mdpa:37: ElementalData M is not read" in n for n in m.notes), m.notes
    assert any("data.mdpa:15: NodalData DISP: the fixed flags are not kept" in n for n in m.notes)


def test_kratos_layout_from_a_gmsh_mesh(data_dir, tmp_path):
    """`meshdock convert x.msh x.mdpa -o kratos`: a Gmsh box with physical groups becomes what
    Kratos loads: the tetrahedra Element3D4N, the boundary triangles SurfaceCondition3D3N (meshio's
    writer names them Tetrahedra3D4 / Triangle3D3, Kratos' geometries, which Kratos does not load
    as elements), each physical group a SubModelPart with its cells and their nodes; meshdock
    reads it back to the same points and cells."""
    import subprocess
    import sys
    src_path = data_dir / "meshes" / "box.v41.msh"
    out = tmp_path / "box.mdpa"
    r = subprocess.run([sys.executable, "-m", "meshdock", "convert", str(src_path), str(out),
                        "-o", "kratos"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cell_data 'gmsh:physical' is not written: Kratos reads data only" in r.stderr
    text = out.read_text()
    heads = [line for line in text.splitlines()
             if line.startswith(("Begin Elements", "Begin Conditions"))]
    assert heads == ["Begin Conditions SurfaceCondition3D3N"] * 6 + ["Begin Elements Element3D4N"]
    assert "gmsh:" not in text
    src = _read(src_path)
    back = _read(out)
    np.testing.assert_array_equal(back.points, src.points)
    # The six triangle blocks come back as one (consecutive blocks of a type merge, as meshio's).
    assert [b.type for b in back.cells] == ["triangle", "tetra"]
    np.testing.assert_array_equal(back.cells[0].data,
                                  np.concatenate([b.data for b in src.cells[:6]]))
    np.testing.assert_array_equal(back.cells[1].data, src.cells[6].data)
    # Each physical group: the same cells, and as nodes every node of them.
    cells_of = {r.name: np.asarray(r.entries) for r in src.regions if r.kind == "cell"}
    assert sorted(cells_of) == ["inlet", "outlet", "solid", "walls"]
    starts = np.cumsum([0] + [b.data.shape[0] for b in src.cells])

    def nodes_of(cells):
        nodes = set()
        for c in cells:
            k = int(np.searchsorted(starts, c, side="right")) - 1
            nodes.update(src.cells[k].data[c - starts[k]].tolist())
        return sorted(nodes)

    kinds = {}
    for r in back.regions:
        kinds.setdefault(r.name, []).append(r.kind)
        if r.kind == "cell":
            np.testing.assert_array_equal(r.entries, cells_of[r.name])
        else:
            assert np.asarray(r.entries).tolist() == nodes_of(cells_of[r.name]), r.name
    assert kinds == {name: ["point", "cell"] for name in cells_of}
