// `sparsegen inspect FILE [--json] [--strict] [--tensor NAME]`: loads a matrix with full
// validation and prints its shape, value field, the structural features the cost model uses
// (costmodel/features.h), what converting its values to fp16 / bf16 would overflow, and the
// warnings the reader raised (count and first location per kind).
//
// Exit codes (main.cpp): 0 loaded (warnings do not change that); 1 the file was rejected.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <span>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "costmodel/features.h"
#include "ir/dtype.h"
#include "ir/family.h"
#include "ir/io/load.h"
#include "tools/commands.h"

namespace sparsegen::cli {
namespace {

struct InspectArgs {
  std::string file;
  bool json = false;
  bool strict = false;
  std::string tensor;
};

// Out-of-range count for one target precision, with the first offending entry located.
struct RangeCheck {
  DType target;
  int64_t count = 0;
  int64_t row = -1, col = -1;  // 0-based; -1 when count == 0
  float value = 0;
  bool imaginary = false;  // the first offender is an imaginary part
};

// Row of entry k (row_ptr is sorted; the entry's row is the last r with row_ptr[r] <= k).
int64_t row_of(const CsrMatrix& m, int64_t k) {
  auto it = std::upper_bound(m.row_ptr.begin(), m.row_ptr.end(), k);
  return static_cast<int64_t>(it - m.row_ptr.begin()) - 1;
}

RangeCheck check_range(const CsrMatrix& m, DType target) {
  RangeCheck rc{target};
  int64_t first = -1;
  for (int part = 0; part < 2; ++part) {
    const std::vector<float>& v = part == 0 ? m.values : m.imag;
    if (v.empty()) continue;
    const ConversionReport rep = sparsegen::check_range(std::span<const float>(v), target);
    rc.count += rep.out_of_range;
    // First in entry order; for a tie the real part comes first.
    if (rep.out_of_range > 0 && (first < 0 || rep.first_index < first)) {
      first = rep.first_index;
      rc.value = rep.first_value;
      rc.imaginary = part == 1;
    }
  }
  if (first >= 0) {
    rc.row = row_of(m, first);
    rc.col = m.col_idx[static_cast<size_t>(first)];
  }
  return rc;
}

// Every warning kind, zero counts included, so the JSON has a stable shape.
constexpr WarningKind kAllWarnings[] = {WarningKind::DuplicateEntry, WarningKind::NonFinite,
                                        WarningKind::OutOfRange, WarningKind::PrecisionLoss,
                                        WarningKind::PatternValues};

nlohmann::json report_json(const InspectArgs& args, const LoadedMatrix& lm, const MatrixFeatures& f,
                           const std::vector<RangeCheck>& ranges) {
  const CsrMatrix& m = lm.matrix;
  nlohmann::json j;
  j["file"] = args.file;
  j["format"] = lm.format;
  if (!args.tensor.empty()) j["tensor"] = args.tensor;
  j["field"] = std::string(to_string(m.field));
  j["pattern_only"] = m.pattern_only;
  j["rows"] = m.rows;
  j["cols"] = m.cols;
  j["nnz"] = m.nnz();
  j["density"] = f.density;
  j["features"] = to_json(f);
  if (m.field != ValueField::Complex) {  // each family's format figures
    for (const IrFamily* fam : ir_families()) {
      const auto sum = fam->summarize(m);
      if (!sum) continue;
      nlohmann::json o = nlohmann::json::object();
      for (const auto& [name, value] : sum->fields)
        std::visit([&, &name = name](auto v) { o[name] = v; }, value);
      j[sum->key] = o;
    }
  }
  nlohmann::json conv = nlohmann::json::object();
  for (const RangeCheck& rc : ranges) {
    nlohmann::json c = {{"out_of_range", rc.count}, {"max_finite", dtype_max(rc.target)}};
    if (rc.count > 0)
      c["first"] = {{"row", rc.row + 1},  // 1-based, as in Matrix Market and the warnings
                    {"col", rc.col + 1},
                    {"value", rc.value},
                    {"imaginary", rc.imaginary}};
    conv[std::string(to_string(rc.target))] = c;
  }
  j["conversion"] = conv;
  nlohmann::json warn = nlohmann::json::object();
  for (WarningKind k : kAllWarnings) {
    nlohmann::json w = {{"count", lm.diag.count(k)}};
    auto it = lm.diag.tallies().find(k);
    if (it != lm.diag.tallies().end()) {
      w["first"] = it->second.first.str();
      w["detail"] = it->second.first_detail;
    }
    warn[std::string(to_string(k))] = w;
  }
  j["warnings"] = warn;
  return j;
}

std::string report_text(const InspectArgs& args, const LoadedMatrix& lm, const MatrixFeatures& f,
                        const std::vector<RangeCheck>& ranges) {
  const CsrMatrix& m = lm.matrix;
  std::string s = fmt::format("{}\n", args.file);
  auto line = [&s](std::string_view key, const std::string& value) {
    s += fmt::format("  {:<22} {}\n", key, value);
  };
  line("format", lm.format + (args.tensor.empty() ? "" : fmt::format(" (tensor {})", args.tensor)));
  line("field", std::string(to_string(m.field)));
  line("pattern-only", m.pattern_only ? "yes (values synthesized)" : "no");
  s += format_table(f);
  if (m.field != ValueField::Complex) {
    for (const IrFamily* fam : ir_families())
      if (const auto sum = fam->summarize(m)) line(sum->label, sum->text);
  }
  for (const RangeCheck& rc : ranges) {
    std::string v = fmt::format("{} out of range", rc.count);
    if (rc.count > 0)
      v += fmt::format(" (first at ({}, {}), 1-based: {}{:g}; max finite {:g})", rc.row + 1,
                       rc.col + 1, rc.imaginary ? "imaginary part " : "", rc.value,
                       dtype_max(rc.target));
    line(fmt::format("as {}", to_string(rc.target)), v);
  }
  s += "  warnings\n";
  for (WarningKind k : kAllWarnings) {
    auto it = lm.diag.tallies().find(k);
    if (it == lm.diag.tallies().end()) {
      s += fmt::format("    {:<22} 0\n", to_string(k));
    } else {
      s += fmt::format("    {:<22} {} (first: {}: {})\n", to_string(k), it->second.count,
                       it->second.first.str(), it->second.first_detail);
    }
  }
  return s;
}

void run_inspect(const InspectArgs& args) {
  LoadOptions opts;
  opts.duplicates = args.strict ? DuplicatePolicy::Error : DuplicatePolicy::Sum;
  opts.tensor = args.tensor;
  LoadedMatrix lm = load_matrix(args.file, opts);
  const MatrixFeatures f = compute_features(lm.matrix);
  std::vector<RangeCheck> ranges = {check_range(lm.matrix, DType::F16),
                                    check_range(lm.matrix, DType::BF16)};
  if (args.json) {
    std::printf("%s\n", report_json(args, lm, f, ranges).dump(2).c_str());
  } else {
    std::fputs(report_text(args, lm, f, ranges).c_str(), stdout);
  }
}

}  // namespace

void register_inspect(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Load a matrix (.mtx, .smtx, .safetensors, .npy) with full validation and print "
      "its structure, features and warnings");
  cmd->add_option("file", args->file, "matrix file")->required();
  cmd->add_flag("--json", args->json, "print the report as JSON");
  cmd->add_flag("--strict", args->strict, "treat duplicate entries as an error");
  cmd->add_option("--tensor", args->tensor, "tensor name in a .safetensors file");
  cmd->callback([args] { run_inspect(*args); });
}

}  // namespace sparsegen::cli
