// R-MAT generator: canonical CSR, reproducible from the seed, power-law rows, and clear errors.
#include "ir/gen/rmat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/diagnostics.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

TEST(Rmat, CanonicalReproduciblePowerLaw) {
  RmatSpec s;
  s.scale = 12;
  s.seed = 5;
  const CsrMatrix a = make_rmat(s);
  EXPECT_EQ(a.rows, 4096);
  EXPECT_EQ(a.cols, 4096);
  EXPECT_NO_THROW(a.check_canonical());
  // Duplicates merged: at most edge_factor · 2^scale entries, and most edges are distinct.
  EXPECT_LE(a.nnz(), 16 * 4096);
  EXPECT_GT(a.nnz(), 8 * 4096);
  int64_t longest = 0, empty = 0;
  for (int64_t r = 0; r < a.rows; ++r) {
    longest = std::max(longest, a.row_length(r));
    empty += a.row_length(r) == 0 ? 1 : 0;
  }
  // Heavy-tailed: the longest row holds far more than the mean, and many rows are empty.
  EXPECT_GT(longest, 20 * a.nnz() / a.rows);
  EXPECT_GT(empty, a.rows / 10);
  for (float v : a.values) {
    ASSERT_GE(std::fabs(v), 0.5f);
    ASSERT_LT(std::fabs(v), 1.5f);
    ASSERT_NE(v, std::round(v));  // non-integer
  }
  const CsrMatrix b = make_rmat(s);
  EXPECT_EQ(a.col_idx, b.col_idx);
  EXPECT_EQ(a.values, b.values);
  s.seed = 6;
  EXPECT_NE(make_rmat(s).col_idx, a.col_idx);
}

TEST(Rmat, UniformProbabilitiesGiveAnEvenMatrix) {
  RmatSpec s;
  s.scale = 10;
  s.a = s.b = s.c = 0.25;
  s.permute = false;
  const CsrMatrix a = make_rmat(s);
  int64_t longest = 0;
  for (int64_t r = 0; r < a.rows; ++r) longest = std::max(longest, a.row_length(r));
  EXPECT_LT(longest, 4 * a.nnz() / a.rows);
}

TEST(Rmat, BadSpecsNameTheFlag) {
  RmatSpec s;
  s.scale = 0;
  EXPECT_NE(testing::error_of([&] { validate(s); }).find("--scale 0"), std::string::npos);
  s.scale = 10;
  s.edge_factor = 0;
  EXPECT_NE(testing::error_of([&] { validate(s); }).find("--edge-factor 0"), std::string::npos);
  s.edge_factor = 16;
  s.a = 0.7;
  s.b = 0.3;
  s.c = 0.2;
  EXPECT_NE(testing::error_of([&] { validate(s); }).find("exceeds 1"), std::string::npos);
  s.a = -0.1;
  EXPECT_NE(testing::error_of([&] { validate(s); }).find("--rmat"), std::string::npos);
}

}  // namespace
}  // namespace sparsegen
