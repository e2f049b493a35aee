// `sparsegen calibrate [--budget-seconds S] [--out MODEL.json] [--samples SAMPLES.json]
//  [--from-samples SAMPLES.json]... [--schedules-per-case K] [--max-data-matrices D]
//  [--large-shapes RxC,...]`:
// measures a training corpus on this machine's GPU, fits the cost model (costmodel/linear_model.h)
// and reports its quality on matrices it was not fitted on.
//
// Corpus: generated LLM-shaped weights (make_llm_weight; shapes 1024x4096, 4096x1024, 2048x2048,
// 3072x4096; magnitude, random and row-magnitude pruning at 50/70/90% and 2:4), plus the
// $SPARSEGEN_DATA suitesparse/dlmc matrices with at least 2000 nonzeros (largest first, at most
// D). Cases = (matrix, N in {1, 8, 32, 64}, dtype fp16 | fp32), interleaved over the matrices;
// per case K schedules spread over the strategy families.
//
// Large tier (--large-shapes; default 14336x4096, 4096x14336, 8192x8192: LLM projections that are
// not the benchmark suite's shapes): magnitude and random pruning at 50/70/90%, fp16, N in
// {1, 8, 32}; 2K schedules per case, plus K staged-MACKO ones where MACKO applies. Without it the
// model sees only a few waves of blocks and extrapolates badly to full-size weights: it ranked the
// one-wave staged MACKO grids, which win on 12288x12288, below 8-warp grids 1.4x slower.
//
// Every kernel is checked once on the GPU (beta = 0, poisoned C; compiler/gpu_check.h) and skipped
// when wrong, then timed with the L2 flushed before each run (runtime/timing.h: 1 warm-up, median
// of 5).
//
// Time: NVRTC compilation (plus packing) dominates, so kernels are built on a thread pool while
// the main thread measures them in order. Nothing new is started after the budget minus a reserve
// for the fit; unfinished builds are dropped; whatever was measured is fitted.
//
// Fit: matrices are split into train / test (every 4th by a hash of the name is test), the model
// is fitted on train and evaluated on test (Spearman per case, pick within 10% of the best), next
// to the plain roofline as a baseline; the saved model is then refitted on all samples.
// --from-samples refits from a saved samples file without any GPU (the device recorded there).
// --from-timings adds times measured elsewhere (e.g. every candidate a benchmark suite screened:
// {"dtype": "fp32", "rows": [[matrix, N, schedule SPEC, microseconds], ...]}, matrices relative
// to $SPARSEGEN_DATA); their features are computed here for the device of the --from-samples
// files, which must have been measured on the same GPU.
//
// Progress: a bar on stderr when it is a terminal, for the corpus (matrices made or loaded) and
// for the measuring (kernels of the planned total, ETA at most the budget); cleared before every
// other line.
//
// Exit codes (main.cpp): 0 success, 1 bad flag / file, 3 no GPU or CUDA error.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "costmodel/features.h"
#include "costmodel/linear_model.h"
#include "costmodel/model_quality.h"
#include "costmodel/model_registry.h"
#include "costmodel/schedule_features.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/format.h"
#include "ir/gen/pruning.h"
#include "ir/io/load.h"
#include "ir/parallel.h"
#include "ir/progress_line.h"
#include "runtime/cuda_driver.h"
#include "runtime/timing.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace sparsegen::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct CalibrateArgs {
  double budget_s = 240;
  std::string out;
  std::string samples;
  std::vector<std::string> from_samples;  // merged in order
  std::vector<std::string> from_timings;  // measured elsewhere; features computed here
  int per_case = 24;
  int max_data = 24;
  std::string large_shapes = "14336x4096,4096x14336,8192x8192";
  std::string command;
};

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Mat {
  std::string name;
  std::shared_ptr<const CsrMatrix> a;
  MatrixFeatures mf;
  RowProfile rows;
  bool large = false;  // the large tier: fp16, N in {1, 8, 32}, twice the schedules per case
};

struct Case {
  size_t matrix = 0;
  Problem problem;
  std::string id;
  CheckInputs in;
  std::once_flag ref_once;
  Reference ref;
};

struct Job {
  size_t c = 0;
  Schedule schedule;
};

struct Built {
  std::optional<KernelBuild> build;
  ScheduleFeatures features;
  std::string error;
};

// FNV-1a: the train/test split must not depend on the standard library's hash.
uint64_t fnv(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ULL;
  return h;
}
bool is_test_matrix(const std::string& name) {
  return fnv(name) % 4 == 0;
}

// Up to k schedules spread over the strategy families: families in turn, each taking its
// candidates at evenly spaced positions of the enumeration order (deterministic).
std::vector<Schedule> spread(const std::vector<Schedule>& all, size_t k) {
  std::map<std::string, std::vector<const Schedule*>> by;
  for (const Schedule& s : all) by[strategy_family(s)].push_back(&s);
  std::vector<std::vector<const Schedule*>> order;
  for (auto& [fam, v] : by) {
    // Evenly spaced permutation: stride through with a step coprime to the size.
    std::vector<const Schedule*> o;
    size_t step = std::max<size_t>(1, v.size() / 3);
    while (step > 1 && std::gcd(step, v.size()) != 1) --step;
    for (size_t i = 0, j = 0; i < v.size(); ++i, j = (j + step) % v.size()) o.push_back(v[j]);
    order.push_back(std::move(o));
  }
  std::vector<Schedule> out;
  for (size_t r = 0; out.size() < k; ++r) {
    bool any = false;
    for (const auto& o : order)
      if (r < o.size() && out.size() < k) out.push_back(*o[r]), any = true;
    if (!any) break;
  }
  return out;
}

// "RxC,RxC,..." (--large-shapes); empty: none.
std::vector<std::pair<int64_t, int64_t>> parse_shapes(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string s = text.substr(start, end - start);
    const auto shape = cli::shape_flag(s, "--large-shapes");
    if (shape.first < 64 || shape.second < 64)
      throw UserError(fmt::format(
          "--large-shapes: expected ROWSxCOLS items (each at least 64) separated by commas, found "
          "'{}'",
          s));
    out.push_back(shape);
    start = end + 1;
  }
  return out;
}

using Shapes = std::vector<std::pair<int64_t, int64_t>>;

// large: the parsed --large-shapes.
std::vector<Mat> corpus(const CalibrateArgs& a, const Shapes& large, double deadline_s,
                        Clock::time_point t0) {
  std::vector<Mat> out;
  // Generated LLM-shaped weights: one weight per shape, pruned several ways.
  const std::pair<int64_t, int64_t> shapes[] = {
      {1024, 4096}, {4096, 1024}, {2048, 2048}, {3072, 4096}};
  struct Prune {
    PruneMethod method;
    double sparsity;
  };
  std::vector<Prune> prunes;
  for (double sp : {0.5, 0.7, 0.9})
    for (PruneMethod m : {PruneMethod::Magnitude, PruneMethod::Random, PruneMethod::RowMagnitude})
      prunes.push_back({m, sp});
  prunes.push_back({PruneMethod::NM, 0.5});
  // The data files (listed first: the progress bar counts them).
  const char* env = std::getenv("SPARSEGEN_DATA");
  const fs::path root = env ? fs::path(env) : fs::path();
  std::vector<fs::path> files;
  for (const char* folder : {"suitesparse", "dlmc"}) {
    std::error_code ec;
    if (root.empty() || !fs::is_directory(root / folder, ec)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / folder, ec)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".mtx" || ext == ".smtx")) files.push_back(e.path());
    }
  }
  constexpr size_t kLargePrunes = 6;  // per large shape: 3 sparsities x 2 prunings (below)
  ProgressLine bar("matrices", static_cast<int>(std::size(shapes) * prunes.size() + files.size() +
                                                large.size() * kLargePrunes));
  bar.set_time_limit(deadline_s - since(t0));
  int made = 0;
  uint64_t seed = 11;
  for (const auto& [r, c] : shapes) {
    if (since(t0) > deadline_s) break;
    bar.update(made, fmt::format("weight {}x{}", r, c));
    const DenseMatrix w = make_llm_weight(r, c, seed++);
    for (const Prune& pr : prunes) {
      PruneSpec spec;
      spec.method = pr.method;
      spec.sparsity = pr.sparsity;
      spec.seed = seed;
      auto m = std::make_shared<CsrMatrix>(prune(w, spec));
      const std::string name = pr.method == PruneMethod::NM
                                   ? fmt::format("gen{}x{}_nm2:4", r, c)
                                   : fmt::format("gen{}x{}_{}{}", r, c, to_string(pr.method),
                                                 int(pr.sparsity * 100 + 0.5));
      m->source = name;
      out.push_back({name, m, {}, {}});
      bar.update(++made, name);
    }
  }
  // Data matrices: largest first.
  std::vector<std::pair<int64_t, Mat>> data;
  for (const fs::path& f : files) {
    if (since(t0) > deadline_s) break;
    const std::string name = fs::relative(f, root).string();
    bar.update(made++, name);
    try {
      LoadedMatrix lm = load_matrix(f.string());
      if (lm.matrix.field == ValueField::Complex || lm.matrix.nnz() < 2000) continue;
      const int64_t nnz = lm.matrix.nnz();
      data.push_back({nnz, {name, std::make_shared<CsrMatrix>(std::move(lm.matrix)), {}, {}}});
    } catch (const std::exception& ex) {
      bar.clear();
      std::fprintf(stderr, "calibrate: skipped %s: %s\n", f.c_str(), ex.what());
    }
  }
  std::stable_sort(data.begin(), data.end(),
                   [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; i < data.size() && static_cast<int>(i) < a.max_data; ++i)
    out.push_back(std::move(data[i].second));
  // The large tier: one weight per shape, each pruning on its own thread (prune only reads it).
  for (const auto& [r, c] : large) {
    if (since(t0) > deadline_s) break;
    bar.update(made, fmt::format("weight {}x{}", r, c));
    const DenseMatrix w = make_llm_weight(r, c, seed++);
    std::vector<std::future<Mat>> jobs;
    for (double sp : {0.5, 0.7, 0.9})
      for (PruneMethod m : {PruneMethod::Magnitude, PruneMethod::Random})
        jobs.push_back(std::async(std::launch::async, [&w, r = r, c = c, sp, m, s = seed] {
          PruneSpec spec;
          spec.method = m;
          spec.sparsity = sp;
          spec.seed = s;
          auto pruned = std::make_shared<CsrMatrix>(prune(w, spec));
          pruned->source = fmt::format("gen{}x{}_{}{}", r, c, to_string(m), int(sp * 100 + 0.5));
          return Mat{pruned->source, pruned, {}, {}, true};
        }));
    for (auto& j : jobs) {
      out.push_back(j.get());
      bar.update(++made, out.back().name);
    }
  }
  for (Mat& m : out) {
    bar.update(made, "features of " + m.name);
    m.mf = compute_features(*m.a);
    m.rows = row_profile(*m.a);
  }
  return out;
}

std::vector<char> to_dtype_bytes(const std::vector<float>& v, DType t) {
  const size_t w = static_cast<size_t>(dtype_bytes(t));
  std::vector<char> out(v.size() * w + w);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::F32) {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    } else {
      const uint16_t h = t == DType::F16 ? float_to_half_bits(v[i]) : float_to_bf16_bits(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}

struct SampleFile {
  nlohmann::json meta;
  std::vector<Sample> samples;
  DeviceProfile device;
};

// The JSON document in `path`; errors name the flag that gave it, the file and the byte.
nlohmann::json read_json(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("{}: cannot read {}", flag, path));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(fmt::format("{} (byte {}): not valid JSON", path, e.byte));
  }
}

SampleFile read_samples(const std::string& path) {
  const nlohmann::json j = read_json(path, "--from-samples");
  if (!j.is_object() || !j.contains("samples") || !j["samples"].is_array() ||
      !j.contains("model_device"))
    throw UserError(fmt::format("{}: not a sparsegen calibrate samples file", path));
  SampleFile f;
  f.meta = j;
  // The device profile travels as a (roofline) model document.
  f.device = model_from_json(j["model_device"], path + ": model_device").device;
  size_t i = 0;
  for (const auto& s : j["samples"])
    f.samples.push_back(sample_from_json(s, fmt::format("{}: sample {}", path, i++)));
  return f;
}

// Samples from a timings file (see the header comment): one case per (matrix, N), features for
// `dev`. Each matrix is loaded once; a row whose schedule no longer parses or is illegal for its
// problem is an error naming the file and row (the timings belong to another sparsegen).
std::vector<Sample> samples_from_timings(const std::string& path, const DeviceProfile& dev) {
  const nlohmann::json j = read_json(path, "--from-timings");
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array())
    throw UserError(
        fmt::format("{}: expected {{\"rows\": [[matrix, N, schedule, us], ...]}}", path));
  DType dt = DType::F32;
  if (j.contains("dtype")) {
    if (!j["dtype"].is_string())
      throw UserError(fmt::format("{}: \"dtype\" must be a string (fp32, fp16, ...)", path));
    dt = dtype_flag(j["dtype"].get<std::string>(), "--from-timings dtype");
  }
  const char* env = std::getenv("SPARSEGEN_DATA");
  const fs::path root = env != nullptr ? fs::path(env) : fs::path("../shared/data");
  // Rows grouped by matrix, in file order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> rows_of;
  const auto& rows = j["rows"];
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (!r.is_array() || r.size() != 4 || !r[0].is_string() || !r[1].is_number_integer() ||
        !r[2].is_string() || !r[3].is_number())
      throw UserError(
          fmt::format("{}: row {}: expected [matrix, N, schedule, microseconds]", path, i));
    const std::string m = r[0].get<std::string>();
    if (!rows_of.count(m)) order.push_back(m);
    rows_of[m].push_back(i);
  }
  std::vector<std::vector<Sample>> per(order.size());
  // Matrices are independent: each chunk of them loads and featurises its own.
  parallel_for(static_cast<int64_t>(order.size()), static_cast<int64_t>(rows.size()),
               [&](int64_t m0, int64_t m1) {
                 for (int64_t mi = m0; mi < m1; ++mi) {
                   const std::string& name = order[static_cast<size_t>(mi)];
                   const CsrMatrix a = load_matrix((root / name).string()).matrix;
                   const MatrixFeatures mf = compute_features(a);
                   const RowProfile rp = row_profile(a);
                   std::map<int64_t, std::map<std::string, FormatStats>> stats;  // per N
                   for (size_t i : rows_of.at(name)) {
                     const auto& r = rows[i];
                     KernelRequest req;
                     req.n = r[1].get<int64_t>();
                     req.dtype = dt;
                     const Problem p = make_problem(a, req);
                     const std::string spec = r[2].get<std::string>();
                     Schedule s;
                     try {
                       s = parse_schedule(spec);
                     } catch (const UserError& e) {
                       throw UserError(fmt::format("{}: row {}: {}", path, i, e.what()));
                     }
                     const auto why = validate(p, s);
                     if (!why.empty())
                       throw UserError(fmt::format("{}: row {}: {} is illegal for {}: {}", path, i,
                                                   spec, to_string(p), why.front()));
                     const ScheduleFeatures f = schedule_features(
                         p, s, candidate_format_stats(a, p, s, &stats[req.n]), mf, rp, dev);
                     Sample smp;
                     smp.matrix = name;
                     smp.case_id = fmt::format("{} n={} {}", name, req.n, to_string(dt));
                     smp.schedule = spec;
                     smp.family = f.model_key;
                     smp.x = f.values;
                     smp.roofline_us = f.roofline_us;
                     smp.time_us = r[3].get<double>();
                     per[static_cast<size_t>(mi)].push_back(std::move(smp));
                   }
                 }
               });
  std::vector<Sample> out;
  for (auto& v : per) out.insert(out.end(), v.begin(), v.end());
  return out;
}

void fit_and_report(const std::vector<Sample>& samples, const DeviceProfile& dev,
                    const CalibrateArgs& a, nlohmann::json& doc) {
  std::vector<Sample> train, test;
  std::set<std::string> train_m, test_m;
  for (const Sample& s : samples) {
    (is_test_matrix(s.matrix) ? test : train).push_back(s);
    (is_test_matrix(s.matrix) ? test_m : train_m).insert(s.matrix);
  }
  std::printf("calibrate: %zu samples: train %zu (%zu matrices), test %zu (%zu matrices)\n",
              samples.size(), train.size(), train_m.size(), test.size(), test_m.size());
  const CostModel held = fit_model(train, dev);
  for (const auto& [fam, f] : held.families)
    std::printf("  family %-44s %5lld samples  lambda %-6g  rmse(log) train %.3f loo %.3f\n",
                fam.c_str(), static_cast<long long>(f.samples), f.lambda, f.rmse_log,
                f.loo_rmse_log);
  if (!test.empty()) {
    const QualityReport q = evaluate(held, test);
    const QualityReport base = evaluate(roofline_model(dev), test);
    std::printf("fitted model (train matrices only), on the test matrices:\n%s",
                format_report(q).c_str());
    std::printf("roofline baseline, same test matrices:\n%s", format_report(base, 0).c_str());
    doc["quality"] = to_json(q);
    doc["quality_roofline"] = to_json(base);
    doc["quality"].erase("cases");
    doc["quality"]["cases"] = to_json(q)["cases"];
  } else {
    std::printf("calibrate: no test matrices measured: no quality report\n");
  }
  doc["train_matrices"] = train_m;
  doc["test_matrices"] = test_m;
  const CostModel all = fit_model(samples, dev);
  std::string out = a.out;
  std::error_code ec;
  if (out.empty())
    out = model_file_name(dev);
  else if (fs::is_directory(out, ec))
    out = (fs::path(out) / model_file_name(dev)).string();
  save_model(all, out);
  std::printf("calibrate: model fitted on all %zu samples (%zu families + global) written to %s\n",
              samples.size(), all.families.size(), out.c_str());
}

void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream o(path);
  if (!o) throw UserError(fmt::format("--samples: cannot write {}", path));
  o << j.dump(1) << "\n";
}

void run_calibrate(const CalibrateArgs& a) {
  if (a.budget_s <= 0) throw UserError("--budget-seconds: expected > 0");
  if (a.per_case < 2) throw UserError("--schedules-per-case: expected >= 2");
  const auto t0 = Clock::now();
  const Shapes large = parse_shapes(a.large_shapes);  // a bad flag fails before any GPU work
  if (!a.from_timings.empty() && a.from_samples.empty())
    throw UserError("--from-timings: needs --from-samples (the device the times were measured on)");
  if (!a.from_samples.empty()) {
    // Several files merge in order; they must come from one device and one feature definition
    // (a sample stores feature values, not the kernel it measured).
    std::vector<Sample> merged;
    std::optional<SampleFile> first;
    for (const std::string& path : a.from_samples) {
      SampleFile f = read_samples(path);
      std::printf("calibrate: %zu samples from %s (device %s)\n", f.samples.size(), path.c_str(),
                  f.device.name.c_str());
      if (f.meta.contains("feature_names") &&
          f.meta["feature_names"] != nlohmann::json(ScheduleFeatures::names()))
        throw UserError(fmt::format(
            "{}: its samples use other schedule features than this sparsegen ({}); refit from "
            "a fresh calibration",
            path, fmt::join(ScheduleFeatures::names(), ",")));
      if (first && f.device.name != first->device.name)
        throw UserError(
            fmt::format("{}: samples from {}, but {} has samples from {}: one model "
                        "is fitted per device",
                        path, f.device.name, a.from_samples.front(), first->device.name));
      merged.insert(merged.end(), f.samples.begin(), f.samples.end());
      if (!first) first = std::move(f);
    }
    for (const std::string& path : a.from_timings) {
      const std::vector<Sample> t = samples_from_timings(path, first->device);
      std::printf("calibrate: %zu samples from the timings in %s\n", t.size(), path.c_str());
      merged.insert(merged.end(), t.begin(), t.end());
    }
    nlohmann::json doc = first->meta;
    fit_and_report(merged, first->device, a, doc);
    if (!a.samples.empty()) {
      doc["command"] = a.command;
      doc["samples"] = nlohmann::json::array();
      for (const Sample& s : merged) doc["samples"].push_back(to_json(s));
      write_json(a.samples, doc);
      std::printf("calibrate: %zu merged samples written to %s\n", merged.size(),
                  a.samples.c_str());
    }
    return;
  }
  // SPARSEGEN_CALIBRATE_DRY=1: no GPU; kernels are built (PTX) but not run, and the "measured"
  // time is the roofline estimate times a deterministic factor. Exercises the corpus, the build
  // pool, the fit and the files on a CPU-only machine; its numbers mean nothing.
  const char* dry_env = std::getenv("SPARSEGEN_CALIBRATE_DRY");
  const bool dry = dry_env != nullptr && std::string(dry_env) == "1";
  std::string why;
  if (!dry && !cuda::driver_available(&why))
    throw CudaError("no usable GPU: " + why, "cuInit", CUDA_ERROR_NO_DEVICE,
                    "CUDA_ERROR_NO_DEVICE");
  std::shared_ptr<cuda::Context> ctx;
  if (!dry) ctx = std::make_shared<cuda::Context>(0);
  const CompileTarget target = dry ? CompileTarget{} : detect_target(0);
  cuda::DeviceInfo info;
  if (ctx) info = ctx->info();
  bool guessed = false;
  const DeviceProfile dev = dry ? DeviceProfile::h100_sxm() : profile_of(info, &guessed);
  std::printf("calibrate: %s (%s, %d SMs, %.0f GB/s%s), target %s, budget %.0f s\n",
              dev.name.c_str(), dev.arch().c_str(), dev.sm_count, dev.dram_gbs,
              guessed ? " guessed" : "", target.arch.c_str(), a.budget_s);
  // Reserve for the fit and the files; the corpus may use a third of the budget at most.
  const double reserve_s = std::min(20.0, 0.1 * a.budget_s);
  const double stop_s = a.budget_s - reserve_s;

  const std::vector<Mat> mats = corpus(a, large, a.budget_s / 3, t0);
  std::printf("calibrate: %zu matrices ready in %.1f s\n", mats.size(), since(t0));

  // Cases, interleaved: config c of every matrix before config c+1 of any.
  using Config = std::pair<int64_t, DType>;
  const std::vector<Config> configs = {{8, DType::F16},  {1, DType::F32}, {32, DType::F16},
                                       {64, DType::F32}, {1, DType::F16}, {8, DType::F32},
                                       {64, DType::F16}, {32, DType::F32}};
  const std::vector<Config> large_configs = {{1, DType::F16}, {8, DType::F16}, {32, DType::F16}};
  std::vector<std::unique_ptr<Case>> cases;
  std::vector<Job> jobs;
  EnumerateOptions eo;
  eo.device = target.limits;
  eo.include_specialised = true;
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    for (size_t mi = 0; mi < mats.size(); ++mi) {
      const std::vector<Config>& mine = mats[mi].large ? large_configs : configs;
      if (ci >= mine.size()) continue;
      const auto& [n, dt] = mine[(ci + mi) % mine.size()];
      const CsrMatrix& m = *mats[mi].a;
      KernelRequest req;
      req.n = n;
      req.dtype = dt;
      try {
        check_value_range(m, dt);
      } catch (const UserError&) {
        continue;  // values outside fp16: not a case for this dtype
      }
      const Problem p = make_problem(m, req);
      const auto all = enumerate_schedules(p, m, eo);
      if (all.size() < 2) continue;
      auto c = std::make_unique<Case>();
      c->matrix = mi;
      c->problem = p;
      c->id = fmt::format("{} n={} {}", mats[mi].name, n, to_string(dt));
      c->in = make_check_inputs(p, 1000 + cases.size(), 1.0f, 0.0f);
      const size_t per_case = static_cast<size_t>(a.per_case) * (mats[mi].large ? 2 : 1);
      std::vector<Schedule> chosen = spread(all, per_case);
      if (mats[mi].large) {
        // K more staged-MACKO grids: the family that wins at N <= 8 on full-size weights, whose
        // grid choice (warps, rows per warp, one wave) only shows at that size.
        std::set<std::string> have;
        for (const Schedule& s : chosen) have.insert(to_string(s));
        std::vector<Schedule> staged;
        for (const Schedule& s : all)
          if (strategy_family(s) == "macko/shared" && !have.count(to_string(s)))
            staged.push_back(s);
        for (Schedule& s : spread(staged, static_cast<size_t>(a.per_case)))
          chosen.push_back(std::move(s));
      }
      for (Schedule& s : chosen) jobs.push_back({cases.size(), std::move(s)});
      cases.push_back(std::move(c));
    }
  }
  std::printf("calibrate: planned %zu cases, %zu kernels (stops at %.0f s)\n", cases.size(),
              jobs.size(), stop_s);
  std::fflush(stdout);

  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = std::max(1, std::min(hw - 1, 15));
  const size_t window = static_cast<size_t>(threads) * 2;
  // Features and builds on the pool while this thread measures them, in job order. No job starts
  // once the corpus' time is up (stop_s), and none is measured after it.
  auto make = [&](size_t i) {
    Built b;
    const Job& job = jobs[i];
    Case& c = *cases[job.c];
    const Mat& m = mats[c.matrix];
    try {
      if (!dry) std::call_once(c.ref_once, [&] { c.ref = compute_reference(*m.a, c.in, false); });
      b.features = schedule_features(c.problem, job.schedule,
                                     candidate_format_stats(*m.a, c.problem, job.schedule), m.mf,
                                     m.rows, dev);
      b.build = build_kernel(*m.a, c.problem, job.schedule, target);
    } catch (const std::exception& e) {
      b.error = e.what();
      b.build.reset();
    }
    return b;
  };
  auto out_of_time = [&] { return since(t0) > stop_s; };

  std::vector<Sample> samples;
  int64_t build_fail = 0, check_fail = 0, gpu_fail = 0;
  std::map<std::string, int> per_family;
  std::optional<cuda::Stream> stream_holder;
  std::optional<L2Flusher> flusher;
  if (!dry) {
    stream_holder.emplace();
    flusher.emplace(info);
  }
  const CUstream stream = stream_holder ? stream_holder->get() : nullptr;
  size_t buf_case = SIZE_MAX;
  std::unique_ptr<cuda::DeviceBuffer> db, dc;
  size_t measured_jobs = 0;
  std::string abort_reason;
  ProgressLine bar("kernels", static_cast<int>(jobs.size()));
  bar.set_time_limit(stop_s - since(t0));
  auto consume = [&](size_t i, Built&& b) {
    if (out_of_time()) return false;
    const Job& job = jobs[i];
    Case& c = *cases[job.c];
    const Mat& m = mats[c.matrix];
    bar.update(static_cast<int>(i), c.id);
    if (!b.build) {
      if (++build_fail <= 5) {
        bar.clear();
        std::fprintf(stderr, "calibrate: build failed (%s, %s): %s\n", c.id.c_str(),
                     to_string(job.schedule).c_str(), b.error.substr(0, 300).c_str());
      }
      return true;
    }
    if (dry) {
      Sample s;
      s.matrix = m.name;
      s.case_id = c.id;
      s.schedule = to_string(job.schedule);
      s.family = b.features.model_key;
      s.x = b.features.values;
      s.roofline_us = b.features.roofline_us;
      s.time_us = s.roofline_us * (0.5 + double(fnv(s.schedule + s.case_id) % 1000) / 1000.0);
      ++per_family[s.family];
      samples.push_back(std::move(s));
      return true;
    }
    try {
      const CompiledKernel k(ctx, std::move(*b.build));
      const CheckResult r = gpu_check(k, *m.a, c.in, c.ref, stream, nullptr, false);
      if (!r.passed) {
        if (++check_fail <= 5) {
          bar.clear();
          std::fprintf(stderr, "calibrate: GPU check failed (%s, %s): %s\n", c.id.c_str(),
                       to_string(job.schedule).c_str(), r.error.substr(0, 300).c_str());
        }
        return true;
      }
      if (buf_case != job.c) {
        const std::vector<char> bb = to_dtype_bytes(c.in.b, c.problem.dtype);
        db = std::make_unique<cuda::DeviceBuffer>(bb.size());
        db->upload(bb.data(), bb.size());
        dc = std::make_unique<cuda::DeviceBuffer>(
            static_cast<size_t>(c.problem.m * c.problem.n * dtype_bytes(c.problem.dtype)) + 8);
        buf_case = job.c;
      }
      TimingOptions to;
      to.warmup = 1;
      to.repetitions = 5;
      to.min_repetitions = 5;
      to.stream = stream;
      to.flusher = &*flusher;
      const CUdeviceptr pb = db->ptr(), pc = dc->ptr();
      const TimingResult t = measure([&](CUstream s) { k.run(pb, pc, 1.0f, 0.0f, s); }, to);
      Sample s;
      s.matrix = m.name;
      s.case_id = c.id;
      s.schedule = to_string(job.schedule);
      s.family = b.features.model_key;
      s.x = b.features.values;
      s.roofline_us = b.features.roofline_us;
      s.time_us = t.median_ms * 1000.0;
      ++per_family[s.family];
      samples.push_back(std::move(s));
      ++measured_jobs;
      if (measured_jobs % 250 == 0) {
        bar.clear();
        std::printf("calibrate: %zu kernels measured, %.0f s\n", measured_jobs, since(t0));
        std::fflush(stdout);
      }
    } catch (const CudaError& e) {
      ++gpu_fail;
      const std::string what = e.what();
      bar.clear();
      std::fprintf(stderr, "calibrate: CUDA error (%s, %s): %s\n", c.id.c_str(),
                   to_string(job.schedule).c_str(), what.c_str());
      if (what.find("ILLEGAL") != std::string::npos ||
          what.find("LAUNCH_FAILED") != std::string::npos ||
          what.find("ASSERT") != std::string::npos || what.find("EXCEPTION") != std::string::npos) {
        abort_reason = "sticky CUDA error: " + what;
        return false;  // the context is unusable; fit what was measured
      }
    }
    return true;
  };
  bar.update(0, "building the first kernels");
  // + 1: the pipeline's window counts the build being measured too; `window` builds stay ahead.
  produce_in_order(jobs.size(), threads, window + 1, make, consume, ConsumeOrder::index,
                   out_of_time);
  bar.clear();
  const double measure_s = since(t0);
  std::printf(
      "calibrate: measured %zu kernels of %zu planned in %.1f s on %d build threads (%lld build "
      "failures, %lld GPU check failures, %lld CUDA errors)%s\n",
      samples.size(), jobs.size(), measure_s, threads, static_cast<long long>(build_fail),
      static_cast<long long>(check_fail), static_cast<long long>(gpu_fail),
      abort_reason.empty() ? "" : (" stopped: " + abort_reason).c_str());
  for (const auto& [fam, n] : per_family) std::printf("  %-44s %6d samples\n", fam.c_str(), n);

  nlohmann::json doc;
  doc["command"] = a.command;
  doc["device"] = dev.name;
  doc["dry"] = dry;
  doc["arch"] = dev.arch();
  doc["model_device"] = to_json(roofline_model(dev));
  doc["budget_s"] = a.budget_s;
  doc["measure_s"] = measure_s;
  doc["planned_kernels"] = jobs.size();
  doc["build_failures"] = build_fail;
  doc["check_failures"] = check_fail;
  doc["cuda_errors"] = gpu_fail;
  doc["feature_names"] = ScheduleFeatures::names();
  if (samples.empty()) {
    if (!a.samples.empty()) write_json(a.samples, doc);
    throw UserError("calibrate: no kernel was measured: nothing to fit");
  }
  fit_and_report(samples, dev, a, doc);
  doc["samples"] = nlohmann::json::array();
  for (const Sample& s : samples) doc["samples"].push_back(to_json(s));
  if (!a.samples.empty()) {
    write_json(a.samples, doc);
    std::printf("calibrate: %zu samples written to %s\n", samples.size(), a.samples.c_str());
  }
  std::printf("calibrate: done in %.1f s\n", since(t0));
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate",
                                     "Measure a training corpus on the GPU and fit the cost model");
  cmd->add_option("--budget-seconds", args->budget_s, "wall-clock budget (default 240)");
  cmd->add_option("--out", args->out,
                  "model file or folder (default: ./<device>_sm_XY.json; ship it in "
                  "costmodel/models/)");
  cmd->add_option("--samples", args->samples, "write every measurement (and the quality) as JSON");
  cmd->add_option("--from-samples", args->from_samples,
                  "fit from samples files written earlier, merged (repeatable; no GPU needed)");
  cmd->add_option("--from-timings", args->from_timings,
                  "add times measured elsewhere ({\"rows\": [[matrix, N, schedule, us]]}, "
                  "matrices under $SPARSEGEN_DATA); needs --from-samples (repeatable)");
  cmd->add_option("--large-shapes", args->large_shapes,
                  "large generated weights, ROWSxCOLS,... ('' for none; default "
                  "14336x4096,4096x14336,8192x8192)");
  cmd->add_option("--schedules-per-case", args->per_case, "schedules measured per case (24)");
  cmd->add_option("--max-data-matrices", args->max_data,
                  "largest $SPARSEGEN_DATA matrices used (24)");
  cmd->callback([args] {
    CalibrateArgs& a = *args;
    a.command = fmt::format(
        "sparsegen calibrate --budget-seconds {} --schedules-per-case {} "
        "--max-data-matrices {}",
        a.budget_s, a.per_case, a.max_data);
    if (!a.out.empty()) a.command += " --out " + a.out;
    if (!a.samples.empty()) a.command += " --samples " + a.samples;
    for (const std::string& f : a.from_samples) a.command += " --from-samples " + f;
    for (const std::string& f : a.from_timings) a.command += " --from-timings " + f;
    a.command += fmt::format(" --large-shapes '{}'", a.large_shapes);
    run_calibrate(a);
  });
}

}  // namespace sparsegen::cli
