// cuSPARSELt (runtime/cusparselt.h) and dense cuBLASLt (benchmarks/lt_dense.h) GEMMs against a
// CPU fp64 reference, in the LLM convention C (M x N, col-major) = alpha * A (M x K, row-major)
// * B (N x K row-major) + beta * C. Tests named Gpu* skip without a GPU (and the cuSPARSELt ones
// when the library cannot be loaded, with the paths tried); the others run in CI.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "benchmarks/baselines.h"
#include "benchmarks/lt_dense.h"
#include "ir/dtype.h"
#include "runtime/cublaslt.h"
#include "runtime/cuda_driver.h"
#include "runtime/cusparselt.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

using cusparselt::Choice;
using cusparselt::Shape;
using cusparselt::Type;

// ---------------------------------------------------------------- CPU tests (CI)

TEST(CusparseLtChoice, RoundTrip) {
  for (const Choice& c : {Choice{}, Choice{7, 1, 0, 1}, Choice{3, 4, 2, 2}, Choice{12, 8, 1, 1}}) {
    const std::string text = c.to_string();
    EXPECT_EQ(Choice::parse(text), c) << text;
  }
  EXPECT_EQ(Choice::parse("alg=3,split_k=2,mode=1,buffers=1").to_string(),
            "alg=3,split_k=2,mode=1,buffers=1");
  // Field order is free.
  EXPECT_EQ(Choice::parse("buffers=2,mode=2,split_k=4,alg=5"), (Choice{5, 4, 2, 2}));
}

TEST(CusparseLtChoice, RejectsBadStrings) {
  for (const char* bad :
       {"", "alg=1", "alg=1,split_k=1,mode=0", "alg=x,split_k=1,mode=0,buffers=1",
        "alg=1,split_k=0,mode=0,buffers=1", "alg=-1,split_k=1,mode=0,buffers=1",
        "alg=1,split_k=1,mode=9,buffers=1", "alg=1,split_k=1,mode=0,buffers=1,",
        "alg=1,alg=2,split_k=1,mode=0", "alg=1,split_k=1,mode=0,buffers=1,foo=2",
        "alg=1 ,split_k=1,mode=0,buffers=1", "alg=99999999999,split_k=1,mode=0,buffers=1"}) {
    EXPECT_THROW(Choice::parse(bad), std::invalid_argument) << "'" << bad << "'";
  }
  try {
    Choice::parse("alg=1,split_k=1,mode=0,bufers=1");
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bufers"), std::string::npos) << e.what();
  }
}

TEST(CusparseLtLoad, MissingEnvPathIsUnavailableWithReason) {
  const char* missing = "/nonexistent/sparsegen-test/libcusparseLt.so.0";
  {
    testing::ScopedEnv env("SPARSEGEN_CUSPARSELT", missing);
    std::string why;
    EXPECT_FALSE(cusparselt::available(&why));
    EXPECT_NE(why.find(missing), std::string::npos) << why;
    EXPECT_THROW(cusparselt::version(), cusparselt::CusparseLtError);
    // No GPU work happens before the library is found.
    EXPECT_THROW(cusparselt::SparseGemm(0, Shape{64, 64, 8, Type::F16, Type::F16}, nullptr),
                 cusparselt::CusparseLtError);
  }
  // Back to the default search: whatever it finds, it answers and explains a failure.
  std::string why;
  if (!cusparselt::available(&why)) {
    EXPECT_NE(why.find("libcusparseLt.so.0"), std::string::npos) << why;
  }
}

// The same run-time loading for cuBLASLt (runtime/dynamic_library.h serves both).
TEST(CublasLtLoad, MissingEnvPathIsUnavailableWithReasonThenTheDefaultSearchAgain) {
  const char* missing = "/nonexistent/sparsegen-test/libcublasLt.so.13";
  {
    testing::ScopedEnv env("SPARSEGEN_CUBLASLT", missing);
    std::string why;
    EXPECT_FALSE(cublaslt::available(&why));
    EXPECT_NE(why.find(missing), std::string::npos) << why;
    EXPECT_NE(why.find("from $SPARSEGEN_CUBLASLT"), std::string::npos) << why;
    EXPECT_THROW(cublaslt::version(), cublaslt::CublasLtError);
  }
  std::string why;
  if (cublaslt::available(&why))
    EXPECT_NE(cublaslt::version().find("libcublasLt"), std::string::npos);
  else
    EXPECT_NE(why.find("default search"), std::string::npos) << why;
}

TEST(CusparseLtTypes, NamesAndMultiples) {
  EXPECT_EQ(cusparselt::to_string(Type::E4M3), "fp8_e4m3");
  EXPECT_EQ(cusparselt::type_bytes(Type::BF16), 2);
  EXPECT_EQ(cusparselt::mk_multiple(Type::I8), 32);
  EXPECT_EQ(cusparselt::mk_multiple(Type::F16), 16);
}

// ---------------------------------------------------------------- GPU helpers

bool gpu_usable(std::string* why) {
  return cuda::driver_available(why);
}

#define SKIP_WITHOUT_GPU()                                      \
  do {                                                          \
    std::string why_;                                           \
    if (!gpu_usable(&why_)) GTEST_SKIP() << "no GPU: " << why_; \
  } while (0)

#define SKIP_WITHOUT_CUSPARSELT()                                                          \
  do {                                                                                     \
    std::string why_;                                                                      \
    if (!cusparselt::available(&why_)) GTEST_SKIP() << "cuSPARSELt unavailable: " << why_; \
  } while (0)

// Host values in the input type: the encoded bytes and the decoded values (what the GPU sees).
struct HostMatrix {
  std::vector<char> bytes;
  std::vector<double> values;
};

// Encodes x as `t` and returns the value it represents.
double encode(Type t, double x, char* dst) {
  switch (t) {
    case Type::F16: {
      const uint16_t h = float_to_half_bits(static_cast<float>(x));
      std::memcpy(dst, &h, 2);
      return half_bits_to_float(h);
    }
    case Type::BF16: {
      const uint16_t h = float_to_bf16_bits(static_cast<float>(x));
      std::memcpy(dst, &h, 2);
      return bf16_bits_to_float(h);
    }
    case Type::I8: {
      const int8_t v = float_to_int8(static_cast<float>(x));
      std::memcpy(dst, &v, 1);
      return v;
    }
    case Type::E4M3: {
      const uint8_t v = float_to_e4m3_bits(static_cast<float>(x));
      std::memcpy(dst, &v, 1);
      return e4m3_bits_to_float(v);
    }
    case Type::I32:
    case Type::F32:
      break;  // outputs only
  }
  return 0;
}

// Seeded random non-integer values (int8: integers of the full range, the quantized type);
// prune24: in each row's aligned groups of 4 only the 2 largest magnitudes are kept.
HostMatrix random_matrix(Type t, int64_t rows, int64_t cols, uint64_t seed, bool prune24) {
  std::mt19937_64 rng(seed);
  const double range = t == Type::I8 ? 127.0 : t == Type::E4M3 ? 2.0 : 1.0;
  std::uniform_real_distribution<double> dist(-range, range);
  std::vector<double> raw(static_cast<size_t>(rows * cols));
  for (auto& v : raw) v = dist(rng);
  if (prune24) {
    for (size_t g = 0; g < raw.size(); g += 4) {
      int idx[4] = {0, 1, 2, 3};
      std::sort(idx, idx + 4,
                [&](int a, int b) { return std::fabs(raw[g + a]) > std::fabs(raw[g + b]); });
      raw[g + idx[2]] = 0;
      raw[g + idx[3]] = 0;
    }
  }
  HostMatrix m;
  const int w = cusparselt::type_bytes(t);
  m.bytes.resize(raw.size() * static_cast<size_t>(w));
  m.values.resize(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    m.values[i] = encode(t, raw[i], m.bytes.data() + i * static_cast<size_t>(w));
  }
  return m;
}

double out_value(Type out, const char* p) {
  uint16_t h = 0;
  std::memcpy(&h, p, 2);
  return out == Type::BF16 ? bf16_bits_to_float(h) : half_bits_to_float(h);
}

// One GEMM case on the device: inputs, poisoned output, reference and the bound.
struct Case {
  Shape shape;
  float alpha = 1.0f;
  float beta = 0.0f;
  HostMatrix a, b;
  HostMatrix c0;  // beta != 0: the initial C (output type)
  cuda::DeviceBuffer da, db, dc;

  Case(const Shape& s, float alpha_, float beta_, uint64_t seed)
      : shape(s), alpha(alpha_), beta(beta_) {
    a = random_matrix(s.in, s.m, s.k, seed, true);
    b = random_matrix(s.in, s.n, s.k, seed + 1, false);
    c0 = random_matrix(s.out, s.n, s.m, seed + 2, false);
    da = cuda::DeviceBuffer(a.bytes.size());
    da.upload(a.bytes.data(), a.bytes.size());
    db = cuda::DeviceBuffer(b.bytes.size());
    db.upload(b.bytes.data(), b.bytes.size());
    dc = cuda::DeviceBuffer(c0.bytes.size());
    reset_output();
  }

  // NaN bit patterns (0x7fff is NaN in fp16 and bf16), or C0 when beta != 0.
  void reset_output() {
    if (beta != 0.0f) {
      dc.upload(c0.bytes.data(), c0.bytes.size());
    } else {
      dc.fill_u32(0x7fff7fffu);
    }
  }

  // Compares the device output with the fp64 reference; returns the failure count.
  int check(const std::string& what) const {
    const int64_t m = shape.m, n = shape.n, k = shape.k;
    std::vector<char> got(static_cast<size_t>(m * n) * 2);
    dc.download(got.data(), got.size());
    const double u_out = shape.out == Type::BF16 ? 0x1p-7 : 0x1p-10;  // one ulp at 1.0
    double acc_eps = std::max(static_cast<double>(k) * 0x1p-24, 0x1p-16);
    if (shape.in == Type::I8) acc_eps = 0x1p-22;    // exact int32 sums, one float scaling
    if (shape.in == Type::E4M3) acc_eps = 0x1p-12;  // fp8 tensor-core accumulation
    int bad = 0, nonzero = 0;
    double worst = 0;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = 0; r < m; ++r) {
        double sum = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          const double p =
              a.values[static_cast<size_t>(r * k + i)] * b.values[static_cast<size_t>(t * k + i)];
          sum += p;
          mag += std::fabs(p);
        }
        const size_t ci = static_cast<size_t>(t * m + r);
        double ref = alpha * sum;
        mag = std::fabs(alpha) * mag;
        if (beta != 0.0f) {
          ref += beta * c0.values[ci];
          mag += std::fabs(beta * c0.values[ci]);
        }
        const double v = out_value(shape.out, got.data() + ci * 2);
        const double tol = u_out * std::fabs(ref) + acc_eps * mag + 1e-30;
        const double err = std::fabs(v - ref);
        if (ref != 0) ++nonzero;
        if (!(err <= tol)) {  // NaN (poison left) fails too
          if (bad < 5) {
            ADD_FAILURE() << what << ": C[token " << t << "][row " << r << "] = " << v
                          << ", reference " << ref << ", |err| " << err << " > " << tol;
          }
          ++bad;
        }
        worst = std::max(worst, err / tol);
      }
    }
    EXPECT_GT(nonzero, m * n / 2) << what << ": reference mostly zero, test not meaningful";
    std::printf("[ GPU      ] %s: worst err/bound %.3f, %d bad of %lld\n", what.c_str(), worst, bad,
                static_cast<long long>(m * n));
    return bad;
  }
};

std::string label(const Shape& s, float alpha, float beta) {
  return std::string(cusparselt::to_string(s.in)) + "->" +
         std::string(cusparselt::to_string(s.out)) + " M=" + std::to_string(s.m) +
         " K=" + std::to_string(s.k) + " N=" + std::to_string(s.n) +
         " alpha=" + std::to_string(alpha) + " beta=" + std::to_string(beta);
}

struct Dims {
  int64_t m, k;
};
const Dims kDims[] = {{64, 128}, {256, 512}};
const int64_t kNs[] = {1, 8, 64, 512};

// alpha for a type: keeps outputs of order 1 (int8 products are up to 127^2 each).
float alpha_for(Type in, int64_t k) {
  if (in == Type::I8) return static_cast<float>(1.0 / (127.0 * 127.0 * std::sqrt(double(k))));
  return 0.75f;
}

// ---------------------------------------------------------------- cuSPARSELt

void sparse_type_test(Type in, Type out, int min_cc_major) {
  cuda::Context ctx(0);
  if (ctx.info().cc_major < min_cc_major) {
    GTEST_SKIP() << "needs compute capability " << min_cc_major << ".x, device is "
                 << ctx.info().cc_major << "." << ctx.info().cc_minor;
  }
  cuda::Stream stream;
  std::printf("[ GPU      ] %s, M and K multiples of %lld\n", cusparselt::version().c_str(),
              static_cast<long long>(cusparselt::mk_multiple(in)));
  uint64_t seed = 100;
  for (const Dims& d : kDims) {
    for (const int64_t n : kNs) {
      for (const float beta : {0.0f, 0.5f}) {
        if (beta != 0.0f && n != 64) continue;
        const Shape s{d.m, d.k, n, in, out};
        const float alpha = alpha_for(in, d.k);
        Case c(s, alpha, beta, seed++);
        const std::string what = "cuSPARSELt " + label(s, alpha, beta);
        try {
          cusparselt::SparseGemm g(c.da.ptr(), s, stream.get());
          // The weight buffer is not needed after construction: poison it to prove it.
          c.da.fill_bytes(0xff);
          c.reset_output();
          g.run(c.db.ptr(), c.dc.ptr(), alpha, beta, stream.get());
          stream.synchronize();
          std::printf("[ GPU      ] %s: padded N %lld, %d algorithm ids, %zu compressed bytes\n",
                      what.c_str(), static_cast<long long>(g.padded_n()), g.max_alg_id(),
                      g.compressed_bytes());
          EXPECT_EQ(c.check(what), 0);
        } catch (const std::exception& e) {
          ADD_FAILURE() << what << ": " << e.what();
        }
      }
    }
  }
}

TEST(GpuCusparseLt, Fp16MatchesReference) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  sparse_type_test(Type::F16, Type::F16, 8);
}

TEST(GpuCusparseLt, Bf16MatchesReference) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  sparse_type_test(Type::BF16, Type::BF16, 8);
}

TEST(GpuCusparseLt, Int8MatchesReference) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  sparse_type_test(Type::I8, Type::F16, 8);
}

TEST(GpuCusparseLt, Int8Bf16OutMatchesReference) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  sparse_type_test(Type::I8, Type::BF16, 8);
}

TEST(GpuCusparseLt, Fp8MatchesReference) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  sparse_type_test(Type::E4M3, Type::F16, 9);
}

TEST(GpuCusparseLt, Fp8Bf16OutMatchesReference) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  sparse_type_test(Type::E4M3, Type::BF16, 9);
}

// search() keeps a working plan; its Choice, stored as text, replays on a fresh object.
TEST(GpuCusparseLt, SearchedChoiceReplays) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  cuda::Context ctx(0);
  cuda::Stream stream;
  const Shape s{256, 512, 64, Type::F16, Type::F16};
  Case c(s, 0.75f, 0.0f, 7);
  cusparselt::SparseGemm g(c.da.ptr(), s, stream.get());
  cusparselt::SearchOptions so;
  so.repetitions = 2;
  const Choice best = g.search(c.db.ptr(), c.dc.ptr(), stream.get(), so);
  EXPECT_EQ(g.choice(), best);
  std::printf("[ GPU      ] searched choice %s of %d ids\n", best.to_string().c_str(),
              g.max_alg_id());
  c.reset_output();
  g.run(c.db.ptr(), c.dc.ptr(), 0.75f, 0.0f, stream.get());
  stream.synchronize();
  EXPECT_EQ(c.check("after search"), 0);

  cusparselt::SparseGemm replay(c.da.ptr(), s, stream.get());
  replay.set_choice(Choice::parse(best.to_string()));
  c.reset_output();
  replay.run(c.db.ptr(), c.dc.ptr(), 0.75f, 0.0f, stream.get());
  stream.synchronize();
  EXPECT_EQ(c.check("replayed choice"), 0);

  // An id past the library's range (CONFIG_MAX_ID is the count of ids) is refused and the
  // previous plan stays usable.
  EXPECT_THROW(replay.set_choice(Choice{replay.max_alg_id(), 1, 0, 1}),
               cusparselt::CusparseLtError);
  EXPECT_THROW(replay.set_choice(Choice{replay.max_alg_id() + 1000, 1, 0, 1}),
               cusparselt::CusparseLtError);
  EXPECT_EQ(replay.choice(), best);
  c.reset_output();
  replay.run(c.db.ptr(), c.dc.ptr(), 0.75f, 0.0f, stream.get());
  stream.synchronize();
  EXPECT_EQ(c.check("after a refused choice"), 0);
}

// One weight re-planned many times (plain ids and split-K in both modes, back and forth): every
// plan is made from a fresh matmul descriptor and algorithm selection (cuSPARSELt 0.10 crashed
// re-initializing a plan on the old ones), and each computes the right product.
TEST(GpuCusparseLt, ReplansManyTimes) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  cuda::Context ctx(0);
  cuda::Stream stream;
  const Shape s{128, 1024, 32, Type::F16, Type::F16};
  Case c(s, 1.0f, 0.5f, 11);
  cusparselt::SparseGemm g(c.da.ptr(), s, stream.get());
  ASSERT_GT(g.max_alg_id(), 0);
  const int last = g.max_alg_id() - 1;
  int planned = 0;
  for (const Choice& ch :
       {Choice{0, 1, 0, 1}, Choice{0, 2, 1, 1}, Choice{last, 1, 0, 1}, Choice{0, 4, 2, 1},
        Choice{0, 2, 2, 2}, Choice{0, 1, 0, 1}, Choice{last, 8, 1, 1}, Choice{0, 1, 0, 1}}) {
    try {
      g.set_choice(ch);
    } catch (const cusparselt::CusparseLtError& e) {
      std::printf("[ GPU      ] %s refused: %s\n", ch.to_string().c_str(), e.what());
      continue;  // a split-K setting this shape does not offer; the previous plan stays
    }
    EXPECT_EQ(g.choice(), ch);
    c.reset_output();
    try {
      g.run(c.db.ptr(), c.dc.ptr(), 1.0f, 0.5f, stream.get());
    } catch (const cusparselt::CusparseLtError& e) {
      std::printf("[ GPU      ] %s refused at launch: %s\n", ch.to_string().c_str(), e.what());
      continue;  // as search() treats it: a status, not a device fault
    }
    stream.synchronize();
    ++planned;
    EXPECT_EQ(c.check(ch.to_string()), 0);
  }
  EXPECT_GE(planned, 3);
}

// A probe, not run by default: one plan (or the library's search) in a process of its own, to
// find which choices fault the device (a fault ends the context, so one process per choice):
//   LT_PROBE=alg=7,split_k=1,mode=0,buffers=1 [LT_PROBE_SHAPE=M,K,N] tests/lt_tests
//     --gtest_also_run_disabled_tests --gtest_filter=CusparseLtProbe.DISABLED_Choice
// LT_PROBE=search: cusparseLtMatmulSearch's pick only.
// (Not a Gpu* suite: tools/gpu_run.sh requires every Gpu* test to run, and this one is disabled.)
TEST(CusparseLtProbe, DISABLED_Choice) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  const char* what = std::getenv("LT_PROBE");
  if (what == nullptr) GTEST_SKIP() << "LT_PROBE not set";
  Shape s{256, 512, 64, Type::F16, Type::F16};
  if (const char* sh = std::getenv("LT_PROBE_SHAPE")) {
    long long m = 0, k = 0, n = 0;
    ASSERT_EQ(std::sscanf(sh, "%lld,%lld,%lld", &m, &k, &n), 3) << sh;
    s.m = m;
    s.k = k;
    s.n = n;
  }
  cuda::Context ctx(0);
  cuda::Stream stream;
  Case c(s, 1.0f, 0.0f, 7);
  cusparselt::SparseGemm g(c.da.ptr(), s, stream.get());
  if (std::string(what) == "search") {
    cusparselt::SearchOptions so;
    so.max_alg_ids = 1;
    so.try_split_k = false;
    so.repetitions = 2;
    g.search(c.db.ptr(), c.dc.ptr(), stream.get(), so);
  } else {
    g.set_choice(Choice::parse(what));
  }
  c.reset_output();
  g.run(c.db.ptr(), c.dc.ptr(), 1.0f, 0.0f, stream.get());
  stream.synchronize();
  const int bad = c.check(g.choice().to_string());
  std::printf("PROBE %s -> %s: %d bad\n", what, g.choice().to_string().c_str(), bad);
  EXPECT_EQ(bad, 0);
}

TEST(GpuCusparseLt, RejectsMatrixThatIsNot24) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  cuda::Context ctx(0);
  cuda::Stream stream;
  const Shape s{64, 128, 8, Type::F16, Type::F16};
  HostMatrix a = random_matrix(Type::F16, s.m, s.k, 3, false);  // dense: 4 of 4 nonzero
  cuda::DeviceBuffer da(a.bytes.size());
  da.upload(a.bytes.data(), a.bytes.size());
  try {
    cusparselt::SparseGemm g(da.ptr(), s, stream.get());
    FAIL() << "a dense A was accepted as 2:4";
  } catch (const cusparselt::CusparseLtError& e) {
    EXPECT_NE(std::string(e.what()).find("2:4"), std::string::npos) << e.what();
  }
}

TEST(GpuCusparseLt, RejectsBadShapes) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_CUSPARSELT();
  cuda::Context ctx(0);
  cuda::DeviceBuffer da(64 * 128 * 2);
  EXPECT_THROW(cusparselt::SparseGemm(da.ptr(), Shape{64, 120, 8, Type::F16, Type::F16}, nullptr),
               cusparselt::CusparseLtError);
  EXPECT_THROW(cusparselt::SparseGemm(da.ptr(), Shape{64, 128, 8, Type::F16, Type::BF16}, nullptr),
               cusparselt::CusparseLtError);
  EXPECT_THROW(cusparselt::SparseGemm(da.ptr(), Shape{64, 128, 8, Type::I8, Type::I8}, nullptr),
               cusparselt::CusparseLtError);
}

// ---------------------------------------------------------------- dense cuBLASLt

void dense_type_test(Type in, Type out, int min_cc) {
  cuda::Context ctx(0);
  const int cc = ctx.info().cc_major * 10 + ctx.info().cc_minor;
  if (cc < min_cc) {
    GTEST_SKIP() << "needs compute capability " << min_cc / 10 << "." << min_cc % 10
                 << ", device is " << ctx.info().cc_major << "." << ctx.info().cc_minor;
  }
  bench::attach_cudart(0);
  cuda::Stream stream;
  std::printf("[ GPU      ] %s\n", bench::cublaslt_version().c_str());
  uint64_t seed = 500;
  for (const Dims& d : kDims) {
    for (const int64_t n : kNs) {
      for (const float beta : {0.0f, 0.5f}) {
        if (beta != 0.0f && n != 64) continue;
        const Shape s{d.m, d.k, n, in, out};
        const float alpha = alpha_for(in, d.k);
        Case c(s, alpha, beta, seed++);
        const std::string what = "cuBLASLt " + label(s, alpha, beta);
        try {
          bench::LtDenseGemm g(c.da.ptr(), s);
          const std::string algo = g.search(c.db.ptr(), c.dc.ptr(), stream.get(), 8, 1);
          c.reset_output();
          g.run(c.db.ptr(), c.dc.ptr(), alpha, beta, stream.get());
          stream.synchronize();
          std::printf("[ GPU      ] %s: %s\n", what.c_str(), algo.c_str());
          EXPECT_EQ(c.check(what), 0);
        } catch (const std::exception& e) {
          ADD_FAILURE() << what << ": " << e.what();
        }
      }
    }
  }
}

TEST(GpuLtDense, Fp16MatchesReference) {
  SKIP_WITHOUT_GPU();
  dense_type_test(Type::F16, Type::F16, 70);
}

TEST(GpuLtDense, Bf16MatchesReference) {
  SKIP_WITHOUT_GPU();
  dense_type_test(Type::BF16, Type::BF16, 80);
}

TEST(GpuLtDense, Int8MatchesReference) {
  SKIP_WITHOUT_GPU();
  dense_type_test(Type::I8, Type::F16, 75);
}

TEST(GpuLtDense, Int8Bf16OutMatchesReference) {
  SKIP_WITHOUT_GPU();
  dense_type_test(Type::I8, Type::BF16, 80);
}

TEST(GpuLtDense, Fp8MatchesReference) {
  SKIP_WITHOUT_GPU();
  dense_type_test(Type::E4M3, Type::F16, 89);
}

TEST(GpuLtDense, Fp8Bf16OutMatchesReference) {
  SKIP_WITHOUT_GPU();
  dense_type_test(Type::E4M3, Type::BF16, 89);
}

}  // namespace
}  // namespace sparsegen
