// GPU correctness of the generated GeneralSparse kernels against the CPU references
// (compiler/gpu_check.h: seeded non-integer B and C, poisoned output, per-element error bounds,
// reference_spmm and the interpreter where the problem is small).
//
// Coverage design. The full cross product (every matrix x every schedule x 3 dtypes x 7 N x 4
// layouts) is millions of kernels, and every kernel is specific to its matrix (compressed offsets,
// packed tables), so nothing is shared across matrices. Instead:
//   - Schedules are grouped into KINDS: the (block, warp, thread) split and the reduction chain
//     (7 kinds today, e.g. "rows/row/nnz red=total>total>none"). Every config below checks one
//     schedule of EVERY kind the enumerator offers for it. Within a kind, candidates are ordered
//     greedily for feature coverage (warps, group, thread/block columns, vector width,
//     interleave, sort, padding, split amounts) and the pick rotates through the first few with
//     the N, so successive N see different variants and the dtypes of one N share the schedule
//     (and its packed format: one pack per (matrix, schedule, column tiles), freed after its
//     last kernel).
//   - Each matrix gets T configs (dtype, N, B/C layout): T = 3 for suitesparse and dlmc, 2 for
//     edge (tiny files whose quirks are mostly the reader's business). Config number c (counted
//     over the whole collection) uses dtype c % 3, N = {1,2,7,8,32,64,128}[(c / 3) % 7] and layout
//     pair (c / 21) % 4, so every (dtype, N) pair recurs every 21 configs and every layout pair
//     every 84.
//   - Generated 4096 x 11008 LLM-shaped matrices (magnitude pruning, 50/70/90%): each gets all 21
//     (dtype, N) pairs and every kind; the three together cover every (kind, dtype, N) triple.
//   - Every kernel runs twice: beta = 0 with C poisoned, and beta = -1.5 (alpha = 0.75); both
//     runs use the same B (different C), so the double-precision references share A·B.
// Kernels are built on a thread pool (pack, emit, NVRTC, the interpreter's output) while the main
// thread loads, runs and checks them in order; builds in flight are capped by memory for the
// 4096 x 11008 matrices. Each test prints its thread-seconds per phase (references, pack, NVRTC,
// interpreter) and the main thread's load/run/check seconds. Measured here (DRY, 2 shared cores,
// sm_90 cubins): NVRTC ~83 ms per kernel and ~92% of the file collections' CPU time; Pruned70 16 s
// wall / 27 CPU-s (PTX) after sharing packs and references (57 s / 48 CPU-s before).
//
// Knobs: SPARSEGEN_GPU_TEST_CONFIGS (T for the file collections),
// SPARSEGEN_GPU_TEST_MATRICES (substring filter on matrix names), SPARSEGEN_GPU_TEST_DRY=1 (no GPU
// needed: builds and references only, to measure the CPU side; SPARSEGEN_GPU_TEST_ARCH picks the
// NVRTC target there, sm_90 cubins by default), SPARSEGEN_GPU_TEST_PLAN=1 (with
// DRY: only count the planned kernels), SPARSEGEN_RESULTS_DIR (JSON summary per test).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "compiler/device_check_inputs.h"
#include "compiler/family.h"
#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "compiler/pipeline_steps.h"
#include "compiler/tune.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/format.h"
#include "ir/gen/pruning.h"
#include "ir/general_schedule.h"
#include "ir/io/load.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"
#include "ir/parallel.h"
#include "runtime/nvrtc_compiler.h"
#include "sparsegen/sparsegen.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr DType kDtypes[] = {DType::F32, DType::F16, DType::BF16};
constexpr int64_t kNs[] = {1, 2, 7, 8, 32, 64, 128};
constexpr Layout kLayoutPairs[4][2] = {{Layout::RowMajor, Layout::RowMajor},
                                       {Layout::ColMajor, Layout::ColMajor},
                                       {Layout::RowMajor, Layout::ColMajor},
                                       {Layout::ColMajor, Layout::RowMajor}};
// MACKO (GpuMacko.*): 2-byte values only, N <= 8.
constexpr DType kMackoDtypes[] = {DType::F16, DType::BF16};
constexpr int64_t kMackoNs[] = {1, 2, 7, 8};
// bitmap_tc (GpuBitmapTc.*): 2-byte values, N a multiple of 8, row-major B.
constexpr int64_t kBitmapNs[] = {8, 24, 64, 128};
constexpr float kAlpha = 0.75f;
constexpr float kBetas[2] = {0.0f, -1.5f};

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}
int env_int(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? std::atoi(v) : def;
}
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// "rows/row/nnz red=total>total>none": splits block/warp/thread, reductions thread>warp>block.
std::string kind_of(const Schedule& s) {
  if (s.family_name() == "bitmap_tc") {
    const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
    return fmt::format("bitmap_tc{}{}", b.mma == MmaKind::Wgmma ? " wgmma" : "",
                       b.ksplit > 1 ? " split-K" : "");
  }
  if (s.family_name() == "macko") {
    if (s.as<MackoSchedule>().staged()) return "macko staged-B";
    return s.as<MackoSchedule>().warps_per_row == 1 ? "macko warp-per-row" : "macko split-row";
  }
  const GeneralSchedule& g = s.as<GeneralSchedule>();
  return fmt::format("{}/{}/{} red={}>{}>{}", to_string(g.at(Level::Block).kind),
                     to_string(g.at(Level::Warp).kind), to_string(g.at(Level::Thread).kind),
                     to_string(g.reduction(Level::Thread)), to_string(g.reduction(Level::Warp)),
                     to_string(g.reduction(Level::Block)));
}

std::vector<std::string> features(const Schedule& s) {
  if (s.family_name() == "bitmap_tc") {
    const BitmapTcSchedule& b = s.as<BitmapTcSchedule>();
    return {fmt::format("w{}", b.warps_per_block), fmt::format("mt{}", b.m_tiles),
            fmt::format("ks{}", b.ksplit),         fmt::format("st{}", b.stages),
            fmt::format("kt{}", b.k_tiles),        std::string(to_string(b.mma))};
  }
  if (s.family_name() == "macko") {
    const MackoSchedule& m = s.as<MackoSchedule>();
    return {fmt::format("b{}", m.delta_bits),      fmt::format("u{}", m.unroll),
            fmt::format("w{}", m.warps_per_block), fmt::format("r{}", m.warps_per_row),
            fmt::format("rpw{}", m.rows_per_warp), fmt::format("sort{}", m.sort_rows)};
  }
  const GeneralSchedule& g = s.as<GeneralSchedule>();
  return {fmt::format("w{}", g.warps_per_block),
          fmt::format("g{}", g.group_threads),
          fmt::format("tc{}", g.thread_cols),
          fmt::format("bc{}", g.block_cols / std::max(1, g.warp_cols())),
          fmt::format("v{}", g.vector_width),
          fmt::format("il{}", g.interleave),
          fmt::format("s{}", g.sort_rows),
          fmt::format("p{}", g.pad > g.vector_width),
          fmt::format("ab{}", g.at(Level::Block).amount > 4 ? 2 : g.at(Level::Block).amount > 1),
          fmt::format("at{}", g.at(Level::Thread).amount > 1)};
}

// Greedy feature coverage: repeatedly the candidate adding the most unseen feature values (ties:
// enumeration order). Deterministic.
std::vector<Schedule> diverse_order(const std::vector<Schedule>& cands, size_t limit) {
  std::vector<Schedule> out;
  std::set<std::string> seen;
  std::vector<bool> used(cands.size(), false);
  while (out.size() < std::min(limit, cands.size())) {
    size_t best = cands.size();
    int best_score = -1;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (used[i]) continue;
      int score = 0;
      for (const auto& f : features(cands[i])) score += seen.count(f) == 0;
      if (score > best_score) best_score = score, best = i;
    }
    used[best] = true;
    for (const auto& f : features(cands[best])) seen.insert(f);
    out.push_back(cands[best]);
  }
  return out;
}

struct Config {
  size_t matrix = 0;
  Problem problem;
  CheckInputs inputs[2];
  std::once_flag ref_once;
  Reference ref[2];
  void ensure_references(const CsrMatrix& a) {
    std::call_once(ref_once, [&] {
      // Both runs share B (make_check_inputs below), so A·B is computed once.
      std::vector<Reference> r = compute_references(a, {&inputs[0], &inputs[1]});
      ref[0] = std::move(r[0]);
      ref[1] = std::move(r[1]);
    });
  }
};

// One PackedFormat shared by the jobs with the same (matrix, schedule, column tiles): a packed
// format depends on the problem only through M, K and ceil(N / block_cols), so the kernels of the
// three dtypes (and any layouts) of one schedule pack once. Built by the first job that needs it,
// freed when its last job is done.
struct PackSlot {
  std::once_flag once;
  std::shared_ptr<const PreparedPack> f;  // the family pack; values converted per build
  std::string error;
  double pack_s = 0;
  std::atomic<int> users{0};
  size_t order = 0;  // creation order: jobs are sorted by it
};

struct Job {
  size_t config = 0;
  Schedule schedule;
  std::string kind;
  std::shared_ptr<PackSlot> pack;
};

struct Built {
  std::optional<KernelBuild> build;
  std::string error;
  std::vector<float> interp[2];
  double build_s = 0;
  // CPU-side phases (seconds on the worker thread).
  double ref_s = 0, pack_s = 0, nvrtc_s = 0, interp_s = 0;
};

struct KindStats {
  int64_t kernels = 0, passed = 0, failed = 0;
};

struct Failure {
  std::string matrix, schedule, dtype, layouts, error;
  int64_t n = 0;
  float beta = 0;
};

class Campaign {
 public:
  // family Macko: configs over (fp16, bf16) x N in {1, 2, 7, 8} and the MACKO schedules only;
  // BitmapTc: (fp16, bf16) x N in {8, 24, 64, 128}, row-major B, the bitmap_tc schedules only.
  explicit Campaign(std::string name, std::string family = "general")
      : name_(std::move(name)), family_(std::move(family)) {
    dry_ = env_flag("SPARSEGEN_GPU_TEST_DRY");
    if (!dry_) {
      ctx_ = std::make_shared<cuda::Context>(0);
      target_ = detect_target(0);
    } else {
      // A cubin by default, like the GPU run (NVRTC's ptxas step is most of the compile time);
      // SPARSEGEN_GPU_TEST_ARCH=compute_90 measures PTX only.
      const char* arch = std::getenv("SPARSEGEN_GPU_TEST_ARCH");
      target_.arch = arch != nullptr && *arch != 0 ? arch : "sm_90";
    }
    if (const char* f = std::getenv("SPARSEGEN_GPU_TEST_MATRICES")) filter_ = f;
  }

  bool wanted(const std::string& name) const {
    return filter_.empty() || name.find(filter_) != std::string::npos;
  }

  // Adds `configs` configs of one matrix starting at collection config number `first_config`.
  // all_pairs: layout pairs rotate every 3 configs instead of every 21. kind_share > 1: config c
  // checks kind number ki only when (ki + (c / 3)) % kind_share == kind_phase (the matrices of a
  // family share the (kind, dtype, N) triples between them).
  void add_matrix(const std::string& name, std::shared_ptr<const CsrMatrix> a, int first_config,
                  int configs, bool all_pairs = false, int kind_share = 1, int kind_phase = 0) {
    const size_t mi = matrices_.size();
    names_.push_back(name);
    matrices_.push_back(a);
    for (int t = 0; t < configs; ++t) {
      const int c = first_config + t;
      const bool two_byte = family_ != "general";
      const DType dt = two_byte ? kMackoDtypes[c % 2] : kDtypes[c % 3];
      const int64_t n = family_ == "macko"       ? kMackoNs[(c / 2) % 4]
                        : family_ == "bitmap_tc" ? kBitmapNs[(c / 2) % 4]
                                                 : kNs[(c / 3) % 7];
      // bitmap_tc reads row-major B only: its configs rotate over the pairs with B row-major.
      const int pair = (all_pairs ? c / 3 : c / 21) % 4;
      const auto& lp = kLayoutPairs[family_ == "bitmap_tc" ? 2 * (pair % 2) : pair];
      KernelRequest req;
      req.n = n;
      req.dtype = dt;
      req.b_layout = lp[0];
      req.c_layout = lp[1];
      try {
        check_value_range(*a, dt);
      } catch (const UserError& e) {
        // Legitimately outside the precision (e.g. integer matrices near INT64_MAX in fp16):
        // the pipeline refuses it with the count and location, which is what is checked here.
        const std::string msg = e.what();
        EXPECT_NE(msg.find("first at ("), std::string::npos) << msg;
        range_skips_.push_back(fmt::format("{} {}: {}", name, to_string(dt), msg.substr(0, 160)));
        continue;
      }
      const Problem p = make_problem(*a, req);
      EnumerateOptions eo;
      eo.device = target_.limits;
      const auto all = find_ir_family(family_)->enumerate(p, *a, eo);
      std::map<std::string, std::vector<Schedule>> by_kind;
      for (const Schedule& s : all) by_kind[kind_of(s)].push_back(s);
      auto cfg = std::make_unique<Config>();
      cfg->matrix = mi;
      cfg->problem = p;
      for (int b = 0; b < 2; ++b)
        cfg->inputs[b] =
            make_check_inputs(p, static_cast<uint64_t>(c) * 2 + uint64_t(b) + 1, kAlpha, kBetas[b]);
      // One B for both runs (they differ in C and beta): the references share A·B.
      cfg->inputs[1].b = cfg->inputs[0].b;
      const size_t ci = configs_.size();
      configs_.push_back(std::move(cfg));
      int kind_index = 0;
      for (const auto& [kind, cands] : by_kind) {
        const int ki = kind_index++;
        if ((ki + c / 3) % kind_share != kind_phase) continue;
        const auto order = diverse_order(cands, 4);
        // The variant rotates with the N (c / dtypes), so the dtypes of one N get the same
        // schedule where their candidates agree and share its packed format.
        const int dtypes = two_byte ? 2 : 3;
        const Schedule& s = order[static_cast<size_t>(c / dtypes + ki) % order.size()];
        jobs_.push_back({ci, s, kind, pack_slot(mi, s, p, *a)});
      }
    }
  }

  void run() {
    const auto t0 = Clock::now();
    // Jobs sharing a packed format run back to back (its memory is freed after the last one).
    auto order_of = [](const Job& j) { return j.pack ? j.pack->order : 0; };
    std::stable_sort(jobs_.begin(), jobs_.end(),
                     [&](const Job& x, const Job& y) { return order_of(x) < order_of(y); });
    for (Job& j : jobs_)
      if (j.pack) ++j.pack->users;
    std::printf(
        "[ GPU      ] %s: planned %zu kernels (%zu matrices, %zu configs, %zu packed formats)\n",
        name_.c_str(), jobs_.size(), matrices_.size(), configs_.size(), packs_.size());
    std::fflush(stdout);
    if (env_flag("SPARSEGEN_GPU_TEST_PLAN")) {
      dry_ = true;
      jobs_.clear();
    }
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int threads = std::max(1, std::min<int>(hw, 16));
    // Builds in flight (not yet checked) hold their packed values, indices and tables: about 32
    // bytes per nonzero (more with per-nonzero offset tables). Cap them at ~8 GiB per process, so
    // that the three 4096 x 11008 tests running side by side stay far from the host's memory.
    int64_t max_nnz = 1;
    for (const auto& m : matrices_) max_nnz = std::max(max_nnz, m->nnz());
    const int64_t per_job = 32 * max_nnz;
    const size_t window = static_cast<size_t>(
        std::clamp<int64_t>((int64_t{8} << 30) / per_job, 2, static_cast<int64_t>(threads) * 2));
    // Built on the pool, checked on this thread in job order; an abort (the context is unusable)
    // stops the builders and reports what ran.
    auto make = [&](size_t i) {
      Built b;
      const auto tb = Clock::now();
      const Job& job = jobs_[i];
      Config& cfg = *configs_[job.config];
      const CsrMatrix& a = *matrices_[cfg.matrix];
      try {
        auto t = Clock::now();
        cfg.ensure_references(a);
        b.ref_s = seconds_since(t);
        // The shared pack (GeneralSparse); other families (MACKO) pack inside build_kernel.
        std::shared_ptr<const PreparedPack> f;
        if (job.pack) {
          PackSlot& slot = *job.pack;
          std::call_once(slot.once, [&] {
            const auto tp = Clock::now();
            try {
              auto pk = std::make_shared<PreparedPack>();
              pk->family = job.schedule.family_name();
              pk->key = to_string(job.schedule);
              pk->rows = a.rows;
              pk->cols = a.cols;
              pk->packed = job.schedule.family().pack(a, cfg.problem, job.schedule);
              slot.f = std::move(pk);
            } catch (const std::exception& e) {
              slot.error = e.what();
            }
            slot.pack_s = seconds_since(tp);
            b.pack_s = slot.pack_s;  // counted once, by the job that packed
          });
          f = slot.f;
          if (!f) throw std::runtime_error("pack: " + slot.error);
        }
        BuildOptions bo;
        bo.pack = f.get();
        b.build = build_kernel(a, cfg.problem, job.schedule, target_, bo);
        b.nvrtc_s = b.build->compiled.compile_ms / 1000.0;
        t = Clock::now();
        for (int k = 0; k < 2; ++k)
          b.interp[k] =
              interpreter_output(a, job.schedule, cfg.inputs[k], f ? f->packed.get() : nullptr);
        b.interp_s = seconds_since(t);
      } catch (const std::exception& e) {
        b.error = e.what();
        b.build.reset();
      }
      // The last job of this pack frees it (every other job has taken its copy of f before
      // counting itself out).
      if (job.pack && --job.pack->users == 0) job.pack->f.reset();
      b.build_s = seconds_since(tb);
      return b;
    };
    // + 1: the pipeline's window counts the build being checked too; `window` builds stay ahead.
    produce_in_order(jobs_.size(), threads, window + 1, make, [&](size_t i, Built&& b) {
      cpu_.ref += b.ref_s;
      cpu_.pack += b.pack_s;
      cpu_.nvrtc += b.nvrtc_s;
      cpu_.interp += b.interp_s;
      cpu_.build += b.build_s;
      const auto tg = Clock::now();
      check_one(jobs_[i], b);
      cpu_.gpu += seconds_since(tg);
      return !aborted_;
    });
    wall_s_ = seconds_since(t0);
    threads_ = threads;
  }

  // Summary lines, JSON, and the test verdict.
  void report() const {
    std::map<std::pair<std::string, std::string>, KindStats> table = stats_;
    int64_t kernels = 0, passed = 0, failed = 0;
    for (const auto& [key, st] : table) {
      std::printf("[ GPU      ] %-10s %-42s %-5s %5lld kernels %6lld checks passed %4lld failed\n",
                  name_.c_str(), key.first.c_str(), key.second.c_str(),
                  static_cast<long long>(st.kernels), static_cast<long long>(st.passed),
                  static_cast<long long>(st.failed));
      kernels += st.kernels, passed += st.passed, failed += st.failed;
    }
    for (const auto& s : range_skips_) std::printf("[ GPU      ] skipped (range): %s\n", s.c_str());
    for (const auto& s : matrix_notes_) std::printf("[ GPU      ] note: %s\n", s.c_str());
    std::printf(
        "[ GPU      ] %s: %zu matrices, %zu configs, %lld kernels compiled (%.1f s of "
        "compile time on %d threads), %lld checks passed, %lld failed, %zu "
        "dtype configs skipped for range, %lld overflow-indeterminate elements, wall %.1f s%s\n",
        name_.c_str(), matrices_.size(), configs_.size(), static_cast<long long>(kernels),
        compile_s_, threads_, static_cast<long long>(passed), static_cast<long long>(failed),
        range_skips_.size(), static_cast<long long>(overflow_indeterminate_), wall_s_,
        dry_ ? " (DRY: nothing ran on a GPU)" : "");
    std::printf(
        "[ GPU      ] %s: thread-seconds: references %.1f, pack %.1f (%zu formats), nvrtc %.1f "
        "(%s), interpreter %.1f, whole builds %.1f; main thread: load/run/check %.1f\n",
        name_.c_str(), cpu_.ref, cpu_.pack, packs_.size(), cpu_.nvrtc, target_.arch.c_str(),
        cpu_.interp, cpu_.build, cpu_.gpu);
    std::fflush(stdout);
    if (const char* dir = std::getenv("SPARSEGEN_RESULTS_DIR")) {
      nlohmann::json j;
      j["test"] = name_;
      j["device"] = target_.device_name;
      j["arch"] = target_.arch;
      j["dry"] = dry_;
      j["wall_s"] = wall_s_;
      j["compile_s"] = compile_s_;
      j["threads"] = threads_;
      j["matrices"] = matrices_.size();
      j["configs"] = configs_.size();
      j["kernels"] = kernels;
      j["checks_passed"] = passed;
      j["checks_failed"] = failed;
      j["overflow_indeterminate"] = overflow_indeterminate_;
      j["packed_formats"] = packs_.size();
      j["thread_s"] = {{"references", cpu_.ref}, {"pack", cpu_.pack},
                       {"nvrtc", cpu_.nvrtc},    {"interpreter", cpu_.interp},
                       {"builds", cpu_.build},   {"main_load_run_check", cpu_.gpu}};
      for (const auto& [key, st] : table)
        j["per_kind"].push_back({{"kind", key.first},
                                 {"dtype", key.second},
                                 {"kernels", st.kernels},
                                 {"passed", st.passed},
                                 {"failed", st.failed}});
      for (const Failure& f : failures_)
        j["failures"].push_back({{"matrix", f.matrix},
                                 {"schedule", f.schedule},
                                 {"n", f.n},
                                 {"dtype", f.dtype},
                                 {"layouts", f.layouts},
                                 {"beta", f.beta},
                                 {"error", f.error}});
      j["skipped_range"] = range_skips_;
      j["notes"] = matrix_notes_;
      std::error_code ec;
      fs::create_directories(dir, ec);
      std::ofstream(fs::path(dir) / ("gpu_correctness_" + name_ + ".json")) << j.dump(2) << "\n";
    }
    EXPECT_EQ(failed, 0) << failures_.size() << " failures (listed above)";
    if (!dry_) {
      EXPECT_GT(passed, 0);
    }
  }

  void note(std::string s) { matrix_notes_.push_back(std::move(s)); }
  size_t jobs() const { return jobs_.size(); }

 private:
  void check_one(const Job& job, Built& b) {
    const Config& cfg = *configs_[job.config];
    const std::string& mname = names_[cfg.matrix];
    const Problem& p = cfg.problem;
    KindStats& st = stats_[{job.kind, std::string(to_string(p.dtype))}];
    auto fail = [&](float beta, const std::string& err) {
      ++st.failed;
      Failure f{mname,
                to_string(job.schedule),
                std::string(to_string(p.dtype)),
                fmt::format("b={} c={}", to_string(p.b_layout), to_string(p.c_layout)),
                err.substr(0, 4000),
                p.n,
                beta};
      if (failures_.size() < 200)
        ADD_FAILURE() << "GPU check failed: matrix " << f.matrix << " N=" << f.n << " dtype "
                      << f.dtype << " " << f.layouts << " beta=" << beta << "\n  schedule "
                      << f.schedule << "\n  " << f.error;
      failures_.push_back(std::move(f));
    };
    if (!b.build) {
      fail(0, "build: " + b.error);
      return;
    }
    ++st.kernels;
    compile_s_ += b.build->compiled.compile_ms / 1000.0;
    if (dry_) return;
    const CsrMatrix& a = *matrices_[cfg.matrix];
    try {
      const CompiledKernel k(ctx_, std::move(*b.build));
      for (int i = 0; i < 2; ++i) {
        const CheckResult r =
            gpu_check(k, a, cfg.inputs[i], cfg.ref[i], nullptr,
                      b.interp[i].empty() ? nullptr : &b.interp[i], false, &buffers_);
        overflow_indeterminate_ += r.overflow_indeterminate;
        if (r.passed)
          ++st.passed;
        else
          fail(kBetas[i], r.error);
      }
    } catch (const std::exception& e) {
      fail(0, std::string("GPU: ") + e.what());
      // A sticky fault (illegal address, trap) poisons the context: stop rather than report every
      // later kernel.
      const std::string what = e.what();
      if (what.find("ILLEGAL") != std::string::npos ||
          what.find("LAUNCH_FAILED") != std::string::npos ||
          what.find("ASSERT") != std::string::npos || what.find("EXCEPTION") != std::string::npos) {
        aborted_ = true;
        ADD_FAILURE() << name_ << ": sticky CUDA error, the remaining kernels were not checked";
      }
    }
  }

  std::string name_;
  std::string family_ = "general";
  bool dry_ = false;
  std::string filter_;
  std::shared_ptr<cuda::Context> ctx_;
  CompileTarget target_;
  std::vector<std::string> names_;
  std::vector<std::shared_ptr<const CsrMatrix>> matrices_;
  std::vector<std::unique_ptr<Config>> configs_;
  std::vector<Job> jobs_;
  std::map<std::pair<std::string, std::string>, KindStats> stats_;
  std::vector<Failure> failures_;
  std::vector<std::string> range_skips_, matrix_notes_;
  double compile_s_ = 0, wall_s_ = 0;
  int threads_ = 1;
  bool aborted_ = false;
  int64_t overflow_indeterminate_ = 0;
  CheckBuffers buffers_;  // device B and C, reused while the sizes stay (main thread only)
  struct {
    double ref = 0, pack = 0, nvrtc = 0, interp = 0, build = 0, gpu = 0;
  } cpu_;
  std::map<std::tuple<size_t, std::string, int64_t>, std::shared_ptr<PackSlot>> packs_;

  // Null for families other than GeneralSparse.
  std::shared_ptr<PackSlot> pack_slot(size_t matrix, const Schedule& s, const Problem& p,
                                      const CsrMatrix& a) {
    if (s.family_name() != "general") return nullptr;
    const int64_t tiles = compute_format_stats(a, p, s).col_tiles;
    auto& slot = packs_[{matrix, to_string(s), tiles}];
    if (!slot) {
      slot = std::make_shared<PackSlot>();
      slot->order = packs_.size();
    }
    return slot;
  }
};

bool gpu_usable(std::string* why) {
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) return true;
  return cuda::driver_available(why);
}

#define SKIP_WITHOUT_GPU()                                      \
  do {                                                          \
    std::string why_;                                           \
    if (!gpu_usable(&why_)) GTEST_SKIP() << "no GPU: " << why_; \
  } while (0)

// Every real, integer and pattern matrix of one data folder (complex ones are noted and skipped:
// the kernels are real-valued).
void run_collection(const std::string& folder, int collection_offset, int configs,
                    const std::string& family = "general") {
  const fs::path root = testing::data_dir() / folder;
  ASSERT_TRUE(fs::is_directory(root)) << root;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext == ".mtx" || ext == ".smtx") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  const std::string prefix = family == "general" ? "" : family + "_";
  Campaign camp(prefix + folder, family);
  const int t_per_matrix = std::max(1, env_int("SPARSEGEN_GPU_TEST_CONFIGS", configs));
  int next_config = collection_offset;
  for (const fs::path& f : files) {
    const std::string name = fs::relative(f, root).string();
    if (!camp.wanted(name)) continue;
    LoadedMatrix m;
    try {
      m = load_matrix(f.string());
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " does not load: " << e.what();
      continue;
    }
    if (m.matrix.field == ValueField::Complex) {
      camp.note(name + ": complex values, skipped (the kernels are real-valued)");
      continue;
    }
    camp.add_matrix(name, std::make_shared<const CsrMatrix>(std::move(m.matrix)), next_config,
                    t_per_matrix);
    next_config += t_per_matrix;
  }
  camp.run();
  camp.report();
}

TEST(GpuCorrectness, SuiteSparse) {
  SKIP_WITHOUT_GPU();
  run_collection("suitesparse", 0, 3);
}

TEST(GpuCorrectness, Edge) {
  SKIP_WITHOUT_GPU();
  run_collection("edge", 7, 2);
}

TEST(GpuCorrectness, Dlmc) {
  SKIP_WITHOUT_GPU();
  run_collection("dlmc", 14, 3);
}

// 4096 x 11008 LLM-shaped weights pruned by magnitude. Each of the three sparsities gets all 21
// (dtype, N) pairs and every kind (with every dtype), and the three together check every
// (kind, dtype, N) triple once: packing 4.5-22.5M nonzeros takes seconds per kernel, so the
// triples are shared out instead of tripled.
void run_pruned(double sparsity, int phase) {
  const std::string name = fmt::format("pruned{}", static_cast<int>(sparsity * 100 + 0.5));
  Campaign camp(name);
  if (!camp.wanted(name)) GTEST_SKIP() << "filtered out";
  const auto t0 = Clock::now();
  const DenseMatrix w = make_llm_weight(4096, 11008, 42);
  PruneSpec spec;
  spec.method = PruneMethod::Magnitude;
  spec.sparsity = sparsity;
  auto a = std::make_shared<CsrMatrix>(prune(w, spec));
  a->source = name;
  std::printf("[ GPU      ] %s: generated %lld x %lld, nnz %lld in %.1f s\n", name.c_str(),
              static_cast<long long>(a->rows), static_cast<long long>(a->cols),
              static_cast<long long>(a->nnz()), seconds_since(t0));
  camp.add_matrix(name, a, 0, 21, /*all_pairs=*/true, /*kind_share=*/3, phase);
  camp.run();
  camp.report();
}

TEST(GpuCorrectness, Pruned50) {
  SKIP_WITHOUT_GPU();
  run_pruned(0.5, 0);
}
TEST(GpuCorrectness, Pruned70) {
  SKIP_WITHOUT_GPU();
  run_pruned(0.7, 1);
}
TEST(GpuCorrectness, Pruned90) {
  SKIP_WITHOUT_GPU();
  run_pruned(0.9, 2);
}

// ---- small, targeted checks (also the compute-sanitizer sample) ----------------------------

CsrMatrix lengths_matrix(const std::vector<int64_t>& lengths, int64_t cols, uint64_t seed) {
  CsrMatrix a;
  a.rows = static_cast<int64_t>(lengths.size());
  a.cols = cols;
  uint64_t s = seed;
  for (int64_t len : lengths) {
    // Columns: a seeded stride walk, sorted; distinct while len <= cols.
    std::vector<int32_t> row;
    const int64_t start = static_cast<int64_t>((s = s * 6364136223846793005ULL + 1) >> 40) % cols;
    for (int64_t j = 0; j < len; ++j) row.push_back(static_cast<int32_t>((start + j) % cols));
    std::sort(row.begin(), row.end());
    for (int32_t c : row) {
      a.col_idx.push_back(c);
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      const float v = 0.5f + static_cast<float>((s >> 40) % 1000) / 1000.0f;
      a.values.push_back(((s >> 20) & 1) != 0 ? -v : v);
    }
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  a.source = "generated";
  return a;
}

// Small matrices with awkward row shapes; every kind, every dtype, N in {1, 7, 32}, both layouts.
TEST(GpuSample, SmallMatricesEveryKind) {
  SKIP_WITHOUT_GPU();
  Campaign camp("sample");
  std::vector<int64_t> power;
  for (int r = 0; r < 300; ++r) power.push_back(r % 37 == 0 ? 300 / (1 + r % 5) : (r * 7) % 5);
  const std::vector<std::pair<std::string, CsrMatrix>> mats = {
      {"empty_rows", lengths_matrix({0, 3, 0, 0, 5, 1, 0, 2, 0}, 16, 1)},
      {"one_long_row", lengths_matrix({1, 2, 1, 900, 0, 3, 1, 2}, 1024, 2)},
      {"power_law", lengths_matrix(power, 512, 3)},
  };
  int c = 0;
  for (const auto& [name, m] : mats) {
    camp.add_matrix(name, std::make_shared<const CsrMatrix>(m), c, 6, /*all_pairs=*/true);
    c += 6;
  }
  camp.run();
  camp.report();
}

// Degenerate problems: the right output (C = beta*C, or nothing) without an invalid launch.
TEST(GpuPipeline, DegenerateProblems) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  struct Case {
    const char* name;
    CsrMatrix a;
    int64_t n;
  };
  const std::vector<Case> cases = {
      {"0x1", lengths_matrix({}, 1, 1), 8},
      {"4x0",
       [] {
         CsrMatrix a;
         a.rows = 4;
         a.cols = 0;
         a.row_ptr = {0, 0, 0, 0, 0};
         return a;
       }(),
       8},
      {"4x4 nnz=0", lengths_matrix({0, 0, 0, 0}, 4, 1), 8},
      {"4x4 nnz=0 N=1", lengths_matrix({0, 0, 0, 0}, 4, 1), 1},
      {"4x4 N=0", lengths_matrix({1, 2, 0, 1}, 4, 1), 0},
  };
  int checked = 0;
  for (const Case& c : cases) {
    // Every kind once, the dtype (and C layout) rotating over the kinds: compiled serially, so
    // kept small.
    for (int rot = 0; rot < 3; ++rot) {
      KernelRequest req;
      req.n = c.n;
      req.dtype = kDtypes[rot];
      req.c_layout = rot == 1 ? Layout::ColMajor : Layout::RowMajor;
      const Problem p = make_problem(c.a, req);
      EnumerateOptions eo;
      eo.device = target.limits;
      std::map<std::string, Schedule> one_per_kind;
      for (const Schedule& s : enumerate_schedules(p, c.a, eo)) one_per_kind.emplace(kind_of(s), s);
      int ki = 0;
      for (const auto& [kind, s] : one_per_kind) {
        if (ki++ % 3 != rot) continue;
        SCOPED_TRACE(fmt::format("{} {} {}", c.name, to_string(p), to_string(s)));
        const CompiledKernel k(ctx, build_kernel(c.a, p, s, target));
        const GpuCheckPair r = gpu_check(k, c.a, 99);
        EXPECT_TRUE(r.passed()) << r.error();
        ++checked;
      }
    }
  }
  ctx->synchronize();
  EXPECT_GT(checked, 10);
}

// A kernel signature with a B transform (the hook activation lifting and per-token quantization
// use): the runtime allocates the B work buffer and the token scales, launches b_transform first
// and binds BWork / TokenScales / F32Table by kind. Hand-written kernels: b_transform writes
// W = 2·B and scales 0.5 per column, the main kernel computes
// C = alpha · diag(row_scale) · A · W · diag(scale) + beta · C with row_scale = 1 + r/8, checked in
// double against the same formula on the host.
TEST(GpuPipeline, BTransformRunsFirstAndFeedsTheKernel) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  constexpr int M = 5, K = 7, N = 3;
  auto ctx = std::make_shared<cuda::Context>(0);
  KernelBuild b;
  b.problem = Problem::spmm(M, K, N, DType::F32);
  b.target = detect_target(0);
  b.kernel.source = fmt::format(R"(
extern "C" __global__ void t_lift(const float* __restrict__ B, float* __restrict__ W,
                                  float* __restrict__ S) {{
  const int i = threadIdx.x;
  if (i < {0} * {1}) W[i] = 2.0f * B[i];
  if (i < {1}) S[i] = 0.5f;
}}
extern "C" __global__ void t_main(const float* __restrict__ A, const float* __restrict__ W,
                                  const float* __restrict__ S, const float* __restrict__ rs,
                                  float* __restrict__ C, float alpha, float beta) {{
  const int i = threadIdx.x;
  if (i >= {2} * {1}) return;
  const int r = i / {1}, j = i % {1};
  float acc = 0.0f;
  for (int c = 0; c < {0}; ++c) acc += A[r * {0} + c] * W[c * {1} + j];
  const float y = alpha * rs[r] * acc * S[j];
  C[i] = beta == 0.0f ? y : y + beta * C[i];
}}
)",
                                K, N, M);
  using codegen::KernelParam;
  using codegen::ParamKind;
  codegen::KernelSignature& sig = b.kernel.signature;
  sig.kernel_name = "t_main";
  std::vector<int64_t> row_scales;
  for (int r = 0; r < M; ++r) {
    const float v = 1.0f + static_cast<float>(r) / 8.0f;
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    row_scales.push_back(bits);
  }
  sig.params = {KernelParam{"A", ParamKind::Values, "values", {}},
                KernelParam{"W", ParamKind::BWork, "B work", {}},
                KernelParam{"S", ParamKind::TokenScales, "token scales", {}},
                KernelParam{"rs", ParamKind::F32Table, "row scales", row_scales},
                KernelParam{"C", ParamKind::C, "C", {}},
                KernelParam{"alpha", ParamKind::Alpha, "alpha", {}},
                KernelParam{"beta", ParamKind::Beta, "beta", {}}};
  sig.launch = {1, 1, 32, 0, 0};
  sig.b_transform.name = "t_lift";
  sig.b_transform.params = {KernelParam{"B", ParamKind::B, "B", {}},
                            KernelParam{"W", ParamKind::BWork, "B work", {}},
                            KernelParam{"S", ParamKind::TokenScales, "token scales", {}}};
  sig.b_transform.launch = {1, 1, 32, 0, 0};
  sig.b_work_bytes = int64_t{K} * N * 4;
  sig.token_scales = N;
  EXPECT_NE(codegen::describe(sig).find("b_transform t_lift(B, W, S)"), std::string::npos)
      << codegen::describe(sig);
  std::vector<float> a(static_cast<size_t>(M * K));
  for (size_t i = 0; i < a.size(); ++i) a[i] = (static_cast<float>(i % 11) - 5.25f) / 4.0f;
  b.values.resize(a.size() * 4);
  std::memcpy(b.values.data(), a.data(), b.values.size());
  nvrtc::CompileOptions co;
  co.arch = b.target.arch;
  co.program_name = "b_transform_test.cu";
  b.compiled = nvrtc::compile(b.kernel.source, co);
  const CompiledKernel k(ctx, std::move(b));
  std::vector<float> hb(static_cast<size_t>(K * N)), hc(static_cast<size_t>(M * N));
  for (size_t i = 0; i < hb.size(); ++i) hb[i] = (static_cast<float>(i % 7) - 2.5f) / 2.0f;
  for (size_t i = 0; i < hc.size(); ++i) hc[i] = 0.75f - static_cast<float>(i) / 16.0f;
  cuda::DeviceBuffer db(hb.size() * 4), dc(hc.size() * 4);
  db.upload(hb);
  dc.upload(hc);
  const float alpha = 0.75f, beta = -1.5f;
  k.run(db.ptr(), dc.ptr(), alpha, beta);
  ctx->synchronize();
  std::vector<float> out(hc.size());
  dc.download(out);
  for (int r = 0; r < M; ++r)
    for (int j = 0; j < N; ++j) {
      double acc = 0;  // W·diag(S) = 2·B·0.5 = B
      for (int c = 0; c < K; ++c)
        acc +=
            double(a[static_cast<size_t>(r * K + c)]) * double(hb[static_cast<size_t>(c * N + j)]);
      const double want =
          alpha * (1.0 + r / 8.0) * acc + beta * double(hc[static_cast<size_t>(r * N + j)]);
      EXPECT_NEAR(out[static_cast<size_t>(r * N + j)], want, 1e-5 * (1.0 + std::fabs(want)))
          << "C(" << r << ", " << j << ")";
    }
}

// One compile serves many runs: different B, C, alpha, beta, on a user stream.
TEST(GpuPipeline, OneCompileManyRuns) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CsrMatrix a = lengths_matrix({3, 0, 17, 64, 1, 1, 200, 5, 9, 0, 33}, 256, 5);
  KernelRequest req;
  req.n = 32;
  req.dtype = DType::F16;
  req.c_layout = Layout::ColMajor;
  const CompiledKernel k(ctx, build_kernel(a, req, detect_target(0)));
  cuda::Stream stream;
  const float params[][2] = {{1.0f, 0.0f}, {0.75f, -1.5f}, {-2.0f, 0.5f}, {0.0f, 1.0f}};
  uint64_t seed = 1;
  for (const auto& ab : params) {
    const CheckInputs in = make_check_inputs(k.problem(), seed++, ab[0], ab[1]);
    const Reference ref = compute_reference(a, in);
    const CheckResult r = gpu_check(k, a, in, ref, stream.get());
    EXPECT_TRUE(r.passed) << "alpha " << ab[0] << " beta " << ab[1] << ": " << r.error;
  }
}

// The tuner's check of wide problems compares evenly spread columns of C (the first and last
// among them): it passes for correct kernels in both C layouts and every column count, and the
// columns it does not compare are still computed by the kernel (the run is the full one).
TEST(GpuCheck, SampledColumns) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CsrMatrix a = lengths_matrix({3, 0, 17, 64, 1, 1, 200, 5, 9, 0, 33}, 256, 5);
  for (Layout cl : {Layout::RowMajor, Layout::ColMajor})
    for (int64_t n : {int64_t{17}, int64_t{300}}) {
      KernelRequest req;
      req.n = n;
      req.dtype = DType::F16;
      req.c_layout = cl;
      const CompiledKernel k(ctx, build_kernel(a, req, detect_target(0)));
      SCOPED_TRACE(to_string(k.problem()));
      const GpuCheckPair full = gpu_check(k, a, 9);
      const GpuCheckPair sampled = gpu_check(k, a, 9, 16);
      EXPECT_TRUE(full.passed()) << full.error();
      EXPECT_TRUE(sampled.passed()) << sampled.error();
    }
}

// Wide column groups in narrower block tiles (N >= 64: grid.y tiles of 32 columns and up, each
// group covering its tile): a sample of the enumerated ones, N a multiple of the tile and not,
// both B layouts, fp32 and fp16, within the tight bound.
TEST(GpuCheck, NarrowColumnTilesOfWideGroups) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  std::vector<int64_t> lengths(777);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int64_t>((i * 13) % 41);
  lengths[5] = 300;  // one long row: Nnz splits cut it across blocks
  const CsrMatrix a = lengths_matrix(lengths, 901, 11);
  int checked = 0;
  for (int64_t n : {64, 100})
    for (DType t : {DType::F32, DType::F16})
      for (Layout bl : {Layout::RowMajor, Layout::ColMajor}) {
        const Problem p = Problem::spmm(a.rows, a.cols, n, t, bl, Layout::RowMajor);
        int seen = 0;
        for (const Schedule& s : enumerate_schedules(p, a)) {
          if (s.family_name() != "general") continue;
          const GeneralSchedule& g = s.as<GeneralSchedule>();
          if (g.group_threads == 1 || g.block_cols >= n || seen++ % 17 != 0) continue;
          const CompiledKernel k(ctx, build_kernel(a, p, s, detect_target(0)));
          const GpuCheckPair r = gpu_check(k, a, 40 + static_cast<uint64_t>(checked));
          EXPECT_TRUE(r.passed()) << to_string(p) << " " << to_string(s) << ": " << r.error();
          ++checked;
        }
      }
  EXPECT_GT(checked, 8);
}

// The device-drawn check inputs are bit for bit the host's (make_check_inputs / check_value) in
// every dtype, from any first draw, and the column gather picks the right elements in both layouts.
TEST(GpuCheck, DeviceInputsAreTheHostInputs) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  cuda::Context ctx(0);
  const std::string arch = detect_target(0).arch;
  for (DType t : kDtypes) {
    const size_t w = t == DType::F32 ? 4 : 2;
    for (uint64_t first : {uint64_t{0}, uint64_t{77}, uint64_t{1} << 33}) {
      const int64_t count = 100003;
      cuda::DeviceBuffer buf(static_cast<size_t>(count) * w);
      fill_check_values(arch, buf.ptr(), count, 5, first, t, nullptr);
      std::vector<char> back(buf.bytes());
      buf.download(back.data(), back.size());
      for (int64_t i = 0; i < count; ++i) {
        const float want = check_value(5, first + static_cast<uint64_t>(i), t);
        uint32_t got = 0, bits = 0;
        std::memcpy(&got, back.data() + static_cast<size_t>(i) * w, w);
        if (w == 4)
          std::memcpy(&bits, &want, 4);
        else
          bits = t == DType::F16 ? float_to_half_bits(want) : float_to_bf16_bits(want);
        ASSERT_EQ(got, bits) << to_string(t) << " draw " << first + static_cast<uint64_t>(i);
      }
    }
  }
  // check_value is the host stream's draw: B's draws, then C's.
  const Problem p = Problem::spmm(37, 29, 11, DType::F16, Layout::ColMajor, Layout::RowMajor);
  const CheckInputs in = make_check_inputs(p, 5, 1.0f, 0.0f);
  for (size_t i = 0; i < in.b.size(); ++i) ASSERT_EQ(in.b[i], check_value(5, i, DType::F16));
  for (size_t i = 0; i < in.c0.size(); ++i)
    ASSERT_EQ(in.c0[i], check_value(5, in.b.size() + i, DType::F16));
  for (Layout cl : {Layout::RowMajor, Layout::ColMajor})
    for (DType t : {DType::F32, DType::BF16}) {
      const Problem q = Problem::spmm(1001, 3, 67, t, Layout::RowMajor, cl);
      const size_t w = t == DType::F32 ? 4 : 2;
      const size_t mn = static_cast<size_t>(q.m * q.n);
      std::vector<char> c(mn * w);
      for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<char>((i * 131 + 7) % 251);
      cuda::DeviceBuffer dc(c.size()), dsub(static_cast<size_t>(q.m) * 5 * w);
      dc.upload(c.data(), c.size());
      const std::vector<int64_t> cols = {0, 1, 33, 50, 66};
      gather_check_columns(arch, dc.ptr(), dsub.ptr(), q, cols, nullptr);
      std::vector<char> sub(dsub.bytes());
      dsub.download(sub.data(), sub.size());
      Problem qs = q;
      qs.n = 5;
      for (int64_t r = 0; r < q.m; ++r)
        for (size_t i = 0; i < cols.size(); ++i)
          ASSERT_EQ(std::memcmp(sub.data() + qs.c_index(r, static_cast<int64_t>(i)) * w,
                                c.data() + q.c_index(r, cols[i]) * w, w),
                    0)
              << to_string(q) << " row " << r << " column " << cols[i];
    }
}

// A 30011 x 30011 matrix whose row i holds (i·step) % mod nonzeros: with N = 300 its problem is
// above kDeviceCheckElements, so the paired check draws its inputs on the device.
CsrMatrix device_check_matrix(size_t step, size_t mod, uint64_t seed) {
  std::vector<int64_t> lengths(30011);
  for (size_t i = 0; i < lengths.size(); ++i) lengths[i] = static_cast<int64_t>((i * step) % mod);
  return lengths_matrix(lengths, 30011, seed);
}

// Problems above kDeviceCheckElements draw their check inputs on the device: the check passes a
// correct kernel (all columns and sampled ones, both C layouts, fp32 and fp16) and fails it
// against a matrix that differs in one value.
TEST(GpuCheck, DeviceInputsCheckLargeProblems) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CsrMatrix a = device_check_matrix(7, 23, 3);
  CsrMatrix wrong = a;
  wrong.values[wrong.values.size() / 2] += 0.25f;
  for (DType t : {DType::F32, DType::F16})
    for (Layout cl : {Layout::RowMajor, Layout::ColMajor}) {
      KernelRequest req;
      req.n = 300;
      req.dtype = t;
      req.c_layout = cl;
      const CompiledKernel k(ctx, build_kernel(a, req, detect_target(0)));
      SCOPED_TRACE(to_string(k.problem()));
      ASSERT_TRUE(check_inputs_on_device(k.problem()));
      const GpuCheckPair full = gpu_check(k, a, 9);
      const GpuCheckPair sampled = gpu_check(k, a, 9, 16);
      EXPECT_TRUE(full.passed()) << full.error();
      EXPECT_TRUE(sampled.passed()) << sampled.error();
      EXPECT_FALSE(gpu_check(k, wrong, 9).passed());
      // Column 150 is not among the 16 sampled (0, 19, 39, ...), but 0 is: the changed value's
      // row shows in every column.
      EXPECT_FALSE(gpu_check(k, wrong, 9, 16).passed());
    }
}

// The check's host side computed ahead (as tune does while it refines) gives the check's own
// verdicts: a correct kernel passes and a changed value fails with the same references, and
// references for another seed are refused.
TEST(GpuCheck, PreparedReferencesGiveTheSameVerdicts) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CsrMatrix a = device_check_matrix(5, 19, 4);
  KernelRequest req;
  req.n = 300;
  const CompiledKernel k(ctx, build_kernel(a, req, detect_target(0)));
  ASSERT_TRUE(check_inputs_on_device(k.problem()));
  for (int64_t cols : {int64_t{0}, int64_t{16}}) {
    SCOPED_TRACE(cols);
    const PairedReferences ref = paired_references(k.problem(), a, 9, cols);
    EXPECT_EQ(ref.cols.size(), cols == 0 ? size_t{300} : size_t{16});
    const GpuCheckPair own = gpu_check(k, a, 9, cols);
    const GpuCheckPair prepared = gpu_check(k, a, 9, cols, &ref);
    EXPECT_TRUE(own.passed()) << own.error();
    EXPECT_TRUE(prepared.passed()) << prepared.error();
    EXPECT_EQ(prepared.beta0.rel_error, own.beta0.rel_error);
    EXPECT_EQ(prepared.beta1.rel_error, own.beta1.rel_error);
    // A kernel of a matrix with one value changed, checked against the prepared references of
    // the original: the references are the matrix's, so it must fail.
    CsrMatrix wrong = a;
    wrong.values[wrong.values.size() / 2] += 0.25f;
    const CompiledKernel kw(ctx, build_kernel(wrong, req, detect_target(0)));
    EXPECT_FALSE(gpu_check(kw, a, 9, cols, &ref).passed());
    EXPECT_THROW(gpu_check(k, a, 10, cols, &ref), std::invalid_argument);
  }
}

// The public API on device pointers: Runtime -> Kernel -> run on a stream.
TEST(GpuPipeline, PublicApiRunsOnDevicePointers) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  const CsrMatrix a = lengths_matrix({5, 0, 40, 2, 7, 7, 1}, 96, 9);
  Runtime rt;
  const Kernel k = rt.spmm(a, 8);  // fp32, row-major
  EXPECT_TRUE(k.runnable());
  EXPECT_NO_THROW(parse_schedule(k.schedule()));
  const CheckInputs in = make_check_inputs(k.problem(), 4, 0.75f, -1.5f);
  const Reference ref = compute_reference(a, in);
  cuda::DeviceBuffer db(in.b.size() * 4), dc(in.c0.size() * 4);
  db.upload(in.b);
  dc.upload(in.c0);
  cuda::Stream stream;
  k.run(reinterpret_cast<const void*>(db.ptr()), reinterpret_cast<void*>(dc.ptr()), in.alpha,
        in.beta, stream.get());
  stream.synchronize();
  std::vector<float> out(in.c0.size());
  dc.download(out);
  std::vector<uint32_t> bits(out.size());
  std::memcpy(bits.data(), out.data(), out.size() * 4);
  const CheckResult r =
      compare_output(a, parse_schedule(k.schedule()), in, ref, out, bits, nullptr);
  EXPECT_TRUE(r.passed) << r.error;
}

// A run captured as a CUDA graph (CompiledKernel::graph) and replayed computes what run() does:
// every family's launch sequences (one schedule per family, dtype and prologue/epilogue shape:
// fp32 and fp16 atomic kernels with their prologue and epilogue, store kernels, baked, bitmap_tc,
// cuBLASLt with its beta kernels, cuSPARSE), checked by gpu_check with the replay as the launch,
// C poisoned first. With beta == 0 the graph is replayed twice (the second replay must write C
// again); with beta != 0 once.
TEST(GpuPipeline, CapturedGraphReplaysTheRun) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CsrMatrix a = lengths_matrix({3, 0, 17, 64, 1, 1, 200, 5, 9, 0, 33}, 256, 5);
  cuda::Stream stream;
  const CompileTarget target = detect_target(0);
  EnumerateOptions eo;
  eo.include_specialised = true;
  std::set<std::string> seen, families;
  int checked = 0, atomic_f32 = 0, atomic_f16 = 0;
  for (DType t : {DType::F32, DType::F16}) {
    const Problem p = Problem::spmm(a.rows, a.cols, 24, t, Layout::RowMajor, Layout::RowMajor);
    for (const Schedule& s : enumerate_schedules(p, a, eo)) {
      // The signature comes from an uncompiled build, which is cheap here.
      const codegen::KernelSignature sig = prepare_kernel(a, p, s, target).kernel.signature;
      const bool pro = sig.prologue.present(), epi = sig.epilogue.present();
      const std::string fam(s.family_name());
      if (!seen.insert(fmt::format("{} {} {} {}", to_string(t), fam, pro, epi)).second) continue;
      families.insert(fam);
      atomic_f32 += fam == "general" && pro && t == DType::F32;
      atomic_f16 += fam == "general" && pro && epi;
      const CompiledKernel k(ctx, build_kernel(a, p, s, target));
      SCOPED_TRACE(to_string(p) + " " + to_string(s));
      for (const float beta : {0.0f, -1.5f}) {
        const CheckInputs in =
            make_check_inputs(p, 60 + static_cast<uint64_t>(checked), 0.75f, beta);
        const Reference ref = compute_reference(a, in);
        const CheckLaunch replay = [&](CUdeviceptr b, CUdeviceptr c, float al, float be,
                                       CUstream st) {
          const cuda::Graph g = k.graph(b, c, al, be);
          g.launch(st);
          if (be == 0.0f) g.launch(st);
        };
        const CheckResult r =
            gpu_check(k, a, in, ref, stream.get(), nullptr, true, nullptr, replay);
        EXPECT_TRUE(r.passed) << "beta " << beta << ": " << r.error;
      }
      ++checked;
    }
  }
  EXPECT_EQ(atomic_f32, 1);
  EXPECT_EQ(atomic_f16, 1);
  for (const char* f : {"general", "baked", "bitmap_tc", "dense", "cusparse"})
    EXPECT_TRUE(families.count(f))
        << f << " not among " << fmt::format("{}", fmt::join(families, ", "));
  EXPECT_GE(checked, 8);
}

// The public API's capture: a Kernel's graph replays its run (fp16 with an fp32 workspace, the
// three-kernel sequence) on a caller's stream, and keeps the kernel alive after the Kernel goes.
TEST(GpuPipeline, PublicApiCaptureReplays) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  const CsrMatrix a = lengths_matrix({5, 0, 40, 2, 7, 7, 1, 90}, 96, 9);
  Runtime rt;
  const Problem p =
      Problem::spmm(a.rows, a.cols, 8, DType::F16, Layout::RowMajor, Layout::RowMajor);
  // An atomic general schedule (rows split across blocks): prologue, kernel, epilogue.
  std::string spec;
  for (const Schedule& s : enumerate_schedules(p, a))
    if (s.family_name() == "general" &&
        prepare_kernel(a, p, s, detect_target(0)).kernel.signature.epilogue.present()) {
      spec = to_string(s);
      break;
    }
  ASSERT_FALSE(spec.empty());
  SpmmOptions o;
  o.dtype = DType::F16;
  o.schedule = spec;
  o.use_cache = false;
  const CheckInputs in = make_check_inputs(p, 12, 1.0f, 0.0f);
  const Reference ref = compute_reference(a, in);
  const std::vector<char> b16 = to_device_values(in.b, DType::F16);
  cuda::DeviceBuffer db(b16.size()), dc(in.c0.size() * 2);
  db.upload(b16.data(), b16.size());
  std::optional<KernelGraph> g;
  {
    const Kernel k = rt.spmm(a, 8, o);
    g.emplace(
        k.capture(reinterpret_cast<const void*>(db.ptr()), reinterpret_cast<void*>(dc.ptr())));
  }
  dc.fill_u16(static_cast<uint16_t>(poison_bits(DType::F16)));
  cuda::Stream stream;
  g->launch(stream.get());
  stream.synchronize();
  std::vector<uint16_t> raw(in.c0.size());
  dc.download(raw.data(), raw.size() * 2);
  std::vector<float> out(raw.size());
  std::vector<uint32_t> bits(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    out[i] = half_bits_to_float(raw[i]);
    bits[i] = raw[i];
  }
  const CheckResult r = compare_output(a, parse_schedule(spec), in, ref, out, bits, nullptr);
  EXPECT_TRUE(r.passed) << r.error;
}

// Through the public API with exact-size fp16 buffers, as a new user runs it: the DLMC
// ffn_conv1 weight (random pruning 90 %, 2048 x 512, from ../shared/data/dlmc), N = 64,
// alpha = 1, beta = 0.5 (and beta = 0 with C poisoned), one Atomic GeneralSparse, one split-K and
// one ksplit = 1 bitmap_tc schedule. Every element must be within the tight bound of
// ir/error_bound.h (compare_output uses it): one fp32 value alpha·acc + beta·C₀ rounded to fp16
// once.
TEST(GpuPipeline, TightBoundFp16BetaHalfFfnConv1) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  const fs::path path = testing::data_dir() / "dlmc/transformer/random_pruning/0.9" /
                        "body_encoder_layer_0_ffn_conv1_fully_connected.smtx";
  const CsrMatrix a = load_matrix(path.string()).matrix;
  ASSERT_EQ(a.rows, 2048);
  ASSERT_EQ(a.cols, 512);
  Runtime rt;
  cuda::Stream stream;
  for (const char* spec :
       {"general;block=nnz:128;warp=nnz:32;thread=nnz:16;warps=4;group=16;tcols=4;bcols=64;"
        "red=total,total,bitmap;sort=0;pad=32;interleave=0;vec=4",
        "bitmap_tc;warps=4;mt=1;kt=1;ksplit=4;stages=2;mma=sync",
        "bitmap_tc;warps=4;mt=1;kt=4;ksplit=1;stages=2;mma=sync"}) {
    SpmmOptions o;
    o.dtype = DType::F16;
    o.schedule = spec;
    o.top_k = 0;
    o.use_cache = false;
    const Kernel k = rt.spmm(a, 64, o);
    const Schedule s = parse_schedule(k.schedule());
    ASSERT_EQ(s, parse_schedule(spec));
    for (float beta : {0.5f, 0.0f}) {
      const CheckInputs in = make_check_inputs(k.problem(), 7, 1.0f, beta);
      const Reference ref = compute_reference(a, in);
      std::vector<uint16_t> hb(in.b.size()), hc(in.c0.size());
      for (size_t i = 0; i < hb.size(); ++i) hb[i] = float_to_half_bits(in.b[i]);
      for (size_t i = 0; i < hc.size(); ++i)
        hc[i] = beta == 0.0f ? static_cast<uint16_t>(poison_bits(DType::F16))
                             : float_to_half_bits(in.c0[i]);
      cuda::DeviceBuffer db(hb.size() * 2), dc(hc.size() * 2);  // exactly B's and C's size
      db.upload(hb);
      dc.upload(hc);
      k.run(reinterpret_cast<const void*>(db.ptr()), reinterpret_cast<void*>(dc.ptr()), 1.0f, beta,
            stream.get());
      stream.synchronize();
      dc.download(hc);
      std::vector<float> out(hc.size());
      std::vector<uint32_t> bits(hc.size());
      for (size_t i = 0; i < hc.size(); ++i) {
        out[i] = half_bits_to_float(hc[i]);
        bits[i] = hc[i];
      }
      const CheckResult r = compare_output(a, s, in, ref, out, bits, nullptr);
      std::printf("[ bound    ] %s beta=%g: max |out - exact| / tight bound %.3f\n", spec, beta,
                  r.max_ratio);
      EXPECT_TRUE(r.passed) << spec << " beta " << beta << ": " << r.error;
      EXPECT_LE(r.max_ratio, 1.0) << spec << " beta " << beta;
    }
  }
}

// ---- MACKO: the same checks for the MACKO family -------------------------------------------
// fp16 and bf16, N in {1, 2, 7, 8} (config c: dtype c % 2, N (c / 2) % 4, layouts rotating),
// every MACKO kind (warp per row, split row where rows are long) per config, the schedule
// rotating over b = 2/4/8, unroll and block shape. Expected on an H100 host: ~500 kernels,
// 20-40 s (NVRTC on 16 threads dominates).
void run_pruned(const std::string& family, double sparsity) {
  const std::string name =
      fmt::format("{}_pruned{}", family, static_cast<int>(sparsity * 100 + 0.5));
  Campaign camp(name, family);
  if (!camp.wanted(name)) GTEST_SKIP() << "filtered out";
  const DenseMatrix w = make_llm_weight(4096, 11008, 42);
  PruneSpec spec;
  spec.method = PruneMethod::Magnitude;
  spec.sparsity = sparsity;
  auto a = std::make_shared<CsrMatrix>(prune(w, spec));
  a->source = name;
  camp.add_matrix(name, a, 0, 8, /*all_pairs=*/true);  // all 8 (dtype, N) pairs
  camp.run();
  camp.report();
}

TEST(GpuMacko, SuiteSparse) {
  SKIP_WITHOUT_GPU();
  run_collection("suitesparse", 0, 2, "macko");
}

TEST(GpuMacko, Dlmc) {
  SKIP_WITHOUT_GPU();
  run_collection("dlmc", 5, 2, "macko");
}

TEST(GpuMacko, Pruned) {
  SKIP_WITHOUT_GPU();
  run_pruned("macko", 0.5);
  run_pruned("macko", 0.7);
  run_pruned("macko", 0.9);
}

// Staged MACKO with long rows cut into segments (items mode, macko_items): rows of 5000-6000
// nonzeros among short and empty ones, so several warps share a row and the block adds its
// segments; schedules with and without the row order, N 1 and 2, fp16 and bf16. N = 8 runs the
// same schedules in rows mode (whole rows, the bounds in front of B).
TEST(GpuMacko, CutRows) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  std::vector<int64_t> lengths;
  for (int r = 0; r < 150; ++r)
    lengths.push_back(r % 37 == 5 ? 6000 - r : (r % 11 == 3 ? 0 : 30 + (r * 7) % 90));
  const CsrMatrix a = lengths_matrix(lengths, 6100, 13);
  const char* specs[] = {
      "macko;delta=4;warps=4;unroll=1;rpw=1;sort=0",
      "macko;delta=8;warps=8;unroll=2;rpw=2;sort=1",
      "macko;delta=4;warps=16;unroll=4;rpw=1;sort=1",
  };
  int checked = 0, cut = 0;
  for (int64_t n : {1, 2, 8})
    for (const char* spec : specs)
      for (DType dt : {DType::F16, DType::BF16}) {
        const Problem p =
            n == 1 ? Problem::spmv(a.rows, a.cols, dt) : Problem::spmm(a.rows, a.cols, n, dt);
        // N = 1 in bf16 stages B as fp32.
        const Schedule s = parse_schedule(fmt::format(
            "{};cols={};stage={}", spec, n, n == 1 && dt == DType::BF16 ? "shared_f32" : "shared"));
        SCOPED_TRACE(fmt::format("{} {}", to_string(p), to_string(s)));
        EXPECT_EQ(macko_uses_items(s.as<MackoSchedule>()), n <= 2);
        if (macko_uses_items(s.as<MackoSchedule>())) {
          const MackoFormat f = pack_macko(a, s.as<MackoSchedule>().delta_bits);
          const std::vector<int64_t> it = macko_items(f, s.as<MackoSchedule>());
          const int64_t ipb = macko_items_per_block(s.as<MackoSchedule>());
          for (size_t h = static_cast<size_t>(ipb - 1) * kMackoItemInts + 1; h < it.size();
               h += static_cast<size_t>(ipb) * kMackoItemInts)
            cut += static_cast<int>(it[h]);  // the header's cut flag
        }
        const CompiledKernel k(ctx, build_kernel(a, p, s, target));
        const GpuCheckPair r = gpu_check(k, a, 7 + static_cast<uint64_t>(checked));
        EXPECT_TRUE(r.passed()) << r.error();
        ++checked;
      }
  ctx->synchronize();
  EXPECT_EQ(checked, 18);
  EXPECT_GT(cut, 0);
}

// bitmap_tc: fp16 and bf16, N in {8, 24, 64, 128} (config c: dtype c % 2, N (c / 2) % 4), B
// row-major and C either way, both kinds (one warp finishes a row / split K through the fp32
// workspace), the schedule rotating over warps, row tiles per warp and stages.
TEST(GpuBitmapTc, SuiteSparse) {
  SKIP_WITHOUT_GPU();
  run_collection("suitesparse", 0, 2, "bitmap_tc");
}

TEST(GpuBitmapTc, Edge) {
  SKIP_WITHOUT_GPU();
  run_collection("edge", 7, 2, "bitmap_tc");
}

TEST(GpuBitmapTc, Dlmc) {
  SKIP_WITHOUT_GPU();
  run_collection("dlmc", 5, 2, "bitmap_tc");
}

// The two weights of the bitmap_tc variant tests: 333 x 1000 (the last row tile and column tile
// partial, empty rows, a dense row, a 900-long row) and a magnitude-pruned (70 %) 1024 x 4096
// LLM-like weight, from the given seeds.
std::pair<CsrMatrix, CsrMatrix> bitmap_test_matrices(uint64_t odd_seed, uint64_t weight_seed) {
  std::vector<int64_t> lengths;
  for (int r = 0; r < 333; ++r) lengths.push_back(r % 9 == 4 ? 0 : 5 + (r * 37) % 200);
  lengths[100] = 1000;
  lengths[200] = 900;
  PruneSpec spec;
  spec.method = PruneMethod::Magnitude;
  spec.sparsity = 0.7;
  return {lengths_matrix(lengths, 1000, odd_seed),
          prune(make_llm_weight(1024, 4096, weight_seed), spec)};
}

// Checks the four `specs` in rotation over {odd, pruned} x `ns` x {fp16, bf16} against the CPU
// reference (gpu_check: poisoned C, two betas; seeds from `seed`); `on_build` sees each build
// before it is loaded. Returns the number of kernels checked.
int check_bitmap_rotation(const std::shared_ptr<cuda::Context>& ctx, const CompileTarget& target,
                          const std::pair<CsrMatrix, CsrMatrix>& mats,
                          const char* const (&specs)[4], const int64_t (&ns)[4], uint64_t seed,
                          const std::function<void(const KernelBuild&)>& on_build = {}) {
  int checked = 0;
  for (const CsrMatrix* a : {&mats.first, &mats.second})
    for (int64_t n : ns)
      for (DType dt : {DType::F16, DType::BF16}) {
        const char* sp = specs[static_cast<size_t>(checked) % 4];
        const Problem p = Problem::spmm(a->rows, a->cols, n, dt);
        const Schedule s = parse_schedule(sp);
        SCOPED_TRACE(fmt::format("{} {}", to_string(p), sp));
        const KernelBuild b = build_kernel(*a, p, s, target);
        if (on_build) on_build(b);
        const CompiledKernel k(ctx, b);
        const GpuCheckPair r = gpu_check(k, *a, seed + static_cast<uint64_t>(checked));
        EXPECT_TRUE(r.passed()) << r.error();
        ++checked;
      }
  return checked;
}

// bitmap_tc with wgmma (sm_90 only): every N the emitter takes (8, 16, 32, 64, 128), fp16 and bf16,
// on 333 x 1000 (the last warpgroup's rows and the last column tile partial, empty rows, a dense
// row, a 900-long row) and on a magnitude-pruned 1024 x 4096 weight; schedules over warps, mt, kt,
// ksplit and stages, each against the CPU reference (gpu_check: poisoned C, two betas).
TEST(GpuBitmapTc, Wgmma) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  if (!target.limits.wgmma) GTEST_SKIP() << "wgmma needs an sm_90 device";
  const char* const specs[4] = {
      "bitmap_tc;warps=4;mt=1;kt=1;ksplit=1;stages=2;mma=wgmma",
      "bitmap_tc;warps=8;mt=2;kt=2;ksplit=3;stages=2;mma=wgmma",
      "bitmap_tc;warps=4;mt=2;kt=2;ksplit=1;stages=3;mma=wgmma",
      "bitmap_tc;warps=8;mt=1;kt=2;ksplit=4;stages=3;mma=wgmma",
  };
  const int64_t ns[4] = {8, 16, 32, 64};
  const int checked = check_bitmap_rotation(ctx, target, bitmap_test_matrices(21, 7), specs, ns, 31,
                                            [](const KernelBuild& b) {
                                              EXPECT_EQ(b.compiled.arch.back(), 'a');  // sm_90a
                                            });
  ctx->synchronize();
  EXPECT_EQ(checked, 16);
}

// bitmap_tc with vals=pair (a 32-bit word per register of A holding a value): N {8, 24, 64, 128},
// fp16 and bf16, on the odd 333 x 1000 matrix and a 70 %-pruned 1024 x 4096 weight; schedules
// over warps, mt, kt, ksplit, stages and one wgmma, each against the CPU reference (gpu_check:
// poisoned C, two betas).
TEST(GpuBitmapTc, PairValues) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  const std::pair<CsrMatrix, CsrMatrix> mats = bitmap_test_matrices(23, 9);
  const char* const specs[4] = {
      "bitmap_tc;warps=4;mt=2;kt=1;ksplit=2;stages=2;vals=pair",
      "bitmap_tc;warps=8;mt=1;kt=2;ksplit=1;stages=3;vals=pair",
      "bitmap_tc;warps=4;mt=1;kt=4;ksplit=3;stages=2;vals=pair",
      "bitmap_tc;warps=1;mt=2;kt=1;ksplit=1;stages=2;vals=pair",
  };
  const int64_t ns[4] = {8, 24, 64, 128};
  int checked = check_bitmap_rotation(ctx, target, mats, specs, ns, 41);
  if (target.limits.wgmma) {
    const CsrMatrix& pruned = mats.second;
    const Problem p = Problem::spmm(pruned.rows, pruned.cols, 64, DType::F16);
    const Schedule s = parse_schedule("bitmap_tc;warps=4;mt=2;kt=1;ksplit=2;mma=wgmma;vals=pair");
    const CompiledKernel k(ctx, build_kernel(pruned, p, s, target));
    const GpuCheckPair r = gpu_check(k, pruned, 99);
    EXPECT_TRUE(r.passed()) << r.error();
    ++checked;
  }
  ctx->synchronize();
  EXPECT_GE(checked, 16);
}

// bitmap_tc with pipe=bulk (sm_90 only): bulk copies on mbarriers, B arranged by the
// b_transform; with wgmma two A register sets. wgmma: every N it takes (8, 16, 32, 64); mma.sync:
// N {8, 24, 64, 128}; fp16 and bf16, on the odd 333 x 1000 matrix and a 70 %-pruned 1024 x 4096
// weight; schedules over warps, mt, ksplit, stages, both value layouts and clusters of 2 and 4
// row blocks, each against the CPU reference (gpu_check: poisoned C, two betas).
TEST(GpuBitmapTc, BulkPipe) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  if (!target.limits.wgmma) GTEST_SKIP() << "pipe=bulk feeds wgmma, which needs an sm_90 device";
  const std::pair<CsrMatrix, CsrMatrix> mats = bitmap_test_matrices(25, 11);
  int checked = 0;
  for (const char* vals : {"", ";vals=pair"}) {
    const std::string specs_s[4] = {
        std::string("bitmap_tc;warps=4;mt=1;ksplit=1;stages=4;mma=wgmma;pipe=bulk") + vals,
        std::string("bitmap_tc;warps=8;mt=2;ksplit=3;stages=3;mma=wgmma;pipe=bulk;copy=step") +
            vals,
        std::string("bitmap_tc;warps=4;mt=2;ksplit=1;stages=6;mma=wgmma;pipe=bulk") + vals,
        std::string("bitmap_tc;warps=8;mt=1;ksplit=4;stages=4;mma=wgmma;pipe=bulk;copy=step") +
            vals,
    };
    const char* const specs[4] = {specs_s[0].c_str(), specs_s[1].c_str(), specs_s[2].c_str(),
                                  specs_s[3].c_str()};
    const int64_t ns[4] = {8, 16, 32, 64};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, vals[0] ? 53 : 47,
                                     [](const KernelBuild& b) {
                                       EXPECT_EQ(b.compiled.arch.back(), 'a');  // sm_90a
                                       EXPECT_TRUE(b.kernel.signature.b_transform.present());
                                     });
  }
  {
    // mma.sync with pipe=bulk (B in the staged tile's padded rows): N {8, 24, 64, 128}.
    const char* const specs[4] = {
        "bitmap_tc;warps=4;mt=2;ksplit=2;stages=3;pipe=bulk",
        "bitmap_tc;warps=8;mt=1;ksplit=1;stages=2;vals=pair;pipe=bulk;copy=step",
        "bitmap_tc;warps=1;mt=1;ksplit=3;stages=4;pipe=bulk;copy=step",
        "bitmap_tc;warps=4;mt=1;ksplit=1;stages=6;vals=pair;pipe=bulk",
    };
    const int64_t ns[4] = {8, 24, 64, 128};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 59);
  }
  {
    // wgmma at N = 128 (m64n128k16), mt = 1 as enumerated: both copy kinds, 4 and 8 warps.
    const char* const specs[4] = {
        "bitmap_tc;warps=8;mt=1;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step",
        "bitmap_tc;warps=4;mt=1;ksplit=3;stages=6;mma=wgmma;vals=pair;pipe=bulk",
        "bitmap_tc;warps=4;mt=1;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step",
        "bitmap_tc;warps=8;mt=1;ksplit=1;stages=4;mma=wgmma;pipe=bulk",
    };
    const int64_t ns[4] = {128, 128, 128, 128};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 61);
  }
  {
    // clusters (B multicast by the cluster's first block): 2 and 4 row blocks, wgmma and
    // mma.sync, split K; 333 rows leave whole blocks past M in the last cluster.
    const char* const specs[4] = {
        "bitmap_tc;warps=4;mt=1;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster="
        "2",
        "bitmap_tc;warps=8;mt=1;ksplit=3;stages=3;mma=wgmma;pipe=bulk;copy=step;cluster=4",
        "bitmap_tc;warps=4;mt=2;ksplit=2;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;cluster="
        "4",
        "bitmap_tc;warps=4;mt=1;ksplit=1;stages=2;pipe=bulk;copy=step;cluster=2",
    };
    const int64_t ns[4] = {64, 32, 128, 64};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 67, [](const KernelBuild& b) {
      EXPECT_GT(b.kernel.signature.launch.cluster_x, 1);
    });
  }
  ctx->synchronize();
  EXPECT_EQ(checked, 80);
}

// bitmap_tc with b=map (sm_90 only): B copied by TMA through a tensor map in the swizzle its
// rows take (32, 64, 128 bytes; N = 128 in two boxes), no arrangement kernel. Every N it takes
// (16, 32, 64, 128), fp16 and bf16, on the odd 333 x 1000 matrix (the last column tile's rows
// past K arrive as zeros) and a 70 %-pruned 1024 x 4096 weight; both copy kinds, both value
// layouts, split K, and clusters of 2 and 4 (B multicast by TMA), each against the CPU reference
// (gpu_check: poisoned C, two betas).
TEST(GpuBitmapTc, MapB) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  if (!target.limits.wgmma) GTEST_SKIP() << "b=map feeds wgmma, which needs an sm_90 device";
  const std::pair<CsrMatrix, CsrMatrix> mats = bitmap_test_matrices(27, 13);
  const auto no_transform = [](const KernelBuild& b) {
    EXPECT_FALSE(b.kernel.signature.b_transform.present());
    EXPECT_EQ(b.kernel.signature.b_work_bytes, 0);
  };
  int checked = 0;
  {
    const char* const specs[4] = {
        // mt = 2 at N = 16 and 64, mt = 1 at N = 32 and 128 (as enumerated: mt = 2 at N = 128
        // exceeds the registers)
        "bitmap_tc;warps=8;mt=2;ksplit=4;stages=3;mma=wgmma;pipe=bulk;copy=step;b=map",
        "bitmap_tc;warps=4;mt=2;ksplit=1;stages=4;mma=wgmma;pipe=bulk;b=map",
        "bitmap_tc;warps=8;mt=1;ksplit=1;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map",
        "bitmap_tc;warps=4;mt=1;ksplit=3;stages=4;mma=wgmma;vals=pair;pipe=bulk;b=map",
    };
    const int64_t ns[4] = {16, 32, 64, 128};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 71, no_transform);
  }
  {
    const char* const specs[4] = {
        "bitmap_tc;warps=4;mt=1;ksplit=1;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;"
        "cluster=2;b=map",
        "bitmap_tc;warps=8;mt=1;ksplit=3;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;"
        "cluster=4;b=map",
        "bitmap_tc;warps=4;mt=1;ksplit=2;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;"
        "cluster=4;b=map",
        "bitmap_tc;warps=8;mt=1;ksplit=8;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;"
        "cluster=2;b=map",
    };
    const int64_t ns[4] = {64, 32, 128, 16};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 73, [&](const KernelBuild& b) {
      no_transform(b);
      EXPECT_GT(b.kernel.signature.launch.cluster_x, 1);
    });
  }
  ctx->synchronize();
  EXPECT_EQ(checked, 32);
}

// bitmap_tc with decode=scatter (sm_90 only): each warp stores its row tile's values at their
// offsets into a zeroed dense tile, and wgmma reads A from shared memory in the 128-byte swizzle.
// N 16/32/64/128, fp16 and bf16, the odd 333 x 1000 matrix (a partial last row tile and column
// tile, empty rows) and a 70 %-pruned 1024 x 4096 weight; four and eight warps, two to six
// stages, split K and clusters of 2 and 4, each against the CPU reference (gpu_check: poisoned
// C, two betas).
TEST(GpuBitmapTc, ScatterDecode) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  if (!target.limits.wgmma) GTEST_SKIP() << "decode=scatter feeds wgmma, which needs sm_90";
  const std::pair<CsrMatrix, CsrMatrix> mats = bitmap_test_matrices(29, 17);
  int checked = 0;
  {
    const char* const specs[4] = {
        "bitmap_tc;warps=8;mt=1;ksplit=4;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;"
        "decode=scatter",
        "bitmap_tc;warps=4;mt=1;ksplit=1;stages=6;mma=wgmma;pipe=bulk;copy=step;b=map;"
        "decode=scatter",
        "bitmap_tc;warps=8;mt=1;ksplit=1;stages=2;mma=wgmma;pipe=bulk;copy=step;b=map;"
        "decode=scatter",
        "bitmap_tc;warps=4;mt=1;ksplit=3;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;"
        "decode=scatter",
    };
    const int64_t ns[4] = {16, 32, 64, 128};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 79, [](const KernelBuild&) {});
  }
  {
    const char* const specs[4] = {
        "bitmap_tc;warps=4;mt=1;ksplit=1;stages=6;mma=wgmma;pipe=bulk;copy=step;cluster=2;b=map;"
        "decode=scatter",
        "bitmap_tc;warps=8;mt=1;ksplit=3;stages=4;mma=wgmma;pipe=bulk;copy=step;cluster=4;b=map;"
        "decode=scatter",
        "bitmap_tc;warps=4;mt=1;ksplit=2;stages=4;mma=wgmma;pipe=bulk;copy=step;cluster=4;b=map;"
        "decode=scatter",
        "bitmap_tc;warps=8;mt=1;ksplit=8;stages=4;mma=wgmma;pipe=bulk;copy=step;cluster=2;b=map;"
        "decode=scatter",
    };
    const int64_t ns[4] = {64, 32, 128, 16};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 83, [&](const KernelBuild& b) {
      EXPECT_GT(b.kernel.signature.launch.cluster_x, 1);
    });
  }
  ctx->synchronize();
  EXPECT_EQ(checked, 32);
}

// bitmap_tc with kred=cluster (sm_90 only): a row block's K parts run as one cluster and add
// their sums over distributed shared memory. N 16/32/64/128, fp16 and bf16, the odd 333 x 1000
// matrix (16 column tiles: 5 K parts of 4 tiles leave the last one empty) and a 70 %-pruned
// 1024 x 4096 weight; 2..8 K parts, four and eight warps, wgmma with both value layouts and
// copy kinds, and mma.sync, each against the CPU reference (gpu_check: poisoned C, two betas).
TEST(GpuBitmapTc, ClusterKReduce) {
  SKIP_WITHOUT_GPU();
  if (env_flag("SPARSEGEN_GPU_TEST_DRY")) GTEST_SKIP() << "dry run";
  auto ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = detect_target(0);
  if (!target.limits.wgmma) GTEST_SKIP() << "kred=cluster needs thread-block clusters (sm_90)";
  const std::pair<CsrMatrix, CsrMatrix> mats = bitmap_test_matrices(31, 19);
  const auto no_workspace = [](const KernelBuild& b) {
    EXPECT_EQ(b.kernel.signature.workspace_bytes, 0);
    EXPECT_GT(b.kernel.signature.launch.cluster_x, 1);
  };
  int checked = 0;
  {
    const char* const specs[4] = {
        "bitmap_tc;warps=8;mt=1;ksplit=4;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map;"
        "kred=cluster",
        "bitmap_tc;warps=4;mt=1;ksplit=5;stages=6;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map;"
        "kred=cluster",
        "bitmap_tc;warps=8;mt=1;ksplit=2;stages=4;mma=wgmma;vals=pair;pipe=bulk;b=map;"
        "kred=cluster",
        "bitmap_tc;warps=4;mt=1;ksplit=8;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map;"
        "kred=cluster",
    };
    const int64_t ns[4] = {16, 32, 64, 128};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 89, no_workspace);
  }
  {
    const char* const specs[4] = {
        "bitmap_tc;warps=4;mt=1;ksplit=3;stages=4;mma=wgmma;pipe=bulk;copy=step;b=map;"
        "kred=cluster",
        "bitmap_tc;warps=4;mt=2;ksplit=4;stages=3;pipe=bulk;kred=cluster",
        "bitmap_tc;warps=8;mt=1;ksplit=8;stages=4;mma=wgmma;pipe=bulk;copy=tile;b=map;"
        "kred=cluster",
        "bitmap_tc;warps=8;mt=1;ksplit=2;stages=4;mma=wgmma;vals=pair;pipe=bulk;copy=step;b=map;"
        "kred=cluster",
    };
    const int64_t ns[4] = {64, 32, 128, 16};
    checked += check_bitmap_rotation(ctx, target, mats, specs, ns, 97, no_workspace);
  }
  ctx->synchronize();
  EXPECT_EQ(checked, 32);
}

TEST(GpuBitmapTc, Pruned) {
  SKIP_WITHOUT_GPU();
  run_pruned("bitmap_tc", 0.5);
  run_pruned("bitmap_tc", 0.9);
}

}  // namespace
}  // namespace sparsegen
