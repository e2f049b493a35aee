// twell schedule family: the activation-sparse gated FFN (ir/ffn.h) in two kernels, with the
// hidden activations between them in tile-wise ELL (ir/twell_format.h). Its IrFamily is in
// ir/twell_family.cpp.
//
//   twell;tile=128;comp=4;warps=8;gate=mma;split=1;balance=queue;teams=1
//   twell;tile=128;comp=4;warps=8;gate=lib;split=1;balance=even;teams=4;blocks=264
//     tile   T, the first kernel's N-tile and the TwELL tile: 64 or 128 columns
//     comp   C, the compression: room for T / C entries per row and tile (1, 2, 4, 8, 16)
//     warps  warps per block of the second kernel (4 or 8)
//     gate   how the gate activations are computed: mma (kernel 1 below, generated) or lib (the
//            dense BLAS library's GEMM with a ReLU epilogue writes G = ReLU(x·W_g) densely, then
//            a pack kernel writes the TwELL counts and entries; G serves as the dense backup)
//     pack   gate=lib: how the pack kernel finds G's nonzeros: scan (it reads all of G) or mask
//            (the library GEMM's ReLU epilogue also writes a bit-mask of the positive results,
//            one bit per element; the pack reads the mask and only the values of its set bits,
//            about N / 8 + 32 · nonzeros bytes a token instead of 2 · N). Printed only as mask.
//            Not enumerated: on an H200 the library's GEMM with the mask epilogue took 6-7 % longer
//            than with ReLU alone, more than the cheaper pack saved (the FFN 1-4 % slower).
//     split  blocks per token in kernel 2 (1, 4, 16): more than one share the token's batches and
//            add their partial rows in an fp32 workspace, the last one writing y (few tokens)
//     balance how kernel 2's blocks find work: token (block x = token) or queue (a persistent grid
//            taking tokens from a counter; a token of more than kTwellPartBatches batches is cut
//            into parts that idle blocks take from a work queue, its partial rows added in an fp32
//            row of a pool: the heavy-tailed tokens of real activations no longer leave one block
//            running long after the rest of the grid has finished)
//            or even (gate=lib, N a multiple of 8: the row pack writes each token's packed
//            entries and overflowing tiles; a fixed grid of `blocks` blocks lays the tokens'
//            batches on one line of estimated work, kTwellEvenTokenCost per token, 1 per packed
//            entry, kTwellEvenPieceCost per dense piece, and worker w of W takes the batches that
//            start in [w·C/W, (w+1)·C/W) of its length C: no queue, no tail of long parts; a token
//            whose batches fall to several workers adds their partial rows in an fp32 row)
//     teams  kernel 2's workers per block with balance=queue or even (1, 2, 4, 8, dividing
//            warps): each team of warps / teams warps takes its own tokens and parts with its own
//            shared memory and barrier, so the block's warps no longer wait for each other (one
//            warp per team: no block barrier at all); its threads hold more output columns each
//     blocks balance=even: the fixed grid (the multiprocessors times the blocks resident on one,
//            so that every worker's equal share runs at once)
//
// Kernel 1 (b_transform, on x):  block (t, y) computes G = x[128 rows of y] · W_g[:, tile t] on
//   the tensor cores (mma.sync m16n8k16, fp32 accumulation, cp.async 3-stage pipeline, 8 warps),
//   then its epilogue applies ReLU, rounds to the dtype and writes each row's tile as TwELL:
//   ballot-compacted (column, value) words and the count; a tile with more than T/C nonzeros
//   writes its values densely to the backup row instead (never silently cut).
// Kernel 2 (main, one block per token row m, or per taken token / part with balance=queue):
//   walks the row's entries in batches; for each
//   nonzero n the block's warps compute u = x[m]·W_u[:, n] (gated; W_u stored transposed, N×K),
//   then every thread adds h·u·W_d[n, its columns] into fp32 registers; the overflowing tiles'
//   dense values follow. y[m] = alpha·acc + beta·y[m], rounded once.
//
// For the IR's other hooks the sparse operand `a` of a gated FFN is an activation pattern (M×N,
// e.g. a calibration batch's ReLU(x·W_g)): enumerate and the statistics read it, pack() stores
// it as TwELL and interpret() runs the second kernel's down projection over it (c = alpha·H·b +
// beta·c, b = W_d, N×K).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// How a twell schedule computes the gate activations (one name table: SPEC, printer, key).
enum class TwellGate { Mma, Lib };
std::string_view to_string(TwellGate g);  // "mma", "lib"
std::optional<TwellGate> parse_twell_gate(std::string_view s);

// How gate=lib's pack kernel finds G's nonzeros (one name table: SPEC, printer, key).
enum class TwellPack { Scan, Mask };
std::string_view to_string(TwellPack k);  // "scan", "mask"
std::optional<TwellPack> parse_twell_pack(std::string_view s);

// How kernel 2's blocks find their work (one name table: SPEC, printer, key).
enum class TwellBalance { Token, Queue, Even };
std::string_view to_string(TwellBalance b);  // "token", "queue", "even"
std::optional<TwellBalance> parse_twell_balance(std::string_view s);

struct TwellSchedule {
  static constexpr std::string_view kFamily = "twell";

  int tile = 128;  // T: 64, 128
  int comp = 4;    // C: 1, 2, 4, 8, 16 (cap = T / C entries per row-tile)
  int warps = 8;   // kernel 2: 4, 8
  TwellGate gate = TwellGate::Mma;
  int split = 1;                               // kernel 2 blocks per token: 1, 4, 16
  TwellBalance balance = TwellBalance::Token;  // queue: split 1 only
  int teams = 1;                               // kernel 2 workers per block: 1, 2, 4, 8
  int blocks = 0;                              // balance=even: kernel 2's grid
  TwellPack pack = TwellPack::Scan;            // gate=lib only

  int cap() const { return tile / comp; }
  int team_warps() const { return warps / teams; }  // warps of one kernel-2 worker
  bool operator==(const TwellSchedule&) const = default;
};

// Kernel 1's fixed shape: 128 rows per block, 8 warps (4 × 2), K steps of 32, 3 stages.
inline constexpr int kTwellGemmRows = 128;
inline constexpr int kTwellGemmThreads = 256;
inline constexpr int kTwellGemmStages = 3;
// Kernel 2's batch: entries gathered per step (u computed, then accumulated).
inline constexpr int kTwellBatch = 64;
// balance=queue: a token of more batches than this is cut into parts of this many (at most
// kTwellMaxParts parts); the persistent grid has at most kTwellQueueGrid blocks and the pool at
// most kTwellQueuePool fp32 rows (a token splits only while a row is free).
inline constexpr int kTwellPartBatches = 2;
inline constexpr int kTwellMaxParts = 255;
inline constexpr int64_t kTwellQueueGrid = 1024;
inline constexpr int64_t kTwellQueuePool = 1024;
// balance=even's work line: a token's fixed cost (x row, tile prefix, y row) and a dense piece's
// (64 columns of an overflowing tile, more than T/C of T nonzero), in packed entries.
inline constexpr int kTwellEvenTokenCost = 8;
inline constexpr int kTwellEvenPieceCost = 32;
// balance=even's kernel 2 is compiled for this many resident blocks per multiprocessor (8 warps:
// at most 128 registers a thread), so that a grid of this many per multiprocessor runs at once.
inline constexpr int kTwellEvenBlocksPerSm = 2;

std::vector<std::string> validate(const TwellSchedule& s);
// A gated FFN in fp16 / bf16 with K, N > 0.
std::vector<std::string> validate_twell(const Problem& p, const TwellSchedule& s);

std::string twell_spec(const TwellSchedule& s);
std::string print_twell(const TwellSchedule& s);
TwellSchedule parse_twell_fields(std::string_view spec, const std::vector<std::string_view>& parts);

// K rounded up to 8 (the weights' row length on the device: 16-byte rows).
int64_t twell_k_padded(const Problem& p);
int64_t twell_tiles(const Problem& p, const TwellSchedule& s);  // ceil(N / T)
// Byte offsets in the TwELL buffer (BWork): counts, entries, dense backup; and its size.
// balance=even: then per token its packed entries and overflowing tiles (two ints). pack=mask:
// then the ReLU bit-mask, mask_bits (N rounded up to 128) bits per token, 256-byte aligned.
struct TwellBuffer {
  int64_t counts = 0, entries = 0, backup = 0, tokens = 0, mask = 0, mask_bits = 0, bytes = 0;
};
TwellBuffer twell_buffer(const Problem& p, const TwellSchedule& s);
// Dynamic shared memory of kernel 1 (pipeline stages / epilogue tile; 0 for gate=lib) and kernel
// 2 (per worker, 16-byte aligned: x row, batch, tile prefix sums, overflowing tiles).
int64_t twell_gemm_shared_bytes(const TwellSchedule& s);
int64_t twell_down_shared_bytes(const Problem& p, const TwellSchedule& s);
// Kernel 2's groups of 8 fp32 output columns per thread (ceil(Kp / 8 / worker threads)), and its
// register estimate.
int twell_groups(const Problem& p, const TwellSchedule& s);
int twell_registers(const Problem& p, const TwellSchedule& s);
// Kernel 2's fp32 workspace, offsets in 32-bit words. split > 1: KP floats per token, then one
// counter per token. balance=queue: `pool` rows of KP floats, one counter per row, the queue's 8
// control words, then room for every 64-bit work item a launch can push: M × (most parts of a
// token − 1), so that an item is never reused within a launch. A pool row is freed when its
// token's last part has written y. balance=even: one fp32 row and counter per worker (a split
// token's row is its first worker's). All zero between launches.
struct TwellWorkspace {
  int64_t rows = 0;  // fp32 rows: M (split) or the queue's pool
  int64_t counters = 0, control = 0, items = 0, bytes = 0;
};
TwellWorkspace twell_workspace(const Problem& p, const TwellSchedule& s);
int64_t twell_workspace_bytes(const Problem& p, const TwellSchedule& s);
// balance=queue: the most parts a token can be cut into. Its batches (packed entries 64 at a
// time, then the overflowing tiles' 64-column pieces) are at most tiles × T / 64, cut
// kTwellPartBatches at a time, at most kTwellMaxParts. balance=even: a token's batches, one
// worker each at most.
int64_t twell_max_parts(const Problem& p, const TwellSchedule& s);
// balance=even's grid on dev: its multiprocessors times the blocks of s resident on one (by
// threads and shared memory, at most kTwellEvenBlocksPerSm).
int64_t twell_even_blocks(const Problem& p, const TwellSchedule& s, const DeviceLimits& dev);
// Kernel 2's grid: M × split blocks, min(ceil(M / teams), kTwellQueueGrid) persistent ones, or
// balance=even's `blocks`.
int64_t twell_down_grid(const Problem& p, const TwellSchedule& s);
// Weight values the device holds, in order: W_g transposed (N×Kp, gated only), W_u transposed
// (N×Kp), W_d (N×Kp); offsets in elements.
struct TwellWeights {
  int64_t gate_t = 0, up_t = 0, down = 0, elements = 0;
};
TwellWeights twell_weights_layout(const Problem& p);

// mma.sync (sm_80+), threads, shared memory, grid.
std::vector<std::string> verify_twell(const Problem& p, const TwellSchedule& s,
                                      const DeviceLimits& dev);

// Every legal schedule: gate {lib, mma} × tile {128, 64} × comp {4, 8, 2,
// 16, 1} × warps {8, 4} × balance {even, queue, token} with split 1 and teams 1; the even
// (gate=lib, N a multiple of 8, blocks = twell_even_blocks) and queue ones of 8 warps with teams 1,
// 2, 4, 8 instead (those whose threads hold at most 8 column groups, nearest 4 groups first), and
// for M <= 1024 also the gate=lib token ones with split 4 and 16; none unless the problem is a
// gated FFN and `a` an activation pattern with N columns.
std::vector<Schedule> enumerate_twell_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev);

}  // namespace sparsegen
