#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this):
#   1. Release build, warnings as errors, all ctest suites (GPU tests report "skipped" without a GPU);
#   2. Debug build with AddressSanitizer + UndefinedBehaviorSanitizer, all ctest suites;
#   3. a short bounded libFuzzer run of the Matrix Market and safetensors readers;
#   4. the Python package: `pip install .` into a fresh virtual environment, then its pytest suite.
# FUZZ_SECONDS (default 60 per target) bounds step 3; SKIP_ASAN=1 / SKIP_FUZZ=1 / SKIP_PYTHON=1
# skip steps.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export PATH="/usr/local/cuda/bin:$PATH"
jobs=$(nproc)

echo "== Release tests"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  echo "== Debug + ASan/UBSan tests"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPARSEGEN_WERROR=ON \
        -DSPARSEGEN_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$jobs"
  # NVRTC and the CUDA libraries are not built with ASan; leaks inside them are not ours.
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs"
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  echo "== Fuzzing (${FUZZ_SECONDS:-60} s per target)"
  tools/fuzz.sh "${FUZZ_SECONDS:-60}"
fi
if [ "${SKIP_PYTHON:-0}" != 1 ]; then
  echo "== Python package"
  tools/python_test.sh
fi
echo "== all tests passed"
