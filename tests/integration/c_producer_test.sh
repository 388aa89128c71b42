#!/usr/bin/env bash
# libmeshdock_producer's example programs against a real meshdockd, with c_consumer reading what
# they published. c_producer, then each PRODUCER named (the same command line: [--frames N] NAME
# FIELD ROWS [COLS]; clients/examples/cpp_producer.cpp over meshdock/producer.hpp, and
# f_producer.f90 where a Fortran compiler built it): a point field in messages, a vector field
# (Fortran's v(3, n) is (n, 3) to consumers), a 2 MiB tensor through the producer's object, a
# refusal; and c_producer's zero-copy buffer. scripts/test runs it again in the sanitizer build,
# where the library, the daemon and the C and C++ programs are built with ASan + UBSan: the
# library's buffer and offset arithmetic is checked there (test_c_producer.py covers the rest).
#   c_producer_test.sh BIN_DIR MESH_DIR [PRODUCER...]
set -euo pipefail
BIN=$1
MESHES=$2
shift 2
PREFIX="tcp$$."
# shellcheck source=tests/integration/daemon.sh
source "$(dirname "${BASH_SOURCE[0]}")/daemon.sh"
start_daemon "$BIN" "$MESHES" "$PREFIX" --device cpu
"$BIN/meshdockctl" load "$MESHES/box.v41b.msh" --name box >/dev/null

fail=0
check() {  # check WHAT EXPECTED GOT
  if [[ $2 != "$3" ]]; then
    printf 'c_producer_test: %s:\n  expected: %s\n  got:      %s\n' "$1" "$2" "$3" >&2
    fail=1
  fi
}
# c_producer alone: from its shared-memory buffer (zero copy on its side).
check "buffer frames" "$(printf 'frame 1\nframe 2\nframe 3')" \
  "$("$BIN/c_producer" --frames 3 --buffer cam tensor 300 4)"
out=$("$BIN/c_consumer" cam "$PREFIX" 5000)
check "buffer values" "tensor float64 (300, 4) first 2000 2000.25 2000.5 2000.75 2001 2001.25" \
  "$(grep '^tensor ' <<<"$out")"
# Every producer: a point field (300 float64: messages), two frames, the consumer seeing the
# last; a vector field; a 2 MiB tensor (through the producer's object); a refusal (exit 1, the
# status and the daemon's words).
next=2  # box's next frame
for producer in "$BIN/c_producer" "$@"; do
  [[ -n $producer ]] || continue  # ctest passes "" for a program this build does not have
  what=$(basename "$producer")
  check "$what field frames" "$(printf 'frame %d\nframe %d' $next $((next + 1)))" \
    "$("$producer" --frames 2 box point_data/T 300)"
  out=$("$BIN/c_consumer" box "$PREFIX" 5000)
  check "$what field values" "point_data/T float64 (300,) first 1000 1001 1002 1003 1004 1005" \
    "$(grep '^point_data/T ' <<<"$out")"
  check "$what vector frame" "frame $((next + 2))" "$("$producer" box point_data/V 300 3)"
  next=$((next + 3))
  out=$("$BIN/c_consumer" box "$PREFIX" 5000)
  check "$what vector values" "point_data/V float64 (300, 3) first 0 0.25 0.5 1 1.25 1.5" \
    "$(grep '^point_data/V ' <<<"$out")"
  check "$what tensor frames" "$(printf 'frame 1\nframe 2')" \
    "$("$producer" --frames 2 "$what-img" tensor 512 512)"
  out=$("$BIN/c_consumer" "$what-img" "$PREFIX" 5000)
  check "$what tensor values" "tensor float64 (512, 512) first 1000 1000.25 1000.5 1000.75 1001 1001.25" \
    "$(grep '^tensor ' <<<"$out")"
  set +e
  err=$("$producer" nope point_data/T 5 2>&1 >/dev/null)
  rc=$?
  set -e
  check "$what refusal exit" 1 "$rc"
  check "$what refusal" "$what: publish: MESHDOCK_ERR_NOT_FOUND: NOT_FOUND: slot 'nope': point_data/T: no mesh named 'nope'" "$err"
done
"$BIN/meshdockctl" shutdown >/dev/null
wait "$DAEMON" || { echo "c_producer_test: meshdockd exited $?" >&2; fail=1; }
DAEMON=""  # stopped: nothing for the exit trap to kill
[[ $fail == 0 ]] && echo "c_producer_test: ok"
exit $fail
