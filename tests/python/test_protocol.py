"""The pure-Python protocol mirror against the golden vectors and against the C++ validators."""
import json
import os
import random
import subprocess
import sys

import pytest

from daemon_util import as_user
from meshdock import protocol as p


def load_cases(data_dir):
    return json.loads((data_dir / "golden" / "control_blocks.json").read_text())["cases"]


def encode_case(c):
    return p.encode_control_block(p.ControlBlock(
        num_slots=c["num_slots"], version=c["version"], write_idx=c["write_idx"],
        mem_handles=[bytes.fromhex(h) for h in c["mem_handles"]],
        event_handles=[bytes.fromhex(h) for h in c["event_handles"]],
        shutdown=c["shutdown"], metadata=p.BufferMetadata(**c["metadata"]),
        timestamp=c["timestamp"]))


def test_what_cuda_link_reads_the_metadata_as():
    """cuda-link v1.x's dtype rule (DESIGN.md, cuda-link consumers), as a table."""
    M = p.BufferMetadata
    assert [M(format_kind=k, bits=b, flags=f).cuda_link_dtype() for k, b, f in [
        (2, 32, 0), (2, 16, 0), (2, 16, p.FLAG_BFLOAT16), (2, 64, 0), (1, 8, 0), (1, 16, 0),
        (0, 8, 0), (0, 16, 0), (1, 32, 0), (0, 64, 0)]] == [
        "float32", "float16", "float32", "float32", "uint8", "uint16", "uint8", "uint16",
        "float32", "float32"]


def test_size_formula():
    assert [p.control_block_size(n) for n in (1, 2, 3, 4, 10)] == [177, 305, 433, 561, 1329]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 10])
def test_golden_control_block_bytes(data_dir, n):
    case = next(c for c in load_cases(data_dir) if c["num_slots"] == n)
    golden = (data_dir / "golden" / case["file"]).read_bytes()
    assert len(golden) == 20 + 128 * n + 29
    assert encode_case(case) == golden
    cb = p.decode_control_block(golden)
    assert (cb.version, cb.write_idx, cb.shutdown) == (case["version"], case["write_idx"],
                                                       case["shutdown"])
    assert vars(cb.metadata) == case["metadata"]
    assert cb.timestamp == case["timestamp"]
    assert p.parse_host_handle(cb.mem_handles[0]) == p.data_object_name(
        "meshdock.", "golden", 0, case["version"])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 10])
def test_cpp_and_python_decode_golden_identically(data_dir, core, n):
    case = next(c for c in load_cases(data_dir) if c["num_slots"] == n)
    golden = (data_dir / "golden" / case["file"]).read_bytes()
    py = p.decode_control_block(golden)
    cpp = core.validate_control_block(golden)
    assert cpp["num_slots"] == py.num_slots
    assert cpp["version"] == py.version
    assert cpp["write_idx"] == py.write_idx
    assert cpp["shutdown"] == py.shutdown
    assert cpp["metadata"] == vars(py.metadata)
    assert cpp["timestamp"] == py.timestamp
    assert cpp["mem_handles"] == py.mem_handles
    assert cpp["event_handles"] == py.event_handles


def test_golden_catalog(data_dir, core):
    spec = json.loads((data_dir / "golden" / "catalog_n2.json").read_text())
    golden = (data_dir / "golden" / spec["file"]).read_bytes()
    c = p.decode_catalog(golden)
    assert (c.num_slots, c.page_size, c.lease_capacity, c.daemon_pid) == (2, 8192, 4, 4242)
    assert (c.futex, c.heartbeat_ns) == (9, 123456789000)
    page = c.pages[0]
    assert (page.seq, page.frame, page.data_size, page.buffer_version) == (2, 9, 4096, 3)
    assert (c.daemon_uid, c.socket) == (998, b"\0" + b"0a1b2")
    assert json.loads(page.manifest) == spec["pages"][0]["manifest"]
    assert c.pages[1].manifest == b""
    assert p.encode_catalog(c) == golden
    cpp = core.validate_catalog(golden)
    assert cpp["pages"][0]["manifest"] == page.manifest
    assert (cpp["daemon_uid"], cpp["socket"]) == (998, b"\0" + b"0a1b2")
    assert (cpp["futex"], cpp["heartbeat_ns"], cpp["total_size"]) == (9, 123456789000, 20480)
    # The C++ encoder re-encodes the manifest to the very same bytes.
    assert core.decode_manifest(page.manifest.decode(), 4096).encode() == page.manifest


def test_the_device_uuid_is_where_the_cpp_validator_reads_it(data_dir, core):
    """Catalog header [172,188): a CUDA slot's GPU UUID, by which a consumer with another
    CUDA_VISIBLE_DEVICES finds the GPU (zero in the golden host catalog: unknown)."""
    golden = (data_dir / "golden" / "catalog_n2.bin").read_bytes()
    assert p.decode_catalog(golden).device_uuid == bytes(16)
    assert core.validate_catalog(golden)["device_uuid"] == bytes(16)
    c = p.decode_catalog(golden)
    c.device_type, c.device_uuid = p.DL_CUDA, bytes(range(0xA0, 0xB0))
    raw = p.encode_catalog(c)
    assert raw[172:188] == bytes(range(0xA0, 0xB0)) and raw[:172] != golden[:172]
    assert core.validate_catalog(raw)["device_uuid"] == bytes(range(0xA0, 0xB0))
    assert p.decode_catalog(raw).device_uuid == bytes(range(0xA0, 0xB0))
    c.device_uuid = b"short"
    with pytest.raises(p.ProtocolError, match="device_uuid is 5 bytes, not 16"):
        p.encode_catalog(c)


def test_golden_leases(data_dir):
    spec = json.loads((data_dir / "golden" / "catalog_n2.json").read_text())
    golden = (data_dir / "golden" / spec["leases_file"]).read_bytes()
    assert len(golden) == p.leases_size(2, 4) == 128
    leases = p.decode_leases(golden, 2, 4)
    assert leases == [p.Lease(0, 777, False, 9, 0), p.Lease(0, 778, False, 8, 1)]
    assert p.encode_leases(2, 4, leases) == golden
    with pytest.raises(p.ProtocolError, match="segment is 127 bytes; 2 slots of 4 leases need 128"):
        p.decode_leases(golden[:127], 2, 4)


def test_catalog_ready_follows_the_magic_written_last(data_dir):
    """A catalog the daemon has created but not yet written is all zeros: not ready (look
    again), not a bad magic; once the magic is there it is decoded and validated as usual."""
    golden = (data_dir / "golden" / "catalog_n2.bin").read_bytes()
    assert p.catalog_ready(golden)
    assert not p.catalog_ready(b"")
    assert not p.catalog_ready(bytes(len(golden)))
    with pytest.raises(p.ProtocolError, match="magic is 0x00000000"):
        p.decode_catalog(bytes(len(golden)))  # what a reader would say without the check
    # Only the magic missing (every other field written): still not ready.
    assert not p.catalog_ready(bytes(4) + golden[4:])
    assert p.catalog_ready(b"\x01" + bytes(10))  # too small: decode_catalog says why
    with pytest.raises(p.ProtocolError, match="smaller than the 172-byte header"):
        p.decode_catalog(b"\x01" + bytes(10))


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if not b:
            b.append(0)
        at = rng.randrange(len(b))
        if op == 0:
            b[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[at] = rng.randrange(256)
        elif op == 2:
            o = at - at % 4
            v = rng.choice([0, 1, 3, 10, 11, 4096, 8192, 0x7FFFFFFF, 0xFFFFFFFF])
            b[o:o + 4] = v.to_bytes(4, "little")
            del b[len(data) + 64:]
        elif op == 3:
            del b[at:]
        else:
            b.extend(bytes(rng.randrange(1, 64)))
    return bytes(b)


def _verdict(fn, data):
    try:
        fn(data)
        return "ok"
    except p.ProtocolError:
        return "rejected"


@pytest.mark.parametrize("which", ["control_n3.bin", "control_n10.bin", "catalog_n2.bin"])
def test_cpp_and_python_validators_agree_on_mutants(data_dir, core, which):
    golden = (data_dir / "golden" / which).read_bytes()
    is_catalog = which.startswith("catalog")
    py_fn = p.decode_catalog if is_catalog else p.decode_control_block
    cpp_fn = core.validate_catalog if is_catalog else core.validate_control_block
    rng = random.Random(20261202)
    seen = {"ok": 0, "rejected": 0}
    for _ in range(1500):
        m = _mutate(golden, rng)
        py, cpp = _verdict(py_fn, m), _verdict(cpp_fn, m)
        assert py == cpp, f"python {py}, c++ {cpp} for a mutant of {which}"
        seen[py] += 1
    assert seen["ok"] > 50 and seen["rejected"] > 50, seen


def test_validation_messages_match_cpp(data_dir, core):
    golden = bytearray((data_dir / "golden" / "control_n3.bin").read_bytes())
    golden[12] = 11
    with pytest.raises(p.ProtocolError) as py:
        p.decode_control_block(bytes(golden))
    with pytest.raises(p.ProtocolError) as cpp:
        core.validate_control_block(bytes(golden))
    assert str(py.value) == str(cpp.value) == "control block 'bytes': num_slots is 11, outside 1..10"
    with pytest.raises(p.ProtocolError, match="segment is 432 bytes but 3 slots need 433"):
        p.decode_control_block(bytes((data_dir / "golden" / "control_n3.bin").read_bytes())[:432])


MANIFEST_MUTATIONS = [
    ("offset", 100), ("nbytes", 95), ("dtype", [2, 24, 1]), ("role", "texture"),
    ("shape", [-1, 3]), ("shape", []), ("strides", [1, 4]), ("name", "cells/0"),
    ("shape", [2 ** 62, 2 ** 62]), ("shape", [1024, 3]), ("offset", 4096),
]


@pytest.mark.parametrize("key,value", MANIFEST_MUTATIONS)
def test_manifest_rejections_agree(data_dir, core, key, value):
    spec = json.loads((data_dir / "golden" / "catalog_n2.json").read_text())
    m = spec["pages"][0]["manifest"]
    m["arrays"][0][key] = value
    text = json.dumps(m)
    with pytest.raises(p.ProtocolError) as py:
        p.decode_manifest(text, 4096)
    with pytest.raises(p.ProtocolError) as cpp:
        core.decode_manifest(text, 4096)
    assert str(py.value) == str(cpp.value)


@pytest.mark.parametrize("name", ["bracket", "a/b", "", "x" * 200, "x" * 201, "..", "a b",
                                  "ünï", "ok-1_2.3", "nul\x00byte", "tab\tx"])
def test_name_rules_agree(core, name):
    assert _verdict(p.validate_name, name) == _verdict(core.validate_name, name)
    msgs = []
    for fn in (p.validate_name, core.validate_name):
        try:
            fn(name)
            msgs.append(None)
        except p.ProtocolError as e:
            msgs.append(str(e))
    assert msgs[0] == msgs[1]


def test_a_too_long_prefix_is_quoted_short_and_escaped_by_both(core):
    hostile = "\x1b[2J" + "p" * 100000  # from $MESHDOCK_PREFIX, say
    msgs = []
    for fn in (p.data_object_name, core.data_object_name):
        with pytest.raises(p.ProtocolError) as e:
            fn(hostile, "x", 0, 1)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert msgs[0] == ("prefix '\\x1b[2Jpppppppppppppppppppp...' is 100004 characters long; "
                       "the limit is 24")


def test_data_object_names_agree(core):
    for name in ("golden", "x" * 200, "bracket.v2"):
        for slot, version in ((0, 1), (9, 2 ** 40 + 5)):
            assert p.data_object_name("meshdock.", name, slot, version) == \
                core.data_object_name("meshdock.", name, slot, version)
            assert len(p.data_object_name("p" * 24, name, slot, version)) + 5 <= 64


def test_python_reads_segments_a_cpp_process_writes(build_dir):
    prefix, name = f"pyt{os.getpid()}.", "x"
    peer = str(build_dir / "tests" / "shm_peer")
    owner = subprocess.Popen([peer, "create", prefix, name, "3"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ready"
        subprocess.run([peer, "write", prefix, name, "5"], check=True, timeout=30)
        seg = p.open_segment(p.control_object_name(prefix, name))
        cat = p.open_segment(p.catalog_object_name(prefix, name))
        try:
            assert len(seg.buf) >= 433
            cb = p.decode_control_block(seg.buf, seg.name)
            assert (cb.num_slots, cb.write_idx, cb.newest_slot) == (3, 5, 1)
            c = p.decode_catalog(cat.buf, cat.name)
            assert c.daemon_pid == owner.pid
            assert c.futex == 5
            assert [pg.frame for pg in c.pages] == [4, 5, 3]
            assert all(pg.seq % 2 == 0 for pg in c.pages)
            notes = json.loads(c.pages[1].manifest)["notes"][0]
            assert set(notes) == {"f"}  # frame 5 is written with the letter a + 5
        finally:
            seg.close()
            cat.close()
    finally:
        owner.stdin.close()
        assert owner.wait(timeout=10) == 0
    # The owner removed both objects; Python's resource tracker did not touch them.
    assert not os.path.exists(f"/dev/shm/{prefix}{name}")


def test_cpp_reads_a_segment_python_writes(build_dir):
    from multiprocessing import shared_memory
    prefix = f"pyw{os.getpid()}."
    name = p.control_object_name(prefix, "t")
    meta = p.BufferMetadata.flat_bytes(4096)
    data = p.encode_control_block(p.ControlBlock(num_slots=2, version=3, write_idx=2,
                                                 metadata=meta, timestamp=2.5))
    shm = shared_memory.SharedMemory(name=name, create=True, size=len(data))
    try:
        shm.buf[:len(data)] = data
        out = subprocess.run([str(build_dir / "bin" / "meshdockctl"), "--json", "inspect", "t",
                              "--prefix", prefix], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        j = json.loads(out.stdout)
        assert (j["num_slots"], j["version"], j["write_idx"]) == (2, 3, 2)
        assert j["metadata"]["width"] == 4096 and j["has_catalog"] is False
        assert j["timestamp"] == 2.5
    finally:
        shm.close()
        shm.unlink()


def test_device_probe_never_raises(core):
    import meshdock
    r = core.probe_devices()
    assert isinstance(r["cuda_status"], str) and r["cuda_status"]
    assert meshdock.has_cuda_device() == bool(r["devices"])
    assert isinstance(meshdock.has_cupy(), bool)


def test_read_segment_needs_only_read_permission(tmp_path):
    """A group member reads the 0640 segments with read_segment (open_segment wants write)."""
    name = f"prs{os.getpid()}.x"
    path = "/dev/shm/" + name
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o640)
    try:
        os.write(fd, b"abc" * 1000)
        os.close(fd)
        r = subprocess.run(as_user([sys.executable, "-c", f"from meshdock import protocol as p; "
                                    f"d = p.read_segment({name!r}); print(len(d), d[:3])"],
                                   groups=[0]),
                           capture_output=True, text=True, timeout=30, cwd="/",
                           env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(p.__file__))))
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["3000", "b'abc'"]
    finally:
        os.unlink(path)
