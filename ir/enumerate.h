// Schedule-space enumeration: every legal GeneralSparse schedule for a Problem and matrix, within
// the option bounds below, in a deterministic order (schedules the reduction rule recommends
// first, then the rest in a fixed nested order). Hundreds for a typical matrix.
//
//   auto all = enumerate_schedules(p, a);                 // legal and verified for sm_90
//   for (const Schedule& s : all) std::cout << to_string(s) << "\n";
#pragma once

#include <cstdint>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
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

struct EnumerateOptions {
  DeviceLimits device = DeviceLimits::sm90();
  bool verify = true;               // drop candidates the verifier rejects
  double max_pad_overhead = 1.0;    // drop candidates whose padding adds more than this x nnz
  int max_warps_per_block = 8;      // warps per block tried: 1, 4, 16, ... up to this bound
  // Append the specialised families' schedules where the problem fits them: MACKO
  // (ir/macko_schedule.h: fp16/bf16, N <= 8) and bitmap_tc (ir/bitmap_tc_schedule.h: fp16/bf16,
  // N a multiple of 8). Off by default until every consumer of the enumeration is family-aware.
  bool include_specialised = false;
};

std::vector<Schedule> enumerate_schedules(const Problem& p, const CsrMatrix& a,
                                          const EnumerateOptions& opt = {});

}  // namespace sparsegen
