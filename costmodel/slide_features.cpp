// The slide family's cost description, ranked by its roofline (no fitted formula: the global one,
// fitted on other families' sparse products, did not order slide schedules at all). A streaming
// kernel over the fragment-ordered weight: values and metadata read once per column block, the
// lifted B read once per row block, half from L2 (lift=fused: gathered from B itself, one sector
// per token and fragment register), one mma.sp per 16 x 8 tile and chunk; K parts add into an
// fp32 workspace with atomics; lift=kernel runs the b_transform launch first. The critical path
// is a warp's load steps: each step issues its loads together and waits for them, about one
// loaded DRAM latency on split=k, a few on split=rows, whose warps meet at two block barriers
// per step, and about two on split=wg, whose step is a block barrier and a warpgroup's wgmma.sp
// (all measured on an H200; tools/slide_rank_check.py compares the order with a slide bench
// JSON).
#include <algorithm>
#include <cmath>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/slide_schedule.h"

namespace sparsegen {
namespace {

// Cycles of one load step (H200, 1.98 GHz): split=k kernels, whose warps run free, and split=rows,
// whose warps meet at the step's barriers. Fitted to the measured times of 4096x4096 and
// 4096x14336 at N = 8-64 (steps x waves x latency).
constexpr double kStepCyclesK = 1100.0;
constexpr double kStepCyclesRows = 4000.0;
// split=wg (a whole step staged by bulk copies, one barrier per step): fitted to the times of
// 4096x4096, 14336x4096 and 4096x14336 at N = 32 and 64 (H200) once a step's A, metadata and B
// were one bulk copy each.
constexpr double kStepCyclesWg = 1800.0;
// split=wg with three or four steps in flight. With one K part a step's wait partly hides behind
// the steps before it: 0.85 µs per step with stages 2, 0.71 with 3, 0.75 with 4 (14336x4096,
// N = 64, warps 8, H200). With K parts every such ring measured was 35-60 % slower than stages 2
// (4096², 4096x14336, 14336x4096, N = 64); why is not known.
constexpr double kDeepRingWg = 0.83;
constexpr double kDeepRingPartsWg = 1.4;
// split=wg with lift=fused and one K part (K parts keep the factors above): a producer warp per
// buffer refills it as soon as it is free, so the stages + 1 buffers' waits overlap and a step
// costs kStepCyclesWg · 3 / (stages + 1): 1350
// cycles measured with 4 buffers (18944x3584, two blocks per SM) and 960-1000 with 5-7 (14336x4096,
// one block per SM, where the DRAM stream bounds it) at N = 64 on an H200.
constexpr double kFusedRingBuffersWg = 3.0;
// split=wg streams A with one thread's bulk copies, which read DRAM about 13 % slower than the
// plain loads of many warps: 30 against 26.4 µs for the same A at N = 16 (14336x4096, H200),
// as the MACKO streaming probes found (bulk / warp time 1.13, geometric mean of 60 cases).
constexpr double kBulkStreamWg = 1.13;
// lift=fused: what each fragment register's gather adds to a step, per token of the tile (one
// sector each): fitted to fused against lift=kernel at N = 1 and 8 (4096x4096, 4096x14336).
constexpr double kGatherCyclesPerToken = 18.0;
// The share of the lifted B a row block reads from L2 rather than L1 (split=k and rows), and the
// cost of a fused gather's sector against an L2 byte stream: an L1 wavefront per sector per cycle
// and SM is about 8.4 TB/s on an H200 against the profile's 14.4 TB/s of L2.
constexpr double kLiftedBFromL2 = 0.5;
constexpr double kGatherSectorWeight = 1.7;

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
    const double chunks = double(slide_chunks(p, s));
    const double grid_x = double(slide_grid_x(p, s)), grid_y = double(slide_grid_y(p, s));
    const double col_blocks = double(slide_col_blocks(p, s));
    // spread: each block's equal share of the row blocks x runs (3 chunks each).
    const double part = s.spread > 0 ? std::ceil(double(slide_spread_work(p, s)) / s.spread) * 3.0
                                     : double(slide_part_chunks(p, s));
    const double step = double(slide_step_chunks(s));
    // split=wg with lift=fused stages the original B (no lift kernel, no B').
    const bool wg_fused = s.fused_wg();
    const double raw_b = double(p.k) * col_tiles * 8 * io;
    const double lifted_b = chunks * mma.chunk * col_tiles * 8 * vb;
    f.nnz = double(fs.nnz);
    f.pad_overhead = fs.pad_overhead();
    // A once per column block (each column block re-reads it; K parts split it).
    f.a_bytes =
        row_tiles * chunks * (32.0 * mma.lane_bytes() + 4.0 * mma.meta_words()) * col_blocks;
    f.table_bytes = 0;
    // lift=kernel: read B, write and read B'; fused: B only (re-read through the caches).
    f.b_unique_bytes = double(p.k) * n * io + (s.lift == SlideLift::Kernel ? 2.0 * lifted_b : 0.0);
    // Each row block reads all of the lifted B once, about half of it from L1 (the blocks that
    // share a multiprocessor walk the same chunks at about the same time); the fused gathers
    // touch one 32-byte sector per token of a tile for each of a lane group's 4 fragment
    // registers per chunk, each an L1 wavefront, at kGatherSectorWeight times the L2's cost.
    const double tokens_per_tile = std::min(8.0, n / col_tiles);
    // split=wg: all of it from L2 (bulk copies bypass L1); with clusters one L2 read of each B
    // step per cluster (multicast).
    // split=wg with lift=fused: each row block reads the original B from L2 once.
    f.b_sector_bytes =
        wg_fused ? grid_x * raw_b
        : s.lift == SlideLift::Kernel
            ? grid_x / s.cluster * lifted_b * (s.split == SlideSplit::Group ? 1.0 : kLiftedBFromL2)
            : grid_x * chunks * col_tiles * 4.0 * 32.0 * tokens_per_tile * kGatherSectorWeight;
    f.c_bytes = double(p.m) * n * io;
    // K parts: every part adds M·N floats into the workspace; the finish reads and re-zeroes it.
    if (s.ksplit > 1) f.c_bytes += double(p.m) * n * 4.0 * (s.ksplit + 2);
    // spread: the rows shared by two blocks (about one per block) add through the workspace.
    if (s.spread > 0)
      f.c_bytes += std::min(double(p.m), s.spread * 16.0 * s.wg_tiles()) * n * 4.0 * 4.0;
    f.dram_bytes = f.a_bytes * (s.split == SlideSplit::Group ? kBulkStreamWg : 1.0) +
                   f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.b_sector_bytes + f.c_bytes;
    f.warp_workers = grid_x * grid_y * s.warps;
    const double mmas = row_tiles * chunks * col_tiles;
    f.warp_iters_total = mmas;
    // The slowest warp's load steps (unroll chunks each): split=k warps share a part's chunks,
    // split=rows warps each walk all of them.
    f.warp_iters_max = std::ceil(part / ((s.split == SlideSplit::K ? s.warps : 1) * step));
    f.step_latency_cycles = s.split == SlideSplit::K      ? kStepCyclesK
                            : s.split == SlideSplit::Rows ? kStepCyclesRows
                            : wg_fused && s.ksplit == 1
                                ? kStepCyclesWg * kFusedRingBuffersWg / (s.stages + 1)
                            : s.stages < 3  ? kStepCyclesWg
                            : s.ksplit == 1 ? kStepCyclesWg * kDeepRingWg
                                            : kStepCyclesWg * kDeepRingPartsWg;
    if (s.lift == SlideLift::Fused && !wg_fused)
      f.step_latency_cycles += s.unroll * s.n_tiles * 4.0 * kGatherCyclesPerToken * tokens_per_tile;
    f.warp_iters_mean = f.warp_iters_max;
    f.lane_efficiency = 1.0;
    f.column_efficiency = std::min(1.0, n / (col_tiles * 8.0));
    f.atomics = s.ksplit > 1 ? double(p.m) * n * s.ksplit : 0.0;
    f.shuffles = 0;
    f.block_syncs = grid_x * grid_y *
                    (s.split == SlideSplit::K      ? 1.0
                     : s.split == SlideSplit::Rows ? 2.0 * part / step
                                                   : part / step);
    f.blocks = grid_x * grid_y;
    f.threads_per_block = s.threads_per_block();
    f.registers_estimate = std::min(255, (slide_registers(p, s) + 7) / 8 * 8);
    // split=wg's ring of whole steps can hold a multiprocessor's shared memory: one block per
    // multiprocessor past half of it. (The other splits stay within 48 KiB.)
    if (s.split == SlideSplit::Group) f.shared_bytes = slide_shared_bytes(p, s);
    KernelShape k;
    k.warps_per_block = s.warps;
    k.thread_cols = 1;  // one mma.sp issue per tile, whatever its width
    k.vector_width = 8;
    k.prologue = s.lift == SlideLift::Kernel;  // the b_transform launch
    return k;
  }
  bool global_formula() const override { return false; }
};

}  // namespace

const CostFamily& slide_cost_family() {
  static const SlideCost f;
  return f;
}

}  // namespace sparsegen
