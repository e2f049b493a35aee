// The twell family's cost description, per token of the calibration statistics scaled to the
// problem's M: kernel 1 streams x and W_g once per 128-row block (a tensor-core GEMM, counted as
// its bytes and as multiplies that run before kernel 2) and writes the TwELL words; kernel 2 reads,
// per activation nonzero, one row of W_u^T and one of W_d (K values each) and the x row once,
// its longest worker a block's (or team's) share of the longest token (or of one part, with the
// queue). gate=lib's pack reads G, or its bit-mask and the nonzeros' sectors (pack=mask).
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/twell_schedule.h"

namespace sparsegen {
namespace {

class TwellCost final : public CostFamily {
 public:
  std::string_view name() const override { return TwellSchedule::kFamily; }
  std::string strategy(const Schedule&) const override { return "twell"; }
  bool global_formula() const override { return false; }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& sch,
                       const FormatStats& fs, const MatrixFeatures&,
                       const RowProfile&) const override {
    const TwellSchedule& s = sch.as<TwellSchedule>();
    const double m = double(std::max<int64_t>(p.m, 1)), k = double(p.k), n = double(p.n);
    const double kp = double(twell_k_padded(p));
    // Walked slots per token in the calibration batch, scaled to M tokens.
    const double per_token = fs.rows > 0 ? double(fs.nnz_padded) / double(fs.rows) : 0.0;
    const double walked = per_token * m;
    const double tiles = double(twell_tiles(p, s));
    const double row_blocks = std::ceil(m / kTwellGemmRows);
    const double gemm_bytes = row_blocks * n * kp * 2.0 + tiles * m * kp * 2.0;
    // The counts, and the entries that are there: a tile's room (T / C words) is never read or
    // written beyond its count, so the compression changes the traffic only through the tiles
    // that overflow (walked densely, in `walked`).
    const double twell_bytes = m * tiles * 4.0 + walked * 4.0;
    const double down_bytes = walked * kp * 2.0 * (p.gated ? 2.0 : 1.0);
    f.nnz = walked;
    f.pad_overhead = fs.pad_overhead();
    f.a_bytes = down_bytes;
    f.table_bytes = twell_bytes;
    f.b_unique_bytes = m * k * 2.0 + n * kp * 2.0 * (p.gated ? 3.0 : 2.0);
    f.b_sector_bytes = gemm_bytes;
    f.c_bytes = m * k * 2.0;
    // gate=lib's pack reads G (pack=scan) or G's bit-mask and a sector per nonzero (pack=mask).
    const double pack_bytes = s.gate != TwellGate::Lib ? 0.0
                              : s.pack == TwellPack::Mask
                                  ? m * std::ceil(n / 128.0) * 16.0 + walked * 32.0
                                  : m * n * 2.0;
    f.dram_bytes = f.b_unique_bytes + f.table_bytes + f.c_bytes +
                   std::min(down_bytes, 4.0 * f.b_unique_bytes) + pack_bytes;
    f.l2_bytes = f.a_bytes + f.table_bytes + f.b_sector_bytes + f.c_bytes + pack_bytes;
    // Kernel 1 runs before kernel 2: its 16 x 8 x 16 multiplies (serial_mmas) at the library
    // GEMM's rate, as the dense FFN's count; the generated GEMM (gate=mma) ran at about a third of
    // the library's on an H200 (bf16, 4096 x 14336), so it counts three. The rest describes
    // kernel 2: per nonzero, a warp walks the W_u row (8 values per lane and iteration) and the
    // worker's warps share the W_d row: 2 · KP / 256 warp iterations, however many warps; one
    // worker's share of its longest token (with the queue: one part of it) is the critical path.
    const double mmas = std::ceil(m / 16.0) * std::ceil(n / 8.0) * std::ceil(kp / 16.0);
    f.serial_mmas = mmas * (s.gate == TwellGate::Mma ? 3.0 : 1.0);
    const double per_nonzero = 2.0 * std::ceil(kp / 256.0);
    f.warp_workers = double(twell_down_grid(p, s)) * s.split * s.warps;
    const double worker_warps = s.team_warps();
    f.warp_iters_total = walked * per_nonzero;
    double longest = fs.max_row_length > 0 ? double(fs.max_row_length) : per_token;
    if (s.balance != TwellBalance::Token)  // a part of the queue, or an even worker's share
      longest = std::min(longest, double(kTwellPartBatches * kTwellBatch));
    f.warp_iters_max = longest / s.split * per_nonzero / worker_warps;
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    f.lane_efficiency = 1.0;
    f.column_efficiency = std::min(1.0, n / (tiles * s.tile));
    f.atomics = 0;
    f.shuffles = walked * 5.0;
    // A worker of one warp synchronises within the warp only.
    f.block_syncs = (worker_warps > 1 ? 1.0 : 0.0) * m *
                        (2.0 + 2.0 * std::ceil(std::max(per_token, 1.0) / kTwellBatch)) +
                    row_blocks * tiles * std::ceil(kp / 32.0);
    f.blocks = double(twell_down_grid(p, s)) * s.split;
    f.threads_per_block = s.warps * 32;
    f.registers_estimate = std::min(255, (twell_registers(p, s) + 7) / 8 * 8);
    KernelShape shape;
    shape.warps_per_block = s.warps;
    shape.thread_cols = 8;
    shape.vector_width = 8;
    shape.prologue = true;  // kernel 1 is a launch of its own
    return shape;
  }
};

}  // namespace

const CostFamily& twell_cost_family() {
  static const TwellCost f;
  return f;
}

}  // namespace sparsegen
