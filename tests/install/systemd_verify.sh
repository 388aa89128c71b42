#!/usr/bin/env bash
# ctest install_systemd: the installed unit, sysusers.d and tmpfiles.d files, checked by
# systemd's own tools inside a scratch root, so that no booted systemd is needed and the
# host is not touched:
#   - `cmake --install` into ROOT (a DESTDIR), plus what verify resolves there: the host's
#     *.target units and /usr/bin/kill (ExecReload);
#   - systemd-analyze verify --root=ROOT: fails on any message (unknown keys and bad values
#     are only warnings with exit status 0), or when ExecStart's binary is missing;
#   - systemd-sysusers --root=ROOT makes user and group meshdock in ROOT/etc/{passwd,group};
#   - systemd-tmpfiles --root=ROOT --create makes the directories with their modes.
# Exit 77 (skipped) without systemd-analyze (apt-get install systemd).
set -euo pipefail
fail() { echo "install_systemd: FAIL: $*" >&2; exit 1; }
: "${MESHDOCK_BUILD_DIR:?}" "${MESHDOCK_INSTALL_PREFIX:?}" "${MESHDOCK_SYSTEMD_LIBDIR:?}"
for t in systemd-analyze systemd-sysusers systemd-tmpfiles; do
  command -v $t >/dev/null || { echo "install_systemd: skipped: no $t (apt-get install systemd)"; exit 77; }
done
root=$(mktemp -d "${TMPDIR:-/tmp}/meshdock-systemd.XXXXXX")
trap 'rm -rf "$root"' EXIT
DESTDIR=$root cmake --install "$MESHDOCK_BUILD_DIR" >/dev/null
case $MESHDOCK_SYSTEMD_LIBDIR in /*) sysd=$MESHDOCK_SYSTEMD_LIBDIR ;; *) sysd=$MESHDOCK_INSTALL_PREFIX/$MESHDOCK_SYSTEMD_LIBDIR ;; esac
unit=$sysd/systemd/system/meshdockd.service
[ -f "$root$unit" ] || fail "no $unit in the install"

mkdir -p "$root/usr/lib/systemd/system" "$root/usr/bin" "$root/etc"
cp -n /usr/lib/systemd/system/*.target "$root/usr/lib/systemd/system/"
cp /usr/bin/kill "$root/usr/bin/"
[ -e "$root/bin" ] || ln -s usr/bin "$root/bin"
: >"$root/etc/passwd"; : >"$root/etc/group"

out=$(systemd-analyze verify --root="$root" --man=no "$unit" 2>&1) || fail "verify: $out"
[ -z "$out" ] || fail "systemd-analyze verify complained: $out"
echo "systemd-analyze verify --root: no complaint about $unit"

systemd-sysusers --root="$root" "$root$sysd/sysusers.d/meshdock.conf"
grep -q '^meshdock:x:[0-9]*:[0-9]*:meshdock mesh daemon:/var/lib/meshdock:' "$root/etc/passwd" ||
  fail "sysusers made no user meshdock: $(cat "$root/etc/passwd")"
grep -q '^meshdock:x:' "$root/etc/group" || fail "sysusers made no group meshdock"
echo "systemd-sysusers: $(grep '^meshdock:' "$root/etc/passwd")"

systemd-tmpfiles --root="$root" --create "$root$sysd/tmpfiles.d/meshdock.conf"
uid=$(grep '^meshdock:' "$root/etc/passwd" | cut -d: -f3)
for spec in /run/meshdock:750 /var/lib/meshdock:750 /var/lib/meshdock/meshes:2770 \
            /var/lib/meshdock/exports:2770; do
  d=${spec%:*} mode=${spec#*:}
  [ -d "$root$d" ] || fail "tmpfiles made no $d"
  got=$(stat -c '%a %u' "$root$d")
  [ "$got" = "$mode $uid" ] || fail "$d is '$got' (mode uid), wanted '$mode $uid'"
done
echo "systemd-tmpfiles: /run/meshdock 0750, /var/lib/meshdock 0750, {meshes,exports} 2770, owner meshdock"
echo "install_systemd: ok"
