// The bitmap_tc family's ir/ layer: tensor-core schedules (ir/bitmap_tc_schedule.h) over the
// bitmap-tile format (ir/bitmap_format.h).
#include <fmt/format.h>

#include <algorithm>

#include "ir/bitmap_format.h"
#include "ir/bitmap_interpreter.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"

namespace sparsegen {
namespace {

// The tile figures behind FormatStats: the largest tile sizes the kernel's shared memory.
struct BitmapDetail final : FamilyStats {
  BitmapTileStats tiles;
};

FormatStats to_format_stats(const BitmapTileStats& bs, int64_t max_row_length) {
  FormatStats fs;
  fs.rows = bs.rows;
  fs.nnz = bs.nnz;
  fs.nnz_padded = bs.slots;
  fs.max_row_length = max_row_length;
  auto d = std::make_shared<BitmapDetail>();
  d->tiles = bs;
  fs.detail = std::move(d);
  return fs;
}

struct PackedBitmap final : Packed<BitmapTileFormat> {
  using Packed::Packed;
  const std::vector<float>& master_values() const override { return format.values; }
  const std::vector<int32_t>& column_indices() const override {
    static const std::vector<int32_t> none;  // columns travel as tile masks (tables)
    return none;
  }
  std::vector<int32_t> take_column_indices() override { return {}; }
  FormatStats stats() const override { return to_format_stats(bitmap_tile_stats(format), 0); }
  std::string describe() const override {
    return fmt::format(
        "{} tiles of {}x{}, {} value slots ({} real, vals={}), largest tile {}{}", format.tiles(),
        kBitmapTileRows, kBitmapTileCols, format.slots(), format.nnz, to_string(format.layout),
        format.max_tile_values,
        format.group == 1 ? "" : fmt::format(", row tiles in groups of {}", format.group));
  }
};

class BitmapTcIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return BitmapTcSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  std::string spec(const Schedule& s) const override {
    return bitmap_tc_spec(s.as<BitmapTcSchedule>());
  }
  std::string print(const Schedule& s) const override {
    return print_bitmap_tc(s.as<BitmapTcSchedule>());
  }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_bitmap_tc_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return sparsegen::validate(s.as<BitmapTcSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule& s) const override {
    return validate_bitmap_tc(p, s.as<BitmapTcSchedule>());
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_bitmap_tc_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix&) const override {
    std::vector<std::string> why;  // what no schedule can change: op, dtype, layout, N
    for (std::string& w : validate_bitmap_tc(p, BitmapTcSchedule{}))
      if (w.find("ksplit") == std::string::npos) why.push_back(std::move(w));
    return why;
  }
  // One bitmap-tile packing per value layout and tile order serves every schedule.
  std::optional<std::string> pack_key(const Schedule& s) const override {
    const auto& b = s.as<BitmapTcSchedule>();
    const int64_t g = bitmap_tc_tile_group(b);
    return std::string(to_string(b.values)) + (g == 1 ? "" : fmt::format(";group={}", g));
  }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    int64_t longest = 0;
    for (int64_t r = 0; r < a.rows; ++r) longest = std::max(longest, a.row_length(r));
    const BitmapValues layout = s.as<BitmapTcSchedule>().values;
    return restat(to_format_stats(bitmap_tile_stats(a, layout), longest), p, s);
  }
  FormatStats restat(const FormatStats& shared, const Problem& p,
                     const Schedule& s) const override {
    FormatStats fs = shared;
    fs.block_tasks = bitmap_tc_grid_x(p, s.as<BitmapTcSchedule>());
    fs.col_tiles = bitmap_tc_grid_y(p, s.as<BitmapTcSchedule>());
    return fs;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats& st,
                                  const DeviceLimits& dev) const override {
    const auto* d = dynamic_cast<const BitmapDetail*>(st.detail.get());
    SG_ASSERT(d != nullptr, "bitmap_tc verify needs the tile statistics of format_stats()");
    return verify_bitmap_tc(p, s.as<BitmapTcSchedule>(), d->tiles, dev);
  }
  int registers(const Problem& p, const Schedule& s) const override {
    return bitmap_tc_registers(p, s.as<BitmapTcSchedule>());
  }
  // All of the kernel's shared memory is dynamic (bitmap_tc_shared_bytes, checked by verify).
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule& s) const override {
    if (a.rows != p.m || a.cols != p.k)
      throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                  a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m,
                                  p.k));
    const auto& b = s.as<BitmapTcSchedule>();
    return std::make_shared<PackedBitmap>(pack_bitmap_tiles(a, b.values, bitmap_tc_tile_group(b)));
  }
  void interpret(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    interpret_bitmap_tc(p, s.as<BitmapTcSchedule>(),
                        dynamic_cast<const PackedBitmap&>(packed).format, b, c, alpha, beta);
  }
  // 16 x 64 tiles, a 64-bit mask per tile row, values 8-aligned.
  std::optional<FormatSummary> summarize(const CsrMatrix& a) const override {
    const BitmapTileStats bs = bitmap_tile_stats(a);
    FormatSummary f;
    f.key = "bitmap_tiles";
    f.label = "bitmap tiles (16x64)";
    f.text = fmt::format("effective density {:.4f} ({} bytes, {} tiles, {} value slots)",
                         bs.effective_density(), bs.bytes(), bs.tiles, bs.slots);
    f.fields = {{"tiles", bs.tiles},
                {"value_slots", bs.slots},
                {"max_tile_values", bs.max_tile_values},
                {"bytes", bs.bytes()},
                {"effective_density", bs.effective_density()}};
    return f;
  }
  // Split K: each part adds its fp32 partial into the workspace, which is then read once.
  int64_t output_adds(const Problem&, const Schedule& s, int64_t) const override {
    const int ksplit = s.as<BitmapTcSchedule>().ksplit;
    return ksplit > 1 ? ksplit + 1 : 0;
  }
};

}  // namespace

const IrFamily& bitmap_tc_ir_family() {
  static const BitmapTcIrFamily f;
  return f;
}

}  // namespace sparsegen
