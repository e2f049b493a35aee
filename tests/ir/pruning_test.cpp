#include "ir/gen/pruning.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_support.h"

namespace sparsegen {
namespace {

PruneSpec spec_of(PruneMethod method, double sparsity, uint64_t seed = 0) {
  PruneSpec s;
  s.method = method;
  s.sparsity = sparsity;
  s.seed = seed;
  return s;
}

PruneSpec nm_spec(int n, int m) {
  PruneSpec s;
  s.method = PruneMethod::NM;
  s.n = n;
  s.m = m;
  return s;
}

bool same(const CsrMatrix& a, const CsrMatrix& b) {
  return a.rows == b.rows && a.cols == b.cols && a.row_ptr == b.row_ptr && a.col_idx == b.col_idx &&
         a.values == b.values;
}

using sparsegen::testing::error_of;

TEST(PruneMethodNames, RoundTrip) {
  for (const char* name : {"random", "magnitude", "row-magnitude", "nm", "block"}) {
    auto m = parse_prune_method(name);
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_EQ(to_string(*m), name);
  }
  EXPECT_FALSE(parse_prune_method("Magnitude").has_value());
  EXPECT_FALSE(parse_prune_method("").has_value());
  EXPECT_EQ(prune_method_names(), "random, magnitude, row-magnitude, nm, block");
}

TEST(ParseNm, AcceptsFamily) {
  for (auto [text, n, m] : std::vector<std::tuple<const char*, int, int>>{{"2:4", 2, 4},
                                                                          {"4:6", 4, 6},
                                                                          {"6:8", 6, 8},
                                                                          {"8:10", 8, 10},
                                                                          {"14:16", 14, 16},
                                                                          {"1:1", 1, 1},
                                                                          {"16:32", 16, 32}}) {
    EXPECT_EQ(parse_nm(text), std::make_pair(n, m)) << text;
  }
}

TEST(ParseNm, RejectsWithFlag) {
  for (const char* bad :
       {"", "2", "2:", ":4", "0:4", "5:4", "-1:4", "2:4:8", "a:b", "2 :4", "2:100000"}) {
    std::string msg = error_of([&] { parse_nm(bad); });
    EXPECT_NE(msg.find("--nm"), std::string::npos) << bad << " -> " << msg;
  }
}

TEST(Validate, SparsityRangeNamesFlag) {
  EXPECT_EQ(error_of([] { validate(spec_of(PruneMethod::Magnitude, 1.5)); }),
            "--sparsity 1.5: expected a value in [0, 1)");
  EXPECT_NE(error_of([] { validate(spec_of(PruneMethod::Magnitude, 1.0)); }), "<no error>");
  EXPECT_NE(error_of([] { validate(spec_of(PruneMethod::Magnitude, -0.1)); }), "<no error>");
  EXPECT_NE(error_of([] { validate(spec_of(PruneMethod::Magnitude, std::nan(""))); }),
            "<no error>");
  EXPECT_EQ(error_of([] { validate(spec_of(PruneMethod::Magnitude, 0.0)); }), "<no error>");
  PruneSpec b = spec_of(PruneMethod::Block, 0.5);
  b.block = 0;
  EXPECT_NE(error_of([&] { validate(b); }).find("--block 0"), std::string::npos);
}

TEST(LlmWeight, DeterministicPerSeed) {
  DenseMatrix a = make_llm_weight(64, 48, 7), b = make_llm_weight(64, 48, 7);
  DenseMatrix c = make_llm_weight(64, 48, 8);
  EXPECT_EQ(a.data, b.data);
  EXPECT_NE(a.data, c.data);
  // Per-row streams and scales drawn in index order: a taller matrix starts with the same rows.
  DenseMatrix tall = make_llm_weight(80, 48, 7);
  EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), tall.data.begin()));
  for (float v : a.data) EXPECT_TRUE(std::isfinite(v));
}

TEST(LlmWeight, RejectsBadShapes) {
  EXPECT_NE(error_of([] { make_llm_weight(0, 4, 1); }).find("--shape 0x4"), std::string::npos);
  EXPECT_NE(error_of([] { make_llm_weight(100000, 100000, 1); }).find("limit"), std::string::npos);
}

TEST(LlmWeight, MagnitudePruningGivesVaryingRowDensities) {
  DenseMatrix w = make_llm_weight(1024, 1024, 3);
  CsrMatrix m = prune(w, spec_of(PruneMethod::Magnitude, 0.5));
  std::vector<double> dens;
  for (int64_t r = 0; r < m.rows; ++r)
    dens.push_back(static_cast<double>(m.row_length(r)) / static_cast<double>(m.cols));
  double mean = 0, sq = 0;
  for (double d : dens) mean += d;
  mean /= static_cast<double>(dens.size());
  for (double d : dens) sq += (d - mean) * (d - mean);
  const double cv = std::sqrt(sq / static_cast<double>(dens.size())) / mean;
  std::sort(dens.begin(), dens.end());
  const double p01 = dens[dens.size() / 100], p99 = dens[dens.size() * 99 / 100];
  // The spread the sigmas in pruning.cpp were chosen for (cv ~0.27; p1 ~0.16, p99 ~0.77).
  EXPECT_GT(cv, 0.15);
  EXPECT_LT(cv, 0.4);
  EXPECT_LT(p01, 0.35);
  EXPECT_GT(p99, 0.65);
}

class AllMethods : public ::testing::TestWithParam<PruneSpec> {};

TEST_P(AllMethods, ExactCountCanonicalAndDeterministic) {
  const PruneSpec spec = GetParam();
  DenseMatrix w = make_llm_weight(96, 160, 11);
  CsrMatrix a = prune(w, spec);
  a.check_canonical();
  EXPECT_EQ(a.nnz(), pruned_nnz(w.rows, w.cols, spec));
  EXPECT_TRUE(same(a, prune(w, spec)));
  // Values are the weights at the kept positions.
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k)
      ASSERT_EQ(a.values[k], w.at(r, a.col_idx[k]));
}

INSTANTIATE_TEST_SUITE_P(Pruning, AllMethods,
                         ::testing::Values(spec_of(PruneMethod::Random, 0.5),
                                           spec_of(PruneMethod::Random, 0.0),
                                           spec_of(PruneMethod::Random, 0.9),
                                           spec_of(PruneMethod::Magnitude, 0.5),
                                           spec_of(PruneMethod::Magnitude, 0.0),
                                           spec_of(PruneMethod::Magnitude, 0.999999),
                                           spec_of(PruneMethod::RowMagnitude, 0.7), nm_spec(2, 4),
                                           nm_spec(6, 8), nm_spec(14, 16), nm_spec(17, 32), [] {
                                             PruneSpec b = spec_of(PruneMethod::Block, 0.6);
                                             b.block = 16;
                                             return b;
                                           }()));

TEST(Random, ExactCountAndSeedMatters) {
  DenseMatrix w = make_llm_weight(200, 300, 1);
  CsrMatrix a = prune(w, spec_of(PruneMethod::Random, 0.37, 5));
  EXPECT_EQ(a.nnz(), std::llround(0.63 * 200 * 300));
  CsrMatrix b = prune(w, spec_of(PruneMethod::Random, 0.37, 5));
  CsrMatrix c = prune(w, spec_of(PruneMethod::Random, 0.37, 6));
  EXPECT_TRUE(same(a, b));
  EXPECT_NE(a.col_idx, c.col_idx);
}

TEST(Random, RoughlyUniformOverRowsAndColumns) {
  DenseMatrix w = make_llm_weight(400, 400, 1);
  CsrMatrix a = prune(w, spec_of(PruneMethod::Random, 0.5, 9));
  // Random selection ignores magnitude: first and last quarters of rows hold similar counts.
  const int64_t first = a.row_ptr[100], last = a.nnz() - a.row_ptr[300];
  EXPECT_NEAR(static_cast<double>(first) / static_cast<double>(last), 1.0, 0.05);
}

TEST(Magnitude, KeepsTheLargest) {
  DenseMatrix w = make_llm_weight(120, 90, 4);
  CsrMatrix a = prune(w, spec_of(PruneMethod::Magnitude, 0.6));
  float min_kept = INFINITY;
  for (float v : a.values) min_kept = std::min(min_kept, std::fabs(v));
  // Every dropped weight is no larger than every kept one.
  std::vector<uint8_t> kept(w.data.size(), 0);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) kept[r * a.cols + a.col_idx[k]] = 1;
  for (size_t i = 0; i < w.data.size(); ++i)
    if (!kept[i]) {
      ASSERT_LE(std::fabs(w.data[i]), min_kept);
    }
}

TEST(Magnitude, TiesKeepExactCountInRowMajorOrder) {
  DenseMatrix w;
  w.rows = 3;
  w.cols = 4;
  w.data = {1, -1, 1, 1, 2, 1, 1, 1, 1, 1, -1, 1};               // one 2, eleven +-1
  CsrMatrix a = prune(w, spec_of(PruneMethod::Magnitude, 0.5));  // keep 6
  ASSERT_EQ(a.nnz(), 6);
  EXPECT_EQ(a.row_ptr, (std::vector<int64_t>{0, 4, 6, 6}));
  EXPECT_EQ(a.col_idx, (std::vector<int32_t>{0, 1, 2, 3, 0, 1}));
}

TEST(Magnitude, ExactZerosKeptExplicitly) {
  DenseMatrix w;
  w.rows = 2;
  w.cols = 4;
  w.data = {0, 3, 0, 0, 0, 0, 4, 0};                             // already 75% sparse
  CsrMatrix a = prune(w, spec_of(PruneMethod::Magnitude, 0.5));  // keep 4
  EXPECT_EQ(a.nnz(), 4);
  EXPECT_EQ(count_explicit_zeros(a), 2);
}

TEST(Prune, NanIsAnErrorNamingThePosition) {
  DenseMatrix w;
  w.rows = 2;
  w.cols = 3;
  w.source = "w.npy";
  w.data = {1, 2, 3, 4, std::nanf(""), 6};
  std::string msg = error_of([&] { prune(w, spec_of(PruneMethod::Magnitude, 0.5)); });
  EXPECT_NE(msg.find("w.npy"), std::string::npos) << msg;
  EXPECT_NE(msg.find("row 1, col 1"), std::string::npos) << msg;
}

TEST(Prune, InfRanksLargest) {
  DenseMatrix w;
  w.rows = 1;
  w.cols = 4;
  w.data = {1, -INFINITY, 3, 2};
  CsrMatrix a = prune(w, spec_of(PruneMethod::Magnitude, 0.5));
  EXPECT_EQ(a.col_idx, (std::vector<int32_t>{1, 2}));
}

TEST(Prune, EmptyShapes) {
  DenseMatrix w;
  w.rows = 0;
  w.cols = 5;
  CsrMatrix a = prune(w, spec_of(PruneMethod::Magnitude, 0.5));
  EXPECT_EQ(a.rows, 0);
  EXPECT_EQ(a.nnz(), 0);
  a.check_canonical();
}

TEST(RowMagnitude, EqualCountsPerRowAndLargestInRow) {
  DenseMatrix w = make_llm_weight(64, 100, 2);
  CsrMatrix a = prune(w, spec_of(PruneMethod::RowMagnitude, 0.7));
  for (int64_t r = 0; r < a.rows; ++r) {
    ASSERT_EQ(a.row_length(r), 30);
    float min_kept = INFINITY;
    std::set<int32_t> cols;
    for (int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      min_kept = std::min(min_kept, std::fabs(a.values[k]));
      cols.insert(a.col_idx[k]);
    }
    for (int32_t c = 0; c < 100; ++c)
      if (!cols.count(c)) {
        ASSERT_LE(std::fabs(w.at(r, c)), min_kept);
      }
  }
}

TEST(NM, EveryGroupHoldsExactlyN) {
  DenseMatrix w = make_llm_weight(32, 96, 5);
  for (auto [n, m] : std::vector<std::pair<int, int>>{
           {2, 4}, {4, 6}, {6, 8}, {8, 10}, {14, 16}, {1, 4}, {3, 32}}) {
    CsrMatrix a = prune(w, nm_spec(n, m));
    for (int64_t r = 0; r < a.rows; ++r) {
      std::vector<int> count((96 + m - 1) / m, 0);
      for (int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) ++count[a.col_idx[k] / m];
      for (size_t g = 0; g < count.size(); ++g) {
        const int width = std::min<int>(m, 96 - static_cast<int>(g) * m);
        ASSERT_EQ(count[g], std::min(n, width)) << n << ":" << m << " row " << r << " group " << g;
      }
    }
  }
}

TEST(NM, KeepsLargestInGroup) {
  DenseMatrix w;
  w.rows = 1;
  w.cols = 8;
  w.data = {0.1f, -5, 3, 0.2f, 1, 1, -1, 0.5f};
  CsrMatrix a = prune(w, nm_spec(2, 4));
  // Group 0: -5 and 3; group 1: ties among |1| keep the leftmost two.
  EXPECT_EQ(a.col_idx, (std::vector<int32_t>{1, 2, 4, 5}));
}

TEST(NM, TrailingPartialGroup) {
  DenseMatrix w = make_llm_weight(4, 10, 1);  // groups of 4: 4, 4, 2
  CsrMatrix a = prune(w, nm_spec(3, 4));
  EXPECT_EQ(a.nnz(), 4 * (3 + 3 + 2));
  EXPECT_EQ(pruned_nnz(4, 10, nm_spec(3, 4)), a.nnz());
}

TEST(Block, WholeBlocksByNorm) {
  DenseMatrix w = make_llm_weight(64, 128, 6);
  PruneSpec s = spec_of(PruneMethod::Block, 0.75);
  s.block = 8;
  CsrMatrix a = prune(w, s);
  EXPECT_EQ(a.nnz(), std::llround(0.25 * 8 * 16) * 64);
  // Each row of a block-row has the same columns, in whole aligned runs of 8.
  for (int64_t r = 0; r < a.rows; ++r) {
    ASSERT_EQ(a.row_length(r) % 8, 0);
    for (int64_t k = a.row_ptr[r]; k < a.row_ptr[r + 1]; k += 8) {
      ASSERT_EQ(a.col_idx[k] % 8, 0);
      ASSERT_EQ(a.col_idx[k + 7], a.col_idx[k] + 7);
    }
    const int64_t r0 = r - r % 8;
    ASSERT_TRUE(std::equal(a.col_idx.begin() + a.row_ptr[r], a.col_idx.begin() + a.row_ptr[r + 1],
                           a.col_idx.begin() + a.row_ptr[r0],
                           a.col_idx.begin() + a.row_ptr[r0 + 1]));
  }
  // The weakest kept block is at least as strong as the strongest dropped one.
  auto block_norm = [&](int64_t br, int64_t bc) {
    double s2 = 0;
    for (int64_t r = br * 8; r < br * 8 + 8; ++r)
      for (int64_t c = bc * 8; c < bc * 8 + 8; ++c) s2 += double(w.at(r, c)) * w.at(r, c);
    return s2;
  };
  double min_kept = INFINITY, max_dropped = 0;
  for (int64_t br = 0; br < 8; ++br) {
    std::set<int32_t> kept;
    for (int64_t k = a.row_ptr[br * 8]; k < a.row_ptr[br * 8 + 1]; ++k) kept.insert(a.col_idx[k]);
    for (int64_t bc = 0; bc < 16; ++bc) {
      const double n = block_norm(br, bc);
      if (kept.count(static_cast<int32_t>(bc * 8)))
        min_kept = std::min(min_kept, n);
      else
        max_dropped = std::max(max_dropped, n);
    }
  }
  EXPECT_GE(min_kept, max_dropped);
}

TEST(Block, ShapeMustBeAMultiple) {
  DenseMatrix w = make_llm_weight(30, 32, 1);
  PruneSpec s = spec_of(PruneMethod::Block, 0.5);
  s.block = 4;
  EXPECT_NE(error_of([&] { prune(w, s); }).find("--block 4: the weight's shape 30x32"),
            std::string::npos);
}

}  // namespace
}  // namespace sparsegen
