#include "benchmarks/search_quality.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "benchmarks/report.h"

namespace sparsegen::bench {

std::optional<double> SearchCase::ratio() const {
  if (!best_ms || !pick_ms || !(*best_ms > 0) || !(*pick_ms > 0) || !std::isfinite(*best_ms) ||
      !std::isfinite(*pick_ms))
    return std::nullopt;
  return *best_ms / *pick_ms;
}

namespace {
// A ratio equal to the threshold up to rounding (0.09 / 0.1 is 0.8999999999999999) meets it.
bool meets(double ratio, double threshold) {
  return ratio >= threshold - 1e-9;
}

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json to_json(const SearchCase& c) {
  nlohmann::json j;
  put_case_key(j, c);
  j["search"] = {{"top_k", c.top_k},
                 {"seconds", c.search_s},
                 {"pick", c.pick},
                 {"predicted_ms", opt(c.pick_predicted_ms)},
                 {"measured_ms", opt(c.search_measured_ms)},
                 {"top_k_schedules", c.top_k_schedules}};
  const char* how = c.capped ? "capped: an even spread of the enumeration plus the model's top k"
                    : c.time_limited ? "time-limited: stopped before every schedule was attempted"
                                     : "exhaustive: every enumerated schedule";
  j["comparison"] = {{"enumerated", c.enumerated},
                     {"selected", c.selected},
                     {"attempted", c.attempted},
                     {"measured", c.measured},
                     {"failed", c.failed},
                     {"capped", c.capped},
                     {"time_limited", c.time_limited},
                     {"exhaustive", c.exhaustive()},
                     {"set", how},
                     {"best", c.best},
                     {"best_ms", opt(c.best_ms)},
                     {"pick_ms", opt(c.pick_ms)},
                     {"best_in_top_k", c.best_in_top_k}};
  j["ratio"] = opt(c.ratio());
  const auto r = c.ratio();
  j["meets_threshold"] = r.has_value() && meets(*r, kSearchQualityThreshold);
  if (!c.error.empty()) j["error"] = c.error;
  if (!c.extra.is_null()) j["details"] = c.extra;
  return j;
}

SearchSummary summarize_search(const std::vector<SearchCase>& cases, double threshold) {
  SearchSummary s;
  s.threshold = threshold;
  s.cases = static_cast<int>(cases.size());
  std::vector<double> ratios, secs;
  for (const SearchCase& c : cases) {
    if (!c.exhaustive()) ++s.not_exhaustive;
    if (c.search_s > 0) secs.push_back(c.search_s);  // 0: the search did not run
    if (const auto r = c.ratio()) {
      ratios.push_back(*r);
      if (meets(*r, threshold)) ++s.at_least_threshold;
    }
  }
  s.with_ratio = static_cast<int>(ratios.size());
  if (s.cases > 0) s.fraction = static_cast<double>(s.at_least_threshold) / s.cases;
  if (!ratios.empty()) {
    s.geomean_ratio = geomean(ratios);
    s.min_ratio = *std::min_element(ratios.begin(), ratios.end());
  }
  if (!secs.empty()) {
    std::sort(secs.begin(), secs.end());
    s.max_search_s = secs.back();
    const size_t h = secs.size() / 2;
    s.median_search_s = secs.size() % 2 ? secs[h] : 0.5 * (secs[h - 1] + secs[h]);
  }
  return s;
}

nlohmann::json to_json(const SearchSummary& s) {
  return {{"cases", s.cases},
          {"with_ratio", s.with_ratio},
          {"threshold", s.threshold},
          {"at_least_threshold", s.at_least_threshold},
          {"fraction_at_least_threshold", s.fraction},
          {"geomean_ratio", s.geomean_ratio},
          {"min_ratio", s.min_ratio},
          {"max_search_s", s.max_search_s},
          {"median_search_s", s.median_search_s},
          {"not_exhaustive_cases", s.not_exhaustive},
          {"target", "ratio >= 0.9 on >= 90% of the cases, search < 10 s per matrix"},
          {"target_met", s.cases > 0 && s.fraction >= 0.9 && s.max_search_s < 10.0}};
}

std::string format_search_table(const std::vector<SearchCase>& cases, const SearchSummary& s) {
  std::string t = fmt::format("{:<34} {:>4} {:>9} {:>10} {:>10} {:>6} {:>8}  {}\n", "matrix", "N",
                              "measured", "best ms", "pick ms", "ratio", "search s", "set");
  for (const SearchCase& c : cases) {
    const auto r = c.ratio();
    const std::string set = !c.error.empty() ? "error: " + c.error
                            : c.capped       ? "capped spread"
                            : c.time_limited ? "time-limited"
                                             : "exhaustive";
    t += fmt::format("{:<34} {:>4} {:>9} {:>10} {:>10} {:>6} {:>8.2f}  {}\n", c.matrix, c.n,
                     fmt::format("{}/{}", c.measured, c.enumerated),
                     c.best_ms ? fmt::format("{:.4f}", *c.best_ms) : "-",
                     c.pick_ms ? fmt::format("{:.4f}", *c.pick_ms) : "-",
                     r ? fmt::format("{:.3f}", *r) : "-", c.search_s, set);
  }
  t += fmt::format(
      "search quality: ratio >= {:.2f} on {}/{} cases ({:.0f}%; cases without a ratio count as "
      "misses), geomean ratio {:.3f}, min {:.3f}\n",
      s.threshold, s.at_least_threshold, s.cases, 100.0 * s.fraction, s.geomean_ratio, s.min_ratio);
  t += fmt::format("search time: max {:.2f} s, median {:.2f} s per case", s.max_search_s,
                   s.median_search_s);
  if (s.not_exhaustive > 0)
    t += fmt::format("; {} case(s) NOT exhaustive (capped, time-limited or failed)",
                     s.not_exhaustive);
  t += "\n";
  return t;
}

std::vector<size_t> spread_selection(size_t total, size_t limit, const std::vector<size_t>& must) {
  if (limit == 0) throw std::invalid_argument("spread_selection: limit must be >= 1");
  std::vector<size_t> out;
  if (total <= limit) {
    out.resize(total);
    for (size_t i = 0; i < total; ++i) out[i] = i;
    return out;
  }
  out.reserve(limit + must.size());
  // floor(i * total / limit) without overflow: total = q * limit + r. total > limit, so
  // consecutive values differ by at least 1: `limit` distinct indices.
  const size_t q = total / limit, r = total % limit;
  for (size_t i = 0; i < limit; ++i) out.push_back(i * q + i * r / limit);
  for (size_t m : must)
    if (m < total) out.push_back(m);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace sparsegen::bench
