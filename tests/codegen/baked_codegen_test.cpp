// The baked family (ir/baked_schedule.h, codegen/baked.h): its SPEC, the small problems it takes,
// and the kernel it emits with A in its instructions (offline; on the GPU it runs in the family
// conformance suite and the small-matrix benchmark).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <bit>

#include "codegen/baked.h"
#include "compiler/family.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/baked_schedule.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/codegen/codegen_test_matrices.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

using testing::csr_with_lengths;
using testing::small_3x5;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

std::vector<Schedule> enumerate_baked(const Problem& p, const CsrMatrix& a) {
  EnumerateOptions o;
  o.include_specialised = true;
  return find_ir_family("baked")->enumerate(p, a, o);
}

TEST(BakedFamily, SpecPrintsParsesAndNamesBadFields) {
  const Schedule s = parse_schedule("baked;warps=2");
  EXPECT_EQ(to_string(s), "baked;warps=2");
  EXPECT_EQ(to_string(parse_schedule("baked")), "baked;warps=4");
  EXPECT_FALSE(s.family().library());
  EXPECT_FALSE(s.family().general_purpose());
  EXPECT_EQ(print_schedule(s),
            "schedule baked\n"
            "  A      : in the kernel's instructions (values and column offsets as immediates)\n"
            "  block  : rows:2\n"
            "  warp   : row (lanes across the dense columns, 32 at a time)\n"
            "  reduce : none (a lane sums its row's products in column order)\n");
  EXPECT_TRUE(
      has(testing::error_of([] { (void)parse_schedule("baked;warps=3"); }), "power of two"));
  EXPECT_TRUE(has(testing::error_of([] { (void)parse_schedule("baked;rows=3"); }), "rows"));
}

TEST(BakedFamily, TakesSmallMatricesAndSaysWhyNotOtherwise) {
  const CsrMatrix a = small_3x5();
  // warps 1, 2, 4 (a block of 8 warps would leave five idle for three rows).
  EXPECT_EQ(enumerate_baked(Problem::spmm(3, 5, 8, DType::F32), a).size(), 3u);
  EXPECT_EQ(enumerate_baked(Problem::spmv(3, 5, DType::BF16), a).size(), 3u);
  EXPECT_EQ(
      enumerate_baked(Problem::spmm(3, 5, 40, DType::F16, Layout::ColMajor, Layout::ColMajor), a)
          .size(),
      3u);
  const IrFamily& f = *find_ir_family("baked");
  auto why = [&](const Problem& p, const CsrMatrix& m) {
    const auto w = f.why_not(p, m);
    return w.empty() ? std::string() : w.front();
  };
  EXPECT_TRUE(has(why(Problem::spmm(3, 5, 129, DType::F32), a), "N <= 128"));
  EXPECT_TRUE(
      has(why(Problem::quantized_spmm(3, 5, 8, DType::I8, DType::F16), a), "fp32, fp16 or bf16"));
  const CsrMatrix tall = csr_with_lengths(std::vector<int64_t>(129, 1), 8, 5);
  EXPECT_TRUE(has(why(Problem::spmm(129, 8, 8, DType::F32), tall), "at most 128 rows"));
  // 600 nonzeros: one 32-column pass fits, two (N = 64) exceed the 1024 products.
  const CsrMatrix wide = csr_with_lengths(std::vector<int64_t>(20, 30), 64, 6);
  EXPECT_TRUE(why(Problem::spmm(20, 64, 32, DType::F32), wide).empty());
  EXPECT_TRUE(has(why(Problem::spmm(20, 64, 64, DType::F32), wide), "600 x 2"));
  EXPECT_TRUE(enumerate_baked(Problem::spmm(20, 64, 64, DType::F32), wide).empty());
}

TEST(BakedFamily, EmitsTheValuesAndOffsetsAsImmediates) {
  const CsrMatrix a = small_3x5();  // rows {1: 0.5}, {4: -1.25}, {0: 2.0, 3: 0.75}
  const auto k =
      codegen::emit_baked(Problem::spmm(3, 5, 8, DType::F32), parse_schedule("baked;warps=1"), a);
  const std::string& src = k.source;
  EXPECT_TRUE(has(src, "const int row = blockIdx.x * 1 + threadIdx.x / 32;")) << src;
  EXPECT_TRUE(has(src, "if (row >= 3 || lane >= 8) return;")) << src;
  // Row 0: 0.5 (0x3f000000) times B[1][lane] at offset 1 * 8.
  EXPECT_TRUE(
      has(src, "acc0 = fmaf(__uint_as_float(0x3f000000u), sg::load_f32<T>(B + (8 + b0)), acc0);"))
      << src;
  EXPECT_TRUE(has(src, "else if (row == 2) {")) << src;
  EXPECT_TRUE(has(src, "sg::load_f32<T>(B + (24 + b0))")) << src;  // 0.75 at column 3
  EXPECT_TRUE(has(src, "sg::store_axpby<T>(C + (row * 8 + lane), acc0, alpha, beta);")) << src;
  // Nothing of A is a parameter.
  ASSERT_EQ(k.signature.params.size(), 4u);
  EXPECT_EQ(k.signature.params[0].kind, codegen::ParamKind::B);
  EXPECT_EQ(k.signature.params[1].kind, codegen::ParamKind::C);
  EXPECT_EQ(k.signature.launch.grid_x, 3);
  EXPECT_EQ(k.signature.launch.block_threads, 32);
  EXPECT_FALSE(k.signature.prologue.present());
  EXPECT_FALSE(has(src, "values"));

  // An empty row has no branch; it stores beta·C from acc = 0.
  CsrMatrix gap = a;
  gap.row_ptr = {0, 1, 1, 3};
  gap.col_idx = {1, 0, 3};
  gap.values = {0.5f, 2.0f, 0.75f};
  const auto g =
      codegen::emit_baked(Problem::spmm(3, 5, 8, DType::F32), parse_schedule("baked;warps=4"), gap);
  EXPECT_FALSE(has(g.source, "row == 1")) << g.source;
  EXPECT_TRUE(has(g.source, "else if (row == 2)")) << g.source;
}

TEST(BakedFamily, RoundsToTheDtypeAndWalksEveryLayout) {
  CsrMatrix a = small_3x5();
  a.values[0] = 0.1f;  // fp16 0.0999755859375
  const auto k =
      codegen::emit_baked(Problem::spmm(3, 5, 40, DType::F16, Layout::ColMajor, Layout::ColMajor),
                          parse_schedule("baked;warps=4"), a);
  const std::string& src = k.source;
  const uint32_t bits = std::bit_cast<uint32_t>(half_bits_to_float(float_to_half_bits(0.1f)));
  EXPECT_TRUE(has(src, fmt::format("__uint_as_float(0x{:08x}u)", bits))) << src;
  EXPECT_TRUE(has(src, "using T = __half;")) << src;
  // Column-major B: a lane's column starts at column * K; the second pass is clamped to N - 1.
  EXPECT_TRUE(has(src, "const int b0 = (lane) * 5;")) << src;
  EXPECT_TRUE(has(src, "const int b1 = (min(lane + 32, 39)) * 5;")) << src;
  EXPECT_TRUE(has(src, "sg::load_f32<T>(B + (1 + b1))")) << src;
  // Column-major C, and no store past N.
  EXPECT_TRUE(has(src, "if (row >= 3) return;")) << src;
  EXPECT_TRUE(has(src, "if (lane + 32 < 40) sg::store_axpby<T>(C + ((lane + 32) * 3 + row), acc1"))
      << src;
  for (const auto* kk : {&k}) {
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = kk->headers;
    EXPECT_FALSE(nvrtc::compile(kk->source, o).image.empty());
  }
}

TEST(BakedFamily, RefusesValuesTheDtypeCannotHold) {
  CsrMatrix a = small_3x5();
  a.values[2] = 1.0e6f;
  const std::string err = testing::error_of([&] {
    (void)codegen::emit_baked(Problem::spmm(3, 5, 8, DType::F16), parse_schedule("baked"), a);
  });
  EXPECT_TRUE(has(err, "small: 1 value(s) outside the fp16 range")) << err;
}

TEST(BakedFamily, BuildsThroughTheDefaultSteps) {
  const CsrMatrix a = small_3x5();
  const Problem p = Problem::spmm(3, 5, 8, DType::F32);
  const KernelBuild b =
      build_kernel(a, p, parse_schedule("baked;warps=2"), offline_target("sm_90"), BuildOptions{});
  EXPECT_FALSE(b.compiled.image.empty());
  EXPECT_EQ(b.kernel.signature.launch.grid_x, 2);
}

}  // namespace
}  // namespace sparsegen
