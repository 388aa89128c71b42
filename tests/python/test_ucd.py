"""AVS UCD: meshdock's reader against meshio 5.3's ("avsucd") on files meshio wrote and
deal.II-style ones (tests/data/ucd, tools/make_ucd.py), the same files named .inp (read_mesh
tells UCD from Abaqus by content), meshio's format name, and errors naming file and line.
meshio is asked live."""
import shutil

import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

FILES = ["every-type.meshio.avs", "tets.meshio.avs", "dealii-quads.inp", "dealii-hex.ucd"]


_read = conftest.read_quietly


def _same_as_meshio(m, ref):
    conftest.assert_same_as_meshio(m, ref)


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "ucd" / name
    _same_as_meshio(_read(path), meshio.read(path, file_format="avsucd"))


@pytest.mark.parametrize("name", FILES)
def test_inp_copies_are_read_as_ucd(data_dir, tmp_path, name):
    path = tmp_path / (name.split(".")[0] + ".inp")
    shutil.copy(data_dir / "ucd" / name, path)
    _same_as_meshio(_read(path), meshio.read(path, file_format="avsucd"))


@pytest.mark.parametrize("name", FILES)
def test_meshio_format_name(data_dir, tmp_path, name):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "ucd" / name, path)
    _same_as_meshio(_read(path, file_format="avsucd"), meshio.read(path, file_format="avsucd"))


def test_abaqus_inp_stays_abaqus(data_dir):
    m = _read(data_dir / "abaqus" / "cube.gmsh.inp")
    assert "avsucd:material" not in m.cell_data
    assert m.cells


def test_errors_name_file_and_line(tmp_path):
    p = tmp_path / "bad.inp"
    p.write_text("# deal.II\n2 1 0 0 0\n1 0.0 0.0 0.0\n2 1.0 0.0 0.0\n1 0 line 1 3\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.inp:5: cell 1: node id 3 is not one"):
        meshdock.read(p)
    p.write_text("# deal.II\nnot a header\n")
    with pytest.raises(meshdock.ReadError, match=r"bad.inp:2: expected the AVS UCD header"):
        meshdock.read(p)
