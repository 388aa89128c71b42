"""Netgen: meshdock's reader against meshio 5.0's ("netgen") on meshio-written gmsh and made-up
meshes and hand-written corners (tests/data/netgen, tools/make_netgen.py), .vol.gz, meshdock's
writer read back by both readers and meshio's files read by meshdock, meshio's format name,
and errors naming file and line. meshio is asked live. (The gzip bomb needs max_bytes, which
md.read does not take: tests/unit/test_netgen.cpp refuses one.)"""
import gzip
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

# meshio reads all but quadratic.vol (pyramid13 / wedge15: meshio 5.0's Mesh has no dimension
# for them).
FILES = ["gmsh-tets.vol", "gmsh-tets.vol.gz", "mixed.vol", "plate2d.vol", "corners.vol",
         "twoline.vol"]

_read = conftest.read_quietly


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # corners.vol's geomtype warning
        return meshio.read(path, file_format="netgen")


def _same_field_data(m, ref):
    assert sorted(m.field_data) == sorted(ref.field_data)
    for name, v in ref.field_data.items():
        np.testing.assert_array_equal(m.field_data[name], np.asarray(v))
        assert m.field_data[name].dtype == np.asarray(v).dtype, name


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "netgen" / name
    m, ref = _read(path), _meshio_read(path)
    conftest.assert_same_as_meshio(m, ref, dtypes=True)
    _same_field_data(m, ref)


@pytest.mark.parametrize("name", ["mixed.vol", "gmsh-tets.vol.gz"])
def test_meshio_format_name(data_dir, tmp_path, name):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "netgen" / name, path)
    m = _read(path, file_format="netgen")
    conftest.assert_same_as_meshio(m, _meshio_read(data_dir / "netgen" / name))


def test_names_are_regions_too(data_dir):
    m = _read(data_dir / "netgen" / "gmsh-tets.vol")
    ref = _meshio_read(data_dir / "netgen" / "gmsh-tets.vol")
    solid = next(r for r in m.regions if r.name == "solid")
    tet = [b.type for b in ref.cells].index("tetra")
    assert solid.dim == 3 and solid.tag == 7
    n_tri = len(ref.cells[0])
    np.testing.assert_array_equal(
        solid.entries, n_tri + np.flatnonzero(ref.cell_data["netgen:index"][tet] == 7))


def test_corners_notes(data_dir):
    m = _read(data_dir / "netgen" / "corners.vol")
    text = "\n".join(m.notes)
    for part in ("geomtype 42", "'2 copper wire' is not 'index name'", "'face_colours'",
                 "'identifications'", "'identificationtypes'", "'singular_points'"):
        assert part in text, part


@pytest.mark.parametrize("name", ["gmsh-tets.vol", "mixed.vol", "plate2d.vol", "corners.vol"])
@pytest.mark.parametrize("out", ["o.vol", "o.vol.gz"])
def test_meshdock_writes_what_both_read_back(data_dir, tmp_path, name, out):
    src = _read(data_dir / "netgen" / name)
    path = tmp_path / out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(path, src)
    if out.endswith(".gz"):
        with open(path, "rb") as f:
            assert f.read(2) == b"\x1f\x8b"
    ours = _read(path)
    theirs = _meshio_read(path)
    conftest.assert_same_as_meshio(ours, theirs, dtypes=True)
    _same_field_data(ours, theirs)
    # And what meshio writes of the same mesh meshdock reads as meshio reads it.
    mpath = tmp_path / ("m" + out)
    meshio.write(mpath, _meshio_read(data_dir / "netgen" / name), file_format="netgen")
    conftest.assert_same_as_meshio(_read(mpath), _meshio_read(mpath), dtypes=True)
    # Points and cells come back exactly (blocks in meshio's writer order: by dimension).
    np.testing.assert_array_equal(ours.points, src.points)
    key = lambda b: (b.type, b.data.tobytes())  # noqa: E731
    assert sorted(map(key, ours.cells)) == sorted(map(key, src.cells))


def test_meshdock_writes_as_meshio_writes(data_dir, tmp_path):
    ref = _meshio_read(data_dir / "netgen" / "gmsh-tets.vol")
    meshio.write(tmp_path / "a.vol", ref, file_format="netgen")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(tmp_path / "b.vol", _read(data_dir / "netgen" / "gmsh-tets.vol"),
                       file_format="netgen")

    def rows(p):  # the text, numbers compared as numbers, comments left out
        out = []
        for line in open(p):
            if line.startswith("#") or not line.strip():
                continue
            out.append([float(x) if x.replace(".", "").replace("-", "").replace("e", "").replace(
                "+", "").isdigit() else x for x in line.split()])
        return out
    assert rows(tmp_path / "a.vol") == rows(tmp_path / "b.vol")


def test_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.vol"
    bad.write_text("mesh3d\nvolumeelements\n1\n1 7 1 2 3 4 5 6 7\npoints\n0\n")
    with pytest.raises(meshdock.ReadError, match=r"bad\.vol:4: section 'volumeelements': "
                                                  r"element 1 has 7 nodes"):
        meshdock.read(bad)
    bad.write_text("mesh3d\nvolumeelements\n1\n1 4 1 2 3 9\npoints\n1\n0 0 0\n")
    with pytest.raises(meshdock.ReadError, match=r"bad\.vol:4: node 9 is not one of the 1"):
        meshdock.read(bad)
    bad.write_text("hello\n")
    with pytest.raises(meshdock.ReadError, match=r"bad\.vol:1: not a Netgen mesh"):
        meshdock.read(bad)
    gz = tmp_path / "cut.vol.gz"
    gz.write_bytes(gzip.compress(b"mesh3d\npoints\n0\n" * 1000)[:40])
    with pytest.raises(meshdock.ReadError, match=r"cut\.vol\.gz: the gzip data is truncated"):
        meshdock.read(gz)


def test_writer_refuses_what_netgen_cannot_hold(tmp_path):
    m = meshio.Mesh(np.zeros((3, 3)), [("line3", np.array([[0, 1, 2]]))])
    with pytest.raises(meshdock.WriteError, match=r"cells\[0\] \(line3\) cannot be written"):
        meshdock.write(tmp_path / "x.vol", meshdock.from_meshio(m))
