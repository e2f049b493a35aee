// Small seeded matrices and dense operands shared by the schedule test files.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ir/sparse_matrix.h"

namespace sparsegen::testing {

// A canonical CSR matrix with the given row lengths; columns drawn without replacement, values
// non-integer in [-1, -0.25) U [0.25, 1).
inline CsrMatrix matrix_with_lengths(int64_t cols, const std::vector<int64_t>& lengths,
                                     uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.25f, 1.0f);
  CsrMatrix m;
  m.rows = static_cast<int64_t>(lengths.size());
  m.cols = cols;
  m.row_ptr.assign(1, 0);
  std::vector<int32_t> all(static_cast<size_t>(cols));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t len : lengths) {
    len = std::min(len, cols);
    // Partial Fisher-Yates: the first len entries are a uniform sample.
    for (int64_t i = 0; i < len; ++i) {
      std::uniform_int_distribution<int64_t> pick(i, cols - 1);
      std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(pick(rng))]);
    }
    std::vector<int32_t> row(all.begin(), all.begin() + len);
    std::sort(row.begin(), row.end());
    for (int32_t c : row) {
      m.col_idx.push_back(c);
      m.values.push_back((rng() & 1) ? mag(rng) : -mag(rng));
    }
    m.row_ptr.push_back(static_cast<int64_t>(m.col_idx.size()));
  }
  return m;
}

inline std::vector<float> random_dense(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = d(rng) + 0.001f;  // non-integer, rarely exactly 0
  return v;
}

// A seeded random CSR matrix: position (r, c) is stored when a uniform draw in [0, 1) is below
// row_density(r) (one draw per position, also in rows of density 0, so the sequence of draws does
// not depend on the densities); a stored entry's value is value(draw), where draw() returns the
// next uniform number. Shared by the format tests, which differ in the shapes and values they
// want.
template <class RowDensity, class Value>
CsrMatrix bernoulli_csr(int64_t rows, int64_t cols, uint64_t seed, RowDensity&& row_density,
                        Value&& value) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  auto draw = [&] { return u(g); };
  CsrMatrix a;
  a.rows = rows;
  a.cols = cols;
  for (int64_t r = 0; r < rows; ++r) {
    const double d = row_density(r);
    for (int64_t c = 0; c < cols; ++c) {
      if (draw() >= d) continue;
      a.col_idx.push_back(static_cast<int32_t>(c));
      a.values.push_back(value(draw));
    }
    a.row_ptr.push_back(a.nnz());
  }
  a.check_canonical();
  return a;
}

}  // namespace sparsegen::testing
