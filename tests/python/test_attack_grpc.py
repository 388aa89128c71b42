"""Issue 12, gRPC availability: a hostile client of meshdockd, in its own process, against a real
daemon. Each test failed on the code before the fix (see the docstrings): an unauthenticated
64 MiB request read into memory over TCP and a tokenless health check; Watch streams without a
cap; loads racing past the device memory budget, a Publish ignoring it, a zlib bomb inflated
before any budget; a Load that outlives its client's deadline; a second daemon unlinking the
first one's socket."""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib

import grpc
import numpy as np
import pytest

import conftest
import meshdock
from daemon_util import BIN, Daemon, as_user, shm_names, wait_for
from meshdock.health import health_pb2, health_pb2_grpc
from meshdock.v1 import meshdock_pb2 as pb
from meshdock.v1 import meshdock_pb2_grpc as pbg

S = grpc.StatusCode
TOKEN = "s3cret-token-for-tests"


def attacker(code, *args):
    """Runs `code` in a separate Python process (sys.argv[1:] = args); starts it and returns
    the Popen. The code prints one JSON line when it has done its harm, then waits for stdin
    to close before it lets go (so its streams stay open while the test looks)."""
    prelude = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {str(conftest.BUILD / "python")!r})
        import grpc
        from meshdock.v1 import meshdock_pb2 as pb, meshdock_pb2_grpc as pbg
    """)
    return subprocess.Popen([sys.executable, "-c", prelude + textwrap.dedent(code), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def report(proc, timeout=60):
    """The attacker's JSON line."""
    import select
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the attacker said nothing in time"
    return json.loads(proc.stdout.readline())


def finish(proc):
    proc.stdin.close()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def vm_kib(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} for pid {pid}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tcp_daemon(tmp_path, files=("box.v41.msh",)):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    return Daemon(tmp_path, files, listen=f"127.0.0.1:{free_port()}",
                  config={"token_file": str(token)})


def publish(stub, data, metadata=None, timeout=10, **header):
    """One Publish: a client stream of chunks; unary on the code before issue 12 (so that these
    tests can run there and show how it failed)."""
    if hasattr(pb, "PublishChunk"):
        from meshdock.client import publish_chunks
        return stub.Publish(publish_chunks(pb, data, **header), metadata=metadata,
                            timeout=timeout)
    return stub.Publish(pb.PublishRequest(data=data, **header), metadata=metadata,
                        timeout=timeout)


def _code(call):
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value.code(), e.value.details()


# ---- 1. authentication before the body; health needs the token over TCP ---------------------

# A LoadRequest whose path (field 1) is argv[2] MiB: one message, no token.
BIG_REQUEST = """
    ch = grpc.insecure_channel(sys.argv[1], options=[("grpc.max_send_message_length", -1)])
    raw = ch.unary_unary("/meshdock.v1.Meshdock/Load",
                         request_serializer=lambda b: b, response_deserializer=lambda b: b)
    n = int(sys.argv[2]) << 20
    body = b"\\x0a" + bytes([(n & 0x7f) | 0x80, ((n >> 7) & 0x7f) | 0x80,
                             ((n >> 14) & 0x7f) | 0x80, n >> 21]) + b"/" * n
    try:
        raw(body, timeout=30)
        out = {"code": "OK"}
    except grpc.RpcError as e:
        out = {"code": e.code().name, "details": e.details()}
    print(json.dumps(out), flush=True)
    sys.stdin.read()
"""


def test_an_unauthenticated_64_mib_request_is_not_read_into_memory(tmp_path):
    """Before: the daemon took messages of up to 1 GiB and checked the token after reading one:
    VmHWM grew by the 64 MiB sent, then PERMISSION_DENIED."""
    d = tcp_daemon(tmp_path)
    try:
        before = vm_kib(d.proc.pid, "VmHWM")
        a = attacker(BIG_REQUEST, d.addr, "64")
        got = report(a)
        finish(a)
        assert got["code"] in ("RESOURCE_EXHAUSTED", "UNAUTHENTICATED", "PERMISSION_DENIED"), got
        grown = vm_kib(d.proc.pid, "VmHWM") - before
        assert grown < 16 << 10, f"the daemon's peak RSS grew by {grown} KiB for a refused call"
        # The daemon still serves a client with the token.
        assert len(d.stub.List(pb.ListRequest(),
                               metadata=[("authorization", f"Bearer {TOKEN}")]).slots) == 0
    finally:
        assert d.stop() == 0, d.stderr


def test_a_huge_request_on_the_unix_socket_is_cut_off(tmp_path):
    """Before: the daemon read a 256 MiB message whole (VmHWM +256 MiB), then refused it. Now
    gRPC's buffers are capped (max_rpc_memory, 64 MiB): the stream is reset on the way."""
    d = Daemon(tmp_path, ("box.v41.msh",))
    try:
        before = vm_kib(d.proc.pid, "VmHWM")
        a = attacker(BIG_REQUEST, d.addr, "256")
        got = report(a)
        finish(a)
        grown = vm_kib(d.proc.pid, "VmHWM") - before
        assert grown < 128 << 10, f"the daemon's peak RSS grew by {grown} KiB"
        assert got["code"] == "RESOURCE_EXHAUSTED", got
        assert len(d.stub.List(pb.ListRequest(), timeout=5).slots) == 0
    finally:
        assert d.stop() == 0, d.stderr


def test_health_and_publish_need_the_token_over_tcp(tmp_path):
    """Before: grpc++'s default health service answered SERVING to anyone."""
    d = tcp_daemon(tmp_path)
    good = [("authorization", f"Bearer {TOKEN}")]
    try:
        health = health_pb2_grpc.HealthStub(d.channel)
        req = health_pb2.HealthCheckRequest()
        code, details = _code(lambda: health.Check(req, timeout=5))
        assert code == S.PERMISSION_DENIED and "Bearer" in details
        assert "needs \"authorization: Bearer <token>\" metadata" in details
        for wrong in ("Bearer " + TOKEN[:-1], "Bearer " + TOKEN + "x", "Bearer", TOKEN, ""):
            code, details = _code(lambda: health.Check(req, metadata=[("authorization", wrong)],
                                                       timeout=5))
            assert code == S.PERMISSION_DENIED, wrong
            # A wrong token is told apart from none (it was told to send what it sent).
            assert ("is not this daemon's" if wrong.startswith("Bearer ") else
                    "is not \"Bearer <token>\"") in details, (wrong, details)
            assert TOKEN not in details
        assert health.Check(req, metadata=good, timeout=5).status == \
            health_pb2.HealthCheckResponse.SERVING
        assert _code(lambda: health.Check(health_pb2.HealthCheckRequest(service="nope"),
                                          metadata=good, timeout=5))[0] == S.NOT_FOUND
        # Publish without the token: refused before its chunks are read.
        list(d.stub.Load(pb.LoadRequest(path=str(d.root / "box.v41.msh"), name="box"),
                         metadata=good))
        assert _code(lambda: publish(d.stub, b"\0" * 2400, name="box", field="point_data/T",
                                     dtype=pb.DType(code=2, bits=64, lanes=1),
                                     shape=[300]))[0] == S.PERMISSION_DENIED
        if hasattr(pb, "PublishChunk"):
            one = pb.PublishChunk(name="box", field="point_data/T", shape=[300],
                                  dtype=pb.DType(code=2, bits=64, lanes=1), data=b"\0" * 2400)
            assert _code(lambda: d.stub.PublishSmall(one, timeout=5))[0] == S.PERMISSION_DENIED
            assert d.stub.PublishSmall(one, metadata=good, timeout=5).frame == 2
        r = subprocess.run([str(BIN / "meshdockctl"), "--addr", d.addr, "--token", TOKEN,
                            "health"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.strip().endswith("SERVING"), r.stderr
    finally:
        assert d.stop() == 0, d.stderr


# ---- 2. stream caps --------------------------------------------------------------------------

WATCHER = """
    ch = grpc.insecure_channel(sys.argv[1])
    stub = pbg.MeshdockStub(ch)
    md = [("authorization", "Bearer " + sys.argv[3])] if sys.argv[3] else None
    calls = [stub.Watch(pb.WatchRequest(), metadata=md, timeout=60)
             for _ in range(int(sys.argv[2]))]
    end = time.monotonic() + 30  # 200 streams on a loaded CI box: not always within 10 s
    def ended():
        return [c for c in calls if c.done()]
    while time.monotonic() < end and len(ended()) < int(sys.argv[2]) - 64:
        time.sleep(0.05)
    time.sleep(0.3)
    codes = {}
    for c in ended():
        codes[c.code().name] = codes.get(c.code().name, 0) + 1
    msgs = sorted({c.details() for c in ended()})[:2]
    print(json.dumps({"ended": codes, "open": len(calls) - len(ended()), "messages": msgs}),
          flush=True)
    sys.stdin.read()
    for c in calls:
        c.cancel()
"""


def test_watch_streams_are_capped_in_total_and_other_calls_still_answer(tmp_path):
    """Before: every one of the 200 streams held a daemon thread; none was refused. (The
    per-uid cap is raised out of the way: this is the total's test.)"""
    d = Daemon(tmp_path, ("box.v41.msh",), config={"max_streams_per_peer": 1000})
    a = attacker(WATCHER, d.addr, "200", "")
    try:
        got = report(a)
        assert got["ended"] == {"RESOURCE_EXHAUSTED": 136} and got["open"] == 64, got
        assert "max_streams allows (64)" in got["messages"][0]
        other = pbg.MeshdockStub(grpc.insecure_channel(d.addr))
        for _ in range(5):  # answered, not left waiting for a thread (5 s: a loaded CI box)
            t0 = time.monotonic()
            assert len(other.List(pb.ListRequest(), timeout=5.0).slots) == 0
            assert time.monotonic() - t0 < 5.0
        d.load("box.v41.msh", "box")  # a Load (a stream too, but not a Watch) still runs
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


def test_watch_streams_are_capped_per_tcp_client(tmp_path):
    """Before: no cap at all; one client address could take every stream."""
    d = tcp_daemon(tmp_path)
    a = attacker(WATCHER, d.addr, "80", TOKEN)
    try:
        got = report(a)
        assert got["ended"] == {"RESOURCE_EXHAUSTED": 64} and got["open"] == 16, got
        assert "ipv4:127.0.0.1 has 16 streams open, the most max_streams_per_peer allows (16)" \
            in got["messages"][0]
        good = [("authorization", f"Bearer {TOKEN}")]
        t0 = time.monotonic()  # answered (5 s: slack for a loaded CI box)
        assert len(d.stub.List(pb.ListRequest(), metadata=good, timeout=5.0).slots) == 0
        assert time.monotonic() - t0 < 5.0
    finally:
        finish(a)
    # Its streams gone, the same address may open streams again.
    good = [("authorization", f"Bearer {TOKEN}")]
    try:
        def one_stream_admitted():
            c = d.stub.Watch(pb.WatchRequest(), metadata=good, timeout=0.5)
            try:
                next(c)
            except grpc.RpcError as e:
                return e.code() == S.DEADLINE_EXCEEDED  # admitted, no event within 0.5 s
            return False
        assert wait_for(one_stream_admitted, timeout=20)
    finally:
        assert d.stop() == 0, d.stderr


# ---- 3. budgets ------------------------------------------------------------------------------

BOX_FRAME = 91_704  # bytes box.v41.msh publishes a frame (test_daemon.test_budgets_are_enforced)


def test_parallel_loads_cannot_race_past_the_budget(tmp_path):
    """Before: the budget was checked against buffers alive only; 6 loads held at the copy
    phase all passed the check (6 x 275,112 bytes admitted where 2 fit)."""
    budget = 2 * 3 * BOX_FRAME + 10_000
    d = Daemon(tmp_path, ("box.v41.msh",), config={"device_memory_budget": budget},
               env={"MESHDOCK_FAILPOINT": "copy:500"})
    a = attacker("""
        import threading
        stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
        codes = {}
        def load(k):
            try:
                list(stub.Load(pb.LoadRequest(path=sys.argv[2], name=f"m{k}"), timeout=30))
                c = "OK"
            except grpc.RpcError as e:
                c = e.code().name
            codes[k] = c
        ts = [threading.Thread(target=load, args=(k,)) for k in range(6)]
        for t in ts: t.start()
        for t in ts: t.join()
        print(json.dumps(sorted(codes.values())), flush=True)
        sys.stdin.read()
    """, d.addr, str(d.root / "box.v41.msh"))
    try:
        got = report(a)
        assert got == ["OK", "OK"] + ["RESOURCE_EXHAUSTED"] * 4, got
        st = d.stub.Stats(pb.StatsRequest())
        assert len(st.slots) == 2 and st.device_memory_used <= budget
        loaded = [n[len(d.prefix):] for n in shm_names(d.prefix)
                  if n[len(d.prefix):] in {f"m{k}" for k in range(6)}]
        assert len(loaded) == 2 and sorted(loaded) == sorted(s.name for s in st.slots)
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


def test_publish_is_held_to_the_budget(tmp_path):
    """Before: Publish never looked at the budget: a field that grows the frame past it was
    published."""
    d = Daemon(tmp_path, ("box.v41.msh",), config={"device_memory_budget": BOX_FRAME + 20_000})
    try:
        d.load("box.v41.msh", "box", num_slots=1)
        f64 = pb.DType(code=2, bits=64, lanes=1)
        assert publish(d.stub, np.ones(300).tobytes(), name="box", field="point_data/T",
                       dtype=f64, shape=[300]).frame == 2  # 2,400 bytes more: fits
        wide = np.ones((300, 40))  # 96,000 bytes more: does not
        code, details = _code(lambda: publish(d.stub, wide.tobytes(), name="box",
                                              field="point_data/W", dtype=f64, shape=[300, 40]))
        assert code == S.RESOURCE_EXHAUSTED and "device_memory_budget" in details and \
            "'box'" in details, details
        if hasattr(pb, "PublishChunk"):  # the one-message form is held to it too
            one = pb.PublishChunk(name="box", field="point_data/W", dtype=f64, shape=[300, 40],
                                  data=wide.tobytes())
            assert _code(lambda: d.stub.PublishSmall(one))[0] == S.RESOURCE_EXHAUSTED
        st = d.stub.Stats(pb.StatsRequest())
        assert st.slots[0].frames == 2 and st.device_memory_used <= BOX_FRAME + 20_000
    finally:
        assert d.stop() == 0, d.stderr


def zlib_bomb(path, claimed_mib):
    """A VTU whose Points claim `claimed_mib` MiB in 1 MiB zlib blocks of nearly nothing
    (a few bytes of noise every 4 KiB keep deflate's ratio near 200, under the 1032 a single
    array is held to): about claimed_mib x 5 KiB on disk."""
    rng = np.random.default_rng(12)
    block = bytearray(1 << 20)
    for at in range(0, len(block), 4096):
        block[at:at + 8] = rng.bytes(8)
    packed = zlib.compress(bytes(block), 9)
    n = claimed_mib
    header = struct.pack(f"<{3 + n}Q", n, 1 << 20, 1 << 20, *([len(packed)] * n))
    points = (n << 20) // 24
    xml = (f'<?xml version="1.0"?>\n<VTKFile type="UnstructuredGrid" version="0.1" '
           f'byte_order="LittleEndian" header_type="UInt64" compressor="vtkZLibDataCompressor">\n'
           f'<UnstructuredGrid>\n<Piece NumberOfPoints="{points}" NumberOfCells="1">\n'
           f'<Points>\n<DataArray type="Float64" Name="Points" NumberOfComponents="3" '
           f'format="appended" offset="0"/>\n</Points>\n<Cells>\n'
           f'<DataArray type="Int64" Name="connectivity" format="ascii">0</DataArray>\n'
           f'<DataArray type="Int64" Name="offsets" format="ascii">1</DataArray>\n'
           f'<DataArray type="UInt8" Name="types" format="ascii">1</DataArray>\n'
           f'</Cells>\n</Piece>\n</UnstructuredGrid>\n<AppendedData encoding="raw">\n_')
    with open(path, "wb") as f:
        f.write(xml.encode() + header + packed * n + b"\n</AppendedData>\n</VTKFile>\n")
    return (n << 20), len(packed) * n


def test_a_zlib_bomb_is_refused_from_its_headers(tmp_path):
    """Before: its 384 MiB were inflated (daemon VmHWM past 384 MiB) before any budget
    applied."""
    d = Daemon(tmp_path, (), config={"device_memory_budget": 64 << 20})
    try:
        claimed, packed = zlib_bomb(d.root / "bomb.vtu", 384)
        assert packed < 4 << 20  # a small file
        before = vm_kib(d.proc.pid, "VmHWM")
        code, details = _code(lambda: d.load("bomb.vtu", "bomb"))
        assert code == S.RESOURCE_EXHAUSTED, (code, details)
        assert "bomb.vtu" in details and "DataArray 'Points'" in details and \
            f"claims {claimed} bytes" in details, details
        grown = vm_kib(d.proc.pid, "VmHWM") - before
        assert grown < 64 << 10, f"the daemon's peak RSS grew by {grown} KiB"
        assert len(d.stub.List(pb.ListRequest()).slots) == 0 and shm_names(d.prefix) == []
    finally:
        assert d.stop() == 0, d.stderr


# ---- 4. a cancelled Load leaves nothing behind -----------------------------------------------

def test_a_load_past_its_deadline_leaves_nothing_behind(tmp_path):
    """Before: the load went on after DEADLINE_EXCEEDED and the mesh appeared 2 s later."""
    d = Daemon(tmp_path, ("box.v41.msh",), env={"MESHDOCK_FAILPOINT": "read:2000"})
    try:
        t0 = time.monotonic()
        code, _ = _code(lambda: list(d.stub.Load(
            pb.LoadRequest(path=str(d.root / "box.v41.msh"), name="late"), timeout=0.5)))
        assert code == S.DEADLINE_EXCEEDED and time.monotonic() - t0 < 1.5
        # Past the failpoint: the load has reached its next phase and given up (its log line;
        # a fixed 2.5 s sleep was not always enough on a loaded CI box).
        assert wait_for(lambda: any("load of 'late' cancelled by its client" in x
                                    for x in d.log), timeout=20), d.log
        assert len(d.stub.List(pb.ListRequest()).slots) == 0
        assert [n for n in shm_names(d.prefix) if "late" in n] == []
    finally:
        assert d.stop() == 0, d.stderr
    assert "load of 'late' cancelled by its client" in d.stderr


def test_a_deadline_passing_during_the_copy_publishes_nothing(tmp_path):
    """A trial: a 77 MiB mesh loading in 80 ms under a 50 ms deadline was published after the
    client got DEADLINE_EXCEEDED (the last look at the client was before the copy), so a retry
    met ALREADY_EXISTS. The failpoint holds the load after its copy, before the frame goes out."""
    d = Daemon(tmp_path, ("box.v41.msh",), env={"MESHDOCK_FAILPOINT": "mid_write:1500"})
    try:
        code, _ = _code(lambda: list(d.stub.Load(
            pb.LoadRequest(path=str(d.root / "box.v41.msh"), name="late"), timeout=0.5)))
        assert code == S.DEADLINE_EXCEEDED
        # Past the failpoint, the load given up (its log line; a fixed 2 s sleep was not always
        # enough on a loaded CI box, and the retry below met ALREADY_EXISTS).
        assert wait_for(lambda: any("load of 'late' cancelled by its client" in x
                                    for x in d.log), timeout=20), d.log
        assert len(d.stub.List(pb.ListRequest()).slots) == 0
        assert [n for n in shm_names(d.prefix) if "late" in n] == []
        d.load("box.v41.msh", "late")  # the name is free: a retry loads it
    finally:
        assert d.stop() == 0, d.stderr
    assert "load of 'late' cancelled by its client (gone or past its deadline) during the copy" \
        in d.stderr


def test_a_name_that_is_another_slots_segment_is_refused(tmp_path):
    """A trial: loading "box.catalog" beside "box" made box's catalog object a 433-byte
    control block (every consumer of box failed: bad magic), and unloading it unlinked box's
    catalog; "a.leases" and a data segment's name did the same to leases and buffers."""
    d = Daemon(tmp_path, ("box.v41.msh",))
    try:
        d.load("box.v41.msh", "box")
        before = d.catalog("box")
        manifest, _ = d.newest("box")
        data_object = [n for n in shm_names(d.prefix) if n.startswith(d.prefix + "d")][0]
        for name in ("box.catalog", "box.leases", data_object[len(d.prefix):]):
            code, details = _code(lambda: list(d.stub.Load(
                pb.LoadRequest(path=str(d.root / "box.v41.msh"), name=name))))
            assert code == S.INVALID_ARGUMENT, (name, code, details)
            assert f"slot name '{name}'" in details
            with meshdock.Client(d.addr) as c, pytest.raises(meshdock.DaemonError) as e:
                c.publish_tensor(name, np.zeros(4, np.float32))
            assert e.value.code == "INVALID_ARGUMENT" and f"slot name '{name}'" in e.value.message
        assert [s.name for s in d.stub.List(pb.ListRequest()).slots] == ["box"]
        assert d.catalog("box").num_slots == before.num_slots
        assert d.newest("box")[0] == manifest  # box's consumers still read it
    finally:
        assert d.stop() == 0, d.stderr


# ---- 5. a second daemon on a live socket -----------------------------------------------------

def test_a_second_daemon_leaves_a_live_socket_alone(tmp_path):
    """Before: the second meshdockd unlinked the first one's socket and served in its place."""
    (tmp_path / "a").mkdir()
    first = Daemon(tmp_path / "a", ("box.v41.msh",))
    try:
        ino = os.stat(first.sock).st_ino
        r = subprocess.run([str(BIN / "meshdockd"), "--listen", first.addr, "--root",
                            str(first.root), "--prefix", first.prefix + "b."],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode != 0 and f"pid {first.proc.pid}" in r.stderr, (r.returncode, r.stderr)
        assert "ready" not in r.stdout
        assert os.stat(first.sock).st_ino == ino
        assert len(first.stub.List(pb.ListRequest(), timeout=5).slots) == 0
    finally:
        assert first.stop() == 0, first.stderr
    # A dead socket (nobody listening) is replaced.
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp_path / "dead.sock"))
    s.close()
    (tmp_path / "b").mkdir()
    second = Daemon(tmp_path / "b", (), listen=f"unix:{tmp_path / 'dead.sock'}")
    try:
        assert len(second.stub.List(pb.ListRequest(), timeout=5).slots) == 0
    finally:
        assert second.stop() == 0, second.stderr


def test_watch_streams_are_capped_per_unix_socket_user(tmp_path):
    """Before: on the Unix socket only the total cap applied (gRPC names every Unix caller
    alike), so one user of the socket could take all 64 streams from the others. Now a
    connection's SO_PEERCRED uid is its key: every connection of that user together."""
    d = Daemon(tmp_path, ("box.v41.msh",))
    a = attacker(WATCHER.replace("len(ended()) < int(sys.argv[2]) - 64",
                                 "len(ended()) < int(sys.argv[2]) - 16"), d.addr, "40", "")
    try:
        got = report(a)
        assert got["ended"] == {"RESOURCE_EXHAUSTED": 24} and got["open"] == 16, got
        assert (f"uid {os.getuid()} has 16 streams open, the most max_streams_per_peer allows "
                "(16)") in got["messages"][0], got
        t0 = time.monotonic()  # other calls of the same user still answer (5 s: a loaded box)
        assert len(d.stub.List(pb.ListRequest(), timeout=5.0).slots) == 0
        assert time.monotonic() - t0 < 5.0
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


CONNECTOR = """
import json, socket, sys, time
path, n, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.setblocking(False)
    socks.append(s)
closed = set()
def look():
    for k, s in enumerate(socks):
        try:
            if k not in closed and s.recv(1) == b"":
                closed.add(k)
        except BlockingIOError:
            pass  # open, nothing sent yet
# A second for the daemon to close what it refuses, and on (up to 30 s) until `want` are
# closed: a loaded CI box did not always accept them all within the second.
time.sleep(1.0)
end = time.monotonic() + 30
look()
while len(closed) < want and time.monotonic() < end:
    time.sleep(0.05)
    look()
time.sleep(0.2)  # and no more than that
look()
print(json.dumps({"open": n - len(closed), "closed": len(closed)}), flush=True)
sys.stdin.read()
"""


def test_one_user_cannot_take_every_unix_connection(tmp_path):
    """Before: no cap on Unix-socket connections; one member of the socket's group could open
    connections until the daemon ran out of fds and accepted no one's. Now a uid's connections
    beyond max_connections_per_uid are closed as they are accepted, and logged; the other users
    (here root, when the attacker is nobody) and the same user once it lets go are served."""
    sock_dir = tempfile.mkdtemp(prefix="md-conncap-")
    os.chmod(sock_dir, 0o755)
    d = Daemon(tmp_path, ("box.v41.msh",), listen=f"unix:{sock_dir}/d.sock",
               config={"max_connections_per_uid": 8, "socket_mode": "0666"})
    as_nobody = os.geteuid() == 0  # then the flood comes from another uid than the test's
    argv = lambda n, w: [sys.executable, "-c", CONNECTOR,  # noqa: E731
                         f"{sock_dir}/d.sock", str(n), str(w)]
    run = lambda n, w: subprocess.Popen(  # noqa: E731
        as_user(argv(n, w), 65534, os.getegid(), os.getgroups()) if as_nobody else argv(n, w),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        a = run(40, 32)
        try:
            assert report(a) == {"open": 8, "closed": 32}
            assert wait_for(lambda: any("max_connections_per_uid allows" in line
                                        for line in d.log))
            line = [x for x in d.log if "max_connections_per_uid allows" in x][0]
            uid = 65534 if as_nobody else os.getuid()
            assert f"refused a connection of pid {a.pid} uid {uid}" in line, line
            assert "its uid has 8 connections open" in line, line
            if as_nobody:
                assert len(d.stub.List(pb.ListRequest(), timeout=10.0).slots) == 0
        finally:
            finish(a)
        # The attacker is gone: once gRPC has closed its connections, its uid may connect again.
        for _ in range(10):
            b = run(4, 0)
            try:
                got = report(b)
            finally:
                finish(b)
            if got == {"open": 4, "closed": 0}:
                break
            time.sleep(0.2)
        assert got == {"open": 4, "closed": 0}
    finally:
        assert d.stop() == 0, d.stderr
        shutil.rmtree(sock_dir, ignore_errors=True)


def test_users_together_cannot_take_every_unix_connection(tmp_path):
    """Before: only each uid's connections were capped; members of the group together could
    still open connections until the daemon had no fd left for a load or a segment. Now
    max_connections caps them all (here 6, while one uid may hold 8); root and the daemon's own
    uid are not held to it, so the operator still gets in."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the flood must come from a uid other than the daemon's")
    sock_dir = tempfile.mkdtemp(prefix="md-conntotal-")
    os.chmod(sock_dir, 0o755)
    d = Daemon(tmp_path, ("box.v41.msh",), listen=f"unix:{sock_dir}/d.sock",
               config={"max_connections_per_uid": 8, "max_connections": 6, "socket_mode": "0666"})
    argv = [sys.executable, "-c", CONNECTOR, f"{sock_dir}/d.sock", "10", "4"]
    a = subprocess.Popen(as_user(argv, 65534, 65534), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        try:
            assert report(a) == {"open": 6, "closed": 4}
            assert wait_for(lambda: any("the most max_connections allows" in line
                                        for line in d.log))
            line = [x for x in d.log if "the most max_connections allows" in x][0]
            assert f"refused a connection of pid {a.pid} uid 65534" in line, line
            assert "6 connections are open" in line, line
            # The daemon's own uid (root here) is not held to the total.
            assert len(d.stub.List(pb.ListRequest(), timeout=5.0).slots) == 0
            d.load("box.v41.msh", "box")
        finally:
            finish(a)
    finally:
        assert d.stop() == 0, d.stderr
        shutil.rmtree(sock_dir, ignore_errors=True)


# ---- 6. publishes parked in the registry's waits (a reload, a tensor's creation) -------------

# argv[1] addr, argv[2] calls: that many unary PublishSmall calls of point_data/T to "box", one
# after another, each given up after 0.5 s (the daemon's thread goes on waiting); one line of
# {code: count} once every call has ended for the attacker.
PARKER = """
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    head = pb.PublishChunk(name="box", field="point_data/T", shape=[1],
                           dtype=pb.DType(code=2, bits=64, lanes=1), data=bytes(8))
    got = {}
    for _ in range(int(sys.argv[2])):
        try:
            stub.PublishSmall(head, timeout=0.5)
            k = "OK"
        except grpc.RpcError as e:
            k = e.code().name
        got[k] = got.get(k, 0) + 1
    print(json.dumps(got), flush=True)
    sys.stdin.read()
"""


def test_publishes_parked_during_a_reload_cannot_take_every_rpc_thread(tmp_path):
    """Before: a PublishSmall (unary, so it held no stream ticket) arriving while its mesh was
    being reloaded parked its daemon thread in Registry::serving until the reload ended (up to
    30 s), whether its client still waited or not: one client's 40 calls, each given up after
    0.5 s, took every thread max_rpc_threads allows (24 here), and another client's List was
    refused "Server Threadpool Exhausted" until the reload ended. Now a publish waits only while
    it holds a stream ticket (max_streams_per_peer: 4 here); the others are refused at once, as
    before those waits."""
    import threading
    d = Daemon(tmp_path, ("box.v41b.msh",),
               config={"max_streams": 4, "max_streams_per_peer": 4, "max_rpc_threads": 24},
               env={"MESHDOCK_FAILPOINT": "mid_write:20000:1"})
    c = meshdock.Client(d.addr)
    a = None
    try:
        c.load(d.root / "box.v41b.msh", name="box")
        copying, result = threading.Event(), {}

        def reload():
            try:
                result["info"] = c.reload("box", progress=lambda p: p.phase == "COPY" and
                                          copying.set())
            finally:
                copying.set()

        t = threading.Thread(target=reload)
        t.start()
        assert copying.wait(30)
        # Held mid-write: the reload has taken the slot from the old entry (a catalog page's
        # seq is odd), so a publish to "box" now waits in Registry::serving.
        assert wait_for(lambda: any(p.seq % 2 for p in d.catalog("box").pages), timeout=30)
        a = attacker(PARKER, d.addr, "40")
        got = report(a)
        assert t.is_alive(), "the reload ended before the attack did; nothing was shown"
        other = pbg.MeshdockStub(grpc.insecure_channel(d.addr))
        for _ in range(3):
            assert [s.name for s in other.List(pb.ListRequest(), timeout=3.0).slots] == ["box"]
        assert t.is_alive()
        # 4 waited (held to their 0.5 s by the attacker); the rest were refused at once.
        assert got.get("FAILED_PRECONDITION", 0) >= 30, got
        assert wait_for(lambda: any("PublishSmall" in line and "is being reloaded" in line
                                    for line in d.log)), d.log[-5:]
        t.join(60)
        assert "info" in result  # the reload itself went through
        assert [s.name for s in other.List(pb.ListRequest(), timeout=3.0).slots] == ["box"]
    finally:
        if a is not None:
            finish(a)
        c.close()
        assert d.stop() == 0, d.stderr


# argv[1] addr, then triples NAME FIELD CODE (names as Python escapes, eval'd): one PublishSmall
# each of one 64-bit element of dtype code CODE; prints the list of error details.
ECHOER = """
    import ast
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    out = []
    for name, field, code in zip(sys.argv[2::3], sys.argv[3::3], sys.argv[4::3]):
        head = pb.PublishChunk(name=ast.literal_eval(name), field=field, shape=[1],
                               dtype=pb.DType(code=int(code), bits=64, lanes=1), data=bytes(8))
        try:
            stub.PublishSmall(head, timeout=10)
            out.append("OK")
        except grpc.RpcError as e:
            out.append(e.details())
    print(json.dumps(out), flush=True)
    sys.stdin.read()
"""


def test_a_publish_refusal_says_the_slot_name_escaped(tmp_path):
    """Before: a refused publish's message began "slot 'NAME': " with NAME as sent, control bytes
    and all (ESC [2J, a newline and a forged "meshdockd: error:" line, OSC title sequences),
    and a publish to an unknown name said "no mesh named 'NAME'" raw too; meshdockctl and
    scripts print these messages as they are, onto a terminal. The daemon's log escaped them;
    check_slot_name's own message escaped the name, the prefix before it did not. Now both
    are escaped (\\xNN) as every other message that quotes outside bytes."""
    d = Daemon(tmp_path, ("box.v41.msh",))
    hostile = "x\x1b[2J\nmeshdockd: error: FORGED\x07\x9b"
    # An unknown mesh (float64), and a dtype no DLPack type has (code 9): refused at once.
    a = attacker(ECHOER, d.addr, repr(hostile), "point_data/T", "2", repr(hostile), "tensor", "9")
    try:
        got = report(a)
        assert len(got) == 2, got
        for details in got:
            assert not any(ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f for ch in details), details
        assert got[0] == r"no mesh named 'x\x1b[2J\x0ameshdockd: error: FORGED\x07\xc2\x9b'"
        assert got[1].startswith(r"slot 'x\x1b[2J\x0ameshdockd: error: FORGED\x07\xc2\x9b': "), got
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


# ---- 7. loads holding RPC threads --------------------------------------------------------------

def refusals(details):
    """The daemon's own refusals among `details`: 40 calls arriving at once need a thread each
    even to be refused, so during the burst gRPC itself may refuse a few ("Server Threadpool
    Exhausted", RESOURCE_EXHAUSTED as well) before the handler runs; once the refused calls are
    gone, the threads are back for other clients, which is what the tests check."""
    return [x for x in details if x != "Server Threadpool Exhausted"]


# argv[1] addr, argv[2] path, argv[3] calls: that many Load calls of the file at once (names
# m0, m1, ...); once each has either sent its first progress message (OPEN: it is under way,
# held there by the failpoint) or ended, one line:
# {"running": N, "ended": {code: count}, "details": [the distinct error details]}.
SLOW_LOADER = """
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    calls = [stub.Load(pb.LoadRequest(path=sys.argv[2], name=f"m{k}"), timeout=60)
             for k in range(int(sys.argv[3]))]
    running, ended, details = 0, {}, []
    for c in calls:
        try:
            next(c)
            running += 1
        except grpc.RpcError as e:
            ended[e.code().name] = ended.get(e.code().name, 0) + 1
            details.append(e.details())
    print(json.dumps({"running": running, "ended": ended, "details": sorted(set(details))}),
          flush=True)
    sys.stdin.read()
    for c in calls:
        c.cancel()
"""


def slow_loads(tmp_path, config):
    """A daemon whose file opens take 8 s each (the open failpoint) under `config`, an
    attacker's 40 loads of it at once, and another client's List and Stats answering while they
    run: (the attacker's report, the daemon's log lines)."""
    d = Daemon(tmp_path, ("box.v41.msh",), config=config,
               env={"MESHDOCK_FAILPOINT": "open:8000"})
    a = attacker(SLOW_LOADER, d.addr, str(d.root / "box.v41.msh"), "40")
    try:
        got = report(a)
        other = pbg.MeshdockStub(grpc.insecure_channel(d.addr))
        for _ in range(3):
            assert list(other.List(pb.ListRequest(), timeout=3.0).slots) == []
            assert other.Stats(pb.StatsRequest(), timeout=3.0).backend
        return got, d.log  # the list itself: whole once stop() below has joined its reader
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


def test_slow_loads_cannot_take_every_rpc_thread(tmp_path):
    """Before: a Load held an RPC thread until its file was read, and nothing bounded loads but
    max_meshes: with max_meshes raised past max_rpc_threads (100 and 32 here), one client's 40
    slow loads (a slow file: the open failpoint holds each 8 s) took every thread, and
    another client's List was refused "Server Threadpool Exhausted". Now a load takes a ticket
    (max_loads_per_peer: 8 by default, per uid on the Unix socket) and the rest are refused at
    once, naming the cap and its key; other calls still answer."""
    got, log = slow_loads(tmp_path, {"max_meshes": 100, "max_streams": 4, "max_rpc_threads": 32})
    assert got["running"] == 8, got
    assert got["ended"] == {"RESOURCE_EXHAUSTED": 32}, got
    assert refusals(got["details"]) == [f"Load: uid {os.getuid()} has 8 loads open, the "
                                        "most max_loads_per_peer allows (8)"], got
    assert any("Load from " in line and "max_loads_per_peer allows (8)" in line for line in log)


def test_loads_and_streams_together_leave_threads_for_other_calls(tmp_path):
    """max_loads (and each peer's share) may add up with max_streams past max_rpc_threads
    (configurations from before the load caps keep running): the thread cap is then held as
    loads are admitted. Here 24 threads, 4 streams, max_loads 30 and 30 per peer: the load that
    would leave fewer than 16 threads free is refused, naming max_rpc_threads."""
    got, _ = slow_loads(tmp_path, {"max_meshes": 100, "max_streams": 4, "max_rpc_threads": 24,
                                   "max_loads": 30, "max_loads_per_peer": 30})
    assert got["running"] == 8, got
    assert got["ended"] == {"RESOURCE_EXHAUSTED": 32}, got
    assert refusals(got["details"]) == ["Load: 0 streams, 8 loads and 0 exports hold RPC "
                                        "threads, the most max_rpc_threads (24) allows "
                                        "while keeping 16 for other calls"], got


def big_vtk(path, n=1_000_000):
    """A legacy binary VTK file of n random points in n/4 tetrahedra with one point field
    (22 MB at 1e6): its VTU export takes about a second of a core."""
    rng = np.random.default_rng(7)
    m = n // 4
    cells = np.empty((m, 5), ">i4")
    cells[:, 0] = 4
    cells[:, 1:] = np.arange(m * 4).reshape(m, 4)
    with open(path, "wb") as f:
        f.write(b"# vtk DataFile Version 3.0\nbig\nBINARY\nDATASET UNSTRUCTURED_GRID\n")
        f.write(f"POINTS {n} float\n".encode() + rng.random((n, 3)).astype(">f4").tobytes())
        f.write(f"\nCELLS {m} {m * 5}\n".encode() + cells.tobytes())
        f.write(f"\nCELL_TYPES {m}\n".encode() + np.full(m, 10, ">i4").tobytes())
        f.write(f"\nPOINT_DATA {n}\nSCALARS T float 1\nLOOKUP_TABLE default\n".encode()
                + rng.random(n).astype(">f4").tobytes() + b"\n")


# argv[1] addr, argv[2] directory, argv[3] calls: that many Export calls of "big" at once (to
# DIR/out{k}.vtu); a line once they are under way ({"started": N}), then one once all have
# ended: {"codes": [sorted codes], "details": [the distinct error details]}.
EXPORTER = """
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    calls = [stub.Export.future(pb.ExportRequest(name="big", path=f"{sys.argv[2]}/out{k}.vtu"),
                                timeout=120) for k in range(int(sys.argv[3]))]
    time.sleep(0.3)
    print(json.dumps({"started": len(calls)}), flush=True)
    codes = sorted(c.code().name for c in calls)
    details = sorted(set(c.details() for c in calls if c.code() != grpc.StatusCode.OK))
    print(json.dumps({"codes": codes, "details": details}), flush=True)
    sys.stdin.read()
"""


def exporting(tmp_path, exports, config=None):
    """A daemon serving "big" (big_vtk), and an attacker process with `exports` Export calls of
    it under way (EXPORTER): (daemon, attacker)."""
    d = Daemon(tmp_path, (), config=config)
    big_vtk(d.root / "big.vtk")
    d.load("big.vtk", "big")
    return d, attacker(EXPORTER, d.addr, str(d.root), str(exports))


def test_exports_cannot_take_every_rpc_thread(tmp_path):
    """Before: an Export held an RPC thread while it wrote (a 1e6-point mesh's VTU: about a
    second of a core), and nothing bounded exports: one client's 40 exports at once took every
    thread (max_rpc_threads 32 here) and another client's List went unanswered past its 3 s
    deadline (or was refused "Server Threadpool Exhausted"). Now an Export takes a ticket (max_exports_per_peer: 4 by default);
    the rest are refused at once naming the cap and its key, and other calls answer."""
    d, a = exporting(tmp_path, 40, config={"max_streams": 4, "max_rpc_threads": 32})
    try:
        assert report(a) == {"started": 40}
        other = pbg.MeshdockStub(grpc.insecure_channel(d.addr))
        for _ in range(3):
            assert [s.name for s in other.List(pb.ListRequest(), timeout=3.0).slots] == ["big"]
        got = report(a, timeout=120)
        assert got["codes"] == ["OK"] * 4 + ["RESOURCE_EXHAUSTED"] * 36, got
        assert refusals(got["details"]) == [f"Export: uid {os.getuid()} has 4 exports open, "
                                            "the most max_exports_per_peer allows (4)"], got
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


def test_an_export_does_not_stall_other_calls_on_its_mesh(tmp_path):
    """Before: Export held the mesh entry's lock while it wrote the file, so every List,
    Describe and Stats (which read each entry under its lock) and every publish to the mesh
    waited for it, and concurrent exports queued on it: with a client's 4 exports of a
    1e6-point mesh under way, another client's List waited seconds (past its 1.5 s deadline
    here). Now the export writes a snapshot of the mesh (its arrays shared), taken under the
    lock, and other calls answer at once."""
    d, a = exporting(tmp_path, 4)
    try:
        assert report(a) == {"started": 4}
        other = pbg.MeshdockStub(grpc.insecure_channel(d.addr))
        t0 = time.monotonic()
        assert [s.name for s in other.List(pb.ListRequest(), timeout=1.5).slots] == ["big"]
        assert other.Describe(pb.NameRequest(name="big"), timeout=1.5).slot.num_points == 10**6
        took = time.monotonic() - t0
        assert report(a)["codes"] == ["OK"] * 4
        assert took < 1.5, took
        assert all((d.root / f"out{k}.vtu").stat().st_size > 10**6 for k in range(4))
    finally:
        finish(a)
        assert d.stop() == 0, d.stderr


# ---- 8. Unload racing a Reload -----------------------------------------------------------------

# argv[1] addr: reloads "box"; a line once its first progress message (OPEN) is in, another
# with the call's end (its code, and the last phase heard).
RELOADER = """
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    call = stub.Reload(pb.NameRequest(name="box"), timeout=60)
    first = next(call)
    print(json.dumps({"first": pb.LoadProgress.Phase.Name(first.phase)}), flush=True)
    last = first
    try:
        for last in call:
            pass
        code = "OK"
    except grpc.RpcError as e:
        code = e.code().name
    print(json.dumps({"code": code, "last": pb.LoadProgress.Phase.Name(last.phase)}), flush=True)
    sys.stdin.read()
"""


def test_an_unload_during_a_reload_is_refused_not_undone(tmp_path):
    """Before: an Unload while the mesh was being reloaded answered OK (and Watch said
    UNLOADED), then the reload put its new entry in place and the mesh was served again, in a
    fresh slot: an unload could be silently undone by any member's reload (or a watched
    file's). Now the Unload is refused (FAILED_PRECONDITION, saying to wait for the reload), and
    succeeds once the reload is done."""
    d = Daemon(tmp_path, ("box.v41.msh",), env={"MESHDOCK_FAILPOINT": "read:3000:1"})
    a = None
    try:
        d.load("box.v41.msh", "box")
        a = attacker(RELOADER, d.addr)
        assert report(a) == {"first": "OPEN"}
        with pytest.raises(grpc.RpcError) as e:
            d.stub.Unload(pb.NameRequest(name="box"), timeout=10)
        assert e.value.code() == S.FAILED_PRECONDITION, e.value
        assert e.value.details() == ("'box' is being reloaded; unload it once the reload is "
                                     "done (meshdockctl watch box says RELOADED or LOAD_FAILED)")
        assert report(a) == {"code": "OK", "last": "DONE"}
        assert [s.name for s in d.stub.List(pb.ListRequest(), timeout=5).slots] == ["box"]
        d.stub.Unload(pb.NameRequest(name="box"), timeout=10)
        assert list(d.stub.List(pb.ListRequest(), timeout=5).slots) == []
    finally:
        if a is not None:
            finish(a)
        assert d.stop() == 0, d.stderr


# ---- 9. a publish that reserves the incoming budget and sends nothing ---------------------------

# argv[1] addr: a Publish whose header claims 16 MiB (all of max_decoded_size here) and which
# then sends nothing, its stream held open; prints {"open": true} once the daemon has it, then,
# when stdin closes, {"ended": CODE}.
STALLED_PUBLISH = """
    import threading
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    go = threading.Event()
    def chunks():
        yield pb.PublishChunk(name="hog", field="tensor", shape=[16 << 20], data=b"x",
                              dtype=pb.DType(code=1, bits=8, lanes=1))
        go.wait(120)  # never the rest
    call = stub.Publish.future(chunks(), timeout=120)
    time.sleep(0.5)
    print(json.dumps({"open": True}), flush=True)
    sys.stdin.read()
    go.set()
    try:
        call.result()
        print(json.dumps({"ended": "OK"}), flush=True)
    except grpc.RpcError as e:
        print(json.dumps({"ended": e.code().name}), flush=True)
"""


def test_a_stalled_publish_yields_the_incoming_budget_to_a_caller_that_needs_it(tmp_path):
    """Before: a Publish header reserved its whole size of the incoming budget
    (max_decoded_size, shared by the publishes under way) and held it for as long as its stream
    stayed open, sending nothing: every other caller's publish was RESOURCE_EXHAUSTED until it
    ended. Now a publish that takes in its data slower than 1 MiB/s past its first 2 s is
    cancelled when another caller needs the budget, and the daemon's log names it."""
    import meshdock as md
    d = Daemon(tmp_path, (), config={"max_decoded_size": 16 << 20})
    a = attacker(STALLED_PUBLISH, d.addr)
    c = md.Client(d.addr)
    try:
        assert report(a) == {"open": True}
        time.sleep(3.5)  # past the 2 s grace (counted from the header the daemon got)
        t0 = time.monotonic()
        assert c.publish_tensor("victim", np.ones(1 << 20, np.uint8), via="grpc") >= 1
        assert time.monotonic() - t0 < 5
        a.stdin.close()
        assert report(a) == {"ended": "CANCELLED"}
        assert wait_for(lambda: any("took in 1 of 16777216 bytes in" in line
                                    and "to let another publish in" in line
                                    for line in d.log)), d.log[-5:]
    finally:
        c.close()
        finish(a)
        assert d.stop() == 0, d.stderr


# argv[1] addr: a Publish whose header claims 64 MiB (all of max_decoded_size here) and which
# then trickles its data at about 1.5 MiB/s (over the 1 MiB/s floor, far under what takes in 64
# MiB within 30 s); prints {"open": true} once the daemon has it, then, when the call ends,
# {"ended": CODE, "sent": BYTES}.
TRICKLING_PUBLISH = """
    import threading
    stub = pbg.MeshdockStub(grpc.insecure_channel(sys.argv[1]))
    sent = [0]
    def chunks():
        yield pb.PublishChunk(name="hog", field="tensor", shape=[64 << 20], data=b"x",
                              dtype=pb.DType(code=1, bits=8, lanes=1))
        sent[0] = 1
        while sent[0] < (64 << 20) - (96 << 10):
            time.sleep(0.0625)
            yield pb.PublishChunk(data=bytes(96 << 10))
            sent[0] += 96 << 10
    call = stub.Publish.future(chunks(), timeout=120)
    time.sleep(0.5)
    print(json.dumps({"open": True}), flush=True)
    try:
        call.result()
        print(json.dumps({"ended": "OK", "sent": sent[0]}), flush=True)
    except grpc.RpcError as e:
        print(json.dumps({"ended": e.code().name, "sent": sent[0]}), flush=True)
"""


def test_a_trickling_publish_cannot_hold_a_big_share_of_the_budget_for_long(tmp_path):
    """Before: a publish taking in its data at 1 MiB/s or more was never cancelled, so one that
    claimed the whole incoming budget (here 64 MiB) and trickled at 1.5 MiB/s held it for 43 s
    and every other caller's publish was refused meanwhile (a gigabyte at that pace: a quarter
    of an hour). Now a publish must also go at the rate that takes in its size within 30 s
    (here 2.1 MiB/s) to keep its reservation when another caller needs the budget."""
    import meshdock as md
    d = Daemon(tmp_path, (), config={"max_decoded_size": 64 << 20})
    a = attacker(TRICKLING_PUBLISH, d.addr)
    c = md.Client(d.addr)
    try:
        assert report(a) == {"open": True}
        # 1.5 MiB/s stays ahead of 1 MiB/s after the first 2 s for ever, and falls behind
        # 2.1 MiB/s after the first 2 s at about 7 s: past it, with a margin.
        time.sleep(9.5)
        t0 = time.monotonic()
        assert c.publish_tensor("victim", np.ones(1 << 20, np.uint8), via="grpc") >= 1
        assert time.monotonic() - t0 < 5
        ended = report(a)
        assert ended["ended"] == "CANCELLED" and ended["sent"] < (64 << 20) // 2, ended
        assert wait_for(lambda: any("of 67108864 bytes in" in line and "within 30 s" in line
                                    and "to let another publish in" in line
                                    for line in d.log)), d.log[-5:]
    finally:
        c.close()
        finish(a)
        assert d.stop() == 0, d.stderr
