// Features of one kernel candidate (Problem, Schedule, FormatStats, MatrixFeatures, device) that
// predict its run time: what the cost model (linear_model.h) regresses on. All are O(rows) to
// compute, with no arrays packed, so the search can score hundreds of candidates per second.
//
//   const RowProfile rp = row_profile(a);                 // once per matrix
//   const MatrixFeatures mf = compute_features(a);        // once per matrix
//   for (const Schedule& s : candidates) {
//     const FormatStats fs = compute_format_stats(a, p, s);
//     const ScheduleFeatures f = schedule_features(p, s, fs, mf, rp, DeviceProfile::h100_sxm());
//     ... f.values() (named by ScheduleFeatures::names()), f.roofline_us ...
//   }
//
// The quantities (the general family's, costmodel/general_features.cpp; see ir/general_schedule.h;
// the other families fill the same fields their own way, costmodel/*_features.cpp):
//   - bytes: A's packed values + int32 column indices (padding included) read once per column
//     tile (grid.y), offset tables (8 bytes per task per level, an upper bound: compressed ones
//     cost nothing), B (unique bytes from DRAM; gathered sectors from L2), C written once (Store)
//     or pre-scaled then updated by atomics (Atomic).
//   - work: "warp iterations": one iteration = every group of a warp handles one nonzero of its
//     chunk for its thread_cols columns. Simulated from the packed row lengths exactly as the
//     division deals tasks (round-robin to W warps, then to G groups; a warp waits for its slowest
//     group), times the column passes. Total (throughput), max over warp workers (critical path),
//     max/mean (load imbalance), lane efficiency (useful nonzero slots / issued slots: padding,
//     divergence between groups and idle groups all lower it).
//   - reductions: shuffles (warp level, log2(G) per column per warp task, x2 for Bitmap, x3 for
//     Segment), block syncs (one per block task and pass when the block level reduces), atomics.
//   - occupancy: threads per block, a register estimate, resident blocks per SM, waves.
//   - the roofline estimate roofline_us = launch + max(DRAM time, L2 time, issue time, critical
//     path time) + atomics, which is also the fallback prediction when no fitted model exists;
//     and critical_floor_us, a lower bound on any prediction (the critical path time alone).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "costmodel/features.h"
#include "ir/family.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// What the cost model needs to know about a GPU. Filled by the caller from the runtime's device
// query (costmodel does not depend on runtime/): see device_profile().
struct DeviceProfile {
  std::string name = "NVIDIA H100 80GB HBM3";
  int cc_major = 9;
  int cc_minor = 0;
  int sm_count = 132;
  double dram_gbs = 3350;  // DRAM bandwidth, GB/s
  double l2_gbs = 10000;   // L2 bandwidth, GB/s (about 3x DRAM on Hopper)
  int64_t l2_bytes = 50 << 20;
  double clock_ghz = 1.75;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int64_t shared_per_sm = 228 << 10;  // shared memory per multiprocessor (sm_90: 228 KiB)

  static DeviceProfile h100_sxm() { return {}; }
  // "sm_90" for cc 9.0.
  std::string arch() const;
};

// A profile from queried device properties. DRAM bandwidth is not queryable through the driver
// API: it comes from a table of known boards by name (H200 4800, H100 SXM 3350, H100 PCIe 2000,
// A100 80GB 2039, A100 40GB 1555, L40S 864, RTX 4090 1008 GB/s), else 3350 GB/s scaled by the
// SM count relative to 132 (a guess, said so by `bandwidth_guessed`).
DeviceProfile device_profile(const std::string& name, int cc_major, int cc_minor, int sm_count,
                             int64_t l2_bytes, int clock_khz, int max_threads_per_sm,
                             int registers_per_sm, bool* bandwidth_guessed = nullptr);

// Values that depend only on a matrix's rows and a few schedule parameters, computed once per key
// by the first schedule that needs them; a schedule asking for a key being computed waits for it
// (the ranking computes features in parallel, and neighbouring schedules share keys: computing a
// key on every thread that meets it first would walk a graph's 4M rows a dozen times over). E.g.
// a family's work simulation, which walks every row: hundreds of schedules share a few dozen
// simulations. One key names one type T. A computation that throws leaves the key unset.
class RowMemo {
 public:
  template <typename T, typename F>
  T get(const std::string& key, F&& compute) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::shared_ptr<Entry>& slot = entries_[key];
      if (!slot) slot = std::make_shared<Entry>();
      e = slot;
    }
    std::call_once(e->once, [&] { e->value = std::make_shared<const T>(compute()); });
    return *static_cast<const T*>(e->value.get());
  }

 private:
  struct Entry {
    std::once_flag once;
    std::shared_ptr<const void> value;
  };
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
};

// Row lengths of a matrix in original order and sorted descending: what the work simulation
// needs beyond FormatStats. O(rows log rows) once per matrix. Copies share the memo.
struct RowProfile {
  std::vector<int64_t> lengths;  // per original row
  std::vector<int64_t> sorted;   // descending
  std::shared_ptr<RowMemo> memo = std::make_shared<RowMemo>();
};
RowProfile row_profile(const CsrMatrix& a);
RowProfile row_profile(std::vector<int64_t> lengths);

// The strategy family of a schedule: the (block, warp, thread) split and the reduction chain
// (thread > warp > block), the grouping tests/gpu/gpu_correctness_test.cpp calls "kinds", e.g.
// "rows/row/nnz red=total>total>none"; each family names its own (CostFamily::strategy).
std::string strategy_family(const Schedule& s);

// The small-problem regime: matrices under kSmallRegimeNnz nonzeros run in a few microseconds,
// where launches, cold-L2 latency and a prologue decide the time, not bytes and iterations. One
// log-linear formula per family over both regimes fits neither: with the small suite's 14268
// H200 timings merged in, the held-out pick of small cases within 10 % of their best fell from
// 84 % (no small samples) to 65 %; one formula per family and regime reached 91 % (4-fold
// cross-validation by matrix) and left the large cases as they were. So the model keys its
// formulas by family and regime (model_key), and a model without a small formula for a family
// falls back to the family's one.
inline constexpr int64_t kSmallRegimeNnz = 100000;
inline constexpr std::string_view kSmallRegimeSuffix = "@small";
// family, or family + kSmallRegimeSuffix when nnz < kSmallRegimeNnz.
std::string model_key(const std::string& family, int64_t nnz);

struct ScheduleFeatures {
  std::string family;
  std::string model_key;       // the formula that predicts it (model_key(family, nnz))
  bool global_formula = true;  // CostFamily::global_formula
  // Raw quantities (bytes, counts; per whole launch).
  double nnz = 0;             // real nonzeros
  double a_bytes = 0;         // packed values + column indices, x column tiles
  double table_bytes = 0;     // offset tables (upper bound) + row-start bits
  double b_unique_bytes = 0;  // K x N x dtype (the DRAM floor for B)
  double b_sector_bytes = 0;  // 32-byte sectors the B gathers touch (L2 traffic)
  double c_bytes = 0;         // M x N x dtype written (x2 with an Atomic prologue)
  double dram_bytes = 0;      // a + tables + b_unique + c
  double l2_bytes = 0;        // a + tables + b_sector + c
  double warp_iters_total = 0;
  double warp_iters_max = 0;
  double warp_iters_mean = 0;  // over warp workers (block tasks x W x column tiles)
  double warp_workers = 0;
  double lane_efficiency = 0;    // in (0, 1]
  double column_efficiency = 0;  // N / (column tiles x block_cols)
  double pad_overhead = 0;
  double atomics = 0;
  double shuffles = 0;
  double block_syncs = 0;
  double blocks = 0;  // grid.x x grid.y
  // A family whose warps stream their operand in load steps (each step's loads issued together,
  // then waited for) sets the latency of one step in cycles; warp_iters_max then counts the
  // slowest warp's steps, and the critical path repeats once per wave of resident blocks. 0: the
  // shared per-iteration latency, one wave.
  double step_latency_cycles = 0;
  // 16 x 8 x 16 tensor-core multiplies of a GEMM kernel that runs before the rest of the launch
  // sequence and does not overlap it (e.g. an FFN's gate projection): their time is added to the
  // roofline of everything above, which describes the rest.
  double serial_mmas = 0;
  int threads_per_block = 0;
  int registers_estimate = 0;
  // Shared memory per block, where the family counts it towards residency (0: not counted).
  int64_t shared_bytes = 0;
  int blocks_per_sm = 0;
  double occupancy = 0;  // resident warps per SM / (max_threads_per_sm / 32)
  double waves = 0;      // blocks / (SMs x blocks_per_sm)
  double roofline_us = 0;
  // A floor no prediction goes below: the roofline's critical path (the slowest warp worker's
  // iterations at its latency per iteration). The fitted model does not extrapolate load
  // imbalance beyond its training matrices: a thread walking a 40000-long row of a power-law
  // graph was predicted at 30 us and took 3 ms. On the shared matrices no pick changes with it.
  double critical_floor_us = 0;

  // The regression vector, in names() order (log transforms applied; see the .cpp).
  std::vector<double> values;
  static const std::vector<std::string>& names();
};

// Version of the feature vector: a model fitted on another version is not used.
inline constexpr int kScheduleFeatureVersion = 1;

// FormatStats of any family's schedule (IrFamily::format_stats). `cache` (optional, one per
// matrix and problem) keeps them per family and pack key, so schedules that pack alike (MACKO: one
// delta width; bitmap_tc: all) walk the matrix once; the others only re-derive their grid.
FormatStats candidate_format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s,
                                   std::map<std::string, FormatStats>* cache = nullptr);

// Precondition: the schedule is legal for p and fs = candidate_format_stats(a, p, s) of the
// matrix that `rows` and `mf` describe.
ScheduleFeatures schedule_features(const Problem& p, const Schedule& s, const FormatStats& fs,
                                   const MatrixFeatures& mf, const RowProfile& rows,
                                   const DeviceProfile& dev);

}  // namespace sparsegen
