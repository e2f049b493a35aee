#!/usr/bin/env bash
# Nsight Compute profiles of single kernels on the GPU machine: where a kernel's time goes
# (DRAM throughput, issue-slot use, warp stall reasons, occupancy), to decide what to change
# before timing variants. Run from the build dir by gpu_run.sh's "ncu" bench entry:
#   STEPS=bench BENCH_ONLY=ncu NCU_CASES="4096x4096 magnitude 0.9 1 macko;delta=8;..." \
#     bash tools/gpu_run.sh
# NCU_CASES: cases separated by '|', each "SHAPE METHOD SPARSITY N SCHEDULE" (the weight is made
# by `sparsegen gen --seed 5`, fp16). One text report per case lands in $BENCH_DIR/ncu_<i>.txt.
# ncu's own cache control flushes the caches before the profiled launch; clocks are left alone
# (--clock-control none, as the device notes ask).
set -uo pipefail
: "${BENCH_DIR:?BENCH_DIR must be set}"
: "${NCU_CASES:?NCU_CASES must list the cases}"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SECTIONS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
          --section ComputeWorkloadAnalysis --section InstructionStats
          --section SchedulerStats --section Occupancy --section LaunchStats)
# NCU_SECTIONS adds sections, e.g. "MemoryWorkloadAnalysis_Tables" (shared-memory bank conflicts).
for s in ${NCU_SECTIONS:-}; do SECTIONS+=(--section "$s"); done
status=0
i=0
IFS='|' read -r -a cases <<<"$NCU_CASES"
for c in "${cases[@]}"; do
  read -r shape method sparsity n schedule <<<"$c"
  w=$BENCH_DIR/w_${shape}_${method}_${sparsity}.safetensors
  [ -f "$w" ] || timeout 120 tools/sparsegen gen --shape "$shape" --method "$method" \
    --sparsity "$sparsity" --seed 5 -o "$w" >/dev/null || { status=1; continue; }
  out=$BENCH_DIR/ncu_$i.txt
  echo "== $shape $method $sparsity n=$n $schedule" >"$out"
  # The first launch of `run` is a warm-up; the second is profiled.
  timeout 180 "$NCU" --clock-control none --cache-control all "${SECTIONS[@]}" \
    --launch-skip 1 --launch-count 1 \
    tools/sparsegen run "$w" -n "$n" --dtype fp16 --schedule "$schedule" --repeats 2 \
    >>"$out" 2>&1 || status=1
  i=$((i + 1))
done
rm -f "$BENCH_DIR"/w_*.safetensors
exit $status
