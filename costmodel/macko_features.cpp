// The MACKO family's cost description: a row-streaming kernel, warps_per_row warps per row, each
// lane loading unroll vectors of vector_bytes per step, deltas of delta_bits per value, cols dense
// columns per thread; staged schedules gather B from shared memory after one copy per block.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/macko_schedule.h"

namespace sparsegen {
namespace {

class MackoCost final : public CostFamily {
 public:
  std::string_view name() const override { return MackoSchedule::kFamily; }
  // Staged-B kernels run a different loop (and pay a copy per block): their own formula.
  std::string strategy(const Schedule& s) const override {
    return s.as<MackoSchedule>().staged() ? "macko/shared" : "macko";
  }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& s,
                       const FormatStats& fs, const MatrixFeatures& mf,
                       const RowProfile& rows) const override {
    const MackoSchedule& m = s.as<MackoSchedule>();
    const double db = dtype_bytes(p.dtype);
    const double n = double(std::max<int64_t>(p.n, 1));
    const int cols = std::max(1, m.cols);
    const double tiles = std::ceil(n / cols);
    const double per_step = 32.0 * std::max(1, m.unroll) * std::max(1.0, m.vector_bytes / db);
    const int wpr = std::max(1, m.warps_per_row);
    double total = 0, mx = 0;
    for (int64_t L : rows.lengths) {
      const double it = std::ceil(double(L) / (per_step * wpr));
      total += it * wpr;
      mx = std::max(mx, it);
    }
    const double nnz = double(fs.nnz), nnzp = double(std::max(fs.nnz_padded, fs.nnz));
    f.nnz = nnz;
    f.pad_overhead = fs.pad_overhead();
    f.a_bytes = nnzp * (db + m.delta_bits / 8.0) * tiles;
    f.table_bytes = 8.0 * double(fs.rows);
    f.b_unique_bytes = double(p.k) * n * db;
    const double gap = mf.mean_col_gap > 0 ? mf.mean_col_gap : 32.0;
    // Staged: gathers hit shared memory; L2 instead serves one copy of B per block.
    f.b_sector_bytes = m.staged() ? double(fs.block_tasks) * double(p.k) * m.stage_row_bytes()
                                  : nnzp * tiles * cols * std::min(32.0, std::max(db, gap * db));
    f.c_bytes = double(p.m) * n * db;
    f.dram_bytes = f.a_bytes + f.table_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.table_bytes + f.b_sector_bytes + f.c_bytes;
    const double rpw = std::max(1, m.rows_per_warp);
    f.warp_workers = std::ceil(double(rows.lengths.size()) / rpw) * wpr * tiles;
    f.warp_iters_total = total * tiles;
    f.warp_iters_max = mx * rpw;
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    f.lane_efficiency = total > 0 ? std::min(1.0, nnz / (total * per_step)) : 1.0;
    f.column_efficiency = n / (tiles * cols);
    f.shuffles = (total * 5.0 + double(rows.lengths.size()) * 5.0 * cols) * tiles;
    f.block_syncs = wpr > 1 ? double(rows.lengths.size()) * tiles : 0.0;
    f.blocks = double(fs.block_tasks) * tiles;
    f.threads_per_block = std::max(1, m.warps_per_block) * 32;
    f.registers_estimate = std::min(255, (32 + 2 * cols + 4 * m.unroll + 7) / 8 * 8);
    KernelShape k;
    k.warps_per_block = std::clamp(m.warps_per_block, 1, 32);
    k.thread_cols = m.cols;
    k.vector_width = std::max(1, m.vector_bytes / dtype_bytes(p.dtype));
    k.sort_rows = m.sort_rows;
    return k;
  }
};

}  // namespace

const CostFamily& macko_cost_family() {
  static const MackoCost f;
  return f;
}

}  // namespace sparsegen
