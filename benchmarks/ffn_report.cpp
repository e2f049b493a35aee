#include "benchmarks/ffn_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace sparsegen::bench {

Crossover crossover(std::vector<CurvePoint> curve) {
  Crossover c;
  std::erase_if(curve, [](const CurvePoint& p) { return !(p.mean > 0) || !(p.speedup > 0); });
  if (curve.empty()) return c;
  std::sort(curve.begin(), curve.end(),
            [](const CurvePoint& a, const CurvePoint& b) { return a.mean < b.mean; });
  if (curve.front().speedup < 1.0) {
    c.below = curve.front().mean;
    return c;
  }
  for (size_t i = 0; i + 1 < curve.size(); ++i) {
    const CurvePoint &a = curve[i], &b = curve[i + 1];
    if (a.speedup >= 1.0 && b.speedup < 1.0) {
      // log s falls from log a.s >= 0 to log b.s < 0: its zero, in log(mean).
      const double la = std::log(a.speedup), lb = std::log(b.speedup);
      const double t = la / (la - lb);
      c.mean = std::exp(std::log(a.mean) + t * (std::log(b.mean) - std::log(a.mean)));
      return c;
    }
  }
  c.above = curve.back().mean;
  return c;
}

nlohmann::json ffn_summary(const nlohmann::json& cases) {
  using nlohmann::json;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<CurvePoint>> curves;
  int tuned = 0, within = 0;
  double worst = 0;
  for (const json& c : cases) {
    if (!c.is_object() || !c.contains("k") || !c.contains("n") || !c.contains("m")) continue;
    const auto key =
        std::make_tuple(c["k"].get<int64_t>(), c["n"].get<int64_t>(), c["m"].get<int64_t>());
    if (c.contains("speedup_vs_dense") && c.contains("mean_target"))
      curves[key].push_back({c["mean_target"].get<double>(), c["speedup_vs_dense"].get<double>()});
    if (c.contains("tuner") && c["tuner"].contains("vs_best")) {
      const double r = c["tuner"]["vs_best"].get<double>();
      ++tuned;
      within += r <= 1.10 ? 1 : 0;
      worst = std::max(worst, r);
    }
  }
  json crossovers = json::array();
  for (const auto& [key, curve] : curves) {
    const Crossover x = crossover(curve);
    json j = {{"k", std::get<0>(key)}, {"n", std::get<1>(key)}, {"m", std::get<2>(key)}};
    if (x.mean) j["crossover_mean_nnz"] = *x.mean;
    if (x.below) j["below_1_from_mean_nnz"] = *x.below;
    if (x.above) j["above_1_through_mean_nnz"] = *x.above;
    crossovers.push_back(j);
  }
  json out = {{"crossovers", crossovers}};
  if (tuned > 0)
    out["tuner"] = {{"cases", tuned}, {"within_10_percent", within}, {"worst_vs_best", worst}};
  return out;
}

}  // namespace sparsegen::bench
