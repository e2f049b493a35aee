#include "ir/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/diagnostics.h"

namespace sparsegen {

float quant_max(DType t) {
  SG_ASSERT(is_quantized(t), "quant_max of a floating type");
  return t == DType::I8 ? 127.0f : 448.0f;
}

float quantize_value(DType t, float x, float inv) {
  const float y = x * inv;
  return t == DType::I8 ? static_cast<float>(float_to_int8(y))
                        : e4m3_bits_to_float(float_to_e4m3_bits(y));
}

QuantScale quant_scale(DType t, float absmax) {
  QuantScale s;
  if (absmax > 0.0f && std::isfinite(absmax)) {
    s.inv = quant_max(t) / absmax;
    s.scale = absmax / quant_max(t);
  }
  return s;
}

RowQuantized quantize_rows(const CsrMatrix& a, DType t) {
  RowQuantized out;
  out.q.resize(a.values.size());
  out.scales.resize(static_cast<size_t>(a.rows));
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t b = a.row_ptr[static_cast<size_t>(r)], e = a.row_ptr[static_cast<size_t>(r) + 1];
    float m = 0.0f;
    for (int64_t i = b; i < e; ++i) {
      const float v = a.values[static_cast<size_t>(i)];
      if (!std::isfinite(v))
        throw UserError(fmt::format("{}: {} at row {}, column {} cannot be quantized to {}",
                                    a.source.empty() ? "matrix" : a.source, v, r + 1,
                                    a.col_idx[static_cast<size_t>(i)] + 1, to_string(t)));
      m = std::max(m, std::fabs(v));
    }
    const QuantScale s = quant_scale(t, m);
    out.scales[static_cast<size_t>(r)] = s.scale;
    for (int64_t i = b; i < e; ++i)
      out.q[static_cast<size_t>(i)] = quantize_value(t, a.values[static_cast<size_t>(i)], s.inv);
  }
  return out;
}

TokenQuantized quantize_tokens(const Problem& p, std::span<const float> b) {
  SG_ASSERT(is_quantized(p.dtype), "quantize_tokens of a floating problem");
  SG_ASSERT(static_cast<int64_t>(b.size()) == p.k * p.n, "quantize_tokens: B is not K x N");
  TokenQuantized out;
  out.q.resize(b.size());
  out.scales.resize(static_cast<size_t>(p.n));
  for (int64_t c = 0; c < p.n; ++c) {
    float m = 0.0f;
    for (int64_t k = 0; k < p.k; ++k) {
      // NaN is skipped (as fmaxf on the device does); an Inf makes the scale non-finite.
      m = std::max(m, std::fabs(b[static_cast<size_t>(p.b_index(k, c))]));
    }
    const QuantScale s = quant_scale(p.dtype, m);
    out.scales[static_cast<size_t>(c)] = s.scale;
    for (int64_t k = 0; k < p.k; ++k) {
      const size_t i = static_cast<size_t>(p.b_index(k, c));
      out.q[i] = quantize_value(p.dtype, b[i], s.inv);
    }
  }
  return out;
}

}  // namespace sparsegen
