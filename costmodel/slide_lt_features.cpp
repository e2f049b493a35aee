// The slide_lt family's cost description: the lift pass over B (read K x N, write the lifted
// K' x N), the library's 2:4 GEMM reading the compressed weight (half of W' plus 1/8 metadata)
// and B' once per 128-row tile, C written once (8-bit types: the raw accumulators written and
// read again by the scale kernel). Only a yardstick for ranking: the tuner measures the library
// candidates.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/slide_lt_schedule.h"
#include "ir/slide_schedule.h"

namespace sparsegen {
namespace {

class SlideLtCost final : public CostFamily {
 public:
  std::string_view name() const override { return SlideLtSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "slide_lt"; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& sch,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile&) const override {
    const SlideLtSchedule& s = sch.as<SlideLtSchedule>();
    const double vb = dtype_bytes(p.dtype), io = dtype_bytes(p.b_dtype());
    const double m = double(p.m), n = double(std::max<int64_t>(p.n, 1));
    const double kl = double(slide_lt_lifted_k(p, s.pattern));
    const double row_tiles = std::ceil(m / 128.0), col_tiles = std::ceil(n / 128.0);
    const bool quant = is_quantized(p.dtype);
    f.nnz = double(fs.nnz);
    f.pad_overhead = fs.pad_overhead();
    f.a_bytes = m * kl * (vb / 2.0 + 1.0 / 8.0) * col_tiles;
    f.table_bytes = quant ? m * 4.0 : 0.0;
    f.b_unique_bytes = double(p.k) * n * io + 2.0 * kl * n * vb;
    f.b_sector_bytes = row_tiles * kl * n * vb;
    f.c_bytes = m * n * io + (quant ? 2.0 * m * n * 4.0 : 0.0);
    f.dram_bytes = f.a_bytes + f.table_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.b_sector_bytes + f.c_bytes;
    f.warp_workers = row_tiles * col_tiles * 8.0;
    f.warp_iters_total = row_tiles * col_tiles * kl / 64.0;
    f.warp_iters_max = kl / 64.0;
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    f.lane_efficiency = 1.0;
    f.column_efficiency = std::min(1.0, n / (col_tiles * 128.0));
    f.atomics = 0;
    f.shuffles = 0;
    f.block_syncs = row_tiles * col_tiles * kl / 64.0;
    f.blocks = row_tiles * col_tiles;
    f.threads_per_block = 256;
    f.registers_estimate = 168;
    KernelShape k;
    k.warps_per_block = 8;
    k.thread_cols = 16;
    k.vector_width = 8;
    k.prologue = true;  // the lift launch
    return k;
  }
};

}  // namespace

const CostFamily& slide_lt_cost_family() {
  static const SlideLtCost f;
  return f;
}

}  // namespace sparsegen
