#!/usr/bin/env bash
# ctest deb_install: installs the .deb for real, in a throwaway copy-on-write view of this
# machine's root (a private mount namespace, an overlay of / and a chroot into it; the host's
# files, users and /dev/shm are never touched), on a host where systemd is not running:
#   dpkg -i  -> user and group meshdock, /var/lib/meshdock/{meshes,exports} (2770), the unit
#               enabled (its wants/ symlink), libmeshdock.so.1 in ldconfig's cache;
#   meshdockd as user meshdock with no arguments -> reads /etc/meshdock/meshdockd.json (its
#               first line says so), serves /run/meshdock/meshdockd.sock (0660, group meshdock);
#   meshdockctl load from the read root, export to the export root (a file owned by meshdock),
#               export to the read root refused (exit 6, PERMISSION_DENIED), inspect;
#   dpkg -r  -> the conffile stays; dpkg -P -> it goes, the admin's meshes and exports stay.
#   python3 -> import meshdock from /usr/lib/python3/dist-packages (once the package is pure
#               Python over libmeshdock.so.1; with the pybind11 module it is not tried);
# Arguments: SOURCE_DIR VERSION; the package is $MESHDOCK_DEB, else
# SOURCE_DIR/build-pkg/meshdock_VERSION_*.deb (scripts/package). Exit 77 (skipped) when there is no .deb, or no root / unshare /
# overlayfs to make the throwaway view with.
set -euo pipefail
src=${1:?} version=${2:?}
deb=${MESHDOCK_DEB:-$(ls "$src"/build-pkg/meshdock_"$version"_*.deb 2>/dev/null | tail -1 || true)}
if [ -z "$deb" ] || [ ! -f "$deb" ]; then
  echo "deb_install: skipped: no package (run scripts/package, or set MESHDOCK_DEB)"; exit 77
fi
if [ "$(id -u)" != 0 ] || ! unshare -m --propagation private true 2>/dev/null; then
  echo "deb_install: skipped: needs root and unshare -m (a private mount namespace)"; exit 77
fi
if [ -d /run/systemd/system ]; then
  echo "deb_install: skipped: systemd runs here; dpkg -i in the overlay would start the unit on the host's systemd"
  exit 77
fi
inside() {
m=$work/merged
mkdir -p "$work/upper" "$work/wd" "$m"
if ! mount -t overlay overlay -o "lowerdir=/,upperdir=$work/upper,workdir=$work/wd" "$m" 2>/dev/null; then
  echo "deb_install: skipped: no overlayfs here"; exit 77
fi
mount --bind /proc "$m/proc"
mount --bind /dev "$m/dev"
mount -t tmpfs -o mode=1777 tmpfs "$m/dev/shm"        # segments stay in this namespace
mount -t tmpfs -o mode=755 tmpfs "$m/run"             # as after a boot: no /run/meshdock yet
ch() { chroot "$m" "$@"; }
fail() { echo "deb_install: FAIL: $*" >&2; exit 1; }
ch getent passwd meshdock >/dev/null && fail "user meshdock exists before the install"

echo "== dpkg -i"
ch dpkg -i "$work/meshdock.deb"
ch getent passwd meshdock || fail "no user meshdock"
ch getent group meshdock || fail "no group meshdock"
for spec in /var/lib/meshdock:750 /var/lib/meshdock/meshes:2770 /var/lib/meshdock/exports:2770 \
            /run/meshdock:750; do
  d=${spec%:*}; got=$(ch stat -c "%a %U:%G" "$d") || fail "no $d"
  [ "$got" = "${spec#*:} meshdock:meshdock" ] || fail "$d is $got"
done
ch test -L /etc/systemd/system/multi-user.target.wants/meshdockd.service ||
  fail "the unit was not enabled"
cache=$(ch ldconfig -p)
ma=$(gcc -print-multiarch)
grep -q "libmeshdock.so.1 .*=> \(/usr\)\?/lib/$ma/libmeshdock.so.1" <<<"$cache" ||
  fail "libmeshdock.so.1 is not in ldconfig's cache"
echo "ok: user, group, directories, unit enabled, ldconfig"
if [ -e "$src/sdk/python/src/module.cpp" ]; then
  echo "python: import not tried: this tree's package still needs the pybind11 module _meshdock," \
       "which the package does not ship (the ctypes package loads libmeshdock.so.1)"
else
  # The system python, the system path, the system loader: nothing pointed anywhere.
  got=$(ch /usr/bin/python3 -c "import meshdock, meshdock.v1.meshdock_pb2; print(meshdock.__file__)") ||
    fail "import meshdock from the package"
  [ "$got" = /usr/lib/python3/dist-packages/meshdock/__init__.py ] || fail "import meshdock: $got"
  echo "ok: python3 -c 'import meshdock' -> $got"
fi

echo "== meshdockd as meshdock, no arguments"
# chroot execs meshdockd itself: $pid is the daemon's.
chroot --userspec=meshdock:meshdock "$m" /usr/bin/meshdockd >"$work/out" 2>"$work/err" &
pid=$!
trap 'kill -KILL $pid 2>/dev/null || true' EXIT
for i in $(seq 100); do grep -q "ready on" "$work/out" 2>/dev/null && break; sleep 0.1; done
grep -q "^meshdockd ready on unix:/run/meshdock/meshdockd.sock" "$work/out" ||
  { cat "$work/err"; fail "meshdockd did not start"; }
head -1 "$work/err"
[ "$(head -1 "$work/err")" = "meshdockd: notice: configuration: from /etc/meshdock/meshdockd.json (the default path)" ] ||
  fail "first line: $(head -1 "$work/err")"
[ "$(ch stat -c "%a %U:%G" /run/meshdock/meshdockd.sock)" = "660 meshdock:meshdock" ] ||
  fail "socket: $(ch stat -c "%a %U:%G" /run/meshdock/meshdockd.sock)"
cp "$work/box.msh" "$m/var/lib/meshdock/meshes/box.msh"
ch meshdockctl load /var/lib/meshdock/meshes/box.msh --name box >/dev/null
ch meshdockctl export box /var/lib/meshdock/exports/box.vtu
[ "$(ch stat -c %U /var/lib/meshdock/exports/box.vtu)" = meshdock ] || fail "export owner"
rc=0; ch meshdockctl export box /var/lib/meshdock/meshes/out.vtu 2>"$work/refused" || rc=$?
[ $rc = 6 ] && grep -q "outside the allowed export roots" "$work/refused" ||
  fail "export to a read root: exit $rc $(cat "$work/refused")"
ch meshdockctl inspect box >"$work/inspect"
head -3 "$work/inspect"
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ $rc = 0 ] || fail "meshdockd exited $rc"
trap - EXIT
echo "ok: default config read, load, export to the export root only, inspect, clean stop"

echo "== dpkg -r, dpkg -P"
ch dpkg -r meshdock
ch test -f /etc/meshdock/meshdockd.json || fail "remove took the conffile"
ch test ! -e /usr/bin/meshdockd || fail "remove left /usr/bin/meshdockd"
ch dpkg -P meshdock
ch test ! -e /etc/meshdock/meshdockd.json || fail "purge left the conffile"
ch test -f /var/lib/meshdock/exports/box.vtu || fail "purge removed an export"
ch test -f /var/lib/meshdock/meshes/box.msh || fail "purge removed a mesh"
echo "ok: remove keeps the conffile, purge removes it and keeps the admin's files"
}

if [ "${MESHDOCK_DEB_INSIDE:-}" = 1 ]; then inside; exit 0; fi
work=$(mktemp -d /var/tmp/meshdock-deb-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$deb" "$work/meshdock.deb"
cp "$src/tests/data/meshes/box.v41b.msh" "$work/box.msh"
# The rest runs in a private mount namespace (this script again, with MESHDOCK_DEB_INSIDE=1).
work=$work MESHDOCK_DEB_INSIDE=1 MESHDOCK_DEB=$deb unshare -m --propagation private "$0" "$src" "$version"
echo "deb_install: ok"
