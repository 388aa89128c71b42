"""Surface readers (STL, OBJ, OFF, PLY) on the constructs that used to be dropped silently:
several STL solids, OBJ lines, OFF comments, PLY triangle strips. Each file in
tests/data/meshes was written by hand for this; the expected values are what meshio 5.0 reads
where it reads the file, and VTK 9 (vtkSTLReader, vtkOBJReader, vtkTriangleFilter) otherwise --
both are also asked live below, so a change on either side shows."""
import numpy as np
import pytest

import meshdock


def _mesh(data_dir, name):
    return meshdock.read(data_dir / "meshes" / name)


def _vtk_cells(cell_array):
    it = cell_array.NewIterator()
    it.GoToFirstCell()
    out = []
    while not it.IsDoneWithTraversal():
        ids = it.GetCurrentCell()
        out.append([ids.GetId(i) for i in range(ids.GetNumberOfIds())])
        it.GoToNextCell()
    return out


# ---- STL: several solids -------------------------------------------------------------------

SOLIDS_POINTS = [[0, 0, 0], [0, 1, 0], [1, 0, 0], [0, 0, 1], [2, 0, 0], [3, 0, 0], [3, 1, 0],
                 [2, 1, 0], [1.5, 1, 0], [1.5, -1, 0]]
SOLIDS_TRIANGLES = [[0, 1, 2], [0, 2, 3], [0, 3, 1], [2, 1, 3], [4, 5, 6], [4, 6, 7], [2, 4, 8],
                    [8, 4, 7], [2, 9, 4]]


def test_stl_reads_every_solid(data_dir):
    m = _mesh(data_dir, "solids.ascii.stl")
    assert m.points.tolist() == SOLIDS_POINTS
    assert [b.type for b in m.cells] == ["triangle"]
    assert m.cells[0].data.tolist() == SOLIDS_TRIANGLES
    normals = m.cell_data["facet_normals"][0]
    assert normals.shape == (9, 3)
    assert normals[3].tolist() == pytest.approx([0.57735] * 3)
    assert normals[8].tolist() == [0, 0, -1]  # the last facet of the last solid


def test_stl_solids_become_regions_and_a_note(data_dir):
    m = _mesh(data_dir, "solids.ascii.stl")
    regions = {r.name: r for r in m.regions}
    assert list(regions) == ["tetra", "plate", "bridge"]
    assert regions["tetra"].entries.tolist() == [0, 1, 2, 3]
    assert regions["plate"].entries.tolist() == [4, 5]
    assert regions["bridge"].entries.tolist() == [6, 7, 8]
    assert [(r.kind, r.dim, r.tag) for r in m.regions] == [("cell", 2, 1), ("cell", 2, 2),
                                                             ("cell", 2, 3)]
    assert m.notes == ["stl: 3 solids merged into one triangle block, one region each: "
                       "'tetra' (4), 'plate' (2), 'bridge' (3)"]


def test_stl_solids_match_meshio_and_vtk(data_dir):
    meshio = pytest.importorskip("meshio")
    vtk = pytest.importorskip("vtk")
    from vtk.util.numpy_support import vtk_to_numpy
    path = data_dir / "meshes" / "solids.ascii.stl"
    m = meshdock.read(path)
    ref = meshio.read(path)
    np.testing.assert_array_equal(m.points, ref.points)
    np.testing.assert_array_equal(m.cells[0].data, ref.cells[0].data)
    r = vtk.vtkSTLReader()
    r.SetFileName(str(path))
    r.ScalarTagsOn()
    r.Update()
    out = r.GetOutput()
    assert _vtk_cells(out.GetPolys()) == m.cells[0].data.tolist()
    # vtkSTLReader's solid labels (0-based) are the region tags (1-based, as Gmsh's).
    labels = vtk_to_numpy(out.GetCellData().GetArray("STLSolidLabeling")).astype(int)
    for reg in m.regions:
        assert set(labels[reg.entries].tolist()) == {reg.tag - 1}


@pytest.mark.parametrize("tail,message", [
    (b"endsolid a\ngarbage\n", ":10: text after the last 'endsolid' not read ('garbage')"),
    (b"", "stl: no 'endsolid' at the end of the file (truncated?)"),
])
def test_stl_text_after_the_solids_is_noted(tmp_path, tail, message):
    p = tmp_path / "tail.stl"
    p.write_bytes(b"solid a\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\n"
                  b"vertex 0 1 0\nendloop\nendfacet\n" + tail)
    m = meshdock.read(p)
    assert m.cells[0].data.tolist() == [[0, 1, 2]]
    assert len(m.notes) == 1 and message in m.notes[0]
    assert str(p) in m.notes[0] or not tail


def test_single_solid_stl_has_no_regions_or_notes(data_dir):
    m = _mesh(data_dir, "sphere.ascii.stl")
    assert m.regions == [] and m.notes == []


# ---- OBJ: lines ------------------------------------------------------------------------------

def test_obj_lines_become_a_line_block(data_dir):
    m = _mesh(data_dir, "lines.obj")
    assert [b.type for b in m.cells] == ["triangle", "line"]
    assert m.cells[0].data.tolist() == [[0, 1, 2], [0, 2, 3], [0, 1, 4]]
    # "l 1 5" and the polyline "l 2 5 3 4" split into its 3 segments.
    assert m.cells[1].data.tolist() == [[0, 4], [1, 4], [4, 2], [2, 3]]
    assert [a.tolist() for a in m.cell_data["obj:group_ids"]] == [[-1, -1, -1], [-1] * 4]
    assert m.notes == ["obj: 1 polylines ('l' with more than 2 vertices) split into line "
                       "segments; 4 segments in the line block"]


def test_obj_lines_match_meshio_faces_and_vtk_polylines(data_dir):
    meshio = pytest.importorskip("meshio")
    vtk = pytest.importorskip("vtk")
    path = data_dir / "meshes" / "lines.obj"
    m = meshdock.read(path)
    ref = meshio.read(path)  # meshio keeps the faces only
    np.testing.assert_array_equal(m.points, ref.points)
    assert [c.type for c in ref.cells] == ["triangle"]
    np.testing.assert_array_equal(m.cells[0].data, ref.cells[0].data)
    r = vtk.vtkOBJReader()
    r.SetFileName(str(path))
    r.Update()
    segments = [[a, b] for line in _vtk_cells(r.GetOutput().GetLines())
                for a, b in zip(line, line[1:])]
    assert m.cells[1].data.tolist() == segments


@pytest.mark.parametrize("content,message", [
    (b"v 0 0 0\nv 1 0 0\nl 1\n", ":3: a line ('l') needs 2 or more vertices, found 1"),
    (b"v 0 0 0\nv 1 0 0\nl 1 3\n", "a line refers to vertex 2 but there are 2 vertices"),
])
def test_obj_bad_lines(tmp_path, content, message):
    p = tmp_path / "bad.obj"
    p.write_bytes(content)
    with pytest.raises(meshdock.ReadError) as e:
        meshdock.read(p)
    assert str(p) in str(e.value) and message in str(e.value)


def test_obj_unread_statements_are_noted(tmp_path):
    p = tmp_path / "points.obj"
    p.write_bytes(b"o thing\nv 0 0 0\nv 1 0 0\nv 0 1 0\ns 1\nf 1 2 3\np 1 2\np 3\nvp 0.5\n")
    m = meshdock.read(p)
    assert m.cells[0].data.tolist() == [[0, 1, 2]]
    assert m.notes == ["obj: 2 'p' statements not read (not supported)",
                       "obj: 1 'vp' statements not read (not supported)"]


# ---- OFF: comments ---------------------------------------------------------------------------

def test_off_comments_after_values(data_dir):
    m = _mesh(data_dir, "comments.off")
    assert m.points.tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
    assert [b.type for b in m.cells] == ["triangle"]
    assert m.cells[0].data.tolist() == [[0, 1, 2], [0, 2, 3]]
    assert m.notes == []


def test_off_without_comments_matches_meshio(data_dir, tmp_path):
    """meshio refuses comments after values; the same file without them reads the same."""
    meshio = pytest.importorskip("meshio")
    text = (data_dir / "meshes" / "comments.off").read_text().splitlines()
    bare = [l.split("#")[0].strip() for l in text]
    p = tmp_path / "bare.off"
    p.write_text("\n".join(l for l in bare if l) + "\n")
    ref = meshio.read(p)
    m = _mesh(data_dir, "comments.off")
    np.testing.assert_array_equal(m.points, ref.points)
    np.testing.assert_array_equal(m.cells[0].data, ref.cells[0].data)


def test_off_face_colours_and_trailing_text_are_noted(tmp_path):
    p = tmp_path / "c.off"
    p.write_bytes(b"OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2 255 0 0\n3 0 1 2\n")
    m = meshdock.read(p)
    assert m.cells[0].data.tolist() == [[0, 1, 2]]
    assert m.notes == [f"off: 1 faces have colour values (first {p}:6); not read",
                       f"off: {p}:7: text after the last of the 1 faces the header counts; "
                       "not read"]


# ---- PLY: triangle strips --------------------------------------------------------------------

STRIP_POINTS = [[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0], [2, 0, 0], [2, 1, 0], [0, 0, 1],
                [1, 0, 1]]
STRIP_TRIANGLES = [[0, 1, 2], [2, 1, 3], [2, 3, 4], [4, 3, 5], [6, 7, 0]]


def test_ply_tristrips_ascii(data_dir):
    m = _mesh(data_dir, "strips.ascii.ply")
    assert m.points.tolist() == STRIP_POINTS
    assert [b.type for b in m.cells] == ["triangle"]
    assert m.cells[0].data.tolist() == STRIP_TRIANGLES
    assert m.notes == ["ply: triangle strips converted to 5 triangles"]


def test_ply_tristrips_binary(data_dir):
    m = _mesh(data_dir, "strips.bin.ply")
    assert m.points.tolist() == STRIP_POINTS
    # Second row: strip 7 6 1, then a 2-vertex strip (no triangle).
    assert m.cells[0].data.tolist() == STRIP_TRIANGLES + [[7, 6, 1]]
    assert m.notes == ["ply: triangle strips converted to 6 triangles"]


def test_ply_tristrips_match_vtk_triangle_filter(data_dir):
    vtk = pytest.importorskip("vtk")
    m = _mesh(data_dir, "strips.bin.ply")
    pd = vtk.vtkPolyData()
    pts = vtk.vtkPoints()
    for p in m.points:
        pts.InsertNextPoint(*p)
    pd.SetPoints(pts)
    strips = vtk.vtkCellArray()
    for s in ([0, 1, 2, 3, 4, 5], [6, 7, 0], [7, 6, 1]):
        strips.InsertNextCell(len(s))
        for i in s:
            strips.InsertCellPoint(i)
    pd.SetStrips(strips)
    f = vtk.vtkTriangleFilter()
    f.SetInputData(pd)
    f.Update()
    assert m.cells[0].data.tolist() == _vtk_cells(f.GetOutput().GetPolys())


def test_ply_data_after_the_last_element_is_noted(tmp_path):
    p = tmp_path / "t.ply"
    p.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                  b"property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                  b"end_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 2 1 0\n")
    m = meshdock.read(p)
    assert m.cells[0].data.tolist() == [[0, 1, 2]]
    assert m.notes == [f"ply: {p}:14: data after the last element; not read"]


def test_ply_non_integer_index_is_an_error(tmp_path):
    p = tmp_path / "f.ply"
    p.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                  b"property float z\nelement face 1\nproperty list uchar float vertex_indices\n"
                  b"end_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 1.5\n")
    with pytest.raises(meshdock.ReadError, match="vertex index 1.5.* is not an integer"):
        meshdock.read(p)


def test_ply_float_lists_that_are_not_indices_are_skipped_with_a_note(tmp_path):
    p = tmp_path / "uv.ply"
    p.write_bytes(b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
                  b"property float z\nelement face 1\nproperty list uchar int vertex_indices\n"
                  b"property list uchar float texcoord\nend_header\n0 0 0\n1 0 0\n0 1 0\n"
                  b"3 0 1 2 6 0 0 0.5 0 0 0.5\n")
    m = meshdock.read(p)
    assert m.cells[0].data.tolist() == [[0, 1, 2]]
    assert m.notes == ["ply: list property 'texcoord' of element 'face' not kept"]
