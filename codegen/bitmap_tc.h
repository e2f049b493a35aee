// bitmap_tc emitter: CUDA source for a BitmapTcSchedule (ir/bitmap_tc_schedule.h) over a
// BitmapTileFormat (ir/bitmap_format.h). The kernel, for fp16, warps = 4, mt = 1, N = 64 (NT = 8 n8
// tiles), 2 stages, ksplit = 1:
//
//   extern "C" __global__ void __launch_bounds__(128) sparsegen_bitmap_tc(const T* values,
//       const T* B, T* C, float alpha, float beta, const unsigned* masks, const int* tile_ptr) {
//     ct0 = blockIdx.y * PT;  tiles = min(CT - ct0, PT);  if (tiles <= 0) return;  // K part
//     sg::bitmap_tc_load_tile_ptrs<4, PT, CT, 128>(s_tp, tile_ptr, ...);  __syncthreads();
//     float acc[1 * 8 * 4] = {0};
//     s_stage0 = sg::smem_addr(sg_smem) + TP;       // stage buffers as 32-bit shared addresses
//     issue(0); commit;                                 // B tile + each warp's A tile, cp.async
//     for (i = 0; i < tiles; ++i) {
//       if (i + 1 < tiles) issue(i + 1);  commit;  wait<1>;  __syncthreads();
//       sg::bitmap_tc_lanes<1, A_TILE, 0>(warp's A tiles of buffer i % 2, lane, w, next);  // scan
//       for q < 4: sg::bitmap_tc_a_quarter(w, q, &next, a);                // 16 x 16 A operand
//                  sg::bitmap_tc_mma_quarter<T, 8, 1, B_ROW>(B tile, q, lane, a, acc);
//       __syncthreads();
//     }
//     sg::bitmap_tc_finish<T, 8, 0>(C, ws, acc, row0, M, N, 1, alpha, beta, lane);
//   }
//
// mma=wgmma (sm_90a): B is copied in 16-byte column groups (sg::bitmap_tc_issue_b_groups), each
// warp decodes all 4·kt quarters of the step into registers, and sg::bitmap_tc_wgmma_step issues
// one wgmma.m64nNk16 per quarter and row tile for the warpgroup and waits for them.
// Dynamic shared memory (LaunchShape::dynamic_shared_bytes = bitmap_tc_shared_bytes): the tile
// pointers, then per stage the B tile (64 rows of bitmap_tc_b_row_bytes) and every warp's masks
// (32 words) and values (max_tile_values slots, 16-byte rounded) per row tile.
// ksplit > 1 (OutputMode::Atomic): the kernel also takes the fp32 workspace `ws` (M·N sums, then a
// counter per row block); each block adds alpha·acc into ws, and the last block of a row block
// to finish (sg::bitmap_tc_split_finish) stores C = ws + beta·C and re-zeroes ws and its counter.
// KernelSignature::workspace_zeroed asks the runtime to zero the workspace once at allocation.
// decode=scatter (pipe=bulk, copy=step, b=map): per step each warp zeroes its 16 rows of one of
// two dense A buffers (i & 1), stores its row tile's values at their offsets
// (sg::bitmap_tc_scatter), fences them to the async proxy, and after a warpgroup barrier
// sg::bitmap_tc_wgmma_issue_ss multiplies the warpgroup's 64 rows from shared memory:
//     wait(full[i % S]);  sg::bitmap_tc_scatter(dense(i & 1) + warp * 2048, values, offsets, n);
//     fence.proxy.async;  bar.sync 1 + warp / 4, 128;
//     sg::bitmap_tc_wgmma_issue_ss<T, NT>(dense(i & 1) + (warp / 4) * 8192, B tile, acc);
//     wgmma_wait<1>;  release(stage of step i - 1)
// cluster > 1 (pipe=bulk, copy=step): launched in clusters of that many row blocks
// (LaunchShape::cluster_x); the first block's producer multicasts each step's B into all of them
// (sg::bitmap_tc_bulk_produce_steps) once every consumer warp of the cluster released the stage.
#pragma once

#include "codegen/family.h"
#include "ir/bitmap_format.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen::codegen {

// Precondition: schedule is a bitmap_tc one and validate(problem, schedule) is empty;
// f = pack_bitmap_tiles(a) for the problem's matrix. Parameters: values (Values: f.values in the
// dtype), B, C, alpha, beta, masks (U32Table: bitmap_mask_words, 32 lane words per tile;
// copy=step: bitmap_mask_words_with_starts),
// tile_ptr (I32Table), then ws (Workspace) when ksplit > 1. grid = (bitmap_tc_grid_x, ksplit).
// Throws UserError for an illegal problem (fp32, N, B layout) or offsets beyond 32 bits.
GeneratedKernel emit_bitmap_tc(const Problem& problem, const Schedule& schedule,
                               const BitmapTileFormat& f, const EmitOptions& opt = {});

// The kernel's mask table: per tile its 32 lane words (bitmap_lane_words), tiles in order.
std::vector<int64_t> bitmap_mask_words(const BitmapTileFormat& f);
// copy=step's mask table: per tile its 32 lane words, then its 32 lane starts in f.layout's
// entries, counted from the first value of the tile's step (the values of the step's tiles
// before it, plus bitmap_lane_starts; f.group row tiles a step), two per word (lane 2i in the
// low 16 bits of word 32 + i, lane 2i + 1 in the high): 48 words, kBitmapLaneBytes +
// kBitmapLaneStartBytes a tile. Throws UserError where a start exceeds 16 bits.
std::vector<int64_t> bitmap_mask_words_with_starts(const BitmapTileFormat& f);
// decode=scatter's table (in place of the masks): per value slot of f (vals=slot, any tile
// order) the byte offset of its position (row r, column c of its 16 x 64 tile) in a dense tile of
// 16 rows of 128 bytes in the 128-byte swizzle that a K-major wgmma descriptor reads:
//   r·128 + ((c / 8) xor (r % 8))·16 + (c % 8)·2          (below 2048)
// two per word (slot 2j in the low 16 bits of word j). A tile's alignment fill (value 0) points
// at a position the tile does not store, so its store of 0 changes nothing; slots() is even.
std::vector<int64_t> bitmap_scatter_offsets(const BitmapTileFormat& f);
// The offset above of position (r, c) of a tile.
int bitmap_scatter_offset(int r, int c);

}  // namespace sparsegen::codegen
