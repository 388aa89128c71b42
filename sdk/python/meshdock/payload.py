"""DevicePayload and the DLPack handoff, in process (docs/DESIGN.md, "Python surface").

    p = meshdock.to_dlpack(mesh)                 # host payload, zero-copy, O(1) in mesh size
    t = torch.from_dlpack(p.points)              # adopts the same memory
    gpu = meshdock.to_cupy(mesh, float32=True)   # one host->device transfer per array
    mesh2 = meshdock.from_cupy(gpu)              # one device->host copy per array, noted

Every note (a lossy or copying step) is issued as a PayloadWarning and kept in `notes`;
`derived` facts are never warned.
"""

from __future__ import annotations

import ctypes
import os
import sys
import warnings
from ctypes import c_void_p
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .mesh import CellBlock, Mesh, Region, as_dict

__all__ = ["PayloadError", "PayloadWarning", "DevicePayload", "to_dlpack", "to_torch", "to_cupy",
           "from_cupy", "has_cupy", "has_cuda_device", "cupy_wheel"]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3


class PayloadError(ValueError):
    """The payload layer's error: the message names the array and the value or option."""


class PayloadWarning(UserWarning):
    """A lossy or copying step taken while building or moving a payload."""


@dataclass
class DevicePayload:
    """A mesh as device-ready arrays. Arrays are meshdock.Tensor (host, DLPack), torch tensors
    (to_torch) or CuPy arrays (to_cupy); cells[k] holds the kept block k of type cell_types[k];
    block_bases[k] is the first global cell number of block k (block_bases[-1]: all cells).
    A single-array publish (a standalone tensor, e.g. an image) is a payload whose `tensor` is
    that array and whose mesh members are empty (points and block_bases None)."""

    points: Any
    cell_types: List[str]
    cells: List[Any]
    block_bases: Any
    point_data: Dict[str, Any] = field(default_factory=dict)
    cell_data: Dict[str, List[Any]] = field(default_factory=dict)
    field_data: Dict[str, np.ndarray] = field(default_factory=dict)
    regions: List[Region] = field(default_factory=list)
    device: Tuple[int, int] = (KDL_CPU, 0)
    dropped: List[str] = field(default_factory=list)
    shared: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    derived: List[str] = field(default_factory=list)
    refs: List[Any] = field(default_factory=list)  # what must outlive the arrays (staging)
    tensor: Any = None  # a single-array publish: the array (the mesh members are empty)

    def arrays(self):
        """(name, array) for every array, in manifest order (field_data, host only, aside)."""
        if self.tensor is not None:
            yield "tensor", self.tensor
            return
        yield "points", self.points
        for k, a in enumerate(self.cells):
            yield f"cells/{k}", a
        yield "block_bases", self.block_bases
        for name, a in self.point_data.items():
            yield f"point_data/{name}", a
        for name, parts in self.cell_data.items():
            for k, a in enumerate(parts):
                yield f"cell_data/{name}/{k}", a
        for r in self.regions:
            yield f"regions/{r.name}", r.entries

    def map(self, fn, device=None) -> "DevicePayload":
        """A payload with fn(name, array) applied to every array (notes and facts carried)."""
        mesh = self.tensor is None
        return DevicePayload(
            points=fn("points", self.points) if mesh else None, cell_types=list(self.cell_types),
            cells=[fn(f"cells/{k}", a) for k, a in enumerate(self.cells)],
            block_bases=fn("block_bases", self.block_bases) if mesh else None,
            point_data={n: fn(f"point_data/{n}", a) for n, a in self.point_data.items()},
            cell_data={n: [fn(f"cell_data/{n}/{k}", a) for k, a in enumerate(p)]
                       for n, p in self.cell_data.items()},
            field_data=dict(self.field_data),
            regions=[Region(r.name, r.kind, r.dim, r.tag, fn(f"regions/{r.name}", r.entries))
                     for r in self.regions],
            device=device or self.device, dropped=list(self.dropped), shared=list(self.shared),
            notes=list(self.notes), derived=list(self.derived), refs=list(self.refs),
            tensor=None if self.tensor is None else fn("tensor", self.tensor))

    def to_torch(self, device: Optional[str] = None, float32: bool = False, int32: bool = False,
                 zero_copy_only: bool = False) -> "DevicePayload":
        """md.to_torch(self, ...): the same payload as torch tensors (see to_torch)."""
        return to_torch(self, device=device, float32=float32, int32=int32,
                        zero_copy_only=zero_copy_only)

    def __repr__(self) -> str:
        if self.tensor is not None:
            t = self.tensor
            return (f"<meshdock.DevicePayload device={self.device} tensor "
                    f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}>")
        blocks = ", ".join(f"{t}:{len(a)}" for t, a in zip(self.cell_types, self.cells))
        return (f"<meshdock.DevicePayload device={self.device} {len(self.points)} points, "
                f"blocks ({blocks}), {len(self.regions)} regions, {len(self.notes)} notes>")


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_stacklevel() -> int:
    """The warnings.warn stacklevel of the first frame outside the meshdock package (as seen
    from _warn's caller), so a warning points at the user's line however deep inside meshdock
    it was raised (to_torch -> to_dlpack -> _warn; Python 3.12's skip_file_prefixes, by hand)."""
    f = sys._getframe(2)  # _warn's caller
    level = 2
    while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == _PACKAGE_DIR:
        f = f.f_back
        level += 1
    return level


def _warn(notes, what: str = "") -> None:
    """One PayloadWarning for a call's notes (a list inside, not a warning per array), pointing
    at the caller's line outside meshdock."""
    if not notes:
        return
    if len(notes) == 1:
        text = notes[0]
    else:
        head = f"{what}: " if what else ""
        text = f"{head}{len(notes)} notes:\n" + "\n".join(f"  - {n}" for n in notes)
    warnings.warn(text, PayloadWarning, stacklevel=_caller_stacklevel())


def to_dlpack(mesh, float32: bool = False, int32: bool = False,
              zero_copy_only: bool = False) -> DevicePayload:
    """The host DevicePayload of `mesh` (a meshdock.Mesh or any object with its attributes).

    Arrays are shared with the mesh (no copy; they outlive it) unless float32 / int32 ask for a
    cast. int32 range-checks connectivity, block_bases and region entries first. Ragged blocks
    (polyhedra) are dropped and listed in `dropped`, region entries renumbered to the kept
    blocks. zero_copy_only=True raises PayloadError instead of copying. The notes come as one
    PayloadWarning."""
    p = _build(mesh, float32, int32, zero_copy_only)
    _warn(p.notes, "to_dlpack")
    return p


def _build(mesh, float32: bool, int32: bool, zero_copy_only: bool) -> DevicePayload:
    """to_dlpack without the warning (to_torch / to_cupy warn once for the whole call)."""
    from . import _capi
    from .mesh import c_mesh

    copies: List[str] = []
    d = as_dict(mesh, copies)
    if copies and zero_copy_only:
        raise PayloadError(f"{copies[0]} would need a copy, and zero_copy_only=True")
    a = _capi.api()
    m = c_mesh(d)
    o = _capi.PayloadOptions()
    a.payload_options_init(o)
    o.float32, o.int32, o.zero_copy_only = bool(float32), bool(int32), bool(zero_copy_only)
    out = c_void_p()
    _capi.check(a.payload_build(m.ptr, o, out))
    del m  # the payload keeps what it shares with the mesh
    p = _payload_of(a, _capi.Handle(out.value, a.payload_release))
    p.notes = copies + p.notes
    return p


def _payload_of(a, h) -> "DevicePayload":
    from . import _capi
    from ._tensor import Tensor, describe, numpy_of

    ptr = h.ptr
    n = a.payload_array_count(ptr)
    info = _capi.ArrayInfo()
    info.struct_size = ctypes.sizeof(info)

    def array_info(hp, i):
        x = _capi.ArrayInfo()
        x.struct_size = ctypes.sizeof(x)
        _capi.check(a.payload_array(hp, i, x))
        return x

    tensors: list = []
    point_data: Dict[str, Any] = {}
    cell_data: Dict[str, Dict[int, Any]] = {}
    field_data: Dict[str, np.ndarray] = {}
    block_bases = None
    for i in range(n):
        _capi.check(a.payload_array(ptr, i, info))
        role = info.role
        if role == _capi.ROLE_FIELD_DATA:
            field_data[info.key.decode()] = numpy_of(a.payload_array_dlpack_legacy, ptr, i)
            tensors.append(None)
            continue
        name, shape, dtype, nbytes, dev, data = describe(info)
        t = Tensor(h, (name, shape, dtype, nbytes, _capi.index_arg(i)), dev, a.raw_payload_array_dlpack,
                   a.raw_payload_array_dlpack_legacy, array_info, data,
                   getattr(a, "raw_payload_array_capsule", None))
        tensors.append(t)
        if role == _capi.ROLE_POINT_DATA:
            point_data[info.key.decode()] = t
        elif role == _capi.ROLE_CELL_DATA:
            cell_data.setdefault(info.key.decode(), {})[info.block] = t
        elif role == _capi.ROLE_BLOCK_BASES:
            block_bases = t
    b = _capi.BlockInfo()
    b.struct_size = ctypes.sizeof(b)
    types, cells = [], []
    for k in range(a.payload_block_count(ptr)):
        _capi.check(a.payload_block(ptr, k, b))
        types.append(b.type.decode())
        cells.append(tensors[b.connectivity])
    r = _capi.RegionInfo()
    r.struct_size = ctypes.sizeof(r)
    regions = []
    for k in range(a.payload_region_count(ptr)):
        _capi.check(a.payload_region(ptr, k, r))
        regions.append(Region(r.name.decode(), r.kind.decode(), r.dim, r.tag,
                              tensors[r.entries] if r.entries >= 0 else None))
    dev = a.payload_device(ptr)
    points = next((t for t in tensors if t is not None and t.name == "points"), None)

    def lst(which):
        return _capi.strings(a.payload_list(ptr, which))

    return DevicePayload(
        points=points, cell_types=types, cells=cells, block_bases=block_bases,
        point_data=point_data, cell_data={k: [v[b] for b in sorted(v)] for k, v in cell_data.items()},
        field_data=field_data, regions=regions, device=(dev.device_type, dev.device_id),
        dropped=lst(_capi.PAYLOAD_DROPPED), shared=lst(_capi.PAYLOAD_SHARED),
        notes=lst(_capi.PAYLOAD_NOTES), derived=lst(_capi.PAYLOAD_DERIVED))


def _torch_of(a):
    """torch.from_dlpack(a), except where torch refuses a host bool array (torch 1.13, Debian
    12's, knows no DLPack bool: "Unsupported code 6"): its numpy view, which torch adopts
    without a copy either (and which keeps `a`'s memory alive)."""
    import torch

    try:
        return torch.from_dlpack(a)
    except (RuntimeError, BufferError, TypeError):
        if a.__dlpack_device__()[0] not in (KDL_CPU, KDL_CUDA_HOST):
            raise
        view = np.asarray(a)
        if view.dtype != np.bool_:
            raise
        return torch.from_numpy(view)


def to_torch(mesh, device: Optional[str] = None, float32: bool = False, int32: bool = False,
             zero_copy_only: bool = False) -> DevicePayload:
    """The payload as torch tensors. `mesh` is a Mesh (to_dlpack first) or a DevicePayload,
    such as an attached Frame (md.to_torch(frame) or frame.to_torch()): the same structure
    comes back either way. Arrays are adopted without a copy (torch.from_dlpack) where they
    live; `device` (default: "cpu" for a mesh, where the arrays live for a payload) elsewhere
    costs one transfer per array (noted). float32 / int32 cast as to_dlpack does (a payload's
    arrays: with torch, int32 range-checked first); zero_copy_only=True raises instead of
    copying."""
    import torch

    if isinstance(mesh, DevicePayload):
        return _payload_to_torch(mesh, device, float32, int32, zero_copy_only)
    p = _build(mesh, float32, int32, zero_copy_only)
    dev = torch.device(device or "cpu")
    if dev.type != "cpu" and zero_copy_only:
        raise PayloadError(f"moving to {dev} copies every array, and zero_copy_only=True")
    out = p.map(lambda name, a: None if a is None else _torch_of(a).to(dev),
                device=(KDL_CPU, 0) if dev.type == "cpu" else (KDL_CUDA, dev.index or 0))
    if dev.type != "cpu":
        out.notes.append(f"every array copied host -> {dev} (one transfer each)")
    _warn(out.notes, "to_torch")
    return out


_INDEX_ARRAYS = ("cells/", "block_bases", "regions/")


def _payload_to_torch(p: DevicePayload, device, float32, int32, zero_copy_only) -> DevicePayload:
    import torch

    notes: List[str] = []
    target = torch.device(device) if device is not None else None
    wide = {getattr(torch, n) for n in ("int64", "uint64", "uint32") if hasattr(torch, n)}

    def convert(name, a):
        if a is None:
            return None
        t = a if isinstance(a, torch.Tensor) else _torch_of(a)
        if target is not None and t.device != target:
            if zero_copy_only:
                raise PayloadError(f"{name}: moving {t.device} -> {target} copies, and "
                                   "zero_copy_only=True")
            notes.append(f"{name}: copied {t.device} -> {target}")
            t = t.to(target)
        if float32 and t.dtype in (torch.float64, torch.float16, torch.bfloat16):
            if zero_copy_only:
                raise PayloadError(f"{name}: float32=True casts {t.dtype}, and zero_copy_only=True")
            notes.append(f"{name}: {str(t.dtype)[len('torch.'):]} -> float32 (copy)")
            t = t.to(torch.float32)
        if int32 and name.startswith(_INDEX_ARRAYS) and t.dtype in wide:
            if zero_copy_only:
                raise PayloadError(f"{name}: int32=True casts {t.dtype}, and zero_copy_only=True")
            if t.numel():
                lo, hi = int(t.min()), int(t.max())
                if lo < -2**31 or hi >= 2**31:
                    raise PayloadError(f"{name}: values {lo}..{hi} do not fit int32")
            notes.append(f"{name}: {str(t.dtype)[len('torch.'):]} -> int32 (copy)")
            t = t.to(torch.int32)
        return t

    out = p.map(convert)
    ref = out.points if out.points is not None else next((a for _, a in out.arrays()
                                                          if a is not None), None)
    if ref is not None:
        out.device = (KDL_CPU, 0) if ref.device.type == "cpu" else (KDL_CUDA, ref.device.index or 0)
    out.notes.extend(notes)
    if notes:
        _warn(notes, "to_torch")
    return out


def probe_devices() -> dict:
    """Which CUDA devices answer this process (libmeshdock's probe): built_with_cuda,
    cuda_status, runtime_version, driver_version, devices [{id, name, total_memory,
    capability}]. Never raises for a missing device (LibraryNotFound without the library)."""
    import json

    from . import _capi

    a = _capi.api()
    return json.loads(_capi.owned_json(a.probe_devices))


def has_cuda_device() -> bool:
    """True when a CUDA device answers this process. Never raises."""
    try:
        return bool(probe_devices()["devices"])
    except Exception:
        return False


def has_cupy() -> bool:
    """True when CuPy can be imported. Never raises."""
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    return True


def cupy_wheel() -> str:
    """The CuPy wheel for this host's CUDA: from the driver when one answers, else from the
    CUDA runtime meshdock was built with (cupy-cuda12x, cupy-cuda13x, ...)."""
    try:
        info = probe_devices()
        version = info["driver_version"] or info["runtime_version"]
    except Exception:
        version = 0
    return f"cupy-cuda{version // 1000}x" if version else "cupy-cuda12x (or cupy-cuda13x: match your CUDA)"


def _cupy():
    try:
        import cupy
        return cupy
    except ImportError as e:
        wheel = cupy_wheel()
        raise ImportError(f"to_cupy / from_cupy need CuPy, which is not installed: install the "
                          f"wheel for your CUDA toolkit, {wheel} (pip install {wheel.split()[0]}); "
                          "meshdock needs nothing else for it") from e


def to_cupy(mesh, float32: bool = False, int32: bool = False, pinned: bool = True,
            stream=None) -> DevicePayload:
    """The payload on the current CUDA device as CuPy arrays, one host->device transfer per
    array. pinned=True stages each array through page-locked memory (asynchronous copies);
    with a caller's `stream` the copies are queued on it and the staging buffers ride in
    `refs` until the caller synchronises; without one the function returns after they land."""
    cp = _cupy()
    host = _build(mesh, float32, int32, False)
    s = stream if stream is not None else cp.cuda.Stream(non_blocking=True)
    refs: List[Any] = []

    def move(name, t):
        a = np.from_dlpack(t)
        with s:
            # Allocated on `s` too: CuPy's pool hands a block back per stream, so one allocated
            # on another stream could still be in use there when the copy on `s` writes it.
            out = cp.empty(a.shape, dtype=a.dtype)
            if pinned:
                staging = cp.cuda.alloc_pinned_memory(max(a.nbytes, 1))
                view = np.frombuffer(staging, a.dtype, a.size).reshape(a.shape)
                view[...] = a
                out.set(view, stream=s)
                refs.append(staging)
            else:
                out.set(a, stream=s)
        return out

    dev = cp.cuda.Device().id
    out = host.map(move, device=(KDL_CUDA, dev))
    note = f"every array copied host -> cuda:{dev} (one transfer each{', pinned staging' if pinned else ''})"
    out.notes.append(note)
    if stream is None:
        s.synchronize()
    else:
        out.refs.extend(refs)
    _warn(out.notes, "to_cupy")
    return out


def _host_array(name, a, notes):
    """A numpy view of `a` when it is host memory (no copy), else one device->host copy."""
    if a is None or isinstance(a, np.ndarray):
        return a
    dev = getattr(a, "__dlpack_device__", None)
    if dev is not None:
        kind, ident = dev()
        if kind in (KDL_CPU, KDL_CUDA_HOST):
            from ._dlpack import numpy_from_exporter
            return numpy_from_exporter(a, name)
        get = getattr(a, "get", None) or (lambda: _cupy().asnumpy(a))
        if hasattr(a, "cpu") and not hasattr(a, "get"):  # torch
            get = lambda: a.detach().cpu().numpy()  # noqa: E731
        notes.append(f"{name}: copied device ({kind}, {ident}) -> host")
        return np.ascontiguousarray(get())
    return np.asarray(a)


def from_cupy(obj) -> Mesh:
    """A Mesh every writer accepts, from a DevicePayload or any object with its attributes
    (points, cells + cell_types, point_data, cell_data, field_data, regions). Each array may be
    numpy, any host DLPack exporter (adopted without a copy) or a device array (one copy back,
    noted in mesh.notes and warned)."""
    notes: List[str] = []
    types = list(getattr(obj, "cell_types", None) or [])
    cells = []
    for k, c in enumerate(obj.cells):
        if isinstance(getattr(c, "type", None), str):  # CellBlock-like (torch has a .type())
            cells.append(CellBlock(c.type, _host_array(f"cells/{k}", c.data, notes)))
        else:
            cells.append(CellBlock(types[k], _host_array(f"cells/{k}", c, notes)))
    m = Mesh(
        points=_host_array("points", obj.points, notes), cells=cells,
        point_data={n: _host_array(f"point_data/{n}", a, notes)
                    for n, a in (getattr(obj, "point_data", None) or {}).items()},
        cell_data={n: [_host_array(f"cell_data/{n}/{k}", a, notes) for k, a in enumerate(p)]
                   for n, p in (getattr(obj, "cell_data", None) or {}).items()},
        field_data={n: np.asarray(v) for n, v in (getattr(obj, "field_data", None) or {}).items()},
        regions=[Region(r.name, r.kind, r.dim, r.tag,
                        _host_array(f"regions/{r.name}", r.entries, notes))
                 for r in (getattr(obj, "regions", None) or [])],
        notes=notes)
    _warn(notes, "from_cupy")
    return m
