// The SVG bar chart (benchmarks/svg_plot.h): well-formed XML, one bar per drawable value with its
// tooltip, series colors and legend, decade ticks, the reference line at the baseline (bars below
// it grow downwards from it), groups, and escaped text.
#include "benchmarks/svg_plot.h"

#include <cmath>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "tests/benchmarks/xml_check.h"

namespace sparsegen::bench {
namespace {

using sparsegen::testing::xml_problem;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + what.size())) ++n;
  return n;
}

// The first capture of `re` in `s` ("" when it does not match).
std::string capture(const std::string& s, const std::string& re) {
  std::smatch m;
  return std::regex_search(s, m, std::regex(re)) ? m[1].str() : std::string();
}

LogBarChart sample() {
  LogBarChart c;
  c.title = "speedups of <tiny> & \"small\"";
  c.subtitle = "a subtitle";
  c.y_label = "speedup (baseline / ours)";
  c.categories = {"m1 N=8", "x<&>y N=8", "m3 N=32"};
  c.series = {{"vs cuBLAS", "#1f77b4", {2.0, 0.5, std::nullopt}},
              {"vs cuSPARSE", "#ff7f0e", {8.0, NAN, 0.0}}};
  c.groups = {{"N=8", "1.00x / 8.00x", 0, 2}, {"N=32", "- / -", 2, 3}};
  return c;
}

TEST(SvgPlot, XmlEscape) {
  EXPECT_EQ(xml_escape("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&apos;d");
  EXPECT_EQ(xml_escape("tab\tbell\a"), "tab\tbell ");  // no control characters in XML 1.0
  EXPECT_EQ(xml_escape("llm 4096x4096 magnitude 70%"), "llm 4096x4096 magnitude 70%");
}

TEST(SvgPlot, WellFormedWithSeriesLegendAndAxis) {
  const std::string svg = render_svg(sample());
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  // One group per series in its color, one bar (with a tooltip) per drawable value: missing,
  // NaN and zero draw none.
  EXPECT_NE(svg.find("<g class=\"series\" fill=\"#1f77b4\">"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<g class=\"series\" fill=\"#ff7f0e\">"), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "</title></rect>"), 3u) << svg;
  EXPECT_NE(svg.find("<title>m1 N=8: vs cuBLAS 2x</title>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>m1 N=8: vs cuSPARSE 8x</title>"), std::string::npos) << svg;
  // Legend and axis labels.
  EXPECT_NE(svg.find(">vs cuBLAS</text>"), std::string::npos);
  EXPECT_NE(svg.find(">vs cuSPARSE</text>"), std::string::npos);
  EXPECT_NE(svg.find(">speedup (baseline / ours)</text>"), std::string::npos);
  // Decades around the values and the baseline (0.5 .. 8: 0.1x .. 10x), with 2x and 5x between.
  for (const char* tick : {">0.1x<", ">0.2x<", ">0.5x<", ">1x<", ">2x<", ">5x<", ">10x<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">100x<"), std::string::npos);
  EXPECT_EQ(svg.find(">0.01x<"), std::string::npos);
  // Groups: labels and notes above the plot.
  EXPECT_NE(svg.find(">N=8</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">1.00x / 8.00x</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">N=32</text>"), std::string::npos) << svg;
}

TEST(SvgPlot, ReferenceLineAtTheBaselineAndBarsBelowItGrowDown) {
  const std::string svg = render_svg(sample());
  EXPECT_EQ(count(svg, "class=\"reference\""), 1u);
  const std::string ref_y =
      capture(svg, "<line class=\"reference\" x1=\"[0-9.]+\" y1=\"([0-9.]+)\"");
  ASSERT_FALSE(ref_y.empty()) << svg;
  // The 1x grid line lies at the same height.
  EXPECT_EQ(capture(svg, "y1=\"([0-9.]+)\"[^\n]*>1x</text>"), ref_y) << svg;
  // The 0.5x bar starts at the baseline (its top) and the 2x bar ends there (its bottom).
  const std::string down = capture(
      svg, "<rect x=\"[0-9.]+\" y=\"([0-9.]+)\"[^>]*><title>x&lt;&amp;&gt;y N=8: vs cuBLAS");
  EXPECT_EQ(down, ref_y) << svg;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      svg, m,
      std::regex("<rect x=\"[0-9.]+\" y=\"([0-9.]+)\" width=\"[0-9.]+\" height=\"([0-9.]+)\">"
                 "<title>m1 N=8: vs cuBLAS")))
      << svg;
  EXPECT_NEAR(std::stod(m[1].str()) + std::stod(m[2].str()), std::stod(ref_y), 0.11);
}

TEST(SvgPlot, TextIsEscaped) {
  const std::string svg = render_svg(sample());
  EXPECT_EQ(svg.find("x<&>y"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">x&lt;&amp;&gt;y N=8</text>"), std::string::npos) << svg;  // x label
  EXPECT_NE(svg.find("<title>speedups of &lt;tiny&gt; &amp; &quot;small&quot;</title>"),
            std::string::npos)
      << svg;
}

TEST(SvgPlot, AxisSpansTheDecadesOfTheValues) {
  LogBarChart c;
  c.categories = {"a", "b"};
  c.series = {{"s", "red", {0.03, 250.0}}};
  const std::string svg = render_svg(c);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  for (const char* tick : {">0.01x<", ">0.1x<", ">1x<", ">10x<", ">100x<", ">1000x<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">2x<"), std::string::npos);  // many decades: no ticks between them
  EXPECT_EQ(svg.find(">10000x<"), std::string::npos);
}

TEST(SvgPlot, NarrowGroupsGetVerticalLabels) {
  LogBarChart c = sample();
  c.groups = {{"a group label wider than its one category", "1.23x / 4.56x", 0, 1},
              {"another", "", 1, 3}};
  const std::string svg = render_svg(c);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  // Label and note on one line, turned vertical (horizontal labels put the note under it).
  EXPECT_NE(svg.find(">a group label wider than its one category  1.23x / 4.56x</text>"),
            std::string::npos)
      << svg;
}

TEST(SvgPlot, LongCategoryLabelsKeepTheirEnd) {
  LogBarChart c;
  const std::string name = "suitesparse/" + std::string(60, 'd') + "/matrix_name.mtx N=8";
  c.categories = {name};
  c.series = {{"s", "red", {2.0}}};
  const std::string svg = render_svg(c);
  EXPECT_NE(svg.find("...dddd"), std::string::npos) << svg;
  EXPECT_NE(svg.find("/matrix_name.mtx N=8</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>" + name + ": s 2x</title>"), std::string::npos);  // full name
}

TEST(SvgPlot, EmptyChartRenders) {
  LogBarChart c;
  c.title = "nothing";
  c.series = {{"s", "red", {}}};
  const std::string svg = render_svg(c);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_NE(svg.find(">no data<"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"reference\""), 1u);
}

TEST(SvgPlot, RejectsInconsistentCharts) {
  LogBarChart c = sample();
  c.series[1].values.pop_back();
  EXPECT_THROW(render_svg(c), std::invalid_argument);
  c = sample();
  c.groups.push_back({"past the end", "", 2, 4});
  EXPECT_THROW(render_svg(c), std::invalid_argument);
  c = sample();
  c.baseline = 0;
  EXPECT_THROW(render_svg(c), std::invalid_argument);
}

TEST(SvgPlot, TheCheckerCatchesBrokenXml) {
  EXPECT_EQ(xml_problem("<svg><g></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a<b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a & b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg x=\"1\" x=\"2\"/>"), "");
  EXPECT_NE(xml_problem("<svg x=1/>"), "");
  EXPECT_NE(xml_problem("<html/>"), "");
}

}  // namespace
}  // namespace sparsegen::bench
