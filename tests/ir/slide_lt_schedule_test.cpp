// slide_lt family, host side: the SPEC (alg=search and a concrete choice), the library's words
// for a choice and back, the problem rules (C column-major, M a multiple of the library's 16/32),
// why_not and the enumeration, and the interpreter against the CSR reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/interpreter.h"
#include "ir/slide_lt_schedule.h"
#include "ir/slide_schedule.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen {
namespace {

using testing::slide_weight;

TEST(SlideLtSchedule, SpecRoundTripAndPrint) {
  SlideLtSchedule s;
  EXPECT_EQ(to_string(Schedule(s)), "slide_lt;pattern=6:8;alg=search");
  EXPECT_EQ(parse_schedule("slide_lt;pattern=6:8;alg=search"), Schedule(s));
  s.pattern = 3;
  s.alg = 42;
  s.split_k = 4;
  s.split_k_mode = 2;
  s.split_k_buffers = 2;
  const std::string spec = to_string(Schedule(s));
  EXPECT_EQ(spec, "slide_lt;pattern=4:6;alg=42;split_k=4;split_k_mode=2;split_k_buffers=2");
  EXPECT_EQ(parse_schedule(spec), Schedule(s));
  EXPECT_EQ(print_schedule(Schedule(s)),
            "schedule slide_lt\n"
            "  format: 4:6 as 2:4 sliding windows (gamma 1.333), dense lifted weight\n"
            "  b     : lifted (and quantized per token) by the b_transform kernel, column-major\n"
            "  gemm  : the 2:4 sparse GEMM library (cuSPARSELt), weight compressed at load\n"
            "  alg   : id 42, split_k 4 (mode 2, 2 buffers)\n"
            "  scale : int8: row x token scales applied to the raw accumulators (main kernel)\n");
  for (const char* bad :
       {"slide_lt;pattern=6:9", "slide_lt;alg=-2", "slide_lt;alg=fast", "slide_lt;split_k=3",
        "slide_lt;alg=search;split_k=2", "slide_lt;alg=1;split_k=2;split_k_buffers=4",
        "slide_lt;split_k_mode=3", "slide_lt;warps=4"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
}

TEST(SlideLtSchedule, LibraryChoiceWordsRoundTrip) {
  SlideLtSchedule s;
  EXPECT_EQ(slide_lt_choice(s), "");
  const SlideLtSchedule c = with_choice(s, "alg=17,split_k=2,mode=1,buffers=1");
  EXPECT_EQ(c.alg, 17);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_EQ(c.split_k_mode, 1);
  EXPECT_EQ(slide_lt_choice(c), "alg=17,split_k=2,mode=1,buffers=1");
  // Split-K 1 as the library reports it (its own mode / buffer defaults) is normalised.
  EXPECT_EQ(to_string(Schedule(with_choice(s, "alg=3,split_k=1,mode=2,buffers=4"))),
            "slide_lt;pattern=6:8;alg=3;split_k=1;split_k_mode=0;split_k_buffers=1");
  for (const char* bad :
       {"", "alg=3", "alg=3,split_k=1,mode=0", "alg=x,split_k=1,mode=0,buffers=1",
        "alg=3,split_k=3,mode=0,buffers=1", "alg=3,split_k=1,mode=0,buffers=1,z=1"})
    EXPECT_THROW(with_choice(s, bad), UserError) << bad;
  // Through the family: a searched schedule takes the load's choice; a concrete one keeps its own.
  const IrFamily& fam = *find_ir_family("slide_lt");
  const auto r = fam.with_library_choices(Schedule(s), {"alg=5,split_k=1,mode=0,buffers=1"});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(to_string(*r), "slide_lt;pattern=6:8;alg=5;split_k=1;split_k_mode=0;split_k_buffers=1");
  EXPECT_FALSE(fam.with_library_choices(*r, {"alg=6,split_k=1,mode=0,buffers=1"}).has_value());
  EXPECT_FALSE(
      find_ir_family("slide")->with_library_choices(Schedule(SlideSchedule{}), {"x"}).has_value());
}

TEST(SlideLtFamily, RulesWhyNotAndEnumerate) {
  const IrFamily& fam = *find_ir_family("slide_lt");
  EXPECT_TRUE(fam.library());
  const CsrMatrix a = slide_weight(64, 200, 4, 3);  // 6:8
  const Problem p = Problem::spmm(64, 200, 16, DType::F16, Layout::RowMajor, Layout::ColMajor);
  EXPECT_TRUE(fam.why_not(p, a).empty());
  EnumerateOptions o;
  o.include_specialised = true;
  const auto all = fam.enumerate(p, a, o);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(to_string(all[0]), "slide_lt;pattern=6:8;alg=search");
  // The library writes C column-major.
  const auto row_c =
      fam.why_not(Problem::spmm(64, 200, 16, DType::F16, Layout::ColMajor, Layout::RowMajor), a);
  ASSERT_EQ(row_c.size(), 1u);
  EXPECT_NE(row_c[0].find("C column-major"), std::string::npos) << row_c[0];
  // M a multiple of 32 for 8-bit types (64 is; 48 is not).
  const CsrMatrix a48 = slide_weight(48, 200, 4, 3);
  const auto m48 = fam.why_not(Problem::quantized_spmm(48, 200, 8, DType::I8, DType::F16,
                                                       Layout::ColMajor, Layout::ColMajor),
                               a48);
  ASSERT_EQ(m48.size(), 1u);
  EXPECT_NE(m48[0].find("M a multiple of 32 for int8"), std::string::npos) << m48[0];
  EXPECT_TRUE(
      fam.why_not(Problem::spmm(48, 200, 8, DType::BF16, Layout::ColMajor, Layout::ColMajor), a48)
          .empty());
  // fp32, and a matrix with no pattern.
  EXPECT_FALSE(fam.why_not(Problem::spmm(64, 200, 16, DType::F32), a).empty());
  const CsrMatrix dense = slide_weight(64, 200, 9, 3);  // 16:18: past 14:16
  EXPECT_FALSE(fam.why_not(p, dense).empty());
  EXPECT_TRUE(fam.enumerate(p, dense, o).empty());
  // fp8: the library's e4m3 GEMM misses the error bound; the reason says so.
  const auto fp8 = fam.why_not(Problem::quantized_spmm(64, 200, 8, DType::F8E4M3, DType::F16,
                                                       Layout::ColMajor, Layout::ColMajor),
                               a);
  ASSERT_EQ(fp8.size(), 1u);
  EXPECT_NE(fp8[0].find("error bound"), std::string::npos) << fp8[0];
  EXPECT_TRUE(fam.enumerate(Problem::quantized_spmm(64, 200, 8, DType::F8E4M3, DType::F16,
                                                    Layout::ColMajor, Layout::ColMajor),
                            a, o)
                  .empty());
}

// The family's interpreter is the slide kernels' arithmetic: within one fp16 rounding of the CSR
// reference (the reference rounds C to the dtype; the values and B are fp16 already).
TEST(SlideLtFamily, InterpreterMatchesTheReference) {
  const CsrMatrix a = slide_weight(32, 77, 3, 8);
  const Problem p = Problem::spmm(32, 77, 5, DType::F16, Layout::ColMajor, Layout::ColMajor);
  SlideLtSchedule s;
  s.pattern = 3;
  const IrFamily& fam = *find_ir_family("slide_lt");
  const auto packed = fam.pack(a, p, Schedule(s));
  EXPECT_EQ(packed->master_values().size(), 32u * 128u);  // 13 groups x 8 = 104 -> 4 chunks
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::vector<float> b(77 * 5), c(32 * 5, 0.25f), want = c;
  for (float& x : b) x = round_to(DType::F16, u(rng) + 0.01f);
  CsrMatrix ah = a;
  for (float& v : ah.values) v = round_to(DType::F16, v);
  fam.interpret(p, Schedule(s), *packed, b, c, 1.25f, -0.5f);
  reference_spmm(p, ah, b, want, 1.25f, -0.5f);
  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_NEAR(c[i], want[i], std::ldexp(1.0f, -10) * (1 + std::fabs(want[i])));
}

}  // namespace
}  // namespace sparsegen
