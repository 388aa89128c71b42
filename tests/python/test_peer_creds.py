"""Issue 16: every log line about a failed RPC names the caller by the kernel's word (pid, uid,
gid from SO_PEERCRED, and the user name) when it came over the Unix socket, where gRPC alone
says only "unix:". meshdockd accepts on its socket itself (daemon/rpc/peers.hpp); these tests
check that the name is right (each of many short-lived processes is named by its own pid, also
when fd numbers are reused while a call of a dead client is still running), and that accepting
itself serves as gRPC did: silent connections and floods of clients block nobody, SIGTERM stops
promptly with them connected."""
import os
import pwd
import re
import signal
import socket
import subprocess
import textwrap
import threading
import time

import grpc
import pytest

import conftest
from daemon_util import Daemon, wait_for
from meshdock.v1 import meshdock_pb2 as pb
from meshdock.v1 import meshdock_pb2_grpc as pbg

PY = "/usr/bin/python3"

# A client in its own process: one failing Describe whose name carries its pid, so a log line
# can be matched to the process that caused it. Prints its pid and the status it got.
DESCRIBER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[2])
    import grpc
    from meshdock.v1 import meshdock_pb2 as pb, meshdock_pb2_grpc as pbg
    with grpc.insecure_channel(sys.argv[1]) as ch:
        try:
            pbg.MeshdockStub(ch).Describe(pb.NameRequest(name=f"who-{os.getpid()}"), timeout=20)
            print(os.getpid(), "OK", flush=True)
        except grpc.RpcError as e:
            print(os.getpid(), e.code().name, flush=True)
""")

# A client that starts a Load and reports when the daemon has begun it (the OPEN progress
# message), then waits to be killed.
LOADER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    import grpc
    from meshdock.v1 import meshdock_pb2 as pb, meshdock_pb2_grpc as pbg
    ch = grpc.insecure_channel(sys.argv[1])
    for p in pbg.MeshdockStub(ch).Load(pb.LoadRequest(path=sys.argv[3], name="held")):
        print("phase", p.phase, flush=True)
    time.sleep(60)
""")


def me(pid=None):
    """The words a log line should use for a process of this uid and gid: "pid P uid U (name)
    gid G"."""
    uid, gid = os.getuid(), os.getgid()
    try:
        name = f" ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        name = ""
    return f"pid {pid} uid {uid}{name} gid {gid}"


def run_describer(d):
    r = subprocess.run([PY, "-c", DESCRIBER, d.addr, str(conftest.BUILD / "python")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    pid, code = r.stdout.split()
    return int(pid), code


def describe_lines(d):
    """{pid named in the name 'who-PID': [log lines of its failed Describe]}"""
    out = {}
    for line in d.log:
        m = re.search(r"Describe from (.*): NOT_FOUND: .*who-(\d+)", line)
        if m:
            out.setdefault(int(m.group(2)), []).append(m.group(1))
    return out


def test_a_failed_rpc_from_another_process_is_logged_with_its_pid_uid_and_gid(tmp_path):
    d = Daemon(tmp_path)
    try:
        pid, code = run_describer(d)
        assert code == "NOT_FOUND"
        line = wait_for(lambda: [x for x in d.log if f"who-{pid}" in x])
        assert line, d.log
        # Exactly the caller: its pid, this uid (the child's), its gid, the user name.
        assert f"Describe from {me(pid)}: NOT_FOUND:" in line[0], line
        assert f"pid {os.getpid()} " not in line[0]
        assert "unix:" not in line[0]
    finally:
        assert d.stop() == 0, d.stderr


def test_the_other_caller_lines_name_the_caller_too(tmp_path):
    d = Daemon(tmp_path)
    try:
        d.stub.RevokeLeases(pb.RevokeLeasesRequest(pid=999999), timeout=10)
        assert wait_for(lambda: any(f"at the request of {me(os.getpid())}" in x for x in d.log)), \
            d.log
        r = d.ctl("shutdown")
        assert r.returncode == 0
        assert d.proc.wait(15) == 0
        d.stop()
        assert re.search(r"shutdown requested over gRPC by pid \d+ uid", d.stderr), d.stderr
    finally:
        if d.proc.poll() is None:
            d.stop()


def test_many_short_lived_processes_are_each_named_by_their_own_pid(tmp_path):
    """Processes come and go, so the daemon reuses fd numbers for new connections: each
    process's line must still name that process."""
    d = Daemon(tmp_path)
    try:
        results = []
        lock = threading.Lock()

        def worker():
            for _ in range(4):
                r = run_describer(d)
                with lock:
                    results.append(r)

        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(results) == 24 and all(code == "NOT_FOUND" for _, code in results), results
        pids = {pid for pid, _ in results}
        assert wait_for(lambda: set(describe_lines(d)) >= pids, timeout=10), d.log
        lines = describe_lines(d)
        for pid in pids:
            assert lines[pid] == [me(pid)], (pid, lines[pid])
    finally:
        assert d.stop() == 0, d.stderr


def test_a_call_outliving_its_dead_client_is_not_named_after_a_newer_one(tmp_path):
    """A Load is held 3 s by a failpoint; its client is SIGKILLed meanwhile and new clients
    connect (the kernel hands out the lowest free fd number). When the Load ends (CANCELLED),
    its line names the dead client, or nobody, never one of the new ones: gRPC keeps a
    connection's fd open while a call on it runs, and the table checks the socket's inode."""
    d = Daemon(tmp_path, ("box.v41b.msh",), env={"MESHDOCK_FAILPOINT": "open:3000"})
    try:
        loader = subprocess.Popen([PY, "-c", LOADER, d.addr, str(conftest.BUILD / "python"),
                                   str(d.root / "box.v41b.msh")],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert loader.stdout.readline().startswith("phase"), loader.stderr.read()
        loader.send_signal(signal.SIGKILL)
        loader.wait(10)
        later = [run_describer(d)[0] for _ in range(4)]
        line = wait_for(lambda: [x for x in d.log if "Load from" in x and "CANCELLED" in x],
                        timeout=10)
        assert line, d.log
        assert f"Load from {me(loader.pid)}: CANCELLED" in line[0] or \
            "Load from an unknown caller" in line[0], (line, loader.pid, later)
        for pid in later:
            assert f"pid {pid} " not in line[0], (line, later)
        lines = describe_lines(d)
        for pid in later:
            assert lines[pid] == [me(pid)]
    finally:
        assert d.stop() == 0, d.stderr


def test_silent_connections_and_a_crowd_of_clients_are_all_served_and_sigterm_is_prompt(
        tmp_path):
    d = Daemon(tmp_path)
    silent = []
    try:
        # 100 connections that never send a byte, and one that sends half a preface.
        for _ in range(100):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.sock))
            silent.append(s)
        silent[-1].sendall(b"PRI * HTTP/2.0\r\n")
        # 32 clients at once, each on its own connection (no shared subchannel).
        errors = []
        done = []

        def client(i):
            opts = [("grpc.use_local_subchannel_pool", 1)]
            with grpc.insecure_channel(d.addr, options=opts) as ch:
                stub = pbg.MeshdockStub(ch)
                try:
                    stub.List(pb.ListRequest(), timeout=10)
                    stub.Describe(pb.NameRequest(name=f"crowd-{i}"), timeout=10)
                except grpc.RpcError as e:
                    if e.code() == grpc.StatusCode.NOT_FOUND:
                        done.append(i)
                    else:
                        errors.append((i, e.code(), e.details()))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors and sorted(done) == list(range(32)), errors
        # Every failure was logged naming this process.
        assert wait_for(lambda: sum(f"Describe from {me(os.getpid())}: NOT_FOUND" in x
                                    for x in d.log) == 32), d.log
        # A separate process is still served (and named) with the silent ones connected.
        pid, code = run_describer(d)
        assert code == "NOT_FOUND"
        assert wait_for(lambda: describe_lines(d).get(pid) == [me(pid)]), d.log
        # SIGTERM with all of them still connected: a prompt, clean exit, socket removed.
        t0 = time.monotonic()
        assert d.stop() == 0, d.stderr
        assert time.monotonic() - t0 < 5
        assert not d.sock.exists()
        assert "stopped" in d.stderr
    finally:
        for s in silent:
            s.close()
        if d.proc.poll() is None:
            d.stop()


def test_tcp_callers_are_still_named_by_address(tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    addr = f"127.0.0.1:{port.getsockname()[1]}"
    port.close()
    d = Daemon(tmp_path, listen=addr, config={"token_file": str(token)})
    try:
        with pytest.raises(grpc.RpcError) as e:
            d.stub.Describe(pb.NameRequest(name="nosuch"), timeout=10)
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert wait_for(lambda: any("Describe from ipv4:127.0.0.1:" in x for x in d.log)), d.log
    finally:
        assert d.stop() == 0, d.stderr


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_out_of_fds_the_acceptor_waits_without_spinning_and_recovers(tmp_path):
    """No connection cap existed before this acceptor (gRPC 1.51 has none either): a flood is
    bounded by the daemon's fd limit. At the limit accept fails (EMFILE); the acceptor logs it
    once, retries every 100 ms rather than spinning, and serves again once fds are free."""
    import resource
    d = Daemon(tmp_path)
    flood = []
    try:
        resource.prlimit(d.proc.pid, resource.RLIMIT_NOFILE, (64, 64))
        for _ in range(120):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(d.sock))  # the backlog takes what the daemon cannot accept
            flood.append(s)
        assert wait_for(lambda: any("Too many open files" in x for x in d.log)), d.log
        t0 = cpu_seconds(d.proc.pid)
        time.sleep(1.0)
        assert cpu_seconds(d.proc.pid) - t0 < 0.3, "the acceptor spins at the fd limit"
        for s in flood:
            s.close()
        flood.clear()
        pid, code = run_describer(d)
        assert code == "NOT_FOUND"
        assert wait_for(lambda: describe_lines(d).get(pid) == [me(pid)]), d.log
        assert sum("Too many open files" in x for x in d.log) == 1, d.log
        assert any("accepting again" in x for x in d.log), d.log
    finally:
        for s in flood:
            s.close()
        assert d.stop() == 0, d.stderr


def test_the_socket_file_is_made_as_before(tmp_path):
    """The acceptor binds the socket where gRPC used to: the daemon's uid and gid, mode
    socket_mode, removed at exit."""
    d = Daemon(tmp_path, config={"socket_mode": "0640"})
    try:
        st = d.sock.stat()
        assert d.sock.is_socket()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (os.getuid(), os.getgid(), 0o640)
    finally:
        assert d.stop() == 0, d.stderr
    assert not d.sock.exists()
