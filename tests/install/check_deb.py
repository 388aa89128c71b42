#!/usr/bin/env python3
"""ctest deb_contents (and scripts/package, after cpack): the .deb holds every file an install
must (each public header, the library and its SONAME link, the CMake and pkg-config files, the
Python package, the unit, sysusers.d, tmpfiles.d, the config, the docs) and nothing it must not
(a compiled Python module, /usr/local, __pycache__); its control data names meshdock, the
version, Depends from dpkg-shlibdeps plus python3 and python3-numpy, the conffile and the
maintainer scripts; the binaries it holds run and default to /etc/meshdock/meshdockd.json.

The package: --deb, else $MESHDOCK_DEB, else SOURCE/build-pkg/meshdock_VERSION_*.deb. None:
exit 77 (ctest: skipped) with a message."""
import argparse
import glob
import os
import pathlib
import stat
import subprocess
import sys
import tempfile

SKIP = 77


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout


# What lintian may say of this package, and why: one package holds the library, its headers
# and the programs (docs/architecture.md, "Packaging"), and the placeholder Maintainer
# (MESHDOCK_DEB_MAINTAINER) is for whoever distributes it to set.
LINTIAN_ACCEPTED = {"package-name-doesnt-match-sonames", "link-to-shared-library-in-wrong-package",
                    "bogus-mail-host", "bogus-mail-host-in-debian-changelog"}


def lintian(deb):
    """Every lintian error or warning not in LINTIAN_ACCEPTED, as problems (none where lintian is
    not installed: scripts/setup installs it, and then it runs)."""
    try:
        r = subprocess.run(["lintian", "--tag-display-limit", "0", deb], capture_output=True,
                           text=True, timeout=120)
    except FileNotFoundError:
        print("deb_contents: lintian is not installed: not run")
        return []
    tags = [line for line in r.stdout.splitlines() if line[:3] in ("E: ", "W: ")]
    print(f"  lintian: {len(tags)} errors and warnings" + "".join(f"\n    {t}" for t in tags))
    if r.returncode not in (0, 1, 2) or (r.returncode and not tags and r.stderr.strip()):
        return [f"lintian failed ({r.returncode}): {r.stderr.strip()[-300:]}"]
    return [f"lintian: {t}" for t in tags if t.split()[2] not in LINTIAN_ACCEPTED]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, type=pathlib.Path)
    ap.add_argument("--version", required=True)
    ap.add_argument("--multiarch", default="")
    ap.add_argument("--deb")
    a = ap.parse_args()
    deb = a.deb or os.environ.get("MESHDOCK_DEB")
    if not deb:
        found = sorted(glob.glob(str(a.source / "build-pkg" / f"meshdock_{a.version}_*.deb")))
        if not found:
            print(f"deb_contents: skipped: no {a.source}/build-pkg/meshdock_{a.version}_*.deb "
                  "(run scripts/package, or set MESHDOCK_DEB)")
            return SKIP
        deb = found[-1]
    ma = a.multiarch or run("gcc", "-print-multiarch").strip()
    lib = f"/usr/lib/{ma}"
    problems = []

    # ---- files -------------------------------------------------------------------------------
    listing = run("dpkg-deb", "-c", deb).splitlines()
    entries = {}
    for line in listing:
        mode, _owner, _size, _date, _time, rest = line.split(None, 5)
        path = rest.split(" -> ")[0]
        path = "/" + path.lstrip("./") if path.startswith("./") else path
        entries[path.rstrip("/") or "/"] = (mode, line.split()[1])
    want = ["/usr/bin/meshdockd", "/usr/bin/meshdockctl", "/usr/bin/meshdock",
            f"{lib}/libmeshdock.so.{a.version}", f"{lib}/libmeshdock.so.1", f"{lib}/libmeshdock.so",
            f"{lib}/libmeshdock_producer.so.{a.version}", f"{lib}/libmeshdock_producer.so.1",
            f"{lib}/libmeshdock_producer.so", f"{lib}/pkgconfig/meshdock-producer.pc",
            "/usr/include/meshdock/meshdock_producer.f90",
            f"{lib}/cmake/meshdock/meshdockConfig.cmake",
            f"{lib}/cmake/meshdock/meshdockConfigVersion.cmake",
            f"{lib}/cmake/meshdock/meshdockTargets.cmake", f"{lib}/pkgconfig/meshdock.pc",
            "/etc/meshdock/meshdockd.json", "/usr/lib/systemd/system/meshdockd.service",
            "/usr/lib/sysusers.d/meshdock.conf", "/usr/lib/tmpfiles.d/meshdock.conf",
            "/usr/share/doc/meshdock/README.md", "/usr/share/doc/meshdock/LICENSE",
            "/usr/share/doc/meshdock/copyright", "/usr/share/doc/meshdock/changelog.gz",
            "/usr/share/man/man1/meshdockd.1.gz", "/usr/share/man/man1/meshdockctl.1.gz",
            "/usr/share/man/man1/meshdock.1.gz"]
    want += [f"/usr/share/doc/meshdock/{p.name}" for p in (a.source / "docs").glob("*.md")]
    for inc in (a.source / "sdk/cpp/include", a.source / "sdk/producer/include",
                a.source / "shm_protocol/include"):
        want += [f"/usr/include/{p.relative_to(inc)}" for p in inc.rglob("*")
                 if p.suffix in (".hpp", ".h")]
    py = "/usr/lib/python3/dist-packages/meshdock"
    src_py = a.source / "sdk/python/meshdock"
    want += [f"{py}/{p.relative_to(src_py)}" for p in src_py.rglob("*.py")
             if "__pycache__" not in p.parts]
    want += [f"{py}/v1/__init__.py", f"{py}/v1/meshdock_pb2.py", f"{py}/v1/meshdock_pb2_grpc.py",
             f"{py}/health/__init__.py", f"{py}/health/health_pb2.py",
             f"{py}/health/health_pb2_grpc.py"]
    for w in want:
        if w not in entries:
            problems.append(f"missing: {w}")
    for path, (mode, owner) in entries.items():
        name = os.path.basename(path)
        if name.startswith("_meshdock") or (path.startswith(py) and name.endswith(".so")):
            problems.append(f"a compiled Python module: {path}")
        if path.startswith("/usr/local") or "__pycache__" in path:
            problems.append(f"must not be packaged: {path}")
        if owner != "root/root":
            problems.append(f"{path} is owned by {owner}, not root/root")

    # ---- control data ------------------------------------------------------------------------
    fields = dict(line.split(": ", 1) for line in run(
        "dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends",
        "Recommends").splitlines() if ": " in line)
    if fields.get("Package") != "meshdock":
        problems.append(f"Package: {fields.get('Package')}")
    if fields.get("Version") != a.version:
        problems.append(f"Version: {fields.get('Version')}, not {a.version}")
    depends = [d.strip().split()[0] for d in fields.get("Depends", "").split(",") if d.strip()]
    for d in ("python3", "python3-numpy", "libc6", "libstdc++6"):  # the last two: shlibdeps ran
        if d not in depends:
            problems.append(f"Depends lacks {d}: {fields.get('Depends')}")
    if not any(d.startswith("libgrpc++") for d in depends):
        problems.append(f"Depends lacks libgrpc++ (dpkg-shlibdeps for meshdockctl): {depends}")
    recommends = fields.get("Recommends", "")
    for d in ("python3-grpcio", "python3-protobuf"):
        if d not in recommends:
            problems.append(f"Recommends lacks {d}: {recommends}")

    with tempfile.TemporaryDirectory() as tmp:
        control = pathlib.Path(tmp, "DEBIAN")
        run("dpkg-deb", "-e", deb, str(control))
        conffiles = (control / "conffiles").read_text().split() if (control / "conffiles").exists() else []
        if "/etc/meshdock/meshdockd.json" not in conffiles:
            problems.append(f"conffiles lacks /etc/meshdock/meshdockd.json: {conffiles}")
        for script in ("postinst", "prerm", "postrm"):
            p = control / script
            if not p.exists():
                problems.append(f"no {script}")
                continue
            if not p.stat().st_mode & stat.S_IXUSR:
                problems.append(f"{script} is not executable")
            r = subprocess.run(["sh", "-n", str(p)], capture_output=True, text=True)
            if r.returncode:
                problems.append(f"{script}: sh -n: {r.stderr.strip()}")
        postinst = (control / "postinst").read_text() if (control / "postinst").exists() else ""
        for needle in ("systemd-sysusers", "systemd-tmpfiles --create", "deb-systemd-helper",
                       "[ -d /run/systemd/system ]"):
            if needle not in postinst:
                problems.append(f"postinst does not run {needle}")
        triggers = (control / "triggers").read_text() if (control / "triggers").exists() else ""
        if "activate-noawait ldconfig" not in triggers:
            problems.append(f"no ldconfig trigger: triggers {triggers!r}")
        shlibs = (control / "shlibs").read_text() if (control / "shlibs").exists() else ""
        if not shlibs.startswith("libmeshdock 1 meshdock"):
            problems.append(f"shlibs: {shlibs!r}")

        # ---- what the files say ----------------------------------------------------------------
        fs = pathlib.Path(tmp, "fs")
        run("dpkg-deb", "-x", deb, str(fs))
        unit = (fs / "usr/lib/systemd/system/meshdockd.service").read_text()
        for needle in ("ExecStart=/usr/bin/meshdockd\n", "User=meshdock", "RuntimeDirectory=meshdock",
                       "StateDirectory=meshdock", "file:/usr/share/doc/meshdock/operations.md"):
            if needle not in unit:
                problems.append(f"the unit lacks {needle.strip()}")
        helptext = run(str(fs / "usr/bin/meshdockd"), "--help")
        if "else /etc/meshdock/meshdockd.json when it" not in " ".join(helptext.split()):
            problems.append(f"meshdockd's default config is not /etc/meshdock/meshdockd.json: {helptext}")
        env = dict(os.environ, LD_LIBRARY_PATH=str(fs / lib.lstrip("/")))
        r = subprocess.run([str(fs / "usr/bin/meshdockctl"), "--help"], capture_output=True,
                           text=True, env=env)
        if "usage" not in (r.stdout + r.stderr).lower():
            problems.append(f"meshdockctl --help: {r.returncode} {r.stdout} {r.stderr}")
        soname = run("readelf", "-d", str(fs / lib.lstrip("/") / "libmeshdock.so.1"))
        if "Library soname: [libmeshdock.so.1]" not in soname:
            problems.append("libmeshdock.so.1 lacks SONAME libmeshdock.so.1")

        for page, words in (("meshdockd", "SIGHUP"), ("meshdockctl", "MESHDOCK_ADDR"),
                            ("meshdock", "convert")):
            text = run("gzip", "-dc", str(fs / f"usr/share/man/man1/{page}.1.gz")) \
                if (fs / f"usr/share/man/man1/{page}.1.gz").exists() else ""
            if text and (f".TH {page.upper()} \"1\"" not in text or words not in text):
                problems.append(f"{page}.1 lacks its title or {words!r}")

    problems += lintian(deb)
    files = [p for p, (m, _) in entries.items() if not m.startswith("d")]
    print(f"deb_contents: {deb}: {os.path.getsize(deb)} bytes, {len(files)} files "
          f"({len(want)} checked by name)")
    print(f"  Depends: {fields.get('Depends')}")
    print(f"  Recommends: {recommends}")
    if problems:
        print("deb_contents: FAIL:\n  " + "\n  ".join(problems))
        return 1
    print("deb_contents: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
