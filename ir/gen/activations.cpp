#include "ir/gen/activations.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/diagnostics.h"
#include "ir/interpreter.h"
#include "ir/random.h"

namespace sparsegen {
namespace {

double uniform(uint64_t& s) {
  return (double(splitmix64(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
double normal(uint64_t& s) {
  const double u1 = uniform(s), u2 = uniform(s);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}
// Φ⁻¹(p) by bisection on erfc (p in (0, 1)).
double normal_quantile(double p) {
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}
// A non-zero value rounded to the dtype (never exactly 0 or an integer by construction).
float rounded(DType t, double v) {
  float f = round_to(t, float(v));
  if (f == 0.0f || f == std::nearbyint(f)) f = round_to(t, float(v) + 0.0078125f * 0.37f);
  return f;
}

}  // namespace

void validate(const ActivationSpec& s) {
  if (s.m < 0 || s.k < 2 || s.n < 1)
    throw UserError(fmt::format("activations: need M >= 0, K >= 2, N >= 1 (got M={} K={} N={})",
                                s.m, s.k, s.n));
  if (!(s.mean_nnz > 0) || s.mean_nnz > double(s.n))
    throw UserError(
        fmt::format("--mean-nnz: expected a count in (0, N={}], found {}", s.n, s.mean_nnz));
  if (s.dtype != DType::F16 && s.dtype != DType::BF16)
    throw UserError(
        fmt::format("--dtype: a gated FFN runs in fp16 or bf16, not {}", to_string(s.dtype)));
  if (!(s.spread >= 0) || s.spread > 4)
    throw UserError(fmt::format("activations: spread {} outside [0, 4]", s.spread));
}

std::vector<float> make_ffn_tokens(const ActivationSpec& s) {
  validate(s);
  uint64_t st = s.seed * 0x9E3779B97F4A7C15ULL + 7;
  std::vector<float> x(static_cast<size_t>(s.m * s.k));
  // log-normal counts with the requested mean: mu = ln(mean) - sigma^2 / 2.
  const double mu = std::log(s.mean_nnz) - 0.5 * s.spread * s.spread;
  for (int64_t r = 0; r < s.m; ++r) {
    double d = std::exp(mu + s.spread * normal(st));
    if (r < s.dense_first) d = std::max(d, 10.0 * s.mean_nnz);
    d = std::clamp(d, 0.25, double(s.n) - 0.25);
    const double b = normal_quantile(1.0 - d / double(s.n));
    x[static_cast<size_t>(r * s.k)] = rounded(s.dtype, b);
    for (int64_t k = 1; k < s.k; ++k)
      x[static_cast<size_t>(r * s.k + k)] = rounded(s.dtype, normal(st));
  }
  return x;
}

FfnCase make_ffn_case(const ActivationSpec& s) {
  validate(s);
  FfnCase c;
  c.problem = Problem::gated_ffn(s.m, s.k, s.n, s.dtype, s.gated);
  FfnWeights& w = c.weights;
  w.k = s.k;
  w.n = s.n;
  w.gated = s.gated;
  w.source = fmt::format("generated FFN K={} N={} seed {}", s.k, s.n, s.seed);
  uint64_t st = s.seed * 0xD1B54A32D192ED03ULL + 3;
  const double sk = 1.0 / std::sqrt(double(s.k - 1)), sn = 1.0 / std::sqrt(double(s.n));
  auto fill = [&](std::vector<float>& v, int64_t rows, int64_t cols, double scale, bool bias) {
    v.resize(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t q = 0; q < cols; ++q)
        v[static_cast<size_t>(r * cols + q)] =
            bias && r == 0 ? rounded(s.dtype, -1.0) : rounded(s.dtype, scale * normal(st));
  };
  // The first kernel's weight carries the offset row (W_g when gated, else W_u).
  if (s.gated) fill(w.gate, s.k, s.n, sk, true);
  fill(w.up, s.k, s.n, sk, !s.gated);
  fill(w.down, s.n, s.k, sn, false);
  c.x = make_ffn_tokens(s);
  return c;
}

}  // namespace sparsegen
