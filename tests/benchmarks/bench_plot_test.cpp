// The plot of a sparsegen-bench JSON document (benchmarks/bench_plot.h), from documents built the
// way sparsegen-bench builds them (to_json of the records): the cases' order, groups and their
// geometric means as in the summary, missing speedups, the --exhaustive ratio, the file name.
#include "benchmarks/bench_plot.h"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "benchmarks/report.h"
#include "benchmarks/search_quality.h"
#include "tests/benchmarks/xml_check.h"

namespace sparsegen::bench {
namespace {

MethodResult timed(double ms) {
  MethodResult m;
  m.impl = "x";
  m.checked = true;
  m.median_ms = m.p10_ms = m.p90_ms = m.min_ms = ms;
  m.runs = 20;
  m.bytes = 1e6;
  return m;
}

CaseResult llm_case(const std::string& matrix, double sparsity, int64_t n, double ours,
                    double cublas, double cusparse) {
  CaseResult c;
  static_cast<CaseKey&>(c) = case_key("llm", matrix, 100, 100, 0, "magnitude", n, "fp16");
  c.sparsity = sparsity;
  c.ours = timed(ours);
  c.cublas = timed(cublas);
  c.cusparse = timed(cusparse);
  return c;
}

nlohmann::json suite_doc(const std::vector<CaseResult>& cases) {
  nlohmann::json doc;
  doc["tool"] = "sparsegen-bench";
  doc["date"] = "2026-01-02T03:04:05Z";
  doc["git_commit"] = "0123456789abcdef";
  doc["device"] = {{"name", "GPU <&> 1"}};
  doc["cases"] = nlohmann::json::array();
  for (const CaseResult& c : cases) doc["cases"].push_back(to_json(c));
  return doc;
}

TEST(BenchPlot, SpeedupsPerCaseGroupedAsTheSummary) {
  std::vector<CaseResult> cases = {
      llm_case("llm b", 0.5, 8, 1, 2, 10), llm_case("llm a", 0.5, 32, 1, 4, 1),
      llm_case("llm a", 0.5, 8, 1, 8, 40), llm_case("llm c", 0.7, 8, 2, 1, 8),
      llm_case("llm z", 0.5, 8, 1, 1, 90),
  };
  cases[4].cublas = MethodResult{};
  cases[4].cublas.error = "skipped: dense A would need 9 GiB";
  const LogBarChart c = bench_chart(suite_doc(cases));

  // Groups in order of first appearance, cases by matrix within a group.
  ASSERT_EQ(c.categories.size(), 5u);
  EXPECT_EQ(c.categories, (std::vector<std::string>{"llm a N=8", "llm b N=8", "llm z N=8",
                                                    "llm a N=32", "llm c N=8"}));
  ASSERT_EQ(c.series.size(), 2u);
  EXPECT_EQ(c.series[0].name, "vs cuBLAS dense");
  EXPECT_EQ(c.series[1].name, "vs cuSPARSE best CSR");
  EXPECT_EQ(c.series[0].values[0], std::optional<double>(8.0));
  EXPECT_EQ(c.series[1].values[0], std::optional<double>(40.0));
  EXPECT_EQ(c.series[0].values[2], std::nullopt);  // no cuBLAS time: no bar
  EXPECT_EQ(c.series[1].values[4], std::optional<double>(4.0));
  EXPECT_DOUBLE_EQ(c.baseline, 1.0);

  // The groups carry the summary's geometric means.
  const std::vector<GroupSummary> summary = summarize_groups(cases);
  ASSERT_EQ(c.groups.size(), summary.size());
  for (size_t g = 0; g < summary.size(); ++g) {
    EXPECT_EQ(c.groups[g].label, summary[g].group);
    EXPECT_EQ(c.groups[g].note, fmt::format("{:.2f}x / {:.2f}x", summary[g].geomean_vs_cublas,
                                            summary[g].geomean_vs_cusparse));
    EXPECT_EQ(c.groups[g].end - c.groups[g].begin, static_cast<size_t>(summary[g].cases));
  }
  EXPECT_EQ(c.groups[0].label, "llm s=0.50 N=8");
  EXPECT_EQ(c.groups[0].note, "4.00x / 33.02x");  // sqrt(2 * 8); cbrt(10 * 40 * 90)

  EXPECT_NE(c.title.find("GPU <&> 1"), std::string::npos) << c.title;
  EXPECT_NE(c.title.find("0123456789"), std::string::npos) << c.title;
  EXPECT_EQ(c.title.find("0123456789a"), std::string::npos) << c.title;  // 10 digits

  const std::string svg = render_svg(c);
  EXPECT_EQ(sparsegen::testing::xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find("GPU &lt;&amp;&gt; 1"), std::string::npos);
}

TEST(BenchPlot, DryRunDocumentHasCasesButNoBars) {
  CaseResult c = llm_case("llm a", 0.5, 8, 1, 1, 1);
  c.ours = c.cublas = c.cusparse = MethodResult{};
  c.ours.error = c.cublas.error = c.cusparse.error = "dry run: not measured";
  nlohmann::json doc = suite_doc({c});
  doc["device"] = {{"name", "none (dry run)"}};
  const LogBarChart chart = bench_chart(doc);
  ASSERT_EQ(chart.categories.size(), 1u);
  EXPECT_EQ(chart.series[0].values[0], std::nullopt);
  EXPECT_EQ(chart.series[1].values[0], std::nullopt);
  EXPECT_EQ(chart.groups.at(0).note, "- / -");
  const std::string svg = render_svg(chart);
  EXPECT_EQ(sparsegen::testing::xml_problem(svg), "") << svg;
  EXPECT_EQ(svg.find("</title></rect>"), std::string::npos) << svg;
}

TEST(BenchPlot, ExhaustiveDocumentShowsTheSearchQuality) {
  SearchCase a;
  static_cast<CaseKey&>(a) = case_key("file", "m.mtx", 4, 5, 6, "", 8, "fp16");
  a.best_ms = 0.9;
  a.pick_ms = 1.0;
  SearchCase b = a;
  b.n = 1;
  b.pick_ms.reset();
  b.error = "search failed";
  nlohmann::json doc;
  doc["mode"] = "exhaustive";
  doc["search_quality"]["cases"] = {to_json(a), to_json(b)};
  const LogBarChart c = bench_chart(doc);
  EXPECT_EQ(c.categories, (std::vector<std::string>{"m.mtx N=8", "m.mtx N=1"}));
  ASSERT_EQ(c.series.size(), 1u);
  ASSERT_TRUE(c.series[0].values[0]);
  EXPECT_NEAR(*c.series[0].values[0], 0.9, 1e-12);
  EXPECT_EQ(c.series[0].values[1], std::nullopt);
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].label, "file N=8");
  EXPECT_EQ(c.groups[0].note, "0.90");
  EXPECT_EQ(sparsegen::testing::xml_problem(render_svg(c)), "");
}

TEST(BenchPlot, AnyDocumentGivesAChart) {
  for (const char* text : {"{}", "[]", "{\"cases\": 3}", "{\"cases\": [{}]}",
                           "{\"mode\": \"exhaustive\", \"search_quality\": 1}"}) {
    const LogBarChart c = bench_chart(nlohmann::json::parse(text));
    EXPECT_EQ(sparsegen::testing::xml_problem(render_svg(c)), "") << text;
  }
}

TEST(BenchPlot, PlotPathIsNextToTheJson) {
  EXPECT_EQ(plot_path("results/run/bench.json"), "results/run/bench.svg");
  EXPECT_EQ(plot_path("out"), "out.svg");
  EXPECT_EQ(plot_path("a.b/c"), "a.b/c.svg");
  EXPECT_EQ(plot_path("x.svg"), "x.svg.svg");  // never the JSON file itself
}

}  // namespace
}  // namespace sparsegen::bench
