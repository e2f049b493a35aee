#include "benchmarks/slide_plot.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "benchmarks/report.h"

namespace sparsegen::bench {
using Json = nlohmann::json;

LogBarChart slide_chart(const Json& doc) {
  LogBarChart chart;
  chart.title = "slide (SlideSparse, lift included) against dense cuBLASLt of the same type";
  chart.subtitle = fmt::format("{}, {}", doc.value("device", std::string("?")),
                               doc.value("date", std::string("?")));
  chart.y_label = "dense time / slide time; lift GB/s / copy GB/s";
  BarSeries speedup{"vs dense cuBLASLt", "#1f77b4", {}};
  BarSeries lift{"lift / copy bandwidth", "#2ca02c", {}};
  // Groups by type and pattern, in order of first appearance.
  std::vector<std::string> group_names;
  std::vector<std::vector<const Json*>> groups;
  const Json cases = doc.value("cases", Json::array());
  for (const Json& c : cases) {
    const std::string g = json_text(c, "type", "?") + " " + json_text(c, "pattern", "?");
    size_t i = 0;
    while (i < group_names.size() && group_names[i] != g) ++i;
    if (i == group_names.size()) {
      group_names.push_back(g);
      groups.emplace_back();
    }
    groups[i].push_back(&c);
  }
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    CategoryGroup group{group_names[gi], "", chart.categories.size(), 0};
    std::vector<double> ratios;
    for (const Json* c : groups[gi]) {
      chart.categories.push_back(fmt::format("{}x{} N={}", json_number(*c, "m").value_or(0),
                                             json_number(*c, "k").value_or(0),
                                             json_number(*c, "n").value_or(0)));
      const std::optional<double> s = json_number(*c, "speedup_vs_dense");
      speedup.values.push_back(s);
      if (s && *s > 0) ratios.push_back(*s);
      lift.values.push_back(json_number(*c, "lift_vs_copy"));
    }
    group.end = chart.categories.size();
    group.note = ratios.empty() ? "gm -" : fmt::format("gm {:.2f}x", geomean(ratios));
    chart.groups.push_back(group);
  }
  chart.series = {speedup, lift};
  return chart;
}

}  // namespace sparsegen::bench
