"""The package is pure Python over libmeshdock's C ABI (ctypes): it parses as Python 3.9, imports
without the library (and then says where it looked), refuses another ABI major, hands out both
DLPack capsule kinds with the right lifetimes, and runs its ctypes layer (capsules, the Ctrl-C
hook) on every other CPython found on this machine."""
import ast
import ctypes
import gc
import glob
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import conftest
import meshdock
from meshdock import _capi, _dlpack, _lib

SOURCE = conftest.ROOT / "sdk" / "python" / "meshdock"


def test_every_module_parses_as_python_3_9():
    files = sorted(SOURCE.glob("*.py"))
    assert len(files) >= 10
    for f in files:
        ast.parse(f.read_text(), filename=str(f), feature_version=(3, 9))
    # Annotations are never evaluated (PEP 604 unions, builtin generics stay text on 3.9).
    for f in files:
        src = f.read_text()
        if "->" in src or ": " in src:
            assert "from __future__ import annotations" in src, f.name


def test_the_package_ships_no_compiled_module(build_dir):
    pkg = build_dir / "python" / "meshdock"
    assert [p.name for p in pkg.rglob("*.so*")] == ["libmeshdock.so.1"]
    assert (pkg / "_lib" / "libmeshdock.so.1").exists()
    assert not (SOURCE.parent / "src").exists()


def test_import_works_without_the_library_and_names_every_place_looked(tmp_path, build_dir):
    pkg = tmp_path / "meshdock"
    shutil.copytree(build_dir / "python" / "meshdock", pkg, symlinks=True)
    shutil.rmtree(pkg / "_lib")
    code = textwrap.dedent("""
        import sys, meshdock
        assert meshdock.protocol.control_block_size(3) > 0
        c = meshdock.Client("unix:/nonexistent.sock")   # pure Python (grpc is imported lazily)
        assert meshdock.has_cuda_device() is False
        try:
            meshdock.read("x.msh")
        except meshdock.LibraryNotFound as e:
            print(e)
        else:
            sys.exit("read() worked without the library")
        try:
            meshdock.attach("x")
        except ImportError as e:
            print("attach:", type(e).__name__)
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "MESHDOCK_BUILD_DIR")}
    env.pop("MESHDOCK_LIBRARY", None)
    env.update(PYTHONPATH=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    msg = r.stdout.splitlines()[0]
    assert f"package: {pkg / '_lib' / 'libmeshdock.so.1'} (no such file)" in msg
    assert "system loader: libmeshdock.so.1 (libmeshdock.so.1: cannot open shared object" in msg
    assert r.stdout.splitlines()[1] == "attach: LibraryNotFound"


def test_a_client_without_the_library_publishes_large_arrays_by_grpc(tmp_path, build_dir):
    # md.Client needs no libmeshdock, but a publish over 256 KiB on a Unix socket (via "auto")
    # tried a shared-memory object, which does, and raised LibraryNotFound.
    from daemon_util import Daemon
    pkg = tmp_path / "pkg" / "meshdock"
    shutil.copytree(build_dir / "python" / "meshdock", pkg, symlinks=True)
    shutil.rmtree(pkg / "_lib")
    d = Daemon(tmp_path, files=["box.v41.msh"])
    try:
        d.ctl("load", str(d.root / "box.v41.msh"), "--name", "box")
        code = textwrap.dedent(f"""
            import numpy as np, meshdock
            c = meshdock.Client({d.addr!r})
            print(c.publish("box", "point_data/T", np.ones((300, 200))))  # 480 KB
            print(c.shm_unavailable.split(";")[0][:60])
            try:
                c.publish("box", "point_data/T", np.ones((300, 200)), via="shm")
            except meshdock.LibraryNotFound:
                print("shm: LibraryNotFound")
        """)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_LIBRARY_PATH", "MESHDOCK_BUILD_DIR", "MESHDOCK_LIBRARY")}
        env.update(PYTHONPATH=str(pkg.parent))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=60, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        out = r.stdout.splitlines()
        assert out[0] == "2" and "libmeshdock" in out[1] and out[2] == "shm: LibraryNotFound", out
    finally:
        d.stop()


def test_a_meshdock_library_that_does_not_load_is_an_error_not_a_fallback(tmp_path):
    # A trial: MESHDOCK_LIBRARY=/nonexistent/lib.so was ignored without a word and the
    # package's library loaded instead.
    code = ("import meshdock\ntry:\n    meshdock.read('x.msh')\n"
            "except meshdock.LibraryNotFound as e:\n    print(e)")
    for path in (tmp_path / "nope.so", tmp_path / "not-a-library.so"):
        if path.name.startswith("not"):
            path.write_text("not ELF")
        env = dict(os.environ, MESHDOCK_LIBRARY=str(path))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=60, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"meshdock: $MESHDOCK_LIBRARY names {path}, which cannot "
                                   "be loaded ("), r.stdout
        assert "unset it to use the package's" in r.stdout


def test_meshdock_library_points_at_the_library(tmp_path, build_dir):
    lib = os.path.realpath(build_dir / "python" / "meshdock" / "_lib" / "libmeshdock.so.1")
    code = "import meshdock, meshdock._lib as l; meshdock.release_memory(); print(l._lib._name)"
    env = dict(os.environ, MESHDOCK_LIBRARY=lib)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == lib


def test_another_abi_major_is_refused_by_name():
    class Fake:
        class meshdock_abi_version:  # noqa: N801 - stands in for the ctypes function
            restype = argtypes = None

            def __new__(cls):
                return (2 << 16) | 3

    with pytest.raises(_lib.LibraryNotFound, match=r"here: /x.so speaks C ABI 2\.3, this "
                                                   r"package needs 1\.x"):
        _lib._check_version(Fake, "here: /x.so")
    assert _capi.api().abi_version() >> 16 == _lib.ABI_MAJOR


def _capsule_name(cap):
    # ctypes.pythonapi's function objects are shared with the whole process, the package's
    # included: setting their argtypes here must not break it (it makes its own).
    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get(cap)


def test_dlpack_capsules_legacy_and_versioned(data_dir):
    m = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    p = meshdock.to_dlpack(m)
    legacy = p.points.__dlpack__()
    assert _capsule_name(legacy) == b"dltensor"
    versioned = p.points.__dlpack__(max_version=(1, 0))
    assert _capsule_name(versioned) == b"dltensor_versioned"
    assert _capsule_name(p.points.__dlpack__(max_version=(0, 8))) == b"dltensor"
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    mt = _dlpack.DLManagedTensorVersioned.from_address(get(versioned, b"dltensor_versioned"))
    assert (mt.version.major, mt.version.minor, mt.flags) == (1, 0, 0)  # writable (ours)
    t = mt.dl_tensor
    assert t.data == m.points.ctypes.data and (t.shape[0], t.shape[1]) == (300, 3)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 64, 1)
    assert p.points.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="copy=True"):
        p.points.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"lives on device \(1, 0\), not \(2, 0\)"):
        p.points.__dlpack__(dl_device=(2, 0))
    assert p.points.__dlpack__(dl_device=(1, 0), copy=False) is not None
    del legacy, versioned, mt, t  # unconsumed: their destructors run the deleters
    gc.collect()
    a = np.asarray(p.points)
    assert a.ctypes.data == m.points.ctypes.data and a.flags.writeable
    assert type(a.base).__name__ == "Buffer" and a.base.nbytes == a.nbytes
    assert np.asarray(p.points, dtype=np.float32).dtype == np.float32
    assert repr(p.points) == "<meshdock.Tensor points float64 (300, 3) device (1, 0)>"
    assert len(p.points) == 300 and p.points.data_ptr == m.points.ctypes.data


def test_the_library_makes_and_destroys_capsules_in_c(data_dir):
    """ABI 1.1: one foreign call per __dlpack__, and a dying capsule runs the tensor's deleter
    in C (libmeshdock's destructor, not a ctypes callback), for every kind of handle."""
    a = _capi.api()
    assert a.abi_version() >= (1 << 16) | 1
    for kind in ("frame", "mesh", "payload"):
        assert getattr(a, f"raw_{kind}_array_capsule", None) is not None, kind
    lib = ctypes.CDLL(_lib.load()._name)
    assert _dlpack.DESTRUCTOR == ctypes.cast(lib.meshdock_dlpack_capsule_destructor,
                                             ctypes.c_void_p).value
    get = ctypes.pythonapi.PyCapsule_GetDestructor
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object]
    m = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    p = meshdock.to_dlpack(m)
    assert get(p.points.__dlpack__()) == _dlpack.DESTRUCTOR
    assert get(p.points.__dlpack__(max_version=(1, 0))) == _dlpack.DESTRUCTOR
    # A tensor that cannot be made: NULL with no Python error, the status and message kept.
    # A tensor that cannot be made: CapsuleError raised in C (a NULL object result without a
    # Python error crashes ctypes), the status and message kept for the mapped exception.
    with pytest.raises(_capi.CapsuleError, match="9999"):
        a.raw_payload_array_capsule(p.points._hc, _capi.index_arg(9999), 1)
    assert a.last_status() == 13  # MESHDOCK_ERR_NOT_FOUND
    from meshdock._tensor import Tensor
    t = p.points
    bad = Tensor(t._owner, ("x", (1,), "float64", 8, _capi.index_arg(9999)), (1, 0), t._mk,
                 t._mkl, t._info, None, t._cap)
    with pytest.raises(LookupError, match="9999"):
        bad.__dlpack__()


def test_an_unconsumed_capsule_releases_the_lease_and_a_consumed_one_holds_it(tmp_path):
    from daemon_util import Daemon
    d = Daemon(tmp_path, ("box.v41.msh",))
    c = meshdock.Client(d.addr)
    try:
        c.load(d.root / "box.v41.msh", name="b")
        slot = meshdock.attach("b", prefix=d.prefix)
        frame = slot.wait(timeout=5)
        assert frame.points.data_ptr == np.from_dlpack(frame.points).ctypes.data
        caps = [frame.points.__dlpack__(), frame.points.__dlpack__(max_version=(1, 0))]
        held = torch.from_dlpack(frame.cells[0])
        assert c.stats().slots[0].leases == 1
        frame.release()
        del frame, caps
        gc.collect()
        assert c.stats().slots[0].leases == 1  # torch still holds cells/0
        held.add_(1)  # copy-on-write: a private page
        del held
        gc.collect()
        assert c.stats().slots[0].leases == 0
        slot.close()
    finally:
        c.close()
        assert d.stop() == 0, d.stderr


def test_from_cupy_adopts_any_host_exporter_without_a_copy(data_dir):
    m = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    t = torch.from_numpy(m.points.copy())
    a = _dlpack.numpy_from_exporter(t, "points")
    assert a.ctypes.data == t.data_ptr() and a.shape == (300, 3)
    del t
    gc.collect()
    np.testing.assert_array_equal(a, m.points)  # the capsule keeps torch's storage alive


# ---- the ctypes layer on other CPythons ---------------------------------------------------------
CROSS = r"""
import ctypes, os, signal, sys, threading, time, types
pkg = types.ModuleType("meshdock")        # the package without __init__ (which needs numpy)
pkg.__path__ = [sys.argv[1]]
sys.modules["meshdock"] = pkg
from meshdock import _capi, _dlpack
a = _capi.api()
out = ctypes.c_void_p()
_capi.check(a.mesh_read(sys.argv[2].encode(), b"", out))
h = _capi.Handle(out.value, a.mesh_release)
t = ctypes.c_void_p()
_capi.check(a.mesh_array_dlpack(h.ptr, 0, t))
cap = _dlpack.capsule(t.value, True)
t2 = ctypes.c_void_p()
_capi.check(a.raw_mesh_array_dlpack_legacy(h.c, _capi.index_arg(0), ctypes.byref(t2)))
cap2 = _dlpack.capsule(t2.value, False)
del cap, cap2, h                          # unconsumed: the destructor runs both deleters
o = _capi.AttachOptions()
a.attach_options_init(o)
o.prefix = b"crosscheck."
o.timeout_ms = 30000
hook = _capi.Interrupt()
o.interrupt = hook.fn
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    _capi.check(a.slot_attach(b"missing", o, ctypes.byref(out)), hook)
except KeyboardInterrupt:
    print("interrupted after %.0f ms" % ((time.monotonic() - t0 - 0.3) * 1e3))
"""


def _other_pythons():
    found = {}
    cands = [shutil.which(f"python3.{minor}") for minor in range(9, 15)]
    cands += glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3"))
    for c in cands:
        if not c:
            continue
        r = subprocess.run([c, "-c", "import sys; print(sys.version_info[:2] >= (3, 9), "
                                     "'%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True)
        ok, _, ver = r.stdout.strip().partition(" ")
        if r.returncode == 0 and ok == "True" and ver not in found:
            found[ver] = c
    return found


@pytest.mark.parametrize("version", ["3.9", "3.10", "3.12", "3.13"])
def test_the_ctypes_layer_on_other_pythons(version, build_dir, data_dir):
    python = _other_pythons().get(version)
    if python is None:
        pytest.skip(f"no CPython {version} here")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run([python, "-c", CROSS, str(build_dir / "python" / "meshdock"),
                        str(data_dir / "meshes" / "box.v41.msh")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("interrupted after "), (r.stdout, r.stderr)
    assert int(r.stdout.split()[2]) < 100, r.stdout
    assert "Exception ignored" not in r.stderr, r.stderr


def test_a_versioned_capsule_consumed_the_numpy_2_way(data_dir):
    """numpy 2.x asks __dlpack__(stream=None, max_version=(1, 0), dl_device=..., copy=None),
    renames the capsule "used_dltensor_versioned" and calls the deleter itself, once."""
    m = meshdock.read(data_dir / "meshes" / "box.v41.msh")
    p = meshdock.to_dlpack(m)
    py = ctypes.pythonapi
    get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", py))
    rename = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_SetName", py))
    cap = p.points.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=None)
    ptr = get(cap, b"dltensor_versioned")
    assert rename(cap, b"used_dltensor_versioned") == 0
    del cap
    gc.collect()  # consumed: the destructor must leave the tensor alone
    mt = _dlpack.DLManagedTensorVersioned.from_address(ptr)
    assert mt.dl_tensor.data == m.points.ctypes.data and mt.flags & _dlpack.FLAG_READ_ONLY == 0
    mt.deleter(ctypes.cast(ptr, ctypes.POINTER(_dlpack.DLManagedTensorVersioned)))
