// dense emitter: a DenseSchedule (ir/dense_schedule.h) has no kernel of its own. Its signature is
// one library GEMM (KernelSignature::gemms_after) and an empty main grid, so the runtime launches
// only cuBLASLt. For C row-major:
//
//   C (M x N, ldc N) = alpha · A (Values, M x K, lda K) · B + beta · C
//       B row-major K x N (ldb N), or column-major as B^T stored N x K (b_transposed, ldb K)
//
// and for C column-major (B column-major): C^T (N x M, ldc M) = B^T (N x K) · A^T, A^T given as
// A stored M x K (b_transposed). The source is an empty placeholder kernel the runtime never
// launches:
//
//   extern "C" __global__ void sparsegen_dense() {}
//
// int8 (ir/dense_schedule.h) launches three steps: the per-token quantization of B (the slide
// lift of 2:4, an identity window map), the library's int8 GEMM into the int32 workspace, and
// the scale kernel:
//
//   extern "C" __global__ void __launch_bounds__(256) sparsegen_dense(const int* acc,
//       const float* row_scales, const float* token_scales, T* C, float alpha, float beta) {
//     sg::slide_lt_scale<T, int>(acc, row_scales, token_scales, C, alpha, beta, M, N);
//   }
#pragma once

#include <span>

#include "codegen/family.h"

namespace sparsegen::codegen {

// Precondition: schedule is a dense one and validate_dense(problem) is empty; for int8,
// row_scales are the weight's per-row scales (quantize_rows), else empty.
GeneratedKernel emit_dense(const Problem& problem, const Schedule& schedule,
                           std::span<const float> row_scales = {}, const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
