// The general family's enumeration: every legal GeneralSparse schedule for a problem, within the
// bounds of EnumerateOptions, in a deterministic order (schedules the row-length rule recommends
// first, then the rest in a fixed nested order).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/enumerate.h"
#include "ir/general_schedule.h"
#include "ir/problem.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// Row-length distribution summary the reduction rule uses.
struct RowLengthStats {
  int64_t rows = 0;
  int64_t nnz = 0;
  int64_t max = 0;
  double mean = 0;
  double cv = 0;  // coefficient of variation (stddev / mean); 0 when mean == 0
  int64_t empty = 0;
};
RowLengthStats row_length_stats(const CsrMatrix& a);

// The level that finishes a row, chosen from the row-length distribution:
//   Thread  short rows (mean < 8, cv <= 1): a thread-group owns whole rows, no cross-lane reduction
//   Warp    medium rows: a warp per row (thread Total -> warp Total)
//   Block   long rows (mean >= 32 * 32): a block per row (warp Total -> block Total)
// and whether the distribution is irregular enough (cv > 1 or a row longer than 32x the mean)
// that nonzero-split schedules (thread Bitmap/Total -> warp Segment/Bitmap -> block Segment/
// Bitmap, atomics across blocks) should come first.
struct ReductionRule {
  Level finish_level = Level::Warp;
  bool prefer_nnz_split = false;
};
ReductionRule choose_reduction_levels(const RowLengthStats& st);
// True when schedule s matches the rule (used for ordering).
bool matches_rule(const ReductionRule& r, const GeneralSchedule& s);

std::vector<Schedule> enumerate_general_schedules(const Problem& p, const CsrMatrix& a,
                                                  const EnumerateOptions& opt = {});

}  // namespace sparsegen
