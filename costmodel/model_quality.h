// Quality of a cost model on held-out measurements: does it rank the schedules of a problem the
// way the GPU does, and is its pick close to the measured best?
//
//   QualityReport q = evaluate(model, test_samples);   // samples of matrices not used to fit
//   fmt::print("{}", format_report(q));
//
// Samples are grouped by Sample::case_id (one matrix + one problem: the set a search ranks). Per
// case: Spearman's rank correlation between predicted and measured times (average ranks for ties;
// 0 when either side is constant or the case has fewer than 2 samples, which are then left out of
// the means), and the pick ratio: the measured time of the schedule with the smallest predicted
// time divided by the best measured time (1 = the model picked the fastest). "Within 10%" counts
// cases whose pick ratio is <= 1.1.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/linear_model.h"

namespace sparsegen {

// Spearman's rho of two equally long sequences (average ranks for ties). 0 when n < 2 or either
// side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

struct CaseQuality {
  std::string case_id;
  std::string matrix;
  int samples = 0;
  double spearman = 0;
  double pick_ratio = 1;  // measured(model's pick) / measured best
  std::string pick_schedule, best_schedule;
};

struct QualityReport {
  std::vector<CaseQuality> cases;  // in case_id order
  int ranked_cases = 0;            // cases with >= 2 samples
  double mean_spearman = 0;
  double median_spearman = 0;
  double within_10pct = 0;  // fraction of ranked cases with pick_ratio <= 1.1
  double geomean_pick_ratio = 1;
  double median_abs_log_error = 0;  // |log(pred / measured)| over all samples
  int samples = 0;
};

QualityReport evaluate(const CostModel& m, const std::vector<Sample>& held_out);

nlohmann::json to_json(const QualityReport& q);
// A few lines: the headline numbers, then the worst cases.
std::string format_report(const QualityReport& q, int worst = 5);

}  // namespace sparsegen
