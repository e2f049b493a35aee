// The tight error bound (ir/error_bound.h): its terms, half an ulp of each dtype, and that it
// admits a kernel that rounds alpha·acc + beta·C₀ once but rejects one that rounds twice.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "ir/dtype.h"
#include "ir/error_bound.h"
#include "ir/interpreter.h"
#include "ir/io/load.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

constexpr double kU = 0x1p-24;

TEST(ErrorBound, HalfUlpOfEachDtype) {
  EXPECT_EQ(half_ulp(DType::F16, 1.0), 0x1p-11);
  EXPECT_EQ(half_ulp(DType::F16, 1.999), 0x1p-11);
  EXPECT_EQ(half_ulp(DType::F16, -2.0), 0x1p-10);
  EXPECT_EQ(half_ulp(DType::F16, 65504.0), 16.0);
  EXPECT_EQ(half_ulp(DType::F16, 0x1p-14), 0x1p-25);  // smallest normal
  EXPECT_EQ(half_ulp(DType::F16, 0x1p-20), 0x1p-25);  // subnormal: half the spacing 2^-24
  EXPECT_EQ(half_ulp(DType::F16, 0.0), 0x1p-25);
  EXPECT_EQ(half_ulp(DType::BF16, 1.0), 0x1p-8);
  EXPECT_EQ(half_ulp(DType::BF16, 3.0), 0x1p-7);
  EXPECT_EQ(half_ulp(DType::BF16, 0x1p-130), 0x1p-134);
  EXPECT_EQ(half_ulp(DType::F32, 1.0), 0x1p-24);
  EXPECT_EQ(half_ulp(DType::F32, 1e-40), 0x1p-150);
}

// Round to nearest even never errs by more than half_ulp, and reaches it at midpoints.
TEST(ErrorBound, HalfUlpBoundsRoundToNearest) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-30, 14);  // below fp16's overflow
  for (DType t : {DType::F16, DType::BF16}) {
    double worst = 0;
    for (int i = 0; i < 200000; ++i) {
      const float x = std::ldexp(mant(g), ex(g));
      const double err = std::fabs(double(round_to(t, x)) - double(x));
      const double h = half_ulp(t, x);
      ASSERT_LE(err, h) << to_string(t) << " " << x;
      worst = std::max(worst, err / h);
    }
    EXPECT_GT(worst, 0.99) << to_string(t);
    // 1 + half an ulp is a tie: rounds to even (1), an error of exactly half_ulp.
    const double tie = 1.0 + half_ulp(t, 1.0);
    EXPECT_EQ(std::fabs(double(round_to(t, float(tie))) - tie), half_ulp(t, 1.0));
  }
}

TEST(ErrorBound, Terms) {
  ElementBoundTerms t;
  t.row_length = 29;
  t.sum_abs_products = 20.0;
  EXPECT_DOUBLE_EQ(fp32_error_bound(t), 33 * 2 * kU * 20.0 + 33 * 0x1p-126);
  // beta term: one rounding of beta·C₀ and one of the add (Store) ...
  t.abs_beta_c0 = 0.75;
  EXPECT_DOUBLE_EQ(fp32_error_bound(t), 33 * 2 * kU * 20.0 + 2 * kU * 0.75 + 33 * 0x1p-126);
  // ... or one per atomic add it passes through, those adds counted into L as well.
  t.atomic_adds = 3;
  EXPECT_DOUBLE_EQ(fp32_error_bound(t), 36 * 2 * kU * 20.0 + 4 * kU * 0.75 + 36 * 0x1p-126);
  // The output rounding: half an ulp of |exact| + E in the dtype.
  t.atomic_adds = 0;
  t.abs_exact = 3.9999;
  const double e = fp32_error_bound(t);
  EXPECT_DOUBLE_EQ(spmm_error_bound(DType::F16, t), e + 0x1p-10);
  EXPECT_DOUBLE_EQ(spmm_error_bound(DType::BF16, t), e + 0x1p-7);
  t.abs_exact = 4.0 - 0x1p-30;  // E carries it into the next binade
  EXPECT_DOUBLE_EQ(spmm_error_bound(DType::F16, t), fp32_error_bound(t) + 0x1p-9);
  // Zero row, beta == 0: only the subnormal half-spacing (and the fp32 underflow slack).
  const ElementBoundTerms zero;
  EXPECT_DOUBLE_EQ(spmm_error_bound(DType::F16, zero), 4 * 0x1p-126 + 0x1p-25);
}

// The case of GpuPipeline.TightBoundFp16BetaHalfFfnConv1 on the CPU: DLMC ffn_conv1 (2048 x 512,
// random pruning 90 %), N = 64, fp16, alpha = 1, beta = 0.5, B and C₀ uniform in ±[0.5, 1.5)
// rounded to fp16. The three schedules' operation orders are emulated in fp32 (GeneralSparse
// Atomic: ws = beta·C₀, then one atomic add per 32-nonzero warp task of two 16-nonzero FMA
// chains; bitmap_tc split K: 4 parts of 128 columns added into a zeroed ws, then ws + beta·C₀;
// bitmap_tc ksplit = 1: fma(alpha, acc, beta·C₀)), each rounded to fp16 once: all within the
// bound. Rounding alpha·acc to fp16 before adding beta·C₀ (a second rounding) exceeds it by about
// 2.6x on this matrix.
TEST(ErrorBound, SingleRoundingPassesDoubleRoundingFailsOnFfnConv1) {
  const auto path = testing::data_dir() / "dlmc/transformer/random_pruning/0.9" /
                        "body_encoder_layer_0_ffn_conv1_fully_connected.smtx";
  const CsrMatrix a = load_matrix(path.string()).matrix;
  ASSERT_EQ(a.rows, 2048);
  ASSERT_EQ(a.cols, 512);
  const int64_t n = 64;
  const float alpha = 1.0f, beta = 0.5f;
  std::mt19937_64 g(7);
  std::uniform_real_distribution<float> mag(0.5f, 1.5f);
  auto draw = [&] { return round_to(DType::F16, (g() & 1) != 0 ? -mag(g) : mag(g)); };
  std::vector<float> b(static_cast<size_t>(a.cols * n)), c0(static_cast<size_t>(a.rows * n));
  for (float& x : b) x = draw();
  for (float& x : c0) x = draw();
  std::vector<float> av(a.values.size());
  for (size_t e = 0; e < av.size(); ++e) av[e] = round_to(DType::F16, a.values[e]);
  auto h = [](float x) { return round_to(DType::F16, x); };

  enum { kGeneral, kSplitK, kStore, kTwice, kVariants };
  double worst[kVariants] = {};
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t r0 = a.row_ptr[static_cast<size_t>(r)],
                  r1 = a.row_ptr[static_cast<size_t>(r + 1)];
    for (int64_t c = 0; c < n; ++c) {
      auto bv = [&](int64_t e) {
        return b[static_cast<size_t>(a.col_idx[static_cast<size_t>(e)] * n + c)];
      };
      const float cv = c0[static_cast<size_t>(r * n + c)];
      double exact = 0, sab = 0;
      for (int64_t e = r0; e < r1; ++e) {
        exact += double(av[static_cast<size_t>(e)]) * double(bv(e));
        sab += std::fabs(double(av[static_cast<size_t>(e)]) * double(bv(e)));
      }
      exact = double(alpha) * exact + double(beta) * double(cv);
      // GeneralSparse Atomic (fp32 workspace): warp tasks of 32 nonzeros, two groups of 16.
      float ws = beta * cv;
      int64_t adds = 0;
      for (int64_t w0 = r0; w0 < r1; w0 += 32, ++adds) {
        float part[2] = {0.0f, 0.0f};
        for (int gi = 0; gi < 2; ++gi)
          for (int64_t e = w0 + 16 * gi; e < std::min(r1, w0 + 16 * (gi + 1)); ++e)
            part[gi] = std::fmaf(av[static_cast<size_t>(e)], bv(e), part[gi]);
        ws += alpha * (part[0] + part[1]);
      }
      // bitmap_tc: column-order fp32 sums per K part (4 parts of 128 columns) and in full.
      float parts[4] = {}, acc = 0.0f;
      for (int64_t e = r0; e < r1; ++e) {
        const int32_t k = a.col_idx[static_cast<size_t>(e)];
        parts[k / 128] = std::fmaf(av[static_cast<size_t>(e)], bv(e), parts[k / 128]);
        acc = std::fmaf(av[static_cast<size_t>(e)], bv(e), acc);
      }
      float wsk = 0.0f;
      for (float p : parts) wsk += alpha * p;
      const float out[kVariants] = {h(ws), h(std::fmaf(beta, cv, wsk)),
                                    h(std::fmaf(alpha, acc, beta * cv)),
                                    h(h(alpha * acc) + beta * cv)};
      for (int v = 0; v < kVariants; ++v) {
        ElementBoundTerms t;
        t.row_length = r1 - r0;
        t.atomic_adds = v == kGeneral ? adds : v == kSplitK ? 4 : 0;
        t.sum_abs_products = std::fabs(double(alpha)) * sab;
        t.abs_beta_c0 = std::fabs(double(beta) * double(cv));
        t.abs_exact = std::fabs(exact);
        const double ratio = std::fabs(double(out[v]) - exact) / spmm_error_bound(DType::F16, t);
        worst[v] = std::max(worst[v], ratio);
      }
    }
  }
  std::printf(
      "[ bound    ] max |out - exact| / bound: general atomic %.3f, bitmap split-K %.3f, "
      "bitmap store %.3f, rounded twice %.3f\n",
      worst[kGeneral], worst[kSplitK], worst[kStore], worst[kTwice]);
  EXPECT_LE(worst[kGeneral], 1.0);
  EXPECT_LE(worst[kSplitK], 1.0);
  EXPECT_LE(worst[kStore], 1.0);
  EXPECT_GT(worst[kGeneral], 0.9);  // the bound is tight: half an ulp is reached
  EXPECT_GT(worst[kTwice], 2.0);
}

}  // namespace
}  // namespace sparsegen
