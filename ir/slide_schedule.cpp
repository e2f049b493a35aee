#include "ir/slide_schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/int_math.h"
#include "ir/spec_fields.h"

namespace sparsegen {
namespace {

bool slide_dtype(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::I8 || t == DType::F8E4M3;
}

constexpr std::string_view kSplitNames[] = {"k", "rows", "wg"};
constexpr std::string_view kLiftNames[] = {"kernel", "fused"};
constexpr std::string_view kOrderNames[] = {"sliding", "raw-first"};

}  // namespace

std::string_view to_string(SlideSplit s) {
  return kSplitNames[static_cast<int>(s)];
}
std::optional<SlideSplit> parse_slide_split(std::string_view s) {
  return spec_fields::lookup<SlideSplit>(kSplitNames, s);
}

std::string_view to_string(SlideLift l) {
  return kLiftNames[static_cast<int>(l)];
}
std::optional<SlideLift> parse_slide_lift(std::string_view s) {
  return spec_fields::lookup<SlideLift>(kLiftNames, s);
}

std::string_view to_string(SlideWindowOrder o) {
  return kOrderNames[static_cast<int>(o)];
}

int64_t slide_order_chunks(int pattern, SlideWindowOrder o, int64_t k, int chunk) {
  const int64_t groups = (k + 2 * pattern - 1) / (2 * pattern);
  if (o == SlideWindowOrder::Sliding) return (groups * 4 * (pattern - 1) + chunk - 1) / chunk;
  SG_ASSERT(pattern % 2 == 0 && chunk == 32,
            "raw-first windows need an even N and 32-column chunks");
  return (groups + kSlideRunGroups - 1) / kSlideRunGroups * (pattern - 1);
}

SlideMma slide_mma(DType dtype, SlideForm form) {
  SG_ASSERT(slide_dtype(dtype), "slide_mma: not a 2:4 tensor-core type");
  SlideMma m;
  if (dtype_bytes(dtype) == 1) m.elem_bytes = 1;
  if (dtype_bytes(dtype) == 1 && !(dtype == DType::F8E4M3 && form == SlideForm::Kernel)) {
    m.chunk = 64;
    m.per_reg = 4;
    m.meta_lanes = 4;
  }
  return m;
}

std::vector<std::string> validate(const SlideSchedule& s) {
  std::vector<std::string> why;
  auto one_of = [&](const char* name, int v, std::initializer_list<int> ok) {
    if (std::find(ok.begin(), ok.end(), v) == ok.end()) {
      std::string list;
      for (int o : ok) list += (list.empty() ? "" : ", ") + std::to_string(o);
      why.push_back(fmt::format("{}={} must be one of {}", name, v, list));
    }
  };
  if (s.pattern < kSlideMinN || s.pattern > kSlideMaxN)
    why.push_back(fmt::format("pattern N={} must be in {} … {} (2:4 … 14:16)", s.pattern,
                              kSlideMinN, kSlideMaxN));
  one_of("warps", s.warps, {1, 2, 4, 8});
  one_of("mt", s.m_tiles, {1, 2, 4});
  one_of("nt", s.n_tiles, {1, 2, 4, 8});
  one_of("unroll", s.unroll, {1, 2, 4});
  if (s.ksplit < 1 || s.ksplit > 64)
    why.push_back(fmt::format("ksplit={} must be in 1..64", s.ksplit));
  if (s.fused_wg())
    one_of("stages", s.stages, {1, 2, 3, 4, 5, 6});  // 1 refused below, with the reason
  else if (s.split == SlideSplit::Group)
    one_of("stages", s.stages, {1, 2, 3, 4});
  else
    one_of("stages", s.stages, {1, 2});
  if (s.prefetch < 0 || s.prefetch > kSlideMaxPrefetch)
    why.push_back(fmt::format("prefetch={} must be in 0..{}", s.prefetch, kSlideMaxPrefetch));
  if (s.prefetch > 0 && s.lift == SlideLift::Fused)
    why.push_back("prefetch needs lift=kernel (it overlaps A's first loads with the lift kernel)");
  if (s.lift == SlideLift::Fused && s.split == SlideSplit::Rows)
    why.push_back("lift=fused needs split=k or wg (split=rows stages lifted B fragments)");
  if (s.fused_wg()) {
    // Its producer warps stage runs of 8 groups: the original columns as they are (TMA), the
    // overlapping windows built from them.
    if (s.pattern != 4)
      why.push_back(fmt::format(
          "lift=fused with split=wg builds the windows of 6:8, not {}:{} (lift=kernel does)",
          2 * s.pattern - 2, 2 * s.pattern));
    if (s.unroll != 1 && s.unroll != 2)
      why.push_back(fmt::format(
          "lift=fused with split=wg needs unroll 1 or 2 (runs of 8 groups per step), not {}",
          s.unroll));
    if (s.producer != 0)
      why.push_back(
          "lift=fused with split=wg has its own producer warps (stages + 1): no producer=1");
    if (s.stages < 2)
      why.push_back(
          "lift=fused with split=wg needs stages 2 to 6 (its producers own a buffer each)");
  }
  if (s.split == SlideSplit::Group) {
    if (s.warps % 4 != 0)
      why.push_back(fmt::format("split=wg needs warps 4 or 8, not {}", s.warps));
    if (s.m_tiles != 1)
      why.push_back(
          fmt::format("split=wg needs mt=1 (a warp's 16 rows of its warpgroup's 64), "
                      "not {}",
                      s.m_tiles));
    if (s.prefetch > 0) why.push_back("prefetch needs split=k or rows");
  }
  one_of("cluster", s.cluster, {1, 2, 4});
  one_of("producer", s.producer, {0, 1});
  if (s.producer > 0 && s.split != SlideSplit::Group)
    why.push_back("producer=1 needs split=wg (a warp that stages the steps by bulk copies)");
  if (s.tiles != 0 &&
      (s.split != SlideSplit::Group || s.tiles >= s.warps || s.tiles <= s.warps - 4 || s.tiles < 1))
    why.push_back(fmt::format(
        "tiles={} needs split=wg and warps − 3 … warps − 1 tiles (warps={}; warps itself is the "
        "default)",
        s.tiles, s.warps));
  if (s.spread < 0 || s.spread > 65535)
    why.push_back(fmt::format("spread={} must be in 0..65535", s.spread));
  if (s.tiles != 0 && s.producer > 0)
    why.push_back(fmt::format(
        "tiles={} needs producer=0 (the two together are not verified on a GPU)", s.tiles));
  if (s.spread > 0 && s.cluster > 1)
    why.push_back(fmt::format("spread={} needs cluster=1", s.spread));
  if (s.spread > 0 && (!s.fused_wg() || s.ksplit > 1))
    why.push_back(fmt::format(
        "spread={} needs split=wg with lift=fused and one K part (it splits K itself)", s.spread));
  if (s.cluster > 1 && s.split != SlideSplit::Group)
    why.push_back(fmt::format(
        "cluster={} needs split=wg (its blocks share B by multicast bulk copies)", s.cluster));
  return why;
}

std::vector<std::string> validate_slide(const Problem& p, const SlideSchedule& s) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("slide computes SpMM/SpMV with a static sparse weight, not {}",
                              to_string(p.op)));
  if (!slide_dtype(p.dtype))
    why.push_back(fmt::format(
        "slide runs on the 2:4 sparse tensor cores in fp16, bf16, int8 or fp8_e4m3, not {}",
        to_string(p.dtype)));
  if (is_quantized(p.dtype) && p.io_dtype != DType::F16 && p.io_dtype != DType::BF16)
    why.push_back(fmt::format("slide writes fp16 or bf16 outputs, not {}", to_string(p.io_dtype)));
  if (s.lift == SlideLift::Fused && slide_dtype(p.dtype) && dtype_bytes(p.dtype) != 2)
    why.push_back(fmt::format(
        "lift=fused is for fp16/bf16 (int8 and e4m3 quantize B per token first), not {}",
        to_string(p.dtype)));
  if (s.fused_wg() && (p.b_layout != Layout::ColMajor || p.k % 8 != 0))
    why.push_back(fmt::format(
        "lift=fused with split=wg copies B's tokens by TMA (rows 16-byte aligned): it needs "
        "column-major B and k a multiple of 8, not {} B with k={}",
        p.b_layout == Layout::ColMajor ? "column-major" : "row-major", p.k));
  if (s.split == SlideSplit::Group && slide_dtype(p.dtype) && slide_mma(p.dtype).lane_bytes() != 16)
    why.push_back(fmt::format("split=wg runs fp16, bf16 or int8 (wgmma.sp from registers), not {}",
                              to_string(p.dtype)));
  const int64_t tiles = slide_col_tiles(p);
  if (s.n_tiles > 1 && s.n_tiles > tiles)
    why.push_back(
        fmt::format("nt={} exceeds the {} 8-column tiles of n={}", s.n_tiles, tiles, p.n));
  if (s.spread > 0 && why.empty() && s.spread > slide_spread_work(p, s))
    why.push_back(fmt::format("spread={} exceeds the {} runs of work (row blocks x runs)", s.spread,
                              slide_spread_work(p, s)));
  if (s.ksplit > 1 && slide_dtype(p.dtype) && why.empty() && s.ksplit > slide_chunks(p, s))
    why.push_back(
        fmt::format("ksplit={} exceeds the {} chunks of k={}", s.ksplit, slide_chunks(p, s), p.k));
  return why;
}

std::string slide_spec(const SlideSchedule& s) {
  return fmt::format(
      "slide;pattern={}:{};split={};lift={};warps={};mt={};nt={};unroll={}{}{}{}{}{}{}{}",
      2 * s.pattern - 2, 2 * s.pattern, to_string(s.split), to_string(s.lift), s.warps, s.m_tiles,
      s.n_tiles, s.unroll, s.ksplit > 1 ? fmt::format(";ksplit={}", s.ksplit) : "",
      s.stages > 1 ? fmt::format(";stages={}", s.stages) : "",
      s.prefetch > 0 ? fmt::format(";prefetch={}", s.prefetch) : "",
      s.cluster > 1 ? fmt::format(";cluster={}", s.cluster) : "",
      s.producer > 0 ? ";producer=1" : "", s.spread > 0 ? fmt::format(";spread={}", s.spread) : "",
      s.tiles > 0 ? fmt::format(";tiles={}", s.tiles) : "");
}

std::string print_slide(const SlideSchedule& s) {
  std::string out = "schedule slide\n";
  out +=
      fmt::format("  format: {}:{} as 2:4 sliding windows (gamma {:.3f}), mma.sp fragment order\n",
                  2 * s.pattern - 2, 2 * s.pattern, 2.0 - 2.0 / s.pattern);
  if (s.split == SlideSplit::K) {
    out +=
        fmt::format("  block : {} row tile{} x {} column tile{}, warps={} splitting K\n", s.m_tiles,
                    s.m_tiles == 1 ? "" : "s", s.n_tiles, s.n_tiles == 1 ? "" : "s", s.warps);
    out += fmt::format(
        "  k     : unroll={} chunks per load step, partial sums added in shared memory\n",
        s.unroll);
  } else if (s.split == SlideSplit::Rows) {
    out += fmt::format("  block : warps={} x {} row tile{} each, {} column tile{}\n", s.warps,
                       s.m_tiles, s.m_tiles == 1 ? "" : "s", s.n_tiles, s.n_tiles == 1 ? "" : "s");
    out += fmt::format(
        "  k     : unroll={} chunks per step, B staged in shared memory (cp.async)\n", s.unroll);
  } else {
    out += fmt::format("  block : {} warpgroup{} x 64 rows each, {} column tile{}\n", s.warps / 4,
                       s.warps == 4 ? "" : "s", s.n_tiles, s.n_tiles == 1 ? "" : "s");
    if (s.tiles > 0)
      out += fmt::format(
          "  rows  : tiles={} row tiles per block ({} rows); the last {} warp{} multiply zeros\n",
          s.tiles, 16 * s.tiles, s.warps - s.tiles, s.warps - s.tiles == 1 ? "" : "s");
    if (s.lift == SlideLift::Fused)
      out += fmt::format(
          "  k     : unroll={} run(s) of 8 groups ({} chunks) per step, A by bulk copies, B by "
          "the producer warps\n",
          s.unroll, slide_step_chunks(s));
    else
      out += fmt::format(
          "  k     : unroll={} chunks per step, A and B staged in shared memory (bulk copies)\n",
          s.unroll);
  }
  if (s.lift == SlideLift::Kernel)
    out += "  b     : lifted (and quantized per token) by the b_transform kernel\n";
  else if (s.split == SlideSplit::Group)
    out += fmt::format(
        "  b     : staged from B by {} producer warps (one per buffer): the original columns "
        "copied, the overlapping windows built from them (raw-first windows, one launch)\n",
        s.producer_warps());
  else
    out += "  b     : read through the lift map by the main kernel (one launch)\n";
  if (s.ksplit > 1)
    out += fmt::format(
        "  parts : ksplit={} K parts add into an fp32 workspace; the last rounds it into C\n",
        s.ksplit);
  if (s.stages > 1 && s.split == SlideSplit::Group)
    out += fmt::format("  loads : stages={} steps (A, metadata, B) in flight in shared memory\n",
                       s.stages);
  else if (s.stages > 1)
    out += fmt::format(
        "  loads : stages={} load steps in flight per warp (the next step's {} "
        "loaded before this step's mma.sp)\n",
        s.stages, s.split == SlideSplit::K ? "A, metadata and B" : "A and metadata");
  if (s.prefetch > 0)
    out += fmt::format(
        "  early : prefetch={} chunks of A per row tile asked of the L2 before the lift ends\n",
        s.prefetch);
  if (s.producer > 0)
    out += "  warps : + 1 producer warp staging the steps; the warpgroups only wait and multiply\n";
  if (s.spread > 0)
    out += fmt::format(
        "  grid  : spread={} blocks share the row blocks x runs equally (stream-K); the blocks on "
        "a row block store their partial sums in fp32 slots, the last adds them into C\n",
        s.spread);
  if (s.cluster > 1)
    out += fmt::format("  share : cluster={} row blocks per cluster; {} (multicast)\n", s.cluster,
                       s.fused_wg()
                           ? "each copies a slice of the tokens of each B box into all of them"
                           : "its first stages B into all of them");
  out += s.split == SlideSplit::Group
             ? fmt::format("  math  : wgmma.sp m64n{}k32 (16-bit) / k64 (8-bit) per warpgroup\n",
                           8 * s.n_tiles)
             : "  math  : mma.sp m16n8k32 (16-bit) / m16n8k64 (8-bit) per warp\n";
  return out;
}

int parse_slide_pattern_field(std::string_view key, std::string_view v) {
  const size_t colon = v.find(':');
  const auto bad = [&] { spec_fields::error(key, "(2N-2):2N such as 2:4, 4:6, 6:8 … 14:16", v); };
  if (colon == std::string_view::npos) bad();
  int a = 0, b = 0;
  try {
    a = static_cast<int>(spec_fields::parse_int(key, v.substr(0, colon), 0, 64));
    b = static_cast<int>(spec_fields::parse_int(key, v.substr(colon + 1), 1, 64));
  } catch (const UserError&) {
    bad();
  }
  if (b % 2 != 0 || a != b - 2) bad();
  return b / 2;
}

std::optional<std::string> slide_pattern_why_not(const CsrMatrix& a) {
  if (detect_slide_pattern(a).n != 0) return std::nullopt;
  const auto v = slide_violation(a, kSlideMaxN);
  return fmt::format(
      "not (2N-2):2N for any N up to {} ({}:{}): row {}, columns {}-{} hold {} nonzeros",
      kSlideMaxN, 2 * kSlideMaxN - 2, 2 * kSlideMaxN, v->row + 1, v->group * 2 * kSlideMaxN + 1,
      std::min(a.cols, (v->group + 1) * 2 * kSlideMaxN), v->count);
}

SlideSchedule parse_slide_fields(std::string_view spec,
                                 const std::vector<std::string_view>& parts) {
  SlideSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    auto num = [&](int64_t hi) { return static_cast<int>(spec_fields::parse_int(key, v, 1, hi)); };
    if (key == "pattern") {
      s.pattern = parse_slide_pattern_field(key, v);
    } else if (key == "split") {
      s.split = spec_fields::parse_enum<SlideSplit>(key, kSplitNames, v);
    } else if (key == "lift") {
      s.lift = spec_fields::parse_enum<SlideLift>(key, kLiftNames, v);
    } else if (key == "warps")
      s.warps = num(64);
    else if (key == "mt")
      s.m_tiles = num(64);
    else if (key == "nt")
      s.n_tiles = num(64);
    else if (key == "unroll")
      s.unroll = num(64);
    else if (key == "ksplit")
      s.ksplit = num(64);
    else if (key == "stages")
      s.stages = num(64);
    else if (key == "prefetch")
      s.prefetch = static_cast<int>(spec_fields::parse_int(key, v, 0, kSlideMaxPrefetch));
    else if (key == "cluster")
      s.cluster = num(64);
    else if (key == "producer")
      s.producer = static_cast<int>(spec_fields::parse_int(key, v, 0, 1));
    else if (key == "spread")
      s.spread = static_cast<int>(spec_fields::parse_int(key, v, 0, 65535));
    else if (key == "tiles")
      s.tiles = num(64);
    else
      spec_fields::error(key,
                         "one of pattern, split, lift, warps, mt, nt, unroll, ksplit, stages, "
                         "prefetch, cluster, producer, spread, tiles (family slide)",
                         key);
  });
  if (s.tiles == s.warps) s.tiles = 0;  // the default, written out: the same schedule
  spec_fields::check_legal(spec, validate(s));
  return s;
}

int64_t slide_row_tiles(const Problem& p) {
  return (p.m + 15) / 16;
}
int64_t slide_col_tiles(const Problem& p) {
  return (p.n + 7) / 8;
}

int64_t slide_chunks(const Problem& p, int pattern, SlideForm form) {
  const int64_t width = 2 * int64_t{pattern};
  const int64_t lifted = (p.k + width - 1) / width * 4 * (pattern - 1);
  const int chunk = slide_mma(p.dtype, form).chunk;
  return (lifted + chunk - 1) / chunk;
}

int64_t slide_spread_work(const Problem& p, const SlideSchedule& s) {
  const int64_t row_blocks = (slide_row_tiles(p) + s.wg_tiles() - 1) / s.wg_tiles();
  return row_blocks * (slide_chunks(p, s) / 3);
}

int64_t slide_grid_x(const Problem& p, const SlideSchedule& s) {
  if (s.spread > 0) return s.spread;
  const int64_t per_block = s.split == SlideSplit::K       ? s.m_tiles
                            : s.split == SlideSplit::Group ? s.wg_tiles()
                                                           : int64_t{s.warps} * s.m_tiles;
  const int64_t blocks = (slide_row_tiles(p) + per_block - 1) / per_block;
  return (blocks + s.cluster - 1) / s.cluster * s.cluster;  // whole clusters
}
int64_t slide_col_blocks(const Problem& p, const SlideSchedule& s) {
  return (slide_col_tiles(p) + s.n_tiles - 1) / s.n_tiles;
}
int64_t slide_grid_y(const Problem& p, const SlideSchedule& s) {
  return slide_col_blocks(p, s) * s.ksplit;
}
int64_t slide_chunks(const Problem& p, const SlideSchedule& s) {
  const int chunk = slide_mma(p.dtype).chunk;
  // A schedule whose raw-first order cannot exist (validate_slide says why) counts as sliding.
  const bool runs =
      slide_pack_order(s) == SlideWindowOrder::RawFirst && s.pattern % 2 == 0 && chunk == 32;
  return slide_order_chunks(
      s.pattern, runs ? SlideWindowOrder::RawFirst : SlideWindowOrder::Sliding, p.k, chunk);
}
int slide_step_chunks(const SlideSchedule& s) {
  return slide_pack_order(s) == SlideWindowOrder::RawFirst ? s.unroll * (s.pattern - 1) : s.unroll;
}
int64_t slide_part_chunks(int64_t chunks, int ksplit, int align) {
  return ((chunks + ksplit - 1) / ksplit + align - 1) / align * align;
}
int64_t slide_part_chunks(const Problem& p, const SlideSchedule& s) {
  const bool runs = slide_pack_order(s) == SlideWindowOrder::RawFirst;
  return slide_part_chunks(slide_chunks(p, s), s.ksplit, runs ? s.pattern - 1 : 1);
}
int64_t slide_spread_slots(const Problem& p, const SlideSchedule& s) {
  if (s.spread <= 0) return 0;
  const int64_t per_block = slide_spread_work(p, s) / s.spread;  // every block has at least this
  return slide_chunks(p, s) / 3 / std::max<int64_t>(per_block, 1) + 2;
}
int64_t slide_counters_offset(const Problem& p, const SlideSchedule& s) {
  const int64_t padded_rows = (slide_row_tiles(p) + s.wg_tiles() - 1) / s.wg_tiles() * s.wg_tiles();
  if (s.spread > 0)
    return padded_rows * slide_col_blocks(p, s) * slide_spread_slots(p, s) * s.n_tiles * 128;
  // The sums in mma C fragment order (templates/sg_slide.cuh, slide_ws_index): whole 16 x 8 tiles.
  return slide_row_tiles(p) * slide_col_tiles(p) * 128;
}
int64_t slide_workspace_bytes(const Problem& p, const SlideSchedule& s) {
  // spread: a counter per 16-row tile (of whole row blocks) and column block.
  if (s.spread > 0)
    return 4 * slide_counters_offset(p, s) +
           ((slide_row_tiles(p) + s.wg_tiles() - 1) / s.wg_tiles() * s.wg_tiles() *
                slide_col_blocks(p, s) * 4 +
            15) /
               16 * 16;
  if (s.ksplit <= 1) return 0;
  return 4 * slide_counters_offset(p, s) +
         (slide_grid_x(p, s) * slide_col_blocks(p, s) * 4 + 15) / 16 * 16;
}

int64_t slide_shared_bytes(const Problem& p, const SlideSchedule& s) {
  // split=k: warps 1 … warps−1 leave their mt·nt·4 sums per lane for warp 0; split=rows: two
  // steps of B fragments (unroll chunks x nt tiles x 32 lanes' bytes).
  if (s.split == SlideSplit::Rows)
    return int64_t{2} * s.unroll * s.n_tiles * 32 * slide_mma(p.dtype).lane_bytes();
  // split=wg: a ring of stages + 1 steps, each unroll chunks of B (nt tiles x 512 bytes), A (warps
  // x 512 bytes) and metadata (warps x 32 bytes per metadata lane).
  // lift=fused: each buffer on a 1024-byte boundary (TMA's 128-byte swizzle), plus 1024 bytes to
  // align the first.
  if (s.split == SlideSplit::Group) {
    const int64_t step =
        slide_step_chunks(s) *
        (s.n_tiles * 512 + int64_t{s.wg_tiles()} * (512 + 32 * slide_mma(p.dtype).meta_lanes));
    if (s.lift == SlideLift::Kernel) return int64_t{s.stages + 1} * step;
    return int64_t{s.stages + 1} * ((step + 1023) / 1024 * 1024) + 1024;
  }
  return int64_t{s.warps - 1} * s.m_tiles * s.n_tiles * 4 * 32 * 4;
}

// Accumulators + the loads in flight + addressing: at or a little above what ptxas allocates for
// sm_90 (fp16, split=k, 8 warps: nt 1 / 2 / 4 with unroll 4 use 64 / 80 / 124; mt 2, nt 4,
// unroll 2 uses 98), so the cost model's blocks per multiprocessor match the hardware's.
int slide_registers(const Problem&, const SlideSchedule& s) {
  const int acc = s.m_tiles * s.n_tiles * 4;
  // split=wg: the step's A (values and metadata) beside the accumulators. The lift=fused
  // producers hold two 16-byte pieces of B at a time, fewer than a consumer. ptxas (sm_90a) used
  // 74 / 88 registers for lift=fused nt=8 unroll 1 / 2, 57 / 72 for nt=4, 78 for lift=kernel nt=8
  // unroll 4: this estimate is 5-6 above each, so it says when two blocks fit a multiprocessor.
  if (s.split == SlideSplit::Group) return acc + slide_step_chunks(s) * 5 + 32;
  const int loads = s.split == SlideSplit::K ? s.unroll * (s.m_tiles * 5 + s.n_tiles * 4)
                                             : s.unroll * s.m_tiles * 5;
  return acc + s.stages * loads + (s.split == SlideSplit::K ? 0 : 4) + 24;
}

int slide_pack_group(const SlideSchedule& s) {
  return s.split == SlideSplit::Group ? s.wg_tiles() : 1;
}

SlideWindowOrder slide_pack_order(const SlideSchedule& s) {
  return s.fused_wg() ? SlideWindowOrder::RawFirst : SlideWindowOrder::Sliding;
}

int64_t slide_b_work_bytes(const Problem& p, const SlideSchedule& s) {
  return s.lift == SlideLift::Fused ? 0 : slide_b_work_bytes(p, s.pattern);
}

int64_t slide_b_work_bytes(const Problem& p, int pattern) {
  const SlideMma m = slide_mma(p.dtype);
  return slide_chunks(p, pattern) * slide_col_tiles(p) * 32 * m.lane_bytes();
}

std::vector<std::string> verify_slide(const Problem& p, const SlideSchedule& s,
                                      const DeviceLimits& dev) {
  std::vector<std::string> why;
  const int sm = dev.sm();
  if (sm != 0 && sm < 80)
    why.push_back(fmt::format("{} has no 2:4 sparse tensor cores (mma.sp needs sm_80)", dev.name));
  if (s.split == SlideSplit::Group && !dev.wgmma)
    why.push_back(
        fmt::format("split=wg needs an sm_90 device (wgmma.sp, sm_90a), not {}", dev.name));
  if (p.dtype == DType::F8E4M3 && sm != 0 && sm < 89)
    why.push_back(fmt::format("fp8 e4m3 mma.sp needs sm_89 or newer, not {}", dev.name));
  if (s.threads_per_block() > dev.max_threads_per_block)
    why.push_back(fmt::format("{} threads per block exceed {}'s {}", s.threads_per_block(),
                              dev.name, dev.max_threads_per_block));
  const int64_t smem = slide_shared_bytes(p, s);
  if (smem > dev.max_shared_per_block)
    why.push_back(fmt::format("{} bytes of shared memory exceed {}'s {}", smem, dev.name,
                              dev.max_shared_per_block));
  if (slide_registers(p, s) > dev.max_registers_per_thread)
    why.push_back(fmt::format("about {} registers per thread exceed {}", slide_registers(p, s),
                              dev.max_registers_per_thread));
  if (slide_grid_x(p, s) > dev.max_grid_x || slide_grid_y(p, s) > dev.max_grid_y)
    why.push_back(fmt::format("grid {} x {} exceeds {}'s limits", slide_grid_x(p, s),
                              slide_grid_y(p, s), dev.name));
  // 32-bit offsets into the fragment arrays and the lifted B.
  const int group = slide_pack_group(s);
  const int64_t frag_words = (slide_row_tiles(p) + group - 1) / group * group * slide_chunks(p, s) *
                             32 * slide_mma(p.dtype).lane_bytes() / 4;
  if (frag_words > INT32_MAX || slide_b_work_bytes(p, s.pattern) / 4 > INT32_MAX ||
      p.m * p.n > INT32_MAX || p.k * p.n > INT32_MAX)
    why.push_back("the operands exceed the kernel's 32-bit offsets");
  return why;
}

namespace {

// The share of the resident-block slots a one-or-more-wave grid of s fills on dev (1: every slot
// busy in every wave).
double slide_slot_fill(const Problem& p, const SlideSchedule& s, const DeviceLimits& dev) {
  const int64_t by_smem = dev.max_shared_per_multiprocessor / (slide_shared_bytes(p, s) + 1024);
  const int64_t by_threads = dev.max_threads_per_multiprocessor / s.threads_per_block();
  const int64_t slots = int64_t{std::max(dev.multiprocessors, 1)} *
                        std::max<int64_t>(1, std::min(by_smem, by_threads));
  const int64_t blocks = slide_grid_x(p, s) * slide_grid_y(p, s);
  return double(blocks) / double((blocks + slots - 1) / slots * slots);
}

// split=wg: the row tiles per block below warps (warps − 3 … warps − 1) whose grid fills the
// multiprocessors best, when it fills at least 5 % more of them than warps tiles; 0 otherwise.
int slide_fill_tiles(const Problem& p, const SlideSchedule& s, const DeviceLimits& dev) {
  SlideSchedule t = s;
  t.tiles = 0;
  const double base = slide_slot_fill(p, t, dev);
  double best = base + 0.05;
  int pick = 0;
  for (int tiles = s.warps - 1; tiles > s.warps - 4 && tiles >= 1; --tiles) {
    t.tiles = tiles;
    const double fill = slide_slot_fill(p, t, dev);
    if (fill > best) best = fill, pick = tiles;
  }
  return pick;
}

}  // namespace

std::vector<Schedule> enumerate_slide_schedules(const Problem& p, const CsrMatrix& a,
                                                const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (!validate_slide(p, SlideSchedule{}).empty()) return out;
  const SlidePattern pat = detect_slide_pattern(a);
  if (pat.n == 0) return out;
  const int64_t tiles = slide_col_tiles(p);
  for (SlideLift lift : {SlideLift::Kernel, SlideLift::Fused})
    for (SlideSplit split : {SlideSplit::K, SlideSplit::Rows, SlideSplit::Group})
      for (int warps : {2, 4, 8})
        for (int mt : {1, 2})
          for (int nt : {1, 2, 4, 8}) {
            if (nt > 1 && nt > tiles) continue;
            if (split != SlideSplit::K && warps == 2) continue;
            if (split == SlideSplit::Group &&
                (mt != 1 || !dev.wgmma || slide_mma(p.dtype).lane_bytes() != 16))
              continue;
            if (lift == SlideLift::Fused &&
                (split == SlideSplit::Rows || dtype_bytes(p.dtype) != 2))
              continue;
            // split=wg with lift=fused: unroll counts runs of N − 1 chunks.
            const bool runs = split == SlideSplit::Group && lift == SlideLift::Fused;
            for (int unroll : {1, 2, 4})
              for (int stages : {1, 2, 3, 4, 5, 6}) {
                // split=wg: 2 to 4 steps in flight (it hides no latency in registers), with
                // lift=fused up to 6; the others 1 or 2.
                if (split == SlideSplit::Group ? stages == 1 || (stages > 4 && !runs) : stages > 2)
                  continue;
                if (runs && unroll == 4) continue;
                for (int ks = 1; ks <= 64; ks *= 2) {
                  SlideSchedule s;
                  s.pattern = pat.n;
                  s.split = split;
                  s.lift = lift;
                  s.warps = warps;
                  s.m_tiles = mt;
                  s.n_tiles = nt;
                  s.unroll = unroll;
                  s.ksplit = ks;
                  s.stages = stages;
                  // More parts only while the grid is short of two waves and each warp keeps
                  // at least 4 load steps of its part (the workspace round trip costs M·N floats).
                  if (ks > 1 &&
                      (slide_grid_x(p, s) * slide_grid_y(p, s) / 2 >=
                           2 * 4 * int64_t{std::max(dev.multiprocessors, 1)} ||
                       slide_part_chunks(p, s) <
                           4 * (split == SlideSplit::K ? warps : 1) * slide_step_chunks(s)))
                    break;
                  // split=wg stages whole steps, up to the device's shared memory per block: one
                  // block per multiprocessor with a deep ring can stream more than two with
                  // short ones.
                  const int64_t smem_cap =
                      split == SlideSplit::Group ? int64_t{dev.max_shared_per_block} : 48 * 1024;
                  if (slide_registers(p, s) > 160 || slide_shared_bytes(p, s) > smem_cap) continue;
                  if (!validate(s).empty() || !validate_slide(p, s).empty() ||
                      !verify_slide(p, s, dev).empty())
                    continue;
                  out.emplace_back(s);
                  // split=wg: also the block of fewer row tiles that fills the multiprocessors.
                  if (split != SlideSplit::Group) continue;
                  s.tiles = slide_fill_tiles(p, s, dev);
                  if (s.tiles > 0 && validate(s).empty() && validate_slide(p, s).empty() &&
                      verify_slide(p, s, dev).empty())
                    out.emplace_back(s);
                }
              }
          }
  return out;
}

}  // namespace sparsegen
