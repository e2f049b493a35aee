#include "compiler/ffn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>

#include "compiler/family.h"
#include "compiler/fingerprint.h"
#include "compiler/tune.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/interpreter.h"
#include "ir/random.h"
#include "ir/verifier.h"
#include "runtime/kernel_db.h"
#include "runtime/timing.h"

namespace sparsegen {
namespace {

std::vector<char> to_bytes(std::span<const float> v, DType t) {
  std::vector<char> out(v.size() * 2);
  convert_values_to(v, t, std::as_writable_bytes(std::span<char>(out)));
  return out;
}

std::vector<float> from_bytes(const std::vector<char>& b, DType t, std::vector<uint16_t>& bits) {
  std::vector<float> out(b.size() / 2);
  bits.resize(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    std::memcpy(&bits[i], b.data() + 2 * i, 2);
    out[i] = t == DType::F16 ? half_bits_to_float(bits[i]) : bf16_bits_to_float(bits[i]);
  }
  return out;
}

std::vector<int64_t> sample_rows(int64_t m, int64_t most) {
  std::vector<int64_t> rows;
  if (m <= most) {
    for (int64_t r = 0; r < m; ++r) rows.push_back(r);
    return rows;
  }
  for (int64_t r = 0; r < 16; ++r) rows.push_back(r);
  const int64_t rest = most - 17;
  for (int64_t i = 1; i <= rest; ++i) rows.push_back(16 + i * (m - 17) / (rest + 1));
  rows.push_back(m - 1);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

}  // namespace

KernelBuild build_ffn_kernel(const Problem& p, const Schedule& s, const FfnWeights& w,
                             const CompileTarget& target, const CsrMatrix* activations,
                             bool line_info) {
  check_weights(p, w);
  CsrMatrix none;
  none.rows = 0;
  none.cols = p.n;
  BuildOptions opt;
  opt.ffn_weights = &w;
  opt.line_info = line_info;
  return compiler_family(s).build(activations != nullptr ? *activations : none, p, s, target, opt);
}

Schedule choose_ffn_schedule(const Problem& p, const CsrMatrix& activations,
                             const std::string& spec, const CompileTarget& target,
                             std::string* why) {
  if (!spec.empty()) {
    const Schedule s = parse_schedule(spec);
    auto illegal = validate(p, s);
    if (illegal.empty())
      illegal = verify(p, s, s.family().format_stats(activations, p, s), target.limits);
    if (!illegal.empty())
      throw UserError(fmt::format("--schedule '{}' cannot run {} on {}: {}", spec, to_string(p),
                                  target.limits.name, fmt::join(illegal, "; ")));
    if (why != nullptr) *why = "given by --schedule";
    return s;
  }
  EnumerateOptions o;
  o.device = target.limits;
  o.include_specialised = true;
  const std::vector<Schedule> all = enumerate_schedules(p, activations, o);
  if (all.empty())
    throw UserError(fmt::format("no schedule runs {} on {}", to_string(p), target.limits.name));
  if (why != nullptr)
    *why = fmt::format("first of {} enumerated schedules ({}'s preferred order)", all.size(),
                       all.front().family_name());
  return all.front();
}

FfnTuneResult tune_ffn(const std::shared_ptr<cuda::Context>& ctx, const Problem& p,
                       const FfnWeights& w, std::span<const float> x, const CompileTarget& target,
                       const FfnTuneOptions& opt) {
  check_weights(p, w);
  SG_ASSERT(static_cast<int64_t>(x.size()) == p.m * p.k, "tune_ffn: x size");
  // The activation pattern of up to 64 tokens (the CPU product costs K·N per token).
  const int64_t rows = std::min<int64_t>(p.m, 64);
  Problem ps = p;
  ps.m = rows;
  const CsrMatrix h = ffn_activations(ps, w, x.subspan(0, static_cast<size_t>(rows * p.k)));
  FfnTuneResult res;
  const ActivationStats st = activation_stats(h);
  res.activations = to_string(st);
  // The database key: the problem, the device and the statistics bucket.
  kdb::KeyParts base = key_parts(MatrixFingerprint{}, p, target, "");
  base.operation = to_string(p);
  base.matrix = "activations " + activation_bucket(st);
  std::unique_ptr<kdb::KernelDb> db;
  if (opt.use_cache && opt.only_family.empty()) {
    try {
      db = std::make_unique<kdb::KernelDb>(kdb::db_path(opt.cache_dir));
    } catch (const kdb::KernelDbError& e) {
      throw UserError(std::string("kernel cache ") + e.what());
    }
    res.tuning_key = kdb::tuning_key(base);
    const std::optional<kdb::TuningRecord> tr = db->tuning(res.tuning_key);
    const std::optional<kdb::KernelRecord> rec =
        tr ? db->kernel(tr->best_key) : std::optional<kdb::KernelRecord>();
    if (rec) {
      res.schedule = parse_schedule(rec->schedule);
      res.kernel =
          std::make_unique<CompiledKernel>(ctx, build_ffn_kernel(p, res.schedule, w, target, &h));
      res.ms = rec->measured_ms.value_or(0);
      res.cache_hit = true;
      res.reason = fmt::format("cached tuning of {} ({}): {} measured {:.4f} ms", base.matrix,
                               tr->ranking, rec->schedule, res.ms);
      res.kernel->set_schedule_reason(res.reason);
      return res;
    }
  }
  EnumerateOptions eo;
  eo.device = target.limits;
  eo.include_specialised = true;
  const cuda::DeviceInfo info = ctx->info();
  const RankedSpace ranked = rank_space(h, p, target, enumerate_schedules(p, h, eo), &info);
  std::vector<size_t> picks;
  std::map<std::string, int> taken;
  for (size_t i : ranked.order) {
    const std::string fam(ranked.all[i].family_name());
    if (!opt.only_family.empty() && fam != opt.only_family) continue;
    if (taken[fam]++ < opt.per_family) picks.push_back(i);
  }
  if (picks.empty())
    throw UserError(fmt::format("no schedule runs {} on {}", to_string(p), target.limits.name));
  const size_t mk = static_cast<size_t>(p.m * p.k);
  cuda::DeviceBuffer dx(std::max<size_t>(mk * 2, 16)), dy(std::max<size_t>(mk * 2, 16));
  std::vector<char> xb(mk * 2);
  convert_values_to(x, p.dtype, std::as_writable_bytes(std::span<char>(xb)));
  if (!xb.empty()) dx.upload(xb.data(), xb.size());
  TimingOptions topt;
  topt.warmup = 2;
  topt.repetitions = opt.repetitions;
  topt.min_repetitions = opt.repetitions;
  L2Flusher flusher(info);
  topt.flusher = &flusher;
  double dense_ms = 0;
  std::vector<kdb::KernelRecord> records;
  for (size_t i : picks) {
    const Schedule& s = ranked.all[i];
    FfnMeasured m;
    m.schedule = to_string(s);
    try {
      KernelBuild b = build_ffn_kernel(p, s, w, target, &h);
      auto k = std::make_unique<CompiledKernel>(ctx, b);
      const TimingResult t =
          measure([&](CUstream s2) { k->run(dx.ptr(), dy.ptr(), 1.0f, 0.0f, s2); }, topt);
      m.ms = t.median_ms;
      kdb::KeyParts parts = base;
      parts.schedule = m.schedule;
      kdb::KernelRecord r;
      r.key = kdb::kernel_key(parts);
      r.tuning_key = kdb::tuning_key(parts);
      r.key_text = kdb::describe(parts);
      r.schedule = m.schedule;
      r.source = b.kernel.source;
      r.arch = b.compiled.arch;
      r.image = std::move(b.compiled.image);
      r.image_is_cubin = b.compiled.is_cubin;
      r.compile_ms = b.compiled.compile_ms;
      r.predicted_ms = ranked.predicted_ms[i];
      r.measured_ms = m.ms;
      r.times_ms = t.samples_ms;
      records.push_back(std::move(r));
      if (s.family().dense_baseline() && (dense_ms == 0 || m.ms < dense_ms)) dense_ms = m.ms;
      if (!res.kernel || m.ms < res.ms) {
        res.kernel = std::move(k);
        res.ms = m.ms;
        res.schedule = s;
      }
    } catch (const std::exception& e) {
      m.error = e.what();
    }
    res.measured.push_back(std::move(m));
  }
  if (!res.kernel) {
    std::vector<std::string> errs;
    for (const FfnMeasured& m : res.measured) errs.push_back(m.schedule + ": " + m.error);
    throw UserError(
        fmt::format("no FFN schedule could run {}: {}", to_string(p), fmt::join(errs, "; ")));
  }
  res.reason = fmt::format("fastest of {} measured on the {} calibration tokens ({}): {:.4f} ms",
                           res.measured.size(), p.m, res.activations, res.ms);
  if (dense_ms > 0)
    res.reason += fmt::format("; the dense FFN {:.4f} ms ({:.2f}x)", dense_ms, dense_ms / res.ms);
  if (db) {
    kdb::KeyParts best = base;
    best.schedule = to_string(res.schedule);
    kdb::TuningRecord tr;
    tr.tuning_key = res.tuning_key;
    tr.key_text = kdb::describe(base, false);
    tr.best_key = kdb::kernel_key(best);
    tr.top_k = static_cast<int>(res.measured.size());
    tr.candidates = static_cast<int>(ranked.all.size());
    tr.ranking = fmt::format("{} per FFN family by {}", opt.per_family, ranked.how);
    try {
      db->put(records, tr);
    } catch (const kdb::KernelDbError& e) {
      throw UserError(std::string("kernel cache ") + e.what());
    }
  }
  return res;
}

FfnCheckResult check_ffn(const CompiledKernel& k, const FfnWeights& w, std::span<const float> x,
                         uint64_t seed, int64_t max_rows) {
  const Problem& p = k.problem();
  FfnCheckResult res;
  SG_ASSERT(static_cast<int64_t>(x.size()) == p.m * p.k, "check_ffn: x size");
  const std::vector<int64_t> rows = sample_rows(p.m, max_rows);
  const size_t mk = static_cast<size_t>(p.m * p.k);
  cuda::DeviceBuffer dx(std::max<size_t>(mk * 2, 16)), dy(std::max<size_t>(mk * 2, 16));
  const std::vector<char> xb = to_bytes(x, p.dtype);
  if (!xb.empty()) dx.upload(xb.data(), xb.size());
  uint64_t st = seed * 0x9E3779B97F4A7C15ULL + 1;
  res.passed = true;
  for (int which = 0; which < 2; ++which) {
    const float alpha = which == 0 ? 0.75f : 1.0f, beta = which == 0 ? 0.0f : -1.5f;
    std::vector<float> y0(mk);
    std::vector<char> yb(mk * 2);
    if (beta == 0.0f) {
      const uint16_t poison = p.dtype == DType::F16 ? 0x7E5A : 0x7FDA;
      for (size_t i = 0; i < mk; ++i) std::memcpy(yb.data() + 2 * i, &poison, 2);
    } else {
      for (float& v : y0) {
        const double u = double(splitmix64(st) >> 11) * 0x1.0p-53;
        v = round_to(p.dtype, float((splitmix64(st) & 1) ? -(0.5 + u) : 0.5 + u));
      }
      yb = to_bytes(y0, p.dtype);
    }
    if (!yb.empty()) dy.upload(yb.data(), yb.size());
    k.run(dx.ptr(), dy.ptr(), alpha, beta, nullptr);
    std::vector<char> back(yb.size());
    if (!back.empty()) dy.download(back.data(), back.size());
    std::vector<uint16_t> bits;
    const std::vector<float> y = from_bytes(back, p.dtype, bits);
    const FfnReference ref = ffn_reference(p, w, x, y0, alpha, beta, rows);
    std::vector<float> got(rows.size() * static_cast<size_t>(p.k));
    for (size_t i = 0; i < rows.size(); ++i)
      std::copy_n(y.begin() + rows[i] * p.k, p.k, got.begin() + static_cast<ptrdiff_t>(i * p.k));
    for (size_t i = 0; i < got.size(); ++i)
      if (ref.bound[i] > 0)
        res.worst = std::max(res.worst, std::fabs(double(got[i]) - ref.y[i]) / ref.bound[i]);
    const std::string err = ffn_violation(ref, got, p.k);
    if (!err.empty()) {
      res.passed = false;
      res.error +=
          fmt::format("{}alpha {} beta {}: {}", res.error.empty() ? "" : "; ", alpha, beta, err);
    }
    res.rows_checked = static_cast<int64_t>(rows.size());
  }
  return res;
}

}  // namespace sparsegen
