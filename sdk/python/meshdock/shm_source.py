"""Publish from shared memory: the producer's half of PublishChunk.source_shm.

A producer that streams a field publishes it many times. Through gRPC each publish copies the
array into messages, through the socket and out of messages again; through a source object it
is one copy into a POSIX shared-memory object this process owns (/dev/shm/meshdock-src.PID.*),
and one pread by the daemon, which checks that the object's owner is the caller (the kernel's
credentials of the Unix-socket connection) and never maps or writes it.

Client.publish uses one object per (name, field, block), grown when an array outgrows it and
rewritten for each frame once the daemon's reply is in (the daemon has read it by then). An
object of a call that failed is never rewritten: the daemon may still be reading it (a call
whose deadline passed), so it is unlinked and a fresh one made. Objects are unlinked by
Client.close(), when the client is collected, and at exit. Each object's maker holds a shared
flock on it for as long as it lives, so one left by a producer killed with SIGKILL (its lock
gone with it) is removed by the next object-making producer of the same user, whatever pid
namespace either runs in. Its pages are allocated when it is made (posix_fallocate): a full
/dev/shm is an OSError then, never a SIGBUS on a write through the mapping.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import time
import secrets
import threading
import weakref
from typing import Dict, Optional, Tuple

import numpy as np

SHM_DIR = "/dev/shm"
PREFIX = "meshdock-src."

_swept = False
_sweep_lock = threading.Lock()


def _unlink(path: str, owner_pid: Optional[int] = None) -> None:
    """Unlinks `path`; with `owner_pid`, only in that process (a forked child exiting runs the
    finalizers it inherited, and must not remove its parent's objects)."""
    if owner_pid is not None and os.getpid() != owner_pid:
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# An object younger than this is never swept: its maker may not have locked it yet.
SWEEP_MIN_AGE = 10.0


def sweep_dead(shm_dir: str = SHM_DIR) -> int:
    """Removes this user's source objects that no live process holds (no flock on them, and
    older than SWEEP_MIN_AGE seconds); returns how many."""
    removed = 0
    try:
        names = os.listdir(shm_dir)
    except OSError:
        return 0
    me = os.geteuid()
    for n in names:
        if not n.startswith(PREFIX):
            continue
        path = os.path.join(shm_dir, n)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:  # gone meanwhile, a symlink, not ours to read
            continue
        try:
            st = os.fstat(fd)
            if st.st_uid != me or time.time() - st.st_ctime < SWEEP_MIN_AGE:
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live maker: OSError
            if os.path.samestat(st, os.lstat(path)):  # still that object
                os.unlink(path)
                removed += 1
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def _release(path: str, owner_pid: int, fd: int) -> None:
    """The end of an object: unlinked (in its maker only) and its fd closed."""
    _unlink(path, owner_pid)
    try:
        os.close(fd)
    except OSError:
        pass


class SourceObject:
    """One shm object of this process's, mapped read-write, at least `size` bytes. Readable by
    the daemon: mode 0600 when the daemon runs as this user, else group `daemon_gid` and mode
    0640 (this user must be in that group). OSError when it cannot be made so."""

    def __init__(self, size: int, daemon_uid: Optional[int], daemon_gid: Optional[int],
                 shm_dir: str = SHM_DIR):
        self.pid = os.getpid()
        self.name = f"{PREFIX}{self.pid}.{secrets.token_hex(8)}"
        self.path = os.path.join(shm_dir, self.name)
        self.size = max(int(size), 1)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # alive while held (sweep_dead)
            # A root daemon reads it as it is; another daemon user through its group.
            if daemon_uid not in (None, 0, os.geteuid()):
                if daemon_gid is not None and daemon_gid != os.getegid():
                    os.fchown(fd, -1, daemon_gid)
                os.fchmod(fd, 0o640)
            os.posix_fallocate(fd, 0, self.size)  # ENOSPC here, not SIGBUS on a write
            self._map = mmap.mmap(fd, self.size)
        except BaseException:
            os.close(fd)
            _unlink(self.path)
            raise
        self._fd = fd  # holds the flock
        self._finalizer = weakref.finalize(self, _release, self.path, self.pid, fd)

    def write(self, data: np.ndarray) -> None:
        """Copies `data` (C-contiguous) to the start of the object."""
        flat = data.reshape(-1).view(np.uint8)
        np.frombuffer(self._map, np.uint8, flat.size)[:] = flat

    def close(self) -> None:
        self._finalizer()
        try:
            self._map.close()
        except BufferError:  # a view is still alive somewhere: the unlink is what matters
            pass


class SourceObjects:
    """The source objects of one Client, by (name, field, block). Thread-safe: a publish takes
    its object out while it writes and calls, so two threads never share one."""

    def __init__(self, daemon_uid: Optional[int], daemon_gid: Optional[int],
                 shm_dir: str = SHM_DIR):
        self._uid, self._gid, self._dir = daemon_uid, daemon_gid, shm_dir
        self._free: Dict[Tuple[str, str, int], SourceObject] = {}
        self._lock = threading.Lock()
        self._closed = False

    def take(self, key, nbytes: int) -> SourceObject:
        """An object of at least `nbytes` for `key`: the one kept, or a fresh one."""
        global _swept
        with self._lock:
            obj = self._free.pop(key, None)
        if obj is not None and obj.size >= nbytes and obj.pid == os.getpid():
            return obj
        if obj is not None and obj.pid == os.getpid():
            obj.close()  # outgrown (a forked child leaves its parent's alone)
        with _sweep_lock:
            if not _swept:
                _swept = True
                sweep_dead(self._dir)
        return SourceObject(nbytes, self._uid, self._gid, self._dir)

    def give_back(self, key, obj: SourceObject, ok: bool) -> None:
        """After the call: kept for the next publish of `key` when the call succeeded, else
        unlinked (the daemon may still be reading it)."""
        with self._lock:
            keep = ok and not self._closed
            old = self._free.pop(key, None) if keep else None
            if keep:
                self._free[key] = obj
        if not keep:
            obj.close()
        if old is not None:
            old.close()

    def close(self) -> None:
        with self._lock:
            objs, self._free, self._closed = list(self._free.values()), {}, True
        for o in objs:
            o.close()
