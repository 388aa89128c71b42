"""PERMAS: meshdock's reader against meshio 5.0's ("permas") on the files meshio writes
(tests/data/permas, tools/make_permas.py), the higher-order types whose node order meshio's writer
changes and its reader does not change back, meshdock's writer read back by both, the sets of
PERMAS' own keyword forms (which meshio drops) through the daemon, and errors naming file and
line. meshio is asked live; bracket.dato and quadratic.dato are checked value by value in
tests/unit/test_permas.cpp."""
import gzip
import shutil

import numpy as np
import pytest

import conftest
import meshdock

meshio = pytest.importorskip("meshio")

_read = conftest.read_quietly

# PERMAS node k is VTK node ORDER[type][k] (meshio's writer's permutations).
ORDER = {"tetra10": [0, 4, 1, 5, 2, 6, 7, 8, 9, 3], "triangle6": [0, 3, 1, 4, 2, 5],
         "quad9": [0, 4, 1, 7, 8, 5, 3, 6, 2]}


def test_reads_what_meshio_reads(data_dir):
    path = data_dir / "permas" / "box.post"
    conftest.assert_same_as_meshio(_read(path), meshio.read(path), dtypes=True)


def test_gzipped_and_meshio_format_name(data_dir, tmp_path):
    ref = meshio.read(data_dir / "permas" / "box.post")
    conftest.assert_same_as_meshio(_read(data_dir / "permas" / "box.post.gz"), ref)
    path = tmp_path / "grid.txt"
    shutil.copy(data_dir / "permas" / "box.post", path)
    conftest.assert_same_as_meshio(_read(path, file_format="permas"), ref)


def test_higher_order_cells_come_back_in_vtk_order(data_dir, tmp_path):
    """meshio's reader keeps TET10, TRIMS6 and QUAMS9 rows as its writer ordered them: its own
    round trip moves the mid-side nodes. meshdock takes them back: what it reads is what meshio
    was given. (meshio 5.0 cannot read the file's PENTA15 block: its Mesh has no wedge15; it
    reads the file without it.)"""
    m = _read(data_dir / "permas" / "quadratic.dato")
    text = (data_dir / "permas" / "quadratic.dato").read_text()
    at = text.index("!\n$ELEMENT TYPE=PENTA15")
    (tmp_path / "q.dato").write_text(text[:at] + text[text.index("$END STRUCTURE"):])
    ref = meshio.read(tmp_path / "q.dato")
    np.testing.assert_array_equal(m.points, ref.points)
    assert [b.type for b in m.cells] == [b.type for b in ref.cells] + ["wedge15"]
    for ours, theirs in zip(m.cells, ref.cells):
        order = ORDER.get(ours.type)
        if order is None:
            np.testing.assert_array_equal(ours.data, theirs.data)
        else:
            back = np.empty_like(theirs.data)
            back[:, order] = theirs.data
            np.testing.assert_array_equal(ours.data, back)
    # A random mesh of those types: meshio writes it, meshdock reads back what it was given.
    rng = np.random.default_rng(1)
    src = meshio.Mesh(rng.standard_normal((30, 3)),
                      [(t, rng.integers(0, 30, (5, len(o)))) for t, o in ORDER.items()])
    meshio.write(tmp_path / "r.post", src, file_format="permas")
    back = _read(tmp_path / "r.post")
    for ours, theirs in zip(back.cells, src.cells):
        np.testing.assert_array_equal(ours.data, theirs.data)


@pytest.mark.parametrize("out", ["o.post", "o.dato", "o.post.gz"])
def test_meshdock_writes_what_both_read_back(data_dir, tmp_path, out):
    src = _read(data_dir / "permas" / "box.post")
    path = tmp_path / out
    assert meshdock.write(path, src) == []
    if out.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
        plain = tmp_path / "plain.post"
        plain.write_bytes(gzip.decompress(path.read_bytes()))
        theirs = meshio.read(plain)
    else:
        theirs = meshio.read(path)
    ours = _read(path)
    conftest.assert_same_as_meshio(ours, theirs, dtypes=True)
    np.testing.assert_array_equal(ours.points, src.points)
    for a, b in zip(ours.cells, src.cells):
        assert a.type == b.type
        np.testing.assert_array_equal(a.data, b.data)


def test_meshdock_writes_as_meshio_writes(data_dir, tmp_path):
    ref = meshio.read(data_dir / "permas" / "box.post")
    meshio.write(tmp_path / "a.post", ref, file_format="permas")
    meshdock.write(tmp_path / "b.post", _read(data_dir / "permas" / "box.post"))

    def rows(p):  # the text, numbers compared as numbers, comments left out
        out = []
        for line in open(p):
            if line.startswith("!"):
                continue
            words = line.split()
            try:
                out.append([float(w) for w in words])
            except ValueError:
                out.append(words)
        return out
    assert rows(tmp_path / "a.post") == rows(tmp_path / "b.post")


def test_sets_reach_a_consumer_through_the_daemon(data_dir, tmp_path):
    """bracket.dato's $NSET / $ESET and NSET = / ESET = parameters (meshio drops them) are
    regions a consumer of the daemon sees; the skipped keywords are notes."""
    from daemon_util import Daemon

    d = Daemon(tmp_path)
    try:
        shutil.copy(data_dir / "permas" / "bracket.dato", d.root / "bracket.dato")
        client = meshdock.Client(d.addr)
        client.load(d.root / "bracket.dato", name="bracket")
        slot = meshdock.attach("bracket", prefix=d.prefix)
        frame = slot.wait(timeout=5)
        ref = _read(data_dir / "permas" / "bracket.dato")
        np.testing.assert_array_equal(np.from_dlpack(frame.points), ref.points)
        regions = {r.name: r for r in frame.regions}
        assert set(regions) == {"ALL_NODES", "SOLID", "TOP_SOLID", "BOTTOM", "FIXED", "CORNER"}
        assert regions["FIXED"].kind == "point"
        np.testing.assert_array_equal(np.from_dlpack(regions["FIXED"].entries), [0, 3, 6, 9])
        assert regions["SOLID"].kind == "cell"
        np.testing.assert_array_equal(np.from_dlpack(regions["SOLID"].entries), [0, 1, 2])
        assert any("$MATERIAL is not read" in n for n in frame.notes), frame.notes
        del frame
        slot.close()
        client.close()
    finally:
        assert d.stop() == 0, d.stderr


def test_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.dato"
    bad.write_text("$COOR\n1 0 0 0\n2 1 0 0\n$ELEMENT TYPE = PLOTL2\n1 1 3\n")
    with pytest.raises(meshdock.ReadError, match=r"bad\.dato:5: node 3 of an element of "
                                                  r"\$ELEMENT TYPE = PLOTL2 is not one of"):
        meshdock.read(bad)
    bad.write_text("$COOR\n1 0 0 0\n$ELEMENT TYPE = CUBE8\n")
    with pytest.raises(meshdock.ReadError, match=r"bad\.dato:3: element type 'CUBE8' is not"):
        meshdock.read(bad)
    gz = tmp_path / "cut.post.gz"
    gz.write_bytes(gzip.compress(b"$COOR\n1 0 0 0\n" * 1000)[:40])
    with pytest.raises(meshdock.ReadError, match=r"cut\.post\.gz: the gzip data is truncated"):
        meshdock.read(gz)


def test_writer_refuses_what_permas_cannot_hold(tmp_path):
    m = meshio.Mesh(np.zeros((3, 3)), [("polygon", np.array([[0, 1, 2]]))])
    with pytest.raises(meshdock.WriteError, match=r"cells\[0\] \(polygon\) cannot be written "
                                                   r"to PERMAS"):
        meshdock.write(tmp_path / "x.post", meshdock.from_meshio(m))
