// The dense family's cost description: one dense GEMM on the tensor cores (A read densely, B
// and C once), counted as warp iterations of one 16 x 8 x 16 mma each over 128 x 128 output
// tiles of 8 warps. Only a yardstick for ranking: the tuner measures the library candidate.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/dense_schedule.h"

namespace sparsegen {
namespace {

class DenseCost final : public CostFamily {
 public:
  std::string_view name() const override { return DenseSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "dense"; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule&,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile&) const override {
    const double m = double(p.m), k = double(dense_k(p)), n = double(std::max<int64_t>(p.n, 1));
    const double ab = double(dtype_bytes(p.dtype));  // bytes of A and B: 2, int8 1
    const double mma_k = ab == 1 ? 32.0 : 16.0;      // the int8 mma takes k 32
    f.nnz = double(fs.nnz);
    f.pad_overhead = fs.nnz > 0 ? (m * k - double(fs.nnz)) / double(fs.nnz) : 0.0;
    f.a_bytes = m * k * ab;
    f.table_bytes = 0;
    f.b_unique_bytes = k * n * ab;
    f.b_sector_bytes = f.b_unique_bytes;
    f.c_bytes = m * n * 2.0;
    f.dram_bytes = f.a_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.dram_bytes;
    const double mmas = std::ceil(m / 16.0) * std::ceil(n / 8.0) * std::ceil(k / mma_k);
    f.blocks = std::max(1.0, std::ceil(m / 128.0) * std::ceil(n / 128.0));
    f.warp_workers = f.blocks * 8.0;
    f.warp_iters_total = mmas;
    f.warp_iters_max = std::ceil(mmas / f.warp_workers);
    f.warp_iters_mean = f.warp_iters_max;
    f.lane_efficiency = 1.0;
    f.column_efficiency = std::min(1.0, n / 8.0);
    f.atomics = 0;
    f.shuffles = 0;
    f.block_syncs = 0;
    f.threads_per_block = 256;
    f.registers_estimate = 128;
    KernelShape shape;
    shape.warps_per_block = 8;
    shape.thread_cols = 1;
    shape.vector_width = 8;
    shape.prologue = false;
    return shape;
  }
};

}  // namespace

const CostFamily& dense_cost_family() {
  static const DenseCost f;
  return f;
}

}  // namespace sparsegen
