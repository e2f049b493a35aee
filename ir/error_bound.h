// The tight per-element error bound of C = alpha·A·B + beta·C, in one place: the GPU check
// (compiler/gpu_check.h, so `run --check` and the tuner's check) and the CPU interpreter tests
// accept an element when |out − exact| <= spmm_error_bound(...).
//
//   exact = alpha·Σ_j a_ij·b_jc + beta·c0_ic in exact arithmetic, from the dtype-rounded inputs
//   (A, B and C₀ as the kernel sees them). u = 2^-24 (fp32 unit roundoff). With
//     S  = Σ_j |alpha·a_ij·b_jc|     (magnitude of the products)
//     Cb = |beta·c0_ic|               (0 when beta == 0: C is not read)
//     L  = nonzeros of the row + adds (adds below)
//   the bound is
//     E   = (L + 4)·2u·S                      fp32 products and sums, in any order and grouping
//         + (1 + max(1, adds))·u·Cb           the beta term (derived below)
//         + (L + 4)·2^-126                    fp32 underflow (flush to zero included)
//     tol = E + ½ ulp_dtype(|exact| + E)      the one rounding of the fp32 result to the dtype
//   where ½ ulp is half the spacing of the output dtype at that magnitude (half the subnormal
//   spacing below the smallest normal).
//
// Why each term:
//   - S term. Every kernel sums the row's L products in fp32 along some binary tree (a thread's
//     FMA chain, shuffles, block reductions, segment sums, atomic adds of partial rows): L − 1
//     adds, so every product is rounded at most L − 1 times, plus once for alpha·acc and once for
//     the final add of beta·C₀: (L + 1)·u·S to first order. The bound allows 2u per operation
//     (a tensor-core mma step adds its products to the fp32 accumulator at once and truncates
//     instead of rounding to nearest) and 3 operations to spare.
//   - Atomic outputs. Rows split across blocks are finished with fp32 atomic adds of partial
//     rows (into C for fp32, into an fp32 workspace rounded to the dtype once for fp16/bf16; the
//     bitmap_tc split-K workspace likewise). Those adds are part of the tree above, but they are
//     counted into L as well (adds > 0): the bound then does not depend on the argument that
//     adds of partial rows stay within the row's L − 1.
//   - beta term. beta·C₀ is formed in fp32 (one rounding, |δ| <= u; exact when beta is a power
//     of two) and then passes through fp32 adds, each rounding a sum that contains it: one add
//     for a Store output (alpha·acc + beta·C₀, also the bitmap_tc split-K finish ws + beta·C₀),
//     `adds` adds for an Atomic output whose workspace (or C) starts at beta·C₀. Each add's
//     relative error u applies to |sum| <= S·(1 + O(Lu)) + Cb; its S part is inside the S term,
//     its Cb part is u·Cb. Hence (1 + max(1, adds))·u·Cb: 2u·Cb for a Store output.
//   - Output rounding. The fp32 value y is within E of exact and is rounded to the dtype once
//     (round to nearest even): |RN(y) − y| <= ½ ulp(y) <= ½ ulp(|exact| + E). For fp32 outputs
//     that rounding is the last add itself, counted twice (a u·|exact| of slack).
// A library GEMM whose tensor cores accumulate below fp32 precision (fp8 e4m3 on Hopper keeps a
// narrower sum between its promotions to fp32, undocumented) adds accumulation_eps·S to E, the
// figure its family states (IrFamily::accumulation_error); 0 for every kernel of ours.
// A kernel that rounds twice (alpha·acc to the dtype, then + beta·C₀ and round again) errs by up
// to ½ ulp(alpha·acc) more, up to (1 + ulp(alpha·acc) / ulp(exact)) times this bound: 2.7x on the
// DLMC ffn_conv1 case of tests/ir/error_bound_test.cpp, so the bound tells the two apart.
#pragma once

#include <cstdint>

#include "ir/dtype.h"

namespace sparsegen {

// Half the spacing of `t`'s representable numbers at magnitude |x| (x finite): 2^(e − p) for
// 2^e <= |x| < 2^(e+1) with p = 11 (fp16), 8 (bf16), 24 (fp32); below the smallest normal, half
// the subnormal spacing (2^-25 fp16, 2^-134 bf16, 2^-150 fp32). The largest error of a
// round-to-nearest conversion of a value of magnitude |x| (within the range).
double half_ulp(DType t, double x);

struct ElementBoundTerms {
  int64_t row_length = 0;       // nonzeros of the row
  int64_t atomic_adds = 0;      // fp32 adds of partial rows (Atomic outputs), else 0
  double sum_abs_products = 0;  // S = Σ |alpha·a·b| over the row
  double abs_beta_c0 = 0;       // Cb = |beta·C₀| (0 when beta == 0)
  double abs_exact = 0;         // |alpha·A·B + beta·C₀| in exact arithmetic
  double accumulation_eps = 0;  // a reduced-precision accumulation's error, relative to S
};

// The fp32 part E (everything before the final rounding to the dtype).
double fp32_error_bound(const ElementBoundTerms& t);
// tol = E + ½ ulp_out(|exact| + E): the largest |out − exact| a correct kernel can produce.
double spmm_error_bound(DType out, const ElementBoundTerms& t);

}  // namespace sparsegen
