"""A consumer process of scripts/gpu-check (tests/gpu/gpu_check.py starts it): attaches to a
slot with the meshdock package it is given, adopts arrays with torch, CuPy, numpy or JAX
(jax.numpy.from_dlpack, which passes JAX's own stream to __dlpack__) on the device they live on, and prints one JSON line per event (gpucheck_common.emit).

    consumer.py --lib torch|cupy|numpy|jax --name N --prefix P --ref REF.json MODE [options]

Modes:
  verify   wait for up to --frames frames (after the first, until none comes for --idle
           seconds; then {"event": "done"}); each must equal one of the reference files (--expect A,B)
           array for array (wsum64 computed on the array's device); with --stream, the arrays
           are adopted and summed on a non-default CUDA stream, relying on the slot's IPC event
           alone (no host synchronisation before the kernels).
  hold     verify one frame and keep it (its lease), print {"event": "held"}, then obey stdin:
           "check LABEL"  re-verify the held frame (must be unchanged), then take the newest
                          frame and verify it against LABEL;
           "gone"         wait for the next frame expecting ProducerGone, then drop the frame;
           "exit"         drop everything and exit.
  latency  print {"event": "ready"}, then take frames until none comes for --idle seconds:
           wake latency = CLOCK_MONOTONIC at wake - the control block's publish timestamp,
           adopt = from_dlpack of every array of the frame (+ a stream sync on CUDA: "ready");
           the first --warmup frames are adopted untimed.
  h2d      (torch) host -> device copies of --bytes from pinned and pageable memory.
  ipc-open (CuPy) time cudaIpcOpenMemHandle / cudaIpcCloseMemHandle of every slot handle in
           the control segment --control (a /dev/shm path).
  cuda-link  read the control segment --control as cuda-link v1.x's importer does (DESIGN.md
           "cuda-link consumers", in our own code, not through meshdock): refuse shutdown 1,
           open EVERY slot's memory handle (CuPy cudaIpcOpenMemHandle; a host "MDH1" handle:
           map its /dev/shm segment), open non-zero event handles and make the stream wait on
           the newest slot's, read slot (write_idx-1) % N as (height, width, comps) of the dtype
           cuda-link decodes, and compare its wsum64 (on its device) with --expect-wsum and
           the metadata with --shape / --dtype.
Exit status 0 when the mode's checks held, 1 otherwise (the JSON says what differed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck_common import emit, now, percentile  # noqa: E402


class Lib:
    """from_dlpack + wsum64 + synchronise for one array library."""

    def __init__(self, name: str, stream: bool, no_event_wait: bool = False):
        self.name = name
        self.no_event_wait = no_event_wait
        self.stream = None
        self.fake = None
        if name in ("torch", "cupy") and os.environ.get("GPU_CHECK_FAKE_CUDA") == "1":
            # gpu-check --fake-cuda: the slot is the fake CUDA runtime's memory
            # (tests/support/fake_cudart.cpp), which neither library can read: its arrays are
            # ordered on a stream of that runtime through __dlpack__(stream=...) and copied
            # back with its cudaMemcpyAsync, then summed on the host.
            import ctypes
            import numpy
            from gpucheck_common import wsum_numpy
            self.fake = ctypes.CDLL(os.environ["MESHDOCK_FAKE_CUDART"])
            self.fake.cudaMemcpyAsync.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                                  ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
            self.fake.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
            s = ctypes.c_void_p()
            if self.fake.cudaStreamCreateWithFlags(ctypes.byref(s), 1) != 0:
                raise RuntimeError("fake CUDA: cudaStreamCreateWithFlags failed")
            self.fake_stream = s.value
            self.name = name + " (fake CUDA)"
            self.mod, self.wsum = numpy, wsum_numpy
            return
        if name == "torch":
            import torch
            from gpucheck_common import wsum_torch
            self.mod, self.wsum = torch, wsum_torch
            if stream and torch.cuda.is_available():
                self.stream = torch.cuda.Stream()
        elif name == "cupy":
            import cupy
            from gpucheck_common import wsum_cupy
            self.mod, self.wsum = cupy, wsum_cupy
            if stream:
                self.stream = cupy.cuda.Stream(non_blocking=True)
        elif name == "jax":
            # JAX takes 75% of the GPU's memory at its first use unless told not to (the daemon
            # and the other consumers share the card); 64-bit types are off by default, and
            # mesh arrays are int64 / float64 (jax_enable_x64).
            os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
            import jax
            import jax.numpy as jnp
            from gpucheck_common import wsum_jax
            jax.config.update("jax_enable_x64", True)
            self.mod, self.wsum, self.version = jnp, wsum_jax, jax.__version__
        else:
            import numpy
            from gpucheck_common import wsum_numpy
            self.mod, self.wsum = numpy, wsum_numpy

    def adopt(self, t):
        # torch and CuPy pass their current stream to __dlpack__(stream=...): meshdock makes
        # that stream wait on the slot's IPC event (cudaStreamWaitEvent), no host sync.
        if self.fake is not None and t.__dlpack_device__()[0] == 2:
            (NoWait(t) if self.no_event_wait else t).__dlpack__(stream=self.fake_stream)
            out = self.mod.empty(t.nbytes, self.mod.uint8)
            if t.nbytes and (self.fake.cudaMemcpyAsync(out.ctypes.data, t.data_ptr, t.nbytes, 2,
                                                       self.fake_stream) or
                             self.fake.cudaStreamSynchronize(self.fake_stream)):
                raise RuntimeError(f"fake CUDA: copying {t.name} back failed")
            return out
        return self.mod.from_dlpack(NoWait(t) if self.no_event_wait else t)

    def context(self):
        if self.stream is None or self.fake is not None:
            import contextlib
            return contextlib.nullcontext()
        if self.name == "torch":
            return self.mod.cuda.stream(self.stream)
        return self.stream

    def sync(self, device_type: int) -> None:
        if device_type != 2 or self.fake is not None:  # (the fake's copies are synchronised)
            return
        if self.name == "torch":
            self.mod.cuda.current_stream().synchronize()
        elif self.name == "cupy":
            self.mod.cuda.get_current_stream().synchronize()

    def versions(self) -> dict:
        v = {"lib": self.name,
             "lib_version": getattr(self, "version", getattr(self.mod, "__version__", "?"))}
        return v

    def warm(self) -> None:
        """--warm (the harness passes it when the slot is CUDA memory): make the library's CUDA
        context and load (CuPy: compile) the wsum64 kernels now, on lib's stream, before the
        process says it is ready. Otherwise the first frame pays for them (seconds: a context,
        NVRTC for CuPy on a cold kernel cache), and a consumer busy with that skips frames
        published meanwhile: latency_8_consumers could see too few, stream_semantics' control
        could miss every frame whose upload was still queued."""
        if self.name == "numpy" or self.fake is not None:
            return
        if self.name == "jax":  # JAX's default device (the GPU) and its stream: compile now
            self.wsum(self.mod.arange(13, dtype=self.mod.uint8))
            return
        with self.context():
            if self.name == "torch":
                x = self.mod.arange(13, dtype=self.mod.uint8, device="cuda")  # 13: the pad path
            else:
                x = self.mod.arange(13, dtype=self.mod.uint8)
            self.wsum(x)
        self.sync(2)


class NoWait:
    """A meshdock tensor whose __dlpack__ is always asked for stream -1 ("the consumer
    synchronises itself"), and nobody does: the negative control of stream_semantics, which must
    see a frame whose upload is still queued."""

    def __init__(self, t):
        self.t = t

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def __dlpack__(self, stream=None, **kw):
        return self.t.__dlpack__(stream=-1, **kw)


def checksums(lib: Lib, frame) -> tuple:
    """({manifest name: wsum64} of every array of the frame, computed on its device, the
    seconds adopting them all took). The kernels run on lib's stream when it has one, ordered
    after the upload by the adopt."""
    with lib.context():
        t0 = now()
        adopted = [(name, lib.adopt(t)) for name, t in frame.arrays()]
        adopt_s = now() - t0
        out = {name: lib.wsum(x) for name, x in adopted}
    return out, adopt_s


def compare(sums: dict, ref: dict, labels) -> tuple:
    """(label matched or None, mismatches of the closest label)."""
    best = None
    for label in labels:
        want = {k: v["wsum"] for k, v in ref["files"][label]["arrays"].items()}
        bad = sorted(set(want) ^ set(sums)) + [k for k in want if k in sums and sums[k] != want[k]]
        if not bad:
            return label, []
        if best is None or len(bad) < len(best[1]):
            best = (label, bad)
    return None, [f"{best[0]}: {k}" for k in best[1]] if best else ["no reference"]


def verify(lib, slot, frame, ref, labels, t_wake) -> dict:
    t0 = now()
    sums, adopt_s = checksums(lib, frame)
    t1 = now()
    label, bad = compare(sums, ref, labels)
    return {"frame": frame.number, "device": list(frame.device), "matched": label,
            "mismatches": bad[:8], "arrays": len(sums), "t_wake": t_wake, "t_checked": t1,
            "check_s": t1 - t0, "adopt_s": adopt_s, "publish_time": slot.publish_time,
            "ok": label is not None}


def mode_verify(a, lib, md, ref) -> int:
    labels = a.expect.split(",")
    ok = True
    n = 0
    with md.attach(a.name, prefix=a.prefix, timeout=a.timeout) as slot:
        emit({"event": "attached", "pid": os.getpid()})
        while n < a.frames:
            try:  # the first frame within --timeout, each later one within --idle
                frame = slot.wait(timeout=a.timeout if n == 0 else a.idle)
            except TimeoutError:
                if n == 0:
                    raise
                break  # the producer published fewer frames than asked, or we skipped some
            r = verify(lib, slot, frame, ref, labels, now())
            r.update(lib.versions(), event="verified", stream=lib.stream is not None)
            emit(r)
            ok &= r["ok"]
            n += 1
            del frame
    emit({"event": "done", "frames": n, "ok": ok})
    return 0 if ok else 1


def mode_hold(a, lib, md, ref) -> int:
    labels = a.expect.split(",")
    ok = True
    slot = md.attach(a.name, prefix=a.prefix, timeout=a.timeout)
    frame = slot.wait(timeout=a.timeout)
    first = verify(lib, slot, frame, ref, labels, now())
    held = [lib.adopt(t) for _, t in frame.arrays()]  # the tensors keep the lease too
    emit(dict(first, event="held", pid=os.getpid(), **lib.versions()))
    ok &= first["ok"]
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "check":
            again = verify(lib, slot, frame, ref, [first["matched"] or labels[0]], now())
            newest = slot.wait(timeout=a.timeout)
            fresh = verify(lib, slot, newest, ref, [cmd[1]], now())
            emit({"event": "checked", "held_frame": frame.number, "held_unchanged": again["ok"],
                  "held_mismatches": again["mismatches"], "newest_frame": newest.number,
                  "newest_ok": fresh["ok"], "newest_mismatches": fresh["mismatches"]})
            ok &= again["ok"] and fresh["ok"]
            del newest
        elif cmd[0] == "gone":
            t0 = now()
            try:
                late = slot.wait(timeout=a.timeout)
                emit({"event": "gone", "producer_gone": False, "frame": late.number})
                ok = False
            except md.ProducerGone as e:
                emit({"event": "gone", "producer_gone": True, "seconds": now() - t0,
                      "message": str(e)[:200]})
            except Exception as e:  # TimeoutError or anything else: not what was promised
                emit({"event": "gone", "producer_gone": False,
                      "error": f"{type(e).__name__}: {e}"[:300]})
                ok = False
            # Host slots stay mapped (MAP_PRIVATE) after the daemon died: still readable. CUDA
            # memory of a dead exporter is not touched, only released; "gone verify" (an unload,
            # the daemon alive) reads it too: the daemon keeps what a consumer has open.
            if frame.device[0] != 2 or cmd[1:] == ["verify"]:
                still = verify(lib, slot, frame, ref, [first["matched"] or labels[0]], now())
                emit({"event": "held_after_gone", "unchanged": still["ok"]})
            held.clear()
            frame.release()
            del frame
            slot.close()
            emit({"event": "released"})
            break
        elif cmd[0] == "exit":
            break
    return 0 if ok else 1


def mode_latency(a, lib, md, ref) -> int:
    wake, adopt, ready, frames = [], [], [], 0
    with md.attach(a.name, prefix=a.prefix, timeout=a.timeout) as slot:
        emit({"event": "ready", "pid": os.getpid()})
        start = slot.write_idx
        while frames < a.frames:
            try:
                frame = slot.wait(timeout=a.idle)
            except TimeoutError:
                break
            t_wake = now()
            if frame.number <= start + a.warmup:
                # published before we were ready, or a warm-up frame: not timed, but adopted,
                # so that CUDA's context and each ring slot's IPC mapping are made before the
                # timed frames
                with lib.context():
                    ts = [lib.adopt(t) for _, t in frame.arrays()]
                lib.sync(frame.device[0])
                del ts, frame
                continue
            wake.append(t_wake - slot.publish_time)
            t0 = now()
            with lib.context():
                ts = [lib.adopt(t) for _, t in frame.arrays()]  # noqa: F841 (held to the sync)
            t1 = now()
            lib.sync(frame.device[0])
            t2 = now()
            adopt.append(t1 - t0)
            ready.append(t2 - slot.publish_time)
            del ts, frame
            frames += 1
    us = lambda v, q: round(percentile(v, q) * 1e6, 1)  # noqa: E731
    emit({"event": "latency", "frames": frames, "wake_p50_us": us(wake, 50),
          "wake_p99_us": us(wake, 99), "wake_max_us": us(wake, 100),
          "adopt_p50_us": us(adopt, 50), "adopt_p99_us": us(adopt, 99),
          "ready_p50_us": us(ready, 50), "ready_p99_us": us(ready, 99),
          "wake_us": [round(x * 1e6, 1) for x in wake], **lib.versions()})
    return 0 if frames else 1


def mode_ipc_open(a) -> int:
    import cupy as cp

    rt = cp.cuda.runtime
    # Make the CUDA context first (cudaFree(NULL)): otherwise the first timed open pays for it
    # and open_first_us measures context creation, not cudaIpcOpenMemHandle.
    rt.free(0)
    raw = open(a.control, "rb").read()
    n = int.from_bytes(raw[12:16], "little")
    opens, closes, slots = [], [], 0
    for i in range(n):
        h = raw[20 + 128 * i: 84 + 128 * i]
        if h.startswith(b"MDH1") or not any(h):
            continue
        slots += 1
        for _ in range(a.frames):
            t0 = time.perf_counter()
            ptr = rt.ipcOpenMemHandle(h, getattr(rt, "cudaIpcMemLazyEnablePeerAccess", 1))
            t1 = time.perf_counter()
            rt.ipcCloseMemHandle(ptr)
            t2 = time.perf_counter()
            opens.append(t1 - t0)
            closes.append(t2 - t1)
    # What two attachments in one process rely on (the SDK opens each buffer once per
    # attachment): a second open of a handle returns the same pointer and counts, and one
    # close leaves the other's mapping readable.
    reopen = {}
    for i in range(n):
        h = raw[20 + 128 * i: 84 + 128 * i]
        if h.startswith(b"MDH1") or not any(h):
            continue
        flag = getattr(rt, "cudaIpcMemLazyEnablePeerAccess", 1)
        try:
            p1 = rt.ipcOpenMemHandle(h, flag)
            p2 = rt.ipcOpenMemHandle(h, flag)
            reopen["reopen_same_pointer"] = p1 == p2
            rt.ipcCloseMemHandle(p1)
            mem = cp.cuda.UnownedMemory(p2, 1, None)
            cp.ndarray((1,), cp.uint8, cp.cuda.MemoryPointer(mem, 0)).get()
            cp.cuda.Device().synchronize()
            reopen["read_after_one_close"] = True
            rt.ipcCloseMemHandle(p2)
        except Exception as e:  # the figure says what the runtime did instead
            reopen["reopen_error"] = f"{type(e).__name__}: {e}"[:200]
        break
    emit({"event": "ipc_open", "slots": slots, "samples": len(opens), **reopen,
          "open_first_us": round(opens[0] * 1e6, 1) if opens else None,
          "open_p50_us": round(percentile(opens, 50) * 1e6, 1) if opens else None,
          "close_p50_us": round(percentile(closes, 50) * 1e6, 1) if closes else None})
    return 0 if slots else 1


IPC_BASELINE_ELEMS = 1 << 20  # 4 MiB of float32: element i holds i


def mode_ipc_export(a) -> int:
    """CUDA IPC with no meshdock in it (CuPy): 4 MiB filled on a stream, an interprocess event
    recorded after the fill, both handles emitted as hex; held until stdin closes. Whether this
    sandbox's driver does IPC at all, so that a failed meshdock check can be told from it."""
    import cupy as cp

    rt = cp.cuda.runtime
    stream = cp.cuda.Stream(non_blocking=True)
    # A cudaMalloc of its own, as the daemon's: a handle names a whole allocation, and a pointer
    # from CuPy's pool may lie inside a larger one (or come from cudaMallocAsync's pool).
    nbytes = IPC_BASELINE_ELEMS * 4
    ptr = rt.malloc(nbytes)
    mem = cp.cuda.UnownedMemory(ptr, nbytes, None)
    arr = cp.ndarray((IPC_BASELINE_ELEMS,), cp.float32, cp.cuda.MemoryPointer(mem, 0))
    with stream:
        arr[...] = cp.arange(IPC_BASELINE_ELEMS, dtype=cp.float32)
    ev = cp.cuda.Event(block=False, disable_timing=True, interprocess=True)
    ev.record(stream)
    handle = bytes(rt.ipcGetMemHandle(ptr))
    evh = bytes(rt.ipcGetEventHandle(ev.ptr))
    emit({"event": "exported", "mem": handle.hex(), "ev": evh.hex(), "pid": os.getpid()})
    sys.stdin.read()  # the importer is done (the check closes stdin)
    stream.synchronize()
    del arr, mem
    rt.free(ptr)
    return 0


def mode_ipc_import(a) -> int:
    """The other half of mode_ipc_export: opens both handles (a.control: "MEMHEX,EVHEX"),
    orders a stream after the event, reads elements back and closes."""
    import cupy as cp

    rt = cp.cuda.runtime
    rt.free(0)  # the context first: the timed open is the open
    mem_hex, ev_hex = a.control.split(",")
    t0 = time.perf_counter()
    ptr = rt.ipcOpenMemHandle(bytes.fromhex(mem_hex),
                              getattr(rt, "cudaIpcMemLazyEnablePeerAccess", 1))
    t1 = time.perf_counter()
    ev = rt.ipcOpenEventHandle(bytes.fromhex(ev_hex))
    stream = cp.cuda.Stream(non_blocking=True)
    rt.streamWaitEvent(stream.ptr, ev, 0)
    mem = cp.cuda.UnownedMemory(ptr, IPC_BASELINE_ELEMS * 4, None)
    with stream:
        arr = cp.ndarray((IPC_BASELINE_ELEMS,), cp.float32, cp.cuda.MemoryPointer(mem, 0))
        picks = [0, 12345, IPC_BASELINE_ELEMS - 1]
        got = [float(x) for x in arr[picks].get(stream=stream)]
        total = float(arr.sum(dtype=cp.float64).get(stream=stream))
    stream.synchronize()
    del arr, mem
    t2 = time.perf_counter()
    rt.ipcCloseMemHandle(ptr)
    t3 = time.perf_counter()
    rt.eventDestroy(ev)
    n = IPC_BASELINE_ELEMS
    emit({"event": "imported", "values": got, "values_ok": got == [float(i) for i in picks],
          "sum_ok": total == n * (n - 1) / 2, "open_us": round((t1 - t0) * 1e6, 1),
          "read_s": round(t2 - t1, 4), "close_us": round((t3 - t2) * 1e6, 1)})
    return 0


def mode_h2d(a) -> int:
    """The baseline the daemon's upload is compared with: the same number of bytes copied
    host -> device with torch (cudaMemcpyAsync underneath) from pinned and from pageable
    memory, timed with CUDA events, median of --frames copies after a warm-up."""
    import torch

    n = a.bytes
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    out = {"event": "h2d", "bytes": n}
    for kind, pin in (("pinned", True), ("pageable", False)):
        host = torch.randint(0, 255, (n,), dtype=torch.uint8).pin_memory() if pin else \
            torch.randint(0, 255, (n,), dtype=torch.uint8)
        dev.copy_(host, non_blocking=pin)
        torch.cuda.synchronize()
        times = []
        for _ in range(max(3, a.frames)):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            dev.copy_(host, non_blocking=pin)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1) / 1e3)
        t = percentile(times, 50)
        out[f"{kind}_s"] = t
        out[f"{kind}_GBps"] = round(n / t / 1e9, 2)
        if not torch.equal(dev[:4096].cpu(), host[:4096]):
            out["ok"] = False
    # What pinning costs (cudaHostAlloc + cudaFreeHost of the same bytes, CuPy's raw runtime
    # calls: torch caches pinned blocks) against what it gains per upload: after how many
    # uploads of a buffer the pinning has paid for itself (the daemon keeps its pinned buffers
    # for reuse, so a reload pays no cudaHostAlloc).
    try:
        import cupy as cp

        rt = cp.cuda.runtime
        allocs = []
        for _ in range(3):
            t0 = time.perf_counter()
            ptr = rt.hostAlloc(n, 0)
            t1 = time.perf_counter()
            rt.freeHost(ptr)
            allocs.append(t1 - t0)
        a = percentile(allocs, 50)
        out["pin_alloc_s"] = round(a, 5)
        out["pin_alloc_GBps"] = round(n / a / 1e9, 2)
        gain = out["pageable_s"] - out["pinned_s"]
        out["pin_breakeven_uploads"] = round(a / gain, 2) if gain > 0 else None
    except Exception as e:  # CuPy missing: the H2D figures still stand
        out["pin_alloc_error"] = f"{type(e).__name__}: {e}"[:200]
    emit(out)
    return 0


def mode_cuda_link(a) -> int:
    import mmap
    import struct

    import numpy as np

    from gpucheck_common import wsum_numpy

    raw = open(a.control, "rb").read()
    magic, version, n, write_idx = struct.unpack_from("<IQII", raw, 0)
    out = {"event": "cuda_link", "version": version, "num_slots": n, "write_idx": write_idx}
    if magic != 0x43495044:
        out.update(ok=False, error=f"magic {magic:#x}")
        emit(out)
        return 1
    if raw[20 + 128 * n]:
        out.update(ok=False, error="shutdown byte is 1: cuda-link refuses the block")
        emit(out)
        return 1
    w, h, c, kind, bits, flags, size = struct.unpack_from("<IIIBBHI", raw, 21 + 128 * n)
    from meshdock.protocol import BufferMetadata
    dt = BufferMetadata(format_kind=kind, bits=bits, flags=flags).cuda_link_dtype()
    out.update(width=w, height=h, num_comps=c, format_kind=kind, bits=bits, flags=flags,
               data_size=size, cuda_link_dtype=dt)
    problems = []
    if 0 in (w, h, c):
        problems.append("a zero width/height/comps: cuda-link falls back to 512x512x4 float32")
    if w * h * c * bits // 8 != size:
        problems.append(f"width*height*comps*bits/8 = {w * h * c * bits // 8} != data_size {size}")
    want_shape = [int(x) for x in a.shape.split(",")] if a.shape else None
    if want_shape is not None and [h, w, c] != want_shape:
        problems.append(f"(height, width, comps) = {[h, w, c]}, expected {want_shape}")
    if a.dtype and dt != a.dtype:
        problems.append(f"cuda-link decodes {dt}, expected {a.dtype}")
    slot = (write_idx - 1) % n
    handles = [raw[20 + 128 * i: 84 + 128 * i] for i in range(n)]
    events = [raw[84 + 128 * i: 148 + 128 * i] for i in range(n)]
    if not all(any(x) for x in handles):
        problems.append("an all-zero memory handle: cuda-link retries forever")
    cuda = any(not x.startswith(b"MDH1") for x in handles if any(x))
    t0 = now()
    if cuda:
        import cupy as cp

        rt = cp.cuda.runtime
        flag = getattr(rt, "cudaIpcMemLazyEnablePeerAccess", 1)
        ptrs = [rt.ipcOpenMemHandle(x, flag) for x in handles]  # every slot, as it does
        stream = cp.cuda.Stream(non_blocking=True)
        opened_events = 0
        for i, e in enumerate(events):
            if any(e):
                ev = rt.ipcOpenEventHandle(e)
                opened_events += 1
                if i == slot:
                    rt.streamWaitEvent(stream.ptr, ev, 0)
        out["opened_events"] = opened_events
        out["open_all_s"] = round(now() - t0, 6)
        with stream:
            mem = cp.cuda.UnownedMemory(ptrs[slot], size, None)
            arr = cp.ndarray((h, w, c), dtype=dt, memptr=cp.cuda.MemoryPointer(mem, 0))
            from gpucheck_common import wsum_cupy
            got = wsum_cupy(arr)
        stream.synchronize()
        for ptr in ptrs:
            rt.ipcCloseMemHandle(ptr)
        out["device"] = "cuda"
    else:
        maps = []
        for x in handles:
            name = x[4:].split(b"\0", 1)[0].decode()
            fd = os.open("/dev/shm/" + name, os.O_RDONLY)
            try:
                maps.append(mmap.mmap(fd, 0, prot=mmap.PROT_READ))
            finally:
                os.close(fd)
        out["open_all_s"] = round(now() - t0, 6)
        arr = np.frombuffer(maps[slot], dtype=dt, count=h * w * c).reshape(h, w, c)
        got = wsum_numpy(arr)
        del arr
        for m in maps:
            m.close()
        out["device"] = "host"
    out["wsum"] = got
    if a.expect_wsum and got != a.expect_wsum:
        problems.append(f"wsum {got} != {a.expect_wsum}: the texture differs from what was "
                        "published")
    out["problems"] = problems
    out["ok"] = not problems
    emit(out)
    return 0 if not problems else 1


def mode_late_read(a, lib, md, ref) -> int:
    """torch on a CUDA slot, on a non-default stream: adopt every array of a frame, queue
    --hold seconds of GPU sleep and then the checksums behind it, and drop the tensors and the
    frame at once (torch calls the DLPack deleters with that work still queued). Says "queued";
    the harness republishes past the ring and sends "go"; then waits for the stream: the sums
    must be the frame's file (its lease outlived the queued work, so the daemon gave the ring
    slot a fresh buffer instead of copying under the kernels)."""
    import torch
    from gpucheck_common import hex64, wsum_torch_queued
    labels = a.expect.split(",")
    slot = md.attach(a.name, prefix=a.prefix, timeout=a.timeout)
    frame = slot.wait(timeout=a.timeout)
    number = frame.number
    with lib.context():
        # torch.cuda._sleep spins for a number of cycles: how many a second is, measured
        c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        c0.record()
        torch.cuda._sleep(20_000_000)
        c1.record()
        c1.synchronize()
        hz = 20_000_000 / (c0.elapsed_time(c1) / 1000.0)
        adopted = [(name, lib.adopt(t)) for name, t in frame.arrays()]
        torch.cuda._sleep(int(hz * a.hold))
        pending = {name: wsum_torch_queued(x) for name, x in adopted}
        done = torch.cuda.Event()
        done.record()
    del adopted, frame  # the deleters run now: the sleep and the sums are still queued
    emit({"event": "queued", "frame": number, "hold_s": a.hold, "cycles_per_s": round(hz)})
    for line in sys.stdin:
        if line.split()[:1] == ["go"]:
            break
    busy_at_go = not done.query()
    done.synchronize()
    sums = {name: hex64(int(v)) for name, v in pending.items()}
    label, bad = compare(sums, ref, labels)
    emit({"event": "late", "frame": number, "matched": label, "mismatches": bad[:8],
          "busy_at_go": busy_at_go, "ok": label is not None, **lib.versions()})
    slot.close()
    return 0 if label else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("verify", "hold", "latency", "ipc-open", "h2d",
                                     "cuda-link", "ipc-export", "ipc-import", "late-read"))
    ap.add_argument("--lib", choices=("torch", "cupy", "numpy", "jax"), default="torch")
    ap.add_argument("--name")
    ap.add_argument("--prefix")
    ap.add_argument("--ref")
    ap.add_argument("--expect", default="")
    ap.add_argument("--frames", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--idle", type=float, default=3.0)
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--no-event-wait", action="store_true",
                    help="verify: adopt with __dlpack__(stream=-1) and no sync (the control)")
    ap.add_argument("--warmup", type=int, default=0, help="latency: frames not timed")
    ap.add_argument("--warm", action="store_true",
                    help="verify/hold/latency: start CUDA and the checksum kernels before "
                    "attaching (the slot is CUDA memory)")
    ap.add_argument("--hold", type=float, default=5.0,
                    help="late-read: seconds of GPU sleep queued before the checksums")
    ap.add_argument("--control")
    ap.add_argument("--bytes", type=int, default=0)
    ap.add_argument("--expect-wsum", default="", help="cuda-link: the texture's wsum64")
    ap.add_argument("--shape", default="", help="cuda-link: expected height,width,comps")
    ap.add_argument("--dtype", default="", help="cuda-link: expected decoded dtype")
    a = ap.parse_args()
    try:
        if a.mode == "ipc-open":
            return mode_ipc_open(a)
        if a.mode == "ipc-export":
            return mode_ipc_export(a)
        if a.mode == "ipc-import":
            return mode_ipc_import(a)
        if a.mode == "cuda-link":
            return mode_cuda_link(a)
        if a.mode == "h2d":
            return mode_h2d(a)
        import meshdock as md
        lib = Lib(a.lib, a.stream, a.no_event_wait)
        if a.warm:
            lib.warm()
        emit({"event": "start", "pid": os.getpid()})
        ref = json.load(open(a.ref)) if a.ref else {"files": {}}
        return {"verify": mode_verify, "hold": mode_hold, "latency": mode_latency,
                "late-read": mode_late_read}[a.mode](a, lib, md, ref)
    except Exception as e:
        emit({"event": "error", "error": f"{type(e).__name__}: {e}"[:500],
              "trace": traceback.format_exc()[-1500:]})
        return 1


if __name__ == "__main__":
    sys.exit(main())
