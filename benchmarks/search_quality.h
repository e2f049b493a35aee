// Search quality for `sparsegen-bench --exhaustive`: how close the tuner's pick (model rank +
// measure the top k, as `sparsegen tune` does) comes to the best schedule found by measuring the
// whole enumeration, and how long the search took. Pure host code (no CUDA), tested in CI.
//
// The tuner's target: the pick is >= 90% as fast as the exhaustive best (ratio = best_ms / pick_ms
// >= 0.9) on >= 90% of the suite, in under 10 s of search per matrix.
//
//   std::vector<size_t> sel = spread_selection(all.size(), 400, top_k_indices);
//   SearchSummary s = summarize_search(cases);
//   fmt::print("{}", format_search_table(cases, s));
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmarks/report.h"

namespace sparsegen::bench {

inline constexpr double kSearchQualityThreshold = 0.9;

// One (matrix, N, dtype) case of the exhaustive comparison.
struct SearchCase : CaseKey {
  // The search (compiler/tune.h, cache off).
  int top_k = 0;
  double search_s = 0;                       // wall time of tune()
  std::string pick;                          // its winner's schedule
  std::optional<double> pick_predicted_ms;   // the model's prediction for it
  std::optional<double> search_measured_ms;  // tune's own measurement of it
  std::vector<std::string> top_k_schedules;  // what tune measured, in rank order

  // The comparison set.
  int enumerated = 0;   // schedules in the space (what tune ranks)
  int selected = 0;     // schedules chosen for measuring (all, or the capped spread + top k)
  int attempted = 0;    // of those, built or tried before the time limit
  int measured = 0;     // built, passed the correctness check and timed
  int failed = 0;       // attempted but not timed (compile error, check failure, launch error)
  bool capped = false;  // enumerated > --exhaustive-limit: an even spread, not all
  bool time_limited = false;      // --time-limit stopped the measuring before all were attempted
  std::string best;               // fastest measured schedule
  std::optional<double> best_ms;  // its full measurement (median)
  std::optional<double> pick_ms;  // the pick's full measurement, same method, same process
  bool best_in_top_k = false;     // the best is one of the schedules tune measured
  std::string error;              // why there is no ratio
  nlohmann::json extra;           // timings of the phases, failures, screening details

  // best_ms / pick_ms (<= 1 when both were measured in the same final round); empty without both.
  std::optional<double> ratio() const;
  // Every enumerated schedule was attempted (not capped, not time-limited, no case error).
  bool exhaustive() const { return !capped && !time_limited && error.empty(); }
};

nlohmann::json to_json(const SearchCase& c);

struct SearchSummary {
  int cases = 0;
  int with_ratio = 0;
  int at_least_threshold = 0;  // ratio >= threshold
  double fraction = 0;         // at_least_threshold / cases (a case without a ratio counts as a
                               // miss); 0 when there are no cases
  double threshold = kSearchQualityThreshold;
  double geomean_ratio = 0;  // over cases with a ratio; 0 when none
  double min_ratio = 0;      // 0 when none
  double max_search_s = 0;
  double median_search_s = 0;
  int not_exhaustive = 0;  // capped or time-limited or failed cases
};

SearchSummary summarize_search(const std::vector<SearchCase>& cases,
                               double threshold = kSearchQualityThreshold);
nlohmann::json to_json(const SearchSummary& s);

// The stdout table: one line per case, then the summary lines.
std::string format_search_table(const std::vector<SearchCase>& cases, const SearchSummary& s);

// Indices (ascending, unique) of the schedules to measure out of `total` enumerated: all of them
// when total <= limit; otherwise `limit` evenly spread ones (floor(i * total / limit), i < limit:
// the first is always index 0) plus every index in `must` (the model's top k) that is < total.
// Deterministic. limit must be >= 1 (std::invalid_argument otherwise).
std::vector<size_t> spread_selection(size_t total, size_t limit, const std::vector<size_t>& must);

}  // namespace sparsegen::bench
