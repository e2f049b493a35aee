// sparsegen-bench --exhaustive: the host-side parts (benchmarks/search_quality.h): the even spread
// of a capped enumeration, the ratio and the summary arithmetic, the JSON and the table.
#include "benchmarks/search_quality.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sparsegen::bench {
namespace {

SearchCase measured_case(double best_ms, double pick_ms, double search_s) {
  SearchCase c;
  c.suite = "llm";
  c.matrix = "llm 4096x4096 magnitude 70%";
  c.n = 8;
  c.dtype = "fp16";
  c.top_k = 8;
  c.enumerated = c.selected = c.attempted = c.measured = 100;
  c.search_s = search_s;
  c.pick = std::string("general;pick");
  c.best = std::string("general;best");
  c.best_ms = best_ms;
  c.pick_ms = pick_ms;
  return c;
}

TEST(SearchQuality, SpreadTakesAllWhenWithinTheLimit) {
  EXPECT_EQ(spread_selection(5, 5, {}), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(spread_selection(3, 400, {7}), (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(spread_selection(0, 10, {}).empty());
  EXPECT_THROW(spread_selection(10, 0, {}), std::invalid_argument);
}

TEST(SearchQuality, SpreadIsEvenDeterministicAndKeepsTheTopK) {
  EXPECT_EQ(spread_selection(10, 5, {}), (std::vector<size_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(spread_selection(10, 4, {}), (std::vector<size_t>{0, 2, 5, 7}));  // floor(i*10/4)
  // The top k join the spread (once each); indices past the end are ignored.
  EXPECT_EQ(spread_selection(10, 4, {9, 2, 3, 3, 42}), (std::vector<size_t>{0, 2, 3, 5, 7, 9}));
  const std::vector<size_t> big = spread_selection(1000003, 400, {5, 999999});
  EXPECT_EQ(big.size(), 402u);
  EXPECT_EQ(big.front(), 0u);
  for (size_t i = 1; i < big.size(); ++i) EXPECT_LT(big[i - 1], big[i]);
  EXPECT_EQ(big, spread_selection(1000003, 400, {999999, 5}));
  // Even: consecutive spread picks are floor or ceil of total / limit apart.
  const std::vector<size_t> s = spread_selection(529, 400, {});
  ASSERT_EQ(s.size(), 400u);
  for (size_t i = 1; i < s.size(); ++i) {
    EXPECT_GE(s[i] - s[i - 1], 1u);
    EXPECT_LE(s[i] - s[i - 1], 2u);
  }
}

TEST(SearchQuality, RatioIsBestOverPick) {
  EXPECT_NEAR(*measured_case(0.09, 0.1, 1).ratio(), 0.9, 1e-12);
  EXPECT_NEAR(*measured_case(0.05, 0.05, 1).ratio(), 1.0, 1e-12);
  SearchCase c = measured_case(0.05, 0.1, 1);
  c.pick_ms.reset();
  EXPECT_FALSE(c.ratio());
  c = measured_case(0.0, 0.1, 1);
  EXPECT_FALSE(c.ratio());
  c = measured_case(NAN, 0.1, 1);
  EXPECT_FALSE(c.ratio());
}

TEST(SearchQuality, SummaryCountsMissesAndSearchTime) {
  std::vector<SearchCase> cases = {
      measured_case(0.09, 0.1, 2.0),   // 0.9: meets (>=)
      measured_case(0.08, 0.1, 12.0),  // 0.8: misses
      measured_case(0.1, 0.1, 4.0),    // 1.0
  };
  SearchCase failed;
  failed.matrix = "broken";
  failed.error = "search failed: x";
  failed.search_s = 0.5;
  cases.push_back(failed);  // no ratio: a miss
  SearchCase capped = measured_case(0.05, 0.05, 1.0);
  capped.capped = true;
  cases.push_back(capped);
  const SearchSummary s = summarize_search(cases);
  EXPECT_EQ(s.cases, 5);
  EXPECT_EQ(s.with_ratio, 4);
  EXPECT_EQ(s.at_least_threshold, 3);
  EXPECT_NEAR(s.fraction, 0.6, 1e-12);
  EXPECT_NEAR(s.geomean_ratio, std::pow(0.9 * 0.8 * 1.0 * 1.0, 0.25), 1e-12);
  EXPECT_NEAR(s.min_ratio, 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(s.max_search_s, 12.0);
  EXPECT_DOUBLE_EQ(s.median_search_s, 2.0);  // of 0.5, 1, 2, 4, 12
  EXPECT_EQ(s.not_exhaustive, 2);            // the failed and the capped case
  const nlohmann::json j = to_json(s);
  EXPECT_FALSE(j["target_met"].get<bool>());
  EXPECT_NEAR(j["fraction_at_least_threshold"].get<double>(), 0.6, 1e-12);

  const SearchSummary empty = summarize_search({});
  EXPECT_EQ(empty.cases, 0);
  EXPECT_EQ(empty.fraction, 0.0);
  EXPECT_FALSE(to_json(empty)["target_met"].get<bool>());

  const SearchSummary good =
      summarize_search({measured_case(0.1, 0.1, 3), measured_case(0.095, 0.1, 9.5)});
  EXPECT_TRUE(to_json(good)["target_met"].get<bool>());
  EXPECT_FALSE(to_json(summarize_search({measured_case(0.1, 0.1, 10.5)}))["target_met"]);
}

TEST(SearchQuality, JsonNeverCallsACappedSetExhaustive) {
  SearchCase c = measured_case(0.09, 0.1, 1.5);
  nlohmann::json j = to_json(c);
  EXPECT_TRUE(j["comparison"]["exhaustive"].get<bool>());
  EXPECT_NEAR(j["ratio"].get<double>(), 0.9, 1e-12);
  EXPECT_TRUE(j["meets_threshold"].get<bool>());
  EXPECT_DOUBLE_EQ(j["search"]["seconds"].get<double>(), 1.5);

  c.capped = true;
  j = to_json(c);
  EXPECT_FALSE(j["comparison"]["exhaustive"].get<bool>());
  EXPECT_NE(j["comparison"]["set"].get<std::string>().find("capped"), std::string::npos);

  c.capped = false;
  c.time_limited = true;
  j = to_json(c);
  EXPECT_FALSE(j["comparison"]["exhaustive"].get<bool>());
  EXPECT_NE(j["comparison"]["set"].get<std::string>().find("time-limited"), std::string::npos);

  SearchCase e;
  e.error = "dry run: not measured";
  j = to_json(e);
  EXPECT_TRUE(j["ratio"].is_null());
  EXPECT_EQ(j["error"], "dry run: not measured");
  EXPECT_FALSE(j["meets_threshold"].get<bool>());
}

TEST(SearchQuality, TableShowsRatiosAndSummary) {
  std::vector<SearchCase> cases = {measured_case(0.09, 0.1, 2.0)};
  SearchCase capped = measured_case(0.05, 0.1, 1.0);
  capped.capped = true;
  cases.push_back(capped);
  const std::string t = format_search_table(cases, summarize_search(cases));
  EXPECT_NE(t.find("0.900"), std::string::npos) << t;
  EXPECT_NE(t.find("capped spread"), std::string::npos) << t;
  EXPECT_NE(t.find("1/2 cases (50%"), std::string::npos) << t;
  EXPECT_NE(t.find("max 2.00 s"), std::string::npos) << t;
  EXPECT_NE(t.find("NOT exhaustive"), std::string::npos) << t;
}

}  // namespace
}  // namespace sparsegen::bench
