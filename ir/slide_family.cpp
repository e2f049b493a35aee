// The slide family's ir/ layer: SlideSparse weights on the 2:4 sparse tensor cores
// (ir/slide_schedule.h) over the fragment-ordered sliding-window format (ir/slide_fragments.h).
#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/slide_format.h"
#include "ir/slide_fragments.h"
#include "ir/slide_schedule.h"

namespace sparsegen {
namespace {

// FormatStats of a slide packing, from the shape alone (no arrays): value slots are the kept
// windows' two values per window.
FormatStats slide_stats(const CsrMatrix& a, const Problem& p, int pattern) {
  FormatStats fs;
  fs.rows = a.rows;
  fs.nnz = a.nnz();
  const int64_t chunk = slide_mma(p.dtype).chunk;
  fs.nnz_padded = slide_row_tiles(p) * 16 * slide_chunks(p, pattern) * chunk / 2;
  int64_t longest = 0;
  for (int64_t r = 0; r < a.rows; ++r) longest = std::max(longest, a.row_length(r));
  fs.max_row_length = longest;
  return fs;
}

struct PackedSlide final : Packed<SlideTcFormat> {
  using Packed::Packed;
  const std::vector<float>& master_values() const override { return format.values; }
  const std::vector<int32_t>& column_indices() const override {
    static const std::vector<int32_t> none;  // positions travel as 2:4 metadata
    return none;
  }
  std::vector<int32_t> take_column_indices() override { return {}; }
  FormatStats stats() const override {
    FormatStats fs;
    fs.rows = format.rows;
    fs.nnz = format.nnz;
    fs.nnz_padded = static_cast<int64_t>(format.values.size());
    return fs;
  }
  std::string describe() const override {
    return fmt::format(
        "{}:{} sliding windows ({} order), {} lifted columns, {} row tiles x {} chunks, {} bytes",
        2 * format.n - 2, 2 * format.n, to_string(format.order), format.lifted_cols,
        format.row_tiles, format.chunks, format.bytes());
  }
};

class SlideIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return SlideSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  std::string spec(const Schedule& s) const override { return slide_spec(s.as<SlideSchedule>()); }
  std::string print(const Schedule& s) const override { return print_slide(s.as<SlideSchedule>()); }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_slide_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<SlideSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule& s) const override {
    return validate_slide(p, s.as<SlideSchedule>());
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_slide_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const override {
    std::vector<std::string> why;
    for (std::string& w : validate_slide(p, SlideSchedule{}))
      if (w.find("nt=") == std::string::npos) why.push_back(std::move(w));
    if (!why.empty()) return why;
    if (auto w = slide_pattern_why_not(a)) why.push_back(std::move(*w));
    return why;
  }
  // The packing depends on the pattern, the slot order's group and the window order (the dtype
  // is the problem's).
  std::optional<std::string> pack_key(const Schedule& s) const override {
    const SlideSchedule& ss = s.as<SlideSchedule>();
    const int group = slide_pack_group(ss);
    const SlideWindowOrder order = slide_pack_order(ss);
    return std::to_string(ss.pattern) + (group > 1 ? fmt::format(";group={}", group) : "") +
           (order != SlideWindowOrder::Sliding ? fmt::format(";order={}", to_string(order)) : "");
  }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    return restat(slide_stats(a, p, s.as<SlideSchedule>().pattern), p, s);
  }
  FormatStats restat(const FormatStats& shared, const Problem& p,
                     const Schedule& s) const override {
    FormatStats fs = shared;
    fs.block_tasks = slide_grid_x(p, s.as<SlideSchedule>());
    fs.col_tiles = slide_grid_y(p, s.as<SlideSchedule>());
    return fs;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_slide(p, s.as<SlideSchedule>(), dev);
  }
  int registers(const Problem& p, const Schedule& s) const override {
    return slide_registers(p, s.as<SlideSchedule>());
  }
  // All shared memory is dynamic (slide_shared_bytes, checked by verify).
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule& s) const override {
    if (a.rows != p.m || a.cols != p.k)
      throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                  a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m,
                                  p.k));
    const SlideSchedule& ss = s.as<SlideSchedule>();
    return std::make_shared<PackedSlide>(pack_slide_tc(a, ss.pattern, p.dtype, SlideForm::Kernel,
                                                       slide_pack_group(ss), slide_pack_order(ss)));
  }
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    interpret_slide_tc(p, dynamic_cast<const PackedSlide&>(packed).format, b, c, alpha, beta);
  }
  // The detected pattern, gamma and the packed bytes at 16 and 8 bits.
  std::optional<FormatSummary> summarize(const CsrMatrix& a) const override {
    const SlidePattern pat = detect_slide_pattern(a);
    FormatSummary f;
    f.key = "slide";
    f.label = "SlideSparse";
    if (pat.n == 0) {
      const auto v = slide_violation(a, kSlideMaxN);
      f.text = fmt::format("no (2N-2):2N pattern up to 14:16 (row {}, columns {}-{} hold {})",
                           v->row + 1, v->group * 16 + 1, std::min(a.cols, (v->group + 1) * 16),
                           v->count);
      f.fields = {{"pattern_n", int64_t{0}}};
      return f;
    }
    const int64_t width = 2 * int64_t{pat.n};
    const int64_t lifted = (a.cols + width - 1) / width * 4 * (pat.n - 1);
    const int64_t rows16 = (a.rows + 15) / 16 * 16;
    const int64_t b16 =
        rows16 * ((lifted + 31) / 32 * 32) / 2 * 2 + rows16 * ((lifted + 31) / 32) * 4;
    const int64_t b8 =
        rows16 * ((lifted + 63) / 64 * 64) / 2 + rows16 * ((lifted + 63) / 64) * 8 + a.rows * 4;
    const double dense16 = double(a.rows) * double(a.cols) * 2.0;
    f.text = fmt::format(
        "pattern {} (gamma {:.3f}, {} lifted columns): {} bytes at 16 bits ({:.3f} of dense), "
        "{} at 8 bits",
        pat.name(), pat.gamma(), lifted, b16, dense16 > 0 ? double(b16) / dense16 : 0.0, b8);
    f.fields = {{"pattern_n", int64_t{pat.n}},
                {"gamma", pat.gamma()},
                {"lifted_cols", lifted},
                {"bytes_16bit", b16},
                {"bytes_8bit", b8}};
    return f;
  }
  int64_t output_adds(const Problem&, const Schedule& s, int64_t) const override {
    // The warps' partial sums of a row are added in shared memory: warps − 1 adds.
    return s.as<SlideSchedule>().warps - 1;
  }
};

}  // namespace

const IrFamily& slide_ir_family() {
  static const SlideIrFamily f;
  return f;
}

}  // namespace sparsegen
