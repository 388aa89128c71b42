"""Fault tests with real processes: meshdockd is SIGKILLed at chosen moments of a load or a
reload (held there by $MESHDOCK_FAILPOINT, so the moment is the one named, not a race), while
consumer processes watch its slots.

What must hold each time: a consumer that does not re-attach gets ProducerGone naming the dead
daemon within about a second (heartbeat); a consumer attached with reattach=True rides over
it; a restarted daemon with the same prefix replaces the dead one's segments; publishing the
name again reaches the re-attached consumer with the new data; nothing is left in /dev/shm.
"""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import conftest
import meshdock
from daemon_util import Daemon, arrays_of, shm_names

FILES = ("box.v41.msh", "plate.v22.msh")

FOLLOWER = r"""
import json, sys, time
import numpy as np
import meshdock
prefix, name, reattach = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
slot = meshdock.attach(name, prefix=prefix, timeout=10, reattach=reattach)
held = None
while True:
    try:
        f = slot.wait(timeout=30)
    except meshdock.ProducerGone as e:
        print(json.dumps({"gone": str(e), "t": time.monotonic()}), flush=True)
        break
    pts = np.from_dlpack(f.points)
    print(json.dumps({"frame": f.number, "reattaches": slot.reattaches, "points": len(pts),
                      "sum": float(pts.sum()), "t": time.monotonic()}), flush=True)
    held = f  # a consumer mid-step holds its newest frame, and so its lease
"""


class Follower:
    """A consumer process printing one JSON line per frame (or when the producer is gone)."""

    def __init__(self, prefix, name, reattach):
        env = dict(os.environ, PYTHONPATH=str(conftest.BUILD / "python"))
        self.proc = subprocess.Popen([sys.executable, "-c", FOLLOWER, prefix, name,
                                      "1" if reattach else "0"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next(self, timeout=10.0):
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"consumer printed nothing in {timeout} s "
                                 f"(alive: {self.proc.poll() is None})") from None

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


def summary(mesh):
    return len(mesh.points), float(np.asarray(mesh.points).sum())


# moment -> the Load progress phase after which the daemon sits still (mid_write: inside the
# slot's publish, which follows COPY within milliseconds; the kill comes 300 ms later).
MOMENTS = {"open": "OPEN", "read": "READ", "build_payload": "BUILD_PAYLOAD", "copy": "COPY",
           "mid_write": "COPY"}


@pytest.mark.parametrize("op", ["load", "reload"])
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_daemon_killed_mid_load_then_restarted(tmp_path, data_dir, op, moment):
    d = Daemon(tmp_path, FILES, env={"MESHDOCK_FAILPOINT": f"{moment}:5000:2"})
    c = meshdock.Client(d.addr)
    c.load(d.root / "box.v41.msh", name="watched")  # loads 1 and 2 pass the failpoint
    c.load(d.root / "plate.v22.msh", name="m")
    plate = summary(meshdock.read(data_dir / "meshes" / "plate.v22.msh"))
    box = summary(meshdock.read(data_dir / "meshes" / "box.v41.msh"))
    bystander = Follower(d.prefix, "watched", reattach=False)
    follower = Follower(d.prefix, "m", reattach=True)
    try:
        assert bystander.next()["frame"] == 1
        first = follower.next()
        assert (first["frame"], first["reattaches"]) == (1, 0)
        assert (first["points"], first["sum"]) == pytest.approx(plate)

        killed = {}

        def kill_at(p):
            if p.phase == MOMENTS[moment] and not killed:
                time.sleep(0.3)  # well inside the 5 s the failpoint holds the daemon there
                killed["t"] = time.monotonic()
                d.proc.send_signal(signal.SIGKILL)

        with pytest.raises(meshdock.DaemonError) as e:
            if op == "load":
                c.load(d.root / "box.v41.msh", name="fresh", progress=kill_at)
            else:
                c.reload("m", progress=kill_at)
        assert e.value.code == "UNAVAILABLE" and killed
        assert d.stop() == -signal.SIGKILL
        c.close()

        gone = bystander.next(timeout=5)
        assert "gone" in gone, gone
        assert f"daemon pid {d.proc.pid} dead" in gone["gone"]
        assert gone["t"] - killed["t"] < 1.5  # heartbeat 100 ms, producer_timeout 1 s
        assert follower.lines.empty()  # the re-attaching consumer waits, holding frame 1

        # A new daemon with the same prefix replaces every segment the dead one left.
        d2 = Daemon(tmp_path, prefix=d.prefix)
        assert shm_names(d.prefix) == []
        c2 = meshdock.Client(d2.addr)
        c2.load(d2.root / "box.v41.msh", name="m")
        again = follower.next()
        assert (again["frame"], again["reattaches"]) == (1, 1)
        assert (again["points"], again["sum"]) == pytest.approx(box)
        if op == "load":  # the half-made slot's name is free again
            c2.load(d2.root / "plate.v22.msh", name="fresh")
        c2.close()
        assert d2.stop() == 0, d2.stderr
        assert "removed stale segments of 'watched'" in d2.stderr
        assert shm_names(d.prefix) == []
    finally:
        bystander.close()
        err = follower.close()
        assert "Traceback" not in err, err


@pytest.mark.parametrize("spec", ["copy", "copy:", "copy:5x", "flush:100", "copy:100:x",
                                  "copy:9999999"])
def test_a_malformed_failpoint_is_refused_by_name(tmp_path, spec):
    r = subprocess.run([str(conftest.BUILD / "bin" / "meshdockd"), "--listen",
                        f"unix:{tmp_path}/d.sock", "--root", str(tmp_path)],
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, MESHDOCK_FAILPOINT=spec))
    assert r.returncode == 2
    assert f"MESHDOCK_FAILPOINT '{spec}' is not PHASE:MS[:AFTER]" in r.stderr


def test_a_catalog_being_created_is_waited_for_not_refused(tmp_path):
    """Between shm_open and the end of initialisation the catalog is all zeros: attach must
    look again (and time out naming the slot), not fail on its magic."""
    from multiprocessing import shared_memory
    prefix = f"z{os.getpid()}."
    segs = [shared_memory.SharedMemory(prefix + n, create=True, size=s)
            for n, s in (("m", 433), ("m.catalog", 4096))]
    try:
        t0 = time.monotonic()
        with pytest.raises(meshdock.AttachTimeout, match=r"slot 'm' .*not published within 300 ms"):
            meshdock.attach("m", prefix=prefix, timeout=0.3)
        assert time.monotonic() - t0 >= 0.3
        # Once the catalog is written (the daemon does it last), a bad segment is an error.
        segs[1].buf[0:4] = b"XXXX"
        with pytest.raises(meshdock.SdkError, match=r"control block '.*m': magic is 0x00000000"):
            meshdock.attach("m", prefix=prefix, timeout=0.3)
    finally:
        for s in segs:
            s.close()
            s.unlink()


def test_the_upload_delay_failpoint_changes_nothing_on_the_host_backend(tmp_path):
    """upload_delay (scripts/gpu-check's stream_semantics) holds the CUDA backend's copies back;
    the host backend has no queue, so a load there is whole and prompt as ever."""
    d = Daemon(tmp_path, FILES[:1], extra=("--device", "cpu"),
               env={"MESHDOCK_FAILPOINT": "upload_delay:3000"})
    try:
        t0 = time.monotonic()
        d.load(FILES[0], "m")
        assert time.monotonic() - t0 < 2.5
        manifest, data = d.newest("m")
        ref = meshdock.read(d.root / FILES[0])
        np.testing.assert_array_equal(arrays_of(manifest, data)["points"], ref.points)
        assert any("every CUDA upload waits 3000 ms" in line for line in d.log), d.log[:5]
    finally:
        assert d.stop() == 0


def test_a_consumer_waiting_through_a_long_copy_gets_the_frame_not_producer_gone(tmp_path):
    """Found by a trial (session 19): a publish holds the slot through its copy, and the 100 ms
    timer that beats the heartbeat skips a busy slot, so a copy longer than a consumer's
    producer_timeout (1 s by default) made the waiting consumer raise ProducerGone ("heartbeat
    1012 ms old; daemon pid ... alive but stuck") in the middle of a reload. Here the reload is
    held 2.5 s mid-write ($MESHDOCK_FAILPOINT); the publish beats through it now."""
    d = Daemon(tmp_path, ("box.v41b.msh",), env={"MESHDOCK_FAILPOINT": "mid_write:2500:1"})
    try:
        c = meshdock.Client(d.addr)
        c.load(d.root / "box.v41b.msh", name="box")
        with meshdock.attach("box", prefix=d.prefix, timeout=5) as slot:
            with slot.wait(timeout=5) as f:
                assert f.number == 1
            t = threading.Thread(target=lambda: c.reload("box"))
            t0 = time.monotonic()
            t.start()
            with slot.wait(timeout=20) as f:  # ProducerGone after ~1 s before
                assert f.number == 2
            assert time.monotonic() - t0 > 2.0  # it did wait through the held copy
            t.join(30)
        c.close()
    finally:
        assert d.stop() == 0, d.stderr
