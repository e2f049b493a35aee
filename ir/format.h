// Packed format of the general family: the arrays a GeneralSparse schedule needs at launch, built
// from a CsrMatrix for a (Problem, Schedule) by pack_format(). Everything the kernel indexes is
// here; the codegen reads the offset arrays' compression and emits arithmetic for the compressed
// ones.
//
// Positions. "Logical position" p in [0, nnz_padded) numbers the packed nonzeros row by row (rows
// in packed order, each padded to a multiple of schedule.pad; for block split Nnz the sequence is
// also padded at the end to a multiple of the block chunk, and empty rows are left out of the
// packed rows because no task covers them — the Atomic prologue sets their C = beta·C).
// "Storage position" storage_pos(p) is where p's col_idx/value live: p itself, or, with
// interleave, the position inside its warp round where element j of group q of a round of
// G chunks of z_t is stored at round_base + (j / v · G + q) · v + j % v.
//
// Example: rows of lengths 3,1 with pad 2 → packed lengths 4,2; row_ptr = 0 4 6; positions 3 and
// 5 are padding (value 0, column of the previous entry, so loads stay in bounds).
//
// Known limitation (kept on purpose): padding is multiplied like any entry, so where B holds ±Inf
// at the column a padding entry reuses, 0·Inf = NaN enters that row's sum. The column is one the
// row already reads (its last real entry's), so the exact result there is already ±Inf or NaN:
// the kernels (and the interpreter, which does the same arithmetic) return NaN where exact
// arithmetic would give ±Inf, and no finite result is ever changed. Avoiding it would need a test
// per entry in the innermost loop (or a padding mask), paid by every kernel for inputs that have
// already overflowed.
//
// Tasks. Each level has tasks (see schedule.h). For level L, task t covers logical positions
// [nz_begin[t], nz_begin[t+1]) and rows [row_begin[t], row_begin[t+1]) for Row/Rows splits; for
// Nnz splits row_begin[t] is the packed row of position nz_begin[t] (row_begin[tasks] = rows).
// child_begin[t] (Block and Warp levels) is the first child task of t; its children are
// child_begin[t] .. child_begin[t+1]-1, dealt round-robin to the C child workers. For Bitmap
// levels, bitmap[t] has bit c set when child task child_begin[t]+c starts a new row (bit 0 always
// set). Row-start bits (row_start_bits) mark, per logical position, the first entry of each packed
// row; present when thread reduction is Bitmap.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/family.h"
#include "ir/general_schedule.h"
#include "ir/offset_compression.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct OffsetArray {
  std::string name;             // "block.nz_begin", "warp.row_begin", "perm", ...
  std::vector<int64_t> values;  // the plain array (always present, for the host and tests)
  OffsetCompression compression;
};

struct LevelArrays {
  Level level = Level::Block;
  int64_t tasks = 0;
  OffsetArray nz_begin;          // tasks + 1
  OffsetArray row_begin;         // tasks + 1
  OffsetArray child_begin;       // tasks + 1 (Block, Warp); empty for Thread
  std::vector<uint32_t> bitmap;  // tasks, for a Bitmap reduction at this level; else empty
};

struct PackedFormat {
  FormatStats stats;
  OffsetArray perm;                      // packed row -> original row (rows entries)
  OffsetArray row_ptr;                   // rows + 1 logical positions
  std::vector<int32_t> col_idx;          // nnz_padded, storage order
  std::vector<float> values;             // nnz_padded, storage order, fp32 master (padding = 0)
  std::vector<uint32_t> row_start_bits;  // (nnz_padded + 31) / 32 words, or empty
  std::array<LevelArrays, 3> levels;     // indexed by Level
  OutputMode output = OutputMode::Store;

  const LevelArrays& at(Level l) const { return levels[static_cast<int>(l)]; }
};

// Storage position of logical position p under schedule s (identity unless interleaved).
int64_t storage_pos(const GeneralSchedule& s, const PackedFormat& f, int64_t p);

// storage_pos of consecutive logical positions, stepped without divisions: the packer's inner
// loop (88M positions for a 65M-nonzero graph, three divisions by run-time values each).
//   StoragePosCursor c(s, row_begin);
//   for (...; c.next()) values[*c] = ...;
class StoragePosCursor {
 public:
  StoragePosCursor(const GeneralSchedule& s, int64_t p);
  int64_t operator*() const { return interleave_ ? base_ + (jv_ * groups_ + q_) * vec_ + jr_ : p_; }
  void next() {
    ++p_;
    if (!interleave_) return;
    if (++j_ == chunk_) {  // the group's chunk is done: the next group, or the next round
      j_ = jv_ = jr_ = 0;
      if (++q_ == groups_) q_ = 0, base_ += groups_ * chunk_;
    } else if (++jr_ == vec_) {
      jr_ = 0, ++jv_;
    }
  }

 private:
  bool interleave_ = false;
  int64_t groups_ = 1, chunk_ = 1, vec_ = 1;  // G, z_t, v
  int64_t p_ = 0, base_ = 0, q_ = 0, j_ = 0, jv_ = 0, jr_ = 0;
};

// O(rows). Precondition: s is a legal general schedule (Schedule's constructor checked it); m
// matches p (rows == M).
FormatStats compute_format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s);

// The O(rows) part of compute_format_stats: it depends only on the row padding and on whether
// empty rows are skipped (block nonzero splits), so schedules that share both share it (the
// enumeration and the tuner's ranking compute it once per pair: 400 general schedules of a
// 4M-row matrix otherwise walk the rows 400 times).
struct GeneralRowStats {
  int64_t rows = 0;  // rows the kernel walks
  int64_t nnz = 0;
  int64_t padded_sum = 0;  // Σ round_up(row length, pad), before the block tail rounding
  int64_t max_row_length = 0;
};
GeneralRowStats general_row_stats(const CsrMatrix& a, int pad, bool skip_empty);
// The rest (tail rounding, block tasks, column tiles) for schedule s, O(1).
FormatStats general_format_stats(const GeneralRowStats& rs, const Problem& p,
                                 const GeneralSchedule& s);
// The stats sharing key of s: "pad=4;skip=1".
std::string general_stats_key(const GeneralSchedule& s);

// Builds every array and classifies every OffsetArray. Throws UserError when the matrix does
// not match the problem's shape or its CSR is not canonical.
PackedFormat pack_format(const CsrMatrix& a, const Problem& p, const Schedule& s);

}  // namespace sparsegen
