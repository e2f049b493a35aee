// The general family's ir/ layer: GeneralSparse schedules over the padded CSR of ir/format.h.
#include <fmt/format.h>

#include "ir/family.h"
#include "ir/format.h"
#include "ir/general_enumerate.h"
#include "ir/general_schedule.h"
#include "ir/general_verifier.h"
#include "ir/interpreter.h"

namespace sparsegen {
namespace {

// The row walk behind a general schedule's FormatStats, shared by schedules of one stats key.
struct GeneralRowDetail final : FamilyStats {
  GeneralRowStats rows;
};

struct PackedGeneral final : Packed<PackedFormat> {
  using Packed::Packed;
  const std::vector<float>& master_values() const override { return format.values; }
  const std::vector<int32_t>& column_indices() const override { return format.col_idx; }
  std::vector<int32_t> take_column_indices() override { return std::move(format.col_idx); }
  std::vector<float> take_master_values() override { return std::move(format.values); }
  FormatStats stats() const override { return format.stats; }
  std::string describe() const override {
    return fmt::format("{} packed nonzeros ({} real), {} block tasks", format.stats.nnz_padded,
                       format.stats.nnz, format.stats.block_tasks);
  }
};

class GeneralIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return GeneralSchedule::kFamily; }
  bool general_purpose() const override { return true; }
  std::string spec(const Schedule& s) const override {
    return general_spec(s.as<GeneralSchedule>());
  }
  std::string print(const Schedule& s) const override {
    return print_general(s.as<GeneralSchedule>());
  }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_general_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<GeneralSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule& s) const override {
    return validate_general(p, s.as<GeneralSchedule>());
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_general_schedules(p, a, opt);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix&) const override {
    std::vector<std::string> why;
    for (std::string& w : validate_general(p, GeneralSchedule{}))  // op and dtype only
      if (w.find("bcols") == std::string::npos && w.find("tcols") == std::string::npos &&
          w.find("group") == std::string::npos)
        why.push_back(std::move(w));
    return why;
  }
  // Every field shapes the packing (order, padding, task tables): no two schedules share one.
  std::optional<std::string> pack_key(const Schedule&) const override { return std::nullopt; }
  // The statistics depend on the row padding and the empty-row rule only.
  std::optional<std::string> stats_key(const Schedule& s) const override {
    return general_stats_key(s.as<GeneralSchedule>());
  }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    const GeneralSchedule& g = s.as<GeneralSchedule>();
    if (a.rows != p.m || a.cols != p.k || a.field == ValueField::Complex)
      return compute_format_stats(a, p, s);  // throws, naming the mismatch
    auto d = std::make_shared<GeneralRowDetail>();
    d->rows = general_row_stats(a, g.pad, g.at(Level::Block).kind == WorkSplit::Nnz);
    FormatStats fs = general_format_stats(d->rows, p, g);
    fs.detail = std::move(d);
    return fs;
  }
  FormatStats restat(const FormatStats& shared, const Problem& p,
                     const Schedule& s) const override {
    const auto* d = dynamic_cast<const GeneralRowDetail*>(shared.detail.get());
    if (d == nullptr) return shared;
    FormatStats fs = general_format_stats(d->rows, p, s.as<GeneralSchedule>());
    fs.detail = shared.detail;
    return fs;
  }
  std::vector<std::string> verify(const Problem&, const Schedule& s, const FormatStats& st,
                                  const DeviceLimits& dev) const override {
    return verify_general(s.as<GeneralSchedule>(), st, dev);
  }
  int registers(const Problem&, const Schedule& s) const override {
    return general_registers(s.as<GeneralSchedule>());
  }
  int64_t shared_bytes(const Problem&, const Schedule& s) const override {
    return general_shared_bytes(s.as<GeneralSchedule>());
  }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule& s) const override {
    return std::make_shared<PackedGeneral>(pack_format(a, p, s));
  }
  void interpret(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    sparsegen::interpret(p, s, dynamic_cast<const PackedGeneral&>(packed).format, b, c, alpha,
                         beta);
  }
  // Padded CSR: what `inspect` shows of the matrix itself.
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  // Atomic output: at most one fp32 add per warp task crossing the row, plus the prologue's.
  int64_t output_adds(const Problem&, const Schedule& s, int64_t row_length) const override {
    const GeneralSchedule& g = s.as<GeneralSchedule>();
    if (g.output() != OutputMode::Atomic) return 0;
    const int64_t zw = g.at(Level::Warp).kind == WorkSplit::Nnz ? g.at(Level::Warp).amount : 1;
    const int64_t padded = (row_length + g.pad - 1) / g.pad * g.pad;
    return (padded + zw - 1) / zw + 2;
  }
};

}  // namespace

const IrFamily& general_ir_family() {
  static const GeneralIrFamily f;
  return f;
}

}  // namespace sparsegen
