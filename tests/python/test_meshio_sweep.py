"""Random meshes written by every meshio writer variant meshdock reads, read back by meshdock and
by meshio, and compared: points, cell blocks and their connectivity, point and cell data with
their dtypes. The fixed files of test_read_reference.py hold what each format's corners look
like; this sweep holds the combinations (cell types mixed in one file, 2-D points, data of
every integer width, names with spaces) no one wrote by hand. The sweep of session 22 over 60
seeds found 2-D PLY refused (x, y and no z) and nothing else.

Expected differences, by design (docs/architecture.md): points are float64 and connectivity
int64 whatever the file holds (both widen without loss); byte order is native; binary STL
keeps its facet normals as cell_data, which meshio drops; a partitioned MSH 2.2 gets
gmsh:partition (not made here); a Medit version 1 (float32) ascii file's vertex refs, which
meshio reads through float32, meshdock as written."""
import contextlib
import io
import os
import warnings

import numpy as np
import pytest

import meshdock

meshio = pytest.importorskip("meshio")

NODES = {"vertex": 1, "line": 2, "triangle": 3, "quad": 4, "tetra": 4, "hexahedron": 8,
         "wedge": 6, "pyramid": 5, "line3": 3, "triangle6": 6, "quad8": 8, "quad9": 9,
         "tetra10": 10, "hexahedron20": 20}
POINT_DATA = [("s64", np.float64, None), ("v32", np.float32, 3), ("i32", np.int32, None),
              ("i64", np.int64, None), ("u8", np.uint8, None), ("i16", np.int16, None),
              ("u32", np.uint32, None), ("t9", np.float64, 9), ("v2", np.float32, 2),
              ("with space", np.float64, None)]
CELL_DATA = [("c64", np.float64, None), ("ci32", np.int32, None), ("cv", np.float64, 3)]

# (meshio file_format, writer options, extension)
VARIANTS = [
    ("vtu", dict(binary=True, compression="zlib"), ".vtu"),
    ("vtu", dict(binary=True, compression="lzma"), ".vtu"),
    ("vtu", dict(binary=True, compression=None), ".vtu"),
    ("vtu", dict(binary=False), ".vtu"),
    ("vtk42", dict(binary=True), ".vtk"),
    ("vtk42", dict(binary=False), ".vtk"),
    ("vtk51", dict(binary=True), ".vtk"),
    ("vtk51", dict(binary=False), ".vtk"),
    ("gmsh22", dict(binary=True), ".msh"),
    ("gmsh22", dict(binary=False), ".msh"),
    ("gmsh", dict(binary=True), ".msh"),
    ("gmsh", dict(binary=False), ".msh"),
    ("stl", dict(binary=True), ".stl"),
    ("stl", dict(binary=False), ".stl"),
    ("ply", dict(binary=True), ".ply"),
    ("ply", dict(binary=False), ".ply"),
    ("obj", {}, ".obj"),
    ("off", {}, ".off"),
    ("medit", {}, ".mesh"),
    ("medit", {}, ".meshb"),
    ("abaqus", {}, ".inp"),
    ("su2", {}, ".su2"),
    # meshio 5.0's default GRID* (large field) asserts on a negative coordinate's 17 characters
    # (most seeds skip); its small-field GRID writes 8 characters of each (what it reads back).
    ("nastran", {}, ".bdf"),
    ("nastran", dict(point_format="fixed-small"), ".nas"),
    # TetGen: a pair, read from either file.
    ("tetgen", {}, ".node"),
    ("tetgen", {}, ".ele"),
    # Tecplot: meshio writes one FE zone (mixed blocks as bricks / quads with repeated nodes,
    # lower-dimensional blocks and other types skipped), data as float64 variables.
    ("tecplot", {}, ".dat"),
    # UGRID: the variant is the name's (ascii, C binary big / little-endian with 8-byte
    # integers, Fortran unformatted with 4-byte reals).
    ("ugrid", {}, ".ugrid"),
    ("ugrid", {}, ".b8.ugrid"),
    ("ugrid", {}, ".lb8l.ugrid"),
    ("ugrid", {}, ".lr4.ugrid"),
    # FLAC3D, ascii and binary: zones only (meshio's writer asserts every block is one).
    ("flac3d", {"binary": False}, ".f3grid"),
    ("flac3d", {"binary": True}, ".f3grid"),
    ("netgen", {}, ".vol"),
    ("netgen", {}, ".vol.gz"),
    # ANSYS Fluent, binary (meshio's default) and ascii: meshio's six cell types as (12)
    # sections; read by content (.msh), meshio told the format.
    ("ansys", {"binary": True}, ".msh"),
    ("ansys", {"binary": False}, ".msh"),
    # Kratos mdpa: meshio's element names, consecutive blocks of one type read as one block.
    ("mdpa", {}, ".mdpa"),
    # DOLFIN XML: one block, its cell data in m_<name>.xml beside m.xml.
    ("dolfin-xml", {}, ".xml"),
    # PERMAS: meshio's element names; no data.
    ("permas", {}, ".post"),
]
# MESHDOCK_SWEEP_SEEDS=N widens the sweep (4 in CI: well under a second).
SEEDS = range(int(os.environ.get("MESHDOCK_SWEEP_SEEDS", "4")))


def random_mesh(seed, fmt):
    """Points, cell blocks, point and cell data of `seed`, of the kinds meshio's `fmt` writer
    takes (its limits, not meshdock's: gmsh 1, 3 or 9 components, VTK no spaces in names, PLY
    no 16-bit integers)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    dim = 2 if seed % 3 == 1 else 3
    points = rng.standard_normal((n, dim)).astype(np.float32 if seed % 2 else np.float64)
    types = list(rng.choice(list(NODES), size=int(rng.integers(2, 4))))
    if "triangle" not in types:
        types.append("triangle")  # something for the surface formats
    cells = [(t, rng.integers(0, n, (int(rng.integers(1, 20)), NODES[t]))) for t in types]
    order = rng.permutation(len(POINT_DATA))
    point_data = {}
    for i in order[: 2 + seed % 4]:
        name, dtype, comps = POINT_DATA[i]
        if (fmt.startswith("gmsh") and comps not in (None, 3, 9)) or \
                (fmt.startswith("vtk") and " " in name) or \
                (fmt == "ply" and dtype in (np.int16, np.uint16)):
            continue
        point_data[name] = (rng.standard_normal((n,) if comps is None else (n, comps)) * 100
                            ).astype(dtype)
    cell_data = {}
    for name, dtype, comps in CELL_DATA[: seed % 4]:
        cell_data[name] = [(rng.standard_normal((len(c),) if comps is None else (len(c), comps))
                            * 100).astype(dtype) for _, c in cells]
    return points, cells, point_data, cell_data


def written(fmt, options, path, seed):
    """meshio.Mesh of `seed` as `fmt` takes it, written to `path`; None when meshio cannot write
    or read back such a file (then there is nothing to compare with)."""
    points, cells, point_data, cell_data = random_mesh(seed, fmt)
    if fmt in ("stl", "off", "obj", "ply"):
        keep = ("triangle",) if fmt in ("stl", "off") else ("triangle", "quad")
        cells = [(t, c) for t, c in cells if t in keep]
        cell_data = {}
        if fmt != "ply":
            point_data = {}
    elif fmt == "abaqus":
        # meshio 5.3 has no Abaqus element for vertex and pyramid (its writer raises KeyError);
        # it writes no data (its reader reads none back: nothing to compare).
        keep = [i for i, (t, _) in enumerate(cells) if t not in ("vertex", "pyramid")]
        cells = [cells[i] for i in keep]
        cell_data = {k: [v[i] for i in keep] for k, v in cell_data.items()}
    elif fmt.startswith("gmsh"):
        # One block: meshio 5.0 does not round-trip a gmsh file of several blocks it wrote
        # (KeyError in its 4.1 writer, "incompatible cell data" reading 2.2); files of gmsh's
        # own with many blocks are test_read_reference.py's.
        cells = cells[:1]
        cell_data = {k: v[:1] for k, v in cell_data.items()}
        cell_data.update({"gmsh:physical": [np.full(len(cells[0][1]), 5, np.int32)],
                          "gmsh:geometrical": [np.ones(len(cells[0][1]), np.int32)]})
    elif fmt == "nastran":
        # meshio 5.0 has no Nastran card for line3; it writes no data but nastran:ref (none
        # here: its reader gives none back either).
        keep = [i for i, (t, _) in enumerate(cells) if t != "line3"]
        cells = [cells[i] for i in keep]
        point_data, cell_data = {}, {}
    elif fmt == "medit":
        # Medit's element keywords; meshio writes the first integer array of each kind as the
        # refs and reads them back as "medit:ref".
        keep = [i for i, (t, _) in enumerate(cells)
                if t in ("line", "triangle", "quad", "tetra", "hexahedron", "wedge", "pyramid")]
        cells = [cells[i] for i in keep]
        cell_data = {k: [v[i] for i in keep] for k, v in cell_data.items()}
    elif fmt == "su2":
        # meshio 5.0's su2 writer fails on every boundary cell (line in 2-D, triangle and quad
        # in 3-D: it unpacks a CellBlock as a tuple) and writes no data: interior cells only
        # (test_su2.py reads markers, from gmsh's files).
        keep = ("triangle", "quad") if points.shape[1] == 2 else \
            ("tetra", "hexahedron", "wedge", "pyramid")
        cells = [(t, c) for t, c in cells if t in keep]
        point_data, cell_data = {}, {}
    elif fmt == "tetgen":
        # meshio 5.0's tetgen writer: 3-D points (2-D: WriteError, skipped), one tetra block (a
        # second writes a second header into the .ele), scalar point data (it formats a row of a
        # vector as a string), cell data as integers (its reader reads them so) - the region
        # attribute here.
        tets = [c for t, c in cells if t == "tetra"][:1] or \
            [np.random.default_rng(seed).integers(0, len(points), (7, 4))]
        cells = [("tetra", tets[0])]
        point_data = {k: v for k, v in point_data.items() if v.ndim == 1}
        cell_data = {"tetgen:ref": [np.arange(len(tets[0])) % 5]}
    elif fmt == "tecplot":
        # meshio 5.0's writer takes the zone type from the first block's dimension before it
        # drops the 2-D blocks of a mesh with 3-D ones (an FEQUADRILATERAL zone of 8-node rows,
        # which its reader reads back as 8-node "quads"; meshdock refuses it naming the line):
        # only the blocks of the highest dimension it writes. Every variable reads back float64.
        dims = {"line": 1, "triangle": 2, "quad": 2, "tetra": 3, "hexahedron": 3, "wedge": 3,
                "pyramid": 3}
        top = max(dims.get(t, 0) for t, _ in cells)
        keep = [i for i, (t, _) in enumerate(cells) if dims.get(t, 0) == top]
        cells = [cells[i] for i in keep]
        cell_data = {k: [v[i] for i in keep] for k, v in cell_data.items()}
    elif fmt == "ugrid":
        # meshio 5.0's ugrid writer: 3-D points (it writes a 2-D point's 2 values as they are),
        # one block of each of the six types (it refuses a second), no data (it fails on any
        # integer cell data: it reshapes the per-block list; it writes every surface id as 1).
        if points.shape[1] == 2:
            points = np.column_stack([points, np.zeros(len(points), points.dtype)])
        merged = {}
        for t, c in cells:
            if t in ("triangle", "quad", "tetra", "pyramid", "wedge", "hexahedron"):
                merged.setdefault(t, []).append(c)
        cells = [(t, np.concatenate(c)) for t, c in merged.items()]
        point_data, cell_data = {}, {}
    elif fmt == "flac3d":
        # meshio 5.0's flac3d writer: 3-D points (it formats 3 values a point), zone blocks only
        # (it asserts on any other, faces too), no data (it writes none; its reader gives
        # cell_data "cell_ids").
        if points.shape[1] == 2:
            points = np.column_stack([points, np.zeros(len(points), points.dtype)])
        cells = [(t, c) for t, c in cells if t in ("tetra", "pyramid", "wedge", "hexahedron")]
        point_data, cell_data = {}, {}
    elif fmt == "netgen":
        # meshio 5.0's netgen writer: its element types (not line3, quad9: KeyError), no point
        # data; of the cell data the first integer array goes as the element index, read back
        # as netgen:index (meshio's reading is the reference).
        keep = [i for i, (t, _) in enumerate(cells) if t not in ("line3", "quad9")]
        cells = [cells[i] for i in keep]
        cell_data = {k: [v[i] for i in keep] for k, v in cell_data.items()}
        point_data = {}
    elif fmt == "ansys":
        # meshio 5.0's ansys writer: triangle, tetra, quad, hexahedron, pyramid, wedge (others a
        # KeyError), no data; float64 points (it writes float32 bytes under 3010, which says
        # float64: its own reader then misreads them).
        points = points.astype(np.float64)
        cells = [(t, c) for t, c in cells
                 if t in ("triangle", "tetra", "quad", "hexahedron", "pyramid", "wedge")]
        point_data, cell_data = {}, {}
    elif fmt == "mdpa":
        # meshio 5.0's mdpa writer has no name for pyramid (KeyError); its reader reads no
        # NodalData / ElementalData back (meshdock's reader does: test_mdpa.py).
        cells = [(t, c) for t, c in cells if t != "pyramid"]
        point_data, cell_data = {}, {}
    elif fmt == "dolfin-xml":
        # meshio 5.0's dolfin writer: the tetra blocks (else the triangle ones) as one block,
        # scalar cell data (it writes a row of a vector as its repr), no point data; one block
        # of each (a second of the type overwrites its cell data file's values).
        t = "tetra" if any(t == "tetra" for t, _ in cells) else "triangle"
        keep = [i for i, (u, _) in enumerate(cells) if u == t][:1]
        cells = [cells[i] for i in keep]
        cell_data = {k: [v[i] for i in keep] for k, v in cell_data.items() if v[0].ndim == 1}
        point_data = {}
    elif fmt == "permas":
        # meshio 5.0's permas writer writes no data, and tetra10 / triangle6 / quad9 in PERMAS'
        # order, which its reader keeps (meshdock's takes them back: test_permas.py).
        cells = [(t, c) for t, c in cells if t not in ("tetra10", "triangle6", "quad9")]
        point_data, cell_data = {}, {}
    mesh = meshio.Mesh(points, cells, point_data=point_data, cell_data=cell_data)
    quiet = contextlib.redirect_stdout(io.StringIO())
    try:
        with quiet, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            meshio.write(path, mesh, file_format=fmt, **options)
            return meshio.read(path, file_format="ansys") if fmt == "ansys" else meshio.read(path)
    except (Exception, SystemExit):  # meshio's writer or reader refuses this combination
        return None


def same(ours, ref, what, widen_ok=False):
    ours, ref = np.asarray(ours), np.asarray(ref)
    if ours.shape != ref.shape and ours.size == ref.size and ours.squeeze().shape == \
            ref.squeeze().shape:
        ours = ours.reshape(ref.shape)  # (n,) against (n, 1)
    assert ours.shape == ref.shape, f"{what}: shape {ours.shape}, meshio {ref.shape}"
    if not widen_ok:
        assert ours.dtype == ref.dtype.newbyteorder("="), \
            f"{what}: dtype {ours.dtype}, meshio {ref.dtype}"
    if ref.dtype.kind == "f":
        np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(ours, ref, err_msg=what)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fmt,options,ext", VARIANTS,
                         ids=[f"{f}-{'-'.join(f'{k}={v}' for k, v in o.items())}"
                              for f, o, _ in VARIANTS])
def test_meshdock_reads_what_meshio_reads(tmp_path, fmt, options, ext, seed):
    path = tmp_path / f"m{ext}"
    ref = written(fmt, options, path, seed)
    if ref is None:
        pytest.skip(f"meshio cannot write and read back this mesh as {fmt} {options}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        m = meshdock.read(path)
    same(m.points, ref.points, "points", widen_ok=True)
    assert [b.type for b in m.cells] == [b.type for b in ref.cells]
    for i, (ours, theirs) in enumerate(zip(m.cells, ref.cells)):
        same(ours.data, theirs.data, f"cells[{i}] {ours.type}", widen_ok=True)
    assert sorted(m.point_data) == sorted(ref.point_data)
    if fmt == "medit" and ext == ".mesh" and ref.points.dtype == np.float32:
        # meshio reads the vertex refs of a MeshVersionFormatted 1 file through float32 (rounded
        # past 2^24); meshdock reads them as written.
        m.point_data["medit:ref"] = m.point_data["medit:ref"].astype(np.float32).astype(int)
    for name, values in ref.point_data.items():
        same(m.point_data[name], values, f"point_data {name!r}")
    expected = set(ref.cell_data) | ({"facet_normals"} if fmt == "stl" and options["binary"]
                                     else set())
    assert set(m.cell_data) == expected
    for name, blocks in ref.cell_data.items():
        for i, (ours, theirs) in enumerate(zip(m.cell_data[name], blocks)):
            same(ours, theirs, f"cell_data {name!r}[{i}]")


# meshdock's writers of the formats whose writer is meshdock's own reason to be compared with
# meshio's reader (avsucd, tetgen: meshdock's text is the shortest that reads back exactly, so
# meshio's reading of it equals the random mesh itself, float32 values read back as float64).
WRITER_VARIANTS = [("avsucd", ".avs"), ("tetgen", ".node"), ("tetgen", ".ele")]
UCD_TYPES = ("vertex", "line", "triangle", "quad", "tetra", "pyramid", "wedge", "hexahedron")


def for_writer(seed, fmt):
    """The random mesh of `seed` cut to what `fmt` holds, and the arrays meshio should read
    back (points padded to 3-D, names as they come back)."""
    points, cells, point_data, cell_data = random_mesh(seed, fmt)
    if fmt == "avsucd":
        # UCD's types; meshio (and meshdock) read consecutive cells of one type as one block.
        keep = [i for i, (t, _) in enumerate(cells) if t in UCD_TYPES]
        keep = [i for j, i in enumerate(keep) if j == 0 or cells[keep[j - 1]][0] != cells[i][0]]
        cells = [cells[i] for i in keep]
        # meshio 5.0's reader fails on cell data (but the material) of more than one block.
        cell_data = {k: [v[i] for i in keep] for k, v in cell_data.items()} \
            if len(keep) == 1 else {}
        expect_point = {k.replace(" ", "_"): v for k, v in point_data.items()}
        expect_cell = dict(cell_data)
        expect_cell["avsucd:material"] = [np.zeros(len(c), int) for _, c in cells]
    else:
        tets = [c for t, c in cells if t == "tetra"]
        tets = np.concatenate(tets) if tets else \
            np.random.default_rng(seed).integers(0, len(points), (7, 4))
        cells = [("tetra", tets)]
        scalars = [v for v in point_data.values() if v.ndim == 1]
        point_data = {name: v for name, v in zip(("tetgen:attr1", "tetgen:ref"), scalars)}
        cell_data = {"tetgen:ref": [np.arange(len(tets)) % 5 - 2]}
        expect_point, expect_cell = point_data, cell_data
    mesh = meshio.Mesh(points, cells, point_data=point_data, cell_data=cell_data)
    padded = np.zeros((len(points), 3))
    padded[:, : points.shape[1]] = points
    return mesh, padded, expect_point, expect_cell


def close(ours, src, what):
    src = np.asarray(src)
    if src.dtype == np.float32:  # the shortest float32 text, read as float64
        np.testing.assert_allclose(ours, src, rtol=1e-7, atol=0, err_msg=what)
    else:
        np.testing.assert_array_equal(ours, src, err_msg=what)


@pytest.mark.parametrize("fmt,ext", WRITER_VARIANTS, ids=[f"{f}{e}" for f, e in WRITER_VARIANTS])
@pytest.mark.parametrize("seed", SEEDS)
def test_meshio_reads_what_meshdock_writes(tmp_path, fmt, ext, seed):
    mesh, points, expect_point, expect_cell = for_writer(seed, fmt)
    path = tmp_path / f"m{ext}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        meshdock.write(path, mesh, file_format=fmt)
    back = meshio.read(path, file_format=fmt)
    close(back.points, points, "points")
    assert [b.type for b in back.cells] == [b.type for b in mesh.cells]
    for i, (theirs, ours) in enumerate(zip(back.cells, mesh.cells)):
        np.testing.assert_array_equal(theirs.data, ours.data, err_msg=f"cells[{i}]")
    assert sorted(back.point_data) == sorted(expect_point)
    for name, v in expect_point.items():
        close(back.point_data[name].reshape(np.shape(v)), v, f"point_data {name!r}")
    assert sorted(back.cell_data) == sorted(expect_cell)
    for name, blocks in expect_cell.items():
        for i, (theirs, v) in enumerate(zip(back.cell_data[name], blocks)):
            close(np.asarray(theirs).reshape(np.shape(v)), v, f"cell_data {name!r}[{i}]")
