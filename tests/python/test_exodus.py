"""Exodus II: meshdock's reader (over its own netCDF classic parser) against meshio 5.0's
(netCDF4-python over libnetcdf) on VTK's vtkExodusIIWriter file and files written in CDF-1,
CDF-2 and CDF-5 (tests/data/exodus, tools/make_exodus.py), meshio's format name, the refusal of
netCDF-4 (HDF5) files such as meshio's own writer makes, and a round trip through meshdock's
writer read back by both readers. meshio is asked live.
(No variant in test_meshio_sweep.py: meshio 5.0's exodus writer writes netCDF-4 / HDF5 only,
which meshdock refuses by design; the classic files here are written with netCDF4 directly.)"""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")
pytest.importorskip("netCDF4")  # meshio's exodus reader needs it

FILES = ["cube.vtk-writer.exo", "mixed.cdf1.exo", "mixed.cdf2.exo", "mixed.cdf5.exo",
         "steps.cdf2.exo"]

_read = conftest.read_quietly


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Skipping some time data"
        return meshio.read(path, file_format="exodus")


def _same_as_meshio(m, ref):
    conftest.assert_same_as_meshio(m, ref, dtypes=False)


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "exodus" / name
    _same_as_meshio(_read(path), _meshio_read(path))


@pytest.mark.parametrize("ext", [".e", ".ex2", ".exo"])
def test_extensions_and_meshio_format_name(data_dir, tmp_path, ext):
    path = tmp_path / ("mixed" + ext)
    shutil.copy(data_dir / "exodus" / "mixed.cdf2.exo", path)
    ref = _meshio_read(path)
    _same_as_meshio(_read(path), ref)
    other = tmp_path / "mixed.dat"
    shutil.copy(path, other)
    _same_as_meshio(_read(other, file_format="exodus"), ref)


def test_what_meshio_does_not_read(data_dir):
    # Block names and side sets become regions; meshio ignores both.
    m = _read(data_dir / "exodus" / "steps.cdf2.exo")
    kinds = {r.name: r.kind for r in m.regions}
    assert kinds == {"top": "point", "tets": "cell", "prism": "cell", "floor": "side"}
    assert any("3 time steps" in n for n in m.notes)
    # A truth-table gap: NaN there (meshio 5.0 fails on this file).
    m = _read(data_dir / "exodus" / "truth-table.cdf2.exo")
    assert np.isnan(m.cell_data["damage"][1]).all()
    np.testing.assert_array_equal(m.cell_data["damage"][2], [0.7])
    # "TETRA" with 10 nodes is tetra10 (meshio: "tetra" with 10 columns).
    m = _read(data_dir / "exodus" / "tetra10.cdf5.exo")
    ref = _meshio_read(data_dir / "exodus" / "tetra10.cdf5.exo")
    assert [b.type for b in m.cells] == ["tetra10", "tetra10"]
    assert [b.type for b in ref.cells] == ["tetra10", "tetra"]
    for ours, theirs in zip(m.cells, ref.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    np.testing.assert_array_equal(m.points, ref.points)


def test_hdf5_is_refused_with_how_to_convert(data_dir):
    path = data_dir / "exodus" / "mixed.meshio.exo"
    with pytest.raises(meshdock.ReadError, match=r"mixed.meshio.exo: a netCDF-4 \(HDF5\) file.*"
                                                 r"nccopy -k cdf5"):
        meshdock.read(path)


def test_errors_name_file_and_byte(tmp_path, data_dir):
    good = (data_dir / "exodus" / "mixed.cdf1.exo").read_bytes()
    p = tmp_path / "cut.exo"
    p.write_bytes(good[:200])
    with pytest.raises(meshdock.ReadError, match=r"cut.exo: byte \d+: netCDF: "):
        meshdock.read(p)
    p.write_bytes(good[:-40])
    with pytest.raises(meshdock.ReadError, match=r"cut.exo: byte \d+: .*runs past the end"):
        meshdock.read(p)


@pytest.mark.parametrize("name", ["mixed.cdf2.exo", "steps.cdf2.exo", "cube.vtk-writer.exo"])
def test_round_trip_through_meshdocks_writer(data_dir, tmp_path, name):
    m = _read(data_dir / "exodus" / name)
    out = tmp_path / "out.exo"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(out, m)
    assert out.read_bytes()[:4] == b"CDF\x02"
    back = _read(out)
    ref = _meshio_read(out)
    # Both readers read the same arrays from it, and they are the file's it was made of.
    _same_as_meshio(back, ref)
    _same_as_meshio(back, _meshio_read(data_dir / "exodus" / name))
    assert [(r.name, r.kind) for r in back.regions] == [(r.name, r.kind) for r in m.regions]


def test_writer_takes_meshio_meshes(tmp_path):
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    m = meshio.Mesh(pts, [("tetra", np.array([[0, 1, 2, 3]])), ("triangle", np.array([[0, 1, 2]]))],
                    point_data={"t": np.arange(4.0), "v": np.ones((4, 3))},
                    cell_data={"c": [np.array([5.0]), np.array([6.0])]})
    out = tmp_path / "m.exo"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(out, m, file_format="exodus")
    ref = _meshio_read(out)
    np.testing.assert_array_equal(ref.points, pts)
    np.testing.assert_array_equal(ref.point_data["t"], np.arange(4.0))
    np.testing.assert_array_equal(ref.point_data["v"], np.ones((4, 3)))
    np.testing.assert_array_equal(ref.cell_data["c"][1], [6.0])
    _same_as_meshio(_read(out), ref)
