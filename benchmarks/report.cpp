#include "benchmarks/report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace sparsegen::bench {

double MethodResult::gbps() const {
  return ok() ? bytes / (median_ms * 1e6) : 0.0;
}

namespace {
std::optional<double> speedup(const MethodResult& ours, const MethodResult& base) {
  if (!ours.ok() || !base.ok()) return std::nullopt;
  return base.median_ms / ours.median_ms;
}
}  // namespace

std::optional<double> CaseResult::speedup_vs_cublas() const {
  return speedup(ours, cublas);
}
std::optional<double> CaseResult::speedup_vs_cusparse() const {
  return speedup(ours, cusparse);
}

nlohmann::json to_json(const MethodResult& m) {
  nlohmann::json j;
  j["impl"] = m.impl;
  j["checked"] = m.checked;
  if (!m.error.empty()) j["error"] = m.error;
  if (m.ok()) {
    j["median_ms"] = m.median_ms;
    j["p10_ms"] = m.p10_ms;
    j["p90_ms"] = m.p90_ms;
    j["min_ms"] = m.min_ms;
    j["runs"] = m.runs;
    j["bytes"] = m.bytes;
    j["gbps"] = m.gbps();
  }
  if (!m.extra.is_null()) j["details"] = m.extra;
  return j;
}

CaseKey case_key(std::string suite, std::string matrix, int64_t rows, int64_t cols, int64_t nnz,
                 std::string pruning, int64_t n, std::string dtype) {
  CaseKey k;
  k.suite = std::move(suite);
  k.matrix = std::move(matrix);
  k.rows = rows;
  k.cols = cols;
  k.nnz = nnz;
  k.sparsity = rows * cols > 0 ? 1.0 - static_cast<double>(nnz) /
                                           (static_cast<double>(rows) * static_cast<double>(cols))
                               : 0.0;
  k.pruning = std::move(pruning);
  k.n = n;
  k.dtype = std::move(dtype);
  return k;
}

void put_case_key(nlohmann::json& j, const CaseKey& k) {
  j["suite"] = k.suite;
  j["matrix"] = k.matrix;
  j["rows"] = k.rows;
  j["cols"] = k.cols;
  j["nnz"] = k.nnz;
  j["sparsity"] = k.sparsity;
  j["pruning"] = k.pruning;
  j["n"] = k.n;
  j["dtype"] = k.dtype;
}

nlohmann::json to_json(const CaseResult& c) {
  nlohmann::json j;
  put_case_key(j, c);
  j["group"] = group_of(c);
  j["ours"] = to_json(c.ours);
  j["cublas"] = to_json(c.cublas);
  j["cusparse"] = to_json(c.cusparse);
  const auto vb = c.speedup_vs_cublas();
  const auto vs = c.speedup_vs_cusparse();
  j["speedup_vs_cublas"] = vb ? nlohmann::json(*vb) : nlohmann::json(nullptr);
  j["speedup_vs_cusparse"] = vs ? nlohmann::json(*vs) : nlohmann::json(nullptr);
  return j;
}

double geomean(const std::vector<double>& values) {
  if (values.empty()) throw std::invalid_argument("geometric mean of no values");
  double log_sum = 0;
  for (double v : values) {
    if (!std::isfinite(v) || v <= 0) {
      throw std::invalid_argument(fmt::format("geometric mean of a non-positive value {}", v));
    }
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

std::string group_of(const CaseResult& c) {
  if (c.suite == "llm") return fmt::format("llm s={:.2f} N={}", c.sparsity, c.n);
  return fmt::format("{} N={}", c.suite, c.n);
}

std::vector<GroupSummary> summarize_groups(const std::vector<CaseResult>& cases) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> members;
  for (const CaseResult& c : cases) {
    const std::string g = group_of(c);
    if (!members.count(g)) order.push_back(g);
    members[g].push_back(&c);
  }
  std::vector<GroupSummary> out;
  for (const std::string& g : order) {
    GroupSummary s;
    s.group = g;
    std::vector<double> vb, vs, bw;
    for (const CaseResult* c : members[g]) {
      ++s.cases;
      if (auto x = c->speedup_vs_cublas()) vb.push_back(*x);
      if (auto x = c->speedup_vs_cusparse()) {
        vs.push_back(*x);
        if (*x >= 1.0) ++s.not_slower_than_cusparse;
      }
      if (c->ours.ok()) {
        bw.push_back(c->ours.gbps());
        ++s.picks[family_of_impl(c->ours.impl)];
      }
    }
    s.with_cublas = static_cast<int>(vb.size());
    s.with_cusparse = static_cast<int>(vs.size());
    if (!vb.empty()) s.geomean_vs_cublas = geomean(vb);
    if (!vs.empty()) s.geomean_vs_cusparse = geomean(vs);
    if (!bw.empty()) {
      std::sort(bw.begin(), bw.end());
      s.median_ours_gbps =
          bw.size() % 2 ? bw[bw.size() / 2] : 0.5 * (bw[bw.size() / 2 - 1] + bw[bw.size() / 2]);
    }
    out.push_back(s);
  }
  return out;
}

std::string family_of_impl(const std::string& impl) {
  return impl.substr(0, impl.find(';'));
}

std::string format_picks(const std::map<std::string, int>& picks) {
  std::vector<std::pair<std::string, int>> v(picks.begin(), picks.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  std::string out;
  for (const auto& [family, count] : v)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", family, count);
  return out;
}

std::string format_summary(const std::vector<GroupSummary>& groups) {
  std::string t =
      fmt::format("{:<24} {:>5}  {:>14}  {:>16}  {:>12}  {:>10}  {}\n", "group", "cases",
                  "vs cuBLAS (gm)", "vs cuSPARSE (gm)", ">= cuSPARSE", "ours GB/s", "ours picked");
  auto cell = [](double v, int n, int total) {
    if (n == 0) return std::string("-");
    std::string s = fmt::format("{:.2f}x", v);
    if (n != total) s += fmt::format(" ({}/{})", n, total);
    return s;
  };
  for (const GroupSummary& g : groups) {
    const std::string not_slower =
        g.with_cusparse == 0 ? "-"
                             : fmt::format("{}/{}", g.not_slower_than_cusparse, g.with_cusparse);
    t += fmt::format("{:<24} {:>5}  {:>14}  {:>16}  {:>12}  {:>10.0f}  {}\n", g.group, g.cases,
                     cell(g.geomean_vs_cublas, g.with_cublas, g.cases),
                     cell(g.geomean_vs_cusparse, g.with_cusparse, g.cases), not_slower,
                     g.median_ours_gbps, format_picks(g.picks));
  }
  return t;
}

std::optional<double> json_number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) out += ' ';
    out += argv[i];
  }
  return out;
}

std::string git_commit() {
  const char* c = std::getenv("SPARSEGEN_GIT_COMMIT");
  return c != nullptr && *c != '\0' ? c : "unknown";
}

std::string json_text(const nlohmann::json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

}  // namespace sparsegen::bench
