"""Publish from shared memory: the producer's half of PublishChunk.source_shm.

A producer that streams a field publishes it many times. Through gRPC each publish copies the
array into messages, through the socket and out of messages again; through a source object it
is one copy into a POSIX shared-memory object this process owns (/dev/shm/meshdock-src.PID.*),
and one pread by the daemon, which checks that the object's owner is the caller (the kernel's
credentials of the Unix-socket connection) and never maps or writes it.

The objects are libmeshdock's (meshdock/source.hpp, C: meshdock_source_*): readable by the
daemon only, their pages allocated when made (a full /dev/shm is an error then, never a SIGBUS
on the copy), held by a shared flock of their maker, and unlinked when released, in the process
that made them only. Client.publish uses one per (name, field, block), grown when an array
outgrows it and rewritten for each frame once the daemon's reply is in (the daemon has read it
by then). The KEEP most recently used are kept: a producer that names a field per step
(point_data/T_0001, ...) or streams into many slots would otherwise hold an open descriptor and
an object as large as each array for every name it ever published, until it ran out of either. An object of a call that failed is never rewritten: the daemon may still be reading it
(a call whose deadline passed), so it is released and a fresh one made. Objects are released by
Client.close(), when the client is collected, and at exit; those of a producer killed with
SIGKILL (no lock on them any more) are removed by the next object-making producer of the same
user, whatever pid namespace either runs in.
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from collections import OrderedDict
from typing import Optional

import numpy as np

from . import protocol
from ._capi import api, check

SHM_DIR = protocol.SHM_DIR
PREFIX = protocol.SOURCE_PREFIX
# An object younger than this is never swept: its maker may not have locked it yet.
SWEEP_MIN_AGE = 10.0
# Objects a SourceObjects keeps between publishes (least recently used released first): more
# than the fields a producer streams at once, few enough that the descriptors and pages of
# names published once do not add up.
KEEP = 16

_swept = False
_sweep_lock = threading.Lock()


def sweep_dead(shm_dir: str = SHM_DIR, min_age: Optional[float] = None) -> int:
    """Removes this user's source objects that no live process holds (no flock on them, and
    older than `min_age`, default SWEEP_MIN_AGE seconds); returns how many. SdkError naming
    `shm_dir` when it cannot be read."""
    removed = ctypes.c_uint64(0)
    check(api().source_sweep(os.fsencode(shm_dir), SWEEP_MIN_AGE if min_age is None else min_age,
                             ctypes.byref(removed)))
    return removed.value


class SourceObject:
    """One shm object of this process's, mapped read-write, at least `size` bytes. Readable by
    the daemon whose Unix socket is `daemon_socket` (None: this user). SdkError naming the
    object when it cannot be made (/dev/shm full, not in the daemon's group)."""

    def __init__(self, size: int, daemon_socket: Optional[str] = None, shm_dir: str = SHM_DIR):
        a = api()
        if not hasattr(a, "source_create"):
            from .attach import SdkError
            raise SdkError("this libmeshdock predates producer sources (ABI 1.2)")
        h = ctypes.c_void_p()
        check(a.source_create(max(int(size), 1), None if daemon_socket is None
                              else os.fsencode(daemon_socket), os.fsencode(shm_dir),
                              ctypes.byref(h)))
        self.pid = os.getpid()
        self.name = a.source_name(h).decode()
        self.path = os.path.join(shm_dir, self.name)
        self.size = a.source_size(h)
        self._data = a.source_data(h)
        # Released once: by close(), when collected, or at exit.
        self._release = weakref.finalize(self, a.source_release, h.value)

    def write(self, data: np.ndarray) -> None:
        """Copies `data` (C-contiguous) to the start of the object."""
        flat = data.reshape(-1).view(np.uint8)
        if flat.size > self.size:
            raise ValueError(f"{flat.size} bytes do not fit source object {self.name} "
                             f"({self.size} bytes)")
        if not self._release.alive:
            raise ValueError(f"source object {self.name} is closed")
        ctypes.memmove(self._data, flat.ctypes.data, flat.size)

    def array(self, shape, dtype) -> np.ndarray:
        """A writable numpy view of the object's first bytes as `shape` / `dtype`. The view holds
        this object: the mapping stays while either lives, so a view never outlives its memory
        (close() is then left to collection: see unlink())."""
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        if count * dt.itemsize > self.size:
            raise ValueError(f"{count * dt.itemsize} bytes do not fit source object {self.name} "
                             f"({self.size} bytes)")
        raw = (ctypes.c_char * max(count * dt.itemsize, 1)).from_address(self._data)
        raw._owner = self  # the mapping's lifetime is the view's too
        return np.frombuffer(raw, dtype=dt, count=count).reshape(shape)

    def offset_of(self, a: np.ndarray) -> Optional[int]:
        """Where the bytes of the C-contiguous `a` start in this object, if they all lie in it."""
        start = a.__array_interface__["data"][0]
        off = start - self._data
        return off if 0 <= off and off + a.nbytes <= self.size else None

    def unlink(self) -> None:
        """Removes its name (a producer's next sweep would otherwise see it while a view keeps
        it mapped); the mapping goes with the last view."""
        if self.pid == os.getpid():
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def close(self) -> None:
        """Unmaps it; unlinks it in the process that made it."""
        self._release()


class SourceObjects:
    """The source objects of one Client, by (name, field, block). Thread-safe: a publish takes
    its object out while it writes and calls, so two threads never share one."""

    def __init__(self, daemon_socket: Optional[str], shm_dir: str = SHM_DIR, keep: int = KEEP):
        self._socket, self._dir, self._keep = daemon_socket, shm_dir, keep
        self._free: "OrderedDict[tuple, SourceObject]" = OrderedDict()  # oldest first
        self._lock = threading.Lock()
        self._closed = False

    def take(self, key, nbytes: int) -> SourceObject:
        """An object of at least `nbytes` for `key`: the one kept, or a fresh one."""
        with self._lock:
            obj = self._free.pop(key, None)
        if obj is not None and obj.size >= nbytes and obj.pid == os.getpid():
            return obj
        if obj is not None and obj.pid == os.getpid():
            obj.close()  # outgrown (a forked child leaves its parent's alone)
        return self.make(nbytes)

    def make(self, nbytes: int) -> SourceObject:
        """A fresh object of at least `nbytes`, after this process's first sweep of the objects
        its user's dead producers left."""
        global _swept
        with _sweep_lock:
            if not _swept:
                _swept = True
                sweep_dead(self._dir)
        return SourceObject(nbytes, self._socket, self._dir)

    def give_back(self, key, obj: SourceObject, ok: bool) -> None:
        """After the call: kept for the next publish of `key` when the call succeeded, else
        released (the daemon may still be reading it)."""
        with self._lock:
            keep = ok and not self._closed
            old = [self._free.pop(key)] if keep and key in self._free else []
            if keep:
                self._free[key] = obj  # the newest, at the end
                while len(self._free) > self._keep:
                    old.append(self._free.popitem(last=False)[1])
        if not keep:
            obj.close()
        for o in old:
            o.close()

    def close(self) -> None:
        with self._lock:
            objs, self._free, self._closed = list(self._free.values()), OrderedDict(), True
        for o in objs:
            o.close()
