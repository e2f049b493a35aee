// `sparsegen tune FILE -n N [--dtype fp32|fp16|bf16] [--top-k K] [--refine R] [--arch sm_XY]
//  [--build-memory GB] [--cache-dir D] [--force] [--json]`: the main job. Finds the best kernel for
//  the matrix
// (compiler/tune.h: enumerate, rank with the cost model, measure the top K on the GPU, then R more
// near the fastest of them, check the winner), stores it
// in the kernel database, and says what was chosen, the predicted and measured times and how long
// the search took. A second tune of the same matrix structure, N, dtype and device is a cache hit.
//
// --top-k: default 8 on a GPU, 0 (model only: compile and cache, no GPU needed) without one or
// with --arch (an explicit architecture compiles offline; measuring needs the device's own).
// Progress goes to stderr as a bar when stderr is a terminal (never with --json).
//
// Exit codes (main.cpp): 0 success; 1 bad file/flag/cache file; 3 GPU error (e.g. --top-k 3 on a
// machine without a GPU).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/fingerprint.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/io/load.h"
#include "ir/problem.h"
#include "ir/progress_line.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

struct TuneArgs {
  std::string file;
  int64_t n = 1;
  std::string dtype = "fp32";
  std::string io = "fp16";
  std::string b_layout = "row";
  std::string c_layout = "row";
  std::string tensor;
  int top_k = -1;              // auto
  int refine = -1;             // auto: top_k / 2
  double build_memory_gb = 0;  // 0: automatic (tune.h: build_window)
  std::string arch;
  std::string cache_dir;
  bool force = false;
  bool no_cache = false;
  bool json = false;
};

std::string ms_or_dash(const std::optional<double>& v) {
  return v ? fmt::format("{:.4f} ms", *v) : std::string("-");
}

nlohmann::json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The search's progress on stderr, one ProgressLine per phase (enumerate, rank, compile,
// measure, refine, check, store), each with its own count and ETA.
class PhaseProgress {
 public:
  explicit PhaseProgress(bool on) : on_(on) {}
  void update(const TuneProgress& p) {
    if (!on_) return;
    if (!line_ || p.phase != phase_) {
      if (line_) line_->clear();
      phase_ = p.phase;
      line_.emplace(std::string("tune ") + p.phase, p.total, true);
    }
    line_->update(p.done);
  }
  void clear() {
    if (line_) line_->clear();
  }

 private:
  bool on_;
  std::string phase_;
  std::optional<ProgressLine> line_;
};

void run_tune(const TuneArgs& a) {
  KernelRequest req;
  req.n = a.n;
  req.dtype = dtype_flag(a.dtype);
  req.io_dtype = io_flag(a.io);
  req.b_layout = layout_flag(a.b_layout, "--layout-b");
  req.c_layout = layout_flag(a.c_layout, "--layout-c");
  if (a.top_k < -1) throw UserError(fmt::format("--top-k: expected 0 or more, found {}", a.top_k));
  if (a.refine < -1)
    throw UserError(fmt::format("--refine: expected 0 or more, found {}", a.refine));
  if (!(a.build_memory_gb >= 0) || a.build_memory_gb > 1e6)
    throw UserError(fmt::format(
        "--build-memory: expected gigabytes, 0 (automatic) or more, found {}", a.build_memory_gb));

  CompileTarget target;
  std::string note;
  if (!a.arch.empty()) {
    target = offline_target(a.arch);
    if (a.top_k > 0)
      throw UserError(
          fmt::format("--top-k {} measures on this machine's GPU, but --arch {} "
                      "compiles offline: use --top-k 0, or drop --arch",
                      a.top_k, a.arch));
  } else {
    target = detect_target(0);
  }
  TuneOptions o;
  o.top_k = a.top_k >= 0 ? a.top_k : (target.has_gpu ? 8 : 0);
  if (a.top_k < 0 && !target.has_gpu)
    note = a.arch.empty() ? "no GPU here: model only (top-k 0), compiled for " + target.arch
                          : "--arch given: model only (top-k 0)";
  o.refine = a.refine;
  o.build_memory_bytes = static_cast<int64_t>(a.build_memory_gb * 1e9);
  o.cache_dir = a.cache_dir;
  o.use_cache = !a.no_cache;
  o.force = a.force;

  LoadOptions lo;
  lo.tensor = a.tensor;
  const CsrMatrix m = load_matrix(a.file, lo).matrix;
  if (m.field == ValueField::Complex)
    throw UserError(
        fmt::format("{}: complex matrices are not supported (real kernels only)", a.file));

  PhaseProgress bar(!a.json && isatty(STDERR_FILENO) != 0);
  o.progress = [&bar](const TuneProgress& p) { bar.update(p); };
  const TuneResult r = tune(m, req, target, o);
  bar.clear();
  for (const std::string& w : r.warnings)
    std::fprintf(stderr, "sparsegen: warning: %s\n", w.c_str());

  if (a.json) {
    nlohmann::json j;
    j["file"] = a.file;
    j["problem"] = to_string(r.problem);
    j["nnz"] = m.nnz();
    j["fingerprint"] = to_string(fingerprint(m), r.problem.dtype);
    j["schedule"] = r.schedule;
    j["reason"] = r.reason;
    j["ranking"] = r.ranking;
    j["cache_hit"] = r.cache_hit;
    j["predicted_ms"] = opt_json(r.predicted_ms);
    j["measured_ms"] = opt_json(r.measured_ms);
    j["check_passed"] = r.check_passed ? nlohmann::json(*r.check_passed) : nlohmann::json(nullptr);
    j["top_k"] = r.top_k;
    j["refined"] = r.refined;
    j["enumerated"] = r.enumerated;
    j["search_ms"] = r.search_ms;
    j["original_search_ms"] = r.original_search_ms;
    nlohmann::json phases = nlohmann::json::object();
    for (const auto& [name, ms] : r.phases_ms) phases[name] = ms;
    j["phases_ms"] = phases;
    nlohmann::json peaks = nlohmann::json::object();
    for (const auto& [name, bytes] : r.phases_peak_rss_bytes) peaks[name] = bytes;
    j["phases_peak_rss_bytes"] = peaks;
    j["build_window"] = r.build_window;
    j["kernel_key"] = r.kernel_key;
    j["tuning_key"] = r.tuning_key;
    j["cache"] = r.db_path;
    j["device"] = r.device;
    j["arch"] = r.arch;
    j["note"] = note;
    j["warnings"] = r.warnings;
    nlohmann::json cands = nlohmann::json::array();
    for (const CandidateReport& c : r.candidates)
      cands.push_back({{"schedule", c.schedule},
                       {"predicted_ms", opt_json(c.predicted_ms)},
                       {"measured_ms", opt_json(c.measured_ms)},
                       {"compile_ms", c.compile_ms},
                       {"round", c.round},
                       {"error", c.error}});
    j["candidates"] = cands;
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("problem    %s (nnz %lld)\n", to_string(r.problem).c_str(),
              static_cast<long long>(m.nnz()));
  if (!note.empty()) std::printf("note       %s\n", note.c_str());
  std::printf("schedule   %s\n           (%s)\n", r.schedule.c_str(), r.reason.c_str());
  std::printf("time       predicted %s, measured %s%s\n", ms_or_dash(r.predicted_ms).c_str(),
              ms_or_dash(r.measured_ms).c_str(),
              r.measured_ms ? " (median, L2 flushed)" : " (not measured)");
  if (r.check_passed) std::printf("check      %s\n", *r.check_passed ? "PASS" : "FAIL");
  if (r.cache_hit)
    std::printf("search     cache hit in %.1f ms (the original search took %.1f ms)\n", r.search_ms,
                r.original_search_ms);
  else
    std::printf(
        "search     %.1f ms: %d enumerated, %zu compiled, %d measured (+%d near the best)\n",
        r.search_ms, r.enumerated, r.candidates.size(), r.top_k, r.refined);
  std::printf("device     %s, %s\n", r.device.c_str(), r.arch.c_str());
  if (!r.db_path.empty())
    std::printf("cache      %s  key %s\n", r.db_path.c_str(), r.kernel_key.substr(0, 16).c_str());
}

}  // namespace

void register_tune(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Find the fastest kernel for a matrix (search, measure, cache); the main job");
  cmd->add_option("file", args->file, "matrix file (.mtx, .smtx, .safetensors, .npy)")->required();
  cmd->add_option("-n", args->n, "dense columns of B and C (1 = SpMV)")->required();
  cmd->add_option("--dtype", args->dtype,
                  "value dtype of A: fp32, fp16, bf16 (also B and C), int8 or fp8_e4m3 (per-row "
                  "and per-token scales; B and C in --io)");
  cmd->add_option("--io", args->io, "B and C of an int8 / fp8_e4m3 problem: fp16 or bf16");
  cmd->add_option("--layout-b,--b-layout", args->b_layout, "layout of B: row or col");
  cmd->add_option("--layout-c,--c-layout", args->c_layout, "layout of C: row or col");
  cmd->add_option("--tensor", args->tensor, "tensor name in a .safetensors file");
  cmd->add_option("--top-k", args->top_k,
                  "candidates measured on the GPU (0 = cost model only; default 8 with a GPU, "
                  "0 without)");
  cmd->add_option("--refine", args->refine,
                  "second-round candidates, near the fastest of the top K (default K / 2; 0 = "
                  "none)");
  cmd->add_option("--build-memory", args->build_memory_gb,
                  "GB of host memory the candidates being packed may hold at once, from the "
                  "start of a pack to its upload (0 = automatic: twice the CSR's size, at least "
                  "256 MiB; with SPARSEGEN_MALLOC_REUSE=0 the CSR's size, at least 4 GiB); more "
                  "overlaps more packs with measuring");
  cmd->add_option("--arch", args->arch,
                  "compile offline for this architecture (sm_XY cubin or compute_XY PTX)");
  cmd->add_option("--cache-dir", args->cache_dir,
                  "kernel database folder (default $SPARSEGEN_CACHE_DIR, else "
                  "$XDG_CACHE_HOME/sparsegen, else ~/.cache/sparsegen)");
  cmd->add_flag("--force", args->force, "search again even when the cache has a tuning");
  cmd->add_flag("--no-cache", args->no_cache, "neither read nor write the kernel database");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args] { run_tune(*args); });
}

}  // namespace sparsegen::cli
