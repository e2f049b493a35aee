// The general family's cost description: warp-level work simulated over the packed row lengths,
// exactly as the division deals tasks, and the bytes of the padded CSR.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "costmodel/family.h"
#include "costmodel/schedule_features.h"
#include "ir/general_schedule.h"
#include "ir/int_math.h"

namespace sparsegen {
namespace {

double log2i(int x) {
  return std::log2(static_cast<double>(std::max(1, x)));
}

// Warp-level work of a GeneralSchedule, simulated over the packed row lengths.
struct Work {
  double total = 0;  // sum over warp workers of warp iterations, one column pass
  double max = 0;    // max over warp workers, one pass
  double workers = 0;
  double warp_tasks = 0;
};

// f(L) for row lengths L, tabulated below kTabulated (most rows of real matrices): the per-row
// quantities below are two or three integer divisions by run-time values, and the simulation
// evaluates them for every row of every distinct schedule.
class PerLength {
 public:
  static constexpr int64_t kTabulated = 1024;
  template <typename F>
  explicit PerLength(F f) : f_(f) {
    table_.resize(static_cast<size_t>(kTabulated));
    for (int64_t L = 0; L < kTabulated; ++L) table_[static_cast<size_t>(L)] = f(L);
  }
  int64_t operator()(int64_t L) const {
    return L < kTabulated ? table_[static_cast<size_t>(L)] : f_(L);
  }

 private:
  std::function<int64_t(int64_t)> f_;
  std::vector<int64_t> table_;
};

// Distinct row lengths with their counts: where no block holds two rows, the simulation depends
// on each row alone, so it walks these (a graph's few thousand) instead of its millions of rows.
using LengthCounts = std::vector<std::pair<int64_t, int64_t>>;
LengthCounts length_counts(const std::vector<int64_t>& sorted) {
  LengthCounts out;
  for (int64_t L : sorted) {
    if (out.empty() || out.back().first != L)
      out.emplace_back(L, 1);
    else
      ++out.back().second;
  }
  return out;
}

// `rows`: the row lengths in packed order, each padded to a multiple of `pad` as the packer does;
// `counts`: the same lengths as (length, rows) pairs. Every quantity is an integer count, so the
// double sums are exact in any order.
Work simulate(const GeneralSchedule& g, const FormatStats& fs, const std::vector<int64_t>& rows,
              const LengthCounts& counts, int64_t pad) {
  Work w;
  const int64_t W = g.warps_per_block, G = g.groups_per_warp();
  const LevelSplit& bs = g.at(Level::Block);
  const LevelSplit& ws = g.at(Level::Warp);
  const LevelSplit& ts = g.at(Level::Thread);
  const int64_t zt = std::max<int64_t>(1, ts.amount);
  w.workers = double(fs.block_tasks) * double(W);

  switch (bs.kind) {
    case WorkSplit::Nnz: {
      // Exact tiling: every warp worker gets one chunk of G*zt, zt iterations.
      w.total = double(fs.block_tasks) * double(W) * double(zt);
      w.max = fs.block_tasks > 0 ? double(zt) : 0.0;
      w.warp_tasks = double(fs.block_tasks) * double(W);
      return w;
    }
    case WorkSplit::Row: {
      // One row per block; warp chunks of zw = G*zt dealt round-robin to W warps: the warps do
      // all `chunks` of them together, the first one ceil(chunks / W).
      const int64_t zw = std::max<int64_t>(1, ws.amount);
      const double per_chunk = double(std::min(zt, zw));
      for (const auto& [L, n] : counts) {
        const int64_t chunks = ceil_div(round_up(L, pad), zw);
        w.warp_tasks += double(chunks) * double(n);
        w.total += double(chunks) * per_chunk * double(n);
        w.max = std::max(w.max, double(ceil_div(chunks, W)) * per_chunk);
      }
      return w;
    }
    case WorkSplit::Rows: {
      const int64_t rb = std::max<int64_t>(1, bs.amount);
      const int64_t R = static_cast<int64_t>(rows.size());
      const PerLength packed([&](int64_t L) { return round_up(L, pad); });
      // Iterations of one row under warp Row with thread Nnz(zt): G groups share it.
      const PerLength row_iters(
          [&](int64_t L) { return ceil_div(ceil_div(round_up(L, pad), zt), G) * zt; });
      if (rb == 1) {
        // One row per block: its first warp takes it whole (warp Row: row_iters; warp Rows: one
        // task whose first group holds the row).
        for (const auto& [L, n] : counts) {
          const double v = double(ws.kind == WorkSplit::Row ? row_iters(L) : packed(L));
          w.total += v * double(n);
          w.max = std::max(w.max, v);
          w.warp_tasks += double(n);
        }
        return w;
      }
      // Integer loads (the counts are integers: exact, and cheaper than doubles per row).
      std::vector<int64_t> load(static_cast<size_t>(W)), group(static_cast<size_t>(G));
      int64_t total = 0, longest = 0, tasks = 0;
      const int64_t rw = std::max<int64_t>(1, ws.amount);
      const int64_t rt = ts.kind == WorkSplit::Rows ? std::max<int64_t>(1, ts.amount) : 1;
      for (int64_t b0 = 0; b0 < R; b0 += rb) {
        const int64_t b1 = std::min(R, b0 + rb);
        if (ws.kind == WorkSplit::Row) {
          // Row r of the block to warp (r - b0) mod W.
          int64_t k = 0;
          for (int64_t r = b0; r < b1; ++r) {
            load[static_cast<size_t>(k)] += row_iters(rows[static_cast<size_t>(r)]);
            if (++k == W) k = 0;
          }
          tasks += b1 - b0;
        } else {
          // Warp Rows(rw): thread tasks of rt rows (1 for thread Row) dealt to G groups; a warp
          // task lasts as long as its slowest group; warp tasks dealt round-robin to W warps.
          int64_t task = 0;
          for (int64_t t0 = b0; t0 < b1; t0 += rw) {
            const int64_t t1 = std::min(b1, t0 + rw);
            int64_t slowest = 0;
            if (rt == 1 && rw <= G) {
              // Every row of the task its own group: the task lasts as its longest row.
              for (int64_t r = t0; r < t1; ++r)
                slowest = std::max(slowest, packed(rows[static_cast<size_t>(r)]));
            } else {
              // Only the first `used` groups get rows (a task of few rows leaves most of G
              // idle): clearing and scanning just those keeps the walk O(rows).
              const auto used = static_cast<std::ptrdiff_t>(std::min(G, ceil_div(t1 - t0, rt)));
              std::fill(group.begin(), group.begin() + used, int64_t{0});
              int64_t gi = 0;
              for (int64_t r0 = t0; r0 < t1; r0 += rt) {
                for (int64_t r = r0; r < std::min(t1, r0 + rt); ++r)
                  group[static_cast<size_t>(gi)] += packed(rows[static_cast<size_t>(r)]);
                if (++gi == G) gi = 0;
              }
              slowest = *std::max_element(group.begin(), group.begin() + used);
            }
            load[static_cast<size_t>(task)] += slowest;
            if (++task == W) task = 0;
            ++tasks;
          }
        }
        for (int64_t& x : load) {  // the block ends: its warps' loads
          total += x;
          longest = std::max(longest, x);
          x = 0;
        }
      }
      w.total = double(total);
      w.max = double(longest);
      w.warp_tasks = double(tasks);
      return w;
    }
  }
  return w;
}

int reduction_factor(ReductionKind r) {
  switch (r) {
    case ReductionKind::None:
      return 0;
    case ReductionKind::Total:
      return 1;
    case ReductionKind::Bitmap:
      return 2;
    case ReductionKind::Segment:
      return 3;
  }
  return 0;
}

class GeneralCost final : public CostFamily {
 public:
  std::string_view name() const override { return GeneralSchedule::kFamily; }
  // The (block, warp, thread) split and the reduction chain (thread > warp > block), the grouping
  // tests/gpu/gpu_correctness_test.cpp calls "kinds", e.g. "rows/row/nnz red=total>total>none".
  std::string strategy(const Schedule& s) const override {
    const GeneralSchedule& g = s.as<GeneralSchedule>();
    return fmt::format("{}/{}/{} red={}>{}>{}", to_string(g.at(Level::Block).kind),
                       to_string(g.at(Level::Warp).kind), to_string(g.at(Level::Thread).kind),
                       to_string(g.reduction(Level::Thread)), to_string(g.reduction(Level::Warp)),
                       to_string(g.reduction(Level::Block)));
  }
  KernelShape features(ScheduleFeatures& f, const Problem& p, const Schedule& s,
                       const FormatStats& fs, const MatrixFeatures& mf,
                       const RowProfile& rows) const override {
    const GeneralSchedule& g = s.as<GeneralSchedule>();
    const double db = dtype_bytes(p.dtype);
    const double n = double(std::max<int64_t>(p.n, 1));
    const double tiles = double(std::max<int64_t>(fs.col_tiles, 1));
    const int wc = g.warp_cols();
    const double passes = double(std::max(1, g.block_cols / std::max(1, wc)));
    const bool atomic = g.output() == OutputMode::Atomic;

    // The work simulation walks every row (block Nnz splits tile exactly and walk none). It
    // depends on the splits, warps, groups, padding and row order only: computed once per such
    // key and matrix, shared by the schedules that differ in columns, vectors or interleaving.
    const LevelSplit &bs = g.at(Level::Block), &ws = g.at(Level::Warp), &ts = g.at(Level::Thread);
    const std::string sim_key = fmt::format(
        "general.simulate;{}:{};{}:{};{}:{};W{};G{};pad{};sort{};tasks{}", to_string(bs.kind),
        bs.amount, to_string(ws.kind), ws.amount, to_string(ts.kind), ts.amount, g.warps_per_block,
        g.groups_per_warp(), g.pad, g.sort_rows, fs.block_tasks);
    const Work w = rows.memo->get<Work>(sim_key, [&] {
      const LengthCounts& counts = rows.memo->get<LengthCounts>(
          "general.length_counts", [&] { return length_counts(rows.sorted); });
      return simulate(g, fs, g.sort_rows ? rows.sorted : rows.lengths, counts, g.pad);
    });

    const double nnz = double(fs.nnz), nnzp = double(fs.nnz_padded);
    f.nnz = nnz;
    f.pad_overhead = fs.pad_overhead();
    f.a_bytes = nnzp * (db + 4.0) * tiles;
    f.table_bytes = 8.0 * (double(fs.block_tasks) + w.warp_tasks + double(fs.rows)) +
                    (g.reduction(Level::Thread) == ReductionKind::Bitmap ? nnzp / 8.0 : 0.0);
    f.b_unique_bytes = double(p.k) * n * db;
    // B gathers: a group reads min(warp_cols, N) columns of one B row (row-major: contiguous, whole
    // 32-byte sectors; neighbouring nonzeros share a sector only when N*dtype*gap < 32) or, column-
    // major, one sector per column unless the column gap packs neighbours into a sector.
    const double gap = mf.mean_col_gap > 0 ? mf.mean_col_gap : 32.0;
    const double wc_eff = std::min<double>(wc, n);
    const double col_visits = nnzp * passes * tiles;  // (nonzero, pass) pairs
    if (p.b_layout == Layout::RowMajor) {
      const double contiguous = wc_eff * db;
      const double sectors = std::ceil(contiguous / 32.0) * 32.0;
      f.b_sector_bytes = col_visits * std::max(contiguous, std::min(sectors, n * db * gap));
    } else {
      f.b_sector_bytes = col_visits * wc_eff * std::min(32.0, std::max(db, gap * db));
    }
    f.c_bytes = double(p.m) * n * db * (atomic ? 2.0 : 1.0);
    f.dram_bytes = f.a_bytes + f.table_bytes + f.b_unique_bytes + f.c_bytes;
    f.l2_bytes = f.a_bytes + f.table_bytes + f.b_sector_bytes + f.c_bytes;

    f.warp_workers = w.workers * tiles;
    f.warp_iters_total = w.total * passes * tiles;
    f.warp_iters_max = w.max * passes;
    f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
    const double slots = w.total * double(g.groups_per_warp());
    f.lane_efficiency = slots > 0 ? std::min(1.0, nnz / slots) : 1.0;
    f.column_efficiency = n / (tiles * double(std::max(1, g.block_cols)));

    const int64_t nonempty_rows = !atomic ? 0 : rows.memo->get<int64_t>("rows.nonempty", [&] {
      return static_cast<int64_t>(
          std::count_if(rows.lengths.begin(), rows.lengths.end(), [](int64_t L) { return L > 0; }));
    });
    f.atomics = atomic ? (double(nonempty_rows) + double(fs.block_tasks)) * n : 0.0;
    f.shuffles = w.warp_tasks * log2i(g.groups_per_warp()) * g.thread_cols * passes * tiles *
                 reduction_factor(g.reduction(Level::Warp));
    f.block_syncs = g.reduction(Level::Block) != ReductionKind::None && g.warps_per_block > 1
                        ? double(fs.block_tasks) * tiles * passes
                        : 0.0;
    f.blocks = double(fs.block_tasks) * tiles;

    // Registers from accumulators, vector loads and the reduction state.
    f.threads_per_block = g.threads_per_block();
    int regs = 24 + 2 * g.thread_cols + 2 * g.vector_width +
               (g.reduction(Level::Thread) == ReductionKind::Bitmap ? 8 : 0) +
               (g.reduction(Level::Warp) == ReductionKind::Segment ? 8 : 0);
    f.registers_estimate = std::min(255, (regs + 7) / 8 * 8);

    KernelShape k;
    k.warps_per_block = g.warps_per_block;
    k.thread_cols = g.thread_cols;
    k.vector_width = g.vector_width;
    k.group_threads = g.group_threads;
    k.interleave = g.interleave;
    k.sort_rows = g.sort_rows;
    k.prologue = atomic;
    return k;
  }
};

}  // namespace

const CostFamily& general_cost_family() {
  static const GeneralCost f;
  return f;
}

}  // namespace sparsegen
