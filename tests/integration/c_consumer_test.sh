#!/usr/bin/env bash
# c_consumer (the C ABI example) against a real meshdockd: start the daemon on a private socket
# and prefix, load box.v41b.msh, run c_consumer and check what it prints against the file
# (tests/data/meshes/REFERENCE.json: 300 float64 points, 7 blocks, the tetra block 935 x 4).
# Then c_live (tests/integration/c_live.c) runs the rest of the C ABI against the same slot.
#   c_consumer_test.sh BIN_DIR MESH_DIR [C_LIVE]
set -euo pipefail
BIN=$1
MESHES=$2
C_LIVE=${3:-}
PREFIX="tcc$$."
# shellcheck source=tests/integration/daemon.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"
start_daemon "$BIN" "$MESHES" "$PREFIX"
"$BIN/meshdockctl" load "$MESHES/box.v41b.msh" --name box >/dev/null
"$BIN/c_consumer" box "$PREFIX" 5000 >"$TMP/out"
cat "$TMP/out"
fail=0
expect() {
  if ! grep -qxF -- "$1" "$TMP/out"; then
    echo "c_consumer_test: missing line: $1" >&2
    fail=1
  fi
}
expect_prefix() {
  if ! grep -q -- "^$1" "$TMP/out"; then
    echo "c_consumer_test: no line starting: $1" >&2
    fail=1
  fi
}
expect_prefix "frame 1 slot 0 device 1:0 arrays "
expect_prefix 'manifest {"arrays":\[{"block":-1,'
grep -q '"cell_types":\["triangle","triangle","triangle","triangle","triangle","triangle","tetra"\]' "$TMP/out" ||
  { echo "c_consumer_test: manifest cell_types" >&2; fail=1; }
expect "points float64 (300, 3) first 0 0 0.4 0 0 0"
expect_prefix "cells/6 int64 (935, 4) first "
expect "block_bases int64 (8,) first 0 52 104 188 272 390"
expect_prefix "regions/inlet int64 (52,) first 0 1 2 3 4 5"
expect "dlpack points v1.0 ndim 2 shape0 300 flags 0"

# A name nobody publishes: exit 1 with ATTACH_TIMEOUT naming the slot, within the timeout.
start=$(date +%s%N)
if "$BIN/c_consumer" nosuch "$PREFIX" 300 2>"$TMP/err"; then
  echo "c_consumer_test: attaching to a missing slot succeeded" >&2
  fail=1
fi
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "MESHDOCK_ERR_ATTACH_TIMEOUT" "$TMP/err" || { echo "no ATTACH_TIMEOUT: $(cat "$TMP/err")" >&2; fail=1; }
grep -q "nosuch" "$TMP/err" || { echo "the message does not name the slot" >&2; fail=1; }
if (( elapsed_ms > 3000 )); then echo "attach timeout took $elapsed_ms ms" >&2; fail=1; fi
if [[ -n $C_LIVE ]]; then
  "$C_LIVE" box "$PREFIX" || fail=1
fi
exit $fail
