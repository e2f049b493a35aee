#!/usr/bin/env bash
# Builds the libFuzzer targets with clang into build-fuzz/ and runs each for SECONDS (default 60).
#
#   tools/fuzz.sh [SECONDS]
#
# Seeds: tests/fuzz/corpus_{mm,st}/ (our own files) plus, for Matrix Market, the small .mtx files
# of the shared test data (copied at run time into build-fuzz/, never into the repository).
# The growing corpus lives in build-fuzz/corpus_*; crashes land in build-fuzz/artifacts/ and the
# script exits non-zero. Add each crash to tests/fuzz/regressions/ once fixed, so the
# fuzz_regressions test replays it in every build.
set -euo pipefail
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-fuzz"
data="${SPARSEGEN_DATA:-$root/../shared/data}"
jobs="${FUZZ_BUILD_JOBS:-2}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DSPARSEGEN_FUZZ=ON >/dev/null
ninja -C "$build" -j "$jobs" fuzz_matrix_market fuzz_safetensors

mkdir -p "$build/corpus_mm" "$build/corpus_st" "$build/seeds_mm" "$build/artifacts"
if [ -d "$data" ]; then
  # Small real files only: they make good seeds and keep each run fast.
  find "$data" -name '*.mtx' -size -8k -print0 | while IFS= read -r -d '' f; do
    cp "$f" "$build/seeds_mm/$(echo "${f#"$data"/}" | tr '/' '_')"
  done
fi

status=0
run() {
  local target="$1" corpus="$2"; shift 2
  echo "== $target for ${seconds}s"
  "$build/tests/fuzz/$target" "$corpus" "$@" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" \
    2>&1 | grep -E '^(#[0-9]+.*DONE|==[0-9]+==|SUMMARY|stat::number_of_executed_units|stat::peak_rss|Done)|ERROR|crash|leak' || true
  if ls "$build/artifacts/$target-"* >/dev/null 2>&1; then
    echo "!! $target found inputs that fail: $(ls "$build/artifacts/$target-"*)"
    status=1
  fi
}
run fuzz_matrix_market "$build/corpus_mm" "$root/tests/fuzz/corpus_mm" "$build/seeds_mm" \
  -dict="$root/tests/fuzz/matrix_market.dict"
run fuzz_safetensors "$build/corpus_st" "$root/tests/fuzz/corpus_st"
exit $status
