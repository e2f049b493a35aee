#!/usr/bin/env bash
# Same-machine A/B timing of the trees tools/debug/ab_prepare.sh packed under .gpudata/ab/: builds
# each (sparsegen + sparsegen-bench, in parallel), then runs every case on every tree in turn,
# AB_ROUNDS times, so that host variance between GPU machines cannot pass for a code change.
#
#   run(command = "AB_CASES='20 8 SPEC|20 32 SPEC' bash tools/debug/ab_run.sh",
#       carry = [".debs", ".gpudata"])
#
# AB_CASES: "scale n SPEC" entries separated by '|': an R-MAT graph of that scale (seed 1, made
# once with the first tree's `sparsegen gen`), fp32, the given schedule through
# `sparsegen-bench --schedule` (ours and cuSPARSE in one process). Output under $OUT: ab.tar.gz
# (every run's JSON, build logs) and a table of ours/cuSPARSE medians per tree, case and round.
set -uo pipefail
OUT=${OUT:-/tmp/ab-out}
ROUNDS=${AB_ROUNDS:-2}
WORK=/tmp/ab
DEPS=/tmp/sparsegen-deps
mkdir -p "$OUT" "$WORK"
T0=$(date +%s)
log() { printf '[ab %4ss] %s\n' "$(($(date +%s) - T0))" "$*"; }
PATH="$PATH:/usr/local/cuda/bin"

mkdir -p "$DEPS"
for f in .debs/*.deb; do dpkg -x "$f" "$DEPS"; done
export CMAKE_PREFIX_PATH="$DEPS/usr" LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu"

mapfile -t trees < <(ls -d .gpudata/ab/*/ | xargs -n1 basename)
[ ${#trees[@]} -gt 0 ] || { log "no trees under .gpudata/ab"; exit 1; }
jobs_each=$((($(nproc) + ${#trees[@]} - 1) / ${#trees[@]}))
log "device $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); trees ${trees[*]}"

build_tree() {  # the tree's source with an indexer shim that installs its pre-generated index
  local t=$1 src=$WORK/$1/src
  rm -rf "$WORK/$t" && mkdir -p "$src"
  tar -xf ".gpudata/ab/$t/src.tar" -C "$src"
  cp ".gpudata/ab/$t/template_index.h" "$src/tools/template_indexer/pre.h"
  cat >"$src/tools/template_indexer/shim.cpp" <<'CPP'
#include <fstream>
#include <string>
int main(int argc, char** argv) {
  std::string out;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--out") out = argv[i + 1];
  std::ifstream in(PRE, std::ios::binary);
  std::ofstream o(out, std::ios::binary);
  o << in.rdbuf();
  return in && o ? 0 : 1;
}
CPP
  printf 'add_executable(sparsegen_template_indexer shim.cpp)\ntarget_compile_definitions(sparsegen_template_indexer PRIVATE PRE="${CMAKE_CURRENT_SOURCE_DIR}/pre.h")\n' \
    >"$src/tools/template_indexer/CMakeLists.txt"
  { cmake -S "$src" -B "$WORK/$t/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEGEN_WERROR=OFF &&
    ninja -C "$WORK/$t/build" -j "$jobs_each" sparsegen sparsegen-bench; } >"$WORK/$t/build.log" 2>&1
}
for t in "${trees[@]}"; do build_tree "$t" & done
wait
for t in "${trees[@]}"; do
  if [ -x "$WORK/$t/build/tools/sparsegen-bench" ]; then log "built $t"; else
    log "build of $t FAILED"; tail -5 "$WORK/$t/build.log"; fi
done

IFS='|' read -r -a cases <<<"${AB_CASES:-}"
for r in $(seq 1 "$ROUNDS"); do
  for i in "${!cases[@]}"; do
    read -r s n spec <<<"${cases[$i]}"
    W=$WORK/rmat_$s.safetensors
    [ -f "$W" ] || "$WORK/${trees[0]}/build/tools/sparsegen" gen --method rmat --scale "$s" --seed 1 -o "$W" >/dev/null
    for t in "${trees[@]}"; do
      b=$WORK/$t/build/tools/sparsegen-bench
      [ -x "$b" ] || continue
      timeout 150 "$b" "$W" -n "$n" --dtype fp32 --schedule "$spec" --no-plot \
        --json "$OUT/ab_${t}_c${i}_r${r}.json" >"$WORK/$t/bench_c${i}_r${r}.log" 2>&1 ||
        log "$t case $i round $r failed: $(tail -2 "$WORK/$t/bench_c${i}_r${r}.log")"
    done
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ab_*.json"))):
    c = json.load(open(f))["cases"][0]
    rows.append((os.path.basename(f), c["n"], c["ours"]["median_ms"], c.get("cusparse_median_ms")))
for name, n, ours, cs in rows:
    print(f"{name:32s} N={n:<3d} ours {ours:.4f} ms" + (f"  cuSPARSE {cs:.4f} ms" if cs else ""))
PY
tar -czf "$OUT/ab.tar.gz" -C "$OUT" $(cd "$OUT" && ls ab_*.json 2>/dev/null) -C "$WORK" $(cd "$WORK" && ls */build.log) 2>/dev/null
rm -f "$OUT"/ab_*.json
log "done"
