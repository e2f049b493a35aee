// dense family on the device (skipped without a GPU): the library GEMM of every layout pair and
// 16-bit type, and the int8 and fp8 steps, against the reference of compiler/gpu_check.h (tight
// bound, C poisoned with beta 0, then beta -1.5 and beta 1), and the tuner measuring it next to the
// generated kernels: returned where it is the fastest, named in the reason either way.
#include <gtest/gtest.h>

#include <string>

#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/gen/pruning.h"
#include "runtime/cuda_driver.h"
#include "tests/gpu/gpu_fixture.h"

namespace sparsegen {
namespace {

class GpuDense : public testing::GpuFixture {
 protected:
  static CsrMatrix weight(int64_t m, int64_t k, double sparsity, uint64_t seed) {
    PruneSpec spec;
    spec.method = PruneMethod::Magnitude;
    spec.sparsity = sparsity;
    return prune(make_llm_weight(m, k, seed), spec);
  }
  // The kernel of (a, p, s) against the reference with C poisoned (beta 0), then with beta = 1
  // (C holding a bias): cuBLASLt rounds alpha·A·B to a 16-bit C before it adds C there (up to 8x
  // the bound with bf16), so the fp32 workspace path must keep one rounding. Two seeds from seed.
  void check_beta_zero_and_one(const CsrMatrix& a, const Problem& p, const Schedule& s,
                               uint64_t& seed) {
    const CompiledKernel k(ctx_, build_kernel(a, p, s, target_));
    const GpuCheckPair r = gpu_check(k, a, ++seed);
    EXPECT_TRUE(r.passed()) << r.error();
    const CheckInputs in = make_check_inputs(p, ++seed, 1.0f, 1.0f);
    const CheckResult r1 = gpu_check(k, a, in, compute_reference(a, in));
    EXPECT_TRUE(r1.passed) << "beta = 1: " << r1.error << " (max ratio " << r1.max_ratio << ")";
  }
};

TEST_F(GpuDense, EveryLayoutPairAndTypeAgainstTheReference) {
  const CsrMatrix a = weight(300, 515, 0.5, 3);  // K odd: no 16-byte rows
  const Schedule s = parse_schedule("dense;lib=cublaslt");
  uint64_t seed = 1;
  for (DType dt : {DType::F16, DType::BF16})
    for (auto [bl, cl] : {std::pair{Layout::RowMajor, Layout::RowMajor},
                          std::pair{Layout::ColMajor, Layout::RowMajor},
                          std::pair{Layout::ColMajor, Layout::ColMajor}})
      for (int64_t n : {1, 8, 77}) {
        const Problem p = Problem::spmm(a.rows, a.cols, n, dt, bl, cl);
        SCOPED_TRACE(to_string(p));
        check_beta_zero_and_one(a, p, s, seed);
      }
}

// int8 and fp8 e4m3 (quantized per row and per token, the library's 8-bit GEMM into int32 or
// fp32, one scaling) against the reference over the quantized inputs: B of both layouts, fp16 and
// bf16 outputs, K not a multiple of 64 (the quantized copies' padding), N from decode to wide,
// beta 0 and 1.
TEST_F(GpuDense, EightBitAgainstTheQuantizedReference) {
  const CsrMatrix a = weight(300, 515, 0.5, 7);
  const Schedule s = parse_schedule("dense;lib=cublaslt");
  uint64_t seed = 40;
  for (DType t : {DType::I8, DType::F8E4M3})
    for (DType out : {DType::F16, DType::BF16})
      for (Layout bl : {Layout::RowMajor, Layout::ColMajor})
        for (int64_t n : {1, 8, 64, 77}) {
          const Problem p =
              Problem::quantized_spmm(a.rows, a.cols, n, t, out, bl, Layout::ColMajor);
          SCOPED_TRACE(to_string(p));
          check_beta_zero_and_one(a, p, s, seed);
        }
}

// A nearly dense weight at a wide N: the library wins and the reason says so; a very sparse one
// at decode N: a generated kernel wins, and the reason still gives the library's time.
TEST_F(GpuDense, TunerMeasuresTheLibraryAndSaysWhatItFound) {
  TuneOptions o;
  o.top_k = 4;
  o.use_cache = false;
  o.ctx = ctx_;
  KernelRequest req;
  req.dtype = DType::F16;
  req.n = 512;
  const TuneResult dense_wins = tune(weight(2048, 2048, 0.1, 5), req, target_, o);
  EXPECT_EQ(dense_wins.schedule, "dense;lib=cublaslt") << dense_wins.reason;
  EXPECT_NE(dense_wins.reason.find("the library was fastest"), std::string::npos)
      << dense_wins.reason;
  req.n = 1;
  const TuneResult sparse_wins = tune(weight(4096, 4096, 0.9, 6), req, target_, o);
  EXPECT_EQ(sparse_wins.schedule.rfind("dense;", 0), std::string::npos) << sparse_wins.reason;
  EXPECT_NE(sparse_wins.reason.find("faster than the library"), std::string::npos)
      << sparse_wins.reason;
  // fp8 e4m3 (6:8 weight): the dense fp8 GEMM is measured too, and the reason gives its time.
  // With C row-major no library runs it, and the reason says the pick was not compared with one.
  PruneSpec nm;
  nm.method = PruneMethod::NM;
  nm.n = 6;
  nm.m = 8;
  const CsrMatrix w68 = prune(make_llm_weight(256, 512, 7), nm);
  KernelRequest q;
  q.dtype = DType::F8E4M3;
  q.n = 8;
  q.b_layout = q.c_layout = Layout::ColMajor;
  const TuneResult fp8 = tune(w68, q, target_, o);
  EXPECT_TRUE(fp8.reason.find("faster than the library") != std::string::npos ||
              fp8.reason.find("the library was fastest") != std::string::npos)
      << fp8.reason;
  q.c_layout = Layout::RowMajor;
  const TuneResult fp8_row = tune(w68, q, target_, o);
  EXPECT_NE(fp8_row.reason.find("not compared with a library ("), std::string::npos)
      << fp8_row.reason;
  EXPECT_NE(fp8_row.reason.find("dense: "), std::string::npos) << fp8_row.reason;
}

}  // namespace
}  // namespace sparsegen
