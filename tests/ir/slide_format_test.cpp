// SlideSparse format: the sliding-window decomposition Φ, the activation lifting Ψ and the 2:4
// compression reproduce W·x exactly (dyadic, non-integer data: every product and sum is exact in
// fp64), on random and adversarial (2N−2):2N groups for every N, with K not a multiple of 2N.
#include "ir/slide_format.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "ir/diagnostics.h"
#include "ir/gen/pruning.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

// A canonical CSR with the given columns per row and dyadic values ±k/8 (k = 1 … 32, never 0).
CsrMatrix csr(int64_t cols, const std::vector<std::vector<int64_t>>& rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  CsrMatrix a;
  a.rows = static_cast<int64_t>(rows.size());
  a.cols = cols;
  a.row_ptr.assign(1, 0);
  for (std::vector<int64_t> r : rows) {
    std::sort(r.begin(), r.end());
    for (int64_t c : r) {
      a.col_idx.push_back(static_cast<int32_t>(c));
      const int k = 1 + static_cast<int>(rng() % 32);
      a.values.push_back((rng() & 1 ? -1.0f : 1.0f) * static_cast<float>(k) / 8.0f);
    }
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  return a;
}

// Row `r` of a random (2N−2):2N matrix: each group keeps a random subset of `keep(g)` columns.
std::vector<int64_t> random_row(int n, int64_t cols, std::mt19937_64& rng, int max_per_group) {
  std::vector<int64_t> out;
  const int64_t width = 2 * n;
  for (int64_t g0 = 0; g0 < cols; g0 += width) {
    std::vector<int64_t> cs;
    for (int64_t c = g0; c < std::min(cols, g0 + width); ++c) cs.push_back(c);
    std::shuffle(cs.begin(), cs.end(), rng);
    const int keep = static_cast<int>(rng() % static_cast<uint64_t>(max_per_group + 1));
    for (int i = 0; i < keep && i < static_cast<int>(cs.size()); ++i) out.push_back(cs[i]);
  }
  return out;
}

// y = W·x against y' = W'·Ψ(x) (both in fp64, exact for dyadic data), for `cols_x` columns of x.
void expect_exact(const CsrMatrix& a, int n, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "N=" << n << " K=" << a.cols);
  const SlideFormat f = pack_slide(a, n);
  ASSERT_EQ(f.padded_cols % (2 * n), 0);
  ASSERT_EQ(f.lifted_cols, f.padded_cols / (2 * n) * 4 * (n - 1));
  EXPECT_DOUBLE_EQ(double(f.lifted_cols), (2.0 - 2.0 / n) * double(f.padded_cols));
  const std::vector<float> w = unpack_slide_lifted(f);
  // Exactly 2:4 over the lifted columns, and every nonzero kept once.
  int64_t kept = 0;
  for (int64_t r = 0; r < f.rows; ++r)
    for (int64_t q = 0; q < f.lifted_cols; q += 4) {
      int nz = 0;
      for (int p = 0; p < 4; ++p) nz += w[static_cast<size_t>(r * f.lifted_cols + q + p)] != 0;
      ASSERT_LE(nz, 2) << "row " << r << " window " << q / 4;
      kept += nz;
    }
  EXPECT_EQ(kept, a.nnz());
  // Metadata: two distinct increasing positions per window.
  for (int64_t r = 0; r < f.rows; ++r)
    for (int64_t win = 0; win < f.windows_per_row(); ++win) {
      const uint32_t code =
          (f.meta[static_cast<size_t>(r * f.meta_words_per_row() + win / 8)] >> (4 * (win % 8))) &
          0xfu;
      ASSERT_LT(code & 3u, code >> 2) << "row " << r << " window " << win;
    }
  const int64_t cols_x = 3;
  std::mt19937_64 rng(seed);
  std::vector<double> x(static_cast<size_t>(a.cols * cols_x));
  for (double& v : x) v = (double(rng() % 64) - 31.5) / 4.0;  // dyadic, non-integer
  const std::vector<double> xl = lift_activations(f, x, cols_x);
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t j = 0; j < cols_x; ++j) {
      double y = 0, yl = 0;
      for (int64_t e = a.row_ptr[static_cast<size_t>(r)]; e < a.row_ptr[static_cast<size_t>(r) + 1];
           ++e)
        y += double(a.values[static_cast<size_t>(e)]) *
             x[static_cast<size_t>(a.col_idx[static_cast<size_t>(e)] * cols_x + j)];
      for (int64_t c = 0; c < f.lifted_cols; ++c)
        yl += double(w[static_cast<size_t>(r * f.lifted_cols + c)]) *
              xl[static_cast<size_t>(c * cols_x + j)];
      ASSERT_EQ(y, yl) << "row " << r << " column " << j;
    }
}

TEST(SlideFormat, RandomGroupsEveryPatternKNotAMultiple) {
  for (int n = kSlideMinN; n <= kSlideMaxN; ++n) {
    std::mt19937_64 rng(100 + n);
    for (int64_t cols : {int64_t{2 * n}, int64_t{2 * n * 7 + 3}, int64_t{131}}) {
      std::vector<std::vector<int64_t>> rows;
      for (int r = 0; r < 24; ++r) rows.push_back(random_row(n, cols, rng, 2 * n - 2));
      expect_exact(csr(cols, rows, 7 + n), n, 11 + n);
    }
  }
}

TEST(SlideFormat, AdversarialGroups) {
  for (int n = kSlideMinN; n <= kSlideMaxN; ++n) {
    const int64_t w = 2 * n, cols = 3 * w + 1;  // three full groups and a one-column tail
    std::vector<std::vector<int64_t>> rows;
    std::vector<int64_t> left, right, full_mid, none, one_last, tail;
    for (int64_t c = 0; c < w - 2; ++c) left.push_back(c);              // all at the start
    for (int64_t c = 2; c < w; ++c) right.push_back(w + c);             // all at the end
    for (int64_t c = 1; c < w - 1; ++c) full_mid.push_back(2 * w + c);  // exactly 2N−2, inside
    one_last.push_back(w - 1);                                          // fewer: one, at the end
    tail.push_back(cols - 1);                                           // the padded group
    rows = {left, right, full_mid, none, one_last, tail};
    // Alternating pairs at both ends of every group.
    std::vector<int64_t> ends;
    for (int64_t g = 0; g < 3; ++g)
      for (int64_t c : {int64_t{0}, int64_t{1}, w - 2, w - 1})
        if (n > 2 || c < 2) ends.push_back(g * w + c);
    rows.push_back(ends);
    expect_exact(csr(cols, rows, 5), n, 9);
  }
}

TEST(SlideFormat, EmptyAndTinyMatrices) {
  expect_exact(csr(5, {{}, {}}, 1), 4, 1);  // K < 2N, no nonzeros
  const SlideFormat f = pack_slide(csr(0, {{}}, 1), 4);
  EXPECT_EQ(f.lifted_cols, 0);
  EXPECT_EQ(detect_slide_pattern(csr(9, {{}, {}}, 1)).name(), "2:4");
}

TEST(SlideFormat, ViolationsNameRowGroupAndCount) {
  // Row 2 (1-based 3), group 1 (columns 9-16) holds 7 nonzeros: not 6:8.
  std::vector<std::vector<int64_t>> rows = {{0, 1}, {}, {8, 9, 10, 11, 12, 13, 14}};
  const CsrMatrix a = csr(20, rows, 3);
  const auto v = slide_violation(a, 4);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->row, 2);
  EXPECT_EQ(v->group, 1);
  EXPECT_EQ(v->count, 7);
  const std::string msg = testing::error_of([&] { pack_slide(a, 4); });
  EXPECT_NE(msg.find("not 6:8: row 3, columns 9–16 hold 7 nonzeros (at most 6)"), std::string::npos)
      << msg;
  EXPECT_NE(testing::error_of([&] { pack_slide(a, 9); }).find("N = 9"), std::string::npos);
  // The smallest N that fits: columns 9-15 split 4 + 3 over the 6-column groups, so 4:6.
  EXPECT_EQ(detect_slide_pattern(a).n, 3);
}

TEST(SlideFormat, DetectsGeneratedNmWeights) {
  const DenseMatrix w = make_llm_weight(64, 200, 3);
  for (auto [keep, group] : {std::pair{4, 6}, std::pair{6, 8}, std::pair{14, 16}}) {
    PruneSpec s;
    s.method = PruneMethod::NM;
    s.n = keep;
    s.m = group;
    const CsrMatrix a = prune(w, s);
    const SlidePattern pat = detect_slide_pattern(a);
    EXPECT_EQ(pat.name(), fmt::format("{}:{}", keep, group));
    EXPECT_DOUBLE_EQ(pat.gamma(), 2.0 - 2.0 / (group / 2));
    const SlideFormat f = pack_slide(a, pat.n);
    EXPECT_EQ(f.values.size(), static_cast<size_t>(f.rows * f.lifted_cols / 2));
    EXPECT_EQ(f.bytes(2), int64_t(f.values.size()) * 2 + int64_t(f.meta.size()) * 4);
  }
}

}  // namespace
}  // namespace sparsegen
