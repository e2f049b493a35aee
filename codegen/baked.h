// baked emitter: a BakedSchedule (ir/baked_schedule.h) as one kernel whose instructions hold A.
// A warp finds its row in a chain of compares and runs that row's products, each an FMA of an
// immediate value with B at an immediate offset; nothing of A is read from memory. The CUDA it
// emits (row-major B and C, N = 8, fp32):
//
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_baked(
//       const T* __restrict__ B, T* __restrict__ C, float alpha, float beta) {
//     const int row = blockIdx.x * 4 + threadIdx.x / 32;
//     const int lane = threadIdx.x % 32;
//     if (row >= 28 || lane >= 8) return;
//     const int b0 = lane;                         // B's offset of the lane's column
//     float acc0 = 0.0f;
//     if (row == 0) {
//       acc0 = fmaf(__uint_as_float(0x3f9d70a4u), sg::load_f32<T>(B + (24 + b0)), acc0);
//       ...
//     }
//     else if (row == 2) {                         // empty rows have no branch
//       ...
//     }
//     sg::store_axpby<T>(C + (row * 8 + lane), acc0, alpha, beta);
//   }
//
// For N > 32 each lane owns columns lane, lane + 32, ... (one accumulator each); a lane past N in
// the last pass reads a valid column and does not store.
#pragma once

#include "codegen/family.h"
#include "ir/sparse_matrix.h"

namespace sparsegen::codegen {

// Precondition: schedule is a baked one and why_not_baked(problem, a) is empty (`a` is M x K). Its
// values are rounded to the problem's dtype in the source.
GeneratedKernel emit_baked(const Problem& problem, const Schedule& schedule, const CsrMatrix& a,
                           const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
