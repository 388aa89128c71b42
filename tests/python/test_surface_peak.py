"""Peak memory of the surface readers (and of ascii legacy VTK): one read of a 500,000-triangle
grid (the size of `scripts/bench surface`) in each format, in a fresh process, must grow its
peak resident memory (VmHWM, measured as the benchmark does) by little more than the arrays it
returns.

The readers used to hold the whole file (read at once), collect what they parsed in vectors
grown by doubling and then copy them into the arrays, and STL merged its corners through a
std::unordered_map of every corner: 2.9-6.9x the arrays here (1.5x for ascii VTK, which already
released what it had parsed). Now the file passes through a 2 MiB window, arrays whose size the
header gives are made up front and written in place, values of unknown count are collected in
chunks freed as they are copied, and STL's table holds 4-byte point numbers: 1.12-1.25x here
(the arrays, the window, and about 2.5 MB that a first read costs any process). BOUND leaves
0.15 of margin above that, and the code before fails it in every format.

The files are written here with numpy, by hand (what is read is compared with meshio and VTK in
test_surface_readers.py); each is removed once read (the ascii STL is 76 MB)."""

import struct

import numpy as np
import pytest

from daemon_util import read_peak

N = 500  # squares per side of the grid: 2 * N * N = 500,000 triangles, 251,001 points


@pytest.fixture(scope="module")
def grid():
    """Points of a wavy unit square and its triangles (two per square), int64."""
    g = np.arange(N + 1) / N
    x, y = np.meshgrid(g, g, indexing="ij")
    points = np.stack([x.ravel(), y.ravel(), 0.1 * np.sin(7 * x.ravel()) * y.ravel()], axis=1)
    idx = np.arange((N + 1) ** 2).reshape(N + 1, N + 1)
    a, b = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel()
    c, d = idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    tris = np.concatenate([np.stack([a, b, c], axis=1), np.stack([a, c, d], axis=1)])
    return points, tris


def _text(f, rows, fmt):
    np.savetxt(f, rows, fmt=fmt)  # a line per row: fast enough for 500k rows (~0.5 s)


def write_stl_ascii(path, points, tris):
    corners = points[tris].reshape(len(tris), 9)
    vertex = "  vertex %.9g %.9g %.9g\n"
    with open(path, "w") as f:
        f.write("solid grid\n")
        _text(f, corners, "facet normal 0 0 1\n outer loop\n" + 3 * vertex + " endloop\nendfacet")
        f.write("endsolid grid\n")


def write_stl_binary(path, points, tris):
    rec = np.zeros(len(tris), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    rec["n"] = (0, 0, 1)
    rec["v"] = points[tris]
    with open(path, "wb") as f:
        f.write(b"binary grid".ljust(80, b" ") + struct.pack("<I", len(tris)) + rec.tobytes())


def write_obj(path, points, tris):
    with open(path, "w") as f:
        _text(f, points, "v %.9g %.9g %.9g")
        _text(f, tris + 1, "f %d %d %d")


def write_off(path, points, tris):
    with open(path, "w") as f:
        f.write(f"OFF\n{len(points)} {len(tris)} 0\n")
        _text(f, points, "%.9g %.9g %.9g")
        _text(f, tris, "3 %d %d %d")


def _ply_header(fmt, points, tris):
    return (f"ply\nformat {fmt} 1.0\nelement vertex {len(points)}\nproperty double x\n"
            f"property double y\nproperty double z\nelement face {len(tris)}\n"
            "property list uchar int vertex_indices\nend_header\n").encode()


def write_ply_ascii(path, points, tris):
    with open(path, "wb") as f:
        f.write(_ply_header("ascii", points, tris))
        _text(f, points, "%.9g %.9g %.9g")
        _text(f, tris, "3 %d %d %d")


def write_ply_binary(path, points, tris):
    faces = np.zeros(len(tris), dtype=[("n", "u1"), ("v", "<i4", 3)])
    faces["n"] = 3
    faces["v"] = tris
    with open(path, "wb") as f:
        f.write(_ply_header("binary_little_endian", points, tris))
        f.write(points.astype("<f8").tobytes() + faces.tobytes())


def write_vtk_ascii(path, points, tris):
    n = len(tris)
    with open(path, "w") as f:
        f.write(f"# vtk DataFile Version 5.1\ngrid\nASCII\nDATASET UNSTRUCTURED_GRID\n"
                f"POINTS {len(points)} double\n")
        _text(f, points, "%.9g %.9g %.9g")
        f.write(f"CELLS {n + 1} {3 * n}\nOFFSETS vtktypeint64\n")
        _text(f, np.arange(0, 3 * n + 1, 3), "%d")
        f.write("CONNECTIVITY vtktypeint64\n")
        _text(f, tris, "%d %d %d")
        f.write(f"CELL_TYPES {n}\n")
        _text(f, np.full(n, 5), "%d")


# (file name, writer, what the code before this change measured here)
CASES = [
    ("grid.ascii.stl", write_stl_ascii, 6.9),
    ("grid.bin.stl", write_stl_binary, 5.0),
    ("grid.obj", write_obj, 3.0),
    ("grid.ascii.ply", write_ply_ascii, 3.2),
    ("grid.bin.ply", write_ply_binary, 2.9),
    ("grid.off", write_off, 3.1),
    ("grid.ascii.vtk", write_vtk_ascii, 1.5),
]
BOUND = 1.4


@pytest.mark.parametrize("name,write,before", CASES, ids=[c[0] for c in CASES])
def test_surface_read_peaks_near_its_arrays(tmp_path, grid, name, write, before):
    points, tris = grid
    path = tmp_path / name
    write(path, points, tris)
    try:
        peak, ids, cells = read_peak(path)
    finally:
        path.unlink()
    assert cells == len(tris)
    if "stl" not in name:  # STL numbers its points in the order they first appear
        assert ids == int(tris.sum())
    assert peak < BOUND, f"{name}: peak {peak:.2f}x the arrays (bound {BOUND}; {before}x before)"
