// slide family, host side: the SPEC, the fragment order (decoded back it is the lifted weight of
// ir/slide_format.h), the interpreter against an fp64 reference (floating types: W·x; int8 /
// e4m3: the reference over the quantized inputs of ir/quantize.h), why_not and the enumeration.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/gen/pruning.h"
#include "ir/interpreter.h"
#include "ir/quantize.h"
#include "ir/slide_fragments.h"
#include "ir/slide_schedule.h"
#include "tests/ir/slide_test_weights.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

using testing::slide_weight;

// A split=wg lift=fused 6:8 schedule: 8 warps, 8 column tiles, one run per step, `stages`.
SlideSchedule fused_wg_schedule(int stages) {
  SlideSchedule s;
  s.pattern = 4;
  s.split = SlideSplit::Group;
  s.lift = SlideLift::Fused;
  s.warps = 8;
  s.n_tiles = 8;
  s.unroll = 1;
  s.stages = stages;
  return s;
}

std::vector<float> random_b(int64_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> mag(0.25f, 2.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = (rng() & 1 ? -1.0f : 1.0f) * mag(rng);
  return v;
}

TEST(SlideSchedule, SpecRoundTripAndPrint) {
  SlideSchedule s;
  s.pattern = 3;
  s.split = SlideSplit::Rows;
  s.warps = 8;
  s.m_tiles = 2;
  s.n_tiles = 4;
  s.unroll = 1;
  const std::string spec = to_string(Schedule(s));
  EXPECT_EQ(spec, "slide;pattern=4:6;split=rows;lift=kernel;warps=8;mt=2;nt=4;unroll=1");
  EXPECT_EQ(parse_schedule(spec), Schedule(s));
  EXPECT_EQ(print_schedule(Schedule(s)),
            "schedule slide\n"
            "  format: 4:6 as 2:4 sliding windows (gamma 1.333), mma.sp fragment order\n"
            "  block : warps=8 x 2 row tiles each, 4 column tiles\n"
            "  k     : unroll=1 chunks per step, B staged in shared memory (cp.async)\n"
            "  b     : lifted (and quantized per token) by the b_transform kernel\n"
            "  math  : mma.sp m16n8k32 (16-bit) / m16n8k64 (8-bit) per warp\n");
  for (const char* bad : {"slide;pattern=6:9", "slide;pattern=7:8", "slide;pattern=16:18",
                          "slide;pattern=x", "slide;warps=3", "slide;unroll=8", "slide;split=cols",
                          "slide;split=rows;lift=fused", "slide;lift=inside"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
}

// split=wg: its SPEC and print, its legality (whole warpgroups, one row tile per warp, the lift
// kernel, 16-byte lanes, an sm_90 device) and its shared memory (a ring of stages + 1 B steps).
TEST(SlideSchedule, WarpgroupSplit) {
  SlideSchedule s;
  s.pattern = 4;
  s.split = SlideSplit::Group;
  s.warps = 8;
  s.n_tiles = 8;
  s.unroll = 2;
  s.stages = 2;
  s.ksplit = 4;
  const std::string spec = to_string(Schedule(s));
  EXPECT_EQ(spec,
            "slide;pattern=6:8;split=wg;lift=kernel;warps=8;mt=1;nt=8;unroll=2;ksplit=4;stages=2");
  EXPECT_EQ(parse_schedule(spec), Schedule(s));
  EXPECT_EQ(print_schedule(Schedule(s)),
            "schedule slide\n"
            "  format: 6:8 as 2:4 sliding windows (gamma 1.500), mma.sp fragment order\n"
            "  block : 2 warpgroups x 64 rows each, 8 column tiles\n"
            "  k     : unroll=2 chunks per step, A and B staged in shared memory (bulk copies)\n"
            "  b     : lifted (and quantized per token) by the b_transform kernel\n"
            "  parts : ksplit=4 K parts add into an fp32 workspace; the last rounds it into C\n"
            "  loads : stages=2 steps (A, metadata, B) in flight in shared memory\n"
            "  math  : wgmma.sp m64n64k32 (16-bit) / k64 (8-bit) per warpgroup\n");
  const Problem p = Problem::spmm(300, 512, 64, DType::F16);
  // 3 buffers x 2 chunks x (B: 8 tiles x 512, A: 8 warps x 512, metadata: 8 warps x 64).
  EXPECT_EQ(slide_shared_bytes(p, s), 3 * 2 * (8 * 512 + 8 * 512 + 8 * 64));
  EXPECT_EQ(slide_grid_x(p, s), 3);  // 19 row tiles, 8 per block
  EXPECT_TRUE(verify_slide(p, s, DeviceLimits::sm90()).empty());
  const auto on_80 = verify_slide(p, s, DeviceLimits::sm80());
  ASSERT_FALSE(on_80.empty());
  EXPECT_NE(on_80.front().find("split=wg needs an sm_90 device"), std::string::npos);
  for (const char* bad :
       {"slide;split=wg;warps=2", "slide;split=wg;mt=2", "slide;split=wg;prefetch=4"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
  // e4m3's kernel form has 8-byte lanes: not a wgmma.sp operand.
  const auto e4 =
      validate_slide(Problem::quantized_spmm(300, 512, 64, DType::F8E4M3, DType::F16), s);
  ASSERT_EQ(e4.size(), 1u);
  EXPECT_NE(e4.front().find("split=wg runs fp16, bf16 or int8"), std::string::npos);
  EXPECT_TRUE(
      validate_slide(Problem::quantized_spmm(300, 512, 64, DType::I8, DType::F16), s).empty());
}

// split=wg with lift=fused: raw-first windows, a step of whole runs (unroll x 3 chunks at 6:8),
// one producer warp per buffer, parts aligned to runs; the combinations it refuses, each with its
// reason.
TEST(SlideSchedule, WarpgroupFusedLift) {
  SlideSchedule s = fused_wg_schedule(3);
  s.ksplit = 5;
  const std::string spec = to_string(Schedule(s));
  EXPECT_EQ(spec,
            "slide;pattern=6:8;split=wg;lift=fused;warps=8;mt=1;nt=8;unroll=1;ksplit=5;stages=3");
  EXPECT_EQ(parse_schedule(spec), Schedule(s));
  EXPECT_EQ(print_schedule(Schedule(s)),
            "schedule slide\n"
            "  format: 6:8 as 2:4 sliding windows (gamma 1.500), mma.sp fragment order\n"
            "  block : 2 warpgroups x 64 rows each, 8 column tiles\n"
            "  k     : unroll=1 run(s) of 8 groups (3 chunks) per step, A by bulk copies, B by the "
            "producer warps\n"
            "  b     : staged from B by 4 producer warps (one per buffer): the original columns "
            "copied, the overlapping windows built from them (raw-first windows, one launch)\n"
            "  parts : ksplit=5 K parts add into an fp32 workspace; the last rounds it into C\n"
            "  loads : stages=3 steps (A, metadata, B) in flight in shared memory\n"
            "  math  : wgmma.sp m64n64k32 (16-bit) / k64 (8-bit) per warpgroup\n");
  EXPECT_EQ(slide_pack_order(s), SlideWindowOrder::RawFirst);
  EXPECT_EQ(slide_step_chunks(s), 3);
  EXPECT_EQ(s.producer_warps(), 4);
  EXPECT_EQ(s.threads_per_block(), 12 * 32);
  // K = 1000: 125 groups, 16 runs of 3 chunks; 5 parts of 10 chunks rounded up to 12.
  const Problem p = Problem::spmm(300, 1000, 64, DType::F16, Layout::ColMajor, Layout::ColMajor);
  EXPECT_TRUE(validate_slide(p, s).empty());
  EXPECT_EQ(slide_chunks(p, s), 48);
  EXPECT_EQ(slide_part_chunks(p, s), 12);
  // 4 buffers of 3 chunks x (B: 8 tiles x 512, A: 8 warps x 512, metadata: 8 warps x 64), each
  // rounded up to 1024 bytes (the TMA copies' swizzle atoms), and 1024 to align the first.
  EXPECT_EQ(slide_shared_bytes(p, s), 4 * 26624 + 1024);
  EXPECT_EQ(3 * (8 * 512 + 8 * 512 + 8 * 64), 26112);
  EXPECT_TRUE(verify_slide(p, s, DeviceLimits::sm90()).empty());
  s.unroll = 2;
  EXPECT_EQ(slide_step_chunks(s), 6);
  // The problem's side: column-major B with K a multiple of 8.
  auto why = [&](const Problem& q) {
    const auto w = validate_slide(q, s);
    return w.empty() ? std::string() : w.front();
  };
  EXPECT_NE(why(Problem::spmm(300, 1000, 64, DType::F16)).find("needs column-major B"),
            std::string::npos);
  EXPECT_NE(why(Problem::spmm(300, 1004, 64, DType::F16, Layout::ColMajor, Layout::ColMajor))
                .find("k a multiple of 8"),
            std::string::npos);
  EXPECT_NE(why(Problem::quantized_spmm(300, 1000, 64, DType::I8, DType::F16, Layout::ColMajor,
                                        Layout::ColMajor))
                .find("lift=fused is for fp16/bf16"),
            std::string::npos);
  for (const char* bad : {"slide;split=wg;lift=fused;pattern=4:6;stages=2",
                          "slide;split=wg;lift=fused;pattern=2:4;stages=2",
                          "slide;split=wg;lift=fused;unroll=4;stages=2",
                          "slide;split=wg;lift=fused;stages=2;producer=1",
                          "slide;split=wg;lift=fused;stages=1", "slide;split=rows;lift=fused"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
  // In clusters, each block multicasts a slice of the tokens of each B box.
  EXPECT_NE(print_schedule(parse_schedule("slide;split=wg;lift=fused;nt=8;stages=2;cluster=2"))
                .find("  share : cluster=2 row blocks per cluster; each copies a slice of the "
                      "tokens of each B box into all of them (multicast)\n"),
            std::string::npos);
}

// split=wg blocks of fewer row tiles than warps: printed and parsed (tiles = warps is the default
// and reads back as it), the grid, the pack group and the ring's A sized by the tiles; the
// enumeration offers the count that fills the multiprocessors (14336 rows: 7 tiles, 128 blocks
// on 132) and none where warps tiles already do; the combinations refused, with the reason.
TEST(SlideSchedule, WarpgroupFewerRowTiles) {
  SlideSchedule s = fused_wg_schedule(5);
  s.tiles = 7;
  const std::string spec = to_string(Schedule(s));
  EXPECT_EQ(spec,
            "slide;pattern=6:8;split=wg;lift=fused;warps=8;mt=1;nt=8;unroll=1;stages=5;tiles=7");
  EXPECT_EQ(parse_schedule(spec), Schedule(s));
  EXPECT_NE(print_schedule(Schedule(s))
                .find("  rows  : tiles=7 row tiles per block (112 rows); the last 1 warp multiply "
                      "zeros\n"),
            std::string::npos);
  EXPECT_EQ(parse_schedule("slide;pattern=6:8;split=wg;warps=8;stages=2;tiles=8"),
            parse_schedule("slide;pattern=6:8;split=wg;warps=8;stages=2"));
  const Problem p = Problem::spmm(14336, 4096, 64, DType::F16, Layout::ColMajor, Layout::ColMajor);
  EXPECT_TRUE(validate_slide(p, s).empty());
  EXPECT_EQ(s.wg_tiles(), 7);
  EXPECT_EQ(slide_grid_x(p, s), 128);  // 896 row tiles / 7
  EXPECT_EQ(slide_pack_group(s), 7);
  // 6 buffers of 3 chunks x (B: 8 tiles x 512, A: 7 tiles x 512, metadata: 7 x 64), each rounded
  // up to 1024 bytes, and 1024 to align the first.
  EXPECT_EQ(slide_shared_bytes(p, s), 6 * 24576 + 1024);
  EXPECT_TRUE(verify_slide(p, s, DeviceLimits::sm90()).empty());
  // The enumeration: tiles=7 beside the default at 14336 rows, nothing at 4096 rows with 4 K
  // parts (32 row blocks x 4 = 128 blocks already).
  const CsrMatrix a = slide_weight(32, 64, 4, 5);  // 6:8: the pattern is what it reads
  auto offered = [&](const Problem& q, const std::string& want) {
    for (const Schedule& e : enumerate_slide_schedules(q, a, DeviceLimits::sm90()))
      if (to_string(e) == want) return true;
    return false;
  };
  EXPECT_TRUE(offered(p, spec));
  EXPECT_TRUE(
      offered(p, "slide;pattern=6:8;split=wg;lift=fused;warps=8;mt=1;nt=8;unroll=1;stages=5"));
  const Problem square =
      Problem::spmm(4096, 4096, 64, DType::F16, Layout::ColMajor, Layout::ColMajor);
  EXPECT_FALSE(offered(square,
                       "slide;pattern=6:8;split=wg;lift=fused;warps=8;mt=1;nt=8;unroll=1;ksplit=4;"
                       "stages=2;tiles=7"));
  for (const char* bad :
       {"slide;split=k;tiles=3", "slide;split=wg;warps=8;stages=2;tiles=4",
        "slide;split=wg;warps=4;stages=2;tiles=9", "slide;split=wg;warps=8;stages=2;tiles=0",
        "slide;split=wg;warps=8;stages=2;tiles=7;producer=1"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
  EXPECT_NO_THROW(parse_schedule("slide;split=wg;warps=8;stages=2;tiles=7;cluster=2"));
}

// split=wg clusters: printed, parsed, the grid rounded up to whole clusters; other splits and
// sizes refused with the reason.
TEST(SlideSchedule, WarpgroupClusters) {
  SlideSchedule s;
  s.pattern = 4;
  s.split = SlideSplit::Group;
  s.warps = 8;
  s.n_tiles = 8;
  s.stages = 2;
  s.cluster = 2;
  const std::string spec = to_string(Schedule(s));
  EXPECT_EQ(spec,
            "slide;pattern=6:8;split=wg;lift=kernel;warps=8;mt=1;nt=8;unroll=2;stages=2;cluster=2");
  EXPECT_EQ(parse_schedule(spec), Schedule(s));
  EXPECT_NE(print_schedule(Schedule(s))
                .find("  share : cluster=2 row blocks per cluster; its first stages B into all of "
                      "them (multicast)\n"),
            std::string::npos);
  const Problem p = Problem::spmm(300, 512, 64, DType::F16);
  EXPECT_EQ(slide_grid_x(p, s), 4);  // 19 row tiles, 8 per block: 3 blocks, 2 clusters
  s.cluster = 4;
  EXPECT_EQ(slide_grid_x(p, s), 4);
  s.warps = 4;
  EXPECT_EQ(slide_grid_x(p, s), 8);  // 5 blocks
  EXPECT_TRUE(verify_slide(p, s, DeviceLimits::sm90()).empty());
  for (const char* bad : {"slide;split=k;cluster=2", "slide;split=rows;warps=4;cluster=2",
                          "slide;split=wg;warps=4;cluster=3", "slide;split=wg;warps=4;cluster=8"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
  s.producer = 1;
  EXPECT_EQ(to_string(Schedule(s)),
            "slide;pattern=6:8;split=wg;lift=kernel;warps=4;mt=1;nt=8;unroll=2;stages=2;cluster=4;"
            "producer=1");
  EXPECT_EQ(parse_schedule(to_string(Schedule(s))), Schedule(s));
  EXPECT_EQ(s.threads_per_block(), 160);
  EXPECT_NE(print_schedule(Schedule(s)).find("  warps : + 1 producer warp staging the steps"),
            std::string::npos);
  EXPECT_THROW(parse_schedule("slide;split=k;producer=1"), UserError);
  EXPECT_THROW(parse_schedule("slide;split=wg;warps=4;producer=2"), UserError);
  try {
    parse_schedule("slide;split=k;cluster=2");
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster=2 needs split=wg"), std::string::npos)
        << e.what();
  }
}

// Both mma.sp forms (ir/slide_schedule.h, SlideForm): they differ for e4m3, whose kernel form is
// the fp16 layout (32-column chunks) and whose library form is m16n8k64's (64).
TEST(SlideFragments, DecodeIsTheLiftedWeightForEveryPatternAndWidth) {
  for (int p = kSlideMinN; p <= kSlideMaxN; ++p)
    for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
      for (SlideForm form : {SlideForm::Kernel, SlideForm::Library}) {
        // K not a multiple of 2P (nor of the chunk), M not a multiple of 16.
        const CsrMatrix a = slide_weight(37, 2 * p * 9 + 3, p, 7 + p);
        const SlideTcFormat f = pack_slide_tc(a, p, dt, form);
        const std::vector<float> w = decode_slide_tc(f);
        CsrMatrix aq = a;
        if (is_quantized(dt)) aq.values = quantize_rows(a, dt).q;
        const SlideFormat canon = pack_slide(aq, p);
        const std::vector<float> lifted = unpack_slide_lifted(canon);
        const int64_t width = f.chunks * slide_mma(dt, form).chunk;
        EXPECT_EQ(slide_mma(dt, form).chunk,
                  dt == DType::F16 || dt == DType::BF16 ||
                          (dt == DType::F8E4M3 && form == SlideForm::Kernel)
                      ? 32
                      : 64);
        ASSERT_GE(width, canon.lifted_cols);
        for (int64_t r = 0; r < a.rows; ++r)
          for (int64_t c = 0; c < width; ++c) {
            const float want = c < canon.lifted_cols
                                   ? lifted[static_cast<size_t>(r * canon.lifted_cols + c)]
                                   : 0.0f;
            ASSERT_EQ(w[static_cast<size_t>(r * width + c)], want)
                << "pattern " << p << " " << to_string(dt) << " row " << r << " col " << c;
          }
      }
}

// The slot order of split=wg (group = warps): the same fragments as group 1, each at its slot
// (a block's tiles of consecutive chunks adjacent), the rows padded to whole blocks with zeros and
// code 0b0100; the decoded weight is the same.
TEST(SlideFragments, GroupedSlotOrderHoldsTheSameFragments) {
  const CsrMatrix a = slide_weight(37, 2 * 4 * 9 + 3, 4, 11);  // 3 row tiles
  for (DType dt : {DType::F16, DType::I8})
    for (int group : {4, 8}) {
      const SlideTcFormat f1 = pack_slide_tc(a, 4, dt);
      const SlideTcFormat fg = pack_slide_tc(a, 4, dt, SlideForm::Kernel, group);
      ASSERT_EQ(fg.group, group);
      ASSERT_EQ(fg.stored_row_tiles(), group);
      EXPECT_EQ(decode_slide_tc(fg), decode_slide_tc(f1));
      const int meta_words = slide_mma(dt).meta_words();
      const size_t tile_vals = f1.values.size() / static_cast<size_t>(f1.row_tiles * f1.chunks);
      ASSERT_EQ(fg.values.size(), static_cast<size_t>(group * fg.chunks) * tile_vals);
      for (int64_t rt = 0; rt < fg.stored_row_tiles(); ++rt)
        for (int64_t kc = 0; kc < fg.chunks; ++kc) {
          EXPECT_EQ(fg.slot(rt, kc), kc * group + rt);  // one block: chunk-major
          for (size_t v = 0; v < tile_vals; ++v) {
            const float want = rt < f1.row_tiles
                                   ? f1.values[static_cast<size_t>(f1.slot(rt, kc)) * tile_vals + v]
                                   : 0.0f;
            ASSERT_EQ(fg.values[static_cast<size_t>(fg.slot(rt, kc)) * tile_vals + v], want);
          }
          for (int w = 0; w < meta_words; ++w) {
            const uint32_t got = fg.meta[static_cast<size_t>(fg.slot(rt, kc) * meta_words + w)];
            if (rt < f1.row_tiles)
              EXPECT_EQ(got, f1.meta[static_cast<size_t>(f1.slot(rt, kc) * meta_words + w)]);
            else
              EXPECT_EQ(got, 0x44444444u);  // every window of a padding tile: code 0b0100
          }
        }
    }
  // The family packs split=wg in its warps' order, under its own key.
  SlideSchedule wg;
  wg.split = SlideSplit::Group;
  wg.warps = 8;
  EXPECT_EQ(slide_pack_group(wg), 8);
  EXPECT_EQ(slide_pack_group(SlideSchedule{}), 1);
}

// The raw-first window order: at 6:8 a run of 8 groups lists their windows 0 and 2 (the original
// columns in order), then their windows 1; 2:4 is the canonical order; windows past the last
// group are padding. Decoded, the raw-first pack is the sliding one with its windows permuted.
TEST(SlideFragments, RawFirstOrderPermutesTheWindows) {
  std::vector<int64_t> run;
  for (int64_t i = 0; i < 24; ++i)
    run.push_back(slide_order_source(4, SlideWindowOrder::RawFirst, i, 16));
  EXPECT_EQ(run, (std::vector<int64_t>{0,  2,  3,  5,  6, 8, 9, 11, 12, 14, 15, 17,
                                       18, 20, 21, 23, 1, 4, 7, 10, 13, 16, 19, 22}));
  EXPECT_EQ(slide_order_source(4, SlideWindowOrder::RawFirst, 24, 9), 24);  // group 8, window 0
  EXPECT_EQ(slide_order_source(4, SlideWindowOrder::RawFirst, 26, 9), -1);  // group 9: padding
  EXPECT_EQ(slide_order_source(4, SlideWindowOrder::RawFirst, 40, 9), 25);  // group 8, window 1
  for (int64_t i = 0; i < 20; ++i)
    EXPECT_EQ(slide_order_source(2, SlideWindowOrder::RawFirst, i, 17), i < 17 ? i : -1);
  EXPECT_EQ(slide_order_chunks(4, SlideWindowOrder::RawFirst, 200, 32), 12);  // 25 groups
  EXPECT_EQ(slide_order_chunks(4, SlideWindowOrder::Sliding, 200, 32), 10);
  EXPECT_EQ(slide_order_chunks(2, SlideWindowOrder::RawFirst, 200, 32), 7);  // 50 groups
  for (const int n : {2, 4})
    for (DType dt : {DType::F16, DType::BF16}) {
      const CsrMatrix a = slide_weight(37, 2 * n * 25, n, 13 + n);
      const SlideTcFormat fs = pack_slide_tc(a, n, dt);
      const SlideTcFormat fr =
          pack_slide_tc(a, n, dt, SlideForm::Kernel, 4, SlideWindowOrder::RawFirst);
      ASSERT_EQ(fr.order, SlideWindowOrder::RawFirst);
      ASSERT_EQ(fr.chunks, slide_order_chunks(n, SlideWindowOrder::RawFirst, a.cols, 32));
      const std::vector<float> ws = decode_slide_tc(fs), wr = decode_slide_tc(fr);
      const int64_t widths = fs.chunks * 32, widthr = fr.chunks * 32;
      for (int64_t r = 0; r < a.rows; ++r)
        for (int64_t i = 0; i < widthr / 4; ++i) {
          const int64_t cw = slide_order_source(n, SlideWindowOrder::RawFirst, i, 25);
          for (int p = 0; p < 4; ++p) {
            const float want = cw < 0 ? 0.0f : ws[static_cast<size_t>(r * widths + 4 * cw + p)];
            ASSERT_EQ(wr[static_cast<size_t>(r * widthr + 4 * i + p)], want)
                << "n " << n << " row " << r << " window " << i;
          }
        }
    }
}

// Interpreter vs fp64: floating types within fp32 summation error, quantized types against the
// reference over the quantized inputs (int8: exact integer sums).
TEST(SlideFragments, InterpreterMatchesReference) {
  for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
    for (int p : {2, 3, 4, 5, 8})
      for (Layout bl : {Layout::RowMajor, Layout::ColMajor}) {
        const int64_t m = 45, k = 2 * p * 11 + 5, n = 13;
        const CsrMatrix a = slide_weight(m, k, p, 100 + p);
        const Problem pr = is_quantized(dt) ? Problem::quantized_spmm(m, k, n, dt, DType::BF16, bl,
                                                                      Layout::ColMajor)
                                            : Problem::spmm(m, k, n, dt, bl, Layout::RowMajor);
        std::vector<float> b = random_b(k * n, 5 + p);
        for (float& x : b) x = round_to(pr.b_dtype(), x);
        // 16-bit types with an even N: the raw-first window order as well (split=wg, lift=fused).
        const bool raw_first = dtype_bytes(dt) == 2 && p % 2 == 0 && bl == Layout::ColMajor;
        const SlideTcFormat f =
            pack_slide_tc(a, p, dt, SlideForm::Kernel, 1,
                          raw_first ? SlideWindowOrder::RawFirst : SlideWindowOrder::Sliding);
        std::vector<float> c(static_cast<size_t>(m * n), std::nanf(""));
        interpret_slide_tc(pr, f, b, c, 0.75f, 0.0f);
        // Reference operands: A and B as the tensor cores see them.
        std::vector<double> av(a.values.begin(), a.values.end()), bv(b.begin(), b.end());
        std::vector<double> rs(static_cast<size_t>(m), 1.0), ts(static_cast<size_t>(n), 1.0);
        if (is_quantized(dt)) {
          const RowQuantized rq = quantize_rows(a, dt);
          const TokenQuantized tq = quantize_tokens(pr, b);
          av.assign(rq.q.begin(), rq.q.end());
          bv.assign(tq.q.begin(), tq.q.end());
          rs.assign(rq.scales.begin(), rq.scales.end());
          ts.assign(tq.scales.begin(), tq.scales.end());
        } else {
          for (double& x : av) x = round_to(dt, static_cast<float>(x));
        }
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double s = 0, mag = 0;
            for (int64_t e = a.row_ptr[static_cast<size_t>(r)];
                 e < a.row_ptr[static_cast<size_t>(r) + 1]; ++e) {
              const double prod =
                  av[static_cast<size_t>(e)] *
                  bv[static_cast<size_t>(pr.b_index(a.col_idx[static_cast<size_t>(e)], j))];
              s += prod;
              mag += std::fabs(prod);
            }
            const double scale = 0.75 * rs[static_cast<size_t>(r)] * ts[static_cast<size_t>(j)];
            const double want = scale * s;
            const double got = c[static_cast<size_t>(pr.c_index(r, j))];
            const double tol =
                (double(a.row_length(r)) + 4) * 2 * std::ldexp(1.0, -24) * scale * mag +
                4 * std::ldexp(1.0, -24) * std::fabs(want) + 1e-30;
            ASSERT_NEAR(got, want, tol)
                << to_string(pr) << " pattern " << p << " C(" << r << ", " << j << ")";
          }
      }
}

TEST(SlideFamily, WhyNotNamesTheRowAndEnumerateOffersThePattern) {
  const IrFamily& fam = *find_ir_family("slide");
  const CsrMatrix a = slide_weight(64, 200, 4, 3);  // 6:8
  const Problem p = Problem::spmm(64, 200, 16, DType::F16);
  EXPECT_TRUE(fam.why_not(p, a).empty());
  EnumerateOptions o;
  o.include_specialised = true;
  const auto all = fam.enumerate(p, a, o);
  ASSERT_FALSE(all.empty());
  for (const Schedule& s : all) EXPECT_EQ(s.as<SlideSchedule>().pattern, 4) << to_string(s);
  const auto sum = fam.summarize(a);
  ASSERT_TRUE(sum.has_value());
  EXPECT_NE(sum->text.find("pattern 6:8"), std::string::npos) << sum->text;
  // A dense row: no pattern up to 14:16; the reason names the row and columns.
  CsrMatrix d = a;
  d.row_ptr.assign(1, 0);
  d.col_idx.clear();
  d.values.clear();
  for (int64_t r = 0; r < 64; ++r) {
    for (int64_t c = 0; c < 200; ++c)
      if (r != 5 || c < 16) {
        if (r == 5 || c % 8 < 2) {
          d.col_idx.push_back(static_cast<int32_t>(c));
          d.values.push_back(0.5f + 0.01f * float(c));
        }
      }
    d.row_ptr.push_back(static_cast<int64_t>(d.col_idx.size()));
  }
  const auto why = fam.why_not(p, d);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("row 6, columns 1-16 hold 16"), std::string::npos) << why[0];
  EXPECT_TRUE(fam.enumerate(p, d, o).empty());
  // fp32 is not a tensor-core type.
  EXPECT_FALSE(fam.why_not(Problem::spmm(64, 200, 16, DType::F32), a).empty());
}

// K parts are offered while the grid is short of two waves, never leave a warp of a part with
// fewer than four load steps, and are not offered where one part already fills the device.
TEST(SlideFamily, KPartsOnlyWhereTheGridIsShort) {
  const IrFamily& fam = *find_ir_family("slide");
  EnumerateOptions o;
  o.include_specialised = true;
  o.device.multiprocessors = 132;
  // 256 rows, K = 4096: 16 row tiles, 192 chunks of 32 lifted columns.
  const CsrMatrix a = slide_weight(256, 4096, 4, 5);
  const Problem p = Problem::spmm(256, 4096, 8, DType::F16, Layout::ColMajor, Layout::ColMajor);
  int with_parts = 0;
  for (const Schedule& s : fam.enumerate(p, a, o)) {
    const SlideSchedule& b = s.as<SlideSchedule>();
    if (b.ksplit == 1) continue;
    ++with_parts;
    const int64_t part = slide_part_chunks(p, b);
    EXPECT_GE(part, 4 * (b.split == SlideSplit::K ? b.warps : 1) * slide_step_chunks(b))
        << to_string(s);
    // The grid with half the parts was short of two waves of 4 blocks per multiprocessor.
    EXPECT_LT(slide_grid_x(p, b) * slide_grid_y(p, b) / 2, 2 * 4 * 132) << to_string(s);
  }
  EXPECT_GT(with_parts, 0);
  // 2048 rows at N = 512 (nt = 1: 64 column blocks): 8192 blocks of one part already, while the
  // 48 chunks of K = 1024 would leave room for parts.
  const CsrMatrix big = slide_weight(2048, 1024, 4, 6);
  const Problem pb = Problem::spmm(2048, 1024, 512, DType::F16, Layout::ColMajor, Layout::ColMajor);
  for (const Schedule& s : fam.enumerate(pb, big, o)) {
    const SlideSchedule& b = s.as<SlideSchedule>();
    if (b.split == SlideSplit::K && b.m_tiles == 1 && b.n_tiles == 1) {
      EXPECT_EQ(b.ksplit, 1) << to_string(s);
    }
  }
}

}  // namespace
}  // namespace sparsegen
