// runtime/timing.h: statistics and flush sizing on the host (TimingCpu.*); the L2 flush buffer
// and measure() on a real GPU (GpuTiming.*, skipped without one).
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/cuda_driver.h"
#include "runtime/timing.h"

namespace sparsegen {
namespace {

TEST(TimingCpu, StatisticsOfOddCount) {
  const TimingStats t = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(t.count, 5);
  EXPECT_DOUBLE_EQ(t.median_ms, 3);
  EXPECT_DOUBLE_EQ(t.min_ms, 1);
  EXPECT_DOUBLE_EQ(t.max_ms, 5);
  EXPECT_DOUBLE_EQ(t.mean_ms, 3);
  EXPECT_DOUBLE_EQ(t.p10_ms, 1.4);  // position 0.4 between 1 and 2
  EXPECT_DOUBLE_EQ(t.p90_ms, 4.6);
}

TEST(TimingCpu, MedianOfEvenCountIsMeanOfMiddlePair) {
  const TimingStats t = summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(t.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(t.mean_ms, 2.5);
}

TEST(TimingCpu, SingleSampleAndOutlierRobustMedian) {
  const TimingStats one = summarize({0.25});
  EXPECT_DOUBLE_EQ(one.median_ms, 0.25);
  EXPECT_DOUBLE_EQ(one.p10_ms, 0.25);
  EXPECT_DOUBLE_EQ(one.p90_ms, 0.25);
  std::vector<double> s(21, 1.0);
  s[3] = 1000.0;  // one slow run (a preemption) moves the mean, not the median
  const TimingStats t = summarize(s);
  EXPECT_DOUBLE_EQ(t.median_ms, 1.0);
  EXPECT_GT(t.mean_ms, 40.0);
  EXPECT_DOUBLE_EQ(t.p90_ms, 1.0);
}

TEST(TimingCpu, RejectsEmptyNegativeAndNonFinite) {
  EXPECT_THROW(summarize({}), std::invalid_argument);
  EXPECT_THROW(summarize({1.0, -0.5}), std::invalid_argument);
  EXPECT_THROW(summarize({std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  EXPECT_THROW(summarize({std::numeric_limits<double>::infinity()}), std::invalid_argument);
  EXPECT_THROW(quantile_sorted({1.0}, 1.5), std::invalid_argument);
  EXPECT_THROW(quantile_sorted({}, 0.5), std::invalid_argument);
}

TEST(TimingCpu, QuantileEndpoints) {
  const std::vector<double> s = {1, 2, 3, 10};
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 0.0), 1);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 1.0), 10);
  EXPECT_DOUBLE_EQ(quantile_sorted(s, 2.0 / 3.0), 3);
}

TEST(TimingCpu, FlushBufferIsAtLeastTwiceL2) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  EXPECT_EQ(l2_flush_bytes(50 * 1024 * 1024), 100 * kMiB);     // H100: 50 MiB L2
  EXPECT_EQ(l2_flush_bytes(60 * 1024 * 1024), 120 * kMiB);     // H200
  EXPECT_EQ(l2_flush_bytes(40 * 1024 * 1024 + 1), 81 * kMiB);  // rounded up to a MiB
  EXPECT_EQ(l2_flush_bytes(1024), 8 * kMiB);                   // floor
  EXPECT_EQ(l2_flush_bytes(0), 256 * kMiB);                    // unknown
  EXPECT_EQ(l2_flush_bytes(-1), 256 * kMiB);
}

TEST(TimingCpu, MeasureRejectsBadOptionsBeforeTouchingTheGpu) {
  TimingOptions o;
  o.repetitions = 0;
  EXPECT_THROW(measure([](CUstream) {}, o), std::invalid_argument);
  o.repetitions = 5;
  o.warmup = -1;
  EXPECT_THROW(measure([](CUstream) {}, o), std::invalid_argument);
}

// ---------------------------------------------------------------- on a GPU

class GpuTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda::driver_available(&why)) GTEST_SKIP() << "no GPU: " << why;
  }
};

TEST_F(GpuTiming, FlushBufferCoversTwiceTheL2) {
  cuda::Context ctx(0);
  ASSERT_GT(ctx.info().l2_cache_bytes, 0);
  L2Flusher f(ctx.info());
  EXPECT_GE(f.bytes(), 2 * static_cast<std::size_t>(ctx.info().l2_cache_bytes));
  cuda::Stream s;
  f.flush(s.get());
  f.flush(s.get());
  s.synchronize();
}

TEST_F(GpuTiming, MeasureReturnsSanePositiveTimes) {
  cuda::Context ctx(0);
  // A 256 MiB device-to-device fill: at most a few TB/s, so well above 10 us, under 1 s.
  cuda::DeviceBuffer work(std::size_t{256} << 20);
  TimingOptions o;
  o.repetitions = 20;
  int calls = 0;
  const TimingResult t = measure(
      [&](CUstream s) {
        ++calls;
        work.fill_bytes_async(static_cast<unsigned char>(calls), s);
      },
      o);
  EXPECT_EQ(calls, o.warmup + o.repetitions);
  ASSERT_EQ(t.count, 20);
  ASSERT_EQ(t.samples_ms.size(), 20u);
  EXPECT_GT(t.min_ms, 0.01);
  EXPECT_LT(t.max_ms, 1000.0);
  EXPECT_LE(t.min_ms, t.p10_ms);
  EXPECT_LE(t.p10_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.p90_ms);
  EXPECT_LE(t.p90_ms, t.max_ms);
  // Bandwidth of the fill: plausible for any GPU with a 256 MiB buffer (10 GB/s .. 20 TB/s).
  const double gbps = double(work.bytes()) / (t.median_ms * 1e6);
  EXPECT_GT(gbps, 10.0);
  EXPECT_LT(gbps, 20000.0);

  // The cap on total time lowers the count to min_repetitions, not below.
  TimingOptions capped = o;
  capped.repetitions = 200;
  capped.min_repetitions = 20;
  capped.max_total_ms = 1e-6;
  capped.flush_l2 = false;
  cuda::Stream s;
  capped.stream = s.get();
  const TimingResult c = measure([&](CUstream st) { work.fill_bytes_async(1, st); }, capped);
  EXPECT_EQ(c.count, 20);
  EXPECT_FALSE(c.abandoned);

  // A run slower than abandon_above_ms in the warm-up after the first: two launches, one sample.
  TimingOptions quick = o;
  quick.warmup = 3;
  quick.abandon_above_ms = 1e-6;
  int runs = 0;
  const TimingResult a = measure(
      [&](CUstream st) {
        ++runs;
        work.fill_bytes_async(2, st);
      },
      quick);
  EXPECT_TRUE(a.abandoned);
  EXPECT_EQ(runs, 2);
  ASSERT_EQ(a.samples_ms.size(), 1u);
  EXPECT_GT(a.median_ms, 0.0);
}

}  // namespace
}  // namespace sparsegen
