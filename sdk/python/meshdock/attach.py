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

import json
from dataclasses import dataclass
from typing import Iterator, Optional

from .mesh import Region
from .payload import DevicePayload

__all__ = ["SdkError", "ProducerGone", "AttachTimeout", "UntrustedSegment",
           "SegmentAccessDenied", "Frame", "AttachedSlot", "attach"]


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

    def release(self) -> None:
        """Drops this Frame's references to the slot memory (arrays adopted elsewhere keep
        the lease until they go too)."""
        self.points = None
        self.cells = []
        self.block_bases = None
        self.point_data = {}
        self.cell_data = {}
        self.regions = []

    def __enter__(self) -> "Frame":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        if self.points is None:
            return f"<meshdock.Frame {self.slot_name!r} #{self.number} (released)>"
        return f"<meshdock.Frame {self.slot_name!r} #{self.number} " + super().__repr__()[len("<meshdock."):]


def _frame(name: str, d: dict) -> Frame:
    arrays = d["arrays"]
    cells = [arrays[f"cells/{k}"] for k in range(len(d["cell_types"]))]
    point_data = {n[len("point_data/"):]: a for n, a in arrays.items() if n.startswith("point_data/")}
    cell_data: dict = {}
    for n, a in arrays.items():
        if n.startswith("cell_data/"):
            field, block = n[len("cell_data/"):].rsplit("/", 1)
            cell_data.setdefault(field, {})[int(block)] = a
    import numpy as np
    return Frame(
        points=arrays["points"], cell_types=list(d["cell_types"]), cells=cells,
        block_bases=arrays["block_bases"], point_data=point_data,
        cell_data={f: [parts[k] for k in sorted(parts)] for f, parts in cell_data.items()},
        field_data={k: np.asarray(v) for k, v in json.loads(d["field_data"]).items()},
        regions=[Region(rn, kind, dim, tag, arrays[arr]) for rn, kind, dim, tag, arr in d["regions"]],
        device=tuple(d["device"]), dropped=list(d["dropped"]), notes=list(d["notes"]),
        derived=list(d["derived"]), number=d["number"], slot_name=name)


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
        TimeoutError after `timeout` seconds (None: wait forever), ProducerGone when the daemon
        is gone, SdkError on a corrupt segment."""
        left = 1e9 if timeout is None else timeout
        d = self._core.wait(max(0.0, left))
        if d is None:
            raise TimeoutError(f"slot '{self.name}': no new frame within {timeout} s "
                               f"(write_idx {self._core.write_idx})")
        return _frame(self.name, d)

    def frames(self, timeout: Optional[float] = None) -> Iterator[Frame]:
        """Every new frame, as it comes (ends with ProducerGone / TimeoutError)."""
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


class _Closed:
    def __init__(self, name):
        self.name = name

    def __getattr__(self, attr):
        raise SdkError(f"slot '{self.name}' is closed")


def attach(name: str, prefix: str = "meshdock.", timeout: float = 5.0,
           producer_timeout: float = 1.0, reattach: bool = False,
           owner_uid: Optional[int] = None) -> AttachedSlot:
    """Attach to slot `name` (shared memory /<prefix><name>), waiting up to `timeout` seconds
    for the daemon to publish it (AttachTimeout). A heartbeat older than `producer_timeout`
    seconds means the producer is gone (ProducerGone). With `reattach`, wait() rides over a
    daemon restart or an unload + load: it attaches again as soon as a live daemon publishes
    `name` and returns that producer's first frame (numbers restart); ProducerGone comes only
    when none has by the wait's timeout.

    Every segment must belong to `owner_uid` (default: $MESHDOCK_DAEMON_UID, else the owner of
    the socket of $MESHDOCK_ADDR=unix:PATH, or of /run/meshdock/meshdockd.sock when
    $MESHDOCK_ADDR is unset, else this process's uid or root): UntrustedSegment
    otherwise; SegmentAccessDenied when this process may not open one (names the group to
    join)."""
    from . import _meshdock
    return AttachedSlot(_meshdock.Slot.attach(name, prefix, timeout, producer_timeout, reattach,
                                              owner_uid), name)
