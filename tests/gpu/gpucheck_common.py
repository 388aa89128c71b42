"""What scripts/gpu-check's harness (gpu_check.py) and its consumers (consumer.py, cpp_check)
agree on: the array checksum and the reference file format.

Checksum ("wsum64") of an array's bytes: zero-pad them to a multiple of 8, read them as
little-endian uint64 words w_0..w_{n-1}, and take  sum_i w_i * (2i + 1)  modulo 2**64. Every
byte moves it (an odd weight is invertible mod 2**64) and so does every swap of two words, and
it is one multiply and one sum: numpy, torch and CuPy compute it on the device the array lives
on (no copy back), tests/gpu/cpp_check.cpp on the host after one cudaMemcpy. Printed as 16 hex
digits.

Reference file (JSON, written by the harness from meshdock.read of the mesh file, i.e. the host
read): {"files": {"LABEL": {"arrays": {"points": {"wsum": hex, "nbytes": n, "shape": [...]},
"cells/0": ..., ...}}}}: the manifest names of every array (DevicePayload.arrays()).
"""

from __future__ import annotations

import json
import time

MASK = (1 << 64) - 1


def hex64(x: int) -> str:
    return f"{x & MASK:016x}"


def wsum_numpy(a) -> str:
    import numpy as np

    b = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    if b.size % 8:
        b = np.concatenate([b, np.zeros(8 - b.size % 8, dtype=np.uint8)])
    w = b.view("<u8")
    k = np.arange(w.size, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    return hex64(int((w * k).sum(dtype=np.uint64)))


def wsum_torch(t) -> str:
    """On t's device. int64 arithmetic wraps modulo 2**64 (two's complement) on CPU and CUDA,
    so the signed sum has the unsigned sum's bits."""
    return hex64(int(wsum_torch_queued(t)))


def wsum_torch_queued(t):
    """wsum_torch as a 0-d int64 tensor, queued on the current stream (no host sync)."""
    import torch

    b = t.contiguous().reshape(-1).view(torch.uint8)
    if b.numel() % 8:
        b = torch.cat([b, torch.zeros(8 - b.numel() % 8, dtype=torch.uint8, device=b.device)])
    w = b.view(torch.int64)
    k = torch.arange(w.numel(), dtype=torch.int64, device=w.device) * 2 + 1
    return (w * k).sum()


def wsum_cupy(x) -> str:
    import cupy as cp

    b = cp.ascontiguousarray(x).reshape(-1).view(cp.uint8)
    if b.size % 8:
        b = cp.concatenate([b, cp.zeros(8 - b.size % 8, dtype=cp.uint8)])
    w = b.view(cp.uint64)
    k = cp.arange(w.size, dtype=cp.uint64) * cp.uint64(2) + cp.uint64(1)
    return hex64(int((w * k).sum(dtype=cp.uint64)))


def wsum_jax(x) -> str:
    """On x's device (JAX with jax_enable_x64). The bytes by bitcasts, which on these little-
    endian devices are the array's bytes in memory order, as numpy's view gives them."""
    import jax
    import jax.numpy as jnp

    b = x.reshape(-1)
    if b.dtype == jnp.bool_:
        b = b.astype(jnp.uint8)  # 0 / 1, the bytes a bool array holds
    if b.dtype.itemsize > 1:
        b = jax.lax.bitcast_convert_type(b, jnp.uint8).reshape(-1)
    elif b.dtype != jnp.uint8:
        b = jax.lax.bitcast_convert_type(b, jnp.uint8)
    if b.size % 8:
        b = jnp.concatenate([b, jnp.zeros(8 - b.size % 8, dtype=jnp.uint8)])
    w = jax.lax.bitcast_convert_type(b.reshape(-1, 8), jnp.uint64)
    k = jnp.arange(w.size, dtype=jnp.uint64) * jnp.uint64(2) + jnp.uint64(1)
    return hex64(int((w * k).sum(dtype=jnp.uint64)))


def reference_of(path: str) -> dict:
    """{"arrays": {manifest name: {wsum, nbytes, shape}}} of the mesh file, read on the host
    with meshdock's own readers (the payload the daemon builds from it, default options)."""
    import numpy as np
    import meshdock as md

    p = md.to_dlpack(md.read(path))
    out = {}
    for name, t in p.arrays():
        a = np.from_dlpack(t)
        out[name] = {"wsum": wsum_numpy(a), "nbytes": int(a.nbytes), "shape": list(a.shape)}
    return {"arrays": out}


def now() -> float:
    """CLOCK_MONOTONIC seconds: what the control block's publish timestamp is written in."""
    return time.monotonic()


def emit(obj: dict) -> None:
    """One JSON line on stdout, flushed (the harness reads them as they come)."""
    print(json.dumps(obj), flush=True)


def percentile(values, q: float) -> float:
    v = sorted(values)
    if not v:
        return float("nan")
    i = min(len(v) - 1, max(0, int(round(q / 100.0 * (len(v) - 1)))))
    return v[i]
