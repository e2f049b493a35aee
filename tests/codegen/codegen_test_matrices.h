// Small seeded matrices with the row-length shapes the emitter must handle (empty rows, one very
// long row, power-law rows, uniform rows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ir/sparse_matrix.h"

namespace sparsegen::testing {

// Rows of the given lengths, distinct sorted columns drawn with `seed`, values in (-1, 1).
inline CsrMatrix csr_with_lengths(const std::vector<int64_t>& lengths, int64_t cols,
                                  uint64_t seed) {
  std::mt19937_64 rng(seed);
  CsrMatrix a;
  a.rows = static_cast<int64_t>(lengths.size());
  a.cols = cols;
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  for (int64_t len : lengths) {
    std::vector<char> used(static_cast<size_t>(cols), 0);
    std::vector<int32_t> row;
    std::uniform_int_distribution<int64_t> col(0, cols - 1);
    while (static_cast<int64_t>(row.size()) < len) {
      const int64_t c = col(rng);
      if (used[static_cast<size_t>(c)] != 0) continue;
      used[static_cast<size_t>(c)] = 1;
      row.push_back(static_cast<int32_t>(c));
    }
    std::sort(row.begin(), row.end());
    for (int32_t c : row) {
      a.col_idx.push_back(c);
      a.values.push_back(val(rng));
    }
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  return a;
}

struct NamedMatrix {
  std::string name;
  CsrMatrix a;
};

inline std::vector<NamedMatrix> codegen_matrices() {
  std::vector<NamedMatrix> out;
  out.push_back({"empty_rows", csr_with_lengths({0, 3, 0, 0, 5, 1, 0, 2}, 16, 1)});
  std::vector<int64_t> one_long(24, 2);
  one_long[5] = 120;
  out.push_back({"one_long_row", csr_with_lengths(one_long, 160, 2)});
  std::vector<int64_t> power;
  for (int i = 1; i <= 40; ++i) power.push_back(std::max<int64_t>(0, 64 / (i * i / 4 + 1)));
  out.push_back({"power_law", csr_with_lengths(power, 96, 3)});
  out.push_back({"uniform", csr_with_lengths(std::vector<int64_t>(32, 8), 64, 4)});
  return out;
}

// 3 x 5, entries (0,1) 0.5, (1,4) -1.25, (2,0) 2.0, (2,3) 0.75: the library candidates' tests.
inline CsrMatrix small_3x5() {
  CsrMatrix a;
  a.rows = 3;
  a.cols = 5;
  a.row_ptr = {0, 1, 2, 4};
  a.col_idx = {1, 4, 0, 3};
  a.values = {0.5f, -1.25f, 2.0f, 0.75f};
  a.source = "small";
  return a;
}

}  // namespace sparsegen::testing
