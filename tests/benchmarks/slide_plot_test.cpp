// The plot of a sparsegen-slide-bench JSON document (benchmarks/slide_plot.h), from a document
// shaped as the benchmark writes it: groups per type and pattern with their geometric means, the
// lift bandwidth as a second series, a failed case without a bar, a well-formed SVG.
#include "benchmarks/slide_plot.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/benchmarks/xml_check.h"

namespace sparsegen::bench {
namespace {

nlohmann::json slide_case(const char* type, int n, double speedup, double lift) {
  return {{"type", type},        {"m", 4096},
          {"k", 14336},          {"n", n},
          {"pattern", "6:8"},    {"speedup_vs_dense", speedup},
          {"lift_vs_copy", lift}};
}

TEST(SlidePlot, GroupsPerTypeWithTheirGeometricMeans) {
  nlohmann::json failed = {{"type", "int8"}, {"m", 4096},        {"k", 14336},
                           {"n", 64},        {"pattern", "6:8"}, {"error", "no kernel"}};
  const nlohmann::json doc = {
      {"device", "NVIDIA H200"},
      {"cases",
       {slide_case("fp16", 1, 1.21, 0.4), slide_case("fp16", 16, 1.0 / 1.21, 0.5),
        slide_case("int8", 1, 0.8, 0.3), failed}}};
  const LogBarChart c = slide_chart(doc);
  ASSERT_EQ(c.categories.size(), 4u);
  EXPECT_EQ(c.categories[0], "4096x14336 N=1");
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].label, "fp16 6:8");
  EXPECT_EQ(c.groups[0].note, "gm 1.00x");
  EXPECT_EQ(c.groups[1].label, "int8 6:8");
  EXPECT_EQ(c.groups[1].begin, 2u);
  EXPECT_EQ(c.groups[1].end, 4u);
  EXPECT_EQ(c.groups[1].note, "gm 0.80x");  // the failed case has no ratio
  ASSERT_EQ(c.series.size(), 2u);
  EXPECT_FALSE(c.series[0].values[3].has_value());
  EXPECT_DOUBLE_EQ(*c.series[1].values[2], 0.3);
  const std::string svg = render_svg(c);
  EXPECT_EQ(sparsegen::testing::xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find("NVIDIA H200"), std::string::npos);
}

TEST(SlidePlot, EmptyDocumentHasNoCategories) {
  const LogBarChart c = slide_chart(nlohmann::json::object());
  EXPECT_TRUE(c.categories.empty());
  EXPECT_TRUE(c.groups.empty());
}

}  // namespace
}  // namespace sparsegen::bench
