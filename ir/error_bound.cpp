#include "ir/error_bound.h"

#include <algorithm>
#include <cmath>

namespace sparsegen {
namespace {

struct Format {
  int precision;   // significand bits, the implicit one included
  int min_normal;  // exponent of the smallest normal number
};

Format format_of(DType t) {
  switch (t) {
    case DType::F16:
      return {11, -14};
    case DType::BF16:
      return {8, -126};
    default:
      return {24, -126};
  }
}

}  // namespace

double half_ulp(DType t, double x) {
  const Format f = format_of(t);
  x = std::fabs(x);
  int e = f.min_normal;
  if (x >= std::ldexp(1.0, f.min_normal)) {
    std::frexp(x, &e);  // x = m·2^e, m in [0.5, 1): 2^(e-1) <= x < 2^e
    e -= 1;
  }
  return std::ldexp(1.0, e - f.precision);
}

double fp32_error_bound(const ElementBoundTerms& t) {
  const double u = std::ldexp(1.0, -24);
  const double ops = double(t.row_length + t.atomic_adds + 4);
  return (ops * 2.0 * u + t.accumulation_eps) * t.sum_abs_products +
         double(1 + std::max<int64_t>(1, t.atomic_adds)) * u * t.abs_beta_c0 +
         ops * std::ldexp(1.0, -126);
}

double spmm_error_bound(DType out, const ElementBoundTerms& t) {
  const double e = fp32_error_bound(t);
  return e + half_ulp(out, t.abs_exact + e);
}

}  // namespace sparsegen
