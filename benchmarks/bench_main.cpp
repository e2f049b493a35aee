// `sparsegen-bench` (also reached as `sparsegen bench ...`): our generated kernels against dense
// cuBLAS and cuSPARSE CSR in one process.
//
//   sparsegen-bench FILE -n 8 [--dtype fp16] [--schedule SPEC | --best-of K] [--json out.json]
//   sparsegen-bench --suite llm|suitesparse|small|all [--quick] [--best-of K] [--json out.json]
//   sparsegen-bench (FILE | --suite ...) --exhaustive [--top-k K] [--exhaustive-limit L]
//
// --exhaustive measures the search itself (benchmarks/search_quality.h), not the baselines: per
// case, the tuner's search as `sparsegen tune` runs it (compiler/tune.h, cache off, top-k K,
// default 8) and its wall time, then every enumerated schedule (MACKO included, as the tuner
// enumerates) built on up to 16 threads while the GPU checks and screens each as it arrives;
// the fastest 3 and the search's pick are measured in full; ratio = best / pick. An enumeration
// larger than L (default 400) is sampled (an even spread of L plus the top k) and labelled capped.
//
// For every case (matrix, N, dtype): our kernel (compiler/pipeline.h; the given --schedule, or the
// cost model's top pick, or with --best-of K the fastest measured of the model's top K and of
// --refine R more near the fastest of them, R = K / 2 by default: `sparsegen tune`'s search),
// cuBLAS dense (GEMM; for N = 1 also GEMV, the faster kept) and cuSPARSE CSR (every SpMM/SpMV CSR
// algorithm and dense layout, the fastest kept). Every output is checked once against the CPU
// reference (compiler/gpu_check.h) before it is timed; a failing one is reported and not timed.
// Timing: runtime/timing.h (L2 flushed before every run, events, median of --repeats runs after
// --warmup runs). Several candidates of one method are first screened with 5 runs each; the fastest
// is then measured in full.
//
// The LLM suite: shapes 4096x4096, 11008x4096, 4096x11008, 12288x12288, 28672x7168 (rows x cols
// of A, i.e. M x K), sparsity 50/70/90 %, random and magnitude pruning (ir/gen/pruning.h, seed
// --seed), N = 1, 8, 32, 64, fp16. Pruned matrices are cached as sparsegen CSR containers under
// --cache-dir (default $BENCH_DIR/cache) and reused across N and runs. The SuiteSparse suite: every
// real matrix under $SPARSEGEN_DATA/suitesparse with at least --min-nnz nonzeros, fp32, N = 8, 32,
// 64. --quick: every shape at 50/70/90 % magnitude plus random 70 % for two shapes, N = 1, 8, 32,
// 64; SuiteSparse matrices with >= 10000 nonzeros. The small suite (where a kernel's fixed cost
// decides): every real matrix under $SPARSEGEN_DATA/suitesparse and $SPARSEGEN_DATA/edge with
// fewer than --max-nnz (default 100000) nonzeros and at least one row and column, fp32, N = 1, 8,
// 32; its summary counts the cases where ours is at least as fast as cuSPARSE.
//
// Output: one line per case on stdout; while it runs, a progress bar on stderr when that is a
// terminal (cases done, elapsed, ETA, the current case and step). --json FILE.json also writes
// FILE.svg next to it (benchmarks/bench_plot.h: the speedups per case, or the search quality;
// --no-plot: none), both rewritten after every case.
//
// Exit codes: 0 success; 1 bad value (the message names the flag or file); 2 bad command line;
// 3 no GPU / CUDA or library error (nothing measured); 4 some output failed its correctness check
// (everything else is still measured and written).
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "benchmarks/baselines.h"
#include "benchmarks/bench_plot.h"
#include "benchmarks/report.h"
#include "benchmarks/search_quality.h"
#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "costmodel/features.h"
#include "costmodel/linear_model.h"
#include "costmodel/model_registry.h"
#include "costmodel/schedule_features.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/gen/pruning.h"
#include "ir/io/csr_container.h"
#include "ir/io/load.h"
#include "ir/parallel.h"
#include "ir/problem.h"
#include "ir/progress_line.h"
#include "ir/schedule.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/timing.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace sparsegen::bench {
namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Args {
  std::string file;
  std::vector<int64_t> ns;
  std::string dtype;
  std::string schedule;
  std::string family;  // --family: only this schedule family's candidates (exploration runs)
  bool generated_only = false;  // --generated-only: no library candidates (IrFamily::library)
  bool graph = false;           // --graph: the pick also timed as a replay of its CUDA graph
  int best_of = 0;              // 0: not given
  int refine = -1;              // second-round candidates (tune's --refine); -1: best_of / 2
  std::string suite;
  bool quick = false;
  std::string json;
  bool no_plot = false;  // --no-plot: no SVG next to the JSON
  int repeats = 20;
  int warmup = 3;
  std::string cache_dir;
  bool no_cache = false;
  std::string data_dir;
  std::string tensor;
  uint64_t seed = 0;
  int64_t min_nnz = -1;  // -1: preset default
  int64_t max_nnz = -1;  // -1: preset default (the small suite: 100000 exclusive; else none)
  double max_dense_gib = 4.0;
  double time_limit_s = 0;
  std::vector<std::string> filter;  // any of these substrings of the matrix name
  bool dry_run = false;
  bool exhaustive = false;
  int exhaustive_limit = 400;
  int top_k = 8;  // the search's k in --exhaustive (sparsegen tune's default on a GPU)
  std::string command_line;
};

using Warn = std::function<void(const std::string&)>;
// Names the step a case is in ("cuBLAS", "screen 12/400"): the progress bar's note.
using Step = std::function<void(const std::string&)>;

// One matrix of a run and the cases (N values) measured on it.
struct MatrixSpec {
  std::string suite;    // "llm", "suitesparse", "small", "file"
  std::string name;     // for progress lines and --filter
  std::string pruning;  // llm only
  double target_sparsity = 0;
  int64_t rows = 0, cols = 0;
  DType dtype = DType::F16;
  std::vector<int64_t> ns;
  // Makes the matrix; `warn` prints a warning (the progress bar cleared first).
  std::function<CsrMatrix(const Warn& warn)> load;
};

// True once --time-limit has passed since t_start; prints how many cases are left unrun.
bool time_limit_reached(const Args& a, Clock::time_point t_start, size_t cases_left,
                        ProgressLine& bar) {
  if (a.time_limit_s <= 0 || seconds_since(t_start) <= a.time_limit_s) return false;
  bar.clear();
  std::printf("sparsegen-bench: --time-limit %.0f s reached; %zu cases not run\n", a.time_limit_s,
              cases_left);
  return true;
}

// The spec's matrix, checked against its dtype's range; nullopt (recorded in `skipped` and
// printed) when it cannot be used.
std::optional<CsrMatrix> load_or_skip(const MatrixSpec& spec, nlohmann::json& skipped,
                                      ProgressLine& bar) {
  try {
    CsrMatrix m = spec.load([&bar](const std::string& msg) {
      bar.clear();
      std::fprintf(stderr, "sparsegen-bench: %s\n", msg.c_str());
    });
    check_value_range(m, spec.dtype);
    return m;
  } catch (const UserError& e) {
    skipped.push_back({{"matrix", spec.name}, {"reason", e.what()}});
    bar.clear();
    std::printf("  skip %s: %s\n", spec.name.c_str(), e.what());
    return std::nullopt;
  }
}

const std::vector<std::pair<int64_t, int64_t>> kLlmShapes = {
    {4096, 4096}, {11008, 4096}, {4096, 11008}, {12288, 12288}, {28672, 7168}};

// ---------------------------------------------------------------- validation

DType parse_dtype_flag(const std::string& s) {
  const auto d = parse_dtype(s);
  if (!d) throw UserError(fmt::format("--dtype: expected fp32, fp16 or bf16, found '{}'", s));
  return *d;
}

void validate(const Args& a) {
  if (!a.suite.empty() && a.suite != "llm" && a.suite != "suitesparse" && a.suite != "small" &&
      a.suite != "all") {
    throw UserError(
        fmt::format("--suite: expected llm, suitesparse, small or all, found '{}'", a.suite));
  }
  for (int64_t n : a.ns) {
    if (n < 1 || n > 4096) throw UserError(fmt::format("-n: expected 1..4096, found {}", n));
  }
  if (!a.dtype.empty()) (void)parse_dtype_flag(a.dtype);
  if (a.refine < -1 || a.refine > 1000)
    throw UserError(fmt::format("--refine: expected 0..1000, found {}", a.refine));
  if (a.best_of < 0 || a.best_of > 1000) {
    throw UserError(fmt::format("--best-of: expected 1..1000, found {}", a.best_of));
  }
  if (a.repeats < 1 || a.repeats > 100000) {
    throw UserError(fmt::format("--repeats: expected 1..100000, found {}", a.repeats));
  }
  if (a.warmup < 0 || a.warmup > 1000) {
    throw UserError(fmt::format("--warmup: expected 0..1000, found {}", a.warmup));
  }
  if (!(a.max_dense_gib > 0) || !std::isfinite(a.max_dense_gib)) {
    throw UserError(
        fmt::format("--max-dense-gib: expected a positive number, found {}", a.max_dense_gib));
  }
  if (!(a.time_limit_s >= 0) || !std::isfinite(a.time_limit_s)) {
    throw UserError(fmt::format("--time-limit: expected seconds >= 0, found {}", a.time_limit_s));
  }
  if (a.min_nnz < -1) throw UserError(fmt::format("--min-nnz: expected >= 0, found {}", a.min_nnz));
  if (a.max_nnz < -1 || a.max_nnz == 0)
    throw UserError(fmt::format("--max-nnz: expected >= 1, found {}", a.max_nnz));
  if (a.exhaustive_limit < 1 || a.exhaustive_limit > 100000) {
    throw UserError(
        fmt::format("--exhaustive-limit: expected 1..100000, found {}", a.exhaustive_limit));
  }
  if (a.top_k < 0 || a.top_k > 1000) {
    throw UserError(fmt::format("--top-k: expected 0..1000, found {}", a.top_k));
  }
  if (!a.json.empty()) {
    // Fail now, not after minutes of measuring.
    std::ofstream probe(a.json, std::ios::app);
    if (!probe) throw UserError(fmt::format("--json: cannot write '{}'", a.json));
  }
}

// ---------------------------------------------------------------- the matrices of a run

std::string default_cache_dir() {
  if (const char* b = std::getenv("BENCH_DIR"); b && *b) return (fs::path(b) / "cache").string();
  return {};
}

std::string default_data_dir() {
  if (const char* d = std::getenv("SPARSEGEN_DATA"); d && *d) return d;
  return {};
}

// The pruned LLM matrices of one shape share one generated weight (made on first need).
struct WeightSource {
  int64_t rows, cols;
  uint64_t seed;
  std::mutex mu;
  std::shared_ptr<DenseMatrix> weight;
  std::shared_ptr<DenseMatrix> get() {
    std::lock_guard lk(mu);
    if (!weight) weight = std::make_shared<DenseMatrix>(make_llm_weight(rows, cols, seed));
    return weight;
  }
  void release() {
    std::lock_guard lk(mu);
    weight.reset();
  }
};

std::vector<MatrixSpec> llm_specs(const Args& a, DType dtype) {
  std::vector<MatrixSpec> out;
  const std::vector<int64_t> ns = a.ns.empty() ? std::vector<int64_t>{1, 8, 32, 64} : a.ns;
  const std::string cache =
      a.no_cache ? std::string() : (a.cache_dir.empty() ? default_cache_dir() : a.cache_dir);
  for (const auto& [rows, cols] : kLlmShapes) {
    auto src = std::make_shared<WeightSource>();
    src->rows = rows;
    src->cols = cols;
    src->seed = a.seed;
    std::vector<std::pair<PruneMethod, double>> variants;
    for (double s : {0.5, 0.7, 0.9}) variants.emplace_back(PruneMethod::Magnitude, s);
    if (!a.quick) {
      for (double s : {0.5, 0.7, 0.9}) variants.emplace_back(PruneMethod::Random, s);
    } else if ((rows == 4096 && cols == 4096) || (rows == 28672 && cols == 7168)) {
      variants.emplace_back(PruneMethod::Random, 0.7);
    }
    for (size_t v = 0; v < variants.size(); ++v) {
      const auto [method, sparsity] = variants[v];
      MatrixSpec m;
      m.suite = "llm";
      m.pruning = std::string(to_string(method));
      m.target_sparsity = sparsity;
      m.rows = rows;
      m.cols = cols;
      m.dtype = dtype;
      m.ns = ns;
      m.name = fmt::format("llm {}x{} {} {:.0f}%", rows, cols, m.pruning, sparsity * 100);
      const bool last_of_shape = v + 1 == variants.size();
      const uint64_t seed = a.seed;
      m.load = [src, method, sparsity, cache, rows, cols, seed, last_of_shape](const Warn& warn) {
        std::string path;
        if (!cache.empty()) {
          path = (fs::path(cache) / fmt::format("llm_{}x{}_{}_{:.2f}_seed{}.safetensors", rows,
                                                cols, to_string(method), sparsity, seed))
                     .string();
          std::error_code ec;
          if (fs::exists(path, ec)) {
            try {
              CsrMatrix cached = read_csr(path);
              if (last_of_shape) src->release();
              return cached;
            } catch (const UserError& e) {  // a stale or broken cache file: regenerate
              warn(fmt::format("ignoring cache file: {}", e.what()));
            }
          }
        }
        PruneSpec spec;
        spec.method = method;
        spec.sparsity = sparsity;
        spec.seed = seed;
        CsrMatrix pruned = prune(*src->get(), spec);
        if (last_of_shape) src->release();
        if (!path.empty()) {
          std::error_code ec;
          fs::create_directories(fs::path(path).parent_path(), ec);
          try {
            write_csr(path + ".tmp", pruned);
            fs::rename(path + ".tmp", path, ec);
          } catch (const std::exception& e) {  // caching is an optimization only
            warn(fmt::format("cannot cache {}: {}", path, e.what()));
          }
        }
        return pruned;
      };
      out.push_back(std::move(m));
    }
  }
  return out;
}

// The real matrices of one run: every .mtx under the named folders of the data directory whose
// nonzero count lies in [min_nnz, max_nnz) (max_nnz < 0: no upper bound), fp32 by default.
// `suite` names the cases' group ("suitesparse N=8", "small N=1").
std::vector<MatrixSpec> data_specs(const Args& a, const std::string& suite,
                                   const std::vector<std::string>& folders, int64_t min_nnz,
                                   int64_t max_nnz, const std::vector<int64_t>& default_ns,
                                   DType dtype, nlohmann::json& skipped) {
  const std::string data = a.data_dir.empty() ? default_data_dir() : a.data_dir;
  std::vector<std::pair<std::string, std::string>> files;  // (path, name relative to the data)
  for (const std::string& folder : folders) {
    const fs::path dir = fs::path(data) / folder;
    std::error_code ec;
    if (data.empty() || !fs::is_directory(dir, ec)) {
      throw UserError(fmt::format(
          "--data: no {} folder at '{}' (give --data DIR or set SPARSEGEN_DATA to the folder that "
          "holds {}/)",
          folder, dir.string(), folder));
    }
    std::vector<std::string> in_folder;
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".mtx")
        in_folder.push_back(e.path().string());
    }
    std::sort(in_folder.begin(), in_folder.end());
    for (const std::string& f : in_folder) {
      std::string rel = fs::relative(f, dir, ec).string();
      // Matrices of the SuiteSparse folder keep their names (as in earlier results).
      if (folders.size() > 1 || folder != "suitesparse") rel = folder + "/" + rel;
      files.emplace_back(f, rel);
    }
  }
  std::vector<MatrixSpec> out;
  const std::vector<int64_t> ns = a.ns.empty() ? default_ns : a.ns;
  for (const auto& [f, rel] : files) {
    // Load now (small files) to filter by nnz and field; the matrix is reloaded when measured.
    CsrMatrix m;
    try {
      m = load_matrix(f).matrix;
    } catch (const UserError& e) {
      skipped.push_back({{"matrix", rel}, {"reason", std::string("load error: ") + e.what()}});
      continue;
    }
    if (m.field == ValueField::Complex) {
      skipped.push_back({{"matrix", rel}, {"reason", "complex (real kernels only)"}});
      continue;
    }
    if (m.rows == 0 || m.cols == 0) {
      skipped.push_back(
          {{"matrix", rel}, {"reason", fmt::format("{}x{}: no product to time", m.rows, m.cols)}});
      continue;
    }
    if (m.nnz() < min_nnz) {
      skipped.push_back(
          {{"matrix", rel}, {"reason", fmt::format("nnz {} < --min-nnz {}", m.nnz(), min_nnz)}});
      continue;
    }
    if (max_nnz >= 0 && m.nnz() >= max_nnz) {
      skipped.push_back(
          {{"matrix", rel}, {"reason", fmt::format("nnz {} >= --max-nnz {}", m.nnz(), max_nnz)}});
      continue;
    }
    MatrixSpec s;
    s.suite = suite;
    s.name = rel;
    s.rows = m.rows;
    s.cols = m.cols;
    s.dtype = dtype;
    s.ns = ns;
    s.load = [f](const Warn&) { return load_matrix(f).matrix; };
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<MatrixSpec> suitesparse_specs(const Args& a, DType dtype, nlohmann::json& skipped) {
  const int64_t min_nnz = a.min_nnz >= 0 ? a.min_nnz : (a.quick ? 10000 : 1000);
  return data_specs(a, "suitesparse", {"suitesparse"}, min_nnz, a.max_nnz, {8, 32, 64}, dtype,
                    skipped);
}

// The small suite: SuiteSparse and edge matrices under --max-nnz (default 100000) nonzeros.
std::vector<MatrixSpec> small_specs(const Args& a, DType dtype, nlohmann::json& skipped) {
  const int64_t max_nnz = a.max_nnz >= 0 ? a.max_nnz : 100000;
  return data_specs(a, "small", {"suitesparse", "edge"}, std::max<int64_t>(a.min_nnz, 0), max_nnz,
                    {1, 8, 32}, dtype, skipped);
}

// ---------------------------------------------------------------- our kernel: builds

struct OurBuild {
  std::optional<KernelBuild> build;
  std::string schedule_text;
  std::string error;
  double build_ms = 0;
  double a_bytes = 0;
};

double packed_a_bytes(const KernelBuild& b) {
  double bytes = static_cast<double>(b.device_values().size()) +
                 4.0 * static_cast<double>(b.device_col_idx().size());
  for (const auto& p : b.kernel.signature.params) {
    double w = 0;
    switch (p.kind) {
      case codegen::ParamKind::I32Table:
      case codegen::ParamKind::U32Table:
        w = 4;
        break;
      case codegen::ParamKind::I16Table:
        w = 2;
        break;
      case codegen::ParamKind::I8Table:
        w = 1;
        break;
      default:
        break;
    }
    bytes += w * static_cast<double>(p.data.size());
  }
  return bytes;
}

// The schedules to try for one problem: the given SPEC, or the best `best_of` (at least 1) of the
// enumerated space (MACKO included, as tune searches it) as ranked by the shipped cost model for
// this device (the same ranking `sparsegen tune` uses before it measures; the roofline estimate
// when no model matches).
// The ranked space of one problem, kept for the second round (refine_ours).
struct SearchSpace {
  std::vector<Schedule> all;
  std::vector<size_t> order;            // the model's ranking, into all
  std::vector<size_t> chosen;           // the first round, into all
  std::vector<std::string> unmodelled;  // RankedSpace::unmodelled, into all
};

std::vector<std::optional<Schedule>> schedules_for(const Problem& p, const CsrMatrix& a,
                                                   const Args& args, const CompileTarget& target,
                                                   int best_of, SearchSpace& space) {
  if (!args.schedule.empty()) return {parse_schedule(args.schedule)};
  // The same candidates and ranking as `sparsegen tune` (compiler/tune.h).
  std::optional<cuda::DeviceInfo> info;
  if (target.has_gpu) info = cuda::query_device(0);
  EnumerateOptions eo;
  eo.device = target.limits;
  eo.include_specialised = true;
  std::vector<Schedule> all = enumerate_schedules(p, a, eo);
  if (!args.family.empty())
    std::erase_if(all, [&](const Schedule& s) { return s.family_name() != args.family; });
  if (args.generated_only)
    std::erase_if(all, [](const Schedule& s) { return s.family().library(); });
  if (all.empty()) return {std::nullopt};  // let the pipeline say why nothing is valid
  // As tune: library candidates (IrFamily::library) are not ranked. A measuring run (best_of > 1)
  // times them after the ranked top k and never refines around them; the model alone never picks
  // them. Alone, they are the space.
  std::vector<Schedule> libraries, generated;
  for (Schedule& s : all) (s.family().library() ? libraries : generated).push_back(std::move(s));
  if (generated.empty()) std::swap(generated, libraries);
  if (best_of <= 1) libraries.clear();
  all = std::move(generated);
  RankedSpace ranked = rank_space(a, p, target, std::move(all), info ? &*info : nullptr);
  const int spread = fixed_cost_spread(ranked, a.nnz(), best_of);
  all = std::move(ranked.all);
  std::vector<size_t> order = std::move(ranked.order);
  std::vector<std::optional<Schedule>> out;
  space.chosen = select_for_measurement(order, all, best_of, spread, ranked.unmodelled);
  space.unmodelled = std::move(ranked.unmodelled);
  for (size_t i : space.chosen) out.push_back(all[i]);
  for (Schedule& s : libraries) out.push_back(std::move(s));
  space.order = std::move(order);
  space.all = std::move(all);
  return out;
}

// Builds (steps 1-7, no GPU) every job on a pool of threads.
struct BuildJob {
  int64_t n;
  Problem problem;
  std::optional<Schedule> schedule;
};

std::vector<OurBuild> build_all(const CsrMatrix& a, const std::vector<BuildJob>& jobs,
                                const Args& args, DType dtype, const CompileTarget& target) {
  std::vector<OurBuild> out(jobs.size());
  // Up to 16 builds at once (NVRTC is the long step; more threads only contend).
  for_each_task(jobs.size(), 16, [&](size_t i) {
    const auto t0 = Clock::now();
    OurBuild& b = out[i];
    try {
      if (jobs[i].schedule) {
        b.build = build_kernel(a, jobs[i].problem, *jobs[i].schedule, target);
      } else {
        KernelRequest req;
        req.n = jobs[i].n;
        req.dtype = dtype;
        req.schedule = args.schedule;
        req.schedule_flag = "--schedule";
        b.build = build_kernel(a, req, target);
      }
      b.schedule_text = to_string(b.build->schedule);
      b.a_bytes = packed_a_bytes(*b.build);
    } catch (const std::exception& e) {
      b.error = e.what();
      if (jobs[i].schedule) b.schedule_text = to_string(*jobs[i].schedule);
    }
    b.build_ms = seconds_since(t0) * 1e3;
  });
  return out;
}

// ---------------------------------------------------------------- GPU measurement

struct Gpu {
  std::shared_ptr<cuda::Context> ctx;
  CompileTarget target;
  std::unique_ptr<cuda::Stream> stream;
  std::unique_ptr<L2Flusher> flusher;
  TimingOptions full;    // the reported measurement
  TimingOptions screen;  // quick screening of several candidates
  bool graph = false;    // the pick also timed as a replay of its captured CUDA graph
};

std::vector<char> to_dtype_bytes(const std::vector<float>& v, DType t) {
  const size_t w = static_cast<size_t>(dtype_bytes(t));
  std::vector<char> out(v.size() * w);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(&out[i * 4], &v[i], 4);
    } else {
      const uint16_t h = t == DType::F16 ? float_to_half_bits(v[i]) : float_to_bf16_bits(v[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

void poison(cuda::DeviceBuffer& c, DType t) {
  const uint32_t bits = poison_bits(t);
  c.fill_u32(t == DType::F32 ? bits : (bits << 16) | (bits & 0xffffu));
}

// Compares a baseline's output (layout `layout`) with the reference (row-major exact).
std::string check_baseline(const cuda::DeviceBuffer& c, DType t, Layout layout, int64_t m,
                           int64_t n, const Reference& ref) {
  const size_t count = static_cast<size_t>(m * n);
  const size_t w = static_cast<size_t>(dtype_bytes(t));
  std::vector<char> raw(count * w);
  c.download(raw.data(), raw.size());
  const uint32_t pbits = poison_bits(t);
  int64_t unwritten = 0, nans = 0;
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t idx = static_cast<size_t>(layout == Layout::RowMajor ? r * n + j : j * m + r);
      float v;
      uint32_t bits;
      if (t == DType::F32) {
        std::memcpy(&bits, &raw[idx * 4], 4);
        std::memcpy(&v, &bits, 4);
      } else {
        uint16_t h;
        std::memcpy(&h, &raw[idx * 2], 2);
        bits = h;
        v = t == DType::F16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
      }
      const double e = ref.exact[static_cast<size_t>(r * n + j)];
      if (bits == pbits) {
        ++unwritten;
      } else if (std::isnan(v) && std::isfinite(e)) {
        ++nans;
      } else if (std::isfinite(e) && std::isfinite(v)) {
        err2 += (v - e) * (v - e);
        ref2 += e * e;
      }
    }
  }
  const double rel = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  const double bound = t == DType::F32 ? 1e-4 : t == DType::F16 ? 1e-2 : 2e-2;
  if (unwritten || nans || !(rel <= bound)) {
    return fmt::format(
        "output check failed: {} unwritten, {} NaN, relative error {:.3g} (bound {})", unwritten,
        nans, rel, bound);
  }
  return {};
}

void fill_timing(MethodResult& r, const TimingResult& t) {
  r.median_ms = t.median_ms;
  r.p10_ms = t.p10_ms;
  r.p90_ms = t.p90_ms;
  r.min_ms = t.min_ms;
  r.runs = t.count;
}

// Times the passing candidates: screening when there are several, then the full measurement of
// the fastest. `runs[i]` launches candidate i. Returns its index, or -1 when none passed.
int pick_and_time(Gpu& g, const std::vector<std::function<void(CUstream)>>& runs,
                  const std::vector<bool>& passed, MethodResult& r, nlohmann::json& screened) {
  std::vector<size_t> ok;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (passed[i]) ok.push_back(i);
  }
  if (ok.empty()) return -1;
  size_t best = ok[0];
  if (ok.size() > 1) {
    double best_ms = 0;
    for (size_t i : ok) {
      const TimingResult t = measure(runs[i], g.screen);
      screened[std::to_string(i)] = t.median_ms;
      if (i == ok[0] || t.median_ms < best_ms) {
        best_ms = t.median_ms;
        best = i;
      }
    }
  }
  fill_timing(r, measure(runs[best], g.full));
  return static_cast<int>(best);
}

struct CaseInputs {
  Problem problem;
  CheckInputs in;
  Reference ref;
  cuda::DeviceBuffer b_row, b_col, c;
};

// Inputs and reference of one case on the device: B row-major (and column-major for the
// libraries, with column_major_b and N > 1), C sized for M x N, the CPU reference of A * B.
CaseInputs make_case_inputs(const CsrMatrix& m, int64_t n, DType dtype, bool column_major_b) {
  CaseInputs ci;
  KernelRequest req;
  req.n = n;
  req.dtype = dtype;
  ci.problem = make_problem(m, req);
  ci.in = make_check_inputs(ci.problem, 7, 1.0f, 0.0f);
  ci.ref = compute_reference(m, ci.in, false);
  const std::vector<char> b_row = to_dtype_bytes(ci.in.b, dtype);
  const size_t w = static_cast<size_t>(dtype_bytes(dtype));
  ci.b_row = cuda::DeviceBuffer(b_row.size() + 4);
  ci.b_row.upload(b_row.data(), b_row.size());
  if (column_major_b && n > 1) {
    std::vector<float> bt(ci.in.b.size());
    for (int64_t r = 0; r < m.cols; ++r)
      for (int64_t j = 0; j < n; ++j)
        bt[static_cast<size_t>(j * m.cols + r)] = ci.in.b[static_cast<size_t>(r * n + j)];
    const std::vector<char> b_col = to_dtype_bytes(bt, dtype);
    ci.b_col = cuda::DeviceBuffer(b_col.size() + 4);
    ci.b_col.upload(b_col.data(), b_col.size());
  }
  ci.c = cuda::DeviceBuffer((static_cast<size_t>(m.rows * n) * w + 3) / 4 * 4 + 4);
  return ci;
}

// --graph: the pick's run also timed as a replay of its captured CUDA graph (one launch for the
// whole sequence), in the same process and with the same options: extra["graph"] holds the
// timing and run_over_graph the ratio of the two medians (or the capture's error).
void time_graph(Gpu& g, const CompiledKernel& k, CaseInputs& ci, MethodResult& r) {
  try {
    const cuda::Graph graph = k.graph(ci.b_row.ptr(), ci.c.ptr(), 1.0f, 0.0f);
    const TimingResult t = measure([&graph](CUstream s) { graph.launch(s); }, g.full);
    r.extra["graph"] = {{"median_ms", t.median_ms}, {"p10_ms", t.p10_ms},
                        {"p90_ms", t.p90_ms},       {"min_ms", t.min_ms},
                        {"runs", t.count},          {"run_over_graph", r.median_ms / t.median_ms}};
  } catch (const CudaError& e) {
    if (e.sticky()) throw;
    r.extra["graph"] = {{"error", std::string("graph capture: ") + e.what()}};
  }
}

void measure_ours(Gpu& g, const CsrMatrix& a, CaseInputs& ci, std::vector<OurBuild>& builds,
                  CaseResult& cr) {
  MethodResult& r = cr.ours;
  nlohmann::json tried = nlohmann::json::array();
  std::vector<std::unique_ptr<CompiledKernel>> kernels;
  std::vector<std::function<void(CUstream)>> runs;
  std::vector<bool> passed;
  std::vector<double> bytes;
  // A candidate that did not build or load: listed with its error, never timed.
  auto skip = [&](const nlohmann::json& t) {
    tried.push_back(t);
    kernels.emplace_back();
    runs.emplace_back();
    passed.push_back(false);
    bytes.push_back(0);
  };
  for (OurBuild& b : builds) {
    nlohmann::json t = {{"schedule", b.schedule_text}, {"build_ms", b.build_ms}};
    if (!b.build) {
      t["error"] = b.error;
      skip(t);
      continue;
    }
    if (b.schedule_text.empty()) b.schedule_text = to_string(b.build->schedule);
    t["reason"] = b.build->schedule_reason;
    std::unique_ptr<CompiledKernel> k;
    try {
      k = std::make_unique<CompiledKernel>(g.ctx, std::move(*b.build));
    } catch (const CudaError& e) {
      if (e.sticky()) throw;
      t["error"] = std::string("load: ") + e.what();
    } catch (const std::exception& e) {  // e.g. a library candidate refusing the shape
      t["error"] = std::string("load: ") + e.what();
    }
    b.build.reset();
    if (!k) {
      skip(t);
      continue;
    }
    const CheckResult chk = gpu_check(*k, a, ci.in, ci.ref, g.stream->get(), nullptr, false);
    t["check"] = chk.passed ? "pass" : chk.error;
    t["rel_error"] = chk.rel_error;
    t["registers"] = k->registers();
    const CompiledKernel* kp = k.get();
    const CUdeviceptr bp = ci.b_row.ptr(), cp = ci.c.ptr();
    runs.emplace_back([kp, bp, cp](CUstream s) { kp->run(bp, cp, 1.0f, 0.0f, s); });
    passed.push_back(chk.passed);
    bytes.push_back(b.a_bytes);
    kernels.push_back(std::move(k));
    tried.push_back(t);
  }
  nlohmann::json screened;
  const int best = pick_and_time(g, runs, passed, r, screened);
  if (best < 0) {
    r.error = "no candidate passed: " +
              (tried.empty() ? std::string("none built")
                             : tried[0].value("error", "") + tried[0].value("check", ""));
  } else {
    r.checked = true;
    r.impl = builds[static_cast<size_t>(best)].schedule_text;
    const double w = dtype_bytes(ci.problem.dtype);
    r.bytes = bytes[static_cast<size_t>(best)] +
              w * static_cast<double>(ci.problem.k * ci.problem.n + ci.problem.m * ci.problem.n);
  }
  r.extra = {{"candidates", tried}};
  if (!screened.is_null()) r.extra["screen_ms"] = screened;
  if (g.graph && best >= 0) time_graph(g, *kernels[static_cast<size_t>(best)], ci, r);
}

// The search's second round, as `sparsegen tune` runs it (compiler/tune.h, second_round):
// schedules near the fastest of the first round (and near the fastest of an unmodelled strategy
// close to it) are built and measured; the faster of the two rounds' winners is ours. Every
// candidate is listed, the second round's with "round": 2.
void refine_ours(Gpu& g, const CsrMatrix& a, CaseInputs& ci, const SearchSpace& space,
                 const Args& args, int extra, CaseResult& cr) {
  if (extra <= 0 || space.all.empty() || !cr.ours.ok()) return;
  std::map<std::string, size_t> chosen;  // the first round's SPECs -> index into space.all
  for (size_t i : space.chosen) chosen.emplace(to_string(space.all[i]), i);
  const auto pick = chosen.find(cr.ours.impl);
  if (pick == chosen.end()) return;
  // The first round's screened times, as (index into space.all, ms), fastest first, the pick
  // first of all (unscreened when it was the only candidate that passed: its full median then).
  std::vector<std::pair<size_t, double>> timed = {{pick->second, cr.ours.median_ms}};
  const nlohmann::json first = cr.ours.extra.value("candidates", nlohmann::json::array());
  const nlohmann::json screened = cr.ours.extra.value("screen_ms", nlohmann::json::object());
  for (size_t t = 0; t < first.size(); ++t) {
    const auto ms = screened.find(std::to_string(t));
    const auto it = chosen.find(first[t].value("schedule", ""));
    if (ms == screened.end() || it == chosen.end()) continue;
    if (it == pick)
      timed.front().second = *ms;
    else
      timed.emplace_back(it->second, *ms);
  }
  std::stable_sort(timed.begin() + 1, timed.end(),
                   [](const auto& x, const auto& y) { return x.second < y.second; });
  std::vector<BuildJob> jobs;
  for (size_t i :
       second_round(space.order, space.all, timed, space.chosen, extra, space.unmodelled))
    jobs.push_back({ci.problem.n, ci.problem, space.all[i]});
  cr.ours.extra["refined"] = jobs.size();
  if (jobs.empty()) return;
  std::vector<OurBuild> builds = build_all(a, jobs, args, ci.problem.dtype, g.target);
  CaseResult second;
  measure_ours(g, a, ci, builds, second);
  nlohmann::json tried = cr.ours.extra["candidates"];
  for (nlohmann::json t : second.ours.extra["candidates"]) {
    t["round"] = 2;
    tried.push_back(std::move(t));
  }
  if (second.ours.ok() && second.ours.median_ms < cr.ours.median_ms) {
    nlohmann::json first_screen = cr.ours.extra.value("screen_ms", nlohmann::json());
    cr.ours = std::move(second.ours);
    cr.ours.extra["first_round_screen_ms"] = std::move(first_screen);
  }
  cr.ours.extra["candidates"] = std::move(tried);
  cr.ours.extra["refined"] = jobs.size();
}

void measure_baseline(Gpu& g, std::vector<Candidate> cands, DType t, CaseInputs& ci, double a_bytes,
                      MethodResult& r) {
  nlohmann::json tried = nlohmann::json::array();
  std::vector<std::function<void(CUstream)>> runs;
  std::vector<bool> passed;
  for (const Candidate& c : cands) {
    nlohmann::json j = {{"name", c.name}};
    runs.push_back(c.run);
    if (!c.unsupported.empty()) {
      j["unsupported"] = c.unsupported;
      passed.push_back(false);
    } else {
      poison(ci.c, t);
      c.run(g.stream->get());
      g.stream->synchronize();
      const std::string err =
          check_baseline(ci.c, t, c.c_layout, ci.problem.m, ci.problem.n, ci.ref);
      j["check"] = err.empty() ? "pass" : err;
      passed.push_back(err.empty());
    }
    tried.push_back(j);
  }
  nlohmann::json screened;
  const int best = pick_and_time(g, runs, passed, r, screened);
  if (best < 0) {
    r.error = "no configuration passed or was supported";
  } else {
    r.checked = true;
    r.impl = cands[static_cast<size_t>(best)].name;
    const double w = dtype_bytes(t);
    r.bytes = a_bytes +
              w * static_cast<double>(ci.problem.k * ci.problem.n + ci.problem.m * ci.problem.n);
  }
  r.extra = {{"candidates", tried}};
  if (!screened.is_null()) r.extra["screen_ms"] = screened;
}

std::string fmt_ms(const MethodResult& m) {
  return m.ok() ? fmt::format("{:.4f} ms", m.median_ms) : std::string("-");
}

// Writes `text` to `path` through a temporary file and a rename (never a half-written file).
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
    if (!f) throw UserError(fmt::format("--json: cannot write '{}'", tmp));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw UserError(fmt::format("--json: cannot write '{}': {}", path, ec.message()));
}

// "; JSON: FILE.json, plot: FILE.svg" for the last line (empty without --json).
std::string outputs_note(const Args& a) {
  if (a.json.empty()) return {};
  return a.no_plot ? fmt::format("; JSON: {}", a.json)
                   : fmt::format("; JSON: {}, plot: {}", a.json, plot_path(a.json));
}

// The --json file and, unless --no-plot, its plot next to it. A plot that cannot be written is
// a warning (once): it never costs the measurements.
void write_outputs(const Args& a, const nlohmann::json& doc, ProgressLine& bar) {
  if (a.json.empty()) return;
  write_file(a.json, doc.dump(1) + "\n");
  if (a.no_plot) return;
  static bool warned = false;
  try {
    write_file(plot_path(a.json), render_svg(bench_chart(doc)));
  } catch (const std::exception& e) {
    if (!warned) {
      bar.clear();
      std::fprintf(stderr, "sparsegen-bench: no plot: %s\n", e.what());
    }
    warned = true;
  }
}

// ---------------------------------------------------------------- --exhaustive: search quality

// The fastest few screened kernels (and the search's pick), kept loaded for the final round.
struct Kept {
  size_t index = 0;  // into the enumeration
  double screen_ms = 0;
  std::unique_ptr<CompiledKernel> kernel;
};

// Builds the selected schedules on a thread pool while this thread checks and screens each one
// on the GPU as soon as it is built (produce_in_order); at most `max_in_flight` builds (packed
// matrix + image) exist at once. Stops claiming new schedules when `stop_now()` says so (the time
// limit; polled by the builders before each claim); what was claimed is still screened.
struct ExhaustivePass {
  int attempted = 0, measured = 0, failed = 0;
  nlohmann::json failures = nlohmann::json::array();
  std::vector<std::pair<double, size_t>> screened;  // (screen median ms, enumeration index)
  std::vector<Kept> kept;                           // the fastest kKeep by screen time
  std::optional<Kept> pick;
  double build_thread_s = 0;
  int threads = 0;
};

constexpr size_t kKeep = 3;

ExhaustivePass exhaustive_pass(Gpu& g, const CsrMatrix& m, const Problem& p,
                               const std::vector<Schedule>& all, const std::vector<size_t>& sel,
                               size_t pick_index, CaseInputs& ci,
                               const std::function<bool()>& stop_now, const Step& step) {
  ExhaustivePass out;
  struct Slot {
    std::optional<KernelBuild> build;
    std::string error;
    double build_s = 0;
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::max<size_t>(1, std::min<size_t>(std::min(hw, 16u), sel.size()));
  out.threads = static_cast<int>(threads);
  // A build holds the packed values and indices (about nnz * (dtype + 4) bytes, plus padding):
  // keep the builds waiting for the GPU within ~8 GiB, but never starve the pool.
  const double build_bytes =
      1.5 * static_cast<double>(m.nnz()) * (dtype_bytes(p.dtype) + 4.0) + (1 << 20);
  const size_t max_in_flight = std::clamp<size_t>(
      static_cast<size_t>(8.0 * (1ull << 30) / build_bytes), threads, 4 * threads);

  auto fail = [&](size_t idx, const std::string& why) {
    ++out.failed;
    if (out.failures.size() < 25)
      out.failures.push_back({{"schedule", to_string(all[idx])}, {"error", why}});
  };
  const CUdeviceptr bp = ci.b_row.ptr(), cp = ci.c.ptr();
  // Screened as each build finishes; stop_now() stops the starts, what started is screened.
  auto make = [&](size_t i) {
    const auto t0 = Clock::now();
    Slot s;
    try {
      s.build = build_kernel(m, p, all[sel[i]], g.target);
    } catch (const std::exception& e) {
      s.error = e.what();
    } catch (...) {
      s.error = "unknown build failure";
    }
    s.build_s = seconds_since(t0);
    return s;
  };
  auto consume = [&](size_t i, Slot&& s) {
    ++out.attempted;
    step(fmt::format("screen {}/{}", out.attempted, sel.size()));
    out.build_thread_s += s.build_s;
    const size_t idx = sel[i];
    if (!s.build) {
      fail(idx, "build: " + s.error);
      return true;
    }
    try {
      auto k = std::make_unique<CompiledKernel>(g.ctx, std::move(*s.build));
      s.build.reset();
      const CheckResult chk = gpu_check(*k, m, ci.in, ci.ref, g.stream->get(), nullptr, false);
      if (!chk.passed) {
        fail(idx, "check: " + chk.error);
      } else {
        const CompiledKernel* kp = k.get();
        const TimingResult t =
            measure([kp, bp, cp](CUstream st) { kp->run(bp, cp, 1.0f, 0.0f, st); }, g.screen);
        ++out.measured;
        out.screened.emplace_back(t.median_ms, idx);
        if (idx == pick_index) {
          out.pick = Kept{idx, t.median_ms, std::move(k)};
        } else if (out.kept.size() < kKeep || t.median_ms < out.kept.back().screen_ms) {
          out.kept.push_back(Kept{idx, t.median_ms, std::move(k)});
          std::stable_sort(out.kept.begin(), out.kept.end(),
                           [](const Kept& x, const Kept& y) { return x.screen_ms < y.screen_ms; });
          if (out.kept.size() > kKeep) out.kept.pop_back();
        }
      }
    } catch (const CudaError& e) {
      if (e.sticky()) throw;  // produce_in_order joins the builders on the way out
      fail(idx, std::string("GPU: ") + e.what());
    } catch (const std::exception& e) {  // e.g. a non-finite event time
      fail(idx, std::string("measure: ") + e.what());
    }
    return true;
  };
  produce_in_order(sel.size(), static_cast<int>(threads), max_in_flight, make, consume,
                   ConsumeOrder::finished, stop_now);
  return out;
}

// One (matrix, N) case of --exhaustive: the search as `sparsegen tune` runs it (cache off), then
// every enumerated schedule (or the capped spread), then a final full measurement of the fastest
// few and of the search's pick.
SearchCase exhaustive_case(Gpu& g, const Args& a, const MatrixSpec& spec, const CsrMatrix& m,
                           int64_t n, Clock::time_point t_start, const Step& step) {
  SearchCase sc;
  static_cast<CaseKey&>(sc) = case_key(spec.suite, spec.name, m.rows, m.cols, m.nnz(), spec.pruning,
                                       n, std::string(to_string(spec.dtype)));
  sc.top_k = a.top_k;
  sc.extra = nlohmann::json::object();
  KernelRequest req;
  req.n = n;
  req.dtype = spec.dtype;
  const Problem p = make_problem(m, req);
  const size_t limit = static_cast<size_t>(a.exhaustive_limit);

  // The enumeration the tuner searches (compiler/tune.cpp: MACKO included where it applies).
  auto enumerate_all = [&] {
    EnumerateOptions eo;
    eo.device = g.target.limits;
    eo.include_specialised = true;
    return enumerate_schedules(p, m, eo);
  };

  if (a.dry_run) {
    const std::vector<Schedule> all = enumerate_all();
    sc.enumerated = static_cast<int>(all.size());
    const size_t pool =
        a.family.empty()
            ? all.size()
            : static_cast<size_t>(std::count_if(all.begin(), all.end(), [&](const Schedule& s) {
                return s.family_name() == a.family;
              }));
    sc.capped = pool > limit;
    sc.selected = static_cast<int>(pool == 0 ? 0 : spread_selection(pool, limit, {}).size());
    sc.error = "dry run: not measured";
    return sc;
  }

  // (a) the search.
  step("search");
  TuneOptions to;
  to.top_k = a.top_k;
  to.use_cache = false;  // a real search every time, never a cached decision
  to.ctx = g.ctx;
  const auto t_search = Clock::now();
  TuneResult tr;
  try {
    tr = tune(m, req, g.target, to);
  } catch (const CudaError& e) {
    if (e.sticky()) throw;
    sc.error = std::string("search failed: ") + e.what();
  } catch (const std::exception& e) {
    sc.error = std::string("search failed: ") + e.what();
  }
  sc.search_s = seconds_since(t_search);
  if (!sc.error.empty()) return sc;
  sc.pick = tr.schedule;
  sc.pick_predicted_ms = tr.predicted_ms;
  sc.search_measured_ms = tr.measured_ms;
  for (const CandidateReport& c : tr.candidates) sc.top_k_schedules.push_back(c.schedule);
  sc.extra["search_ranking"] = tr.ranking;
  if (!tr.warnings.empty()) sc.extra["search_warnings"] = tr.warnings;

  // (b) the comparison set.
  step("enumerate");
  const auto t_enum = Clock::now();
  const std::vector<Schedule> all = enumerate_all();
  sc.enumerated = static_cast<int>(all.size());
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < all.size(); ++i) index_of.emplace(to_string(all[i]), i);
  std::vector<size_t> must;
  for (const std::string& s : sc.top_k_schedules)
    if (auto it = index_of.find(s); it != index_of.end()) must.push_back(it->second);
  const auto pick_it = index_of.find(sc.pick);
  if (pick_it == index_of.end()) {
    sc.error = "the search's pick is not in the enumeration (search and bench disagree)";
    return sc;
  }
  const size_t pick_index = pick_it->second;
  must.push_back(pick_index);
  // --family: the spread covers that family's schedules (the search itself still searches all,
  // and its pick and top k are measured beside them).
  std::vector<size_t> pool;
  for (size_t i = 0; i < all.size(); ++i)
    if (a.family.empty() || all[i].family_name() == a.family) pool.push_back(i);
  std::vector<size_t> sel;
  for (size_t j : spread_selection(pool.size(), limit, {})) sel.push_back(pool[j]);
  sel.insert(sel.end(), must.begin(), must.end());
  std::sort(sel.begin(), sel.end());
  sel.erase(std::unique(sel.begin(), sel.end()), sel.end());
  sc.selected = static_cast<int>(sel.size());
  // The pick and the top k go first, so a time-limited case still has them.
  std::stable_partition(sel.begin(), sel.end(), [&](size_t i) {
    return std::find(must.begin(), must.end(), i) != must.end();
  });
  sc.capped = pool.size() > limit;
  if (!a.family.empty()) sc.extra["family"] = a.family;
  const double enum_s = seconds_since(t_enum);

  const auto t_inputs = Clock::now();
  step("reference");
  CaseInputs ci = make_case_inputs(m, n, spec.dtype, /*column_major_b=*/false);
  const double inputs_s = seconds_since(t_inputs);

  const auto t_pass = Clock::now();
  ExhaustivePass pass = exhaustive_pass(
      g, m, p, all, sel, pick_index, ci,
      [&] { return a.time_limit_s > 0 && seconds_since(t_start) > a.time_limit_s; }, step);
  const double pass_s = seconds_since(t_pass);
  sc.attempted = pass.attempted;
  sc.measured = pass.measured;
  sc.failed = pass.failed;
  sc.time_limited = pass.attempted < sc.selected;

  // (c) the final round: the fastest screened few and the pick, each measured in full.
  step("final round");
  const auto t_final = Clock::now();
  nlohmann::json final_round = nlohmann::json::array();
  if (!pass.pick) {
    sc.error = "the search's pick did not pass (or was not reached) in the exhaustive pass";
  } else {
    std::vector<Kept*> round;
    for (Kept& k : pass.kept) round.push_back(&k);
    round.push_back(&*pass.pick);
    const CUdeviceptr bp = ci.b_row.ptr(), cp = ci.c.ptr();
    for (Kept* k : round) {
      const CompiledKernel* kp = k->kernel.get();
      const TimingResult t =
          measure([kp, bp, cp](CUstream st) { kp->run(bp, cp, 1.0f, 0.0f, st); }, g.full);
      final_round.push_back({{"schedule", to_string(all[k->index])},
                             {"screen_ms", k->screen_ms},
                             {"median_ms", t.median_ms},
                             {"p10_ms", t.p10_ms},
                             {"p90_ms", t.p90_ms}});
      if (k->index == pick_index) sc.pick_ms = t.median_ms;
      if (!sc.best_ms || t.median_ms < *sc.best_ms) {
        sc.best_ms = t.median_ms;
        sc.best = to_string(all[k->index]);
      }
    }
    sc.best_in_top_k = std::find(sc.top_k_schedules.begin(), sc.top_k_schedules.end(), sc.best) !=
                       sc.top_k_schedules.end();
  }
  std::sort(pass.screened.begin(), pass.screened.end());
  nlohmann::json screened = nlohmann::json::array();
  for (const auto& [ms, idx] : pass.screened) screened.push_back({to_string(all[idx]), ms});
  sc.extra["final_round"] = final_round;
  sc.extra["screened_ms"] = screened;  // every timed schedule, fastest first
  sc.extra["failures"] = pass.failures;
  sc.extra["seconds"] = {{"search", sc.search_s},
                         {"enumerate", enum_s},
                         {"inputs_reference", inputs_s},
                         {"build_and_screen", pass_s},
                         {"build_thread_s", pass.build_thread_s},
                         {"final_round", seconds_since(t_final)}};
  sc.extra["build_threads"] = pass.threads;
  return sc;
}

int run_exhaustive(const Args& a, const std::vector<MatrixSpec>& specs, Gpu& g, nlohmann::json& doc,
                   nlohmann::json& skipped, Clock::time_point t_start) {
  doc["mode"] = "exhaustive";
  nlohmann::json sq;
  sq["method"] =
      "per case: the search as `sparsegen tune` runs it (enumerate incl. MACKO, rank by the cost "
      "model, compile and measure the top k, check the winner; cache off), timed wall-clock; then "
      "every enumerated schedule (or, when more than --exhaustive-limit, an even spread of that "
      "many plus the search's top k: 'capped', not exhaustive) is built, checked against the CPU "
      "reference and screened (median of screen_repeats runs, L2 flushed); the fastest "
      "3 screened and the search's pick are then measured in full (median of --repeats runs, L2 "
      "flushed): best_ms is the fastest of those, pick_ms the pick's, ratio = best_ms / pick_ms";
  sq["top_k"] = a.top_k;
  sq["exhaustive_limit"] = a.exhaustive_limit;
  sq["threshold"] = kSearchQualityThreshold;
  std::vector<SearchCase> results;
  bool truncated = false;
  size_t total_cases = 0;
  for (const auto& s : specs) total_cases += s.ns.size();
  size_t case_no = 0;
  ProgressLine bar("cases", static_cast<int>(total_cases));
  if (a.time_limit_s > 0)
    bar.set_time_limit(std::max(1e-3, a.time_limit_s - seconds_since(t_start)));

  auto write = [&] {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : results) cases.push_back(to_json(c));
    sq["cases"] = cases;
    sq["summary"] = to_json(summarize_search(results));
    doc["search_quality"] = sq;
    doc["skipped"] = skipped;
    doc["truncated"] = truncated;
    doc["elapsed_s"] = seconds_since(t_start);
    write_outputs(a, doc, bar);
  };

  std::printf(
      "sparsegen-bench --exhaustive: %zu matrices, %zu cases; %s; search top-k %d; at "
      "most %d schedules measured per case\n",
      specs.size(), total_cases,
      a.dry_run ? "dry run (no GPU)" : doc["device"]["name"].get<std::string>().c_str(), a.top_k,
      a.exhaustive_limit);
  std::fflush(stdout);
  for (const MatrixSpec& spec : specs) {
    if (time_limit_reached(a, t_start, total_cases - case_no, bar)) {
      truncated = true;
      break;
    }
    bar.update(static_cast<int>(case_no), spec.name + ": load");
    const std::optional<CsrMatrix> loaded = load_or_skip(spec, skipped, bar);
    if (!loaded) {
      case_no += spec.ns.size();
      continue;
    }
    const CsrMatrix& m = *loaded;
    for (int64_t n : spec.ns) {
      if (a.time_limit_s > 0 && seconds_since(t_start) > a.time_limit_s) {
        truncated = true;
        break;  // the outer loop reports it
      }
      ++case_no;
      const auto t_case = Clock::now();
      const std::string name = fmt::format("{} N={}", spec.name, n);
      SearchCase sc = exhaustive_case(g, a, spec, m, n, t_start, [&](const std::string& step) {
        bar.update(static_cast<int>(case_no - 1), name + ": " + step);
      });
      const auto r = sc.ratio();
      bar.clear();
      std::printf(
          "[%3zu/%zu] %-34s N=%-3lld %s  %d/%d measured%s  best %s  pick %s  ratio %s  search "
          "%.2f s  [%.1f s]\n",
          case_no, total_cases, spec.name.c_str(), static_cast<long long>(n), sc.dtype.c_str(),
          sc.measured, sc.enumerated,
          sc.capped         ? " (capped)"
          : sc.time_limited ? " (time-limited)"
                            : "",
          sc.best_ms ? fmt::format("{:.4f} ms", *sc.best_ms).c_str() : "-",
          sc.pick_ms ? fmt::format("{:.4f} ms", *sc.pick_ms).c_str() : "-",
          r ? fmt::format("{:.3f}", *r).c_str() : "-", sc.search_s, seconds_since(t_case));
      if (!sc.error.empty()) std::printf("          %s\n", sc.error.c_str());
      std::fflush(stdout);
      results.push_back(std::move(sc));
      write();
    }
  }
  write();
  bar.clear();
  std::printf("\n%s", format_search_table(results, summarize_search(results)).c_str());
  std::printf("elapsed %.1f s%s%s\n", seconds_since(t_start), truncated ? " (truncated)" : "",
              outputs_note(a).c_str());
  return 0;
}

// ---------------------------------------------------------------- the run

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run(const Args& a) {
  const auto t_start = Clock::now();
  validate(a);
  const bool file_mode = !a.file.empty();
  std::vector<MatrixSpec> specs;
  nlohmann::json skipped = nlohmann::json::array();
  int best_of = a.best_of;
  if (file_mode) {
    if (a.ns.empty()) throw UserError("-n: required with a matrix FILE (e.g. -n 8 or -n 1,8,32)");
    const DType dt = a.dtype.empty() ? DType::F32 : parse_dtype_flag(a.dtype);
    LoadOptions lo;
    lo.tensor = a.tensor;
    auto m = std::make_shared<CsrMatrix>(load_matrix(a.file, lo).matrix);
    if (m->field == ValueField::Complex) {
      throw UserError(
          fmt::format("{}: complex matrices are not supported (real kernels only)", a.file));
    }
    check_value_range(*m, dt);
    for (int64_t n : a.ns) {  // a bad --schedule is a user error on any machine
      KernelRequest req;
      req.n = n;
      req.dtype = dt;
      req.schedule = a.schedule;
      req.schedule_flag = "--schedule";
      const Problem p = make_problem(*m, req);
      if (!a.schedule.empty()) (void)choose_schedule(p, *m, req, CompileTarget{});
    }
    MatrixSpec s;
    s.suite = "file";
    s.name = a.file;
    s.rows = m->rows;
    s.cols = m->cols;
    s.dtype = dt;
    s.ns = a.ns;
    s.load = [m](const Warn&) { return *m; };
    specs.push_back(std::move(s));
  } else {
    if (a.suite == "suitesparse" || a.suite == "all") {
      for (auto& s :
           suitesparse_specs(a, a.dtype.empty() ? DType::F32 : parse_dtype_flag(a.dtype), skipped))
        specs.push_back(std::move(s));
    }
    if (a.suite == "small") {
      for (auto& s :
           small_specs(a, a.dtype.empty() ? DType::F32 : parse_dtype_flag(a.dtype), skipped))
        specs.push_back(std::move(s));
    }
    // SuiteSparse first: its cases are quick, so a --time-limit cuts only LLM shapes.
    if (a.suite == "llm" || a.suite == "all") {
      for (auto& s : llm_specs(a, a.dtype.empty() ? DType::F16 : parse_dtype_flag(a.dtype)))
        specs.push_back(std::move(s));
    }
  }
  if (best_of == 0) best_of = 1;
  if (!a.filter.empty()) {
    std::erase_if(specs, [&](const MatrixSpec& s) {
      return std::none_of(a.filter.begin(), a.filter.end(), [&](const std::string& f) {
        return s.name.find(f) != std::string::npos;
      });
    });
    if (specs.empty())
      throw UserError(fmt::format("--filter: no matrix matches '{}'", fmt::join(a.filter, "', '")));
  }

  // The GPU (after every user error, before any expensive work).
  Gpu g;
  if (!a.dry_run) {
    std::string why;
    if (!cuda::driver_available(&why)) {
      throw CudaError("no usable GPU (" + why + "); nothing measured", "cuInit",
                      CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
    }
    g.ctx = std::make_shared<cuda::Context>(0);
    attach_cudart(0);
    g.target = detect_target(0);
    g.stream = std::make_unique<cuda::Stream>();
    g.flusher = std::make_unique<L2Flusher>(g.ctx->info());
    g.full.warmup = a.warmup;
    g.full.repetitions = a.repeats;
    g.full.stream = g.stream->get();
    g.full.flusher = g.flusher.get();
    g.screen = g.full;
    g.graph = a.graph;
    g.screen.warmup = 1;
    g.screen.repetitions = std::min(5, a.repeats);
  } else {
    g.target = CompileTarget{};
  }

  nlohmann::json doc;
  doc["tool"] = "sparsegen-bench";
  doc["date"] = now_utc();
  doc["command"] = a.command_line;
  doc["git_commit"] = git_commit();
  {
    utsname u{};
    if (uname(&u) == 0) doc["host"] = u.nodename;
  }
  if (!a.dry_run) {
    const cuda::DeviceInfo& d = g.ctx->info();
    doc["device"] = {{"name", d.name},
                     {"cc", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                     {"sm_count", d.sm_count},
                     {"l2_bytes", d.l2_cache_bytes},
                     {"memory_bytes", d.total_memory_bytes},
                     {"arch", g.target.arch}};
    doc["versions"] = {{"cublas", cublas_version()},
                       {"cusparse", cusparse_version()},
                       {"cudart", cudart_version()},
                       {"driver", cuda::driver_version()},
                       {"nvrtc", nvrtc::version_string()}};
    doc["timing"] = {{"warmup", a.warmup},
                     {"repeats", a.repeats},
                     {"l2_flush_bytes", g.flusher->bytes()},
                     {"screen_repeats", g.screen.repetitions},
                     {"statistic", "median of event-timed runs, L2 flushed before each"}};
  } else {
    doc["device"] = {{"name", "none (dry run)"}};
  }
  if (a.exhaustive) return run_exhaustive(a, specs, g, doc, skipped, t_start);
  doc["best_of"] = best_of;
  doc["ours_selection"] =
      !a.schedule.empty() ? "given --schedule"
      : best_of > 1
          ? fmt::format(
                "fastest measured of the cost model's top {} schedules (plus {} "
                "spread over its ranking in the fixed-cost regime: under "
                "{} nonzeros, best prediction < {} ms) and of {} more "
                "near the fastest of them (sparsegen tune's search)",
                best_of, best_of >= 4 ? kFixedCostSpread * best_of : 0, kFixedCostRegimeNnz,
                kFixedCostRegimeMs, a.refine >= 0 ? a.refine : best_of / 2)
          : "the cost model's top-ranked schedule";
  if (a.generated_only)
    doc["ours_selection"] = doc["ours_selection"].get<std::string>() +
                            "; generated kernels only (no library candidate)";
  doc["graph"] = a.graph;  // ours also timed as a graph replay (extra.graph of each case)
  doc["skipped"] = skipped;

  std::vector<CaseResult> results;
  int failed_checks = 0;
  bool truncated = false;
  size_t total_cases = 0;
  for (const auto& s : specs) total_cases += s.ns.size();
  size_t case_no = 0;
  ProgressLine bar("cases", static_cast<int>(total_cases));
  if (a.time_limit_s > 0)
    bar.set_time_limit(std::max(1e-3, a.time_limit_s - seconds_since(t_start)));

  auto write_json = [&] {
    if (a.json.empty()) return;
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& c : results) cases.push_back(to_json(c));
    doc["cases"] = cases;
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& gs : summarize_groups(results)) {
      groups.push_back({{"group", gs.group},
                        {"cases", gs.cases},
                        {"geomean_speedup_vs_cublas", gs.geomean_vs_cublas},
                        {"cases_vs_cublas", gs.with_cublas},
                        {"geomean_speedup_vs_cusparse", gs.geomean_vs_cusparse},
                        {"cases_vs_cusparse", gs.with_cusparse},
                        {"cases_at_least_as_fast_as_cusparse", gs.not_slower_than_cusparse},
                        {"median_ours_gbps", gs.median_ours_gbps},
                        {"ours_picked", gs.picks}});
    }
    doc["summary"] = groups;
    doc["truncated"] = truncated;
    doc["failed_checks"] = failed_checks;
    doc["elapsed_s"] = seconds_since(t_start);
    write_outputs(a, doc, bar);
  };

  std::printf("sparsegen-bench: %zu matrices, %zu cases; %s; ours: %s\n", specs.size(), total_cases,
              a.dry_run ? "dry run (no GPU)" : doc["device"]["name"].get<std::string>().c_str(),
              doc["ours_selection"].get<std::string>().c_str());
  std::fflush(stdout);

  for (const MatrixSpec& spec : specs) {
    if (time_limit_reached(a, t_start, total_cases - case_no, bar)) {
      truncated = true;
      break;
    }
    const int done = static_cast<int>(case_no);
    bar.update(done, spec.name + ": load");
    const auto t_load = Clock::now();
    const std::optional<CsrMatrix> loaded = load_or_skip(spec, skipped, bar);
    if (!loaded) {
      doc["skipped"] = skipped;
      case_no += spec.ns.size();
      continue;
    }
    const CsrMatrix& m = *loaded;
    const double load_s = seconds_since(t_load);

    // Our kernels for every N (and candidate), built in parallel.
    bar.update(done, spec.name + ": build our kernels");
    const auto t_build = Clock::now();
    std::vector<BuildJob> jobs;
    std::vector<std::pair<size_t, size_t>> range;  // per N: [first, last) into jobs
    std::vector<SearchSpace> spaces(spec.ns.size());
    for (int64_t n : spec.ns) {
      KernelRequest req;
      req.n = n;
      req.dtype = spec.dtype;
      const Problem p = make_problem(m, req);
      const size_t first = jobs.size();
      try {
        for (auto& s : schedules_for(p, m, a, g.target, best_of, spaces[range.size()]))
          jobs.push_back({n, p, s});
      } catch (const std::exception&) {
        jobs.push_back({n, p, std::nullopt});  // the build reports the error
      }
      range.emplace_back(first, jobs.size());
    }
    std::vector<OurBuild> builds = build_all(m, jobs, a, spec.dtype, g.target);
    const double build_s = seconds_since(t_build);

    std::unique_ptr<CublasDense> dense;
    std::unique_ptr<CusparseCsr> csr;
    std::string dense_skip;
    const double dense_bytes =
        static_cast<double>(m.rows) * static_cast<double>(m.cols) * dtype_bytes(spec.dtype);
    if (!a.dry_run) {
      bar.update(done, spec.name + ": cuBLAS and cuSPARSE setup");
      if (dense_bytes > a.max_dense_gib * (1 << 30)) {
        dense_skip = fmt::format("skipped: dense A would need {:.1f} GiB (--max-dense-gib {})",
                                 dense_bytes / (1 << 30), a.max_dense_gib);
      } else {
        dense = std::make_unique<CublasDense>(m, spec.dtype);
      }
      csr = std::make_unique<CusparseCsr>(m, spec.dtype);
    }

    for (size_t ni = 0; ni < spec.ns.size(); ++ni) {
      ++case_no;
      const int64_t n = spec.ns[ni];
      const std::string name = fmt::format("{} N={}", spec.name, n);
      auto step = [&](const char* what) {
        bar.update(static_cast<int>(case_no - 1), name + ": " + what);
      };
      CaseResult cr;
      static_cast<CaseKey&>(cr) = case_key(spec.suite, spec.name, m.rows, m.cols, m.nnz(),
                                           spec.pruning, n, std::string(to_string(spec.dtype)));
      std::vector<OurBuild> mine(std::make_move_iterator(builds.begin() + range[ni].first),
                                 std::make_move_iterator(builds.begin() + range[ni].second));
      if (a.dry_run) {
        nlohmann::json tried = nlohmann::json::array();
        for (const auto& b : mine) {
          tried.push_back({{"schedule", b.schedule_text}, {"build_ms", b.build_ms}});
          if (!b.error.empty()) tried.back()["error"] = b.error;
        }
        cr.ours.impl = mine.empty() ? "" : mine[0].schedule_text;
        cr.ours.error = mine.empty() || !mine[0].error.empty()
                            ? (mine.empty() ? "nothing built" : mine[0].error)
                            : "dry run: not measured";
        cr.ours.extra = {{"candidates", tried}};
        cr.cublas.error = cr.cusparse.error = "dry run: not measured";
        bar.clear();
        std::printf("[%3zu/%zu] %s N=%lld %s: %zu kernel(s) built (%s)\n", case_no, total_cases,
                    spec.name.c_str(), static_cast<long long>(n), cr.dtype.c_str(), mine.size(),
                    mine.empty() || !mine[0].error.empty() ? cr.ours.error.c_str()
                                                           : mine[0].schedule_text.c_str());
        results.push_back(std::move(cr));
        continue;
      }
      const auto t_case = Clock::now();
      step("reference");
      CaseInputs ci = make_case_inputs(m, n, spec.dtype, /*column_major_b=*/true);
      const double ref_s = seconds_since(t_case);

      step("ours");
      measure_ours(g, m, ci, mine, cr);
      if (best_of > 1) {
        step("ours, refine");
        refine_ours(g, m, ci, spaces[ni], a, a.refine >= 0 ? a.refine : best_of / 2, cr);
      }
      step("cuBLAS");
      if (dense) {
        measure_baseline(g, dense->candidates(n, ci.b_row.ptr(), ci.c.ptr()), spec.dtype, ci,
                         static_cast<double>(dense->a_bytes()), cr.cublas);
      } else {
        cr.cublas.error = dense_skip;
      }
      step("cuSPARSE");
      measure_baseline(g, csr->candidates(n, ci.b_row.ptr(), ci.b_col.ptr(), ci.c.ptr()),
                       spec.dtype, ci, static_cast<double>(csr->a_bytes()), cr.cusparse);
      for (const MethodResult* r : {&cr.ours, &cr.cublas, &cr.cusparse}) {
        if (!r->checked && r->error.find("skipped") != 0) ++failed_checks;
      }
      cr.ours.extra["cpu_s"] = {{"load", load_s}, {"build_all_n", build_s}, {"reference", ref_s}};
      const auto vb = cr.speedup_vs_cublas();
      const auto vs = cr.speedup_vs_cusparse();
      bar.clear();
      std::printf(
          "[%3zu/%zu] %-40s N=%-3lld %s  ours %s (%.0f GB/s) | cuBLAS %s %s | cuSPARSE %s %s  "
          "[%.1f s]\n",
          case_no, total_cases, spec.name.c_str(), static_cast<long long>(n), cr.dtype.c_str(),
          fmt_ms(cr.ours).c_str(), cr.ours.gbps(), fmt_ms(cr.cublas).c_str(),
          vb ? fmt::format("({:.2f}x)", *vb).c_str() : "", fmt_ms(cr.cusparse).c_str(),
          vs ? fmt::format("({:.2f}x)", *vs).c_str() : "", seconds_since(t_case));
      for (const MethodResult* r : {&cr.ours, &cr.cublas, &cr.cusparse}) {
        if (!r->error.empty()) std::printf("          %s\n", r->error.c_str());
      }
      if (const auto gr = cr.ours.extra.find("graph"); gr != cr.ours.extra.end()) {
        if (gr->contains("error"))
          std::printf("          %s\n", (*gr)["error"].get<std::string>().c_str());
        else
          std::printf("          ours as one graph launch: %.4f ms (run / graph %.3f)\n",
                      (*gr)["median_ms"].get<double>(), (*gr)["run_over_graph"].get<double>());
      }
      std::fflush(stdout);
      results.push_back(std::move(cr));
      write_json();
    }
  }
  write_json();
  bar.clear();
  std::printf(
      "\nspeedup = baseline time / our time (geometric mean per group; >1: ours faster)\n%s",
      format_summary(summarize_groups(results)).c_str());
  std::printf("elapsed %.1f s%s%s\n", seconds_since(t_start), truncated ? " (truncated)" : "",
              outputs_note(a).c_str());
  if (failed_checks > 0) {
    std::fprintf(stderr, "sparsegen-bench: %d method(s) failed their correctness check\n",
                 failed_checks);
    return 4;
  }
  return 0;
}

}  // namespace
}  // namespace sparsegen::bench

int main(int argc, char** argv) {
  using namespace sparsegen;
  using namespace sparsegen::bench;
  CLI::App app{
      "sparsegen-bench: our generated kernels vs cuBLAS (dense) and cuSPARSE (CSR), L2 flushed, "
      "medians, JSON out"};
  Args a;
  a.command_line = command_line(argc, argv);
  auto* file = app.add_option("file", a.file, "matrix file (.mtx, .smtx, .safetensors, .npy)");
  app.add_option("-n", a.ns, "dense columns N (comma list allowed, e.g. 1,8,32)")->delimiter(',');
  app.add_option("--dtype", a.dtype,
                 "value dtype: fp32, fp16, bf16 (default fp32 for files and suitesparse, fp16 "
                 "for llm)");
  auto* sched = app.add_option("--schedule", a.schedule, "our schedule SPEC (single matrix only)");
  std::vector<std::string> families;
  for (const IrFamily* f : ir_families()) families.emplace_back(f->name());
  app.add_option("--family", a.family,
                 "only this family's schedules (" + ir_family_names() +
                     "): exploration runs; with --exhaustive, the measured set (the search still "
                     "searches every family)")
      ->check(CLI::IsMember(families));
  app.add_flag("--generated-only", a.generated_only,
               "ours from the generated kernels alone (no library candidate such as dense or "
               "cusparse): the targets that count generated kernels only");
  app.add_flag("--graph", a.graph,
               "also time our pick as a replay of its captured CUDA graph (one launch for the "
               "prologue, kernel, epilogue and library steps), beside run()'s launches");
  auto* best = app.add_option("--best-of", a.best_of,
                              "measure the cost model's top K schedules, keep the fastest");
  app.add_option("--refine", a.refine,
                 "with --best-of K: R more schedules near the fastest of the K (default K / 2, as "
                 "sparsegen tune; 0 = none)");
  auto* suite = app.add_option("--suite", a.suite,
                               "run a suite: llm, suitesparse, small (SuiteSparse and edge "
                               "matrices under --max-nnz nonzeros: fixed costs), all");
  app.add_flag("--quick", a.quick, "the short suite preset (device runs)");
  app.add_option("--json", a.json,
                 "write results as JSON to this file, and their plot next to it (FILE.json -> "
                 "FILE.svg)");
  app.add_flag("--no-plot", a.no_plot, "with --json: no SVG plot");
  app.add_option("--repeats", a.repeats, "timed runs per measurement (median; default 20)");
  app.add_option("--warmup", a.warmup, "untimed runs first (default 3)");
  app.add_option("--cache-dir", a.cache_dir,
                 "cache for generated LLM matrices (default $BENCH_DIR/cache; none if unset)");
  app.add_flag("--no-cache", a.no_cache,
               "neither read nor write the cache (one-off runs: each matrix is made once anyway)");
  app.add_option("--data", a.data_dir, "folder holding suitesparse/ (default $SPARSEGEN_DATA)");
  app.add_option("--tensor", a.tensor, "tensor name in a .safetensors file");
  app.add_option("--seed", a.seed, "seed of the generated LLM weights (default 0)");
  app.add_option("--max-nnz", a.max_nnz,
                 "suitesparse, small: skip matrices with this many nonzeros or more (default: "
                 "100000 for small, none for suitesparse)");
  app.add_option("--min-nnz", a.min_nnz,
                 "suitesparse: skip matrices with fewer nonzeros (default 1000; 10000 --quick)");
  app.add_option("--max-dense-gib", a.max_dense_gib,
                 "skip cuBLAS when the dense A would exceed this (default 4)");
  app.add_option("--time-limit", a.time_limit_s,
                 "stop starting new matrices after this many seconds (0: none)");
  app.add_option("--filter", a.filter,
                 "only matrices whose name contains this text (comma list: any of them)")
      ->delimiter(',');
  app.add_flag("--dry-run", a.dry_run,
               "no GPU: generate/load and build our kernels (PTX), print the plan");
  auto* exh = app.add_flag(
      "--exhaustive", a.exhaustive,
      "search quality: per case, the tuner's search (top-k measured) against measuring every "
      "enumerated schedule; ratio = exhaustive best / search pick (no cuBLAS/cuSPARSE)");
  auto* exh_limit = app.add_option(
      "--exhaustive-limit", a.exhaustive_limit,
      "--exhaustive: measure at most this many schedules per case (default 400); a larger "
      "enumeration gets an even spread of this many plus the search's top k, labelled capped");
  auto* top_k = app.add_option("--top-k", a.top_k,
                               "--exhaustive: candidates the search measures (default 8, as "
                               "sparsegen tune on a GPU; 0: the model's pick alone)");
  exh_limit->needs(exh);
  top_k->needs(exh);
  exh->excludes(sched);
  exh->excludes(best);
  file->excludes(suite);
  sched->excludes(best);
  sched->excludes(suite);
  try {
    app.parse(argc, argv);
    if (a.file.empty() && a.suite.empty()) {
      throw CLI::ValidationError(
          "give a matrix FILE (with -n N) or --suite llm|suitesparse|small|all");
    }
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    return run(a);
  } catch (const UserError& e) {
    std::fprintf(stderr, "sparsegen-bench: error: %s\n", e.what());
    return 1;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "sparsegen-bench: GPU error: %s\n", e.what());
    return 3;
  } catch (const BaselineError& e) {
    std::fprintf(stderr, "sparsegen-bench: library error: %s\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "sparsegen-bench: error: out of memory\n");
    return 1;
  }
}
