#!/usr/bin/env bash
# The one script the device tool runs: build sparsegen (Release) on the GPU machine, run every
# test suite (GPU tests must pass there, not skip), the GPU smoke check, compute-sanitizer, and the
# benchmarks; leave logs and JSON under $OUT; print a short summary table last.
#
# Call it from this machine (repo root) with the device tool:
#   run(command = "SPARSEGEN_GIT_COMMIT=<git rev-parse HEAD here> bash tools/gpu_run.sh",
#       carry   = [".debs", ".gpudata"], timeout_s = 600)
#
# Why .debs: the device image has the CUDA toolkit, cmake, ninja and g++, but maybe not our
# Debian -dev packages, and nothing can be fetched there. Prepare them once here (repo root):
#   echo /.debs/ >> .git/info/exclude; mkdir -p .debs; (cd .debs && apt-get download \
#     libfmt-dev libfmt9 libeigen3-dev libsqlite3-dev libsqlite3-0 nlohmann-json3-dev \
#     libcli11-dev libgtest-dev libgmock-dev)
# They are unpacked with `dpkg -x` into a private prefix (never into /) that CMake searches first.
# Why .gpudata: the tests read ../shared/data, which does not travel. Pack it once here:
#   mkdir -p .gpudata && tar -C /work/shared -cf - data | xz -6 > .gpudata/data.tar.xz
# (.gpudata/ is in .gitignore). The tests find it through SPARSEGEN_DATA.
#
# Outputs under $OUT (the device tool returns at most 8 files, 2 folders deep):
#   summary.json   device, date, command, git commit, build/test/smoke/sanitizer/bench results
#   gpu_smoke.json `sparsegen gpu-smoke --json` wrapped with the same metadata
#   env.log        nvidia-smi, compiler and tool versions
#   build.log      cmake + ninja output
#   ctest.log      ctest output (all suites), ctest.xml its JUnit report
#   sanitizer.log  compute-sanitizer memcheck runs
#   bench.tar.gz   whatever the benchmark commands wrote under $BENCH_DIR (+ their logs)
#
# Locally (no GPU) it runs the same steps; GPU steps then report "no GPU" and the summary says so.
# Environment knobs: JOBS (default 16), BUILD_DIR (default build-gpu), OUT (default
# $BUILD_DIR/out), SKIP_BUILD=1 (reuse an existing build), BUILD_TARGETS (ninja targets instead of
# all, e.g. "sparsegen sparsegen-bench"), SPARSEGEN_GIT_COMMIT, PYTEST_ARGS (extra pytest
# arguments of the python step, e.g. "-s -k tight_bound"), DEADLINE_S (seconds after the start by
# which every benchmark must have ended: give the device call's limit less about 30 s, so that a
# benchmark still running then is stopped and what the benchmarks wrote still comes back).

set -uo pipefail

# Which steps to run (comma list of tests,smoke,sanitizer,bench) and which benchmarks (space list
# of BENCH_RUNS names; empty = all): one 600 s device call rarely fits everything, so split the
# work over calls, e.g. STEPS=tests,smoke,sanitizer then STEPS=bench BENCH_ONLY="bench_quick macko".
STEPS=${STEPS:-tests,smoke,sanitizer,bench}
BENCH_ONLY=${BENCH_ONLY:-}
has_step() { [[ ",$STEPS," == *",$1,"* ]]; }
# Defined before BENCH_RUNS: its entries expand $BENCH_DIR when the array is built.
BENCH_DIR=/tmp/sparsegen-bench

# ============================ what to run: extend these lists ================================
# GPU test naming convention: GoogleTest suites/fixtures whose name starts with "Gpu" (Gpu.*,
# GpuSpmm.*, ...). On the GPU machine none of them may be skipped.
GPU_TEST_REGEX='^(Gpu[A-Za-z0-9_]*)\.'
# ctest runs every registered suite; these extra labels/regexes can narrow it (empty: all).
# CTEST_REGEX narrows ctest to matching tests (e.g. "Macko" while iterating on one kernel family).
CTEST_ARGS=(--timeout "${CTEST_TIMEOUT:-300}" -j 8)  # CTEST_TIMEOUT: seconds per test
[ -n "${CTEST_REGEX:-}" ] && CTEST_ARGS+=(-R "$CTEST_REGEX")
# Wall-clock caps (s) so that a slow step still leaves time for the rest of a 600 s device call.
CTEST_BUDGET_S=${CTEST_BUDGET_S:-300}
SANITIZER_BUDGET_S=${SANITIZER_BUDGET_S:-120}
# compute-sanitizer memcheck runs: "name|command" (command relative to the build dir). The
# error-path tests (which provoke API errors on purpose) are excluded.
SANITIZER_RUNS=(
  "runtime_gpu|tests/runtime_tests '--gtest_filter=Gpu.*:-Gpu.InvalidLaunchConfigNamesTheCall:Gpu.MissingKernelAndBadImageNameTheCall:Gpu.GraphCaptureReplaysAndRefusesSynchronousCalls'"
  "gpu_smoke|tools/sparsegen gpu-smoke --n 200003 --repeats 2"
  "gpu_tests_sample|tests/gpu_tests '--gtest_filter=GpuSample.*:GpuPipeline.*'"
  # bitmap_tc kernels (cp.async, ldmatrix, the split-K workspace): one config per edge matrix.
  "bitmap_tc_edge|tests/gpu_tests '--gtest_filter=GpuBitmapTc.Edge'"
  # bitmap_tc on wgmma (sm_90a: warpgroup multiplies reading B from shared memory).
  "bitmap_tc_wgmma|tests/gpu_tests '--gtest_filter=GpuBitmapTc.Wgmma'"
  # bitmap_tc pipe=bulk: the producer warp's bulk copies, full and empty mbarriers, B arranged.
  "bitmap_tc_bulk|tests/gpu_tests '--gtest_filter=GpuBitmapTc.BulkPipe'"
  # bitmap_tc b=map: B by TMA through a tensor map (swizzled boxes, multicast in clusters).
  "bitmap_tc_map|tests/gpu_tests '--gtest_filter=GpuBitmapTc.MapB'"
  # bitmap_tc kred=cluster: K parts added over distributed shared memory (mapa, cluster barriers).
  "bitmap_tc_kred|tests/gpu_tests '--gtest_filter=GpuBitmapTc.ClusterKReduce'"
  # MACKO kernels (staged B, one-wave rows per warp, the balanced row order): the DLMC matrices.
  "macko_dlmc|tests/gpu_tests '--gtest_filter=GpuMacko.Dlmc'"
  # MACKO work items: long rows cut into segments that several warps share.
  "macko_cut_rows|tests/gpu_tests '--gtest_filter=GpuMacko.CutRows'"
  # slide: the lift and the main kernel it launches programmatically (every split and lift, every
  # value type: e4m3's 8-byte A and B lanes included).
  "slide_split_lift|tests/gpu_tests '--gtest_filter=GpuSlide.EverySplitAndLift'"
  # slide split=wg in clusters: multicast staging and the cross-block barriers, grids past M.
  "slide_wg_clusters|tests/gpu_tests '--gtest_filter=GpuSlide.WarpgroupClusters'"
  # twell: both gates, overflowing tiles, tokens split across blocks (the fp32 workspace), the
  # queue of long tokens' parts, the even shares (tokens shared by workers).
  "twell|tests/gpu_tests '--gtest_filter=GpuTwell.FromAFewNonzerosToRowsThatOverflowEveryTile:GpuTwell.FewTokensSplitAcrossBlocks:GpuTwell.QueueCutsLongTokensIntoParts:GpuTwell.EvenSharesOfTheTokensBatches'"
)
# gpu_tests (tests/gpu, run by ctest above) write one JSON summary per GpuCorrectness test here;
# it lies inside BENCH_DIR, so bench.tar.gz carries it when benchmarks run.
export SPARSEGEN_RESULTS_DIR=${SPARSEGEN_RESULTS_DIR:-/tmp/sparsegen-bench/gpu_tests}
# Extra CMake arguments for the device build. The device has no LLVM/Clang 14 dev packages (too
# large to carry): build-time steps that need them must take a file generated here instead, e.g.
#   EXTRA_CMAKE_ARGS=(-DSPARSEGEN_TEMPLATE_INDEX=$PWD/.gpudata/template_index.h)
# once templates/CMakeLists.txt supports such an option.
EXTRA_CMAKE_ARGS=()
# ---------------------------- BENCHMARKS ----------------------------------------------------
# "name|command": run from the build dir after the tests, each with BENCH_DIR exported (write
# JSON there: device, date, command are added by summary.json). Example:
#   "spmm_llm|tools/sparsegen bench --suite llm --json $BENCH_DIR/spmm_llm.json"
BENCH_RUNS=(
  # sparsegen-bench --quick: SuiteSparse matrices with >= 10^4 nonzeros in fp32 at
  # N = 8, 32, 64, then 5 LLM shapes x 50/70/90 % magnitude (+ random 70 % for two shapes) x
  # N = 1, 8, 32, 64 in fp16: ~110 cases, each checked then timed (ours: the pipeline's schedule;
  # cuBLAS; cuSPARSE best CSR). Expected ~100-150 s on an H100/H200, mostly CPU (pruning, packing
  # ~2 s per 10^7 nonzeros per kernel, references); no new matrix starts after 150 s (the JSON
  # then says truncated). --best-of 2 would double the packing/compile part. --no-cache keeps the
  # cached matrices (GBs) out of bench.tar.gz. Plot here: python3 tools/plot_bench.py FILE.json
  # --best-of 8: ours is the fastest measured of the model's top 8, what `sparsegen tune` (top-k 8
  # by default) picks. Packing/compiling 8 candidates per case makes it ~300-400 s.
  # --generated-only: the targets count generated kernels, so the library candidates (dense,
  # cusparse), which tune also measures, are left out here.
  "bench_quick|tools/sparsegen-bench --suite all --quick --best-of 8 --generated-only --time-limit 420 --no-cache --json $BENCH_DIR/bench_quick.json"
  # The rest of the full suite, as bench_quick (--best-of 8): bench_random, the random
  # 50/70/90 % cases of the five LLM shapes (quick has magnitude and random 70 % of two shapes),
  # 60 cases, ~300 s; bench_suitesparse, every shared SuiteSparse matrix from 1000 nonzeros.
  "bench_random|tools/sparsegen-bench --suite llm --filter random --best-of 8 --generated-only --time-limit 480 --no-cache --json $BENCH_DIR/bench_random.json"
  "bench_suitesparse|tools/sparsegen-bench --suite suitesparse --best-of 8 --generated-only --time-limit 420 --no-cache --json $BENCH_DIR/bench_suitesparse.json"
  # The small suite (#24's fixed-cost target): every SuiteSparse and edge matrix under 100k
  # nonzeros, fp32, N = 1, 8, 32, ~500 cases, ~300 s; its summary counts ours >= cuSPARSE.
  "bench_small|tools/sparsegen-bench --suite small --best-of 8 --generated-only --time-limit ${BENCH_SMALL_LIMIT_S:-480} ${BENCH_SMALL_ARGS:-} --no-cache --json $BENCH_DIR/bench_small.json"
  # Search quality on small matrices where ours lost to cuSPARSE: every enumerated schedule
  # (up to 400) measured against the search's top 8 (EXH_SMALL: "filter:N ...").
  'exhaustive_small|mkdir -p $BENCH_DIR/exhaustive_small; for c in ${EXH_SMALL:-test_FW_2500:32 n1024-l1:32 jagmesh7:32 ParU/problem.mtx:8 SPQR/Ragusa16:8 test_FW_2003:8}; do f=${c%:*}; n=${c##*:}; timeout 120 tools/sparsegen-bench --suite small --filter $f -n $n --exhaustive --no-cache --no-plot --json $BENCH_DIR/exhaustive_small/${f##*/}_n$n.json >/dev/null || echo "exhaustive $c: rc $?"; done'
  # Programmatic dependent launch, A/B: one atomic (prologue + kernel) schedule per N on four
  # small matrices, SPARSEGEN_PDL=0 and 1 alternating, twice; cuSPARSE in the same process.
  'pdl_ab|mkdir -p $BENCH_DIR/pdl_ab; for m in ParU/rajat19 ParU/adder_dcop_05 ParU/hangGlider_2 LAGraph/cryg2500; do for n in 8 32; do [ $n = 8 ] && S="general;block=nnz:16;warp=nnz:4;thread=nnz:1;warps=4;group=8;tcols=1;bcols=8;red=bitmap,segment,segment;sort=0;pad=1;interleave=0;vec=1" || S="general;block=nnz:4;warp=nnz:1;thread=nnz:1;warps=4;group=32;tcols=1;bcols=32;red=bitmap,segment,segment;sort=0;pad=1;interleave=0;vec=1"; for r in 1 2; do for pdl in 0 1; do SPARSEGEN_PDL=$pdl tools/sparsegen-bench $SPARSEGEN_DATA/suitesparse/$m.mtx -n $n --schedule "$S" --repeats 50 --no-cache --no-plot --json $BENCH_DIR/pdl_ab/${m##*/}_n${n}_pdl${pdl}_r$r.json >/dev/null || exit 1; done; done; done; done'
  # MACKO vs dense cuBLAS: 5 LLM shapes x random/magnitude x 50/70/90 %, fp16, N = 1
  # and 8, up to 48 MACKO schedules each (pick_schedules; best reported, checked), L2 flushed
  # medians, bandwidth. Expected ~250 s on an H200 host (pruning/packing of up to 205M-element
  # weights, ~48 NVRTC builds per matrix at N = 1, 24 at N = 8).
  "macko|timeout 400 tools/sparsegen-macko-bench --ns 1 8 --out $BENCH_DIR/macko.json"
  # slide (SlideSparse 6:8 on the 2:4 sparse tensor cores, lift included) vs dense cuBLASLt of
  # the same type at decode N; the lift kernel's bandwidth against a device-to-device copy.
  "slide|timeout 420 tools/sparsegen-slide-bench --out $BENCH_DIR/slide.json"
  # slide_prefill: compute-bound N through cuSPARSELt on the lifted weight (slide_lt, lift and
  # scaling included) against dense cuBLASLt of the same type; 2:4 (native) beside 6:8
  # gives the efficiency (6:8 speedup / (2:4 speedup / gamma)) from one run.
  # Tune at prefill N: a 4096x4096 6:8 fp16 weight at N = 16384 (column-major B and C, so that
  # slide_lt and dense both compete), cache off; phases and candidates in the JSON.
  'tune_prefill|W=$BENCH_DIR/w68_4096.safetensors; tools/sparsegen gen --rows 4096 --cols 4096 --method nm --nm 6:8 --seed 3 -o $W >/dev/null && timeout 240 tools/sparsegen tune $W -n 16384 --dtype fp16 --b-layout col --c-layout col --no-cache --json >$BENCH_DIR/tune_prefill.json; r=$?; rm -f $W; exit $r'
  # Programmatic launch of the slide kernel after its lift, A/B: decode N, fp16 and int8, the
  # model's best schedule per split and lift placement, SPARSEGEN_PDL=0 and 1 alternating, twice.
  'slide_pdl_ab|mkdir -p $BENCH_DIR/slide_pdl_ab; for r in 1 2; do for pdl in 0 1; do SPARSEGEN_PDL=$pdl timeout 150 tools/sparsegen-slide-bench --backends mma --types ${SLIDE_AB_TYPES:-fp16 int8} --n 1 8 16 --top 1 --lift-n 1024 --no-plot --out $BENCH_DIR/slide_pdl_ab/pdl${pdl}_r$r.json >/dev/null || echo "slide pdl=$pdl r=$r: rc $?"; done; done'
  "slide_prefill|timeout 540 tools/sparsegen-slide-bench --backends lt --types fp16 int8 --patterns 2:4 6:8 --n 4096 16384 --shapes 4096x4096 14336x4096 4096x14336 --lift-n 4096 --reps 10 --out $BENCH_DIR/slide_prefill.json"
  # slide_lift: the lift kernel alone (fp16, int8, fp8 at N = 1024 and 4096 on the three shapes)
  # against the device-to-device copy of the same run.
  "slide_lift|timeout 300 tools/sparsegen-slide-bench --lift-only --types fp16 int8 fp8 --out $BENCH_DIR/slide_lift.json"
  # twell (activation-sparse gated FFN) vs the dense cuBLAS FFN: K x N = 2048x5632, 4096x14336,
  # M = 512, 4096, 16384, mean nonzeros per row 6 .. 900, bf16. FFN_BENCH_ARGS narrows it (add
  # --tune for the tuner's picks); FFN_BENCH_TIMEOUT (s, default 420) for the whole grid.
  "ffn|timeout ${FFN_BENCH_TIMEOUT:-420} tools/sparsegen-ffn-bench ${FFN_BENCH_ARGS:-} --out $BENCH_DIR/ffn.json"
  # cuSPARSELt 2:4 vs dense cuBLASLt (searched plans) on LLM shapes, N = 16 .. 16384.
  "lt|timeout 300 tools/sparsegen-lt-bench"
  # rmat: Graph500 R-MAT matrices (scale 16, 18, 20: about 1M, 4M, 16M nonzeros; RMAT_SCALES
  # overrides, 22 is 65M), generated here, fp32 at N = 8, 32, 64, ours (best of the model's top 8
  # and the refinement: tune's search at its default; with the top 4 only, scale 20 at N = 32
  # picked a 3x slower kernel; generated kernels only, as the R-MAT target counts) against cuSPARSE's best
  # CSR algorithm; one JSON per scale. RMAT_ARGS: more bench arguments for rmat and rmat_sched
  # (e.g. --graph: also time each pick as one graph replay; their atomic picks are several kernels).
  'rmat|for s in ${RMAT_SCALES:-16 18 20}; do W=$BENCH_DIR/rmat_$s.safetensors; timeout 120 tools/sparsegen gen --method rmat --scale $s --seed 1 -o $W >/dev/null || exit 1; timeout 240 tools/sparsegen-bench $W -n 8,32,64 --dtype fp32 --best-of ${BEST_OF:-8} --generated-only ${RMAT_ARGS:-} --no-cache --json $BENCH_DIR/rmat_$s.json || exit 1; rm -f $W; done'
  # R-MAT graphs at given schedules: RMAT_SCHED_CASES="scale n spec|scale n spec|...", each one
  # sparsegen-bench --schedule run (ours and cuSPARSE in one process), JSON rmat_sched_<i>.json.
  'rmat_sched|[ -n "${RMAT_SCHED_CASES:-}" ] || exit 0; i=0; IFS="|" read -r -a cs <<<"$RMAT_SCHED_CASES"; for c in "${cs[@]}"; do read -r s n sc <<<"$c"; W=$BENCH_DIR/rmat_$s.safetensors; [ -f $W ] || timeout 120 tools/sparsegen gen --method rmat --scale $s --seed 1 -o $W >/dev/null || exit 1; timeout 150 tools/sparsegen-bench $W -n $n --dtype fp32 --schedule "$sc" ${RMAT_ARGS:-} --no-plot --json $BENCH_DIR/rmat_sched_$i.json || exit 1; i=$((i+1)); done; rm -f $BENCH_DIR/rmat_*.safetensors'
  # Graph-scale tuning: R-MAT scale TUNE_RMAT_SCALE (default 22: 4.2M rows, about 65M nonzeros),
  # one measured `tune` per N (fp32, no cache) and per --build-memory in TUNE_RMAT_MEMS (GB,
  # default 0: automatic) with its wall time and the peak resident memory of the process
  # (ru_maxrss of the child), against the CSR's bytes.
  'tune_rmat|S=${TUNE_RMAT_SCALE:-22}; W=$BENCH_DIR/rmat_$S.safetensors; timeout 150 tools/sparsegen gen --method rmat --scale $S --seed 1 -o $W >/dev/null || exit 1; for m in ${TUNE_RMAT_MEMS:-0}; do for n in ${TUNE_RMAT_NS:-8 64}; do timeout 200 python3 -c "import json,resource,subprocess,sys,time; t=time.time(); r=subprocess.run(sys.argv[1:],capture_output=True,text=True); w=time.time()-t; print(r.stderr[-3000:],file=sys.stderr); open(\"$BENCH_DIR/tune_rmat_${S}_n${n}_mem$m.log\",\"w\").write(r.stderr); d=json.loads(r.stdout) if r.returncode==0 else {\"rc\": r.returncode}; d[\"wall_s\"]=w; d[\"peak_rss_bytes\"]=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss*1024; print(json.dumps(d))" tools/sparsegen tune $W -n $n --dtype fp32 --no-cache --build-memory $m --json > $BENCH_DIR/tune_rmat_${S}_n${n}_mem$m.json || exit 1; done; done; rm -f $W'
  # Probes while iterating on a kernel (they do nothing unless their variable is set).
  # macko_probe: the MACKO bench on chosen cases, e.g.
  #   MACKO_PROBE_ARGS="--shapes 4096x4096 28672x7168 --sparsities 0.9 --schedule 'macko;...'"
  # cmd: any benchmark command line, run from the build dir (BENCH_CMD="tools/sparsegen-bench ...").
  'cmd|[ -n "${BENCH_CMD:-}" ] || exit 0; eval "$BENCH_CMD"'
  # twell_timeline: when each worker of the twell kernel 2 is busy, from a trace of its items
  # (tools/debug/twell_timeline_probe.cu, built here with nvcc): K = 2048 with 4 teams and K = 4096
  # with 2, M = 4096 and 16384, mean 30, the queue and balance=even. One JSON summary per case
  # and a compressed CSV of items per case.
  'twell_timeline|nvcc -O3 -arch=sm_90 -std=c++17 -I"$REPO_ROOT/templates" -o twell_timeline "$REPO_ROOT/tools/debug/twell_timeline_probe.cu" || exit 1; for c in "2048 4" "4096 2"; do set -- $c; for m in 4096 16384; do for b in queue even; do f=$([ $b = even ] && echo --even); timeout 120 ./twell_timeline --k $1 --teams $2 --m $m $f --items "$BENCH_DIR/twell_items_k${1}_m${m}_$b.csv" > "$BENCH_DIR/twell_timeline_k${1}_m${m}_$b.json" || exit 1; xz -f "$BENCH_DIR/twell_items_k${1}_m${m}_$b.csv"; done; done; done'
  'macko_probe|[ -n "${MACKO_PROBE_ARGS:-}" ] || exit 0; eval "timeout 400 tools/sparsegen-macko-bench $MACKO_PROBE_ARGS --out $BENCH_DIR/macko_probe.json"'
  # bitmap_probe: one family's best of the model's top K against cuBLAS/cuSPARSE on generated
  # weights, e.g. BITMAP_PROBE_CASES="28672x7168 magnitude 0.7 8,64|4096x4096 random 0.9 8"
  # (FAMILY, default bitmap_tc; BEST_OF, default 12). One JSON per case: probe_<i>.json.
  'bitmap_probe|[ -n "${BITMAP_PROBE_CASES:-}" ] || exit 0; i=0; IFS="|" read -r -a cs <<<"$BITMAP_PROBE_CASES"; for c in "${cs[@]}"; do read -r sh me sp ns <<<"$c"; W=$BENCH_DIR/wp_$i.safetensors; timeout 90 tools/sparsegen gen --shape $sh --method $me --sparsity $sp --seed 5 -o $W >/dev/null || exit 1; timeout 300 tools/sparsegen-bench $W -n $ns --dtype fp16 --family ${FAMILY:-bitmap_tc} --best-of ${BEST_OF:-12} --json $BENCH_DIR/probe_$i.json || exit 1; rm -f $W; i=$((i+1)); done'
  # sched_probe: given schedules against cuBLAS/cuSPARSE, e.g.
  # SCHED_PROBE_CASES="28672x7168 magnitude 0.7 8 bitmap_tc;warps=8;b=part|..." (one JSON per
  # case: sched_<i>.json; weights made once per shape/method/sparsity).
  'sched_probe|[ -n "${SCHED_PROBE_CASES:-}" ] || exit 0; i=0; IFS="|" read -r -a cs <<<"$SCHED_PROBE_CASES"; for c in "${cs[@]}"; do read -r sh me sp n sc <<<"$c"; W=$BENCH_DIR/ws_${sh}_${me}_${sp}.safetensors; [ -f $W ] || timeout 90 tools/sparsegen gen --shape $sh --method $me --sparsity $sp --seed 5 -o $W >/dev/null || exit 1; timeout 120 tools/sparsegen-bench $W -n $n --dtype fp16 --schedule "$sc" --json $BENCH_DIR/sched_$i.json || exit 1; i=$((i+1)); done; rm -f $BENCH_DIR/ws_*.safetensors'
  # ncu: Nsight Compute reports of single kernels (tools/gpu_profile.sh; cases in NCU_CASES,
  # gated-FFN cases in NCU_FFN_CASES).
  'ncu|[ -n "${NCU_CASES:-}${NCU_FFN_CASES:-}" ] || exit 0; bash "$REPO_ROOT/tools/gpu_profile.sh"'
  # bitmap: where the tensor-core family competes (N = 8-64), tune's pick (every family) vs
  # cuBLAS / cuSPARSE on 4096x4096, magnitude 50/70/90 % + random 70 %, N = 8, 32, 64.
  # Expected ~60-120 s.
  "bitmap|timeout 200 tools/sparsegen-bench --suite llm --quick -n 8,32,64 --filter 4096x4096 --best-of 8 --time-limit 150 --no-cache --json $BENCH_DIR/bitmap.json"
  # bitmap_tc exploration: every bitmap_tc schedule (up to 64) screened on two shapes, fp16,
  # N = 8, 64, the best reported. Expected ~120-200 s.
  "bitmap_all|timeout 260 tools/sparsegen-bench --suite llm --quick -n 8,64 --filter 4096x4096 --family bitmap_tc --best-of 64 --time-limit 100 --no-cache --json $BENCH_DIR/bitmap_all_4096.json; timeout 200 tools/sparsegen-bench --suite llm --quick -n 8,64 --filter 12288x12288 --family bitmap_tc --best-of 64 --time-limit 120 --no-cache --json $BENCH_DIR/bitmap_all_12288.json"
  # sparsegen calibrate: measures generated 1024-4096-row LLM weights + SPARSEGEN_DATA
  # matrices (N = 1, 8, 32, 64; fp16/fp32) and the large tier (14336x4096, 4096x14336, 8192x8192,
  # magnitude/random 50/70/90 %, fp16, N = 1, 8, 32, 72 schedules per case with 24 extra staged
  # MACKO grids); each kernel gpu_check'ed once, then timed L2-flushed, median of 5; fits the cost
  # model, prints its held-out quality; writes the model and every sample. Budget 330 s (the large
  # tier's packing is CPU-bound: ~0.5-1 s per build of a 30M-nonzero weight); timeout 400 as a cap.
  # Ship the model: merge with earlier samples (calibrate --from-samples A --from-samples B), then
  # cp the model to costmodel/models/<model_file_name()>.json
  "calibrate|timeout 400 tools/sparsegen calibrate --budget-seconds 330 --out $BENCH_DIR/model_h200.json --samples $BENCH_DIR/calib_samples.json"
  # sparsegen-bench --exhaustive (search quality): per case, `sparsegen tune`'s search
  # (top-k 8, cache off; its wall time is the "search s" figure) against measuring EVERY
  # enumerated schedule (MACKO included; each built on 16 threads, checked, screened with 5
  # L2-flushed runs; fastest 3 + the pick re-measured with 20): ratio = best / pick, JSON
  # exhaustive.json (summary: fraction of cases with ratio >= 0.9, max search s). The 4 quick
  # 4096x4096 matrices (magnitude 50/70/90 %, random 70 %) x N = 1, 8: 8 cases, ~150 (N=1) and
  # ~550 (N=8) schedules each, ~2800 builds. The larger quick shapes are left out: one schedule
  # costs ~0.05 s CPU per 10^6 nonzeros (packing + NVRTC), so all 17 quick matrices would need
  # ~12000 builds of up to 100M nonzeros (hours). Expected ~90-140 s on an H200 host (~0.2-0.45 s
  # CPU per build here, NVRTC sm_90 ~0.1 s of it, on 16 threads; the GPU side, ~15-20 ms per
  # schedule, overlaps; 8 searches ~1-2 s each); --time-limit 140 stops claiming new schedules
  # (such a case says time_limited, never exhaustive); timeout 180 is the hard cap.
  "exhaustive|timeout 180 tools/sparsegen-bench --suite llm --quick -n 1,8 --filter 4096x4096 --exhaustive --exhaustive-limit 600 --time-limit 140 --no-cache --json $BENCH_DIR/exhaustive.json"
  # sparsegen tune on full-size weights (search time): 28672x7168 magnitude 50 % (103M
  # nonzeros) and 12288x12288 magnitude 90 %, fp16, N = 1 and 8, top-k 8 (+ 4 refined), cache
  # off; search_ms in tune_large_*.json. The weights are deleted after use (not carried back).
  'tune_large|for spec in "28672x7168 0.5" "12288x12288 0.9"; do set -- $spec; W=$BENCH_DIR/w_$1.safetensors; timeout 90 tools/sparsegen gen --shape $1 --method magnitude --sparsity $2 --seed 5 -o $W >/dev/null || exit 1; for n in 1 8; do timeout 150 tools/sparsegen tune $W -n $n --dtype fp16 --top-k 8 --no-cache --json >$BENCH_DIR/tune_large_$1_n$n.json || exit 1; done; rm -f $W; done'
  # sparsegen tune: the bundled example, fp16, N = 8 and 32, top-k 8 (compile, time with
  # L2 flushed, check the winner, cache), then the same again (cache hits), then the C++ example
  # (through the same cache). Expected ~10-20 s on an H100/H200 (NVRTC of 8 candidates per tune).
  # tune_model: `sparsegen tune-model` on a generated Llama-2-7B-shaped checkpoint (magnitude
  # 50 %, fp16, seed 5; 224 linear weights; TUNE_MODEL_LAYERS=L for fewer layers), N = 1 and 8,
  # fp16, top-k 8 (shared searches on): run 1 on a fresh database (wall time, tensors/minute,
  # statuses: tune_model_run1.json), run 2 (all cache hits: tune_model_run2.json), then
  # TUNE_MODEL_VERIFY (default 12) picks re-searched 4x deeper, ratio = best / pick
  # (tune_model_verify.json), then the kill test: layers 0-3 at N = 16 (new tunings) killed with
  # SIGKILL after TUNE_MODEL_KILL_S (default 12) s and rerun (tune_model_resume.json: what the
  # killed run stored is "cached", the rest "tuned"/"shared"), then rerun once more (all cached:
  # tune_model_resume2.json). TUNE_MODEL_GEN_ONLY=1 writes the checkpoint and stops (so that a
  # later SKIP_BUILD=1 call on the warm machine times run 1 whole). The checkpoint (13.5 GB) and the database stay in /tmp, only the
  # JSON comes back. Each step gets what is left of GPU_RUN_BUDGET_S (default 560 s from the start
  # of gpu_run.sh, so that the JSON still comes back from a 600 s call); a run cut short is
  # resumable: call again with SKIP_BUILD=1 on the warm machine (the model is reused, run 1 goes
  # on from the database and reports as tune_model_run1_resumed.json, with the first part's
  # report snapshot kept in tune_model_run1.json).
  'tune_model|L=${TUNE_MODEL_LAYERS:-32}; M=/tmp/sg-llama2-7b-L$L; D=/tmp/sg-llama2-7b-L$L-kcache; S=tools/sparsegen; C="$M/model.safetensors.index.json -n 1,8 --dtype fp16 --top-k 8 --cache-dir $D"; left() { echo $(( ${GPU_RUN_BUDGET_S:-560} - ($(date +%s) - T0) )); }; [ -f $M/model.safetensors.index.json ] || { rm -rf $M $D; timeout $(left) $S gen-model --like llama-2-7b --layers $L --method magnitude --sparsity 0.5 --seed 5 -o $M || exit 1; }; [ "${TUNE_MODEL_GEN_ONLY:-0}" = 1 ] && { echo "checkpoint written; TUNE_MODEL_GEN_ONLY=1: no tuning"; exit 0; }; R1=$BENCH_DIR/tune_model_run1.json; [ -d $D ] && R1=$BENCH_DIR/tune_model_run1_resumed.json; t=$(( $(left) - 40 )); [ $t -gt 20 ] || { echo "no time left for run 1: call again with SKIP_BUILD=1"; exit 1; }; timeout $t $S tune-model $C --report $R1 || { echo "run 1 did not finish in $t s: call again with SKIP_BUILD=1 to resume"; exit 1; }; timeout $(( $(left) - 10 )) $S tune-model $C --report $BENCH_DIR/tune_model_run2.json || exit 1; t=$(( $(left) - 10 )); [ $t -gt 60 ] || { echo "no time left for the check: call again with SKIP_BUILD=1"; exit 1; }; timeout $t $S tune-model $C --verify-sample ${TUNE_MODEL_VERIFY:-12} --report $BENCH_DIR/tune_model_verify.json || exit 1; K="$M/model.safetensors.index.json -n 16 --dtype fp16 --top-k 8 --cache-dir $D --include *layers.[0-3].*"; [ $(left) -gt 90 ] || { echo "no time left for the kill test"; exit 1; }; timeout -s KILL ${TUNE_MODEL_KILL_S:-12} $S tune-model $K --report $BENCH_DIR/tune_model_killed.json; echo "killed run: rc $?"; timeout $(( $(left) - 10 )) $S tune-model $K --report $BENCH_DIR/tune_model_resume.json || exit 1; timeout $(( $(left) - 5 )) $S tune-model $K --report $BENCH_DIR/tune_model_resume2.json'
  'tune|EX=$(sed -n "s/^CMAKE_HOME_DIRECTORY:INTERNAL=//p" CMakeCache.txt)/examples/llm_512x128_magnitude80.mtx; for n in 8 32; do for pass in first second; do timeout 120 tools/sparsegen tune $EX -n $n --dtype fp16 --top-k 8 --cache-dir $BENCH_DIR/kcache --json >$BENCH_DIR/tune_n${n}_$pass.json || exit 1; done; done; SPARSEGEN_CACHE_DIR=$BENCH_DIR/kcache timeout 120 examples/spmm_example && timeout 60 tools/sparsegen cache list --cache-dir $BENCH_DIR/kcache --json >$BENCH_DIR/tune_cache_list.json'
)
# ==============================================================================================

REPO_ROOT=$(pwd)
JOBS=${JOBS:-16}
BUILD_DIR=${BUILD_DIR:-build-gpu}
OUT=${OUT:-$REPO_ROOT/$BUILD_DIR/out}
DEPS_PREFIX=${DEPS_PREFIX:-/tmp/sparsegen-deps}
DATA_ROOT=${DATA_ROOT:-/tmp/sparsegen-data}
mkdir -p "$OUT" "$BENCH_DIR"
export BENCH_DIR
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
T0=$(date +%s)
declare -A STATUS=()  # step -> text for the summary

log() { printf '[gpu_run %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

# ---- environment -------------------------------------------------------------------------------
for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer; do
  [ -d "$d" ] && PATH="$PATH:$d"
done
export PATH
{
  echo "== date: $STARTED"; uname -a; cat /etc/os-release 2>/dev/null | head -2
  echo "== nvidia-smi"; nvidia-smi 2>&1 | head -20
  echo "== nvcc"; nvcc --version 2>&1 | tail -2
  echo "== c++"; c++ --version 2>&1 | head -1
  echo "== cmake"; cmake --version 2>&1 | head -1; echo "ninja $(ninja --version 2>&1)"
  echo "== compute-sanitizer"; compute-sanitizer --version 2>&1 | tail -1
  echo "== nproc $(nproc)"
} >"$OUT/env.log" 2>&1
DEVICE_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
DEVICE_NAME=${DEVICE_NAME:-none}
GIT_COMMIT=${SPARSEGEN_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
export SPARSEGEN_GIT_COMMIT=$GIT_COMMIT  # the benchmarks write it into their JSON
log "device: $DEVICE_NAME; commit $GIT_COMMIT"

# ---- dependencies from carried .deb files --------------------------------------------------
if compgen -G ".debs/*.deb" >/dev/null; then
  mkdir -p "$DEPS_PREFIX"
  for f in .debs/*.deb; do
    if command -v dpkg >/dev/null; then
      dpkg -x "$f" "$DEPS_PREFIX"
    else  # a .deb is an ar archive holding data.tar.*
      (tmp=$(mktemp -d) && cd "$tmp" && ar x "$REPO_ROOT/$f" && tar -xf data.tar.* -C "$DEPS_PREFIX")
    fi
  done
  export CMAKE_PREFIX_PATH="$DEPS_PREFIX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$DEPS_PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "unpacked $(ls .debs/*.deb | wc -l) .deb files into $DEPS_PREFIX"
fi

# ---- test data -------------------------------------------------------------------------------
if [ -f .gpudata/data.tar.xz ]; then
  mkdir -p "$DATA_ROOT" && tar -xJf .gpudata/data.tar.xz -C "$DATA_ROOT"
  export SPARSEGEN_DATA="$DATA_ROOT/data"
elif [ -d ../shared/data ]; then
  export SPARSEGEN_DATA="$(cd ../shared/data && pwd)"
fi
log "SPARSEGEN_DATA=${SPARSEGEN_DATA:-<unset>}"

# ---- source tree: the Clang template indexer without LLVM 14 -----------------------------------
# The build runs tools/template_indexer (Clang 14 LibTooling) to generate template_index.h. The
# GPU machine has no LLVM 14 dev packages (far too large to carry), so there we build from a copy
# of the tree whose indexer is a shim that installs the index generated on the build machine
# (tools/gpu_prepare.sh puts it in .gpudata/template_index.h; same templates, same output). The
# repository itself is never modified.
SRC_DIR=$REPO_ROOT
if [ -f tools/template_indexer/CMakeLists.txt ] && { [ "${FORCE_INDEX_SHIM:-0}" = 1 ] || [ ! -d /usr/lib/llvm-14/lib/cmake/clang ]; }; then
  if [ ! -f .gpudata/template_index.h ]; then
    log "ERROR: no LLVM 14 here and no .gpudata/template_index.h: run tools/gpu_prepare.sh first"
  else
    SRC_DIR=${SHIM_SRC_DIR:-/tmp/sparsegen-src}
    rm -rf "$SRC_DIR" && mkdir -p "$SRC_DIR"
    tar --exclude='./build*' --exclude=./.debs --exclude=./.gpudata --exclude=./.git --exclude=./.ab -cf - . |
      tar -xf - -C "$SRC_DIR"
    cp .gpudata/template_index.h "$SRC_DIR/tools/template_indexer/pregenerated_template_index.h"
    cat >"$SRC_DIR/tools/template_indexer/shim_main.cpp" <<'CPP'
// gpu_run.sh shim: copies the index generated on the build machine to --out.
#include <fstream>
#include <iostream>
#include <string>
int main(int argc, char** argv) {
  std::string out;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--out") out = argv[i + 1];
  std::ifstream in(PREGENERATED, std::ios::binary);
  std::ofstream o(out, std::ios::binary);
  if (out.empty() || !in || !o) { std::cerr << "indexer shim: cannot copy\n"; return 1; }
  o << in.rdbuf();
  return o ? 0 : 1;
}
CPP
    cat >"$SRC_DIR/tools/template_indexer/CMakeLists.txt" <<'CMAKE'
# Written by tools/gpu_run.sh: no LLVM 14 on this machine; install the pre-generated index.
add_executable(sparsegen_template_indexer shim_main.cpp)
target_compile_definitions(sparsegen_template_indexer PRIVATE
  PREGENERATED="${CMAKE_CURRENT_SOURCE_DIR}/pregenerated_template_index.h")
CMAKE
    log "no LLVM 14: building from $SRC_DIR with the template index generated on the build machine"
  fi
fi

# ---- build -----------------------------------------------------------------------------------
BUILD_RC=0
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  log "configure + build (Release, -j$JOBS)"
  {
    cmake -S "$SRC_DIR" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEGEN_WERROR=OFF \
      ${SPARSEGEN_DATA:+-DSPARSEGEN_DATA_DIR="$SPARSEGEN_DATA"} \
      "${EXTRA_CMAKE_ARGS[@]+"${EXTRA_CMAKE_ARGS[@]}"}" &&
      ninja -C "$BUILD_DIR" -j "$JOBS" -k 0 ${BUILD_TARGETS:-}
  } >"$OUT/build.log" 2>&1
  BUILD_RC=$?
fi
STATUS[build]=$([ $BUILD_RC = 0 ] && echo ok || echo "FAILED rc=$BUILD_RC (see build.log)")
[ $BUILD_RC != 0 ] && grep -E "error|FAILED" "$OUT/build.log" | head -20
log "build: ${STATUS[build]}"

# ---- all test suites through ctest ----------------------------------------------------------
CTEST_RC=-1
if has_step tests; then
  log "ctest"
  timeout "$CTEST_BUDGET_S" ctest --test-dir "$BUILD_DIR" --output-on-failure --output-junit "$OUT/ctest.xml" "${CTEST_ARGS[@]}" \
    >"$OUT/ctest.log" 2>&1
  CTEST_RC=$?
  tail -4 "$OUT/ctest.log"
  grep -E "^\[ GPU|GPU check failed|FAILED" "$OUT/ctest.log" | head -40
fi

# ---- GPU smoke check ---------------------------------------------------------------------------
SG="$BUILD_DIR/tools/sparsegen"
SMOKE_RC=127
if [ -x "$SG" ] && has_step smoke; then
  "$SG" gpu-smoke --json >"$BUILD_DIR/gpu_smoke_raw.json" 2>"$BUILD_DIR/gpu_smoke.err"
  SMOKE_RC=$?
  "$SG" gpu-smoke 2>&1 | sed 's/^/  /'
fi
log "gpu-smoke rc=$SMOKE_RC"

# The sanitizer's GPU-test runs take one config per collection matrix (memcheck is slow).
export SPARSEGEN_GPU_TEST_CONFIGS=1
# ---- compute-sanitizer -----------------------------------------------------------------------
SAN_SUMMARY=()
: >"$OUT/sanitizer.log"
if ! command -v compute-sanitizer >/dev/null; then
  SAN_SUMMARY+=("all|not run: compute-sanitizer not found")
elif [ "$DEVICE_NAME" = none ]; then
  SAN_SUMMARY+=("all|not run: no GPU")
elif ! has_step sanitizer; then
  SAN_SUMMARY+=("all|not run: not in STEPS")
else
  for entry in "${SANITIZER_RUNS[@]}"; do
    name=${entry%%|*}; cmd=${entry#*|}
    # SANITIZER_ONLY="a b": only those runs (memcheck is slow).
    if [ -n "${SANITIZER_ONLY:-}" ] && [[ " $SANITIZER_ONLY " != *" $name "* ]]; then continue; fi
    echo "=== $name: compute-sanitizer --tool memcheck $cmd" >>"$OUT/sanitizer.log"
    (cd "$BUILD_DIR" && eval "timeout $SANITIZER_BUDGET_S compute-sanitizer --tool memcheck --error-exitcode 99 $cmd") \
      >>"$OUT/sanitizer.log" 2>&1
    rc=$?
    errs=$(grep -E "ERROR SUMMARY" "$OUT/sanitizer.log" | tail -1)
    SAN_SUMMARY+=("$name|rc=$rc ${errs#*=========}")
    log "sanitizer $name rc=$rc"
  done
fi

# ---- Python package, PyTorch layer and the Llama block sample ------------------------------------
# STEPS=python: the package built against this checkout into a venv that sees the device's torch
# environment (TORCH_VENV, default /opt/torch/.venv: checked here, reported when absent), its
# pytest suite (GPU tests must run, not skip) and python/examples/llama_block.py on layer 0 of a
# generated Llama-2-7B-shaped checkpoint (the tight-bound checks; its own kernel database, so the
# tune_model benchmark's first run stays cold). Nothing can be fetched here:
# PYTHON_BUILD=pip (`pip install --no-build-isolation`, needs scikit-build-core and nanobind in
# the venv, or their wheels in .gpudata/wheels: `pip download scikit-build-core nanobind -d
# .gpudata/wheels` on the build machine), PYTHON_BUILD=cmake (the extension target of this build
# dir, put on PYTHONPATH; needs nanobind only, and no second compile of the library), auto (the
# default): pip when both are importable, else cmake. Results: $OUT/python.tar.gz (python.json,
# logs, pytest JUnit, llama_block.json).
if has_step python; then
  mkdir -p "$BUILD_DIR"
  PY_DIR=$(cd "$BUILD_DIR" && pwd)/python-out
  rm -rf "$PY_DIR" && mkdir -p "$PY_DIR"
  PY_STATUS=""
  TORCH_VENV=${TORCH_VENV:-/opt/torch/.venv}
  PY_VENV=${PY_VENV:-/tmp/sparsegen-pyvenv}
  py_note() { PY_STATUS+="$*; "; log "python: $*"; }
  if [ ! -x "$TORCH_VENV/bin/python" ]; then
    py_note "no torch environment at $TORCH_VENV (set TORCH_VENV): torch tests will skip"
    BASE_PY=$(command -v python3)
  else
    BASE_PY=$TORCH_VENV/bin/python
  fi
  rm -rf "$PY_VENV"
  OLD_PYTHONPATH=${PYTHONPATH:-}
  VENV_OK=0
  if "$BASE_PY" -m venv --system-site-packages "$PY_VENV" >"$PY_DIR/venv.log" 2>&1; then
    VENV_OK=1
    VPY=$PY_VENV/bin/python
    # A venv made from a venv's python sees the base interpreter's packages, not that venv's:
    # a .pth file adds the torch environment's site-packages.
    if [ -x "$TORCH_VENV/bin/python" ]; then
      TORCH_SITE=$("$TORCH_VENV/bin/python" -c 'import site; print(site.getsitepackages()[0])')
      echo "$TORCH_SITE" >"$("$VPY" -c 'import site; print(site.getsitepackages()[0])')/sparsegen_torch_env.pth"
    fi
  else
    py_note "no venv (python -m venv failed, see venv.log): using $BASE_PY itself, nothing installed into it"
    VPY=$BASE_PY
  fi
  if compgen -G ".gpudata/wheels/*.whl" >/dev/null; then
    if [ $VENV_OK = 1 ] && "$VPY" -m pip --version >/dev/null 2>&1; then
      "$VPY" -m pip install -q --no-index --find-links .gpudata/wheels scikit-build-core nanobind pytest \
        >>"$PY_DIR/venv.log" 2>&1 || true
    else  # no pip: the (pure-Python) wheels unpacked onto PYTHONPATH
      mkdir -p "$PY_DIR/wheel-site"
      for w in .gpudata/wheels/*-none-any.whl; do "$VPY" -m zipfile -e "$w" "$PY_DIR/wheel-site"; done
      export PYTHONPATH="$PY_DIR/wheel-site${PYTHONPATH:+:$PYTHONPATH}"
    fi
  fi
  "$VPY" - >"$PY_DIR/python_env.json" 2>>"$PY_DIR/venv.log" <<'PY'
import importlib, json, sys
out = {"python": sys.version.split()[0]}
for m in ("torch", "numpy", "scipy", "pytest", "nanobind", "scikit_build_core"):
    try:
        mod = importlib.import_module(m)
        out[m] = getattr(mod, "__version__", "present")
    except Exception as e:
        out[m] = None
try:
    import torch
    out["cuda"] = torch.cuda.is_available()
    out["device"] = torch.cuda.get_device_name(0) if out["cuda"] else None
except Exception:
    pass
print(json.dumps(out))
PY
  cat "$PY_DIR/python_env.json"
  has_mod() { "$VPY" -c "import $1" >/dev/null 2>&1; }
  MODE=${PYTHON_BUILD:-auto}
  if [ "$MODE" = auto ]; then
    if has_mod scikit_build_core && has_mod nanobind && "$VPY" -m pip --version >/dev/null 2>&1 &&
      [ $VENV_OK = 1 ]; then MODE=pip; else MODE=cmake; fi
  fi
  PY_PATH_EXTRA=""
  if ! has_mod nanobind; then
    py_note "nanobind missing (no network here: put wheels in .gpudata/wheels): no extension"
    MODE=none
  elif [ "$MODE" = pip ]; then
    log "python: pip install --no-build-isolation (from $SRC_DIR)"
    CMAKE_BUILD_PARALLEL_LEVEL=$JOBS timeout 480 "$VPY" -m pip install --no-build-isolation \
      --no-deps -v "$SRC_DIR" >"$PY_DIR/build.log" 2>&1 || { py_note "pip install failed (build.log)"; MODE=none; }
  else
    log "python: extension target _sparsegen of $BUILD_DIR"
    {
      GEN=(); [ -f "$BUILD_DIR/CMakeCache.txt" ] || GEN=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
      cmake "${GEN[@]}" -S "$SRC_DIR" -B "$BUILD_DIR" -DSPARSEGEN_PYTHON=ON -DPython_EXECUTABLE="$VPY" &&
        ninja -C "$BUILD_DIR" -j "$JOBS" _sparsegen
    } >"$PY_DIR/build.log" 2>&1 || { py_note "extension build failed (build.log)"; MODE=none; }
    cmake -S "$SRC_DIR" -B "$BUILD_DIR" -DSPARSEGEN_PYTHON=OFF >>"$PY_DIR/build.log" 2>&1
    if [ "$MODE" != none ]; then
      STAGE=$PY_DIR/site && mkdir -p "$STAGE/sparsegen"
      cp "$REPO_ROOT"/python/sparsegen/*.py "$STAGE/sparsegen/"
      cp "$BUILD_DIR"/python/_sparsegen*.so "$STAGE/sparsegen/"
      PY_PATH_EXTRA=$(cd "$STAGE" && pwd)
    fi
  fi
  PYTEST_RC=-1; SAMPLE_RC=-1
  if [ "$MODE" != none ]; then
    py_note "built by $MODE"
    if has_mod pytest; then
      (cd /tmp && PYTHONPATH="$PY_PATH_EXTRA${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$VPY" -m pytest -q -rs \
        ${PYTEST_ARGS:-} --junitxml="$PY_DIR/pytest.xml" "$REPO_ROOT/python/tests") >"$PY_DIR/pytest.log" 2>&1
      PYTEST_RC=$?
      tail -15 "$PY_DIR/pytest.log"
      if [ "$PYTEST_RC" -ge 128 ]; then
        # Died on a signal: tests in their own processes (which ones crash; at most
        # PY_CRASH_BUDGET_S seconds and PY_CRASH_MAX crashes: each run costs ~5 s of device
        # time), the offline tune with torch imported before/after/never
        # (tools/py_crash_probe.py), and a native backtrace when gdb is there.
        py_note "pytest died on signal $((PYTEST_RC - 128)): per-test runs in crash_tests.log"
        [ "${PY_CRASH_PER_TEST:-1}" = 1 ] && (cd /tmp && PYTHONPATH="$PY_PATH_EXTRA${PYTHONPATH:+:$PYTHONPATH}" "$VPY" -m pytest -q \
          --collect-only "$REPO_ROOT/python/tests" 2>/dev/null | grep '::' | {
          t0=$SECONDS; crashes=0
          while read -r id; do
            if [ $((SECONDS - t0)) -ge "${PY_CRASH_BUDGET_S:-60}" ] || [ $crashes -ge "${PY_CRASH_MAX:-3}" ]; then
              echo "stopped after $((SECONDS - t0)) s and $crashes crashes (PY_CRASH_BUDGET_S, PY_CRASH_MAX)"; break
            fi
            PYTHONPATH="$PY_PATH_EXTRA${PYTHONPATH:+:$PYTHONPATH}" timeout 120 "$VPY" -m pytest -q -x \
              "$REPO_ROOT/$id" >/tmp/one_test.log 2>&1
            rc=$?; [ $rc -ge 128 ] && crashes=$((crashes + 1))
            echo "rc=$rc $id"; [ -s /tmp/one_test.log ] && tail -5 /tmp/one_test.log | sed 's/^/    /'
          done; }) >"$PY_DIR/crash_tests.log" 2>&1
        cc -shared -fPIC -o /tmp/segv_trace.so "$REPO_ROOT/tools/debug/segv_trace.c" -ldl ||
          py_note "segv_trace.so did not build"
        (cd /tmp && SEGV_TRACE_SO=/tmp/segv_trace.so PYTHONPATH="$PY_PATH_EXTRA${PYTHONPATH:+:$PYTHONPATH}" \
          timeout 600 "$VPY" "$REPO_ROOT/tools/py_crash_probe.py") >"$PY_DIR/crash_probe.json" 2>&1
        if command -v gdb >/dev/null; then
          (cd /tmp && PYTHONPATH="$PY_PATH_EXTRA${PYTHONPATH:+:$PYTHONPATH}" timeout 300 gdb -q -batch \
            -ex run -ex bt -ex "info sharedlibrary" --args "$VPY" -m pytest -q -x \
            "$REPO_ROOT/python/tests") >"$PY_DIR/crash_gdb.log" 2>&1
        else
          py_note "no gdb on this machine: no native backtrace"
        fi
      fi
    else
      py_note "pytest missing: suite not run"
    fi
    M1=/tmp/sg-llama2-7b-L1
    [ -f $M1/model.safetensors.index.json ] ||
      timeout 120 "$SG" gen-model --like llama-2-7b --layers 1 --method magnitude --sparsity 0.5 \
        --seed 5 -o $M1 >"$PY_DIR/gen_model.log" 2>&1
    (cd /tmp && PYTHONPATH="$PY_PATH_EXTRA${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$VPY" "$REPO_ROOT/python/examples/llama_block.py" \
      --checkpoint $M1 --cache-dir /tmp/sg-sample-kcache --json "$PY_DIR/llama_block.json") >"$PY_DIR/llama_block.log" 2>&1
    SAMPLE_RC=$?
    tail -12 "$PY_DIR/llama_block.log"
  fi
  printf '{"device": "%s", "build": "%s", "pytest_rc": %s, "llama_block_rc": %s, "notes": "%s"}\n' \
    "$DEVICE_NAME" "$MODE" "$PYTEST_RC" "$SAMPLE_RC" "${PY_STATUS//\"/\'}" >"$PY_DIR/python.json"
  tar -czf "$OUT/python.tar.gz" -C "$PY_DIR" --exclude=./site --exclude=./wheel-site .
  export PYTHONPATH=$OLD_PYTHONPATH
  log "python: pytest rc=$PYTEST_RC, llama_block rc=$SAMPLE_RC ($PY_STATUS)"
fi

# ---- BENCHMARKS --------------------------------------------------------------------------------
BENCH_SUMMARY=()
RAN_BENCH=0
for entry in "${BENCH_RUNS[@]}"; do
  has_step bench || break
  name=${entry%%|*}; cmd=${entry#*|}
  if [ -n "$BENCH_ONLY" ] && [[ " $BENCH_ONLY " != *" $name "* ]]; then continue; fi
  # Seconds this benchmark may take under DEADLINE_S (empty: no limit).
  left=""
  if [ -n "${DEADLINE_S:-}" ]; then
    left=$((DEADLINE_S - ($(date +%s) - T0)))
    if [ "$left" -le 5 ]; then
      log "bench $name: not run, past DEADLINE_S=$DEADLINE_S"
      BENCH_SUMMARY+=("$name|not run (DEADLINE_S)")
      continue
    fi
  fi
  log "bench $name${left:+ (at most ${left} s)}"
  (cd "$BUILD_DIR" && eval "$cmd") >"$BENCH_DIR/$name.log" 2>&1 &
  bench_pid=$!
  watcher=""
  if [ -n "$left" ]; then
    # The commands run as the subshell's children: stop them at the deadline, then kill them.
    rm -f "$BUILD_DIR/.bench_deadline"
    (sleep "$left"; touch "$BUILD_DIR/.bench_deadline"; pkill -TERM -P "$bench_pid"; sleep 5
      pkill -KILL -P "$bench_pid") >/dev/null 2>&1 &
    watcher=$!
  fi
  wait "$bench_pid"
  rc=$?
  [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
  if [ -n "$watcher" ] && [ -e "$BUILD_DIR/.bench_deadline" ]; then
    log "bench $name: stopped at DEADLINE_S=$DEADLINE_S"
    BENCH_SUMMARY+=("$name|rc=$rc, stopped at DEADLINE_S")
  else
    BENCH_SUMMARY+=("$name|rc=$rc")
  fi
  RAN_BENCH=1
  tail -25 "$BENCH_DIR/$name.log" | sed "s/^/  [$name] /"
done
if [ "$RAN_BENCH" = 1 ]; then
  tar -czf "$OUT/bench.tar.gz" -C "$BENCH_DIR" .
fi

# ---- summary.json and the table ----------------------------------------------------------------
export STARTED GIT_COMMIT DEVICE_NAME OUT BUILD_DIR BUILD_RC CTEST_RC SMOKE_RC GPU_TEST_REGEX
export BUILD_STATUS="${STATUS[build]}"
export GPU_RUN_COMMAND="${SPARSEGEN_RUN_COMMAND:-bash tools/gpu_run.sh}"
export SAN_LINES=$(printf '%s\n' "${SAN_SUMMARY[@]}")
export BENCH_LINES=$(printf '%s\n' "${BENCH_SUMMARY[@]+"${BENCH_SUMMARY[@]}"}")
export ELAPSED_S=$(( $(date +%s) - T0 ))
python3 - <<'PY'
import json, os, re, xml.etree.ElementTree as ET
env = os.environ
out = env["OUT"]
meta = {
    "device": env["DEVICE_NAME"], "date": env["STARTED"], "git_commit": env["GIT_COMMIT"],
    "command": env["GPU_RUN_COMMAND"], "elapsed_s": int(env["ELAPSED_S"]),
}
# ctest JUnit: count passed / failed / skipped, and which GPU tests were skipped.
tests = {"passed": 0, "failed": 0, "skipped": 0, "failed_names": [], "skipped_names": []}
gpu = {"passed": 0, "failed": 0, "skipped": 0}
gpu_re = re.compile(env["GPU_TEST_REGEX"])
try:
    root = ET.parse(os.path.join(out, "ctest.xml")).getroot()
    for tc in root.iter("testcase"):
        name = tc.get("name", "")
        status = tc.get("status", "")
        if tc.find("skipped") is not None or status in ("notrun", "disabled"):
            kind = "skipped"
        elif tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
            kind = "failed"
        else:
            kind = "passed"
        tests[kind] += 1
        if kind != "passed":
            tests[kind + "_names"].append(name)
        if gpu_re.search(name):
            gpu[kind] += 1
except Exception as e:  # no report: the build or ctest failed early
    tests["error"] = f"no ctest report: {e}"
smoke = None
raw = os.path.join(env["BUILD_DIR"], "gpu_smoke_raw.json")
try:
    with open(raw) as f:
        smoke = json.load(f)
except Exception as e:
    err = ""
    try:
        err = open(os.path.join(env["BUILD_DIR"], "gpu_smoke.err")).read().strip()
    except OSError:
        pass
    smoke = {"available": False, "passed": False, "reason": err or f"no output: {e}"}
with open(os.path.join(out, "gpu_smoke.json"), "w") as f:
    json.dump({"meta": meta, "result": smoke, "exit_code": int(env["SMOKE_RC"])}, f, indent=2)
san = [l.split("|", 1) for l in env["SAN_LINES"].splitlines() if l]
bench = [l.split("|", 1) for l in env["BENCH_LINES"].splitlines() if l]
on_gpu = meta["device"] != "none"
gpu_ok = (not on_gpu) or (gpu["skipped"] == 0 and gpu["failed"] == 0 and gpu["passed"] > 0)
summary = {
    "meta": meta,
    "build": env["BUILD_STATUS"],
    "tests": tests, "gpu_tests": gpu, "gpu_tests_ok": gpu_ok,
    "ctest_exit_code": int(env["CTEST_RC"]),
    "smoke": smoke, "sanitizer": dict(san), "benchmarks": dict(bench),
}
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)

rows = [("device", meta["device"]), ("commit", meta["git_commit"][:12]), ("build", summary["build"]),
        ("tests", f'{tests["passed"]} passed, {tests["failed"]} failed, {tests["skipped"]} skipped'),
        ("GPU tests", f'{gpu["passed"]} passed, {gpu["failed"]} failed, {gpu["skipped"]} skipped'
                      + ("" if gpu_ok else "  <-- NOT OK")), ]
if tests["failed_names"]:
    rows.append(("failed", ", ".join(tests["failed_names"][:8])))
if tests["skipped_names"] and on_gpu:
    rows.append(("skipped", ", ".join(tests["skipped_names"][:8])))
if smoke.get("available"):
    rows.append(("smoke", ("PASS" if smoke["passed"] else "FAIL") +
                 f' {smoke["arch"]}, NVRTC {smoke["nvrtc_version"]}, compile {smoke["compile_ms"]:.1f} ms,'
                 f' load {smoke["load_ms"]:.2f} ms, kernel {smoke["kernel_ms_median"]:.4f} ms'
                 f' ({smoke["bandwidth_gb_s"]:.0f} GB/s), rel err {smoke["rel_l2_error"]:.2g}'))
else:
    rows.append(("smoke", "not available: " + str(smoke.get("reason", ""))[:150]))
for k, v in san:
    rows.append(("sanitizer " + k, v.strip()))
for k, v in bench:
    rows.append(("bench " + k, v))
rows.append(("elapsed", f'{meta["elapsed_s"]} s'))
w = max(len(k) for k, _ in rows)
print("\n==================== sparsegen gpu_run summary ====================")
for k, v in rows:
    print(f"{k:<{w}}  {v}")
PY
ls "$OUT"
