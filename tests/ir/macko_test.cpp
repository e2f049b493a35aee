// MACKO format (packer round trip, padding rules, effective density), schedule SPEC/validation/
// enumeration, and the interpreter against reference_spmm.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <random>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/interpreter.h"
#include "ir/macko_format.h"
#include "ir/macko_interpreter.h"
#include "ir/macko_schedule.h"
#include "ir/schedule.h"
#include "tests/ir/schedule_test_util.h"
#include "tests/ir/tight_bound_check.h"

namespace sparsegen {
namespace {

// rows[r] = list of (col, value).
CsrMatrix from_rows(int64_t cols, const std::vector<std::vector<std::pair<int32_t, float>>>& rows) {
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

CsrMatrix random_matrix(int64_t rows, int64_t cols, double density, uint64_t seed) {
  return testing::bernoulli_csr(
      rows, cols, seed,
      // Vary the density per row (some rows empty, some dense).
      [&](int64_t r) {
        return r % 7 == 3 ? 0.0 : (r % 5 == 1 ? std::min(1.0, density * 6) : density);
      },
      // Explicit zeros too: they are real entries and must survive the round trip.
      [](auto&& draw) { return draw() < 0.05 ? 0.0f : static_cast<float>(draw() * 2 - 1); });
}

void expect_same(const CsrMatrix& a, const CsrMatrix& b) {
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_EQ(a.row_ptr, b.row_ptr);
  EXPECT_EQ(a.col_idx, b.col_idx);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i)
    EXPECT_EQ(std::signbit(a.values[i]), std::signbit(b.values[i]));
  EXPECT_EQ(a.values, b.values);
}

void check_invariants(const MackoFormat& f) {
  EXPECT_EQ(f.slots() % kMackoVectorSlots, 0);
  EXPECT_GE(f.slots(), f.used_slots());
  EXPECT_EQ(static_cast<int64_t>(f.deltas.size()), f.slots() * f.delta_bits / 8);
  EXPECT_EQ(f.row_ptr.back(), f.used_slots());
  for (int64_t s = 0; s < f.slots(); ++s) {
    const bool pad = (f.is_padding[static_cast<size_t>(s / 64)] >> (s % 64)) & 1u;
    if (pad) {
      EXPECT_EQ(f.values[static_cast<size_t>(s)], 0.0f);
      EXPECT_EQ(f.delta(s), (1 << f.delta_bits) - 1);
    }
  }
}

const int kBits[] = {2, 4, 8};

TEST(MackoFormat, EmptyRowsAndAllZeroMatrix) {
  for (int b : kBits) {
    const CsrMatrix a = from_rows(10, {{}, {}, {}});
    const MackoFormat f = pack_macko(a, b);
    EXPECT_EQ(f.slots(), 0);
    EXPECT_EQ(f.row_ptr, (std::vector<int64_t>{0, 0, 0, 0}));
    expect_same(unpack_macko(f), a);
    const CsrMatrix e = from_rows(0, {});
    expect_same(unpack_macko(pack_macko(e, b)), e);
  }
}

TEST(MackoFormat, OneValueAtTheLastColumn) {
  for (int b : kBits) {
    const int64_t K = 1000;
    const CsrMatrix a = from_rows(K, {{}, {{static_cast<int32_t>(K - 1), 2.5f}}, {}});
    const MackoFormat f = pack_macko(a, b);
    const int64_t step = int64_t{1} << b;  // columns advanced by a padding slot
    EXPECT_EQ(f.padding, (K - 1) / step);
    check_invariants(f);
    expect_same(unpack_macko(f), a);
  }
}

TEST(MackoFormat, GapsAtTheBoundary) {
  for (int b : kBits) {
    const int32_t m = (1 << b) - 1;  // largest delta
    // Row 0: gap of exactly m zeros (fits). Row 1: gap of m+1 zeros (one padding slot).
    // Row 2: first entry at column m (fits) and at m+1 (pads). Row 3: gaps of 2m+1 and 2m+2.
    const CsrMatrix a = from_rows(4 * m + 8, {{{0, 1.0f}, {m + 1, 2.0f}},
                                              {{0, 1.0f}, {m + 2, 3.0f}},
                                              {{m, 4.0f}},
                                              {{m + 1, 5.0f}},
                                              {{0, 1.0f}, {2 * m + 2, 6.0f}, {4 * m + 5, 7.0f}}});
    const MackoFormat f = pack_macko(a, b);
    check_invariants(f);
    auto row_slots = [&](int r) { return f.row_ptr[r + 1] - f.row_ptr[r]; };
    EXPECT_EQ(row_slots(0), 2);
    EXPECT_EQ(row_slots(1), 3);
    EXPECT_EQ(f.delta(f.row_ptr[1] + 1), m);  // the padding slot
    EXPECT_EQ(f.delta(f.row_ptr[1] + 2), 0);  // then column m + 2 right after column m + 1
    EXPECT_EQ(row_slots(2), 1);
    EXPECT_EQ(row_slots(3), 2);
    EXPECT_EQ(row_slots(4), 3 + 1 + 2);
    expect_same(unpack_macko(f), a);
  }
}

TEST(MackoFormat, VeryLongRowsAndRandomMatricesRoundTrip) {
  for (int b : kBits) {
    std::vector<std::pair<int32_t, float>> dense, sparse;
    for (int32_t c = 0; c < 20000; ++c) dense.push_back({c, 0.25f * float(c % 13) - 1.0f});
    for (int32_t c = 7; c < 200000; c += 977) sparse.push_back({c, 1.5f});
    const CsrMatrix a = from_rows(200000, {dense, {}, sparse});
    const MackoFormat f = pack_macko(a, b);
    check_invariants(f);
    expect_same(unpack_macko(f), a);
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const CsrMatrix r = random_matrix(37, 300 + 91 * static_cast<int64_t>(seed),
                                        0.02 * double(seed * seed), seed);
      const MackoFormat fr = pack_macko(r, b);
      check_invariants(fr);
      expect_same(unpack_macko(fr), r);
      const MackoStats st = macko_stats(r, b);
      EXPECT_EQ(st.padding, fr.padding);
      EXPECT_EQ(st.slots, fr.slots());
    }
  }
}

TEST(MackoFormat, EffectiveDensity) {
  // 50% random at b = 4: about 0.5 · (16 + 4) / 16 = 0.625 of dense fp16, plus row pointers.
  const CsrMatrix a = random_matrix(256, 4096, 0.5, 9);
  const MackoStats st = macko_stats(a, 4);
  EXPECT_GT(st.effective_density(), 0.35);
  EXPECT_LT(st.effective_density(), 0.75);
  EXPECT_EQ(st.bytes(), st.slots * 2 + st.slots / 2 + (st.rows + 1) * 4);
  EXPECT_THROW(macko_stats(a, 3), UserError);
  EXPECT_THROW(pack_macko(a, 16), UserError);
}

TEST(MackoSchedule, SpecRoundTripAndErrors) {
  MackoSchedule m;
  m.delta_bits = 8;
  m.warps_per_row = 4;
  m.warps_per_block = 4;
  m.unroll = 4;
  m.cols = 2;
  const Schedule s(m);
  EXPECT_EQ(s.family_name(), "macko");
  EXPECT_EQ(to_string(s),
            "macko;delta=8;wpr=4;warps=4;unroll=4;cols=2;vec=16;stage=global;rpw=1;sort=0");
  // SPECs written before stage/rpw existed still parse (the fields default).
  EXPECT_EQ(parse_schedule("macko;delta=8;wpr=4;warps=4;unroll=4;cols=2;vec=16"), s);
  EXPECT_EQ(parse_schedule(to_string(s)), s);
  EXPECT_EQ(parse_schedule("macko").as<MackoSchedule>(), MackoSchedule{});
  EXPECT_EQ(parse_schedule("macko;wpr=2").as<MackoSchedule>().warps_per_block, 2);
  EXPECT_NE(print_schedule(s).find("split-row"), std::string::npos);
  auto err = [](const char* spec) {
    try {
      parse_schedule(spec);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(err("macko;delta=3").find("delta=3 must be 2, 4 or 8"), std::string::npos);
  EXPECT_NE(err("macko;wpr=2;warps=8").find("warps=8 == wpr"), std::string::npos);
  EXPECT_NE(err("macko;vec=8").find("vec=8"), std::string::npos);
  EXPECT_NE(err("macko;tcols=2").find("field 'tcols'"), std::string::npos);
  EXPECT_NE(err("macko;stage=texture").find("global, shared or shared_f32"), std::string::npos);
  EXPECT_NE(err("macko;rpw=4").find("needs a staged B"), std::string::npos);
  EXPECT_NE(err("macko;stage=shared;rpw=2000").find("rpw=2000 must be in 1..1024"),
            std::string::npos);
  EXPECT_EQ(parse_schedule("macko;stage=shared;rpw=3").as<MackoSchedule>().rows_per_warp, 3);
  EXPECT_NE(err("macko;stage=shared;wpr=2").find("needs wpr=1"), std::string::npos);
  EXPECT_NE(err("macko;stage=shared_f32;cols=2").find("cols=2 must be 1"), std::string::npos);
  EXPECT_NE(err("macko;sort=1").find("sort=1 needs a staged B"), std::string::npos);
  const Schedule sorted = parse_schedule("macko;warps=8;stage=shared;rpw=2;sort=1");
  EXPECT_TRUE(sorted.as<MackoSchedule>().sort_rows);
  EXPECT_EQ(parse_schedule(to_string(sorted)), sorted);
  // 16 rows per block: 3 x 16 row words + the counter, rounded up to 16 bytes.
  // The counter, then B; behind B 16 rows + 8 spare items + a header: 25 x (16 + 4) bytes.
  EXPECT_EQ(macko_stage_offset(sorted.as<MackoSchedule>()), 16);
  const Problem p100 = Problem::spmv(4, 100, DType::F16);
  EXPECT_EQ(macko_items_offset(p100, sorted.as<MackoSchedule>()),
            288);  // 16 + 132 x 2, rounded to 16
  EXPECT_EQ(macko_stage_bytes(p100, sorted.as<MackoSchedule>()), 288 + 25 * 20);
  EXPECT_NE(print_schedule(sorted).find("longest rows first"), std::string::npos);
  const Schedule staged = parse_schedule("macko;warps=32;stage=shared;rpw=4");
  EXPECT_EQ(staged.as<MackoSchedule>().rows_per_block(), 128);
  EXPECT_EQ(parse_schedule(to_string(staged)), staged);
  EXPECT_NE(print_schedule(staged).find("B     : shared (staged once per block, 4 rows per warp)"),
            std::string::npos);
  // Staging copies whole rows of a row-major B, all N columns.
  EXPECT_TRUE(validate(Problem::spmv(4, 4, DType::F16), staged).empty());
  EXPECT_FALSE(validate(Problem::spmm(4, 4, 2, DType::F16), staged).empty());  // cols 1 != n 2
  Problem colb = Problem::spmv(4, 4, DType::F16);
  colb.b_layout = Layout::ColMajor;
  EXPECT_FALSE(validate(colb, staged).empty());
  EXPECT_FALSE(validate(Problem::spmv(4, 4, DType::F32), s).empty());  // fp32 values
  EXPECT_TRUE(validate(Problem::spmm(4, 4, 3, DType::F16), s).empty());
  EXPECT_FALSE(
      validate(Problem::spmm(4, 4, 1, DType::F16), parse_schedule("macko;cols=4")).empty());
}

TEST(MackoSchedule, EnumerationAndVerifier) {
  const CsrMatrix a = random_matrix(64, 8192, 0.5, 3);
  EXPECT_TRUE(
      enumerate_macko_schedules(Problem::spmv(64, 8192, DType::F32), a, DeviceLimits::sm90())
          .empty());
  EXPECT_TRUE(
      enumerate_macko_schedules(Problem::spmm(64, 8192, 9, DType::F16), a, DeviceLimits::sm90())
          .empty());
  // N = 3 cannot stage B (cols 4 != n): the B-from-global kernels, split rows included.
  const Problem p3 = Problem::spmm(64, 8192, 3, DType::F16);
  const auto global = enumerate_macko_schedules(p3, a, DeviceLimits::sm90());
  ASSERT_GE(global.size(), 12u);
  EXPECT_EQ(global.front().as<MackoSchedule>().delta_bits, 4);
  bool split = false;
  for (const Schedule& s : global) {
    EXPECT_TRUE(validate(p3, s).empty());
    EXPECT_FALSE(s.as<MackoSchedule>().staged());
    split |= s.as<MackoSchedule>().warps_per_row > 1;
  }
  EXPECT_TRUE(split);  // ~4000-slot rows are long enough to split
  // N = 1: only staged B (b = 4 first), with rows per warp only while every multiprocessor still
  // gets a block (64 rows: rpw = 1 only).
  const Problem p = Problem::spmv(64, 8192, DType::F16);
  const auto all = enumerate_macko_schedules(p, a, DeviceLimits::sm90());
  ASSERT_GE(all.size(), 8u);
  EXPECT_EQ(all.front().as<MackoSchedule>().delta_bits, 4);
  int staged = 0;
  for (const Schedule& s : all)
    if (s.as<MackoSchedule>().staged()) {
      ++staged;
      EXPECT_EQ(s.as<MackoSchedule>().rows_per_warp, 1);
      const int es = s.as<MackoSchedule>().stage == BStage::SharedF32 ? 4 : 2;
      EXPECT_EQ(macko_items_offset(p, s.as<MackoSchedule>()),
                macko_stage_offset(s.as<MackoSchedule>()) + (8192 + 2 * kMackoStageGuard) * es);
      EXPECT_EQ(macko_stage_bytes(p, s.as<MackoSchedule>()),
                macko_items_offset(p, s.as<MackoSchedule>()) +
                    macko_items_per_block(s.as<MackoSchedule>()) * (16 + 4));
      EXPECT_EQ(macko_stage_offset(s.as<MackoSchedule>()) % 16, 0);
    }
  EXPECT_EQ(staged, static_cast<int>(all.size()));
  // Uneven rows (every 7th empty, every 5th six times denser) also get the longest-first order;
  // rows of equal length do not.
  bool sorted = false;
  for (const Schedule& s : all) sorted |= s.as<MackoSchedule>().sort_rows;
  EXPECT_TRUE(sorted);
  CsrMatrix even;
  even.rows = 64;
  even.cols = 512;
  for (int64_t r = 0; r < even.rows; ++r) {
    for (int32_t c = static_cast<int32_t>(r % 3); c < 512; c += 3) {
      even.col_idx.push_back(c);
      even.values.push_back(0.25f + 0.001f * static_cast<float>(c));
    }
    even.row_ptr.push_back(even.nnz());
  }
  for (const Schedule& s :
       enumerate_macko_schedules(Problem::spmv(64, 512, DType::F16), even, DeviceLimits::sm90()))
    EXPECT_FALSE(s.as<MackoSchedule>().sort_rows);
  const CsrMatrix tall = random_matrix(8192, 256, 0.5, 4);
  const Problem pt = Problem::spmv(8192, 256, DType::F16);
  int max_rpw = 0;
  for (const Schedule& s : enumerate_macko_schedules(pt, tall, DeviceLimits::sm90()))
    if (s.as<MackoSchedule>().staged()) {
      const MackoSchedule& m = s.as<MackoSchedule>();
      // Powers of two while every multiprocessor gets a block; the one-wave count may give fewer
      // blocks (16 warps of 80 registers: one block per multiprocessor, 8192 / (16 x 132) -> 4).
      if (m.rows_per_warp != macko_one_wave_rows_per_warp(pt, m, DeviceLimits::sm90())) {
        max_rpw = std::max(max_rpw, m.rows_per_warp);
        EXPECT_GE(macko_grid_x(pt, m), 132);
      }
    }
  EXPECT_EQ(max_rpw, 4);  // 8192 rows / (8 warps x 4) = 256 blocks; rpw 8 would give 128
  const Problem wide = Problem::spmm(4, 20000, 8, DType::F16);  // 8 x 2 B x 20032 rows > 227 KiB
  MackoSchedule big;
  big.stage = BStage::Shared;
  big.cols = 8;
  EXPECT_FALSE(
      verify_macko(wide, big, macko_stats(random_matrix(4, 20000, 0.5, 5), 4), DeviceLimits::sm90())
          .empty());
  // The generic enumerator appends them only when asked.
  EnumerateOptions o;
  const auto plain = enumerate_schedules(p, a, o);
  o.include_specialised = true;
  const auto with = enumerate_schedules(p, a, o);
  auto macko_count = [](const std::vector<Schedule>& v) {
    return std::count_if(v.begin(), v.end(),
                         [](const Schedule& s) { return s.family_name() == "macko"; });
  };
  EXPECT_EQ(macko_count(plain), 0);
  EXPECT_EQ(macko_count(with), static_cast<std::ptrdiff_t>(all.size()));
  DeviceLimits small = DeviceLimits::sm90();
  small.max_grid_x = 4;
  EXPECT_FALSE(verify_macko(p, all.front().as<MackoSchedule>(), macko_stats(a, 4), small).empty());
}

// The one-wave rows per warp: every block resident at once, each copying B once.
TEST(MackoSchedule, OneWaveRowsPerWarp) {
  const DeviceLimits dev = DeviceLimits::sm90();
  // N = 8, K = 12288: 12288 x 16 B of staged B (~197 KiB) leaves room for one block per
  // multiprocessor, so 16 warps take ceil(12288 / (16 x 132)) = 6 rows each: 128 blocks.
  const Problem p8 = Problem::spmm(12288, 12288, 8, DType::F16);
  MackoSchedule s;
  s.stage = BStage::Shared;
  s.cols = 8;
  s.warps_per_block = 16;
  s.unroll = 4;
  EXPECT_EQ(macko_blocks_per_sm(p8, s, dev), 1);
  EXPECT_EQ(macko_one_wave_rows_per_warp(p8, s, dev), 6);
  s.rows_per_warp = 6;
  EXPECT_EQ(macko_grid_x(p8, s), 128);
  // N = 1 staged as fp32 (~48 KiB): four blocks of 8 warps fit (shared memory), so 3 rows each.
  const Problem p1 = Problem::spmv(12288, 12288, DType::F16);
  MackoSchedule f;
  f.stage = BStage::SharedF32;
  f.warps_per_block = 8;
  EXPECT_EQ(macko_blocks_per_sm(p1, f, dev), 4);
  EXPECT_EQ(macko_one_wave_rows_per_warp(p1, f, dev), 3);
  // B from global memory is not copied per block.
  EXPECT_EQ(macko_one_wave_rows_per_warp(p1, MackoSchedule{}, dev), 1);
  // The enumeration offers it next to the powers of two: for 12288 rows at N = 8 and 16 warps,
  // rpw 1, 2, 4 (8 would leave multiprocessors without a block) and 6.
  const CsrMatrix a = random_matrix(12288, 64, 0.2, 9);
  const Problem small_k = Problem::spmm(12288, 64, 8, DType::F16);
  std::vector<int> rpws;
  for (const Schedule& c : enumerate_macko_schedules(small_k, a, dev)) {
    const MackoSchedule& m = c.as<MackoSchedule>();
    if (m.delta_bits == 4 && m.warps_per_block == 8 && m.unroll == 2 && !m.sort_rows)
      rpws.push_back(m.rows_per_warp);
  }
  // K = 64: a small B, so registers bound residency: 4 blocks of 8 warps (56 registers x 256
  // threads), 12288 / (8 x 132 x 4) -> 3 rows per warp.
  EXPECT_EQ(rpws, (std::vector<int>{1, 2, 4, 8, 3}));
}

// sort=1's row order: longest first, each row to the least-loaded block with room.
TEST(MackoSchedule, RowOrderBalancesBlocks) {
  // Lengths 9 7 5 4 3 2 1 0 (rows 0..7, shuffled below), 3 rows per block: 3 blocks (3, 3, 2).
  const std::vector<int64_t> len = {4, 0, 9, 2, 7, 1, 5, 3};
  std::vector<int64_t> ptr = {0};
  for (int64_t l : len) ptr.push_back(ptr.back() + l);
  const std::vector<int64_t> order = macko_row_order(ptr, 3);
  // 9 -> b0, 7 -> b1, 5 -> b2, 4 -> b2 (full), 3 -> b1, 2 -> b0, 1 -> b1 (full), 0 -> b0:
  // b0 {9, 2, 0}, b1 {7, 3, 1}, b2 {5, 4}: loads 11, 11, 9.
  EXPECT_EQ(order, (std::vector<int64_t>{2, 3, 1, 4, 7, 5, 6, 0}));
  std::vector<int64_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(sorted[static_cast<size_t>(r)], r);  // a permutation
  // Many rows of random length: block loads within one longest row of each other.
  std::mt19937_64 g(7);
  std::vector<int64_t> big = {0};
  for (int i = 0; i < 10000; ++i) big.push_back(big.back() + static_cast<int64_t>(g() % 1000));
  const std::vector<int64_t> o = macko_row_order(big, 64);
  int64_t lo = INT64_MAX, hi = 0;
  for (size_t b = 0; b * 64 < o.size(); ++b) {
    if ((b + 1) * 64 > o.size()) break;  // the last, partial block
    int64_t load = 0;
    for (size_t i = b * 64; i < (b + 1) * 64; ++i)
      load += big[static_cast<size_t>(o[i]) + 1] - big[static_cast<size_t>(o[i])];
    lo = std::min(lo, load);
    hi = std::max(hi, load);
  }
  EXPECT_LE(hi - lo, 1000);
}

TEST(MackoInterpreter, MatchesReferenceOnTestMatrices) {
  std::vector<std::vector<std::pair<int32_t, float>>> rows(40);
  for (int32_t c = 0; c < 3000; c += 3) rows[1].push_back({c, 0.5f + float(c % 7) / 8});
  rows[5] = {{2999, -1.25f}};
  for (int r = 10; r < 40; ++r)
    for (int32_t c = r; c < 3000; c += 17 * r) rows[static_cast<size_t>(r)].push_back({c, -0.75f});
  const std::vector<CsrMatrix> mats = {from_rows(3000, rows), random_matrix(50, 700, 0.3, 5),
                                       random_matrix(20, 5000, 0.02, 6), from_rows(16, {{}, {}})};
  std::mt19937 g(1);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  for (const CsrMatrix& a : mats)
    for (DType dt : {DType::F16, DType::BF16})
      for (int64_t n : {1, 2, 7, 8})
        for (Layout l : {Layout::RowMajor, Layout::ColMajor}) {
          const Problem p = Problem::spmm(a.rows, a.cols, n, dt, l, l);
          std::vector<float> b(static_cast<size_t>(p.k * p.n)), c0(static_cast<size_t>(p.m * p.n));
          for (float& x : b) x = round_to(dt, u(g));
          for (float& x : c0) x = round_to(dt, u(g));
          for (int bits : kBits)
            for (int wpr : {1, 2, 8})
              for (int unroll : {1, 4}) {
                MackoSchedule s;
                s.delta_bits = bits;
                s.warps_per_row = wpr;
                s.warps_per_block = wpr == 1 ? 4 : wpr;
                s.unroll = unroll;
                s.cols = n == 1 ? 1 : (n == 2 ? 2 : 8);
                const MackoFormat f = pack_macko(a, bits);
                for (float beta : {0.0f, -1.5f}) {
                  std::vector<float> got = c0;
                  interpret_macko(p, s, f, b, got, 0.75f, beta);
                  ASSERT_EQ(testing::tight_bound_violation(p, a, b, c0, 0.75f, beta, got), "")
                      << to_string(Schedule(s));
                }
              }
        }
}

// Staged work items: rows at least 1.5 segments long (a segment = the block's even share of
// vectors per warp, in whole steps) are cut at vector boundaries; the columns carried into a
// segment are the row's own; one header per block counts the items; the rest are empty.
TEST(MackoSchedule, ItemsCutLongRows) {
  // 9 rows: row 4 has 3000 nonzeros (375 vectors), the others 40 (5-6 vectors); 4 warps,
  // unroll 1 (32-vector steps), 3 rows per warp: blocks of 12 rows hold all 9.
  std::vector<std::vector<std::pair<int32_t, float>>> rows(9);
  for (int r = 0; r < 9; ++r)
    for (int32_t c = 0; c < (r == 4 ? 3000 : 40); ++c)
      rows[static_cast<size_t>(r)].push_back({r == 4 ? c : 7 * c + r, 0.25f + float(c % 5)});
  const CsrMatrix a = from_rows(3000, rows);
  const MackoFormat f = pack_macko(a, 4);
  const MackoSchedule s =
      parse_schedule("macko;warps=4;unroll=1;stage=shared;rpw=3").as<MackoSchedule>();
  ASSERT_EQ(macko_items_per_block(s), 12 + 4 + 1);
  const std::vector<int64_t> it = macko_items(f, s);
  ASSERT_EQ(it.size(), 17u * 4);
  // 375 + 8 x 5-6 vectors over 4 warps: a share of ~105 -> a segment of 128 vectors, so row 4 is
  // cut into 3 segments (128, 128, 119 vectors): 8 + 3 = 11 items.
  EXPECT_EQ(it[16 * 4], 11);
  EXPECT_EQ(it[16 * 4 + 1], 1);  // a row was cut
  for (int64_t t = 11; t < 16; ++t)
    EXPECT_EQ(std::vector<int64_t>(it.begin() + t * 4, it.begin() + t * 4 + 4),
              (std::vector<int64_t>{0, 0, 0, -1}));
  int64_t seg = 0;
  for (int64_t t = 0; t < 11; ++t) {
    const int64_t s0 = it[static_cast<size_t>(t * 4)], s1 = it[static_cast<size_t>(t * 4 + 1)];
    const int64_t carry = it[static_cast<size_t>(t * 4 + 2)],
                  row = it[static_cast<size_t>(t * 4 + 3)];
    if (s0 < f.row_ptr[4] || s0 >= f.row_ptr[5]) continue;
    ++seg;
    EXPECT_EQ(row, s1 == f.row_ptr[5] ? 4 : -1);
    if (s0 != f.row_ptr[4]) {
      EXPECT_EQ(s0 % 8, 0);  // later segments start on a vector
      EXPECT_EQ(carry, a.col_idx[static_cast<size_t>(a.row_ptr[4] + (s0 - f.row_ptr[4]) - 1)]);
    } else {
      EXPECT_EQ(carry, -1 - s0 % 8);
    }
    if (s1 != f.row_ptr[5]) {
      EXPECT_EQ((s1 - s0 + s0 % 8) % (128 * 8), 0);  // whole 128-vector segments
    }
  }
  EXPECT_EQ(seg, 3);
  // Uniform rows: nothing is cut, one item per row, in row order.
  const MackoFormat g = pack_macko(random_matrix(50, 700, 0.3, 5), 4);
  const MackoSchedule w =
      parse_schedule("macko;warps=16;unroll=2;stage=shared;rpw=2").as<MackoSchedule>();
  const std::vector<int64_t> u = macko_items(g, w);
  const int64_t ipb = macko_items_per_block(w);
  EXPECT_EQ(u[static_cast<size_t>((ipb - 1) * 4)], 32);
  EXPECT_EQ(u[static_cast<size_t>((ipb - 1) * 4 + 1)], 0);  // nothing cut
  EXPECT_EQ(u[static_cast<size_t>(ipb * 4 + (ipb - 1) * 4)], 18);
  for (int64_t r = 0; r < 32; ++r) EXPECT_EQ(u[static_cast<size_t>(r * 4 + 3)], r);
}

// Staged schedules: in items mode the interpreter walks the kernel's items (segments summed
// apart, then per row); in rows mode whole rows.
TEST(MackoInterpreter, StagedItemsMatchReference) {
  std::vector<std::vector<std::pair<int32_t, float>>> rows(30);
  for (int32_t c = 0; c < 6000; c += 1) rows[2].push_back({c, 0.5f + float(c % 7) / 8});
  for (int32_t c = 5; c < 6000; c += 2) rows[17].push_back({c, -0.25f - float(c % 3) / 4});
  rows[9] = {{5999, -1.25f}};
  for (int r = 20; r < 30; ++r)
    for (int32_t c = r; c < 6000; c += 37 * r) rows[static_cast<size_t>(r)].push_back({c, 0.75f});
  const std::vector<CsrMatrix> mats = {from_rows(6000, rows), random_matrix(70, 900, 0.3, 8),
                                       from_rows(16, {{}, {}, {}})};
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> d(-1.5f, 1.5f);
  int cut = 0;
  for (const CsrMatrix& a : mats)
    for (int64_t n : {1, 2, 8}) {
      const Problem p = Problem::spmm(a.rows, a.cols, n, DType::F16);
      std::vector<float> b(static_cast<size_t>(p.k * p.n)), c0(static_cast<size_t>(p.m * p.n));
      for (float& x : b) x = round_to(p.dtype, d(gen));
      for (float& x : c0) x = round_to(p.dtype, d(gen));
      for (int bits : {4, 8})
        for (const char* shape : {"warps=4;unroll=1;rpw=1", "warps=8;unroll=2;rpw=2",
                                  "warps=2;unroll=4;rpw=5", "warps=16;unroll=1;rpw=3"})
          for (int sort : {0, 1}) {
            const Schedule s = parse_schedule(fmt::format(
                "macko;delta={};{};cols={};stage=shared;sort={}", bits, shape, n, sort));
            const MackoFormat f = pack_macko(a, bits);
            // Items mode (N <= 2, rpw <= 3) cuts rows; rows mode (N = 8 or rpw = 5) does not.
            if (macko_uses_items(s.as<MackoSchedule>())) {
              const std::vector<int64_t> it = macko_items(f, s.as<MackoSchedule>());
              const int64_t ipb = macko_items_per_block(s.as<MackoSchedule>());
              for (size_t h = static_cast<size_t>(ipb - 1) * 4 + 1; h < it.size();
                   h += static_cast<size_t>(ipb) * 4)
                cut += static_cast<int>(it[h]);
            }
            for (float beta : {0.0f, -1.5f}) {
              std::vector<float> got = c0;
              interpret_macko(p, s.as<MackoSchedule>(), f, b, got, 0.75f, beta);
              ASSERT_EQ(testing::tight_bound_violation(p, a, b, c0, 0.75f, beta, got), "")
                  << to_string(s);
            }
          }
    }
  EXPECT_GT(cut, 0);  // some blocks did cut rows
}

// A build with a shared pack verifies against the format's own figures: they are the matrix's.
TEST(MackoFormat, StatsOfTheFormatAreTheMatrixs) {
  const CsrMatrix a = random_matrix(61, 700, 0.05, 12);
  for (int bits : {2, 4, 8}) {
    const MackoStats m = macko_stats(a, bits), f = macko_stats(pack_macko(a, bits));
    EXPECT_EQ(f.rows, m.rows);
    EXPECT_EQ(f.cols, m.cols);
    EXPECT_EQ(f.delta_bits, m.delta_bits);
    EXPECT_EQ(f.nnz, m.nnz) << bits;
    EXPECT_EQ(f.padding, m.padding) << bits;
    EXPECT_EQ(f.slots, m.slots) << bits;
  }
}

}  // namespace
}  // namespace sparsegen
