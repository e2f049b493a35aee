// CPU interpreter tests against the exact result and the tight bound of ir/error_bound.h.
//
//   const std::string err = testing::tight_bound_violation(p, a, b, c0, alpha, beta, got);
//   ASSERT_EQ(err, "");
//
// exact = alpha·A·B + beta·C₀ in double from the dtype-rounded A, B and C₀ (what the interpreter
// and the kernels read); every element of `got` must be within spmm_error_bound of it.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "ir/error_bound.h"
#include "ir/interpreter.h"
#include "ir/problem.h"
#include "ir/sparse_matrix.h"

namespace sparsegen::testing {

// "" when every element of `got` is within the tight bound of the exact result, else the first
// element beyond it. `atomic_adds(row)`: the fp32 adds of partial rows the output's element
// passes through (Atomic outputs; 0 for Store).
inline std::string tight_bound_violation(const Problem& p, const CsrMatrix& a,
                                         std::span<const float> b, std::span<const float> c0,
                                         float alpha, float beta, std::span<const float> got,
                                         const std::function<int64_t(int64_t)>& atomic_adds,
                                         double* max_ratio = nullptr) {
  for (int64_t r = 0; r < p.m; ++r) {
    const int64_t r0 = a.row_ptr[static_cast<size_t>(r)],
                  r1 = a.row_ptr[static_cast<size_t>(r + 1)];
    for (int64_t col = 0; col < p.n; ++col) {
      double sum = 0, mag = 0;
      for (int64_t e = r0; e < r1; ++e) {
        const double prod =
            double(round_to(p.dtype, a.values[static_cast<size_t>(e)])) *
            double(round_to(
                p.dtype,
                b[static_cast<size_t>(p.b_index(a.col_idx[static_cast<size_t>(e)], col))]));
        sum += prod;
        mag += std::fabs(prod);
      }
      const size_t i = static_cast<size_t>(p.c_index(r, col));
      const double bc = beta == 0.0f ? 0.0 : double(beta) * double(round_to(p.dtype, c0[i]));
      const double exact = double(alpha) * sum + bc;
      ElementBoundTerms t;
      t.row_length = r1 - r0;
      t.atomic_adds = atomic_adds(r);
      t.sum_abs_products = std::fabs(double(alpha)) * mag;
      t.abs_beta_c0 = std::fabs(bc);
      t.abs_exact = std::fabs(exact);
      const double tol = spmm_error_bound(p.dtype, t);
      const double d = std::fabs(double(got[i]) - exact);
      if (max_ratio != nullptr && tol > 0) *max_ratio = std::max(*max_ratio, d / tol);
      if (!(d <= tol))
        return fmt::format(
            "C[{},{}] = {:.9g}, exact {:.9g}: |diff| {:.3g} > tight bound {:.3g} ({})", r, col,
            got[i], exact, d, tol, to_string(p));
    }
  }
  return "";
}

inline std::string tight_bound_violation(const Problem& p, const CsrMatrix& a,
                                         std::span<const float> b, std::span<const float> c0,
                                         float alpha, float beta, std::span<const float> got,
                                         int64_t atomic_adds = 0, double* max_ratio = nullptr) {
  return tight_bound_violation(
      p, a, b, c0, alpha, beta, got, [atomic_adds](int64_t) { return atomic_adds; }, max_ratio);
}

}  // namespace sparsegen::testing
