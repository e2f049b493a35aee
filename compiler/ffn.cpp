#include "compiler/ffn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "compiler/family.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/interpreter.h"
#include "ir/random.h"
#include "ir/verifier.h"

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
