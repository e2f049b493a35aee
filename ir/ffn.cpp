#include "ir/ffn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/diagnostics.h"
#include "ir/interpreter.h"

namespace sparsegen {
namespace {

// The dtype's unit roundoff (half an ulp, relative), and half its subnormal spacing (the
// absolute rounding error below the normal range).
double unit_roundoff(DType t) {
  return t == DType::BF16  ? std::ldexp(1.0, -8)
         : t == DType::F16 ? std::ldexp(1.0, -11)
                           : std::ldexp(1.0, -24);
}
double half_subnormal(DType t) {
  return t == DType::BF16  ? std::ldexp(1.0, -134)
         : t == DType::F16 ? std::ldexp(1.0, -25)
                           : std::ldexp(1.0, -150);
}
constexpr double kF32 = 1.0 / 8388608.0;  // 2^-23

// Row r of x·W (W: K×N row-major): exact sums and absolute sums.
void row_product(const Problem& p, std::span<const float> x, int64_t r, const std::vector<float>& w,
                 std::vector<double>& sum, std::vector<double>& abs_sum) {
  sum.assign(static_cast<size_t>(p.n), 0.0);
  abs_sum.assign(static_cast<size_t>(p.n), 0.0);
  for (int64_t k = 0; k < p.k; ++k) {
    const double xv = x[static_cast<size_t>(r * p.k + k)];
    if (xv == 0.0) continue;
    const float* wr = w.data() + k * p.n;
    for (int64_t n = 0; n < p.n; ++n) {
      const double t = xv * double(wr[n]);
      sum[n] += t;
      abs_sum[n] += std::fabs(t);
    }
  }
}

}  // namespace

void check_weights(const Problem& p, const FfnWeights& w) {
  if (p.op != Op::GatedFfn)
    throw UserError(fmt::format("FFN weights given for a {} problem", to_string(p.op)));
  auto need = [&](const char* name, const std::vector<float>& v, int64_t rows, int64_t cols) {
    if (static_cast<int64_t>(v.size()) != rows * cols)
      throw UserError(fmt::format("{}: {} has {} values, the FFN (K={}, N={}) needs {}x{}",
                                  w.source.empty() ? "weights" : w.source, name, v.size(), p.k, p.n,
                                  rows, cols));
  };
  if (w.k != p.k || w.n != p.n)
    throw UserError(fmt::format("{}: weights are K={} N={}, the problem is K={} N={}",
                                w.source.empty() ? "weights" : w.source, w.k, w.n, p.k, p.n));
  if (w.gated != p.gated)
    throw UserError(fmt::format("{}: {} weights for a {} FFN",
                                w.source.empty() ? "weights" : w.source,
                                w.gated ? "gated" : "non-gated", p.gated ? "gated" : "non-gated"));
  if (p.gated) need("W_gate", w.gate, p.k, p.n);
  need("W_up", w.up, p.k, p.n);
  need("W_down", w.down, p.n, p.k);
}

FfnReference ffn_reference(const Problem& p, const FfnWeights& w, std::span<const float> x,
                           std::span<const float> y0, float alpha, float beta,
                           const std::vector<int64_t>& rows) {
  check_weights(p, w);
  SG_ASSERT(static_cast<int64_t>(x.size()) == p.m * p.k, "ffn_reference: x size");
  const double u = unit_roundoff(p.dtype), tiny = half_subnormal(p.dtype);
  FfnReference ref;
  ref.rows = rows;
  ref.y.assign(rows.size() * static_cast<size_t>(p.k), 0.0);
  ref.bound.assign(ref.y.size(), 0.0);
  ref.h.rows = static_cast<int64_t>(rows.size());
  ref.h.cols = p.n;
  std::vector<double> g, g_abs, up, up_abs;
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    const std::vector<float>& first = p.gated ? w.gate : w.up;
    row_product(p, x, r, first, g, g_abs);
    if (p.gated) row_product(p, x, r, w.up, up, up_abs);
    // Per hidden column: the value the down projection multiplies (hu), and its error bound.
    std::vector<double> hu(static_cast<size_t>(p.n), 0.0), err(static_cast<size_t>(p.n), 0.0);
    std::vector<double> hu_abs(static_cast<size_t>(p.n), 0.0);
    int64_t nnz = 0;
    for (int64_t n = 0; n < p.n; ++n) {
      const double acc_err = double(p.k + 4) * kF32 * g_abs[n];
      if (g[n] <= -acc_err) continue;  // zero on the device too
      const double h = g[n] > 0 ? double(round_to(p.dtype, float(g[n]))) : 0.0;
      // The stored h may be off by the accumulation error plus one ulp either way.
      const double dh = acc_err + 2.0 * u * (std::fabs(g[n]) + acc_err) + 2.0 * tiny;
      if (h != 0.0) {
        ref.h.col_idx.push_back(static_cast<int32_t>(n));
        ref.h.values.push_back(float(h));
        ++nnz;
      }
      const double uv = p.gated ? up[n] : 1.0;
      const double du = p.gated ? double(p.k + 4) * kF32 * up_abs[n] : 0.0;
      hu[n] = h * uv;
      err[n] = dh * (std::fabs(uv) + du) + std::fabs(h) * du;
      hu_abs[n] = std::fabs(hu[n]);
    }
    ref.h.row_ptr.push_back(static_cast<int64_t>(ref.h.col_idx.size()));
    for (int64_t j = 0; j < p.k; ++j) {
      double y = 0.0, abs_y = 0.0, e = 0.0;
      for (int64_t n = 0; n < p.n; ++n) {
        if (err[n] == 0.0 && hu[n] == 0.0) continue;
        const double d = w.down[static_cast<size_t>(n * p.k + j)];
        y += hu[n] * d;
        abs_y += (hu_abs[n] + err[n]) * std::fabs(d);
        e += err[n] * std::fabs(d);
      }
      // fp32 products hu·d summed over the row's nonzeros (+ the fp32 product h·u).
      e += double(nnz + 6) * kF32 * abs_y;
      const size_t at = i * static_cast<size_t>(p.k) + static_cast<size_t>(j);
      double out = double(alpha) * y;
      double b = std::fabs(double(alpha)) * e;
      if (beta != 0.0f) {
        const double c0 = y0[static_cast<size_t>(r * p.k + j)];
        out += double(beta) * c0;
        b += 2.0 * kF32 * std::fabs(double(beta) * c0) + 2.0 * kF32 * std::fabs(double(alpha) * y);
      }
      // One rounding of the output to the dtype (either way of the exact value plus error).
      b += u * (std::fabs(out) + b) * 2.0 + 2.0 * tiny;
      ref.y[at] = out;
      ref.bound[at] = b;
    }
  }
  return ref;
}

CsrMatrix ffn_activations(const Problem& p, const FfnWeights& w, std::span<const float> x) {
  check_weights(p, w);
  CsrMatrix h;
  h.rows = p.m;
  h.cols = p.n;
  std::vector<double> g, g_abs;
  for (int64_t r = 0; r < p.m; ++r) {
    row_product(p, x, r, p.gated ? w.gate : w.up, g, g_abs);
    for (int64_t n = 0; n < p.n; ++n) {
      const float v = g[n] > 0 ? round_to(p.dtype, float(g[n])) : 0.0f;
      if (v != 0.0f) {
        h.col_idx.push_back(static_cast<int32_t>(n));
        h.values.push_back(v);
      }
    }
    h.row_ptr.push_back(static_cast<int64_t>(h.col_idx.size()));
  }
  return h;
}

ActivationStats activation_stats(const CsrMatrix& h) {
  ActivationStats s;
  s.rows = h.rows;
  s.cols = h.cols;
  if (h.rows == 0) return s;
  std::vector<int64_t> len(static_cast<size_t>(h.rows));
  for (int64_t r = 0; r < h.rows; ++r) {
    len[static_cast<size_t>(r)] = h.row_length(r);
    // Per-tile counts: the row's columns are sorted, so runs of one tile are contiguous.
    for (int64_t width : {int64_t{64}, int64_t{128}}) {
      int64_t run = 0, tile = -1;
      for (int64_t i = h.row_ptr[r]; i < h.row_ptr[r + 1]; ++i) {
        const int64_t t = h.col_idx[i] / width;
        run = t == tile ? run + 1 : 1;
        tile = t;
        int64_t& best = width == 64 ? s.max_tile64 : s.max_tile128;
        best = std::max(best, run);
      }
    }
  }
  s.mean = double(h.nnz()) / double(h.rows);
  std::sort(len.begin(), len.end());
  auto pct = [&](double q) {
    return len[std::min(len.size() - 1, static_cast<size_t>(q * double(len.size())))];
  };
  s.p50 = pct(0.5);
  s.p99 = pct(0.99);
  s.max = len.back();
  return s;
}

std::string to_string(const ActivationStats& s) {
  return fmt::format("mean {:.1f}, p50 {}, p99 {}, max {} of {} per row", s.mean, s.p50, s.p99,
                     s.max, s.cols);
}

std::string activation_bucket(const ActivationStats& s) {
  // The mean in half octaves; the 99th percentile, noisier over a calibration batch, in octaves.
  const double mean = std::round(2.0 * std::log2(s.mean + 1.0)) / 2.0;
  const double p99 = std::round(std::log2(double(s.p99) + 1.0));
  return fmt::format("mean 2^{:.1f} p99 2^{:.0f}", mean, p99);
}

std::string ffn_violation(const FfnReference& ref, std::span<const float> got, int64_t k) {
  SG_ASSERT(got.size() == ref.y.size(), "ffn_violation: sizes");
  for (size_t i = 0; i < ref.rows.size(); ++i) {
    for (int64_t j = 0; j < k; ++j) {
      const size_t at = i * static_cast<size_t>(k) + static_cast<size_t>(j);
      const double d = std::fabs(double(got[at]) - ref.y[at]);
      if (!(d <= ref.bound[at]))
        return fmt::format("y[{}][{}] = {} but the reference is {} (|diff| {:.3g} > bound {:.3g})",
                           ref.rows[i], j, got[at], ref.y[at], d, ref.bound[at]);
    }
  }
  return "";
}

}  // namespace sparsegen
