// A bar chart of named series over labelled categories on a log y axis, written as a
// self-contained SVG document by plain C++ (no plotting library, no scripts, no external files):
// the benchmarks' plots (e.g. speedups over a baseline, where 1.0 is "as fast").
//
//   LogBarChart c;
//   c.title = "speedup";
//   c.categories = {"A N=8", "B N=8"};
//   c.series = {{"vs cuBLAS", "#1f77b4", {2.0, 0.5}}, {"vs cuSPARSE", "#ff7f0e", {8.0, {}}}};
//   c.groups = {{"N=8", "gm 1.00x", 0, 2}};
//   const std::string svg = render_svg(c);
//
// Bars grow up or down from `baseline` (a value below it is a bar downwards), drawn side by side
// within a category in series order; a missing, non-finite or non-positive value draws no bar.
// The y axis spans whole decades around the values and the baseline, which a reference line
// marks. Groups are runs of consecutive categories: a separator after each, the label and an
// optional note above the plot (turned vertical when a label is wider than its group). Every
// bar carries a tooltip (<title>) with its category, series and value.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparsegen::bench {

struct BarSeries {
  std::string name;                           // the legend's text
  std::string color;                          // an SVG color ("#1f77b4")
  std::vector<std::optional<double>> values;  // one per category (missing ones: no bar)
};

// Categories [begin, end) drawn as one group.
struct CategoryGroup {
  std::string label;
  std::string note;  // a second line under the label (e.g. the group's geometric mean); optional
  size_t begin = 0, end = 0;
};

struct LogBarChart {
  std::string title;
  std::string subtitle;  // optional, under the title
  std::string y_label;
  std::vector<std::string> categories;  // x labels, drawn vertically under the axis
  std::vector<BarSeries> series;
  std::vector<CategoryGroup> groups;  // optional; in category order, not overlapping
  double baseline = 1.0;              // > 0: where bars start and the reference line lies
  std::string value_suffix = "x";     // after the tick labels and tooltip values ("2x")
};

// The chart as an SVG document. Throws std::invalid_argument when a series has not one value per
// category, a group is out of range, or the baseline is not positive and finite.
std::string render_svg(const LogBarChart& chart);

// `text` with & < > " ' replaced by their XML entities (for text and attribute values).
std::string xml_escape(std::string_view text);

}  // namespace sparsegen::bench
