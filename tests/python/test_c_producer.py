"""libmeshdock_producer (meshdock/producer.h): a C program publishes into a real meshdockd with no
gRPC of its own, and consumers see exactly its arrays.

What must hold: a mesh's field and a tensor of its own slot arrive whole, frame after frame; an
array over 256 KiB travels through a shared-memory object of the producer's (the daemon's
metrics say so) and a small one in messages; the zero-copy buffer sends no bytes at all; no
object is left in /dev/shm when the producer ends; every failure returns its status with a
message naming the slot and field (or the socket, or the bad argument), and nothing is sent for
an argument the library refuses itself."""
import contextlib
import ctypes
import os
import subprocess
import types

import numpy as np
import pytest

import conftest
import meshdock
from daemon_util import arrays_of, wait_for
from test_metrics import parse, value
import test_publish_shm

PRODUCER = conftest.BUILD / "bin" / "c_producer"
box = test_publish_shm.box  # the fixture: a meshdockd with box.v41.msh loaded as "box"


def expected(frame_index, rows, cols=None):
    """What c_producer writes in its frame k: k * 1000 + row + col / 4."""
    r = np.arange(rows, dtype=np.float64)[:, None]
    c = np.arange(cols or 1, dtype=np.float64)[None, :] / 4
    v = frame_index * 1000.0 + r + c
    return v if cols else v[:, 0]


def sources():
    return {n for n in os.listdir("/dev/shm") if n.startswith("meshdock-src.")}


def run(d, *args, addr=None, env=None):
    return subprocess.run([str(PRODUCER), "--addr", addr or d.addr, *map(str, args)],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


def received(d, via):
    return value(parse(d.ctl("metrics").stdout), "meshdock_publish_received_bytes_total", via=via)


def test_a_field_and_a_tensor_arrive_whole_by_messages_and_by_shared_memory(box):
    n = len(meshdock.read(str(box.root / "box.v41.msh")).points)
    before = sources()
    r = run(box, "--frames", 3, "box", "point_data/T", n)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["frame 2", "frame 3", "frame 4"]
    manifest, data = box.newest("box")
    np.testing.assert_array_equal(arrays_of(manifest, data)["point_data/T"], expected(2, n))
    assert received(box, "grpc") == 3 * n * 8 and received(box, "shm") == 0  # 2.4 KiB: messages

    # 2 MiB a frame: through one object of the producer's, reused, and gone at its end.
    r = run(box, "--frames", 3, "--device", "cpu", "img", "tensor", 512, 512)
    assert r.returncode == 0 and r.stdout == "frame 1\nframe 2\nframe 3\n", r.stderr
    manifest, data = box.newest("img")
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], expected(2, 512, 512))
    assert received(box, "shm") == 3 * 512 * 512 * 8
    with meshdock.attach("img", prefix=box.prefix, timeout=5) as slot:  # a consumer's view
        f = slot.wait(timeout=5)
        np.testing.assert_array_equal(np.from_dlpack(dict(f.arrays())["tensor"]),
                                      expected(2, 512, 512))
        f.release()
    assert sources() == before


def test_the_zero_copy_buffer_sends_no_bytes_and_is_unlinked_at_close(box):
    before = sources()
    grpc_before = received(box, "grpc")
    r = run(box, "--frames", 2, "--buffer", "cam", "tensor", 300, 4)  # 9.4 KiB: a buffer anyway
    assert r.returncode == 0 and r.stdout == "frame 1\nframe 2\n", r.stderr
    manifest, data = box.newest("cam")
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], expected(1, 300, 4))
    assert received(box, "shm") == 2 * 300 * 4 * 8 and received(box, "grpc") == grpc_before
    assert sources() == before


def test_failures_name_the_status_the_slot_and_the_field(box, tmp_path):
    r = run(box, "nope", "point_data/T", 5)
    assert r.returncode == 1
    assert r.stderr == ("c_producer: publish: MESHDOCK_ERR_NOT_FOUND: NOT_FOUND: slot 'nope': "
                        "point_data/T: no mesh named 'nope'\n"), r.stderr
    r = run(box, "box", "point_data/T", 5)
    assert r.returncode == 1 and r.stderr.startswith(
        "c_producer: publish: MESHDOCK_ERR_INVALID_ARGUMENT: INVALID_ARGUMENT: slot 'box': "
        "point_data/T: 5 rows for 300 points"), r.stderr
    gone = tmp_path / "gone.sock"
    r = run(box, "box", "point_data/T", 5, addr=f"unix:{gone}")
    assert r.returncode == 1 and r.stderr == (
        "c_producer: publish: MESHDOCK_ERR_UNAVAILABLE: slot 'box': point_data/T: meshdockd at "
        f"unix:{gone} is not answering: no socket at {gone} (is meshdockd running? is the target "
        "of meshdock_producer_open right?)\n"), r.stderr
    r = run(box, "box", "point_data/T", 5, addr="foo")
    assert r.returncode == 1 and r.stderr == (
        "c_producer: open: MESHDOCK_ERR_INVALID_ARGUMENT: meshdock_producer_open: target 'foo' "
        "has no :PORT (meshdockd listens on unix:PATH or HOST:PORT)\n"), r.stderr
    # A tensor under a mesh's name; a device this host does not have (the daemon's state).
    r = run(box, "box", "tensor", 4, 4)
    assert r.returncode == 1 and r.stderr.startswith(
        "c_producer: publish: MESHDOCK_ERR_INVALID_ARGUMENT: INVALID_ARGUMENT: slot 'box': "), \
        r.stderr
    r = run(box, "--device", "cuda:97", "t", "tensor", 4, 4)
    assert r.returncode == 1 and r.stderr.startswith(
        "c_producer: publish: MESHDOCK_ERR_REFUSED: FAILED_PRECONDITION: "), r.stderr
    assert "cuda:97" in r.stderr and "slot 't'" in r.stderr, r.stderr


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


def f64_tensor(data, *shape, **fields):
    """A float64 host DLTensor of `shape` at address `data` (its shape array kept with it)."""
    dims = (ctypes.c_int64 * len(shape))(*shape)
    t = DLTensor(data=data, device_type=1, ndim=len(shape), code=2, bits=64, lanes=1,
                 shape=dims, **fields)
    t._shape = dims
    return t


@contextlib.contextmanager
def c_producer(addr):
    """A producer of libmeshdock_producer open on `addr`, through ctypes (with libmeshdock for
    its last error and status names); closed at the end."""
    lib = ctypes.CDLL(str(conftest.BUILD / "lib" / "libmeshdock_producer.so.1"))
    core = ctypes.CDLL(str(conftest.BUILD / "lib" / "libmeshdock.so.1"))
    core.meshdock_last_error.restype = ctypes.c_char_p
    core.meshdock_status_name.restype = ctypes.c_char_p
    p = ctypes.c_void_p()
    assert lib.meshdock_producer_open(addr.encode(), None, ctypes.byref(p)) == 0
    try:
        yield types.SimpleNamespace(
            lib=lib, p=p, error=lambda: core.meshdock_last_error().decode(),
            status=lambda rc: core.meshdock_status_name(rc).decode())
    finally:
        lib.meshdock_producer_close(p)


def test_the_library_refuses_what_it_cannot_send_before_anything_is_sent(box):
    """Arguments the daemon would not see the fault in (device memory, strides, lanes) are
    refused by the library, naming the slot and field; nothing reaches the daemon."""
    a = np.zeros((4, 3))
    with c_producer(box.addr) as c:
        def publish(**kw):
            t = f64_tensor(a.ctypes.data, 4, 3)
            for k, v in kw.items():
                setattr(t, k, v)
            rc = c.lib.meshdock_producer_publish(c.p, b"box", b"point_data/T", 0,
                                                 ctypes.byref(t), None)
            return c.status(rc), c.error()

        grpc_before = received(box, "grpc")
        assert publish(device_type=2) == (
            "MESHDOCK_ERR_UNSUPPORTED", "slot 'box': point_data/T: the array is in device memory "
            "(DLPack device type 2); publish takes host memory: copy it to the host first")
        assert publish(strides=(ctypes.c_int64 * 2)(1, 4)) == (
            "MESHDOCK_ERR_INVALID_ARGUMENT", "slot 'box': point_data/T: not in C order "
            "(dimension 1 has stride 4, 1 expected): make it contiguous first")
        assert publish(lanes=2)[1].startswith("slot 'box': point_data/T: dtype (code 2, bits 64, "
                                              "lanes 2) cannot be published")
        assert publish(ndim=5)[1] == ("slot 'box': point_data/T: 5 dimensions; a frame's "
                                      "arrays have 1 to 4")
        assert received(box, "grpc") == grpc_before  # none of them sent a byte
        # Compact strides are C order too, and the daemon then judges the shape.
        assert publish(strides=(ctypes.c_int64 * 2)(3, 1))[0] == "MESHDOCK_ERR_INVALID_ARGUMENT"
        assert c.lib.meshdock_producer_set_timeout(c.p, ctypes.c_double(-1.0)) == 12


def test_a_publish_from_own_memory_never_writes_into_the_callers_buffer(box):
    """The buffer of meshdock_producer_buffer and the object a publish copies the caller's own
    array into are apart, even for the same key: a larger publish from the caller's memory
    leaves the buffer's contents and pointer as they were; close unlinks both."""
    before = sources()
    with c_producer(box.addr) as c:
        def publish(t):
            frame = ctypes.c_uint32()
            rc = c.lib.meshdock_producer_publish_tensor(c.p, b"k", ctypes.byref(t), b"cpu", 0,
                                                        ctypes.byref(frame))
            assert rc == 0, c.error()
            return frame.value

        def buffer(nbytes):
            ptr = ctypes.c_void_p()
            assert c.lib.meshdock_producer_buffer(c.p, b"k", b"tensor", 0,
                                                  ctypes.c_uint64(nbytes), ctypes.byref(ptr)) == 0
            return ptr.value

        small = buffer(800)
        view = np.frombuffer((ctypes.c_char * 800).from_address(small), dtype=np.float64)
        view[:] = np.arange(100.0)
        assert publish(f64_tensor(small, 100)) == 1
        assert len(sources() - before) == 1
        big = np.arange(65536.0) + 0.5  # 512 KiB from the caller's memory: an object of its own
        assert publish(f64_tensor(big.ctypes.data, big.size)) == 2
        manifest, data = box.newest("k")
        np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], big)
        np.testing.assert_array_equal(view, np.arange(100.0))  # the buffer, untouched
        assert buffer(800) == small  # still the key's buffer
        assert len(sources() - before) == 2
        larger = buffer(1600)  # outgrown: a fresh one; the old one is gone
        assert larger != small and len(sources() - before) == 2
    assert sources() == before


def test_a_dead_producers_object_is_swept_by_the_next_c_producer(box):
    """An object no live process holds (its maker was SIGKILLed: no flock on it), older than
    10 s, is removed when a C producer makes its first object; a live one of ours is not."""
    import fcntl
    import time
    dead = f"/dev/shm/meshdock-src.{os.getpid()}.c0ffee0000dead01"
    alive = f"/dev/shm/meshdock-src.{os.getpid()}.c0ffee0000a11ve0"
    held = None
    try:
        for path in (dead, alive):
            with open(path, "wb") as f:
                f.write(b"x")
        held = os.open(alive, os.O_RDONLY)
        fcntl.flock(held, fcntl.LOCK_SH)
        time.sleep(max(0.0, os.stat(dead).st_ctime + 10.2 - time.time()))  # the sweep's 10 s
        r = run(box, "big", "tensor", 256, 256)  # 512 KiB: the producer's first object
        assert r.returncode == 0, r.stderr
        assert not os.path.exists(dead) and os.path.exists(alive)
    finally:
        if held is not None:
            os.close(held)
        for path in (dead, alive):
            if os.path.exists(path):
                os.unlink(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: processes of three users")
def test_a_daemon_of_another_user_reads_a_c_producers_object_when_it_is_in_its_group():
    """The deployment of docs/operations.md: meshdockd as its own user, the producer another uid
    in its group: its object is made with the daemon's group and read through it. Out of the
    group, the object cannot be made: the library sends messages instead, and its buffer (which
    must be shared memory) fails naming why."""
    import pathlib
    import shutil
    import tempfile
    from daemon_util import Daemon, as_user
    daemon_id, producer_uid, group = 65531, 65532, 65531
    top = tempfile.mkdtemp(prefix="md-3uid-c-")  # pytest's tmp_path is root's alone (0700)
    os.chmod(top, 0o755)
    sock_dir = pathlib.Path(top) / "run"
    sock_dir.mkdir()
    os.chown(sock_dir, daemon_id, group)
    d = Daemon(pathlib.Path(top), (), listen=f"unix:{sock_dir}/d.sock",
               config={"socket_mode": "0666"}, user=(daemon_id, group))

    def produce(groups, *args):
        return subprocess.run(as_user([str(PRODUCER), "--addr", d.addr, *map(str, args)],
                                      producer_uid, producer_uid, groups),
                              capture_output=True, text=True, cwd="/", timeout=60)

    try:
        nbytes = 256 * 256 * 8  # 512 KiB: over the threshold for an object
        r = produce([group], "cam", "tensor", 256, 256)
        assert r.returncode == 0 and r.stdout == "frame 1\n", r.stderr
        assert (received(d, "shm"), received(d, "grpc")) == (nbytes, 0)
        manifest, data = d.newest("cam")
        np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], expected(0, 256, 256))
        r = produce([], "cam", "tensor", 256, 256)  # not a member: messages
        assert r.returncode == 0 and r.stdout == "frame 2\n", r.stderr
        assert (received(d, "shm"), received(d, "grpc")) == (nbytes, nbytes)
        r = produce([], "--buffer", "cam", "tensor", 256, 256)
        assert r.returncode == 1 and r.stderr.startswith("c_producer: buffer: MESHDOCK_ERR_SDK: ")
        assert "this user must be a member of it" in r.stderr, r.stderr
        assert not [n for n in os.listdir("/dev/shm") if n.startswith("meshdock-src.")
                    and os.stat(f"/dev/shm/{n}").st_uid == producer_uid]
    finally:
        rc = d.stop()  # asserted after: a failure above is the one to see
        shutil.rmtree(top, ignore_errors=True)
    assert rc == 0, d.stderr


def test_over_tcp_the_token_is_sent_and_the_bytes_go_in_messages(tmp_path):
    """A TCP endpoint asks for the bearer token ($MESHDOCK_TOKEN here): with it a 512 KiB
    tensor arrives in messages (no shared memory over TCP), without it the call is refused as
    PERMISSION_DENIED, and a shared-memory buffer is refused before anything is sent."""
    from test_attack_grpc import TOKEN, tcp_daemon
    d = tcp_daemon(tmp_path)
    try:
        c = meshdock.Client(d.addr, token=TOKEN)
        r = run(d, "cam", "tensor", 256, 256, env={"MESHDOCK_TOKEN": TOKEN})
        assert r.returncode == 0 and r.stdout == "frame 1\n", r.stderr
        m = parse(c.metrics())
        assert (value(m, "meshdock_publish_received_bytes_total", via="grpc"),
                value(m, "meshdock_publish_received_bytes_total", via="shm")) == (256 * 256 * 8, 0)
        manifest, data = d.newest("cam")
        np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], expected(0, 256, 256))
        r = run(d, "cam", "tensor", 4, 4, env={"MESHDOCK_TOKEN": "not-the-token"})
        assert r.returncode == 1 and r.stderr == (
            "c_producer: publish: MESHDOCK_ERR_PERMISSION_DENIED: PERMISSION_DENIED: slot 'cam': "
            "tensor: PublishSmall: the bearer token sent is not this daemon's (its token_file's "
            "first line)\n"), r.stderr
        r = run(d, "--buffer", "cam", "tensor", 4, 4, env={"MESHDOCK_TOKEN": TOKEN})
        assert r.returncode == 1 and r.stderr == (
            "c_producer: buffer: MESHDOCK_ERR_UNSUPPORTED: slot 'cam': tensor: a shared-memory "
            f"buffer needs the daemon's Unix socket, not {d.addr}\n"), r.stderr
        c.close()
    finally:
        rc = d.stop()
    assert rc == 0, d.stderr


def test_a_timeout_ends_a_call_the_daemon_does_not_answer(box):
    """meshdock_producer_set_timeout: a daemon that answers nothing (SIGSTOPped) fails the
    publish as REFUSED, DEADLINE_EXCEEDED, when the timeout has passed, not never."""
    import signal
    import time
    a = np.arange(16.0)
    t = f64_tensor(a.ctypes.data, 16)
    with c_producer(box.addr) as c:
        assert c.lib.meshdock_producer_set_timeout(c.p, ctypes.c_double(0.5)) == 0
        assert c.lib.meshdock_producer_publish_tensor(c.p, b"t", ctypes.byref(t), None, 0,
                                                      None) == 0
        os.kill(box.proc.pid, signal.SIGSTOP)
        try:
            # Stopped when every thread is (a reply thread may still be running a moment).
            tasks = f"/proc/{box.proc.pid}/task"

            def stopped():
                for tid in os.listdir(tasks):
                    with open(f"{tasks}/{tid}/stat") as f:
                        if f.read().rsplit(")", 1)[1].split()[0] != "T":
                            return False
                return True
            assert wait_for(stopped, timeout=10)
            t0 = time.monotonic()
            rc = c.lib.meshdock_producer_publish_tensor(c.p, b"t", ctypes.byref(t), None, 0, None)
            took = time.monotonic() - t0
        finally:
            os.kill(box.proc.pid, signal.SIGCONT)
        assert rc == 20, rc  # MESHDOCK_ERR_REFUSED
        assert c.error() == ("DEADLINE_EXCEEDED: slot 't': tensor: no reply within the "
                             "producer's timeout (0.5 s)")
        assert 0.4 < took < 5.0, took  # the deadline, not a hang (slack: a loaded CI box)
        assert c.lib.meshdock_producer_publish_tensor(c.p, b"t", ctypes.byref(t), None, 0,
                                                      None) == 0
