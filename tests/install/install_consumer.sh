#!/usr/bin/env bash
# ctest install_consumer: `cmake --install` of this build into a temporary DESTDIR, then
#   1. every file a consumer or an admin needs is there (each public header of sdk/cpp and
#      shm_protocol, libmeshdock.so.1 with that SONAME, meshdockConfig.cmake + version +
#      targets, meshdock.pc, the Python package, the unit, sysusers.d, tmpfiles.d, the config,
#      the docs) and nothing that must not be (the pybind11 module _meshdock);
#   2. tests/install/consumer, a project outside the tree, configures with find_package(meshdock)
#      against the DESTDIR only, builds and runs (it calls into libmeshdock.so);
#   3. the same main.cpp builds with `pkg-config --cflags --libs meshdock`
#      (PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR into the DESTDIR) and runs;
#   4. the installed Python package imports from the DESTDIR (once it is pure Python).
# With MESHDOCK_INSTALL_DROP=RELPATH (a path under the prefix) that file is deleted after the
# install and only steps 2-3 run; the script then succeeds only if they fail naming the file:
# the proof that a missing header, .pc or CMake config file fails this test.
#
# Environment (set by tests/CMakeLists.txt): MESHDOCK_BUILD_DIR, MESHDOCK_SOURCE_DIR,
# MESHDOCK_INSTALL_PREFIX, MESHDOCK_LIBDIR, MESHDOCK_INCLUDEDIR, MESHDOCK_PYTHONDIR, MESHDOCK_SYSCONFDIR,
# MESHDOCK_DOCDIR, MESHDOCK_SYSTEMD_LIBDIR (relative ones are under the prefix).
set -euo pipefail

fail() { echo "install_consumer: FAIL: $*" >&2; exit 1; }
: "${MESHDOCK_BUILD_DIR:?}" "${MESHDOCK_SOURCE_DIR:?}" "${MESHDOCK_INSTALL_PREFIX:?}"
src=$MESHDOCK_SOURCE_DIR
work=$(mktemp -d "${TMPDIR:-/tmp}/meshdock-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/dest
root=$dest$MESHDOCK_INSTALL_PREFIX
under() { case $1 in /*) echo "$dest$1" ;; *) echo "$root/$1" ;; esac; }
lib=$(under "$MESHDOCK_LIBDIR")
inc=$(under "$MESHDOCK_INCLUDEDIR")
pydir=$(under "$MESHDOCK_PYTHONDIR")
etc=$(under "$MESHDOCK_SYSCONFDIR")
doc=$(under "$MESHDOCK_DOCDIR")
sysd=$(under "$MESHDOCK_SYSTEMD_LIBDIR")

DESTDIR=$dest cmake --install "$MESHDOCK_BUILD_DIR" >"$work/install.log" ||
  { cat "$work/install.log" >&2; fail "cmake --install"; }
echo "installed into $dest ($(find "$dest" -type f | wc -l) files)"

drop=${MESHDOCK_INSTALL_DROP:-}
if [ -n "$drop" ]; then
  [ -e "$root/$drop" ] || fail "MESHDOCK_INSTALL_DROP=$drop: not installed, nothing to drop"
  rm -f "$root/$drop"
  echo "dropped $root/$drop; the consumer builds must now fail naming $(basename "$drop")"
else
  # ---- 1. the files -----------------------------------------------------------------------
  missing=()
  need() { for f in "$@"; do [ -e "$f" ] || missing+=("${f#"$dest"}"); done; }
  while IFS= read -r h; do need "$inc/$h"; done < <(
    cd "$src/sdk/cpp/include" && find meshdock -name '*.hpp' -o -name '*.h'
    cd "$src/sdk/producer/include" && find meshdock -name '*.hpp' -o -name '*.h'
    cd "$src/shm_protocol/include" && find meshdock -name '*.hpp' -o -name '*.h')
  need "$lib/libmeshdock.so" "$lib/libmeshdock.so.1" "$lib/pkgconfig/meshdock.pc" \
       "$lib/libmeshdock_producer.so" "$lib/libmeshdock_producer.so.1" \
       "$lib/pkgconfig/meshdock-producer.pc" "$inc/meshdock/meshdock_producer.f90" \
       "$lib/cmake/meshdock/meshdockConfig.cmake" "$lib/cmake/meshdock/meshdockConfigVersion.cmake" \
       "$lib/cmake/meshdock/meshdockTargets.cmake" \
       "$root/bin/meshdockd" "$root/bin/meshdockctl" "$etc/meshdock/meshdockd.json" \
       "$sysd/systemd/system/meshdockd.service" "$sysd/sysusers.d/meshdock.conf" \
       "$sysd/tmpfiles.d/meshdock.conf" \
       "$doc/README.md" "$doc/LICENSE" "$doc/operations.md" "$doc/api.md"
  if [ -d "$MESHDOCK_BUILD_DIR/python/meshdock" ]; then
    while IFS= read -r p; do need "$pydir/meshdock/$p"; done < <(
      cd "$src/sdk/python/meshdock" && find . -name '*.py' -not -path '*/__pycache__/*')
    need "$pydir/meshdock/v1/meshdock_pb2.py" "$pydir/meshdock/v1/meshdock_pb2_grpc.py" \
         "$pydir/meshdock/health/health_pb2.py"
    compiled=$(find "$pydir" -name '_meshdock*' -o -name '*.so')
    [ -z "$compiled" ] || fail "a compiled module was installed with the Python package: $compiled"
  fi
  [ ${#missing[@]} -eq 0 ] || fail "missing from the install: ${missing[*]}"
  soname=$(readelf -d "$lib/libmeshdock.so.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = libmeshdock.so.1 ] || fail "libmeshdock.so.1 has SONAME '$soname'"
  grep -q "ExecStart=$MESHDOCK_INSTALL_PREFIX/bin/meshdockd\$" "$sysd/systemd/system/meshdockd.service" ||
    fail "the unit's ExecStart is not $MESHDOCK_INSTALL_PREFIX/bin/meshdockd"
  echo "1. files: every header, the library (SONAME $soname), CMake, pkg-config, Python, systemd, docs"
fi

# ---- 2. find_package(meshdock) ------------------------------------------------------------
# Only the DESTDIR: no package registry, no system prefix that could hold another meshdock.
if ! { cmake -S "$src/tests/install/consumer" -B "$work/cmake-consumer" \
         -DCMAKE_PREFIX_PATH="$root" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
         -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$work/cmake-consumer"; } >"$work/cmake.log" 2>&1; then
  if [ -n "$drop" ] && grep -q "$(basename "$drop")" "$work/cmake.log"; then
    echo "ok: the find_package consumer failed naming $(basename "$drop"):"
    grep -m3 "$(basename "$drop")" "$work/cmake.log"
    exit 0
  fi
  cat "$work/cmake.log" >&2
  fail "the find_package(meshdock) consumer did not build"
fi
grep -q "meshdock_DIR:PATH=$lib/cmake/meshdock" "$work/cmake-consumer/CMakeCache.txt" ||
  fail "find_package found meshdock outside the DESTDIR: $(grep meshdock_DIR "$work/cmake-consumer/CMakeCache.txt")"
out=$("$work/cmake-consumer/consumer") || fail "the find_package consumer exited $?: $out"
# (Captured first: grep -q closing the pipe early would fail the pipeline under pipefail.)
linked=$(ldd "$work/cmake-consumer/consumer")
grep -q "libmeshdock.so.1 => $lib/libmeshdock.so.1 " <<<"$linked" ||
  fail "the consumer did not load the installed libmeshdock: $(grep meshdock <<<"$linked")"
echo "2. find_package(meshdock): built and ran: $out"

# ---- 3. pkg-config ------------------------------------------------------------------------
export PKG_CONFIG_PATH=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
if ! flags=$(pkg-config --cflags --libs meshdock 2>"$work/pc.log") ||
   ! c++ -std=c++20 "$src/tests/install/consumer/main.cpp" $flags -o "$work/pc-consumer" \
       2>>"$work/pc.log"; then
  if [ -n "$drop" ] && grep -q "$(basename "$drop" .pc)" "$work/pc.log"; then
    echo "ok: the pkg-config consumer failed naming $(basename "$drop"):"
    head -3 "$work/pc.log"
    exit 0
  fi
  cat "$work/pc.log" >&2
  fail "the pkg-config consumer did not build (flags: ${flags:-none})"
fi
[ -n "$drop" ] && fail "both consumers built without $drop"
case " $flags " in *" -I$inc "*) ;; *) fail "pkg-config's flags do not point into the DESTDIR: $flags" ;; esac
out=$(LD_LIBRARY_PATH=$lib "$work/pc-consumer") || fail "the pkg-config consumer exited $?: $out"
echo "3. pkg-config ($flags): built and ran: $out"
# The C producer example, as C99, against libmeshdock_producer alone (it needs no daemon for
# --help; its publishing is tests/python/test_c_producer.py's).
if ! pflags=$(pkg-config --cflags --libs meshdock-producer 2>"$work/pc.log") ||
   ! cc -std=c99 -pedantic -Wall -Werror "$src/clients/examples/c_producer.c" $pflags \
       -o "$work/c-producer" 2>>"$work/pc.log"; then
  cat "$work/pc.log" >&2
  fail "the C producer did not build with pkg-config meshdock-producer (flags: ${pflags:-none})"
fi
out=$(LD_LIBRARY_PATH=$lib "$work/c-producer" --help) || fail "the C producer exited $?: $out"
echo "3b. pkg-config meshdock-producer: the C producer built and ran: $out"
if ! c++ -std=c++20 -Wall -Werror "$src/clients/examples/cpp_producer.cpp" $pflags \
       -o "$work/cpp-producer" 2>"$work/pc.log"; then
  cat "$work/pc.log" >&2
  fail "the C++ producer did not build with pkg-config meshdock-producer (flags: $pflags)"
fi
out=$(LD_LIBRARY_PATH=$lib "$work/cpp-producer" 2>&1) && fail "cpp_producer without arguments exited 0"
echo "3b. and the C++ one (meshdock/producer.hpp): $out"
# The Fortran module as installed, with the Fortran example, where there is a Fortran compiler.
if command -v gfortran >/dev/null; then
  if ! (cd "$work" && gfortran -std=f2018 -Wall "$inc/meshdock/meshdock_producer.f90" \
          "$src/clients/examples/f_producer.f90" $pflags -o "$work/f-producer") 2>"$work/f.log"; then
    cat "$work/f.log" >&2
    fail "the Fortran producer did not build from the installed module (flags: $pflags)"
  fi
  out=$(LD_LIBRARY_PATH=$lib "$work/f-producer" 2>&1) && fail "f_producer without arguments exited 0"
  echo "3c. the installed Fortran module: f_producer built and ran: $out"
else
  echo "3c. no gfortran: the installed Fortran module was not compiled"
fi

# ---- 4. Python ----------------------------------------------------------------------------
if [ ! -d "$MESHDOCK_BUILD_DIR/python/meshdock" ]; then
  echo "4. Python: not built (MESHDOCK_PYTHON=OFF)"
elif [ -e "$src/sdk/python/src/module.cpp" ]; then
  echo "4. Python: import not tried: this tree's package still needs the pybind11 module" \
       "_meshdock, which is not installed (the ctypes package loads libmeshdock.so.1)"
else
  got=$(cd "$work" && PYTHONPATH=$pydir LD_LIBRARY_PATH=$lib /usr/bin/python3 -c \
        'import meshdock, meshdock.v1.meshdock_pb2 as pb; print(meshdock.__file__)') ||
    fail "the installed Python package does not import"
  case $got in "$pydir"/*) ;; *) fail "import meshdock found $got, not the DESTDIR's" ;; esac
  echo "4. Python: import meshdock -> $got"
fi
echo "install_consumer: ok"
