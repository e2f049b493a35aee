// MACKO emitter: CUDA source for a MackoSchedule (ir/macko_schedule.h) over a MackoFormat
// (ir/macko_format.h). The kernel, for warp per row (wpr = 1), fp16, b_Δ = 4, unroll 2, N = 1:
//
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_macko(const T* values,
//       const T* B, T* C, float alpha, float beta, const unsigned* deltas, const int* row_ptr) {
//     row = blockIdx.x * 4 + warp;  if (row >= M) return;        // warp-uniform
//     s0 = row_ptr[row]; s1 = row_ptr[row + 1]; v0 = s0 >> 3; v1 = (s1 + 7) >> 3;
//     for (base = v0; base < v1; base += 64) {                   // 64 vectors = 512 slots / step
//       for u < 2: vec = base + u * 32 + lane;                   // all loads first: in flight
//                  if (vec < v1) { sg::macko_load_values<T>(values, vec, raw[u]);   // 16 B
//                                  sg::macko_load_deltas<4>(deltas, vec, dw[u]); }  // 4 B
//       for u < 2: tot[u] = sg::macko_decode<4>(dw[u], vec * 8, s0, s1, pre[u]);
//                  incl[u] = sg::macko_warp_scan(tot[u], lane);
//       for u < 2: ex = carry + incl[u] - tot[u] - 1;
//                  for j < 8: if slot valid: acc += value(raw[u], j) * B[ex + pre[u][j]];
//                  carry += shfl(incl[u], 31);
//     }
//     sum = sg::warp_reduce_scatter_sum<1>(acc, lane);
//     lane 0: sg::store_axpby<T>(C + row, sum, alpha, beta);
//   }
// With NC = cols > 1 columns per lane the reduce-scatter leaves column sc = lane / (32 / NC) on
// lanes whose lane % (32 / NC) == 0, and those NC lanes store the row's columns side by side.
//
// Split row (wpr = R > 1): the block is one row's R warps; warp w takes the w-th 32·unroll
// vectors of each step of R·32·unroll; the warps' slot totals meet in shared memory (double
// buffered, one __syncthreads per step) to give each warp its column carry, and the partial sums
// are combined through shared memory at the end (warp order, fixed).
//
// Staged B (stage = shared | shared_f32, warp per row; the shape tuned where N is 1, 2, 4 or 8):
// dynamic shared memory holds the counter, B with 16 zero guard rows either side, then the
// block's work items (macko_items: its rows, long ones cut into segments of whole steps) and one
// partial sum per item and column. Each warp takes items from a shared counter, keeps the next
// step's 16-byte loads in flight while it decodes this one, zeroes the value and delta of slots
// outside the item (the first and last vector only) instead of testing every slot, gathers B with
// one LDS per slot whose constant part is folded into the instruction, and stores a whole row's C;
// a cut row's segments leave their sums in shared memory (per column, from the reduce-scatter), and
// in blocks with a cut row, after a barrier, the row's last segment adds them and stores C. Comment
// above emit_staged_body() in macko.cpp shows the loop. The staged kernel's last parameter is
// `items` (I32Table, macko_items) instead of row_ptr. Extra launch field:
// LaunchShape::dynamic_shared_bytes = macko_stage_bytes(problem, schedule).
#pragma once

#include "codegen/family.h"
#include "ir/macko_format.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen::codegen {

// Precondition: schedule is a MACKO one; f = pack_macko(a, schedule.as<MackoSchedule>().delta_bits)
// for the problem's matrix. Parameters: values (Values: f.values in the dtype), B, C, alpha, beta,
// deltas (U32Table: f.deltas as little-endian 32-bit words), row_ptr (I32Table; staged: items).
// Store output;
// grid = (ceil(M / rows_per_block), ceil(N / cols)). Throws UserError for fp32 values or slot
// positions beyond 32 bits.
GeneratedKernel emit_macko(const Problem& problem, const Schedule& schedule, const MackoFormat& f,
                           const EmitOptions& opt = {});

// f.deltas as little-endian 32-bit words (zero-filled to a whole word), as the kernel reads them.
std::vector<int64_t> macko_delta_words(const MackoFormat& f);

}  // namespace sparsegen::codegen
