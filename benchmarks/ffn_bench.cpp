// sparsegen-ffn-bench: the twell family (activation-sparse gated FFN, two kernels) against the
// dense FFN of cuBLAS GEMMs (benchmarks/ffn_dense.h), in one process, over model shapes (K x N:
// model width x hidden width), token counts M and mean nonzeros per row of the gate activations
// (the synthetic generator of ir/gen/activations.h: heavy-tailed, denser first tokens).
//
// Per case: dense = [G|U] GEMM + gating + down GEMM (cuBLAS), and dense3 (gated) the same with
// the gate and up GEMMs apart, the TwELL paper's baseline (speedup_vs_dense3 beside
// speedup_vs_dense, which stays the yardstick); each schedule of --schedules timed
// (twell: both kernels together; dense_ffn: our library candidate, what the FFN tuner returns
// where sparsity does not pay); twell_ms = the fastest twell schedule, tuned_ms = the fastest of
// all (the tuner's measured choice over this list), and the enumeration's first (the rule's
// pick). With --tune, the FFN tuner (compiler/ffn.h, no cache) also tunes each case and its
// pick is timed beside the list: "tuner" holds it, its ratio to the fastest measured variant
// and the tuner's own measurements. Medians of L2-flushed runs. The fastest twell kernel of the
// smallest M of each (shape, mean) is checked against the CPU reference (ir/ffn.h's bound) on a
// few rows. JSON to $BENCH_DIR/ffn.json (or --out).
#include <fmt/format.h>

#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "benchmarks/baselines.h"
#include "benchmarks/ffn_dense.h"
#include "benchmarks/ffn_report.h"
#include "benchmarks/report.h"
#include "compiler/ffn.h"
#include "compiler/pipeline.h"
#include "ir/dtype.h"
#include "ir/family.h"
#include "ir/gen/activations.h"
#include "ir/twell_format.h"
#include "ir/twell_schedule.h"
#include "runtime/cuda_driver.h"
#include "runtime/timing.h"

using namespace sparsegen;
using json = nlohmann::json;

namespace {

// A "balance=even" SPEC without "blocks=" gets this device's grid for p (twell_even_blocks).
std::string with_even_blocks(const std::string& spec, const Problem& p, const DeviceLimits& dev) {
  if (spec.find("balance=even") == std::string::npos || spec.find("blocks=") != std::string::npos)
    return spec;
  const Schedule s = parse_schedule(spec + ";blocks=1");
  return fmt::format("{};blocks={}", spec, twell_even_blocks(p, s.as<TwellSchedule>(), dev));
}

std::vector<char> to_bytes(const std::vector<float>& v, DType t) {
  std::vector<char> out(v.size() * 2);
  convert_values_to(v, t, std::as_writable_bytes(std::span<char>(out)));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sparsegen-ffn-bench: twell (activation-sparse gated FFN) vs the dense cuBLAS FFN"};
  std::vector<std::string> shapes = {"2048x5632", "4096x14336"};
  std::vector<int64_t> ms = {512, 4096, 16384};
  std::vector<double> means = {6, 30, 120, 400, 900};
  std::vector<std::string> schedules = {
      "twell;tile=128;comp=2;warps=8;gate=lib",
      "twell;tile=128;comp=4;warps=8;gate=lib",
      "twell;tile=128;comp=8;warps=8;gate=lib",
      "twell;tile=64;comp=4;warps=8;gate=lib",
      "twell;tile=128;comp=4;warps=8;gate=lib;split=16",
      "twell;tile=128;comp=4;warps=8;gate=mma",
      "twell;tile=128;comp=8;warps=8;gate=mma",
      "dense_ffn;threads=256",
      "twell;tile=128;comp=2;warps=8;gate=lib;balance=queue",
      "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue",
      "twell;tile=128;comp=8;warps=8;gate=lib;balance=queue",
      "twell;tile=64;comp=4;warps=8;gate=lib;balance=queue",
      "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue;teams=2",
      "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue;teams=4",
      "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue;teams=8",
      "twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=2",
      "twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=4"};
  std::string type = "bf16", out_path;
  int reps = 20, check_rows = 6;
  bool gated = true, tune = false;
  app.add_option("--shapes", shapes, "K x N (model width x hidden width)");
  app.add_flag("--tune", tune,
               "also run the FFN tuner per case (no cache) and time its pick beside the list");
  app.add_option("--m", ms, "token counts");
  app.add_option("--mean", means, "mean nonzeros per row of the gate activations");
  app.add_option("--schedules", schedules,
                 "twell schedules timed per case (balance=even without blocks=: this device's "
                 "grid)");
  app.add_option("--dtype", type, "bf16 or fp16");
  app.add_option("--reps", reps, "timed runs per candidate");
  app.add_option("--check-rows", check_rows, "rows checked against the CPU reference (0: none)");
  app.add_flag("!--non-gated", gated, "y = ReLU(x·W_u)·W_d instead of the gated form");
  app.add_option("--out", out_path, "JSON path (default $BENCH_DIR/ffn.json)");
  CLI11_PARSE(app, argc, argv);
  if (type != "bf16" && type != "fp16") {
    std::fprintf(stderr, "--dtype: expected bf16 or fp16, found '%s'\n", type.c_str());
    return 2;
  }
  const DType dt = type == "bf16" ? DType::BF16 : DType::F16;
  if (out_path.empty()) {
    const char* d = std::getenv("BENCH_DIR");
    out_path = std::string(d != nullptr ? d : ".") + "/ffn.json";
  }
  std::string why;
  if (!cuda::driver_available(&why)) {
    std::fprintf(stderr, "sparsegen-ffn-bench: no GPU: %s\n", why.c_str());
    return 3;
  }
  auto ctx = std::make_shared<cuda::Context>(0);
  bench::attach_cudart(0);
  const CompileTarget target = detect_target(0);
  const cuda::DeviceInfo info = cuda::query_device(0);
  L2Flusher flusher(info);
  cuda::Stream stream;
  TimingOptions topt;
  topt.warmup = 3;
  topt.repetitions = reps;
  topt.min_repetitions = reps;
  topt.stream = stream.get();
  topt.flusher = &flusher;

  json cases = json::array();
  int failures = 0;
  // The document as measured so far: written after every case, so a run cut off by a time
  // limit still leaves what it measured.
  auto write_doc = [&](bool print) {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    json doc = {{"device", info.name},
                {"date", date},
                {"command", bench::command_line(argc, argv)},
                {"git_commit", bench::git_commit()},
                {"cublas", bench::cublas_version()},
                {"method",
                 "medians of L2-flushed runs in one process; twell = both kernels, fastest of the "
                 "listed schedules; dense = cuBLAS [G|U] GEMM + gating kernel + down GEMM, same "
                 "dtype, fp32 accumulation"},
                {"cases", cases},
                {"summary", bench::ffn_summary(cases)}};
    std::ofstream(out_path) << doc.dump(1) << "\n";
    if (!print) return;
    // The crossover of each (shape, M) and the tuner's record, as the JSON has them.
    for (const json& x : doc["summary"]["crossovers"]) {
      const std::string where =
          x.contains("crossover_mean_nnz")
              ? fmt::format("twell beats the dense FFN up to {:.0f} nonzeros per row",
                            x["crossover_mean_nnz"].get<double>())
          : x.contains("below_1_from_mean_nnz")
              ? fmt::format("twell is slower than the dense FFN from {:g} nonzeros per row",
                            x["below_1_from_mean_nnz"].get<double>())
              : fmt::format("twell beats the dense FFN through {:g} nonzeros per row",
                            x["above_1_through_mean_nnz"].get<double>());
      std::printf("%lldx%lld M=%lld: %s\n", x["k"].get<long long>(), x["n"].get<long long>(),
                  x["m"].get<long long>(), where.c_str());
    }
    if (doc["summary"].contains("tuner"))
      std::printf("tuner: %d of %d picks within 10%% of the fastest measured\n",
                  doc["summary"]["tuner"]["within_10_percent"].get<int>(),
                  doc["summary"]["tuner"]["cases"].get<int>());
  };
  for (const std::string& shape : shapes) {
    const auto kn = parse_shape(shape);
    if (!kn) {
      std::fprintf(stderr, "--shapes: bad shape '%s' (expected KxN)\n", shape.c_str());
      return 2;
    }
    const auto [k, n] = *kn;
    const int64_t max_m = *std::max_element(ms.begin(), ms.end());
    ActivationSpec base{.m = 1, .k = k, .n = n, .dtype = dt, .gated = gated, .seed = 42};
    const FfnWeights w = make_ffn_case(base).weights;
    bench::CublasFfn dense(w, dt, max_m, target);
    for (const int64_t m : ms) {
      const Problem p = Problem::gated_ffn(m, k, n, dt, gated);
      // Every schedule's kernels for this M (they do not depend on the sparsity).
      std::vector<std::pair<std::string, std::unique_ptr<CompiledKernel>>> kernels;
      for (const std::string& spec : schedules) {
        try {
          const std::string full = with_even_blocks(spec, p, target.limits);
          const Schedule s = parse_schedule(full);
          kernels.emplace_back(
              full, std::make_unique<CompiledKernel>(ctx, build_ffn_kernel(p, s, w, target)));
        } catch (const std::exception& e) {
          std::printf("%s M=%lld %s: %s\n", shape.c_str(), (long long)m, spec.c_str(), e.what());
          ++failures;
        }
      }
      cuda::DeviceBuffer dx(static_cast<size_t>(m * k * 2)), dy(static_cast<size_t>(m * k * 2));
      for (const double mean : means) {
        json row = {{"k", k},        {"n", n},        {"m", m}, {"mean_target", mean},
                    {"dtype", type}, {"gated", gated}};
        try {
          ActivationSpec spec = base;
          spec.m = m;
          spec.mean_nnz = std::min(mean, double(n));
          const std::vector<float> x = make_ffn_tokens(spec);
          const std::vector<char> xb = to_bytes(x, dt);
          dx.upload(xb.data(), xb.size());
          // Statistics of the first rows (the CPU product costs K·N per row).
          const int64_t srows = std::min<int64_t>(m, 24);
          const Problem ps = Problem::gated_ffn(srows, k, n, dt, gated);
          const CsrMatrix h = ffn_activations(
              ps, w, std::span<const float>(x.data(), static_cast<size_t>(srows * k)));
          const ActivationStats st = activation_stats(h);
          row["sample_rows"] = srows;
          row["sample_mean_nnz"] = st.mean;
          row["sample_max_nnz"] = st.max;
          const double dense_ms =
              measure([&](CUstream s) { dense.run(dx.ptr(), dy.ptr(), m, s); }, topt).median_ms;
          row["dense_ms"] = dense_ms;
          // The paper's baseline: the gate and up GEMMs apart (dense_ms stays the yardstick). Its
          // first rows of y must agree with the fused GEMM's (the same sums, other kernels).
          double dense3_ms = 0;
          if (gated) {
            const size_t first = static_cast<size_t>(std::min<int64_t>(m, 64) * k);
            std::vector<uint16_t> y2(first), y3(first);
            dy.download(y2.data(), first * 2);
            dense3_ms =
                measure([&](CUstream s) { dense.run_three_gemms(dx.ptr(), dy.ptr(), m, s); }, topt)
                    .median_ms;
            dy.download(y3.data(), first * 2);
            const auto val = [&](uint16_t b) {
              return dt == DType::F16 ? half_bits_to_float(b) : bf16_bits_to_float(b);
            };
            double worst = 0;
            for (size_t i = 0; i < first; ++i) {
              const double a = val(y2[i]), b = val(y3[i]);
              worst = std::max(worst, std::fabs(a - b) / std::max(std::fabs(a), 1e-3));
            }
            row["dense3_ms"] = dense3_ms;
            row["dense3_vs_dense_max_rel_diff"] = worst;
          }
          json tried = json::array();
          double best = 0, tuned = 0;
          size_t best_i = 0, tuned_i = 0;
          bool any_twell = false;
          for (size_t i = 0; i < kernels.size(); ++i) {
            const double ms_i =
                measure(
                    [&](CUstream s) { kernels[i].second->run(dx.ptr(), dy.ptr(), 1.0f, 0.0f, s); },
                    topt)
                    .median_ms;
            const Schedule sch = parse_schedule(kernels[i].first);
            json t = {{"schedule", kernels[i].first}, {"ms", ms_i}};
            if (const auto* tw = sch.get_if<TwellSchedule>()) {
              t["sample_overflow_tiles"] = twell_stats(h, tw->tile, tw->cap()).overflow_tiles;
              if (!any_twell || ms_i < best) best = ms_i, best_i = i;
              any_twell = true;
            }
            if (i == 0 || ms_i < tuned) tuned = ms_i, tuned_i = i;
            tried.push_back(t);
          }
          row["tried"] = tried;
          if (!kernels.empty()) {
            row["tuned_ms"] = tuned;
            row["tuned_schedule"] = kernels[tuned_i].first;
            row["tuned_vs_dense"] = dense_ms / tuned;
            // The rule's pick: the first enumerated schedule for the sampled pattern.
            const std::string rule = to_string(choose_ffn_schedule(p, h, "", target));
            row["rule_schedule"] = rule;
            for (const auto& t : tried)
              if (t["schedule"] == rule) row["rule_vs_best"] = t["ms"].get<double>() / tuned;
            if (check_rows > 0 && m == *std::min_element(ms.begin(), ms.end())) {
              const FfnCheckResult r = check_ffn(*kernels[tuned_i].second, w, x, 5, check_rows);
              row["check"] = r.passed ? "pass" : r.error;
              row["check_worst_ratio"] = r.worst;
              if (!r.passed) ++failures;
            }
          }
          if (tune) {
            // The tuner's pick (its own ranking and measurements), timed here as the list was:
            // within how much of the best measured variant does it land?
            FfnTuneOptions to;
            to.use_cache = false;
            const FfnTuneResult r = tune_ffn(ctx, p, w, x, target, to);
            const double pick_ms =
                measure([&](CUstream s) { r.kernel->run(dx.ptr(), dy.ptr(), 1.0f, 0.0f, s); }, topt)
                    .median_ms;
            json measured = json::array();
            for (const FfnMeasured& fm : r.measured)
              measured.push_back({{"schedule", fm.schedule}, {"ms", fm.ms}, {"error", fm.error}});
            const double best_any = kernels.empty() ? pick_ms : std::min(tuned, pick_ms);
            row["tuner"] = {{"schedule", to_string(r.schedule)},
                            {"ms", pick_ms},
                            {"vs_dense", dense_ms / pick_ms},
                            {"vs_best", pick_ms / best_any},
                            {"measured", measured}};
            std::printf("  tuner picks %s: %.4f ms, %.2fx dense, %.3f of the best\n",
                        to_string(r.schedule).c_str(), pick_ms, dense_ms / pick_ms,
                        pick_ms / best_any);
          }
          if (any_twell) {
            row["twell_ms"] = best;
            row["twell_schedule"] = kernels[best_i].first;
            row["speedup_vs_dense"] = dense_ms / best;
            if (dense3_ms > 0) row["speedup_vs_dense3"] = dense3_ms / best;
          }
          std::printf(
              "%s M=%-6lld mean %-5g (sample %.1f, max %lld)  dense %.4f ms  twell %.4f ms "
              " %.2fx%s  tuned %.2fx [%s]\n",
              shape.c_str(), (long long)m, mean, st.mean, (long long)st.max, dense_ms, best,
              any_twell ? dense_ms / best : 0.0,
              any_twell && dense3_ms > 0
                  ? fmt::format(" ({:.2f}x of 3 GEMMs)", dense3_ms / best).c_str()
                  : "",
              kernels.empty() ? 0.0 : dense_ms / tuned,
              kernels.empty() ? "-" : kernels[tuned_i].first.c_str());
          std::fflush(stdout);
        } catch (const std::exception& e) {
          row["error"] = e.what();
          ++failures;
          std::printf("%s M=%lld mean %g: %s\n", shape.c_str(), (long long)m, mean, e.what());
        }
        cases.push_back(row);
        write_doc(false);
      }
    }
  }
  write_doc(true);
  std::printf("wrote %s, %d failures\n", out_path.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
