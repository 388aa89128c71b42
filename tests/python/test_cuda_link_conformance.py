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
A host slot's handle is "MDH1" + the data segment's name, so "opening" it maps the segment.

The importer below reads the control block with none of meshdock's code (only the host handle,
meshdock's own, is parsed by meshdock.protocol): its offsets and rules are read from
cuda-link v1.1.0's src/cuda_link/cuda_ipc_importer.py (cited by line) and from its TouchDesigner
receiver, td_exporter/CUDAIPCExtension.py. Like cuda-link, it maps the control block once and
reads it through that mapping ever after (importer:364): it never looks the name up again, so a
block replaced under the name is seen only through the bytes of the one it mapped."""
import signal
import struct
import threading
import time
from typing import NamedTuple

import numpy as np
import pytest

import meshdock
from daemon_util import Daemon, arrays_of
from meshdock import protocol
from meshdock.client import publish_chunks
from meshdock.v1 import meshdock_pb2 as pb

# cuda_ipc_importer.py:103-117: magic u32 at 0, version u64 at 4, num_slots u32 at 12, write_idx
# u32 at 16; 128 bytes per slot from 20 (64 memory handle, 64 event handle); the shutdown byte;
# 20 bytes of metadata; a float64 timestamp. All little-endian (importer:120-123).
CIPD = 0x43495044
HEADER, SLOT = 20, 128
META = struct.Struct("<IIIBBHI")  # width, height, num_comps, kind, bits, flags, data_size
ITEMSIZE = {"float32": 4, "float16": 2, "uint8": 1, "uint16": 2}  # importer:100


def cuda_link_dtype(kind, bits, flags):
    """importer:130-140, _decode_dtype_str."""
    if kind == 2 and bits == 16 and not flags & 1:
        return "float16"
    if kind == 2:
        return "float32"
    return {8: "uint8", 16: "uint16"}.get(bits, "float32")


class Meta(NamedTuple):
    width: int
    height: int
    num_comps: int
    format_kind: int
    bits: int
    flags: int
    data_size: int

    def cuda_link_dtype(self):
        return cuda_link_dtype(self.format_kind, self.bits, self.flags)

    def shape(self):
        """What the importer makes of the metadata (importer:444-458)."""
        if 0 in (self.width, self.height, self.num_comps):
            return (512, 512, 4), "float32"
        return (self.height, self.width, self.num_comps), self.cuda_link_dtype()

    def reads(self):
        """Bytes the importer reads from a slot buffer: get_frame_numpy's D2H copy and the
        extent of its torch/CuPy views (importer:855-856, 609-611)."""
        shape, dt = self.shape()
        return shape[0] * shape[1] * shape[2] * ITEMSIZE[dt]


class ProducerGone(RuntimeError):
    """The shutdown byte is 1: the importer cleans up (importer:415-419, 732-735), the
    TouchDesigner receiver too and reconnects by name later (CUDAIPCExtension.py:1594-1597)."""


class CudaLinkImporter:
    """One cuda-link consumer of the slot `name` of `daemon`."""

    def __init__(self, daemon, name):
        self.shm = protocol.open_segment(daemon.prefix + name)  # once (importer:364)
        buf = self.shm.buf
        assert self._u32(0) == CIPD, hex(self._u32(0))  # importer:375-385
        n = self._u32(12)
        assert 1 <= n <= 10, n  # importer:402-409
        if buf[HEADER + SLOT * n] == 1:  # importer:412-419
            raise ProducerGone(name)
        self.last_write_idx = 0
        self._open()

    def close(self):
        self.shm.close()

    def _u32(self, offset):
        return struct.unpack_from("<I", self.shm.buf, offset)[0]

    def _open(self):
        """_initialize / _reinitialize: version, num_slots, metadata, then every slot's handles
        (importer:393-399, 1073-1090, 469-489). They are used until the next version change."""
        buf = self.shm.buf
        self.version = struct.unpack_from("<Q", buf, 4)[0]
        self.num_slots = n = self._u32(12)
        self.shutdown_at = HEADER + SLOT * n
        self.metadata = Meta(*META.unpack_from(buf, self.shutdown_at + 1))
        self.timestamp_at = self.shutdown_at + 1 + META.size
        self.handles, self.sizes = [], []
        for i in range(n):
            mem = bytes(buf[HEADER + SLOT * i:HEADER + SLOT * i + 64])
            assert any(mem), (f"slot {i} of {n} has an all-zero memory handle: cuda-link's "
                              f"cudaIpcOpenMemHandle fails and it retries forever")
            seg = protocol.open_segment(protocol.parse_host_handle(mem))
            try:
                self.sizes.append(len(seg.buf))
            finally:
                seg.close()
            self.handles.append(mem)
        self.opens = getattr(self, "opens", 0) + 1

    def frame(self):
        """The bytes cuda-link reads for the newest frame, with the checks it makes, in its
        order: shutdown, version, write_idx, timestamp (importer:732-753)."""
        buf = self.shm.buf
        if buf[self.shutdown_at] == 1:
            raise ProducerGone(self.shm.name)
        if struct.unpack_from("<Q", buf, 4)[0] != self.version:
            self._open()
        write_idx = self._u32(16)
        assert write_idx != 0, "no frame published yet"  # importer:637-638
        slot = (write_idx - 1) % self.num_slots  # importer:644
        self.last_write_idx = write_idx
        ts = struct.unpack_from("<d", buf, self.timestamp_at)[0]
        # latency = perf_counter() - timestamp (importer:752-753): the same clock, so small.
        self.latency = time.perf_counter() - ts
        assert ts > 0 and 0 <= self.latency < 60, (ts, time.perf_counter())
        # What it believes (the metadata it read at the last version change) must be the truth.
        now = Meta(*META.unpack_from(buf, self.shutdown_at + 1))
        assert self.metadata == now, (
            f"metadata changed to {now} without a version change: cuda-link still "
            f"uses {self.metadata}")
        m = self.metadata
        # The TouchDesigner receiver refuses a block where this fails (CUDAIPCExtension.py:1857).
        assert m.width * m.height * m.num_comps * m.bits // 8 == m.data_size, m
        # The importer reads this much of the buffer it opened at the last version change.
        assert self.sizes[slot] >= max(m.data_size, m.reads()), (slot, self.sizes, m, m.reads())
        seg = protocol.open_segment(protocol.parse_host_handle(self.handles[slot]))
        try:
            return bytes(seg.buf[:m.data_size])
        finally:
            seg.close()

    def texture(self):
        """The newest frame as the array cuda-link hands its user: (height, width, comps) of
        the dtype it decodes."""
        raw = self.frame()
        shape, dt = self.metadata.shape()
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
    with pytest.raises(ProducerGone):
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
        with pytest.raises(ProducerGone):
            imp.frame()
        c.publish_tensor("x", img * 2)
    imp = CudaLinkImporter(daemon, "x")  # its TouchDesigner receiver reconnects by name
    np.testing.assert_array_equal(imp.texture(), img * 2)


def test_our_decoder_of_cuda_link_dtypes_is_cuda_links():
    """meshdock.protocol's BufferMetadata.cuda_link_dtype (what our docs say cuda-link reads)
    against the rule read from cuda-link (importer:130-140), for every kind, bits and flag."""
    for kind in range(3):
        for bits in (1, 4, 8, 16, 32, 64, 128):
            for flags in (0, 1):
                ours = protocol.BufferMetadata(1, 1, 1, kind, bits, flags, 1).cuda_link_dtype()
                assert ours == cuda_link_dtype(kind, bits, flags), (kind, bits, flags, ours)


@pytest.mark.parametrize("first,then,num_slots", [
    ("box.v41.msh", "blocks.v41.msh", 1),  # shrinks in the same buffer: the metadata alone
    ("blocks.v41.msh", "box.v41.msh", 3),  # grows: fresh buffers, new handles
])
def test_the_metadata_is_written_before_the_version_that_announces_it(tmp_path, first, then,
                                                                      num_slots):
    """The importer reads the metadata when it sees `version` change, and then not again until
    the next change (importer:739-742, 1073-1090). The daemon wrote the new version before the
    new metadata, with the catalog page's write between them (held here by the mid_write
    failpoint, after the first load): an importer that looked in between kept the previous
    frame's size for good, and read a shrunken mesh with the old size."""
    d = Daemon(tmp_path, ("box.v41.msh", "blocks.v41.msh"),
               env={"MESHDOCK_FAILPOINT": "mid_write:1500:1"})
    try:
        path = d.root / "m.msh"
        meshdock.write(path, meshdock.read(d.root / first))
        d.load("m.msh", "m", num_slots=num_slots)
        imp = CudaLinkImporter(d, "m")
        assert imp.frame() == newest_bytes(d, "m")
        before = imp.metadata
        meshdock.write(path, meshdock.read(d.root / then))
        done = []
        t = threading.Thread(target=lambda: done.append(
            [p.phase for p in d.stub.Reload(pb.NameRequest(name="m"))][-1]))
        t.start()
        try:
            while t.is_alive():  # an importer reading frames all through the reload
                imp.frame()
                time.sleep(0.01)
        finally:
            t.join()
        assert done == [pb.LoadProgress.DONE]
        assert imp.frame() == newest_bytes(d, "m")
        assert imp.metadata.data_size != before.data_size, (before, imp.metadata)
        assert imp.opens == 2, "one version change, seen once"
    finally:
        assert d.stop() == 0, d.stderr


def test_a_killed_daemons_block_says_producer_gone_once_a_new_daemon_starts(tmp_path):
    """A SIGKILLed daemon leaves its control block with shutdown 0, a write_idx and a version
    that never change again. cuda-link maps the block once and never looks up the name again
    (importer:364): its consumers waited on the dead block for good, even after a new daemon
    had replaced it under the same name. The new daemon sets the dead block's shutdown byte
    before it unlinks it, so they let go (the TouchDesigner receiver reconnects by name)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    d = Daemon(tmp_path / "a", ("box.v41.msh",))
    d.load("box.v41.msh", "box")
    imp = CudaLinkImporter(d, "box")
    first = imp.frame()
    assert d.stop(signal.SIGKILL) == -signal.SIGKILL
    assert imp.frame() == first  # dead, and nothing in the block says so
    d2 = Daemon(tmp_path / "b", ("box.v41.msh",), prefix=d.prefix)  # sweeps the dead slots
    try:
        with pytest.raises(ProducerGone):
            imp.frame()
        d2.load("box.v41.msh", "box")
        again = CudaLinkImporter(d2, "box")  # the receiver's reconnect, by name
        assert again.frame() == newest_bytes(d2, "box") == first
    finally:
        assert d2.stop() == 0, d2.stderr


def test_a_dead_block_replaced_by_a_load_says_producer_gone(tmp_path):
    """The same when the dead daemon's block is found by the load that takes its name (after
    the new daemon's start-up sweep): the Slot sets its shutdown byte before replacing it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    d2 = Daemon(tmp_path / "b", ("box.v41.msh",))
    d = Daemon(tmp_path / "a", ("box.v41.msh",), prefix=d2.prefix)
    try:
        d.load("box.v41.msh", "box")
        imp = CudaLinkImporter(d, "box")
        first = imp.frame()
        assert d.stop(signal.SIGKILL) == -signal.SIGKILL
        assert imp.frame() == first
        d2.load("box.v41.msh", "box")
        with pytest.raises(ProducerGone):
            imp.frame()
        assert CudaLinkImporter(d2, "box").frame() == newest_bytes(d2, "box")
    finally:
        assert d2.stop() == 0, d2.stderr


def publish_raw(daemon, name, code, bits, shape, data):
    daemon.stub.Publish(publish_chunks(
        pb, name=name, field="tensor", dtype=pb.DType(code=code, bits=bits, lanes=1),
        shape=list(shape), data=data))


@pytest.mark.parametrize("code,bits,np_dtype,reads_as", [
    (0, 8, np.int8, "uint8"),      # the same bytes, unsigned
    (0, 16, np.int16, "uint16"),
    (0, 32, np.int32, "float32"),  # the same bytes, as floats
    (1, 32, np.uint32, "float32"),
    (2, 64, np.float64, "float32"),  # half the bytes
    (6, 8, np.bool_, "uint8"),
    (4, 16, np.uint16, "float32"),  # bfloat16 (numpy has none: its bits as uint16): twice the
                                    # bytes it holds
])
def test_dtypes_cuda_link_misreads_are_described_truly_and_read_within_the_buffer(
        daemon, code, bits, np_dtype, reads_as):
    """The metadata says the dtype as it is (kind, bits, bfloat16 flag); cuda-link decodes only
    float16, float32, uint8 and uint16 right (importer:130-140). Whatever it makes of the rest,
    what it reads must lie inside the slot buffer: for bfloat16 it reads float32, twice the
    bytes of the array, and a buffer no bigger than the array put its torch view and its D2H
    copy past the end of the allocation (on CUDA: an illegal address, which is sticky)."""
    a = (np.arange(300 * 400 * 4) % 97).astype(np_dtype).reshape(300, 400, 4)
    if np_dtype is np.bool_:
        a = a % 2 == 1
    publish_raw(daemon, "t", code, bits, a.shape, a.tobytes())
    imp = CudaLinkImporter(daemon, "t")
    m = imp.metadata
    assert (m.width, m.height, m.num_comps, m.bits, m.data_size) == (400, 300, 4, bits, a.nbytes)
    assert (m.format_kind, m.flags) == ({0: 0, 1: 1, 6: 1, 2: 2, 4: 2}[code], int(code == 4))
    assert m.cuda_link_dtype() == reads_as
    assert imp.frame() == a.tobytes()  # checks that its read fits each slot's buffer
    for k in range(4):  # round the ring: every slot's buffer
        publish_raw(daemon, "t", code, bits, a.shape, a.tobytes())
        assert imp.frame() == a.tobytes()
