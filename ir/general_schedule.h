// The GeneralSparse family ("general"): the memory-access and reduction space over a padded CSR
// (ir/format.h). Its IrFamily lives in ir/general_family.cpp; codegen/general_sparse.h emits it.
//
// ─── The GeneralSparse model ────────────────────────────────────────────────
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
#include <string>
#include <string_view>
#include <vector>

#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen {

struct GeneralSchedule {
  static constexpr std::string_view kFamily = "general";

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

// Problem-independent legality of a body: every reason it is illegal (empty = legal).
std::vector<std::string> validate(const GeneralSchedule& s);
// Problem-dependent legality (dense-column tiling against N).
std::vector<std::string> validate_general(const Problem& p, const GeneralSchedule& s);
// One-line SPEC and the multi-line form of print_schedule.
std::string general_spec(const GeneralSchedule& s);
std::string print_general(const GeneralSchedule& s);
// Parses the fields after "general". Throws UserError naming the field, or listing the reasons.
GeneralSchedule parse_general_fields(std::string_view spec,
                                     const std::vector<std::string_view>& parts);

}  // namespace sparsegen
