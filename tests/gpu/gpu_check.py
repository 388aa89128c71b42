"""scripts/gpu-check's harness: one run that proves or disproves meshdock's GPU path, and with
--no-gpu everything but the CUDA parts (so it cannot rot on machines without a GPU).

    python3 tests/gpu/gpu_check.py --out DIR [--no-gpu] [--quick] [--cpp-consumer PATH]
                                   [--data DIR] [--time-limit S] [--only CHECK,...]

It runs with the python3 it is given and the meshdock package that python imports (the build
tree's build/python here, the wheel's venv on a GPU machine), and the meshdockd / meshdockctl
first on PATH. It starts meshdockd (private socket, unique shm prefix, --device cuda:0, or cpu
with --no-gpu), generates a tetrahedral mesh (~1M tets; --quick: ~48k), loads it and a
multi-block mesh with regions, and in separate processes (tests/gpu/consumer.py, cpp_check)
checks every array against the host read of the file, republishes while frames are held,
SIGKILLs a consumer and then the daemon under held frames, and measures load -> consumer time,
wake latency (1 and 8 consumers) and adopt cost; on a GPU also a CUDA IPC baseline without
meshdock (two CuPy processes), stream semantics, H2D upload
against a plain pinned copy, and cudaIpcOpenMemHandle (its cost, and that a second open in
one process is the same counted mapping). Writes OUT/gpu-check.json (every check:
name, status pass|fail|skipped, reason, figures with units in their names) and
OUT/gpu-check.log; exit 0 only when no check failed. Every step has its own timeout and the
whole run a time limit (default 450 s): a hang is a failed check, never a stuck run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gpucheck_common import now, percentile, reference_of  # noqa: E402

CONSUMER = os.path.join(HERE, "consumer.py")


class CheckFailed(Exception):
    pass


class Skip(Exception):
    pass


class TimeLimit(BaseException):
    """The run's time limit (SIGALRM): not an Exception, so no check swallows it."""


# ---- report -------------------------------------------------------------------------------
class Report:
    def __init__(self, out: str, args):
        self.out = out
        self.checks = []
        self.t0 = now()
        self.meta = {"args": vars(args), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                 time.gmtime())}
        self.logf = open(os.path.join(out, "gpu-check.log"), "w")

    def log(self, msg: str) -> None:
        line = f"[{now() - self.t0:7.2f}s] {msg}"
        print(line, flush=True)
        self.logf.write(line + "\n")
        self.logf.flush()

    def add(self, name, status, reason="", figures=None, seconds=0.0):
        c = {"name": name, "status": status, "reason": reason, "seconds": round(seconds, 3),
             "figures": figures or {}}
        self.checks.append(c)
        figs = ", ".join(f"{k}={v}" for k, v in (figures or {}).items()
                         if not isinstance(v, (list, dict)))
        self.log(f"{status.upper():7s} {name}" + (f": {reason}" if reason else "") +
                 (f" [{figs}]" if figs else ""))

    def write(self) -> int:
        failed = [c["name"] for c in self.checks if c["status"] == "fail"]
        counts = {s: sum(c["status"] == s for c in self.checks) for s in ("pass", "fail", "skipped")}
        doc = dict(self.meta, seconds=round(now() - self.t0, 2), counts=counts, failed=failed,
                   ok=not failed, checks=self.checks)
        tmp = os.path.join(self.out, "gpu-check.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, os.path.join(self.out, "gpu-check.json"))
        self.log(f"gpu-check: {counts['pass']} passed, {counts['fail']} failed, "
                 f"{counts['skipped']} skipped in {now() - self.t0:.1f} s"
                 + (f"; failed: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 0


# ---- child processes ----------------------------------------------------------------------
class Proc:
    """A child whose stdout is JSON lines (read by a thread into a queue) and whose stderr goes
    to a file; every wait on it has a deadline, and it is killed at the end whatever happened."""

    live: list = []

    def __init__(self, label, argv, work, env=None, stdin=True):
        self.label = label
        self.err_path = os.path.join(work, f"{label}.{len(Proc.live)}.err")
        self.errf = open(self.err_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=self.errf, env=env, text=True,
                                  cwd="/")
        self.q: queue.Queue = queue.Queue()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()
        Proc.live.append(self)

    def _read(self):
        for line in self.p.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                obj = {"event": "text", "text": line}
            self.lines.append(obj)
            self.q.put(obj)
        self.q.put(None)

    def stderr_tail(self, n=1500) -> str:
        try:
            with open(self.err_path) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def expect(self, event, timeout) -> dict:
        """The next line whose event is `event` (an "error" line fails at once)."""
        deadline = now() + timeout
        while True:
            left = deadline - now()
            if left <= 0:
                raise CheckFailed(f"{self.label}: no '{event}' within {timeout:.0f} s"
                                  f"{self._why()}")
            try:
                obj = self.q.get(timeout=left)
            except queue.Empty:
                continue
            if obj is None:
                self.p.wait(timeout=5)
                raise CheckFailed(f"{self.label} exited {self.p.returncode} before '{event}'"
                                  f"{self._why()}")
            if obj.get("event") == "error":
                raise CheckFailed(f"{self.label}: {obj.get('error')}{self._why(obj)}")
            if obj.get("event") == event:
                return obj

    def _why(self, obj=None) -> str:
        tail = (obj or {}).get("trace") or self.stderr_tail(800)
        return f"; stderr: {tail.strip()[-800:]}" if tail.strip() else ""

    def send(self, line: str) -> None:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def finish(self, timeout) -> int:
        try:
            if self.p.stdin:
                self.p.stdin.close()
        except OSError:
            pass
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise CheckFailed(f"{self.label} did not exit within {timeout:.0f} s (killed)")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

    @classmethod
    def kill_all(cls):
        for c in cls.live:
            c.kill()


# ---- the control plane --------------------------------------------------------------------
def _ns(x):
    """JSON -> attributes (SlotInfo-like objects from meshdockctl --json)."""
    from types import SimpleNamespace
    if isinstance(x, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in x.items()})
    if isinstance(x, list):
        return [_ns(v) for v in x]
    return x


class CtlClient:
    """The verbs of meshdock.Client the harness uses, through `meshdockctl --json`: used when
    the Python gRPC client cannot run (no grpcio, or protobuf too old or too new for the
    wheel's stubs), so the rest of the check still runs. Loads report no phases then, so the
    H2D figure is missing (h2d_upload fails and says so)."""

    def __init__(self, addr, timeout):
        self.base = ["meshdockctl", "--addr", addr, "--json", "--timeout", str(timeout)]
        self.timeout = timeout
        # meshdock.Client's reason for sending a publish's bytes in messages; meshdockctl
        # decides that for itself (`publish --via auto`) and does not say why here.
        self.shm_unavailable = None

    def _run(self, *args):
        p = subprocess.run(self.base + list(args), capture_output=True, text=True,
                           timeout=self.timeout + 10)
        if p.returncode:
            raise RuntimeError(f"meshdockctl {' '.join(args)}: rc {p.returncode}: "
                               f"{(p.stderr or p.stdout).strip()[-500:]}")
        dec, text, i, last = json.JSONDecoder(), p.stdout, 0, None
        while True:
            while i < len(text) and text[i].isspace():
                i += 1
            if i >= len(text):
                return last
            last, i = dec.raw_decode(text, i)

    def load(self, path, name, replace=False, progress=None):
        r = self._run("load", os.path.abspath(path), "--name", name,
                      *(["--replace"] if replace else []))
        return _ns(r["slot"])

    def reload(self, name):
        return _ns(self._run("reload", name).get("slot", {}))

    def unload(self, name):
        self._run("unload", name)

    def describe(self, name):
        return _ns(self._run("describe", name))

    def leases(self, name=""):
        return _ns(self._run("leases", *([name] if name else [])).get("leases", []))

    def stats(self):
        return _ns(self._run("stats"))

    def publish_tensor(self, name, array):
        return self.publish(name, "tensor", array)

    def publish(self, name, field, array):
        import numpy as np
        with tempfile.NamedTemporaryFile(suffix=".npy") as f:
            np.save(f, np.ascontiguousarray(array))
            f.flush()
            return self._run("publish", name, field, f.name)["frame"]

    def health(self):
        p = subprocess.run(self.base[:3] + ["health"], capture_output=True, timeout=30)
        return "SERVING" if p.returncode == 0 else f"rc {p.returncode}"


# ---- the mesh -----------------------------------------------------------------------------
def generate(path_a, path_b, n):
    """Two meshes with the same layout and different values: n^3 cubes, each cut into the 6
    Kuhn tetrahedra along its main diagonal, points (n+1)^3 float64, point_data "u". B has its
    points moved and another "u", so a frame of A and one of B differ in every array but the
    connectivity."""
    import numpy as np
    import meshdock as md

    m = n + 1
    g = np.arange(m, dtype=np.float64) / n
    z, y, x = np.meshgrid(g, g, g, indexing="ij")
    pts = np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1)
    i, j, k = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    v0 = (i * m * m + j * m + k).ravel().astype(np.int64)
    e = {"x": 1, "y": m, "z": m * m}
    tets = []
    for a, b in (("x", "y"), ("x", "z"), ("y", "x"), ("y", "z"), ("z", "x"), ("z", "y")):
        tets.append(np.stack([v0, v0 + e[a], v0 + e[a] + e[b], v0 + 1 + m + m * m], axis=1))
    tets = np.concatenate(tets)
    u = np.sin(3 * pts[:, 0]) * np.cos(2 * pts[:, 1]) + pts[:, 2]
    md.write(path_a, md.Mesh(pts, [("tetra", tets)], point_data={"u": u}), encoding="binary")
    pts_b = pts + 1e-3 * np.cos(7 * pts[:, ::-1])
    md.write(path_b, md.Mesh(pts_b, [("tetra", tets)], point_data={"u": u * 2 + 1}),
             encoding="binary")
    return {"tets": int(len(tets)), "points": int(len(pts)),
            "file_bytes": os.path.getsize(path_a)}


# ---- the run ------------------------------------------------------------------------------
class Run:
    def __init__(self, a):
        self.a = a
        self.out = os.path.abspath(a.out)
        os.makedirs(self.out, exist_ok=True)
        # scratch outside OUT: the device tool brings back only a few files from $OUT
        self.work = os.path.abspath(a.work) if a.work else tempfile.mkdtemp(
            prefix="meshdock-gpu-check.")
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(os.path.join(self.work, "meshes"))
        self.r = Report(self.out, a)
        self.deadline = now() + a.time_limit
        self.gpu = False
        self.gpu_problem = ""
        self.running = ""
        self.daemon = None
        self.client = None
        self.device = "cpu"  # what the daemon publishes
        self.prefix = f"gc{os.getpid() % 100000}x{int(time.time()) % 1000}."
        self.ref_path = os.path.join(self.work, "reference.json")
        self.ref = {"files": {}}
        self.current = {}  # slot name -> label of the file it publishes now
        self.files = {}  # label -> path
        self.copy_times = []  # (bytes, seconds from COPY to PUBLISH) of every load
        self.upload_times = []  # (bytes, seconds of the upload the daemon measured, name)
        self.cpp = None
        self.lib_dir = None

    # -- plumbing --
    def left(self) -> float:
        return self.deadline - now()

    # What --fake-cuda cannot run: CuPy / torch on device memory itself, nvidia-smi.
    NEEDS_A_REAL_GPU = {"cuda_ipc_baseline", "gpu_by_uuid", "late_reader", "cuda_link_texture",
                        "ipc_open_cost", "h2d_upload", "gpu_pytests", "consumer_jax_big",
                        "consumer_jax_blocks"}

    def check(self, name, fn, timeout=60.0, gpu=False, needs=()):
        """Runs fn() -> figures (dict) as check `name`: pass, fail (CheckFailed or any
        exception; the reason says what), or skipped (GPU check without a GPU, or a check it
        needs failed)."""
        if gpu and not self.gpu:
            return self.r.add(name, "skipped", "no GPU (--no-gpu)" if self.a.no_gpu
                              else f"no GPU: {self.gpu_problem}")
        if self.a.fake_cuda and name in self.NEEDS_A_REAL_GPU:
            return self.r.add(name, "skipped", "needs a real GPU library (--fake-cuda)")
        for n in needs:
            if not any(c["name"] == n and c["status"] == "pass" for c in self.r.checks):
                return self.r.add(name, "skipped", f"needs {n}, which did not pass")
        if self.left() < 3:
            return self.r.add(name, "fail", "the run's time limit was reached before it")
        self.step_timeout = min(timeout, self.left() - 2)
        self.running = name
        t0 = now()
        try:
            figures = fn() or {}
            self.r.add(name, "pass", "", figures, now() - t0)
        except Skip as e:
            self.r.add(name, "skipped", str(e), None, now() - t0)
        except CheckFailed as e:
            self.r.add(name, "fail", str(e)[:2000], getattr(e, "figures", None), now() - t0)
        except Exception as e:
            self.r.add(name, "fail", f"{type(e).__name__}: {e}"[:1500] + " | " +
                       traceback.format_exc()[-800:], None, now() - t0)

    def verifier(self, label, lib, name, prefix, ref_path, labels, frames, warm, *extra):
        """A consumer that checks up to `frames` frames of slot `name` (under `prefix`) against
        `labels` of `ref_path`, each within 5 s of the last; `warm`: CUDA and kernels first."""
        argv = [sys.executable, CONSUMER, "verify", "--lib", lib, "--name", name, "--prefix",
                prefix, "--ref", ref_path, "--timeout", f"{max(5.0, self.step_timeout):.1f}",
                "--expect", labels, "--frames", str(frames), "--idle", "5",
                *(["--warm"] if warm else []), *extra]
        return Proc(label, argv, self.work)

    def cpp_consumer(self, label, name, labels, timeout=None, **env_extra):
        """cpp_check on slot `name`, expecting one of `labels` (env_extra: its GPU_CHECK_*)."""
        if not self.cpp:
            raise CheckFailed("no C++ consumer binary (cpp_check) was built or given")
        env = dict(os.environ, **env_extra)
        env["LD_LIBRARY_PATH"] = self.lib_dir + ":" + env.get("LD_LIBRARY_PATH", "")
        t = timeout or self.step_timeout
        return Proc(label, [self.cpp, name, self.prefix, self.ref_path, labels, f"{t:.0f}"],
                    self.work, env=env)

    def consumer(self, label, mode, lib, name, *extra, timeout=None):
        t = timeout or max(5.0, self.step_timeout)
        argv = [sys.executable, CONSUMER, mode, "--lib", lib, "--name", name, "--prefix",
                self.prefix, "--ref", self.ref_path, "--timeout", f"{t:.1f}", *extra]
        if (self.device.startswith("cuda") and lib in ("torch", "cupy", "jax")
                and mode in ("verify", "hold", "latency", "late-read")):
            # CUDA context and checksum kernels made before the consumer says start / ready,
            # not while frames are being published (consumer.py Lib.warm)
            argv.append("--warm")
        return Proc(label, argv, self.work)

    # -- steps --
    def environment(self):
        import numpy as np
        import meshdock as md

        f = {"python": sys.version.split()[0], "numpy": np.__version__,
             "meshdock": md.__version__, "meshdock_from": os.path.dirname(md.__file__),
             "machine": platform.machine(), "kernel": platform.release(),
             "meshdockd": shutil.which("meshdockd") or "", "cpus": os.cpu_count()}
        for mod in ("torch", "cupy"):
            if self.a.fake_cuda:  # neither reads the fake's memory: not even imported
                f[mod] = "not used (--fake-cuda)"
                continue
            try:
                m = __import__(mod)
                f[mod] = m.__version__
            except Exception as e:
                f[mod] = f"not importable ({type(e).__name__})"
        try:  # its version without importing it here (JAX would start on the GPU)
            import importlib.metadata
            f["jax"] = importlib.metadata.version("jax")
        except Exception as e:
            f["jax"] = f"not installed ({type(e).__name__})"
        if not f["meshdockd"]:
            raise CheckFailed("meshdockd is not on PATH")
        probe = subprocess.run(["meshdockd", "--probe-device"], capture_output=True, text=True,
                               timeout=30)
        f["probe"] = probe.stdout.strip().splitlines()
        self.lib_dir = os.path.join(os.path.dirname(os.path.realpath(md.__file__)), "_lib")
        if self.a.fake_cuda:
            # Consumers read the fake runtime's memory through it (consumer.py Lib).
            os.environ["GPU_CHECK_FAKE_CUDA"] = "1"
            f["fake_cuda"] = os.environ.get("MESHDOCK_FAKE_CUDART", "")
            self.gpu = any(line.startswith("cuda:0") for line in f["probe"])
            if not f["fake_cuda"]:
                raise CheckFailed("--fake-cuda needs MESHDOCK_FAKE_CUDART (the fake runtime "
                                  "libmeshdock is linked against)")
            if not self.gpu:
                self.gpu_problem = "meshdockd sees no fake CUDA device: " + " | ".join(f["probe"])
        elif not self.a.no_gpu:
            try:
                import torch
                if torch.cuda.is_available():
                    self.gpu = True
                    f["gpu"] = torch.cuda.get_device_name(0)
                    f["torch_cuda"] = torch.version.cuda
            except Exception:
                pass
            if not self.gpu:
                self.gpu_problem = ("no CUDA device visible to torch (run with --no-gpu on a "
                                    "machine without one)")
            elif not any(line.startswith("cuda:0") for line in f["probe"]):
                self.gpu, self.gpu_problem = False, ("meshdockd sees no CUDA device: " +
                                                     " | ".join(f["probe"]))
        self.r.log("machine: " + json.dumps(f))
        return f

    def gpu_visible(self):
        """Fails when a GPU was asked for (no --no-gpu) and torch or meshdockd sees none; the
        other checks then run on the host backend, their GPU parts skipped."""
        if self.a.no_gpu:
            raise Skip("no GPU (--no-gpu)")
        if not self.gpu:
            raise CheckFailed(self.gpu_problem + "; the checks below ran on the host backend")
        return {}

    def ipc_baseline(self):
        """CUDA IPC between two CuPy processes, no meshdock in it: a buffer and an event
        exported by one, opened by the other, which orders a stream after the event and reads
        the buffer back. Every meshdock check on CUDA stands on this; if it fails, so do they,
        for the sandbox's reasons (a driver or runtime that refuses IPC), not meshdock's."""
        exp = Proc("ipc-export", [sys.executable, CONSUMER, "ipc-export"], self.work)
        h = exp.expect("exported", self.step_timeout)
        imp = Proc("ipc-import", [sys.executable, CONSUMER, "ipc-import", "--control",
                                  f"{h['mem']},{h['ev']}"], self.work, stdin=False)
        try:
            r = imp.expect("imported", self.step_timeout)
            imp.finish(15)
        finally:
            exp.finish(15)
        f = {k: v for k, v in r.items() if k != "event"}
        if not (r["values_ok"] and r["sum_ok"]):
            raise failed("the importer read other bytes than the exporter wrote", f)
        return f

    def generate(self):
        n = 20 if self.a.quick else 55  # 6 n^3 tets: 48,000 or 998,250
        t0 = now()
        ma = os.path.join(self.work, "meshes", "tets_a.msh")
        mb = os.path.join(self.work, "meshes", "tets_b.msh")
        f = generate(ma, mb, n)
        f["generate_s"] = round(now() - t0, 3)
        self.files.update(A=ma, B=mb)
        for label, src in (("blocks", "blocks.v41b.msh"), ("box", "box.v41b.msh")):
            dst = os.path.join(self.work, "meshes", src)
            shutil.copy(os.path.join(self.a.data, src), dst)
            self.files[label] = dst
        t0 = now()
        for label, p in self.files.items():
            self.ref["files"][label] = reference_of(p)
        with open(self.ref_path, "w") as fh:
            json.dump(self.ref, fh)
        f["reference_s"] = round(now() - t0, 3)
        blocks = self.ref["files"]["blocks"]["arrays"]
        f["blocks_arrays"] = len(blocks)
        f["blocks_regions"] = sum(k.startswith("regions/") for k in blocks)
        f["blocks_cell_blocks"] = sum(k.startswith("cells/") for k in blocks)
        if f["blocks_regions"] == 0 or f["blocks_cell_blocks"] < 2:
            raise CheckFailed(f"blocks.v41b.msh is not multi-block with regions: {sorted(blocks)}")
        if self.a.quick is False and f["tets"] < 900_000:
            raise CheckFailed(f"only {f['tets']} tets")
        return f

    def spawn_daemon(self, dev, tag, prefix, env_extra=None):
        """A meshdockd on its own socket and prefix: (process, client, control kind, stats)."""
        sock = os.path.join(self.work, f"md-{tag}-{dev.replace(':', '')}.sock")
        env = dict(os.environ, MESHDOCK_CONFIG="")  # no config file unless env_extra names one
        env.update(env_extra or {})
        out = os.path.join(self.work, f"meshdockd-{tag}.out")
        err = os.path.join(self.work, f"meshdockd-{tag}.err")
        t0 = now()
        proc = subprocess.Popen(
            ["meshdockd", "--listen", f"unix:{sock}", "--root", os.path.join(self.work, "meshes"),
             "--prefix", prefix, "--device", dev, "--log-level", "info"],
            stdout=open(out, "w"), stderr=open(err, "w"), env=env)
        while now() - t0 < min(20, self.step_timeout):
            if "meshdockd ready on" in open(out).read():
                break
            if proc.poll() is not None:
                raise CheckFailed(f"meshdockd --device {dev} exited {proc.returncode}: "
                                  + open(err).read()[-800:])
            time.sleep(0.05)
        else:
            proc.kill()
            raise CheckFailed("meshdockd not ready within 20 s")
        control = "meshdock.Client (gRPC)"
        try:
            if os.environ.get("GPU_CHECK_CONTROL") == "meshdockctl":  # to test the fallback
                raise RuntimeError("GPU_CHECK_CONTROL=meshdockctl")
            import meshdock as md
            client = md.Client(f"unix:{sock}", timeout=120)
            st = client.stats()
        except Exception as e:
            self.r.log(f"meshdock.Client does not work here ({type(e).__name__}: {e}); "
                       "driving meshdockd with meshdockctl --json")
            control = "meshdockctl"
            client = CtlClient(f"unix:{sock}", 120)
            st = client.stats()
        self.last_addr = f"unix:{sock}"
        return proc, client, control, st, err

    def metric(self, name: str) -> Optional[float]:
        """One unlabelled figure of the main daemon's `meshdockctl metrics` (None: absent)."""
        p = subprocess.run(["meshdockctl", "--addr", self.addr, "metrics"], capture_output=True,
                           text=True, timeout=30)
        for line in p.stdout.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def pinned_pool(self) -> dict:
        """The main daemon's pinned pool figures (meshdock_pinned_* in `meshdockctl metrics`)."""
        p = subprocess.run(["meshdockctl", "--addr", self.addr, "metrics"], capture_output=True,
                           text=True, timeout=30)
        out = {}
        for line in p.stdout.splitlines():
            m = re.match(r'meshdock_pinned_(bytes|allocations_total)\{\w+="(\w+)"\} (\d+)', line)
            if m:
                out[f"pinned_{m[1].replace('_total', '')}_{m[2]}"] = int(m[3])
        return out

    def start_daemon(self):
        dev = "cuda:0" if self.gpu else "cpu"
        t0 = now()
        self.daemon, self.client, control, st, self.daemon_err = self.spawn_daemon(
            dev, "main", self.prefix)
        self.addr = self.last_addr
        self.device = dev
        if self.gpu and st.backend != "cuda":
            raise CheckFailed(f"meshdockd --device cuda:0 runs the {st.backend} backend")
        return {"device": dev, "backend": st.backend, "start_s": round(now() - t0, 3),
                "prefix": self.prefix, "control": control}

    def load(self, label, name, replace=False):
        """Load file `label` as slot `name`; returns (SlotInfo, seconds, COPY->PUBLISH seconds)."""
        stamps = {}

        def progress(p):
            stamps.setdefault(str(p.phase), now())
            if str(p.phase) == "PUBLISH":  # "frame N, upload 46.2 MiB in 3.912 ms (12.37 GB/s)"
                stamps["upload"] = p.message

        t0 = now()
        info = self.client.load(self.files[label], name=name, replace=replace, progress=progress)
        dt = now() - t0
        self.current[name] = label
        copy = None
        if "COPY" in stamps and "PUBLISH" in stamps:
            copy = stamps["PUBLISH"] - stamps["COPY"]
            self.copy_times.append((info.data_size, copy, name, replace))
        m = re.search(r"upload ([\d.]+) MiB in ([\d.]+) ms", stamps.get("upload", ""))
        if m and float(m[1]) > 0 and float(m[2]) > 0:
            # the daemon's own measure of the copy into the slot buffer, with the bytes it says
            # it copied: a publish may copy fewer than data_size (arrays the buffer holds
            # already are skipped), so data_size over this time would overstate the rate
            self.upload_times.append((float(m[1]) * (1 << 20), float(m[2]) / 1e3, name))
        return info, dt, copy

    def load_to_consumer(self):
        c = self.consumer("torch-first", "verify", "torch", "big", "--expect", "A")
        c.expect("start", 60)
        time.sleep(0.2)  # it is attaching (waiting for the slot to appear)
        t0 = now()
        try:
            info, dt, copy = self.load("A", "big")
        except Exception as e:
            self.r.add("load_big", "fail", f"{type(e).__name__}: {e}"[:1500], None, now() - t0)
            raise CheckFailed("the load failed (load_big)") from None
        # the slot exists: the checks that need it run even if this consumer fails below
        self.r.add("load_big", "pass", "", {"load_rpc_s": round(dt, 4),
                                            "data_bytes": info.data_size}, dt)
        v = c.expect("verified", self.step_timeout)
        c.finish(10)
        f = {"data_bytes": info.data_size, "load_rpc_s": round(dt, 4),
             "daemon_load_s": round(info.load_seconds, 4),
             "load_to_wake_s": round(v["t_wake"] - t0, 4),
             "load_to_verified_s": round(v["t_checked"] - t0, 4),
             "consumer_adopt_s": round(v["adopt_s"], 6), "consumer_check_s": round(v["check_s"], 4),
             "device": v["device"], "write_idx": info.write_idx, "version": info.version}
        if copy is not None:
            f["copy_to_publish_s"] = round(copy, 4)
        if not v["ok"]:
            raise failed(f"frame differs from the file: {v['mismatches']}", f)
        self.check_device(v, "frame", f)
        return f

    def check_device(self, verified, what, figures):
        """A consumer's "verified" line must name the daemon's DLPack device type."""
        want = 2 if self.device.startswith("cuda") else 1
        if verified["device"][0] != want:
            raise failed(f"{what} on DLPack device {verified['device']}, expected type {want}",
                         figures)

    def load_blocks(self):
        info, dt, copy = self.load("blocks", "blocks")
        return {"load_rpc_s": round(dt, 4), "arrays": len(self.ref["files"]["blocks"]["arrays"]),
                "cell_types": info.cell_types}

    def verify_with(self, lib, name):
        def fn():
            label = self.current[name]
            if lib == "cpp":
                c = self.cpp_consumer(f"cpp-{name}", name, label)
            else:
                c = self.consumer(f"{lib}-{name}", "verify", lib, name, "--expect", label)
            v = c.expect("verified", self.step_timeout)
            rc = c.finish(15)
            f = {"frame": v["frame"], "arrays": v["arrays"], "device": v["device"],
                 "check_s": round(v["check_s"], 4)}
            if "adopt_s" in v:
                f["adopt_all_s"] = round(v["adopt_s"], 6)
            if not v["ok"] or rc:
                raise failed(f"rc {rc}; differs from {label}: {v['mismatches']}", f)
            return f
        return fn

    # What the JAX checks leave to the checks after them (sigkill_daemon, gpu_pytests: those the
    # issue asks for), when the run's time limit nears.
    JAX_SPARE_S = 150

    def verify_with_jax(self, name):
        """A JAX consumer (jax.numpy.from_dlpack on the slot's GPU, checksums by JAX) on slot
        `name`: the README names JAX beside torch, CuPy and numpy. Skipped where JAX is not
        installed, or when the time left is what the issue's own checks after it need."""
        inner = self.verify_with("jax", name)

        def fn():
            import importlib.util
            if importlib.util.find_spec("jax") is None:
                raise Skip("jax is not installed")
            if self.left() < self.JAX_SPARE_S + 30:
                raise Skip(f"{self.left():.0f} s left: kept for the checks after it")
            return inner()
        return fn

    def gpu_by_uuid(self):
        """GPU: the catalog names the slot's GPU by UUID, as nvidia-smi -L does (meshdockctl
        inspect), and a consumer that sees that GPU under another CUDA_VISIBLE_DEVICES than the
        daemon's (here the UUID itself) finds it by UUID and reads the frame; one that sees no
        GPU (CUDA_VISIBLE_DEVICES="") is refused at its first frame, naming the GPU."""
        name, label = "blocks", self.current["blocks"]
        r = subprocess.run(["meshdockctl", "--json", "inspect", name, "--prefix", self.prefix],
                           capture_output=True, text=True, timeout=30)
        uuid = json.loads(r.stdout).get("device_uuid", "") if r.returncode == 0 else ""
        smi = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                             timeout=30).stdout
        f = {"device_uuid": uuid}
        if not uuid or uuid not in smi:
            raise failed(f"inspect says device_uuid {uuid!r} (rc {r.returncode} "
                         f"{r.stderr.strip()[-300:]}); nvidia-smi -L: {smi.strip()[-400:]}", f)

        def run_with(visible, label_):
            argv = [sys.executable, CONSUMER, "verify", "--lib", "torch", "--name", name,
                    "--prefix", self.prefix, "--ref", self.ref_path, "--timeout",
                    f"{max(5.0, self.step_timeout / 2):.1f}", "--expect", label]
            return Proc(label_, argv, self.work, env=dict(os.environ,
                                                          CUDA_VISIBLE_DEVICES=visible))
        c = run_with(uuid, "torch-by-uuid")
        v = c.expect("verified", self.step_timeout / 2)
        rc = c.finish(15)
        f["by_uuid_device"] = v["device"]
        if not v["ok"] or rc or v["device"][0] != 2:
            raise failed(f"CUDA_VISIBLE_DEVICES={uuid}: rc {rc}, device {v['device']}, "
                         f"mismatches {v['mismatches']}", f)
        c = run_with("", "torch-no-gpu")
        rc = c.finish(self.step_timeout / 2)
        time.sleep(0.2)  # the reader thread takes the last lines
        err = " ".join(str(o.get("error", "")) for o in c.lines) + " " + c.stderr_tail()
        if rc == 0 or "which this process does not see" not in err or uuid not in err:
            raise failed(f'CUDA_VISIBLE_DEVICES="": rc {rc}, expected a refusal naming {uuid}: '
                         f"{err[-600:]}", f)
        f["unseen_refused"] = True
        return f

    def stream_semantics(self):
        """GPU: a second meshdockd whose uploads wait 300 ms on its stream and publish without
        waiting for them ($MESHDOCK_FAILPOINT=upload_delay:300), so a frame is announced while
        its copy is still queued. torch and CuPy consumers adopt on a non-default stream, no host
        sync, relying on the slot's IPC event, while frames of A and B alternate: each frame must
        be exactly the file published as it. A CuPy consumer that asks for no ordering
        (__dlpack__(stream=-1): "I synchronise myself", and does not) is the control: it must see
        at least one frame that is not what was published, or the check could not tell."""
        k = 4 if self.a.quick else 6
        prefix = self.prefix[:-1] + "s."
        proc, client, control, st, err = self.spawn_daemon(
            "cuda:0", "stream", prefix, {"MESHDOCK_FAILPOINT": "upload_delay:300"})
        try:
            expected = {}
            rpc = []  # seconds of each Load RPC: one near the delay or over says the daemon's
            # host thread waited for its stream before announcing the frame (so the control
            # could not see a queued copy)

            def load(label, replace):
                t0 = now()
                info = client.load(self.files[label], name="big", replace=replace)
                rpc.append(round(now() - t0, 3))
                expected[info.write_idx] = label

            def consumer(label, lib, *extra):
                return self.verifier(label, lib, "big", prefix, self.ref_path, "A,B", k + 1, True,
                                     *extra)

            load("A", False)
            procs = [consumer("torch-stream", "torch", "--stream"),
                     consumer("cupy-stream", "cupy", "--stream"),
                     consumer("cupy-nowait", "cupy", "--stream", "--no-event-wait")]
            for p in procs:
                p.expect("attached", 60)
            time.sleep(0.5)  # each has taken frame 1 (A, complete by now)
            for i in range(k):
                load("B" if i % 2 == 0 else "A", True)
                time.sleep(0.5)  # the delayed copy lands before the next upload queues
            f = {"published": len(expected), "delay_ms": 300, "control": control,
                 "load_rpc_s": rpc}
            bad = []
            for p in procs:
                p.expect("done", self.step_timeout)
                p.finish(15)
                got, wrong = frames_seen(p, expected)
                f[p.label] = {"frames": len(got), "wrong": len(wrong)}
                if p.label == "cupy-nowait":
                    if not wrong:
                        bad.append("the control (no event wait) saw every frame complete: the "
                                   "delay did not hold the copies back, so the check cannot tell")
                elif len(got) < 2:
                    bad.append(f"{p.label}: saw {len(got)} frames of {len(expected)} published")
                elif wrong:
                    bad.append(f"{p.label}: frames (number, seen, published, first mismatches) "
                               f"{wrong[:4]}: the consumer's stream did not wait for the slot's "
                               "IPC event")
            if bad:
                raise failed("; ".join(bad), f)
            return f
        finally:
            stop(proc)

    def tensor_publish(self):
        """A single-array publish (Client.publish_tensor): a (512, 512, 4) float32 image in a
        slot of its own; consumers read it as frame.tensor on the daemon's device."""
        import numpy as np

        from gpucheck_common import wsum_numpy

        img = (np.arange(512 * 512 * 4, dtype=np.float32) % 65521 / 7).reshape(512, 512, 4)
        self.tex_wsum = wsum_numpy(img)
        self.ref["files"]["T"] = {"arrays": {"tensor": {"wsum": self.tex_wsum,
                                                        "nbytes": int(img.nbytes),
                                                        "shape": list(img.shape)}}}
        with open(self.ref_path, "w") as fh:
            json.dump(self.ref, fh)
        t0 = now()
        frame = self.client.publish_tensor("tex", img)
        dt = now() - t0
        f = {"frame": frame, "publish_rpc_s": round(dt, 4), "bytes": int(img.nbytes)}
        libs = ["torch"] + (["cupy"] if self.gpu else [])
        for lib in libs:
            c = self.consumer(f"{lib}-tex", "verify", lib, "tex", "--expect", "T")
            v = c.expect("verified", self.step_timeout)
            rc = c.finish(15)
            f[lib] = {"ok": v["ok"], "device": v["device"], "arrays": v["arrays"]}
            if not v["ok"] or rc or v["arrays"] != 1:
                raise failed(f"{lib}: rc {rc}; frame.tensor differs: {v['mismatches']}", f)
            self.check_device(v, f"{lib}: tensor", f)
        return f

    def field_stream(self):
        """Streaming a field with publish_copy "changed" (what "auto" picks on the host only): a
        second meshdockd on the main daemon's device whose ring slots keep the arrays they hold
        and copy only what changed. point_data/T of mesh A is published 6 times while torch (and
        CuPy on a GPU) consumers check every frame they see: the mesh as read, and T the value
        published as that frame. From frame 4 on (3 ring slots) a publish copies T alone, so a
        buffer that did not keep the mesh, or a field copied into the wrong place, shows."""
        import numpy as np

        from gpucheck_common import wsum_numpy

        dev = "cuda:0" if self.gpu else "cpu"
        cfg = os.path.join(self.work, "publish-changed.json")
        with open(cfg, "w") as fh:
            json.dump({"publish_copy": "changed"}, fh)
        prefix = self.prefix[:-1] + "f."
        proc, client, control, st, err = self.spawn_daemon(dev, "fields", prefix,
                                                           {"MESHDOCK_CONFIG": cfg})
        addr = self.last_addr
        try:
            base = self.ref["files"]["A"]["arrays"]
            n = base["points"]["shape"][0]
            k = 6
            ref = {"files": {"A": self.ref["files"]["A"]}}  # its own: self.ref stays as it was
            # Not constant: wsum64 weighs word i by 2i + 1, and a constant array's sum is the
            # word times n^2; 1.0 ... 6.0 have 52 low zero bits, and n = 56^3 carries 2^18, so
            # every constant T summed to 0 mod 2^64 and any frame "matched" T1.
            def field(v):
                return np.arange(n, dtype=np.float64) / 7.0 + float(v)

            for v in range(1, k + 1):
                t = field(v)
                ref["files"][f"T{v}"] = {"arrays": dict(base, **{"point_data/T": {
                    "wsum": wsum_numpy(t), "nbytes": int(t.nbytes), "shape": [n]}})}
            sums = {ref["files"][f"T{v}"]["arrays"]["point_data/T"]["wsum"] for v in range(1, k + 1)}
            if len(sums) < k:
                raise CheckFailed(f"the {k} fields' checksums collide ({sorted(sums)}): the "
                                  "check could not tell one frame from another")
            ref_path = os.path.join(self.work, "reference-fields.json")
            with open(ref_path, "w") as fh:
                json.dump(ref, fh)
            expected = {client.load(self.files["A"], name="f").write_idx: "A"}
            labels = ",".join(["A"] + [f"T{v}" for v in range(1, k + 1)])
            procs = [self.verifier(f"{lib}-fields", lib, "f", prefix, ref_path, labels, k + 1,
                                   self.gpu)
                     for lib in ["torch"] + (["cupy"] if self.gpu else [])]
            for p in procs:
                p.expect("attached", 60)
            time.sleep(0.5)  # each has taken frame 1
            for v in range(1, k + 1):
                expected[client.publish("f", "point_data/T", field(v))] = f"T{v}"
                time.sleep(0.4)  # each consumer checks the frame before the next
            f = {"device": dev, "published": len(expected), "control": control}
            m = subprocess.run(["meshdockctl", "--addr", addr, "metrics"], capture_output=True,
                               text=True, timeout=30).stdout
            for how in ("copied", "kept"):
                got = re.search(r'meshdock_publish_bytes_total\{mesh="f",how="%s"\} (\d+)' % how,
                                m)
                f[f"{how}_bytes"] = int(got[1]) if got else None
            # T (over 256 KiB) goes through the producer's shm object (Publish source_shm).
            for via in ("grpc", "shm"):
                got = re.search(
                    r'meshdock_publish_received_bytes_total\{via="%s"\} (\d+)' % via, m)
                f[f"received_{via}_bytes"] = int(got[1]) if got else None
            f["shm_unavailable"] = client.shm_unavailable
            bad = []
            if n * 8 > (256 << 10) and (f["received_shm_bytes"] or 0) < k * n * 8:
                bad.append(f"T did not go through the producer's shm object "
                           f"({f['received_shm_bytes']} bytes did; shm_unavailable: "
                           f"{client.shm_unavailable})")
            if not f["kept_bytes"]:
                bad.append(f"the daemon kept nothing (metrics: {f['copied_bytes']} copied, "
                           f"{f['kept_bytes']} kept): publish_copy changed did not apply")
            for p in procs:
                p.expect("done", self.step_timeout)
                p.finish(15)
                got, wrong = frames_seen(p, expected)
                f[p.label] = {"frames": len(got), "wrong": len(wrong),
                              "last_frame": max((g["frame"] for g in got), default=0)}
                if wrong:
                    bad.append(f"{p.label}: frames (number, seen, published, first "
                               f"mismatches) {wrong[:3]}")
                elif f[p.label]["last_frame"] < 4:
                    bad.append(f"{p.label}: saw no frame after the ring's first round "
                               f"({len(got)} frames, the last {f[p.label]['last_frame']})")
                if got:
                    self.check_device(got[-1], f"{p.label}", f)
            if bad:
                raise failed("; ".join(bad), f)
            return f
        finally:
            stop(proc)

    def cuda_link_texture(self):
        """cuda-link's importer rules (consumer.py cuda-link) on the tensor slot: every handle
        opens, the metadata says (512, 512, 4) float32, and the texture is the image."""
        c = self.consumer("cuda-link-tex", "cuda-link", "cupy" if self.gpu else "numpy", "tex",
                          "--control", f"/dev/shm/{self.prefix}tex", "--expect-wsum",
                          self.tex_wsum, "--shape", "512,512,4", "--dtype", "float32")
        r = c.expect("cuda_link", self.step_timeout)
        rc = c.finish(15)
        f = {k: v for k, v in r.items() if k not in ("event", "problems")}
        if not r["ok"] or rc:
            raise failed(f"rc {rc}: {r.get('problems') or r.get('error')}", f)
        return f

    def republish_big(self, n):
        """Publishes the other of files A and B as slot 'big', n times (each frame differs from
        the one before); returns the label published last and each load's seconds."""
        label, times = self.current["big"], []
        for _ in range(n):
            label = "B" if label == "A" else "A"
            times.append(self.load(label, "big", replace=True)[1])
        return label, times

    def fill_ring(self):
        """One publish into every ring slot of 'big', so that each has its buffer and a later
        `version` bump can only be a fresh buffer; returns the label published last."""
        return self.republish_big(self.client.describe("big").slot.num_slots)[0]

    def republish_while_held(self):
        label = self.fill_ring()
        c = self.consumer("torch-held", "hold", "torch", "big", "--expect", label)
        h = c.expect("held", 60)
        if not h["ok"]:
            raise CheckFailed(f"held frame differs from {label}: {h['mismatches']}")
        before = self.client.describe("big").slot
        leases = [x for x in self.client.leases("big") if x.pid == h["pid"]]
        # A CUDA consumer reports the buffer it opened (import reports): the daemon keeps it
        # until the consumer closes it, lease or not.
        imports = self.metric("meshdock_imports_open")
        n = before.num_slots + 1
        last, times = self.republish_big(n)
        after = self.client.describe("big").slot
        c.send(f"check {last}")
        r = c.expect("checked", self.step_timeout)
        c.send("exit")
        c.finish(15)
        f = {"held_frame": r["held_frame"], "newest_frame": r["newest_frame"],
             "republishes": n, "publish_max_s": round(max(times), 4),
             "publish_median_s": round(percentile(times, 50), 4),
             "version_before": before.version, "version_after": after.version,
             "lease_listed": bool(leases), "imports_open": imports}
        if not leases:
            raise failed("the daemon lists no lease of the consumer holding a frame", f)
        if self.device.startswith("cuda") and not imports:
            raise failed("the torch consumer holds a CUDA frame but the daemon counts no import "
                         "report (meshdock_imports_open)", f)
        if not r["held_unchanged"]:
            raise failed(f"the held frame changed under its lease: {r['held_mismatches']}", f)
        if not r["newest_ok"]:
            raise failed(f"the newest frame is not {last}: {r['newest_mismatches']}", f)
        if after.version <= before.version:
            raise failed("the ring wrapped over the held slot without a fresh buffer "
                         "(version unchanged)", f)
        return f

    def late_reader(self):
        """GPU: a torch consumer adopts a frame of 'big' on its own stream, queues seconds of GPU
        sleep and then checksums of every array behind it, and drops the tensors and the frame
        at once (torch calls the DLPack deleters with the work still queued); the ring is then
        republished past that slot. The late sums must be the frame's file, and the slot must
        have got a fresh buffer (version bumped): the lease outlived the queued work
        (attach.hpp order_after_upload). Before, the lease went with the deleter, and the
        daemon copied the next frames into the buffer under the queued kernels."""
        t0 = now()
        label = self.fill_ring()
        n = self.client.describe("big").slot.num_slots + 1
        # the republishes below take about n loads as long as fill_ring's n - 1: thrice that
        hold = min(20.0, max(4.0, 3.0 * n * (now() - t0) / (n - 1)))
        c = self.consumer("torch-late", "late-read", "torch", "big", "--expect", label,
                          "--stream", "--hold", f"{hold:.1f}")
        q = c.expect("queued", 60)
        before = self.client.describe("big").slot
        last, times = self.republish_big(n)
        after = self.client.describe("big").slot
        c.send("go")
        r = c.expect("late", max(self.step_timeout, hold + 10))
        c.finish(15)
        f = {"frame": q["frame"], "hold_s": hold, "republishes": n,
             "republish_s": round(sum(times), 3), "busy_at_go": r["busy_at_go"],
             "version_before": before.version, "version_after": after.version,
             "torch": r.get("lib_version")}
        if not r["busy_at_go"]:
            f["note"] = ("the queued work ended before the republishes did: the lease could go "
                         "with it, so a version unchanged proves nothing (raise the hold)")
        if not r["ok"]:
            raise failed(f"the frame's late sums are not {label}: {r['mismatches']} (the daemon "
                         "wrote the buffer under the consumer's queued kernels)", f)
        if r["busy_at_go"] and after.version <= before.version:
            raise failed("the ring wrapped over the slot of a frame whose queued work was not "
                         "over without a fresh buffer (its lease went with the tensors)", f)
        return f

    def late_reader_cpp(self):
        """GPU: late_reader with the C++ consumer (cpp_check's late mode) on the per-thread
        default stream, the frame dropped on another thread, as a garbage collector drops it:
        that thread cannot name the stream the work is on, so the end of the work is marked on
        the legacy default stream, which waits for every blocking stream (attach.cpp
        FrameState::mark_stream). The late copies must read the frame's file, and the ring
        slot must have got a fresh buffer meanwhile."""
        t0 = now()
        label = self.fill_ring()
        n = self.client.describe("big").slot.num_slots + 1
        hold = min(8.0, max(3.0, 3.0 * n * (now() - t0) / (n - 1)))  # a late check: kept short
        c = self.cpp_consumer("cpp-late", "big", label, timeout=hold + 30,
                              GPU_CHECK_LATE_MS=str(int(hold * 1000)),
                              GPU_CHECK_STREAM="per-thread")
        q = c.expect("queued", 60)
        t_queued = now()
        before = self.client.describe("big").slot
        last, times = self.republish_big(n)
        after = self.client.describe("big").slot
        busy = now() - t_queued < hold
        v = c.expect("verified", hold + 30)
        rc = c.finish(15)
        f = {"frame": q["frame"], "hold_s": hold, "republishes": n,
             "republish_s": round(sum(times), 3), "busy_after_republish": busy,
             "version_before": before.version, "version_after": after.version}
        if not busy:
            f["note"] = ("the queued work ended before the republishes did: a version unchanged "
                         "proves nothing (raise the hold)")
        if not v["ok"] or rc:
            raise failed(f"rc {rc}; the late copies are not {label}: {v['mismatches']} (the "
                         "daemon wrote the buffer under the consumer's queued work)", f)
        if busy and after.version <= before.version:
            raise failed("the ring wrapped over the slot of a frame whose queued work was not "
                         "over without a fresh buffer (its lease went with the frame)", f)
        return f

    def unload_while_held(self):
        """A consumer holds a frame when its mesh is unloaded: it gets ProducerGone, its held
        frame still reads the daemon's bytes (on CUDA the daemon keeps a buffer a consumer
        reported open until it closes it: slots/graveyard.hpp), and nothing errors."""
        self.load("box", "unloaded")
        c = self.consumer("torch-unload", "hold", "torch", "unloaded", "--expect", "box")
        h = c.expect("held", 60)
        if not h["ok"]:
            raise CheckFailed(f"held frame differs from box: {h['mismatches']}")
        imports = self.metric("meshdock_imports_open")
        self.client.unload("unloaded")
        kept = self.metric("meshdock_unloaded_open_bytes")
        c.send("gone verify")
        f, g, err = after_gone(c)
        f.update(imports_open_before=imports, unloaded_open_bytes=kept)
        t0 = now()  # the consumer closed its import: the maintenance tick frees the buffer
        while now() - t0 < 3 and (self.metric("meshdock_imports_open") or 0) >= (imports or 0) > 0:
            time.sleep(0.1)
        f["imports_open_after"] = self.metric("meshdock_imports_open")
        if not g["producer_gone"]:
            raise failed(f"no ProducerGone after the unload: {g}", f)
        if self.device.startswith("cuda") and not kept:
            raise failed("the daemon kept no device memory for the consumer's open import "
                         "(meshdock_unloaded_open_bytes 0 after the unload)", f)
        if not f["held_readable_after"]:
            raise failed("the held frame did not read the daemon's bytes after the unload", f)
        if f["rc"] != 0 or CONSUMER_ERRORS.search(err):
            raise failed(f"the consumer exited {f['rc']}: {err[-600:]}", f)
        return f

    def sigkill_consumer(self):
        # The ring filled first, as the checks before leave it (--only sigkill_consumer must
        # make it itself): below the version may change only for a fresh buffer.
        label = self.fill_ring()
        c = self.consumer("torch-killed", "hold", "torch", "big", "--expect", label)
        h = c.expect("held", 60)
        pid = h["pid"]
        if not any(x.pid == pid for x in self.client.leases("big")):
            raise CheckFailed(f"no lease of pid {pid} listed while it holds a frame")
        os.kill(pid, signal.SIGKILL)
        c.p.wait(timeout=10)
        t0 = now()
        reclaimed = None
        while now() - t0 < 5:
            if not any(x.pid == pid for x in self.client.leases("big")):
                reclaimed = now() - t0
                break
            time.sleep(0.05)
        before = self.client.describe("big").slot
        n = before.num_slots + 1
        self.republish_big(n)
        after = self.client.describe("big").slot
        if reclaimed is None and not any(x.pid == pid for x in self.client.leases("big")):
            reclaimed = now() - t0
        alive = self.daemon.poll() is None and self.client.health() == "SERVING"
        f = {"killed_pid": pid, "reclaim_s": None if reclaimed is None else round(reclaimed, 3),
             "version_before": before.version, "version_after": after.version,
             "daemon_alive": alive}
        if not alive:
            raise failed("the daemon died or stopped serving after a consumer was killed", f)
        if reclaimed is None:
            raise failed(f"the lease of killed pid {pid} is still listed after 5 s and "
                         f"{n} republishes", f)
        if after.version != before.version:
            raise failed("a republish over the dead consumer's slot needed a fresh buffer: "
                         "its lease was not reclaimed", f)
        return f

    def latency(self, n):
        def fn():
            m = 40 if self.a.quick else 200
            # host slots: numpy consumers (light to start 8 of); CUDA: torch, with a stream
            # sync after the adopt ("ready": the upload event has been waited on)
            lib = "torch" if self.device.startswith("cuda") else "numpy"
            warm = self.client.describe("lat").slot.num_slots  # one frame per ring slot
            procs = [self.consumer(f"lat{n}-{i}", "latency", lib, "lat", "--frames", str(m),
                                   "--idle", "3", "--warmup", str(warm)) for i in range(n)]
            for p in procs:
                p.expect("ready", 90)
            time.sleep(0.1)
            for _ in range(warm):
                self.client.reload("lat")
                time.sleep(0.05)
            pub = []
            for _ in range(m):
                t0 = now()
                self.client.reload("lat")
                pub.append(now() - t0)
                time.sleep(0.01)  # consumers must be asleep on the futex at the next publish
            wake, res = [], []
            for p in procs:
                r = p.expect("latency", 30)
                p.finish(15)
                res.append(r)
                wake += r["wake_us"]
            us = lambda v, q: round(percentile(v, q), 1)  # noqa: E731
            f = {"consumers": n, "lib": lib, "publishes": m,
                 "frames_seen": sum(r["frames"] for r in res),
                 "wake_p50_us": us(wake, 50), "wake_p99_us": us(wake, 99),
                 "wake_max_us": us(wake, 100),
                 "adopt_p50_us": us([r["adopt_p50_us"] for r in res], 50),
                 "ready_p50_us": us([r["ready_p50_us"] for r in res], 50),
                 "ready_p99_us": max(r["ready_p99_us"] for r in res),
                 "reload_rpc_p50_ms": round(percentile(pub, 50) * 1e3, 2)}
            # A consumer busy when a frame comes skips to the newest one (wait's contract), so
            # on a loaded machine some frames go unseen; half of them is the floor.
            if f["frames_seen"] < n * m * 0.5 or min(r["frames"] for r in res) == 0:
                raise failed(f"consumers saw {f['frames_seen']} of {n * m} frames", f)
            return f
        return fn

    def ipc_open(self):
        c = self.consumer("cupy-ipc", "ipc-open", "cupy", "big", "--frames", "5", "--control",
                          f"/dev/shm/{self.prefix}big")
        r = c.expect("ipc_open", self.step_timeout)
        c.finish(15)
        f = {k: v for k, v in r.items() if k != "event"}
        if not (f.get("reopen_same_pointer") and f.get("read_after_one_close")):
            raise failed("a handle opened twice in one process is not one counted mapping "
                         "(two attachments in one process would unmap each other's)", f)
        return f

    def h2d(self):
        # Medians over warm uploads: alone (--only h2d_upload) the run has made one, cold (the
        # pinned pool's first allocations), so it republishes up to 4 first.
        self.republish_big(4 - sum(name == "big" for _, _, name, _ in self.copy_times))
        mine = [(b, s) for b, s, name, _ in self.copy_times if name == "big"]
        if not mine:
            raise CheckFailed("no load of 'big' reported its COPY and PUBLISH phases")
        nbytes = mine[-1][0]
        c = self.consumer("torch-h2d", "h2d", "torch", "big", "--bytes", str(nbytes),
                          "--frames", "5")
        r = c.expect("h2d", self.step_timeout)
        c.finish(15)
        secs = [s for _, s in mine]
        ups = [(b, s) for b, s, name in self.upload_times if name == "big"]
        f = {"bytes": nbytes, "loads": len(secs),
             "daemon_copy_to_publish_p50_s": round(percentile(secs, 50), 5),
             "torch_pinned_GBps": r["pinned_GBps"], "torch_pageable_GBps": r["pageable_GBps"]}
        for k in ("pin_alloc_s", "pin_alloc_GBps", "pin_breakeven_uploads"):
            if k in r:
                f[k] = r[k]
        if ups:  # the slot's own timing of cudaMemcpyAsync + event + stream sync
            daemon = percentile([b / s for b, s in ups], 50) / 1e9
            f["daemon_upload_p50_s"] = round(percentile([s for _, s in ups], 50), 5)
            f["note"] = "daemon: the upload as the slot times it (cudaMemcpyAsync of every " \
                        "array from the pinned pool + event + stream sync)"
        else:
            daemon = nbytes / percentile(secs, 50) / 1e9
            f["note"] = "daemon: COPY->PUBLISH progress of a load (slot page + cudaMemcpyAsync + " \
                        "stream sync: an upper bound on the copy; this daemon does not time it)"
        f["daemon_GBps"] = round(daemon, 2)
        f["daemon_vs_pinned"] = round(daemon / r["pinned_GBps"], 3)
        f.update(self.pinned_pool())  # new / reused / pageable allocations, live / kept bytes
        if r.get("ok") is False:
            raise failed("the baseline copy did not arrive intact", f)
        if self.a.quick:
            # 1.8 MB in all, points and u under the pool's 1 MiB threshold (pageable): the call
            # and sync overhead dominates, so the ratio says nothing about bandwidth.
            f["threshold"] = "not applied (--quick: the arrays are too small to measure bandwidth)"
        elif f["daemon_vs_pinned"] < 0.8:
            raise failed(f"the daemon uploads at {f['daemon_vs_pinned']:.0%} of a plain pinned "
                         "copy of the same bytes (issue 15 wants >= 80%)", f)
        return f

    def sigkill_daemon(self):
        procs = [self.consumer("torch-gone", "hold", "torch", "big", "--expect", self.current["big"]),
                 self.consumer("numpy-gone" if not self.gpu else "cupy-gone", "hold",
                               "cupy" if self.gpu else "numpy", "blocks", "--expect", "blocks")]
        for p in procs:
            h = p.expect("held", 60)
            if not h["ok"]:
                raise CheckFailed(f"{p.label}: held frame differs: {h['mismatches']}")
        self.daemon.send_signal(signal.SIGKILL)
        self.daemon.wait(timeout=10)
        t0 = now()
        f = {}
        for p in procs:
            p.send("gone")
        for p in procs:
            f[p.label], g, err = after_gone(p)
            if f[p.label]["held_readable_after"] is False:
                raise failed(f"{p.label}: the held host frame changed after the daemon died", f)
            if not g["producer_gone"]:
                raise failed(f"{p.label}: no ProducerGone after the daemon was killed: {g}", f)
            if f[p.label]["rc"] != 0:
                raise failed(f"{p.label} exited {f[p.label]['rc']}: {err[-600:]}", f)
            if CONSUMER_ERRORS.search(err):
                raise failed(f"{p.label} wrote errors: {err[-600:]}", f)
        f["after_kill_s"] = round(now() - t0, 3)
        return f

    # A check named in another's `needs` that a different check reports (load_to_consumer adds
    # load_big), for --only's closure.
    REPORTED_BY = {"load_big": "load_to_consumer"}

    def plan(self, base):
        """The checks after the daemon's start, in order: (name, fn, timeout, gpu, needs)."""
        p = [("load_to_consumer", self.load_to_consumer, 120, False, base),
             ("load_blocks", self.load_blocks, 60, False, base)]
        for lib, gpu in (("cpp", False), ("torch", False), ("cupy", True)):
            for name, need in (("big", "load_big"), ("blocks", "load_blocks")):
                extra = ["build_cpp_consumer"] if lib == "cpp" else []
                p.append((f"consumer_{lib}_{name}", self.verify_with(lib, name), 90, gpu,
                          [need] + extra))
        return p + [
            ("gpu_by_uuid", self.gpu_by_uuid, 60, True, ["load_blocks"]),
            ("stream_semantics", self.stream_semantics, 120, True, ["load_big"]),
            ("republish_while_held", self.republish_while_held, 120, False, ["load_big"]),
            ("sigkill_consumer", self.sigkill_consumer, 90, False, ["load_big"]),
            ("late_reader", self.late_reader, 90, True, ["load_big"]),
            ("unload_while_held", self.unload_while_held, 60, False, base),
            ("load_latency_mesh",
             lambda: {"load_rpc_s": round(self.load("box", "lat")[1], 4)}, 30, False, base),
            ("latency_1_consumer", self.latency(1), 90, False, ["load_latency_mesh"]),
            ("latency_8_consumers", self.latency(8), 120, False, ["load_latency_mesh"]),
            ("tensor_publish", self.tensor_publish, 60, False, [base[0]]),
            ("cuda_link_texture", self.cuda_link_texture, 60, False, ["tensor_publish"]),
            ("field_stream", self.field_stream, 90, False, base),
            ("ipc_open_cost", self.ipc_open, 60, True, ["load_big"]),
            ("h2d_upload", self.h2d, 90, True, ["load_big"]),
            # after the figures the issue asks for: a late addition must not crowd them out
            ("late_reader_cpp", self.late_reader_cpp, 90, True,
             ["load_big", "build_cpp_consumer"]),
            # JAX, last of the consumers: the README names it, nothing here can run it
            ("consumer_jax_big", self.verify_with_jax("big"), 60, True, ["load_big"]),
            ("consumer_jax_blocks", self.verify_with_jax("blocks"), 60, True, ["load_blocks"]),
            ("sigkill_daemon", self.sigkill_daemon, 90, False, ["load_big", "load_blocks"]),
            ("gpu_pytests", self.gpu_pytests, 120, False, ["environment"]),
        ]

    # The GPU-gated pytest file (CuPy to_cupy / from_cupy, pinned vs pageable, a caller's stream,
    # torch on cuda) against the meshdock this run uses: here, beside the checks above, so that
    # one command runs all of issue 15's GPU tests. Without a GPU its tests skip (collected, so
    # the file cannot rot); with one, a skip is a failure.
    GPU_PYTESTS = ("test_payload_gpu.py",)

    def gpu_pytests(self):
        tests = os.path.normpath(os.path.join(HERE, "..", "python"))
        files = [os.path.join(tests, f) for f in self.GPU_PYTESTS]
        missing = [f for f in files if not os.path.exists(f)]
        if missing:
            raise CheckFailed(f"missing {', '.join(missing)}")
        if importlib.util.find_spec("pytest") is None:
            raise CheckFailed(f"pytest is not installed for {sys.executable}")
        env = dict(os.environ, MESHDOCK_TEST_DATA=os.path.dirname(os.path.abspath(self.a.data)))
        junit = os.path.join(self.work, "gpu-pytests.xml")
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                            f"--confcutdir={tests}", f"--junitxml={junit}", *files], cwd=tests, env=env,
                           capture_output=True, text=True, timeout=max(5.0, self.step_timeout - 2))
        out = (r.stdout + r.stderr).strip()
        self.r.log("--- gpu_pytests\n" + out[-3000:])
        try:
            suite = ET.parse(junit).getroot()
            suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
            counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
        except (OSError, ET.ParseError, AttributeError) as e:
            raise CheckFailed(f"pytest wrote no readable report (rc {r.returncode}: {e}): "
                              f"{out[-600:]}")
        f = {"files": list(self.GPU_PYTESTS), **counts,
             "passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
             "summary": out.splitlines()[-1] if out else ""}
        if r.returncode != 0 or counts["failures"] or counts["errors"]:
            raise failed(f"pytest rc {r.returncode}: {out[-1200:]}", f)
        if counts["tests"] == 0:
            raise failed("pytest collected no tests", f)
        if self.gpu and counts["skipped"]:
            raise failed(f"{counts['skipped']} GPU test(s) skipped on a machine with a GPU: "
                         f"{out[-600:]}", f)
        return f

    def wanted(self, specs) -> Optional[set]:
        """The checks --only asks for and every check they need (None: all). A name that is no
        check raises CheckFailed listing the names."""
        if not self.a.only:
            return None
        asked = {n.strip() for n in self.a.only.split(",") if n.strip()}
        needs = {name: list(need) for name, _, _, _, need in specs}
        unknown = sorted(asked - set(needs) - set(self.REPORTED_BY))
        if unknown:
            raise CheckFailed(f"--only names no check {', '.join(unknown)}; the checks: "
                              f"{', '.join(needs)}")
        todo, want = list(asked), set()
        while todo:
            n = todo.pop()
            n = self.REPORTED_BY.get(n, n)
            if n not in want:
                want.add(n)
                todo.extend(needs.get(n, ()))
        return want

    def run_spec(self, spec, wanted) -> None:
        name, fn, timeout, gpu, needs = spec
        if wanted is not None and name not in wanted:
            self.r.add(name, "skipped", f"not asked for (--only {self.a.only})")
        else:
            self.check(name, fn, timeout, gpu=gpu, needs=needs)

    def run(self) -> int:
        self.check("environment", self.environment, 60)
        self.check("gpu_visible", self.gpu_visible, 10, needs=["environment"])
        head = [("cuda_ipc_baseline", self.ipc_baseline, 60, True, ["environment"]),
                ("mesh_generate", self.generate, 120, False, ["environment"]),
                ("build_cpp_consumer", self.build_cpp, 120, False, ["environment"]),
                ("daemon_start", self.start_daemon, 30, False, ["environment"])]
        base = ["daemon_start", "mesh_generate"]
        try:
            wanted = self.wanted(head + self.plan(base))
        except CheckFailed as e:
            self.r.add("only", "fail", str(e))
            return 2
        for spec in head:
            self.run_spec(spec, wanted)
        if self.gpu and self.r.checks[-1]["status"] == "fail":
            # meshdockd would not serve cuda:0: the host backend still shows the rest
            self.gpu = False
            self.gpu_problem = "meshdockd did not start on cuda:0 (daemon_start)"
            self.stop_daemon()
            self.check("daemon_start_host", self.start_daemon, 30, needs=["environment"])
            base = ["daemon_start_host", "mesh_generate"]
            if wanted is not None:
                wanted.add("daemon_start_host")
        for spec in self.plan(base):
            self.run_spec(spec, wanted)
        return 0

    def build_cpp(self):
        if self.a.cpp_consumer:
            self.cpp = self.a.cpp_consumer
            if not os.access(self.cpp, os.X_OK):
                raise CheckFailed(f"{self.cpp} is not an executable")
            return {"binary": self.cpp, "built": False}
        raise CheckFailed("no --cpp-consumer given (scripts/gpu-check builds or finds one)")

    def stop_daemon(self):
        if self.daemon:
            stop(self.daemon)

    def cleanup(self):
        Proc.kill_all()
        self.stop_daemon()
        # a SIGKILLed daemon cannot remove its segments: the run's own prefix, nothing else
        for f in os.listdir("/dev/shm"):
            if f.startswith(self.prefix):
                try:
                    os.unlink(os.path.join("/dev/shm", f))
                except OSError:
                    pass
        for path, label in ((getattr(self, "daemon_err", None), "meshdockd stderr"),):
            if path and os.path.exists(path):
                self.r.log(f"--- {label} (tail)\n" + open(path).read()[-1500:])
        for p in Proc.live:
            tail = p.stderr_tail(1200).strip()
            if tail:
                self.r.log(f"--- {p.label} stderr (tail)\n{tail}")


def stop(proc):
    """SIGTERM, 10 s to go, then SIGKILL (a daemon the harness started)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def frames_seen(proc, expected):
    """A finished verify consumer's "verified" lines, and those whose matched label is not the
    one `expected` ({frame: label}) says was published as that frame: (frame, seen, published,
    first mismatches)."""
    got = [x for x in proc.lines if x.get("event") == "verified"]
    wrong = [(g["frame"], g["matched"], expected.get(g["frame"]), g["mismatches"][:3])
             for g in got if g["matched"] != expected.get(g["frame"])]
    return got, wrong


# Error markers in a consumer's stderr. Markers only: a bare "CUDA" would also match a
# library's harmless warning anywhere in it (CuPy's "CUDA path could not be detected", ...).
CONSUMER_ERRORS = re.compile(r"Traceback|Segmentation|CUDA error|CUDA_ERROR|cudaError"
                             r"|CUDARuntimeError|CUDADriverError|terminate called")


def after_gone(p):
    """A 'hold' consumer sent 'gone': waits for its answer and its exit. Returns (figures, its
    'gone' event, its stderr tail); figures: producer_gone, detect_s, held_readable_after (None
    when it did not read its held frame again), rc."""
    g = p.expect("gone", 15)
    p.expect("released", 15)
    after = [x for x in p.lines if x.get("event") == "held_after_gone"]
    rc = p.finish(15)
    f = {"producer_gone": g["producer_gone"], "detect_s": round(g.get("seconds", -1), 3),
         "held_readable_after": after[0]["unchanged"] if after else None, "rc": rc}
    return f, g, p.stderr_tail(4000)


def failed(msg, figures):
    e = CheckFailed(msg)
    e.figures = figures
    return e


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", help="scratch folder (default: a new one under /tmp; removed at "
                    "the end unless --keep-work)")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="comma-separated checks to run, with the checks they need "
                    "(the others are reported skipped): a rerun of what failed that fits in the "
                    "device time left")
    ap.add_argument("--data", default=os.path.join(HERE, "..", "data", "meshes"))
    ap.add_argument("--cpp-consumer")
    ap.add_argument("--time-limit", type=float, default=450.0)
    ap.add_argument("--keep-work", action="store_true")
    ap.add_argument("--fake-cuda", action="store_true",
                    help="a dry run of the GPU checks on the fake CUDA runtime (a "
                    "MESHDOCK_WITH_CUDA=FAKE build: meshdockd, libmeshdock and the C++ consumer "
                    "linked against tests/support/fake_cudart, MESHDOCK_FAKE_CUDART naming it): "
                    "consumers copy arrays back through it instead of adopting them with torch "
                    "or CuPy; the checks that need a real GPU library are skipped")
    a = ap.parse_args()
    run = Run(a)

    def alarm(*_):
        raise TimeLimit()

    signal.signal(signal.SIGALRM, alarm)
    signal.signal(signal.SIGTERM, alarm)
    signal.setitimer(signal.ITIMER_REAL, max(1.0, a.time_limit - 5))
    try:
        run.run()
    except TimeLimit:
        run.r.add("time_limit", "fail", f"the run's time limit ({a.time_limit:.0f} s, less 5 s "
                  f"for the report) was reached, or it was terminated, during check "
                  f"'{run.running}'; it and the checks after it did not finish")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        run.cleanup()
        rc = run.r.write()
        if not a.keep_work:
            shutil.rmtree(run.work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
