// slide_lt family on the device (skipped without a GPU or without a loadable cuSPARSELt): the
// lift for the library, the library's 2:4 GEMM and (8-bit types) the scale kernel together,
// against the reference of compiler/gpu_check.h (the tight bound; int8 against the reference
// over the quantized inputs), with C poisoned (beta 0) and beta -1.5; fp16, bf16 and int8 (the
// family refuses fp8: the library's e4m3 GEMM misses the bound),
// patterns 2:4, 4:6 and 6:8, N from 1 to 512, K not a multiple of 2N, B in both layouts; the
// algorithm searched at load and the choice found, planned again without a search.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/slide_lt_schedule.h"
#include "runtime/cusparselt.h"
#include "tests/gpu/gpu_fixture.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen {
namespace {

using testing::slide_weight;

class GpuSlideLt : public testing::GpuFixture {
 protected:
  void SetUp() override {
    GpuFixture::SetUp();
    if (IsSkipped()) return;
    std::string why;
    if (!cusparselt::available(&why)) GTEST_SKIP() << "no cuSPARSELt: " << why;
  }
  // Builds s (alg=search), checks it, then checks the schedule of the choice its load found.
  void check(const CsrMatrix& a, const Problem& p, uint64_t seed) {
    EnumerateOptions o;
    o.device = target_.limits;
    o.include_specialised = true;
    const IrFamily& fam = *find_ir_family("slide_lt");
    const auto all = fam.enumerate(p, a, o);
    ASSERT_EQ(all.size(), 1u) << to_string(p) << ": " << fam.why_not(p, a).size();
    SCOPED_TRACE(to_string(p) + " " + to_string(all[0]));
    const CompiledKernel k(ctx_, build_kernel(a, p, all[0], target_));
    const GpuCheckPair r = gpu_check(k, a, seed);
    EXPECT_TRUE(r.passed()) << r.error();
    ASSERT_EQ(k.signature().sparse_gemms.size(), 1u);
    const std::string choice = k.signature().sparse_gemms[0].choice;
    EXPECT_FALSE(choice.empty());
    const auto concrete = fam.with_library_choices(all[0], {choice});
    ASSERT_TRUE(concrete.has_value()) << choice;
    SCOPED_TRACE(to_string(*concrete));
    const CompiledKernel kc(ctx_, build_kernel(a, p, *concrete, target_));
    EXPECT_EQ(kc.signature().sparse_gemms[0].choice,
              slide_lt_choice(concrete->as<SlideLtSchedule>()));
    const GpuCheckPair rc = gpu_check(kc, a, seed + 1000);
    EXPECT_TRUE(rc.passed()) << rc.error();
    checked_ += 2;
  }
  int checked_ = 0;
};

Problem problem_of(DType dt, int64_t m, int64_t k, int64_t n, Layout bl) {
  if (is_quantized(dt))
    return Problem::quantized_spmm(m, k, n, dt, n % 2 == 0 ? DType::BF16 : DType::F16, bl,
                                   Layout::ColMajor);
  return Problem::spmm(m, k, n, dt, bl, Layout::ColMajor);
}

TEST_F(GpuSlideLt, EveryTypeAndN) {
  const CsrMatrix a = slide_weight(96, 8 * 37 + 5, 4, 11);  // 6:8, K = 301
  uint64_t seed = 1;
  for (DType dt : {DType::F16, DType::BF16, DType::I8})
    for (int64_t n : {1, 8, 16, 64, 512}) {
      check(a, problem_of(dt, a.rows, a.cols, n, seed % 2 ? Layout::ColMajor : Layout::RowMajor),
            seed);
      ++seed;
    }
  std::printf("slide_lt 6:8: %d kernels checked\n", checked_);
}

TEST_F(GpuSlideLt, PatternsTwoFourToSixEight) {
  uint64_t seed = 100;
  for (int pat : {2, 3, 4}) {
    const CsrMatrix a = slide_weight(64, 2 * pat * 40 + 8, pat, 20 + pat);  // K % 8 == 0
    for (DType dt : {DType::F16, DType::I8})
      for (int64_t n : {8, 200}) {
        check(a, problem_of(dt, a.rows, a.cols, n, Layout::ColMajor), seed);
        ++seed;
      }
  }
  std::printf("slide_lt patterns: %d kernels checked\n", checked_);
}

}  // namespace
}  // namespace sparsegen
