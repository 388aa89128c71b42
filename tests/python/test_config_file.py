"""meshdockd's configuration file: which one it reads (--config, else $MESHDOCK_CONFIG, else the
default path when it exists, else built-in defaults) and that its first log line says so;
export_roots (where Export may write) apart from roots (where files are read)."""
import json
import os
import re
import signal
import subprocess

import grpc
import pytest

from daemon_util import BIN, Daemon, wait_for
from meshdock.v1 import meshdock_pb2 as pb


def default_config_path():
    """The built-in default, as `meshdockd --help` states it."""
    out = subprocess.run([str(BIN / "meshdockd"), "--help"], capture_output=True, text=True)
    m = re.search(r"else\s+(/\S+)\s+when it", out.stdout)
    assert m, out.stdout
    return m.group(1)


def test_the_file_named_by_MESHDOCK_CONFIG_is_read_and_named_first(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    cfg = tmp_path / "env.json"
    cfg.write_text(json.dumps({"export_roots": [str(exports)]}))
    d = Daemon(tmp_path, files=["box.v41.msh"], env={"MESHDOCK_CONFIG": str(cfg)})
    try:
        d.load("box.v41.msh", "box")
        # The read root is not an export root any more: nothing is written there.
        with pytest.raises(grpc.RpcError) as e:
            d.stub.Export(pb.ExportRequest(name="box", path=str(d.root / "out.vtu")))
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "outside the allowed export roots (" + str(exports) + ")" in e.value.details()
        assert not (d.root / "out.vtu").exists()
        rep = d.stub.Export(pb.ExportRequest(name="box", path=str(exports / "out.vtu")))
        assert rep.bytes_written == (exports / "out.vtu").stat().st_size > 0
        # Nor is a file read from under an export root.
        with pytest.raises(grpc.RpcError) as e:
            list(d.stub.Load(pb.LoadRequest(path=str(exports / "out.vtu"), name="back")))
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED

        # SIGHUP rereads the same file: without export_roots, Export writes under roots again.
        cfg.write_text("{}")
        d.proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: any(f"SIGHUP: configuration reread from {cfg}" in l
                                    for l in d.log))
        rep = d.stub.Export(pb.ExportRequest(name="box", path=str(d.root / "out.vtu")))
        assert rep.bytes_written == (d.root / "out.vtu").stat().st_size > 0
    finally:
        assert d.stop() == 0
    assert d.stderr.splitlines()[0] == \
        f"meshdockd: notice: configuration: from {cfg} ($MESHDOCK_CONFIG)"


def test_the_flag_wins_over_MESHDOCK_CONFIG(tmp_path):
    env_cfg = tmp_path / "env.json"
    env_cfg.write_text('{"num_slots": 7}')
    d = Daemon(tmp_path, config={"num_slots": 2}, env={"MESHDOCK_CONFIG": str(env_cfg)})
    assert d.stop() == 0
    assert d.stderr.splitlines()[0] == \
        f"meshdockd: notice: configuration: from {tmp_path / 'meshdockd.json'} (--config)"


def test_an_empty_MESHDOCK_CONFIG_means_built_in_defaults(tmp_path):
    d = Daemon(tmp_path, env={"MESHDOCK_CONFIG": ""})
    assert d.stop() == 0
    assert d.stderr.splitlines()[0] == ("meshdockd: notice: configuration: none "
                                        "($MESHDOCK_CONFIG is set and empty): built-in defaults "
                                        "and flags")


def test_no_default_file_means_built_in_defaults(tmp_path, monkeypatch):
    path = default_config_path()
    if os.path.exists(path):
        pytest.skip(f"{path} exists on this machine (an installed meshdock)")
    monkeypatch.delenv("MESHDOCK_CONFIG", raising=False)
    d = Daemon(tmp_path, extra=["--log-level", "error"])
    assert d.stop() == 0
    # Said whatever the log level.
    assert d.stderr.splitlines()[0] == (
        f"meshdockd: notice: configuration: none (no --config, $MESHDOCK_CONFIG unset, nothing "
        f"at {path}): built-in defaults and flags")


def test_a_missing_file_named_by_MESHDOCK_CONFIG_stops_the_start(tmp_path):
    missing = tmp_path / "nope.json"
    r = subprocess.run([str(BIN / "meshdockd"), "--listen", f"unix:{tmp_path / 's.sock'}"],
                       capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, MESHDOCK_CONFIG=str(missing)))
    assert r.returncode == 2
    lines = r.stderr.splitlines()
    # It said "configuration: read NOPE", then that NOPE could not be opened.
    assert lines[0] == f"meshdockd: notice: configuration: from {missing} ($MESHDOCK_CONFIG)"
    assert f"{missing}: cannot open the configuration file" in r.stderr


@pytest.mark.parametrize("how", ["file", "flag"])
def test_an_export_root_that_does_not_exist_stops_the_start(tmp_path, how):
    missing = tmp_path / "no-exports"
    args = [str(BIN / "meshdockd"), "--listen", f"unix:{tmp_path / 's.sock'}",
            "--root", str(tmp_path)]
    env = dict(os.environ, MESHDOCK_CONFIG="")
    if how == "file":
        cfg = tmp_path / "c.json"
        cfg.write_text(json.dumps({"export_roots": [str(missing)]}))
        args += ["--config", str(cfg)]
    else:
        args += ["--export-root", str(missing)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=30, env=env)
    assert r.returncode == 2, r.stderr
    assert (f"export root '{missing}' (config key \"export_roots\" / --export-root DIR): "
            "no such directory") in r.stderr
    assert not (tmp_path / "s.sock").exists()


def test_print_config_shows_export_roots(tmp_path):
    env = dict(os.environ, MESHDOCK_CONFIG="")
    run = lambda *a: json.loads(subprocess.run(
        [str(BIN / "meshdockd"), *a, "--print-config"], capture_output=True, text=True,
        env=env, check=True).stdout)
    assert run()["export_roots"] is None  # Export writes under roots
    # --print-config checks that they are directories, as the start does.
    x, y = tmp_path / "x", tmp_path / "y"
    x.mkdir()
    y.mkdir()
    assert run("--export-root", str(x), "--export-root", str(y))["export_roots"] == \
        [str(x), str(y)]


def meshdockd(*args, tmp_path):
    """meshdockd ARGS with no other configuration, on a socket of its own under tmp_path (else
    where ARGS say)."""
    listen = ["--listen", f"unix:{tmp_path / 's.sock'}"] if tmp_path else []
    return subprocess.run([str(BIN / "meshdockd"), *listen, *args], capture_output=True,
                          text=True, timeout=30, env=dict(os.environ, MESHDOCK_CONFIG=""))


@pytest.mark.parametrize("listen,why", [
    ("0.0.0.0:19464", "0.0.0.0 is not a loopback address"),
    ("nonsense", "is not HOST:PORT (e.g. 127.0.0.1:9464)"),
    ("127.0.0.1:99999", "the port is not a number from 0 to 65535")])
def test_a_bad_metrics_listen_is_a_configuration_error_exit_2(tmp_path, listen, why):
    # A trial: exit status 1, which systemd's Restart=on-failure (all but status 2) answered
    # with a restart loop; the message named neither the file nor said "configuration".
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"metrics_listen": listen}))
    r = meshdockd("--root", str(tmp_path), "--config", str(cfg), tmp_path=tmp_path)
    assert r.returncode == 2, r.stderr
    assert f"meshdockd: configuration: {cfg}: metrics_listen '{listen}'" in r.stderr, r.stderr
    assert why in r.stderr, r.stderr
    assert not (tmp_path / "s.sock").exists()


def test_print_config_refuses_what_the_start_refuses_with_the_same_message(tmp_path):
    # A trial: --print-config printed each of these and exited 0; the start then exited 2.
    missing = tmp_path / "nonexistent"
    cfg = tmp_path / "c.json"
    for bad, said in (
            ({"listen": "127.0.0.1:1"},
             f"{cfg}: listen '127.0.0.1:1' is TCP, which needs a bearer token: set "
             "\"token_file\""),
            ({"roots": [str(missing)]},
             f"root '{missing}' (config key \"roots\" / --root DIR): no such directory"),
            ({"roots": [str(tmp_path)], "export_roots": [str(cfg)]},
             f"export root '{cfg}' (config key \"export_roots\" / --export-root DIR): not a "
             "directory"),
            ({"metrics_listen": "10.1.2.3:9464"},
             f"{cfg}: metrics_listen '10.1.2.3:9464': 10.1.2.3 is not a loopback address"),
            ({"token_file": str(missing), "listen": "127.0.0.1:1"},
             f"{missing}: cannot read a token (first line)")):
        cfg.write_text(json.dumps({"listen": f"unix:{tmp_path / 's.sock'}", **bad}))
        printed = meshdockd("--config", str(cfg), "--print-config", tmp_path=None)
        started = meshdockd("--config", str(cfg), tmp_path=None)
        for r in (printed, started):
            assert r.returncode == 2, (bad, r.stderr)
            assert said in r.stderr, (bad, r.stderr)
        assert printed.stdout == ""
        error = [l for l in started.stderr.splitlines() if "configuration: " + said[:20] in l
                 or said in l]
        assert error and error[-1] in printed.stderr.splitlines(), (started.stderr,
                                                                     printed.stderr)
    assert not (tmp_path / "s.sock").exists()


def test_configuration_errors_name_the_file_or_the_flag(tmp_path):
    # A trial: "configuration: log_level 'verbose' is not ...", "device 'gpu' is not ..." and
    # "prefix: prefix 'a/b.' has ..." named neither where the value came from nor the key once.
    cfg = tmp_path / "bad.json"
    for bad, flags, said in (
            ({"log_level": "verbose"}, [],
             f"{cfg}: log_level 'verbose' is not error, warn, info or debug"),
            ({"device": "gpu"}, [], f"{cfg}: device 'gpu' is not auto, cpu or cuda:N"),
            ({}, ["--device", "gpu"], "configuration: --device 'gpu' is not auto, cpu or cuda:N"),
            ({"device": "gpu"}, ["--device", "tpu"],
             "configuration: --device 'tpu' is not auto, cpu or cuda:N"),
            ({"prefix": "a/b."}, [], f"{cfg}: prefix 'a/b.' has a character outside"),
            ({}, ["--prefix", "md7"], "configuration: --prefix 'md7' does not end with"),
            ({"max_message_size": 1}, [], f"{cfg}: max_message_size 1 is under 64 KiB"),
            ({"listen": "tcp:"}, [],
             f"{cfg}: listen 'tcp:' is malformed: give unix:PATH or HOST:PORT"),
            ({}, ["--listen", "http://127.0.0.1:80"],
             "configuration: --listen 'http://127.0.0.1:80' is malformed: give unix:PATH or "
             "HOST:PORT"),
            ({"listen": "unix:"}, [], f"{cfg}: listen 'unix:' is malformed")):
        cfg.write_text(json.dumps(bad))
        r = subprocess.run([str(BIN / "meshdockd"), "--config", str(cfg), *flags,
                            "--print-config"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (bad, flags, r.stderr)
        assert said in r.stderr, (bad, flags, r.stderr)
        assert "prefix: prefix" not in r.stderr


def test_a_directory_or_unreadable_config_stops_the_start_saying_why(tmp_path):
    # A trial: --config DIR printed libstdc++'s "basic_filebuf::underflow error reading the
    # file: Is a directory" (exit 1); a missing file said no reason.
    for path, why in ((tmp_path, "cannot read the configuration file: it is a directory"),
                      (tmp_path / "nope.json",
                       "cannot open the configuration file (No such file or directory)")):
        r = subprocess.run([str(BIN / "meshdockd"), "--config", str(path), "--print-config"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, r.stderr
        assert f"{path}: {why}" in r.stderr
        assert "basic_filebuf" not in r.stderr


def test_sighup_says_which_changed_keys_wait_for_a_restart(tmp_path):
    # A trial changed listen, socket_mode and shm_mode and sent SIGHUP: the log said only
    # "configuration reread", and none of them applied.
    cfg = tmp_path / "d.json"
    cfg.write_text(json.dumps({"log_level": "info"}))
    d = Daemon(tmp_path, files=["box.v41.msh"], config=None, extra=["--config", str(cfg)])
    try:
        cfg.write_text(json.dumps({"listen": f"unix:{tmp_path}/other.sock",
                                   "socket_mode": "0600", "shm_mode": "0600",
                                   "max_streams": 3}))
        d.proc.send_signal(signal.SIGHUP)
        want = (f"meshdockd: warn: SIGHUP: socket_mode, shm_mode, max_streams changed in {cfg}; "
                "that applies after a restart (the running value is kept)")
        assert wait_for(lambda: any(want in l for l in d.log)), d.log
        # listen came from the command line, which wins over the file: nothing to say of it
        d.load("box.v41.msh", "box")  # still serving on its socket
    finally:
        assert d.stop() == 0, d.stderr


def test_meshes_in_load_are_loaded_at_every_start_and_one_failure_stops_none(tmp_path):
    """"load" lists meshes the daemon loads once it serves, so a restart (systemd's, after a
    crash or a lost GPU) brings them back with no client. A missing file is logged, naming the
    entry, and the other entries load; a second start of the same configuration loads them again.
    """
    import meshdock as md
    root = tmp_path / "root"
    config = {"load": [
        {"path": str(root / "missing.msh"), "name": "gone"},
        {"path": str(root / "box.v41.msh"), "name": "box", "num_slots": 2, "watch": True}]}
    for start in range(2):
        d = Daemon(tmp_path, files=["box.v41.msh"], config=config)
        try:
            with md.attach("box", prefix=d.prefix, timeout=30) as slot:
                f = slot.wait(30)
                assert f.number == 1
                assert len(f.points) == len(md.read(root / "box.v41.msh").points)
                f.release()
            info = d.stub.Describe(pb.NameRequest(name="box"))
            assert info.slot.num_slots == 2 and info.slot.watch
            wait_for(lambda: any("'gone'" in line for line in d.log))
        finally:
            assert d.stop() == 0
        gone = [line for line in d.stderr.splitlines() if "'gone'" in line]
        assert gone and "load: 'gone' (" + str(root / "missing.msh") in gone[0], d.stderr
        assert "in the configuration) was not loaded:" in gone[0], gone


def test_sighup_loads_the_entries_added_to_load_and_replaces_the_changed_ones(tmp_path):
    """`systemctl reload` after editing "load": an added entry is loaded, a changed one replaces
    the mesh its earlier form loaded, a removed one stays loaded (said in the log), and an entry
    naming a client's mesh leaves that mesh alone (its refusal is logged). Before, a SIGHUP kept
    the running list and loaded nothing."""
    import meshdock as md
    root = tmp_path / "root"
    d = Daemon(tmp_path, files=["box.v41.msh", "box.v22.msh", "blocks.v41.msh"],
               config={"load": [{"path": str(root / "box.v41.msh"), "name": "box"},
                                {"path": str(root / "box.v41.msh"), "name": "old"}]})
    cfg = tmp_path / "meshdockd.json"
    try:
        with md.attach("box", prefix=d.prefix, timeout=30) as slot:
            assert slot.wait(30).number == 1
        assert wait_for(lambda: any(m.name == "old" for m in d.stub.List(pb.ListRequest()).slots))
        d.load("blocks.v41.msh", "mine")
        mine = d.stub.Describe(pb.NameRequest(name="mine"))
        cfg.write_text(json.dumps({"load": [
            {"path": str(root / "box.v22.msh"), "name": "box", "num_slots": 3},  # changed
            {"path": str(root / "blocks.v41.msh"), "name": "added"},
            {"path": str(root / "box.v22.msh"), "name": "mine"}]}))           # a client's name
        d.proc.send_signal(signal.SIGHUP)
        with md.attach("added", prefix=d.prefix, timeout=30) as slot:
            f = slot.wait(30)
            assert len(f.points) == len(md.read(root / "blocks.v41.msh").points)
            f.release()
        assert wait_for(lambda: d.stub.Describe(pb.NameRequest(name="box")).slot.num_slots == 3)
        box = d.stub.Describe(pb.NameRequest(name="box"))
        assert box.slot.path == str(root / "box.v22.msh"), box
        assert wait_for(lambda: any("'mine'" in line and "was not loaded" in line
                                    for line in d.log)), d.log
        assert d.stub.Describe(pb.NameRequest(name="mine")).slot.path == mine.slot.path
        assert wait_for(lambda: any("'old' is no longer in `load`; it stays loaded" in line
                                    for line in d.log)), d.log  # the log is read by a thread
        assert "old" in [m.name for m in d.stub.List(pb.ListRequest()).slots]
        assert not any("load changed" in line for line in d.log), d.log
    finally:
        assert d.stop() == 0, d.stderr


def test_a_malformed_load_entry_stops_the_start_naming_it(tmp_path):
    cfg = tmp_path / "c.json"
    for bad, said in (
            ({"load": {"path": "x"}}, "key 'load' must be a list"),
            ({"load": [{"path": "/x.msh"}]}, "key 'load', entry 0 needs a \"path\" and a \"name\""),
            ({"load": [{"path": "/x.msh", "name": "a", "slots": 2}]},
             "key 'load', entry 0: unknown key 'slots' (known: path, name, device, num_slots, "
             "watch)"),
            ({"load": [{"path": "/x.msh", "name": "a"}, {"path": "/y.msh", "name": "a"}]},
             "key 'load', entry 1: the name 'a' is loaded twice"),
            # A relative path was accepted, the daemon came up, and the log said "not absolute
            # (meshdockctl makes it so)"; a bad name likewise failed only at the load.
            ({"load": [{"path": "box.msh", "name": "a"}]},
             "key 'load', entry 0: path 'box.msh' is not absolute: give it from / (under one of "
             "`roots`)"),
            ({"load": [{"path": "/x.msh", "name": "a/b"}]},
             "key 'load', entry 0: name 'a/b' has '/' at position 1"),
            ({"load": [{"path": "/x.msh", "name": "a.catalog"}]},
             "key 'load', entry 0: slot name 'a.catalog' ends with '.catalog'")):
        cfg.write_text(json.dumps(bad))
        r = subprocess.run([str(BIN / "meshdockd"), "--config", str(cfg), "--print-config"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (bad, r.stderr)
        assert said in r.stderr, (bad, r.stderr)
    good = {"load": [{"path": "/x.msh", "name": "a", "num_slots": 4}]}
    cfg.write_text(json.dumps(good))
    r = subprocess.run([str(BIN / "meshdockd"), "--config", str(cfg), "--print-config"],
                       capture_output=True, text=True, timeout=30)
    assert json.loads(r.stdout)["load"] == [{"path": "/x.msh", "name": "a", "num_slots": 4,
                                             "watch": False}]
