"""What a new user of the Python SDK meets first (a review's findings): the address Client
takes (checked as meshdockctl --addr checks it), load's default name (meshdockctl's), arguments
of the wrong type or range named with the method, help() on Client and the package namespace,
== on meshes, and an AttachTimeout that lists the prefixes of live daemons only. Each test says
what happened before."""
import os
import pathlib
import pydoc
import re
import shutil
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

import meshdock as md
import conftest
from daemon_util import BIN, Daemon, shm_names
from meshdock import protocol

BOX = "box.v41.msh"
CTL = str(BIN / "meshdockctl")


@pytest.fixture
def daemon(tmp_path, monkeypatch):
    monkeypatch.delenv("MESHDOCK_PREFIX", raising=False)
    d = Daemon(tmp_path, (BOX, "box.v41b.msh"))
    d.client = md.Client(d.addr)
    yield d
    d.client.close()
    assert d.stop() == 0, d.stderr
    assert shm_names(d.prefix) == []


# ---- 1. the address ------------------------------------------------------------------------

# Addresses meshdockctl refuses, and why (clients/meshdockctl/main.cpp, address_problem).
BAD_ADDRESSES = [
    ("/tmp/x/s.sock", "has no :PORT"),
    ("localhost", "has no :PORT"),
    ("unix:", "names no socket"),
    ("http://localhost:50051", "is a URL"),
    ("localhost:0", "has no port 1-65535 after its last ':'"),
    ("localhost:http", "has no port 1-65535 after its last ':'"),
    ("localhost:655350", "has no port 1-65535 after its last ':'"),
]


@pytest.mark.parametrize("addr, why", BAD_ADDRESSES)
def test_client_refuses_an_address_as_meshdockctl_does(addr, why):
    # Before: Client(addr) was made, and its first call failed with gRPC's resolver's words
    # ("UNAVAILABLE: DNS resolution failed for /tmp/x/s.sock: C-ares status ...").
    with pytest.raises(ValueError) as e:
        md.Client(addr)
    msg = str(e.value)
    assert f"addr '{addr}' {why}" in msg and "unix:PATH or HOST:PORT" in msg, msg
    # the same verdict, in the same words, as meshdockctl's
    r = subprocess.run([CTL, "--addr", addr, "ls"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and f"--addr '{addr}' {why} (meshdockd listens on unix:PATH or " \
        "HOST:PORT)" in r.stderr, (r.returncode, r.stderr)


def test_client_address_errors_say_where_it_came_from(monkeypatch):
    # Before: both were made; a bare path only failed at the first call.
    with pytest.raises(ValueError, match=r"for the socket at that path: 'unix:/tmp/x/s\.sock'"):
        md.Client("/tmp/x/s.sock")
    monkeypatch.setenv("MESHDOCK_ADDR", "/run/other.sock")
    with pytest.raises(ValueError, match=r"Client: \$MESHDOCK_ADDR '/run/other\.sock' has no "):
        md.Client()
    with pytest.raises(TypeError, match=r"addr must be a str .*'unix:/tmp/x/s\.sock'"):
        md.Client(pathlib.Path("/tmp/x/s.sock"))
    for timeout, kind in ((0, ValueError), (-1, ValueError), (float("nan"), ValueError),
                          ("5", TypeError)):
        with pytest.raises(kind, match="Client: timeout must be a number of seconds"):
            md.Client("unix:/nonexistent.sock", timeout=timeout)


def test_every_address_form_that_worked_still_does(daemon, monkeypatch):
    """The forms meshdockd listens on and gRPC's scheme:... forms: made (nothing connects until
    a call), and the Unix socket ones answer."""
    for addr in ("unix:/nonexistent.sock", "unix:///nonexistent.sock", "unix-abstract:md-none",
                 "dns:///localhost:50051", "dns:localhost:50051", "ipv4:127.0.0.1:50051",
                 "ipv6:[::1]:50051", "[::1]:50051", "localhost:50051", "10.0.0.1:1",
                 "vsock:3:50051"):
        md.Client(addr).close()
    monkeypatch.delenv("MESHDOCK_ADDR", raising=False)
    for default in (None, ""):
        with md.Client(default) as c:
            assert c.addr == md.client.DEFAULT_ADDR == "unix:/run/meshdock/meshdockd.sock"
    monkeypatch.setenv("MESHDOCK_ADDR", "")  # set but empty: as unset, as meshdockctl
    assert md.Client().addr == md.client.DEFAULT_ADDR
    monkeypatch.setenv("MESHDOCK_ADDR", daemon.addr)
    for c in (md.Client(), md.Client("unix://" + str(daemon.sock))):
        with c:
            assert c.ls() == [] and c.health() == "SERVING"


# ---- 2. load's name ------------------------------------------------------------------------

def test_load_names_the_mesh_after_its_file_as_meshdockctl_does(daemon):
    # Before: TypeError: load() missing 1 required positional argument: 'name'.
    c = daemon.client
    info = c.load(daemon.root / "box.v41b.msh")
    assert info.name == "box"  # up to the first dot, as `meshdockctl load` (its test)
    r = daemon.ctl("--json", "load", str(daemon.root / BOX), "--name", "other")
    assert r.returncode == 0
    # A file name that makes no slot name: refused before anything is sent, saying what to do.
    odd = daemon.root / "my mesh.v41.msh"
    shutil.copy(daemon.root / BOX, odd)
    for path in (odd, daemon.root / ".hidden.msh"):
        with pytest.raises(ValueError) as e:
            c.load(path)
        msg = str(e.value)
        assert msg.startswith("Client.load: no name given, and the file name") and \
            "pass name=" in msg and path.name in msg, msg
    r = daemon.ctl("load", str(odd), check=False)
    assert r.returncode == 2 and "my mesh" in r.stderr  # meshdockctl refuses it too
    assert c.load(odd, name="mine").name == "mine"  # and an explicit name still does
    assert sorted(s.name for s in c.ls()) == ["box", "mine", "other"]


# ---- 3. arguments named with the method ----------------------------------------------------

def test_wrong_arguments_name_the_method_and_the_parameter(daemon):
    # Before: protobuf's words, naming neither: "ValueError: Value out of range: -1",
    # "TypeError: 5 has type int, but expected one of: bytes, unicode", and for some a
    # DaemonError from a request already sent (progress=[] failed mid-load).
    c = daemon.client
    p = daemon.root / BOX
    u32 = "an integer from 0 to 4294967295"
    cases = [
        (lambda: c.load(p, name="b", num_slots=-1), ValueError,
         f"Client.load: num_slots must be {u32}, not -1"),
        (lambda: c.load(p, name="b", num_slots=2**32), ValueError,
         f"Client.load: num_slots must be {u32}, not 4294967296"),
        (lambda: c.load(p, name="b", num_slots=2.0), TypeError,
         f"Client.load: num_slots must be {u32}, not float 2.0"),
        (lambda: c.load(p, name=5), TypeError, "Client.load: name must be a str, not int 5"),
        (lambda: c.load(5, name="b"), TypeError,
         "Client.load: path must be a path (str or os.PathLike), not int 5"),
        (lambda: c.load(p, name="b", float32="yes"), TypeError,
         "Client.load: float32 must be True or False, not str 'yes'"),
        (lambda: c.load(p, name="b", device=0), TypeError, "Client.load: device must be a str"),
        (lambda: c.load(p, name="b", progress=[]), TypeError,
         "Client.load: progress must be a function"),
        (lambda: c.reload(None), TypeError, "Client.reload: name must be a str, not NoneType"),
        (lambda: c.unload(["b"]), TypeError, "Client.unload: name must be a str"),
        (lambda: c.describe(1), TypeError, "Client.describe: name must be a str"),
        (lambda: c.attach(1), TypeError, "Client.attach: name must be a str"),
        (lambda: c.export("b", 5), TypeError, "Client.export: path must be a path"),
        (lambda: c.export("b", p.with_name("o.vtu"), overwrite="no"), TypeError,
         "Client.export: overwrite must be True or False"),
        (lambda: c.leases(1), TypeError, "Client.leases: name must be a str"),
        (lambda: c.revoke_leases("abc"), TypeError,
         "Client.revoke_leases: pid must be an integer from 1 to 2147483647, not str 'abc'"),
        (lambda: c.revoke_leases(2**31), ValueError,
         "Client.revoke_leases: pid must be an integer from 1 to 2147483647, not 2147483648"),
        (lambda: c.watch(7), TypeError, "Client.watch: name must be a str"),  # at the call
        (lambda: c.publish(3, "point_data/T", np.zeros(3)), TypeError,
         "Client.publish: name must be a str, not int 3"),
        (lambda: c.publish("b", None, np.zeros(3)), TypeError,
         "Client.publish: field must be a str, not NoneType"),
        (lambda: c.publish_tensor("cam", np.zeros(4), num_slots=-1), ValueError,
         f"slot 'cam': tensor: num_slots must be {u32}, not -1"),  # its words of before
        (lambda: c.publish("b", "cell_data/x", np.zeros(3), block="0"), TypeError,
         f"slot 'b': cell_data/x: block must be {u32}, not str '0'"),
    ]
    for call, kind, words in cases:
        with pytest.raises(kind) as e:
            call()
        assert words in str(e.value), (words, str(e.value))
    assert c.ls() == [] and c.leases() == []  # nothing reached the daemon
    # Valid calls send what they sent: numpy integers and bools, bytes names, ints as flags.
    info = c.load(str(p), name=b"b", num_slots=np.uint8(2), float32=np.bool_(True), int32=1)
    assert (info.name, info.num_slots) == ("b", 2)
    assert c.describe("b").manifest["arrays"][0]["dtype"][1] == 32  # float32 points
    assert c.revoke_leases(np.int32(os.getpid())) == 0
    assert isinstance(c.reload("b"), md.replies.SlotInfo)
    c.unload("b")


# ---- 4. help() and the namespace -----------------------------------------------------------

def test_help_on_client_says_what_it_needs_to():
    # Before: Client had no docstring; __init__, reload, unload, stats, shutdown none either.
    C = md.Client
    for f in (C, C.__init__, C.load, C.reload, C.unload, C.ls, C.describe, C.export, C.stats,
              C.shutdown, C.watch, C.leases, C.revoke_leases, C.publish, C.health, C.close):
        assert f.__doc__ and len(f.__doc__.split()) > 3, f
    init = " ".join(C.__init__.__doc__.split())
    for words in ("$MESHDOCK_ADDR", "unix:/run/meshdock/meshdockd.sock", "unix:PATH",
                  "HOST:PORT", "$MESHDOCK_TOKEN", "ValueError", "None: no limit"):
        assert words in init, words
    assert "to the file name up to its first dot" in " ".join(C.load.__doc__.split())
    text = pydoc.render_doc(C, renderer=pydoc.plaintext)
    assert "$MESHDOCK_ADDR" in text and "meshdockd's control plane" in text


def test_the_package_namespace_holds_what_it_documents():
    # Before: dir(md) listed 'annotations' (a __future__ feature), and md.attach's docstring
    # sent the reader to resolve_prefix, which md did not have (md.attach is the function).
    assert "annotations" not in dir(md)
    for name in md.__all__:
        assert hasattr(md, name), name
    refs = re.findall(r"meshdock\.(\w+)\(", md.attach.__doc__)
    assert refs and all(hasattr(md, r) for r in refs), refs
    assert md.resolve_prefix("x.") == "x." and md.resolve_prefix is md.attach.__globals__[
        "resolve_prefix"]


# ---- 5. == on meshes -----------------------------------------------------------------------

def test_meshes_compare_by_identity():
    # Before: md.read(f) == md.read(f) raised numpy's "The truth value of an array with more
    # than one element is ambiguous" (the dataclass's generated __eq__ over arrays).
    f = conftest.DATA / "meshes" / BOX
    a, b = md.read(f), md.read(f)
    assert a == a and a != b and not (a == b)
    assert a.cells[0] == a.cells[0] and a.cells[0] != b.cells[0]
    assert a.regions[0] == a.regions[0] and a.regions[0] != b.regions[0]
    assert a in [b, a] and [b.cells[0]].count(a.cells[0]) == 0
    assert len({a, b, a}) == 2  # hashable, by identity, as a meshio.Mesh
    assert np.array_equal(a.points, b.points)  # what the docstring says to compare
    for cls in (md.Mesh, md.CellBlock, md.Region):
        assert "identity" in cls.__doc__, cls


# ---- 6. stale prefixes in an AttachTimeout -------------------------------------------------

def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_pid_alive_as_the_cpp_mirror():
    assert protocol.pid_alive(os.getpid())
    assert not protocol.pid_alive(_dead_pid())
    assert not protocol.pid_alive(0) and not protocol.pid_alive(-5)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        for _ in range(200):  # exited but not reaped: a zombie, never to release anything
            with open(f"/proc/{zombie.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        assert not protocol.pid_alive(zombie.pid)
    finally:
        zombie.wait()
    head = protocol.encode_catalog(protocol.CatalogHeader(daemon_pid=4321))[:28]
    assert protocol.catalog_daemon_pid(head) == 4321
    assert protocol.catalog_daemon_pid(bytes(28)) is None  # not written yet
    assert protocol.catalog_daemon_pid(head[:27]) is None


def test_attach_timeout_lists_the_prefixes_of_live_daemons_only(daemon):
    # Before: every prefix with a catalog in /dev/shm was listed, most of them left by killed
    # daemons ("ru., probe17., fckill367., ... (44 in all)"), the dead one below among them.
    daemon.client.load(daemon.root / BOX, name="b")
    tag = "zq" + uuid.uuid4().hex[:8]
    asked, live, dead = tag + "q.", tag + "l.", tag + "d."
    made = []
    try:
        for prefix, pid in ((live, os.getpid()), (dead, _dead_pid())):
            path = os.path.join(protocol.SHM_DIR, prefix + "box" + protocol.CATALOG_SUFFIX)
            with open(path, "wb") as f:
                f.write(protocol.encode_catalog(protocol.CatalogHeader(daemon_pid=pid)))
            made.append(path)
        with pytest.raises(md.AttachTimeout) as e:
            md.attach("box", prefix=asked, timeout=0.2)
        msg = str(e.value)
        assert f"nothing is published under prefix '{asked}'" in msg, msg
        assert live in msg and daemon.prefix in msg, msg  # live daemons' prefixes are listed
        assert dead not in msg, msg  # a dead one's is not,
        assert re.search(r"; \d+ other prefix(es hold| holds) only stale catalogs, of daemons "
                         r"that are gone\)", msg), msg  # only counted
    finally:
        for path in made:
            os.unlink(path)


def test_an_event_says_when_it_happened_as_watch_json_does():
    # `meshdockctl watch --json` gave each event a "time"; a Python Event had only the daemon's
    # monotonic timestamp.
    import datetime
    import time
    from meshdock.replies import Event
    e = Event(kind="LOADED", name="box", timestamp=time.monotonic() - 2.0)
    now = datetime.datetime.now(datetime.timezone.utc)
    assert e.time.tzinfo is not None
    assert 1.9 < (now - e.time).total_seconds() < 2.5


def test_publish_checks_via_and_the_array_type_before_touching_the_array():
    # Before: via="bogus" was found after the array had been converted (a device array copied,
    # a PayloadWarning issued) and named no method; a str was "a 0-d array (a scalar)".
    c = md.Client("unix:/nonexistent.sock")
    with pytest.raises(ValueError, match=r"^Client.publish: via must be 'auto', 'grpc' or "
                                         r"'shm', not 'bogus'$"):
        c.publish("box", "point_data/T", object(), via="bogus")  # the array is never looked at
    with pytest.raises(TypeError, match=r"^Client.publish: slot 'box': point_data/T: array must "
                                        r"be an array \(numpy, DLPack\), not str$"):
        c.publish("box", "point_data/T", "abc")
