#!/usr/bin/env bash
# The quick suite (sparsegen-bench --suite all --quick, the model's top K measured per case) for
# one source tree, on the GPU machine: "new" is this tree (build-gpu), any other name a tree
# prepared under .ab/NAME (tools/gpu_ab_prepare.sh COMMIT NAME). Run it for two trees in
# successive calls on the same warm machine and compare here:
#   python3 tools/compare_quick.py OLD.json NEW.json
# A tree is built first unless its build-gpu already has sparsegen-bench (a warm machine). The
# bench JSON records SPARSEGEN_GIT_COMMIT: for "new" pass it in the environment; for a prepared
# tree put its commit in .ab/NAME/.commit (e.g. `git rev-parse 7be1ff5 > .ab/old/.commit`).
# Output: $OUT/quick_<NAME>.json (the bench JSON, cuBLAS/cuSPARSE of the same process in each
# case) and $OUT/quick_<NAME>.log.
set -u
: "${OUT:?OUT must be set}"
v=${1:?usage: gpu_ab_quick.sh new|NAME}
dir=.; [ "$v" = new ] || dir=.ab/$v
if [ ! -x "$dir/build-gpu/tools/sparsegen-bench" ]; then
  (cd "$dir" && STEPS=bench BENCH_ONLY=none OUT=/tmp/ab_build_$v bash tools/gpu_run.sh \
     >"$OUT/build_$v.log" 2>&1) || { echo "build of $v failed"; tail -30 "$OUT/build_$v.log"; exit 1; }
fi
if [ ! -d /tmp/sparsegen-data/data ] && [ -f .gpudata/data.tar.xz ]; then
  mkdir -p /tmp/sparsegen-data && tar -xJf .gpudata/data.tar.xz -C /tmp/sparsegen-data
fi
export SPARSEGEN_DATA=${SPARSEGEN_DATA:-/tmp/sparsegen-data/data}
if [ "$v" != new ] && [ -f "$dir/.commit" ]; then
  export SPARSEGEN_GIT_COMMIT=$(cat "$dir/.commit")
fi
t0=$(date +%s)
timeout "${AB_TIMEOUT:-520}" "$dir/build-gpu/tools/sparsegen-bench" --suite all --quick \
  --best-of "${AB_BEST_OF:-8}" --time-limit "${AB_TIME_LIMIT:-400}" --no-cache \
  --json "$OUT/quick_$v.json" >"$OUT/quick_$v.log" 2>&1
echo "quick suite of $v: rc=$? in $(( $(date +%s) - t0 )) s"
tail -25 "$OUT/quick_$v.log"
