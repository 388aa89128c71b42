"""Streaming a field: a producer publishes point_data/T frame after frame while a consumer in
another process reads every frame it gets. A publish copies into a ring slot's buffer only the
arrays that buffer does not hold already (config key publish_copy), so every frame a consumer
sees must still be whole: the points and cells of the load, the T of that publish, including
the frames whose ring slot got a fresh buffer because the consumer held its frame too long.
The metrics count what was copied and what was kept."""
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import conftest
import meshdock
from daemon_util import Daemon, shm_names
from test_metrics import parse, value

CONSUMER = """
    import json, sys, time
    import numpy as np
    import meshdock
    slot = meshdock.attach("box", prefix=sys.argv[1], timeout=10)
    print("attached", flush=True)
    last = int(sys.argv[2])
    while True:
        f = slot.wait(timeout=10)
        assert f is not None, "no frame within 10 s"
        a = dict(f.arrays())
        t = np.asarray(a["point_data/T"]) if "point_data/T" in a else None
        print(json.dumps({
            "frame": f.number,
            "points": float(np.asarray(a["points"]).sum()),
            "cells": [int(np.asarray(v).sum()) for k, v in sorted(a.items())
                      if k.startswith("cells/")],
            "t": None if t is None else [float(t.min()), float(t.max())]}), flush=True)
        if f.number % 4 == 0:
            time.sleep(0.3)  # held past lease_wait: the publish into its ring slot goes elsewhere
        number = f.number
        f.release()
        if number >= last:
            break
"""


def stream(tmp_path, config, publishes=12):
    """Loads box, streams `publishes` values of T to a consumer process; returns (what the
    consumer saw, the metrics, the host read)."""
    d = Daemon(tmp_path, ("box.v41b.msh",), config=config)
    try:
        d.load("box.v41b.msh", "box")
        host = meshdock.read(str(d.root / "box.v41b.msh"))
        env = dict(os.environ, PYTHONPATH=str(conftest.BUILD / "python"))
        p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(CONSUMER), d.prefix,
                              str(publishes + 1)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert p.stdout.readline().strip() == "attached", p.stderr.read()
        c = meshdock.Client(d.addr)
        published = {}
        for k in range(1, publishes + 1):
            published[c.publish("box", "point_data/T", np.full(len(host.points), float(k)))] = k
            time.sleep(0.02)  # a simulation step: the consumer sees most frames, not just the last
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        metrics = parse(c.metrics())
        c.close()
    finally:
        assert d.stop() == 0, d.stderr
    assert shm_names(d.prefix) == []
    seen = [json.loads(line) for line in out.splitlines()]
    return seen, published, metrics, host


def check_frames(seen, published, host):
    points = float(host.points.sum())
    cells = [int(b.data.sum()) for b in host.cells]
    assert seen and seen[-1]["frame"] == max(published)
    for s in seen:
        assert s["points"] == pytest.approx(points, rel=1e-12), s
        assert s["cells"] == cells, s
        if s["frame"] > 1:
            k = published[s["frame"]]
            assert s["t"] == [k, k], s


def test_a_field_stream_copies_the_field_and_every_frame_is_whole(tmp_path):
    # device cpu: "auto" is "changed" on the host backend (on CUDA it is "all")
    seen, published, metrics, host = stream(tmp_path, {"publish_copy": "auto", "device": "cpu"})
    check_frames(seen, published, host)
    copied = value(metrics, "meshdock_publish_bytes_total", mesh="box", how="copied")
    kept = value(metrics, "meshdock_publish_bytes_total", mesh="box", how="kept")
    per_frame = (copied + kept) / (len(published) + 1)
    # Thirteen frames into three ring slots: each slot is filled whole once, and again when the
    # consumer held its frame past lease_wait (frames 4, 8, 12 at most); every other publish
    # keeps the mesh and copies T (and block_bases), a few percent of the frame.
    assert kept >= 5 * per_frame, (copied, kept)


def test_publish_copy_all_copies_every_array_every_time(tmp_path):
    seen, published, metrics, host = stream(tmp_path, {"publish_copy": "all", "device": "cpu"},
                                            publishes=6)
    check_frames(seen, published, host)
    assert value(metrics, "meshdock_publish_bytes_total", mesh="box", how="kept") == 0
    assert value(metrics, "meshdock_publish_bytes_total", mesh="box", how="copied") > 0


def test_an_unknown_publish_copy_stops_the_start_naming_the_key(tmp_path):
    with pytest.raises(RuntimeError, match=r"key 'publish_copy' must be \"auto\", \"changed\" "
                                           r"or \"all\", not \"sometimes\""):
        Daemon(tmp_path, config={"publish_copy": "sometimes"})


def test_a_reload_says_which_published_fields_it_replaced_or_dropped(tmp_path):
    # A reload serves the file's arrays; the fields streamed into the old frames were dropped
    # without a word (a consumer found point_data/T gone and no one had said so).
    d = Daemon(tmp_path, ("data.v41.msh",))
    try:
        c = meshdock.Client(d.addr)
        info = c.load(d.root / "data.v41.msh", name="d")
        assert not any("published" in n for n in info.notes)
        n = info.num_points
        f_t = c.publish("d", "point_data/T", np.arange(n, dtype=np.float64))
        f_temp = c.publish("d", "point_data/temperature", np.zeros(n))
        info = c.reload("d")
        notes = [x for x in info.notes if "published" in x]
        assert notes == [
            f"point_data/T: the value published at frame {f_t} is gone: the file has no such "
            "array (a reload serves the file's arrays; publish it again)",
            f"point_data/temperature: the value published at frame {f_temp} is replaced by the "
            "file's (a reload serves the file's arrays)"], info.notes
        names = [a.name for a in c.describe("d").arrays]
        assert "point_data/T" not in names and "point_data/temperature" in names
        # The next reload has nothing published to speak of.
        assert not any("published" in x for x in c.reload("d").notes)
        c.close()
    finally:
        assert d.stop() == 0


def test_a_cell_data_block_keeps_the_fields_dtype_and_row_shape(tmp_path):
    # A trial published float64 zeros into block 0 of gmsh:physical (int64 in every block), and
    # (52, 2) rows into block 1: both were accepted, and the mesh's Export then failed ("differs
    # in dtype or shape between block 0 and block 1").
    d = Daemon(tmp_path, ("box.v41b.msh",), extra=["--export-root", str(tmp_path)])
    try:
        c = meshdock.Client(d.addr)
        c.load(d.root / "box.v41b.msh", name="b")
        blocks = {a.name: list(a.shape) for a in c.describe("b").arrays}
        n0 = blocks["cell_data/gmsh:physical/0"][0]
        n1 = blocks["cell_data/gmsh:physical/1"][0]
        with pytest.raises(meshdock.DaemonError) as e:
            c.publish("b", "cell_data/gmsh:physical", np.zeros(n0), block=0)
        assert e.value.code == "INVALID_ARGUMENT"
        assert ("cell_data/gmsh:physical: block 0 is float64 rows of shape (), and block 1 of "
                "the field is int64 rows of shape ()") in e.value.message
        with pytest.raises(meshdock.DaemonError, match="rows of shape \\(2,\\)"):
            c.publish("b", "cell_data/gmsh:physical", np.zeros((n1, 2), np.int64), block=1)
        frame = c.publish("b", "cell_data/gmsh:physical", np.full(n0, 7, np.int64), block=0)
        assert frame == 2
        assert c.export("b", tmp_path / "b.vtu") > 0  # the mesh stays exportable
        c.close()
    finally:
        assert d.stop() == 0, d.stderr


def test_a_cell_data_field_is_published_whole_on_a_mesh_of_several_blocks(tmp_path):
    # A new cell_data field could not be made on a mesh of several blocks ("needs a one-block
    # mesh"; the field could exist only from the file), and an existing one changed a block a
    # frame, so consumers saw frames with some blocks new and some old.
    d = Daemon(tmp_path, ("box.v41b.msh",))
    try:
        c = meshdock.Client(d.addr)
        c.load(d.root / "box.v41b.msh", name="b")
        sizes = [len(b.data) for b in meshdock.read(d.root / "box.v41b.msh").cells]
        assert len(sizes) > 2
        total = sum(sizes)
        field = np.arange(total * 2, dtype=np.float32).reshape(total, 2)
        with meshdock.attach("b", prefix=d.prefix) as slot:
            slot.wait(5).release()
            frame = c.publish("b", "cell_data/flux", field)
            with slot.wait(5) as f:
                assert f.number == frame
                got = [np.asarray(a) for a in f.cell_data["flux"]]
            assert [len(a) for a in got] == sizes
            np.testing.assert_array_equal(np.concatenate(got), field)
            # An existing field, every block in one frame (gmsh:physical: int64 in the file).
            phys = np.arange(total, dtype=np.int64)
            frame = c.publish("b", "cell_data/gmsh:physical", phys, via="shm")
            with slot.wait(5) as f:
                assert f.number == frame
                np.testing.assert_array_equal(
                    np.concatenate([np.asarray(a) for a in f.cell_data["gmsh:physical"]]), phys)
        # Neither a block's rows nor the whole field's: the message says both forms.
        with pytest.raises(meshdock.DaemonError) as e:
            c.publish("b", "cell_data/other", np.zeros(total - 1))
        assert (f"cell_data/other: {total - 1} rows for the {sizes[0]} cells of block 0 (or the "
                f"{total} cells of all {len(sizes)} blocks, for the whole field)"
                ) in e.value.message
        # A block's rows for a field that does not exist: it is made whole.
        with pytest.raises(meshdock.DaemonError) as e:
            c.publish("b", "cell_data/other", np.zeros(sizes[1]), block=1)
        assert (f"cell_data/other does not exist; on a mesh of {len(sizes)} blocks a new "
                f"cell_data field is published whole: {total} rows") in e.value.message
        c.close()
    finally:
        assert d.stop() == 0, d.stderr


def test_every_refused_publish_names_the_slot_and_the_field(tmp_path):
    # A trial producer streamed into two slots; its refusals named the field only ("point_data/T:
    # 301 rows for 300 points", also through meshdockctl), a bad block or num_slots came as
    # protobuf's "Value out of range: -1", and a block given to point_data or a tensor was
    # ignored without a word (the frame went out as if it were 0).
    d = Daemon(tmp_path, ("box.v41b.msh",), config={"max_decoded_size": 1 << 20})
    try:
        c = meshdock.Client(d.addr)
        n = c.load(d.root / "box.v41b.msh", name="solver").num_points
        c.publish_tensor("cam", np.zeros((2, 2)))
        daemon_refusals = [
            (lambda: c.publish("solver", "point_data/T", np.zeros(n + 1)),
             "INVALID_ARGUMENT", f"slot 'solver': point_data/T: {n + 1} rows for {n} points"),
            (lambda: c.publish("solver", "point_data/T", np.zeros((n + 1, 300)), via="shm"),
             "INVALID_ARGUMENT", f"slot 'solver': point_data/T: {n + 1} rows for {n} points"),
            (lambda: c.publish("solver", "point_data/T", np.zeros((n, 1000))),
             "RESOURCE_EXHAUSTED", "slot 'solver': point_data/T: 2400000 bytes are over"),
            (lambda: c.publish("solver", "point_data/T", np.zeros((n, 1, 1, 1, 1))),
             "INVALID_ARGUMENT",
             f"slot 'solver': point_data/T: shape ({n}, 1, 1, 1, 1) has 5 dimensions; a "
             "publish carries 1 to 4"),
            (lambda: c.publish("solver", "cell_data/gmsh:physical", np.zeros(3, np.int64)),
             "INVALID_ARGUMENT", "slot 'solver': cell_data/gmsh:physical: 3 rows for the"),
            (lambda: c.publish("solver", "point_data/T", np.zeros(n), block=3),
             "INVALID_ARGUMENT", "slot 'solver': point_data/T: block 3 is for a cell_data"),
            (lambda: c.publish("cam", "tensor", np.zeros(4), block=1),
             "INVALID_ARGUMENT", "slot 'cam': tensor: block 1 is for a cell_data field"),
            # already named: said once
            (lambda: c.publish("nosuch", "point_data/T", np.zeros(n)),
             "NOT_FOUND", "no mesh named 'nosuch'"),
        ]
        for call, code, message in daemon_refusals:
            with pytest.raises(meshdock.DaemonError) as e:
                call()
            assert e.value.code == code and message in e.value.message, e.value
            assert e.value.message.count("'nosuch'") <= 1
        np.save(tmp_path / "t.npy", np.zeros(n - 1))
        r = d.ctl("publish", "solver", "point_data/T", str(tmp_path / "t.npy"), check=False)
        assert r.returncode == 5 and f"slot 'solver': point_data/T: {n - 1} rows" in r.stderr
        client_refusals = [
            (lambda: c.publish("solver", "point_data/T", np.zeros(n, np.complex64)), TypeError,
             "slot 'solver': point_data/T: dtype complex64 cannot be published"),
            (lambda: c.publish("solver", "point_data/T", np.float64(1)), ValueError,
             "slot 'solver': point_data/T: a 0-d array"),
            (lambda: c.publish("solver", "point_data/T", [[1.0, 2.0], [3.0]]), ValueError,
             "slot 'solver': point_data/T: not an array of 1 to 4 dimensions (setting an array "
             "element with a sequence"),
            (lambda: c.publish("solver", "cell_data/gmsh:physical", np.zeros(52), block=-1),
             ValueError, "slot 'solver': cell_data/gmsh:physical: block must be an integer "
                         "from 0 to 4294967295, not -1"),
            (lambda: c.publish_tensor("cam", np.zeros(4), num_slots=-1), ValueError,
             "slot 'cam': tensor: num_slots must be an integer from 0 to 4294967295, not -1"),
        ]
        for call, kind, message in client_refusals:
            with pytest.raises(kind) as e:
                call()
            assert message in str(e.value), e.value
        # None of it made a frame: the load's and the tensor's first are all there is.
        assert [(s.name, s.frames) for s in sorted(c.stats().slots, key=lambda s: s.name)] == \
            [("cam", 1), ("solver", 1)]
        c.close()
    finally:
        assert d.stop() == 0, d.stderr


KILLED_PRODUCER = """
    import sys, time
    import grpc
    from meshdock.v1 import meshdock_pb2 as pb, meshdock_pb2_grpc as pbg
    def chunks():
        yield pb.PublishChunk(name="box", field="tensor", shape=[6 << 20],
                              dtype=pb.DType(code=1, bits=8, lanes=1), data=bytes(1 << 20))
        print("sent", flush=True)
        time.sleep(600)  # SIGKILLed here, 1 MiB of 6 sent
    pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1])).Publish(chunks())
"""


def test_a_producer_killed_mid_publish_is_logged_as_gone_not_as_a_bad_request(tmp_path):
    # A trial SIGKILLed a producer during a streamed publish: the daemon logged (and counted)
    # "Publish from pid N: INVALID_ARGUMENT: tensor: shape and dtype need ... bytes, data has
    # ...", the dead client's invalid argument, for what was a client gone.
    d = Daemon(tmp_path, (), config={"max_decoded_size": 8 << 20})
    c = meshdock.Client(d.addr)
    env = dict(os.environ, PYTHONPATH=str(conftest.BUILD / "python"))
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(KILLED_PRODUCER), d.addr],
                         stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "sent"
        # The daemon holds the stream's 6 MiB once it has read the header: a 4 MiB publish is
        # refused while it does (test_publish_shm), so that is what is waited for.
        deadline = time.monotonic() + 30
        while True:
            try:
                c.publish_tensor("probe", np.ones(4 << 20, np.uint8), via="shm")
                c.unload("probe")
            except meshdock.DaemonError as e:
                if "publishes under way hold 6 MiB" in e.message:
                    break
                raise
            assert time.monotonic() < deadline, "the daemon never read the stream's header"
        p.kill()
        p.wait(10)
        line = ""
        while not line:
            line = next((x for x in list(d.log) if f"Publish from pid {p.pid} " in x), "")
            assert time.monotonic() < deadline, d.log
            time.sleep(0.01)
        assert ": CANCELLED: the client went away during the publish" in line, line
        assert "nothing was published (slot 'box': tensor: shape and dtype need 6291456 bytes, " \
               "data has 1048576)" in line, line
        # Its reservation went with it, and nothing of it was published.
        assert c.publish_tensor("probe", np.ones(4 << 20, np.uint8), via="shm") == 1
        assert "box" not in [s.name for s in c.ls()]
        c.close()
    finally:
        p.kill()
        p.wait()
        assert d.stop() == 0, d.stderr


def reload_held_at(tmp_path, moment, during):
    """Loads box under a daemon whose second load (the reload) is held 1.5 s at `moment`
    ($MESHDOCK_FAILPOINT), publishes T once, then reloads; `during(client, n)` runs in this
    thread once the reload is held there (at copy: once it said COPY; mid_write: once a
    catalog page is half written, the slot taken from the old entry).
    Returns (the reload's notes, what `during` returned, the newest frame's T or None)."""
    import threading
    d = Daemon(tmp_path, ("box.v41b.msh",), env={"MESHDOCK_FAILPOINT": f"{moment}:1500:1"})
    try:
        c = meshdock.Client(d.addr)
        n = c.load(d.root / "box.v41b.msh", name="box").num_points
        assert c.publish("box", "point_data/T", np.full(n, 1.0)) == 2
        copying, result = threading.Event(), {}

        def progress(p):
            if p.phase == "COPY":
                copying.set()

        def reload():
            try:
                result["info"] = c.reload("box", progress=progress)
            finally:
                copying.set()

        t = threading.Thread(target=reload)
        t.start()
        assert copying.wait(30)
        if moment == "mid_write":  # held once a catalog page is half written (its seq odd)
            deadline = time.monotonic() + 30
            while not any(p.seq % 2 for p in d.catalog("box").pages):
                assert time.monotonic() < deadline and t.is_alive(), "never held mid-write"
                time.sleep(0.001)
        got = during(c, n)
        t.join(30)
        with meshdock.attach("box", prefix=d.prefix, timeout=5) as slot, slot.latest(5) as f:
            t_now = f.point_data.get("T")
            t_now = None if t_now is None else np.asarray(t_now).tolist()
        c.close()
        return result["info"].notes, got, t_now
    finally:
        assert d.stop() == 0, d.stderr


def test_a_publish_while_a_reload_swaps_the_slot_waits_and_goes_into_the_new_mesh(tmp_path):
    # A trial published T in a loop while the mesh was reloaded: the publishes that came while
    # the reload was copying into the slot were refused "FAILED_PRECONDITION: 'box' has no
    # slot" (the reload had taken the slot for its new mesh, the old entry still served the
    # name). Now they wait for the reload and publish into the reloaded mesh.
    def publish(c, n):
        return c.publish("box", "point_data/T", np.full(n, 2.0))  # held mid-write: 1.5 s

    notes, frame, t_now = reload_held_at(tmp_path, "mid_write", publish)
    assert frame == 4  # load 1, publish 2, reload 3, this 4
    assert t_now is not None and set(t_now) == {2.0}


def test_a_reload_names_a_value_published_while_it_read(tmp_path):
    # The reload took its notes on published fields before its copy phase: a publish then (a
    # streaming producer goes on while a reload reads) got a frame, was dropped by the reload's
    # frame, and the notes named the frame before it ("published at frame 2").
    def publish(c, n):
        return c.publish("box", "point_data/T", np.full(n, 2.0))  # the reload is held at copy

    notes, frame, t_now = reload_held_at(tmp_path, "copy", publish)
    assert frame == 3
    assert [x for x in notes if "published" in x] == [
        "point_data/T: the value published at frame 3 is gone: the file has no such array (a "
        "reload serves the file's arrays; publish it again)"], notes
    assert t_now is None


def test_a_field_with_a_zero_extent_leaves_the_frame_readable(tmp_path):
    # A trial published an (N, 0) field (a vector field of no components): the daemon took it,
    # wrote strides (0, 1) into the manifest, and every consumer refused the whole frame, and
    # each one after it: "manifest array 'point_data/E': strides are not C-contiguous
    # (dimension 0 has stride 0, expected 1)". The validators count an extent of 0 as 1.
    d = Daemon(tmp_path, ("box.v41b.msh",))
    try:
        c = meshdock.Client(d.addr)
        n = c.load(d.root / "box.v41b.msh", name="box").num_points
        c.publish("box", "point_data/T", np.arange(n, dtype=np.float64))
        for shape in ((n, 0), (n, 0, 3), (n, 2, 0)):
            frame = c.publish("box", "point_data/E", np.zeros(shape, np.float32))
            with meshdock.attach("box", prefix=d.prefix, timeout=5) as slot, \
                    slot.latest(5) as f:
                assert f.number == frame
                assert np.asarray(f.point_data["E"]).shape == shape
                np.testing.assert_array_equal(np.asarray(f.point_data["T"]), np.arange(n))
            manifest, _ = d.newest("box")  # the pure-Python decoder agrees
            (e,) = [a for a in manifest["arrays"] if a["name"] == "point_data/E"]
            assert tuple(e["shape"]) == shape
        c.close()
    finally:
        assert d.stop() == 0, d.stderr
