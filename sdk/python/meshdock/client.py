"""meshdock.Client: the gRPC control plane of meshdockd from Python.

    with meshdock.Client() as c:                          # $MESHDOCK_ADDR or the system socket
        c.load("/srv/meshdock/bracket.msh", name="bracket", float32=True)
        print(c.ls(), c.stats())

Replies are small dataclasses (meshdock.replies) with the proto fields' names: enums as their
names ("PUBLISHED", "READ"), Describe's manifest parsed into a dict, LoadProgress with a
`fraction` and a one-line str(). Errors are DaemonError with the gRPC status code name and the
daemon's message. `c.pb` is the generated module (meshdock.v1.meshdock_pb2) for raw requests.
"""

from __future__ import annotations

import numbers
import os
import socket
import stat
import threading
import warnings
from typing import Callable, Iterator, List, Optional

import numpy as np

from . import protocol
from . import replies as R

__all__ = ["Client", "DaemonError", "ForkError", "DEFAULT_ADDR", "publish_chunks"]

DEFAULT_ADDR = "unix:/run/meshdock/meshdockd.sock"
# Publish data per message, well under the daemon's 4 MiB message limit. 256 KiB, not more:
# each message's bytes are a fresh allocation (numpy -> bytes -> protobuf), and one of 1 MiB and
# more is a fresh mmap whose first touch faults every page (a 1.4 MiB field took 11 ms in 1 MiB
# messages, 1.8 ms in 256 KiB ones, on this project's VM: scripts/bench stream).
CHUNK_BYTES = 1 << 18


class DaemonError(RuntimeError):
    """A call meshdockd refused or could not answer. `.code` is the status name
    (e.g. "NOT_FOUND", "PERMISSION_DENIED", "UNAVAILABLE")."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class ForkError(RuntimeError):
    """gRPC used in a process forked from one that had used it (see _ForkGuard)."""


class _ForkGuard:
    """Refuses gRPC in a forked child. gRPC's core (1.51 in Debian 12) keeps an epoll set and
    threads that a fork does not copy: a forked child that calls through it shares the parent's
    epoll set, its calls fail ("UNAVAILABLE: Bad file descriptor") or hang, and a parent with a
    stream open (watch) then finds its own channel dead (DEADLINE_EXCEEDED). gRPC's experimental
    fork support (GRPC_ENABLE_FORK_SUPPORT=1 before grpc's import) did no better here: with a
    watch stream open in the parent, 8 runs of 15 hung (1 child call in 100 without). ForkError
    comes before a child touches gRPC, and the parent goes on.

    The only mutable module state: the pid of the process whose gRPC this module started (the
    first Client's); a forked child inherits it and so knows it was forked."""

    grpc_pid: Optional[int] = None

    @classmethod
    def check(cls, what: str) -> None:
        pid = os.getpid()
        if cls.grpc_pid is None:
            cls.grpc_pid = pid
        if cls.grpc_pid != pid:
            raise ForkError(
                f"{what} in process {pid}, forked from process {cls.grpc_pid} after that "
                "process had used gRPC: gRPC cannot follow a fork (its calls here would fail or "
                "hang, and could break the parent's channels). Make the calls in the parent, or "
                "make the Client in a process started with multiprocessing's 'spawn' or "
                "'forkserver' method (a PyTorch DataLoader: multiprocessing_context='spawn'); "
                "attached slots (md.attach) do follow a fork.")


_DTYPES = {"i": 0, "u": 1, "f": 2, "b": 6}


def publish_chunks(pb, data=b"", chunk_bytes: int = CHUNK_BYTES, **header) -> Iterator:
    """The PublishChunk messages of one Publish: the first carries `header` (name, field,
    dtype, shape, block) and the first `chunk_bytes` of `data`; each further one the next
    `chunk_bytes` (at least one message, even for empty data)."""
    view = memoryview(data).cast("B")
    yield pb.PublishChunk(data=bytes(view[:chunk_bytes]), **header)
    for at in range(chunk_bytes, len(view), chunk_bytes):
        yield pb.PublishChunk(data=bytes(view[at:at + chunk_bytes]))


class _SourceRefused(DaemonError):
    """The daemon could not use a publish's source object (its reply's trailer said so, or it
    is a daemon from before source objects): the bytes may go in messages instead."""


def _daemon_error(e) -> DaemonError:
    """The DaemonError of a failed call (a grpc.RpcError)."""
    return DaemonError(e.code().name, e.details())


def _source_error(e) -> DaemonError:
    """The DaemonError of a refused publish from a source object (a grpc.RpcError). The
    daemon's trailer (protocol.SOURCE_TRAILER) says whether the object was the trouble; a daemon
    from before source objects sends none and refuses such a publish as INVALID_ARGUMENT (no
    data). No trailer otherwise: the call failed before the daemon read its header (token,
    transport)."""
    code, message = e.code().name, e.details()
    state = dict(e.trailing_metadata() or ()).get(protocol.SOURCE_TRAILER)
    if state == protocol.SOURCE_REFUSED or (state is None and code == "INVALID_ARGUMENT"):
        return _SourceRefused(code, message)
    return DaemonError(code, message)


# Address schemes passed to gRPC as they are, as meshdockctl's address_problem
# (clients/meshdockctl/main.cpp) passes them: meshdockd listens on unix:PATH or HOST:PORT, and
# gRPC's own scheme:... forms reach it too.
_ADDR_SCHEMES = ("unix:", "unix-abstract:", "dns:", "ipv4:", "ipv6:", "vsock:")
_ADDR_FORMS = "meshdockd listens on unix:PATH or HOST:PORT"


def _address_problem(addr: str) -> Optional[str]:
    """Why `addr` is no address meshdockd can be reached at (None: it is one), in meshdockctl's
    words. gRPC takes far more, and answers what it cannot use only at the first call, with its
    resolver's words ("DNS resolution failed for /tmp/x/s.sock: C-ares status ...")."""
    if not addr:
        return "is empty"
    for scheme in _ADDR_SCHEMES:
        if addr.startswith(scheme):
            return None if len(addr) > len(scheme) else "names no socket"
    if "://" in addr:
        return "is a URL"
    colon = addr.rfind(":")
    if colon <= 0:
        return "has no :PORT"
    port = addr[colon + 1:]
    if not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) <= 65535):
        return "has no port 1-65535 after its last ':'"
    return None


# What each argument the Client sends becomes in its request, by parameter name: protobuf's own
# refusal of a wrong one names neither the argument nor the method ("Value out of range: -1",
# "5 has type int, but expected one of: bytes, unicode"), and a path or progress callback that
# is wrong would fail only once the call is under way. (lo, hi): an integer field's range, as
# the proto type holds it (a pid: as a process id can be); the daemon judges the rest (a
# num_slots over 10, a name a slot cannot have) and says so.
_UINT32 = (0, 2**32 - 1)
_ARG_KINDS = {
    "name": "text", "field": "text", "device": "text", "format": "text",
    "path": "path", "progress": "callback",
    "float32": "flag", "int32": "flag", "zero_copy_only": "flag", "watch": "flag",
    "replace": "flag", "overwrite": "flag",
    "num_slots": _UINT32, "block": _UINT32, "pid": (1, 2**31 - 1),
}


def _check_args(where: str, **args) -> None:
    """TypeError / ValueError naming `where` (the method, or a publish's slot and field) and the
    argument, for a value of the wrong type or out of range (kinds: _ARG_KINDS); nothing else
    changes what a call sends. A name given as None is not checked (load's default)."""
    for arg, value in args.items():
        kind = _ARG_KINDS[arg]
        if kind == "text" or kind == "path":
            text = value
            if kind == "path" and isinstance(value, os.PathLike):
                text = os.fspath(value)
            if isinstance(text, bytes):
                try:
                    text = text.decode()
                except UnicodeDecodeError:
                    text = text.decode(errors="surrogateescape")
            if not isinstance(text, str):
                want = "a path (str or os.PathLike)" if kind == "path" else "a str"
                raise TypeError(f"{where}: {arg} must be {want}, not "
                                f"{type(value).__name__} {value!r}")
            try:
                text.encode()
            except UnicodeEncodeError:
                # a file name of bytes that are not UTF-8 (os.fsdecode's surrogates)
                raise ValueError(f"{where}: {arg} {value!r} is not UTF-8 text, which is all "
                                 "gRPC carries (rename the file, or link it under a UTF-8 "
                                 "name)") from None
        elif kind == "flag":
            if not isinstance(value, (bool, np.bool_, numbers.Integral)):
                raise TypeError(f"{where}: {arg} must be True or False, not "
                                f"{type(value).__name__} {value!r}")
        elif kind == "callback":
            if value is not None and not callable(value):
                raise TypeError(f"{where}: {arg} must be a function (called with each "
                                f"LoadProgress) or None, not {type(value).__name__} {value!r}")
        else:
            lo, hi = kind
            if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{where}: {arg} must be an integer from {lo} to {hi}, not "
                                f"{type(value).__name__} {value!r}")
            if not lo <= value <= hi:
                raise ValueError(f"{where}: {arg} must be an integer from {lo} to {hi}, "
                                 f"not {value!r}")


def _default_name(path) -> str:
    """The slot name meshdockctl load gives a file when no --name is: its file name up to the
    first dot ("box.v41b.msh" -> "box"). ValueError, saying to pass name=, when that is no name a
    slot can have ("my mesh.msh", ".hidden.msh")."""
    file = os.path.basename(os.fsdecode(path))
    name = file.split(".", 1)[0]
    try:
        protocol.validate_name(name)
    except ValueError as e:  # ProtocolError, or UnicodeEncodeError from a non-UTF-8 name
        raise ValueError(f"Client.load: no name given, and the file name '{file}' does not "
                         f"make one: {e}; pass name=NAME") from None
    return name


def _socket_path(addr: str) -> Optional[str]:
    """The path of a gRPC address's Unix socket (unix:PATH, unix:///PATH), else None."""
    if not addr.startswith("unix:"):
        return None
    path = addr[len("unix:"):]
    return path[2:] if path.startswith("//") else path


def _socket_owner(addr: str) -> Optional[int]:
    """The uid owning the Unix socket of a gRPC address (the daemon creates it), else None."""
    path = _socket_path(addr)
    try:
        return None if path is None else os.stat(path).st_uid
    except OSError:
        return None


def _denied(what: str, path: str) -> str:
    """Why this user may not connect through `path` (the socket or a directory on its way):
    its mode, owner and group, and the group to join (meshdockctl says the same)."""
    import grp
    import pwd
    st = os.stat(path)
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    return (f"permission denied on {what} {path} (mode {stat.S_IMODE(st.st_mode):04o}, owner "
            f"{owner}, group {group}): this user may not connect; join group '{group}' (e.g. "
            f"`sudo usermod -aG {group} $USER`, then log in again) or run as its owner")


def _diagnose_unavailable(addr: str):
    """(code, why) for a daemon address gRPC could not connect to: on a Unix socket, what a
    connect(2) of our own finds there (no socket, nothing listening, a permission and whose);
    None when there is nothing more to say than gRPC's message."""
    path = _socket_path(addr)
    if path is None:
        return None
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return None  # it answers now: gRPC's message is all there is
    except FileNotFoundError:
        return ("UNAVAILABLE", f"no socket at {path} (is meshdockd running? is the address "
                "right: Client(addr=...), $MESHDOCK_ADDR?)")
    except ConnectionRefusedError:
        return ("UNAVAILABLE", f"nothing listens on {path} (a socket left by a meshdockd that "
                "is gone?)")
    except PermissionError:
        try:
            if not os.access(path, os.W_OK):
                return ("PERMISSION_DENIED", _denied("the socket", path))
            # The socket is writable: a directory on the way may not be searched.
            d = os.path.dirname(os.path.abspath(path))
            while True:
                if not os.access(d, os.X_OK):
                    return ("PERMISSION_DENIED", _denied("the socket's directory", d))
                if d == "/":
                    break
                d = os.path.dirname(d)
        except OSError:
            pass
        return ("PERMISSION_DENIED", f"permission denied connecting to {path}")
    except OSError as e:
        return ("UNAVAILABLE", f"cannot connect to {path}: {e.strerror}")
    finally:
        s.close()


class Client:
    """meshdockd's control plane over gRPC: load, reload and unload meshes, list and describe
    them, publish arrays into slots, export, watch events, leases, stats, metrics, shutdown.

        with meshdock.Client() as c:      # $MESHDOCK_ADDR, else unix:/run/meshdock/meshdockd.sock
            c.load("/srv/meshdock/bracket.msh", float32=True)   # slot "bracket"
            print(c.ls())

    Replies are meshdock.replies dataclasses; a refused or failed call raises DaemonError
    (.code: "NOT_FOUND", "UNAVAILABLE", ...), an argument of the wrong type or range TypeError /
    ValueError naming the method and the argument before anything is sent. Nothing connects
    until the first call. A Client belongs to the process that made it (ForkError in a forked
    child); close() it, or use it in a with block."""

    def __init__(self, addr: Optional[str] = None, token: Optional[str] = None,
                 timeout: Optional[float] = None):
        """`addr`: where meshdockd listens, "unix:PATH" (also unix:///PATH, unix-abstract:NAME)
        or "HOST:PORT" ("[::1]:50051"; gRPC's dns:, ipv4:, ipv6:, vsock: forms pass too); None
        or "": $MESHDOCK_ADDR when set and not empty, else DEFAULT_ADDR,
        "unix:/run/meshdock/meshdockd.sock" (the system daemon's socket). Any other form (a bare
        path, a host without :PORT) raises ValueError naming it, as `meshdockctl --addr` refuses
        it. `token`: the bearer token a TCP endpoint asks for; None: $MESHDOCK_TOKEN (unset or
        "": none sent). `timeout`: seconds each call may take (a Load's whole load: past it the
        daemon stops the load; health(): 5 s when None); None: no limit. watch() streams take no
        timeout."""
        source = "addr"
        if addr is not None and not isinstance(addr, str):
            hint = (f": a Unix socket's address is 'unix:{os.fspath(addr)}'"
                    if isinstance(addr, os.PathLike) else "")
            raise TypeError(f"Client: addr must be a str (unix:PATH or HOST:PORT), not "
                            f"{type(addr).__name__} {addr!r}{hint}")
        if not addr:
            env = os.environ.get("MESHDOCK_ADDR")  # set but empty: as unset, as meshdockctl
            addr, source = (env, "$MESHDOCK_ADDR") if env else (DEFAULT_ADDR, "addr")
        why = _address_problem(addr)
        if why is not None:
            # A socket's path without its scheme is the likely slip ("/tmp/x/s.sock").
            hint = (f"; for the socket at that path: 'unix:{addr}'"
                    if addr.startswith(("/", "./", "../", "~")) else "")
            raise ValueError(f"Client: {source} '{addr}' {why} ({_ADDR_FORMS}{hint})")
        if token is not None and not isinstance(token, str):
            raise TypeError(f"Client: token must be a str or None ($MESHDOCK_TOKEN), not "
                            f"{type(token).__name__}")
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, numbers.Real)):
            raise TypeError(f"Client: timeout must be a number of seconds or None (no limit), "
                            f"not {type(timeout).__name__} {timeout!r}")
        if timeout is not None and not timeout > 0:  # NaN too
            # gRPC's deadline would be over at once: every call DEADLINE_EXCEEDED, not "no
            # limit" as meshdockctl's --timeout 0 means
            raise ValueError(f"Client: timeout must be a number of seconds > 0, or None (no "
                             f"limit), not {timeout!r}")
        import grpc
        from .v1 import meshdock_pb2 as pb
        from .v1 import meshdock_pb2_grpc as pbg
        self._grpc, self.pb = grpc, pb
        self.addr = addr
        token = token if token is not None else os.environ.get("MESHDOCK_TOKEN")
        self._metadata = [("authorization", f"Bearer {token}")] if token else None
        self._timeout = timeout
        _ForkGuard.check("meshdock.Client() made")
        self._pid = os.getpid()
        self._channel_ = grpc.insecure_channel(self.addr)
        self._stub_ = pbg.MeshdockStub(self._channel_)
        self._sources = None  # shm_source.SourceObjects, made by the first publish through shm
        self._sources_lock = threading.Lock()
        self._buffers = {}  # (name, field, block) -> the SourceObject of buffer()'s array
        # Why publish(via="auto") sends through gRPC from now on (None: it may use shm).
        self.shm_unavailable: Optional[str] = None
        # The daemon's max_decoded_size as its Stats said (None: not asked yet; 0: not said).
        self._max_decoded: Optional[int] = None
        self._closed = False

    # The channel and stub, in the process that made them only (_ForkGuard), until close().
    def _check_process(self) -> None:
        if self._pid != os.getpid():
            _ForkGuard.check(f"a meshdock.Client made in process {self._pid} used")
        if self._closed:
            raise ValueError(f"this meshdock.Client ({self.addr}) is closed; make a new one")

    @property
    def _channel(self):
        self._check_process()
        return self._channel_

    @property
    def _stub(self):
        self._check_process()
        return self._stub_

    def _explained(self, err: DaemonError, fn=None) -> DaemonError:
        """`err`, or, when gRPC could not connect at all ("failed to connect to all
        addresses..."), what is wrong at the address, as meshdockctl says it; a deadline says
        which call and which timeout."""
        if err.code == "DEADLINE_EXCEEDED" and self._timeout is not None:
            verb = (getattr(fn, "_method", b"") or b"").decode(errors="replace").rsplit("/", 1)[-1]
            why = (f"{verb or 'the call'}: no reply from meshdockd at {self.addr} within this "
                   f"Client's timeout of {self._timeout:g} s")
            if verb in ("Load", "Reload"):
                why += " (the daemon stops a load past it and publishes nothing; ls() shows)"
            return DaemonError(err.code, why)
        if err.code != "UNAVAILABLE" or "failed to connect" not in err.message:
            return err
        found = _diagnose_unavailable(self.addr)
        if found is None:
            return err
        code, why = found
        if code == "UNAVAILABLE":
            why = f"meshdockd at {self.addr} is not answering: {why}"
        return DaemonError(code, why)

    def _call(self, fn, req, error=_daemon_error):
        """fn(req) with this client's metadata and timeout; a failure raises error(RpcError)."""
        try:
            return fn(req, metadata=self._metadata, timeout=self._timeout)
        except self._grpc.RpcError as e:
            raise self._explained(error(e), fn) from None

    def _stream(self, fn, req, progress: Optional[Callable] = None) -> R.SlotInfo:
        last = None
        try:
            for p in fn(req, metadata=self._metadata, timeout=self._timeout):
                last = p
                if progress is not None:
                    progress(R.from_pb(R.LoadProgress, p))
        except self._grpc.RpcError as e:
            raise self._explained(_daemon_error(e), fn) from None
        return R.from_pb(R.SlotInfo, last.slot)

    # ---- verbs -------------------------------------------------------------------------------
    def load(self, path, name: Optional[str] = None, float32: bool = False, int32: bool = False,
             zero_copy_only: bool = False, device: str = "", format: str = "",
             watch: bool = False, num_slots: int = 0, replace: bool = False,
             progress: Optional[Callable] = None) -> R.SlotInfo:
        """Load `path` (made absolute here; the daemon reads it, under one of its roots) as slot
        `name`; returns its SlotInfo. `name` defaults, as meshdockctl load's, to the file name
        up to its first dot ("box.v41b.msh" -> "box"); ValueError, saying to pass name=, when
        that is no slot name (A-Z a-z 0-9 _ . -, at most 200 characters). `progress` is called
        with a LoadProgress per step (phase, bytes_done, bytes_total, fraction; str() one line,
        so progress=print works)."""
        _check_args("Client.load", path=path, float32=float32, int32=int32,
                    zero_copy_only=zero_copy_only, device=device, format=format, watch=watch,
                    num_slots=num_slots, replace=replace, progress=progress)
        if name is None:
            name = _default_name(path)
        else:
            _check_args("Client.load", name=name)
        pb = self.pb
        # bool(): protobuf takes a numpy bool only through __index__, deprecated by numpy
        req = pb.LoadRequest(path=os.path.abspath(os.fspath(path)), name=name,
                             replace=bool(replace),
                             options=pb.LoadOptions(float32=bool(float32), int32=bool(int32),
                                                    zero_copy_only=bool(zero_copy_only),
                                                    device=device, format=format,
                                                    watch=bool(watch), num_slots=num_slots))
        return self._stream(self._stub.Load, req, progress)

    def reload(self, name: str, progress: Optional[Callable] = None) -> R.SlotInfo:
        """Reads mesh `name`'s file again, with the options it was loaded with, and publishes
        it as a new frame of the same slot (consumers see it as any frame; published fields are
        replaced by the file's arrays, as SlotInfo.notes says); returns its SlotInfo.
        `progress` as for load. DaemonError NOT_FOUND when nothing of that name is loaded,
        FAILED_PRECONDITION for a published tensor (no file to read)."""
        _check_args("Client.reload", name=name, progress=progress)
        return self._stream(self._stub.Reload, self.pb.NameRequest(name=name), progress)

    def unload(self, name: str) -> None:
        """Unloads mesh (or tensor) `name`: the daemon sets its slot's shutdown flag (attached
        consumers get ProducerGone; reattach=True waits for a new load) and frees its memory
        once no consumer holds it. DaemonError NOT_FOUND when nothing of that name is loaded."""
        _check_args("Client.unload", name=name)
        self._call(self._stub.Unload, self.pb.NameRequest(name=name))

    def ls(self) -> List[R.SlotInfo]:
        """Every loaded mesh's SlotInfo."""
        return [R.from_pb(R.SlotInfo, s)
                for s in self._call(self._stub.List, self.pb.ListRequest()).slots]

    def describe(self, name: str) -> R.Description:
        """slot (SlotInfo), manifest (a dict), manifest_json (its text), arrays."""
        _check_args("Client.describe", name=name)
        return R.from_pb(R.Description,
                         self._call(self._stub.Describe, self.pb.NameRequest(name=name)))

    def attach(self, name: str, timeout: float = 5.0, producer_timeout: float = 1.0,
               reattach: bool = False, owner_uid: Optional[int] = None):
        """md.attach to `name` where this daemon publishes it: the prefix comes from its
        SlotInfo (no MESHDOCK_PREFIX needed) and, on a Unix socket, the trusted owner is the
        socket's. DaemonError NOT_FOUND (naming what is loaded) when the daemon serves no
        `name`, at once rather than after `timeout`."""
        from .attach import attach
        _check_args("Client.attach", name=name)
        try:
            info = self.describe(name).slot
        except DaemonError as e:
            if e.code != "NOT_FOUND":
                raise
            loaded = sorted(s.name for s in self.ls())
            raise DaemonError(e.code, f"{e.message} (loaded at {self.addr}: "
                              f"{', '.join(loaded) if loaded else 'nothing'})") from None
        if owner_uid is None:
            owner_uid = _socket_owner(self.addr)
        return attach(name, prefix=info.prefix, timeout=timeout,
                      producer_timeout=producer_timeout, reattach=reattach,
                      owner_uid=owner_uid)

    def publish(self, name: str, field: str, array, block: int = 0, device: str = "",
                num_slots: int = 0, via: str = "auto"):
        """Replace point_data/NAME or cell_data/NAME (block `block`) with `array`; returns the
        new frame number. On a mesh of several blocks, a cell_data `array` with one row per cell
        of every block (block order) and block 0 is the whole field: every block in one frame,
        and the way to make a new field there. field "tensor" is a single-array publish (see publish_tensor);
        device and num_slots apply only to a tensor's first publish. `array` is numpy, any host
        DLPack exporter (a CPU torch tensor: read in place), or a device array (torch CUDA,
        CuPy: copied to the host first, with a PayloadWarning); a torch bfloat16 tensor goes as
        bfloat16.

        `via`: how the bytes reach the daemon. "grpc": in messages. "shm": written into a
        shared-memory object of this process's that the daemon reads (meshdock.shm_source; the
        daemon's Unix socket only; several times faster for large arrays). "auto" (default):
        shm for arrays over CHUNK_BYTES on a Unix socket, falling back to gRPC for good (the
        reason in .shm_unavailable) when this process cannot make an object the daemon reads."""
        from .attach import SdkError
        from .payload import PayloadWarning, _host_array

        notes: List[str] = []
        code = None
        _check_args("Client.publish", name=name, field=field, device=device)
        # Every refusal names the slot as well as the field (a producer streams into several
        # slots); the daemon's say "slot 'NAME': FIELD: ..." too.
        where = f"slot '{name}': {field}"
        _check_args(where, block=block, num_slots=num_slots)
        if via not in ("auto", "grpc", "shm"):  # before any conversion or copy of the array
            raise ValueError(f"Client.publish: via must be 'auto', 'grpc' or 'shm', not {via!r}")
        if isinstance(array, (str, bytes)):  # numpy would make a 0-d string array of it
            raise TypeError(f"Client.publish: {where}: array must be an array (numpy, DLPack), "
                            f"not {type(array).__name__}")
        try:
            scalar = getattr(array, "ndim", None) == 0 or np.ndim(array) == 0
        except ValueError as e:  # a ragged list: numpy's words name no slot or field
            raise ValueError(f"{where}: not an array of 1 to 4 dimensions ({e})") from None
        if scalar:
            # np.ascontiguousarray below would make it shape (1,) without a word.
            raise ValueError(f"{where}: a 0-d array (a scalar) cannot be published: frames "
                             "carry arrays of 1 to 4 dimensions (np.atleast_1d(x) sends shape "
                             "(1,))")
        if type(array).__module__.startswith("torch") and hasattr(array, "detach"):
            array = array.detach()  # the values are read; autograd has no part in a publish
            if str(array.dtype) == "torch.bfloat16":  # numpy has no bfloat16
                import torch
                array, code = array.contiguous().view(torch.int16), 4  # the same 16 bits
            elif array.device.type == "cpu":
                # torch's own numpy view (no copy): its DLPack export refuses bool (1.13) and
                # says nothing of the field
                try:
                    array = array.resolve_conj().resolve_neg().numpy()
                except (TypeError, RuntimeError) as e:
                    raise TypeError(f"{where}: a torch {array.dtype} tensor cannot be "
                                    f"published ({e})") from None
        a = np.ascontiguousarray(_host_array(field, array, notes))
        if a.dtype.kind not in _DTYPES:
            raise TypeError(f"{where}: dtype {a.dtype} cannot be published")
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False))
        if notes:
            warnings.warn("; ".join(notes) + " (Publish sends host bytes)", PayloadWarning,
                          stacklevel=2)
        dtype = self.pb.DType(code=_DTYPES[a.dtype.kind] if code is None else code,
                              bits=a.dtype.itemsize * 8, lanes=1)
        header = dict(name=name, field=field, block=block, shape=list(a.shape), dtype=dtype,
                      device=device, num_slots=num_slots)
        held, offset = self._buffer_holding(a) if a.nbytes and self._buffers else (None, None)
        if held is not None:
            # Written into our buffer(): only its name travels. A daemon that cannot read it
            # gets the bytes in messages, as auto does.
            try:
                return self._publish_from(held, header, offset)
            except _SourceRefused as e:
                return self._publish_grpc_from_now_on(a, header, e)
        if via == "shm" or (via == "auto" and self.shm_unavailable is None
                            and a.nbytes > CHUNK_BYTES and self.addr.startswith("unix:")):
            try:
                return self._publish_shm(a, header)
            except (OSError, SdkError, DaemonError, ImportError) as e:
                # auto: the object could not be made, or the daemon could not read it (another
                # /dev/shm, not in its group, a proxy between us; an older daemon, which ignores
                # source_shm and finds no data; no libmeshdock here, which the objects need and
                # md.Client otherwise does not: LibraryNotFound): gRPC from now on, if gRPC
                # works. Any other refusal (the mesh, the field) is gRPC's to report too.
                if via == "shm" or (isinstance(e, DaemonError)
                                    and not isinstance(e, _SourceRefused)):
                    raise
                return self._publish_grpc_from_now_on(a, header, e)
        return self._publish_grpc(a, header)

    def _publish_from(self, obj, header: dict, offset: int = 0) -> int:
        """A header-only PublishSmall naming source object `obj`, the array at `offset`;
        _SourceRefused when the daemon could not use the object."""
        return self._call(self._stub.PublishSmall,
                          self.pb.PublishChunk(source_shm=obj.name, source_offset=offset,
                                               **header), error=_source_error).frame

    def _publish_grpc_from_now_on(self, a: np.ndarray, header: dict, why: Exception) -> int:
        """Sends `a` in messages, and every later auto publish too, saying why in
        shm_unavailable (set once this publish went through)."""
        frame = self._publish_grpc(a, header)
        self.shm_unavailable = str(why)
        return frame

    def buffer(self, name: str, field: str, shape, dtype="float64", block: int = 0) -> np.ndarray:
        """A writable numpy array in shared memory of this client's, for `publish(name, field,
        it)` (or `publish_tensor(name, it)` with field "tensor"): the daemon reads it by name, so
        the publish copies nothing on this side. Compute the field into it (`np.add(a, b,
        out=buf)`, `torch.from_numpy(buf)`), publish, and write the next frame after publish
        returns. The same array's memory comes back for the same (name, field, block) while it
        is large enough; a larger request gives fresh memory (an old array stays valid as long
        as it lives). A slice or reshape of it publishes by name too. The daemon's Unix socket
        only (DaemonError FAILED_PRECONDITION otherwise); RESOURCE_EXHAUSTED over the daemon's
        max_decoded_size; SdkError when the object cannot be made (/dev/shm full, not in the
        daemon's group)."""
        _check_args("Client.buffer", name=name, field=field, block=block)
        dt = np.dtype(dtype)
        shape = tuple(int(n) for n in np.atleast_1d(shape))
        if not 1 <= len(shape) <= 4 or min(shape) < 0:
            raise ValueError(f"Client.buffer: slot '{name}': {field}: shape {shape}: 1 to 4 "
                             "dimensions, none negative")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        where = dict(name=name, field=field)
        sources = self._source_objects(field, "Client.buffer")
        self._check_decoded_size(nbytes, where)
        key = (name, field, block)
        with self._sources_lock:
            obj = self._buffers.get(key)
        if obj is None or obj.size < nbytes:
            obj = sources.make(nbytes)
            with self._sources_lock:
                old, self._buffers[key] = self._buffers.get(key), obj
            if old is not None:
                old.unlink()  # its arrays keep its memory; its name goes
        return obj.array(shape, dt)

    def _buffer_holding(self, a: np.ndarray):
        """(object, offset) of the buffer() object `a` lies in, if any."""
        with self._sources_lock:
            objs = list(self._buffers.values())
        for obj in objs:
            off = obj.offset_of(a)
            if off is not None:
                return obj, off
        return None, None

    def _source_objects(self, field: str, what: str):
        """This client's SourceObjects, made at the first use; FAILED_PRECONDITION off a Unix
        socket, naming `what` asked for shared memory."""
        from .shm_source import SourceObjects
        if not self.addr.startswith("unix:"):
            raise DaemonError("FAILED_PRECONDITION", f"{field}: {what} needs the daemon's Unix "
                              f"socket, not {self.addr}")
        with self._sources_lock:
            if self._sources is None:
                sock = _socket_path(self.addr)
                self._sources = SourceObjects(sock if sock and os.path.exists(sock) else None)
            return self._sources

    def _publish_shm(self, a: np.ndarray, header: dict) -> int:
        self._source_objects(header["field"], "via='shm'")
        self._check_decoded_size(a.nbytes, header)
        key = (header["name"], header["field"], header["block"])
        obj = self._sources.take(key, a.nbytes)
        ok = False
        try:
            obj.write(a)
            frame = self._publish_from(obj, header)
            ok = True
            return frame
        finally:
            self._sources.give_back(key, obj, ok)

    def _check_decoded_size(self, nbytes: int, header: dict) -> None:
        """Refuses, as the daemon would, an array over the daemon's max_decoded_size before a
        source object is made: the object's pages are allocated when it is made (the whole
        array, in /dev/shm, which the daemon's own segments share), only for the daemon to
        refuse the header. The limit is asked once (Stats), and again before a refusal, in
        case a SIGHUP raised it; a daemon that does not say it (0) is left to refuse."""
        if self._max_decoded is None or (self._max_decoded and nbytes > self._max_decoded):
            self._max_decoded = self._call(self._stub.Stats, self.pb.StatsRequest()).max_decoded_size
        if self._max_decoded and nbytes > self._max_decoded:
            raise DaemonError("RESOURCE_EXHAUSTED",
                              f"slot '{header['name']}': {header['field']}: {nbytes} bytes are "
                              f"over max_decoded_size ({self._max_decoded}); nothing was sent")

    def _publish_grpc(self, a: np.ndarray, header: dict) -> int:
        chunks = publish_chunks(self.pb, a.reshape(-1).view(np.uint8), **header)
        if a.nbytes <= CHUNK_BYTES:
            # One message: unary PublishSmall. A client stream costs grpc Python a thread and
            # GIL hand-offs (measured +0.5 ms alone, +10 ms under 32 busy client threads).
            return self._call(self._stub.PublishSmall, next(chunks)).frame
        return self._call(self._stub.Publish, chunks).frame

    def publish_tensor(self, name: str, array, device: str = "", num_slots: int = 0,
                       via: str = "auto") -> int:
        """Publishes `array` alone (an image, a tensor: any host array of 1 to 4 dimensions,
        each >= 1) as the frame of slot `name`; returns the frame number. The first publish to a
        free name creates the slot, on `device` ("auto", "cpu", "cuda:N"; "" = the daemon's
        default) with `num_slots` ring slots (0 = the default); later ones replace the array,
        any shape or dtype. Consumers read it as frame.tensor; the control block describes it
        (width, height, comps, dtype) so that a cuda-link consumer reads it as a texture:
        (H, W, C) -> W x H x C. A mesh's name is refused (DaemonError INVALID_ARGUMENT)."""
        return self.publish(name, "tensor", array, device=device, num_slots=num_slots, via=via)

    def export(self, name: str, path, format: str = "", overwrite: bool = False) -> int:
        """Writes the mesh as its slot serves it to `path` (under a daemon root); returns bytes
        written. What the format could not hold (an array not written, blocks merged) is a
        MeshWarning each, as from meshdock.write. An existing file is replaced only with
        overwrite=True (DaemonError ALREADY_EXISTS otherwise), and never the source file of a
        loaded mesh."""
        from .mesh import MeshWarning
        _check_args("Client.export", name=name, path=path, format=format, overwrite=overwrite)
        req = self.pb.ExportRequest(name=name, path=os.path.abspath(os.fspath(path)),
                                    format=format, overwrite=bool(overwrite))
        rep = self._call(self._stub.Export, req)
        for n in rep.notes:
            warnings.warn(f"{rep.path}: {n}", MeshWarning, stacklevel=2)
        return rep.bytes_written

    def stats(self) -> R.Stats:
        """The daemon's Stats: slots (a SlotStats each: name, bytes, frames, leases,
        last_load_seconds), device and host memory used, the device memory budget, uptime,
        backend, and max_decoded_size (the most bytes one publish may be; 0: not said)."""
        return R.from_pb(R.Stats, self._call(self._stub.Stats, self.pb.StatsRequest()))

    def metrics(self) -> str:
        """The daemon's metrics in Prometheus' text format (what `meshdockctl metrics` prints):
        RPC counts and durations, bytes, frames, leases, consumers, memory."""
        return self._call(self._stub.Metrics, self.pb.MetricsRequest()).text

    def leases(self, name: str = "") -> List[R.Lease]:
        """The leases the daemon honours (every mesh, or `name`'s): the frames consumers hold,
        each with mesh name, ring slot, pid, uid, frame and age_seconds."""
        _check_args("Client.leases", name=name)
        return [R.from_pb(R.Lease, x)
                for x in self._call(self._stub.Leases, self.pb.LeasesRequest(name=name)).leases]

    def revoke_leases(self, pid: int) -> int:
        """Revokes every lease of consumer `pid` (a stuck one pinning buffers); returns how
        many. Its frames may then be refilled under it."""
        _check_args("Client.revoke_leases", pid=pid)
        return self._call(self._stub.RevokeLeases, self.pb.RevokeLeasesRequest(pid=pid)).revoked

    def watch(self, name: str = "") -> Iterator[R.Event]:
        """Events as they happen: kind "LOADED", "RELOADED", "PUBLISHED", "UNLOADED",
        "LOAD_FAILED" or "SHUTDOWN", name, frame, message, timestamp, and dropped: the events
        lost just before this one when the loop reads more slowly than they come (the daemon
        keeps the newest 1024 per watcher), so a slow watcher knows it missed some. The
        iteration ends after SHUTDOWN (the daemon stopped); a daemon that dies raises
        DaemonError UNAVAILABLE. The stream opens at the first iteration."""
        # Not a generator itself, so that a wrong argument raises here, not at the first next()
        _check_args("Client.watch", name=name)
        return self._watch(name)

    def _watch(self, name: str) -> Iterator[R.Event]:
        try:
            for e in self._stub.Watch(self.pb.WatchRequest(name=name), metadata=self._metadata):
                yield R.from_pb(R.Event, e)
        except self._grpc.RpcError as e:
            if e.code() != self._grpc.StatusCode.CANCELLED:
                raise self._explained(_daemon_error(e)) from None

    def health(self) -> str:
        """"SERVING" when the daemon serves (within the Client's timeout, or 5 s without one)."""
        from .health import health_pb2, health_pb2_grpc
        stub = health_pb2_grpc.HealthStub(self._channel)
        try:
            r = stub.Check(health_pb2.HealthCheckRequest(), metadata=self._metadata,
                           timeout=self._timeout or 5.0)
        except self._grpc.RpcError as e:
            raise self._explained(_daemon_error(e)) from None
        return health_pb2.HealthCheckResponse.ServingStatus.Name(r.status)

    def shutdown(self) -> None:
        """Stops the daemon as SIGTERM does: every slot's shutdown flag is set (consumers get
        ProducerGone), watchers get SHUTDOWN, its segments and socket are removed and it exits
        0. Any caller that may connect may ask (the socket's mode and group; over TCP, the
        token). Returns once the daemon has accepted the request."""
        self._call(self._stub.Shutdown, self.pb.ShutdownRequest())

    def close(self) -> None:
        """Closes the channel and unlinks this client's shm source objects."""
        if self._sources is not None:
            self._sources.close()  # unlinks in the process that made them only
        with self._sources_lock:
            buffers, self._buffers = list(self._buffers.values()), {}
        for obj in buffers:
            obj.unlink()  # their arrays may live on: the mapping goes with the last of them
        if self._pid == os.getpid():
            self._channel_.close()  # a forked child's inherited channel is not its to close
        self._closed = True

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
