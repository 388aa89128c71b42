#!/usr/bin/env bash
# libmeshdock exports the C ABI (meshdock_*) and the C++ consumer, device and source API only (sdk/cpp/libmeshdock.map):
# nothing of the mesh / payload / device libraries linked into it, no std:: or nlohmann
# instantiations. Also checks the SONAME and that every function meshdock.h declares is exported.
# libmeshdock_producer the same way, with its SONAME as the third argument: it exports what
# meshdock/producer.h declares and nothing else (gRPC and protobuf stay inside).
#   check_exports.sh LIBMESHDOCK MESHDOCK_H [SONAME]
set -euo pipefail
LIB=$1
HEADER=$2
SONAME=${3:-libmeshdock.so.1}
fail=0
soname=$(readelf -d "$LIB" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname == "$SONAME" ]] || { echo "SONAME is '$soname', not $SONAME" >&2; fail=1; }
syms=$(nm -D --defined-only "$LIB" | awk '{print $3}')
unexpected=$(echo "$syms" | grep -v '^meshdock_' | c++filt |
  grep -vE '^(meshdock::(Slot|Frame|SourceBuffer)::|meshdock::(sweep_sources|daemon_of_socket|cuda_device_ipc)\(|meshdock::inspect_slot\(|meshdock::to_json|typeinfo (name )?for meshdock::(SdkError|ProducerGone|AttachTimeout|Interrupted|UntrustedSegment|SegmentAccessDenied)$)' || true)
if [[ -n $unexpected ]]; then
  echo "exported but not part of the API:" >&2
  echo "$unexpected" >&2
  fail=1
fi
declared=$(grep -oE 'MESHDOCK_API [^(]*\(' "$HEADER" | grep -oE 'meshdock_[a-z0-9_]+\($' | tr -d '(' | sort -u)
for f in $declared; do
  # (a here-string, not `echo | grep -q`: under pipefail grep's early exit can SIGPIPE the echo)
  grep -qx "$f" <<<"$syms" || { echo "declared in meshdock.h, not exported: $f" >&2; fail=1; }
done
n_c=$(echo "$syms" | grep -c '^meshdock_' || true)
n_decl=$(echo "$declared" | wc -l)
echo "$SONAME: $n_c C functions exported ($n_decl declared), $(echo "$syms" | grep -vc '^meshdock_') C++ API symbols"
[[ $n_c == "$n_decl" ]] || { echo "exported meshdock_* ($n_c) != declared ($n_decl)" >&2; fail=1; }
exit $fail
