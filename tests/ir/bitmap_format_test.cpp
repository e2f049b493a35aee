// Bitmap-tile format (exact round trips, tile boundaries, the header's golden example, stats) and
// the bitmap_tc CPU interpreter against a double-precision CSR reference.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "ir/bitmap_format.h"
#include "ir/bitmap_interpreter.h"
#include "ir/diagnostics.h"
#include "ir/interpreter.h"
#include "ir/parallel.h"
#include "ir/schedule.h"
#include "tests/ir/schedule_test_util.h"
#include "tests/ir/tight_bound_check.h"

namespace sparsegen {
namespace {

using Row = std::vector<std::pair<int32_t, float>>;

CsrMatrix from_rows(int64_t cols, const std::vector<Row>& rows) {
  CsrMatrix a;
  a.rows = static_cast<int64_t>(rows.size());
  a.cols = cols;
  for (const auto& r : rows) {
    for (const auto& [c, v] : r) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
    }
    a.row_ptr.push_back(a.nnz());
  }
  a.check_canonical();
  return a;
}

// Each position stored with probability `density`; about 5% of the stored values are explicit
// zeros (one in four of them -0.0), the rest non-integer in (-1, 1).
CsrMatrix random_matrix(int64_t rows, int64_t cols, double density, uint64_t seed) {
  return testing::bernoulli_csr(
      rows, cols, seed, [&](int64_t) { return density; },
      [](auto&& draw) {
        const double z = draw();
        return z < 0.0125 ? -0.0f : (z < 0.05 ? 0.0f : static_cast<float>(draw() * 2 - 1));
      });
}

void expect_same(const CsrMatrix& a, const CsrMatrix& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i)
    EXPECT_EQ(std::signbit(a.values[i]), std::signbit(b.values[i])) << i;
  EXPECT_EQ(a.values, b.values);
}

// Structural invariants of a packed format, checked independently of the packer.
void check_invariants(const BitmapTileFormat& f) {
  EXPECT_EQ(f.row_tiles, (f.rows + 15) / 16);
  EXPECT_EQ(f.col_tiles, (f.cols + 63) / 64);
  ASSERT_EQ(static_cast<int64_t>(f.masks.size()), f.tiles() * 16);
  ASSERT_EQ(static_cast<int64_t>(f.tile_ptr.size()), f.tiles() + 1);
  EXPECT_EQ(f.tile_ptr.front(), 0);
  EXPECT_EQ(f.tile_ptr.back(), f.slots());
  int64_t nnz = 0, max_values = 0;
  for (int64_t t = 0; t < f.tiles(); ++t) {
    const int64_t b = f.tile_ptr[static_cast<size_t>(t)],
                  e = f.tile_ptr[static_cast<size_t>(t + 1)];
    EXPECT_EQ(b % kBitmapValueAlign, 0) << "tile " << t;
    int64_t count = 0, values = 0;
    for (int64_t i = 0; i < 16; ++i) {
      const uint64_t m = f.masks[static_cast<size_t>(t * 16 + i)];
      count += std::popcount(m);
      const int64_t rt = t / std::max<int64_t>(f.col_tiles, 1), ct = t % f.col_tiles;
      if (rt * 16 + i >= f.rows) {
        EXPECT_EQ(m, 0u) << "row beyond M, tile " << t;
      }
      const int64_t valid = std::min<int64_t>(64, f.cols - ct * 64);
      if (valid < 64) {
        EXPECT_EQ(m >> valid, 0u) << "column beyond K, tile " << t;
      }
    }
    // Values per lane: one per set bit (slot), or two per register of the A operand holding one
    // (pair: bits 2j, 2j + 1 of the lane word).
    for (uint32_t w : bitmap_lane_words(f, t))
      for (int j = 0; j < 16; ++j) {
        const uint32_t two = (w >> (2 * j)) & 3u;
        values += f.layout == BitmapValues::Slot ? std::popcount(two) : (two != 0 ? 2 : 0);
      }
    EXPECT_EQ(e - b, (values + 7) / 8 * 8) << "tile " << t;
    for (int64_t v = b + values; v < e; ++v) EXPECT_EQ(f.values[static_cast<size_t>(v)], 0.0f);
    nnz += count;
    max_values = std::max(max_values, e - b);
  }
  EXPECT_EQ(nnz, f.nnz);
  EXPECT_EQ(max_values, f.max_tile_values);
}

void check_stats(const CsrMatrix& a, const BitmapTileFormat& f) {
  const BitmapTileStats st = bitmap_tile_stats(a, f.layout);
  EXPECT_EQ(st.rows, a.rows);
  EXPECT_EQ(st.cols, a.cols);
  EXPECT_EQ(st.nnz, a.nnz());
  EXPECT_EQ(st.tiles, f.tiles());
  EXPECT_EQ(st.slots, f.slots());
  EXPECT_EQ(st.max_tile_values, f.max_tile_values);
  EXPECT_EQ(st.bytes(), f.slots() * 2 + f.tiles() * 16 * 8 + (f.tiles() + 1) * 4);
  const double dense = double(a.rows) * double(a.cols) * 2;
  EXPECT_DOUBLE_EQ(st.effective_density(), dense > 0 ? double(st.bytes()) / dense : 0.0);
}

void round_trip(const CsrMatrix& a) {
  for (BitmapValues layout : {BitmapValues::Slot, BitmapValues::Pair}) {
    SCOPED_TRACE(::testing::Message() << "vals=" << to_string(layout));
    const BitmapTileFormat f = pack_bitmap_tiles(a, layout);
    EXPECT_EQ(f.layout, layout);
    check_invariants(f);
    check_stats(a, f);
    expect_same(unpack_bitmap_tiles(f), a);
  }
}

TEST(BitmapFormat, EmptyShapesAndAllZeroMatrix) {
  for (const auto& [m, k] : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 100}, {20, 0}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k);
    const CsrMatrix a = from_rows(k, std::vector<Row>(static_cast<size_t>(m)));
    const BitmapTileFormat f = pack_bitmap_tiles(a);
    EXPECT_EQ(f.tiles(), 0);
    EXPECT_EQ(f.slots(), 0);
    EXPECT_EQ(f.tile_ptr, std::vector<int64_t>{0});
    round_trip(a);
    EXPECT_EQ(bitmap_tile_stats(a).effective_density(), 0.0);
  }
  // 40 x 130 with no entries: 3 x 3 tiles, all masks 0, no value slots.
  const CsrMatrix z = from_rows(130, std::vector<Row>(40));
  const BitmapTileFormat f = pack_bitmap_tiles(z);
  EXPECT_EQ(f.tiles(), 9);
  EXPECT_EQ(f.slots(), 0);
  EXPECT_EQ(f.max_tile_values, 0);
  EXPECT_EQ(f.tile_ptr, std::vector<int64_t>(10, 0));
  round_trip(z);
  EXPECT_EQ(bitmap_tile_stats(z).bytes(), 9 * 128 + 10 * 4);
}

TEST(BitmapFormat, OneByOne) {
  round_trip(from_rows(1, {{{0, 1.5f}}}));
  round_trip(from_rows(1, {{{0, -0.0f}}}));  // an explicit (negative) zero is an entry
  round_trip(from_rows(1, {{}}));
  const BitmapTileFormat f = pack_bitmap_tiles(from_rows(1, {{{0, 1.5f}}}));
  EXPECT_EQ(f.masks[0], 1u);
  EXPECT_EQ(f.values, (std::vector<float>{1.5f, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(f.tile_ptr, (std::vector<int64_t>{0, 8}));
}

TEST(BitmapFormat, GoldenHeaderExample) {
  std::vector<Row> rows(16);
  rows[0] = {{0, 1.0f}, {5, 2.0f}};
  rows[2] = {{63, 3.0f}};
  const CsrMatrix a = from_rows(64, rows);
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  std::vector<uint64_t> masks(16, 0);
  masks[0] = 0x21;
  masks[2] = uint64_t{1} << 63;
  EXPECT_EQ(f.masks, masks);
  EXPECT_EQ(f.values, (std::vector<float>{1, 2, 3, 0, 0, 0, 0, 0}));
  EXPECT_EQ(f.tile_ptr, (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(f.nnz, 3);
  EXPECT_EQ(f.max_tile_values, 8);
  round_trip(a);
}

TEST(BitmapFormat, TileBoundaries) {
  // Row 1: columns 63 and 64 fall in tiles 0 and 1. 17 rows: row 16 starts row tile 1. K = 200
  // (not a multiple of 64) with an entry in the last column of the partial tile.
  std::vector<Row> rows(17);
  rows[1] = {{63, 1.25f}, {64, -2.5f}};
  rows[15] = {{199, 0.75f}};
  rows[16] = {{0, 0.0f}, {127, 3.0f}, {128, 4.0f}, {199, -1.0f}};
  const CsrMatrix a = from_rows(200, rows);
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  ASSERT_EQ(f.row_tiles, 2);
  ASSERT_EQ(f.col_tiles, 4);
  EXPECT_EQ(f.masks[0 * 16 + 1], uint64_t{1} << 63);
  EXPECT_EQ(f.masks[1 * 16 + 1], 1u);
  EXPECT_EQ(f.masks[3 * 16 + 15], uint64_t{1} << 7);  // column 199 = 3·64 + 7
  EXPECT_EQ(f.masks[4 * 16 + 0], 1u);                 // row 16, column 0 (explicit zero)
  EXPECT_EQ(f.masks[5 * 16 + 0], uint64_t{1} << 63);
  EXPECT_EQ(f.masks[6 * 16 + 0], 1u);
  EXPECT_EQ(f.masks[7 * 16 + 0], uint64_t{1} << 7);
  // Tiles 0, 1, 3 of row tile 0 and all four of row tile 1 hold one entry each.
  EXPECT_EQ(f.tile_ptr, (std::vector<int64_t>{0, 8, 16, 16, 24, 32, 40, 48, 56}));
  round_trip(a);
  // M = 33 (not a multiple of 16) with the last row used.
  std::vector<Row> tall(33);
  tall[32] = {{5, 1.0f}};
  round_trip(from_rows(10, tall));
}

TEST(BitmapFormat, FullyDenseTile) {
  std::vector<Row> rows(16);
  for (int32_t r = 0; r < 16; ++r)
    for (int32_t c = 0; c < 64; ++c)
      rows[static_cast<size_t>(r)].push_back({c, 0.5f + 0.001f * float(r * 64 + c)});
  const CsrMatrix a = from_rows(64, rows);
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  EXPECT_EQ(f.masks, std::vector<uint64_t>(16, ~uint64_t{0}));
  EXPECT_EQ(f.tile_ptr, (std::vector<int64_t>{0, 1024}));
  EXPECT_EQ(f.max_tile_values, 1024);
  // Fragment order, no fill: lane L's 32 values by bit, i.e. quarter by quarter, the A registers
  // a0..a3 (row g, g+8, then the same rows 8 columns on), two columns each.
  ASSERT_EQ(f.values.size(), 1024u);
  for (int lane = 0; lane < 32; ++lane)
    for (int bit = 0; bit < 32; ++bit) {
      const auto [r, c] = bitmap_fragment_position(lane, bit);
      EXPECT_EQ(f.values[static_cast<size_t>(lane * 32 + bit)], 0.5f + 0.001f * float(r * 64 + c))
          << "lane " << lane << " bit " << bit;
    }
  // Lane 5 (g = 1, t = 1): bits 0..7 are (1, 2) (1, 3) (9, 2) (9, 3) (1, 10) (1, 11) (9, 10) (9,
  // 11).
  const std::pair<int, int> q0[8] = {{1, 2},  {1, 3},  {9, 2},  {9, 3},
                                     {1, 10}, {1, 11}, {9, 10}, {9, 11}};
  for (int bit = 0; bit < 8; ++bit) EXPECT_EQ(bitmap_fragment_position(5, bit), q0[bit]) << bit;
  EXPECT_EQ(bitmap_fragment_position(5, 8), (std::pair<int, int>{1, 18}));  // next quarter
  round_trip(a);
}

TEST(BitmapFormat, FragmentSlotsAreABijection) {
  std::vector<int> seen(16 * 64, 0);
  for (int lane = 0; lane < 32; ++lane)
    for (int bit = 0; bit < 32; ++bit) {
      const auto [r, c] = bitmap_fragment_position(lane, bit);
      ASSERT_TRUE(r >= 0 && r < 16 && c >= 0 && c < 64) << lane << " " << bit;
      ++seen[static_cast<size_t>(r * 64 + c)];
      const BitmapFragmentSlot s = bitmap_fragment_slot(r, c);
      EXPECT_EQ(s.lane, lane);
      EXPECT_EQ(s.bit, bit);
    }
  EXPECT_EQ(seen, std::vector<int>(16 * 64, 1));
}

TEST(BitmapFormat, HeaderExampleInFragmentOrder) {
  // The header's example: (0, 0) lane 0 bit 0, (0, 5) lane 2 bit 1, (2, 63) lane 11 bit 29.
  EXPECT_EQ(bitmap_fragment_slot(0, 5).lane, 2);
  EXPECT_EQ(bitmap_fragment_slot(0, 5).bit, 1);
  EXPECT_EQ(bitmap_fragment_slot(2, 63).lane, 11);
  EXPECT_EQ(bitmap_fragment_slot(2, 63).bit, 29);
  std::vector<Row> rows(16);
  rows[0] = {{0, 1.0f}, {5, 2.0f}};
  rows[2] = {{63, 3.0f}};
  const BitmapTileFormat f = pack_bitmap_tiles(from_rows(64, rows));
  const auto w = bitmap_lane_words(f, 0);
  std::array<uint32_t, 32> expect{};
  expect[0] = 1u;
  expect[2] = 2u;
  expect[11] = 1u << 29;
  EXPECT_EQ(w, expect);
  const auto start = bitmap_lane_starts(w);
  EXPECT_EQ(start[0], 0);
  EXPECT_EQ(start[2], 1);
  EXPECT_EQ(start[11], 2);
  EXPECT_EQ(start[32], 3);
  // Values in lane order; here also row order: (0, 0) < (0, 5) < (2, 63) by lane.
  EXPECT_EQ(f.values, (std::vector<float>{1, 2, 3, 0, 0, 0, 0, 0}));
}

TEST(BitmapFormat, PairLayoutHeaderExample) {
  // The header's example with vals=pair: lane 0 {1.0, 0}, lane 2 {0, 2.0}, lane 11 {0, 3.0} (bit
  // 29 is the high half of register 14).
  std::vector<Row> rows(16);
  rows[0] = {{0, 1.0f}, {5, 2.0f}};
  rows[2] = {{63, 3.0f}};
  const CsrMatrix a = from_rows(64, rows);
  const BitmapTileFormat f = pack_bitmap_tiles(a, BitmapValues::Pair);
  EXPECT_EQ(f.values, (std::vector<float>{1, 0, 0, 2, 0, 3, 0, 0}));
  EXPECT_EQ(f.tile_ptr, (std::vector<int64_t>{0, 8}));
  const auto start = bitmap_lane_starts(bitmap_lane_words(f, 0), BitmapValues::Pair);
  EXPECT_EQ(start[2], 2);
  EXPECT_EQ(start[11], 4);
  EXPECT_EQ(start[32], 6);
  round_trip(a);
}

TEST(BitmapFormat, LaneEntriesAndRanksPerLayout) {
  const uint32_t w = 0b1101u;  // bits 0, 2, 3: register 0 (low half), register 1 (both halves)
  EXPECT_EQ(bitmap_lane_entries(w, BitmapValues::Slot), 3);
  EXPECT_EQ(bitmap_lane_entries(w, BitmapValues::Pair), 4);
  EXPECT_EQ(bitmap_lane_rank(w, 0, BitmapValues::Slot), 0);
  EXPECT_EQ(bitmap_lane_rank(w, 2, BitmapValues::Slot), 1);
  EXPECT_EQ(bitmap_lane_rank(w, 3, BitmapValues::Slot), 2);
  EXPECT_EQ(bitmap_lane_rank(w, 0, BitmapValues::Pair), 0);
  EXPECT_EQ(bitmap_lane_rank(w, 2, BitmapValues::Pair), 2);
  EXPECT_EQ(bitmap_lane_rank(w, 3, BitmapValues::Pair), 3);
  // A full lane word: both layouts store 32 values in the same order.
  for (int bit = 0; bit < 32; ++bit)
    EXPECT_EQ(bitmap_lane_rank(0xffffffffu, bit, BitmapValues::Pair), bit);
  EXPECT_EQ(bitmap_lane_entries(0xffffffffu, BitmapValues::Pair), 32);
  EXPECT_EQ(bitmap_lane_entries(0x80000000u, BitmapValues::Pair), 2);
  EXPECT_EQ(bitmap_lane_rank(0x80000000u, 31, BitmapValues::Pair), 1);
  EXPECT_EQ(parse_bitmap_values("pair"), BitmapValues::Pair);
  EXPECT_EQ(parse_bitmap_values("slot"), BitmapValues::Slot);
  EXPECT_EQ(parse_bitmap_values("pairs"), std::nullopt);
}

TEST(BitmapFormat, PairLayoutCostsTheAbsentHalves) {
  // 70 % random: a register holds a set bit with probability 1 - 0.7^2 = 0.51, so about 1.02
  // value bytes per element instead of 0.6, plus 1/8 of a byte of masks.
  const CsrMatrix a = random_matrix(256, 4096, 0.3, 21);
  const BitmapTileStats slot = bitmap_tile_stats(a, BitmapValues::Slot);
  const BitmapTileStats pair = bitmap_tile_stats(a, BitmapValues::Pair);
  const double elems = 256.0 * 4096.0;
  EXPECT_NEAR(double(slot.slots) * 2 / elems, 0.6, 0.02);
  EXPECT_NEAR(double(pair.slots) * 2 / elems, 1.02, 0.02);
  EXPECT_GT(pair.max_tile_values, slot.max_tile_values);
  // A fully dense tile stores the same 1024 values either way.
  std::vector<Row> rows(16);
  for (auto& r : rows)
    for (int c = 0; c < 64; ++c) r.push_back({c, 0.25f + static_cast<float>(c)});
  const CsrMatrix d = from_rows(64, rows);
  EXPECT_EQ(pack_bitmap_tiles(d, BitmapValues::Pair).values,
            pack_bitmap_tiles(d, BitmapValues::Slot).values);
}

TEST(BitmapFormat, ValuesFollowLanesNotRows) {
  // (0, 8) is lane 0 bit 4, (1, 0) is lane 4 bit 0, (0, 2) is lane 1 bit 0: the value order is
  // (0, 0) [lane 0 bit 0], (0, 8) [lane 0 bit 4], (0, 2) [lane 1], (1, 0) [lane 4].
  std::vector<Row> rows(2);
  rows[0] = {{0, 1.5f}, {2, 2.5f}, {8, 3.5f}};
  rows[1] = {{0, 4.5f}};
  const CsrMatrix a = from_rows(64, rows);
  const BitmapTileFormat f = pack_bitmap_tiles(a);
  EXPECT_EQ(f.values, (std::vector<float>{1.5f, 3.5f, 2.5f, 4.5f, 0, 0, 0, 0}));
  round_trip(a);
}

TEST(BitmapFormat, RandomMatricesRoundTrip) {
  for (double density : {0.5, 0.1}) {  // 50% and 90% sparsity
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      SCOPED_TRACE(::testing::Message() << "density " << density << " seed " << seed);
      const int64_t m = 13 + 29 * static_cast<int64_t>(seed),
                    k = 50 + 97 * static_cast<int64_t>(seed);
      round_trip(random_matrix(m, k, density, seed));
    }
  }
}

// Tiles in groups of G row tiles: the same tiles (masks, values) under bitmap_tile_index, a
// group's tiles of one column tile consecutive (also in a last, shorter group), the CSR restored,
// and regrouping back to G = 1 gives the row-tile-major pack exactly.
TEST(BitmapFormat, GroupedTileOrder) {
  const CsrMatrix a = random_matrix(16 * 11 + 5, 64 * 5 + 7, 0.3, 31);  // 12 x 6 tiles
  for (BitmapValues layout : {BitmapValues::Slot, BitmapValues::Pair}) {
    const BitmapTileFormat f1 = pack_bitmap_tiles(a, layout);
    for (int64_t g : {2, 5, 8, 16}) {
      SCOPED_TRACE(::testing::Message() << "vals=" << to_string(layout) << " group " << g);
      const BitmapTileFormat fg = pack_bitmap_tiles(a, layout, g);
      EXPECT_EQ(fg.group, g);
      EXPECT_EQ(fg.slots(), f1.slots());
      EXPECT_EQ(fg.max_tile_values, f1.max_tile_values);
      std::vector<bool> seen(static_cast<size_t>(fg.tiles()), false);
      for (int64_t rt = 0; rt < f1.row_tiles; ++rt)
        for (int64_t ct = 0; ct < f1.col_tiles; ++ct) {
          const int64_t t1 = bitmap_tile_index(f1, rt, ct), tg = bitmap_tile_index(fg, rt, ct);
          ASSERT_EQ(t1, rt * f1.col_tiles + ct);
          ASSERT_GE(tg, 0);
          ASSERT_LT(tg, fg.tiles());
          EXPECT_FALSE(seen[static_cast<size_t>(tg)]);
          seen[static_cast<size_t>(tg)] = true;
          if (rt % g != g - 1 && rt + 1 < f1.row_tiles) {
            EXPECT_EQ(bitmap_tile_index(fg, rt + 1, ct), tg + 1);
          }
          EXPECT_EQ(bitmap_lane_words(fg, tg), bitmap_lane_words(f1, t1));
          const auto b1 = f1.values.begin() + f1.tile_ptr[static_cast<size_t>(t1)];
          const auto bg = fg.values.begin() + fg.tile_ptr[static_cast<size_t>(tg)];
          const int64_t n1 = f1.tile_ptr[static_cast<size_t>(t1 + 1)] - (b1 - f1.values.begin());
          ASSERT_EQ(fg.tile_ptr[static_cast<size_t>(tg + 1)] - fg.tile_ptr[static_cast<size_t>(tg)],
                    n1);
          EXPECT_TRUE(std::equal(b1, b1 + n1, bg));
        }
      expect_same(unpack_bitmap_tiles(fg), a);
      const BitmapTileFormat back = regroup_bitmap_tiles(fg, 1);
      EXPECT_EQ(back.masks, f1.masks);
      EXPECT_EQ(back.tile_ptr, f1.tile_ptr);
      EXPECT_EQ(back.values, f1.values);
    }
  }
  EXPECT_THROW(pack_bitmap_tiles(a, BitmapValues::Slot, 0), std::invalid_argument);
}

TEST(BitmapFormat, EffectiveDensity) {
  // 50% random: about d + 1/16 = 0.56 of dense fp16 (plus the fill and tile pointers).
  const BitmapTileStats st = bitmap_tile_stats(random_matrix(256, 4096, 0.5, 9));
  EXPECT_GT(st.effective_density(), 0.55);
  EXPECT_LT(st.effective_density(), 0.58);
  // A wide, nearly empty matrix costs its masks, without arrays of the column-tile count.
  CsrMatrix wide;
  wide.rows = 1;
  wide.cols = kMaxDimension;
  wide.col_idx = {static_cast<int32_t>(kMaxDimension - 1)};
  wide.values = {1.0f};
  wide.row_ptr = {0, 1};
  const BitmapTileStats ws = bitmap_tile_stats(wide);
  const int64_t tiles = (kMaxDimension + 63) / 64;
  EXPECT_EQ(ws.tiles, tiles);
  EXPECT_EQ(ws.slots, 8);
  EXPECT_EQ(ws.max_tile_values, 8);
  EXPECT_EQ(ws.bytes(), 16 + tiles * 128 + (tiles + 1) * 4);
}

TEST(BitmapFormat, NonCanonicalInputThrows) {
  CsrMatrix a = from_rows(100, {{{3, 1.0f}, {70, 2.0f}}, {{5, 1.0f}}});
  CsrMatrix unsorted = a;
  std::swap(unsorted.col_idx[0], unsorted.col_idx[1]);
  EXPECT_THROW(pack_bitmap_tiles(unsorted), UserError);
  EXPECT_THROW(bitmap_tile_stats(unsorted), UserError);
  CsrMatrix out_of_range = a;
  out_of_range.col_idx[2] = 100;
  EXPECT_THROW(pack_bitmap_tiles(out_of_range), UserError);
  CsrMatrix short_ptr = a;
  short_ptr.row_ptr.pop_back();
  EXPECT_THROW(pack_bitmap_tiles(short_ptr), UserError);
  CsrMatrix duplicate = a;
  duplicate.col_idx[1] = 3;
  EXPECT_THROW(pack_bitmap_tiles(duplicate), UserError);
}

// ─── Interpreter ─────────────────────────────────────────────────────────────────────────────

TEST(BitmapInterpreter, MatchesDoubleReference) {
  std::mt19937 g(7);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  const std::vector<CsrMatrix> mats = {random_matrix(37, 200, 0.5, 11),   // 3 x 4 tiles
                                       random_matrix(50, 333, 0.1, 12),   // 4 x 6 tiles
                                       random_matrix(16, 64, 1.0, 13),    // one dense tile
                                       random_matrix(5, 700, 0.05, 14)};  // 1 x 11 tiles
  int checked = 0, combo = 0;
  for (const CsrMatrix& a : mats)
    for (DType dt : {DType::F16, DType::BF16})
      for (int64_t n : {8, 24})
        for (Layout cl : {Layout::RowMajor, Layout::ColMajor}) {
          const Problem p = Problem::spmm(a.rows, a.cols, n, dt, Layout::RowMajor, cl);
          // Both value layouts, alternating over the cases (each case runs one).
          const BitmapValues layout = combo++ % 2 == 0 ? BitmapValues::Slot : BitmapValues::Pair;
          const BitmapTileFormat f = pack_bitmap_tiles(a, layout);
          std::vector<float> b(static_cast<size_t>(p.k * p.n)), c0(static_cast<size_t>(p.m * p.n));
          for (float& x : b) x = u(g);
          for (float& x : c0) x = u(g);
          std::vector<int> splits = {1, 2, 3, static_cast<int>(f.col_tiles)};
          for (int ks : splits)
            for (const auto& [alpha, beta] :
                 std::vector<std::pair<float, float>>{{1.0f, 0.0f}, {0.75f, -1.5f}, {1.0f, 0.5f}}) {
              SCOPED_TRACE(::testing::Message() << to_string(p) << " ksplit " << ks << " alpha "
                                                << alpha << " beta " << beta);
              BitmapTcSchedule s;
              s.ksplit = ks;
              s.values = layout;
              std::vector<float> got = c0;
              // beta == 0: C is never read (NaN must not leak into the result).
              if (beta == 0.0f) std::fill(got.begin(), got.end(), std::nanf(""));
              interpret_bitmap_tc(p, s, f, b, got, alpha, beta);
              // Within the tight bound (ir/error_bound.h) of the exact result; split K adds
              // the ksplit parts into the fp32 workspace.
              ASSERT_EQ(
                  testing::tight_bound_violation(p, a, b, c0, alpha, beta, got, ks > 1 ? ks : 0),
                  "");
              for (size_t i = 0; i < got.size(); ++i)
                ASSERT_EQ(got[i], round_to(dt, got[i])) << "at " << i;  // stored in the dtype
              // With ksplit = 1 the order is the CSR's column order: bit-identical to
              // reference_spmm (same fp32 accumulation, same single rounding).
              if (ks == 1) {
                std::vector<float> ref = c0;
                reference_spmm(p, a, b, ref, alpha, beta);
                for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << "at " << i;
              }
              ++checked;
            }
        }
  EXPECT_EQ(checked, 4 * 2 * 2 * 2 * 4 * 3);
}

// copy=step reads tiles in groups (bitmap_tc_tile_group): same result as the reference from the
// grouped pack; the row-tile-major pack is refused for it.
TEST(BitmapInterpreter, BulkReadsTheGroupedPack) {
  const CsrMatrix a = random_matrix(16 * 9 + 3, 200, 0.4, 17);
  const Problem p = Problem::spmm(a.rows, a.cols, 16, DType::F16);
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  std::vector<float> b(static_cast<size_t>(p.k * p.n)), c0(static_cast<size_t>(p.m * p.n));
  for (float& x : b) x = u(g);
  for (float& x : c0) x = u(g);
  BitmapTcSchedule s;
  s.pipe = BitmapPipe::Bulk;
  s.copy = BitmapCopy::Step;
  s.mma = MmaKind::Wgmma;
  s.stages = 4;
  const BitmapTileFormat f = pack_bitmap_tiles(a, s.values, bitmap_tc_tile_group(s));
  std::vector<float> got = c0, ref = c0;
  interpret_bitmap_tc(p, s, f, b, got, 0.75f, -1.5f);
  reference_spmm(p, a, b, ref, 0.75f, -1.5f);
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << "at " << i;
  EXPECT_THROW(interpret_bitmap_tc(p, s, pack_bitmap_tiles(a), b, got, 1.0f, 0.0f),
               std::logic_error);
}

TEST(BitmapInterpreter, DegenerateProblems) {
  // K = 0: no tiles, C = beta·C (both the store and the workspace path).
  const CsrMatrix a = from_rows(0, std::vector<Row>(5));
  const Problem p = Problem::spmm(5, 0, 8, DType::F16);
  for (int ks : {1, 2}) {
    BitmapTcSchedule s;
    s.ksplit = ks;
    std::vector<float> c(40, 2.0f);
    interpret_bitmap_tc(p, s, pack_bitmap_tiles(a), {}, c, 1.0f, 0.5f);
    EXPECT_EQ(c, std::vector<float>(40, 1.0f));
  }
  // M = 0: nothing to do.
  std::vector<float> none;
  const std::vector<float> b(64 * 8, 1.0f);
  interpret_bitmap_tc(Problem::spmm(0, 64, 8, DType::F16), BitmapTcSchedule{},
                      pack_bitmap_tiles(from_rows(64, {})), b, none, 1.0f, 0.0f);
}

TEST(BitmapInterpreter, CorruptedFormatThrows) {
  // 20 x 100: 2 x 2 tiles; tile 1 (columns 64..99) holds one entry and 7 fill slots.
  std::vector<Row> rows(20);
  rows[0] = {{1, 1.0f}, {70, 2.0f}};
  rows[17] = {{2, 3.0f}};
  const CsrMatrix a = from_rows(100, rows);
  const Problem p = Problem::spmm(20, 100, 8, DType::F16);
  const BitmapTileFormat good = pack_bitmap_tiles(a);
  const std::vector<float> b(static_cast<size_t>(100 * 8), 0.5f);
  std::vector<float> c(static_cast<size_t>(20 * 8), 0.0f);
  for (int ks : {1, 2}) {
    BitmapTcSchedule s;
    s.ksplit = ks;
    EXPECT_NO_THROW(interpret_bitmap_tc(p, s, good, b, c, 1.0f, 0.0f));
    auto expect_broken = [&](const BitmapTileFormat& f, const char* what) {
      EXPECT_THROW(interpret_bitmap_tc(p, s, f, b, c, 1.0f, 0.0f), std::logic_error) << what;
      EXPECT_THROW(unpack_bitmap_tiles(f), std::logic_error) << what;
    };
    BitmapTileFormat f = good;
    f.masks[1 * 16 + 0] |= uint64_t{1} << 40;  // column 104 >= K = 100 (a fill slot exists)
    expect_broken(f, "bit beyond K");
    f = good;
    f.masks[2 * 16 + 5] |= 1u;  // row 21 >= M = 20
    expect_broken(f, "bit beyond M");
    f = good;
    f.tile_ptr[2] = f.tile_ptr[1] - 8;  // tile pointers decrease
    expect_broken(f, "decreasing tile_ptr");
    f = good;
    f.tile_ptr[1] = 0;  // tile 0 gets no slots for its entry
    expect_broken(f, "too few slots");
    f = good;
    f.masks[0] = ~uint64_t{0};  // 64 entries in an 8-slot tile
    expect_broken(f, "more bits than slots");
    f = good;
    f.tile_ptr.pop_back();
    expect_broken(f, "short tile_ptr");
    f = good;
    f.masks.resize(16);
    expect_broken(f, "short masks");
    f = good;
    f.layout = BitmapValues::Pair;  // values in slot order read as pairs
    EXPECT_THROW(interpret_bitmap_tc(p, s, f, b, c, 1.0f, 0.0f), std::logic_error)
        << "layout differs from the schedule's";
  }
}

// The packer splits row tiles into chunks packed in parallel: any split gives the serial result,
// byte for byte, also with empty chunks and chunk bounds between tile rows of different lengths.
TEST(BitmapFormat, PackingIsIndependentOfThreads) {
  const ParallelConfig saved = parallel_config();
  for (uint64_t seed : {4u, 5u}) {
    // 16·13 + 5 rows: a partial last row tile; 3 column tiles, the last partial.
    const CsrMatrix a = random_matrix(16 * 13 + 5, 150, seed == 4 ? 0.3 : 0.02, seed);
    const BitmapValues layout = seed == 4 ? BitmapValues::Slot : BitmapValues::Pair;
    set_parallel_config({1, 1});
    const BitmapTileFormat one = pack_bitmap_tiles(a, layout);
    const BitmapTileStats st1 = bitmap_tile_stats(a, layout);
    for (int chunks : {2, 5, 31}) {
      set_parallel_config({chunks, 1});
      const BitmapTileFormat many = pack_bitmap_tiles(a, layout);
      EXPECT_EQ(many.masks, one.masks) << chunks;
      EXPECT_EQ(many.tile_ptr, one.tile_ptr) << chunks;
      EXPECT_EQ(many.max_tile_values, one.max_tile_values);
      ASSERT_EQ(many.values.size(), one.values.size());
      EXPECT_EQ(
          0, std::memcmp(many.values.data(), one.values.data(), one.values.size() * sizeof(float)));
      const BitmapTileStats st = bitmap_tile_stats(a, layout);
      EXPECT_EQ(st.slots, st1.slots);
      EXPECT_EQ(st.max_tile_values, st1.max_tile_values);
    }
  }
  set_parallel_config(saved);
}

// A build with a shared pack verifies against the format's own figures: they are the matrix's.
TEST(BitmapFormat, StatsOfTheFormatAreTheMatrixs) {
  for (const double d : {0.0, 0.02, 0.3, 1.0}) {
    const CsrMatrix a = random_matrix(16 * 5 + 3, 200, d, 11);
    const BitmapTileStats m = bitmap_tile_stats(a), f = bitmap_tile_stats(pack_bitmap_tiles(a));
    EXPECT_EQ(f.rows, m.rows);
    EXPECT_EQ(f.cols, m.cols);
    EXPECT_EQ(f.nnz, m.nnz) << d;
    EXPECT_EQ(f.tiles, m.tiles);
    EXPECT_EQ(f.slots, m.slots) << d;
    EXPECT_EQ(f.max_tile_values, m.max_tile_values) << d;
  }
}

}  // namespace
}  // namespace sparsegen
