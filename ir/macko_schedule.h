// MACKO schedule family helpers: validation, the SPEC text and its parser, the verifier's limits
// and the enumeration (its IrFamily is in ir/macko_family.cpp).
//
//   macko;delta=4;wpr=1;warps=4;unroll=2;cols=1;vec=16;stage=global;rpw=1
//     delta  b_Δ bits per column delta (2, 4, 8)        wpr     warps per row (1, 2, 4, 8)
//     warps  warps per block                            unroll  16-byte vectors per thread per step
//     cols   dense columns per thread (grid.y tiles N)  vec     bytes per value load (16)
//     stage  B gathered from global or shared memory    rpw     rows per warp (stage=shared: 1..16)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/macko_format.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// Where a MACKO kernel gathers the dense operand B from: global memory (through L1), or a copy
// of B (zero guard rows around it) that each block stages in shared memory, in the value dtype
// (2 bytes per element) or, for one column, in fp32 (twice the bytes, no conversion per slot).
enum class BStage { Global, Shared, SharedF32 };
std::string_view to_string(BStage b);  // "global", "shared", "shared_f32"
std::optional<BStage> parse_bstage(std::string_view s);

// ─── The MACKO model (family "macko") ───────────────────────────────────────────────────────
// Over the MACKO format (ir/macko_format.h: values + b_Δ-bit column deltas, rows back to back):
// each row is processed by `warps_per_row` warps (1: warp per row; 2..8: split row, where the
// block is the row's warps and a cross-warp step combines column carries and partial sums).
// A warp step reads, per lane, `unroll` aligned 16-byte vectors of values (8 slots each) and their
// packed deltas; lane l's vector u of warp w in step i is vector
//   v0 + i·(warps_per_row·32·unroll) + w·32·unroll + u·32 + l      (v0 = first vector of the row)
// Columns come from a warp inclusive scan of (delta + 1) with a running carry. Every thread
// accumulates `cols` dense columns in fp32 (grid.y = ceil(N / cols)); a row's partials are summed
// over the lanes (and warps) and stored once: alpha·acc + beta·C. Output mode: Store.
// Staged B (stage=shared or shared_f32, warp per row only): each block first copies B into
// shared memory, with zero guard rows before and after, then its warps take the block's
// warps x rows_per_warp rows one at a time from a shared counter (rows of uneven length balance
// out within the block), so the copy is paid once per block. With sort_rows the rows are dealt
// to blocks longest first, each to the block with the fewest slots so far (macko_row_order: a
// row-order table; C is stored at the original row), so blocks carry equal work and within a
// block the longest rows start first.
// Its loop decodes columns without per-slot masks: slots outside the row get a zero value and a
// zero delta, which keeps their columns inside the guards.
// SPEC: macko;delta=4;wpr=1;warps=4;unroll=2;cols=1;vec=16;stage=global;rpw=1
struct MackoSchedule {
  static constexpr std::string_view kFamily = "macko";

  int delta_bits = 4;       // b_Δ: 2, 4, 8
  int warps_per_row = 1;    // 1, 2, 4, 8
  int warps_per_block = 4;  // warp per row: 1..32 (rows per block); split row: == warps_per_row
  int unroll = 2;           // 16-byte value vectors in flight per thread per step: 1, 2, 4
  int cols = 1;             // dense columns per thread: 1, 2, 4, 8
  int vector_bytes = 16;    // bytes per value load (16 only)
  BStage stage = BStage::Global;  // shared: warp per row only
  int rows_per_warp = 1;          // rows per warp on average (the block's warps share its rows)
  bool sort_rows = false;         // staged: rows dealt to blocks by length (a row-order table)

  bool staged() const { return stage != BStage::Global; }
  // Bytes of one staged row of B: cols 2-byte values, or one fp32.
  int stage_row_bytes() const { return stage == BStage::SharedF32 ? 4 : 2 * cols; }
  // Rows one block covers.
  int rows_per_block() const { return warps_per_block / warps_per_row * rows_per_warp; }
  int threads_per_block() const { return warps_per_block * kWarpSize; }
  bool operator==(const MackoSchedule&) const = default;
};

// Problem-independent legality of a body: every reason it is illegal (empty = legal).
std::vector<std::string> validate(const MackoSchedule& s);
// Problem-dependent legality: 2-byte values (fp16/bf16), columns per thread against N.
std::vector<std::string> validate_macko(const Problem& p, const MackoSchedule& s);

// One-line SPEC ("macko;delta=4;...") and the multi-line form of print_schedule.
std::string macko_spec(const MackoSchedule& s);
std::string print_macko(const MackoSchedule& s);
// Parses the fields after "macko" (KEY=VALUE parts, any order, omitted = defaults). Throws
// UserError naming the field, or listing the validation reasons.
MackoSchedule parse_macko_fields(std::string_view spec, const std::vector<std::string_view>& parts);

// Rows per warp of a staged schedule: any count up to this (the block's row bounds live in
// shared memory, which the verifier checks).
inline constexpr int kMackoMaxRowsPerWarp = 1024;

// The row-order table of sort_rows: position b·rows_per_block + i holds the i-th row of block b
// (the last block may have fewer). Rows are taken longest first (ties: lower index first) and
// each goes to the block with the fewest slots so far that still has room (ties: lower block),
// so the blocks' work is balanced and each block's rows appear longest first. row_ptr: M + 1
// slot offsets (any format's; only the lengths matter).
std::vector<int64_t> macko_row_order(const std::vector<int64_t>& row_ptr, int64_t rows_per_block);

// Work items of a schedule in items mode (macko_uses_items): block b owns items [b, b + 1) x
// macko_items_per_block(s), each kMackoItemInts ints {first slot, end slot, carry, row}. They are
// the block's rows (sort_rows: macko_row_order's order; else natural), except that a row much
// longer than the block's even share per warp (rounded up to whole warp steps) is cut at vector
// boundaries into segments of whole steps, listed consecutively, so several warps share it.
// Segments take the spare items (warps of them), longest rows first. Unused items are {0, 0, 0,
// -1}; the block's last item is a header {items used, 1 if a row was cut else 0, 0, -1}. carry =
// the column before the first slot, less the slots of its first vector before it (the kernel steps
// every slot of that vector by delta + 1, with the leading ones masked to a step of 1): -1 - (first
// % 8) < 0 for a row's first segment, >= 0 for the others. row = the output row on a row's last
// segment and -1 elsewhere. A whole row (carry < 0, row >= 0) is stored by its warp; a cut row's
// segments leave their sums in shared memory, and after a barrier (only in blocks with a cut) the
// last segment adds them back to the first and stores the row. Why: on magnitude-pruned weights the
// longest rows are ~6x the mean, and one warp walking such a row step by step was the critical path
// of small grids.
inline constexpr int kMackoItemInts = 4;
// Items mode: staged, at most 2 columns and at most 3 rows per warp, where the long rows of a
// small grid are the critical path and the items' shared memory (16 + 4 x N bytes each) is small
// next to B's. Elsewhere (rows mode) the kernel takes whole rows from the row bounds in front of
// B: with items, 28672x7168 N = 8 (16 warps, 7 rows per warp) ran 11 % slower on the H200, and so
// did the rows kernel given as much more shared memory; by the occupancy arithmetic it lost its
// second resident block (2 x 114 KiB fit in 228 KiB; with 6 KiB of items they do not).
bool macko_uses_items(const MackoSchedule& s);
int macko_items_per_block(const MackoSchedule& s);
std::vector<int64_t> macko_items(const MackoFormat& f, const MackoSchedule& s);

// Launch-shape facts shared by the verifier, the emitter and the interpreter.
int64_t macko_grid_x(const Problem& p, const MackoSchedule& s);  // ceil(M / rows_per_block)
int64_t macko_grid_y(const Problem& p, const MackoSchedule& s);  // ceil(N / cols)
int macko_registers(const MackoSchedule& s);                     // per-thread estimate
// Blocks of this schedule resident on one multiprocessor at once (threads, registers by
// macko_registers, shared memory incl. the staged B), at least 1.
int macko_blocks_per_sm(const Problem& p, const MackoSchedule& s, const DeviceLimits& dev);
// The fewest rows per warp at which the staged grid fits in one wave (every block resident at
// once, each copying B exactly once): ceil(M / (warps x multiprocessors x blocks per SM)), with
// the row-bounds words of that many rows counted in the shared memory. 1 for stage=global.
int macko_one_wave_rows_per_warp(const Problem& p, const MackoSchedule& s, const DeviceLimits& dev);
int64_t macko_shared_bytes(const MackoSchedule& s);  // split row: carries + partials
// Zero rows of B staged before and after B (stage=shared). Masked slots step their column by 1:
// a row's leading ones reach column -7, its trailing ones K + 6, and the lanes past the row's end
// (zero deltas, in a step that still has live lanes) up to K + 14. 16 rows cover both sides.
inline constexpr int64_t kMackoStageGuard = 16;
// Dynamic shared memory of a staged schedule. Rows mode: the block's row bounds (rows_per_block + 1
// starts; with sort_rows a start, an end and the row per row) and the counter, rounded up to 16,
// then the (K + 2 guards) staged rows of B from macko_stage_offset. Items mode: the counter (16
// bytes), B from macko_stage_offset, then from macko_items_offset the block's items (16 bytes
// each) and one fp32 partial sum per item and column.
int64_t macko_stage_offset(const MackoSchedule& s);
int64_t macko_items_offset(const Problem& p, const MackoSchedule& s);
// Total bytes (0 for stage=global).
int64_t macko_stage_bytes(const Problem& p, const MackoSchedule& s);

// Hardware limits and 32-bit slot positions. Empty = runs.
std::vector<std::string> verify_macko(const Problem& p, const MackoSchedule& s,
                                      const MackoStats& st, const DeviceLimits& dev);

// Every legal, verified MACKO schedule for the problem (empty unless dtype is fp16/bf16 and
// 1 <= N <= 8). Where B can be staged (N in {1, 2, 4, 8}, row-major B, K small enough for shared
// memory) only staged-B ones: b_Δ in {4, 8} x shared (and shared_f32 for N = 1) x 8 or 16 warps x
// unroll {2, 4} x rows per warp 1, 2, 4, ... while the grid keeps at least dev.multiprocessors
// blocks, plus the one-wave rows per warp (macko_one_wave_rows_per_warp) where that is not one of
// them, each also with sort=1 when row lengths are uneven (CV >= 0.25). Elsewhere the
// B-from-global ones: b_Δ in {4, 2, 8} x (warp per row with 4 or 8 warps
// per block, split row with 2, 4 or 8 warps) x unroll {2, 4}, one column tiling (cols = N rounded
// up to a power of two); split row only when the mean row spans at least two full steps of the
// split (long rows). b_Δ = 4 first.
std::vector<Schedule> enumerate_macko_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev);

}  // namespace sparsegen
