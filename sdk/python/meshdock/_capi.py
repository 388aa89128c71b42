"""libmeshdock's C ABI (meshdock/meshdock.h) through ctypes: prototypes, structs, errors.

`api()` loads the library on first use (see _lib) and sets every prototype once. Two views of
the same library: calls that may block or do real work (attach, wait, read, write, payload
build, device probe) go through a CDLL, which releases the GIL for their duration; the short
non-blocking ones (accessors, making a DLPack tensor) go through a PyDLL, which keeps the GIL:
cheaper than dropping and retaking it, and it makes the shared out-parameter cells below safe.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, byref, c_char_p, c_double, c_int, c_int32,
                    c_int64, c_size_t, c_uint32, c_uint64, c_void_p)
from typing import List, Optional

from . import _lib
from ._dlpack import DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor

__all__ = ["api", "check", "ArrayInfo", "BlockInfo", "RegionInfo", "AttachOptions",
           "WriteOptions", "PayloadOptions", "Handle", "strings", "take_string", "INTERRUPT",
           "RELEASE", "Interrupt"]

# enum meshdock_status
OK = 0
ERR_SDK, ERR_PRODUCER_GONE, ERR_ATTACH_TIMEOUT, ERR_INTERRUPTED = 1, 2, 3, 4
ERR_UNTRUSTED_SEGMENT, ERR_SEGMENT_ACCESS_DENIED, ERR_PROTOCOL, ERR_MESH = 5, 6, 7, 8
ERR_READ, ERR_WRITE, ERR_PAYLOAD, ERR_INVALID_ARGUMENT = 9, 10, 11, 12
ERR_NOT_FOUND, ERR_OOM, ERR_UNSUPPORTED, ERR_INTERNAL = 13, 14, 15, 16
# ABI 1.3: the daemon's refusals as libmeshdock_producer returns them (never from these calls)
ERR_UNAVAILABLE, ERR_PERMISSION_DENIED, ERR_RESOURCE_EXHAUSTED, ERR_REFUSED = 17, 18, 19, 20

# enum meshdock_role
ROLE_POINTS, ROLE_CELLS, ROLE_OFFSETS, ROLE_FACE_OFFSETS, ROLE_BLOCK_BASES = 0, 1, 2, 3, 4
ROLE_POINT_DATA, ROLE_CELL_DATA, ROLE_FIELD_DATA, ROLE_REGION, ROLE_TENSOR = 5, 6, 7, 8, 9

# enum meshdock_payload_list
PAYLOAD_NOTES, PAYLOAD_DERIVED, PAYLOAD_DROPPED, PAYLOAD_SHARED = 0, 1, 2, 3


class ArrayInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("role", c_int32),
                ("key", c_char_p), ("block", c_int32), ("data", c_void_p), ("device", DLDevice),
                ("dtype", DLDataType), ("ndim", c_int32), ("shape", POINTER(c_int64)),
                ("strides", POINTER(c_int64)), ("nbytes", c_uint64)]


class BlockInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("type", c_char_p), ("num_cells", c_int64),
                ("connectivity", c_int64), ("offsets", c_int64), ("face_offsets", c_int64)]


class RegionInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("kind", c_char_p),
                ("dim", c_int32), ("tag", c_int64), ("entries", c_int64)]


INTERRUPT = CFUNCTYPE(c_int, c_void_p)
RELEASE = CFUNCTYPE(None, c_void_p)


class AttachOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("prefix", c_char_p), ("timeout_ms", c_int64),
                ("producer_timeout_ms", c_int64), ("reattach", c_int), ("has_owner_uid", c_int),
                ("owner_uid", c_uint32), ("interrupt", INTERRUPT), ("interrupt_user", c_void_p)]


class WriteOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("format", c_char_p), ("encoding", c_char_p),
                ("zlib_level", c_int)]


class PayloadOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("float32", c_int), ("int32", c_int),
                ("zero_copy_only", c_int)]


_P = c_void_p  # every opaque handle
_PP = POINTER(c_void_p)
_DLT = POINTER(DLTensor)

# name: (restype, argtypes, blocking)
_PROTOTYPES = {
    "meshdock_abi_version": (c_uint32, [], False),
    "meshdock_last_error": (c_char_p, [], False),
    "meshdock_free": (None, [c_void_p], False),
    "meshdock_strings_count": (c_size_t, [_P], False),
    "meshdock_strings_get": (c_char_p, [_P, c_size_t], False),
    "meshdock_strings_release": (None, [_P], False),
    # attach
    "meshdock_attach_options_init": (None, [POINTER(AttachOptions)], False),
    "meshdock_slot_attach": (c_int, [c_char_p, POINTER(AttachOptions), _PP], True),
    "meshdock_slot_wait": (c_int, [_P, c_int64, _PP], True),
    "meshdock_slot_latest": (c_int, [_P, c_int64, _PP], True),
    "meshdock_slot_check_producer": (c_int, [_P], False),
    "meshdock_slot_release": (None, [_P], False),
    "meshdock_slot_name": (c_char_p, [_P], False),
    "meshdock_slot_write_idx": (c_uint32, [_P], False),
    "meshdock_slot_num_slots": (c_uint32, [_P], False),
    "meshdock_slot_device_type": (c_int32, [_P], False),
    "meshdock_slot_publish_time": (c_double, [_P], False),
    "meshdock_slot_reattaches": (c_uint32, [_P], False),
    "meshdock_frame_release": (None, [_P], False),
    "meshdock_frame_number": (c_uint64, [_P], False),
    "meshdock_frame_slot_index": (c_uint32, [_P], False),
    "meshdock_frame_device": (DLDevice, [_P], False),
    "meshdock_frame_manifest_json": (c_char_p, [_P], False),
    "meshdock_frame_array_count": (c_size_t, [_P], False),
    "meshdock_frame_array": (c_int, [_P, c_size_t, POINTER(ArrayInfo)], False),
    "meshdock_frame_array_dlpack": (c_int, [_P, c_size_t, _PP], False),
    "meshdock_frame_array_dlpack_legacy": (c_int, [_P, c_size_t, _PP], False),
    "meshdock_frame_order_after_upload": (c_int, [_P, ctypes.c_size_t], True),
    # meshes
    "meshdock_mesh_read": (c_int, [c_char_p, c_char_p, _PP], True),
    "meshdock_mesh_new": (c_int, [_PP], False),
    "meshdock_mesh_release": (None, [_P], False),
    "meshdock_mesh_array_count": (c_size_t, [_P], False),
    "meshdock_mesh_array": (c_int, [_P, c_size_t, POINTER(ArrayInfo)], False),
    "meshdock_mesh_array_dlpack": (c_int, [_P, c_size_t, _PP], False),
    "meshdock_mesh_array_dlpack_legacy": (c_int, [_P, c_size_t, _PP], False),
    "meshdock_mesh_block_count": (c_size_t, [_P], False),
    "meshdock_mesh_block": (c_int, [_P, c_size_t, POINTER(BlockInfo)], False),
    "meshdock_mesh_region_count": (c_size_t, [_P], False),
    "meshdock_mesh_region": (c_int, [_P, c_size_t, POINTER(RegionInfo)], False),
    "meshdock_mesh_notes": (_P, [_P], False),
    "meshdock_mesh_set_points": (c_int, [_P, _DLT, RELEASE, c_void_p], False),
    "meshdock_mesh_add_cell_block": (c_int, [_P, c_char_p, _DLT, _DLT, _DLT, RELEASE, c_void_p],
                                     False),
    "meshdock_mesh_set_point_data": (c_int, [_P, c_char_p, _DLT, RELEASE, c_void_p], False),
    "meshdock_mesh_add_cell_data": (c_int, [_P, c_char_p, _DLT, RELEASE, c_void_p], False),
    "meshdock_mesh_set_field_data": (c_int, [_P, c_char_p, _DLT, RELEASE, c_void_p], False),
    "meshdock_mesh_add_region": (c_int, [_P, c_char_p, c_char_p, c_int32, c_int64, _DLT, RELEASE,
                                         c_void_p], False),
    "meshdock_write_options_init": (None, [POINTER(WriteOptions)], False),
    "meshdock_mesh_write": (c_int, [_P, c_char_p, POINTER(WriteOptions), _PP], True),
    "meshdock_release_host_cache": (c_int, [POINTER(c_uint64)], True),
    # payloads
    "meshdock_payload_options_init": (None, [POINTER(PayloadOptions)], False),
    "meshdock_payload_build": (c_int, [_P, POINTER(PayloadOptions), _PP], True),
    "meshdock_payload_release": (None, [_P], False),
    "meshdock_payload_device": (DLDevice, [_P], False),
    "meshdock_payload_array_count": (c_size_t, [_P], False),
    "meshdock_payload_array": (c_int, [_P, c_size_t, POINTER(ArrayInfo)], False),
    "meshdock_payload_array_dlpack": (c_int, [_P, c_size_t, _PP], False),
    "meshdock_payload_array_dlpack_legacy": (c_int, [_P, c_size_t, _PP], False),
    "meshdock_payload_block_count": (c_size_t, [_P], False),
    "meshdock_payload_block": (c_int, [_P, c_size_t, POINTER(BlockInfo)], False),
    "meshdock_payload_region_count": (c_size_t, [_P], False),
    "meshdock_payload_region": (c_int, [_P, c_size_t, POINTER(RegionInfo)], False),
    "meshdock_payload_list": (_P, [_P, c_int], False),
    # producer sources (ABI 1.2)
    "meshdock_source_create": (c_int, [c_uint64, c_char_p, c_char_p, _PP], True),
    "meshdock_source_data": (c_void_p, [_P], False),
    "meshdock_source_size": (c_uint64, [_P], False),
    "meshdock_source_name": (c_char_p, [_P], False),
    "meshdock_source_release": (None, [_P], False),
    "meshdock_source_sweep": (c_int, [c_char_p, c_double, POINTER(c_uint64)], True),
    # devices and protocol cross-checks
    "meshdock_probe_devices": (c_int, [_PP], True),
    "meshdock_debug_validate_control_block": (c_int, [c_char_p, c_size_t, _PP], False),
    "meshdock_debug_validate_catalog": (c_int, [c_char_p, c_size_t, _PP], False),
    "meshdock_debug_decode_manifest": (c_int, [c_char_p, c_size_t, c_uint64, _PP], False),
    "meshdock_debug_control_block_size": (c_int, [c_uint32, POINTER(c_uint64)], False),
    "meshdock_debug_validate_name": (c_int, [c_char_p, c_size_t], False),
    "meshdock_debug_data_object_name": (c_int, [c_char_p, c_size_t, c_char_p, c_size_t, c_uint32,
                                                c_uint64, _PP], False),
    "meshdock_debug_control_magic": (c_uint32, [], False),
    "meshdock_debug_catalog_layout_version": (c_uint32, [], False),
}


class _Api:
    """The library's functions as attributes, without the meshdock_ prefix, each bound (its
    restype and argtypes set) at its first use: binding all ~90 took 0.4-0.6 ms, a quarter of
    a fresh consumer's attach(), which uses a dozen."""

    def __init__(self, lib, fast):
        self._lib, self._fast = lib, fast

    def __getattr__(self, attr):  # only for names not bound yet
        name = "meshdock_" + attr
        proto = _PROTOTYPES.get(name)
        if proto is None or attr.startswith("_"):
            raise AttributeError(attr)
        restype, argtypes, blocking = proto
        try:
            fn = getattr(self._lib if blocking else self._fast, name)
        except AttributeError:
            if name.startswith("meshdock_source_"):  # ABI 1.2: publishing via gRPC only
                raise
            raise _lib.LibraryNotFound(f"meshdock: {self._lib._name} lacks {name} (a libmeshdock "
                                       "older than this package)") from None
        fn.restype = restype
        fn.argtypes = argtypes
        setattr(self, attr, fn)  # later uses find it without __getattr__
        return fn


_api: Optional[_Api] = None
_api_lock = threading.Lock()


def api() -> _Api:
    """The bound functions (loads the library the first time; raises LibraryNotFound)."""
    a = _api
    if a is not None:
        return a
    return _bind()


def _bind() -> _Api:
    global _api
    with _api_lock:
        if _api is not None:
            return _api
        lib = _lib.load()
        fast = ctypes.PyDLL(lib._name, mode=ctypes.RTLD_LOCAL, handle=lib._handle)
        a = _Api(lib, fast)
        a.last_status = None
        # The hot path (a DLPack tensor per __dlpack__ call): the same functions without
        # argtypes, called with ready ctypes objects (Handle.c, index_arg()), which skips the
        # per-argument conversions: about a third of the call's cost.
        raw = ctypes.PyDLL(lib._name, mode=ctypes.RTLD_LOCAL, handle=lib._handle)
        for kind in ("frame", "mesh", "payload"):
            for suffix in ("", "_legacy"):
                name = f"meshdock_{kind}_array_dlpack{suffix}"
                try:
                    fn = getattr(raw, name)
                except AttributeError:
                    continue
                fn.restype = c_int
                setattr(a, "raw_" + name[len("meshdock_"):], fn)
        _use_c_capsules(lib, a, raw)
        _api = a
        return a


class CapsuleError(Exception):
    """Raised inside libmeshdock's capsule makers when a tensor cannot be made; callers turn it
    into the exception of meshdock_last_status() (error())."""


def _use_c_capsules(lib, a: _Api, raw) -> None:
    """ABI 1.1 may make and destroy DLPack capsules in C, given the CPython functions it needs
    (libmeshdock never links Python): one foreign call per __dlpack__ and no ctypes callback
    when a capsule dies (ABI-REQUESTS R11). Without it, _dlpack makes them through
    ctypes.pythonapi with a ctypes-callback destructor; both behave the same."""
    try:
        set_api = lib.meshdock_dlpack_capsule_api
        destructor = lib.meshdock_dlpack_capsule_destructor
    except AttributeError:
        return
    from . import _dlpack

    py = ctypes.pythonapi
    addr = ctypes.cast
    set_api.restype = None
    set_api.argtypes = [c_void_p, c_void_p, c_void_p]
    set_api(addr(py.PyCapsule_IsValid, c_void_p).value,
            addr(py.PyCapsule_GetPointer, c_void_p).value,
            addr(py.PyCapsule_New, c_void_p).value)
    _dlpack.use_destructor(addr(destructor, c_void_p).value)
    try:
        last_status = lib.meshdock_last_status
        errors = lib.meshdock_dlpack_capsule_errors
        makers = {kind: getattr(raw, f"meshdock_{kind}_array_capsule")
                  for kind in ("frame", "payload", "mesh")}
    except AttributeError:
        return
    last_status.restype = c_int
    last_status.argtypes = []
    a.last_status = last_status
    # A maker that fails returns NULL with CapsuleError set (ctypes crashes on a NULL object
    # result without an error on CPython <= 3.11); the caller maps it by meshdock_last_status.
    errors.restype = None
    errors.argtypes = [c_void_p, ctypes.py_object]
    errors(addr(py.PyErr_SetString, c_void_p).value, _dlpack.keep_forever(CapsuleError))
    for kind, fn in makers.items():
        fn.restype = ctypes.py_object  # a new reference (ctypes takes it over)
        setattr(a, f"raw_{kind}_array_capsule", fn)


# ---- errors ----------------------------------------------------------------------------------
def _error_class(status: int):
    from .attach import (AttachTimeout, ProducerGone, SdkError, SegmentAccessDenied,
                         UntrustedSegment)
    from .mesh import MeshError, ReadError, WriteError
    from .payload import PayloadError
    from .protocol import ProtocolError

    return {ERR_SDK: SdkError, ERR_PRODUCER_GONE: ProducerGone,
            ERR_ATTACH_TIMEOUT: AttachTimeout, ERR_INTERRUPTED: KeyboardInterrupt,
            ERR_UNTRUSTED_SEGMENT: UntrustedSegment,
            ERR_SEGMENT_ACCESS_DENIED: SegmentAccessDenied, ERR_PROTOCOL: ProtocolError,
            ERR_MESH: MeshError, ERR_READ: ReadError, ERR_WRITE: WriteError,
            ERR_PAYLOAD: PayloadError, ERR_INVALID_ARGUMENT: ValueError,
            ERR_NOT_FOUND: KeyError, ERR_OOM: MemoryError, ERR_UNSUPPORTED: NotImplementedError,
            }.get(status, RuntimeError)


def error(status: int) -> BaseException:
    """The exception for a failed call's status (its message is meshdock_last_error())."""
    msg = api().last_error().decode("utf-8", "replace")
    cls = _error_class(status)
    if cls is KeyError:
        return LookupError(msg)
    return cls(msg)


def check(status: int, hook: "Optional[Interrupt]" = None) -> None:
    """Raises the exception of a failed call; an interrupted one raises what the signal
    handler raised (KeyboardInterrupt) when `hook` kept it."""
    if status:
        if status == ERR_INTERRUPTED and hook is not None:
            e = hook.take()
            if e is not None:
                raise e
        raise error(status)


# ---- the interrupt hook: Ctrl-C during attach / wait -----------------------------------------
# A private function object (ctypes.pythonapi's are shared with the whole process).
_check_signals = ctypes.PYFUNCTYPE(c_int)(("PyErr_CheckSignals", ctypes.pythonapi))


class Interrupt:
    """The interrupt callback of one slot (attach and its waits): ctypes calls it with the GIL
    held on the waiting thread at least every 50 ms; it runs Python's signal handlers and says
    stop (1) when one raised (SIGINT's KeyboardInterrupt), keeping that exception in `pending`
    for the caller to raise once the C call has returned.

    Why a generator: a handler runs as soon as Python code runs, at the first instruction of a
    function called from C (before any `try` in it could catch), and an exception escaping a
    ctypes callback is only printed. A generator resumed by its C-level send() restarts inside
    its `try`, so whatever the handler raises is caught there. `fn` must outlive the slot."""

    __slots__ = ("pending", "fn", "_gen", "__weakref__")

    def __init__(self):
        self.pending: Optional[BaseException] = None
        gen = self._poll()
        next(gen)
        self._gen = gen
        self.fn = INTERRUPT(gen.send)

    def _poll(self):
        stop = 0
        while True:
            try:
                yield stop
                stop = 0
                _check_signals()
            except GeneratorExit:
                return
            except BaseException as e:  # noqa: B036 - KeyboardInterrupt is the point
                self.pending = e
                stop = 1

    def take(self) -> Optional[BaseException]:
        e, self.pending = self.pending, None
        return e


# ---- handles ---------------------------------------------------------------------------------
class Handle:
    """Owns one opaque handle; releases it when the last Python reference goes."""

    __slots__ = ("ptr", "c", "_release", "_keep", "__weakref__")

    def __init__(self, ptr: int, release, keep=None):
        self.ptr = ptr
        self.c = c_void_p(ptr)  # the argument form, for functions called without argtypes
        self._release = release
        self._keep = keep  # what must outlive the handle (a slot's interrupt hook)

    def __del__(self):
        p, self.ptr = self.ptr, None
        if p:
            try:
                self._release(p)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


_INDEX = [ctypes.c_size_t(i) for i in range(256)]


def index_arg(i: int):
    """c_size_t(i), shared for small i (passed by value: never written)."""
    return _INDEX[i] if i < 256 else ctypes.c_size_t(i)


def take_string(p: c_void_p) -> str:
    """An OWNED char* from an out-parameter, decoded and freed."""
    if not p.value:
        return ""
    try:
        return ctypes.string_at(p.value).decode("utf-8", "replace")
    finally:
        api().free(p)


def strings(lst) -> List[str]:
    """A meshdock_strings* (borrowed) as a list of str."""
    a = api()
    if not lst:
        return []
    return [a.strings_get(lst, k).decode("utf-8", "replace")
            for k in range(a.strings_count(lst))]


def out_ptr() -> c_void_p:
    return c_void_p()


def ref(x):
    return byref(x)


def owned_json(fn, *args):
    """Calls fn(*args, char** out) and returns the owned text."""
    out = c_void_p()
    check(fn(*args, byref(out)))
    return take_string(out)


# Unused here but re-exported for the modules that build tensors by hand.
_ = (DLManagedTensor, DLManagedTensorVersioned)
