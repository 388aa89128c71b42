"""meshdock: meshes published in GPU (or host) shared memory, adopted as DLPack tensors.

Today: ``meshdock.read`` / ``meshdock.write`` (C++ readers and writers; numpy views without
copies), the shared-memory
protocol (``meshdock.protocol``, a pure-Python mirror of the C++ headers) and device
detection. The DevicePayload, the daemon client and ``attach`` arrive with their issues.
"""

from __future__ import annotations

from . import protocol
from .mesh import CellBlock, Mesh, MeshError, MeshWarning, ReadError, Region, WriteError, read, write
from .protocol import ProtocolError

__version__ = "0.1.0"

try:
    from . import _meshdock  # the compiled core; absent when only the pure-Python files exist
except ImportError as _e:  # pragma: no cover - exercised only in a source-only checkout
    _meshdock = None
    _import_error = _e
else:
    _import_error = None


def has_cuda_device() -> bool:
    """True when a CUDA device answers this process. Never raises."""
    if _meshdock is None:
        return False
    try:
        return bool(_meshdock.probe_devices()["devices"])
    except Exception:
        return False


def has_cupy() -> bool:
    """True when CuPy can be imported. Never raises."""
    try:
        import cupy  # noqa: F401
    except Exception:
        return False
    return True


__all__ = ["protocol", "ProtocolError", "read", "write", "Mesh", "CellBlock", "Region", "MeshError",
           "ReadError", "WriteError", "MeshWarning", "has_cuda_device", "has_cupy", "__version__"]
