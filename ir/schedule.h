// Schedule: HOW a Problem is computed. One Schedule type for every built-in kernel family; each
// family is a small value struct under one std::variant (GeneralSparse today; MACKO, SlideSparse
// and TwELL add their own struct, a name in ScheduleFamily and a branch in the printer/parser).
//
// ─── The GeneralSparse model (family "general") ────────────────────────────────────────────────
// Packed nonzeros: rows in packed order (optionally sorted by length; the permutation is applied
// when storing C), each row padded to a multiple of `pad` entries (value 0). Work is a three-level
// hierarchy of TASKS over that sequence: block tasks, warp tasks, thread tasks. A "thread task" is
// executed by a thread-group of `group_threads` lanes that share the same nonzeros and split the
// dense columns (lane l of a group owns thread_cols consecutive columns); a warp has
// 32 / group_threads groups; a block has warps_per_block warps.
//
// Each level has a WorkSplit that cuts its parent's task into child tasks:
//   Row      one row per task              (block: grid.x = rows)
//   Rows(r)  r whole consecutive rows per task
//   Nnz(z)   z consecutive packed nonzeros per task; rows are split into segments
// Child tasks are dealt round-robin to the parent's fixed number of child workers (W warps per
// block, G = 32/group_threads groups per warp): child worker c takes tasks c, c+C, c+2C, ...
// ("rounds"). Legal nestings (parent → child):
//   Row     → Nnz(z)                       chunks of one row; any number of rounds
//   Rows(r) → Row | Rows(r')               rows dealt to children; children see whole rows
//   Nnz(z)  → Nnz(z/C)                     exact tiling: one round, z == C·z_child
// so the legal (block, warp, thread) splits are
//   (Row, Nnz, Nnz)   (Rows, Row, Nnz)   (Rows, Rows, Row|Rows)   (Nnz, Nnz, Nnz)
// Under a Row parent, warp Nnz(z_w) requires z_w == G·z_thread (one round inside the warp).
//
// Reduction: each level has a ReductionKind saying how it combines what its children hand up:
//   None     children produce only whole rows and write them; nothing to combine here
//   Total    all children's partials belong to ONE row: plain sum (shuffle / shared memory)
//   Bitmap   each child hands up ONE partial (child Total) of possibly different rows; a bitmap
//            (bit c = child c starts a new row) drives a segmented sum
//   Segment  children hand up a head and a tail partial (child Bitmap/Segment, whose tasks span
//            rows); partials of the same row are merged across children
// At thread level the "children" are the thread's own nonzeros: Total = the thread task lies in
// one row (or in whole rows, summed one by one), Bitmap = it may span rows (per-nonzero row-start
// bits mark where). Legal chains: thread Total → warp Total | Bitmap | None; thread Bitmap → warp
// Segment; warp Total → block Total | Bitmap | None; warp Bitmap | Segment → block Segment. Total
// is only legal where the division guarantees one row (e.g. thread Nnz(z) tasks stay in one row
// when pad % z == 0). Rows still split across blocks (block split Nnz) are finished with atomic
// adds into C after a beta pre-scale (OutputMode::Atomic); otherwise every row is stored exactly
// once (OutputMode::Store), empty rows included.
//
// Who writes (exactly what ir/interpreter.cpp executes):
//   - a level whose parent's reduction is None writes its own results (whole rows);
//   - Bitmap/Segment levels (thread Bitmap too) merge partials of equal rows in position order;
//     the first and last merged partials go up, the ones in between are whole rows and are
//     written by this level (with one or two merged partials, everything goes up);
//   - Total levels hand up one partial: worker c sums its rounds in registers, then the C workers
//     are summed;
//   - what a block hands up is written by the block: a stored whole row (Store) or an atomic add.
// Every write adds alpha·partial: Store computes alpha·acc + beta·C (C not read when beta == 0);
// Atomic adds alpha·acc to C, which a prologue set to beta·C (0 when beta == 0) for all M rows;
// the adds are fp32 (fp16/bf16 add into an fp32 workspace that an epilogue rounds into C once).
//
// Dense columns: a block owns block_cols columns of C (grid.y = ceil(N / block_cols)); a warp (and
// each of its groups) covers warp_cols() = group_threads·thread_cols columns per pass and loops
// block_cols / warp_cols() passes; a thread accumulates thread_cols columns in registers.
//
// Format adjustments: sort_rows (by length, descending, stable), pad (row lengths rounded up to a
// multiple of pad with zero-valued entries), interleave (inside each warp round the groups' chunks
// are stored interleaved, vector by vector, so a warp's loads coalesce), vector_width (1/2/4/8
// nonzeros loaded per thread per access; needs aligned chunks, see validate()).
//
// Example: CSR-vector with 8-lane groups, 4 warps per block, 4 rows per block:
//   general;block=rows:4;warp=row;thread=nnz:4;warps=4;group=8;tcols=1;bcols=32;
//   red=total,total,none;sort=0;pad=4;interleave=0;vec=4
// (one line; thread/warp/block reduction order in `red=`). Its multi-line form (print_schedule):
//   schedule general
//     block : split=rows:4 reduce=none  warps=4
//     warp  : split=row reduce=total  groups=4
//     thread: split=nnz:4 reduce=total  group_threads=8
//     cols  : block=32 warp=8 thread=1
//     format: sort=no pad=4 interleave=no vector=4
//     output: store
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/problem.h"

namespace sparsegen {

inline constexpr int kWarpSize = 32;

// Every name table below is the single source for the printer, the CLI and the cache key.
enum class Level { Block, Warp, Thread };
std::string_view to_string(Level l);  // "block", "warp", "thread"
std::optional<Level> parse_level(std::string_view s);

enum class WorkSplit { Row, Rows, Nnz };
std::string_view to_string(WorkSplit s);  // "row", "rows", "nnz"
std::optional<WorkSplit> parse_work_split(std::string_view s);

enum class ReductionKind { None, Total, Bitmap, Segment };
std::string_view to_string(ReductionKind r);  // "none", "total", "bitmap", "segment"
std::optional<ReductionKind> parse_reduction(std::string_view s);

enum class OutputMode { Store, Atomic };
std::string_view to_string(OutputMode m);  // "store", "atomic"

// Where a MACKO kernel gathers the dense operand B from: global memory (through L1), or a copy
// of B (zero guard rows around it) that each block stages in shared memory, in the value dtype
// (2 bytes per element) or, for one column, in fp32 (twice the bytes, no conversion per slot).
enum class BStage { Global, Shared, SharedF32 };
std::string_view to_string(BStage b);  // "global", "shared", "shared_f32"
std::optional<BStage> parse_bstage(std::string_view s);

// Which tensor-core instruction a bitmap_tc kernel multiplies with: mma.sync per warp (sm_80 on),
// or wgmma per warpgroup of four warps (sm_90a: B read from shared memory once per warpgroup).
enum class MmaKind { Sync, Wgmma };
std::string_view to_string(MmaKind m);  // "sync", "wgmma"
std::optional<MmaKind> parse_mma(std::string_view s);

enum class ScheduleFamily { General, Macko, SlideSparse, TwELL, BitmapTc };
// "general", "macko", "slidesparse", "twell", "bitmap_tc"
std::string_view to_string(ScheduleFamily f);
std::optional<ScheduleFamily> parse_family(std::string_view s);

// How one level cuts its parent's task. amount: 1 for Row, r for Rows, z for Nnz.
struct LevelSplit {
  WorkSplit kind = WorkSplit::Row;
  int64_t amount = 1;

  static LevelSplit row() { return {WorkSplit::Row, 1}; }
  static LevelSplit rows(int64_t r) { return {WorkSplit::Rows, r}; }
  static LevelSplit nnz(int64_t z) { return {WorkSplit::Nnz, z}; }
  bool operator==(const LevelSplit&) const = default;
};
// "row", "rows:4", "nnz:32".
std::string to_string(const LevelSplit& s);

struct GeneralSchedule {
  // Division, indexed by Level (Block, Warp, Thread).
  std::array<LevelSplit, 3> split{LevelSplit::row(), LevelSplit::nnz(32), LevelSplit::nnz(1)};
  // Reduction per level, indexed by Level.
  std::array<ReductionKind, 3> reduce{ReductionKind::Total, ReductionKind::Total,
                                      ReductionKind::Total};
  int warps_per_block = 1;  // W: 1..32
  int group_threads = 1;    // lanes sharing the same nonzeros: 1, 2, 4, 8, 16, 32
  int thread_cols = 1;      // dense columns per thread: 1, 2, 4, 8
  int block_cols = 1;       // dense columns per block: a multiple of warp_cols()
  // Format adjustments.
  bool sort_rows = false;
  int pad = 1;  // row lengths padded to a multiple of this (1 = no padding)
  bool interleave = false;
  int vector_width = 1;  // nonzeros per load: 1, 2, 4, 8

  const LevelSplit& at(Level l) const { return split[static_cast<int>(l)]; }
  ReductionKind reduction(Level l) const { return reduce[static_cast<int>(l)]; }
  int groups_per_warp() const { return kWarpSize / group_threads; }
  int threads_per_block() const { return warps_per_block * kWarpSize; }
  int warp_cols() const { return group_threads * thread_cols; }
  // Number of child workers of a level's worker: W for Block, G for Warp, 0 for Thread.
  int children(Level l) const;
  // Atomic when rows may span blocks (block split Nnz), else Store.
  OutputMode output() const;

  bool operator==(const GeneralSchedule&) const = default;
};

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

// ─── Bitmap tiles on tensor cores (family "bitmap_tc") ───────────────────────────────────────
// Over the bitmap-tile format (ir/bitmap_format.h: 16 x 64 tiles, a 64-bit mask per tile row and
// the tile's values packed): "load as sparse, compute as dense". A warp owns `m_tiles` row tiles
// (16 rows each) and walks its block's column range one 64-column tile at a time; per tile it
// expands each 16 x 16 quarter into an mma.m16n8k16 A operand straight from the mask and the
// values (popcounts, no dense copy), and multiplies it with B fragments that the block staged in
// shared memory (cp.async, `stages` buffers in flight, shared by the block's warps). Products are
// accumulated in fp32 registers (N/8 n8 tiles per row tile). The K range is cut into `ksplit`
// parts (grid.y): with ksplit = 1 each row is finished by one warp and stored (alpha·acc +
// beta·C); with ksplit > 1 the parts add into an fp32 workspace (OutputMode::Atomic) and the
// last block of each row block to finish stores C = ws + beta·C and re-zeroes ws (no extra
// kernels: the workspace is zeroed once at allocation and left zero by every run). Needs fp16/bf16,
// row-major B and N a multiple of 8 (<= 128). Known limitation (dense compute): an absent entry is
// a 0 in the mma, so where B holds ±Inf or NaN, every row whose tile spans that B row gets NaN,
// also rows with no entry in that column (CSR arithmetic would skip the product). Finite inputs are
// unaffected. A pipeline step covers `k_tiles` column tiles (64·k_tiles columns): one barrier pair
// and one cp.async wait per step, and k_tiles independent decode chains per warp to overlap. SPEC:
// bitmap_tc;warps=4;mt=1;kt=1;ksplit=1;stages=2;mma=sync
struct BitmapTcSchedule {
  int warps_per_block = 4;      // 1, 2, 4, 8: the block's row tiles are warps x m_tiles
  int m_tiles = 1;              // 16-row tiles per warp: 1, 2 (B fragments reused across them)
  int k_tiles = 1;              // 64-column tiles per pipeline step: 1, 2, 4
  int ksplit = 1;               // K parts (grid.y): 1..64
  int stages = 2;               // shared-memory buffers of the cp.async pipeline: 2, 3
  MmaKind mma = MmaKind::Sync;  // wgmma: warps 4 or 8, N in {8, 16, 32, 64}, sm_90 only

  int rows_per_block() const { return warps_per_block * m_tiles * 16; }
  int threads_per_block() const { return warps_per_block * kWarpSize; }
  OutputMode output() const { return ksplit > 1 ? OutputMode::Atomic : OutputMode::Store; }
  bool operator==(const BitmapTcSchedule&) const = default;
};

// The family-specific structs. Future families are added as alternatives here.
using ScheduleBody = std::variant<GeneralSchedule, MackoSchedule, BitmapTcSchedule>;

class Schedule {
 public:
  // Validating constructor: throws UserError listing every reason the body is illegal.
  explicit Schedule(ScheduleBody body);
  // Default: the (always legal) one-row-per-block, warp-strided schedule.
  Schedule() : Schedule(GeneralSchedule{}) {}

  ScheduleFamily family() const;
  const ScheduleBody& body() const { return body_; }
  // Precondition: family() == General.
  const GeneralSchedule& general() const { return std::get<GeneralSchedule>(body_); }
  // Precondition: family() == Macko.
  const MackoSchedule& macko() const { return std::get<MackoSchedule>(body_); }
  // Precondition: family() == BitmapTc.
  const BitmapTcSchedule& bitmap_tc() const { return std::get<BitmapTcSchedule>(body_); }

  bool operator==(const Schedule&) const = default;

 private:
  ScheduleBody body_;
};

// Problem-independent legality of a body: every reason it is illegal (empty = legal).
std::vector<std::string> validate(const GeneralSchedule& s);
std::vector<std::string> validate(const MackoSchedule& s);
std::vector<std::string> validate(const BitmapTcSchedule& s);
std::vector<std::string> validate(const ScheduleBody& body);
// Problem-dependent legality (dense-column tiling against N, SpMV shape). Empty = legal.
std::vector<std::string> validate(const Problem& p, const Schedule& s);

// One-line SPEC form: "general;block=...;warp=...;..." (see the top comment). Stable: used by the
// CLI (--schedule SPEC), the kernel database key and logs. parse_schedule(to_string(s)) == s.
std::string to_string(const Schedule& s);
// Multi-line, stable text form for golden tests and `sparsegen schedules`.
std::string print_schedule(const Schedule& s);
// Parses a SPEC. Fields may come in any order; omitted fields keep the defaults of
// GeneralSchedule{}. Throws UserError naming the bad field ("--schedule: field 'warp': expected
// row, rows:R or nnz:Z, found 'rowz'") or, for an illegal combination, the validation reasons.
Schedule parse_schedule(std::string_view spec);

}  // namespace sparsegen
