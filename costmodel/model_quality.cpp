#include "costmodel/model_quality.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace sparsegen {

namespace {

std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = (double(i) + double(j)) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.size() < 2) return 0;
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double n = double(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (saa <= 0 || sbb <= 0) return 0;
  return sab / std::sqrt(saa * sbb);
}

QualityReport evaluate(const CostModel& m, const std::vector<Sample>& held_out) {
  QualityReport q;
  std::map<std::string, std::vector<const Sample*>> by_case;
  std::vector<double> abs_log_err;
  for (const Sample& s : held_out) {
    if (!(s.time_us > 0)) continue;
    by_case[s.case_id].push_back(&s);
  }
  std::vector<double> rhos;
  double log_ratio_sum = 0;
  int within = 0;
  for (const auto& [id, ss] : by_case) {
    CaseQuality c;
    c.case_id = id;
    c.matrix = ss.front()->matrix;
    c.samples = static_cast<int>(ss.size());
    std::vector<double> pred, meas;
    for (const Sample* s : ss) {
      pred.push_back(m.predict_us(s->family, s->x, s->roofline_us));
      meas.push_back(s->time_us);
      abs_log_err.push_back(std::abs(std::log(pred.back() / s->time_us)));
    }
    const size_t pick = size_t(std::min_element(pred.begin(), pred.end()) - pred.begin());
    const size_t best = size_t(std::min_element(meas.begin(), meas.end()) - meas.begin());
    c.pick_ratio = meas[pick] / meas[best];
    c.pick_schedule = ss[pick]->schedule;
    c.best_schedule = ss[best]->schedule;
    c.spearman = spearman(pred, meas);
    q.samples += c.samples;
    if (c.samples >= 2) {
      ++q.ranked_cases;
      rhos.push_back(c.spearman);
      log_ratio_sum += std::log(c.pick_ratio);
      within += c.pick_ratio <= 1.1;
    }
    q.cases.push_back(std::move(c));
  }
  if (q.ranked_cases > 0) {
    q.mean_spearman = std::accumulate(rhos.begin(), rhos.end(), 0.0) / double(rhos.size());
    q.median_spearman = median(rhos);
    q.within_10pct = double(within) / q.ranked_cases;
    q.geomean_pick_ratio = std::exp(log_ratio_sum / q.ranked_cases);
  }
  q.median_abs_log_error = median(abs_log_err);
  return q;
}

nlohmann::json to_json(const QualityReport& q) {
  nlohmann::json j = {{"samples", q.samples},
                      {"ranked_cases", q.ranked_cases},
                      {"mean_spearman", q.mean_spearman},
                      {"median_spearman", q.median_spearman},
                      {"within_10pct", q.within_10pct},
                      {"geomean_pick_ratio", q.geomean_pick_ratio},
                      {"median_abs_log_error", q.median_abs_log_error}};
  j["cases"] = nlohmann::json::array();
  for (const CaseQuality& c : q.cases)
    j["cases"].push_back({{"case", c.case_id},
                          {"matrix", c.matrix},
                          {"samples", c.samples},
                          {"spearman", c.spearman},
                          {"pick_ratio", c.pick_ratio},
                          {"pick", c.pick_schedule},
                          {"best", c.best_schedule}});
  return j;
}

std::string format_report(const QualityReport& q, int worst) {
  std::string out = fmt::format(
      "model quality on {} held-out samples, {} cases: Spearman mean {:.3f} median {:.3f}; "
      "pick within 10% of the measured best in {:.1f}% of cases (geomean pick/best {:.3f}); "
      "median |log(pred/measured)| {:.3f} (x{:.2f})\n",
      q.samples, q.ranked_cases, q.mean_spearman, q.median_spearman, 100.0 * q.within_10pct,
      q.geomean_pick_ratio, q.median_abs_log_error, std::exp(q.median_abs_log_error));
  std::vector<const CaseQuality*> sorted;
  for (const CaseQuality& c : q.cases)
    if (c.samples >= 2) sorted.push_back(&c);
  std::sort(sorted.begin(), sorted.end(), [](const CaseQuality* a, const CaseQuality* b) {
    return a->pick_ratio > b->pick_ratio;
  });
  for (int i = 0; i < worst && i < static_cast<int>(sorted.size()); ++i)
    out += fmt::format("  worst: {}  pick/best {:.2f}  rho {:.2f}  ({} schedules)\n",
                       sorted[size_t(i)]->case_id, sorted[size_t(i)]->pick_ratio,
                       sorted[size_t(i)]->spearman, sorted[size_t(i)]->samples);
  return out;
}

}  // namespace sparsegen
