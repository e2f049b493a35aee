// sparsegen-slide-bench: the slide family (SlideSparse 6:8 / 4:6 on the 2:4 sparse tensor cores)
// against dense cuBLASLt of the same type, in one process, on LLM linear shapes (weight M x K,
// N tokens; B = activations N x K row-major = K x N column-major, C column-major).
//
// Per case: the weight is magnitude-pruned to the pattern; ours = the fastest of the tuner's
// top-ranked slide schedules (lift + mma.sp, whole run timed); dense = cuBLASLt with its
// heuristic's best of 8 (int8: int32 GEMM + conversion to fp16, as the caller needs). Medians of
// L2-flushed runs. Also the lift kernel alone and its bandwidth against a device-to-device copy
// measured in the same run. JSON to $BENCH_DIR/slide.json (or --out).
#include <fmt/format.h>

#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <tuple>

#include "benchmarks/baselines.h"
#include "benchmarks/bench_plot.h"
#include "benchmarks/lt_dense.h"
#include "benchmarks/report.h"
#include "benchmarks/slide_plot.h"
#include "codegen/slide.h"
#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/gen/pruning.h"
#include "ir/slide_fragments.h"
#include "ir/slide_lt_schedule.h"
#include "ir/slide_schedule.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/timing.h"

using namespace sparsegen;
using json = nlohmann::json;

namespace {

// B's values in the 16-bit type the kernels read (bf16 for bf16 problems, fp16 otherwise).
std::vector<char> io_values(size_t count, uint64_t seed, DType io) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<char> out(count * 2);
  for (size_t i = 0; i < count; ++i) {
    const float v = u(rng);
    const uint16_t h = io == DType::BF16 ? float_to_bf16_bits(v) : float_to_half_bits(v);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

// A --types name as the weight's value type, or nullopt.
std::optional<DType> slide_bench_type(const std::string& name) {
  if (name == "fp16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  if (name == "int8") return DType::I8;
  if (name == "fp8") return DType::F8E4M3;
  return std::nullopt;
}

// A --patterns entry "(2N-2):2N" as N (2 … 8), or 0: the SPEC field's parser, whose own error
// would name a schedule field rather than the flag.
int slide_bench_pattern(const std::string& pat) {
  int n = 0;
  try {
    n = parse_slide_pattern_field("pattern", pat);
  } catch (const UserError&) {
    return 0;
  }
  return n >= kSlideMinN && n <= kSlideMaxN ? n : 0;
}

// Dense copy of the pruned weight in the library's input type (int8: per-row quantized).
std::vector<char> dense_bytes(const CsrMatrix& a, DType t) {
  const size_t w = static_cast<size_t>(dtype_bytes(t));
  std::vector<char> out(static_cast<size_t>(a.rows * a.cols) * w, 0);
  for (int64_t r = 0; r < a.rows; ++r) {
    float mx = 0;
    for (int64_t e = a.row_ptr[size_t(r)]; e < a.row_ptr[size_t(r + 1)]; ++e)
      mx = std::max(mx, std::fabs(a.values[size_t(e)]));
    for (int64_t e = a.row_ptr[size_t(r)]; e < a.row_ptr[size_t(r + 1)]; ++e) {
      const size_t i = static_cast<size_t>(r * a.cols + a.col_idx[size_t(e)]);
      const float v = a.values[size_t(e)];
      if (t == DType::F16 || t == DType::BF16) {
        const uint16_t h = t == DType::BF16 ? float_to_bf16_bits(v) : float_to_half_bits(v);
        std::memcpy(out.data() + 2 * i, &h, 2);
      } else if (t == DType::I8) {
        out[i] = static_cast<char>(float_to_int8(mx > 0 ? v * 127.0f / mx : 0.0f));
      } else {
        out[i] = static_cast<char>(float_to_e4m3_bits(mx > 0 ? v * 448.0f / mx : 0.0f));
      }
    }
  }
  return out;
}

// Median ms of schedule s's b_transform (the lift) alone on B at b, from its own NVRTC module.
double time_lift(const Problem& p, const Schedule& s, const CsrMatrix& a, const SlideTcFormat& f,
                 CUdeviceptr b, const CompileTarget& target, const TimingOptions& topt) {
  // f is packed in the plain slot order; a split=wg schedule reads its own (grouped) order.
  const int group = slide_pack_group(s.as<SlideSchedule>());
  const SlideWindowOrder order = slide_pack_order(s.as<SlideSchedule>());
  std::optional<SlideTcFormat> regrouped;
  if (group != f.group || order != f.order)
    regrouped = pack_slide_tc(a, f.n, f.dtype, SlideForm::Kernel, group, order);
  const codegen::GeneratedKernel g = codegen::emit_slide(p, s, regrouped ? *regrouped : f);
  nvrtc::CompileOptions co;
  co.arch = g.arch_specific ? nvrtc::arch_specific_variant(target.arch) : target.arch;
  co.headers = g.headers;
  const cuda::Module mod(nvrtc::compile(g.source, co).image);
  const CUfunction lift = mod.function(g.signature.b_transform.name);
  cuda::DeviceBuffer bw(static_cast<size_t>(g.signature.b_work_bytes) + 16),
      ts(static_cast<size_t>(p.n) * 4 + 16);
  CUdeviceptr pb = b, pw = bw.ptr(), pt = ts.ptr();
  const auto& L = g.signature.b_transform.launch;
  cuda::LaunchConfig lc;
  lc.grid = {unsigned(L.grid_x), unsigned(L.grid_y), 1};
  lc.block = {unsigned(L.block_threads), 1, 1};
  lc.shared_bytes = static_cast<unsigned>(L.dynamic_shared_bytes);
  if (L.dynamic_shared_bytes > 48 * 1024)
    cuda::set_max_dynamic_shared_memory(lift, static_cast<int>(L.dynamic_shared_bytes));
  return measure(
             [&](CUstream st) {
               lc.stream = st;
               if (is_quantized(p.dtype))
                 cuda::launch_kernel(lift, lc, pb, pw, pt);
               else
                 cuda::launch_kernel(lift, lc, pb, pw);
             },
             topt)
      .median_ms;
}

// GB/s (read + write) of a device-to-device copy of `bytes` each way.
double copy_bandwidth(size_t bytes, const TimingOptions& topt) {
  cuda::DeviceBuffer x(bytes), y(bytes);
  x.fill_bytes(1);
  const TimingResult t = measure(
      [&](CUstream s) {
        const cudaError_t e = cudaMemcpyAsync(reinterpret_cast<void*>(y.ptr()),
                                              reinterpret_cast<const void*>(x.ptr()), bytes,
                                              cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess)
          throw std::runtime_error(std::string("cudaMemcpyAsync: ") + cudaGetErrorString(e));
      },
      topt);
  return 2.0 * double(bytes) / (t.median_ms * 1e6);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sparsegen-slide-bench: slide (SlideSparse) vs dense cuBLASLt"};
  // Llama-3-8B and Qwen2.5-7B linear shapes (M x K).
  std::vector<std::string> shapes = {"4096x4096", "14336x4096", "4096x14336", "18944x3584",
                                     "3584x18944"};
  std::vector<int64_t> ns = {1, 8, 16, 32, 64};
  std::vector<std::string> types = {"fp16", "int8"};
  std::vector<std::string> patterns = {"6:8"};
  std::vector<int64_t> lift_ns = {1024, 4096};
  int top = 2, reps = 20;  // 2 per group: six groups (split x lift x K split) per case
  std::string out_path;
  app.add_option("--shapes", shapes, "weight shapes MxK (default: Llama-3-8B and Qwen2.5-7B)");
  app.add_option("--n", ns, "token counts");
  app.add_option("--types", types,
                 "fp16, bf16, int8, fp8 (8-bit weights: fp16 activations and output)");
  app.add_option("--patterns", patterns, "(2N-2):2N patterns");
  app.add_option("--lift-n", lift_ns, "token counts at which the lift kernel is timed alone");
  app.add_option("--top", top,
                 "slide schedules timed per case, warp split, lift placement and K split (one "
                 "part or several; the tuner's ranking)");
  int first = 0;
  app.add_option("--first", first,
                 "also time the cost model's first K slide schedules of any group (what tune "
                 "measures); the JSON then gives each case's fastest of them against the fastest "
                 "of all (first_vs_best)");
  app.add_option("--reps", reps, "timed runs per candidate");
  app.add_option("--out", out_path, "JSON path (default $BENCH_DIR/slide.json)");
  std::vector<std::string> backends = {"mma", "lt"};
  app.add_option("--backends", backends,
                 "mma (the generated mma.sp kernels), lt (cuSPARSELt on the lifted weight)");
  bool lift_only = false;
  app.add_flag("--lift-only", lift_only, "time the lift kernel alone (no decode cases)");
  bool no_plot = false;
  app.add_flag("--no-plot", no_plot, "no SVG plot next to the JSON");
  std::vector<std::string> schedule_specs;
  app.add_option("--schedule", schedule_specs,
                 "slide schedule SPECs timed too, in every case they fit (their pattern, the "
                 "type, N); rank -1 in the JSON");
  std::vector<int> prefetches;
  app.add_option("--prefetch", prefetches,
                 "also time each ranked lift=kernel schedule with these prefetch fields (chunks "
                 "of A asked of the L2 before the lift ends); rank -2 and prefetch_of in the JSON")
      ->check(CLI::Range(1, kSlideMaxPrefetch));
  CLI11_PARSE(app, argc, argv);
  std::vector<Schedule> given;
  for (const std::string& spec : schedule_specs) {
    try {
      given.push_back(parse_schedule(spec));
      if (given.back().family_name() != SlideSchedule::kFamily)
        throw UserError(fmt::format("'{}' is not a slide schedule", spec));
    } catch (const UserError& e) {
      // parse_schedule's message already names the flag.
      const std::string m = e.what();
      std::fprintf(stderr, "%s%s\n",
                   m.rfind("--schedule", 0) == 0 ? "" : "--schedule: ", m.c_str());
      return 2;
    }
  }
  for (const std::string& t : types)
    if (!slide_bench_type(t)) {
      std::fprintf(stderr, "--types: '%s' is not fp16, bf16, int8 or fp8\n", t.c_str());
      return 2;
    }
  for (const std::string& pat : patterns)
    if (slide_bench_pattern(pat) == 0) {
      std::fprintf(stderr, "--patterns: '%s' is not a (2N-2):2N pattern from 2:4 to 14:16\n",
                   pat.c_str());
      return 2;
    }
  if (lift_only) ns.clear();
  const bool use_mma = std::count(backends.begin(), backends.end(), "mma") > 0;
  const bool use_lt = std::count(backends.begin(), backends.end(), "lt") > 0;
  for (const std::string& b : backends)
    if (b != "mma" && b != "lt") {
      std::fprintf(stderr, "--backends: '%s' is not mma or lt\n", b.c_str());
      return 2;
    }
  if (out_path.empty()) {
    const char* d = std::getenv("BENCH_DIR");
    out_path = std::string(d != nullptr ? d : ".") + "/slide.json";
  }
  std::string why;
  if (!cuda::driver_available(&why)) {
    std::fprintf(stderr, "sparsegen-slide-bench: no GPU: %s\n", why.c_str());
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

  // Device-to-device copy bandwidth (256 MiB each way), the lift kernel's yardstick; per lift
  // case also a copy moving the lift's bytes (half read, half written), as small copies pay the
  // same launch and ramp.
  const double copy_gbs = copy_bandwidth(size_t{256} << 20, topt);
  json cases = json::array(), lifts = json::array();
  int failures = 0;
  int first_cases = 0, first_within = 0;  // --first: cases, and those within 10 % of the best
  // The whole document as it stands, written to out_path.
  auto write_doc = [&]() {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    json doc = {{"device", info.name},
                {"date", date},
                {"command", bench::command_line(argc, argv)},
                {"git_commit", bench::git_commit()},
                {"cublaslt", bench::cublaslt_version()},
                {"copy_gbs", copy_gbs},
                {"method",
                 "medians of L2-flushed runs in one process; slide = fastest of the tuner's top "
                 "generated schedules (mma) and cuSPARSELt on the lifted weight with its "
                 "algorithm searched at load (lt), lift included, checked against the CPU "
                 "reference (check); dense = cuBLASLt best of 8 heuristics, same type"},
                {"cases", cases},
                {"lift", lifts}};
    if (first > 0)
      doc["summary"] = {
          {"first", first}, {"cases", first_cases}, {"first_within_10pct", first_within}};
    std::ofstream(out_path) << doc.dump(1) << "\n";
    return doc;
  };
  for (const std::string& type : types) {
    const DType dt = *slide_bench_type(type);
    // 8-bit weights read fp16 activations and write fp16; 16-bit ones their own type.
    const DType io = dt == DType::BF16 ? DType::BF16 : DType::F16;
    const cusparselt::Type lt = dt == DType::F16    ? cusparselt::Type::F16
                                : dt == DType::BF16 ? cusparselt::Type::BF16
                                : dt == DType::I8   ? cusparselt::Type::I8
                                                    : cusparselt::Type::E4M3;
    const cusparselt::Type lt_out =
        io == DType::BF16 ? cusparselt::Type::BF16 : cusparselt::Type::F16;
    for (const std::string& shape : shapes) {
      const auto mk = parse_shape(shape);
      if (!mk) {
        std::fprintf(stderr, "--shapes: bad shape '%s'\n", shape.c_str());
        return 2;
      }
      const auto [m, k] = *mk;
      for (const std::string& pat : patterns) {
        const int pn = slide_bench_pattern(pat);
        PruneSpec spec;
        spec.method = PruneMethod::NM;
        spec.n = 2 * pn - 2;
        spec.m = 2 * pn;
        const CsrMatrix a = prune(make_llm_weight(m, k, 42), spec);
        const std::vector<char> ha = dense_bytes(a, dt);
        cuda::DeviceBuffer da(ha.size());
        da.upload(ha.data(), ha.size());
        const SlideTcFormat f = pack_slide_tc(a, pn, dt);
        // The lift alone at prefill sizes, where it is bandwidth-bound.
        for (const int64_t n : lift_ns) {
          const Problem p = is_quantized(dt)
                                ? Problem::quantized_spmm(m, k, n, dt, DType::F16, Layout::ColMajor,
                                                          Layout::ColMajor)
                                : Problem::spmm(m, k, n, dt, Layout::ColMajor, Layout::ColMajor);
          const std::vector<char> hb = io_values(static_cast<size_t>(k * n), 3 + uint64_t(n), io);
          cuda::DeviceBuffer db(hb.size());
          db.upload(hb.data(), hb.size());
          SlideSchedule ls;
          ls.pattern = pn;
          const double ms = time_lift(p, Schedule(ls), a, f, db.ptr(), target, topt);
          const double bytes = double(k * n * 2) + double(slide_b_work_bytes(p, pn));
          const double same_gbs = copy_bandwidth(static_cast<size_t>(bytes / 2), topt);
          lifts.push_back({{"type", type},
                           {"m", m},
                           {"k", k},
                           {"n", n},
                           {"pattern", pat},
                           {"lift_ms", ms},
                           {"lift_gbs", bytes / (ms * 1e6)},
                           {"lift_vs_copy", bytes / (ms * 1e6) / copy_gbs},
                           {"copy_same_bytes_gbs", same_gbs},
                           {"lift_vs_copy_same_bytes", bytes / (ms * 1e6) / same_gbs}});
          std::printf(
              "%-5s lift k=%-5lld %s n=%-5lld %.4f ms  %.0f GB/s  %.1f%% of copy, %.1f%% of a "
              "copy of its bytes\n",
              type.c_str(), (long long)k, pat.c_str(), (long long)n, ms, bytes / (ms * 1e6),
              100.0 * bytes / (ms * 1e6) / copy_gbs, 100.0 * bytes / (ms * 1e6) / same_gbs);
        }
        for (const int64_t n : ns) {
          json row = {{"type", type}, {"m", m}, {"k", k}, {"n", n}, {"pattern", pat}};
          try {
            const Problem p = is_quantized(dt)
                                  ? Problem::quantized_spmm(m, k, n, dt, DType::F16,
                                                            Layout::ColMajor, Layout::ColMajor)
                                  : Problem::spmm(m, k, n, dt, Layout::ColMajor, Layout::ColMajor);
            const std::vector<char> hb = io_values(static_cast<size_t>(k * n), 7 + uint64_t(n), io);
            cuda::DeviceBuffer db(hb.size()), dc(static_cast<size_t>(m * n) * 2),
                dd(static_cast<size_t>(m * n) * 2);
            db.upload(hb.data(), hb.size());
            // dense cuBLASLt of the same type
            bench::LtDenseGemm dense(da.ptr(), cusparselt::Shape{m, k, n, lt, lt_out});
            row["dense_algo"] = dense.search(db.ptr(), dd.ptr(), stream.get(), 8, 3);
            const double dense_ms =
                measure([&](CUstream s) { dense.run(db.ptr(), dd.ptr(), 1.0f, 0.0f, s); }, topt)
                    .median_ms;
            row["dense_ms"] = dense_ms;
            // ours: the tuner's top slide schedules
            EnumerateOptions eo;
            eo.device = target.limits;
            eo.include_specialised = true;
            const RankedSpace ranked =
                rank_space(a, p, target, find_ir_family("slide")->enumerate(p, a, eo), &info);
            double best = 0, first_ms = 0;
            std::string best_spec;
            json tried = json::array();
            // The first `top` of the ranking for each warp split, lift placement and K split
            // (one part, or several); "rank" is the schedule's place in the cost model's order
            // (0 = its first choice). Then the --schedule SPECs that fit the case and device (-1).
            std::vector<std::pair<Schedule, long long>> timed;
            std::map<std::tuple<SlideSplit, SlideLift, bool>, int> taken;
            for (size_t j = 0; j < ranked.order.size(); ++j) {
              const Schedule& s = ranked.all[ranked.order[j]];
              const auto& b = s.as<SlideSchedule>();
              if (taken[{b.split, b.lift, b.ksplit > 1}]++ < top || static_cast<int64_t>(j) < first)
                timed.emplace_back(s, static_cast<long long>(j));
            }
            for (const Schedule& s : given)
              if (s.as<SlideSchedule>().pattern == pn && validate(p, s).empty() &&
                  verify_slide(p, s.as<SlideSchedule>(), target.limits).empty())
                timed.emplace_back(s, -1);
            // --prefetch: the ranked lift=kernel schedules again with each prefetch field
            // (rank -2; prefetch_of names the ranked schedule it varies).
            std::map<size_t, std::string> prefetch_of;
            const size_t n_ranked = timed.size();
            for (size_t j = 0; j < n_ranked; ++j) {
              if (timed[j].second < 0) continue;
              const auto& b = timed[j].first.as<SlideSchedule>();
              if (b.lift != SlideLift::Kernel || b.prefetch != 0) continue;
              for (const int c : prefetches) {
                SlideSchedule v = b;
                v.prefetch = c;
                if (!validate(p, Schedule(v)).empty()) continue;
                prefetch_of[timed.size()] = to_string(timed[j].first);
                timed.emplace_back(Schedule(v), -2);
              }
            }
            if (!use_mma) timed.clear();
            // The fastest kernel so far, kept for the check below.
            std::unique_ptr<CompiledKernel> best_kernel;
            for (size_t j = 0; j < timed.size(); ++j) {
              const auto& [s, rank] = timed[j];
              auto kern = std::make_unique<CompiledKernel>(ctx, build_kernel(a, p, s, target));
              const double ms =
                  measure([&](CUstream st) { kern->run(db.ptr(), dc.ptr(), 1.0f, 0.0f, st); }, topt)
                      .median_ms;
              tried.push_back({{"schedule", to_string(s)}, {"ms", ms}, {"rank", rank}});
              if (const auto it = prefetch_of.find(j); it != prefetch_of.end())
                tried.back()["prefetch_of"] = it->second;
              if (best_spec.empty() || ms < best)
                best = ms, best_spec = to_string(s), best_kernel = std::move(kern);
              if (rank >= 0 && rank < first && (first_ms == 0 || ms < first_ms)) first_ms = ms;
            }
            // The library back end: cuSPARSELt on the lifted weight, its algorithm searched
            // when the kernel is loaded (the tuner's slide_lt candidate).
            if (use_lt) {
              try {
                SlideLtSchedule ls;
                ls.pattern = pn;
                auto kern =
                    std::make_unique<CompiledKernel>(ctx, build_kernel(a, p, Schedule(ls), target));
                const double ms =
                    measure([&](CUstream st) { kern->run(db.ptr(), dc.ptr(), 1.0f, 0.0f, st); },
                            topt)
                        .median_ms;
                const std::string lt_spec = to_string(
                    Schedule(with_choice(ls, kern->signature().sparse_gemms.front().choice)));
                tried.push_back({{"schedule", lt_spec}, {"ms", ms}});
                row["lt_ms"] = ms;
                row["lt_schedule"] = lt_spec;
                row["lt_speedup_vs_dense"] = dense_ms / ms;
                if (best_spec.empty() || ms < best)
                  best = ms, best_spec = lt_spec, best_kernel = std::move(kern);
              } catch (const std::exception& e) {
                row["lt_error"] = e.what();
                std::printf("  slide_lt: %s\n", e.what());
              }
            }
            if (best_spec.empty()) throw std::runtime_error("no back end ran");
            row["slide_ms"] = best;
            row["slide_schedule"] = best_spec;
            if (first_ms > 0) {
              row["first_ms"] = first_ms;
              row["first_vs_best"] = first_ms / best;
              ++first_cases;
              first_within += first_ms <= 1.1 * best;
            }
            row["tried"] = tried;
            row["speedup_vs_dense"] = dense_ms / best;
            // The winner against the CPU reference (int8 / fp8: over the quantized inputs), C
            // poisoned, beta 0 and beta != 0, on evenly spread columns at prefill N.
            const GpuCheckPair check =
                gpu_check(*best_kernel, a, 11 + uint64_t(n), check_columns(p));
            row["check"] = check.passed() ? "pass" : check.error();
            row["check_max_ratio"] = std::max(check.beta0.max_ratio, check.beta1.max_ratio);
            if (!check.passed()) {
              ++failures;
              std::printf("  check FAILED: %s\n", check.error().c_str());
            }
            // the lift kernel alone (the b_transform of the first lift=kernel schedule tried,
            // also when a fused one won): B read (K x N, 2 bytes) + lifted B written
            {
              std::string lift_spec;
              for (const auto& t : tried)
                if (t["schedule"].get<std::string>().find("lift=kernel") != std::string::npos) {
                  lift_spec = t["schedule"].get<std::string>();
                  break;
                }
              SlideSchedule ls;
              ls.pattern = pn;
              if (!lift_spec.empty()) ls = parse_schedule(lift_spec).as<SlideSchedule>();
              ls.lift = SlideLift::Kernel;
              const double lift_ms = time_lift(p, Schedule(ls), a, f, db.ptr(), target, topt);
              const double lift_bytes = double(k * n * 2) + double(slide_b_work_bytes(p, pn));
              row["lift_ms"] = lift_ms;
              row["lift_gbs"] = lift_bytes / (lift_ms * 1e6);
              row["lift_vs_copy"] = lift_bytes / (lift_ms * 1e6) / copy_gbs;
            }
            std::printf(
                "%-5s %5lldx%-5lld %s n=%-5lld dense %.4f ms  slide %.4f ms  %.3fx  lift %.1f%% of "
                "copy  [%s]\n",
                type.c_str(), (long long)m, (long long)k, pat.c_str(), (long long)n, dense_ms, best,
                dense_ms / best, 100.0 * row["lift_vs_copy"].get<double>(), best_spec.c_str());
            std::fflush(stdout);
          } catch (const std::exception& e) {
            row["error"] = e.what();
            ++failures;
            std::printf("%s %lldx%lld n=%lld: %s\n", type.c_str(), (long long)m, (long long)k,
                        (long long)n, e.what());
          }
          cases.push_back(row);
          write_doc();  // after every case: a run cut off by its time limit keeps what it timed
        }
      }
    }
  }
  const json doc = write_doc();
  if (first_cases > 0)
    std::printf("the model's first %d: within 10 %% of the fastest in %d of %d cases\n", first,
                first_within, first_cases);
  std::printf("wrote %s (copy %.0f GB/s), %d failures\n", out_path.c_str(), copy_gbs, failures);
  if (!no_plot && !cases.empty()) {
    const std::string svg = bench::plot_path(out_path);
    std::ofstream(svg) << bench::render_svg(bench::slide_chart(doc));
    std::printf("plot: %s\n", svg.c_str());
  }
  return failures == 0 ? 0 : 1;
}
