"""Attach across real processes: a meshdockd process publishes, consumer processes (Python
with meshdock.attach, and the C++ example on libmeshdock) adopt the slot. Checks values, wake-ups,
leases and what happens when either side dies."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import conftest
import meshdock
from daemon_util import BIN, Daemon, shm_names, wait_for

FILES = ("box.v41.msh", "sphere.meshio-zlib.vtu", "plate.v22.msh")


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, FILES)
    d.client = meshdock.Client(d.addr)
    yield d
    d.client.close()
    assert d.stop() == 0, d.stderr
    assert shm_names(d.prefix) == []


def consumer(prefix, name, body, *args):
    """A Python consumer process: `body` runs with `slot` attached; returns the Popen."""
    code = textwrap.dedent(f"""
        import sys, json, time
        import numpy as np
        import meshdock
        slot = meshdock.attach({name!r}, prefix={prefix!r}, timeout=10.0)
    """) + textwrap.dedent(body)
    env = dict(os.environ, PYTHONPATH=str(conftest.BUILD / "python"))
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_a_consumer_process_sees_exactly_the_loaded_arrays(daemon, data_dir):
    daemon.client.load(daemon.root / "sphere.meshio-zlib.vtu", name="s")
    p = consumer(daemon.prefix, "s", """
        f = slot.wait(timeout=10)
        out = {n: np.from_dlpack(a).tolist() for n, a in f.arrays()}
        print(json.dumps({"frame": f.number, "types": f.cell_types, "arrays": out}))
    """)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    got = json.loads(out)
    m = meshdock.read(data_dir / "meshes" / "sphere.meshio-zlib.vtu")
    expect = {n: np.from_dlpack(a) for n, a in meshdock.to_dlpack(m).arrays()}
    assert got["frame"] == 1 and got["types"] == [b.type for b in m.cells]
    assert set(got["arrays"]) == set(expect)
    for n, a in expect.items():
        np.testing.assert_array_equal(np.array(got["arrays"][n], dtype=a.dtype).reshape(a.shape), a,
                                      err_msg=n)


def test_the_cpp_consumer_sees_the_same(daemon, data_dir):
    daemon.client.load(daemon.root / "box.v41.msh", name="b", float32=True)
    r = subprocess.run([str(BIN / "cpp_consumer"), "b", "--prefix", daemon.prefix],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    with pytest.warns(meshdock.PayloadWarning):
        p = meshdock.to_dlpack(meshdock.read(data_dir / "meshes" / "box.v41.msh"), float32=True)
    for n, a in p.arrays():
        a = np.from_dlpack(a)
        assert got["arrays"][n]["shape"] == list(a.shape), n
        assert got["arrays"][n]["sum"] == pytest.approx(float(a.astype(np.float64).sum())), n
    assert got["arrays"]["points"]["dtype"] == [2, 32] and got["dlpack_points_ndim"] == 2


def test_the_cpp_consumer_reads_a_standalone_tensor(daemon):
    """A publish_tensor slot has no points: the example said "frame 1 has no array 'points'"
    and exited 1."""
    img = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    daemon.client.publish_tensor("img", img)
    r = subprocess.run([str(BIN / "cpp_consumer"), "img", "--prefix", daemon.prefix],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["arrays"]["tensor"]["shape"] == [4, 5, 3] and got["dlpack_tensor_ndim"] == 3
    assert got["arrays"]["tensor"]["sum"] == pytest.approx(float(img.sum()))


def test_a_cpp_consumer_attach_timeout_says_what_is_published(daemon, tmp_path):
    """The C and C++ SDKs' AttachTimeout said only "is meshdockd running with prefix P and the
    mesh loaded?"; Python's listed the slots under the prefix. libmeshdock lists them now."""
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    r = subprocess.run([str(BIN / "cpp_consumer"), "bx", "--prefix", daemon.prefix,
                        "--timeout", "0.2"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r
    assert f"mesh loaded?); published under prefix '{daemon.prefix}': b\n" in r.stderr, r.stderr
    other = "zq" + daemon.prefix  # nothing under it
    r = subprocess.run([str(BIN / "cpp_consumer"), "b", "--prefix", other, "--timeout", "0.2"],
                       capture_output=True, text=True, timeout=30)
    assert f"; nothing is published under prefix '{other}'" in r.stderr, r.stderr


def test_the_cpp_consumer_and_c_consumer_examples_take_help_and_refuse_unknown_options():
    """--help was a slot name (5 s of waiting for slot '--help'), and cpp_consumer dropped an
    unknown option (--frame 3 ran one frame with no word)."""
    for exe in ("cpp_consumer", "c_consumer"):
        r = subprocess.run([str(BIN / exe), "--help"], capture_output=True, text=True, timeout=4.5)
        assert r.returncode == 0 and r.stdout.startswith("usage: "), (exe, r)
    t0 = time.monotonic()
    r = subprocess.run([str(BIN / "cpp_consumer"), "b", "--frame", "3"], capture_output=True,
                       text=True, timeout=4.5)
    assert r.returncode == 2 and "unknown option '--frame'" in r.stderr, r
    r = subprocess.run([str(BIN / "cpp_consumer"), "b", "--prefix"], capture_output=True,
                       text=True, timeout=4.5)
    assert r.returncode == 2 and "no value after '--prefix'" in r.stderr, r
    r = subprocess.run([str(BIN / "c_consumer"), "a", "b", "1", "extra"], capture_output=True,
                       text=True, timeout=4.5)
    assert r.returncode == 2 and r.stderr.startswith("usage: "), r
    # Under the 5 s a slot wait took (4.5 s: slack for process starts on a loaded CI box).
    assert time.monotonic() - t0 < 4.5


def test_a_republish_wakes_a_waiting_consumer(daemon):
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    p = consumer(daemon.prefix, "b", """
        slot.wait(timeout=10)               # frame 1
        print("waiting", flush=True)
        f = slot.wait(timeout=10)           # sleeps on the futex until frame 2
        print(json.dumps({"frame": f.number, "t": time.monotonic(),
                          "T": np.from_dlpack(f.point_data["T"])[:3].tolist()}), flush=True)
    """)
    assert p.stdout.readline().strip() == "waiting"
    time.sleep(0.2)
    t0 = time.monotonic()
    daemon.client.publish("b", "point_data/T", np.arange(300.0))
    out, err = p.communicate(timeout=10)
    assert p.returncode == 0, err
    got = json.loads(out)
    assert got["frame"] == 2 and got["T"] == [0.0, 1.0, 2.0]
    assert got["t"] - t0 < 5.0  # woken by the futex, not its 10 s timeout (slack: a loaded CI box)


def test_a_held_frame_stays_intact_while_more_frames_are_published(daemon):
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    slot = meshdock.attach("b", prefix=daemon.prefix)
    held = slot.wait(timeout=5)
    pts = np.from_dlpack(held.points)
    before = pts.copy()
    for k in range(7):  # 3 ring slots: slot 0 comes round twice while frame 1 holds it
        daemon.client.publish("b", "point_data/T", np.full(300, float(k)))
    np.testing.assert_array_equal(pts, before)
    newest = slot.wait(timeout=5)
    assert newest.number == 8 and np.from_dlpack(newest.point_data["T"])[0] == 6.0
    info = daemon.client.describe("b").slot
    assert info.version > 1  # the leased ring slot was given a fresh buffer
    stats = daemon.client.stats().slots[0]
    assert stats.leases == 2
    del pts, held, newest
    import gc
    gc.collect()
    assert daemon.client.stats().slots[0].leases == 0
    slot.close()


def test_a_consumer_killed_holding_a_lease_does_not_block_the_daemon(daemon):
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    p = consumer(daemon.prefix, "b", """
        f = slot.wait(timeout=10)
        print("holding", flush=True)
        time.sleep(60)
    """)
    assert p.stdout.readline().strip() == "holding"
    assert daemon.client.stats().slots[0].leases == 1
    p.send_signal(signal.SIGKILL)
    p.wait()
    t0 = time.monotonic()
    for k in range(4):  # the fourth publish reuses ring slot 0, leased by the dead consumer
        daemon.client.publish("b", "point_data/T", np.full(300, float(k)))
    assert time.monotonic() - t0 < 5.0  # not blocked (a loaded CI box: 4 gRPC calls, 2 s was tight)
    assert wait_for(lambda: daemon.client.stats().slots[0].leases == 0, timeout=15.0)
    p.stdout.close()
    p.stderr.close()


def test_attach_times_out_naming_the_slot(daemon):
    t0 = time.monotonic()
    with pytest.raises(meshdock.AttachTimeout, match=r"slot 'nope' .* not published within 300 ms"):
        meshdock.attach("nope", prefix=daemon.prefix, timeout=0.3)
    assert time.monotonic() - t0 < 3.0  # its 0.3 s, not the 5 s default (slack for a loaded box)
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    slot = meshdock.attach("b", prefix=daemon.prefix)
    slot.wait(timeout=5)
    with pytest.raises(TimeoutError, match="no new frame within 0.1 s"):
        slot.wait(timeout=0.1)


def test_attach_with_timeout_zero_to_a_published_slot_takes_frames(daemon):
    # timeout=0: "do not wait for the publication". The registration with the daemon has its own
    # deadline (it once took the attach timeout: no time to acknowledge, every lease refused).
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    slot = meshdock.attach("b", prefix=daemon.prefix, timeout=0)
    f = slot.latest(timeout=5)
    assert f.number == 1 and f.points.shape[1] == 3
    kept = np.from_dlpack(f.points)
    f.release()
    with pytest.raises(meshdock.SdkError, match=r"frame #1 of slot 'b' was released: its 'points'"):
        f.points
    with pytest.raises(meshdock.SdkError, match="was released"):
        list(f.arrays())
    assert "released" in repr(f) and isinstance(f, meshdock.Frame) and kept.shape[1] == 3
    with pytest.raises(meshdock.AttachTimeout, match="not published within 0 ms"):
        meshdock.attach("nope", prefix=daemon.prefix, timeout=0)


def test_unload_and_sigterm_are_producer_gone(tmp_path):
    d = Daemon(tmp_path, FILES)
    c = meshdock.Client(d.addr)
    c.load(d.root / "box.v41.msh", name="b")
    slot = meshdock.attach("b", prefix=d.prefix)
    slot.wait(timeout=5)
    c.unload("b")
    with pytest.raises(meshdock.ProducerGone, match="shutdown flag set"):
        slot.wait(timeout=5)
    c.load(d.root / "box.v41.msh", name="b2")
    slot2 = meshdock.attach("b2", prefix=d.prefix)
    slot2.wait(timeout=5)
    c.close()
    assert d.stop(signal.SIGTERM) == 0
    with pytest.raises(meshdock.ProducerGone, match="shutdown flag set"):
        slot2.wait(timeout=5)


def test_a_killed_daemon_is_producer_gone_within_a_second(tmp_path):
    d = Daemon(tmp_path, FILES)
    c = meshdock.Client(d.addr)
    c.load(d.root / "box.v41.msh", name="b")
    c.close()
    slot = meshdock.attach("b", prefix=d.prefix)
    frame = slot.wait(timeout=5)
    pts = np.from_dlpack(frame.points).copy()
    d.stop(signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(meshdock.ProducerGone, match=r"heartbeat \d+ ms old; daemon pid \d+ dead"):
        slot.wait(timeout=10)
    assert time.monotonic() - t0 < 1.5
    np.testing.assert_array_equal(np.from_dlpack(frame.points), pts)  # held data still readable
    del frame
    slot.close()
    # The killed daemon's segments stay until a new daemon with the prefix starts.
    d2 = Daemon(tmp_path, FILES, prefix=d.prefix)
    assert d2.stop() == 0
    assert shm_names(d.prefix) == []


def test_sigterm_right_after_ready_stops_cleanly(tmp_path):
    """The signal set exists before "ready" is printed: a SIGTERM at once is a clean stop, not
    a default-action kill that leaves segments behind."""
    for k in range(10):
        (tmp_path / str(k)).mkdir()
        d = Daemon(tmp_path / str(k), FILES)
        assert d.stop(signal.SIGTERM) == 0, d.stderr
        assert "received SIGTERM" in d.stderr
        assert shm_names(d.prefix) == []


def test_client_errors_carry_the_status(daemon):
    with pytest.raises(meshdock.DaemonError) as e:
        daemon.client.describe("nope")
    assert e.value.code == "NOT_FOUND"
    assert daemon.client.health() == "SERVING"
    with pytest.raises(meshdock.DaemonError) as e:
        meshdock.Client("unix:/nonexistent.sock", timeout=2).ls()
    assert e.value.code == "UNAVAILABLE"


def test_the_file_deleted_after_load_keeps_serving(daemon, data_dir):
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    (daemon.root / "box.v41.msh").unlink()
    slot = meshdock.attach("b", prefix=daemon.prefix)
    frame = slot.wait(timeout=5)
    np.testing.assert_array_equal(np.from_dlpack(frame.points),
                                  meshdock.read(data_dir / "meshes" / "box.v41.msh").points)
    assert daemon.client.publish("b", "point_data/T", np.zeros(300)) == 2  # from its host copy
    with pytest.raises(meshdock.DaemonError, match="NOT_FOUND"):
        daemon.client.reload("b")  # the file is gone: the slot stays as it was
    assert slot.wait(timeout=5).number == 2
    del frame
    slot.close()


def test_a_file_rewritten_while_it_is_read_never_tears_a_frame(daemon, data_dir):
    """A writer replaces the file over and over (truncate + write, the way editors do not)
    while the daemon reloads it: every reload either fails with a ReadError naming the file or
    publishes a whole mesh; consumers never see a mix."""
    src = (data_dir / "meshes" / "box.v41.msh").read_bytes()
    path = daemon.root / "box.v41.msh"
    daemon.client.load(path, name="b")
    stop = threading.Event()

    def rewrite():
        while not stop.is_set():
            with open(path, "wb") as f:  # truncated, then filled in pieces
                for k in range(0, len(src), 4096):
                    f.write(src[k:k + 4096])
                    f.flush()
            time.sleep(0.002)  # a whole file now and then, so some reloads can succeed

    t = threading.Thread(target=rewrite)
    t.start()
    outcomes = {"ok": 0, "failed": 0}
    deadline = time.monotonic() + 30
    try:
        # At least 40 reloads, and on until one has seen a whole file (how often one does
        # depends on the machine's speed, not on meshdock).
        while sum(outcomes.values()) < 40 or (outcomes["ok"] == 0 and time.monotonic() < deadline):
            try:
                daemon.client.reload("b")
                outcomes["ok"] += 1
            except meshdock.DaemonError as e:
                assert e.code == "INVALID_ARGUMENT" and "box.v41.msh" in e.message, e.message
                outcomes["failed"] += 1
    finally:
        stop.set()
        t.join()
    path.write_bytes(src)
    expect = meshdock.read(path).points
    slot = meshdock.attach("b", prefix=daemon.prefix)
    np.testing.assert_array_equal(np.from_dlpack(slot.wait(timeout=5).points), expect)
    assert outcomes["ok"] > 0, outcomes
    slot.close()


def test_a_consumer_killed_mid_attach_leaves_nothing_behind(daemon):
    daemon.client.load(daemon.root / "box.v41.msh", name="b")
    for delay in (0.0, 0.05, 0.1, 0.2):
        p = consumer(daemon.prefix, "b", """
            while True:
                f = slot.wait(timeout=10)
                del f
        """)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        p.stderr.close()
    assert wait_for(lambda: daemon.client.stats().slots[0].leases == 0, timeout=15.0)
    for k in range(6):  # every ring slot is reusable
        daemon.client.publish("b", "point_data/T", np.full(300, float(k)))
    assert daemon.client.describe("b").slot.write_idx == 7


def test_a_dataloader_with_forked_workers_reads_a_slot_attached_before_the_fork(daemon,
                                                                                data_dir):
    """The PyTorch pattern: a Dataset attached in the main process, DataLoader workers forked
    from it. Each worker takes frames under its own registration and returns what it read."""
    pytest.importorskip("torch")
    daemon.client.load(daemon.root / "box.v41.msh", name="box")
    p = consumer(daemon.prefix, "box", """
        import os, torch
        from torch.utils.data import DataLoader, Dataset

        class Meshes(Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                with slot.latest(timeout=10) as f:  # the current mesh, every item
                    points = torch.from_dlpack(f.points).clone()
                return os.getpid(), f.number, points

        pids, sums = set(), set()
        for pid, frame, points in DataLoader(Meshes(), batch_size=None, num_workers=2,
                                             multiprocessing_context="fork"):
            pids.add(int(pid))
            sums.add(float(points.double().sum()))
        print(json.dumps({"workers": len(pids - {os.getpid()}), "sums": sorted(sums)}))
    """)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    got = json.loads(out)
    m = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    assert got["workers"] == 2
    assert got["sums"] == [pytest.approx(float(np.asarray(m.points, np.float64).sum()))]
