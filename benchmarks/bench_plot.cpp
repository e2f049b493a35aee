#include "benchmarks/bench_plot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "benchmarks/report.h"

namespace sparsegen::bench {

namespace {

using Json = nlohmann::json;

// One bar slot: a case, its summary group and a value per series.
struct Row {
  std::string group, label, matrix;
  std::vector<std::optional<double>> values;
};

// The summary group of a case record: its "group" field, or the same rule as the suite's
// (group_of) from the key fields (the --exhaustive records have none).
std::string group_of_record(const Json& c) {
  if (c.contains("group") && c["group"].is_string()) return c["group"].get<std::string>();
  CaseResult r;
  r.suite = json_text(c, "suite", "?");
  r.sparsity = json_number(c, "sparsity").value_or(0.0);
  r.n = static_cast<int64_t>(json_number(c, "n").value_or(0.0));
  return group_of(r);
}

// "MATRIX N=8": a category's label.
std::string label_of(const Json& c) {
  return fmt::format("{} N={}", json_text(c, "matrix"),
                     static_cast<long long>(json_number(c, "n").value_or(0.0)));
}

std::string gm_text(const std::vector<double>& v, const std::string& suffix) {
  return v.empty() ? "-" : fmt::format("{:.2f}{}", geomean(v), suffix);
}

// Orders the rows by group (first appearance), then matrix, and fills the chart's categories,
// series values and groups; a group's note joins each series' geometric mean with " / ".
void lay_out(std::vector<Row> rows, LogBarChart& chart) {
  std::vector<std::string> order;
  for (const Row& r : rows)
    if (std::find(order.begin(), order.end(), r.group) == order.end()) order.push_back(r.group);
  auto rank = [&](const Row& r) {
    return std::find(order.begin(), order.end(), r.group) - order.begin();
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
    return rank(x) != rank(y) ? rank(x) < rank(y) : x.matrix < y.matrix;
  });
  for (const Row& r : rows) {
    chart.categories.push_back(r.label);
    for (size_t s = 0; s < chart.series.size(); ++s) chart.series[s].values.push_back(r.values[s]);
    if (chart.groups.empty() || chart.groups.back().label != r.group)
      chart.groups.push_back({r.group, "", chart.categories.size() - 1, chart.categories.size()});
    chart.groups.back().end = chart.categories.size();
  }
  for (CategoryGroup& g : chart.groups) {
    std::vector<std::string> parts;
    for (const BarSeries& s : chart.series) {
      std::vector<double> v;
      for (size_t i = g.begin; i < g.end; ++i)
        if (s.values[i] && std::isfinite(*s.values[i]) && *s.values[i] > 0)
          v.push_back(*s.values[i]);
      parts.push_back(gm_text(v, chart.value_suffix));
    }
    g.note = fmt::format("{}", fmt::join(parts, " / "));
  }
}

std::string run_line(const Json& doc) {
  std::string device = "?";
  if (doc.contains("device") && doc["device"].is_object())
    device = json_text(doc["device"], "name", "?");
  return fmt::format("on {}, {}, commit {}{}", device, json_text(doc, "date", "?"),
                     json_text(doc, "git_commit", "?").substr(0, 10),
                     doc.contains("truncated") && doc["truncated"] == true ? " (truncated)" : "");
}

}  // namespace

LogBarChart bench_chart(const Json& doc) {
  LogBarChart chart;
  std::vector<Row> rows;
  if (json_text(doc, "mode") == "exhaustive") {
    chart.title = "sparsegen-bench --exhaustive " + run_line(doc);
    chart.subtitle =
        "search quality: exhaustive best time / search pick time (1: the pick is the best; "
        "target >= 0.9); group labels: geometric mean";
    chart.y_label = "exhaustive best / search pick";
    chart.value_suffix = "";
    chart.series = {{"exhaustive best / search pick", "#2ca02c", {}}};
    if (doc.contains("search_quality") && doc["search_quality"].contains("cases"))
      for (const Json& c : doc["search_quality"]["cases"])
        rows.push_back(
            {group_of_record(c), label_of(c), json_text(c, "matrix"), {json_number(c, "ratio")}});
  } else {
    chart.title = "sparsegen-bench " + run_line(doc);
    chart.subtitle =
        "speedup of our kernel = baseline time / our time (> 1: ours faster); group labels: "
        "geometric mean vs cuBLAS / vs cuSPARSE";
    chart.y_label = "speedup (baseline time / our time)";
    chart.series = {{"vs cuBLAS dense", "#1f77b4", {}}, {"vs cuSPARSE best CSR", "#ff7f0e", {}}};
    if (doc.contains("cases") && doc["cases"].is_array())
      for (const Json& c : doc["cases"])
        rows.push_back(
            {group_of_record(c),
             label_of(c),
             json_text(c, "matrix"),
             {json_number(c, "speedup_vs_cublas"), json_number(c, "speedup_vs_cusparse")}});
  }
  lay_out(std::move(rows), chart);
  return chart;
}

std::string plot_path(const std::string& json_path) {
  std::filesystem::path p(json_path);
  if (p.extension() == ".svg") return json_path + ".svg";  // never the JSON file itself
  return p.replace_extension(".svg").string();
}

}  // namespace sparsegen::bench
