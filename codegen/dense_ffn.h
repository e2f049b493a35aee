// dense_ffn emitter: the gating kernel of a DenseFfnSchedule (ir/dense_ffn_schedule.h) as the main
// kernel between two library GEMMs (KernelSignature::gemms_before / gemms_after). For bf16,
// gated, threads = 256:
//
//   using T = __nv_bfloat16;
//   extern "C" __global__ void __launch_bounds__(256) sparsegen_dense_ffn(
//       unsigned* __restrict__ bw) {
//     sg::ffn_gate<T>(reinterpret_cast<const T*>(bw), reinterpret_cast<T*>(bw) + h_offset, M, N,
//     1);
//   }
//
// gemms_before: [G | U] (BWork) = x (B) · [W_g | W_u] (Values); gemms_after:
// y (C) = alpha · h (BWork) · W_d (Values) + beta · y.
#pragma once

#include "codegen/family.h"

namespace sparsegen::codegen {

// Precondition: schedule is a dense_ffn one and validate(problem, schedule) is empty.
GeneratedKernel emit_dense_ffn(const Problem& problem, const Schedule& schedule,
                               const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
