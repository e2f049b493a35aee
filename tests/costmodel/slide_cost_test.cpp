// The slide family's roofline (costmodel/slide_features.cpp): the orderings measured on an H200
// (the slide bench sweeps at N = 1-64) that the ranking must keep.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "costmodel/features.h"
#include "costmodel/model_registry.h"
#include "costmodel/schedule_features.h"
#include "ir/schedule.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen {
namespace {

class SlideCost : public ::testing::Test {
 protected:
  // 512 x 4096 at 6:8 (192 chunks of 32 lifted columns), fp16, B and C column-major.
  static void SetUpTestSuite() { a_ = new CsrMatrix(testing::slide_weight(512, 4096, 4, 3)); }
  static void TearDownTestSuite() { delete a_; }

  static ScheduleFeatures features(int64_t n, const std::string& fields) {
    const Problem p =
        Problem::spmm(a_->rows, a_->cols, n, DType::F16, Layout::ColMajor, Layout::ColMajor);
    const Schedule s = parse_schedule("slide;pattern=6:8;" + fields);
    return schedule_features(p, s, candidate_format_stats(*a_, p, s), compute_features(*a_),
                             row_profile(*a_), DeviceProfile::h100_sxm());
  }
  static double us(int64_t n, const std::string& fields) { return features(n, fields).roofline_us; }

  static CsrMatrix* a_;
};
CsrMatrix* SlideCost::a_ = nullptr;

// A warp's load steps are its part's chunks over warps x unroll (split=k), or over unroll alone
// (split=rows, every warp walks all chunks); the step latency is the family's, not the shared
// per-iteration one.
TEST_F(SlideCost, CriticalPathIsLoadStepsTimesWaves) {
  const ScheduleFeatures k = features(32, "split=k;lift=kernel;warps=8;mt=1;nt=4;unroll=4");
  EXPECT_EQ(k.warp_iters_max, std::ceil(192.0 / (8 * 4)));
  const ScheduleFeatures r = features(32, "split=rows;lift=kernel;warps=4;mt=1;nt=4;unroll=2");
  EXPECT_EQ(r.warp_iters_max, 192 / 2);
  EXPECT_GT(r.step_latency_cycles, k.step_latency_cycles);  // the rows' block barriers
  const DeviceProfile d = DeviceProfile::h100_sxm();
  EXPECT_NEAR(k.critical_floor_us,
              k.warp_iters_max * k.step_latency_cycles * std::max(1.0, std::ceil(k.waves)) /
                  (d.clock_ghz * 1e3),
              1e-9);
}

// Measured at N = 32 (4096x4096 and 4096x14336): all of N in one block with four chunks in
// flight per warp (A read once) beats two column blocks with one chunk each, and split=k with
// free warps beats split=rows.
TEST_F(SlideCost, WideUnrolledSplitKRanksFirstAtN32) {
  const double best = us(32, "split=k;lift=kernel;warps=8;mt=1;nt=4;unroll=4");
  EXPECT_LT(best, us(32, "split=k;lift=kernel;warps=8;mt=1;nt=2;unroll=1"));
  EXPECT_LT(best, us(32, "split=k;lift=kernel;warps=4;mt=1;nt=2;unroll=1;ksplit=4"));
  EXPECT_LT(best, us(32, "split=rows;lift=kernel;warps=8;mt=2;nt=4;unroll=2;ksplit=4"));
  EXPECT_LT(best, us(32, "split=k;lift=fused;warps=4;mt=1;nt=2;unroll=1;ksplit=2"));
}

// The fused lift saves the b_transform launch, which pays at N = 1; from N = 8 its gathers (one
// sector per token and fragment register) cost more than the launch.
TEST_F(SlideCost, FusedLiftOnlyAtOneToken) {
  auto with = [](const std::string& lift) {
    return "split=k;lift=" + lift + ";warps=8;mt=1;nt=1;unroll=4";
  };
  EXPECT_LT(us(1, with("fused")), us(1, with("kernel")));
  EXPECT_GT(us(8, with("fused")), us(8, with("kernel")));
}

// slide is ranked by its roofline even where the model has a fitted global formula.
TEST_F(SlideCost, RankedByTheRoofline) {
  const CostModel m = offline_model(DeviceProfile::h100_sxm()).model;
  ASSERT_TRUE(m.fitted());
  const ScheduleFeatures f = features(8, "split=k;lift=kernel;warps=8;mt=1;nt=1;unroll=4");
  EXPECT_FALSE(f.global_formula);
  std::string source;
  EXPECT_DOUBLE_EQ(m.predict_us(f, &source), std::max(f.roofline_us, f.critical_floor_us));
  EXPECT_EQ(source, "roofline");
}

}  // namespace
}  // namespace sparsegen
