"""DOLFIN XML: meshdock's reader against meshio 5.0's ("dolfin-xml") on the files meshio writes
(a mesh and its cell data in x_<name>.xml beside it; tests/data/dolfin, tools/make_dolfin.py),
meshio's format name, and the daemon finding the mesh functions beside a mesh under its roots
(listed through the root's directory fd) and publishing their values. The files DOLFIN itself
writes (<domains>, DOLFIN 2017+'s mesh functions, which meshio cannot read) are checked against
their geometry in tests/unit/test_dolfin.cpp."""
import shutil

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

_read = conftest.read_quietly


@pytest.mark.parametrize("name", ["meshio-tet.xml", "meshio-tri.xml"])
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "dolfin" / name
    m, ref = _read(path), meshio.read(path)
    conftest.assert_same_as_meshio(m, ref, dtypes=True)


def test_meshio_format_name_and_cell_data_beside_it(data_dir, tmp_path):
    for f in ("meshio-tri.xml", "meshio-tri_heat.xml"):
        shutil.copy(data_dir / "dolfin" / f, tmp_path / f.replace("meshio-tri", "grid"))
    (tmp_path / "grid.xml").rename(tmp_path / "grid.txt")
    # The mesh functions are looked for by the name of the file read: grid.txt's are grid_*.xml.
    m = _read(tmp_path / "grid.txt", file_format="dolfin-xml")
    np.testing.assert_array_equal(m.cell_data["heat"][0], [0.25, 1.5, -2.0, 1e-3])


def test_a_mesh_function_read_alone_names_the_mesh_to_read(data_dir):
    with pytest.raises(meshdock.MeshError, match=r"cube_subdomains\.xml: a DOLFIN mesh function, "
                                                 r"not a mesh: read the mesh x\.xml"):
        _read(data_dir / "dolfin" / "cube_subdomains.xml")


def test_the_daemon_reads_the_mesh_functions_beside_it_under_its_root(data_dir, tmp_path):
    """Load cube.xml: the daemon lists its directory under the root and reads cube_*.xml; a
    consumer sees the cell data of both <domains> and cube_subdomains.xml, the vertex function,
    and the side regions of the facet function; the edge function and the second mesh are
    notes."""
    from daemon_util import Daemon

    d = Daemon(tmp_path)
    try:
        sub = d.root / "sub"
        sub.mkdir()
        for f in (data_dir / "dolfin").glob("cube*.xml"):
            shutil.copy(f, sub / f.name)
        client = meshdock.Client(d.addr)
        client.load(sub / "cube.xml", name="cube")
        slot = meshdock.attach("cube", prefix=d.prefix)
        frame = slot.wait(timeout=5)
        ref = _read(sub / "cube.xml")
        np.testing.assert_array_equal(np.from_dlpack(frame.points), ref.points)
        for name in ("dolfin:domains", "subdomains"):
            np.testing.assert_array_equal(np.from_dlpack(frame.cell_data[name][0]),
                                          ref.cell_data[name][0])
        np.testing.assert_array_equal(np.from_dlpack(frame.point_data["temperature"]),
                                      ref.point_data["temperature"])
        assert {r.name for r in frame.regions} == {
            "dolfin:facets:7", "dolfin:facets:9", "boundaries:0", "boundaries:7", "boundaries:9"}
        nine = next(r for r in frame.regions if r.name == "boundaries:9")
        assert nine.kind == "side" and nine.tag == 9 and np.from_dlpack(nine.entries).shape == (8, 2)
        assert any("cube_edges.xml" in n for n in frame.notes), frame.notes
        assert any("cube_coarse.xml: a DOLFIN mesh, not a mesh function" in n
                   for n in frame.notes), frame.notes
        del frame
        slot.close()
        client.close()
    finally:
        assert d.stop() == 0, d.stderr


def test_a_mesh_function_that_leads_out_of_the_root_fails_the_load_naming_it(data_dir, tmp_path):
    """x_<name>.xml beside the mesh is opened under the root like the mesh: a symlink to a file
    outside it is refused (the load fails naming it, nothing is published), never read."""
    from daemon_util import Daemon

    outside = tmp_path / "outside.xml"
    shutil.copy(data_dir / "dolfin" / "cube_subdomains.xml", outside)
    d = Daemon(tmp_path)
    try:
        shutil.copy(data_dir / "dolfin" / "cube.xml", d.root / "cube.xml")
        (d.root / "cube_stolen.xml").symlink_to(outside)
        client = meshdock.Client(d.addr)
        with pytest.raises(meshdock.DaemonError) as e:
            client.load(d.root / "cube.xml", name="cube")
        assert "cube_stolen.xml leads outside the allowed roots" in e.value.message, e.value.message
        assert "(read as the mesh function 'stolen' of " in e.value.message, e.value.message
        assert e.value.code in ("PERMISSION_DENIED", "INVALID_ARGUMENT"), e.value
        assert client.ls() == []
        client.close()
    finally:
        assert d.stop() == 0, d.stderr
