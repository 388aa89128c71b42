"""meshdock: meshes published in GPU (or host) shared memory, adopted as DLPack tensors.

Today: ``read`` / ``write`` (C++ readers and writers; numpy views without copies), the
DevicePayload and DLPack handoff in process (``to_dlpack``, ``to_torch``, ``to_cupy``,
``from_cupy``), the shared-memory protocol (``meshdock.protocol``, a pure-Python mirror of the
C++ headers), device detection, ``attach`` (a slot meshdockd publishes, as DLPack arrays) and
``Client`` (meshdockd's gRPC control plane).

The package is pure Python: everything native goes through libmeshdock's C ABI
(meshdock/meshdock.h) with ctypes, so one wheel serves every CPython >= 3.9. The library is
loaded on first use (see meshdock._lib for where it is looked for); ``import meshdock``, the
protocol mirror and ``Client`` work without it, and anything that needs it raises
``LibraryNotFound`` naming every place looked at.
"""

from __future__ import annotations

from . import protocol, replies
from ._tensor import Tensor
from ._lib import LibraryNotFound
from .attach import (AttachedSlot, AttachTimeout, Frame, ProducerGone, SdkError,
                     SegmentAccessDenied, UntrustedSegment, attach, resolve_prefix)
from .client import Client, DaemonError, ForkError
from .mesh import (CellBlock, Mesh, MeshError, MeshFileNotFoundError, MeshPermissionError,
                   MeshWarning, ReadError, Region, WriteError, read, release_memory, write)
from .meshio_compat import from_meshio, to_meshio
from .payload import (DevicePayload, PayloadError, PayloadWarning, cupy_wheel, from_cupy,
                      has_cuda_device, has_cupy, to_cupy, to_dlpack, to_torch)
from .protocol import ProtocolError

__version__ = "0.1.0"

# The __future__ import binds a feature object here, which dir(meshdock) listed among the API
# (every module keeps the import: test_pure_python checks it).
del annotations

__all__ = ["protocol", "ProtocolError", "read", "write", "release_memory", "Mesh", "CellBlock",
           "Region", "MeshError", "ReadError", "MeshFileNotFoundError", "MeshPermissionError",
           "to_meshio", "from_meshio", "WriteError", "MeshWarning", "DevicePayload", "PayloadError",
           "PayloadWarning", "to_dlpack", "to_torch", "to_cupy", "from_cupy", "cupy_wheel",
           "has_cuda_device", "has_cupy", "attach", "resolve_prefix", "AttachedSlot", "Frame",
           "SdkError", "ProducerGone", "AttachTimeout", "UntrustedSegment", "SegmentAccessDenied",
           "Client", "DaemonError", "ForkError", "LibraryNotFound", "Tensor", "replies",
           "__version__"]
