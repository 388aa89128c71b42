# shellcheck shell=bash
# Sourced by the integration scripts that run C programs against a real meshdockd:
#   start_daemon BIN_DIR MESH_DIR PREFIX [MESHDOCKD_ARGS...]
# starts meshdockd on a private socket in $TMP (a fresh directory) with MESH_DIR as its root,
# waits for its ready line (30 s; its log on failure), exports MESHDOCK_ADDR, and on exit stops
# it and removes $TMP. Sets DAEMON (its pid) and TMP.
TMP=$(mktemp -d)
DAEMON=""
stop_daemon() {
  if [[ -n $DAEMON ]]; then kill "$DAEMON" 2>/dev/null || true; wait "$DAEMON" 2>/dev/null || true; fi
  DAEMON=""
}
trap 'stop_daemon; rm -rf "$TMP"' EXIT

start_daemon() {
  local bin=$1 meshes=$2 prefix=$3
  shift 3
  "$bin/meshdockd" --listen "unix:$TMP/d.sock" --root "$meshes" --prefix "$prefix" "$@" \
    >"$TMP/daemon.out" 2>"$TMP/daemon.err" &
  DAEMON=$!
  for _ in $(seq 300); do
    grep -q "meshdockd ready on" "$TMP/daemon.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "meshdockd ready on" "$TMP/daemon.out" || { cat "$TMP/daemon.err" >&2; exit 1; }
  export MESHDOCK_ADDR="unix:$TMP/d.sock"
}
