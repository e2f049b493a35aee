// The cusparse family's cost description: the library's CSR SpMM as a warp per row walking the
// row's nonzeros with the dense columns across its lanes (A read once, B gathered per nonzero, C
// written once). Only a yardstick for ranking: the tuner measures the library candidates.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/cusparse_schedule.h"
#include "ir/dtype.h"

namespace sparsegen {
namespace {

class CusparseCost final : public CostFamily {
 public:
  std::string_view name() const override { return CusparseSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "cusparse"; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule&,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile& rows) const override {
    const double vb = dtype_bytes(p.dtype);
    const double m = double(p.m), k = double(p.k), n = double(std::max<int64_t>(p.n, 1));
    const double nnz = double(fs.nnz);
    const double col_passes = std::ceil(n / 32.0);  // 32 lanes over the columns
    f.nnz = nnz;
    f.pad_overhead = 0;
    f.a_bytes = nnz * (vb + 4.0) * col_passes;
    f.table_bytes = (m + 1.0) * 4.0;
    f.b_unique_bytes = k * n * vb;
    f.b_sector_bytes = nnz * std::max(32.0, std::min(n, 32.0) * vb) * col_passes;
    f.c_bytes = m * n * vb;
    f.dram_bytes = f.a_bytes + f.table_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.table_bytes + f.b_sector_bytes + f.c_bytes;
    const double longest = rows.sorted.empty() ? 0.0 : double(rows.sorted.front());
    f.warp_workers = m * col_passes;
    f.warp_iters_total = nnz * col_passes;
    f.warp_iters_max = longest;
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    f.lane_efficiency = std::min(1.0, n / 32.0);
    f.column_efficiency = 1.0;
    f.atomics = 0;
    f.shuffles = 0;
    f.block_syncs = 0;
    f.threads_per_block = 128;
    f.blocks = std::max(1.0, std::ceil(f.warp_workers / 4.0));
    f.registers_estimate = 40;
    KernelShape shape;
    shape.warps_per_block = 4;
    shape.thread_cols = 1;
    shape.vector_width = 1;
    shape.prologue = false;
    return shape;
  }
};

}  // namespace

const CostFamily& cusparse_cost_family() {
  static const CusparseCost f;
  return f;
}

}  // namespace sparsegen
