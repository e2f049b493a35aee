#!/usr/bin/env bash
# Nsight Compute profiles of single kernels on the GPU machine: where a kernel's time goes
# (DRAM throughput, issue-slot use, warp stall reasons, occupancy), to decide what to change
# before timing variants. Run from the build dir by gpu_run.sh's "ncu" bench entry:
#   STEPS=bench BENCH_ONLY=ncu NCU_CASES="4096x4096 magnitude 0.9 1 macko;delta=8;..." \
#     bash tools/gpu_run.sh
# NCU_CASES: cases separated by '|', each "SHAPE METHOD SPARSITY N SCHEDULE" (the weight is made
# by `sparsegen gen --seed 5`, fp16; METHOD nm6:8 means `--method nm --nm 6:8`, SPARSITY then
# "-"). One text report per case lands in $BENCH_DIR/ncu_<i>.txt. NCU_RUN_ARGS adds arguments to
# `sparsegen run` (e.g. "--b-layout col --c-layout col"); NCU_KERNEL profiles only the kernels
# whose name matches that regex (e.g. "_slide$": the main kernel, not the lift before it).
# NCU_SASS=1 adds, per case, ncu_<i>_sass.csv.xz: the SASS with each instruction's warp-stall
# samples.
# NCU_FFN_CASES: gated-FFN cases, each "KxN M MEAN SCHEDULE" (`sparsegen ffn --gen KxN -m M
# --mean-nnz MEAN --schedule SCHEDULE`, bf16): every kernel of the block's first run (the library
# GEMM, the pack, kernel 2) with the same sections, in $BENCH_DIR/ncu_ffn_<i>.txt; NCU_SASS=1 adds
# kernel 2's SASS with its warp-stall samples, ncu_ffn_<i>_sass.csv.xz.
# ncu's own cache control flushes the caches before the profiled launch; clocks are left alone
# (--clock-control none, as the device notes ask).
set -uo pipefail
: "${BENCH_DIR:?BENCH_DIR must be set}"
[ -n "${NCU_CASES:-}${NCU_FFN_CASES:-}" ] || { echo "NCU_CASES or NCU_FFN_CASES must list the cases"; exit 1; }
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SECTIONS=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats
          --section ComputeWorkloadAnalysis --section InstructionStats
          --section SchedulerStats --section Occupancy --section LaunchStats)
# NCU_SECTIONS adds sections, e.g. "MemoryWorkloadAnalysis_Tables" (shared-memory bank conflicts).
for s in ${NCU_SECTIONS:-}; do SECTIONS+=(--section "$s"); done
status=0
i=0
IFS='|' read -r -a cases <<<"${NCU_CASES:-}"
for c in "${cases[@]}"; do
  read -r shape method sparsity n schedule <<<"$c"
  w=$BENCH_DIR/w_${shape}_${method}_${sparsity}.safetensors
  if [[ $method == nm* ]]; then prune=(--method nm --nm "${method#nm}"); else
    prune=(--method "$method" --sparsity "$sparsity"); fi
  [ -f "$w" ] || timeout 120 tools/sparsegen gen --shape "$shape" "${prune[@]}" --seed 5 \
    -o "$w" >/dev/null || { status=1; continue; }
  filter=(); [ -n "${NCU_KERNEL:-}" ] && filter=(--kernel-name "regex:$NCU_KERNEL")
  out=$BENCH_DIR/ncu_$i.txt
  echo "== $shape $method $sparsity n=$n $schedule" >"$out"
  # The first launch of `run` is a warm-up; the second is profiled.
  # shellcheck disable=SC2086  # NCU_RUN_ARGS is a list of words
  timeout 180 "$NCU" --clock-control none --cache-control all "${SECTIONS[@]}" "${filter[@]}" \
    --launch-skip 1 --launch-count 1 \
    tools/sparsegen run "$w" -n "$n" --dtype fp16 --schedule "$schedule" --repeats 2 \
    ${NCU_RUN_ARGS:-} >>"$out" 2>&1 || status=1
  # NCU_SASS=1: also the kernel's SASS with the warp-stall samples of each instruction (CSV), to
  # see where its warps wait.
  if [ "${NCU_SASS:-0}" = 1 ]; then
    # shellcheck disable=SC2086
    timeout 180 "$NCU" --clock-control none --cache-control all --section WarpStateStats \
      --section SourceCounters --page source --print-source sass --csv "${filter[@]}" \
      --launch-skip 1 --launch-count 1 \
      tools/sparsegen run "$w" -n "$n" --dtype fp16 --schedule "$schedule" --repeats 2 \
      ${NCU_RUN_ARGS:-} >"$BENCH_DIR/ncu_${i}_sass.csv" 2>&1 || status=1
    xz -f "$BENCH_DIR/ncu_${i}_sass.csv"
  fi
  i=$((i + 1))
done
rm -f "$BENCH_DIR"/w_*.safetensors
i=0
IFS='|' read -r -a ffn_cases <<<"${NCU_FFN_CASES:-}"
for c in "${ffn_cases[@]}"; do
  read -r kn m mean schedule <<<"$c"
  out=$BENCH_DIR/ncu_ffn_$i.txt
  echo "== ffn $kn m=$m mean=$mean $schedule" >"$out"
  # The check runs the block twice (beta 0, then -1.5); the first run's kernels are profiled.
  timeout 300 "$NCU" --clock-control none --cache-control all "${SECTIONS[@]}" \
    --launch-count "${NCU_FFN_LAUNCHES:-4}" \
    tools/sparsegen ffn --gen "$kn" -m "$m" --mean-nnz "$mean" --schedule "$schedule" \
    >>"$out" 2>&1 || status=1
  # NCU_SASS=1: kernel 2's SASS with the warp-stall samples of each instruction (CSV).
  if [ "${NCU_SASS:-0}" = 1 ]; then
    timeout 300 "$NCU" --clock-control none --cache-control all --section WarpStateStats \
      --section SourceCounters --page source --print-source sass --csv \
      --kernel-name "regex:twell$" --launch-count 1 \
      tools/sparsegen ffn --gen "$kn" -m "$m" --mean-nnz "$mean" --schedule "$schedule" \
      >"$BENCH_DIR/ncu_ffn_${i}_sass.csv" 2>&1 || status=1
    xz -f "$BENCH_DIR/ncu_ffn_${i}_sass.csv"
  fi
  i=$((i + 1))
done
exit $status
