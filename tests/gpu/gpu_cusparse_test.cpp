// cusparse family on the device (skipped without a GPU): the library's CSR SpMM for every
// algorithm and order (fp32: its 16-bit SpMM is not offered, as it misses the bound) against the
// reference of compiler/gpu_check.h (tight bound, C poisoned with beta 0, then beta -1.5), and the
// tuner measuring the algorithms next to the generated kernels and naming the library in its
// reason.
#include <gtest/gtest.h>

#include <string>

#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "compiler/tune.h"
#include "ir/gen/pruning.h"
#include "ir/gen/rmat.h"
#include "runtime/cusparse.h"
#include "tests/gpu/gpu_fixture.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

// Run-time loading (no GPU needed): a missing $SPARSEGEN_CUSPARSE is unavailable, with the path
// and the variable in the reason, and nothing is planned; the default search answers after it.
TEST(CusparseLoad, MissingEnvPathIsUnavailableWithReasonThenTheDefaultSearchAgain) {
  const char* missing = "/nonexistent/sparsegen-test/libcusparse.so.12";
  {
    testing::ScopedEnv env("SPARSEGEN_CUSPARSE", missing);
    std::string why;
    EXPECT_FALSE(cusparse::available(&why));
    EXPECT_NE(why.find(missing), std::string::npos) << why;
    EXPECT_NE(why.find("from $SPARSEGEN_CUSPARSE"), std::string::npos) << why;
    EXPECT_THROW(cusparse::version(), cusparse::CusparseError);
    cusparse::SpmmShape sh;
    sh.m = sh.k = sh.n = sh.nnz = 1;
    EXPECT_THROW(cusparse::Spmm(sh, 0, 0, 0), cusparse::CusparseError);
  }
  std::string why;
  if (cusparse::available(&why))
    EXPECT_NE(cusparse::version().find("libcusparse"), std::string::npos);
  else
    EXPECT_NE(why.find("default search"), std::string::npos) << why;
}

class GpuCusparse : public testing::GpuFixture {
 protected:
  void SetUp() override {
    GpuFixture::SetUp();
    if (IsSkipped()) return;
    std::string why;
    ASSERT_TRUE(cusparse::available(&why)) << why;  // the toolkit's library is on the GPU host
  }
};

// Every algorithm x order x N on a power-law matrix with empty and long rows. An
// algorithm the library refuses for a combination says so at load (CusparseError); every result
// it returns must be within the bound, and each algorithm must run somewhere.
TEST_F(GpuCusparse, EveryAlgorithmAndOrderAgainstTheReference) {
  RmatSpec spec;
  spec.scale = 10;
  spec.edge_factor = 8;
  spec.seed = 3;
  const CsrMatrix a = make_rmat(spec);
  uint64_t seed = 1;
  for (const char* alg : {"default", "alg1", "alg2", "alg3"}) {
    int ran = 0;
    std::string refusals;
    for (Layout l : {Layout::RowMajor, Layout::ColMajor})
      for (int64_t n : {1, 8, 64, 77}) {
        const Problem p = Problem::spmm(a.rows, a.cols, n, DType::F32, l, l);
        SCOPED_TRACE(to_string(p) + " alg " + alg);
        std::unique_ptr<CompiledKernel> k;
        try {
          k = std::make_unique<CompiledKernel>(
              ctx_,
              build_kernel(a, p, parse_schedule(std::string("cusparse;alg=") + alg), target_));
        } catch (const cusparse::CusparseError& e) {
          refusals += std::string("\n  ") + to_string(p) + ": " + e.what();
          continue;
        }
        const GpuCheckPair r = gpu_check(*k, a, ++seed);
        EXPECT_TRUE(r.passed()) << r.error();
        ++ran;
      }
    EXPECT_GT(ran, 0) << alg << " refused everywhere:" << refusals;
    std::printf("cusparse %s: %d of 8 combinations ran%s\n", alg, ran, refusals.c_str());
  }
}

// The tuner times the library's algorithms after the ranked candidates and names the fastest
// library in the reason, whichever side won.
TEST_F(GpuCusparse, TunerMeasuresTheLibraryAlgorithms) {
  RmatSpec spec;
  spec.scale = 14;
  spec.seed = 5;
  const CsrMatrix a = make_rmat(spec);
  TuneOptions o;
  o.top_k = 4;
  o.use_cache = false;
  o.ctx = ctx_;
  KernelRequest req;
  req.dtype = DType::F32;
  req.n = 64;
  const TuneResult r = tune(a, req, target_, o);
  int measured = 0;
  for (const CandidateReport& c : r.candidates)
    if (c.schedule.rfind("cusparse;", 0) == 0 && c.measured_ms) ++measured;
  EXPECT_GE(measured, 1) << r.reason;
  const bool lib_won = r.schedule.rfind("cusparse;", 0) == 0;
  EXPECT_NE(
      r.reason.find(lib_won ? "the library was fastest (cusparse;" : "faster than the library"),
      std::string::npos)
      << r.schedule << ": " << r.reason;
}

}  // namespace
}  // namespace sparsegen
