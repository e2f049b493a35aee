// slide emitter: CUDA source for a SlideSchedule (ir/slide_schedule.h) over a SlideTcFormat
// (ir/slide_fragments.h): the b_transform kernel that lifts B and the mma.sp kernel. For fp16,
// 6:8, warps = 4, mt = 1, nt = 1, unroll = 2, N = 8:
//
//   using T = __half;
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_slide_lift(const T* B,
//       unsigned* bw) {                       // one block per token (column-major B)
//     extern __shared__ __align__(16) unsigned char sg_lift_smem[];
//     sg::slide_lift<T, 0, 4, 128, 0, 1, 1, 0>(B, bw, nullptr, (T*)sg_lift_smem, K, N, b_ks, b_ns,
//                                           chunks, tiles, seg_chunks, seg_cols);
//   }
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_slide(const unsigned* values,
//       T* C, float alpha, float beta, const unsigned* meta, const unsigned* bw) {
//     extern __shared__ __align__(16) float sg_smem[];
//     sg::slide_spmm<T, 0, 1, 1, 2, 4, 0, 1, 1, 0>(values, meta, bw, C, nullptr, nullptr, sg_smem,
//         alpha, beta, M, N, row_tiles, col_tiles, chunks, c_rs, c_ns, ws, counters, col_blocks);
//   }
//
// split=rows calls sg::slide_spmm_rows with the same arguments; split=wg calls
// sg::slide_spmm_wg<T, KIND, nt, U, warps, QUANT, ksplit, stages, cluster, producer, LIFT, P,
// SPREAD> with the address of a B tensor map appended, compiled for sm_90a
// (GeneratedKernel::arch_specific): after a lift writing ORDER 2 (wgmma's core order; LIFT 0, the
// map null), or with lift=fused alone (LIFT 1, bw null, U = unroll runs of 3 chunks, raw-first
// windows; SPREAD 1 with spread=S), copying B's original columns through the map (TMA). For
// fp16, 6:8, warps = 8, nt = 8, unroll = 1, stages = 3, N = 64:
//
//   extern "C" __global__ void __launch_bounds__(384) sparsegen_slide(const unsigned* values,
//       T* C, float alpha, float beta, const unsigned* meta,
//       const __grid_constant__ sg::TensorMap b_map) {
//     extern __shared__ __align__(16) float sg_smem[];
//     sg::slide_spmm_wg<T, 0, 8, 3, 8, 0, 1, 3, 1, 0, 1, 4, 0>(values, meta, nullptr, C, nullptr,
//         nullptr, sg_smem, alpha, beta, M, N, row_tiles, col_tiles, chunks, c_rs, c_ns, nullptr,
//         nullptr, col_blocks, &b_map);
//   }
//
// Quantized types add the row scales (F32Table) to the main kernel and the token scales
// (TokenScales) to both; T is then the problem's io type (the caller's B and C).
#pragma once

#include <string>

#include "codegen/emitter.h"
#include "codegen/family.h"
#include "ir/slide_fragments.h"

namespace sparsegen::codegen {

// Precondition: schedule is a slide one, validate(problem, schedule) is empty and
// f = pack_slide_tc(a, pattern, problem.dtype). Parameters of the main kernel: values (Values),
// C, alpha, beta, meta (U32Table), [row_scales (F32Table)], bw (BWork) or with lift=fused B
// (split=k) or b_map (BTensorMap, split=wg), [token_scales (TokenScales)], [ws (Workspace): K
// parts or spread]; b_transform (lift=kernel): B, bw, [token_scales].
GeneratedKernel emit_slide(const Problem& problem, const Schedule& schedule, const SlideTcFormat& f,
                           const EmitOptions& opt = {});

// The order the lift writes B' in (sg::slide_lift's ORDER): the mma.sp B fragments (split=k and
// rows), plain (a library GEMM's lifted K x N, column-major, in the library's form of the type:
// SlideForm::Library), or the K-major core matrices wgmma.sp reads (split=wg).
enum class LiftOrder { Fragments = 0, Plain = 1, Cores = 2 };

// The lift (b_transform) of (2·pattern−2):2·pattern for p, shared by the families that run slide
// weights: declares kernel `name` (sg::slide_lift) in `e`, T being the problem's B type, and
// returns its launch step; `chunks` chunks of the lift's width, written in `order`.
AuxKernel emit_slide_lift(Emitter& e, const Problem& p, int pattern, int64_t chunks,
                          LiftOrder order, const std::string& name);
// Whether the lift copies B in 16-byte pieces (column-major B, K % 8 == 0): B must then be
// 16-byte aligned for 8-bit types.
bool slide_vec_b(const Problem& p);

// The scale step after a library GEMM of 8-bit operands quantized per row and per token, shared
// by the families that run one: the main kernel `name` reads the raw accumulators (`acc`: "int"
// or "float", M x N column-major in the Workspace) and writes
//   C = alpha · acc · (row scale · token scale) + beta · C   (sg::slide_lt_scale, one thread each)
// Emits its body into `e` (T declared there) and returns the kernel's head; sets sig's params
// (row_scales as the F32Table `table`), launch, workspace and token scales.
std::string emit_quant_scale(Emitter& e, const Problem& p, const char* acc,
                             const std::vector<float>& row_scales, const std::string& table,
                             const std::string& name, KernelSignature& sig);

}  // namespace sparsegen::codegen
