"""ANSYS Fluent mesh: meshdock's reader against meshio 5.0's ("ansys") on the files of
tests/data/ansys (meshes written by meshio's writer, ascii and binary; hand-made files in
Fluent's own layout: faces, zones, comments, CRLF; tools/make_ansys.py), meshdock's writer read
back by both readers in both encodings, meshio's writer read back by meshdock's, a Gmsh .msh
still read as Gmsh, and errors naming the file, the line and the section. meshio is asked
live."""
import shutil
import warnings

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

STEMS = ["meshio-tets", "meshio-mixed", "meshio-2d"]
# Every file meshio reads (float32.msh: meshio keeps float32 points, meshdock float64).
FILES = ([f"{s}{e}" for s in STEMS for e in (".msh", ".ascii.msh")]
         + ["meshio-int32.msh", "fluent-3d.msh", "fluent-2d.crlf.msh", "fluent-hybrid.msh",
            "fluent-2d-cells.msh"])
# The cell blocks meshdock builds from a file's faces, after the face blocks meshio reads.
BUILT = {"fluent-2d.crlf.msh": 1, "fluent-hybrid.msh": 4, "fluent-2d-cells.msh": 2}

_read = conftest.read_quietly


def _meshio_read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return meshio.read(path, file_format="ansys")


@pytest.mark.parametrize("name", FILES)
def test_reads_what_meshio_reads(data_dir, name):
    path = data_dir / "ansys" / name
    m = _read(path)
    ref = _meshio_read(path)
    # meshio keeps 2012's int32 cells; meshdock's connectivity is int64.
    conftest.assert_same_as_meshio(m, ref, dtypes=name != "meshio-int32.msh",
                                   extra_blocks=BUILT.get(name, 0))
    if name.startswith("meshio-"):
        assert m.notes == []


# Each type's faces by VTK's node order, every face running the same way round (outward, for
# the 3-D cells): a cell's faces, each started from its smallest node, name the cell and its
# orientation whichever node VTK or meshdock starts the cell from.
FACES = {"tetra": [(0, 2, 1), (0, 1, 3), (1, 2, 3), (0, 3, 2)],
         "pyramid": [(0, 3, 2, 1), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)],
         "wedge": [(0, 2, 1), (3, 4, 5), (0, 1, 4, 3), (1, 2, 5, 4), (2, 0, 3, 5)],
         "hexahedron": [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6),
                        (3, 0, 4, 7)],
         "triangle": [(0, 1, 2)], "quad": [(0, 1, 2, 3)]}
VTK_TYPES = {5: "triangle", 9: "quad", 10: "tetra", 12: "hexahedron", 13: "wedge",
             14: "pyramid", 41: "polyhedron"}  # 41: VTK 9.1 gives polyhedra as point sets


def _cell_key(kind, nodes, oriented=True):
    if kind == "polyhedron":
        return kind, tuple(sorted({int(v) for v in nodes}))
    faces = []
    for f in FACES[kind]:
        ids = [int(nodes[i]) for i in f]
        turns = [ids, ids[::-1]] if not oriented else [ids]
        faces.append(min(tuple(t[k:] + t[:k]) for t in turns for k in range(len(t))))
    return kind, tuple(sorted(faces))


def _vtk_fluent(path, oriented):
    """Points and cell keys as VTK's FLUENT reader builds them (a block a cell zone)."""
    pytest.importorskip("vtkmodules")
    from vtkmodules.vtkCommonCore import vtkObject
    from vtkmodules.vtkIOGeometry import vtkFLUENTReader
    from vtkmodules.util.numpy_support import vtk_to_numpy
    vtkObject.GlobalWarningDisplayOff()  # it looks for a .dat file beside the mesh
    r = vtkFLUENTReader()
    r.SetFileName(str(path))
    r.Update()
    out = r.GetOutput()
    points, keys = None, []
    for b in range(out.GetNumberOfBlocks()):
        g = out.GetBlock(b)
        points = vtk_to_numpy(g.GetPoints().GetData())
        for c in range(g.GetNumberOfCells()):
            ids = g.GetCell(c).GetPointIds()
            keys.append(_cell_key(VTK_TYPES[g.GetCellType(c)],
                                  [ids.GetId(i) for i in range(ids.GetNumberOfIds())], oriented))
    return points, keys


@pytest.mark.parametrize("name,built", [("fluent-hybrid.msh", 4), ("fluent-2d-cells.msh", 2),
                                        ("fluent-poly.msh", 1)])
def test_cells_built_from_faces_are_vtks(data_dir, name, built):
    """Fluent's cells given by their faces alone: meshio reads none of them, VTK's FLUENT reader
    builds them; meshdock builds the same cells, with VTK's orientation in 3-D. (VTK keeps the
    line faces' turn in 2-D, clockwise by Fluent's rule; meshdock's 2-D cells run
    counter-clockwise: test_ansys.cpp.)"""
    path = data_dir / "ansys" / name
    m = _read(path)
    oriented = m.points.shape[1] == 3
    points, want = _vtk_fluent(path, oriented)
    np.testing.assert_allclose(m.points, points[:, :m.points.shape[1]])
    got = [_cell_key(b.type, row, oriented) for b in m.cells[-built:] if b.type != "polyhedron"
           for row in b.data]
    for b in m.cells[-built:]:
        if b.type == "polyhedron":  # its nodes: every face's of the cell
            got += [_cell_key(b.type, b.data[b.face_offsets[b.offsets[c]]:
                                             b.face_offsets[b.offsets[c + 1]]])
                    for c in range(len(b.offsets) - 1)]
    assert len(got) == len(want) and sorted(got) == sorted(want)
    assert any("cells built from their faces" in n for n in m.notes), m.notes
    if name == "fluent-hybrid.msh":  # the binary layout builds the same blocks
        b = _read(data_dir / "ansys" / "fluent-hybrid.bin.msh")
        assert [c.type for c in b.cells] == [c.type for c in m.cells]
        for x, y in zip(b.cells, m.cells):
            np.testing.assert_array_equal(x.data, y.data)
        assert [r.name for r in m.regions] == ["int_fluid", "inlet-wall", "outer", "tets",
                                               "hybrid"]


VOLUME = {3: ("tetra", "pyramid", "wedge", "hexahedron"), 2: ("triangle", "quad")}


@pytest.mark.parametrize("src,fmt", [("meshes/box.v41.msh", "fluent-ascii"),
                                     ("meshes/box.v41.msh", "fluent"),
                                     ("meshes/blocks.v41.msh", "fluent-ascii"),
                                     ("ansys/fluent-hybrid.msh", "fluent-ascii"),
                                     ("ansys/fluent-2d-cells.msh", "fluent")])
def test_fluent_layout_written_reads_back_as_the_cells(data_dir, tmp_path, src, fmt):
    """format "fluent" writes what Fluent reads (faces with their cells c0 c1; meshio's writer
    writes cell bodies Fluent cannot open): read back, by meshdock and by VTK's FLUENT reader,
    it is the same cells with the same orientation."""
    m = _read(data_dir / src)
    dim = m.points.shape[1]
    out = tmp_path / "o.msh"
    notes = meshdock.write(out, m, file_format=fmt)
    assert all("is not written" in n or "not written" in n for n in notes), notes
    want = sorted(_cell_key(b.type, row) for b in m.cells if b.type in VOLUME[dim]
                  for row in b.data)
    back = _read(out)
    got = sorted(_cell_key(b.type, row) for b in back.cells if b.type in VOLUME[dim]
                 for row in b.data)
    assert got == want
    assert any("cells built from their faces" in n for n in back.notes)
    if fmt == "fluent-ascii":  # VTK 9.1 aborts on binary Fluent files
        _, keys = _vtk_fluent(out, oriented=True)
        assert sorted(keys) == want
    names = [r.name for r in back.regions]
    if src == "meshes/box.v41.msh":
        # Gmsh's physical groups name the zones: the surfaces' triangles the boundary zones
        # (no face left for a "wall" zone), the volume's the cell zone, as Fluent's boundary
        # conditions want them; each zone a region when read back.
        assert names == ["interior", "inlet", "outlet", "walls", "solid"]
        sizes = {r.name: len(r.entries) for r in m.regions}
        assert {r.name: len(r.entries) for r in back.regions if r.name != "interior"} == sizes
    if src == "ansys/fluent-hybrid.msh":
        # Its zones again: the interior one (its faces' region names it), the walls, the tetra
        # zone, the mixed one; the same faces in each.
        assert names == ["int_fluid", "inlet-wall", "outer", "tets", "hybrid"]
        assert ({r.name: len(r.entries) for r in back.regions}
                == {r.name: len(r.entries) for r in m.regions})


def test_fluent_layout_refusals(tmp_path):
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1], [1, 1, 1.0]])
    three = meshdock.Mesh(pts, [("tetra", np.array([[0, 1, 2, 3], [0, 2, 1, 4], [0, 1, 2, 5]]))])
    with pytest.raises(meshdock.WriteError, match="cells 1, 2 and 3 share a face"):
        meshdock.write(tmp_path / "o.msh", three, file_format="fluent")
    surface = meshdock.Mesh(pts, [("triangle", np.array([[0, 1, 2]]))])
    with pytest.raises(meshdock.WriteError, match="no cells of the points' dimension"):
        meshdock.write(tmp_path / "o.msh", surface, file_format="fluent")
    assert not (tmp_path / "o.msh").exists()


def test_float32_nodes(data_dir):
    path = data_dir / "ansys" / "float32.msh"
    m = meshdock.read(path)
    assert any("single-precision (2010)" in n for n in m.notes), m.notes
    conftest.assert_same_as_meshio(m, _meshio_read(path), dtypes=False)
    assert m.points.dtype == np.float64


def test_notes_name_skipped_sections(data_dir):
    m = _read(data_dir / "ansys" / "fluent-3d.msh")
    text = "\n".join(m.notes)
    for part in ["(39) zone sections: only their names are kept", "5 fluid fluid-1",
                 "(45) zone sections", "4 wall top-and-sides", "(18) periodic shadow face",
                 "cell zone 5 (line 27)'s cells are not built from the faces: cell 2 (a "
                 "hexahedron) has 7 faces, not 6", "adjacent cells (c0 c1)"]:
        assert part in text, part


def test_format_names_and_gmsh_msh_still_gmsh(data_dir, tmp_path):
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "ansys" / "meshio-mixed.msh", path)
    m = _read(path, file_format="ansys")
    assert [b.type for b in m.cells] == ["triangle", "tetra", "quad", "hexahedron", "pyramid",
                                         "wedge", "tetra"]
    # A Gmsh .msh is still Gmsh's.
    gmsh = sorted((data_dir / "meshes").glob("*.msh"))[0]
    g = _read(gmsh)
    ref = meshio.read(gmsh)
    np.testing.assert_array_equal(g.points, ref.points)


@pytest.mark.parametrize("name", ["meshio-mixed.msh", "meshio-2d.ascii.msh", "meshio-tets.msh"])
@pytest.mark.parametrize("fmt", ["ansys", "ansys-ascii", "ansys-binary"])
def test_meshdock_writer_read_back_by_both_readers(data_dir, tmp_path, name, fmt):
    src = _read(data_dir / "ansys" / name)
    out = tmp_path / "o.msh"
    assert meshdock.write(out, src, file_format=fmt) == []
    if fmt == "ansys-ascii":
        assert out.read_bytes().startswith(b'(1 "meshdock")\n') and b"(10 (1 1 " in out.read_bytes()
    else:
        assert b"(3010 (1 1 " in out.read_bytes()
    back = _read(out)
    np.testing.assert_array_equal(back.points, src.points)
    assert [b.type for b in back.cells] == [b.type for b in src.cells]
    for ours, theirs in zip(back.cells, src.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    conftest.assert_same_as_meshio(back, _meshio_read(out), dtypes=True)


@pytest.mark.parametrize("binary", [False, True])
def test_meshio_writer_read_by_meshdock(tmp_path, binary):
    rng = np.random.default_rng(7)
    pts = rng.standard_normal((30, 3))
    cells = [("tetra", rng.integers(0, 30, (6, 4))), ("pyramid", rng.integers(0, 30, (3, 5))),
             ("wedge", rng.integers(0, 30, (2, 6))), ("hexahedron", rng.integers(0, 30, (2, 8))),
             ("triangle", rng.integers(0, 30, (4, 3))), ("quad", rng.integers(0, 30, (2, 4)))]
    path = tmp_path / "r.msh"
    meshio.write(path, meshio.Mesh(pts, cells), file_format="ansys", binary=binary)
    m = _read(path)
    conftest.assert_same_as_meshio(m, _meshio_read(path), dtypes=True)
    np.testing.assert_array_equal(m.points, pts)


def test_errors_name_file_line_and_section(data_dir, tmp_path):
    d = data_dir / "ansys"
    with pytest.raises(meshdock.MeshError, match=r"bad-node\.msh:6: section \(13 opened at line 6\): "
                                                 r"node id 32 \(row 1\) is not one of"):
        meshdock.read(d / "bad-node.msh")
    with pytest.raises(meshdock.MeshError, match=r"lying\.msh:1: section \(10 opened at line 1\): "
                                                 r"1152921504606846975 nodes .* do not fit"):
        meshdock.read(d / "lying.msh")
    with pytest.raises(meshdock.MeshError, match=r"truncated\.bin\.msh:\d+: section \(3012"):
        meshdock.read(d / "truncated.bin.msh")
    with pytest.raises(meshdock.MeshError, match=r"bad-hex\.msh:5: .*expected a node id"):
        meshdock.read(d / "bad-hex.msh")
    bad = tmp_path / "x.msh"
    bad.write_text("hello\n")
    with pytest.raises(meshdock.MeshError, match=r"x\.msh:1: expected a section header.*found "
                                                 r"'hello'.* \(nor is it an ANSYS Fluent mesh"):
        meshdock.read(bad)


def test_writer_refuses_other_cells(tmp_path):
    m = meshio.Mesh(np.zeros((3, 3)), [("line", np.array([[0, 1]]))])
    with pytest.raises(meshdock.MeshError, match=r"cells\[0\] \(line\) cannot be written"):
        meshdock.write(tmp_path / "l.msh", m, file_format="ansys")
    m = meshio.Mesh(np.zeros((3, 1)), [("triangle", np.array([[0, 1, 2]]))])
    with pytest.raises(meshdock.MeshError, match=r"2-D or 3-D points; these have 1"):
        meshdock.write(tmp_path / "l.msh", m, file_format="ansys")
