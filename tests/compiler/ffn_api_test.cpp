// The gated FFN through the public API (sparsegen/sparsegen.h, Runtime::gated_ffn): offline
// builds with a given schedule, the errors a user meets, and (GpuFfnApi, skipped without a GPU)
// tuning on calibration tokens, then a run on device pointers checked against the reference.
#include <gtest/gtest.h>

#include <cstring>

#include "ir/dtype.h"
#include "ir/ffn.h"
#include "ir/gen/activations.h"
#include "runtime/cuda_driver.h"
#include "sparsegen/sparsegen.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

FfnCase small_case(uint64_t seed, double mean = 20) {
  return make_ffn_case({.m = 64, .k = 96, .n = 700, .mean_nnz = mean, .seed = seed});
}

TEST(FfnApi, OfflineBuildWithAScheduleReportsIt) {
  const FfnCase c = small_case(1);
  const Runtime rt = Runtime::offline("compute_90");
  FfnOptions o;
  o.schedule = "twell;tile=64;comp=4;warps=4;gate=lib;split=4;balance=token;teams=1";
  const Kernel k = rt.gated_ffn(c.weights, 64, o);
  EXPECT_FALSE(k.runnable());
  EXPECT_EQ(k.schedule(), o.schedule);
  EXPECT_EQ(k.schedule_reason(), "given by --schedule");
  EXPECT_EQ(k.problem().op, Op::GatedFfn);
  EXPECT_NE(k.cuda_source().find("sg::twell_down"), std::string::npos);
  o.schedule = "dense_ffn;threads=128";
  EXPECT_NE(rt.gated_ffn(c.weights, 64, o).cuda_source().find("sg::ffn_gate"), std::string::npos);
}

TEST(FfnApi, ErrorsNameWhatIsWrong) {
  const FfnCase c = small_case(2);
  const Runtime rt = Runtime::offline();
  // Neither calibration tokens nor a schedule.
  EXPECT_NE(testing::error_of([&] { rt.gated_ffn(c.weights, 64); }).find("calibration"),
            std::string::npos);
  // A weight of the wrong shape names the tensor.
  FfnWeights bad = c.weights;
  bad.up.resize(bad.up.size() - 3);
  FfnOptions o;
  o.schedule = "twell";
  EXPECT_NE(testing::error_of([&] { rt.gated_ffn(bad, 64, o); }).find("W_up"), std::string::npos);
  // A schedule of another problem kind.
  o.schedule = "macko";
  EXPECT_NE(testing::error_of([&] { rt.gated_ffn(c.weights, 64, o); }).find("gated"),
            std::string::npos);
  // fp32 is not an FFN type; calibration of the wrong size.
  o.schedule = "twell";
  o.dtype = DType::F32;
  EXPECT_THROW(rt.gated_ffn(c.weights, 64, o), UserError);
  FfnOptions cal;
  std::vector<float> x(10);
  cal.calibration = &x;
  EXPECT_NE(testing::error_of([&] { rt.gated_ffn(c.weights, 64, cal); }).find("64 x 96"),
            std::string::npos);
}

TEST(GpuFfnApi, TunesOnCalibrationTokensAndRunsOnDevicePointers) {
  std::string why;
  if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  const Runtime rt;
  for (double mean : {8.0, 400.0}) {
    const FfnCase c = make_ffn_case(
        {.m = 512, .k = 512, .n = 1408, .dtype = DType::F16, .mean_nnz = mean, .seed = 7});
    FfnOptions o;
    o.dtype = DType::F16;
    o.calibration = &c.x;
    o.use_cache = false;
    const Kernel k = rt.gated_ffn(c.weights, 512, o);
    SCOPED_TRACE(k.schedule() + ": " + k.schedule_reason());
    EXPECT_TRUE(k.runnable());
    EXPECT_TRUE(k.measured_ms().has_value());
    EXPECT_NE(k.schedule_reason().find("the dense FFN"), std::string::npos);
    std::vector<uint16_t> xb = convert_values(c.x, DType::F16, nullptr);
    cuda::DeviceBuffer dx(xb.size() * 2), dy(xb.size() * 2);
    dx.upload(xb);
    dy.fill_bytes(0xff);  // NaN poison: beta 0 never reads y
    k(reinterpret_cast<const void*>(dx.ptr()), reinterpret_cast<void*>(dy.ptr()));
    std::vector<uint16_t> yb(xb.size());
    dy.download(yb);
    std::vector<float> y(yb.size());
    for (size_t i = 0; i < y.size(); ++i) y[i] = half_bits_to_float(yb[i]);
    std::vector<int64_t> rows;
    for (int64_t r = 0; r < 512; r += 37) rows.push_back(r);
    const FfnReference ref = ffn_reference(c.problem, c.weights, c.x, {}, 1.0f, 0.0f, rows);
    std::vector<float> got;
    for (int64_t r : rows) got.insert(got.end(), y.begin() + r * 512, y.begin() + (r + 1) * 512);
    EXPECT_EQ(ffn_violation(ref, got, 512), "");
  }
}

}  // namespace
}  // namespace sparsegen
