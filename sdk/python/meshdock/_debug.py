"""libmeshdock's C++ protocol validators and device probe, for tests and debugging.

The tests check that the pure-Python mirror (meshdock.protocol) and the C++ headers accept and
reject exactly the same bytes with the same messages; these call the C++ side through the C
ABI's meshdock_debug_* functions. Failures raise meshdock.protocol.ProtocolError.
"""

from __future__ import annotations

import ctypes
import json

from . import _capi
from .payload import probe_devices
from .protocol import CATALOG_LAYOUT_VERSION, CONTROL_MAGIC

__all__ = ["validate_control_block", "validate_catalog", "decode_manifest", "control_block_size",
           "validate_name", "data_object_name", "probe_devices", "CONTROL_MAGIC",
           "CATALOG_LAYOUT_VERSION"]


def __getattr__(name):
    if name == "CONTROL_MAGIC":
        return _capi.api().debug_control_magic()
    if name == "CATALOG_LAYOUT_VERSION":
        return _capi.api().debug_catalog_layout_version()
    raise AttributeError(name)


def _json(fn, *args) -> dict:
    return json.loads(_capi.owned_json(fn, *args))


def validate_control_block(data: bytes) -> dict:
    """The C++ validator's view of a control block; handles as bytes."""
    data = bytes(data)
    d = _json(_capi.api().debug_validate_control_block, data, len(data))
    d["mem_handles"] = [bytes.fromhex(h) for h in d["mem_handles"]]
    d["event_handles"] = [bytes.fromhex(h) for h in d["event_handles"]]
    return d


def validate_catalog(data: bytes) -> dict:
    """The C++ validator's view of a catalog segment; socket and manifests as bytes."""
    data = bytes(data)
    d = _json(_capi.api().debug_validate_catalog, data, len(data))
    d["socket"] = bytes.fromhex(d["socket"])
    d["device_uuid"] = bytes.fromhex(d["device_uuid"])
    for page in d["pages"]:
        page["manifest"] = bytes.fromhex(page["manifest"])
    return d


def decode_manifest(text: str, data_size: int) -> str:
    """Checks a manifest against a slot buffer of `data_size` bytes; returns it re-encoded by
    the C++ encoder."""
    b = text.encode("utf-8", "surrogatepass")
    return _capi.owned_json(_capi.api().debug_decode_manifest, b, len(b), data_size)


def control_block_size(num_slots: int) -> int:
    out = ctypes.c_uint64()
    _capi.check(_capi.api().debug_control_block_size(num_slots, out))
    return out.value


def validate_name(name: str) -> None:
    b = name.encode("utf-8", "surrogatepass")
    _capi.check(_capi.api().debug_validate_name(b, len(b)))


def data_object_name(prefix: str, name: str, slot: int, version: int) -> str:
    p, n = prefix.encode(), name.encode()
    return _capi.owned_json(_capi.api().debug_data_object_name, p, len(p), n, len(n), slot,
                            version)
