#include "costmodel/schedule_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/bitmap_tc_schedule.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"

namespace sparsegen {

namespace {

int64_t round_up(int64_t x, int64_t m) {
  return m <= 1 ? x : (x + m - 1) / m * m;
}
int64_t ceil_div(int64_t x, int64_t m) {
  return (x + m - 1) / m;
}
double log2i(int x) {
  return std::log2(static_cast<double>(std::max(1, x)));
}

// Known DRAM bandwidths (GB/s) by a substring of the board name, most specific first.
struct BoardBandwidth {
  const char* name;
  double gbs;
};
constexpr BoardBandwidth kBoards[] = {
    {"H200", 4800},      {"H100 PCIe", 2000}, {"H100 NVL", 3900},
    {"H100", 3350},      {"GH200", 4000},     {"A100-SXM4-80GB", 2039},
    {"A100 80GB", 2039}, {"A100", 1555},      {"L40S", 864},
    {"L40", 864},        {"RTX 4090", 1008},  {"A10", 600},
    {"L4", 300},         {"V100", 900},       {"T4", 320},
};

// Cycles one warp iteration costs the issue slots of an SM sub-partition (loads of index and
// value, thread_cols B loads and FMAs, loop overhead), and the latency of one dependent iteration
// (an L2 hit for the B gather, partly overlapped). Rough constants: the regression corrects them.
double issue_cycles(const GeneralSchedule& g) {
  return 4.0 + 2.0 * g.thread_cols;
}
constexpr double kIterLatencyCycles = 40.0;
constexpr double kLaunchUs = 3.0;    // one launch, empty-kernel scale on Hopper
constexpr double kPrologueUs = 2.0;  // the Atomic prologue (C = beta*C) launch
constexpr double kAtomicsPerSmCycle = 0.5;

// Warp-level work of a GeneralSchedule, simulated over the packed row lengths.
struct Work {
  double total = 0;  // sum over warp workers of warp iterations, one column pass
  double max = 0;    // max over warp workers, one pass
  double workers = 0;
  double warp_tasks = 0;
};

Work simulate(const GeneralSchedule& g, const FormatStats& fs, const std::vector<int64_t>& packed) {
  Work w;
  const int64_t W = g.warps_per_block, G = g.groups_per_warp();
  const LevelSplit& bs = g.at(Level::Block);
  const LevelSplit& ws = g.at(Level::Warp);
  const LevelSplit& ts = g.at(Level::Thread);
  const int64_t zt = std::max<int64_t>(1, ts.amount);
  w.workers = double(fs.block_tasks) * double(W);
  std::vector<double> per_worker(static_cast<size_t>(W));
  auto flush_block = [&] {
    for (double& x : per_worker) {
      w.total += x;
      w.max = std::max(w.max, x);
      x = 0;
    }
  };
  // Iterations of one row of length L under warp Row with thread Nnz(zt): G groups share it.
  auto row_iters = [&](int64_t L) { return double(ceil_div(ceil_div(L, zt), G) * zt); };

  switch (bs.kind) {
    case WorkSplit::Nnz: {
      // Exact tiling: every warp worker gets one chunk of G*zt, zt iterations.
      w.total = double(fs.block_tasks) * double(W) * double(zt);
      w.max = fs.block_tasks > 0 ? double(zt) : 0.0;
      w.warp_tasks = double(fs.block_tasks) * double(W);
      return w;
    }
    case WorkSplit::Row: {
      // One row per block; warp chunks of zw = G*zt dealt round-robin to W warps.
      const int64_t zw = std::max<int64_t>(1, ws.amount);
      for (int64_t L : packed) {
        const int64_t chunks = ceil_div(L, zw);
        w.warp_tasks += double(chunks);
        for (int64_t k = 0; k < W; ++k) {
          const int64_t mine = chunks > k ? ceil_div(chunks - k, W) : 0;
          per_worker[static_cast<size_t>(k)] = double(mine * std::min(zt, zw));
        }
        flush_block();
      }
      return w;
    }
    case WorkSplit::Rows: {
      const int64_t rb = std::max<int64_t>(1, bs.amount);
      const int64_t R = static_cast<int64_t>(packed.size());
      std::vector<double> group(static_cast<size_t>(G));
      for (int64_t b0 = 0; b0 < R; b0 += rb) {
        const int64_t b1 = std::min(R, b0 + rb);
        if (ws.kind == WorkSplit::Row) {
          for (int64_t r = b0; r < b1; ++r) {
            per_worker[static_cast<size_t>((r - b0) % W)] += row_iters(packed[size_t(r)]);
            w.warp_tasks += 1;
          }
        } else {
          // Warp Rows(rw): thread tasks of rt rows (1 for thread Row) dealt to G groups; a warp
          // task lasts as long as its slowest group.
          const int64_t rw = std::max<int64_t>(1, ws.amount);
          const int64_t rt = ts.kind == WorkSplit::Rows ? std::max<int64_t>(1, ts.amount) : 1;
          int64_t task = 0;
          for (int64_t t0 = b0; t0 < b1; t0 += rw, ++task) {
            const int64_t t1 = std::min(b1, t0 + rw);
            std::fill(group.begin(), group.end(), 0.0);
            int64_t tt = 0;
            for (int64_t r0 = t0; r0 < t1; r0 += rt, ++tt)
              for (int64_t r = r0; r < std::min(t1, r0 + rt); ++r)
                group[static_cast<size_t>(tt % G)] += double(packed[size_t(r)]);
            per_worker[static_cast<size_t>(task % W)] +=
                *std::max_element(group.begin(), group.end());
            w.warp_tasks += 1;
          }
        }
        flush_block();
      }
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

double safe_log(double x, double floor) {
  return std::log(std::max(x, floor));
}

void finish_features(ScheduleFeatures& f, const GeneralSchedule& g, const Problem& p,
                     const MatrixFeatures& mf, const DeviceProfile& dev, bool atomic);

}  // namespace

std::string DeviceProfile::arch() const {
  return fmt::format("sm_{}{}", cc_major, cc_minor);
}

DeviceProfile device_profile(const std::string& name, int cc_major, int cc_minor, int sm_count,
                             int64_t l2_bytes, int clock_khz, int max_threads_per_sm,
                             int registers_per_sm, bool* bandwidth_guessed) {
  DeviceProfile d;
  d.name = name;
  d.cc_major = cc_major;
  d.cc_minor = cc_minor;
  if (sm_count > 0) d.sm_count = sm_count;
  if (l2_bytes > 0) d.l2_bytes = l2_bytes;
  if (clock_khz > 0) d.clock_ghz = clock_khz / 1e6;
  if (max_threads_per_sm > 0) d.max_threads_per_sm = max_threads_per_sm;
  if (registers_per_sm > 0) d.registers_per_sm = registers_per_sm;
  bool guessed = true;
  for (const BoardBandwidth& b : kBoards) {
    if (name.find(b.name) != std::string::npos) {
      d.dram_gbs = b.gbs;
      guessed = false;
      break;
    }
  }
  if (guessed) d.dram_gbs = 3350.0 * d.sm_count / 132.0;
  d.l2_gbs = 3.0 * d.dram_gbs;
  if (bandwidth_guessed) *bandwidth_guessed = guessed;
  return d;
}

RowProfile row_profile(std::vector<int64_t> lengths) {
  RowProfile rp;
  rp.sorted = lengths;
  std::sort(rp.sorted.begin(), rp.sorted.end(), std::greater<>());
  rp.lengths = std::move(lengths);
  return rp;
}

RowProfile row_profile(const CsrMatrix& a) {
  std::vector<int64_t> len(static_cast<size_t>(a.rows));
  for (int64_t r = 0; r < a.rows; ++r) len[static_cast<size_t>(r)] = a.row_length(r);
  return row_profile(std::move(len));
}

FormatStats candidate_format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s,
                                   std::map<int, FormatStats>* macko_cache) {
  if (s.family() == ScheduleFamily::General) return compute_format_stats(a, p, s);
  if (s.family() == ScheduleFamily::Macko) {
    const MackoSchedule& m = s.macko();
    FormatStats fs;
    if (macko_cache != nullptr) {
      if (auto it = macko_cache->find(m.delta_bits); it != macko_cache->end()) fs = it->second;
    }
    if (fs.rows == 0 && fs.nnz == 0) {
      const MackoStats st = macko_stats(a, m.delta_bits);
      fs.rows = a.rows;
      fs.nnz = st.nnz;
      fs.nnz_padded = std::max(st.slots, st.nnz);
      for (int64_t r = 0; r < a.rows; ++r)
        fs.max_row_length = std::max(fs.max_row_length, a.row_length(r));
      if (macko_cache != nullptr) (*macko_cache)[m.delta_bits] = fs;
    }
    fs.block_tasks = macko_grid_x(p, m);
    fs.col_tiles = macko_grid_y(p, m);
    return fs;
  }
  if (s.family() == ScheduleFamily::BitmapTc) {  // one bitmap-tile packing serves every schedule
    constexpr int kBitmapKey = -1;
    FormatStats fs;
    if (macko_cache != nullptr) {
      if (auto it = macko_cache->find(kBitmapKey); it != macko_cache->end()) fs = it->second;
    }
    if (fs.rows == 0 && fs.nnz == 0) {
      fs = compute_format_stats(a, p, s);
      if (macko_cache != nullptr) (*macko_cache)[kBitmapKey] = fs;
    }
    fs.block_tasks = bitmap_tc_grid_x(p, s.bitmap_tc());
    fs.col_tiles = bitmap_tc_grid_y(p, s.bitmap_tc());
    return fs;
  }
  FormatStats fs;  // a family this file does not know yet: rows and nonzeros only
  fs.rows = a.rows;
  fs.nnz = fs.nnz_padded = a.nnz();
  fs.block_tasks = a.rows;
  fs.col_tiles = 1;
  return fs;
}

std::string strategy_family(const Schedule& s) {
  // Staged-B MACKO kernels run a different loop (and pay a copy per block): their own formula.
  if (s.family() == ScheduleFamily::Macko && s.macko().staged()) return "macko/shared";
  if (s.family() != ScheduleFamily::General) return std::string(to_string(s.family()));
  const GeneralSchedule& g = s.general();
  return fmt::format("{}/{}/{} red={}>{}>{}", to_string(g.at(Level::Block).kind),
                     to_string(g.at(Level::Warp).kind), to_string(g.at(Level::Thread).kind),
                     to_string(g.reduction(Level::Thread)), to_string(g.reduction(Level::Warp)),
                     to_string(g.reduction(Level::Block)));
}

const std::vector<std::string>& ScheduleFeatures::names() {
  static const std::vector<std::string> n = {"log_roofline_us",
                                             "log_dram_mb",
                                             "log_l2_mb",
                                             "log_iters_per_sm",
                                             "log_iters_max",
                                             "log_imbalance",
                                             "lane_efficiency",
                                             "column_efficiency",
                                             "pad_overhead",
                                             "log1p_atomics_k",
                                             "log1p_shuffles_per_nnz",
                                             "log1p_block_syncs_k",
                                             "log_blocks",
                                             "log1p_waves",
                                             "occupancy",
                                             "log2_vector",
                                             "log2_thread_cols",
                                             "log2_group",
                                             "log2_warps",
                                             "interleave",
                                             "sort_rows",
                                             "log_n",
                                             "dtype_16bit",
                                             "b_col_major",
                                             "c_col_major",
                                             "log_segment_ratio",
                                             "row_cv",
                                             "log1p_row_mean"};
  return n;
}

namespace {

// The parameters of a non-general (row-streaming, e.g. MACKO) body, read generically so that this
// file builds with whatever alternatives ScheduleBody has: each field the body lacks keeps the
// default here.
struct StreamParams {
  int warps_per_block = 4, warps_per_row = 1, unroll = 1, cols = 1, delta_bits = 32,
      vector_bytes = 16;
  bool staged = false;  // B copied to shared memory once per block
  int stage_row_bytes = 2;
  int rows_per_warp = 1;
  bool sort_rows = false;
};
template <class B>
StreamParams stream_params(const B& b) {
  StreamParams q;
  if constexpr (requires { b.warps_per_block; }) q.warps_per_block = b.warps_per_block;
  if constexpr (requires { b.warps_per_row; }) q.warps_per_row = b.warps_per_row;
  if constexpr (requires { b.unroll; }) q.unroll = b.unroll;
  if constexpr (requires { b.cols; }) q.cols = b.cols;
  if constexpr (requires { b.delta_bits; }) q.delta_bits = b.delta_bits;
  if constexpr (requires { b.vector_bytes; }) q.vector_bytes = b.vector_bytes;
  if constexpr (requires { b.stage; }) {
    q.staged = b.staged();
    q.stage_row_bytes = b.stage_row_bytes();
  }
  if constexpr (requires { b.rows_per_warp; }) q.rows_per_warp = b.rows_per_warp;
  if constexpr (requires { b.sort_rows; }) q.sort_rows = b.sort_rows;
  return q;
}

// A row-streaming kernel: warps_per_row warps per row, each lane loading unroll vectors of
// vector_bytes per step, deltas of delta_bits per value, cols dense columns per thread.
void stream_features(ScheduleFeatures& f, const StreamParams& q, const Problem& p,
                     const FormatStats& fs, const MatrixFeatures& mf, const RowProfile& rows) {
  const double db = dtype_bytes(p.dtype);
  const double n = double(std::max<int64_t>(p.n, 1));
  const int cols = std::max(1, q.cols);
  const double tiles = std::ceil(n / cols);
  const double per_step = 32.0 * std::max(1, q.unroll) * std::max(1.0, q.vector_bytes / db);
  const int wpr = std::max(1, q.warps_per_row);
  double total = 0, mx = 0;
  for (int64_t L : rows.lengths) {
    const double it = std::ceil(double(L) / (per_step * wpr));
    total += it * wpr;
    mx = std::max(mx, it);
  }
  const double nnz = double(fs.nnz), nnzp = double(std::max(fs.nnz_padded, fs.nnz));
  f.nnz = nnz;
  f.pad_overhead = fs.pad_overhead();
  f.a_bytes = nnzp * (db + q.delta_bits / 8.0) * tiles;
  f.table_bytes = 8.0 * double(fs.rows);
  f.b_unique_bytes = double(p.k) * n * db;
  const double gap = mf.mean_col_gap > 0 ? mf.mean_col_gap : 32.0;
  // Staged: gathers hit shared memory; L2 instead serves one copy of B per block.
  f.b_sector_bytes = q.staged ? double(fs.block_tasks) * double(p.k) * q.stage_row_bytes
                              : nnzp * tiles * cols * std::min(32.0, std::max(db, gap * db));
  f.c_bytes = double(p.m) * n * db;
  f.dram_bytes = f.a_bytes + f.table_bytes + f.b_unique_bytes + f.c_bytes;
  f.l2_bytes = f.a_bytes + f.table_bytes + f.b_sector_bytes + f.c_bytes;
  const double rpw = std::max(1, q.rows_per_warp);
  f.warp_workers = std::ceil(double(rows.lengths.size()) / rpw) * wpr * tiles;
  f.warp_iters_total = total * tiles;
  f.warp_iters_max = mx * rpw;
  f.warp_iters_mean = f.warp_workers > 0 ? f.warp_iters_total / f.warp_workers : 0.0;
  f.lane_efficiency = total > 0 ? std::min(1.0, nnz / (total * per_step)) : 1.0;
  f.column_efficiency = n / (tiles * cols);
  f.shuffles = (total * 5.0 + double(rows.lengths.size()) * 5.0 * cols) * tiles;
  f.block_syncs = wpr > 1 ? double(rows.lengths.size()) * tiles : 0.0;
  f.blocks = double(fs.block_tasks) * tiles;
  f.threads_per_block = std::max(1, q.warps_per_block) * 32;
  f.registers_estimate = std::min(255, (32 + 2 * cols + 4 * q.unroll + 7) / 8 * 8);
}

// A bitmap-tile tensor-core kernel: every warp walks its row tiles' 64-column tiles (dense-shaped
// work: four 16x16 operand decodes and 4·N/8 mma per tile step), each block copies its K range
// of B once, split K adds through an fp32 workspace.
void tile_features(ScheduleFeatures& f, const BitmapTcSchedule& s, const Problem& p,
                   const FormatStats& fs) {
  const double db = dtype_bytes(p.dtype);
  const double n = double(std::max<int64_t>(p.n, 1));
  const double row_tiles = std::ceil(double(p.m) / double(kBitmapTileRows));
  const double col_tiles = std::ceil(double(p.k) / double(kBitmapTileCols));
  const double part = double(bitmap_tc_part_tiles(int64_t(col_tiles), s.ksplit));
  const double grid_x = double(bitmap_tc_grid_x(p, s));
  const double tiles = row_tiles * col_tiles;
  f.nnz = double(fs.nnz);
  f.pad_overhead = fs.pad_overhead();
  f.a_bytes = double(fs.nnz_padded) * db + tiles * (kBitmapTileRows * 8 + 4);
  f.table_bytes = 0;
  f.b_unique_bytes = double(p.k) * n * db;
  f.b_sector_bytes = grid_x * double(p.k) * n * db;
  const bool atomic = s.ksplit > 1;
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
}

}  // namespace

ScheduleFeatures schedule_features(const Problem& p, const Schedule& s, const FormatStats& fs,
                                   const MatrixFeatures& mf, const RowProfile& rows,
                                   const DeviceProfile& dev) {
  ScheduleFeatures f;
  f.family = strategy_family(s);
  const GeneralSchedule* gp = std::get_if<GeneralSchedule>(&s.body());
  if (const BitmapTcSchedule* bp = std::get_if<BitmapTcSchedule>(&s.body())) {
    tile_features(f, *bp, p, fs);
    GeneralSchedule g;  // stand-in for the shared occupancy / roofline code below
    g.warps_per_block = bp->warps_per_block;
    g.thread_cols = 8;
    g.vector_width = 8;
    finish_features(f, g, p, mf, dev, bp->ksplit > 1);
    return f;
  }
  if (gp == nullptr) {
    StreamParams q;
    std::visit([&](const auto& b) { q = stream_params(b); }, s.body());
    stream_features(f, q, p, fs, mf, rows);
    GeneralSchedule g;  // stand-in for the shared occupancy / roofline / vector code below
    g.warps_per_block = std::clamp(q.warps_per_block, 1, 32);
    g.thread_cols = q.cols;
    g.vector_width = std::max(1, q.vector_bytes / dtype_bytes(p.dtype));
    g.sort_rows = q.sort_rows;
    finish_features(f, g, p, mf, dev, false);
    return f;
  }
  const GeneralSchedule& g = *gp;
  const double db = dtype_bytes(p.dtype);
  const double n = double(std::max<int64_t>(p.n, 1));
  const double tiles = double(std::max<int64_t>(fs.col_tiles, 1));
  const int wc = g.warp_cols();
  const double passes = double(std::max(1, g.block_cols / std::max(1, wc)));
  const bool atomic = g.output() == OutputMode::Atomic;

  // Packed row lengths, in packed order (empty rows dropped for block Nnz, as the packer does).
  std::vector<int64_t> packed;
  const std::vector<int64_t>& src = g.sort_rows ? rows.sorted : rows.lengths;
  packed.reserve(src.size());
  const bool skip_empty = g.at(Level::Block).kind == WorkSplit::Nnz;
  for (int64_t L : src)
    if (!skip_empty || L > 0) packed.push_back(round_up(L, g.pad));
  const Work w = simulate(g, fs, packed);

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

  int64_t nonempty_rows = 0;
  for (int64_t L : rows.lengths) nonempty_rows += L > 0;
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
  finish_features(f, g, p, mf, dev, atomic);
  return f;
}

namespace {

// Occupancy, roofline and the regression vector from the raw quantities already in f.
void finish_features(ScheduleFeatures& f, const GeneralSchedule& g, const Problem& p,
                     const MatrixFeatures& mf, const DeviceProfile& dev, bool atomic) {
  const double db = dtype_bytes(p.dtype);
  const double n = double(std::max<int64_t>(p.n, 1));
  const int regs = f.registers_estimate;
  const int by_threads = dev.max_threads_per_sm / std::max(1, f.threads_per_block);
  const int by_regs = dev.registers_per_sm / std::max(1, regs * f.threads_per_block);
  f.blocks_per_sm = std::max(1, std::min({dev.max_blocks_per_sm, by_threads, by_regs}));
  const double max_warps_sm = dev.max_threads_per_sm / 32.0;
  f.occupancy = std::min(1.0, f.blocks_per_sm * g.warps_per_block / max_warps_sm);
  f.waves = f.blocks / (double(dev.sm_count) * f.blocks_per_sm);

  // Roofline (microseconds).
  const double cyc_to_us = 1.0 / (dev.clock_ghz * 1e3);
  const double t_dram = f.dram_bytes / (dev.dram_gbs * 1e3);
  const double t_l2 = f.l2_bytes / (dev.l2_gbs * 1e3);
  const double t_issue = f.warp_iters_total * issue_cycles(g) / (dev.sm_count * 4.0) * cyc_to_us;
  const double t_crit = f.warp_iters_max * kIterLatencyCycles * cyc_to_us;
  const double t_atomic = f.atomics / (dev.sm_count * kAtomicsPerSmCycle) * cyc_to_us;
  f.roofline_us = kLaunchUs + (atomic ? kPrologueUs : 0.0) +
                  std::max({t_dram, t_l2, t_issue, t_crit}) + t_atomic;

  const double nnz1 = std::max(f.nnz, 1.0);
  f.values = {
      std::log(f.roofline_us),
      safe_log(f.dram_bytes / 1e6, 1e-3),
      safe_log(f.l2_bytes / 1e6, 1e-3),
      std::log1p(f.warp_iters_total / dev.sm_count),
      std::log1p(f.warp_iters_max),
      f.warp_iters_mean > 0 ? std::log(std::max(1.0, f.warp_iters_max / f.warp_iters_mean)) : 0.0,
      f.lane_efficiency,
      f.column_efficiency,
      f.pad_overhead,
      std::log1p(f.atomics / 1e3),
      std::log1p(f.shuffles / nnz1),
      std::log1p(f.block_syncs / 1e3),
      std::log1p(f.blocks),
      std::log1p(f.waves),
      f.occupancy,
      log2i(g.vector_width),
      log2i(g.thread_cols),
      log2i(g.group_threads),
      log2i(g.warps_per_block),
      g.interleave ? 1.0 : 0.0,
      g.sort_rows ? 1.0 : 0.0,
      std::log(n),
      db < 4 ? 1.0 : 0.0,
      p.b_layout == Layout::ColMajor ? 1.0 : 0.0,
      p.c_layout == Layout::ColMajor ? 1.0 : 0.0,
      std::log(std::max(1.0, mf.segment_ratio)),
      mf.row_cv,
      std::log1p(mf.row_mean),
  };
}

}  // namespace

}  // namespace sparsegen
