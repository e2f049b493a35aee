// slide_lt emitter: CUDA source for a SlideLtSchedule (ir/slide_lt_schedule.h): the lift kernel
// (b_transform, B' plain for the library) and, for int8, the scale kernel after the
// library's 2:4 GEMM (KernelSignature::sparse_gemms). For int8, 6:8, M = 4096, N = 512:
//
//   using T = __half;
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_slide_lt_lift(const T* B,
//       unsigned* bw, float* token_scales) {   // one block per token (column-major B)
//     extern __shared__ __align__(16) unsigned char sg_lift_smem[];
//     sg::slide_lift<T, 2, 4, 128, 1, 1, 1, 1>(B, bw, token_scales, (T*)sg_lift_smem, ...);
//   }
//   extern "C" __global__ void __launch_bounds__(256) sparsegen_slide_lt(const int* acc,
//       const float* row_scales, const float* token_scales, T* C, float alpha, float beta) {
//     sg::slide_lt_scale<T, int>(acc, row_scales, token_scales, C, alpha, beta, 4096, 512);
//   }
//
// fp16/bf16 need no scale step: the library writes C with the run's alpha and beta, and the main
// kernel is an empty placeholder (grid 0).
#pragma once

#include "codegen/family.h"
#include "ir/slide_fragments.h"

namespace sparsegen::codegen {

// Precondition: schedule is a slide_lt one, validate_slide_lt(problem) is empty and
// f = pack_slide_tc(a, pattern, problem.dtype). Main kernel parameters (8-bit types): acc
// (Workspace), row_scales (F32Table), token_scales (TokenScales), C, alpha, beta; 16-bit: C.
GeneratedKernel emit_slide_lt(const Problem& problem, const Schedule& schedule,
                              const SlideTcFormat& f, const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
