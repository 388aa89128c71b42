"""meshio's API on meshdock meshes (issue 14): read(file_format=), meshio's names for formats,
Mesh(points, [("tetra", a)]) construction, cells_dict / cell_data_dict / get_cells_type /
get_cell_data / point_sets / cell_sets equal to what meshio 5 reads from the same file,
Mesh.write, to_meshio / from_meshio, FileNotFoundError for a missing file, open files and
buffers as meshio's read / write take them, and the `meshdock` command (info, convert) without a
daemon."""

import errno
import io
import json
import os
import shutil
import subprocess
import sys

import meshio
import numpy as np
import pytest

import conftest
import meshdock


@pytest.mark.parametrize("name,fmt", [("box.v41b.msh", "gmsh"), ("box.vtk-appzlib.vtu", "vtu"),
                                      ("box.meshio-ascii.vtk", "vtk"), ("comments.off", "off")])
def test_read_and_write_take_open_files_and_buffers_as_meshio_does(data_dir, tmp_path, name, fmt):
    # meshio.read(buffer, file_format=...) / meshio.write(buffer, mesh, file_format=...): before,
    # "expected str, bytes or os.PathLike object, not BytesIO".
    f = data_dir / "meshes" / name
    want = meshdock.read(f)
    for buf in (io.BytesIO(f.read_bytes()), open(f, "rb")):
        with buf:
            got = meshdock.read(buf, file_format=fmt)
        np.testing.assert_array_equal(got.points, want.points)
        assert [(b.type, b.data.tolist()) for b in got.cells] == \
            [(b.type, b.data.tolist()) for b in want.cells]
    out = io.BytesIO()
    assert meshdock.write(out, want, file_format="vtu") == []
    out.seek(0)
    np.testing.assert_array_equal(meshdock.read(out, file_format="vtu").points, want.points)
    with open(tmp_path / "w.vtu", "wb") as fh:
        meshdock.write(fh, want, file_format="vtu")
    np.testing.assert_array_equal(meshdock.read(tmp_path / "w.vtu").points, want.points)


def test_buffers_text_and_errors_name_the_buffer(data_dir, tmp_path):
    f = data_dir / "meshes" / "box.meshio-ascii.vtk"
    with open(f) as text:  # a text file: ascii formats
        m = meshdock.read(text, file_format="vtk")
    assert len(m.points) == 300
    s = io.StringIO()
    meshdock.write(s, m, file_format="vtk", encoding="ascii")
    assert s.getvalue().startswith("# vtk DataFile Version")
    assert len(meshdock.read(io.StringIO(s.getvalue()), file_format="vtk").points) == 300
    with pytest.raises(TypeError, match=r"<BytesIO> is a buffer, .* pass file_format="):
        meshdock.read(io.BytesIO(f.read_bytes()))
    with pytest.raises(meshdock.ReadError, match=r"^<BytesIO>:1: not a legacy VTK file"):
        meshdock.read(io.BytesIO(b"garbage\n"), file_format="vtk")
    bad = tmp_path / "bad.vtk"
    bad.write_bytes(b"garbage\n")
    with open(bad, "rb") as fh, pytest.raises(meshdock.ReadError, match=f"^{bad}:1: "):
        meshdock.read(fh, file_format="vtk")  # an open file is named by its name
    with pytest.raises(meshdock.MeshError, match="a parallel file .pvtu. names piece files"):
        meshdock.read(io.BytesIO(b""), file_format="pvtu")
    # A failed write leaves the buffer as it was: nothing half written.
    out = io.BytesIO(b"keep")
    out.seek(4)
    with pytest.raises(meshdock.WriteError, match=r"^<BytesIO>: cells\[1\] \(tetra\) cannot "
                                                  "be written to STL"):
        meshdock.write(out, m, file_format="stl")
    assert out.getvalue() == b"keep"
    with pytest.raises(meshdock.WriteError, match="<StringIO>: a text buffer cannot take this "
                                                  "vtu file's binary bytes"):
        meshdock.write(io.StringIO(), m, file_format="vtu")


def test_read_takes_meshios_file_format_and_names(data_dir):
    f = data_dir / "meshes" / "box.v41.msh"
    a = meshdock.read(f, file_format="gmsh")
    b = meshdock.read(f, format="msh")
    np.testing.assert_array_equal(a.points, b.points)
    with pytest.raises(ValueError, match="disagree"):
        meshdock.read(f, format="msh", file_format="vtu")


def test_a_missing_file_is_a_file_not_found_error_and_a_read_error(tmp_path):
    path = tmp_path / "nope.msh"
    with pytest.raises(FileNotFoundError) as e:
        meshdock.read(path)
    assert isinstance(e.value, meshdock.ReadError)
    assert e.value.errno == errno.ENOENT and e.value.filename == str(path)
    assert str(path) in e.value.strerror  # the reader's message names the file
    # ... once: OSError's str() said "[Errno 2] PATH: cannot open (...): 'PATH'"
    assert str(e.value) == f"{path}: cannot open (No such file or directory)"
    with pytest.raises(meshdock.ReadError):
        meshdock.read(path)


def test_an_unreadable_file_is_a_permission_error(tmp_path, monkeypatch):
    path = tmp_path / "locked.msh"
    path.write_bytes(b"")
    os.chmod(path, 0)
    real = os.access
    # root reads anything: stand in for a user who may not.
    monkeypatch.setattr(os, "access", lambda p, m, **k: False if os.fspath(p) == str(path)
                        else real(p, m, **k))
    if os.geteuid() == 0:
        with pytest.raises(PermissionError) as e:
            meshdock.read(path)
        assert isinstance(e.value, meshdock.ReadError) and e.value.errno == errno.EACCES


def test_the_meshio_accessors_equal_meshios(data_dir):
    f = data_dir / "meshes" / "box.v41.msh"
    m, mm = meshdock.read(f), meshio.read(f)
    assert set(m.cells_dict) == set(mm.cells_dict) == {"triangle", "tetra"}
    for t in mm.cells_dict:
        np.testing.assert_array_equal(m.cells_dict[t], mm.cells_dict[t])
        np.testing.assert_array_equal(m.get_cells_type(t), mm.get_cells_type(t))
    assert m.get_cells_type("hexahedron").shape == mm.get_cells_type("hexahedron").shape == (0, 8)
    for name, per_type in mm.cell_data_dict.items():
        for t, v in per_type.items():
            np.testing.assert_array_equal(m.cell_data_dict[name][t], v)
            np.testing.assert_array_equal(m.get_cell_data(name, t), mm.get_cell_data(name, t))
    with pytest.raises(KeyError, match="no cell_data 'nope'"):
        m.get_cell_data("nope", "tetra")
    # Physical groups: meshio's cell_sets (block-local ids), from meshdock's global regions.
    assert set(m.cell_sets) == {"inlet", "outlet", "walls", "solid"}
    for name, per_block in m.cell_sets.items():
        assert len(per_block) == len(mm.cells)
        for mine, theirs in zip(per_block, mm.cell_sets[name]):
            np.testing.assert_array_equal(np.sort(mine), np.sort(theirs))
    assert m.point_sets == {}


def test_meshio_style_construction_repr_and_write(tmp_path):
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=float)
    m = meshdock.Mesh(pts, [("tetra", [[0, 1, 2, 3]]), ("triangle", np.array([[0, 1, 2]]))],
                      point_data={"T": np.arange(5.0)}, cell_data={"id": [[7], [8]]})
    assert isinstance(m.cells[0], meshdock.CellBlock) and m.cells[0].data.shape == (1, 4)
    assert repr(m) == ("<meshdock.Mesh 5 points, 2 blocks (tetra:1, triangle:1), point_data [T], "
                       "cell_data [id], 0 regions>")
    d = meshdock.Mesh(pts, {"triangle": [[0, 1, 2], [1, 2, 4]]})
    assert [b.type for b in d.cells] == ["triangle"] and len(d.cells[0]) == 2
    ragged = meshdock.Mesh(pts, [("polygon", [[0, 1, 2], [0, 1, 4, 2]])])
    assert ragged.cells[0].ragged and ragged.cells[0].offsets.tolist() == [0, 3, 7]
    out = tmp_path / "m.vtu"
    m.write(out)
    back = meshio.read(out)
    np.testing.assert_array_equal(back.points, pts)
    np.testing.assert_array_equal(back.cells_dict["tetra"], [[0, 1, 2, 3]])
    np.testing.assert_array_equal(back.point_data["T"], np.arange(5.0))
    m.write(tmp_path / "m.msh", file_format="gmsh")
    np.testing.assert_array_equal(meshio.read(tmp_path / "m.msh").cells_dict["tetra"],
                                  [[0, 1, 2, 3]])


def test_to_meshio_and_back_keep_sets_data_and_notes(data_dir, tmp_path):
    m = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    mm = meshdock.to_meshio(m)
    assert isinstance(mm, meshio.Mesh)
    for t in m.cells_dict:
        np.testing.assert_array_equal(mm.cells_dict[t], m.cells_dict[t])
    assert set(mm.cell_sets) == set(m.cell_sets)
    assert mm.field_data.keys() == m.field_data.keys()
    back = meshdock.from_meshio(mm)
    # (meshio's VTU writer turns the mesh's cell_sets into cell data in place: write last.)
    mm.write(tmp_path / "via-meshio.vtu")
    np.testing.assert_array_equal(meshdock.read(tmp_path / "via-meshio.vtu").points, m.points)
    assert [(r.name, r.kind, r.dim, r.tag, len(r.entries)) for r in back.regions] == \
        [(r.name, r.kind, r.dim, r.tag, len(r.entries)) for r in m.regions]
    for a, b in zip(back.regions, m.regions):
        np.testing.assert_array_equal(np.sort(a.entries), np.sort(b.entries))
    m.notes.append("a reader note")
    assert meshdock.from_meshio(meshdock.to_meshio(m)).notes[-1] == "a reader note"


def test_to_meshio_says_what_meshio_cannot_hold():
    pts = np.zeros((5, 3))
    side = meshdock.Region("faces", "side", 2, 1, np.array([[0, 1]]))
    m = meshdock.Mesh(pts, [("tetra", [[0, 1, 2, 3]])], regions=[side])
    with pytest.raises(meshdock.MeshError, match="side regions \\['faces'\\]"):
        meshdock.to_meshio(m)
    mm = meshdock.to_meshio(m, lossy=True)
    assert any("faces" in n for n in mm.info["meshdock_notes"])
    poly = meshdock.Mesh(pts, [("polygon", [[0, 1, 2], [0, 1, 4, 2], [1, 2, 3]])],
                         cell_data={"c": [np.array([1.0, 2.0, 3.0])]})
    pm = meshdock.to_meshio(poly)
    assert [(b.type, len(b.data)) for b in pm.cells] == [("triangle", 2), ("quad", 1)]
    np.testing.assert_array_equal(pm.cell_data["c"][0], [1.0, 3.0])
    assert any("split into 2 blocks" in n for n in pm.info["meshdock_notes"])
    # VTK's Bezier cells (meshdock reads them from VTU / legacy VTK): meshio 5.0 has no
    # dimension for them (before: a bare KeyError 'VTK_BEZIER_TRIANGLE' from meshio).
    bez = meshdock.Mesh(pts, [("VTK_LAGRANGE_TRIANGLE", [[0, 1, 2, 3, 4, 0]]),
                              ("VTK_BEZIER_TRIANGLE", [[0, 1, 2, 3, 4, 1]])],
                        cell_data={"c": [np.array([1.0]), np.array([2.0])]})
    with pytest.raises(meshdock.MeshError, match=r"cells/1 \(VTK_BEZIER_TRIANGLE, 1 cells\): "
                                                 "meshio has no VTK_BEZIER_TRIANGLE block"):
        meshdock.to_meshio(bez)
    bm = meshdock.to_meshio(bez, lossy=True)
    assert [(b.type, len(b.data)) for b in bm.cells] == [("VTK_LAGRANGE_TRIANGLE", 1)]
    assert [a.tolist() for a in bm.cell_data["c"]] == [[1.0]]
    assert any("left out cells/1 (VTK_BEZIER_TRIANGLE" in n for n in bm.info["meshdock_notes"])


def _cli(*args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "meshdock", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=60)


def test_the_meshdock_command_info_and_convert(data_dir, tmp_path):
    f = data_dir / "meshes" / "box.v41.msh"
    r = _cli("info", "--json", f)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["points"]["count"] == 300 and sum(b["count"] for b in d["cells"]) == 1443
    assert {x["name"] for x in d["regions"]} == {"inlet", "outlet", "walls", "solid"}
    r = _cli("info", f)
    assert r.returncode == 0 and "tetra" in r.stdout and "solid" in r.stdout
    out = tmp_path / "box.vtu"
    r = _cli("convert", f, out)
    assert r.returncode == 0, r.stderr
    back = meshio.read(out)
    np.testing.assert_array_equal(back.points, meshio.read(f).points)
    np.testing.assert_array_equal(back.cells_dict["tetra"], meshio.read(f).cells_dict["tetra"])
    r = _cli("info", tmp_path / "missing.msh")
    assert r.returncode == 1 and "missing.msh" in r.stderr and "Errno" not in r.stderr
    r = _cli("convert", f, tmp_path / "x.unknownext")
    assert r.returncode == 1 and "x.unknownext" in r.stderr
    assert not (tmp_path / "x.unknownext").exists()


def test_the_meshdock_commands_errors_name_its_own_options_and_a_folder(data_dir, tmp_path):
    # The library's hint "(format=, --format)" named neither of convert's options; a folder
    # without a dot was "no file extension".
    f = data_dir / "meshes" / "box.v41.msh"
    r = _cli("convert", f, tmp_path / "out")
    assert r.returncode == 1 and r.stderr.strip().endswith(
        "out: no file extension; name the format (--output-format)"), r.stderr
    shutil.copy(f, tmp_path / "in")
    r = _cli("convert", tmp_path / "in", tmp_path / "o.vtu")
    assert r.returncode == 1 and r.stderr.strip().endswith(
        "in: no file extension; name the format (--input-format)"), r.stderr
    r = _cli("info", tmp_path / "in")
    assert r.returncode == 1 and r.stderr.strip().endswith("(--format)"), r.stderr
    assert _cli("info", "--format", "msh", tmp_path / "in").returncode == 0
    r = _cli("info", tmp_path)
    assert r.returncode == 1 and r.stderr.strip() == f"meshdock info: {tmp_path}: not a regular file"


def test_info_into_a_closed_pipe_ends_quietly(data_dir):
    # `meshdock info FILE | head -1` printed "meshdock info: Broken pipe" and exited 1.
    p = subprocess.Popen([sys.executable, "-m", "meshdock", "info", "--json",
                          str(data_dir / "meshes" / "blocks.v41.msh")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.close()  # before the command has written anything (it is still importing)
    err = p.stderr.read()
    assert p.wait(60) == 141 and err == "", err


def test_convert_never_writes_over_its_input(data_dir, tmp_path):
    # A trial ran `meshdock convert data.v41b.msh data.v41b.msh`: exit 0, and the file was
    # rewritten (14890 -> 14836 bytes), lossy conversions included.
    src = tmp_path / "box.msh"
    shutil.copy(data_dir / "meshes" / "box.v41b.msh", src)
    before = src.read_bytes()
    (tmp_path / "link.msh").symlink_to(src)
    for out in (src, tmp_path / "link.msh"):
        r = _cli("convert", str(src), str(out))
        assert r.returncode == 2, r.stderr
        assert f"{out} is the input file {src}; write to another path" in r.stderr
    assert src.read_bytes() == before


def test_the_build_trees_meshdock_command_runs_without_PYTHONPATH(data_dir):
    # Before: build/bin/meshdock without PYTHONPATH ended in ModuleNotFoundError.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([str(conftest.BUILD / "bin" / "meshdock"), "info",
                        str(data_dir / "meshes" / "box.v41.msh")],
                       capture_output=True, text=True, timeout=60, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    assert "points: 300 x 3 float64" in r.stdout
