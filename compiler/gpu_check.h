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
// The per-element bound is the tight one of ir/error_bound.h (spmm_error_bound), documented and
// derived there:
//   tol_i = (L_i + adds_i + 4)·2^-23·S_i + (1 + max(1, adds_i))·2^-24·|beta·c_i|
//           + (L_i + adds_i + 4)·2^-126 + ½ ulp_dtype(|exact_i| + those terms)
// with S_i = |alpha|·sum_j |a_ij·b_j| (scale_i − |beta·c_i|), L_i the nonzeros of the row and
// adds_i the fp32 atomic adds of partial rows of an Atomic GeneralSparse output (0 for Store and
// the other families). Atomic outputs add partial rows in fp32 (into C for fp32, into an fp32
// workspace rounded once for fp16/bf16), so they round to the dtype once, like Store outputs. A
// gross error (a missing or doubled nonzero, a wrong column, a wrong row) is about
// |a·b| ~ S_i / L_i, far above (L_i + 4)·2^-23·S_i for every row length the data has.
// Plus a global relative error ||out - exact||_2 / ||exact||_2 below rel_bound: fp32 1e-5 (grows
// with sqrt of the longest row beyond ~10^4 nonzeros, the random-walk growth of fp32 sums),
// fp16 1e-2 (~20 u_d), bf16 2e-2 (~5 u_d). Any NaN where exact is finite, any unwritten element,
// any element beyond its bound fails.
//
// Non-finite values. exact is computed in double, where nothing overflows, but the kernels work in
// fp32 and store in the dtype:
//   - NaN or ±Inf in A (reported at load) make exact NaN or ±Inf; the output must match it.
//   - Result beyond the dtype's range (|exact| + tol > largest finite): the store may round to
//     ±Inf of exact's sign; accepted ("overflowed").
//   - Overflow-indeterminate elements: when R_i·(1 + (L_i + 4)u) reaches the largest finite fp32,
//     with R_i = max(sum |a·b|, |alpha|·sum |a·b| + |beta·c|) over the finite products (the
//     kernel's unscaled accumulators and its scaled result), some fp32 partial sum may overflow
//     to ±Inf, and two opposite infinities give NaN, while the exact sum (and a different
//     summation order) stays finite: the result depends on the order the schedule adds in, not
//     on exact arithmetic alone. There, ±Inf or NaN is accepted (exact = ±Inf: that Inf or NaN);
//     a finite output is still checked against its bound, and the element must still be written.
//     Below the threshold no partial sum can overflow, so the ordinary rules hold. (Found on
//     ParU/temp.mtx: entries 2.9e38, -Inf, 1.9e38 in one row; the GPU's +Inf + -Inf = NaN where
//     the double oracle said -Inf.) Counted in CheckResult::overflow_indeterminate.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "ir/family.h"
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
// B of make_check_inputs(p, seed, ...) alone (the tuner's timing runs need no C).
std::vector<float> make_check_b(const Problem& p, uint64_t seed);

struct Reference {
  std::vector<double> exact;  // M*N, in problem.c_layout
  std::vector<double> scale;  // S_i above
  // 1 where fp32 intermediates may overflow (overflow-indeterminate, above); empty: none marked.
  std::vector<uint8_t> indeterminate;
  std::vector<float> spmm;  // reference_spmm's output; empty when the problem was too large
};

// Largest nnz·N for which reference_spmm (single-threaded, fp16 conversions per product) runs.
inline constexpr int64_t kReferenceSpmmLimit = int64_t{1} << 22;
// Largest nnz·N for which the interpreter runs inside gpu_check.
inline constexpr int64_t kInterpreterLimit = int64_t{1} << 21;

// exact and scale (multi-threaded over rows for large problems); spmm when nnz·N is at most
// kReferenceSpmmLimit and with_reference_spmm.
Reference compute_reference(const CsrMatrix& a, const CheckInputs& in,
                            bool with_reference_spmm = true);
// The same for several inputs that share the problem and B (e.g. a beta == 0 and a beta != 0 run
// with different C): A·B is computed once. Precondition (asserted): equal problem and b.
std::vector<Reference> compute_references(const CsrMatrix& a,
                                          const std::vector<const CheckInputs*>& ins,
                                          bool with_reference_spmm = true);

struct CheckResult {
  bool passed = false;
  std::string error;     // the first failure and counts, empty when passed
  double rel_error = 0;  // ||out - exact|| / ||exact|| (absolute when exact is 0)
  double rel_bound = 0;
  double max_ratio = 0;  // max |out_i - exact_i| / tol_i (<= 1 passes)
  int64_t elements = 0;
  int64_t unwritten = 0;               // poison pattern still there
  int64_t nans = 0;                    // NaN where exact is finite
  int64_t out_of_bound = 0;            // beyond tol_i (or non-finite exact not matched)
  int64_t overflowed = 0;              // exact beyond the dtype range: inf accepted
  int64_t overflow_indeterminate = 0;  // fp32 intermediates may overflow: ±Inf/NaN accepted
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
// thread), else computed here when run_interpreter and nnz·N <= kInterpreterLimit. `buffers`
// (optional): device B and C kept between checks and reallocated only when the size changes
// (always exactly B's and C's size plus one element, so compute-sanitizer still sees overruns);
// saves two allocations and frees per check. `launch` (optional) enqueues the kernel on the
// check's device B and C instead of k.run (a test of another launch path, e.g. a captured graph,
// passes its own). Never throws for a wrong result; CUDA errors propagate as CudaError.
struct CheckBuffers {
  cuda::DeviceBuffer b, c;
};
using CheckLaunch =
    std::function<void(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream)>;
CheckResult gpu_check(const CompiledKernel& k, const CsrMatrix& a, const CheckInputs& in,
                      const Reference& ref, CUstream stream = nullptr,
                      const std::vector<float>* interp = nullptr, bool run_interpreter = true,
                      CheckBuffers* buffers = nullptr, const CheckLaunch& launch = {});

// The interpreter's output for inputs `in` (C starting from in.c0), or empty when nnz·N exceeds
// kInterpreterLimit. Throws std::logic_error when the plan breaks an invariant. `packed`
// (optional): s.family().pack(a, in.problem, s) (or a pack with the same pack_key), to save
// packing again.
std::vector<float> interpreter_output(const CsrMatrix& a, const Schedule& s, const CheckInputs& in,
                                      const PackedMatrix* packed = nullptr);

// Both a beta == 0 run (poisoned C) and a beta != 0 run, seeded; alpha = 0.75, beta = -1.5 (exact
// in every dtype). The two runs share B (and the beta != 0 run's C is the seeded C), so A·B, the
// costly part of the references, is computed once. `passed` only when both pass; `error` names
// which run failed.
struct GpuCheckPair {
  CheckResult beta0;
  CheckResult beta1;
  bool passed() const { return beta0.passed && beta1.passed; }
  std::string error() const;
};
// max_columns (> 1): when N is larger, the check compares that many columns of C (tokens,
// evenly spread, the first and last among them; the kernel still runs on all of B), so that the
// fp64 reference of a prefill-sized problem costs max_columns / N of the full one.
// Large problems (check_inputs_on_device) draw B and C on the device and download only the
// compared columns (compiler/device_check_inputs.h): the same values, no host copy of either.
// The host side of that check: the compared columns, their inputs and the fp64 references.
// It depends on the problem, the matrix, the seed and max_columns, not on the kernel, so a caller
// that checks the winner of a search (tune) computes it while the search runs.
struct PairedReferences {
  Problem problem;  // the problem it is for
  uint64_t seed = 0;
  std::vector<int64_t> cols;  // the compared columns of C
  CheckInputs cmp[2];         // beta = 0 and beta != 0, those columns only
  std::vector<Reference> refs;
};
PairedReferences paired_references(const Problem& p, const CsrMatrix& a, uint64_t seed,
                                   int64_t max_columns = 0);
// `prepared` (optional): paired_references(k.problem(), a, seed, max_columns), computed earlier.
GpuCheckPair gpu_check(const CompiledKernel& k, const CsrMatrix& a, uint64_t seed,
                       int64_t max_columns = 0, const PairedReferences* prepared = nullptr);

// From (K + M)·N elements on, the paired check draws its inputs on the device: below, generating
// them on the host and copying them takes milliseconds and needs no helper module.
inline constexpr int64_t kDeviceCheckElements = int64_t{1} << 24;
bool check_inputs_on_device(const Problem& p);

// The columns of C the tuner's check of its winner compares (gpu_check's max_columns; N: all).
// All of them while N <= kCheckColumns and M·N <= kCheckElements; beyond, evenly spread ones:
// kCheckColumns at most, and kCheckElements / M but at least kCheckMinColumns. A prefill-sized
// problem (N in the thousands) or a graph (millions of rows) would otherwise hold fp64 references
// of gigabytes and spend tens of seconds on the host per check; the kernel still runs on all of B.
inline constexpr int64_t kCheckColumns = 256;
inline constexpr int64_t kCheckElements = int64_t{1} << 25;
inline constexpr int64_t kCheckMinColumns = 8;
int64_t check_columns(const Problem& p);

}  // namespace sparsegen
