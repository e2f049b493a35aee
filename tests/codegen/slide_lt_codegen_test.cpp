// slide_lt emitter: the lift for the library (B' plain), the scale kernel of int8, the
// library step in the signature, and NVRTC cubins for every value type on sm_90; no GPU needed.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/slide_lt.h"
#include "ir/slide_lt_schedule.h"
#include "runtime/nvrtc_compiler.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen::codegen {
namespace {

TEST(SlideLtCodegen, SixteenBitIsTheLiftAndTheLibraryStep) {
  const CsrMatrix a = testing::slide_weight(64, 100, 4, 9);
  const Problem p = Problem::spmm(64, 100, 24, DType::F16, Layout::RowMajor, Layout::ColMajor);
  SlideLtSchedule s;  // pattern 6:8, alg=search
  const GeneratedKernel k =
      emit_slide_lt(p, Schedule(s), pack_slide_tc(a, 4, DType::F16, SlideForm::Library));
  // Row-major B: 8 tokens per block; PLAIN = 1 (lifted K x N column-major).
  EXPECT_NE(k.source.find("sg::slide_lift<T, 0, 4, 128, 0, 8, 0, 1>(B, bw, "), std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("lifted K x N column-major"), std::string::npos);
  EXPECT_EQ(k.source.find("slide_lt_scale"), std::string::npos);
  const KernelSignature& sig = k.signature;
  EXPECT_TRUE(sig.empty_grid());
  ASSERT_EQ(sig.sparse_gemms.size(), 1u);
  const LibrarySparseGemm& g = sig.sparse_gemms[0];
  // 100 columns = 13 groups of 8 -> 13 x 12 = 156 lifted, padded to 5 chunks of 32.
  EXPECT_EQ(g.k, 160);
  EXPECT_EQ(g.m, 64);
  EXPECT_EQ(g.n, 24);
  EXPECT_TRUE(g.choice.empty());  // searched at load
  EXPECT_FALSE(g.to_workspace);
  EXPECT_EQ(sig.b_work_bytes, 160 * 24 * 2);
  EXPECT_EQ(sig.workspace_bytes, 0);
  EXPECT_EQ(sig.b_transform.launch.grid_x, 3);  // 24 tokens / 8
  EXPECT_NE(describe(sig).find("library 2:4 gemm 64x24x160 (algorithm searched at load) into C"),
            std::string::npos)
      << describe(sig);
  // A concrete choice travels in the library's words.
  SlideLtSchedule c = s;
  c.alg = 7;
  c.split_k = 2;
  c.split_k_mode = 1;
  const GeneratedKernel kc =
      emit_slide_lt(p, Schedule(c), pack_slide_tc(a, 4, DType::F16, SlideForm::Library));
  EXPECT_EQ(kc.signature.sparse_gemms[0].choice, "alg=7,split_k=2,mode=1,buffers=1");
  // The source does not name the algorithm: a searched kernel and its choice share one image.
  EXPECT_EQ(kc.source, k.source);
}

TEST(SlideLtCodegen, EightBitTypesScaleTheRawAccumulators) {
  const CsrMatrix a = testing::slide_weight(64, 96, 4, 5);
  for (DType dt : {DType::I8}) {
    const Problem p =
        Problem::quantized_spmm(64, 96, 8, dt, DType::BF16, Layout::ColMajor, Layout::ColMajor);
    const GeneratedKernel k =
        emit_slide_lt(p, Schedule(SlideLtSchedule{}), pack_slide_tc(a, 4, dt, SlideForm::Library));
    const char* acc = dt == DType::I8 ? "int" : "float";
    EXPECT_NE(k.source.find(fmt::format("sg::slide_lt_scale<T, {}>(acc, row_scales, "
                                        "token_scales, C, alpha, beta, 64, 8)",
                                        acc)),
              std::string::npos)
        << k.source;
    EXPECT_NE(k.source.find("using T = __nv_bfloat16;"), std::string::npos);
    // Column-major B with K % 8 == 0: 16-byte copies, one token per block.
    EXPECT_NE(k.source.find(fmt::format("sg::slide_lift<T, {}, 4, 128, 1, 1, 1, 1>(B, bw, "
                                        "token_scales,",
                                        dt == DType::I8 ? 2 : 3)),
              std::string::npos)
        << k.source;
    const KernelSignature& sig = k.signature;
    EXPECT_FALSE(sig.empty_grid());
    EXPECT_EQ(sig.launch.grid_x, 2);  // 512 elements / 256 threads
    EXPECT_EQ(sig.workspace_bytes, 64 * 8 * 4);
    EXPECT_EQ(sig.token_scales, 8);
    EXPECT_EQ(sig.b_alignment, 16);
    ASSERT_EQ(sig.sparse_gemms.size(), 1u);
    EXPECT_TRUE(sig.sparse_gemms[0].to_workspace);
    EXPECT_EQ(sig.sparse_gemms[0].k, 192);  // 12 groups x 12 = 144 lifted, 3 chunks of 64
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = k.headers;
    EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty()) << to_string(dt);
  }
}

TEST(SlideLtCodegen, CompilesForSixteenBitTypes) {
  const CsrMatrix a = testing::slide_weight(32, 130, 3, 2);
  for (DType dt : {DType::F16, DType::BF16}) {
    const Problem p = Problem::spmm(32, 130, 5, dt, Layout::ColMajor, Layout::ColMajor);
    SlideLtSchedule s;
    s.pattern = 3;
    const GeneratedKernel k =
        emit_slide_lt(p, Schedule(s), pack_slide_tc(a, 3, dt, SlideForm::Library));
    nvrtc::CompileOptions o;
    o.arch = "sm_90";
    o.headers = k.headers;
    EXPECT_FALSE(nvrtc::compile(k.source, o).image.empty()) << to_string(dt);
  }
}

}  // namespace
}  // namespace sparsegen::codegen
