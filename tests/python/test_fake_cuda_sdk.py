"""The Python SDK's CUDA path on the fake CUDA runtime (tests/support/fake_cudart.cpp): a CUDA
slot published by the daemon's own backend and slot code (tests/support/fake_cuda_producer.cpp),
attached from Python through libmeshdock's C ABI and its CUDA calls, each array's bytes copied
back with the runtime's own cudaMemcpyAsync on a stream the frame was ordered on
(`__dlpack__(stream=...)`). What a GPU adds (torch and CuPy adopting device memory) is
scripts/gpu-check's. Runs as the ctest FakeCuda.PythonSdk of a MESHDOCK_WITH_CUDA=FAKE build
(scripts/test's sanitizer build), which sets the variables below; skipped elsewhere."""
import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PRODUCER = os.environ.get("MESHDOCK_FAKE_CUDA_PRODUCER")
FAKE = os.environ.get("MESHDOCK_FAKE_CUDART")
pytestmark = pytest.mark.skipif(
    not (PRODUCER and FAKE),
    reason="needs a MESHDOCK_WITH_CUDA=FAKE build (ctest FakeCuda.PythonSdk in build-asan)")

DATA = Path(__file__).resolve().parents[1] / "data" / "meshes"
D2H = 2  # cudaMemcpyDeviceToHost


class Stats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_long) for n in (
        "device_allocations", "ipc_mappings", "events", "pinned", "streams", "refused",
        "stream_waits", "waits_that_waited")] + [("last_refused", ctypes.c_char * 96)]


@pytest.fixture
def cuda():
    """The fake runtime libmeshdock uses (the same library, so the same state)."""
    lib = ctypes.CDLL(FAKE)
    lib.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_int, ctypes.c_void_p]
    lib.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    lib.cudaStreamDestroy.argtypes = [ctypes.c_void_p]

    def stats():
        s = Stats()
        lib.meshdock_fake_cuda_get_stats(ctypes.byref(s))
        return s
    lib.stats = stats
    return lib


@pytest.fixture
def producer(tmp_path):
    prefix = f"fcpy{os.getpid()}."
    p = subprocess.Popen([PRODUCER, prefix, "box", str(DATA / "box.v41.msh")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = json.loads(p.stdout.readline())
    assert line == {"frame": 1}, line
    p.prefix = prefix
    yield p
    p.stdin.close()
    assert p.wait(30) == 0


def stream(cuda):
    s = ctypes.c_void_p()
    assert cuda.cudaStreamCreateWithFlags(ctypes.byref(s), 1) == 0
    return s


def copy_back(cuda, t, s):
    """The bytes of device array `t`, copied on stream `s` (after whatever it was ordered on)."""
    out = np.empty(t.nbytes, np.uint8)
    assert cuda.cudaMemcpyAsync(out.ctypes.data, t.data_ptr, t.nbytes, D2H, s) == 0
    assert cuda.cudaStreamSynchronize(s) == 0
    return out


def test_a_cuda_frame_is_the_files_bytes_through_the_c_abi_and_the_runtime(cuda, producer):
    import meshdock as md
    m = md.read(DATA / "box.v41.msh")
    refused = cuda.stats().refused
    with md.attach("box", prefix=producer.prefix) as slot:
        f = slot.wait(5)
        assert f.number == 1
        assert f.points.__dlpack_device__() == (2, 0)
        with pytest.raises(TypeError, match="device memory"):
            np.asarray(f.points)
        s = stream(cuda)
        before = cuda.stats().stream_waits
        f.points.__dlpack__(stream=s.value)  # orders s after the slot's event
        assert cuda.stats().stream_waits == before + 1
        assert copy_back(cuda, f.points, s).tobytes() == m.points.tobytes()
        for k, block in enumerate(m.cells):
            assert copy_back(cuda, f.cells[k], s).tobytes() == block.data.tobytes(), k
        # The frame's end records a mark on every stream it was ordered on (its lease outlives
        # their work): the stream must outlive the frame, as a torch or CuPy stream does.
        f.release()
        del f
        assert cuda.cudaStreamDestroy(s) == 0
        # A new frame (the points scaled) comes through the same way.
        producer.stdin.write("scale 2\n")
        producer.stdin.flush()
        assert json.loads(producer.stdout.readline()) == {"frame": 2}
        g = slot.wait(5)
        assert g.number == 2
        s = stream(cuda)
        g.points.__dlpack__(stream=s.value)
        back = np.frombuffer(copy_back(cuda, g.points, s).tobytes(), np.float64)
        np.testing.assert_array_equal(back.reshape(m.points.shape), m.points * 2)
        g.release()
        del g
    assert cuda.cudaStreamDestroy(s) == 0
    assert cuda.stats().refused == refused, cuda.stats().last_refused


def test_dlpack_requests_on_device_memory(cuda, producer):
    """The array API's requests on a CUDA array: stream -1 orders nothing, None the legacy
    default stream; another device or a copy is a BufferError; a host stream argument is not."""
    import meshdock as md
    from meshdock import _dlpack
    refused = cuda.stats().refused
    with md.attach("box", prefix=producer.prefix) as slot:
        t = slot.wait(5).points
        before = cuda.stats().stream_waits
        t.__dlpack__(stream=-1)
        assert cuda.stats().stream_waits == before
        t.__dlpack__()  # None: the legacy default stream
        assert cuda.stats().stream_waits == before + 1
        with pytest.raises(BufferError, match=r"lives on device \(2, 0\), not \(1, 0\)"):
            t.__dlpack__(dl_device=(1, 0))
        with pytest.raises(BufferError, match="copy=True is not supported"):
            t.__dlpack__(copy=True)
        cap = t.__dlpack__(stream=-1, max_version=(1, 0))
        assert _dlpack._capsule_is_valid_py(cap, b"dltensor_versioned") == 1
        cap = t.__dlpack__(stream=-1)
        assert _dlpack._capsule_is_valid_py(cap, b"dltensor") == 1
        del t, cap
    assert cuda.stats().refused == refused, cuda.stats().last_refused


def test_a_consumer_that_comes_late_finds_the_producer_alive(producer):
    """The producer beats its heartbeat between publishes (its slot maintenance thread, as
    meshdockd's loop): a consumer attaching 1.5 s after the last publish, past its 1 s
    producer_timeout, attaches. (Before, only a publish beat it: CI's loaded sanitizer pass saw
    ProducerGone ("heartbeat 1011 ms old") when a consumer took a second to start.)"""
    import time

    import meshdock as md
    time.sleep(1.5)
    with md.attach("box", prefix=producer.prefix) as slot:
        assert slot.wait(5).number == 1


def test_a_held_cuda_frame_outlives_its_producer_killed(cuda, tmp_path):
    """The producer SIGKILLed while this process holds a CUDA frame (gpu-check's sigkill_daemon
    on a GPU): the next wait says ProducerGone, no CUDA call fails, the held frame's bytes still
    copy back (its import stays open until the frame goes), and then every import is closed."""
    import signal

    import meshdock as md
    m = md.read(DATA / "box.v41.msh")
    prefix = f"fckill{os.getpid()}."
    p = subprocess.Popen([PRODUCER, prefix, "box", str(DATA / "box.v41.msh")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(p.stdout.readline()) == {"frame": 1}
        refused = cuda.stats().refused
        with md.attach("box", prefix=prefix, producer_timeout=0.5) as slot:
            f = slot.wait(5)
            s = stream(cuda)
            f.points.__dlpack__(stream=s.value)
            mapped = cuda.stats().ipc_mappings
            assert mapped >= 1
            p.send_signal(signal.SIGKILL)
            p.wait(10)
            with pytest.raises(md.ProducerGone):
                slot.wait(5)
            assert copy_back(cuda, f.points, s).tobytes() == m.points.tobytes()
            f.release()
            del f
            assert cuda.cudaStreamDestroy(s) == 0
        assert cuda.stats().ipc_mappings == mapped - 1, "an import left open"
        assert cuda.stats().refused == refused, cuda.stats().last_refused
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(10)
        # The SIGKILLed producer could not unlink its segments: every run left 530 KB in
        # /dev/shm under this prefix.
        for leftover in Path("/dev/shm").glob(prefix + "*"):
            leftover.unlink(missing_ok=True)


def test_a_frame_that_grows_in_the_same_device_buffer_is_read(cuda, producer):
    """A field added to the mesh makes the frame bigger, and it still fits the ring slot's
    device buffer (whole 2 MiB granules), so the daemon gives it no fresh buffer. The SDK took
    an import's size from the first page that named it and refused the bigger frame ("buffer
    is N bytes; the page says data_size M"): gpu-check's field_stream on the fake found it."""
    import meshdock as md
    m = md.read(DATA / "box.v41.msh")
    refused = cuda.stats().refused
    with md.attach("box", prefix=producer.prefix) as slot:
        slot.wait(5).release()  # frame 1, ring slot 0: its import is cached
        producer.stdin.write("field\n")  # frame 2, ring slot 1 (its placeholder's granule)
        producer.stdin.flush()
        assert json.loads(producer.stdout.readline()) == {"frame": 2}
        slot.wait(5).release()
        producer.stdin.write("scale 1\n")  # frame 3: ring slot 0 again, bigger, same buffer
        producer.stdin.flush()
        assert json.loads(producer.stdout.readline()) == {"frame": 3}
        f = slot.wait(5)
        assert f.number == 3
        s = stream(cuda)
        extra = f.point_data["extra"]
        extra.__dlpack__(stream=s.value)
        back = np.frombuffer(copy_back(cuda, extra, s).tobytes(), np.float64)
        np.testing.assert_array_equal(back, 0.5 * np.arange(len(m.points)))
        f.release()
        del f, extra
        assert cuda.cudaStreamDestroy(s) == 0
    assert cuda.stats().refused == refused, cuda.stats().last_refused


DAEMON = os.environ.get("MESHDOCK_FAKE_CUDA_DAEMON")
CTL = os.environ.get("MESHDOCK_FAKE_CUDA_CTL")


@pytest.mark.skipif(not (DAEMON and CTL), reason="needs the fake build's meshdockd and meshdockctl")
def test_a_daemon_whose_gpu_context_is_lost_stops_with_status_1(cuda, tmp_path):
    """A sticky CUDA error (here the fake's context lost 1.5 s after the daemon's first
    cudaMalloc, as a device fault or an uncorrectable ECC error would lose it) makes every later
    load and publish fail while the process looks alive. The daemon notices it idle, within a
    maintenance tick, says which error in its log, sets its slots' shutdown flags (the consumer
    waiting gets ProducerGone, not a hang), removes its segments and exits 1, which systemd's
    Restart=on-failure answers with a fresh process. Before, it served errors for good."""
    import meshdock as md
    import shutil
    import time
    shutil.copy(DATA / "box.v41.msh", tmp_path / "box.msh")
    sock = tmp_path / "d.sock"
    prefix = f"fclost{os.getpid()}."
    env = dict(os.environ, MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS="1500")
    d = subprocess.Popen([DAEMON, "--listen", f"unix:{sock}", "--root", str(tmp_path),
                          "--device", "cuda:0", "--prefix", prefix, "--log-level", "info"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert d.stdout.readline().startswith("meshdockd ready"), d.stderr.read()
        t0 = time.monotonic()
        load = subprocess.run([CTL, "--addr", f"unix:{sock}", "load", str(tmp_path / "box.msh"),
                               "--name", "box"], capture_output=True, text=True, timeout=30)
        assert load.returncode == 0, load.stderr
        with md.attach("box", prefix=prefix) as slot:
            assert slot.wait(5).number == 1
            with pytest.raises(md.ProducerGone):
                slot.wait(30)
        assert d.wait(30) == 1
        took = time.monotonic() - t0
    finally:
        if d.poll() is None:
            d.kill()
    log = d.stderr.read()
    assert "cuda:0: cudaErrorIllegalAddress (an illegal memory access was encountered" in log, log
    assert "meshdockd stops with exit status 1" in log, log
    assert took < 15, took
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(prefix)]


@pytest.mark.skipif(not (DAEMON and CTL), reason="needs the fake build's meshdockd and meshdockctl")
def test_after_a_lost_gpu_the_restarted_daemon_serves_the_configured_mesh_again(cuda, tmp_path):
    """What systemd makes of a lost GPU: the daemon exits 1, Restart=on-failure starts another
    (here the test does), whose "load" key loads the mesh again on a fresh context, and a
    consumer attached with reattach=True gets its frame from the new daemon instead of
    ProducerGone."""
    import meshdock as md
    import shutil
    shutil.copy(DATA / "box.v41.msh", tmp_path / "box.msh")
    sock = tmp_path / "d.sock"
    prefix = f"fcrest{os.getpid()}."
    config = tmp_path / "meshdockd.json"
    config.write_text(json.dumps({
        "listen": f"unix:{sock}", "roots": [str(tmp_path)], "device": "cuda:0",
        "prefix": prefix, "load": [{"path": str(tmp_path / "box.msh"), "name": "box"}]}))

    def start(**env):
        d = subprocess.Popen([DAEMON, "--config", str(config)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))
        assert d.stdout.readline().startswith("meshdockd ready"), d.stderr.read()
        return d

    first = start(MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS="1500")
    second = None
    try:
        with md.attach("box", prefix=prefix, timeout=30, reattach=True) as slot:
            assert slot.wait(30).number == 1  # loaded by the configuration, no client
            assert first.wait(30) == 1  # the GPU lost
            second = start()  # what Restart=on-failure does
            f = slot.wait(30)
            assert f.number == 1  # the new daemon's first frame
            assert slot.reattaches == 1
            s = stream(cuda)
            f.points.__dlpack__(stream=s.value)
            np.testing.assert_array_equal(
                np.frombuffer(copy_back(cuda, f.points, s).tobytes(), np.float64),
                md.read(DATA / "box.v41.msh").points.ravel())
            f.release()
            del f
            assert cuda.cudaStreamDestroy(s) == 0
        second.terminate()
        assert second.wait(30) == 0
    finally:
        for d in (first, second):
            if d and d.poll() is None:
                d.kill()


def test_a_consumer_whose_own_context_is_lost_gets_an_error_not_a_crash(producer):
    """The consumer's CUDA context lost (the fake's, right after its first import): the wait
    that opens the frame raises SdkError naming the call and the error, nothing aborts, the
    slot closes and the process exits normally; the producer serves on (its fixture checks it
    exits cleanly)."""
    script = (
        "import sys, meshdock as md\n"
        "with md.attach('box', prefix=sys.argv[1]) as slot:\n"
        "    try:\n"
        "        slot.wait(5)\n"
        "        print('no error')\n"
        "    except md.SdkError as e:\n"
        "        print('SdkError:', e)\n"
        "print('closed')\n")
    r = subprocess.run([sys.executable, "-c", script, producer.prefix], capture_output=True,
                       text=True, timeout=60,
                       env=dict(os.environ, MESHDOCK_FAKE_CUDA_LOSE_AFTER_MS="0"))
    assert r.returncode == 0, r.stderr
    first, last = r.stdout.splitlines()
    assert first.startswith("SdkError: slot 'box'"), r.stdout
    assert "an illegal memory access was encountered" in first, r.stdout
    assert last == "closed"
