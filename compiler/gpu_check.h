// Checks a compiled kernel on the GPU against CPU references.
//
//   CheckInputs in = make_check_inputs(k.problem(), /*seed=*/7, /*alpha=*/0.75f, /*beta=*/0.0f);
//   Reference ref = compute_reference(a, in);
//   CheckResult r = gpu_check(k, a, in, ref);      // r.passed, r.error, r.rel_error, ...
//
// Inputs: B and the initial C are seeded random, non-integer, sign-balanced, magnitude uniform in
// [0.5, 1.5), rounded to the problem dtype (so host and device see the same numbers). For
// beta == 0 the output is poisoned first with a NaN bit pattern whose payload the GPU never
// produces, so an element the kernel does not write is told apart from a computed NaN.
//
// Oracles: `exact` is alpha·A·B + beta·C computed in double from the dtype-rounded inputs; the GPU
// result must be within a per-element bound of it (below). When the problem is small enough,
// reference_spmm (ir/interpreter.h: fp32 accumulation, one rounding) and the interpreter (the
// schedule's own division and reduction on the host) are compared with the GPU result too, each
// within twice the bound (both sides are within the bound of `exact`).
//
// The per-element bound (first-order rounding-error analysis; u_d the unit roundoff of the dtype:
// 2^-24 fp32, 2^-11 fp16, 2^-8 bf16, u = 2^-24 for the fp32 accumulation):
//   S_i   = |alpha|·sum_j |a_ij·b_j| + |beta|·|c_i|     (magnitude of what is summed)
//   tol_i = 2·[ (L_i + 4)·u·S_i                          fp32 products and sums in any order,
//                                                        L_i = nonzeros of the row
//             + adds_i·u_d·S_i                           Atomic output: every add rounds to dtype
//             + u_d·|exact_i| ]                          the final rounding to dtype
//           + (adds_i + 1)·tiny_d                        subnormal spacing of the dtype
// (factor 2 for safety). A gross error (a missing or doubled nonzero, a wrong column, a wrong row)
// is about |a·b| ~ S_i / L_i, far above (L_i + 4)·u·S_i for every row length the data has.
// Plus a global relative error ||out - exact||_2 / ||exact||_2 below rel_bound: fp32 1e-5 (grows
// with sqrt of the longest row beyond ~10^4 nonzeros, the random-walk growth of fp32 sums),
// fp16 1e-2 (~20 u_d), bf16 2e-2 (~5 u_d); times sqrt(adds) for Atomic outputs. Any NaN where
// exact is finite, any unwritten element, any element beyond its bound fails.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct CheckInputs {
  Problem problem;
  float alpha = 1.0f;
  float beta = 0.0f;
  std::vector<float> b;   // K*N in problem.b_layout, values exactly representable in the dtype
  std::vector<float> c0;  // M*N initial C in problem.c_layout (what the kernel reads if beta != 0)
};

// Seeded inputs (SplitMix64): magnitudes uniform in [0.5, 1.5), random sign, rounded to dtype.
CheckInputs make_check_inputs(const Problem& p, uint64_t seed, float alpha, float beta);

struct Reference {
  std::vector<double> exact;  // M*N, in problem.c_layout
  std::vector<double> scale;  // S_i above
  std::vector<float> spmm;    // reference_spmm's output; empty when the problem was too large
};

// Largest nnz·N for which reference_spmm (single-threaded, fp16 conversions per product) runs.
inline constexpr int64_t kReferenceSpmmLimit = int64_t{1} << 22;
// Largest nnz·N for which the interpreter runs inside gpu_check.
inline constexpr int64_t kInterpreterLimit = int64_t{1} << 21;

// exact and scale (multi-threaded over rows for large problems); spmm when nnz·N is at most
// kReferenceSpmmLimit and with_reference_spmm.
Reference compute_reference(const CsrMatrix& a, const CheckInputs& in,
                            bool with_reference_spmm = true);

struct CheckResult {
  bool passed = false;
  std::string error;     // the first failure and counts, empty when passed
  double rel_error = 0;  // ||out - exact|| / ||exact|| (absolute when exact is 0)
  double rel_bound = 0;
  double max_ratio = 0;  // max |out_i - exact_i| / tol_i (<= 1 passes)
  int64_t elements = 0;
  int64_t unwritten = 0;     // poison pattern still there
  int64_t nans = 0;          // NaN where exact is finite
  int64_t out_of_bound = 0;  // beyond tol_i (or non-finite exact not matched)
  int64_t overflowed = 0;    // exact beyond the dtype range: inf accepted
  bool compared_reference_spmm = false;
  bool compared_interpreter = false;
};

// Compares a downloaded output (as floats) with the references. `interp` may be null. Pure host
// code: the GPU test and the CPU tests share it.
CheckResult compare_output(const CsrMatrix& a, const Schedule& s, const CheckInputs& in,
                           const Reference& ref, const std::vector<float>& out,
                           const std::vector<uint32_t>& out_bits, const std::vector<float>* interp);

// Bit pattern used to poison C before a beta == 0 run (fp32: 32 bits; fp16/bf16: 16 bits).
uint32_t poison_bits(DType t);

// Runs `k` once on `stream` (C poisoned when in.beta == 0, else C = in.c0), downloads C and
// compares. The interpreter's output: `interp` when given (computed elsewhere, e.g. on a worker
// thread), else computed here when run_interpreter and nnz·N <= kInterpreterLimit. Never throws
// for a wrong result; CUDA errors propagate as CudaError.
CheckResult gpu_check(const CompiledKernel& k, const CsrMatrix& a, const CheckInputs& in,
                      const Reference& ref, CUstream stream = nullptr,
                      const std::vector<float>* interp = nullptr, bool run_interpreter = true);

// The interpreter's output for inputs `in` (C starting from in.c0), or empty when nnz·N exceeds
// kInterpreterLimit. Throws std::logic_error when the plan breaks an invariant.
std::vector<float> interpreter_output(const CsrMatrix& a, const Schedule& s, const CheckInputs& in);

// Both a beta == 0 run (poisoned C) and a beta != 0 run, seeded; alpha = 0.75, beta = -1.5 (exact
// in every dtype). `passed` only when both pass; `error` names which run failed.
struct GpuCheckPair {
  CheckResult beta0;
  CheckResult beta1;
  bool passed() const { return beta0.passed && beta1.passed; }
  std::string error() const;
};
GpuCheckPair gpu_check(const CompiledKernel& k, const CsrMatrix& a, uint64_t seed);

}  // namespace sparsegen
