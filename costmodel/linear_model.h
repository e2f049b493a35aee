// The cost model: one ridge-regularised linear regression per strategy family (the GeneralSparse
// approach: one fitted formula per memory-access / reduction family), predicting log(run time)
// from the feature vector of costmodel/schedule_features.h.
//
// Why log space. Measured times of one problem span ~4 orders of magnitude across matrices, N and
// schedules (5 us for a small SpMV, 50 ms for a badly tiled wide SpMM), and the errors that matter
// are multiplicative: a 20% misprediction is as bad at 10 us as at 10 ms, and the search ranks by
// ratios. Least squares on raw times would be dominated by the few slowest kernels and could
// predict negative times; on log(time) every sample weighs the same in relative terms, residuals
// are close to homoscedastic, and exp() keeps predictions positive. The byte and work terms enter
// as logs too, so a coefficient reads as an exponent (time ~ bytes^a · iterations^b ...); the
// roofline estimate itself (launch + max of DRAM, L2, issue, critical-path times) is the first
// feature, and the rest correct it. Ridge (L2 penalty on standardised features, intercept not
// penalised, lambda chosen per family by exact leave-one-out error of the ridge solution) keeps
// the ~28 correlated features stable with a few dozen samples per family.
//
// Formulas are keyed by family and regime (model_key in costmodel/schedule_features.h: small
// problems have their own). Fallbacks, in order: the key's formula, the family's formula (needs
// FitOptions::min_samples samples), else a global
// formula fitted on every sample, else the roofline estimate (no fitted model at all, e.g. a fresh
// device): predict_us never fails.
//
//   std::vector<Sample> train = ...;                    // from `sparsegen calibrate`
//   CostModel m = fit_model(train, device);
//   save_model(m, "costmodel/models/" + model_file_name(device));  // NVIDIA_H200_sm_90.json
//   auto ranked = rank_schedules(p, candidates, a, compute_features(a), m);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/features.h"
#include "costmodel/schedule_features.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// One measurement: a schedule of a problem on a matrix, with its features and measured time.
struct Sample {
  std::string matrix;     // matrix name: the unit of the train/test split
  std::string case_id;    // matrix + problem (N, dtype, layouts): the group a search ranks within
  std::string schedule;   // SPEC
  std::string family;     // the formula it trains: ScheduleFeatures::model_key
  std::vector<double> x;  // ScheduleFeatures::values
  double roofline_us = 0;
  double time_us = 0;  // measured median
};
nlohmann::json to_json(const Sample& s);
// Throws UserError naming `where` when a field is missing or has the wrong type.
Sample sample_from_json(const nlohmann::json& j, const std::string& where);

// One fitted formula: log(time_us) = intercept + sum coef_i * (x_i - mean_i) / scale_i.
struct FamilyModel {
  std::vector<double> mean, scale, coef;
  double intercept = 0;
  double lambda = 0;
  int64_t samples = 0;
  double rmse_log = 0;          // training RMSE in log space
  double loo_rmse_log = 0;      // leave-one-out RMSE in log space (of the chosen lambda)
  double y_min = 0, y_max = 0;  // training range of log(time); predictions are clamped near it
};

struct FitOptions {
  // Candidate lambdas (on standardised features, scaled by the sample count); the one with the
  // smallest leave-one-out error is kept. A single value fixes it.
  std::vector<double> lambdas = {1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0};
  int min_samples = 24;  // per family; fewer: the global formula serves it
};

// Ridge fit of y against rows x (all of one length). Precondition: x.size() == y.size() >= 1.
FamilyModel fit_ridge(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                      const FitOptions& opt = {});
// The formula's value (log time) at x, unclamped.
double evaluate_formula(const FamilyModel& m, const std::vector<double>& x);

class CostModel {
 public:
  DeviceProfile device;  // what it was fitted on (roofline-only: the target)
  int feature_version = kScheduleFeatureVersion;
  std::vector<std::string> feature_names = ScheduleFeatures::names();
  std::map<std::string, FamilyModel> families;  // by model_key (family and regime)
  std::optional<FamilyModel> global;            // every family together
  std::string created;                          // UTC date of the fit
  std::string origin = "roofline";              // file it came from, "embedded:<name>", ...

  // Predicted run time in microseconds, never below f.critical_floor_us. `source` (optional):
  // "family", "global" or "roofline".
  double predict_us(const ScheduleFeatures& f, std::string* source = nullptr) const;
  // `global`: whether the global formula predicts a family without a formula of its own.
  double predict_us(const std::string& family, const std::vector<double>& x, double roofline_us,
                    std::string* source = nullptr, bool global = true) const;
  bool fitted() const { return global.has_value() || !families.empty(); }
};

// A model with no fitted formula: every prediction is the roofline estimate for `device`.
CostModel roofline_model(const DeviceProfile& device);

// Fits every family with at least opt.min_samples samples and the global formula (needs
// opt.min_samples samples in all). Samples with non-positive or non-finite times are ignored.
CostModel fit_model(const std::vector<Sample>& samples, const DeviceProfile& device,
                    const FitOptions& opt = {});

// JSON form: {"format": "sparsegen-costmodel", "version": 1, "feature_version", "device": {name,
// cc, sm_count, dram_gbs, ...}, "feature_names", "created", "global", "families": {...}}.
nlohmann::json to_json(const CostModel& m);
// Throws UserError naming `origin` for a foreign or malformed document, another format version,
// or feature names that differ from this build's (an older model must be re-calibrated).
CostModel model_from_json(const nlohmann::json& j, const std::string& origin);
void save_model(const CostModel& m, const std::string& path);  // throws UserError on I/O error
// Throws UserError (file name in the message) for an unreadable, non-JSON or foreign file.
CostModel load_model(const std::string& path);

// Empty when `m` was fitted on `target` (same name and compute capability); else one line saying
// what differs, for a warning (predictions still work but their scale may be off).
std::string device_mismatch(const CostModel& m, const DeviceProfile& target);

struct Ranked {
  size_t index = 0;  // into the candidate list
  double predicted_us = 0;
  double roofline_us = 0;
  std::string family;
  std::string source;  // "family", "global" or "roofline"
};

// Candidates (legal for p; verified) ordered by predicted time, fastest first (ties: candidate
// order). Uses m.device for the device terms.
std::vector<Ranked> rank_schedules(const Problem& p, const std::vector<Schedule>& candidates,
                                   const CsrMatrix& a, const MatrixFeatures& mf,
                                   const CostModel& m);
// Same with a precomputed row profile (saves an O(rows log rows) sort per call).
std::vector<Ranked> rank_schedules(const Problem& p, const std::vector<Schedule>& candidates,
                                   const CsrMatrix& a, const MatrixFeatures& mf,
                                   const RowProfile& rows, const CostModel& m);

}  // namespace sparsegen
