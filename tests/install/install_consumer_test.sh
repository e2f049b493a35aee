#!/usr/bin/env bash
# Installs sparsegen from a build tree into a temporary prefix, builds examples/install_consumer
# against it as an outside project (find_package(sparsegen CONFIG)) and runs it, with the shared
# and, when built, the static library; then runs the installed CLI.
#
#   tests/install/install_consumer_test.sh BUILD_DIR SOURCE_DIR [CMAKE] [CXX_COMPILER] [GENERATOR]
set -euo pipefail
build="$1"
source="$2"
cmake="${3:-cmake}"
cxx="${4:-c++}"
generator="${5:-Ninja}"  # the build tree's: CI installs ninja, not make
work="$(mktemp -d "${TMPDIR:-/tmp}/sg-install-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
fail() { echo "install_consumer_test: $*" >&2; exit 1; }

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }
for f in lib/libsparsegen.so lib/libsparsegen.a bin/sparsegen include/sparsegen/sparsegen.h \
         lib/cmake/sparsegen/sparsegenConfig.cmake \
         lib/cmake/sparsegen/sparsegenConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done

# Nothing installed may point back into the build or source tree (they may be gone).
if grep -rlF -e "$build" -e "$source" "$prefix/lib/cmake"; then
  fail "the CMake package refers to the build or source tree"
fi
for f in "$prefix"/lib/libsparsegen.so "$prefix/bin/sparsegen"; do
  if readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -qF -e "$build" -e "$source"; then
    fail "$f: its RUNPATH refers to the build or source tree"
  fi
done
# The public headers stand alone: each compiles with only the prefix on the include path.
for h in "$prefix"/include/sparsegen/*.h; do
  echo "#include <sparsegen/$(basename "$h")>" |
    "$cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$prefix/include" -x c++ - ||
    fail "$h does not compile on its own"
done

export SPARSEGEN_CACHE_DIR="$work/cache"
consumer="$source/examples/install_consumer"
"$cmake" -S "$consumer" -B "$work/consumer" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" ||
  { cat "$work/configure.log"; fail "configuring the consumer failed"; }
"$cmake" --build "$work/consumer" -j2
"$work/consumer/consumer"
if [ -x "$work/consumer/consumer_static" ]; then
  SPARSEGEN_CACHE_DIR="$work/cache-static" "$work/consumer/consumer_static"
else
  fail "consumer_static was not built (static library's dependencies not found?)"
fi
"$prefix/bin/sparsegen" inspect "$consumer/tiny.mtx" >/dev/null || fail "installed CLI failed"
echo "install_consumer_test: ok"
