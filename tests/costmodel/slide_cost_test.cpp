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

// split=wg with lift=fused and one K part: a producer warp per buffer, so a step costs the
// 3-buffer ring's latency times 3 / (stages + 1) (K parts keep their measured factor); its A
// bytes count 1.13x in the DRAM term (bulk copies read DRAM slower than plain loads), split=k's
// once; and at stages 3 with 5 row tiles (74 registers by ptxas, 80 estimated, x 384 threads)
// two blocks share an SM, as measured on 18944x3584, while unroll 2's ring holds one.
TEST_F(SlideCost, FusedRingStagesAndTwoBlocksPerSm) {
  const std::string wg = "split=wg;lift=fused;warps=8;mt=1;nt=8;";
  const ScheduleFeatures st2 = features(64, wg + "unroll=1;stages=2");
  const ScheduleFeatures st5 = features(64, wg + "unroll=1;stages=5");
  EXPECT_DOUBLE_EQ(st5.step_latency_cycles, st2.step_latency_cycles * 3.0 / 6.0);
  const ScheduleFeatures parts = features(64, wg + "unroll=1;ksplit=2;stages=5");
  EXPECT_GT(parts.step_latency_cycles, st2.step_latency_cycles);
  EXPECT_NEAR(st5.dram_bytes - st5.b_unique_bytes - st5.c_bytes, 1.13 * st5.a_bytes,
              1e-6 * st5.a_bytes);
  const ScheduleFeatures k = features(64, "split=k;lift=kernel;warps=8;mt=1;nt=8;unroll=2");
  EXPECT_NEAR(k.dram_bytes - k.b_unique_bytes - k.c_bytes, k.a_bytes, 1e-6 * k.a_bytes);
  EXPECT_EQ(features(64, wg + "unroll=1;stages=3;tiles=5").blocks_per_sm, 2);
  EXPECT_EQ(features(64, wg + "unroll=2;stages=3").blocks_per_sm, 1);
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
