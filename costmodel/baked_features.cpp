// The baked family's cost description: a warp per row with the dense columns across its lanes,
// as a CSR SpMM walks it, but A comes with the kernel's instructions (about 32 bytes of code per
// nonzero and 32-column pass: the load and the FMA) instead of values, indices and row offsets.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/baked_schedule.h"
#include "ir/dtype.h"

namespace sparsegen {
namespace {

class BakedCost final : public CostFamily {
 public:
  std::string_view name() const override { return BakedSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "baked"; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& s,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile& rows) const override {
    const BakedSchedule& b = s.as<BakedSchedule>();
    const double vb = dtype_bytes(p.dtype);
    const double m = double(p.m), k = double(p.k), n = double(std::max<int64_t>(p.n, 1));
    const double nnz = double(fs.nnz);
    const double passes = double(baked_passes(p));
    f.nnz = nnz;
    f.pad_overhead = 0;
    f.a_bytes = nnz * 32.0 * passes;  // instructions
    f.table_bytes = 0;
    f.b_unique_bytes = k * n * vb;
    f.b_sector_bytes = nnz * std::max(32.0, std::min(n, 32.0) * vb) * passes;
    f.c_bytes = m * n * vb;
    f.dram_bytes = f.a_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.b_sector_bytes + f.c_bytes;
    const double longest = rows.sorted.empty() ? 0.0 : double(rows.sorted.front());
    f.warp_workers = m;
    f.warp_iters_total = nnz * passes;
    f.warp_iters_max = longest * passes;
    f.warp_iters_mean = m > 0 ? f.warp_iters_total / m : 0.0;
    f.lane_efficiency = std::min(1.0, n / 32.0);
    f.column_efficiency = 1.0;
    f.atomics = 0;
    f.shuffles = 0;
    f.block_syncs = 0;
    f.threads_per_block = b.threads_per_block();
    f.blocks = double(fs.block_tasks);
    f.registers_estimate = baked_registers(p);
    KernelShape shape;
    shape.warps_per_block = b.warps_per_block;
    shape.thread_cols = static_cast<int>(passes);
    shape.vector_width = 1;
    shape.prologue = false;
    return shape;
  }
};

}  // namespace

const CostFamily& baked_cost_family() {
  static const BakedCost f;
  return f;
}

}  // namespace sparsegen
