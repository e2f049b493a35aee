// Results of `sparsegen-bench` and their summary: per-case records, speedups, geometric means per
// group, achieved bandwidth, JSON. Pure host code (no CUDA), tested in CI.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparsegen::bench {

// One method's measurement in a case (ours, cuBLAS dense, cuSPARSE CSR).
struct MethodResult {
  std::string impl;  // what ran: schedule text, "cublasGemmEx", "cusparseSpMM CSR_ALG2 row", ...
  bool checked = false;  // output compared with the CPU reference and passed
  std::string error;     // why there is no time (unsupported, check failed, compile error)
  double median_ms = 0, p10_ms = 0, p90_ms = 0, min_ms = 0;
  int runs = 0;
  double bytes = 0;     // A's stored bytes + B + C, each once
  double gbps() const;  // bytes / median time; 0 without a time
  bool ok() const { return error.empty() && median_ms > 0; }
  nlohmann::json extra;  // method-specific details (candidates tried, compile times, ...)
};

// What identifies a benchmark case, the matrix and the problem: shared by the suite's records and
// the search-quality ones, and written as the same flat JSON fields.
struct CaseKey {
  std::string suite;   // "llm" or "suitesparse" (or "file" for a single matrix)
  std::string matrix;  // e.g. "llm 4096x11008 magnitude 70%" or the file path
  int64_t rows = 0, cols = 0, nnz = 0;
  double sparsity = 0;  // 1 - nnz / (rows * cols)
  std::string pruning;  // "random", "magnitude", "" for files
  int64_t n = 0;
  std::string dtype;
};

// The key of a case; sparsity from the shape (0 for an empty shape).
CaseKey case_key(std::string suite, std::string matrix, int64_t rows, int64_t cols, int64_t nnz,
                 std::string pruning, int64_t n, std::string dtype);
// Writes the key's fields into j (suite, matrix, rows, cols, nnz, sparsity, pruning, n, dtype).
void put_case_key(nlohmann::json& j, const CaseKey& k);

struct CaseResult : CaseKey {
  MethodResult ours, cublas, cusparse;
  // Speedup of ours over a baseline: baseline time / our time (> 1: ours faster); empty when
  // either has no time.
  std::optional<double> speedup_vs_cublas() const;
  std::optional<double> speedup_vs_cusparse() const;
};

// A field of a JSON record: the number at `key`, or nullopt when absent or not a number; the
// string at `key`, or `fallback`.
std::optional<double> json_number(const nlohmann::json& j, const char* key);
std::string json_text(const nlohmann::json& j, const char* key, const std::string& fallback = "");

// How a benchmark ran, for its JSON: its command line (argv joined by spaces) and the commit it was
// built from ($SPARSEGEN_GIT_COMMIT, which tools/gpu_run.sh sets; "unknown" without it).
std::string command_line(int argc, const char* const* argv);
std::string git_commit();

nlohmann::json to_json(const MethodResult& m);
nlohmann::json to_json(const CaseResult& c);

// Geometric mean of positive values. Throws std::invalid_argument when empty or any value is not
// positive and finite.
double geomean(const std::vector<double>& values);

// Summary group of a case: "llm s=0.70 N=8" (sparsity rounded to 2 digits), "suitesparse N=32".
std::string group_of(const CaseResult& c);

struct GroupSummary {
  std::string group;
  int cases = 0;
  int with_cublas = 0;  // cases that have both our time and cuBLAS's
  int with_cusparse = 0;
  int not_slower_than_cusparse = 0;  // of with_cusparse: ours' median <= cuSPARSE's
  double geomean_vs_cublas = 0;      // 0 when with_cublas == 0
  double geomean_vs_cusparse = 0;
  double median_ours_gbps = 0;
  // How often each family was ours (the tuner's pick: a generated kernel, or a library
  // candidate such as `dense`), over the cases with a time; the family is the SPEC's first field.
  std::map<std::string, int> picks;
};

// The family of a schedule SPEC ("general;block=..." -> "general"); "" for an empty one.
std::string family_of_impl(const std::string& impl);
// "general 5, dense 1": picks by count, descending (ties by name).
std::string format_picks(const std::map<std::string, int>& picks);

// Groups in first-appearance order.
std::vector<GroupSummary> summarize_groups(const std::vector<CaseResult>& cases);

// The stdout table of the groups.
std::string format_summary(const std::vector<GroupSummary>& groups);

}  // namespace sparsegen::bench
