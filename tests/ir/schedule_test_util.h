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

}  // namespace sparsegen::testing
