// sparsegen-ffn-bench's summary: the crossover of a speedup curve and the tuner's record.
#include "benchmarks/ffn_report.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sparsegen::bench {
namespace {

TEST(FfnReport, CrossoverInterpolatesInLogLog) {
  // 2x at 10, 0.5x at 40: log s falls linearly in log mean, through 1 at 20.
  const Crossover c = crossover({{40, 0.5}, {10, 2.0}, {5, 3.0}});
  ASSERT_TRUE(c.mean.has_value());
  EXPECT_NEAR(*c.mean, 20.0, 1e-9);
  EXPECT_FALSE(c.below || c.above);
  // Exactly 1 at a measured mean: still beating (>= 1) there, the crossing comes later.
  const Crossover at = crossover({{30, 1.0}, {120, 0.5}});
  ASSERT_TRUE(at.mean.has_value());
  EXPECT_NEAR(*at.mean, 30.0, 1e-9);
}

TEST(FfnReport, CrossoverOutsideTheMeasuredMeansSaysWhichSide) {
  const Crossover hi = crossover({{6, 2.5}, {30, 1.4}});
  EXPECT_FALSE(hi.mean || hi.below);
  EXPECT_EQ(hi.above, 30.0);
  const Crossover lo = crossover({{6, 0.9}, {30, 0.4}});
  EXPECT_FALSE(lo.mean || lo.above);
  EXPECT_EQ(lo.below, 6.0);
  // Unmeasured points (a failed case has no speedup) are dropped; nothing left, nothing said.
  const Crossover none = crossover({{6, 0}, {0, 2.0}});
  EXPECT_FALSE(none.mean || none.below || none.above);
  // The first fall counts when the curve comes back up (noise around 1).
  const Crossover first = crossover({{6, 2.0}, {24, 0.5}, {96, 1.2}, {384, 0.4}});
  ASSERT_TRUE(first.mean.has_value());
  EXPECT_NEAR(*first.mean, 12.0, 1e-9);
}

TEST(FfnReport, SummaryGroupsByShapeAndTokensAndCountsTheTunersPicks) {
  const nlohmann::json cases = nlohmann::json::parse(R"([
    {"k": 2048, "n": 5632, "m": 4096, "mean_target": 6, "speedup_vs_dense": 1.6,
     "tuner": {"vs_best": 1.004}},
    {"k": 2048, "n": 5632, "m": 4096, "mean_target": 120, "speedup_vs_dense": 0.4,
     "tuner": {"vs_best": 1.0}},
    {"k": 2048, "n": 5632, "m": 16384, "mean_target": 30, "speedup_vs_dense": 1.3,
     "tuner": {"vs_best": 1.139}},
    {"k": 4096, "n": 14336, "m": 4096, "mean_target": 30, "error": "out of memory"}
  ])");
  const nlohmann::json s = ffn_summary(cases);
  ASSERT_EQ(s["crossovers"].size(), 2u);
  const nlohmann::json& a = s["crossovers"][0];
  EXPECT_EQ(a["m"], 4096);
  // 1.6x at 6, 0.4x at 120: log-linear zero at 6 * 20^(log 1.6 / log 4).
  EXPECT_NEAR(a["crossover_mean_nnz"].get<double>(),
              6.0 * std::pow(20.0, std::log(1.6) / std::log(4.0)), 1e-9);
  EXPECT_EQ(s["crossovers"][1]["m"], 16384);
  EXPECT_EQ(s["crossovers"][1]["above_1_through_mean_nnz"], 30.0);
  EXPECT_EQ(s["tuner"]["cases"], 3);
  EXPECT_EQ(s["tuner"]["within_10_percent"], 2);
  EXPECT_NEAR(s["tuner"]["worst_vs_best"].get<double>(), 1.139, 1e-12);
  // No tuned case: no tuner record.
  EXPECT_FALSE(ffn_summary(nlohmann::json::array()).contains("tuner"));
}

}  // namespace
}  // namespace sparsegen::bench
