"""Finding and loading libmeshdock (the C ABI of meshdock/meshdock.h) with ctypes.

The library is loaded on first use, not at import: `import meshdock` works without it (the
protocol mirror and the gRPC Client are pure Python); read / write / attach then raise
LibraryNotFound naming every place looked at. Looked at, in order:

  1. $MESHDOCK_LIBRARY (a path to the library file; when set, it must load: nothing else is
     tried);
  2. <package dir>/_lib/libmeshdock.so.1 (wheels, and the build tree: the build links it there);
  3. the build tree of a source checkout: <root>/build/lib (or $MESHDOCK_BUILD_DIR/lib) when
     the package is imported from <root>/sdk/python;
  4. the system loader: ctypes.CDLL("libmeshdock.so.1") (ld.so.cache, LD_LIBRARY_PATH).
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import List, Optional, Tuple

__all__ = ["LibraryNotFound", "ABI_MAJOR", "SONAME", "candidates", "load", "loaded"]

SONAME = "libmeshdock.so.1"
ABI_MAJOR = 1  # the meshdock.h major this package speaks

_HERE = os.path.dirname(os.path.abspath(__file__))


class LibraryNotFound(ImportError):
    """libmeshdock could not be loaded (or speaks another ABI major); the message names every
    place looked at and why each failed."""


def candidates() -> List[Tuple[str, str]]:
    """(where, path-or-name) in lookup order."""
    out = []
    env = os.environ.get("MESHDOCK_LIBRARY")
    if env:
        out.append(("$MESHDOCK_LIBRARY", env))
    out.append(("package", os.path.join(_HERE, "_lib", SONAME)))
    root = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
    if os.path.basename(os.path.dirname(_HERE)) == "python" and \
            os.path.isdir(os.path.join(root, "sdk", "cpp")):
        build = os.environ.get("MESHDOCK_BUILD_DIR", os.path.join(root, "build"))
        out.append(("build tree", os.path.join(build, "lib", SONAME)))
    out.append(("system loader", SONAME))
    return out


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_error: Optional[LibraryNotFound] = None


def _open(path: str) -> ctypes.CDLL:
    return ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)


def load() -> ctypes.CDLL:
    """The loaded library (loads it the first time); raises LibraryNotFound."""
    global _lib, _error
    lib = _lib
    if lib is not None:
        return lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for where, path in candidates():
            why = None
            if where != "system loader" and not os.path.exists(path):
                why = "no such file"
            else:
                try:
                    lib = _open(path)
                except OSError as e:
                    why = str(e)
            if why is not None and where == "$MESHDOCK_LIBRARY":
                # Named on purpose: another library found instead would be a silent swap.
                _error = LibraryNotFound(
                    f"meshdock: $MESHDOCK_LIBRARY names {path}, which cannot be loaded "
                    f"({why}); point it at libmeshdock.so.1, or unset it to use the package's")
                raise _error
            if why is not None:
                tried.append(f"{where}: {path} ({why})")
                continue
            _check_version(lib, f"{where}: {path}")
            _lib = lib
            return lib
        _error = LibraryNotFound(
            "meshdock: libmeshdock (the C library under the Python package) was not found; "
            "looked at " + "; ".join(tried) +
            ". Install the meshdock wheel, or point $MESHDOCK_LIBRARY at libmeshdock.so.1")
        raise _error


def loaded() -> bool:
    """Whether the library is loaded (never loads it)."""
    return _lib is not None


def _check_version(lib: ctypes.CDLL, where: str) -> None:
    try:
        fn = lib.meshdock_abi_version
    except AttributeError:
        raise LibraryNotFound(f"meshdock: {where} has no meshdock_abi_version: not libmeshdock "
                              "with its C ABI (a build older than this package?)") from None
    fn.restype = ctypes.c_uint32
    fn.argtypes = []
    v = fn()
    major, minor = v >> 16, v & 0xFFFF
    if major != ABI_MAJOR:
        raise LibraryNotFound(f"meshdock: {where} speaks C ABI {major}.{minor}, this package "
                              f"needs {ABI_MAJOR}.x: install matching versions")
