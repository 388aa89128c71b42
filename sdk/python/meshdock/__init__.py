"""meshdock: meshes published in GPU (or host) shared memory, adopted as DLPack tensors.

Today: ``read`` / ``write`` (C++ readers and writers; numpy views without copies), the
DevicePayload and DLPack handoff in process (``to_dlpack``, ``to_torch``, ``to_cupy``,
``from_cupy``), the shared-memory protocol (``meshdock.protocol``, a pure-Python mirror of the
C++ headers), device detection, ``attach`` (a slot meshdockd publishes, as DLPack arrays) and
``Client`` (meshdockd's gRPC control plane).
"""

from __future__ import annotations

from . import protocol
from .attach import (AttachedSlot, AttachTimeout, Frame, ProducerGone, SdkError,
                     SegmentAccessDenied, UntrustedSegment, attach)
from .client import Client, DaemonError
from .mesh import (CellBlock, Mesh, MeshError, MeshWarning, ReadError, Region, WriteError, read,
                   release_memory, write)
from .payload import (DevicePayload, PayloadError, PayloadWarning, cupy_wheel, from_cupy,
                      has_cuda_device, has_cupy, to_cupy, to_dlpack, to_torch)
from .protocol import ProtocolError

__version__ = "0.1.0"

try:
    from . import _meshdock  # the compiled core; absent when only the pure-Python files exist
except ImportError as _e:  # pragma: no cover - exercised only in a source-only checkout
    _meshdock = None
    _import_error = _e
else:
    _import_error = None


__all__ = ["protocol", "ProtocolError", "read", "write", "release_memory", "Mesh", "CellBlock",
           "Region", "MeshError", "ReadError", "WriteError", "MeshWarning", "DevicePayload", "PayloadError",
           "PayloadWarning", "to_dlpack", "to_torch", "to_cupy", "from_cupy", "cupy_wheel",
           "has_cuda_device", "has_cupy", "attach", "AttachedSlot", "Frame", "SdkError",
           "ProducerGone", "AttachTimeout", "UntrustedSegment", "SegmentAccessDenied", "Client", "DaemonError", "__version__"]
