"""Shared fixtures: where the build is, where the test data is, the C++ cross-checks."""
import os
import pathlib
import signal
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MESHDOCK_BUILD_DIR", ROOT / "build"))
DATA = pathlib.Path(os.environ.get("MESHDOCK_TEST_DATA", ROOT / "tests" / "data"))

if str(BUILD / "python") not in sys.path:
    sys.path.insert(0, str(BUILD / "python"))

# A shell starts a background job (`scripts/test &`, nohup) with SIGINT ignored, and an ignored
# signal stays ignored across exec: the Python children the Ctrl-C tests start would then get no
# KeyboardInterrupt at all. A handled signal is reset to its default at exec, so the children
# start as under a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Tests that failed and then passed on their rerun (ctest's pytest entry runs with --reruns 1
# where pytest-rerunfailures is installed): named at the end with their first failure, so a
# flaky test is seen and fixed, not hidden by the pass.
_RERUNS = []


def pytest_runtest_logreport(report):
    if report.outcome == "rerun":
        _RERUNS.append(report)


def pytest_terminal_summary(terminalreporter):
    if not _RERUNS:
        return
    tr = terminalreporter
    tr.section(f"FLAKY: {len(_RERUNS)} failed, then were run again (see the summary for how "
               "the rerun went)", sep="=", yellow=True, bold=True)
    for r in _RERUNS:
        tr.write_line(f"--- {r.nodeid} ({r.when}), its first failure:")
        tr.write_line(r.longreprtext[-3000:])


def read_quietly(path, **kw):
    """meshdock.read without its MeshWarning (the notes stay in .notes): for tests that compare
    arrays, where the notes are asserted elsewhere or not at all."""
    import warnings

    import meshdock
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", meshdock.MeshWarning)
        return meshdock.read(path, **kw)


def assert_same_as_meshio(m, ref, dtypes=True, extra_blocks=0):
    """A meshdock.Mesh against meshio's reading of the same file: points, cell blocks (types in
    order, connectivity), point_data and cell_data (names, shapes, values; dtypes unless
    `dtypes` is False, for a format whose data meshdock reads as float64 where meshio keeps
    float32). meshdock's last `extra_blocks` blocks are cells meshio does not read (a Fluent
    mesh's cells built from their faces), checked by the caller."""
    import numpy as np
    np.testing.assert_array_equal(m.points, ref.points)
    assert [b.type for b in m.cells][:len(m.cells) - extra_blocks] == [b.type for b in ref.cells]
    for ours, theirs in zip(m.cells, ref.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)
    assert sorted(m.point_data) == sorted(ref.point_data)
    for name, v in ref.point_data.items():
        assert m.point_data[name].shape == v.shape, name
        if dtypes:
            assert m.point_data[name].dtype == v.dtype, name
        np.testing.assert_array_equal(m.point_data[name], v)
    assert sorted(m.cell_data) == sorted(ref.cell_data)
    for name, blocks in ref.cell_data.items():
        assert len(m.cell_data[name]) == len(blocks), name
        for ours, theirs in zip(m.cell_data[name], blocks):
            theirs = np.asarray(theirs)
            assert ours.shape == theirs.shape, name
            if dtypes:
                assert ours.dtype == theirs.dtype, name
            np.testing.assert_array_equal(ours, theirs)


@pytest.fixture(scope="session")
def build_dir() -> pathlib.Path:
    return BUILD


@pytest.fixture(scope="session")
def data_dir() -> pathlib.Path:
    return DATA


@pytest.fixture(scope="session")
def core():
    """The C++ validators and device probe (libmeshdock's meshdock_debug_* through ctypes); a
    missing library is a build failure, not a skip."""
    from meshdock import _capi, _debug
    _capi.api()
    return _debug


@pytest.fixture(scope="session")
def progress_msh(tmp_path_factory) -> pathlib.Path:
    """A 131 MiB ascii MSH 4.1 file (1.5M nodes, 1.5M tetrahedra) whose read is mostly the
    serial parse of its coordinates: long enough for several of the daemon's 50 ms progress
    samples even on a fast machine. Written once per session (~4 s)."""
    path = tmp_path_factory.mktemp("big") / "big.msh"
    n, chunk = 1_500_000, 100_000
    with open(path, "w") as f:
        f.write(f"$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 {n} 1 {n}\n3 1 0 {n}\n")
        for s in range(1, n + 1, chunk):
            f.write("".join(f"{i}\n" for i in range(s, min(s + chunk, n + 1))))
        for s in range(1, n + 1, chunk):
            f.write("".join(f"{i * 1.234567e-3:.9e} {i * 2.345678e-3:.9e} {i * 3.456789e-3:.9e}\n"
                            for i in range(s, min(s + chunk, n + 1))))
        m = n - 3
        f.write(f"$EndNodes\n$Elements\n1 {m} 1 {m}\n3 1 4 {m}\n")
        for s in range(1, m + 1, chunk):
            f.write("".join(f"{i} {i} {i + 1} {i + 2} {i + 3}\n"
                            for i in range(s, min(s + chunk, m + 1))))
        f.write("$EndElements\n")
    return path


@pytest.fixture(autouse=True)
def _keep_the_locale():
    """VTK's legacy reader (vtkDataReader::Update) sets the process's C locale and leaves it, so
    every later open() or read_text() in the same pytest process decoded ASCII only (README's
    UTF-8 failed test_readme after test_vtk_legacy). Each test gets back the locale it had."""
    import locale
    saved = locale.setlocale(locale.LC_ALL)
    yield
    if locale.setlocale(locale.LC_ALL) != saved:
        locale.setlocale(locale.LC_ALL, saved)
