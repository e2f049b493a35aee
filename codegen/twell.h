// twell emitter: CUDA source for a TwellSchedule (ir/twell_schedule.h): kernel 1 (the gate
// GEMM with the ReLU + TwELL epilogue) as the b_transform on x, kernel 2 (the fused up + down
// projection) as the main kernel. For bf16, gated, K = 2048, N = 5632, tile = 128, comp = 4,
// warps = 8, M = 4096:
//
//   using T = __nv_bfloat16;
//   extern "C" __global__ void __launch_bounds__(256) sparsegen_twell_gate(
//       const T* __restrict__ values, const T* __restrict__ B, unsigned* __restrict__ bw) {
//     extern __shared__ __align__(16) float sg_smem[];
//     sg::twell_gate_gemm<T, 128, 32, 8>(B, values + 0, bw, sg_smem, 4096, 2048, 2048, 5632,
//                                       44, entries_off, backup_off);
//   }
//   extern "C" __global__ void __launch_bounds__(256) sparsegen_twell(
//       const T* __restrict__ values, const T* __restrict__ B, const unsigned* __restrict__ bw,
//       T* __restrict__ C, float alpha, float beta) {
//     extern __shared__ __align__(16) float sg_smem[];
//     sg::twell_down<T, 8, 128, 32, 1, 1, 2048>(B, values + up_off, values + down_off, bw, C,
//                                               sg_smem, alpha, beta, 2048, 5632, 44,
//                                               entries_off, backup_off);
//   }
//
// B is x (M×K) and C is y (M×K); values are the weights in the layout of twell_weights_layout.
#pragma once

#include "codegen/family.h"

namespace sparsegen::codegen {

// Precondition: schedule is a twell one and validate(problem, schedule) is empty. Main kernel
// parameters: values (Values), B, bw (BWork), C, alpha, beta; b_transform: values, B, bw.
GeneratedKernel emit_twell(const Problem& problem, const Schedule& schedule,
                           const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
