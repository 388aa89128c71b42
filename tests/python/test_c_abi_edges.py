"""The C ABI (meshdock/meshdock.h) at its edges, from small C99 programs compiled here against
the build's headers and libmeshdock, run against a real meshdockd: what a consumer written in C
(or any FFI) sees when the daemon dies around its attach."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

import conftest
from daemon_util import Daemon, shm_names

INCLUDE = conftest.ROOT / "sdk" / "cpp" / "include"
LIB = conftest.BUILD / "lib"

# attach NAME PREFIX REATTACH PRODUCER_TIMEOUT_MS WAIT_MS: attach, then one wait; prints
# "attach STATUS", then "wait STATUS MS frame|none", each with meshdock_last_error() on failure.
ATTACH_THEN_WAIT = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "meshdock/meshdock.h"
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
int main(int argc, char** argv) {
  meshdock_attach_options o;
  meshdock_slot* slot = NULL;
  meshdock_frame* frame = NULL;
  double t0;
  int rc;
  if (argc != 6) return 100;
  meshdock_attach_options_init(&o);
  o.prefix = argv[2];
  o.reattach = atoi(argv[3]);
  o.producer_timeout_ms = atoll(argv[4]);
  o.timeout_ms = 0; /* the segments are there */
  rc = meshdock_slot_attach(argv[1], &o, &slot);
  printf("attach %s %s\n", meshdock_status_name(rc), rc ? meshdock_last_error() : "");
  if (rc) return 0;
  t0 = now_ms();
  rc = meshdock_slot_wait(slot, atoll(argv[5]), &frame);
  printf("wait %s %.0f %s %s\n", meshdock_status_name(rc), now_ms() - t0, frame ? "frame" : "none",
         rc ? meshdock_last_error() : "");
  meshdock_frame_release(frame);
  meshdock_slot_release(slot);
  return 0;
}
"""


@pytest.fixture(scope="module")
def attach_then_wait(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("cabi") / "attach_then_wait"
    src = out.with_suffix(".c")
    src.write_text(ATTACH_THEN_WAIT)
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{INCLUDE}",
                    str(src), "-o", str(out), f"-L{LIB}", "-lmeshdock", f"-Wl,-rpath,{LIB}"],
                   check=True)
    return out


def run(program, *args, timeout=30):
    r = subprocess.run([str(program), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return r.stdout.splitlines()


@pytest.mark.parametrize("reattach", [0, 1])
def test_attaching_just_after_the_daemon_was_killed_says_producer_gone(tmp_path,
                                                                        attach_then_wait,
                                                                        reattach):
    """A daemon SIGKILLed leaves its segments, whose heartbeat looks fresh for producer_timeout.
    A consumer attaching then used to get MESHDOCK_ERR_SDK ("registration socket ...: connect():
    Connection refused") from its first wait, at once, even with reattach: it must hear
    PRODUCER_GONE once the heartbeat says so, as one attached before the kill does (with
    reattach: when no producer published the name again by the wait's deadline)."""
    d = Daemon(tmp_path, ["box.v41b.msh"])
    try:
        d.load("box.v41b.msh", "box")
        assert d.stop(signal.SIGKILL) == -signal.SIGKILL
        killed = time.monotonic()
        lines = run(attach_then_wait, "box", d.prefix, reattach, 3000, 6000)
        assert time.monotonic() - killed < 3.0 + 6.0 + 2.0
        assert lines[0] == "attach MESHDOCK_OK ", lines  # within producer_timeout: looks alive
        status, ms, frame, message = lines[1].split(" ", 4)[1:]
        assert (status, frame) == ("MESHDOCK_ERR_PRODUCER_GONE", "none"), lines
        assert f"slot 'box' (/{d.prefix}box)" in message and "producer gone" in message, message
        assert f"daemon pid {d.proc.pid} dead" in message, message
        if reattach:  # waited for a producer until the deadline
            assert "no live producer published it again in time" in message, message
            assert float(ms) >= 5000, lines
    finally:
        for name in shm_names(d.prefix):
            os.unlink(f"/dev/shm/{name}")


def api_md_block(section, lang):
    """The first ```lang block of docs/api.md's `## section`."""
    text = (conftest.ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    m = re.search(rf"```{lang}\n(.*?)```", body, re.S)
    assert m, f"docs/api.md ## {section} has no {lang} block"
    return m.group(1)


def as_program(block, includes, main):
    """`block` (#include lines, then statements) as a program: the statements become the body
    of `static int snippet(void)`, then `main`."""
    lines = block.splitlines()
    heads = [l for l in lines if l.startswith("#include")]
    body = [l for l in lines if not l.startswith("#include")]
    return "\n".join(includes + heads + ["static int snippet(void) {"] + body +
                     ["  return 0;", "}", main]) + "\n"


def test_the_api_md_c_example_compiles_runs_and_leaves_no_lease(tmp_path):
    """docs/api.md's C example, as written, against a daemon publishing "bracket": it takes a
    frame and a tensor, and once it returns this process holds no lease (the example gave its
    tensor back; it used to keep it, and the lease with it, for the life of the process)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "api_md.c"
    src.write_text(as_program(
        api_md_block("C ABI", "c"), ["#include <stdio.h>"],
        'int main(void) {\n  int rc = snippet();\n  printf("returned %d\\n", rc);\n'
        "  fflush(stdout);\n  (void)getchar(); /* the test looks at the leases now */\n"
        "  return rc;\n}"))
    exe = tmp_path / "api_md"
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                    "-Wno-unused-variable", f"-I{INCLUDE}", str(src), "-o", str(exe),
                    f"-L{LIB}", "-lmeshdock", f"-Wl,-rpath,{LIB}"], check=True)
    d = Daemon(tmp_path, ["box.v41b.msh"])
    proc = None
    try:
        d.load("box.v41b.msh", "bracket")
        proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, MESHDOCK_PREFIX=d.prefix))
        assert proc.stdout.readline() == "returned 0\n", proc.communicate(timeout=10)
        leases = d.ctl("leases").stdout
        assert "no leases held" in leases, leases
        proc.stdin.close()
        assert proc.wait(10) == 0
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        d.stop()


def test_the_api_md_cpp_example_compiles_and_runs(tmp_path):
    """docs/api.md's C++ example, as written: it takes the published frame, then its next wait
    times out (5 s) and the loop ends."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src = tmp_path / "api_md.cpp"
    src.write_text(as_program(api_md_block("C++", "cpp"), ["#include <cstdio>"],
                              'int main() { return snippet(); }'))
    exe = tmp_path / "api_md_cpp"
    subprocess.run([cxx, "-std=c++20", "-Wall", "-Wextra", "-Werror", "-Wno-unused-variable",
                    f"-I{INCLUDE}", f"-I{conftest.ROOT / 'shm_protocol' / 'include'}", str(src),
                    "-o", str(exe), f"-L{LIB}", "-lmeshdock", f"-Wl,-rpath,{LIB}"], check=True)
    d = Daemon(tmp_path, ["box.v41b.msh"])
    try:
        d.load("box.v41b.msh", "bracket")
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, MESHDOCK_PREFIX=d.prefix))
        assert r.returncode == 0, (r.stdout, r.stderr)
    finally:
        d.stop()


# reattach NAME PREFIX: attach with reattach, take frame 1, keep meshdock_slot_name's pointer,
# print "ready", and after a line on stdin wait (20 s) for the next producer's frame.
REATTACH_NAME = r"""
#include <stdio.h>
#include <string.h>
#include "meshdock/meshdock.h"
int main(int argc, char** argv) {
  meshdock_attach_options o;
  meshdock_slot* slot = NULL;
  meshdock_frame* frame = NULL;
  const char* name;
  char line[8];
  int rc;
  if (argc != 3) return 100;
  meshdock_attach_options_init(&o);
  o.prefix = argv[2];
  o.reattach = 1;
  if (meshdock_slot_attach(argv[1], &o, &slot) != MESHDOCK_OK ||
      meshdock_slot_wait(slot, 5000, &frame) != MESHDOCK_OK || !frame) {
    printf("attach: %s\n", meshdock_last_error());
    return 1;
  }
  meshdock_frame_release(frame);
  frame = NULL;
  name = meshdock_slot_name(slot); /* borrowed: valid until the slot is released */
  printf("ready\n");
  fflush(stdout);
  if (!fgets(line, sizeof line, stdin)) return 2;
  rc = meshdock_slot_wait(slot, 20000, &frame);
  printf("wait %s %s reattaches %u\n", meshdock_status_name(rc), frame ? "frame" : "none",
         meshdock_slot_reattaches(slot));
  printf("name pointer %s\n", name == meshdock_slot_name(slot) ? "kept" : "changed");
  printf("name '%s'\n", name);
  meshdock_frame_release(frame);
  meshdock_slot_release(slot);
  return 0;
}
"""


def test_a_slot_name_stays_valid_across_a_reattach(tmp_path):
    """meshdock_slot_name() is borrowed until the slot is released. It pointed into the C++
    slot state that a reattach replaces and frees: after the daemon was killed and a new one
    published the name, the pointer a consumer kept read freed memory (ASan: heap-use-after-
    free). It is now the handle's own copy, the same pointer before and after."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "reattach_name.c"
    src.write_text(REATTACH_NAME)
    exe = tmp_path / "reattach_name"
    subprocess.run([cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{INCLUDE}",
                    str(src), "-o", str(exe), f"-L{LIB}", "-lmeshdock", f"-Wl,-rpath,{LIB}"],
                   check=True)
    d = Daemon(tmp_path, ["box.v41b.msh"])
    d2 = proc = None
    try:
        d.load("box.v41b.msh", "box")
        proc = subprocess.Popen([str(exe), "box", d.prefix], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "ready\n", proc.communicate(timeout=10)
        assert d.stop(signal.SIGKILL) == -signal.SIGKILL
        proc.stdin.write("go\n")
        proc.stdin.flush()
        d2 = Daemon(tmp_path, prefix=d.prefix)  # replaces the dead daemon's segments
        d2.load("box.v41b.msh", "box")
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, (out, err)
        assert "wait MESHDOCK_OK frame reattaches 1" in out, out
        assert "name pointer kept" in out and "name 'box'" in out, out
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        if d2:
            d2.stop()
        for name in shm_names(d.prefix):
            os.unlink(f"/dev/shm/{name}")


def json_keys(value):
    """Every object key in `value`, at any depth (a list's first element stands for all)."""
    if isinstance(value, dict):
        return set(value) | set().union(*(json_keys(v) for v in value.values()))
    if isinstance(value, list) and value:
        return json_keys(value[0])
    return set()


@pytest.mark.parametrize("function, golden", [
    ("meshdock_debug_validate_control_block", "control_n2.bin"),
    ("meshdock_debug_validate_catalog", "catalog_n2.bin"),
])
def test_the_debug_validators_json_is_what_meshdock_h_says(core, function, golden):
    """The keys meshdock.h lists above each validator are the keys of its JSON, no more, no
    fewer (the catalog's "device_uuid" was missing from the list)."""
    header = (INCLUDE / "meshdock" / "meshdock.h").read_text(encoding="utf-8")
    comment = header.split(f"MESHDOCK_API int {function}(")[0].rsplit("/*", 1)[1]
    documented = set(re.findall(r'"([a-z_]+)"', comment))
    from meshdock import _capi
    data = (conftest.DATA / "golden" / golden).read_bytes()
    fn = getattr(_capi.api(), function[len("meshdock_"):])
    actual = json_keys(json.loads(_capi.owned_json(fn, data, len(data))))
    assert documented == actual, (f"documented only: {sorted(documented - actual)}, "
                                  f"returned only: {sorted(actual - documented)}")
