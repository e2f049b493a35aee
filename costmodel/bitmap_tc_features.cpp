// The bitmap_tc family's cost description: every warp walks its row tiles' 64-column tiles
// (dense-shaped work: four 16x16 operand decodes and 4·N/8 mma per tile step), each block copies
// its K range of B once, split K adds through an fp32 workspace.
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/bitmap_format.h"
#include "ir/bitmap_tc_schedule.h"

namespace sparsegen {
namespace {

class BitmapTcCost final : public CostFamily {
 public:
  std::string_view name() const override { return BitmapTcSchedule::kFamily; }
  // pipe=bulk runs another loop (a producer warp, register-A wgmma, no block barrier): its own
  // formula, not one fitted on the mma.sync kernels; decode=scatter's work follows the stored
  // values instead of the positions: its own again.
  std::string strategy(const Schedule& s) const override {
    const auto& b = s.as<BitmapTcSchedule>();
    if (b.decode == BitmapDecode::Scatter) return "bitmap_tc/scatter";
    return b.pipe == BitmapPipe::Bulk ? "bitmap_tc/bulk" : "bitmap_tc";
  }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& sch,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile&) const override {
    const BitmapTcSchedule& s = sch.as<BitmapTcSchedule>();
    const double db = dtype_bytes(p.dtype);
    const double n = double(std::max<int64_t>(p.n, 1));
    const double row_tiles = std::ceil(double(p.m) / double(kBitmapTileRows));
    const double col_tiles = std::ceil(double(p.k) / double(kBitmapTileCols));
    const double part = double(bitmap_tc_part_tiles(int64_t(col_tiles), s.ksplit));
    const double grid_x = double(bitmap_tc_grid_x(p, s));
    const double tiles = row_tiles * col_tiles;
    f.nnz = double(fs.nnz);
    f.pad_overhead = fs.pad_overhead();
    // decode=scatter streams a 16-bit offset per value slot in place of the masks
    f.a_bytes = s.decode == BitmapDecode::Scatter
                    ? double(fs.nnz_padded) * (db + 2.0) + tiles * 4.0
                    : double(fs.nnz_padded) * db + tiles * (kBitmapTileRows * 8 + 4);
    f.table_bytes = 0;
    f.b_unique_bytes = double(p.k) * n * db;
    f.b_sector_bytes = grid_x * double(p.k) * n * db;
    // kred=cluster adds the K parts in distributed shared memory: no workspace traffic
    const bool atomic = s.output() == OutputMode::Atomic;
    f.c_bytes = double(p.m) * n * (atomic ? db * 2 + 4.0 * 2 : db);
    f.dram_bytes = f.a_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.b_sector_bytes + f.c_bytes;
    f.warp_workers = grid_x * s.warps_per_block * s.ksplit;
    f.warp_iters_total = tiles * (1.0 + n / 32.0);
    f.warp_iters_max = s.m_tiles * part * (1.0 + n / 32.0);
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    f.lane_efficiency = tiles > 0 ? std::min(1.0, f.nnz / (tiles * 1024.0)) : 1.0;
    f.column_efficiency = 1.0;
    f.atomics = atomic ? double(p.m) * n * s.ksplit : 0.0;
    f.shuffles = tiles * 7.0;
    f.block_syncs = grid_x * s.ksplit * part * 2.0;
    f.blocks = grid_x * s.ksplit;
    f.threads_per_block = s.threads_per_block();
    f.registers_estimate = std::min(255, (bitmap_tc_registers(p, s) + 7) / 8 * 8);
    // The shared occupancy and vector terms see a warp of 8-wide loads and 8 columns.
    KernelShape k;
    k.warps_per_block = s.warps_per_block;
    k.thread_cols = 8;
    k.vector_width = 8;
    k.prologue = atomic;
    return k;
  }
};

}  // namespace

const CostFamily& bitmap_tc_cost_family() {
  static const BitmapTcCost f;
  return f;
}

}  // namespace sparsegen
