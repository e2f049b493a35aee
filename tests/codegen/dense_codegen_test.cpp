// The dense family (ir/dense_schedule.h, codegen/dense.h): its SPEC, which problems it takes, the
// library GEMM its signature describes for each layout pair, and the dense values its build lays
// out (offline; the GPU runs are in tests/gpu/gpu_dense_test.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "codegen/dense.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/dense_schedule.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/quantize.h"
#include "tests/codegen/codegen_test_matrices.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen {
namespace {

using testing::small_3x5;

TEST(DenseFamily, SpecParsesAndNamesBadFields) {
  const Schedule s = parse_schedule("dense;lib=cublaslt");
  EXPECT_EQ(to_string(s), "dense;lib=cublaslt");
  EXPECT_EQ(to_string(parse_schedule("dense")), "dense;lib=cublaslt");
  EXPECT_TRUE(s.family().dense_baseline());
  try {
    (void)parse_schedule("dense;lib=cusparse");
    FAIL() << "accepted lib=cusparse";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cusparse"), std::string::npos) << e.what();
  }
}

TEST(DenseFamily, TakesSixteenBitSpmmInThreeLayoutPairs) {
  const CsrMatrix a = small_3x5();
  EnumerateOptions o;
  o.include_specialised = true;
  const IrFamily& f = *find_ir_family("dense");
  for (DType dt : {DType::F16, DType::BF16}) {
    EXPECT_EQ(f.enumerate(Problem::spmm(3, 5, 8, dt), a, o).size(), 1u);
    EXPECT_EQ(f.enumerate(Problem::spmm(3, 5, 8, dt, Layout::ColMajor), a, o).size(), 1u);
    EXPECT_EQ(
        f.enumerate(Problem::spmm(3, 5, 8, dt, Layout::ColMajor, Layout::ColMajor), a, o).size(),
        1u);
    EXPECT_EQ(f.enumerate(Problem::spmv(3, 5, dt), a, o).size(), 1u);
  }
  const auto row_col =
      f.why_not(Problem::spmm(3, 5, 8, DType::F16, Layout::RowMajor, Layout::ColMajor), a);
  ASSERT_FALSE(row_col.empty());
  EXPECT_NE(row_col.front().find("column-major"), std::string::npos) << row_col.front();
  EXPECT_FALSE(f.why_not(Problem::spmm(3, 5, 8, DType::F32), a).empty());
  // A graph-scale matrix is never copied densely (2^20 x 2^20 would be 2 TiB).
  const auto big = verify_dense(Problem::spmm(int64_t{1} << 20, int64_t{1} << 20, 8, DType::F16),
                                DeviceLimits::sm90());
  ASSERT_FALSE(big.empty());
  EXPECT_NE(big.front().find("GiB"), std::string::npos) << big.front();
  EXPECT_TRUE(
      verify_dense(Problem::spmm(28672, 7168, 8, DType::F16), DeviceLimits::sm90()).empty());
  EXPECT_FALSE(f.why_not(Problem::quantized_spmm(3, 5, 8, DType::I8, DType::F16), a).empty());
}

// cuBLASLt rounds alpha·A·B to a 16-bit C before adding beta·C; with beta != 0 the run goes
// through the fp32 workspace instead (ws = beta·C, the GEMM adds into ws, C = round(ws)).
TEST(DenseFamily, BetaGoesThroughTheFp32Workspace) {
  const auto k = codegen::emit_dense(Problem::spmm(3, 5, 8, DType::BF16),
                                     parse_schedule("dense;lib=cublaslt"));
  const codegen::KernelSignature& sig = k.signature;
  EXPECT_TRUE(sig.gemms_after.at(0).beta_in_workspace);
  EXPECT_EQ(sig.workspace_bytes, 3 * 8 * 4);
  ASSERT_TRUE(sig.prologue.present() && sig.epilogue.present());
  EXPECT_TRUE(sig.prologue.beta_only && sig.epilogue.beta_only);
  EXPECT_EQ(sig.prologue.launch.grid_x * sig.prologue.launch.block_threads, 256);
  EXPECT_NE(k.source.find("using T = __nv_bfloat16;"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("sparsegen_dense_init_ws(float* ws, const T* C, float beta)"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("i < 24LL; i += stride) sg::init_workspace<T>(ws + i, C + i, beta);"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("i < 24LL; i += stride) sg::store_f32<T>(C + i, ws[i]);"),
            std::string::npos)
      << k.source;
  const std::string d = codegen::describe(sig);
  EXPECT_NE(d.find("(beta != 0 only)"), std::string::npos) << d;
  EXPECT_NE(d.find("(beta != 0: into the fp32 workspace)"), std::string::npos) << d;
}

TEST(DenseFamily, SignatureIsOneLibraryGemmPerLayout) {
  const Schedule s = parse_schedule("dense;lib=cublaslt");
  {  // C row-major, B row-major: C (M x N) = A (M x K) · B (K x N)
    const auto k = codegen::emit_dense(Problem::spmm(3, 5, 8, DType::F16), s);
    EXPECT_TRUE(k.signature.empty_grid());
    ASSERT_EQ(k.signature.gemms_after.size(), 1u);
    const codegen::LibraryGemm& g = k.signature.gemms_after[0];
    EXPECT_EQ((std::vector<int64_t>{g.m, g.n, g.k}), (std::vector<int64_t>{3, 8, 5}));
    EXPECT_EQ(g.a.buffer, codegen::ParamKind::Values);
    EXPECT_EQ(g.a.ld, 5);
    EXPECT_EQ(g.b.buffer, codegen::ParamKind::B);
    EXPECT_FALSE(g.b_transposed);
    EXPECT_EQ(g.b.ld, 8);
    EXPECT_EQ(g.c.buffer, codegen::ParamKind::C);
    EXPECT_EQ(g.c.ld, 8);
    EXPECT_TRUE(g.run_alpha_beta);
    EXPECT_NE(k.source.find("__global__ void sparsegen_dense()"), std::string::npos) << k.source;
  }
  {  // B column-major (stored N x K): b transposed
    const auto k = codegen::emit_dense(Problem::spmm(3, 5, 8, DType::BF16, Layout::ColMajor), s);
    const codegen::LibraryGemm& g = k.signature.gemms_after.at(0);
    EXPECT_TRUE(g.b_transposed);
    EXPECT_EQ(g.b.ld, 5);
    EXPECT_EQ(g.m, 3);
  }
  {  // C column-major: C^T (N x M) = B^T (N x K) · A^T
    const auto k = codegen::emit_dense(
        Problem::spmm(3, 5, 8, DType::F16, Layout::ColMajor, Layout::ColMajor), s);
    const codegen::LibraryGemm& g = k.signature.gemms_after.at(0);
    EXPECT_EQ((std::vector<int64_t>{g.m, g.n, g.k}), (std::vector<int64_t>{8, 3, 5}));
    EXPECT_EQ(g.a.buffer, codegen::ParamKind::B);
    EXPECT_EQ(g.b.buffer, codegen::ParamKind::Values);
    EXPECT_TRUE(g.b_transposed);
    EXPECT_EQ(g.c.ld, 3);
  }
  EXPECT_THROW(codegen::emit_dense(Problem::spmm(3, 5, 8, DType::F32), s), UserError);
}

TEST(DenseFamily, BuildLaysADenselyAndCompilesOffline) {
  const CsrMatrix a = small_3x5();
  const Problem p = Problem::spmm(3, 5, 4, DType::F16);
  const KernelBuild b =
      build_kernel(a, p, parse_schedule("dense;lib=cublaslt"), offline_target("sm_90"));
  ASSERT_EQ(b.values.size(), 3u * 5u * 2u);
  auto at = [&](int r, int c) {
    uint16_t h;
    std::memcpy(&h, b.values.data() + (r * 5 + c) * 2, 2);
    return half_bits_to_float(h);
  };
  EXPECT_EQ(at(0, 1), 0.5f);
  EXPECT_EQ(at(1, 4), -1.25f);
  EXPECT_EQ(at(2, 0), 2.0f);
  EXPECT_EQ(at(2, 3), 0.75f);
  EXPECT_EQ(at(0, 0), 0.0f);
  EXPECT_EQ(at(1, 3), 0.0f);
  EXPECT_FALSE(b.compiled.image.empty());
}

// int8 and fp8: C column-major and M % 4 == 0 (the library's 8-bit GEMMs), B in either layout;
// fp8 needs sm_89 or newer.
TEST(DenseFamily, TakesEightBitWithCColumnMajorAndMMultipleOfFour) {
  const CsrMatrix a = testing::slide_weight(64, 75, 4, 5);
  EnumerateOptions o;
  o.include_specialised = true;
  const IrFamily& f = *find_ir_family("dense");
  for (DType t : {DType::I8, DType::F8E4M3}) {
    for (Layout bl : {Layout::RowMajor, Layout::ColMajor})
      EXPECT_EQ(f.enumerate(
                     Problem::quantized_spmm(64, 75, 8, t, DType::BF16, bl, Layout::ColMajor), a, o)
                    .size(),
                1u)
          << to_string(t);
    const auto row_c = f.why_not(Problem::quantized_spmm(64, 75, 8, t, DType::F16), a);
    ASSERT_FALSE(row_c.empty());
    EXPECT_NE(row_c.front().find("C column-major"), std::string::npos) << row_c.front();
    const auto odd_m = f.why_not(
        Problem::quantized_spmm(62, 75, 8, t, DType::F16, Layout::ColMajor, Layout::ColMajor), a);
    ASSERT_FALSE(odd_m.empty());
    EXPECT_NE(odd_m.front().find("multiple of 4"), std::string::npos) << odd_m.front();
  }
  const Problem f8 = Problem::quantized_spmm(64, 75, 8, DType::F8E4M3, DType::F16, Layout::ColMajor,
                                             Layout::ColMajor);
  EXPECT_TRUE(verify_dense(f8, DeviceLimits::sm90()).empty());
  const auto old = verify_dense(f8, DeviceLimits::sm80());
  ASSERT_EQ(old.size(), 1u);
  EXPECT_NE(old.front().find("sm_89"), std::string::npos) << old.front();
}

// int8 / fp8: quantize B (the slide lift of 2:4, written K' x N), the library's 8-bit GEMM into
// the workspace (int32 / fp32), the scale kernel; A laid out quantized, M x K' with K' = K rounded
// up to 64.
TEST(DenseFamily, EightBitIsQuantizeLibraryGemmAndScale) {
  const CsrMatrix a = testing::slide_weight(64, 75, 4, 5);
  for (DType t : {DType::I8, DType::F8E4M3}) {
    SCOPED_TRACE(to_string(t));
    const bool i8 = t == DType::I8;
    const Problem p =
        Problem::quantized_spmm(64, 75, 9, t, DType::F16, Layout::ColMajor, Layout::ColMajor);
    EXPECT_EQ(dense_k(p), 128);
    const KernelBuild b =
        build_kernel(a, p, parse_schedule("dense;lib=cublaslt"), offline_target("sm_90"));
    EXPECT_FALSE(b.compiled.image.empty());
    ASSERT_EQ(b.values.size(), 64u * 128u);
    const RowQuantized q = quantize_rows(a, t);
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t i = a.row_ptr[r]; i < a.row_ptr[r + 1]; ++i) {
        const char v = b.values[static_cast<size_t>(r * 128 + a.col_idx[static_cast<size_t>(i)])];
        ASSERT_EQ(i8 ? static_cast<float>(static_cast<int8_t>(v))
                     : e4m3_bits_to_float(static_cast<uint8_t>(v)),
                  q.q[static_cast<size_t>(i)]);
      }
    for (size_t j = 75; j < 128; ++j) EXPECT_EQ(b.values[j], 0);  // row 0's padding
    const codegen::KernelSignature& sig = b.kernel.signature;
    ASSERT_EQ(sig.gemms_before.size(), 1u);
    EXPECT_TRUE(sig.gemms_after.empty());
    const codegen::LibraryGemm& g = sig.gemms_before.front();
    EXPECT_EQ(g.operands, i8 ? codegen::GemmOperands::Int8 : codegen::GemmOperands::Fp8);
    EXPECT_FALSE(g.run_alpha_beta);
    EXPECT_EQ(g.m, 9);
    EXPECT_EQ(g.n, 64);
    EXPECT_EQ(g.k, 128);
    EXPECT_EQ(g.a.buffer, codegen::ParamKind::BWork);
    EXPECT_EQ(g.b.buffer, codegen::ParamKind::Values);
    EXPECT_TRUE(g.b_transposed);
    EXPECT_EQ(g.c.buffer, codegen::ParamKind::Workspace);
    EXPECT_EQ(g.c.ld, 64);
    EXPECT_EQ(sig.workspace_bytes, 64 * 9 * 4);
    EXPECT_EQ(sig.b_work_bytes, 128 * 9);
    EXPECT_EQ(sig.token_scales, 9);
    ASSERT_TRUE(sig.b_transform.present());
    EXPECT_EQ(sig.b_transform.params.back().kind, codegen::ParamKind::TokenScales);
    EXPECT_NE(b.kernel.source.find(i8 ? "sg::slide_lift<T, 2, 2," : "sg::slide_lift<T, 3, 2,"),
              std::string::npos);
    EXPECT_NE(
        b.kernel.source.find(fmt::format(
            "sg::slide_lt_scale<T, {}>(acc, row_scales, token_scales, C", i8 ? "int" : "float")),
        std::string::npos);
  }
}

// The 8-bit steps compute what the slide kernels compute on the same weight (both quantize per
// row and per token, sum and scale once): int8 bit for bit (exact sums), fp8 up to the order of
// its fp32 sums; beta 0 and beta != 0.
TEST(DenseFamily, EightBitInterpretIsTheSlideArithmetic) {
  const CsrMatrix a = testing::slide_weight(32, 77, 4, 8);
  const IrFamily& dense = *find_ir_family("dense");
  const IrFamily& slide = *find_ir_family("slide");
  const Schedule ds = parse_schedule("dense;lib=cublaslt");
  const Schedule ss =
      parse_schedule("slide;pattern=6:8;split=k;lift=kernel;warps=4;mt=1;nt=1;unroll=1");
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (DType t : {DType::I8, DType::F8E4M3})
    for (Layout bl : {Layout::RowMajor, Layout::ColMajor}) {
      const Problem p = Problem::quantized_spmm(32, 77, 6, t, DType::F16, bl, Layout::ColMajor);
      std::vector<float> b(77 * 6), c0(32 * 6);
      for (float& x : b) x = u(rng) + 0.01f;
      for (float& x : c0) x = u(rng);
      for (float beta : {0.0f, -1.5f}) {
        std::vector<float> cd = c0, cs = c0;
        dense.interpret(p, ds, *dense.pack(a, p, ds), b, cd, 1.25f, beta);
        slide.interpret(p, ss, *slide.pack(a, p, ss), b, cs, 1.25f, beta);
        for (size_t i = 0; i < cd.size(); ++i) {
          if (t == DType::I8)
            ASSERT_EQ(cd[i], cs[i]) << i << " beta " << beta;
          else
            ASSERT_NEAR(cd[i], cs[i], 1e-5f * std::max(1.0f, std::fabs(cs[i])))
                << i << " beta " << beta;
        }
        EXPECT_NE(cd, c0);
      }
    }
}

// A model-only search never returns the library candidate (it is measured, not predicted); it
// counts in the enumeration.
TEST(DenseFamily, ModelOnlyTuneDoesNotPickTheLibrary) {
  CsrMatrix a;
  a.rows = 64;
  a.cols = 64;
  a.row_ptr.assign(1, 0);
  for (int64_t r = 0; r < 64; ++r) {
    for (int64_t c = 0; c < 64; ++c)
      if ((r + c) % 5 != 0) {
        a.col_idx.push_back(static_cast<int32_t>(c));
        a.values.push_back(0.25f + 0.01f * float((r * 64 + c) % 37));
      }
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  KernelRequest req;
  req.n = 64;
  req.dtype = DType::F16;
  TuneOptions o;
  o.top_k = 0;
  o.use_cache = false;
  const TuneResult r = tune(a, req, offline_target("sm_90"), o);
  EXPECT_EQ(r.schedule.rfind("dense;", 0), std::string::npos) << r.schedule;
}

}  // namespace
}  // namespace sparsegen
