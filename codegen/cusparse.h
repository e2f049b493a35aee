// cusparse emitter: a CusparseSchedule (ir/cusparse_schedule.h) has no kernel of its own. Its
// signature is one library SpMM (KernelSignature::spmms) over the kernel's CSR buffers and an
// empty main grid, so the runtime runs only cusparseSpMM:
//
//   C (M x N) = alpha · A (CSR: Values, ColIdx, row_offsets) · B + beta · C,  B and C in one order
//
// The source is an empty placeholder kernel the runtime never launches; it declares the CSR
// arrays as its parameters so that they are uploaded with the kernel:
//
//   extern "C" __global__ void sparsegen_cusparse(const T* values, const int* col_idx,
//                                                 const int* row_offsets) {}
#pragma once

#include "codegen/family.h"
#include "ir/sparse_matrix.h"

namespace sparsegen::codegen {

// Precondition: schedule is a cusparse one and validate_cusparse(problem) is empty; `a` is the
// matrix (M x K) whose CSR arrays the library reads.
GeneratedKernel emit_cusparse(const Problem& problem, const Schedule& schedule, const CsrMatrix& a,
                              const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
