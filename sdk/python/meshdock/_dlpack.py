"""DLPack in pure Python: the C structs, PyCapsules made and read through ctypes.pythonapi,
and numpy views of DLPack tensors without a copy.

Capsule protocol (DLPack / Python array API): a producer returns a capsule named "dltensor"
(DLManagedTensor*) or, when the consumer asked with max_version >= (1, 0), "dltensor_versioned"
(DLManagedTensorVersioned*). A consumer that takes the tensor renames the capsule to
"used_dltensor" / "used_dltensor_versioned" and calls the deleter itself later; a capsule that
dies unconsumed must call the deleter. The destructor below does exactly that; it is a ctypes
callback whose object is never freed (see _keep_forever), so a capsule collected late in
interpreter shutdown never calls into freed memory.
"""

from __future__ import annotations

import ctypes
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_uint8,
                    c_uint16, c_uint32, c_uint64, c_void_p, py_object)

__all__ = ["DLDevice", "DLDataType", "DLTensor", "DLManagedTensor", "DLManagedTensorVersioned",
           "capsule", "capsule_new", "CapsuleOwner", "numpy_view", "numpy_from_exporter",
           "DESTRUCTOR", "LEGACY_NAME", "VERSIONED_NAME", "capsule_new_raw", "DESTRUCTOR_ARG",
           "LEGACY_NAME_ARG", "VERSIONED_NAME_ARG", "use_destructor", "numpy_dtype", "dtype_name",
           "KDL_CPU", "KDL_CUDA", "KDL_CUDA_HOST", "FLAG_READ_ONLY", "keep_forever"]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST = 1, 2, 3
FLAG_READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
FLAG_IS_COPIED = 2

LEGACY = b"dltensor"
VERSIONED = b"dltensor_versioned"


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32),
                ("dtype", DLDataType), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DELETER = CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p),
                            ("deleter", DELETER)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    pass


DELETER_VERSIONED = CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p),
                                     ("deleter", DELETER_VERSIONED), ("flags", c_uint64),
                                     ("dl_tensor", DLTensor)]

# ---- the CPython capsule API, through ctypes.pythonapi (the GIL is held: PYFUNCTYPE) -------
# Private function objects made from prototypes: ctypes.pythonapi.X is one object shared with
# every other user of ctypes in the process, who may set its argtypes to something else.
_api = ctypes.pythonapi


def _py(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, _api))


_capsule_get = _py("PyCapsule_GetPointer", c_void_p, c_void_p, c_void_p)
_capsule_get_py = _py("PyCapsule_GetPointer", c_void_p, py_object, c_char_p)
_capsule_is_valid_py = _py("PyCapsule_IsValid", c_int, py_object, c_char_p)
_capsule_name = _py("PyCapsule_GetName", c_void_p, c_void_p)
_incref = _py("Py_IncRef", None, py_object)
capsule_new = _py("PyCapsule_New", py_object, c_void_p, c_void_p, c_void_p)

# Deleters are called through this (a C function pointer read from the struct).
_call_deleter = CFUNCTYPE(None, c_void_p)


def keep_forever(obj):
    """One reference never given back: the object (a ctypes thunk, a capsule name) stays valid
    even while modules are torn down at exit, when unconsumed capsules may still be collected."""
    _incref(obj)
    return obj


# Capsules keep a pointer to their name (never a copy): these buffers live as long as the
# process. The destructor tells an unconsumed capsule by the very pointer it was made with (a
# consumer renames with its own string), which costs one call instead of two string compares.
_LEGACY_NAME = keep_forever(ctypes.create_string_buffer(LEGACY))
_VERSIONED_NAME = keep_forever(ctypes.create_string_buffer(VERSIONED))
LEGACY_NAME = ctypes.addressof(_LEGACY_NAME)
VERSIONED_NAME = ctypes.addressof(_VERSIONED_NAME)

# Offsets of the deleter in each struct (the destructor reads it from raw memory).
_DELETER_AT_LEGACY = DLManagedTensor.deleter.offset
_DELETER_AT_VERSIONED = DLManagedTensorVersioned.deleter.offset


@CFUNCTYPE(None, c_void_p)
def _destructor(cap):
    # Runs with the GIL held (ctypes takes it). A consumed capsule was renamed: nothing to do.
    name = _capsule_name(cap)
    if name == LEGACY_NAME:
        at = _DELETER_AT_LEGACY
    elif name == VERSIONED_NAME:
        at = _DELETER_AT_VERSIONED
    else:
        return
    p = _capsule_get(cap, name)
    fn = c_void_p.from_address(p + at).value if p else None
    if fn:
        _call_deleter(fn)(p)


keep_forever(_destructor)
DESTRUCTOR = ctypes.cast(_destructor, c_void_p).value


# The hot path's form (Tensor.__dlpack__): no argtypes, so ctypes passes these ready argument
# objects as they are (c_void_p by value) instead of converting Python ints on every call.
# DESTRUCTOR_ARG is updated in place when libmeshdock offers a destructor written in C.
capsule_new_raw = ctypes.PyDLL(None, handle=_api._handle).PyCapsule_New
capsule_new_raw.restype = py_object
LEGACY_NAME_ARG = c_void_p(LEGACY_NAME)
VERSIONED_NAME_ARG = c_void_p(VERSIONED_NAME)
DESTRUCTOR_ARG = c_void_p(DESTRUCTOR)


def use_destructor(addr: int) -> None:
    """Makes every capsule made from now on use the C function at `addr` as its destructor."""
    global DESTRUCTOR
    DESTRUCTOR = addr
    DESTRUCTOR_ARG.value = addr


def capsule(ptr: int, versioned: bool):
    """A capsule owning the managed tensor at `ptr` (DLManagedTensorVersioned* when
    `versioned`, else DLManagedTensor*); its deleter runs unless a consumer takes it."""
    return capsule_new(ptr, VERSIONED_NAME if versioned else LEGACY_NAME, DESTRUCTOR)


# ---- numpy views -----------------------------------------------------------------------------
_NUMPY_KIND = {0: "i", 1: "u", 2: "f", 6: "b", 5: "c"}


def numpy_dtype(code: int, bits: int, lanes: int = 1) -> str:
    """numpy's type string for a DLPack dtype; TypeError when numpy has none (bfloat16, lanes)."""
    kind = _NUMPY_KIND.get(code)
    if kind is None or kind == "c" or lanes != 1 or (code == 2 and bits < 16) or bits % 8:
        raise TypeError(f"no numpy dtype for DLPack (code {code}, {bits} bits)")
    return ("|" if kind == "b" or bits == 8 else "<") + kind + str(bits // 8)


def dtype_name(code: int, bits: int) -> str:
    """The dtype as numpy / torch name it: "float32", "int64", "bool", "bfloat16"."""
    if code == 4:
        return "bfloat16"
    if code == 6:
        return "bool"
    return ("int", "uint", "float")[code] + str(bits) if code in (0, 1, 2) else f"code{code}_{bits}"


class Buffer:
    """The base of a numpy view of library memory: describes it to numpy and holds what keeps
    it alive (`owner`: the DLPack capsule whose destructor runs the tensor's deleter)."""

    __slots__ = ("__array_interface__", "owner", "nbytes")

    def __init__(self, interface, owner, nbytes):
        self.__array_interface__ = interface
        self.owner = owner
        self.nbytes = nbytes


def numpy_view(t: DLTensor, owner, readonly: bool = False):
    """A numpy array over DLTensor `t` (host memory), no copy; the array keeps `owner` alive."""
    import numpy as np

    dt = t.dtype
    typestr = numpy_dtype(dt.code, dt.bits, dt.lanes)
    ndim = t.ndim
    shape = tuple(t.shape[k] for k in range(ndim))
    strides = None
    if t.strides and ndim:
        item = dt.bits // 8
        strides = tuple(t.strides[k] * item for k in range(ndim))
    data = (t.data or 0) + t.byte_offset
    if data == 0:
        # numpy refuses a NULL pointer even for an empty array: any aligned non-zero address
        # works as nothing is read.
        if any(shape) and all(shape):
            raise ValueError("DLPack tensor has a NULL data pointer")
        data = 64
    iface = {"version": 3, "shape": shape, "typestr": typestr, "data": (data, readonly),
             "strides": strides}
    count = 1
    for d in shape:
        count *= d
    return np.asarray(Buffer(iface, owner, count * (dt.bits // 8)))


class CapsuleOwner:
    """Keeps an unconsumed capsule alive: its destructor runs the deleter when the last numpy
    view of the tensor is gone."""

    __slots__ = ("capsule",)

    def __init__(self, cap):
        self.capsule = cap


def numpy_from_exporter(obj, name: str):
    """Adopts a host object speaking DLPack (legacy capsule) as a numpy array without a copy.
    The capsule is left unconsumed and held by the array: its own destructor (the exporter's)
    runs the tensor's deleter when the array goes."""
    cap = obj.__dlpack__()
    if not _capsule_is_valid_py(cap, LEGACY):
        raise ValueError(f"{name}: __dlpack__ did not return a 'dltensor' capsule")
    p = _capsule_get_py(cap, LEGACY)
    mt = DLManagedTensor.from_address(p)
    t = mt.dl_tensor
    if t.device.device_type not in (KDL_CPU, KDL_CUDA_HOST):
        raise ValueError(f"{name}: device ({t.device.device_type}, {t.device.device_id}) is not "
                         "host memory")
    return numpy_view(t, CapsuleOwner(cap))
