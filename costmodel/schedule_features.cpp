#include "costmodel/schedule_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "costmodel/family.h"
#include "ir/diagnostics.h"

namespace sparsegen {

namespace {

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
double issue_cycles(const KernelShape& k) {
  return 4.0 + 2.0 * k.thread_cols;
}
constexpr double kIterLatencyCycles = 40.0;
// The same when B is larger than the L2 (the gathers then mostly reach DRAM): measured on an
// H200, a thread walking a 39631-long row of an R-MAT graph (B 256 MB, fp32, N = 64) spent
// about 200 cycles per nonzero.
constexpr double kIterLatencyDramCycles = 200.0;
constexpr double kLaunchUs = 3.0;    // one launch, empty-kernel scale on Hopper
constexpr double kPrologueUs = 2.0;  // the Atomic prologue (C = beta*C) launch
constexpr double kAtomicsPerSmCycle = 0.5;
// Scheduler cycles per 16 x 8 x 16 bf16 mma of a library GEMM: about 790 TFLOP/s on an H200 is
// one such mma per 1.35 SM cycles, i.e. about 5.4 cycles of each of the 4 schedulers.
constexpr double kMmaIssueCycles = 6.0;

double safe_log(double x, double floor) {
  return std::log(std::max(x, floor));
}

void finish_features(ScheduleFeatures& f, const KernelShape& k, const Problem& p,
                     const MatrixFeatures& mf, const DeviceProfile& dev);

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
  // Shared memory per multiprocessor by compute capability: 8.0 164 KiB, 8.6 / 8.9 100 KiB,
  // 9.0 228 KiB.
  if (cc_major == 8) d.shared_per_sm = cc_minor == 0 ? 164 << 10 : 100 << 10;
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
  // Longest first. Row lengths are small integers next to the row count, so a counting sort
  // (O(rows + longest row)) replaces a comparison sort of millions of rows for a graph.
  const int64_t longest = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  const bool counting = !lengths.empty() &&
                        *std::min_element(lengths.begin(), lengths.end()) >= 0 &&
                        longest <= 4 * static_cast<int64_t>(lengths.size());
  if (counting) {
    std::vector<int64_t> rows_of(static_cast<size_t>(longest) + 1, 0);
    for (int64_t l : lengths) ++rows_of[static_cast<size_t>(l)];
    rp.sorted.reserve(lengths.size());
    for (int64_t l = longest; l >= 0; --l)
      rp.sorted.insert(rp.sorted.end(), static_cast<size_t>(rows_of[static_cast<size_t>(l)]), l);
  } else {
    rp.sorted = lengths;
    std::sort(rp.sorted.begin(), rp.sorted.end(), std::greater<>());
  }
  rp.lengths = std::move(lengths);
  return rp;
}

RowProfile row_profile(const CsrMatrix& a) {
  std::vector<int64_t> len(static_cast<size_t>(a.rows));
  for (int64_t r = 0; r < a.rows; ++r) len[static_cast<size_t>(r)] = a.row_length(r);
  return row_profile(std::move(len));
}

FormatStats candidate_format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s,
                                   std::map<std::string, FormatStats>* cache) {
  const IrFamily& fam = s.family();
  const std::optional<std::string> pack = fam.stats_key(s);
  if (cache == nullptr || !pack) return fam.format_stats(a, p, s);
  const std::string key = std::string(fam.name()) + ";" + *pack;
  if (auto it = cache->find(key); it != cache->end()) return fam.restat(it->second, p, s);
  FormatStats fs = fam.format_stats(a, p, s);
  cache->emplace(key, fs);
  return fs;
}

std::string strategy_family(const Schedule& s) {
  return cost_family(s).strategy(s);
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

std::string model_key(const std::string& family, int64_t nnz) {
  return nnz < kSmallRegimeNnz ? family + std::string(kSmallRegimeSuffix) : family;
}

ScheduleFeatures schedule_features(const Problem& p, const Schedule& s, const FormatStats& fs,
                                   const MatrixFeatures& mf, const RowProfile& rows,
                                   const DeviceProfile& dev) {
  const CostFamily& fam = cost_family(s);
  ScheduleFeatures f;
  f.family = fam.strategy(s);
  f.model_key = model_key(f.family, mf.nnz);
  f.global_formula = fam.global_formula();
  const KernelShape k = fam.features(f, p, s, fs, mf, rows);
  finish_features(f, k, p, mf, dev);
  return f;
}

namespace {

// Occupancy, roofline and the regression vector from the raw quantities already in f.
void finish_features(ScheduleFeatures& f, const KernelShape& g, const Problem& p,
                     const MatrixFeatures& mf, const DeviceProfile& dev) {
  const double db = dtype_bytes(p.dtype);
  const double n = double(std::max<int64_t>(p.n, 1));
  const int regs = f.registers_estimate;
  const int by_threads = dev.max_threads_per_sm / std::max(1, f.threads_per_block);
  const int by_regs = dev.registers_per_sm / std::max(1, regs * f.threads_per_block);
  // The runtime reserves 1 KiB of shared memory per block.
  const int by_smem = f.shared_bytes > 0
                          ? static_cast<int>(dev.shared_per_sm / (f.shared_bytes + 1024))
                          : dev.max_blocks_per_sm;
  f.blocks_per_sm = std::max(1, std::min({dev.max_blocks_per_sm, by_threads, by_regs, by_smem}));
  const double max_warps_sm = dev.max_threads_per_sm / 32.0;
  f.occupancy = std::min(1.0, f.blocks_per_sm * g.warps_per_block / max_warps_sm);
  f.waves = f.blocks / (double(dev.sm_count) * f.blocks_per_sm);

  // Roofline (microseconds).
  const double cyc_to_us = 1.0 / (dev.clock_ghz * 1e3);
  const double t_dram = f.dram_bytes / (dev.dram_gbs * 1e3);
  const double t_l2 = f.l2_bytes / (dev.l2_gbs * 1e3);
  const double t_issue = f.warp_iters_total * issue_cycles(g) / (dev.sm_count * 4.0) * cyc_to_us;
  const bool b_in_l2 = double(p.k) * n * db <= double(dev.l2_bytes);
  const double t_crit =
      f.step_latency_cycles > 0
          ? f.warp_iters_max * f.step_latency_cycles * std::max(1.0, std::ceil(f.waves)) * cyc_to_us
          : f.warp_iters_max * (b_in_l2 ? kIterLatencyCycles : kIterLatencyDramCycles) * cyc_to_us;
  const double t_atomic = f.atomics / (dev.sm_count * kAtomicsPerSmCycle) * cyc_to_us;
  const double t_serial = f.serial_mmas * kMmaIssueCycles / (dev.sm_count * 4.0) * cyc_to_us;
  f.roofline_us = kLaunchUs + (g.prologue ? kPrologueUs : 0.0) + t_serial +
                  std::max({t_dram, t_l2, t_issue, t_crit}) + t_atomic;
  f.critical_floor_us = t_crit;

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

namespace sparsegen {

#define SPARSEGEN_COST_FAMILY(fn) const CostFamily& fn();
#include "costmodel/families.def"
#undef SPARSEGEN_COST_FAMILY

const std::vector<const CostFamily*>& cost_families() {
  static const std::vector<const CostFamily*> all = {
#define SPARSEGEN_COST_FAMILY(fn) &fn(),
#include "costmodel/families.def"
#undef SPARSEGEN_COST_FAMILY
  };
  return all;
}

const CostFamily& cost_family(const Schedule& s) {
  return registered_for(cost_families(), s.family_name(), "cost description");
}

}  // namespace sparsegen
