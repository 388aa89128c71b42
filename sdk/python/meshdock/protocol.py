"""Pure-Python mirror of meshdock's shared-memory protocol (shm_protocol/ in C++).

Reads and writes, byte for byte, the cuda-link v0.5.0 control block ("CIPD") and meshdock's
catalog segment ("MDCT", layout 2) and its leases segment, and checks a slot manifest, with the same validation rules and the
same error wording as the C++ headers. It needs nothing but the standard library, so a tool
that only wants to look at a slot can use it without the compiled module.

    from meshdock import protocol
    seg = protocol.open_segment("meshdock.bracket")       # /dev/shm/meshdock.bracket
    cb = protocol.decode_control_block(seg.buf)            # ControlBlock(num_slots=3, ...)
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from typing import List, Optional, Sequence

__all__ = [
    "ProtocolError", "CONTROL_MAGIC", "CATALOG_MAGIC", "DEFAULT_PREFIX", "control_block_size",
    "ControlBlock", "BufferMetadata", "encode_control_block", "decode_control_block",
    "make_host_handle", "is_host_handle", "parse_host_handle", "validate_name",
    "validate_prefix", "control_object_name", "catalog_object_name", "data_object_name",
    "fnv1a64", "CatalogHeader", "Page", "Lease", "catalog_size", "encode_catalog",
    "catalog_ready", "decode_catalog", "catalog_daemon_pid", "pid_alive", "decode_manifest",
    "open_segment", "read_segment", "leases_object_name", "leases_size", "encode_leases",
    "decode_leases",
]


class ProtocolError(ValueError):
    """A segment or manifest that breaks the protocol; the message names the field."""


CONTROL_MAGIC = 0x43495044
MIN_SLOTS, MAX_SLOTS, DEFAULT_SLOTS = 1, 10, 3
HANDLE_BYTES = 64
SLOT_STRIDE = 128
FLAG_BFLOAT16 = 1
HOST_HANDLE_TAG = b"MDH1"
DEFAULT_PREFIX = "meshdock."
MAX_NAME_LENGTH = 200
MAX_PREFIX_LENGTH = 24
CATALOG_SUFFIX = ".catalog"
LEASES_SUFFIX = ".leases"
SHM_DIR = "/dev/shm"
SOURCE_PREFIX = "meshdock-src."
SOURCE_TRAILER = "meshdock-source"  # a Publish reply's trailer: was the source object refused?
SOURCE_REFUSED, SOURCE_UNDERSTOOD = "refused", "understood"

CATALOG_MAGIC = 0x5443444D  # bytes "MDCT"
CATALOG_LAYOUT_VERSION = 2
CATALOG_HEADER_SIZE = 4096
MIN_PAGE_SIZE, MAX_PAGE_SIZE = 8192, 64 * 1024 * 1024
MAX_LEASE_CAPACITY = 1024
LEASE_CLAIMING = 0x80000000
PAGE_HEADER_BYTES = 64
LEASE_ENTRY_BYTES = 16
SOCKET_ADDRESS_BYTES = 108
DEVICE_UUID_BYTES = 16
DEVICE_UUID_OFFSET = 172  # catalog header [172,188): a CUDA slot's GPU UUID (zero: unknown)
CATALOG_FIXED_HEADER_BYTES = 172
DL_CPU, DL_CUDA = 1, 2
MANIFEST_VERSION = 1
ARRAY_ALIGNMENT = 256
ROLES = ("points", "cells", "point_data", "cell_data", "region", "block_bases", "tensor")


def control_block_size(num_slots: int) -> int:
    """20 + 128 N + 29 bytes (433 for the default 3 slots)."""
    return 20 + SLOT_STRIDE * num_slots + 29


# ---- names ---------------------------------------------------------------------------------

_NAME_CHAR = re.compile(r"[A-Za-z0-9_.\-]")


def printable(s: str) -> str:
    """`s` with bytes outside printable ASCII written as \\xNN (as the C++ messages do)."""
    return "".join(chr(b) if 0x20 <= b < 0x7F else "\\x%02x" % b for b in s.encode())


def validate_name(name: str, what: str = "slot name") -> None:
    if not name:
        raise ProtocolError(f"{what} is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise ProtocolError(
            f"{what} is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}")
    raw = name.encode()
    for i, b in enumerate(raw):
        c = chr(b)
        if not (b < 0x80 and _NAME_CHAR.fullmatch(c)):
            shown = "'/'" if c == "/" else "character 0x%02x" % b
            raise ProtocolError(f"{what} '{printable(name)}' has {shown} at position {i}; "
                                "allowed are A-Z a-z 0-9 _ . -")
    if name in (".", ".."):
        raise ProtocolError(f"{what} '{name}' is reserved")


def validate_prefix(prefix: str) -> None:
    if not prefix:
        return
    if len(prefix) > MAX_PREFIX_LENGTH:
        # Its start only, escaped, as the C++ message says it.
        raise ProtocolError(f"prefix '{printable(prefix[:MAX_PREFIX_LENGTH])}...' is "
                            f"{len(prefix)} characters long; the limit is {MAX_PREFIX_LENGTH}")
    if not all(c.isascii() and _NAME_CHAR.fullmatch(c) for c in prefix):
        raise ProtocolError(f"prefix '{printable(prefix)}' has a character outside A-Z a-z 0-9 _ . -")


def control_object_name(prefix: str, name: str) -> str:
    validate_prefix(prefix)
    validate_name(name)
    return prefix + name


def catalog_object_name(prefix: str, name: str) -> str:
    return control_object_name(prefix, name) + CATALOG_SUFFIX


def leases_object_name(prefix: str, name: str) -> str:
    return control_object_name(prefix, name) + LEASES_SUFFIX


def fnv1a64(s: str) -> int:
    h = 0xCBF29CE484222325
    for b in s.encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def data_object_name(prefix: str, name: str, slot: int, version: int) -> str:
    validate_prefix(prefix)
    validate_name(name)
    return "%sd%016x.s%u.v%08x" % (prefix, fnv1a64(name), slot, version & 0xFFFFFFFF)


# ---- control block -------------------------------------------------------------------------

@dataclass
class BufferMetadata:
    width: int = 0
    height: int = 0
    num_comps: int = 0
    format_kind: int = 0
    bits: int = 0
    flags: int = 0
    data_size: int = 0

    _FMT = "<IIIBBHI"

    def cuda_link_dtype(self) -> str:
        """The numpy dtype name cuda-link v1.x reads these metadata as: format_kind 2 (float)
        is float16 when 16 bits and no bfloat16 flag, else float32; any other kind is uint8 or
        uint16 by its bits, else float32 (cuda-link misreads the rest; docs/DESIGN.md)."""
        if self.format_kind == 2:
            return "float16" if self.bits == 16 and not self.flags & FLAG_BFLOAT16 else "float32"
        return {8: "uint8", 16: "uint16"}.get(self.bits, "float32")

    @classmethod
    def flat_bytes(cls, nbytes: int) -> "BufferMetadata":
        n = min(nbytes, 0xFFFFFFFF)
        return cls(n, 1, 1, 1, 8, 0, n)

    @classmethod
    def of_array(cls, code: int, bits: int, shape) -> Optional["BufferMetadata"]:
        """What a single-array publish of DLPack dtype (code, bits) and `shape` tells cuda-link:
        (W,) -> W x 1 x 1, (H, W) -> W x H x 1, (H, W, C) -> W x H x C, (N, H, W, C) ->
        W x N*H x C; None when it cannot (no dimension, more than 4, one below 1 or above
        2^32-1, an unknown code). Mirrors shm::BufferMetadata::of_array."""
        shape = list(shape)
        n = len(shape)
        if not 1 <= n <= 4 or min(shape) < 1:
            return None
        kind, flags = {0: (0, 0), 1: (1, 0), 6: (1, 0), 2: (2, 0), 4: (2, 1)}.get(code, (None, 0))
        if kind is None:
            return None
        if n == 1:
            w, h, c = shape[0], 1, 1
        elif n == 2:
            h, w, c = shape[0], shape[1], 1
        else:
            w, c = shape[-2], shape[-1]
            h = 1
            for d in shape[:-2]:
                h *= d
        if max(w, h, c) > 0xFFFFFFFF:
            return None
        return cls(w, h, c, kind, bits, flags, min(w * h * c * (bits // 8), 0xFFFFFFFF))


@dataclass
class ControlBlock:
    num_slots: int = DEFAULT_SLOTS
    version: int = 0
    write_idx: int = 0
    mem_handles: List[bytes] = field(default_factory=list)
    event_handles: List[bytes] = field(default_factory=list)
    shutdown: int = 0
    metadata: BufferMetadata = field(default_factory=BufferMetadata)
    timestamp: float = 0.0

    @property
    def newest_slot(self) -> Optional[int]:
        return None if self.write_idx == 0 else (self.write_idx - 1) % self.num_slots

    @property
    def next_slot(self) -> int:
        return self.write_idx % self.num_slots


def _handles(hs: Sequence[bytes], n: int, what: str) -> List[bytes]:
    out = list(hs) + [bytes(HANDLE_BYTES)] * (n - len(hs))
    if len(out) != n:
        raise ProtocolError(f"control block: {len(hs)} {what} handles for {n} slots")
    for i, h in enumerate(out):
        if len(h) != HANDLE_BYTES:
            raise ProtocolError(f"control block: {what} handle {i} is {len(h)} bytes, not 64")
    return out


def encode_control_block(cb: ControlBlock) -> bytes:
    n = cb.num_slots
    if not MIN_SLOTS <= n <= MAX_SLOTS:
        raise ProtocolError(f"control block: num_slots {n} is outside 1..10")
    mem = _handles(cb.mem_handles, n, "memory")
    ev = _handles(cb.event_handles, n, "event")
    out = bytearray(control_block_size(n))
    struct.pack_into("<IQII", out, 0, CONTROL_MAGIC, cb.version, n, cb.write_idx)
    for i in range(n):
        out[20 + SLOT_STRIDE * i:84 + SLOT_STRIDE * i] = mem[i]
        out[84 + SLOT_STRIDE * i:148 + SLOT_STRIDE * i] = ev[i]
    base = 20 + SLOT_STRIDE * n
    out[base] = cb.shutdown
    m = cb.metadata
    struct.pack_into(BufferMetadata._FMT, out, base + 1, m.width, m.height, m.num_comps,
                     m.format_kind, m.bits, m.flags, m.data_size)
    struct.pack_into("<d", out, base + 21, cb.timestamp)
    return bytes(out)


def decode_control_block(buf, what: str = "bytes") -> ControlBlock:
    """Validate and decode; `buf` is any bytes-like object (a SharedMemory's .buf works)."""
    mv = memoryview(buf).cast("B")
    where = f"control block '{what}'"
    size = len(mv)
    if size < 20:
        raise ProtocolError(f"{where}: segment is {size} bytes, smaller than the 20-byte header")
    magic, version, n, write_idx = struct.unpack_from("<IQII", mv, 0)
    if magic != CONTROL_MAGIC:
        raise ProtocolError(f'{where}: magic is 0x{magic:08x}, expected 0x{CONTROL_MAGIC:08x} ("CIPD")')
    if not MIN_SLOTS <= n <= MAX_SLOTS:
        raise ProtocolError(f"{where}: num_slots is {n}, outside 1..10")
    if size < control_block_size(n):
        raise ProtocolError(f"{where}: segment is {size} bytes but {n} slots need "
                            f"{control_block_size(n)}")
    base = 20 + SLOT_STRIDE * n
    meta = BufferMetadata(*struct.unpack_from(BufferMetadata._FMT, mv, base + 1))
    if meta.flags & ~FLAG_BFLOAT16:
        raise ProtocolError(f"{where}: metadata flags 0x{meta.flags:04x} has bits other than "
                            "bit 0 (bfloat16) set")
    if meta.format_kind > 2:
        raise ProtocolError(f"{where}: metadata format_kind is {meta.format_kind}, expected 0 "
                            "(signed), 1 (unsigned) or 2 (float)")
    return ControlBlock(
        num_slots=n, version=version, write_idx=write_idx,
        mem_handles=[bytes(mv[20 + SLOT_STRIDE * i:84 + SLOT_STRIDE * i]) for i in range(n)],
        event_handles=[bytes(mv[84 + SLOT_STRIDE * i:148 + SLOT_STRIDE * i]) for i in range(n)],
        shutdown=mv[base], metadata=meta,
        timestamp=struct.unpack_from("<d", mv, base + 21)[0])


def make_host_handle(object_name: str) -> bytes:
    raw = object_name.encode()
    if len(raw) + len(HOST_HANDLE_TAG) + 1 > HANDLE_BYTES:
        raise ProtocolError(f"host handle: object name '{object_name}' is {len(raw)} characters; "
                            f"at most {HANDLE_BYTES - 5} fit")
    return (HOST_HANDLE_TAG + raw).ljust(HANDLE_BYTES, b"\0")


def is_host_handle(h: bytes) -> bool:
    return bytes(h[:4]) == HOST_HANDLE_TAG


def parse_host_handle(h: bytes) -> str:
    if not is_host_handle(h):
        raise ProtocolError('handle does not start with "MDH1"')
    body = bytes(h[4:HANDLE_BYTES])
    end = body.find(b"\0")
    if end < 0:
        raise ProtocolError("host handle: object name is not NUL-terminated within 64 bytes")
    name = body[:end].decode("latin-1")
    validate_name(name, "host handle object name")
    return name


# ---- catalog -------------------------------------------------------------------------------

def catalog_size(num_slots: int, page_size: int) -> int:
    return CATALOG_HEADER_SIZE + num_slots * page_size


def manifest_offset() -> int:
    return PAGE_HEADER_BYTES


def leases_size(num_slots: int, lease_capacity: int) -> int:
    return num_slots * lease_capacity * LEASE_ENTRY_BYTES


@dataclass
class Lease:
    index: int
    pid: int
    claiming: bool
    frame: int
    slot: int = 0


@dataclass
class Page:
    seq: int = 0
    frame: int = 0
    data_size: int = 0
    buffer_version: int = 0
    manifest: bytes = b""


@dataclass
class CatalogHeader:
    num_slots: int = DEFAULT_SLOTS
    page_size: int = 256 * 1024
    lease_capacity: int = 64
    daemon_pid: int = 0
    device_type: int = DL_CPU
    device_id: int = 0
    futex: int = 0
    heartbeat_ns: int = 0
    pages: List[Page] = field(default_factory=list)
    daemon_uid: int = 0
    socket: bytes = b""  # registration socket sun_path bytes (leading NUL: abstract name)
    device_uuid: bytes = bytes(DEVICE_UUID_BYTES)  # a CUDA slot's GPU (cudaDeviceProp::uuid)

    @property
    def total_size(self) -> int:
        return catalog_size(self.num_slots, self.page_size)


_HEADER_FMT = "<IIIIIIiiiIQQII"  # magic .. socket_len, 64 bytes; the socket address follows
_PAGE_FMT = "<QQQQI"


def _check_params(n: int, page: int, leases: int, where: str) -> None:
    if not MIN_SLOTS <= n <= MAX_SLOTS:
        raise ProtocolError(f"{where}: num_slots is {n}, outside 1..10")
    if page < MIN_PAGE_SIZE or page > MAX_PAGE_SIZE or page % 4096:
        raise ProtocolError(f"{where}: page_size is {page}, expected a multiple of 4096 in "
                            f"{MIN_PAGE_SIZE}..{MAX_PAGE_SIZE}")
    if leases < 1 or leases > MAX_LEASE_CAPACITY:
        raise ProtocolError(f"{where}: lease_capacity is {leases}, expected 1..{MAX_LEASE_CAPACITY}")


def encode_catalog(h: CatalogHeader) -> bytes:
    _check_params(h.num_slots, h.page_size, h.lease_capacity, "catalog")
    if len(h.socket) > SOCKET_ADDRESS_BYTES:
        raise ProtocolError(f"catalog: socket address is {len(h.socket)} bytes; at most "
                            f"{SOCKET_ADDRESS_BYTES} fit")
    out = bytearray(h.total_size)
    struct.pack_into(_HEADER_FMT, out, 0, CATALOG_MAGIC, CATALOG_LAYOUT_VERSION,
                     CATALOG_HEADER_SIZE, h.num_slots, h.page_size, h.lease_capacity,
                     h.daemon_pid, h.device_type, h.device_id, h.futex, h.heartbeat_ns,
                     h.total_size, h.daemon_uid, len(h.socket))
    out[64:64 + len(h.socket)] = h.socket
    if len(h.device_uuid) != DEVICE_UUID_BYTES:
        raise ProtocolError(f"catalog: device_uuid is {len(h.device_uuid)} bytes, not "
                            f"{DEVICE_UUID_BYTES}")
    out[DEVICE_UUID_OFFSET:DEVICE_UUID_OFFSET + DEVICE_UUID_BYTES] = h.device_uuid
    cap = h.page_size - manifest_offset()
    for i, p in enumerate(h.pages):
        base = CATALOG_HEADER_SIZE + i * h.page_size
        if len(p.manifest) > cap:
            raise ProtocolError(f"catalog page {i}: manifest is {len(p.manifest)} bytes; "
                                f"the page holds {cap} (raise catalog page_size)")
        struct.pack_into(_PAGE_FMT, out, base, p.seq, p.frame, p.data_size, p.buffer_version,
                         len(p.manifest))
        mo = base + manifest_offset()
        out[mo:mo + len(p.manifest)] = p.manifest
    return bytes(out)


def catalog_ready(buf) -> bool:
    """Whether the daemon has finished writing a catalog it just created: it writes the magic
    last, so a segment still all zeros (or not sized yet) is "not published yet" and a reader
    looks again rather than report a bad magic. True for anything else, including a segment
    too small to hold the header: decode_catalog then says what is wrong."""
    mv = memoryview(buf).cast("B")
    if len(mv) == 0:
        return False
    if len(mv) < CATALOG_FIXED_HEADER_BYTES:
        return True
    return struct.unpack_from("<I", mv, 0)[0] != 0


def decode_catalog(buf, what: str = "bytes") -> CatalogHeader:
    """Validate and decode a catalog. Pages are read without the seqlock: for a live segment,
    use them as a snapshot and re-check `seq` (odd = being written)."""
    mv = memoryview(buf).cast("B")
    where = f"catalog '{what}'"
    size = len(mv)
    if size < CATALOG_FIXED_HEADER_BYTES:
        raise ProtocolError(f"{where}: segment is {size} bytes, smaller than the "
                            f"{CATALOG_FIXED_HEADER_BYTES}-byte header")
    (magic, layout, header, n, page, leases, pid, dev, dev_id, futex, heartbeat,
     total, uid, socket_len) = struct.unpack_from(_HEADER_FMT, mv, 0)
    if magic != CATALOG_MAGIC:
        raise ProtocolError(f'{where}: magic is 0x{magic:08x}, expected 0x{CATALOG_MAGIC:08x} ("MDCT")')
    if layout != CATALOG_LAYOUT_VERSION:
        raise ProtocolError(f"{where}: layout_version is {layout}; this build reads version "
                            f"{CATALOG_LAYOUT_VERSION}")
    if header != CATALOG_HEADER_SIZE:
        raise ProtocolError(f"{where}: header_size is {header}, expected {CATALOG_HEADER_SIZE}")
    _check_params(n, page, leases, where)
    if total != catalog_size(n, page):
        raise ProtocolError(f"{where}: total_size is {total} but {n} pages of {page} need "
                            f"{catalog_size(n, page)}")
    if size < total:
        raise ProtocolError(f"{where}: segment is {size} bytes, smaller than its total_size {total}")
    if dev not in (DL_CPU, DL_CUDA):
        raise ProtocolError(f"{where}: device_type is {dev}, expected 1 (CPU) or 2 (CUDA)")
    if socket_len > SOCKET_ADDRESS_BYTES:
        raise ProtocolError(f"{where}: socket_len is {socket_len}, at most {SOCKET_ADDRESS_BYTES}")
    cap = page - manifest_offset()
    pages = []
    for i in range(n):
        base = CATALOG_HEADER_SIZE + i * page
        seq, frame, data_size, bver, mlen = struct.unpack_from(_PAGE_FMT, mv, base)
        if mlen > cap:
            raise ProtocolError(f"{where}: page {i} manifest_len {mlen} exceeds its manifest area "
                                f"of {cap} bytes")
        mo = base + manifest_offset()
        pages.append(Page(seq, frame, data_size, bver, bytes(mv[mo:mo + mlen])))
    return CatalogHeader(n, page, leases, pid, dev, dev_id, futex, heartbeat, pages, uid,
                         bytes(mv[64:64 + socket_len]),
                         bytes(mv[DEVICE_UUID_OFFSET:DEVICE_UUID_OFFSET + DEVICE_UUID_BYTES]))


def catalog_daemon_pid(head) -> Optional[int]:
    """The daemon pid a catalog records, from the first 28 bytes of its segment or more (so a
    listing of many catalogs reads those, not whole segments of num_slots pages); None when they
    are no catalog of this layout (too short, not written yet, another magic or layout)."""
    mv = memoryview(head).cast("B")
    if len(mv) < 28:
        return None
    magic, layout = struct.unpack_from("<II", mv, 0)
    if magic != CATALOG_MAGIC or layout != CATALOG_LAYOUT_VERSION:
        return None
    return struct.unpack_from("<i", mv, 24)[0]


def pid_alive(pid: int) -> bool:
    """Whether `pid` names a process that can still run, as shm::pid_alive (process.hpp) says:
    kill(pid, 0) finds it (EPERM: another user's process, alive) and /proc says it is no zombie.
    Pids compare within one pid namespace, as the protocol assumes (docs/protocol.md)."""
    import os

    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read(512)
    except OSError:
        return True
    # "pid (comm) S ...": comm may hold spaces and ')', so the last ')' ends it.
    close = stat.rfind(b")")
    return not (close != -1 and stat[close + 2:close + 3] in (b"Z", b"X"))


def encode_leases(num_slots: int, lease_capacity: int, leases: Sequence[Lease]) -> bytes:
    """The leases segment: slot s's entry k at (s * lease_capacity + k) * 16,
    {state u32 (pid | 0x80000000 while claiming), reserved u32, frame u64}."""
    _check_params(num_slots, MIN_PAGE_SIZE, lease_capacity, "leases")
    out = bytearray(leases_size(num_slots, lease_capacity))
    for lease in leases:
        if not (0 <= lease.slot < num_slots and 0 <= lease.index < lease_capacity):
            raise ProtocolError(f"leases: entry ({lease.slot}, {lease.index}) out of range")
        state = lease.pid | (LEASE_CLAIMING if lease.claiming else 0)
        struct.pack_into("<IIQ", out, (lease.slot * lease_capacity + lease.index) * LEASE_ENTRY_BYTES,
                         state, 0, lease.frame)
    return bytes(out)


def decode_leases(buf, num_slots: int, lease_capacity: int, what: str = "leases") -> List[Lease]:
    """The held entries of a leases segment, whose shape comes from the (validated) catalog."""
    mv = memoryview(buf).cast("B")
    need = leases_size(num_slots, lease_capacity)
    if len(mv) < need:
        raise ProtocolError(f"leases '{what}': segment is {len(mv)} bytes; {num_slots} slots of "
                            f"{lease_capacity} leases need {need}")
    out = []
    for s in range(num_slots):
        for k in range(lease_capacity):
            state, _, frame = struct.unpack_from("<IIQ", mv,
                                                 (s * lease_capacity + k) * LEASE_ENTRY_BYTES)
            if state:
                out.append(Lease(k, state & ~LEASE_CLAIMING, bool(state & LEASE_CLAIMING), frame, s))
    return out


# ---- manifest ------------------------------------------------------------------------------

_VALID_DTYPES = {(0, 8), (0, 16), (0, 32), (0, 64), (1, 8), (1, 16), (1, 32), (1, 64),
                 (2, 16), (2, 32), (2, 64), (4, 16), (6, 8)}


def _req(obj: dict, key: str, where: str):
    if key not in obj:
        raise ProtocolError(f"{where}: missing field '{key}'")
    return obj[key]


def _int(v, where: str, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProtocolError(f"{where}: field '{key}' has the wrong type")
    return v


def _int_list(v, where: str, key: str) -> List[int]:
    if not isinstance(v, list):
        raise ProtocolError(f"{where}: field '{key}' has the wrong type")
    return [_int(x, where, key) for x in v]


def _str(v, where: str, key: str) -> str:
    if not isinstance(v, str):
        raise ProtocolError(f"{where}: field '{key}' has the wrong type")
    return v


def decode_manifest(text, data_size: int) -> dict:
    """Parse a manifest and check every array against a slot buffer of `data_size` bytes."""
    try:
        j = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"manifest: not valid JSON ({e})") from None
    if not isinstance(j, dict):
        raise ProtocolError("manifest: top level is not a JSON object")
    v = _int(_req(j, "v", "manifest"), "manifest", "v")
    if v != MANIFEST_VERSION:
        raise ProtocolError(f"manifest: version {v}; this build reads {MANIFEST_VERSION}")
    arrays = _req(j, "arrays", "manifest")
    if not isinstance(arrays, list):
        raise ProtocolError("manifest: field 'arrays' is not a list")
    names = set()
    for i, a in enumerate(arrays):
        where = f"manifest array {i}"
        if not isinstance(a, dict):
            raise ProtocolError(f"{where}: not a JSON object")
        name = _str(_req(a, "name", where), where, "name")
        if not name:
            raise ProtocolError(f"{where}: empty name")
        where = f"manifest array '{name}'"
        if name in names:
            raise ProtocolError(f"{where}: listed twice")
        names.add(name)
        role = _str(_req(a, "role", where), where, "role")
        if role not in ROLES:
            raise ProtocolError(f"{where}: role '{role}' is not one of " + ", ".join(ROLES))
        _int(_req(a, "block", where), where, "block")
        dt = _int_list(_req(a, "dtype", where), where, "dtype")
        if len(dt) != 3:
            raise ProtocolError(f"{where}: dtype must be [code, bits, lanes]")
        if dt[2] != 1 or (dt[0], dt[1]) not in _VALID_DTYPES:
            raise ProtocolError(f"{where}: dtype [{dt[0]},{dt[1]},{dt[2]}] is not a DLPack type "
                                "meshdock publishes")
        itemsize = dt[1] // 8
        shape = _int_list(_req(a, "shape", where), where, "shape")
        strides = _int_list(_req(a, "strides", where), where, "strides")
        offset = _int(_req(a, "offset", where), where, "offset")
        nbytes = _int(_req(a, "nbytes", where), where, "nbytes")
        if not 1 <= len(shape) <= 8:
            raise ProtocolError(f"{where}: shape has {len(shape)} dimensions; expected 1..8")
        count = 1
        for d in shape:
            if d < 0:
                raise ProtocolError(f"{where}: negative extent {d} in shape")
            if d and count > data_size // d:
                raise ProtocolError(f"{where}: shape describes more elements than the "
                                    f"{data_size}-byte slot buffer holds")
            count *= d
        if count > data_size // itemsize:
            raise ProtocolError(f"{where}: shape describes more bytes than the {data_size}-byte "
                                "slot buffer holds")
        if count * itemsize != nbytes:
            raise ProtocolError(f"{where}: nbytes is {nbytes} but shape x {itemsize}-byte items "
                                f"gives {count * itemsize}")
        if strides:
            if len(strides) != len(shape):
                raise ProtocolError(f"{where}: strides has {len(strides)} entries for a "
                                    f"{len(shape)}-d shape")
            expect = 1
            for k in reversed(range(len(shape))):
                if shape[k] > 1 and strides[k] != expect:
                    raise ProtocolError(f"{where}: strides are not C-contiguous (dimension {k} "
                                        f"has stride {strides[k]}, expected {expect})")
                expect *= shape[k] if shape[k] > 0 else 1
        if offset < 0 or nbytes < 0:
            raise ProtocolError(f"{where}: negative offset or nbytes")
        if offset % ARRAY_ALIGNMENT:
            raise ProtocolError(f"{where}: offset {offset} is not a multiple of 256")
        if offset > data_size or nbytes > data_size - offset:
            raise ProtocolError(f"{where}: bytes [{offset}, {offset + nbytes}) run past the "
                                f"{data_size}-byte slot buffer")
    for key in ("cell_types", "notes", "derived", "dropped"):
        if key in j and not (isinstance(j[key], list) and all(isinstance(s, str) for s in j[key])):
            raise ProtocolError(f"manifest: field '{key}' has the wrong type")
    if "block_bases" in j:
        _int_list(j["block_bases"], "manifest", "block_bases")
    if "field_data" in j and not isinstance(j["field_data"], dict):
        raise ProtocolError("manifest: field 'field_data' is not an object")
    regions = j.get("regions", [])
    if not isinstance(regions, list):
        raise ProtocolError("manifest: field 'regions' is not a list")
    for i, r in enumerate(regions):
        where = f"manifest region {i}"
        if not isinstance(r, dict):
            raise ProtocolError(f"{where}: not a JSON object")
        rname = _str(_req(r, "name", where), where, "name")
        kind = _str(_req(r, "kind", where), where, "kind")
        if kind not in ("point", "cell", "side"):
            raise ProtocolError(f"{where} '{rname}': kind '{kind}' is not point, cell or side")
        _int(_req(r, "dim", where), where, "dim")
        _int(_req(r, "tag", where), where, "tag")
        arr = _str(_req(r, "array", where), where, "array")
        if arr not in names:
            raise ProtocolError(f"{where} '{rname}': array '{arr}' is not in the manifest")
    return j


# ---- segments ------------------------------------------------------------------------------

def read_segment(object_name: str) -> bytes:
    """A snapshot of an existing POSIX shm object, opened read-only: what a member of the
    daemon's group may do with the control block, catalog and data segments (mode 0640)."""
    import os

    fd = os.open("/dev/shm/" + object_name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        size = os.fstat(fd).st_size
        out = bytearray()
        while len(out) < size:
            chunk = os.pread(fd, size - len(out), len(out))
            if not chunk:
                break
            out += chunk
        return bytes(out)
    finally:
        os.close(fd)


def open_segment(object_name: str):
    """Open an existing POSIX shm object read-write (so: as the daemon's user, or the leases
    segment) with multiprocessing.shared_memory, without
    handing it to Python's resource tracker (which would unlink the daemon's segment when this
    process exits, Python < 3.13). Close it with .close(); never .unlink() a daemon's segment."""
    from multiprocessing import resource_tracker, shared_memory

    shm = shared_memory.SharedMemory(name=object_name, create=False)
    try:
        resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
    except Exception:  # pragma: no cover - tracker absent or already unregistered
        pass
    return shm
