// The slide family's cost description: a streaming kernel over the fragment-ordered weight (values
// and metadata read once), the lifted B read once per row block from L2, one mma.sp per 16 x 8
// tile and chunk, the warps' partial sums added in shared memory; plus the b_transform pass over
// B (read K x N, write the lifted K' x N).
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/slide_schedule.h"

namespace sparsegen {
namespace {

class SlideCost final : public CostFamily {
 public:
  std::string_view name() const override { return SlideSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "slide"; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& sch,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile&) const override {
    const SlideSchedule& s = sch.as<SlideSchedule>();
    const SlideMma mma = slide_mma(p.dtype);
    const double vb = mma.elem_bytes;
    const double io = dtype_bytes(p.b_dtype());
    const double n = double(std::max<int64_t>(p.n, 1));
    const double row_tiles = double(slide_row_tiles(p));
    const double col_tiles = double(slide_col_tiles(p));
    const double chunks = double(slide_chunks(p, s.pattern));
    const double grid_x = double(slide_grid_x(p, s)), grid_y = double(slide_grid_y(p, s));
    const double col_blocks = double(slide_col_blocks(p, s));
    const double part = double(slide_part_chunks(slide_chunks(p, s.pattern), s.ksplit));
    const double lifted_b = chunks * mma.chunk * col_tiles * 8 * vb;
    f.nnz = double(fs.nnz);
    f.pad_overhead = fs.pad_overhead();
    // A once per column block (each column block re-reads it; K parts split it).
    f.a_bytes = row_tiles * chunks * (512.0 + 4.0 * mma.meta_words()) * col_blocks;
    f.table_bytes = 0;
    // lift=kernel: read B, write and read B'; fused: B only (re-read through the caches).
    f.b_unique_bytes = double(p.k) * n * io + (s.lift == SlideLift::Kernel ? 2.0 * lifted_b : 0.0);
    f.b_sector_bytes = grid_x * lifted_b;
    f.c_bytes = double(p.m) * n * io;
    // K parts: every part adds M·N floats into the workspace; the finish reads and re-zeroes it.
    if (s.ksplit > 1) f.c_bytes += double(p.m) * n * 4.0 * (s.ksplit + 2);
    f.dram_bytes = f.a_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.b_sector_bytes + f.c_bytes;
    f.warp_workers = grid_x * grid_y * s.warps;
    const double mmas = row_tiles * chunks * col_tiles;
    f.warp_iters_total = mmas;
    f.warp_iters_max =
        (s.split == SlideSplit::K ? std::ceil(part / s.warps) : part) * s.m_tiles * s.n_tiles;
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    f.lane_efficiency = 1.0;
    f.column_efficiency = std::min(1.0, n / (col_tiles * 8.0));
    f.atomics = s.ksplit > 1 ? double(p.m) * n * s.ksplit : 0.0;
    f.shuffles = 0;
    f.block_syncs = grid_x * grid_y * (s.split == SlideSplit::K ? 1.0 : 2.0 * part / s.unroll);
    f.blocks = grid_x * grid_y;
    f.threads_per_block = s.threads_per_block();
    f.registers_estimate = std::min(255, (slide_registers(p, s) + 7) / 8 * 8);
    KernelShape k;
    k.warps_per_block = s.warps;
    k.thread_cols = 8 * s.n_tiles;
    k.vector_width = 8;
    k.prologue = s.lift == SlideLift::Kernel;  // the b_transform launch
    return k;
  }
};

}  // namespace

const CostFamily& slide_cost_family() {
  static const SlideCost f;
  return f;
}

}  // namespace sparsegen
