#!/usr/bin/env python3
"""ctest deb_maintainer_scripts: the .deb's postinst / prerm / postrm (packaging/deb/, as
configured into BUILD/packaging/deb/) run with every command they may call replaced by a stub
that logs its arguments, on a host where systemd is not running (no /run/systemd/system: a
chroot, a container, an image build). Each must exit 0, do its part (user and group,
directories, deb-systemd-helper), and never call systemctl or deb-systemd-invoke, which need a
running systemd. Once with systemd's tools installed, once with none (the useradd / install -d
fallback). Nothing outside a temporary directory is touched: rmdir is a stub too."""
import os
import pathlib
import subprocess
import sys
import tempfile

STUBS = {
    # name: exit status ("getent" says "not found" so the fallback creates the user)
    "systemd-sysusers": 0, "systemd-tmpfiles": 0, "deb-systemd-helper": 0,
    "deb-systemd-invoke": 0, "systemctl": 0, "getent": 2, "groupadd": 0, "useradd": 0,
    "install": 0, "rmdir": 0,
}


def run(script, args, tools, tmp):
    stubs = pathlib.Path(tmp, "bin-" + "-".join(sorted(tools))[:40])
    stubs.mkdir(exist_ok=True)
    log = pathlib.Path(tmp, "calls.log")
    log.write_text("")
    for name in tools:
        p = stubs / name
        p.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\nexit {STUBS[name]}\n')
        p.chmod(0o755)
    # Only the stubs on PATH: a command the script calls without a stub fails the run.
    r = subprocess.run(["/bin/sh", "-e", str(script), *args], capture_output=True, text=True,
                       env={"PATH": str(stubs)})
    return r.returncode, log.read_text().splitlines(), r.stderr


def main():
    deb_dir = pathlib.Path(sys.argv[1])
    if os.path.isdir("/run/systemd/system"):
        print("deb_maintainer_scripts: skipped: systemd is running here (/run/systemd/system); "
              "this test plays a host without it")
        return 77
    problems = []
    all_tools = set(STUBS)
    no_systemd = {"getent", "groupadd", "useradd", "install", "rmdir"}
    cases = [
        ("postinst", ["configure"], all_tools,
         ["systemd-sysusers meshdock.conf", "systemd-tmpfiles --create meshdock.conf",
          "deb-systemd-helper unmask meshdockd.service",
          "deb-systemd-helper --quiet was-enabled meshdockd.service",
          "deb-systemd-helper enable meshdockd.service"]),
        ("postinst", ["configure", "0.0.9"], all_tools, ["systemd-sysusers meshdock.conf"]),
        ("postinst", ["configure"], no_systemd,
         ["getent passwd meshdock", "getent group meshdock", "groupadd --system meshdock",
          "useradd --system --gid meshdock --home-dir /var/lib/meshdock --no-create-home "
          "--shell /usr/sbin/nologin --comment meshdock mesh daemon meshdock",
          "install -d -o meshdock -g meshdock -m 0750 /var/lib/meshdock",
          "install -d -o meshdock -g meshdock -m 2770 /var/lib/meshdock/meshes "
          "/var/lib/meshdock/exports"]),
        ("prerm", ["remove"], all_tools, []),
        ("prerm", ["upgrade", "0.1.1"], all_tools, []),
        ("postrm", ["remove"], all_tools, ["deb-systemd-helper mask meshdockd.service"]),
        ("postrm", ["purge"], all_tools,
         ["deb-systemd-helper purge meshdockd.service",
          "deb-systemd-helper unmask meshdockd.service"]),
        ("postrm", ["purge"], {"rmdir"}, []),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for script, args, tools, expected in cases:
            what = f"{script} {' '.join(args)} ({'systemd tools' if 'systemctl' in tools else 'no systemd tools'})"
            rc, calls, err = run(deb_dir / script, args, tools, tmp)
            if rc != 0:
                problems.append(f"{what}: exit {rc}: {err.strip()}")
            for e in expected:
                if e not in calls:
                    problems.append(f"{what}: did not run '{e}'; ran {calls}")
            for c in calls:
                if c.startswith(("systemctl", "deb-systemd-invoke")):
                    problems.append(f"{what}: ran '{c}' although systemd is not running")
            print(f"  {what}: exit {rc}, {len(calls)} calls")
    if problems:
        print("deb_maintainer_scripts: FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("deb_maintainer_scripts: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
