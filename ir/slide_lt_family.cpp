// The slide_lt family's ir/ layer: SlideSparse weights through the 2:4 sparse GEMM library
// (ir/slide_lt_schedule.h). The pack is the slide family's fragment format (for the row scales,
// the interpreter and its figures) plus the dense lifted weight W' the library compresses at load;
// interpret() is the slide kernels' own arithmetic (lifted, quantized per token for 8-bit types,
// fp32 / integer sums, one scaling).
#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/slide_format.h"
#include "ir/slide_fragments.h"
#include "ir/slide_lt_schedule.h"
#include "ir/slide_schedule.h"

namespace sparsegen {
namespace {

struct PackedSlideLt final : Packed<SlideTcFormat> {
  PackedSlideLt(SlideTcFormat f) : Packed(std::move(f)), lifted(decode_slide_tc(format)) {}
  // W', rows x lifted K (the chunks' columns), row-major: what the library compresses.
  std::vector<float> lifted;
  const std::vector<float>& master_values() const override { return lifted; }
  const std::vector<int32_t>& column_indices() const override {
    static const std::vector<int32_t> none;  // positions are the dense matrix's own
    return none;
  }
  std::vector<int32_t> take_column_indices() override { return {}; }
  FormatStats stats() const override {
    FormatStats fs;
    fs.rows = format.rows;
    fs.nnz = format.nnz;
    fs.nnz_padded = static_cast<int64_t>(lifted.size()) / 2;  // the kept half of each window
    return fs;
  }
  std::string describe() const override {
    return fmt::format("{}:{} sliding windows as a dense 2:4 weight, {} x {} lifted columns",
                       2 * format.n - 2, 2 * format.n, format.rows,
                       format.rows > 0 ? static_cast<int64_t>(lifted.size()) / format.rows : 0);
  }
};

class SlideLtIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return SlideLtSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  bool library() const override { return true; }
  std::string spec(const Schedule& s) const override {
    return slide_lt_spec(s.as<SlideLtSchedule>());
  }
  std::string print(const Schedule& s) const override {
    return print_slide_lt(s.as<SlideLtSchedule>());
  }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_slide_lt_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<SlideLtSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule&) const override {
    return validate_slide_lt(p);
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_slide_lt_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const override {
    std::vector<std::string> why = validate_slide_lt(p);
    if (!why.empty()) return why;
    if (auto w = slide_pattern_why_not(a)) why.push_back(std::move(*w));
    return why;
  }
  std::optional<std::string> pack_key(const Schedule& s) const override {
    return std::to_string(s.as<SlideLtSchedule>().pattern);
  }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    FormatStats fs;
    fs.rows = a.rows;
    fs.nnz = a.nnz();
    fs.nnz_padded = p.m * slide_lt_lifted_k(p, s.as<SlideLtSchedule>().pattern) / 2;
    int64_t longest = 0;
    for (int64_t r = 0; r < a.rows; ++r) longest = std::max(longest, a.row_length(r));
    fs.max_row_length = longest;
    return fs;
  }
  // No kernel of its own for the product: the shared figures hold.
  FormatStats restat(const FormatStats& shared, const Problem&, const Schedule&) const override {
    return shared;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule&, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_slide_lt(p, dev);
  }
  int registers(const Problem&, const Schedule&) const override { return 32; }
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule& s) const override {
    if (a.rows != p.m || a.cols != p.k)
      throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                  a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m,
                                  p.k));
    return std::make_shared<PackedSlideLt>(
        pack_slide_tc(a, s.as<SlideLtSchedule>().pattern, p.dtype, SlideForm::Library));
  }
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    interpret_slide_tc(p, dynamic_cast<const PackedSlideLt&>(packed).format, b, c, alpha, beta);
  }
  // The slide family summarizes the pattern (inspect shows it once).
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  // Split-K parts (up to 8) are added in fp32 by the library.
  int64_t output_adds(const Problem&, const Schedule& s, int64_t) const override {
    const auto& l = s.as<SlideLtSchedule>();
    return l.searched() ? 8 : l.split_k;
  }
  std::optional<Schedule> with_library_choices(
      const Schedule& s, const std::vector<std::string>& choices) const override {
    const auto& l = s.as<SlideLtSchedule>();
    if (!l.searched() || choices.size() != 1 || choices.front().empty()) return std::nullopt;
    return Schedule(with_choice(l, choices.front()));
  }
};

}  // namespace

const IrFamily& slide_lt_ir_family() {
  static const SlideLtIrFamily f;
  return f;
}

}  // namespace sparsegen
