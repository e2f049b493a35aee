#include "ir/io/dense_to_csr.h"

#include <cmath>

#include <fmt/format.h>

namespace sparsegen {

CsrMatrix dense_to_csr(const DenseMatrix& d, Diagnostics& diag) {
  if (d.rows < 0 || d.cols < 0 || d.rows > kMaxDimension || d.cols > kMaxDimension)
    throw UserError(
        SourceLoc{d.source},
        fmt::format("shape {}x{} exceeds the supported maximum dimension 2^31-1", d.rows, d.cols));
  CsrMatrix m;
  m.rows = d.rows;
  m.cols = d.cols;
  m.field = ValueField::Real;
  m.source = d.source;
  // Count first, so the arrays are allocated once at their final size.
  m.row_ptr.assign(static_cast<size_t>(d.rows) + 1, 0);
  const float* p = d.data.data();
  for (int64_t r = 0; r < d.rows; ++r) {
    int64_t count = 0;
    for (int64_t c = 0; c < d.cols; ++c) count += p[r * d.cols + c] != 0.0f;
    m.row_ptr[r + 1] = m.row_ptr[r] + count;
  }
  m.col_idx.resize(static_cast<size_t>(m.row_ptr.back()));
  m.values.resize(m.col_idx.size());
  int64_t non_finite = 0;
  int64_t first_r = 0, first_c = 0;
  size_t k = 0;
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t c = 0; c < d.cols; ++c) {
      const float v = p[r * d.cols + c];
      if (v == 0.0f) continue;  // NaN compares unequal to 0: kept
      if (!std::isfinite(v) && non_finite++ == 0) {
        first_r = r;
        first_c = c;
      }
      m.col_idx[k] = static_cast<int32_t>(c);
      m.values[k] = v;
      ++k;
    }
  }
  if (non_finite > 0)
    diag.warn_n(
        WarningKind::NonFinite, non_finite, SourceLoc{d.source},
        fmt::format("element ({}, {}) (0-based) = {}", first_r, first_c, d.at(first_r, first_c)));
  return m;
}

}  // namespace sparsegen
