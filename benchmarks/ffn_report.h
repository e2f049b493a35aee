// The summary of a sparsegen-ffn-bench run: per shape (K x N) and token count M, the crossover
// (the mean nonzeros per row of the gate activations at which the fastest twell schedule stops
// beating the dense FFN), and how close the FFN tuner's picks came to the fastest measured
// variant. Pure host code over the bench's case records (its JSON "cases"), tested in CI.
//
//   nlohmann::json s = ffn_summary(cases);  // {"crossovers": [...], "tuner": {...}}
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace sparsegen::bench {

// One speedup curve: (mean nonzeros per row, speedup over dense) points, any order.
struct CurvePoint {
  double mean = 0, speedup = 0;
};

// Where a speedup curve falls from >= 1 to < 1, read off the first such step between measured
// means by interpolating log(speedup) linearly in log(mean). `below` / `above` say that the curve
// is already under 1 at its smallest mean, or still at or over 1 at its largest; both unset
// without points.
struct Crossover {
  std::optional<double> mean;  // the interpolated crossover
  std::optional<double> below, above;
};
Crossover crossover(std::vector<CurvePoint> curve);

// Over the case records (fields k, n, m, mean_target, speedup_vs_dense, and "tuner" with
// "vs_best" when the run tuned): one crossover per (k, n, m) of the twell speedups, and the count
// of tuned cases whose pick came within 10 % of the fastest measured variant.
nlohmann::json ffn_summary(const nlohmann::json& cases);

}  // namespace sparsegen::bench
