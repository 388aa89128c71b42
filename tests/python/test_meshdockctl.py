"""meshdockctl, the command line, against a real meshdockd: its argument parser (per-verb help,
unknown verbs, missing arguments, validated numbers, --opt=value), its exit statuses (the table
in docs/operations.md), the socket-permission message, and --json for every verb (numbers,
dtype names, the manifest as an object, JSON Lines from watch, RFC 3339 times)."""
import datetime
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import numpy as np
import pytest

import conftest
from daemon_util import BIN, PRIME, Daemon, as_user, prime

CTL = str(BIN / "meshdockctl")
NOBODY = 65534
VERBS = ["load", "reload", "unload", "ls", "describe", "export", "publish", "watch", "stats",
         "metrics", "health", "shutdown", "leases", "inspect", "completion"]
# docs/operations.md, "meshdockctl": the exit statuses.
EXIT = dict(ok=0, other=1, usage=2, unavailable=3, not_found=4, invalid=5, denied=6,
            exhausted=7, exists=8, precondition=9, deadline=10)
ENV = {k: v for k, v in os.environ.items() if k not in ("MESHDOCK_ADDR", "MESHDOCK_TOKEN")}


def ctl(*args, timeout=60, env=None, **kw):
    return subprocess.run([CTL, *args], capture_output=True, text=True, timeout=timeout,
                          env=ENV if env is None else env, **kw)


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, ("box.v41.msh", "box.v41b.msh", "data.v41.msh"))
    yield d
    if d.proc.poll() is None:
        assert d.stop() == 0, d.stderr


def until_printed(w, poke, timeout=20.0):
    """The first line `w` (meshdockctl watch) prints, poke() (something that makes an event it
    shows) repeated until it prints one. A fixed sleep before the first event instead lost it
    on a loaded CI box: meshdockctl had not started and subscribed yet. A poke repeated may
    print more than once: callers skip the lines naming PRIME."""
    import queue
    import threading
    q = queue.Queue()
    threading.Thread(target=lambda: q.put(w.stdout.readline()), daemon=True).start()
    deadline = time.monotonic() + timeout
    while True:
        poke()
        try:
            return q.get(timeout=1.0)
        except queue.Empty:
            assert time.monotonic() < deadline, "meshdockctl watch printed nothing"


def unprimed(lines):
    return [line for line in lines if PRIME not in line]


def is_rfc3339(s):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s), s
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc)


# ---- the parser (no daemon needed) -----------------------------------------------------------

@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_its_own_help(verb):
    r = ctl(verb, "--help")
    assert r.returncode == 0, r.stderr
    assert f"Usage: meshdockctl {verb}" in r.stdout, r.stdout
    # The global usage lists every verb under "Subcommands:"; a verb's help does not.
    assert "Subcommands:" not in r.stdout


def test_global_help_lists_every_verb_and_the_exit_statuses():
    r = ctl("--help")
    assert r.returncode == 0
    for v in VERBS:
        assert re.search(rf"^\s+{v}\s", r.stdout, re.M), v
    assert "4 not found" in r.stdout and "6 permission denied" in r.stdout
    r = ctl()
    assert r.returncode == EXIT["usage"] and "Subcommands:" in r.stderr


def test_load_help_documents_the_default_name():
    r = ctl("load", "--help")
    assert "box.v41b.msh -> box" in r.stdout and "-n,--name" in r.stdout


@pytest.mark.parametrize("typo,meant", [("lod", "load"), ("unlaod", "unload"), ("lease", "leases"),
                                        ("describ", "describe"), ("sats", "stats")])
def test_an_unknown_verb_is_named_with_a_suggestion(typo, meant):
    r = ctl(typo, "box")
    assert r.returncode == EXIT["usage"]
    assert f"unknown command '{typo}'; did you mean '{meant}'?" in r.stderr, r.stderr


def test_an_unknown_verb_far_from_any_gets_no_suggestion():
    r = ctl("--addr", "unix:/nonexistent.sock", "frobnicate")
    assert r.returncode == EXIT["usage"]
    assert "unknown command 'frobnicate'" in r.stderr and "did you mean" not in r.stderr


@pytest.mark.parametrize("args,said", [
    (["--address", "unix:/x.sock", "ls"], "unknown option '--address'; did you mean '--addr'?"),
    (["--tokn", "t", "ls"], "unknown option '--tokn'; did you mean '--token'?"),
    (["--bogus", "ls"], "unknown option '--bogus'\n"),
    (["-x", "ls"], "unknown option '-x'\n")])
def test_an_unknown_global_option_is_named_not_blamed_on_the_verb(args, said):
    # CLI11 alone said "meshdockctl ls: The following argument was not expected: --bogus", and
    # took --address's value for the verb ("unknown command 'unix:/x.sock'").
    r = ctl(*args)
    assert r.returncode == EXIT["usage"]
    assert "meshdockctl: " + said in r.stderr, r.stderr


def test_global_flags_together_and_with_values_still_parse():
    r = ctl("-jv", "--addr=unix:/nonexistent.sock", "ls")
    assert r.returncode == EXIT["unavailable"], r.stderr
    assert "unknown" not in r.stderr


@pytest.mark.parametrize("args,missing", [(["describe"], "NAME"), (["load"], "FILE"),
                                          (["export", "box"], "PATH"), (["inspect"], "NAME"),
                                          (["unload"], "NAME"), (["reload"], "NAME")])
def test_a_missing_argument_is_named(args, missing):
    r = ctl(*args)
    assert r.returncode == EXIT["usage"], r.stderr
    assert f"meshdockctl {args[0]}: {missing} is required" in r.stderr, r.stderr


@pytest.mark.parametrize("args,option,value", [
    (["--timeout", "abc", "ls"], "--timeout", "abc"),
    (["ls", "--timeout=-1"], "--timeout", "-1"),
    (["-t", "1e999", "ls"], "--timeout", "1e999"),
    (["load", "x.msh", "--slots", "three"], "--slots", "three"),
    (["load", "x.msh", "-s", "-2"], "--slots", "-2"),
    (["leases", "--revoke", "12x"], "--revoke", "12x"),
])
def test_a_bad_number_is_an_error_naming_the_option(args, option, value):
    r = ctl("--addr", "unix:/nonexistent.sock", *args)
    assert r.returncode == EXIT["usage"], (r.returncode, r.stderr)
    assert f"{option}: '{value}' is not a" in r.stderr, r.stderr


@pytest.mark.parametrize("verb", [["load", "x.msh"], ["publish", "t", "tensor", "t.npy"]])
def test_too_many_slots_is_refused_in_the_options_words_before_any_rpc(verb):
    # The daemon would say "num_slots 11 is not 1..10", a protocol field this CLI never shows;
    # the address is unreachable, so only the command line can answer.
    r = ctl("--addr", "unix:/nonexistent.sock", *verb, "--slots", "11")
    assert r.returncode == EXIT["usage"], (r.returncode, r.stderr)
    assert "--slots: 11 is more than the 10 ring slots" in r.stderr, r.stderr
    assert "num_slots" not in r.stderr


def test_unknown_options_and_extra_arguments_are_usage_errors():
    r = ctl("ls", "--frob")
    assert r.returncode == EXIT["usage"] and "--frob" in r.stderr
    r = ctl("ls", "extra")
    assert r.returncode == EXIT["usage"] and "extra" in r.stderr
    r = ctl("leases", "box", "--revoke", "12")  # one or the other
    assert r.returncode == EXIT["usage"] and "excludes" in r.stderr, r.stderr


def test_version_and_completion():
    r = ctl("--version")
    assert r.returncode == 0 and r.stdout.startswith("meshdockctl ")
    r = ctl("completion", "bash")
    assert r.returncode == 0
    assert "complete -o filenames -F _meshdockctl meshdockctl" in r.stdout
    assert "load) opts=\"--name" in r.stdout
    if shutil.which("bash"):  # the script is valid bash and completes a verb
        def complete(*words):
            script = r.stdout + (f"COMP_WORDS=(meshdockctl {' '.join(words)}); "
                                 f"COMP_CWORD={len(words)}; _meshdockctl; "
                                 "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
            out = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                                 cwd=conftest.ROOT)
            assert out.returncode == 0, out
            return out.stdout.split()
        assert complete("lo") == ["load"]
        # a trial: --help was offered twice, and describe completed file names
        assert complete("load", "--h") == ["--help"]
        assert complete("describe", "R") == []
        assert "README.md" in complete("load", "R")
    assert ctl("completion", "tcsh").returncode == EXIT["usage"]


# ---- verbs against a real daemon ---------------------------------------------------------------

def test_options_take_value_either_way_and_globals_go_anywhere(daemon):
    mesh = str(daemon.root / "box.v41.msh")
    a = ctl(f"--addr={daemon.addr}", "load", mesh, "--name=one", "--json")
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["slot"]["name"] == "one"
    b = ctl("-a", daemon.addr, "load", mesh, "-n", "two", "-j", "--float32")
    assert b.returncode == 0, b.stderr
    assert json.loads(b.stdout)["slot"]["name"] == "two"
    c = ctl("ls", "--addr", daemon.addr)
    assert c.returncode == 0 and "one" in c.stdout and "two" in c.stdout


def test_load_without_a_name_takes_the_file_name_up_to_its_first_dot(daemon):
    r = daemon.ctl("--json", "load", str(daemon.root / "box.v41b.msh"))
    assert json.loads(r.stdout)["slot"]["name"] == "box"
    r = daemon.ctl("--json", "load", str(daemon.root / "data.v41.msh"))
    assert json.loads(r.stdout)["slot"]["name"] == "data"
    # A file name that makes no valid name: say so, and that --name fixes it.
    odd = daemon.root / "my mesh.v41.msh"
    shutil.copy(daemon.root / "box.v41.msh", odd)
    r = daemon.ctl("load", str(odd), check=False)
    assert r.returncode == EXIT["usage"] and "--name" in r.stderr and "my mesh" in r.stderr


def test_export_says_what_the_format_could_not_hold(daemon):
    """An export to MSH 2.2 merges the blocks of one type and drops gmsh:dim_tags: the daemon
    logged that, and the client was told only the bytes written."""
    mesh = str(daemon.root / "box.v41.msh")
    assert daemon.ctl("load", mesh, "--name", "box").returncode == EXIT["ok"]
    out = str(daemon.root / "box22.msh")
    r = daemon.ctl("export", "box", out, "--format", "msh22")
    lines = r.stdout.splitlines()
    assert lines[0] == f"wrote {out} ({os.path.getsize(out)} bytes)", r.stdout
    assert "  note: point_data 'gmsh:dim_tags' is not written: MSH 2.2 has no node entities" \
        in lines, r.stdout
    assert any("read back as one block" in n for n in lines[1:]), r.stdout
    # meshio's names carry the encoding: "no writer for format 'vtk-ascii'" before.
    daemon.ctl("export", "box", str(daemon.root / "box.vtk"), "--format", "vtk-ascii")
    assert (daemon.root / "box.vtk").read_bytes().split(b"\n")[2] == b"ASCII"
    js = json.loads(daemon.ctl("--json", "export", "box", out, "-f", "--format", "msh22").stdout)
    assert [f"  note: {n}" for n in js["notes"]] == lines[1:]
    # Python: each note is a MeshWarning naming the file, as meshdock.write's notes are.
    import meshdock as md
    with md.Client(daemon.addr) as c, pytest.warns(md.MeshWarning) as caught:
        assert c.export("box", out, format="msh22", overwrite=True) == os.path.getsize(out)
    assert [str(w.message) for w in caught] == [f"{out}: {n}" for n in js["notes"]]


def test_exit_statuses_follow_the_documented_table(daemon, tmp_path):
    mesh = str(daemon.root / "box.v41.msh")
    assert daemon.ctl("load", mesh, "--name", "box").returncode == EXIT["ok"]
    assert daemon.ctl("describe", "nope", check=False).returncode == EXIT["not_found"]
    assert daemon.ctl("unload", "nope", check=False).returncode == EXIT["not_found"]
    assert daemon.ctl("load", mesh, "--name", "box", check=False).returncode == EXIT["exists"]
    assert daemon.ctl("load", mesh, "--name", "a/b", check=False).returncode == EXIT["invalid"]
    assert daemon.ctl("load", "/etc/hostname", "--name", "x",
                      check=False).returncode == EXIT["denied"]
    out = str(daemon.root / "out.vtu")
    assert daemon.ctl("export", "box", out).returncode == EXIT["ok"]
    assert daemon.ctl("export", "box", out, check=False).returncode == EXIT["exists"]
    assert daemon.ctl("export", "box", out, "-f").returncode == EXIT["ok"]
    # inspect reads shared memory itself; a slot that is not there is NOT_FOUND too.
    r = ctl("inspect", "absent", "--prefix", daemon.prefix)
    assert r.returncode == EXIT["not_found"], r.stderr
    assert f"no control block /{daemon.prefix}absent" in r.stderr
    assert ctl("inspect", "box", "--prefix", daemon.prefix).returncode == EXIT["ok"]
    assert ctl("inspect", "a/b", "--prefix", daemon.prefix).returncode == EXIT["invalid"]
    # A prefix without its separator: it looked for /PREFIXbox and said NOT_FOUND.
    r = ctl("inspect", "box", "--prefix", daemon.prefix[:-1])
    assert r.returncode == EXIT["invalid"], r.stderr
    assert f"did you mean '{daemon.prefix[:-1]}.'?" in r.stderr
    # No daemon at the address: unavailable, and the message says there is no socket.
    r = ctl("--addr", f"unix:{tmp_path}/none.sock", "ls")
    assert r.returncode == EXIT["unavailable"] and f"no socket at {tmp_path}/none.sock" in r.stderr
    r = ctl("--addr", f"unix:{tmp_path}/none.sock", "--timeout", "2", "health")
    assert r.returncode == EXIT["unavailable"]


def test_a_relative_path_refused_or_missing_says_how_it_was_made_absolute(daemon, tmp_path):
    """A relative FILE is made absolute from the shell's directory, not the daemon's roots: a
    user in their home typing the name of a file under the root got only "outside the allowed
    roots" for a path they never typed."""
    shutil.copy(daemon.root / "box.v41.msh", tmp_path / "here.msh")
    r = daemon.ctl("load", "here.msh", cwd=tmp_path, check=False)
    assert r.returncode == EXIT["denied"], r.stderr
    assert (f"note: 'here.msh' is relative: meshdockctl made it {tmp_path}/here.msh from this "
            f"shell's directory ({tmp_path})") in r.stderr
    r = daemon.ctl("load", "root/none.msh", cwd=tmp_path, check=False)
    assert r.returncode == EXIT["not_found"] and "'root/none.msh' is relative" in r.stderr
    r = daemon.ctl("load", str(daemon.root / "none.msh"), check=False)  # absolute: no note
    assert r.returncode == EXIT["not_found"] and "note:" not in r.stderr
    r = daemon.ctl("export", "nosuch", "x.vtu", cwd=tmp_path, check=False)  # not the path's fault
    assert r.returncode == EXIT["not_found"] and "note:" not in r.stderr, r.stderr
    r = daemon.ctl("load", "box.v41.msh", "--name", "b", cwd=daemon.root)  # under the root
    assert r.returncode == EXIT["ok"] and "note:" not in r.stderr
    # An export into a directory that is not there: the daemon names the directory.
    r = daemon.ctl("export", "b", "sub/x.vtu", cwd=daemon.root, check=False)
    assert r.returncode == EXIT["not_found"] and "'sub/x.vtu' is relative" in r.stderr, r.stderr
    # A symlink the daemon does not follow: the path was right, so no note about making it so.
    os.symlink(tmp_path / "here.msh", daemon.root / "link.msh")
    r = daemon.ctl("load", "link.msh", cwd=daemon.root, check=False)
    assert r.returncode == EXIT["denied"] and "symlink" in r.stderr, r.stderr
    assert "note:" not in r.stderr, r.stderr


def test_notes_are_summed_up_unless_verbose(daemon):
    r = daemon.ctl("load", str(daemon.root / "box.v41.msh"), "--name", "box", "--float32",
                   "--int32")
    notes = json.loads(daemon.ctl("--json", "describe", "box").stdout)["slot"]["notes"]
    assert len(notes) > 1, notes
    assert "note:" not in r.stdout
    assert f"{len(notes)} notes; -v to list them" in r.stdout, r.stdout
    r = daemon.ctl("-v", "ls")
    assert r.stdout.count("note: ") == len(notes)
    assert "points: float64 -> float32 (copy)" in r.stdout
    assert "-v to list" not in r.stdout


def test_a_socket_the_user_may_not_connect_to_names_the_group_to_join():
    # A daemon in a directory everyone may search, its socket 0660 root:daemon, and the client
    # run as nobody (not in group daemon): EACCES, exit 6, and the group to join.
    top = tempfile.mkdtemp(prefix="meshdockctl-")
    try:
        os.chmod(top, 0o755)
        d = Daemon(top, ("box.v41.msh",))
        try:
            daemon_gid = 1  # "daemon" on Debian
            group = __import__("grp").getgrgid(daemon_gid).gr_name
            os.chown(d.sock, 0, daemon_gid)
            os.chmod(d.sock, 0o660)
            r = subprocess.run(as_user([CTL, "--addr", d.addr, "ls"], NOBODY, NOBODY),
                               capture_output=True, text=True, timeout=30, env=ENV, cwd="/")
            assert r.returncode == EXIT["denied"], (r.returncode, r.stderr)
            for part in (f"permission denied on the socket {d.sock}", "mode 0660",
                         "owner root", f"group {group}", f"join group '{group}'"):
                assert part in r.stderr, r.stderr
            assert "is not answering" not in r.stderr
            # The same socket in a directory nobody may search: the directory is named.
            os.chmod(top, 0o700)
            r = subprocess.run(as_user([CTL, "--addr", d.addr, "ls"], NOBODY, NOBODY),
                               capture_output=True, text=True, timeout=30, env=ENV, cwd="/")
            assert r.returncode == EXIT["denied"], r.stderr
            assert f"the socket's directory {top} (mode 0700" in r.stderr, r.stderr
            os.chmod(top, 0o755)
            # Its owner still connects.
            assert ctl("--addr", d.addr, "ls").returncode == 0
        finally:
            assert d.stop() == 0, d.stderr
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---- --json: every verb -----------------------------------------------------------------------

def test_json_of_every_verb(daemon, tmp_path):
    j = lambda *a: json.loads(daemon.ctl("--json", *a).stdout)  # noqa: E731
    load = j("load", str(daemon.root / "box.v41.msh"), "--name", "box", "--float32")
    assert load["phase"] == "DONE" and load["bytes_total"] > 0
    slot = load["slot"]
    assert slot["name"] == "box" and slot["device"] in ("cpu", "cuda:0")
    for k in ("num_points", "num_cells", "data_size", "version", "write_idx", "num_slots"):
        assert type(slot[k]) is int and slot[k] > 0, (k, slot[k])  # numbers, not "123"
    assert "points: float64 -> float32 (copy)" in slot["notes"]

    reload = j("reload", "box")
    assert reload["phase"] == "DONE" and reload["slot"]["write_idx"] == slot["write_idx"] + 1

    ls = j("ls")
    assert [s["name"] for s in ls["slots"]] == ["box"] and type(ls["slots"][0]["data_size"]) is int

    desc = j("describe", "box")
    arrays = {a["name"]: a for a in desc["arrays"]}
    assert arrays["points"]["dtype"] == "float32"
    assert arrays["points"]["shape"] == [slot["num_points"], 3]
    assert all(type(a["offset"]) is int and type(a["nbytes"]) is int for a in desc["arrays"])
    assert re.fullmatch(r"u?int(32|64)", [a for a in desc["arrays"]
                                           if a["role"] == "cells"][0]["dtype"])
    manifest = desc["manifest"]
    assert isinstance(manifest, dict), manifest  # an object, not an escaped string
    mpoints = [a for a in manifest["arrays"] if a["name"] == "points"][0]
    assert mpoints["dtype"] == "float32" and mpoints["offset"] == arrays["points"]["offset"]

    stats = j("stats")
    assert stats["backend"] in ("host", "cuda") and type(stats["host_memory_used"]) is int
    assert stats["max_decoded_size"] > 0  # every StatsReply field, as the proto names it
    assert stats["slots"][0]["name"] == "box" and type(stats["slots"][0]["bytes"]) is int
    assert stats["slots"][0]["bytes"] > 0

    metrics = j("metrics")["text"]
    assert 'meshdock_rpc_calls_total{method="Load",code="OK"} 1' in metrics
    human = daemon.ctl("metrics").stdout
    assert "# TYPE meshdock_rpc_duration_seconds histogram" in human
    assert 'meshdock_slot_bytes{mesh="box",device="cpu"}' in human

    assert j("health") == {"status": "SERVING", "addr": daemon.addr}
    assert j("leases") == {"leases": []}
    assert j("leases", "--revoke", str(os.getpid())) == {"revoked": 0, "pid": os.getpid()}

    out = j("export", "box", str(daemon.root / "box-out.vtu"))
    assert out["path"] == str(daemon.root / "box-out.vtu")
    assert out["bytes_written"] == os.path.getsize(out["path"])
    assert out["notes"] == []

    insp = json.loads(ctl("--json", "inspect", "box", "--prefix", daemon.prefix).stdout)
    assert type(insp["version"]) is int and insp["num_slots"] == slot["num_slots"]
    # The same forms as every other reply: device as ls says it, ages in seconds.
    assert insp["device"] == slot["device"]
    assert insp["control_segment"] == slot["control_segment"] and "control_object" not in insp
    assert insp["catalog_segment"] == slot["catalog_segment"] and "catalog_object" not in insp
    assert "heartbeat_age_ns" not in insp and 0 <= insp["heartbeat_age_seconds"] < 5
    assert insp["device_uuid"] == ""  # a host slot's catalog names no GPU
    page = [p for p in insp["pages"] if p["arrays"]][0]
    assert {a["name"]: a["dtype"] for a in page["arrays"]}["points"] == "float32"
    when = is_rfc3339(insp["time"])
    assert abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) < 60

    np.save(tmp_path / "t.npy", np.ones(slot["num_points"], np.float32))
    pub = j("publish", "box", "point_data/T", str(tmp_path / "t.npy"))
    assert pub["frame"] == slot["write_idx"] + 2 and pub["slot"]["name"] == "box"

    assert j("unload", "box") == {"name": "box"}
    assert j("shutdown") == {"stopping": True}
    assert daemon.proc.wait(15) == 0


def test_json_watch_is_json_lines_with_wall_clock_times(daemon):
    w = subprocess.Popen([CTL, "--addr", daemon.addr, "watch", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert PRIME in until_printed(w, lambda: prime(daemon, "prime"))  # the stream is open
        daemon.load("box.v41.msh", "box")
        daemon.ctl("reload", "box")
        lines = []
        while len(lines) < 2:
            lines += unprimed([w.stdout.readline()])
    finally:
        w.terminate()
        w.wait(10)
        w.stdout.close()
        w.stderr.close()
    events = [json.loads(line) for line in lines]  # one object per line
    assert [(e["kind"], e["name"]) for e in events] == [("LOADED", "box"), ("RELOADED", "box")]
    now = datetime.datetime.now(datetime.timezone.utc)
    for e in events:
        assert type(e["frame"]) is int and isinstance(e["timestamp"], float)
        assert e["dropped"] == 0  # a watch that kept up lost nothing
        assert abs((now - is_rfc3339(e["time"])).total_seconds()) < 30, e
    # Monotonic and wall clock advance together.
    dt_mono = events[1]["timestamp"] - events[0]["timestamp"]
    dt_wall = (is_rfc3339(events[1]["time"]) - is_rfc3339(events[0]["time"])).total_seconds()
    assert abs(dt_mono - dt_wall) < 0.01, (dt_mono, dt_wall)
    assert events[0]["frame"] == 1 and events[1]["frame"] == 2


def test_watch_ends_with_status_3_when_the_daemon_shuts_down(daemon):
    # Exit 0 would tell a supervisor loop (`until meshdockctl watch; ...`) all is well.
    w = subprocess.Popen([CTL, "--addr", daemon.addr, "watch"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    assert PRIME in until_printed(w, lambda: prime(daemon, "prime"))  # the stream is open
    daemon.ctl("shutdown")
    out, err = w.communicate(timeout=15)
    assert w.returncode == EXIT["unavailable"], (out, err)
    assert "SHUTDOWN" in out
    assert f"meshdockd at {daemon.addr} shut down" in err
    assert daemon.proc.wait(15) == 0


def test_the_documented_exit_table_is_the_one_the_client_prints():
    doc = (conftest.ROOT / "docs" / "operations.md").read_text()
    section = doc[doc.index("## meshdockctl"):doc.index("### Limits and the token")]
    rows = dict(re.findall(r"^\| (\d+) \| ([^|]+?)[ :(|]", section, re.M))
    assert sorted(map(int, rows)) == list(range(11)), rows
    helptext = " ".join(ctl("--help").stdout.split())
    for code, word in [(3, "daemon unavailable"), (4, "not found"), (6, "permission denied"),
                       (8, "already exists"), (10, "deadline exceeded")]:
        assert f"{code} {word}" in helptext, (code, helptext)
        assert EXIT[{3: "unavailable", 4: "not_found", 6: "denied", 8: "exists",
                     10: "deadline"}[code]] == code
    assert rows["4"].startswith("NOT_FOUND") and rows["6"].startswith("PERMISSION_DENIED")


# ---- the progress bar on a terminal ----------------------------------------------------------

def run_on_a_terminal(args, timeout=120):
    """Runs meshdockctl with its stderr on a pseudo-terminal (so it draws its bar); returns
    (exit status, stdout, everything written to the terminal)."""
    import pty
    master, slave = pty.openpty()
    try:
        p = subprocess.Popen([CTL, *args], stdout=subprocess.PIPE, stderr=slave, env=ENV)
        os.close(slave)
        slave = None
        screen = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            screen += chunk
        out = p.communicate(timeout=timeout)[0].decode()
        return p.returncode, out, screen.decode(errors="replace")
    finally:
        os.close(master)
        if slave is not None:
            os.close(slave)


def test_a_terminal_load_of_a_big_file_shows_the_bar_moving_through_read(daemon, progress_msh):
    shutil.copy(progress_msh, daemon.root / "big.msh")
    rc, out, screen = run_on_a_terminal(["--addr", daemon.addr, "load",
                                         str(daemon.root / "big.msh")])
    (daemon.root / "big.msh").unlink()  # 131 MiB: pytest keeps its tmp dirs
    assert rc == 0, screen
    assert "big" in out and "1499997 cells (tetra)" in out
    # Each redraw starts with \r: "READ  [####   ]  54% 72.0 MiB of 131.0 MiB".
    frames = [f for f in screen.split("\r") if f.startswith("READ")]
    percents = [int(re.search(r"\]\s+(\d+)%", f).group(1)) for f in frames]
    moving = [p for p in percents if 0 < p < 100]
    assert len(set(moving)) >= 2 and moving == sorted(moving), frames
    assert re.search(r"\d+\.\d MiB of 131.0 MiB", screen), frames
    assert percents[-1] == 100
    # The bar is wiped before the summary is printed.
    assert screen.endswith("\r" + " " * 90 + "\r"), screen[-200:]


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_publish_interrupted_while_it_holds_its_source_object_removes_it(daemon, tmp_path, sig):
    # Ctrl-C on `meshdockctl publish` of a large .npy left its source object, as large as the
    # array, in /dev/shm until another producer of this user swept it. The publish is frozen
    # (SIGSTOP) while its object exists, the signal sent, then let go: no race on when.
    import signal
    np.save(tmp_path / "big.npy", np.ones(128 << 20, np.uint8))
    p = subprocess.Popen([CTL, "--addr", daemon.addr, "publish", "big", "tensor",
                          str(tmp_path / "big.npy"), "--via", "shm"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    mine = lambda: [n for n in os.listdir("/dev/shm")  # noqa: E731
                    if n.startswith(f"meshdock-src.{p.pid}.")]
    deadline = time.monotonic() + 30
    try:
        while True:
            if mine():
                p.send_signal(signal.SIGSTOP)
                if mine():
                    break  # frozen while it holds the object
                p.send_signal(signal.SIGCONT)
            assert p.poll() is None, "the publish ended before its object was seen"
            assert time.monotonic() < deadline, "no source object within 30 s"
            time.sleep(0.001)
        p.send_signal(getattr(signal, sig))
        p.send_signal(signal.SIGCONT)
        p.wait(30)
        assert p.returncode == -getattr(signal, sig)  # the signal's own end, as before
        assert mine() == []
    finally:
        p.kill()
        p.wait()
        for n in mine():
            os.unlink(os.path.join("/dev/shm", n))


def test_publish_over_max_decoded_size_is_refused_before_a_source_object(tmp_path):
    """Before: `meshdockctl publish --via shm` of an array over the daemon's max_decoded_size
    made a source object as large as the array (its pages allocated in /dev/shm), read the file
    into it, and only then heard the daemon refuse the header. Now it asks the daemon's limit
    (Stats) first: exit 7 (RESOURCE_EXHAUSTED) saying so, no PublishSmall reached the daemon;
    an array under the limit still goes by shm."""
    d = Daemon(tmp_path, (), config={"max_decoded_size": 1 << 20})
    try:
        np.save(tmp_path / "big.npy", np.ones(4 << 20, np.uint8))
        for via in ("shm", "auto"):
            r = d.ctl("publish", "t", "tensor", str(tmp_path / "big.npy"), "--via", via,
                      check=False)
            assert r.returncode == EXIT["exhausted"], (r.returncode, r.stderr)
            assert r.stderr == (f"meshdockctl publish: slot 't': tensor: {4 << 20} bytes are "
                                f"over max_decoded_size ({1 << 20}); nothing was sent\n")
        assert not any("PublishSmall from" in line for line in d.log), d.log
        np.save(tmp_path / "small.npy", np.ones(1 << 20, np.uint8))
        r = d.ctl("publish", "t", "tensor", str(tmp_path / "small.npy"), "--via", "shm")
        assert r.stdout == "published frame 1 of t\n", r.stdout
    finally:
        assert d.stop() == 0, d.stderr


def test_publish_streams_a_npy_file_as_a_field_or_a_tensor(daemon, tmp_path):
    import meshdock
    daemon.ctl("load", str(daemon.root / "box.v41.msh"), "--name", "box")
    n = len(meshdock.read(daemon.root / "box.v41.msh").points)
    t = np.linspace(0, 1, n)
    np.save(tmp_path / "T.npy", t)
    r = daemon.ctl("publish", "box", "point_data/T", str(tmp_path / "T.npy"))
    assert r.stdout == "published frame 2 of box\n", r.stdout
    manifest, data = daemon.newest("box")
    from daemon_util import arrays_of
    np.testing.assert_array_equal(arrays_of(manifest, data)["point_data/T"], t)
    # A 5 MiB image into a tensor slot of its own, on the host: read from the file into a shm
    # source object the daemon reads (the default over 256 KiB on its Unix socket), or streamed
    # in 1 MiB chunks (--via grpc); the object is gone afterwards.
    from test_metrics import parse, value
    received = lambda via: value(parse(daemon.ctl("metrics").stdout),  # noqa: E731
                                 "meshdock_publish_received_bytes_total", via=via)
    sources = lambda: {n for n in os.listdir("/dev/shm") if n.startswith("meshdock-src.")}  # noqa
    before = sources()
    img = np.random.default_rng(3).random((640, 512, 4), dtype=np.float32)
    np.save(tmp_path / "img.npy", img)
    r = daemon.ctl("publish", "cam", "tensor", str(tmp_path / "img.npy"), "--device", "cpu",
                   "--slots", "2")
    assert r.stdout == "published frame 1 of cam\n", r.stdout
    manifest, data = daemon.newest("cam")
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], img)
    assert daemon.catalog("cam").num_slots == 2
    assert received("shm") == img.nbytes and sources() == before
    grpc_before = received("grpc")
    img2 = img[::-1].copy()
    np.save(tmp_path / "img.npy", img2)
    r = daemon.ctl("publish", "cam", "tensor", str(tmp_path / "img.npy"), "--via", "grpc")
    assert r.stdout == "published frame 2 of cam\n", r.stdout
    manifest, data = daemon.newest("cam")
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], img2)
    assert received("grpc") - grpc_before == img.nbytes and received("shm") == img.nbytes
    for dt in ("<u2", "|b1", "<i8", "<f2"):
        a = (np.arange(12) % 2).astype(dt).reshape(3, 4)
        np.save(tmp_path / "a.npy", a)
        daemon.ctl("publish", "cam", "tensor", str(tmp_path / "a.npy"))
        manifest, data = daemon.newest("cam")
        np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], a)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: a mount namespace of its own")
def test_publish_sends_messages_when_the_daemon_cannot_see_its_object(daemon, tmp_path):
    """meshdockctl in another /dev/shm than the daemon's (a mount namespace of its own, as in a
    container): the daemon cannot find the source object and says so in its reply's trailer,
    so --via auto sends the bytes in messages (-v says why); --via shm reports the refusal."""
    from test_metrics import parse, value
    received = lambda via: value(parse(daemon.ctl("metrics").stdout),  # noqa: E731
                                 "meshdock_publish_received_bytes_total", via=via)
    img = np.random.default_rng(5).random((256, 256, 2), dtype=np.float32)  # 512 KiB
    np.save(tmp_path / "img.npy", img)

    def elsewhere(*args):
        return subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=16m none /dev/shm && exec "$@"',
             "sh", CTL, "--addr", daemon.addr, *args],
            capture_output=True, text=True, timeout=60)

    shm, grpc = received("shm"), received("grpc")
    r = elsewhere("-v", "publish", "img", "tensor", str(tmp_path / "img.npy"))
    assert (r.returncode, r.stdout) == (0, "published frame 1 of img\n"), r.stderr
    assert "through gRPC messages:" in r.stderr and "no such object" in r.stderr, r.stderr
    assert received("grpc") - grpc == img.nbytes and received("shm") == shm
    manifest, data = daemon.newest("img")
    from daemon_util import arrays_of
    np.testing.assert_array_equal(arrays_of(manifest, data)["tensor"], img)
    r = elsewhere("publish", "img", "tensor", str(tmp_path / "img.npy"), "--via", "shm")
    assert r.returncode == EXIT["not_found"] and "no such object" in r.stderr, r
    assert received("shm") == shm


def test_publish_refuses_files_it_cannot_send_and_names_the_fix(daemon, tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.zeros((4, 4), np.float32))
    raw = good.read_bytes()
    cases = {
        "big.npy": (np.zeros(4, ">f4"), "is big-endian"),
        "fortran.npy": (np.asfortranarray(np.zeros((3, 4), np.float32)), "Fortran order"),
        "complex.npy": (np.zeros(4, np.complex64), "cannot be published"),
        "struct.npy": (np.zeros(4, [("a", "<f4"), ("b", "<i4")]), "structured dtype"),
        "five.npy": (np.zeros((1, 1, 1, 1, 2), np.float32), "Publish takes 1 to 4"),
        "scalar.npy": (np.float32(1), "Publish takes 1 to 4"),
    }
    for name, (a, words) in cases.items():
        np.save(tmp_path / name, a)
    (tmp_path / "short.npy").write_bytes(raw[:-5])
    cases["short.npy"] = (None, "the header promises 64 bytes of data")
    (tmp_path / "long.npy").write_bytes(raw + b"x")
    cases["long.npy"] = (None, "not what numpy.save wrote")
    (tmp_path / "text.npy").write_bytes(b"not numpy at all")
    cases["text.npy"] = (None, "not a NumPy .npy file")
    (tmp_path / "hdr.npy").write_bytes(raw[:8] + b"\xff\x00" + raw[10:])
    cases["hdr.npy"] = (None, "header says it is 255 bytes")
    for name, (_, words) in cases.items():
        r = daemon.ctl("publish", "x", "tensor", str(tmp_path / name), check=False)
        assert r.returncode == EXIT["invalid"], (name, r.returncode, r.stderr)
        assert str(tmp_path / name) in r.stderr and words in r.stderr, (name, r.stderr)
    r = daemon.ctl("publish", "x", "tensor", str(tmp_path / "nope.npy"), check=False)
    assert r.returncode == EXIT["not_found"] and "nope.npy" in r.stderr
    # The daemon's refusals come through with their status: a mesh's name is not a tensor's.
    daemon.ctl("load", str(daemon.root / "box.v41.msh"), "--name", "box")
    r = daemon.ctl("publish", "box", "tensor", str(good), check=False)
    assert r.returncode == EXIT["invalid"] and "'box' holds a mesh" in r.stderr, r.stderr
    assert [s.split()[0] for s in daemon.ctl("ls").stdout.splitlines()
            if not s.startswith(" ")] == ["box"]


# ---- found by a trial from outside (session 18) ---------------------------------------------

@pytest.mark.parametrize("addr, why", [
    ("", "is empty"), ("foo", "has no :PORT"), ("tcp://x:1", "is a URL"),
    ("unix:", "names no socket"), ("localhost:0", "has no port 1-65535"),
    ("host:99999", "has no port 1-65535")])
def test_an_address_that_names_nothing_is_a_usage_error(addr, why):
    # Before: gRPC's resolver logged DNS and channel-stack lines and meshdockctl said
    # "UNKNOWN: Failed to create secure client channel" (exit 1), or waited on DNS (exit 3).
    r = ctl("--addr", addr, "ls")
    assert r.returncode == EXIT["usage"], r.stderr
    assert r.stderr.startswith(f"meshdockctl: --addr '{addr}' {why}"), r.stderr
    assert "listens on unix:PATH or HOST:PORT" in r.stderr
    assert "dns" not in r.stderr.lower() and "E1" not in r.stderr


def test_inspect_takes_MESHDOCK_PREFIX_as_the_sdks_do(daemon):
    # The man page says so; before, inspect looked under meshdock. whatever it was.
    daemon.ctl("load", str(daemon.root / "box.v41.msh"), "--name", "box")
    r = ctl("inspect", "box", env=dict(os.environ, MESHDOCK_PREFIX=daemon.prefix))
    assert r.returncode == EXIT["ok"], r.stderr
    r = ctl("inspect", "box", "--prefix", "other.",
            env=dict(os.environ, MESHDOCK_PREFIX=daemon.prefix))  # the option wins
    assert r.returncode == EXIT["not_found"] and "/other.box" in r.stderr


def test_a_timeout_says_which_call_and_what_became_of_a_load(tmp_path):
    # Before: "meshdockctl: DEADLINE_EXCEEDED: Deadline Exceeded".
    d = Daemon(tmp_path, ("box.v41.msh",), env={"MESHDOCK_FAILPOINT": "read:1500"})
    try:
        r = d.ctl("--timeout", "0.3", "load", str(d.root / "box.v41.msh"), "-n", "b",
                  check=False)
        assert r.returncode == EXIT["deadline"], r.stderr
        assert (f"meshdockctl load: DEADLINE_EXCEEDED: no reply from meshdockd at {d.addr} "
                "within --timeout 0.3 s (the daemon stops a load past it and publishes "
                "nothing)") in r.stderr
    finally:
        assert d.stop() == 0, d.stderr


# ---- found by a review (Watch events, watch, leases --revoke, a non-socket --addr) -----------

def test_every_failed_reload_says_LOAD_FAILED_and_watch_prints_a_frame_only_where_one_is(daemon):
    # Before: a reload whose file had gone (NOT_FOUND, before any parse) published no event, so
    # a client waiting for RELOADED or LOAD_FAILED (docs/architecture.md) waited for ever; and
    # watch printed "frame 0" for UNLOADED, LOAD_FAILED and SHUTDOWN, and SHUTDOWN an empty name.
    shutil.copy(daemon.root / "box.v41.msh", daemon.root / "r.msh")
    w = subprocess.Popen([CTL, "--addr", daemon.addr, "watch"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        # The stream is open before the events happen.
        assert PRIME in until_printed(w, lambda: prime(daemon, "prime"))
        daemon.ctl("load", str(daemon.root / "r.msh"))
        os.unlink(daemon.root / "r.msh")
        r = daemon.ctl("reload", "r", check=False)
        assert r.returncode == EXIT["not_found"], r.stderr
        # A load refused because the name is loaded changes nothing: no event.
        r = daemon.ctl("load", str(daemon.root / "box.v41.msh"), "-n", "r", check=False)
        assert r.returncode == EXIT["exists"], r.stderr
        daemon.ctl("unload", "r")  # the failed reload left the mesh as it was
        daemon.ctl("shutdown")
        out, err = w.communicate(timeout=15)
    finally:
        if w.poll() is None:
            w.kill()
            w.communicate()
    lines = unprimed(out.splitlines())
    assert [line.split()[2] for line in lines] == ["LOADED", "LOAD_FAILED", "UNLOADED",
                                                   "SHUTDOWN"], out
    loaded, failed, unloaded, shut = lines
    assert re.search(r" LOADED +r frame 1 /\S*r\.msh$", loaded), loaded
    assert re.search(r" LOAD_FAILED r \S*r\.msh", failed) and "frame" not in failed, failed
    assert re.search(r" UNLOADED +r$", unloaded), unloaded
    assert "frame" not in shut and "  " not in shut.split("SHUTDOWN", 1)[1].lstrip(), shut
    assert daemon.proc.wait(15) == 0


def test_watch_of_a_name_not_loaded_says_it_waits_for_it(daemon):
    # Watch NAME waits for the name's load (LOADED or LOAD_FAILED); other verbs exit 4 for it,
    # and before watch waited without a word: a mistyped name looked like a quiet mesh.
    daemon.load("box.v41.msh", "box")
    for name, said in (("nosuch", True), ("box", False)):
        w = subprocess.Popen([CTL, "--addr", daemon.addr, "watch", name], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=ENV)
        # Until it prints an event: it has looked the name up by then (a fixed 1 s sleep was
        # not always enough on a loaded CI box for it to start and ask).
        poke = (lambda: prime(daemon, name)) if said else \
            (lambda: daemon.ctl("reload", name))
        assert until_printed(w, poke)
        w.terminate()
        out, err = w.communicate(timeout=10)
        hint = f"no mesh named '{name}' is loaded; waiting for it"
        assert (hint in err) == said, err
    # It does wait: the load comes to it.
    w = subprocess.Popen([CTL, "--addr", daemon.addr, "watch", "late"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        assert PRIME in until_printed(w, lambda: prime(daemon, "late"))  # the stream is open
        daemon.load("box.v41.msh", "late")
        line = w.stdout.readline()
        while PRIME in line:
            line = w.stdout.readline()
        assert " LOADED " in line
    finally:
        w.terminate()
        w.communicate(timeout=10)


def test_revoke_of_a_pid_holding_no_lease_says_so(daemon):
    pid = 999999
    try:
        os.kill(pid, 0)
        running = True
    except ProcessLookupError:
        running = False
    except PermissionError:
        running = True
    r = daemon.ctl("leases", "--revoke", str(pid))
    assert r.returncode == EXIT["ok"]
    assert r.stdout.startswith("revoked 0 leases\n") and f"pid {pid} holds no lease" in r.stdout
    assert ("no process has that pid" in r.stdout) == (not running), r.stdout
    assert json.loads(daemon.ctl("--json", "leases", "--revoke", str(pid)).stdout) == {
        "revoked": 0, "pid": pid}  # unchanged
    r = ctl("leases", "--revoke")
    assert r.returncode == EXIT["usage"]
    assert "--revoke needs a PID" in r.stderr and "required PID:PID" not in r.stderr, r.stderr


def test_an_addr_that_is_not_a_socket_says_what_it_is(tmp_path):
    # Before: "nothing listens on ... (a socket left by a meshdockd that is gone?)".
    (tmp_path / "f").write_text("x")
    for path, what in ((tmp_path, "a directory"), (tmp_path / "f", "a regular file")):
        r = ctl("--addr", f"unix:{path}", "ls")
        assert r.returncode == EXIT["unavailable"], r.stderr
        assert f"{path} is {what}, not meshdockd's socket" in r.stderr, r.stderr
        assert "nothing listens" not in r.stderr


@pytest.mark.parametrize("verb", [["describe"], ["unload"], ["reload"], ["watch"], ["leases"],
                                  ["inspect"], ["export", "", "x.vtu"]])
def test_an_empty_name_is_a_usage_error(verb):
    # describe '' asked the daemon (NOT_FOUND "no mesh named ''"); watch '' watched everything.
    args = verb if len(verb) > 1 else verb + [""]
    r = ctl("--addr", "unix:/nonexistent.sock", *args)
    assert r.returncode == EXIT["usage"], (r.returncode, r.stderr)
    assert "NAME: an empty name names no mesh" in r.stderr, r.stderr
