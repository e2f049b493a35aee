// The twell family's ir/ layer: the activation-sparse gated FFN (ir/twell_schedule.h) over
// tile-wise ELL activations (ir/twell_format.h).
#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/ffn.h"
#include "ir/interpreter.h"
#include "ir/twell_format.h"
#include "ir/twell_schedule.h"

namespace sparsegen {
namespace {

struct TwellFamilyStats final : FamilyStats {
  TwellStats tw;
};

struct PackedTwell final : Packed<TwellFormat> {
  using Packed::Packed;
  const std::vector<float>& master_values() const override { return format.entry_value; }
  const std::vector<int32_t>& column_indices() const override {
    static const std::vector<int32_t> none;  // columns travel inside the entries
    return none;
  }
  std::vector<int32_t> take_column_indices() override { return {}; }
  FormatStats stats() const override {
    FormatStats fs;
    fs.rows = format.rows;
    fs.nnz = format.nnz;
    fs.nnz_padded = static_cast<int64_t>(format.entry_value.size());
    return fs;
  }
  std::string describe() const override {
    return fmt::format("TwELL {} x {} tiles, cap {}, {} overflowing tiles in {} rows, {} bytes",
                       format.rows, format.tiles, format.cap, format.overflow_tiles,
                       format.overflow_rows, format.device_bytes(2));
  }
};

class TwellIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return TwellSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  std::string spec(const Schedule& s) const override { return twell_spec(s.as<TwellSchedule>()); }
  std::string print(const Schedule& s) const override { return print_twell(s.as<TwellSchedule>()); }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_twell_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<TwellSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule& s) const override {
    return validate_twell(p, s.as<TwellSchedule>());
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_twell_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const override {
    std::vector<std::string> why = validate_twell(p, TwellSchedule{});
    if (why.empty() && a.cols != p.n)
      why.push_back(fmt::format(
          "the activation pattern has {} columns, the FFN's hidden width is N={}", a.cols, p.n));
    return why;
  }
  // The packing depends on the tile and its capacity.
  std::optional<std::string> pack_key(const Schedule& s) const override {
    const auto& t = s.as<TwellSchedule>();
    return fmt::format("{}/{}", t.tile, t.cap());
  }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    const auto& t = s.as<TwellSchedule>();
    auto detail = std::make_shared<TwellFamilyStats>();
    detail->tw = twell_stats(a, t.tile, t.cap());
    FormatStats fs;
    fs.rows = a.rows;
    fs.nnz = a.nnz();
    // Slots kernel 2 reads: the packed entries plus the overflowing tiles' dense columns.
    fs.nnz_padded = detail->tw.entries_walked + detail->tw.dense_columns;
    for (int64_t r = 0; r < a.rows; ++r)
      fs.max_row_length = std::max(fs.max_row_length, a.row_length(r));
    fs.detail = std::move(detail);
    return restat(fs, p, s);
  }
  FormatStats restat(const FormatStats& shared, const Problem& p, const Schedule&) const override {
    FormatStats fs = shared;
    fs.block_tasks = p.m;  // kernel 2: one block per token
    fs.col_tiles = 1;
    return fs;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_twell(p, s.as<TwellSchedule>(), dev);
  }
  int registers(const Problem& p, const Schedule& s) const override {
    return twell_registers(p, s.as<TwellSchedule>());
  }
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule& s) const override {
    if (a.rows != p.m || a.cols != p.n)
      throw UserError(fmt::format(
          "{}: the activations are {}x{} but the FFN has M={} tokens and hidden width N={}",
          a.source.empty() ? "activations" : a.source, a.rows, a.cols, p.m, p.n));
    const auto& t = s.as<TwellSchedule>();
    // The first kernel stores the activations in the dtype.
    TwellFormat f = twell_encode(a, t.tile, t.cap());
    for (float& v : f.entry_value) v = round_to(p.dtype, v);
    for (float& v : f.backup) v = round_to(p.dtype, v);
    return std::make_shared<PackedTwell>(std::move(f));
  }
  // The second kernel's down projection over the packed activations: c = alpha·H·b + beta·c
  // with b = W_d (N×K) and c (M×K), both row-major.
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    twell_down_product(dynamic_cast<const PackedTwell&>(packed).format, b, p.k, c, alpha, beta);
  }
  // The matrix read as activations (rows = tokens): per-row counts and how a TwELL tile of 128
  // columns with room for 32 would hold them.
  std::optional<FormatSummary> summarize(const CsrMatrix& a) const override {
    if (a.rows == 0 || a.cols == 0) return std::nullopt;
    const ActivationStats st = activation_stats(a);
    const TwellStats tw = twell_stats(a, 128, 32);
    FormatSummary f;
    f.key = "twell";
    f.label = "TwELL (as activations)";
    f.text = fmt::format("{}; tile 128 / cap 32: {} overflowing tiles in {} rows", to_string(st),
                         tw.overflow_tiles, tw.overflow_rows);
    f.fields = {{"mean_per_row", st.mean},
                {"p99_per_row", st.p99},
                {"max_per_row", st.max},
                {"max_per_tile128", st.max_tile128},
                {"overflow_tiles_128_32", tw.overflow_tiles}};
    return f;
  }
  // The parts' partial rows of a token are added in fp32: split of them, or with the queue at
  // most twell_max_parts.
  int64_t output_adds(const Problem& p, const Schedule& s, int64_t) const override {
    const TwellSchedule& t = s.as<TwellSchedule>();
    return (t.balance != TwellBalance::Token ? twell_max_parts(p, t) : t.split) - 1;
  }
};

}  // namespace

const IrFamily& twell_ir_family() {
  static const TwellIrFamily f;
  return f;
}

}  // namespace sparsegen
