#!/usr/bin/env bash
# Interleaved A/B of kernel variants on the GPU machine: each variant is a source tree built by
# tools/gpu_run.sh (no tests), then every case is timed by sparsegen-bench with a fixed schedule,
# variants alternating (A B A B), on the same weight, cuBLAS/cuSPARSE in each process. A
# comparison across device calls mixes machines; this one does not.
#
# Prepare here (repo root; .ab/ is in .git/info/exclude, and must be named in `carry`):
#   mkdir -p .ab/old && git archive <commit> | tar -x -C .ab/old && rm -rf .ab/old/results
#   ln -s ../../.debs .ab/old/.debs && mkdir -p .ab/old/.gpudata   # then the tree's own index:
#   build/tools/template_indexer/sparsegen_template_indexer --out .ab/old/.gpudata/template_index.h \
#     --stubs .ab/old/tools/template_indexer/stubs <.ab/old/templates/*.cuh, in the CMake order>
#   (a variant that changes no helper signature may link .ab/<v>/.gpudata -> ../../.gpudata)
# Run there (device tool, carry [".debs", ".gpudata", ".ab"]):
#   AB_VARIANTS="old new" AB_CASES="28672x7168 magnitude 0.7 64 bitmap_tc;warps=4;mt=2|..." \
#     bash tools/gpu_ab.sh
# "new" is the working tree itself (build-gpu). Output: $OUT/ab/ab_summary.txt (ours/cuBLAS us per
# run) and the JSON of every run, also packed as $OUT/ab.tar.gz (the device returns few files).
set -u
: "${OUT:?OUT must be set}" "${AB_VARIANTS:?}" "${AB_CASES:?}"
O=$OUT/ab
mkdir -p "$O"
bdir() { [ "$1" = new ] && echo build-gpu || echo ".ab/$1/build-gpu"; }
for v in $AB_VARIANTS; do
  if [ "$v" = new ]; then
    STEPS=bench BENCH_ONLY=none OUT=$O/b_$v bash tools/gpu_run.sh >"$O/build_$v.log" 2>&1
  else
    (cd ".ab/$v" && STEPS=bench BENCH_ONLY=none OUT=$O/b_$v bash tools/gpu_run.sh >"$O/build_$v.log" 2>&1)
  fi
  ls -la "$(bdir "$v")/tools/sparsegen-bench" >>"$O/builds.txt" 2>&1
done
IFS='|' read -r -a cases <<<"$AB_CASES"
i=0
for c in "${cases[@]}"; do
  read -r shape method sparsity n schedule <<<"$c"
  w=/tmp/ab_${shape}_${method}_${sparsity}.safetensors
  [ -f "$w" ] || build-gpu/tools/sparsegen gen --shape "$shape" --method "$method" \
    --sparsity "$sparsity" --seed 5 -o "$w" >/dev/null
  for rep in 1 2; do
    for v in $AB_VARIANTS; do
      timeout 120 "$(bdir "$v")/tools/sparsegen-bench" "$w" -n "$n" --dtype fp16 \
        --schedule "$schedule" --no-cache --json "$O/ab_${i}_${v}${rep}.json" \
        >"$O/ab_${i}_${v}${rep}.log" 2>&1
    done
  done
  python3 - "$O" "$i" "$c" $AB_VARIANTS <<'PY'
import json, sys
o, i, c = sys.argv[1:4]
print(c, flush=True)
for v in sys.argv[4:]:
    r = []
    for rep in (1, 2):
        try:
            x = json.load(open(f"{o}/ab_{i}_{v}{rep}.json"))["cases"][0]
            r.append("%.1f/%.1f %s" % (x["ours"]["median_ms"] * 1e3, x["cublas"]["median_ms"] * 1e3,
                                       x["ours"]["details"]["candidates"][0].get("check")))
        except Exception as e:  # a failed run shows as ERR; the log says why
            r.append("ERR " + str(e)[:60])
    print("   ", v, "ours/cuBLAS us:", r, flush=True)
PY
  i=$((i + 1))
done | tee "$O/ab_summary.txt"
rm -f /tmp/ab_*.safetensors
tar czf "$OUT/ab.tar.gz" -C "$OUT" ab
