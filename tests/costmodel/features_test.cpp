#include "costmodel/features.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/gen/pruning.h"
#include "ir/parallel.h"

namespace sparsegen {
namespace {

// Builds a canonical CSR from per-row sorted column lists (values 1).
CsrMatrix from_rows(int64_t cols, const std::vector<std::vector<int32_t>>& rows) {
  CsrMatrix m;
  m.rows = static_cast<int64_t>(rows.size());
  m.cols = cols;
  for (const auto& r : rows) {
    for (int32_t c : r) {
      m.col_idx.push_back(c);
      m.values.push_back(1.0f);
    }
    m.row_ptr.push_back(m.nnz());
  }
  m.check_canonical();
  return m;
}

TEST(Features, HandBuiltRowStats) {
  // Row lengths 0, 1, 2, 5 over 8 columns.
  CsrMatrix m = from_rows(8, {{}, {3}, {0, 7}, {1, 2, 3, 4, 5}});
  MatrixFeatures f = compute_features(m);
  EXPECT_EQ(f.rows, 4);
  EXPECT_EQ(f.cols, 8);
  EXPECT_EQ(f.nnz, 8);
  EXPECT_DOUBLE_EQ(f.density, 8.0 / 32.0);
  EXPECT_EQ(f.row_min, 0);
  EXPECT_EQ(f.row_max, 5);
  EXPECT_DOUBLE_EQ(f.row_mean, 2.0);
  // Population std of {0, 1, 2, 5}: sqrt((4 + 1 + 0 + 9) / 4).
  EXPECT_NEAR(f.row_std, std::sqrt(3.5), 1e-12);
  EXPECT_NEAR(f.row_cv, std::sqrt(3.5) / 2.0, 1e-12);
  EXPECT_EQ(f.empty_rows, 1);
  EXPECT_EQ(f.row_p50, 1);  // nearest rank: ceil(0.5 * 4) = 2nd smallest
  EXPECT_EQ(f.row_p90, 5);
  EXPECT_EQ(f.row_p99, 5);
  EXPECT_FALSE(f.row_uniform);
  // Column counts: c0 1, c1 1, c2 1, c3 2, c4 1, c5 1, c6 0, c7 1.
  EXPECT_EQ(f.col_max, 2);
  EXPECT_EQ(f.empty_cols, 1);
}

TEST(Features, HandBuiltLocality) {
  // Row 0: 0 1 2 3 (one segment, 3 gaps of 1). Row 1: 0 32 64 (three segments, min 1, gaps 32).
  CsrMatrix m = from_rows(96, {{0, 1, 2, 3}, {0, 32, 64}});
  MatrixFeatures f = compute_features(m);
  EXPECT_DOUBLE_EQ(f.segments_per_row, (1.0 + 3.0) / 2.0);
  EXPECT_DOUBLE_EQ(f.segment_ratio, 4.0 / 2.0);
  EXPECT_DOUBLE_EQ(f.mean_col_gap, (1 + 1 + 1 + 32 + 32) / 5.0);
  EXPECT_DOUBLE_EQ(f.consecutive_fraction, 3.0 / 5.0);
}

TEST(Features, MemoryFootprint) {
  CsrMatrix m = from_rows(8, {{0, 1}, {2}, {}});
  MatrixFeatures f = compute_features(m);
  EXPECT_EQ(f.csr_i32_fp32_bytes, 4 * 4 + 3 * 8);
  EXPECT_EQ(f.csr_i32_fp16_bytes, 4 * 4 + 3 * 6);
  EXPECT_EQ(f.csr_i64_fp32_bytes, 4 * 8 + 3 * 8);
  EXPECT_EQ(f.csr_i64_fp16_bytes, 4 * 8 + 3 * 6);
  EXPECT_EQ(f.dense_fp32_bytes, 3 * 8 * 4);
  EXPECT_EQ(f.dense_fp16_bytes, 3 * 8 * 2);
}

TEST(Features, EmptyMatrices) {
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 5}, {5, 0}, {3, 3}}) {
    CsrMatrix m;
    m.rows = r;
    m.cols = c;
    m.row_ptr.assign(static_cast<size_t>(r) + 1, 0);
    MatrixFeatures f = compute_features(m);
    EXPECT_EQ(f.nnz, 0);
    EXPECT_EQ(f.density, 0.0);
    EXPECT_EQ(f.nm_string(), "none");
    EXPECT_EQ(f.dense_block, 1);
    EXPECT_EQ(f.empty_rows, r);
    EXPECT_EQ(f.empty_cols, c);
    nlohmann::json j = to_json(f);
    EXPECT_EQ(j["nnz"], 0);
  }
}

TEST(Features, HugeNearlyEmptyMatrixIsCheap) {
  // cols = 2^31 - 1 with two entries: column statistics must not allocate per column.
  CsrMatrix m = from_rows(kMaxDimension, {{5, 2000000000}});
  MatrixFeatures f = compute_features(m);
  EXPECT_EQ(f.empty_cols, kMaxDimension - 2);
  EXPECT_EQ(f.col_max, 1);
}

TEST(Features, DetectsNMOnGeneratedMatrices) {
  DenseMatrix w = make_llm_weight(64, 256, 3);
  for (auto [n, m] : std::vector<std::pair<int, int>>{
           {2, 4}, {1, 4}, {4, 6}, {6, 8}, {4, 8}, {8, 10}, {10, 12}, {14, 16}}) {
    PruneSpec s;
    s.method = PruneMethod::NM;
    s.n = n;
    s.m = m;
    MatrixFeatures f = compute_features(prune(w, s));
    EXPECT_EQ(f.nm_string(), std::to_string(n) + ":" + std::to_string(m)) << n << ":" << m;
    EXPECT_TRUE(f.row_uniform);
  }
}

TEST(Features, NoNMOnRandomOrMagnitude) {
  DenseMatrix w = make_llm_weight(512, 512, 3);
  for (PruneMethod method : {PruneMethod::Random, PruneMethod::Magnitude}) {
    PruneSpec s;
    s.method = method;
    s.sparsity = 0.5;
    MatrixFeatures f = compute_features(prune(w, s));
    EXPECT_EQ(f.nm_string(), "none") << to_string(method);
    EXPECT_FALSE(f.row_uniform);
    EXPECT_EQ(f.dense_block, 1);
  }
}

TEST(Features, AccidentalBoundsOnSparseMatricesAreNotReported) {
  // 128x64 at 70% sparsity: every group of 14 happens to hold at most 12, but the matrix is not
  // 12:14-pruned (density 0.3, not ~12/14).
  DenseMatrix w = make_llm_weight(128, 64, 5);
  PruneSpec s;
  s.method = PruneMethod::Magnitude;
  s.sparsity = 0.7;
  MatrixFeatures f = compute_features(prune(w, s));
  EXPECT_EQ(f.nm_string(), "none");
  // One nonzero per row of 64: "1:4" by accident.
  CsrMatrix diag = from_rows(64, {{0}, {5}, {9}, {63}});
  f = compute_features(diag);
  EXPECT_EQ(f.nm_max_per_group[0], 1);
  EXPECT_EQ(f.nm_string(), "none");
}

TEST(Features, RowUniformFromRowMagnitude) {
  DenseMatrix w = make_llm_weight(128, 200, 3);
  PruneSpec s;
  s.method = PruneMethod::RowMagnitude;
  s.sparsity = 0.6;
  MatrixFeatures f = compute_features(prune(w, s));
  EXPECT_TRUE(f.row_uniform);
  EXPECT_EQ(f.row_min, 80);
  EXPECT_EQ(f.row_cv, 0.0);
}

TEST(Features, MagnitudeRowsVaryRandomRowsDoNot) {
  DenseMatrix w = make_llm_weight(1024, 1024, 3);
  PruneSpec s;
  s.sparsity = 0.5;
  s.method = PruneMethod::Magnitude;
  const double cv_mag = compute_features(prune(w, s)).row_cv;
  s.method = PruneMethod::Random;
  const double cv_rand = compute_features(prune(w, s)).row_cv;
  EXPECT_GT(cv_mag, 0.15);
  EXPECT_LT(cv_rand, 0.05);  // binomial: sqrt(0.25 * 1024) / 512 ~ 0.03
}

TEST(Features, DetectsDenseBlocks) {
  DenseMatrix w = make_llm_weight(64, 128, 3);
  for (int b : {2, 4, 8, 16}) {
    PruneSpec s;
    s.method = PruneMethod::Block;
    s.sparsity = 0.5;
    s.block = b;
    MatrixFeatures f = compute_features(prune(w, s));
    // Reporting 2b would need every aligned 2x2 group of kept blocks to be all kept or all
    // dropped: with these seeds and sizes that does not happen by chance.
    EXPECT_EQ(f.dense_block, b) << b;
  }
  // A dense matrix is made of blocks of every size.
  PruneSpec all;
  all.method = PruneMethod::Magnitude;
  all.sparsity = 0.0;
  EXPECT_EQ(compute_features(prune(w, all)).dense_block, 32);
  EXPECT_EQ(compute_features(prune(w, all)).nm_string(), "none");
}

TEST(Features, JsonAndTableHaveEveryField) {
  CsrMatrix m = from_rows(8, {{0, 1, 4, 5}, {2, 3, 6, 7}});
  MatrixFeatures f = compute_features(m);
  nlohmann::json j = to_json(f);
  for (const char* key : {"rows",
                          "cols",
                          "nnz",
                          "density",
                          "row_min",
                          "row_max",
                          "row_mean",
                          "row_std",
                          "row_cv",
                          "row_p50",
                          "row_p90",
                          "row_p99",
                          "empty_rows",
                          "col_max",
                          "col_cv",
                          "empty_cols",
                          "segments_per_row",
                          "segment_ratio",
                          "mean_col_gap",
                          "consecutive_fraction",
                          "nm",
                          "nm_max_per_group",
                          "row_uniform",
                          "dense_block",
                          "csr_i32_fp32_bytes",
                          "csr_i64_fp16_bytes",
                          "dense_fp32_bytes",
                          "dense_fp16_bytes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["nm"], "2:4");
  EXPECT_EQ(j["nm_max_per_group"]["4"], 2);
  EXPECT_EQ(j["dense_block"], 1);  // rows 0 and 1 differ, so no 2x2 blocks
  const std::string t = format_table(f);
  EXPECT_NE(t.find("2 x 8"), std::string::npos) << t;
  EXPECT_NE(t.find("N:M structure"), std::string::npos) << t;
}

// The features are integer sums and maxima per row range (ir/parallel.h): split into many chunks,
// also inside N:M groups' long scans, they are exactly the serial ones.
TEST(Features, IndependentOfThreads) {
  const DenseMatrix w = make_llm_weight(300, 256, 4);
  std::vector<PruneSpec> specs(3);
  specs[0].method = PruneMethod::Magnitude;
  specs[0].sparsity = 0.7;
  specs[1].method = PruneMethod::NM;  // no full group: max_per_group scans every row
  specs[1].n = 2;
  specs[1].m = 4;
  specs[2].method = PruneMethod::NM;
  specs[2].n = 6;
  specs[2].m = 8;
  const ParallelConfig saved = parallel_config();
  for (const PruneSpec& spec : specs) {
    const CsrMatrix m = prune(w, spec);
    set_parallel_config({1, 1});
    const std::string serial = to_json(compute_features(m)).dump();
    set_parallel_config({11, 1});
    const std::string split = to_json(compute_features(m)).dump();
    set_parallel_config(saved);
    EXPECT_EQ(serial, split) << to_string(spec.method);
  }
}

}  // namespace
}  // namespace sparsegen
