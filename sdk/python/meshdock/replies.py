"""What meshdock.Client returns: small dataclasses made from the daemon's protobuf replies.

Attribute names are the proto fields' (proto/meshdock/v1/meshdock.proto), so code written
against the raw messages keeps working; what changes is what the values are:

- enums are their names as strings: ``event.kind == "PUBLISHED"``, ``progress.phase == "READ"``
  (an ``EnumName``, which for old code also compares equal to the proto number:
  ``event.kind == pb.Event.PUBLISHED``; ``int(kind)`` is the number);
- ``describe(name).manifest`` is the manifest parsed into a dict (``manifest_json`` the text);
- repeated fields are lists, nested messages these dataclasses;
- LoadProgress has ``fraction`` and a one-line ``str()``, so ``progress=print`` prints a line
  per step.

This module imports neither grpc nor protobuf: ``from_pb`` reads messages by attribute.
"""

from __future__ import annotations

import datetime
import json
import time as _time
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional

__all__ = ["EnumName", "DType", "ArrayInfo", "Device", "SlotInfo", "LoadProgress",
           "Description", "Event", "SlotStats", "Stats", "Lease", "from_pb"]


class EnumName(str):
    """An enum value as its name ("PUBLISHED"). `.number` is the proto number; it also compares
    equal to that number, for code written against the raw messages (hashing is the string's:
    use names as dict keys)."""

    __slots__ = ("number",)

    def __new__(cls, name: str, number: int):
        s = super().__new__(cls, name)
        s.number = number
        return s

    def __eq__(self, other) -> bool:
        if isinstance(other, int) and not isinstance(other, bool):
            return self.number == other
        return str.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = str.__hash__

    def __int__(self) -> int:
        return self.number

    def __index__(self) -> int:
        return self.number

    def __repr__(self) -> str:
        return str.__repr__(self)


def _sub(cls):
    return field(default=None, metadata={"sub": cls})


def _many(cls=None):
    return field(default_factory=list, metadata={"many": cls})


def _enum(enum_name: str):
    # enum_name: the enum's path inside the message, e.g. "Phase" in LoadProgress
    return field(default=None, metadata={"enum": enum_name})


def from_pb(cls, msg):
    """The dataclass `cls` of protobuf message `msg` (None stays None)."""
    if msg is None:
        return None
    kw = {}
    for f in fields(cls):
        if f.metadata.get("skip"):
            continue
        v = getattr(msg, f.name)
        md = f.metadata
        if "sub" in md:
            kw[f.name] = from_pb(md["sub"], v) if msg.HasField(f.name) else None
        elif "many" in md:
            sub = md["many"]
            kw[f.name] = [from_pb(sub, x) for x in v] if sub else list(v)
        elif "enum" in md:
            et = type(msg).DESCRIPTOR.enum_types_by_name[md["enum"]]
            ev = et.values_by_number.get(v)
            kw[f.name] = EnumName(ev.name if ev is not None else str(v), v)
        else:
            kw[f.name] = v
    return cls(**kw)


@dataclass
class DType:
    """DLPack dtype: code 0 int, 1 uint, 2 float, 4 bfloat, 6 bool."""
    code: int = 0
    bits: int = 0
    lanes: int = 0

    def __str__(self) -> str:
        from ._dlpack import dtype_name
        name = dtype_name(self.code, self.bits)
        return name if self.lanes in (0, 1) else f"{name}x{self.lanes}"


@dataclass
class ArrayInfo:
    name: str = ""
    role: str = ""
    block: int = -1
    dtype: Optional[DType] = _sub(DType)
    shape: List[int] = _many()
    offset: int = 0
    nbytes: int = 0


@dataclass(eq=False)
class Device:
    """DLPack device: device_type 1 CPU, 2 CUDA. ``str()`` is "cpu" / "cuda:N"; it also compares
    equal to, hashes and unpacks like the ``(device_type, device_id)`` tuple that ``Frame.device``
    and ``__dlpack_device__()`` give, so ``slot.device == frame.device`` holds for a frame of
    that slot."""
    device_type: int = 0
    device_id: int = 0

    def __str__(self) -> str:
        return {1: "cpu", 2: f"cuda:{self.device_id}"}.get(self.device_type,
                                                        f"({self.device_type}, {self.device_id})")

    def __iter__(self):
        return iter((self.device_type, self.device_id))

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            other = tuple(other)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))


@dataclass
class SlotInfo:
    """A loaded mesh as the daemon serves it. `prefix` is the shared-memory prefix its segments
    live under (from control_segment), what md.attach needs besides the name."""
    name: str = ""
    path: str = ""
    format: str = ""
    device: Optional[Device] = _sub(Device)
    num_slots: int = 0
    write_idx: int = 0
    version: int = 0
    data_size: int = 0
    num_points: int = 0
    num_cells: int = 0
    cell_types: List[str] = _many()
    notes: List[str] = _many()
    dropped: List[str] = _many()
    control_segment: str = ""
    catalog_segment: str = ""
    load_seconds: float = 0.0
    watch: bool = False

    @property
    def prefix(self) -> str:
        seg = self.control_segment.lstrip("/")
        if not self.name or not seg.endswith(self.name):
            raise ValueError(f"slot '{self.name}': control segment '{self.control_segment}' does "
                             "not end with the slot name")
        return seg[:len(seg) - len(self.name)]


@dataclass
class LoadProgress:
    """One step of a Load / Reload. `fraction` is bytes_done / bytes_total (1.0 once DONE,
    None while the total is unknown); str() is one line."""
    phase: Optional[EnumName] = _enum("Phase")
    bytes_done: int = 0
    bytes_total: int = 0
    message: str = ""
    slot: Optional[SlotInfo] = _sub(SlotInfo)

    @property
    def fraction(self) -> Optional[float]:
        if self.phase == "DONE":
            return 1.0
        if self.bytes_total:
            return min(1.0, self.bytes_done / self.bytes_total)
        return None

    def __str__(self) -> str:
        parts = [str(self.phase)]
        if self.bytes_total:
            parts.append(f"{_size(self.bytes_done)}/{_size(self.bytes_total)} "
                         f"({100 * self.fraction:.0f}%)")
        elif self.bytes_done:
            parts.append(_size(self.bytes_done))
        if self.message:
            parts.append(" ".join(self.message.split()))
        if self.slot is not None and self.slot.name:
            s = self.slot
            parts.append(f"slot '{s.name}': {s.num_points} points, {s.num_cells} cells, "
                         f"{s.device}, {s.load_seconds:.3f} s")
        return " ".join(parts)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@dataclass
class Description:
    """Describe's reply: the slot, its manifest (parsed: a dict; `manifest_json` the text the
    catalog holds) and its arrays."""
    slot: Optional[SlotInfo] = _sub(SlotInfo)
    manifest_json: str = ""
    arrays: List[ArrayInfo] = _many(ArrayInfo)
    manifest: Dict[str, Any] = field(default_factory=dict, metadata={"skip": True})

    def __post_init__(self):
        if self.manifest_json and not self.manifest:
            self.manifest = json.loads(self.manifest_json)


@dataclass
class Event:
    """kind: LOADED, RELOADED, PUBLISHED, UNLOADED, LOAD_FAILED or SHUTDOWN; timestamp in
    daemon monotonic seconds; dropped: events of this watch lost just before this one because
    the watcher read more slowly than they came (the daemon keeps the newest 1024 per
    watcher), 0 unless it fell behind."""
    kind: Optional[EnumName] = _enum("Kind")
    name: str = ""
    frame: int = 0
    message: str = ""
    timestamp: float = 0.0
    dropped: int = 0

    @property
    def time(self) -> datetime.datetime:
        """When it happened, as an aware UTC datetime: `timestamp` is the daemon's
        CLOCK_MONOTONIC, which this process reads too (`meshdockctl watch --json`'s "time")."""
        wall = _time.time() - (_time.monotonic() - self.timestamp)
        return datetime.datetime.fromtimestamp(wall, datetime.timezone.utc)

    def __str__(self) -> str:
        s = f"{self.kind} '{self.name}'"
        if self.frame:
            s += f" frame {self.frame}"
        s += f": {self.message}" if self.message else ""
        if self.dropped:
            s += f" ({self.dropped} earlier events lost: this watcher read too slowly)"
        return s


@dataclass
class SlotStats:
    name: str = ""
    bytes: int = 0
    frames: int = 0
    leases: int = 0
    last_load_seconds: float = 0.0


@dataclass
class Stats:
    slots: List[SlotStats] = _many(SlotStats)
    device_memory_used: int = 0
    device_memory_budget: int = 0
    host_memory_used: int = 0
    uptime_seconds: float = 0.0
    backend: str = ""
    max_decoded_size: int = 0  # the most bytes one publish may be; 0: not said (older daemon)


@dataclass
class Lease:
    """A frame a consumer holds: mesh name, ring slot, pid, uid, frame, age_seconds."""
    name: str = ""
    slot: int = 0
    pid: int = 0
    uid: int = 0
    frame: int = 0
    claiming: bool = False
    age_seconds: float = 0.0
