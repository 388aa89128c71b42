"""Issue 12, files and roots: a group member who may write under a root attacks the daemon
through the file system. Each attacker is a separate process running as nobody (uid/gid 65534)
with supplementary group 0, the group that may write the root; each race is bounded (a few
seconds) and seeded, and asserts that not one byte outside the roots was ever published,
echoed or overwritten.

Outside the root lie a valid mesh (plate: a different point count from box) and a file whose
first line looks like a shadow entry; every Load result and every error is checked against
both."""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc
import pytest

import conftest
from daemon_util import BIN, Daemon, as_user, unique_prefix, wait_for
from meshdock.v1 import meshdock_pb2 as pb

S = grpc.StatusCode
SECRET = "root:$6$ATTACKSECRET$x:19000:0:99999:7:::"
RACE_SECONDS = 3.0

# The attacker, run as nobody: args (JSON) say what to do until the deadline.
ATTACKER = r"""
import json, os, random, sys, time
a = json.loads(sys.argv[1])
rng = random.Random(a["seed"])
end = time.monotonic() + a["seconds"]
victim, work = a["victim"], a["work"]
tmp = os.path.join(work, ".swap")
def put(make):
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    make(tmp)
    os.rename(tmp, victim)  # atomic: the name is always something
n = 0
if a["mode"] == "plant":          # attack 1: a symlink at the export's old temp name
    os.symlink(a["target"], a["at"])
    print("planted", flush=True)
    sys.exit(0)
if a["mode"] == "swapdir":        # the export's parent directory becomes a symlink out
    hold = victim + ".hold"
    while time.monotonic() < end:
        os.rename(victim, hold)
        os.symlink(a["targets"][0], victim)
        time.sleep(rng.random() * 0.0005)
        os.unlink(victim)
        os.rename(hold, victim)
        n += 1
    print(n, flush=True)
    sys.exit(0)
good = os.path.join(work, "good")
while time.monotonic() < end:     # a file in the root, swapped for a symlink out or a FIFO
    put(lambda p: os.link(good, p))
    if a["mode"] == "fifo":
        put(lambda p: os.mkfifo(p))
    else:
        t = rng.choice(a["targets"])
        put(lambda p: os.symlink(t, p))
    n += 1
put(lambda p: os.link(good, p))
print(n, flush=True)
"""


def attacker(args):
    return subprocess.Popen(as_user([sys.executable, "-c", ATTACKER, json.dumps(args)],
                                    groups=[0]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc):
    out, err = proc.communicate(timeout=RACE_SECONDS + 10)
    assert proc.returncode == 0, err
    return out


@pytest.fixture
def world(tmp_path):
    """A daemon whose root (group 0 may write it) holds box; outside it, plate and a secret."""
    base = pathlib.Path(tempfile.mkdtemp(prefix="meshdock-attack-", dir="/tmp"))
    os.chmod(base, 0o755)
    outside = base / "outside"
    outside.mkdir()
    shutil.copy(conftest.DATA / "meshes" / "plate.v22.msh", outside / "plate.msh")
    (outside / "secret.msh").write_text(SECRET + "\n")
    (outside / "victim.txt").write_text("precious\n")
    d = Daemon(base, ("box.v41.msh", "box2nd.v41.msh"))
    os.chmod(d.root, 0o775)  # root:root: group 0 (the attacker's extra group) may write
    work = d.root / "attacker"
    work.mkdir()
    os.chown(work, 65534, 65534)
    shutil.copy(d.root / "box.v41.msh", work / "good")
    os.chown(work / "good", 65534, 65534)
    d.outside, d.work = outside, work
    d.outside_before = {p.name: p.read_bytes() for p in outside.iterdir()}
    # Hundreds of loads log hundreds of lines: daemon_util.Daemon reads them as they come (d.log).
    yield d
    try:
        d.channel.close()
        if d.proc.poll() is None:
            d.proc.send_signal(signal.SIGTERM)
            try:
                d.proc.wait(10)
            except subprocess.TimeoutExpired:
                d.proc.kill()
                d.proc.wait(10)
                raise
        d._drain.join(10)
        assert d.proc.returncode == 0, "".join(d.log[-20:])
    finally:
        shutil.rmtree(base, ignore_errors=True)


def outside_untouched(d):
    now = {p.name: p.read_bytes() for p in d.outside.iterdir()}
    assert now == d.outside_before


def load(d, path, name, timeout=5):
    """("ok", SlotInfo) or (code, details)."""
    try:
        last = list(d.stub.Load(pb.LoadRequest(path=str(path), name=name, replace=True),
                                timeout=timeout))[-1]
        return "ok", last.slot
    except grpc.RpcError as e:
        return e.code(), e.details()


def export(d, name, path, timeout=10, **kw):
    try:
        return "ok", d.stub.Export(pb.ExportRequest(name=name, path=str(path), **kw),
                                   timeout=timeout).bytes_written
    except grpc.RpcError as e:
        return e.code(), e.details()


# ---- attack 1: a symlink planted at the export's temporary name ------------------------------

def test_export_never_follows_a_symlink_planted_at_its_temp_name(world):
    d = world
    d.load("box.v41.msh", "box")
    pid = d.catalog("box").daemon_pid  # what any group member reads
    assert pid == d.proc.pid
    target = d.root / "out.vtu"
    a = attacker(dict(mode="plant", seed=1, seconds=1, victim="", work=str(d.work),
                      target=str(d.outside / "victim.txt"), at=f"{target}.tmp-{pid}"))
    assert finish(a).strip() == "planted"
    code, got = export(d, "box", target)
    assert code == "ok" and got > 1000, (code, got)
    outside_untouched(d)
    assert target.read_bytes().startswith(b"<?xml")
    assert os.path.islink(f"{target}.tmp-{pid}")  # the plant itself was never touched


# ---- attack 2: a file in the root swapped for a symlink out, during Load and Export ------------

def test_load_never_publishes_or_echoes_a_file_outside_the_roots(world):
    d = world
    victim = d.root / "victim.msh"
    shutil.copy(d.work / "good", victim)
    box_points = load(d, victim, "v")[1].num_points
    import meshdock
    assert meshdock.read(d.outside / "plate.msh").points.shape[0] != box_points
    a = attacker(dict(mode="symlink", seed=12, seconds=RACE_SECONDS, victim=str(victim),
                      work=str(d.work),
                      targets=[str(d.outside / "plate.msh"), str(d.outside / "secret.msh"),
                               "../outside/plate.msh", "../outside/secret.msh"]))
    outcomes = {}
    leaks = {"published outside mesh": [], "echoed outside contents": [],
             "named where a symlink points": []}
    try:
        end = time.monotonic() + RACE_SECONDS
        while time.monotonic() < end:
            code, got = load(d, victim, "v")
            outcomes[code] = outcomes.get(code, 0) + 1
            if code == "ok":
                if got.num_points != box_points:
                    leaks["published outside mesh"].append(got.num_points)
            elif "ATTACKSECRET" in got:
                leaks["echoed outside contents"].append(got)
            elif str(d.outside) in got or "plate" in got:
                leaks["named where a symlink points"].append(got)
    finally:
        swaps = int(finish(a))
    assert swaps > 100, swaps
    assert sum(outcomes.values()) > 50, outcomes
    found = {k: (len(v), v[:1]) for k, v in leaks.items() if v}
    assert not found, (found, outcomes)
    outside_untouched(d)


def test_export_never_writes_through_a_parent_swapped_for_a_symlink(world):
    d = world
    d.load("box.v41.msh", "box")
    sub = d.root / "attacker" / "sub"
    sub.mkdir()
    os.chown(sub, 65534, 65534)
    a = attacker(dict(mode="swapdir", seed=3, seconds=RACE_SECONDS, victim=str(sub),
                      work=str(d.work), targets=[str(d.outside)]))
    outcomes, revealing = {}, []
    try:
        end = time.monotonic() + RACE_SECONDS
        i = 0
        while time.monotonic() < end:
            code, got = export(d, "box", sub / f"out{i}.vtu")
            outcomes[code] = outcomes.get(code, 0) + 1
            if code != "ok" and str(d.outside) in got:
                revealing.append(got)
            i += 1
    finally:
        finish(a)
    assert sum(outcomes.values()) > 50, outcomes
    written = sorted(set(p.name for p in d.outside.iterdir()) - set(d.outside_before))
    assert not written and not revealing, (len(written), written[:3], len(revealing), outcomes)
    outside_untouched(d)


# ---- attack 3: a FIFO swapped in during Load; roots that do not exist --------------------------

def test_a_fifo_swapped_in_never_blocks_a_thread_and_sigterm_stops_the_daemon(world):
    d = world
    victim = d.root / "victim.msh"
    shutil.copy(d.work / "good", victim)
    a = attacker(dict(mode="fifo", seed=5, seconds=RACE_SECONDS, victim=str(victim),
                      work=str(d.work)))
    outcomes = {}
    try:
        end = time.monotonic() + RACE_SECONDS
        k = 0
        while time.monotonic() < end:
            code, got = load(d, victim, f"f{k % 4}", timeout=4)
            outcomes[code] = outcomes.get(code, 0) + 1
            k += 1
    finally:
        finish(a)
    assert S.DEADLINE_EXCEEDED not in outcomes, outcomes  # nothing waited on the FIFO
    assert outcomes.get("ok", 0) > 0 and outcomes.get(S.INVALID_ARGUMENT, 0) > 0, outcomes
    # Every daemon thread is free: SIGTERM completes at once.
    d.channel.close()
    t0 = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    try:
        rc = d.proc.wait(5)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait(5)
        pytest.fail(f"SIGTERM did not stop the daemon within 5 s ({outcomes})")
    assert rc == 0 and time.monotonic() - t0 < 5


def test_a_root_that_does_not_exist_is_an_error_at_start_and_on_sighup(tmp_path):
    missing = tmp_path / "nowhere"
    r = subprocess.run([str(BIN / "meshdockd"), "--listen", f"unix:{tmp_path / 'a.sock'}",
                        "--root", str(missing), "--prefix", unique_prefix()],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert f"'{missing}'" in r.stderr and "--root" in r.stderr and "no such directory" in r.stderr
    (tmp_path / "file").write_text("x")
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"roots": [str(tmp_path / "file")], "prefix": unique_prefix()}))
    r = subprocess.run([str(BIN / "meshdockd"), "--config", str(cfg), "--listen",
                        f"unix:{tmp_path / 'b.sock'}"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and '"roots"' in r.stderr and "not a directory" in r.stderr, r.stderr
    # SIGHUP with a root that has gone: the running configuration stays, and says why.
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(conftest.DATA / "meshes" / "box.v41.msh", good / "box.msh")
    prefix = unique_prefix()
    cfg.write_text(json.dumps({"roots": [str(good)], "prefix": prefix}))
    sock = tmp_path / "c.sock"
    proc = subprocess.Popen([str(BIN / "meshdockd"), "--config", str(cfg), "--listen",
                             f"unix:{sock}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    log = []  # its stderr, read as it comes
    reader = threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        assert proc.stdout.readline().startswith("meshdockd ready on")
        cfg.write_text(json.dumps({"roots": [str(good), str(missing)], "prefix": prefix}))
        proc.send_signal(signal.SIGHUP)
        # The reread done (its log line) before the SIGTERM: a fixed 0.5 s sleep was not
        # always enough on a loaded CI box.
        assert wait_for(lambda: any("SIGHUP: kept the running configuration" in x
                                    for x in log)), log
        from meshdock.v1 import meshdock_pb2_grpc as pbg
        stub = pbg.MeshdockStub(grpc.insecure_channel(f"unix:{sock}"))
        last = list(stub.Load(pb.LoadRequest(path=str(good / "box.msh"), name="b"), timeout=10))
        assert last[-1].phase == pb.LoadProgress.DONE  # the old roots still serve
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        reader.join(10)
        proc.stdout.close()
        proc.stderr.close()
        err = "".join(log)
    assert proc.returncode == 0
    assert "SIGHUP: kept the running configuration" in err and f"'{missing}'" in err, err
    assert '"roots"' in err


# ---- attack 4: overwriting: existing files, a loaded mesh's source, the root, concurrency ------

def test_export_refuses_existing_files_unless_forced(world):
    d = world
    d.load("box.v41.msh", "box")
    existing = d.root / "existing.vtu"
    existing.write_text("keep")
    code, got = export(d, "box", existing)
    assert code == S.ALREADY_EXISTS and str(existing) in got and "--force" in got, (code, got)
    assert existing.read_text() == "keep"
    r = d.ctl("export", "box", str(existing), check=False)
    assert r.returncode == 8 and "--force" in r.stderr, (r.returncode, r.stderr)
    assert existing.read_text() == "keep"
    r = d.ctl("export", "box", str(existing), "--force")
    assert existing.read_bytes().startswith(b"<?xml")
    from meshdock import Client
    with Client(d.addr) as c:
        existing.write_text("keep")
        with pytest.raises(Exception, match="ALREADY_EXISTS|exists"):
            c.export("box", existing)
        assert existing.read_text() == "keep"
        assert c.export("box", existing, overwrite=True) > 1000
    assert existing.read_bytes().startswith(b"<?xml")
    assert sorted(p.name for p in d.root.iterdir()) == \
        ["attacker", "box.v41.msh", "box2nd.v41.msh", "existing.vtu"]  # no temporaries left


def test_export_never_replaces_the_source_of_a_loaded_mesh(world):
    d = world
    d.load("box.v41.msh", "box")
    source = d.root / "box.v41.msh"
    before = source.read_bytes()
    for kw in ({}, {"overwrite": True}):
        code, got = export(d, "box", source, format="msh", **kw)
        assert code == S.FAILED_PRECONDITION and "'box'" in got, (kw, code, got)
    os.link(source, d.root / "alias.msh")  # a second name of the same file
    code, got = export(d, "box", d.root / "alias.msh", overwrite=True)
    assert code == S.FAILED_PRECONDITION, (code, got)
    assert source.read_bytes() == before


def test_export_to_a_root_itself_is_refused(world):
    d = world
    d.load("box.v41.msh", "box")
    parent = sorted(os.listdir(d.root.parent))
    for path in (str(d.root), str(d.root) + "/", str(d.root) + "/."):
        code, got = export(d, "box", path, format="vtu", overwrite=True)
        assert code == S.INVALID_ARGUMENT and "directory" in got, (path, code, got)
    assert sorted(os.listdir(d.root.parent)) == parent
    assert d.root.is_dir()


def test_concurrent_exports_to_one_path_leave_one_whole_file(world):
    d = world
    d.load("box.v41.msh", "a")
    d.load("box2nd.v41.msh", "b")
    ref = {}
    for name in ("a", "b"):
        assert export(d, name, d.root / f"ref-{name}.vtu", format="vtu")[0] == "ok"
        ref[name] = (d.root / f"ref-{name}.vtu").read_bytes()
    assert ref["a"] != ref["b"]
    target = d.root / "same.vtu"
    bad = []
    for rnd in range(15):
        results = {}

        def go(name):
            results[name] = export(d, name, target, format="vtu", overwrite=True)

        threads = [threading.Thread(target=go, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        got = target.read_bytes()
        if got not in (ref["a"], ref["b"]) or any(r[0] != "ok" for r in results.values()):
            bad.append((rnd, len(got), results))
    assert not bad, bad[:3]
    leftovers = [p.name for p in d.root.iterdir() if "tmp" in p.name]
    assert leftovers == []


def test_a_files_bytes_in_an_error_cannot_drive_a_terminal_or_forge_a_log_line(tmp_path):
    """A trial: a .msh whose first line is ESC[2J ESC[31m FAKE CR "meshdockd: info: loaded
    evil" was quoted raw in the refusal (the client's terminal cleared, a forged line in the
    daemon's log). Messages now write such bytes as \\xNN, in the reply, the log, and md.read's
    error; valid UTF-8 stays."""
    import meshdock
    d = Daemon(tmp_path, ())
    evil = b"\x1b[2J\xc3\xbc\x9b\xff\x1b[31mFAKE\rmeshdockd: info: loaded evil\n"
    (d.root / "esc.msh").write_bytes(evil)
    try:
        with pytest.raises(grpc.RpcError) as e:
            list(d.stub.Load(pb.LoadRequest(path=str(d.root / "esc.msh"), name="esc")))
        details = e.value.details()
        assert e.value.code() == S.INVALID_ARGUMENT
        assert "found '\\x1b[2Jü\\x9b\\xff\\x1b[31mFAKE\\x0dmeshdockd: info" in details
        assert not any(c in details for c in "\x1b\r\x9b")
    finally:
        assert d.stop() == 0, d.stderr
    assert "\x1b" not in d.stderr and "\r" not in d.stderr
    assert not any(line.startswith("meshdockd: info: loaded evil") for line in
                   d.stderr.splitlines())
    with pytest.raises(meshdock.ReadError) as e:
        meshdock.read(d.root / "esc.msh")
    assert "\x1b" not in str(e.value) and "\\x1b[2J" in str(e.value)


def test_names_that_are_not_utf8_are_read_as_latin1_everywhere(tmp_path):
    """Found while fixing the trial's readers: a PLY property named b"t\\xff" made a Load fail
    with INTERNAL ("[json.exception.type_error.316] invalid UTF-8 byte") and md.read raise
    UnicodeDecodeError. Names are UTF-8 now: others read as Latin-1, with a note."""
    import meshdock
    import numpy as np
    d = Daemon(tmp_path, ())
    (d.root / "names.ply").write_bytes(
        b"ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
        b"property float z\nproperty float Druck_\xfc\nelement face 1\n"
        b"property list uchar int vertex_indices\nend_header\n"
        b"0 0 0 1\n1 0 0 2\n0 1 0 3\n3 0 1 2\n")
    try:
        m = meshdock.read(d.root / "names.ply")
        assert list(m.point_data) == ["Druck_ü"]
        assert any("name 'Druck_\\xfc' is not UTF-8: read as Latin-1, 'Druck_ü'" in n
                   for n in m.notes), m.notes
        info = d.load("names.ply", "names")[-1].slot
        assert any("read as Latin-1" in n for n in info.notes)
        with meshdock.attach("names", prefix=d.prefix, timeout=5) as slot, \
                slot.wait(5) as f:
            assert np.from_dlpack(f.point_data["Druck_ü"]).tolist() == [1, 2, 3]
    finally:
        assert d.stop() == 0, d.stderr
