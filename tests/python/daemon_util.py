"""A real meshdockd for tests: started on a private Unix socket with a temporary root and a
unique shared-memory prefix, talked to through the generated gRPC stubs and meshdockctl, and
read back through /dev/shm exactly as a consumer would."""
import json
import os
import pathlib
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid

import grpc

import conftest
from meshdock import protocol
from meshdock.v1 import meshdock_pb2 as pb
from meshdock.v1 import meshdock_pb2_grpc as pbg

BIN = conftest.BUILD / "bin"


def as_user(argv, uid=65534, gid=65534, groups=()):
    """`argv` run as uid/gid with exactly `groups` as supplementary groups, through setpriv(1)
    rather than Popen(user=, group=, extra_groups=) or a preexec_fn: with those, Python forks
    instead of vforking, fork runs gRPC's pthread_atfork handlers, and gRPC 1.51's thread pool
    can wait in them for good (grpc/grpc#31885: a test process with live channels hung in
    Popen). A vfork + exec runs no atfork handler."""
    ids = [f"--reuid={uid}", f"--regid={gid}"]
    ids.append("--groups=" + ",".join(map(str, groups)) if groups else "--clear-groups")
    return ["setpriv", *ids, "--", *map(str, argv)]


def unique_prefix():
    return f"t{uuid.uuid4().hex[:10]}."


def shm_names(prefix):
    return sorted(f for f in os.listdir("/dev/shm") if f.startswith(prefix))


class Daemon:
    def __init__(self, tmp, files=(), extra=(), config=None, listen=None, prefix=None, env=None,
                 user=None):
        """`user`: (uid, gid) the daemon runs as (through setpriv; the caller is root and gives
        that user what it must reach: tmp, the socket's directory)."""
        self.tmp = pathlib.Path(tmp)
        self.root = self.tmp / "root"
        self.root.mkdir(exist_ok=True)
        for f in files:
            shutil.copy(conftest.DATA / "meshes" / f, self.root / f)
        self.prefix = prefix or unique_prefix()
        self.sock = self.tmp / "d.sock"
        self.addr = listen or f"unix:{self.sock}"
        args = [str(BIN / "meshdockd"), "--listen", self.addr, "--root", str(self.root),
                "--prefix", self.prefix]
        if config is not None:
            cfg = self.tmp / "meshdockd.json"
            cfg.write_text(json.dumps(config))
            args += ["--config", str(cfg)]
        args += list(extra)
        # Host slots unless the test names a device: these tests read frames with numpy and
        # count host buffers, and "auto" would give them CUDA slots on a GPU machine (the
        # bundle's run there); the GPU path is scripts/gpu-check's and test_payload_gpu's.
        if "--device" not in extra and "device" not in (config or {}):
            args += ["--device", "cpu"]
        if user is not None:
            args = as_user(args, *user)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        line = self.proc.stdout.readline()
        if not line.startswith("meshdockd ready on "):
            self.proc.kill()
            raise RuntimeError(f"meshdockd did not start: {line!r} {self.proc.stderr.read()}")
        # The log is read as it comes: a daemon that logs more than a pipe holds (hundreds of
        # loads) would otherwise block in write(2). stop() joins it into self.stderr.
        self.log = []
        self._drain = threading.Thread(target=lambda: self.log.extend(self.proc.stderr),
                                       daemon=True)
        self._drain.start()
        self.channel = grpc.insecure_channel(self.addr)
        self.stub = pbg.MeshdockStub(self.channel)

    # ---- calls -----------------------------------------------------------------------------
    def load(self, path, name, **options):
        replace = options.pop("replace", False)
        path = str(self.root / path) if not str(path).startswith("/") else str(path)
        progress = list(self.stub.Load(pb.LoadRequest(
            path=path, name=name, replace=replace, options=pb.LoadOptions(**options))))
        assert progress[-1].phase == pb.LoadProgress.DONE
        return progress

    def ctl(self, *args, check=True, cwd=None):
        r = subprocess.run([str(BIN / "meshdockctl"), "--addr", self.addr, *args],
                           capture_output=True, text=True, timeout=60, cwd=cwd)
        if check and r.returncode != 0:
            raise AssertionError(f"meshdockctl {args}: {r.returncode} {r.stderr}")
        return r

    # ---- shared memory, as a consumer sees it ----------------------------------------------
    def control_block(self, name):
        seg = protocol.open_segment(self.prefix + name)
        try:
            return bytes(seg.buf)
        finally:
            seg.close()

    def catalog(self, name):
        seg = protocol.open_segment(self.prefix + name + ".catalog")
        try:
            return protocol.decode_catalog(bytes(seg.buf), seg.name)
        finally:
            seg.close()

    def leases(self, name):
        """The held entries of slot `name`'s leases segment (catalog layout 2)."""
        cat = self.catalog(name)
        raw = protocol.read_segment(protocol.leases_object_name(self.prefix, name))
        return protocol.decode_leases(raw, cat.num_slots, cat.lease_capacity, name)

    def newest(self, name):
        """(manifest dict, slot buffer bytes) of the newest frame."""
        raw = self.control_block(name)
        cb = protocol.decode_control_block(raw, name)
        cat = self.catalog(name)
        page = cat.pages[cb.newest_slot]
        manifest = protocol.decode_manifest(page.manifest, page.data_size)
        data_name = protocol.parse_host_handle(cb.mem_handles[cb.newest_slot])
        seg = protocol.open_segment(data_name)
        try:
            data = bytes(seg.buf[:page.data_size])
        finally:
            seg.close()
        return manifest, data

    # ---- lifecycle -------------------------------------------------------------------------
    def stop(self, sig=signal.SIGTERM, timeout=15):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self._drain.join(5)
        self.stderr = "".join(self.log)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return rc


class Registrar:
    """The daemon's half of consumer registration (docs/protocol.md, Registration), for a
    producer forged in this process: listens on an abstract SOCK_SEQPACKET socket and answers
    each consumer "MDR1" + the pid SO_PEERCRED gives, keeping it connected until close(). A
    catalog naming `address` and daemon_pid os.getpid() (owned by this uid) passes the
    consumer's checks."""

    def __init__(self):
        self.address = b"\0meshdock-test-" + uuid.uuid4().hex.encode()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(self.address)
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.pids = []  # registered consumers, in order
        self._conns = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                c, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            pid, _, _ = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize("3i")))
            c.sendall(b"MDR1" + struct.pack("<I", pid))
            self._conns.append(c)
            self.pids.append(pid)

    def close(self):
        self._stop.set()
        self._thread.join(5)
        for c in self._conns:
            c.close()
        self.sock.close()


def arrays_of(manifest, data):
    """name -> numpy array, from a manifest and the slot buffer bytes."""
    import numpy as np
    out = {}
    kinds = {0: "i", 1: "u", 2: "f", 6: "b"}
    for a in manifest["arrays"]:
        code, bits, _ = a["dtype"]
        dt = np.dtype(f"<{kinds[code]}{bits // 8}")
        out[a["name"]] = np.frombuffer(data, dt, count=a["nbytes"] // dt.itemsize,
                                       offset=a["offset"]).reshape(a["shape"])
    return out


def cb_fields(raw, n=3):
    """Every field of a control block with n slots, decoded with struct (independent of
    meshdock.protocol)."""
    magic, version, num_slots, write_idx = struct.unpack_from("<IQII", raw, 0)
    handles = [(raw[20 + 128 * i:84 + 128 * i], raw[84 + 128 * i:148 + 128 * i]) for i in range(n)]
    base = 20 + 128 * n
    shutdown = raw[base]
    width, height, comps, kind, bits, flags, data_size = struct.unpack_from("<IIIBBHI", raw, base + 1)
    (timestamp,) = struct.unpack_from("<d", raw, base + 21)
    return dict(magic=magic, version=version, num_slots=num_slots, write_idx=write_idx,
                handles=handles, shutdown=shutdown, width=width, height=height, comps=comps,
                kind=kind, bits=bits, flags=flags, data_size=data_size, timestamp=timestamp)


def wait_for(fn, timeout=15.0, every=0.02):
    """fn()'s first truthy value within `timeout` (else its last value). The default is
    generous: CI runs this suite on a loaded 2-core machine, and it only costs time on failure."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(every)
    return fn()


# One read in a fresh process: the growth of its peak resident memory (VmHWM, as scripts/bench
# measures it) over the bytes of the arrays read, the sum and the length of its first block.
_PEAK_PROBE = r"""
import sys
import meshdock
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
before = hwm()
m = meshdock.read(sys.argv[1])
grown = hwm() - before
arrays = m.points.nbytes + sum(b.data.nbytes for b in m.cells)
arrays += sum(a.nbytes for v in m.cell_data.values() for a in v)
arrays += sum(a.nbytes for a in m.point_data.values())
print(grown / arrays, int(m.cells[0].data.sum()), len(m.cells[0].data))
"""


def read_peak(path):
    """(peak growth / array bytes, sum of the first block's ids, its cells) of reading `path`."""
    env = dict(os.environ, PYTHONPATH=str(conftest.BUILD / "python"))
    out = subprocess.run([sys.executable, "-c", _PEAK_PROBE, str(path)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


# A file that is never there: loading it under a name makes a LOAD_FAILED event for that name
# whose message names this file (so a test can tell it from the events it looks at).
PRIME = "md-watch-prime-no-such-file.msh"


def prime(d, name):
    """A load of PRIME under `name`: refused (NOT_FOUND), and a LOAD_FAILED event for `name`
    naming PRIME (none when `name` is loaded)."""
    try:
        list(d.stub.Load(pb.LoadRequest(path=str(d.root / PRIME), name=name), timeout=10))
    except grpc.RpcError:
        pass  # NOT_FOUND: the event is what matters


def until_watched(d, name, seen, timeout=20.0):
    """Returns once a Watch stream just opened is subscribed. The daemon sends nothing when
    it subscribes, and a fixed sleep instead lost the first event on a loaded CI machine: a
    failed load of PRIME under `name` is repeated until seen() says the stream brought its
    LOAD_FAILED (the caller drops the events naming PRIME)."""
    deadline = time.monotonic() + timeout
    while True:
        prime(d, name)
        if wait_for(seen, timeout=1.0):
            return
        assert time.monotonic() < deadline, "the Watch stream never brought an event"
