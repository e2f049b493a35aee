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
#pragma once

#include "codegen/family.h"

namespace sparsegen::codegen {

// Precondition: schedule is a dense one and validate_dense(problem) is empty.
GeneratedKernel emit_dense(const Problem& problem, const Schedule& schedule,
                           const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
