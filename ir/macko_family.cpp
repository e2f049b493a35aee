// The MACKO family's ir/ layer: delta-compressed SpMV/small-N schedules (ir/macko_schedule.h)
// over the MACKO format (ir/macko_format.h).
#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/macko_format.h"
#include "ir/macko_interpreter.h"
#include "ir/macko_schedule.h"

namespace sparsegen {
namespace {

struct PackedMacko final : Packed<MackoFormat> {
  using Packed::Packed;
  const std::vector<float>& master_values() const override { return format.values; }
  const std::vector<int32_t>& column_indices() const override {
    static const std::vector<int32_t> none;  // columns travel as packed deltas (tables)
    return none;
  }
  std::vector<int32_t> take_column_indices() override { return {}; }
  FormatStats stats() const override {
    FormatStats fs;
    fs.rows = format.rows;
    fs.nnz = format.nnz;
    fs.nnz_padded = format.slots();
    for (size_t r = 0; r + 1 < format.row_ptr.size(); ++r)
      fs.max_row_length = std::max(fs.max_row_length, format.row_ptr[r + 1] - format.row_ptr[r]);
    return fs;
  }
  std::string describe() const override {
    return fmt::format("{} MACKO slots ({} real, {} padding), b={}", format.slots(), format.nnz,
                       format.padding, format.delta_bits);
  }
};

class MackoIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return MackoSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  std::string spec(const Schedule& s) const override { return macko_spec(s.as<MackoSchedule>()); }
  std::string print(const Schedule& s) const override { return print_macko(s.as<MackoSchedule>()); }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_macko_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<MackoSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule& s) const override {
    return validate_macko(p, s.as<MackoSchedule>());
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_macko_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix&) const override {
    std::vector<std::string> why;
    if (!p.sparse_weight())
      why.push_back(fmt::format("MACKO computes SpMM/SpMV with a static sparse weight, not {}",
                                to_string(p.op)));
    if (p.dtype != DType::F16 && p.dtype != DType::BF16)
      why.push_back(fmt::format("MACKO needs fp16 or bf16 values, not {}", to_string(p.dtype)));
    if (p.n < 1 || p.n > 8) why.push_back(fmt::format("MACKO serves N from 1 to 8, not {}", p.n));
    return why;
  }
  // One packing per delta width.
  std::optional<std::string> pack_key(const Schedule& s) const override {
    return fmt::format("delta={}", s.as<MackoSchedule>().delta_bits);
  }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    const MackoStats ms = macko_stats(a, s.as<MackoSchedule>().delta_bits);
    FormatStats fs;
    fs.rows = a.rows;
    fs.nnz = ms.nnz;
    fs.nnz_padded = std::max(ms.slots, ms.nnz);
    for (int64_t r = 0; r < a.rows; ++r)
      fs.max_row_length = std::max(fs.max_row_length, a.row_length(r));
    return restat(fs, p, s);
  }
  FormatStats restat(const FormatStats& shared, const Problem& p,
                     const Schedule& s) const override {
    FormatStats fs = shared;
    fs.block_tasks = macko_grid_x(p, s.as<MackoSchedule>());
    fs.col_tiles = macko_grid_y(p, s.as<MackoSchedule>());
    return fs;
  }
  // The slot count bounds the kernels' 32-bit positions; the rest is the schedule's.
  std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats& st,
                                  const DeviceLimits& dev) const override {
    MackoStats ms;
    ms.slots = st.nnz_padded;
    return verify_macko(p, s.as<MackoSchedule>(), ms, dev);
  }
  int registers(const Problem&, const Schedule& s) const override {
    return macko_registers(s.as<MackoSchedule>());
  }
  int64_t shared_bytes(const Problem&, const Schedule& s) const override {
    return macko_shared_bytes(s.as<MackoSchedule>());
  }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                           const Schedule& s) const override {
    if (a.rows != p.m || a.cols != p.k)
      throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                  a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m,
                                  p.k));
    return std::make_shared<PackedMacko>(pack_macko(a, s.as<MackoSchedule>().delta_bits));
  }
  void interpret(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    interpret_macko(p, s.as<MackoSchedule>(), dynamic_cast<const PackedMacko&>(packed).format, b, c,
                    alpha, beta);
  }
  // At b = 4: bytes against the dense fp16 matrix.
  std::optional<FormatSummary> summarize(const CsrMatrix& a) const override {
    const MackoStats ms = macko_stats(a, 4);
    FormatSummary f;
    f.key = "macko";
    f.label = "MACKO (b=4)";
    f.text = fmt::format("effective density {:.4f} ({} bytes, {} padding slots)",
                         ms.effective_density(), ms.bytes(), ms.padding);
    f.fields = {{"delta_bits", int64_t{4}},
                {"padding_slots", ms.padding},
                {"bytes", ms.bytes()},
                {"effective_density", ms.effective_density()}};
    return f;
  }
  // Every row is summed in fp32 and stored once.
  int64_t output_adds(const Problem&, const Schedule&, int64_t) const override { return 0; }
};

}  // namespace

const IrFamily& macko_ir_family() {
  static const MackoIrFamily f;
  return f;
}

}  // namespace sparsegen
