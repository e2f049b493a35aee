// The dense family (ir/dense_schedule.h, codegen/dense.h): its SPEC, which problems it takes, the
// library GEMM its signature describes for each layout pair, and the dense values its build lays
// out (offline; the GPU runs are in tests/gpu/gpu_dense_test.cpp).
#include <gtest/gtest.h>

#include <cstring>

#include "codegen/dense.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/dense_schedule.h"
#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "tests/codegen/codegen_test_matrices.h"

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
