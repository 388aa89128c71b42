"""meshdock.Tensor: one array of a payload or a frame, speaking DLPack.

torch.from_dlpack / numpy.from_dlpack / cupy.from_dlpack adopt it without a copy; holding it
keeps its memory alive (the payload's buffer, or the frame and its lease). Each __dlpack__ call
asks libmeshdock for a new managed tensor (one small allocation on the C side) and wraps it in a
capsule (see _dlpack): this is the hot path of attach, kept to two foreign calls.
"""

from __future__ import annotations

from ctypes import byref, c_void_p
from typing import Optional, Tuple

from . import _capi
from ._dlpack import (DESTRUCTOR_ARG, KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, LEGACY_NAME_ARG,
                      VERSIONED_NAME_ARG, CapsuleOwner, DLManagedTensor, capsule,
                      capsule_new_raw, dtype_name, numpy_view)

__all__ = ["Tensor", "numpy_of", "DataPtr"]


class DataPtr(int):
    """Tensor.data_ptr: the address as an int that may also be called, as torch spells it
    (`t.data_ptr()`); the attribute form (`t.data_ptr == addr`, `hex(t.data_ptr)`) that meshdock
    0.1 had keeps working, since it is the same int."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)

    def __repr__(self) -> str:
        return int.__repr__(self)


def np_dtype(code: int, bits: int):
    """The numpy dtype of a DLPack (code, bits); numpy has no bfloat16 (nor exotic codes), so
    those stay the name string ("bfloat16"), which torch and the manifest use."""
    import numpy as np

    name = dtype_name(code, bits)
    try:
        return np.dtype(name)
    except TypeError:
        return name


class Tensor:
    """One payload array: speaks DLPack (torch/np/cupy .from_dlpack adopt it without a copy)
    and keeps its memory alive."""

    __slots__ = ("name", "shape", "dtype", "nbytes", "_ic", "_dev", "_owner", "_hc", "_mk",
                 "_mkl", "_info", "_ptr", "_plain", "_cap", "__weakref__")

    def __init__(self, owner: "_capi.Handle", entry, device: Tuple[int, int], make, make_legacy,
                 info, ptr: Optional[int] = None, make_capsule=None):
        # entry: (name, shape, dtype, nbytes, index as c_size_t); made once per layout. dtype is
        # a numpy dtype (a string only for what numpy lacks: "bfloat16").
        self.name, self.shape, self.dtype, self.nbytes, self._ic = entry
        self._dev = device
        self._owner = owner  # keeps the handle (frame / payload) alive
        self._hc = owner.c  # the handle as a ctypes argument, for make / make_legacy
        self._mk = make
        self._mkl = make_legacy
        self._info = info
        self._ptr = ptr
        self._plain = device[0] != KDL_CUDA  # no stream to order on __dlpack__
        self._cap = make_capsule  # libmeshdock makes the capsule itself (ABI 1.1), or None

    def __reduce__(self):
        # Memory of this process's frame or payload: another process cannot have it by pickle.
        raise TypeError(f"{self.name}: a meshdock array cannot be pickled (it is this "
                        "process's view of a frame or payload); send a copy "
                        "(np.array(a) / torch.from_dlpack(a).clone()), or attach in the "
                        "other process")

    # ---- DLPack ---------------------------------------------------------------------------
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # The hot path of attach: keep it to two foreign calls and no conversions.
        if stream is not None or dl_device is not None or copy or not self._plain:
            self._prepare(stream, dl_device, copy)
        if self._cap is not None:
            try:
                return self._cap(self._hc, self._ic,
                                 0 if max_version is None or max_version[0] < 1 else 1)
            except _capi.CapsuleError:  # the tensor was not made: its status says why
                raise _capi.error(_capi.api().last_status()) from None
        out = c_void_p()
        if max_version is None or max_version[0] < 1:
            st = self._mkl(self._hc, self._ic, byref(out))
            if st:
                raise _capi.error(st)
            return capsule_new_raw(out, LEGACY_NAME_ARG, DESTRUCTOR_ARG)
        st = self._mk(self._hc, self._ic, byref(out))
        if st:
            raise _capi.error(st)
        return capsule_new_raw(out, VERSIONED_NAME_ARG, DESTRUCTOR_ARG)

    def _prepare(self, stream, dl_device, copy):
        kind = self._dev[0]
        if dl_device is not None and tuple(dl_device) != self._dev:
            raise BufferError(f"{self.name}: lives on device {self._dev}, not {tuple(dl_device)} "
                              "(meshdock does not copy across devices in __dlpack__)")
        if copy:
            raise BufferError(f"{self.name}: copy=True is not supported; adopt it and copy")
        if kind != KDL_CUDA:
            if stream is not None:
                raise ValueError(f"{self.name}: stream must be None for a host array")
            return
        # DLPack stream semantics: None / 1 = the legacy default stream, 2 = per-thread default,
        # -1 = the consumer synchronises itself; any other value is a cudaStream_t.
        s = 1 if stream is None else int(stream)
        if s != -1:
            _capi.check(_capi.api().frame_order_after_upload(self._owner.ptr, 0 if s == 1 else s))

    def __dlpack_device__(self) -> Tuple[int, int]:
        return self._dev

    # ---- numpy and the rest ----------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if self._dev[0] not in (KDL_CPU, KDL_CUDA_HOST):
            raise TypeError(f"{self.name} is device memory; use cupy or torch")
        a = numpy_of(self._mkl, self._hc, self._ic)
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    @property
    def data_ptr(self) -> DataPtr:
        """The address of the first element, as an int that can also be called
        (`t.data_ptr()`, as torch has it; `t.data_ptr` is the same number)."""
        if self._ptr is None:
            self._ptr = self._info(self._owner.ptr, self._ic.value).data or 0
        return DataPtr(self._ptr)

    def numpy(self):
        """A numpy view of this host array (no copy; it keeps the memory, and a frame's lease,
        alive). Device memory raises TypeError: adopt it with torch or cupy."""
        return self.__array__()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (numpy's size)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self) -> str:
        dims = ", ".join(str(d) for d in self.shape) + ("," if len(self.shape) == 1 else "")
        return (f"<meshdock.Tensor {self.name} {self.dtype} ({dims}) device "
                f"({self._dev[0]}, {self._dev[1]})>")


def numpy_of(make_legacy, h, i):
    """A numpy view (no copy) of array `i` of handle `h` (host memory): the view holds the
    tensor's capsule, whose destructor runs the tensor's deleter. Works with the typed and the
    raw (no argtypes: pass Handle.c and index_arg(i)) form of make_legacy."""
    out = c_void_p()
    _capi.check(make_legacy(h, i, byref(out)))
    cap = capsule(out.value, False)
    mt = DLManagedTensor.from_address(out.value)
    return numpy_view(mt.dl_tensor, CapsuleOwner(cap))


def describe(info) -> Tuple[str, Tuple[int, ...], str, int, Tuple[int, int], int]:
    """(name, shape, dtype (numpy, or a name numpy lacks), nbytes, device, data pointer) of a
    meshdock_array_info."""
    shape = tuple(info.shape[k] for k in range(info.ndim))
    return (info.name.decode(), shape, np_dtype(info.dtype.code, info.dtype.bits),
            info.nbytes, (info.device.device_type, info.device.device_id), info.data or 0)
