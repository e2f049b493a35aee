#include "costmodel/linear_model.h"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "ir/diagnostics.h"
#include "ir/format.h"
#include "ir/parallel.h"

namespace sparsegen {

namespace {

constexpr const char* kFormat = "sparsegen-costmodel";
constexpr int kFormatVersion = 1;
// Predictions are clamped to the training range of log(time) widened by this (a factor e each
// way): a linear formula extrapolated far outside its data is not to be trusted.
constexpr double kClampMargin = 1.0;

std::string utc_date() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

template <class T>
T get_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw UserError(fmt::format("{}: missing field '{}'", where, key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw UserError(fmt::format("{}: field '{}' has the wrong type", where, key));
  }
}

nlohmann::json family_json(const FamilyModel& f) {
  return {{"mean", f.mean},         {"scale", f.scale},
          {"coef", f.coef},         {"intercept", f.intercept},
          {"lambda", f.lambda},     {"samples", f.samples},
          {"rmse_log", f.rmse_log}, {"loo_rmse_log", f.loo_rmse_log},
          {"y_min", f.y_min},       {"y_max", f.y_max}};
}

FamilyModel family_from_json(const nlohmann::json& j, const std::string& where, size_t nfeat) {
  FamilyModel f;
  f.mean = get_field<std::vector<double>>(j, "mean", where);
  f.scale = get_field<std::vector<double>>(j, "scale", where);
  f.coef = get_field<std::vector<double>>(j, "coef", where);
  f.intercept = get_field<double>(j, "intercept", where);
  f.lambda = get_field<double>(j, "lambda", where);
  f.samples = get_field<int64_t>(j, "samples", where);
  f.rmse_log = get_field<double>(j, "rmse_log", where);
  f.loo_rmse_log = get_field<double>(j, "loo_rmse_log", where);
  f.y_min = get_field<double>(j, "y_min", where);
  f.y_max = get_field<double>(j, "y_max", where);
  if (f.mean.size() != nfeat || f.scale.size() != nfeat || f.coef.size() != nfeat)
    throw UserError(
        fmt::format("{}: expected {} coefficients, found {}", where, nfeat, f.coef.size()));
  for (double s : f.scale)
    if (!(s > 0) || !std::isfinite(s)) throw UserError(where + ": non-positive feature scale");
  return f;
}

}  // namespace

nlohmann::json to_json(const Sample& s) {
  return {{"matrix", s.matrix},  {"case", s.case_id}, {"schedule", s.schedule},
          {"family", s.family},  {"x", s.x},          {"roofline_us", s.roofline_us},
          {"time_us", s.time_us}};
}

Sample sample_from_json(const nlohmann::json& j, const std::string& where) {
  Sample s;
  s.matrix = get_field<std::string>(j, "matrix", where);
  s.case_id = get_field<std::string>(j, "case", where);
  s.schedule = get_field<std::string>(j, "schedule", where);
  s.family = get_field<std::string>(j, "family", where);
  s.x = get_field<std::vector<double>>(j, "x", where);
  s.roofline_us = get_field<double>(j, "roofline_us", where);
  s.time_us = get_field<double>(j, "time_us", where);
  return s;
}

FamilyModel fit_ridge(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                      const FitOptions& opt) {
  SG_ASSERT(!x.empty() && x.size() == y.size(), "fit_ridge: need one feature row per target");
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  const Eigen::Index p = static_cast<Eigen::Index>(x[0].size());
  Eigen::MatrixXd X(n, p);
  Eigen::VectorXd Y(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    SG_ASSERT(static_cast<Eigen::Index>(x[size_t(i)].size()) == p, "fit_ridge: ragged rows");
    for (Eigen::Index j = 0; j < p; ++j) X(i, j) = x[size_t(i)][size_t(j)];
    Y(i) = y[size_t(i)];
  }
  FamilyModel m;
  m.samples = n;
  m.y_min = Y.minCoeff();
  m.y_max = Y.maxCoeff();
  m.intercept = Y.mean();
  m.mean.assign(size_t(p), 0.0);
  m.scale.assign(size_t(p), 1.0);
  m.coef.assign(size_t(p), 0.0);
  // Standardise; a constant column stays zero (its coefficient is then 0 under any lambda > 0).
  Eigen::MatrixXd Z(n, p);
  for (Eigen::Index j = 0; j < p; ++j) {
    const double mu = X.col(j).mean();
    const double sd = std::sqrt((X.col(j).array() - mu).square().mean());
    m.mean[size_t(j)] = mu;
    if (sd > 1e-12 && std::isfinite(sd)) {
      m.scale[size_t(j)] = sd;
      Z.col(j) = (X.col(j).array() - mu) / sd;
    } else {
      Z.col(j).setZero();
    }
  }
  const Eigen::VectorXd yc = Y.array() - m.intercept;
  const Eigen::MatrixXd ZtZ = Z.transpose() * Z;
  const Eigen::VectorXd Zty = Z.transpose() * yc;
  double best = std::numeric_limits<double>::infinity();
  for (double lambda : opt.lambdas) {
    Eigen::MatrixXd A = ZtZ;
    A.diagonal().array() += lambda * double(n);
    const Eigen::LDLT<Eigen::MatrixXd> ldlt(A);
    const Eigen::VectorXd beta = ldlt.solve(Zty);
    // Exact leave-one-out residuals of ridge: r_i / (1 - h_ii), h_ii = 1/n + z_i' A^-1 z_i.
    const Eigen::MatrixXd AinvZt = ldlt.solve(Z.transpose());
    const Eigen::VectorXd r = yc - Z * beta;
    double loo = 0, fit = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const double h = 1.0 / double(n) + Z.row(i).dot(AinvZt.col(i));
      const double e = h < 1.0 - 1e-9 ? r(i) / (1.0 - h) : r(i) * 1e3;
      loo += e * e;
      fit += r(i) * r(i);
    }
    loo = std::sqrt(loo / double(n));
    if (loo < best || !std::isfinite(best)) {
      best = loo;
      m.lambda = lambda;
      m.loo_rmse_log = loo;
      m.rmse_log = std::sqrt(fit / double(n));
      for (Eigen::Index j = 0; j < p; ++j) m.coef[size_t(j)] = beta(j);
    }
  }
  return m;
}

double evaluate_formula(const FamilyModel& m, const std::vector<double>& x) {
  double v = m.intercept;
  for (size_t j = 0; j < m.coef.size() && j < x.size(); ++j)
    v += m.coef[j] * (x[j] - m.mean[j]) / m.scale[j];
  return v;
}

double CostModel::predict_us(const std::string& family, const std::vector<double>& x,
                             double roofline_us, std::string* source, bool use_global) const {
  const FamilyModel* f = nullptr;
  std::string src = "roofline";
  if (x.size() == feature_names.size()) {
    if (auto it = families.find(family); it != families.end()) {
      f = &it->second;
      src = "family";
    } else if (global && use_global) {
      f = &*global;
      src = "global";
    }
  }
  if (source) *source = src;
  if (f == nullptr) return roofline_us;
  const double v =
      std::clamp(evaluate_formula(*f, x), f->y_min - kClampMargin, f->y_max + kClampMargin);
  return std::exp(v);
}

double CostModel::predict_us(const ScheduleFeatures& f, std::string* source) const {
  // A model fitted before the regimes were keyed (or without small samples of this family) has
  // no formula for the regime's key: the family's own formula predicts it.
  const std::string& key = families.count(f.model_key) ? f.model_key : f.family;
  return std::max(predict_us(key, f.values, f.roofline_us, source, f.global_formula),
                  f.critical_floor_us);
}

CostModel roofline_model(const DeviceProfile& device) {
  CostModel m;
  m.device = device;
  m.origin = "roofline";
  return m;
}

CostModel fit_model(const std::vector<Sample>& samples, const DeviceProfile& device,
                    const FitOptions& opt) {
  CostModel m;
  m.device = device;
  m.created = utc_date();
  m.origin = "fit";
  const size_t nf = m.feature_names.size();
  std::map<std::string, std::pair<std::vector<std::vector<double>>, std::vector<double>>> by;
  std::vector<std::vector<double>> all_x;
  std::vector<double> all_y;
  for (const Sample& s : samples) {
    if (!(s.time_us > 0) || !std::isfinite(s.time_us) || s.x.size() != nf) continue;
    bool finite = true;
    for (double v : s.x) finite = finite && std::isfinite(v);
    if (!finite) continue;
    auto& [fx, fy] = by[s.family];
    fx.push_back(s.x);
    fy.push_back(std::log(s.time_us));
    all_x.push_back(s.x);
    all_y.push_back(std::log(s.time_us));
  }
  const size_t min_n = static_cast<size_t>(std::max(1, opt.min_samples));
  for (const auto& [fam, xy] : by)
    if (xy.first.size() >= min_n) m.families[fam] = fit_ridge(xy.first, xy.second, opt);
  if (all_x.size() >= min_n) m.global = fit_ridge(all_x, all_y, opt);
  return m;
}

nlohmann::json to_json(const CostModel& m) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["version"] = kFormatVersion;
  j["feature_version"] = m.feature_version;
  j["device"] = {{"name", m.device.name},
                 {"cc", fmt::format("{}.{}", m.device.cc_major, m.device.cc_minor)},
                 {"cc_major", m.device.cc_major},
                 {"cc_minor", m.device.cc_minor},
                 {"sm_count", m.device.sm_count},
                 {"dram_gbs", m.device.dram_gbs},
                 {"l2_gbs", m.device.l2_gbs},
                 {"l2_bytes", m.device.l2_bytes},
                 {"clock_ghz", m.device.clock_ghz},
                 {"max_threads_per_sm", m.device.max_threads_per_sm},
                 {"max_blocks_per_sm", m.device.max_blocks_per_sm},
                 {"registers_per_sm", m.device.registers_per_sm}};
  j["feature_names"] = m.feature_names;
  j["created"] = m.created;
  j["global"] = m.global ? family_json(*m.global) : nlohmann::json(nullptr);
  j["families"] = nlohmann::json::object();
  for (const auto& [name, f] : m.families) j["families"][name] = family_json(f);
  return j;
}

CostModel model_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
    throw UserError(
        fmt::format("{}: not a sparsegen cost model (no \"format\": \"{}\")", origin, kFormat));
  const int version = get_field<int>(j, "version", origin);
  if (version != kFormatVersion)
    throw UserError(fmt::format("{}: cost model format version {}, this build reads {}", origin,
                                version, kFormatVersion));
  CostModel m;
  m.origin = origin;
  m.feature_version = get_field<int>(j, "feature_version", origin);
  m.feature_names = get_field<std::vector<std::string>>(j, "feature_names", origin);
  if (m.feature_version != kScheduleFeatureVersion || m.feature_names != ScheduleFeatures::names())
    throw UserError(fmt::format(
        "{}: fitted on feature version {} ({} features), this build computes version {} ({}); "
        "run `sparsegen calibrate` again",
        origin, m.feature_version, m.feature_names.size(), kScheduleFeatureVersion,
        ScheduleFeatures::names().size()));
  const nlohmann::json& d = j.contains("device") ? j["device"] : nlohmann::json();
  const std::string dw = origin + ": device";
  m.device.name = get_field<std::string>(d, "name", dw);
  m.device.cc_major = get_field<int>(d, "cc_major", dw);
  m.device.cc_minor = get_field<int>(d, "cc_minor", dw);
  m.device.sm_count = get_field<int>(d, "sm_count", dw);
  m.device.dram_gbs = get_field<double>(d, "dram_gbs", dw);
  m.device.l2_gbs = get_field<double>(d, "l2_gbs", dw);
  m.device.l2_bytes = get_field<int64_t>(d, "l2_bytes", dw);
  m.device.clock_ghz = get_field<double>(d, "clock_ghz", dw);
  m.device.max_threads_per_sm = get_field<int>(d, "max_threads_per_sm", dw);
  m.device.max_blocks_per_sm = get_field<int>(d, "max_blocks_per_sm", dw);
  m.device.registers_per_sm = get_field<int>(d, "registers_per_sm", dw);
  if (m.device.sm_count <= 0 || !(m.device.dram_gbs > 0) || !(m.device.l2_gbs > 0) ||
      !(m.device.clock_ghz > 0) || m.device.max_threads_per_sm <= 0 ||
      m.device.registers_per_sm <= 0 || m.device.max_blocks_per_sm <= 0)
    throw UserError(dw + ": non-positive device property");
  if (j.contains("created") && j["created"].is_string()) m.created = j["created"];
  const size_t nf = m.feature_names.size();
  if (j.contains("global") && !j["global"].is_null())
    m.global = family_from_json(j["global"], origin + ": global", nf);
  if (j.contains("families")) {
    if (!j["families"].is_object()) throw UserError(origin + ": 'families' is not an object");
    for (const auto& [name, f] : j["families"].items())
      m.families[name] = family_from_json(f, origin + ": family '" + name + "'", nf);
  }
  return m;
}

void save_model(const CostModel& m, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw UserError(fmt::format("{}: cannot write the cost model", path));
  out << to_json(m).dump(1) << "\n";
  if (!out) throw UserError(fmt::format("{}: write failed", path));
}

CostModel load_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("{}: cannot read the cost model", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(fmt::format("{} (byte {}): not valid JSON: {}", path, e.byte, e.what()));
  }
  return model_from_json(j, path);
}

std::string device_mismatch(const CostModel& m, const DeviceProfile& target) {
  if (m.device.name == target.name && m.device.cc_major == target.cc_major &&
      m.device.cc_minor == target.cc_minor)
    return "";
  return fmt::format(
      "cost model {} was fitted on {} (sm_{}{}), this device is {} (sm_{}{}); "
      "its predictions may be off: run `sparsegen calibrate` on this device",
      m.origin, m.device.name, m.device.cc_major, m.device.cc_minor, target.name, target.cc_major,
      target.cc_minor);
}

std::vector<Ranked> rank_schedules(const Problem& p, const std::vector<Schedule>& candidates,
                                   const CsrMatrix& a, const MatrixFeatures& mf,
                                   const RowProfile& rows, const CostModel& m) {
  // Statistics first, one row walk per stats key (serial: the cache is shared); then the
  // features, whose work simulation walks the rows once per schedule (O(rows) each: 400 schedules
  // of a 4M-row matrix), in parallel over the schedules.
  std::map<std::string, FormatStats> stats_cache;
  std::vector<FormatStats> stats;
  stats.reserve(candidates.size());
  for (const Schedule& s : candidates)
    stats.push_back(candidate_format_stats(a, p, s, &stats_cache));
  std::vector<Ranked> out(candidates.size());
  for_each_task(candidates.size(), 0, [&](size_t i) {
    const ScheduleFeatures f = schedule_features(p, candidates[i], stats[i], mf, rows, m.device);
    Ranked& r = out[i];
    r.index = i;
    r.family = f.family;
    r.roofline_us = f.roofline_us;
    r.predicted_us = m.predict_us(f, &r.source);
  });
  std::stable_sort(out.begin(), out.end(), [](const Ranked& x, const Ranked& y) {
    return x.predicted_us < y.predicted_us;
  });
  return out;
}

std::vector<Ranked> rank_schedules(const Problem& p, const std::vector<Schedule>& candidates,
                                   const CsrMatrix& a, const MatrixFeatures& mf,
                                   const CostModel& m) {
  return rank_schedules(p, candidates, a, mf, row_profile(a), m);
}

}  // namespace sparsegen
