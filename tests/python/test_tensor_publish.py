"""Single-array publish (DESIGN.md "Control block"; proto PublishChunk field "tensor"): a
standalone tensor, not tied to a mesh, published into a slot of its own, read back by consumers
as frame.tensor and described in the control block's metadata. A real meshdockd, real client
calls and a consumer in this process (the SDK, as a user attaches)."""
import subprocess
import threading

import grpc
import numpy as np
import pytest

import meshdock
from daemon_util import PRIME, Daemon, arrays_of, until_watched
from meshdock import protocol
from meshdock.client import publish_chunks
from meshdock.v1 import meshdock_pb2 as pb


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, ("box.v41.msh",), extra=("--device", "cpu"))
    yield d
    if d.proc.poll() is None:
        assert d.stop() == 0, d.stderr


@pytest.fixture
def client(daemon):
    with meshdock.Client(daemon.addr) as c:
        yield c


def image(h=512, w=512, c=4, seed=0):
    return np.random.default_rng(seed).random((h, w, c), dtype=np.float32)


def code_of(e):
    return e.value.code()


def test_a_first_publish_creates_the_slot_and_consumers_read_the_tensor(daemon, client):
    img = image()
    assert client.publish_tensor("img", img) == 1
    (info,) = [s for s in client.ls() if s.name == "img"]
    assert info.format == "tensor" and info.path == "" and info.num_points == 0
    assert info.data_size == img.nbytes and info.write_idx == 1
    manifest, data = daemon.newest("img")
    assert [(a["name"], a["role"], a["shape"], a["offset"]) for a in manifest["arrays"]] == \
        [("tensor", "tensor", [512, 512, 4], 0)]
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], img)
    with meshdock.attach("img", prefix=daemon.prefix) as slot:
        frame = slot.wait(timeout=5)
        assert frame.points is None and frame.cells == [] and frame.block_bases is None
        got = np.from_dlpack(frame.tensor)
        assert got.shape == (512, 512, 4) and got.dtype == np.float32
        np.testing.assert_array_equal(got, img)
        assert "tensor (512, 512, 4) float32" in repr(frame)
        assert [n for n, _ in frame.arrays()] == ["tensor"]


def test_the_control_block_describes_the_array_for_cuda_link(daemon, client):
    cases = [  # array -> (width, height, num_comps, kind, bits, flags)
        (image(), (512, 512, 4, 2, 32, 0)),
        (np.zeros((480, 640), np.uint8), (640, 480, 1, 1, 8, 0)),
        (np.zeros(1000, np.float16), (1000, 1, 1, 2, 16, 0)),
        (np.zeros((3, 32, 64, 2), np.int32), (64, 96, 2, 0, 32, 0)),
        (np.zeros((8, 8, 3), np.uint16), (8, 8, 3, 1, 16, 0)),
        (np.zeros((5, 7), bool), (7, 5, 1, 1, 8, 0)),
    ]
    for k, (a, (w, h, c, kind, bits, flags)) in enumerate(cases):
        client.publish_tensor("t", a)
        cb = protocol.decode_control_block(daemon.control_block("t"), "t")
        m = cb.metadata
        assert (m.width, m.height, m.num_comps, m.format_kind, m.bits, m.flags) == \
            (w, h, c, kind, bits, flags), (k, a.shape, a.dtype, m)
        assert m.data_size == a.nbytes == w * h * c * bits // 8
        code = {"i": 0, "u": 1, "f": 2, "b": 6}[a.dtype.kind]
        assert protocol.BufferMetadata.of_array(code, a.dtype.itemsize * 8, a.shape) == m
        manifest, data = daemon.newest("t")
        np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], a)


def test_bfloat16_sets_the_flag(daemon):
    daemon.stub.Publish(publish_chunks(pb, name="bf", field="tensor",
                                       dtype=pb.DType(code=4, bits=16, lanes=1), shape=[4, 4],
                                       data=bytes(32)))
    m = protocol.decode_control_block(daemon.control_block("bf"), "bf").metadata
    assert (m.width, m.height, m.num_comps, m.format_kind, m.bits, m.flags) == (4, 4, 1, 2, 16, 1)
    assert protocol.BufferMetadata.of_array(4, 16, (4, 4)) == m
    for bad in [(), (0, 4), (1, 1, 1, 1, 1), (2**33,)]:
        assert protocol.BufferMetadata.of_array(2, 32, bad) is None


def test_republishes_of_any_shape_are_read_right_through_the_ring(daemon, client):
    shapes = [((512, 512, 4), np.float32), ((512, 512, 4), np.float32), ((64, 64), np.uint8),
              ((1024, 1024, 4), np.float32), ((10,), np.float64), ((256, 256, 4), np.float16),
              ((256, 256, 4), np.float16)]
    client.publish_tensor("t", np.zeros(1, np.uint8))
    with meshdock.attach("t", prefix=daemon.prefix) as slot:
        for k, (shape, dt) in enumerate(shapes):
            a = (np.arange(int(np.prod(shape))) % 251 + k).astype(dt).reshape(shape)
            assert client.publish_tensor("t", a) == k + 2
            frame = slot.wait(timeout=5)
            assert frame.number == k + 2
            got = np.from_dlpack(frame.tensor)
            assert got.shape == shape and got.dtype == dt
            np.testing.assert_array_equal(got, a)
            del got, frame


def test_device_and_ring_size_of_the_first_publish(daemon, client):
    client.publish_tensor("t", image(4, 4, 4), device="cpu", num_slots=5)
    assert protocol.decode_control_block(daemon.control_block("t"), "t").num_slots == 5
    # Later publishes keep the slot: device and num_slots are for the first one only.
    client.publish_tensor("t", image(4, 4, 4))
    assert protocol.decode_control_block(daemon.control_block("t"), "t").num_slots == 5


def test_bad_requests_are_refused_with_the_reason(daemon, client):
    daemon.load("box.v41.msh", "box")
    n = len(meshdock.read(daemon.root / "box.v41.msh").points)
    cases = [
        (lambda: client.publish_tensor("box", image(2, 2, 2)), grpc.StatusCode.INVALID_ARGUMENT,
         "'box' holds a mesh"),
        (lambda: client.publish_tensor("z", np.zeros((0, 4), np.float32)),
         grpc.StatusCode.INVALID_ARGUMENT, "every dimension must be 1 or more"),
        (lambda: client.publish_tensor("bad/name", image(2, 2, 2)),
         grpc.StatusCode.INVALID_ARGUMENT, "bad/name"),
        (lambda: client.publish_tensor("d", image(2, 2, 2), device="tpu:0"),
         grpc.StatusCode.INVALID_ARGUMENT, "device 'tpu:0'"),
        (lambda: client.publish_tensor("d", image(2, 2, 2), num_slots=11),
         grpc.StatusCode.INVALID_ARGUMENT, "num_slots 11"),
        (lambda: client.publish("box", "point_data/T", np.zeros(n), device="cpu"),
         grpc.StatusCode.INVALID_ARGUMENT, "tensor's first publish"),
    ]
    for call, code, words in cases:
        with pytest.raises(meshdock.DaemonError) as e:
            call()
        assert e.value.code == code.name and words in str(e.value), str(e.value)
    # A scalar is refused, not sent as shape (1,) (np.ascontiguousarray's silent promotion).
    for scalar in (np.float32(3.0), np.array(3.0)):
        with pytest.raises(ValueError, match=r"tensor: a 0-d array \(a scalar\) cannot be"):
            client.publish_tensor("s", scalar)
    assert sorted(s.name for s in client.ls()) == ["box"]  # nothing was created
    client.publish_tensor("img", image(2, 2, 2))
    for call, code, words in [
        (lambda: client.publish("img", "point_data/T", np.zeros(8)),
         grpc.StatusCode.INVALID_ARGUMENT, "holds a tensor"),
        (lambda: client.export("img", daemon.root / "img.vtu"),
         grpc.StatusCode.FAILED_PRECONDITION, "holds a tensor"),
        (lambda: client.reload("img"), grpc.StatusCode.FAILED_PRECONDITION,
         "nothing to reload"),
    ]:
        with pytest.raises(meshdock.DaemonError) as e:
            call()
        assert e.value.code == code.name and words in str(e.value), str(e.value)
    assert not (daemon.root / "img.vtu").exists()
    # The tensor still serves its frame after the refusals, and unloads like a mesh.
    manifest, data = daemon.newest("img")
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], image(2, 2, 2))
    client.unload("img")
    assert sorted(s.name for s in client.ls()) == ["box"]


def test_a_tensor_counts_against_max_meshes(tmp_path):
    d = Daemon(tmp_path, ("box.v41.msh",), config={"max_meshes": 1})
    try:
        d.load("box.v41.msh", "box")
        with meshdock.Client(d.addr) as c, pytest.raises(meshdock.DaemonError) as e:
            c.publish_tensor("img", image(2, 2, 2))
        assert e.value.code == "RESOURCE_EXHAUSTED" and "max_meshes" in str(e.value)
    finally:
        assert d.stop() == 0, d.stderr


def test_first_publishes_racing_to_one_name_all_go_into_its_slot(daemon):
    # A trial started two producers of one tensor at once: while the first publish made the
    # slot, the others were refused "FAILED_PRECONDITION: 'cam0' is being loaded already"
    # (15 of 40 names with two producers), though no load was under way and any later publish
    # replaces the array. Now they wait for the slot and publish into it: four producers, four
    # frames, each its own number.
    clients = [meshdock.Client(daemon.addr) for _ in range(4)]
    names = [f"cam{k}" for k in range(40)]
    frames = {name: [] for name in names}
    errors = []
    try:
        for name in names:
            start = threading.Barrier(len(clients))

            def publish(c, seed):
                start.wait(10)
                try:
                    frames[name].append(c.publish_tensor(name, image(256, 256, 4, seed)))
                except meshdock.DaemonError as e:
                    errors.append(str(e))

            threads = [threading.Thread(target=publish, args=(c, k))
                       for k, c in enumerate(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        assert errors == []
        assert {name: sorted(f) for name, f in frames.items()} == \
            {name: [1, 2, 3, 4] for name in names}
        assert sorted(s.name for s in clients[0].ls()) == sorted(names)
    finally:
        for c in clients:
            c.close()


def test_watch_sees_the_tensor_arrive_and_change(daemon, client):
    events = daemon.stub.Watch(pb.WatchRequest(name="img"))
    seen, primed = [], threading.Event()

    def collect():
        for e in events:
            if PRIME in e.message:
                primed.set()
                continue
            seen.append(e)
            if len(seen) == 2:
                return

    t = threading.Thread(target=collect)
    t.start()
    until_watched(daemon, "img", primed.is_set)  # the Watch is subscribed
    client.publish_tensor("img", image(2, 2, 2))
    client.publish_tensor("img", np.zeros((3, 3), np.uint8))
    t.join(10)
    events.cancel()
    assert [(e.kind, e.frame, e.message) for e in seen] == [
        (pb.Event.LOADED, 1, "tensor (2, 2, 2) float32"),
        (pb.Event.PUBLISHED, 2, "tensor (3, 3) uint8")]


def test_the_c_abi_reads_a_tensor_slot(daemon, client, build_dir):
    """c_live (plain C99 over meshdock.h) in its own process: one array, role
    MESHDOCK_ROLE_TENSOR, adopted as a DLManagedTensorVersioned."""
    c_live = build_dir / "tests" / "c_live"
    if not c_live.exists():  # an installed wheel's test run (tests/bare/wheel-check)
        pytest.skip("c_live is a test program of the build tree")
    client.publish_tensor("img", np.arange(24, dtype=np.float32).reshape(4, 3, 2))
    r = subprocess.run([str(c_live), "img", daemon.prefix, "tensor"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks passed" in r.stdout


def test_torch_adopts_the_tensor_without_a_copy(daemon, client):
    torch = pytest.importorskip("torch")
    img = image(64, 32, 4)
    client.publish_tensor("img", img)
    with meshdock.attach("img", prefix=daemon.prefix) as slot:
        frame = slot.wait(timeout=5)
        t = torch.from_dlpack(frame.tensor)
        assert tuple(t.shape) == (64, 32, 4) and t.dtype == torch.float32
        assert t.data_ptr() == frame.tensor.data_ptr()
        assert torch.equal(t, torch.from_numpy(img))
        p = meshdock.to_torch(frame)  # the payload API maps the one array too
        assert p.points is None and torch.equal(p.tensor, t)


def test_meshdockctl_shows_a_tensor_slot(daemon, client):
    client.publish_tensor("cam", np.zeros((480, 640, 4), np.float32))
    out = daemon.ctl("ls").stdout
    assert out.splitlines()[0].split() == ["cam", "cpu", "tensor"], out
    assert "frames 1  slots 3  4.7 MiB  published in" in out and "points" not in out, out
    out = daemon.ctl("describe", "cam").stdout
    assert "tensor" in out and "float32  480x640x4" in out and "@0 (4915200 bytes)" in out, out


def test_only_the_first_chunk_names_the_device_and_ring(daemon):
    head = pb.PublishChunk(name="t", field="tensor", dtype=pb.DType(code=1, bits=8, lanes=1),
                           shape=[8], data=bytes(4))
    for late in (pb.PublishChunk(data=bytes(4), device="cpu"),
                 pb.PublishChunk(data=bytes(4), num_slots=2)):
        with pytest.raises(grpc.RpcError) as e:
            daemon.stub.Publish(iter([head, late]))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "only the first chunk carries the header" in e.value.details()
    assert not any(s.name == "t" for s in daemon.stub.List(pb.ListRequest()).slots)


def test_torch_tensors_publish_as_they_are(daemon, client):
    """A CPU torch tensor is read in place (DLPack), bfloat16 included: its 16 bits go as
    DLPack bfloat16, which the control block flags for cuda-link."""
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    client.publish_tensor("t", t)
    manifest, data = daemon.newest("t")
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], t.numpy())
    b = torch.linspace(-2, 2, 12).to(torch.bfloat16).reshape(3, 4)
    client.publish_tensor("t", b)
    manifest, data = daemon.newest("t")
    (entry,) = manifest["arrays"]
    assert entry["dtype"] == [4, 16, 1] and entry["shape"] == [3, 4]
    np.testing.assert_array_equal(np.frombuffer(data[:24], np.int16).reshape(3, 4),
                                  b.view(torch.int16).numpy())
    m = protocol.decode_control_block(daemon.control_block("t"), "t").metadata
    assert (m.width, m.height, m.format_kind, m.bits, m.flags) == (4, 3, 2, 16, 1)
    with meshdock.attach("t", prefix=daemon.prefix) as slot:
        got = torch.from_dlpack(slot.wait(timeout=5).tensor)
        assert got.dtype == torch.bfloat16 and torch.equal(got, b)
