// The cusparse family (ir/cusparse_schedule.h, codegen/cusparse.h): its SPEC, which problems it
// takes, the library SpMM its signature describes, and the CSR buffers its build lays out
// (offline; the GPU runs are in tests/gpu/gpu_cusparse_test.cpp).
#include <gtest/gtest.h>

#include "codegen/cusparse.h"
#include "compiler/family.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/cusparse_schedule.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/codegen/codegen_test_matrices.h"

namespace sparsegen {
namespace {

using testing::small_3x5;

TEST(CusparseFamily, SpecPrintsParsesAndNamesBadFields) {
  const Schedule s = parse_schedule("cusparse;alg=alg2");
  EXPECT_EQ(to_string(s), "cusparse;alg=alg2");
  EXPECT_EQ(to_string(parse_schedule("cusparse")), "cusparse;alg=default");
  EXPECT_TRUE(s.family().library());
  EXPECT_FALSE(s.family().dense_baseline());
  EXPECT_EQ(print_schedule(s),
            "schedule cusparse\n"
            "  spmm   : C = alpha · A · B + beta · C by the sparse library (cuSPARSE), A in CSR,\n"
            "           fp32 compute\n"
            "  alg    : alg2\n");
  try {
    (void)parse_schedule("cusparse;alg=alg4");
    FAIL() << "accepted alg=alg4";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("default, alg1, alg2 or alg3"), std::string::npos)
        << e.what();
  }
}

TEST(CusparseFamily, TakesFp32WithBAndCInOneOrder) {
  const CsrMatrix a = small_3x5();
  EnumerateOptions o;
  o.include_specialised = true;
  const IrFamily& f = *find_ir_family("cusparse");
  EXPECT_EQ(f.enumerate(Problem::spmm(3, 5, 8, DType::F32), a, o).size(), 4u);
  EXPECT_EQ(
      f.enumerate(Problem::spmm(3, 5, 8, DType::F32, Layout::ColMajor, Layout::ColMajor), a, o)
          .size(),
      4u);
  EXPECT_EQ(f.enumerate(Problem::spmv(3, 5, DType::F32), a, o).size(), 4u);
  // 16-bit values: refused, saying why (the library's 16-bit SpMM misses the error bound).
  for (DType dt : {DType::F16, DType::BF16}) {
    const auto why = f.why_not(Problem::spmm(3, 5, 8, dt), a);
    ASSERT_FALSE(why.empty());
    EXPECT_NE(why.front().find("error bound"), std::string::npos) << why.front();
  }
  const auto mixed =
      f.why_not(Problem::spmm(3, 5, 8, DType::F32, Layout::ColMajor, Layout::RowMajor), a);
  ASSERT_FALSE(mixed.empty());
  EXPECT_NE(mixed.front().find("one order"), std::string::npos) << mixed.front();
  EXPECT_FALSE(f.why_not(Problem::quantized_spmm(3, 5, 8, DType::I8, DType::F16), a).empty());
  CsrMatrix empty = small_3x5();
  empty.row_ptr = {0, 0, 0, 0};
  empty.col_idx.clear();
  empty.values.clear();
  EXPECT_TRUE(f.enumerate(Problem::spmm(3, 5, 8, DType::F32), empty, o).empty());
}

// The signature: no kernel of ours (empty grid), the CSR arrays as the placeholder's parameters
// (the row offsets a table holding A's row_ptr) and one library SpMM naming them.
TEST(CusparseFamily, SignatureIsOneLibrarySpmmOverTheCsrBuffers) {
  const CsrMatrix a = small_3x5();
  const Problem p = Problem::spmm(3, 5, 8, DType::F32, Layout::ColMajor, Layout::ColMajor);
  const KernelBuild b = build_kernel(a, p, parse_schedule("cusparse;alg=alg1"),
                                     offline_target("sm_90"), BuildOptions{});
  const codegen::KernelSignature& sig = b.kernel.signature;
  EXPECT_TRUE(sig.empty_grid());
  ASSERT_EQ(sig.params.size(), 3u);
  EXPECT_EQ(sig.params[0].kind, codegen::ParamKind::Values);
  EXPECT_EQ(sig.params[1].kind, codegen::ParamKind::ColIdx);
  EXPECT_EQ(sig.params[2].kind, codegen::ParamKind::I32Table);
  EXPECT_EQ(sig.params[2].data, (std::vector<int64_t>{0, 1, 2, 4}));
  ASSERT_EQ(sig.spmms.size(), 1u);
  const codegen::LibrarySpmm& m = sig.spmms[0];
  EXPECT_EQ(m.algorithm, "alg1");
  EXPECT_EQ(m.m, 3);
  EXPECT_EQ(m.k, 5);
  EXPECT_EQ(m.n, 8);
  EXPECT_EQ(m.nnz, 4);
  EXPECT_FALSE(m.row_major);
  EXPECT_EQ(m.row_offsets_param, 2u);
  EXPECT_NE(describe(sig).find("library spmm 3x8x5 nnz 4 alg alg1 (column-major B and C)"),
            std::string::npos)
      << describe(sig);
  // The kernel's buffers are A's CSR arrays: fp32 values, the column indices as they are.
  EXPECT_EQ(b.values.size(), 4u * 4u);
  EXPECT_EQ(b.col_idx, a.col_idx);
  EXPECT_FALSE(b.compiled.image.empty());
  EXPECT_NE(b.kernel.source.find("const int* row_offsets"), std::string::npos) << b.kernel.source;
}

TEST(CusparseFamily, PlaceholderCompiles) {
  const CsrMatrix a = small_3x5();
  const codegen::GeneratedKernel k = codegen::emit_cusparse(Problem::spmm(3, 5, 4, DType::F32),
                                                            parse_schedule("cusparse;alg=alg3"), a);
  nvrtc::CompileOptions o;
  o.arch = "sm_90";
  o.headers = k.headers;
  EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty());
}

}  // namespace
}  // namespace sparsegen
