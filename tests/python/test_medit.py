"""Medit (.mesh ascii, .meshb binary) through the Python package: each file of tests/data/medit
(tests/data/tools/make_medit.py: gmsh's and meshio's writers, libMeshb's binary layout in every
version and both byte orders) read by meshdock and by meshio 5.3 and compared array by array;
meshdock's writer read back by both readers; meshio's format name "medit"."""
import warnings

import numpy as np
import pytest

import meshdock

meshio = pytest.importorskip("meshio")

MESHIO_READS = ["cube.gmsh.mesh", "plate.gmsh.mesh", "mixed.meshio.mesh", "mixed.meshio.meshb",
                "mixed.v1.mesh", "flat.meshio.mesh", "v1.le.meshb", "v2.le.meshb", "v2.be.meshb",
                "v3.le.meshb", "v4.le.meshb"]


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "meshio doesn't know GmfCorners type. Skipping."
        return meshio.read(path)


def _same(m, ref, exact_dtypes=True):
    """meshdock's mesh `m` and meshio's `ref`: points (float64 here, meshio's float32 widened
    exactly), blocks, connectivity, and medit:ref in meshio's dtype (native byte order)."""
    assert m.points.dtype == np.float64
    np.testing.assert_array_equal(m.points, ref.points)
    assert [b.type for b in m.cells] == [b.type for b in ref.cells]
    for ours, theirs in zip(m.cells, ref.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    assert sorted(m.point_data) == sorted(ref.point_data) == ["medit:ref"]
    pairs = [(m.point_data["medit:ref"], ref.point_data["medit:ref"])]
    pairs += list(zip(m.cell_data["medit:ref"], ref.cell_data["medit:ref"]))
    assert len(m.cell_data["medit:ref"]) == len(ref.cell_data["medit:ref"])
    for ours, theirs in pairs:
        np.testing.assert_array_equal(ours, theirs)
        if exact_dtypes:
            assert ours.dtype == theirs.dtype.newbyteorder("=")


@pytest.mark.parametrize("name", MESHIO_READS)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "medit" / name
    _same(meshdock.read(path), _meshio_read(path))


def test_binary_keywords_meshio_skips_are_one_note(data_dir):
    m = meshdock.read(data_dir / "medit" / "v2.be.meshb")
    assert len(m.notes) == 1
    assert "sections skipped" in m.notes[0] and "Corners (2)" in m.notes[0]


def test_ascii_sections_meshio_skips(data_dir):
    """skips.mesh holds what meshio skips but also what it refuses ("MeshVersionFormatted" and
    its number on two lines, text after End): the values are the file's, written here."""
    m = meshdock.read(data_dir / "medit" / "skips.mesh", file_format="medit")
    assert [b.type for b in m.cells] == ["tetra", "hexahedron", "triangle"]
    np.testing.assert_array_equal(m.cells[1].data, [[0, 1, 2, 3, 4, 4, 4, 4]])
    np.testing.assert_array_equal(m.point_data["medit:ref"], [1, 1, 2, 2, 0])
    assert "Corners (2), Ridges (1), RequiredVertices (2)" in m.notes[0]
    assert m.notes[1].endswith(":49: text after End; not read")


@pytest.mark.parametrize("ext", ["mesh", "meshb"])
def test_round_trip_through_both_readers(data_dir, tmp_path, ext):
    src = meshdock.read(data_dir / "medit" / "cube.gmsh.mesh")
    src.points[3] = [0.1 + 0.2, -1e-300, 1 / 3]  # the shortest text must keep these exactly
    out = tmp_path / f"o.{ext}"
    assert meshdock.write(out, src) == []
    back = meshdock.read(out)
    np.testing.assert_array_equal(back.points, src.points)
    ref = _meshio_read(out)
    # meshio reads the refs of meshdock's version 3 .meshb as int32, meshdock too.
    _same(back, ref)
    np.testing.assert_array_equal(ref.points, src.points)
    for ours, theirs in zip(src.cell_data["medit:ref"], ref.cell_data["medit:ref"]):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("ext", ["mesh", "meshb"])
def test_meshio_format_name(data_dir, tmp_path, ext):
    src = meshdock.read(data_dir / "medit" / "mixed.meshio.meshb", file_format="medit")
    out = tmp_path / f"o.{ext}"
    meshdock.write(out, src, file_format="medit")
    assert (out.read_bytes()[:4] == b"\x01\0\0\0") == (ext == "meshb")
    _same(meshdock.read(out), _meshio_read(out), exact_dtypes=False)


def test_what_medit_cannot_hold_is_noted(tmp_path):
    m = meshio.Mesh(np.eye(4, 3), [("triangle", np.array([[0, 1, 2]])),
                                   ("tetra10", np.array([[0, 1, 2, 3, 0, 1, 2, 3, 0, 1]]))],
                    point_data={"T": np.arange(4.0)},
                    cell_data={"medit:ref": [np.array([5]), np.array([6])]})
    with pytest.warns(meshdock.MeshWarning):
        notes = meshdock.write(tmp_path / "o.mesh", m)
    assert notes == ["point_data 'T' is not written: Medit holds no point data",
                     "cells[1] (tetra10) is not written: Medit has no such cells"]
    ref = _meshio_read(tmp_path / "o.mesh")
    assert [b.type for b in ref.cells] == ["triangle"]
    np.testing.assert_array_equal(ref.cell_data["medit:ref"][0], [5])
    np.testing.assert_array_equal(ref.point_data["medit:ref"], [0, 0, 0, 0])
