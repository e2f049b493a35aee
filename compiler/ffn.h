// The gated FFN through the compiler: a kernel for an FFN problem (ir/problem.h's GatedFfn) with
// its weights baked in, and the check of such a kernel on the GPU against the CPU reference
// (ir/ffn.h). Family-neutral: the schedule's family lays the weights out and emits the kernels
// (compiler/family.h, BuildOptions::ffn_weights).
//
//   FfnCase c = make_ffn_case({.m = 128, .k = 512, .n = 1408, .mean_nnz = 30});
//   const CsrMatrix h = ffn_activations(c.problem, c.weights, c.x);     // calibration pattern
//   Schedule s = choose_ffn_schedule(c.problem, h, "", target);
//   CompiledKernel k(ctx, build_ffn_kernel(c.problem, s, c.weights, target, &h));
//   k.run(d_x, d_y, 1.0f, 0.0f, stream);                               // y = FFN(x)
//   FfnCheckResult r = check_ffn(k, c.weights, c.x, /*seed=*/3);         // beta 0 and -1.5
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/ffn.h"

namespace sparsegen {

// Steps 3-7 for an FFN problem with its weights (laid out as the kernel's values).
// `activations`: a calibration pattern (any rows x N) for the statistics; null: none.
KernelBuild build_ffn_kernel(const Problem& p, const Schedule& s, const FfnWeights& w,
                             const CompileTarget& target, const CsrMatrix* activations = nullptr,
                             bool line_info = false);

// The given SPEC (parsed, validated and verified: UserError naming the field or the reasons),
// else the first schedule every family enumerates for the problem and activation pattern.
Schedule choose_ffn_schedule(const Problem& p, const CsrMatrix& activations,
                             const std::string& spec, const CompileTarget& target,
                             std::string* why = nullptr);

// The FFN tuner: the schedules of every FFN family (the sparse ones and the dense library
// candidate) for the problem, ranked by the cost model over the calibration tokens' activation
// pattern, the first `per_family` of each family built and measured on the GPU with those tokens
// (medians of L2-flushed runs); the fastest wins and the reason names it and the dense time.
// A candidate that fails to build or load (e.g. no cuBLASLt) is recorded and skipped.
// With the kernel database (runtime/kernel_db.h), a tuning is keyed by the problem (M, K, N,
// dtype, gated), the device and the calibration's statistics bucket (activation_bucket), not by
// the activation pattern: a second tuning of the same distribution is a cache hit that measures
// nothing (its kernel is built again with the weights, which the database never holds).
struct FfnTuneOptions {
  int per_family = 3;
  int repetitions = 10;
  std::string only_family;  // non-empty: that family alone
  std::string cache_dir;    // empty: the default database (runtime/kernel_db.h db_path)
  bool use_cache = true;
};
struct FfnMeasured {
  std::string schedule;
  double ms = 0;      // median; 0 when it failed
  std::string error;  // why it failed, else empty
};
struct FfnTuneResult {
  Schedule schedule;
  std::string reason;
  double ms = 0;
  std::vector<FfnMeasured> measured;       // in measuring order
  std::unique_ptr<CompiledKernel> kernel;  // the winner, ready to run
  std::string activations;                 // the calibration statistics, "mean 30.1, p50 ..."
  bool cache_hit = false;
  std::string tuning_key;  // the database key of this tuning ("" without the cache)
};
// x: the problem's M calibration tokens (M x K, dtype-rounded). Throws UserError when nothing
// could be measured (every candidate's error listed).
FfnTuneResult tune_ffn(const std::shared_ptr<cuda::Context>& ctx, const Problem& p,
                       const FfnWeights& w, std::span<const float> x, const CompileTarget& target,
                       const FfnTuneOptions& opt = {});

struct FfnCheckResult {
  bool passed = false;
  std::string error;  // the first violation, or why nothing ran
  int64_t rows_checked = 0;
  double worst = 0;  // largest |y - ref| / bound over the checked elements
};

// Runs k on x (M×K, dtype-rounded) twice: alpha 0.75, beta 0 with y poisoned by a NaN pattern
// (every element must be written, C never read), and alpha 1, beta -1.5 on seeded random y0;
// compares up to `max_rows` rows (all for small M; else the first 16, the last and evenly spaced
// ones) with ffn_reference within its bound.
FfnCheckResult check_ffn(const CompiledKernel& k, const FfnWeights& w, std::span<const float> x,
                         uint64_t seed, int64_t max_rows = 256);

}  // namespace sparsegen
