"""cuda-link's consumers against live meshdock slots. cuda-link v1.x (forkni/cuda-link) runs only
on Windows, so its importer's reading rules (DESIGN.md, "cuda-link consumers") are re-implemented
here, in our own code, and run against a real meshdockd through loads, ring wraps, lease-free
republishes, growth, shrinking and shutdown:
  - it refuses a control block whose shutdown byte is 1;
  - it reads the metadata (width, height, num_comps, kind, bits, data_size) once at start, then
    again only when `version` changes;
  - it opens EVERY slot's memory handle at start and on each version change, with no all-zero
    check (an all-zero handle: it retries forever);
  - it reads slot (write_idx - 1) % N, width * height * num_comps * bits / 8 bytes, which must
    equal data_size (its TouchDesigner receiver checks that);
  - it decodes the dtype as (kind 2, bits 16, no bfloat16 flag) -> float16, any other kind 2 ->
    float32, bits 8 -> uint8, bits 16 -> uint16, anything else -> float32, and a zero width,
    height or num_comps as (512, 512, 4) float32; the array is (height, width, num_comps).
A mesh slot is one flat uint8 buffer; a single-array publish (field "tensor") is the array
itself, so cuda-link reads an image as a texture.
A host slot's handle is "MDH1" + the data segment's name, so "opening" it maps the segment."""
import numpy as np
import pytest

import meshdock
from daemon_util import Daemon, arrays_of
from meshdock import protocol
from meshdock.client import publish_chunks
from meshdock.v1 import meshdock_pb2 as pb


class CudaLinkImporter:
    """One cuda-link consumer of the slot `name` of `daemon`."""

    def __init__(self, daemon, name):
        self.daemon, self.name = daemon, name
        cb = self._control_block()
        if cb.shutdown == 1:
            raise RuntimeError("cuda-link: the producer has shut down")
        self._open(cb)

    def _control_block(self):
        return protocol.decode_control_block(self.daemon.control_block(self.name), self.name)

    def _open(self, cb):
        self.version, self.metadata, self.sizes = cb.version, cb.metadata, []
        for i, h in enumerate(cb.mem_handles):
            assert any(h), (f"slot {i} of {cb.num_slots} has an all-zero memory handle: "
                            f"cuda-link's cudaIpcOpenMemHandle fails and it retries forever")
            seg = protocol.open_segment(protocol.parse_host_handle(h))
            try:
                self.sizes.append(len(seg.buf))
            finally:
                seg.close()
        self.opens = getattr(self, "opens", 0) + 1

    def frame(self):
        """The bytes cuda-link reads for the newest frame, with the checks it makes."""
        cb = self._control_block()
        if cb.shutdown == 1:
            raise RuntimeError("cuda-link: the producer has shut down")
        if cb.version != self.version:
            self._open(cb)
        # What it believes (the metadata it read at the last version change) must be the truth.
        assert self.metadata == cb.metadata, (
            f"metadata changed to {cb.metadata} without a version change: cuda-link still "
            f"uses {self.metadata}")
        m = self.metadata
        assert m.width * m.height * m.num_comps * m.bits // 8 == m.data_size, m
        slot = (cb.write_idx - 1) % cb.num_slots
        assert self.sizes[slot] >= m.data_size, (slot, self.sizes, m)
        seg = protocol.open_segment(protocol.parse_host_handle(cb.mem_handles[slot]))
        try:
            return bytes(seg.buf[:m.data_size])
        finally:
            seg.close()

    def texture(self):
        """The newest frame as the array cuda-link hands its user: (height, width, comps) of
        the dtype it decodes."""
        raw = self.frame()
        m = self.metadata
        if 0 in (m.width, m.height, m.num_comps):
            shape, dt = (512, 512, 4), np.float32
        else:
            shape, dt = (m.height, m.width, m.num_comps), np.dtype(m.cuda_link_dtype())
        return np.frombuffer(raw, dt).reshape(shape)


@pytest.fixture
def daemon(tmp_path):
    # The host backend even on a GPU machine: "opening" a handle here maps its shm segment
    # (scripts/gpu-check's cuda_link_texture opens CUDA handles).
    d = Daemon(tmp_path, ("box.v41.msh", "blocks.v41.msh"), extra=("--device", "cpu"))
    yield d
    if d.proc.poll() is None:
        assert d.stop() == 0, d.stderr


def newest_bytes(daemon, name):
    manifest, data = daemon.newest(name)
    return data


def publish_t(daemon, name, values):
    daemon.stub.Publish(publish_chunks(
        pb, name=name, field="point_data/T", dtype=pb.DType(code=2, bits=64, lanes=1),
        shape=[len(values)], data=np.asarray(values, np.float64).tobytes()))


def test_every_handle_is_valid_from_the_first_publish(daemon):
    daemon.load("box.v41.msh", "box", num_slots=4)
    imp = CudaLinkImporter(daemon, "box")  # opens all 4 handles: fails on a zero one
    assert imp.frame() == newest_bytes(daemon, "box")
    assert len(imp.sizes) == 4


def test_ring_wraps_and_republishes_are_read_right(daemon):
    daemon.load("box.v41.msh", "box")
    imp = CudaLinkImporter(daemon, "box")
    n = meshdock.read(daemon.root / "box.v41.msh").points.shape[0]
    for k in range(7):  # past the ring twice
        publish_t(daemon, "box", np.full(n, float(k)))
        got = imp.frame()
        assert got == newest_bytes(daemon, "box")
        manifest, data = daemon.newest("box")
        np.testing.assert_array_equal(arrays_of(manifest, data)["point_data/T"], float(k))


def test_growth_and_shrinking_change_the_version_with_the_metadata(daemon):
    big = meshdock.read(daemon.root / "blocks.v41.msh")
    small = meshdock.read(daemon.root / "box.v41.msh")
    path = daemon.root / "m.msh"
    meshdock.write(path, small)
    daemon.load("m.msh", "m")
    imp = CudaLinkImporter(daemon, "m")
    first = imp.frame()
    assert first == newest_bytes(daemon, "m")
    for mesh in (big, small, big):  # grows (fresh buffers), shrinks (same buffers), grows
        meshdock.write(path, mesh)
        assert [p.phase for p in daemon.stub.Reload(pb.NameRequest(name="m"))][-1] == \
            pb.LoadProgress.DONE
        assert imp.frame() == newest_bytes(daemon, "m")
    assert imp.opens >= 3, "each change of size reopened the handles"


def test_a_stopped_daemon_is_refused(daemon):
    daemon.load("box.v41.msh", "box")
    imp = CudaLinkImporter(daemon, "box")
    seg = protocol.open_segment(daemon.prefix + "box")  # outlives the unlink
    try:
        assert daemon.stop() == 0
        cb = protocol.decode_control_block(bytes(seg.buf), "box")
        assert cb.shutdown == 1
    finally:
        seg.close()
    with pytest.raises(Exception):
        imp.frame()


def publish_tensor(daemon, name, a):
    with meshdock.Client(daemon.addr) as c:
        return c.publish_tensor(name, a)


def test_a_single_array_publish_is_read_as_a_texture(daemon):
    img = np.random.default_rng(1).random((512, 512, 4), dtype=np.float32)
    publish_tensor(daemon, "img", img)
    imp = CudaLinkImporter(daemon, "img")  # every ring slot has a handle from this first publish
    m = imp.metadata
    assert (m.width, m.height, m.num_comps, m.format_kind, m.bits, m.flags, m.data_size) == \
        (512, 512, 4, 2, 32, 0, img.nbytes)
    np.testing.assert_array_equal(imp.texture(), img)


def test_textures_through_republishes_growth_shrinking_and_new_dtypes(daemon):
    rng = np.random.default_rng(2)
    frames = [  # what cuda-link decodes exactly: float32, float16, uint8, uint16
        rng.random((512, 512, 4), dtype=np.float32),
        rng.random((512, 512, 4), dtype=np.float32),          # same metadata: same version
        rng.integers(0, 255, (480, 640, 3), dtype=np.uint8),   # shrinks: same buffers
        rng.random((1024, 1024, 4), dtype=np.float32),        # grows: fresh buffers
        rng.random((256, 256, 4)).astype(np.float16),
        rng.integers(0, 65535, (100, 200), dtype=np.uint16),  # (H, W) -> comps 1
        rng.random(5000, dtype=np.float32),                   # (W,) -> 5000 x 1 x 1
        rng.random((2, 64, 64, 4), dtype=np.float32),         # (N, H, W, C) -> W x N*H x C
    ]
    publish_tensor(daemon, "t", frames[0])
    imp = CudaLinkImporter(daemon, "t")
    versions = []
    for k, a in enumerate(frames):
        if k:
            publish_tensor(daemon, "t", a)
        got = imp.texture()
        m = imp.metadata
        want = a.reshape(m.height, m.width, m.num_comps)
        assert got.dtype == a.dtype, (k, got.dtype, a.dtype)
        np.testing.assert_array_equal(got, want)
        versions.append(protocol.decode_control_block(daemon.control_block("t"), "t").version)
    assert all(b > a for a, b in zip(versions[1:], versions[2:])), (
        f"every change of shape or dtype bumps the version: {versions}")
    # Once every ring slot holds a buffer big enough, republishing the same shape and dtype
    # keeps the version (cuda-link reopens all N handles on each change: not per frame).
    last = frames[-1]
    for _ in range(3):
        publish_tensor(daemon, "t", last)
    settled = protocol.decode_control_block(daemon.control_block("t"), "t").version
    for k in range(4):
        publish_tensor(daemon, "t", last + k)
        np.testing.assert_array_equal(imp.texture(), (last + k).reshape(128, 64, 4))
    assert protocol.decode_control_block(daemon.control_block("t"), "t").version == settled


def test_a_tensor_replaced_by_a_mesh_and_back(daemon):
    img = np.ones((64, 64, 4), np.float32)
    publish_tensor(daemon, "x", img)
    imp = CudaLinkImporter(daemon, "x")
    np.testing.assert_array_equal(imp.texture(), img)
    daemon.load("box.v41.msh", "x", replace=True)  # a load with replace takes the name over
    assert imp.frame() == newest_bytes(daemon, "x")
    m = imp.metadata
    assert (m.height, m.num_comps, m.format_kind, m.bits) == (1, 1, 1, 8)
    with meshdock.Client(daemon.addr) as c:
        c.unload("x")
        c.publish_tensor("x", img * 2)
    imp = CudaLinkImporter(daemon, "x")
    np.testing.assert_array_equal(imp.texture(), img * 2)
