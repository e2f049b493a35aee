// sparsegen-macko-bench: MACKO kernels against dense cuBLAS on LLM-shaped pruned weights.
//
// For every shape (M x K) in {4096x4096, 11008x4096, 4096x11008, 12288x12288, 28672x7168}, pruning
// method in {random, magnitude} and sparsity in {50, 70, 90}%, fp16, N in --ns (default 1):
//   - dense baseline: the fastest cuBLAS candidate (GEMM, and GEMV for N = 1) on the dense copy
//     (zeros included; its time does not depend on the sparsity, so it is measured once per shape
//     and N);
//   - MACKO: up to --max-schedules (48) enumerated MACKO schedules (pick_schedules: staged-B
//     ones, else B-from-global warp-per-row and split-row kernels), compiled in parallel; each
//     timed; the fastest is checked against the CPU reference (gpu_check: poisoned output,
//     per-element bounds) and reported;
//   - the byte-matched floor: the same cuBLAS candidates on a dense fp16 matrix with as many
//     bytes as the winning MACKO kernel must read (the first ceil(bytes / 2K) rows of the
//     unpruned weight, all nonzero). It prices streaming that many bytes, launch and start-up
//     included, with the vendor's kernel in the same harness: dense_ms / floor_ms
//     (byte_matched_ratio) is the ratio a MACKO kernel exactly as efficient per byte as cuBLAS
//     would reach (ours can beat it: cuBLAS is not at its best on short matrices). Also once per
//     N: cuBLAS on 8 rows of K (a launch with almost no bytes) and a 4-byte memset (the harness's
//     fixed cost: flush, events, one launch); and once per shape the row-chain floor
//     (templates/sg_probe.cuh: per row only a cold start load, one dependent 128-byte load and a
//     store), what any row-wise SpMV of M rows pays before it streams a byte of its format;
//   - per case the streaming floors (StreamProbes): the winner's byte count read with almost no
//     work per byte, by warps with plain loads (stream_warps_ms, the fastest of 12 launch shapes;
//     stream_ratio = dense_ms / stream_warps_ms, the ratio of a kernel whose decode were free) and
//     by blocks with bulk copies (stream_bulk_ms).
// --shapes, --methods and --sparsities narrow that grid; --schedule SPEC (repeatable) adds
// MACKO schedules to each case's picks where they are valid (probes while iterating on a kernel).
// Timing: same process, L2 flushed before every run (runtime/timing.h), 3 warm-up + 20 timed runs,
// medians. Achieved bandwidth = bytes the kernel must move / median time: MACKO A bytes (values,
// packed deltas, row pointers) + B + C; dense M·K·2 + B + C.
// Output: JSON (--out, default $BENCH_DIR/macko.json) with device, date, command, every row, and
// geometric means of the speedup over the shapes per (method, sparsity, N) next to the targets
// (1.35x at 50%, 2.2x at 70%, 4x at 90% for N = 1).
// Exit codes: 0 done (targets are reported, not enforced), 1 a kernel failed its check or an
// error, 3 no GPU. Expected run time on an H100/H200 host: 60-90 s (host-side pruning and packing
// of up to 205M-element weights dominates; --quick: the two smallest shapes, ~15 s).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/baselines.h"
#include "benchmarks/floor_probes.h"
#include "benchmarks/report.h"
#include "codegen/template_library.h"
#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "ir/diagnostics.h"
#include "ir/gen/pruning.h"
#include "ir/io/dense_to_csr.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"
#include "runtime/cuda_driver.h"
#include "runtime/nvrtc_compiler.h"
#include "runtime/timing.h"

namespace sparsegen {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Shape {
  int64_t m, k;
};

// At most `limit` schedules. Staged B: the block shapes that won most cases on the H200
// (8 or 16 warps, unroll 2) at 1 and 2 rows per warp and at the one-wave count
// (ir/macko_schedule.h), every b_Δ, staging and row order the enumeration offers.
// Where B cannot be staged (the enumeration then has no staged ones): B-from-global warp-per-row
// and b = 4 split-row ones.
std::vector<Schedule> pick_schedules(const Problem& p, const std::vector<Schedule>& all,
                                     const DeviceLimits& dev, size_t limit) {
  std::vector<Schedule> out;
  auto add = [&](auto pred, size_t most) {
    size_t added = 0;
    for (const Schedule& s : all)
      if (out.size() < limit && added < most && pred(s.as<MackoSchedule>()) &&
          std::find(out.begin(), out.end(), s) == out.end()) {
        out.push_back(s);
        ++added;
      }
  };
  add(
      [&](const MackoSchedule& m) {
        const bool shape = m.unroll == 2 && (m.warps_per_block == 8 || m.warps_per_block == 16);
        const bool rows =
            m.rows_per_warp <= 2 || m.rows_per_warp == macko_one_wave_rows_per_warp(p, m, dev);
        return m.staged() && shape && rows;
      },
      limit);
  add(
      [&](const MackoSchedule& m) {
        return !m.staged() && m.delta_bits == 4 && m.warps_per_row == 1 && m.unroll == 2;
      },
      2);
  add([&](const MackoSchedule& m) { return m.delta_bits == 4 && m.warps_per_row > 1; }, 1);
  return out;
}

std::vector<uint16_t> half_bits(const std::vector<float>& v) {
  ConversionReport rep;
  return convert_values(v, DType::F16, &rep);
}

// The first `rows` rows of w, as a CSR matrix (every entry of an LLM-like weight is nonzero).
CsrMatrix leading_rows(const DenseMatrix& w, int64_t rows) {
  DenseMatrix d;
  d.rows = std::min(rows, w.rows);
  d.cols = w.cols;
  d.data.assign(w.data.begin(), w.data.begin() + d.rows * d.cols);
  d.source = fmt::format("first {} rows of the {}x{} weight", d.rows, w.rows, w.cols);
  Diagnostics diag;
  return dense_to_csr(d, diag);
}

// The fastest cuBLAS candidate's median (ms) and name, on the dense copy of `a`, reading B and
// writing C (C must hold a.rows x n).
std::pair<double, std::string> fastest_dense(const CsrMatrix& a, int64_t n, CUdeviceptr b,
                                             CUdeviceptr c, const TimingOptions& topt) {
  bench::CublasDense dense(a, DType::F16);
  double best = 0;
  std::string name;
  for (const bench::Candidate& cand : dense.candidates(n, b, c)) {
    if (!cand.unsupported.empty()) continue;
    const TimingResult t = measure(cand.run, topt);
    if (best == 0 || t.median_ms < best) best = t.median_ms, name = cand.name;
  }
  return {best, name};
}

// The row-chain floor of an M-row SpMV (templates/sg_probe.cuh): a warp per row reads the row's
// start, then one dependent 128-byte line, and stores one value; 8 warps a block. Its median
// (ms), in the same harness (L2 flushed) as every other time here.
double row_chain_ms(const CompileTarget& target, int64_t rows, const TimingOptions& topt) {
  const bench::ProbeProgram prog = bench::row_chain_program();
  const nvrtc::CompileResult cr =
      nvrtc::compile(prog.source, bench::probe_compile_options(target.arch, "sg_row_chain.cu"));
  const cuda::Module mod(cr.image);
  const CUfunction f = mod.function(prog.kernels.front());
  std::vector<int> starts(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) starts[r] = static_cast<int>(r * 32);
  std::vector<float> lines(static_cast<size_t>(rows) * 32);
  for (size_t i = 0; i < lines.size(); ++i) lines[i] = 0.25f + static_cast<float>(i % 7) * 0.125f;
  cuda::DeviceBuffer ds(starts.size() * 4), dl(lines.size() * 4), dout(starts.size() * 4);
  ds.upload(starts);
  dl.upload(lines);
  CUdeviceptr ps = ds.ptr(), pl = dl.ptr(), po = dout.ptr();
  int nrows = static_cast<int>(rows);
  cuda::LaunchConfig cfg;
  cfg.grid = {static_cast<unsigned>((rows + 7) / 8), 1, 1};
  cfg.block = {256, 1, 1};
  return measure(
             [&](CUstream s) {
               cfg.stream = s;
               cuda::launch_kernel(f, cfg, ps, pl, po, nrows);
             },
             topt)
      .median_ms;
}

// The streaming floors (templates/sg_probe.cuh): read a weight's compressed bytes with almost no
// work per byte. Warps on contiguous shares with plain loads: 2, 4 or 8 loads per lane in flight
// and 1, 2, 4 or 8 blocks of 8 warps per SM, the fastest of the 12 reported (the floor of that read
// pattern at this byte count). Blocks of bulk copies through a shared-memory ring: 16 KiB x 4
// stages and 2 blocks per SM, or 8 KiB x 4 and 4 per SM, the faster reported. Compiled once; each
// time is a median in the same harness as the kernels. Set next to a MACKO kernel of the same
// bytes they say how much of its time is the reading itself, and whether bulk requests read faster
// than per-warp loads.
class StreamProbes {
 public:
  StreamProbes(const CompileTarget& target, int sm_count) : sms_(sm_count) {
    const bench::ProbeProgram prog = bench::stream_program();
    const nvrtc::CompileResult cr = nvrtc::compile(
        prog.source, bench::probe_compile_options(target.arch, "sg_stream_probes.cu"));
    mod_.emplace(cr.image);
    for (int q : bench::kStreamLoads)
      warps_.push_back(mod_->function(bench::stream_warps_kernel(q)));
    for (int kib : bench::kStreamBulkKib) {
      bulk_.push_back(mod_->function(bench::stream_bulk_kernel(kib)));
      cuda::set_max_dynamic_shared_memory(bulk_.back(), 4 * kib * 1024);
    }
  }

  struct Times {
    double warps_ms = 0, bulk_ms = 0;
    std::string warps_config, bulk_config;
  };

  Times measure_bytes(int64_t bytes, const TimingOptions& topt) const {
    const int vecs = static_cast<int>((bytes + 15) / 16);
    cuda::DeviceBuffer src(static_cast<size_t>(vecs) * 16), out(static_cast<size_t>(sms_) * 64 * 4);
    std::vector<uint32_t> words(static_cast<size_t>(vecs) * 4);
    for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(i * 2654435761u);
    src.upload(words);
    CUdeviceptr ps = src.ptr(), po = out.ptr();
    int nv = vecs;
    auto time = [&](CUfunction f, unsigned blocks, unsigned smem) {
      cuda::LaunchConfig cfg;
      cfg.grid = {blocks, 1, 1};
      cfg.block = {256, 1, 1};
      cfg.shared_bytes = smem;
      return measure(
                 [&](CUstream s) {
                   cfg.stream = s;
                   cuda::launch_kernel(f, cfg, ps, nv, po);
                 },
                 topt)
          .median_ms;
    };
    Times t;
    const unsigned sms = static_cast<unsigned>(sms_);
    for (size_t i = 0; i < warps_.size(); ++i)
      for (unsigned per_sm : {1u, 2u, 4u, 8u}) {
        const double ms = time(warps_[i], per_sm * sms, 0);
        if (t.warps_ms == 0 || ms < t.warps_ms) {
          t.warps_ms = ms;
          t.warps_config =
              fmt::format("{} loads/lane, {} blocks of 8 warps/SM", bench::kStreamLoads[i], per_sm);
        }
      }
    // 64 KiB of stages a block: two blocks per SM with 16 KiB stages, four with 8 KiB ones.
    for (size_t i = 0; i < bulk_.size(); ++i) {
      const int kib = bench::kStreamBulkKib[i];
      const unsigned per_sm = static_cast<unsigned>(32 / kib);
      const double ms = time(bulk_[i], per_sm * sms, static_cast<unsigned>(4 * kib * 1024));
      if (t.bulk_ms == 0 || ms < t.bulk_ms) {
        t.bulk_ms = ms;
        t.bulk_config = fmt::format("{} KiB x 4 stages, {} blocks/SM", kib, per_sm);
      }
    }
    return t;
  }

 private:
  int sms_;
  std::optional<cuda::Module> mod_;
  std::vector<CUfunction> warps_, bulk_;
};

// Which cases to run and what to add to each: the defaults are the full grid above (5 shapes x
// 2 pruning methods x 3 sparsities, N = 1).
struct BenchOptions {
  std::string out_path;
  bool quick = false;
  std::vector<int64_t> ns = {1};
  size_t max_schedules = 48;
  std::vector<std::string> shapes;     // "MxK"; empty = the five LLM shapes
  std::vector<std::string> methods;    // random / magnitude; empty = both
  std::vector<double> sparsities;      // empty = 0.5, 0.7, 0.9
  std::vector<std::string> schedules;  // extra SPECs measured where valid for the case
};

int run(const BenchOptions& o, const std::string& command) {
  std::vector<Schedule> extra;
  for (const std::string& spec : o.schedules) {
    const Schedule s = parse_schedule(spec);
    if (s.family_name() != "macko")
      throw UserError(fmt::format("--schedule: '{}' is not a MACKO schedule", spec));
    extra.push_back(s);
  }
  std::vector<Shape> shapes = {
      {4096, 4096}, {11008, 4096}, {4096, 11008}, {12288, 12288}, {28672, 7168}};
  if (o.quick) shapes.resize(2);
  if (!o.shapes.empty()) {
    shapes.clear();
    for (const std::string& t : o.shapes) {
      const auto shape = parse_shape(t);
      if (!shape)
        throw UserError(fmt::format("--shapes {}: expected ROWSxCOLS, e.g. 4096x11008", t));
      shapes.push_back({shape->first, shape->second});
    }
  }
  std::vector<PruneMethod> methods = {PruneMethod::Random, PruneMethod::Magnitude};
  if (!o.methods.empty()) {
    methods.clear();
    for (const std::string& t : o.methods) {
      if (t == "random")
        methods.push_back(PruneMethod::Random);
      else if (t == "magnitude")
        methods.push_back(PruneMethod::Magnitude);
      else
        throw UserError(fmt::format("--methods: expected random or magnitude, found '{}'", t));
    }
  }
  std::vector<double> sparsities = {0.5, 0.7, 0.9};
  if (!o.sparsities.empty()) sparsities = o.sparsities;
  std::string why;
  if (!cuda::driver_available(&why)) {
    std::fprintf(stderr, "sparsegen-macko-bench: no GPU: %s\n", why.c_str());
    return 3;
  }
  const auto t_start = Clock::now();
  auto ctx = std::make_shared<cuda::Context>(0);
  bench::attach_cudart(0);
  const CompileTarget target = detect_target(0);
  const cuda::DeviceInfo info = cuda::query_device(0);
  L2Flusher flusher(info);
  cuda::Stream stream;
  TimingOptions topt;
  topt.flusher = &flusher;
  topt.stream = stream.get();
  const StreamProbes probes(target, info.sm_count);

  const unsigned hw = std::max(2u, std::thread::hardware_concurrency());

  nlohmann::json rows = nlohmann::json::array();
  // speedups[(method, sparsity, n)] over the shapes
  std::map<std::tuple<std::string, int, int64_t>, std::vector<double>> speedups;
  // and the byte-matched ratios (dense_ms / floor_ms) of the same cases
  std::map<std::tuple<std::string, int, int64_t>, std::vector<double>> matched;
  // and the streaming floors' ratios (dense_ms / stream_warps_ms)
  std::map<std::tuple<std::string, int, int64_t>, std::vector<double>> streamed;
  int failures = 0;

  for (const Shape& sh : shapes) {
    const auto t_shape = Clock::now();
    const DenseMatrix w = make_llm_weight(sh.m, sh.k, 42);
    // The six prunings of this shape in parallel (each is single-threaded).
    std::vector<std::future<CsrMatrix>> pruned;
    for (PruneMethod meth : methods)
      for (double sp : sparsities)
        pruned.push_back(std::async(std::launch::async, [&w, meth, sp] {
          PruneSpec spec;
          spec.method = meth;
          spec.sparsity = sp;
          spec.seed = 7;
          CsrMatrix a = prune(w, spec);
          a.source = fmt::format("{}x{} {} {:.0f}%", w.rows, w.cols, to_string(meth), sp * 100);
          return a;
        }));
    std::vector<CsrMatrix> mats;
    for (auto& f : pruned) mats.push_back(f.get());
    std::printf("[macko-bench] %lldx%lld: generated and pruned in %.1f s\n",
                static_cast<long long>(sh.m), static_cast<long long>(sh.k), since(t_shape));
    std::fflush(stdout);

    // The row-chain floor depends on M only.
    const double chain_ms = row_chain_ms(target, sh.m, topt);
    for (int64_t n : o.ns) {
      // Dense baseline (once per shape and N).
      const Problem p = Problem::spmm(sh.m, sh.k, n, DType::F16);
      const CheckInputs in = make_check_inputs(p, 5, 1.0f, 0.0f);
      cuda::DeviceBuffer db(static_cast<size_t>(p.k * p.n) * 2),
          dc(static_cast<size_t>(p.m * p.n) * 2);
      db.upload(half_bits(in.b));
      const auto [dense_ms, dense_name] = fastest_dense(mats[0], n, db.ptr(), dc.ptr(), topt);
      const double launch_ms = fastest_dense(leading_rows(w, 8), n, db.ptr(), dc.ptr(), topt).first;
      cuda::DeviceBuffer word(4);
      const double memset_ms =
          measure([&](CUstream s) { word.fill_bytes_async(0x3c, s); }, topt).median_ms;
      const double dense_bytes =
          double(p.m) * double(p.k) * 2 + double(p.k * n) * 2 + double(p.m * n) * 2;
      size_t mi = 0;
      for (PruneMethod meth : methods)
        for (double sp : sparsities) {
          const CsrMatrix& a = mats[mi++];
          const auto all = enumerate_macko_schedules(
              n == 1 ? Problem::spmv(sh.m, sh.k, DType::F16) : p, a, target.limits);
          const Problem pm = n == 1 ? Problem::spmv(sh.m, sh.k, DType::F16) : p;
          auto picks = pick_schedules(pm, all, target.limits, o.max_schedules);
          for (const Schedule& s : extra)
            if (validate(pm, s).empty() && std::find(picks.begin(), picks.end(), s) == picks.end())
              picks.push_back(s);
          // Build (pack, emit, NVRTC) on a pool; time in order on the GPU.
          std::vector<std::future<std::optional<KernelBuild>>> builds;
          std::vector<std::string> build_errors(picks.size());
          for (size_t i = 0; i < picks.size(); ++i)
            builds.push_back(std::async(std::launch::async, [&, i]() -> std::optional<KernelBuild> {
              try {
                return build_kernel(a, pm, picks[i], target);
              } catch (const std::exception& e) {
                build_errors[i] = e.what();
                return std::nullopt;
              }
            }));
          (void)hw;
          nlohmann::json tried = nlohmann::json::array();
          double best_ms = 0;
          std::optional<CompiledKernel> best;
          for (size_t i = 0; i < picks.size(); ++i) {
            std::optional<KernelBuild> b = builds[i].get();
            if (!b) {
              tried.push_back({{"schedule", to_string(picks[i])}, {"error", build_errors[i]}});
              ++failures;
              continue;
            }
            CompiledKernel k(ctx, std::move(*b));
            const TimingResult t =
                measure([&](CUstream s) { k.run(db.ptr(), dc.ptr(), 1.0f, 0.0f, s); }, topt);
            tried.push_back({{"schedule", to_string(picks[i])},
                             {"median_ms", t.median_ms},
                             {"p10_ms", t.p10_ms},
                             {"p90_ms", t.p90_ms},
                             {"registers", k.registers()}});
            if (!best || t.median_ms < best_ms) {
              best_ms = t.median_ms;
              best.emplace(std::move(k));
            }
          }
          nlohmann::json row = {{"m", sh.m},
                                {"k", sh.k},
                                {"n", n},
                                {"method", std::string(to_string(meth))},
                                {"sparsity", sp},
                                {"nnz", a.nnz()},
                                {"dense_ms", dense_ms},
                                {"dense_kernel", dense_name},
                                {"dense_gb_s", dense_bytes / (dense_ms * 1e6)},
                                {"tried", tried}};
          if (best) {
            const MackoSchedule& ms = best->schedule().as<MackoSchedule>();
            const MackoStats st = macko_stats(a, ms.delta_bits);
            const double bytes = double(st.bytes()) + double(p.k * n) * 2 + double(p.m * n) * 2;
            const CheckInputs cin = make_check_inputs(best->problem(), 9, 1.0f, 0.0f);
            const Reference ref = compute_reference(a, cin, false);
            const CheckResult cr = gpu_check(*best, a, cin, ref, stream.get(), nullptr, false);
            if (!cr.passed) ++failures;
            const double speedup = dense_ms / best_ms;
            const int64_t floor_rows = std::max<int64_t>(
                1, (static_cast<int64_t>(st.bytes()) + 2 * sh.k - 1) / (2 * sh.k));
            const double floor_ms =
                fastest_dense(leading_rows(w, floor_rows), n, db.ptr(), dc.ptr(), topt).first;
            const std::tuple<std::string, int, int64_t> group = {
                std::string(to_string(meth)), static_cast<int>(sp * 100 + 0.5), n};
            speedups[group].push_back(speedup);
            matched[group].push_back(dense_ms / floor_ms);
            const StreamProbes::Times pt = probes.measure_bytes(st.bytes(), topt);
            streamed[group].push_back(dense_ms / pt.warps_ms);
            row["macko_schedule"] = to_string(best->schedule());
            row["macko_ms"] = best_ms;
            row["macko_bytes"] = st.bytes();
            row["macko_effective_density"] = st.effective_density();
            row["macko_gb_s"] = bytes / (best_ms * 1e6);
            row["speedup_vs_dense"] = speedup;
            row["floor_rows"] = floor_rows;
            row["floor_ms"] = floor_ms;
            row["byte_matched_ratio"] = dense_ms / floor_ms;
            row["launch_ms"] = launch_ms;
            row["memset_ms"] = memset_ms;
            row["row_chain_ms"] = chain_ms;
            row["stream_warps_ms"] = pt.warps_ms;
            row["stream_warps_config"] = pt.warps_config;
            row["stream_bulk_ms"] = pt.bulk_ms;
            row["stream_bulk_config"] = pt.bulk_config;
            row["stream_ratio"] = dense_ms / pt.warps_ms;
            row["check_passed"] = cr.passed;
            if (!cr.passed) row["check_error"] = cr.error;
            std::printf(
                "[macko-bench] %5lldx%-5lld n=%lld %-9s %2.0f%%  dense %.4f ms (%4.0f GB/s)  "
                "macko %.4f ms (%4.0f GB/s, eff. density %.3f)  speedup %.2fx (floor %.4f ms: "
                "%.2fx, row chain %.4f ms; stream warps/bulk %.4f/%.4f ms: %.2fx)  %s%s\n",
                static_cast<long long>(sh.m), static_cast<long long>(sh.k),
                static_cast<long long>(n), std::string(to_string(meth)).c_str(), sp * 100, dense_ms,
                dense_bytes / (dense_ms * 1e6), best_ms, bytes / (best_ms * 1e6),
                st.effective_density(), speedup, floor_ms, dense_ms / floor_ms, chain_ms,
                pt.warps_ms, pt.bulk_ms, dense_ms / pt.warps_ms,
                to_string(best->schedule()).c_str(), cr.passed ? "" : "  CHECK FAILED");
          } else {
            std::printf("[macko-bench] %lldx%lld %s %.0f%%: no MACKO kernel built\n",
                        static_cast<long long>(sh.m), static_cast<long long>(sh.k),
                        std::string(to_string(meth)).c_str(), sp * 100);
          }
          std::fflush(stdout);
          rows.push_back(row);
        }
    }
  }

  nlohmann::json summary = nlohmann::json::array();
  const std::map<int, double> targets = {{50, 1.35}, {70, 2.2}, {90, 4.0}};
  auto geomean = [](const std::vector<double>& v) {
    double lg = 0;
    for (double x : v) lg += std::log(x);
    return std::exp(lg / double(v.size()));
  };
  for (const auto& [key, v] : speedups) {
    const double geo = geomean(v);
    const double ratio = geomean(matched.at(key));
    const double streamed_geo = geomean(streamed.at(key));
    const auto& [meth, sp, n] = key;
    nlohmann::json s = {{"method", meth},
                        {"sparsity", sp},
                        {"n", n},
                        {"shapes", v.size()},
                        {"geomean_speedup", geo},
                        {"geomean_byte_matched_ratio", ratio},
                        {"geomean_stream_ratio", streamed_geo}};
    if (n == 1 && targets.count(sp) != 0) {
      s["target"] = targets.at(sp);
      s["meets_target"] = geo >= targets.at(sp);
    }
    summary.push_back(s);
    std::printf(
        "[macko-bench] geomean %-9s %d%% n=%lld: %.2fx over %zu shapes (byte-matched "
        "cuBLAS ratio %.2fx, streaming floor %.2fx)%s\n",
        meth.c_str(), sp, static_cast<long long>(n), geo, v.size(), ratio, streamed_geo,
        n == 1 && targets.count(sp) ? fmt::format(" (target {:.2f}x)", targets.at(sp)).c_str()
                                    : "");
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json j = {{"benchmark", "macko"},
                      {"device", info.name},
                      {"arch", target.arch},
                      {"date", date},
                      {"command", command},
                      {"git_commit", bench::git_commit()},
                      {"cublas", bench::cublas_version()},
                      {"timing", "L2 flushed before every run, 3 warm-up + 20 timed, median"},
                      {"rows", rows},
                      {"summary", summary},
                      {"failures", failures},
                      {"wall_s", since(t_start)}};
  std::ofstream(o.out_path) << j.dump(2) << "\n";
  std::printf("[macko-bench] wrote %s (%.1f s, %d failures)\n", o.out_path.c_str(), since(t_start),
              failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace sparsegen

int main(int argc, char** argv) {
  CLI::App app{"MACKO kernels vs dense cuBLAS on pruned LLM-shaped weights"};
  const char* bench_dir = std::getenv("BENCH_DIR");
  std::string out = std::string(bench_dir != nullptr ? bench_dir : ".") + "/macko.json";
  sparsegen::BenchOptions o;
  o.out_path = out;
  app.add_option("--out", o.out_path, "JSON output (default $BENCH_DIR/macko.json)");
  app.add_flag("--quick", o.quick, "only the two smallest shapes");
  app.add_option("--ns", o.ns, "dense columns N (1..8), e.g. --ns 1 2 4 8")
      ->check(CLI::Range(1, 8));
  app.add_option("--max-schedules", o.max_schedules, "MACKO schedules tried per matrix");
  app.add_option("--shapes", o.shapes, "weight shapes MxK (default: the five LLM shapes)");
  app.add_option("--methods", o.methods, "pruning methods: random, magnitude (default both)");
  app.add_option("--sparsities", o.sparsities, "sparsities in (0, 1) (default 0.5 0.7 0.9)")
      ->check(CLI::Range(0.0, 0.9999));
  app.add_option("--schedule", o.schedules,
                 "extra MACKO schedule SPEC measured where valid (repeatable)");
  CLI11_PARSE(app, argc, argv);
  const std::string command = sparsegen::bench::command_line(argc, argv);
  try {
    o.max_schedules = std::max<size_t>(1, o.max_schedules);
    return sparsegen::run(o, command);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sparsegen-macko-bench: %s\n", e.what());
    return 1;
  }
}
