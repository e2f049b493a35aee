// The dense_ffn family's cost description: two dense GEMMs on the tensor cores (their bytes: x,
// the weights once, [G | U] written and read, h written and read, y), counted as warp
// iterations of one 16 x 8 x 16 mma each, plus the elementwise gating.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/dense_ffn_schedule.h"

namespace sparsegen {
namespace {

class DenseFfnCost final : public CostFamily {
 public:
  std::string_view name() const override { return DenseFfnSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "dense_ffn"; }
  bool global_formula() const override { return false; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& sch,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile&) const override {
    const DenseFfnSchedule& s = sch.as<DenseFfnSchedule>();
    const double m = double(std::max<int64_t>(p.m, 1)), k = double(p.k), n = double(p.n);
    const double cols = double(dense_ffn_gu_cols(p));
    f.nnz = double(fs.nnz);
    f.pad_overhead = 0;
    f.a_bytes = (k * cols + n * k) * 2.0;
    f.table_bytes = 0;
    f.b_unique_bytes = m * k * 2.0;
    f.b_sector_bytes = f.b_unique_bytes;
    f.c_bytes = m * k * 2.0 + m * (2.0 * cols + 2.0 * n) * 2.0;
    f.dram_bytes = f.a_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.dram_bytes;
    const double mmas = std::ceil(m / 16.0) * (std::ceil(cols / 8.0) * std::ceil(k / 16.0) +
                                               std::ceil(k / 8.0) * std::ceil(n / 16.0));
    f.blocks = double(dense_ffn_gate_blocks(p, s));
    f.warp_workers = f.blocks * s.threads / 32.0;
    f.warp_iters_total = mmas;
    f.warp_iters_max = f.warp_workers > 0 ? std::ceil(mmas / f.warp_workers) : mmas;
    f.warp_iters_mean = f.warp_iters_max;
    f.lane_efficiency = 1.0;
    f.column_efficiency = 1.0;
    f.atomics = 0;
    f.shuffles = 0;
    f.block_syncs = 0;
    f.threads_per_block = s.threads;
    f.registers_estimate = 32;
    KernelShape shape;
    shape.warps_per_block = s.threads / 32;
    shape.thread_cols = 1;
    shape.vector_width = 1;
    shape.prologue = true;  // the library GEMMs are launches of their own
    return shape;
  }
};

}  // namespace

const CostFamily& dense_ffn_cost_family() {
  static const DenseFfnCost f;
  return f;
}

}  // namespace sparsegen
