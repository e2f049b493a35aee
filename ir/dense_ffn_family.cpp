// The dense_ffn family's ir/ layer (ir/dense_ffn_schedule.h): the gated FFN computed densely.
#include <fmt/format.h>

#include "ir/dense_ffn_schedule.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/interpreter.h"

namespace sparsegen {
namespace {

// The activations kept densely (as the gating kernel writes h), rounded to the dtype.
struct DenseActivations {
  int64_t rows = 0, cols = 0, nnz = 0;
  std::vector<float> values;  // rows x cols
};

struct PackedDense final : Packed<DenseActivations> {
  using Packed::Packed;
  const std::vector<float>& master_values() const override { return format.values; }
  const std::vector<int32_t>& column_indices() const override {
    static const std::vector<int32_t> none;
    return none;
  }
  std::vector<int32_t> take_column_indices() override { return {}; }
  FormatStats stats() const override {
    FormatStats fs;
    fs.rows = format.rows;
    fs.nnz = format.nnz;
    fs.nnz_padded = format.rows * format.cols;
    return fs;
  }
  std::string describe() const override {
    return fmt::format("dense {} x {} activations", format.rows, format.cols);
  }
};

class DenseFfnIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return DenseFfnSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  bool dense_baseline() const override { return true; }
  std::string spec(const Schedule& s) const override {
    return dense_ffn_spec(s.as<DenseFfnSchedule>());
  }
  std::string print(const Schedule& s) const override {
    return print_dense_ffn(s.as<DenseFfnSchedule>());
  }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_dense_ffn_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<DenseFfnSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule& s) const override {
    return validate_dense_ffn(p, s.as<DenseFfnSchedule>());
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_dense_ffn_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const override {
    std::vector<std::string> why = validate_dense_ffn(p, DenseFfnSchedule{});
    if (why.empty() && a.cols != p.n)
      why.push_back(fmt::format(
          "the activation pattern has {} columns, the FFN's hidden width is N={}", a.cols, p.n));
    return why;
  }
  std::optional<std::string> pack_key(const Schedule&) const override { return "dense"; }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    FormatStats fs;
    fs.rows = a.rows;
    fs.nnz = a.nnz();
    fs.nnz_padded = a.rows * a.cols;
    return restat(fs, p, s);
  }
  FormatStats restat(const FormatStats& shared, const Problem& p,
                     const Schedule& s) const override {
    FormatStats fs = shared;
    fs.block_tasks = dense_ffn_gate_blocks(p, s.as<DenseFfnSchedule>());
    fs.col_tiles = 1;
    return fs;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_dense_ffn(p, s.as<DenseFfnSchedule>(), dev);
  }
  int registers(const Problem&, const Schedule&) const override { return 24; }
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule&) const override {
    if (a.rows != p.m || a.cols != p.n)
      throw UserError(fmt::format(
          "{}: the activations are {}x{} but the FFN has M={} tokens and hidden width N={}",
          a.source.empty() ? "activations" : a.source, a.rows, a.cols, p.m, p.n));
    DenseActivations d;
    d.rows = a.rows;
    d.cols = a.cols;
    d.nnz = a.nnz();
    d.values.assign(static_cast<size_t>(a.rows * a.cols), 0.0f);
    for (int64_t r = 0; r < a.rows; ++r)
      for (int64_t i = a.row_ptr[r]; i < a.row_ptr[r + 1]; ++i)
        d.values[static_cast<size_t>(r * a.cols + a.col_idx[i])] = round_to(p.dtype, a.values[i]);
    return std::make_shared<PackedDense>(std::move(d));
  }
  // The down projection over the dense activations: c = alpha·H·b + beta·c, b = W_d (N x K).
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    const DenseActivations& d = dynamic_cast<const PackedDense&>(packed).format;
    std::vector<float> acc(static_cast<size_t>(p.k));
    for (int64_t r = 0; r < d.rows; ++r) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t n = 0; n < d.cols; ++n) {
        const float h = d.values[static_cast<size_t>(r * d.cols + n)];
        if (h == 0.0f) continue;
        for (int64_t j = 0; j < p.k; ++j) acc[j] += h * b[static_cast<size_t>(n * p.k + j)];
      }
      for (int64_t j = 0; j < p.k; ++j) {
        float& out = c[static_cast<size_t>(r * p.k + j)];
        out = beta == 0.0f ? alpha * acc[j] : alpha * acc[j] + beta * out;
      }
    }
  }
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  int64_t output_adds(const Problem&, const Schedule&, int64_t) const override { return 0; }
};

}  // namespace

const IrFamily& dense_ffn_ir_family() {
  static const DenseFfnIrFamily f;
  return f;
}

}  // namespace sparsegen
