"""Bad-input campaign: every RPC of meshdock.v1 with empty, huge, malformed and hostile fields.

Each request must be refused with a status that names the problem (never OK, UNKNOWN, INTERNAL
or a dropped connection), the message must name the offending field or value, and afterwards
the daemon still serves and the slot loaded first is byte-for-byte what it was.
"""
import os

import grpc
import pytest

from daemon_util import Daemon, shm_names
from meshdock.client import CHUNK_BYTES, publish_chunks
from meshdock.v1 import meshdock_pb2 as pb

S = grpc.StatusCode
REFUSALS = {S.INVALID_ARGUMENT, S.NOT_FOUND, S.PERMISSION_DENIED, S.ALREADY_EXISTS,
            S.FAILED_PRECONDITION, S.RESOURCE_EXHAUSTED, S.OUT_OF_RANGE}
F64 = pb.DType(code=2, bits=64, lanes=1)

# Hostile strings for every name-like field.
HOSTILE_NAMES = {
    "empty": "",
    "slash": "a/b",
    "dot-dot": "..",
    "traversal": "../../etc/passwd",
    "nul": "a\0b",
    "newline": "a\nb",
    "space": "a b",
    "format": "%s%n%x",
    "unicode": "m\u00e9sh",
    "long": "x" * 256,
    "huge": "x" * 1_000_000,
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    d = Daemon(tmp, ("box.v41.msh",))
    (d.root / "escape.msh").symlink_to("/etc/hostname")
    (d.root / "dir.msh").mkdir()
    (d.root / "fifo.msh").parent.mkdir(exist_ok=True)
    os.mkfifo(d.root / "fifo.msh")
    (d.root / "empty.msh").write_bytes(b"")
    (d.root / "zeros.vtu").write_bytes(b"\0" * 4096)
    d.load("box.v41.msh", "box")
    d.before = (d.control_block("box"), d.newest("box")[1])
    yield d
    assert d.stop() == 0, d.stderr
    assert shm_names(d.prefix) == []


def refused(call):
    try:
        r = call()
        if hasattr(r, "__iter__") and not isinstance(r, (bytes, str)):
            r = list(r)
    except grpc.RpcError as e:
        return e.code(), e.details()
    raise AssertionError(f"accepted: {r!r}"[:300])


def check(daemon, call, must_name=None):
    code, details = refused(call)
    assert code in REFUSALS, (code, details)
    assert details and len(details) < 4096, details[:300]
    if must_name is not None:
        assert must_name in details, details
    return code, details


def still_serving(daemon):
    assert [s.name for s in daemon.stub.List(pb.ListRequest()).slots] == ["box"]
    assert (daemon.control_block("box"), daemon.newest("box")[1]) == daemon.before


@pytest.mark.parametrize("label", list(HOSTILE_NAMES))
def test_every_name_field_refuses_hostile_names(daemon, label):
    name = HOSTILE_NAMES[label]
    path = str(daemon.root / "box.v41.msh")
    calls = {
        "Load": lambda: daemon.stub.Load(pb.LoadRequest(path=path, name=name)),
        "Reload": lambda: daemon.stub.Reload(pb.NameRequest(name=name)),
        "Unload": lambda: daemon.stub.Unload(pb.NameRequest(name=name)),
        "Describe": lambda: daemon.stub.Describe(pb.NameRequest(name=name)),
        "Publish": lambda: daemon.stub.Publish(publish_chunks(
            pb, name=name, field="point_data/T", dtype=F64, shape=[300], data=b"\0" * 2400)),
        "PublishSmall": lambda: daemon.stub.PublishSmall(pb.PublishChunk(
            name=name, field="point_data/T", dtype=F64, shape=[300], data=b"\0" * 2400)),
        "Export": lambda: daemon.stub.Export(pb.ExportRequest(
            name=name, path=str(daemon.root / "out.vtu"))),
    }
    if label == "empty":  # Watch with no name means every slot; the rest name one
        calls["Watch"] = None
    else:
        calls["Watch"] = lambda: daemon.stub.Watch(pb.WatchRequest(name=name), timeout=2)
    for rpc, call in calls.items():
        if call is None:
            continue
        code, details = check(daemon, call)
        # Load validates the name; the others look it up: either way no name is found.
        assert code in (S.INVALID_ARGUMENT, S.NOT_FOUND), (rpc, code, details)
    still_serving(daemon)


def test_load_refuses_hostile_paths_and_options(daemon, tmp_path):
    root = daemon.root
    box = str(root / "box.v41.msh")
    cases = [
        (dict(path="", name="a"), "path"),
        (dict(path="relative.msh", name="a"), "is not absolute"),
        (dict(path=str(root) + "/.." * 20 + "/etc/passwd", name="a"), "outside the allowed roots"),
        (dict(path=str(root) + "/../nonexistent/x.msh", name="a"), "outside the allowed roots"),
        (dict(path="/etc/passwd", name="a"), "outside the allowed roots"),
        (dict(path=str(root / "escape.msh"), name="a"), "outside the allowed roots"),
        (dict(path=str(root / "dir.msh"), name="a"), "is not a regular file"),
        (dict(path=str(root / "fifo.msh"), name="a"), "is not a regular file"),
        (dict(path=str(root / "empty.msh"), name="a"), "empty.msh"),
        (dict(path=str(root / "zeros.vtu"), name="a"), "zeros.vtu"),
        (dict(path=str(root) + "/" + "x" * 5000 + ".msh", name="a"), None),
        (dict(path=str(root / "box.v41.msh\0.vtu"), name="a"), None),
        (dict(path=box, name="a", options=pb.LoadOptions(num_slots=10**9)), "num_slots 1000000000"),
        (dict(path=box, name="a", options=pb.LoadOptions(num_slots=2**32 - 1)), "num_slots"),
        (dict(path=box, name="a", options=pb.LoadOptions(device="cuda:-1")), "cuda:-1"),
        (dict(path=box, name="a", options=pb.LoadOptions(device="cuda:99999999999")), "cuda:"),
        (dict(path=box, name="a", options=pb.LoadOptions(device="x" * 100000)), "device"),
        (dict(path=box, name="a", options=pb.LoadOptions(format="exe")), "exe"),
        (dict(path=box, name="a", options=pb.LoadOptions(format="vtu")), "box.v41.msh"),
        (dict(path=box, name="box"), "is loaded"),
    ]
    for req, must in cases:
        check(daemon, lambda: daemon.stub.Load(pb.LoadRequest(**req)), must)
    still_serving(daemon)


def test_publish_refuses_malformed_arrays(daemon):
    def pub(**kw):
        req = dict(name="box", field="point_data/T", dtype=F64, shape=[300], data=b"\0" * 2400)
        req.update(kw)
        return lambda: daemon.stub.Publish(publish_chunks(pb, **req))

    cases = [
        (pub(field=""), "field"),
        (pub(field="point_data/"), "field"),
        (pub(field="point_data/a/b"), None),
        (pub(field="cell_data/T", block=10**9), "block"),
        (pub(field="x" * 1_000_000), None),
        (pub(shape=[]), None),
        (pub(shape=[-1]), "-1"),
        (pub(shape=[300, -3]), "-3"),
        (pub(shape=[-(2**63)]), None),
        (pub(shape=[2**63 - 1]), None),
        (pub(shape=[300] + [1] * 64), None),
        (pub(dtype=pb.DType(code=2, bits=64, lanes=0)), None),
        (pub(dtype=pb.DType(code=2, bits=64, lanes=4)), None),
        (pub(dtype=pb.DType(code=2, bits=7, lanes=1)), None),
        (pub(dtype=pb.DType(code=2**32 - 1, bits=64, lanes=1)), None),
        (pub(dtype=pb.DType(code=2, bits=2**32 - 1, lanes=1)), None),
        (pub(data=b""), "data has 0"),
        (pub(data=b"\0" * 2401), "data has 2401"),
        (pub(data=b"\0" * (64 << 20)), f"need 2400 bytes, data has {CHUNK_BYTES} at least"),
    ]
    for k, (call, must) in enumerate(cases):
        try:
            check(daemon, call, must)
        except AssertionError as e:
            raise AssertionError(f"publish case {k}: {e}") from None
    still_serving(daemon)


def test_export_refuses_hostile_paths(daemon, tmp_path):
    root = daemon.root
    cases = [
        (str(tmp_path / "out.vtu"), "outside the allowed roots"),
        (str(root / ".." / "out.vtu"), "outside the allowed roots"),
        (str(root / "escape.msh"), None),  # a symlink out of the roots is never written through
        ("", None),
        ("out.vtu", "is not absolute"),
        (str(root / "nodir" / "out.vtu"), None),
        (str(root / "out.exe"), "exe"),
        (str(root / "dir.msh"), None),
        (str(root) + "/" + "x" * 5000 + ".vtu", None),
    ]
    for path, must in cases:
        check(daemon, lambda: daemon.stub.Export(pb.ExportRequest(name="box", path=path)), must)
    check(daemon, lambda: daemon.stub.Export(pb.ExportRequest(
        name="box", path=str(root / "o.vtu"), format="x" * 100000)), None)
    assert open("/etc/hostname").read()  # untouched through the symlink
    assert not (tmp_path / "out.vtu").exists()
    still_serving(daemon)


def test_unknown_fields_and_garbage_bytes_do_not_hurt(daemon):
    """Raw bytes on the wire: a request that is not the message it claims to be."""
    channel = daemon.channel
    for method in ("Load", "Describe", "Publish", "PublishSmall", "Export", "Unload"):
        raw = channel.unary_unary(f"/meshdock.v1.Meshdock/{method}",
                                  request_serializer=lambda b: b,
                                  response_deserializer=lambda b: b)
        for payload in (b"\xff" * 64, b"\x0a\xff\xff\xff\xff\x0f", os.urandom(4096)):
            try:
                raw(payload, timeout=5)
            except grpc.RpcError as e:
                assert e.code() not in (S.UNAVAILABLE, S.UNKNOWN, S.DEADLINE_EXCEEDED), (
                    method, e.code(), e.details())
    still_serving(daemon)
