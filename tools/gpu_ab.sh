#!/usr/bin/env bash
# Interleaved A/B of kernel variants on the GPU machine: each variant is a source tree, built in
# parallel with the others (sparsegen and sparsegen-bench only, through this tree's
# tools/gpu_run.sh), then every case is timed by sparsegen-bench with a fixed schedule, variants
# alternating (A B A B), on the same matrix, the library baselines in each process. A comparison
# across device calls mixes machines; this one does not.
#
# Prepare here (repo root, after a local build): tools/gpu_ab_prepare.sh COMMIT [NAME] for each
# older variant (.ab/NAME; .ab is in .git/info/exclude). Run there (device tool,
# carry [".debs", ".gpudata", ".ab"]):
#   AB_VARIANTS="old new" AB_CASES="CASE|CASE|..." bash tools/gpu_ab.sh
# "new" is the working tree itself (build-gpu). A CASE is either
#   SHAPE METHOD SPARSITY N SCHEDULE    a generated fp16 weight (gen --shape --method --sparsity)
#   rmatSCALE - - N SCHEDULE            an fp32 R-MAT graph (gen --method rmat --scale, seed 1)
# e.g. "28672x7168 magnitude 0.7 64 bitmap_tc;warps=4;mt=2|rmat20 - - 8 general;...".
# Output: $OUT/ab/ab_summary.txt (ours and the baseline per run, µs) and every run's JSON, also
# packed as $OUT/ab.tar.gz (the device returns few files).
set -u
: "${OUT:?OUT must be set}" "${AB_VARIANTS:?}" "${AB_CASES:?}"
O=$OUT/ab
mkdir -p "$O"
bdir() { [ "$1" = new ] && echo build-gpu || echo ".ab/$1/build-gpu"; }
read -r -a variants <<<"$AB_VARIANTS"
jobs=$(( ($(nproc) + ${#variants[@]} - 1) / ${#variants[@]} ))
root=$(pwd)
for v in "${variants[@]}"; do
  dir=.; [ "$v" = new ] || dir=.ab/$v
  (cd "$dir" && JOBS=$jobs STEPS=bench BENCH_ONLY=none BUILD_TARGETS="sparsegen sparsegen-bench" \
     SHIM_SRC_DIR=/tmp/sparsegen-src-$v DEPS_PREFIX=/tmp/sparsegen-deps-$v OUT=$O/b_$v \
     bash "$root/tools/gpu_run.sh" >"$O/build_$v.log" 2>&1) &
done
wait
for v in "${variants[@]}"; do
  ls -la "$(bdir "$v")/tools/sparsegen-bench" >>"$O/builds.txt" 2>&1 ||
    { echo "build of $v failed:"; grep -E "error|FAILED" "$O/b_$v/build.log" | head -10; }
done
IFS='|' read -r -a cases <<<"$AB_CASES"
i=0
for c in "${cases[@]}"; do
  read -r shape method sparsity n schedule <<<"$c"
  if [[ $shape == rmat* ]]; then
    w=/tmp/ab_$shape.safetensors dtype=fp32
    [ -f "$w" ] || build-gpu/tools/sparsegen gen --method rmat --scale "${shape#rmat}" --seed 1 \
      -o "$w" >/dev/null
  else
    w=/tmp/ab_${shape}_${method}_${sparsity}.safetensors dtype=fp16
    [ -f "$w" ] || build-gpu/tools/sparsegen gen --shape "$shape" --method "$method" \
      --sparsity "$sparsity" --seed 5 -o "$w" >/dev/null
  fi
  for rep in 1 2; do
    for v in "${variants[@]}"; do
      timeout 150 "$(bdir "$v")/tools/sparsegen-bench" "$w" -n "$n" --dtype "$dtype" \
        --schedule "$schedule" --no-cache --no-plot --json "$O/ab_${i}_${v}${rep}.json" \
        >"$O/ab_${i}_${v}${rep}.log" 2>&1
    done
  done
  python3 - "$O" "$i" "$c" "${variants[@]}" <<'PY'
import json, sys
o, i, c = sys.argv[1:4]
print(c, flush=True)
for v in sys.argv[4:]:
    r = []
    for rep in (1, 2):
        try:
            x = json.load(open(f"{o}/ab_{i}_{v}{rep}.json"))["cases"][0]
            lib = "cublas" if "median_ms" in x.get("cublas", {}) else "cusparse"
            base, ms = ("cuBLAS" if lib == "cublas" else "cuSPARSE"), x[lib]["median_ms"]
            r.append("%.1f / %s %.1f" % (x["ours"]["median_ms"] * 1e3, base, ms * 1e3))
        except Exception as e:  # a failed run shows as ERR; the log says why
            r.append("ERR " + str(e)[:60])
    print("   ", v, "ours / baseline us:", r, flush=True)
PY
  i=$((i + 1))
done | tee "$O/ab_summary.txt"
rm -f /tmp/ab_*.safetensors
tar czf "$OUT/ab.tar.gz" -C "$OUT" ab
