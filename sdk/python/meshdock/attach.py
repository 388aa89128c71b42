"""Attach to a slot meshdockd publishes and adopt its arrays (libmeshdock underneath).

    with meshdock.attach("bracket") as slot:
        frame = slot.wait(timeout=5.0)          # sleeps on the futex until a new frame
        pts = torch.from_dlpack(frame.points)   # the slot's memory, no copy

A Frame has the DevicePayload attributes; it holds a lease on its ring slot until the Frame and
every array taken from it are gone (or frame.release() and the arrays are dropped), so the
daemon never refills memory a consumer is reading. Host slots are mapped copy-on-write: an
in-place write (`t -= t.mean(0)`) works and stays private to this process; the daemon and other
consumers never see it. Ctrl-C raises KeyboardInterrupt within 100 ms in attach(), wait() and
frames(). Every segment must belong to the daemon's uid (UntrustedSegment otherwise).
"""

from __future__ import annotations

import ctypes
import difflib
import json
import math
import numbers
import os
import threading
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

from . import protocol
from .mesh import Region
from .payload import DevicePayload

__all__ = ["SdkError", "ProducerGone", "AttachTimeout", "UntrustedSegment",
           "SegmentAccessDenied", "Frame", "AttachedSlot", "attach", "resolve_prefix",
           "published_names"]


class SdkError(RuntimeError):
    """Attach or wait failed; the message names the slot and segment."""


class ProducerGone(SdkError):
    """The daemon set the slot's shutdown flag, or its heartbeat stopped (killed)."""


class AttachTimeout(SdkError, TimeoutError):
    """The slot was not published within the attach timeout."""


class UntrustedSegment(SdkError):
    """A segment of the slot belongs to a uid other than the daemon's (a squatter); the message
    names it, its owner and mode, and the trusted uids. None of its bytes were read."""


class SegmentAccessDenied(SdkError, PermissionError):
    """This process may not open a segment of the slot (EACCES); the message names the
    segment, its mode and owner, and the group to join."""


@dataclass(repr=False)
class Frame(DevicePayload):
    """One published frame: the DevicePayload attributes plus its number."""

    number: int = 0
    slot_name: str = ""
    released: bool = False

    def release(self) -> None:
        """Drops this Frame's references to the slot memory (arrays adopted elsewhere keep
        the lease until they go too)."""
        self.points = None
        self.cells = []
        self.block_bases = None
        self.point_data = {}
        self.cell_data = {}
        self.regions = []
        self.tensor = None
        self.released = True
        self.__class__ = _ReleasedFrame  # its arrays now raise, naming the frame

    def __reduce__(self):
        raise TypeError(f"frame {self.number} of slot '{self.slot_name}': a frame cannot be "
                        "pickled (its arrays are this process's view of shared memory); attach "
                        "in the other process, or send copies of the arrays")

    def __enter__(self) -> "Frame":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        if self.released:
            return f"<meshdock.Frame {self.slot_name!r} #{self.number} (released)>"
        return f"<meshdock.Frame {self.slot_name!r} #{self.number} " + super().__repr__()[len("<meshdock."):]


# What a released Frame no longer has: reading one raises instead of handing back None.
_RELEASED_FIELDS = frozenset(("points", "cells", "block_bases", "point_data", "cell_data",
                              "regions", "tensor"))


class _ReleasedFrame(Frame):
    """A Frame after release(): its array members raise SdkError naming the frame (a live
    Frame pays nothing for this: release() swaps the class)."""

    def __getattribute__(self, name):
        if name in _RELEASED_FIELDS:
            d = object.__getattribute__(self, "__dict__")
            raise SdkError(f"frame #{d['number']} of slot '{d['slot_name']}' was released: its "
                           f"'{name}' is gone (take a new frame with slot.latest() or "
                           "slot.wait(), or keep the arrays you adopted before release)")
        return object.__getattribute__(self, name)


def _array_info(frame_ptr: int, i: int):
    """meshdock_array_info of array i of a frame (Tensor.data_ptr asks; a plain function, so
    tensors never keep the slot alive, only their frame)."""
    from . import _capi
    x = _capi.ArrayInfo()
    x.struct_size = ctypes.sizeof(x)
    _capi.check(_capi.api().frame_array(frame_ptr, i, x))
    return x


class _Layout:
    """What a manifest says, parsed once: consecutive frames of a slot almost always carry the
    very same manifest (a publish changes data, not layout), so _frame reuses this while the
    manifest text is unchanged instead of decoding JSON per frame."""

    __slots__ = ("text", "arrays", "points", "cell_types", "cells", "block_bases", "point_data",
                 "cell_data", "regions", "field_data", "dropped", "notes", "derived", "tensor")

    def __init__(self, text: bytes):
        from . import _capi
        from ._tensor import np_dtype

        m = json.loads(text)
        self.text = text
        index = {}
        self.arrays = []
        for i, e in enumerate(m["arrays"]):
            dt = e["dtype"]
            self.arrays.append((e["name"], tuple(e["shape"]), np_dtype(dt[0], dt[1]),
                                e["nbytes"], _capi.index_arg(i)))
            index[e["name"]] = i
        # A single-array publish lists "tensor" alone; a mesh lists points and block_bases.
        self.tensor = index.get("tensor")
        self.points = index.get("points")
        self.cell_types = list(m.get("cell_types", []))
        self.cells = [index[f"cells/{k}"] for k in range(len(self.cell_types))]
        self.block_bases = index.get("block_bases")
        self.point_data = [(n[len("point_data/"):], i) for n, i in index.items()
                           if n.startswith("point_data/")]
        cell_data: dict = {}
        for n, i in index.items():
            if n.startswith("cell_data/"):
                field, block = n[len("cell_data/"):].rsplit("/", 1)
                cell_data.setdefault(field, {})[int(block)] = i
        self.cell_data = [(f, [parts[k] for k in sorted(parts)]) for f, parts in cell_data.items()]
        self.regions = [(r["name"], r["kind"], r["dim"], r["tag"], index[r["array"]])
                        for r in m.get("regions", [])]
        self.field_data = m.get("field_data", {})
        self.dropped = m.get("dropped", [])
        self.notes = m.get("notes", [])
        self.derived = m.get("derived", [])


def _frame(name: str, core: "_Slot", h) -> Frame:
    """The Frame of a meshdock_frame handle: one Tensor per array of its manifest."""
    from ._tensor import Tensor

    a = core._api
    p = h.ptr
    text = a.frame_manifest_json(p)
    lay = core.layout
    if lay is None or lay.text != text:
        lay = core.layout = _Layout(text)
    dev = a.frame_device(p)
    device = (dev.device_type, dev.device_id)
    mk, mkl, info = a.raw_frame_array_dlpack, a.raw_frame_array_dlpack_legacy, _array_info
    cap = getattr(a, "raw_frame_array_capsule", None)
    t = [Tensor(h, e, device, mk, mkl, info, None, cap) for e in lay.arrays]
    import numpy as np
    def at(i):
        return None if i is None else t[i]

    return Frame(
        points=at(lay.points), cell_types=list(lay.cell_types),
        cells=[t[i] for i in lay.cells], block_bases=at(lay.block_bases), tensor=at(lay.tensor),
        point_data={f: t[i] for f, i in lay.point_data},
        cell_data={f: [t[i] for i in parts] for f, parts in lay.cell_data},
        field_data={k: np.array(v) for k, v in lay.field_data.items()},
        regions=[Region(rn, kind, dim, tag, t[i]) for rn, kind, dim, tag, i in lay.regions],
        device=device, dropped=list(lay.dropped), notes=list(lay.notes),
        derived=list(lay.derived), number=a.frame_number(p), slot_name=name)


class _Slot:
    """A meshdock_slot handle and the interrupt hook it was attached with (which must outlive
    it: it is this object's attribute, dropped only after the handle is released)."""

    def __init__(self, handle, hook):
        from . import _capi
        self._api = _capi.api()
        self.handle = handle
        self.hook = hook
        self.ptr = handle.ptr
        self.layout: Optional[_Layout] = None
        # A slot handle is not locked (C ABI): threads that wait on one slot take turns, or two
        # of them could be handed the same frame (and share the interrupt hook's state).
        self._lock = threading.Lock()

    @property
    def write_idx(self) -> int:
        return self._api.slot_write_idx(self.ptr)

    @property
    def publish_time(self) -> float:
        return self._api.slot_publish_time(self.ptr)

    @property
    def reattaches(self) -> int:
        return self._api.slot_reattaches(self.ptr)

    @property
    def device_type(self) -> int:
        return self._api.slot_device_type(self.ptr)

    @property
    def num_slots(self) -> int:
        return self._api.slot_num_slots(self.ptr)

    def check_producer(self) -> None:
        from . import _capi
        _capi.check(self._api.slot_check_producer(self.ptr))

    def wait(self, timeout: Optional[float], seen_too: bool = False):
        """A frame Handle (seen_too: the newest, even if returned before), or None after
        `timeout` seconds (None or infinity: no limit; negative: as 0). Another thread's wait
        on this slot is waited for within the same timeout."""
        from . import _capi
        timeout = _seconds(timeout, "timeout", none_ok=True)
        forever = timeout is None or timeout == math.inf
        timeout = 0.0 if forever else max(0.0, float(timeout))
        deadline = time.monotonic() + timeout
        if not self._lock.acquire(timeout=-1 if forever else timeout):
            return None
        try:
            # The C call takes whole milliseconds (-1: no limit); a day at a time is no limit.
            ms = -1 if forever else int(min(max(0.0, deadline - time.monotonic()), 86400.0) * 1000)
            out = ctypes.c_void_p()
            self.hook.pending = None
            take = self._api.slot_latest if seen_too else self._api.slot_wait
            _capi.check(take(self.ptr, ms, out), self.hook)
        finally:
            self._lock.release()
        if not out.value:
            return None
        return _capi.Handle(out.value, self._api.frame_release)


class AttachedSlot:
    """A slot this process is attached to (see attach)."""

    def __init__(self, core, name: str):
        self._core = core
        self.name = name

    @property
    def write_idx(self) -> int:
        """Frames published so far."""
        return self._core.write_idx

    @property
    def publish_time(self) -> float:
        """The producer's CLOCK_MONOTONIC seconds at its newest publish (time.monotonic()
        reads the same clock)."""
        return self._core.publish_time

    @property
    def reattaches(self) -> int:
        """How many times wait() attached again to a restarted producer (reattach=True)."""
        return self._core.reattaches

    @property
    def device_type(self) -> int:
        """DLPack device type of the slot's memory: 1 host, 2 CUDA."""
        return self._core.device_type

    def wait(self, timeout: Optional[float] = 5.0) -> Frame:
        """The newest frame not returned yet; sleeps until one is published. Raises
        TimeoutError after `timeout` seconds (None or math.inf: wait forever), ProducerGone when the daemon
        is gone, SdkError on a corrupt segment."""
        h = self._core.wait(timeout)
        if h is None:
            raise TimeoutError(f"slot '{self.name}': no new frame within {timeout} s "
                               f"(write_idx {self._core.write_idx})")
        return _frame(self.name, self._core, h)

    def latest(self, timeout: Optional[float] = 5.0) -> Frame:
        """The newest frame published, whether or not it was returned before (a Dataset
        reading the current mesh for every item: each call a Frame with its own lease); sleeps
        only while none is published yet. Raises as wait()."""
        h = self._core.wait(timeout, seen_too=True)
        if h is None:
            raise TimeoutError(f"slot '{self.name}': nothing published within {timeout} s")
        return _frame(self.name, self._core, h)

    def frames(self, timeout: Optional[float] = None) -> Iterator[Frame]:
        """wait() in a loop: the newest frame not returned yet, each time one comes (a
        consumer slower than the producer skips the frames published meanwhile; ends with
        ProducerGone / TimeoutError)."""
        while True:
            yield self.wait(timeout)

    def close(self) -> None:
        self._core = _Closed(self.name)

    def __enter__(self) -> "AttachedSlot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<meshdock.AttachedSlot {self.name!r}>"

    def __reduce__(self):
        raise TypeError(f"slot '{self.name}': an attached slot cannot be pickled; attach in "
                        "the other process (a DataLoader worker: in worker_init_fn or the "
                        "Dataset's first __getitem__)")


class _Closed:
    def __init__(self, name):
        self.name = name

    def __getattr__(self, attr):
        raise SdkError(f"slot '{self.name}' is closed")


PREFIX_SEPARATORS = ".-_"
SHM_DIR = protocol.SHM_DIR


def resolve_prefix(prefix: Optional[str] = None) -> str:
    """The prefix attach uses: `prefix`, else $MESHDOCK_PREFIX (when not empty), else
    "meshdock." (an empty prefix only when passed explicitly). A non-empty
    prefix must end with a separator (".", "-" or "_"; the daemon's are "meshdock.", "md<job>.",
    ...): "uxknosuch" would silently look for /dev/shm/uxknosuchNAME, so it raises ValueError
    naming it (and the prefix with its dot). Protocol rules (24 characters, A-Z a-z 0-9 _ . -)
    raise ProtocolError, also a ValueError."""
    source = "prefix"
    if prefix is None:
        env = os.environ.get("MESHDOCK_PREFIX")  # set but empty: as unset
        prefix, source = (env, "$MESHDOCK_PREFIX") if env else (protocol.DEFAULT_PREFIX, "prefix")
    try:
        protocol.validate_prefix(prefix)
    except protocol.ProtocolError as e:
        if source == "prefix":
            raise
        raise protocol.ProtocolError(f"{source}: {e}") from None
    if prefix and prefix[-1] not in PREFIX_SEPARATORS:
        raise ValueError(f"{source} '{prefix}' does not end with '.', '-' or '_', so segment "
                         f"names would run into it ('{prefix}NAME'); meshdock prefixes end "
                         f"with one: did you mean '{prefix}.'?")
    return prefix


def published_names(prefix: str, shm_dir: str = SHM_DIR) -> List[str]:
    """The slot names with a catalog under `prefix` in /dev/shm (what a daemon with that prefix
    publishes, or a killed one left), sorted."""
    out = []
    try:
        files = os.listdir(shm_dir)
    except OSError:
        return out
    suffix = protocol.CATALOG_SUFFIX
    for f in files:
        if f.startswith(prefix) and f.endswith(suffix) and len(f) > len(prefix) + len(suffix):
            name = f[len(prefix):-len(suffix)]
            try:
                protocol.validate_name(name)
            except ValueError:
                continue
            out.append(name)
    return sorted(out)


def _catalog_pid(path: str) -> Optional[int]:
    """The daemon pid the catalog at `path` records (its first 28 bytes), None when it cannot
    be told (not readable by this user, not a catalog of this layout, not written yet)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return protocol.catalog_daemon_pid(os.pread(fd, 28, 0))
    except OSError:
        return None
    finally:
        os.close(fd)


def _other_prefixes(shm_dir: str = SHM_DIR) -> Tuple[List[str], List[str]]:
    """(live, stale): the prefixes of the catalogs in /dev/shm ("meshdock." of
    "meshdock.bracket.catalog"), so a timeout can say where slots are when the prefix asked for
    has none. A killed daemon leaves its catalogs (until a daemon with its prefix starts), and a
    host that ran many (a test run's) had dozens, which buried the live ones: a prefix is stale
    when every catalog under it names a daemon pid that is gone (protocol.pid_alive); one whose
    catalog cannot be read is counted live. Costs one 28-byte read per catalog and one look per
    pid."""
    by_prefix: dict = {}
    try:
        files = os.listdir(shm_dir)
    except OSError:
        return [], []
    for f in files:
        if not f.endswith(protocol.CATALOG_SUFFIX):
            continue
        stem = f[:-len(protocol.CATALOG_SUFFIX)]
        # a guess: the first separator ends the prefix (slot names may hold dots themselves)
        firsts = [stem.find(c) for c in PREFIX_SEPARATORS if stem.find(c) > 0]
        if firsts:
            by_prefix.setdefault(stem[:min(firsts) + 1], []).append(f)
    alive: dict = {}
    live, stale = [], []
    for prefix, catalogs in by_prefix.items():
        for f in catalogs:
            pid = _catalog_pid(os.path.join(shm_dir, f))
            if pid is None:
                break
            if pid not in alive:
                alive[pid] = protocol.pid_alive(pid)
            if alive[pid]:
                break
        else:
            stale.append(prefix)
            continue
        live.append(prefix)
    return sorted(live), sorted(stale)


def _listing(names: List[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _seconds(value, what: str, none_ok: bool = False) -> Optional[float]:
    """`value` as seconds: a real number (not a bool or a string), not NaN; None when none_ok.
    Before, wait(timeout=nan) gave up at once ("within nan s") and wait("5") waited 5 s."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number of seconds{' or None' if none_ok else ''}, "
                        f"not {type(value).__name__} {value!r}")
    v = float(value)
    if math.isnan(v):
        raise ValueError(f"{what} is NaN; give a number of seconds"
                         f"{' (None or math.inf: no limit)' if none_ok else ''}")
    return v


def _ms(seconds: float) -> int:
    """Whole milliseconds for the C ABI's int64 fields; math.inf (or any huge value) is the
    largest, which the SDK takes as no deadline."""
    return int(min(seconds * 1000.0, 2.0 ** 63 - 1024)) if seconds != math.inf else 2 ** 63 - 1


def _timeout_message(base: str, name: str, prefix: str) -> str:
    """AttachTimeout's message: the library's, which says what is published under the prefix
    (or that nothing is), plus, when nothing is, which prefixes have slots, so a wrong name or
    prefix shows at once."""
    names = [n for n in published_names(prefix) if n != name]
    if names:
        return base  # libmeshdock listed them ("; published under prefix 'P': a, b")
    # The prefixes nearest the one asked for first: the listing stops at 20, and on a host with
    # more (a test run's daemons) an alphabetical list could leave out the one meant.
    live, stale = _other_prefixes()
    others = sorted((p for p in live if p != prefix),
                    key=lambda p: (-difflib.SequenceMatcher(None, p, prefix).ratio(), p))
    stale = [p for p in stale if p != prefix]
    # Stale prefixes are counted, not listed: no daemon serves them.
    gone = (f"{len(stale)} other prefix{'es hold' if len(stale) > 1 else ' holds'} only "
            "stale catalogs, of daemons that are gone" if stale else "")
    if others:
        where = f" (slots are published under {_listing(others)}{'; ' + gone if gone else ''})"
    else:
        where = f" (no live daemon publishes under another prefix; {gone})" if gone else ""
    return (f"{base}{where}: is the prefix right? Pass prefix= or set $MESHDOCK_PREFIX to the "
            "daemon's, or use Client.attach(name)")


def attach(name: str, prefix: Optional[str] = None, timeout: float = 5.0,
           producer_timeout: float = 1.0, reattach: bool = False,
           owner_uid: Optional[int] = None) -> AttachedSlot:
    """Attach to slot `name` (shared memory /<prefix><name>), waiting up to `timeout` seconds
    for the daemon to publish it (AttachTimeout, whose message lists the slots published under
    the prefix, or says none are and under which prefixes live daemons publish). `prefix`
    defaults to $MESHDOCK_PREFIX, else "meshdock."; a non-empty one must end with ".", "-" or "_"
    (ValueError otherwise; meshdock.resolve_prefix(prefix) returns the prefix attach would use,
    or raises as it would). Client.attach(name) takes the prefix from the
    daemon instead. A heartbeat older than `producer_timeout`
    seconds means the producer is gone (ProducerGone). With `reattach`, wait() rides over a
    daemon restart or an unload + load: it attaches again as soon as a live daemon publishes
    `name` and returns that producer's first frame (numbers restart); ProducerGone comes only
    when none has by the wait's timeout.

    Every segment must belong to `owner_uid` (default: $MESHDOCK_DAEMON_UID, else the owner of
    the socket of $MESHDOCK_ADDR=unix:PATH, or of /run/meshdock/meshdockd.sock when
    $MESHDOCK_ADDR is unset, else this process's uid or root): UntrustedSegment
    otherwise; SegmentAccessDenied when this process may not open one (names the group to
    join)."""
    from . import _capi

    prefix = resolve_prefix(prefix)
    a = _capi.api()
    o = _capi.AttachOptions()
    a.attach_options_init(o)
    o.prefix = prefix.encode()
    o.timeout_ms = max(0, _ms(_seconds(timeout, "timeout")))
    o.producer_timeout_ms = _ms(_seconds(producer_timeout, "producer_timeout"))
    o.reattach = bool(reattach)
    if owner_uid is not None:
        o.has_owner_uid = 1
        o.owner_uid = owner_uid
    hook = _capi.Interrupt()
    o.interrupt = hook.fn
    out = ctypes.c_void_p()
    try:
        _capi.check(a.slot_attach(name.encode(), o, out), hook)
    except AttachTimeout as e:
        raise AttachTimeout(_timeout_message(str(e), name, prefix)) from None
    return AttachedSlot(_Slot(_capi.Handle(out.value, a.slot_release, hook), hook), name)
