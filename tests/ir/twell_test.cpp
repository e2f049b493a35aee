// The twell family's IR: the TwELL format (exact encode / down product, overflow to the dense
// backup), the synthetic activation generator's statistics, the FFN reference and its bound,
// and the schedule's SPEC, printer and reasons.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/ffn.h"
#include "ir/gen/activations.h"
#include "ir/interpreter.h"
#include "ir/twell_format.h"
#include "ir/twell_schedule.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

// A matrix from per-row column lists, values non-integer and distinct.
CsrMatrix rows_of(int64_t cols, const std::vector<std::vector<int32_t>>& rows) {
  CsrMatrix a;
  a.rows = static_cast<int64_t>(rows.size());
  a.cols = cols;
  float v = 0.37f;
  for (const auto& r : rows) {
    for (int32_t c : r) {
      a.col_idx.push_back(c);
      a.values.push_back(v);
      v = -v * 1.13f + 0.05f;
    }
    a.row_ptr.push_back(static_cast<int64_t>(a.col_idx.size()));
  }
  return a;
}

TEST(TwellFormat, PacksTilesInColumnOrderAndSendsFullTilesToTheBackup) {
  // 150 columns: tiles of 64 -> 3 tiles (the last 22 wide); cap 2.
  const CsrMatrix h = rows_of(150, {{1, 5, 64, 149}, {0, 1, 2, 70}, {}, {128, 129, 130, 140}});
  const TwellFormat f = twell_encode(h, 64, 2);
  EXPECT_EQ(f.tiles, 3);
  EXPECT_EQ(f.nnz, 12);
  EXPECT_EQ(f.count, (std::vector<int32_t>{2, 1, 1, 3, 1, 0, 0, 0, 0, 0, 0, 4}));
  EXPECT_EQ(f.overflow_tiles, 2);
  EXPECT_EQ(f.overflow_rows, 2);
  EXPECT_TRUE(f.overflows(1, 0));
  EXPECT_FALSE(f.overflows(0, 0));
  // Row 0 tile 0 holds columns 1 and 5 in order; tile 2 holds 149 as 149 - 128.
  EXPECT_EQ(f.entry_col[0], 1);
  EXPECT_EQ(f.entry_col[1], 5);
  EXPECT_EQ(f.entry_value[0], h.values[0]);
  EXPECT_EQ(f.entry_col[(0 * 3 + 2) * 2], 149 - 128);
  // Row 1's first tile went to the backup, its second tile did not.
  EXPECT_EQ(f.backup[1 * 150 + 2], h.values[6]);
  EXPECT_EQ(f.entry_col[(1 * 3 + 1) * 2], 70 - 64);
  const TwellStats st = twell_stats(h, 64, 2);
  EXPECT_EQ(st.overflow_tiles, f.overflow_tiles);
  EXPECT_EQ(st.overflow_rows, f.overflow_rows);
  EXPECT_EQ(st.max_tile_count, 4);
  EXPECT_EQ(st.entries_walked, 5);
  EXPECT_EQ(st.dense_columns, 64 + 22);
}

// The down product over the format equals H·B computed from the CSR, for every tile and cap
// (exactly-representable inputs: small integers times powers of two, so fp32 is exact).
TEST(TwellFormat, DownProductEqualsTheCsrProductForEveryTileAndCap) {
  std::mt19937_64 rng(5);
  CsrMatrix h;
  h.cols = 300;
  for (int r = 0; r < 40; ++r) {
    const int want = r == 0 ? 290 : int(rng() % 40);
    for (int c = 0; c < h.cols; ++c)
      if (int(rng() % 300) < want) {
        h.col_idx.push_back(c);
        h.values.push_back(float(int(rng() % 7) - 3 + (rng() & 1 ? 0.5 : 0.25)));
      }
    h.row_ptr.push_back(static_cast<int64_t>(h.col_idx.size()));
  }
  h.rows = 40;
  const int64_t k = 5;
  std::vector<float> b(static_cast<size_t>(h.cols * k));
  for (float& v : b) v = float(int(rng() % 9) - 4) * 0.125f + 0.0625f;
  std::vector<double> want(static_cast<size_t>(h.rows * k), 0.0);
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t i = h.row_ptr[r]; i < h.row_ptr[r + 1]; ++i)
      for (int64_t j = 0; j < k; ++j)
        want[r * k + j] += double(h.values[i]) * b[h.col_idx[i] * k + j];
  for (int tile : kTwellTiles)
    for (int comp : kTwellComps) {
      const TwellFormat f = twell_encode(h, tile, tile / comp);
      std::vector<float> c(static_cast<size_t>(h.rows * k), std::nanf(""));
      twell_down_product(f, b, k, c, 1.0f, 0.0f);  // beta 0: the NaN is never read
      for (size_t i = 0; i < c.size(); ++i) ASSERT_EQ(double(c[i]), want[i]) << tile << "/" << comp;
      if (comp > 1) {
        EXPECT_GT(f.overflow_tiles, 0) << "row 0 must overflow at cap " << tile / comp;
      }
    }
}

TEST(Activations, GeneratorHitsTheMeanWithAHeavyTailAndDenseFirstTokens) {
  ActivationSpec spec;
  spec.m = 512;
  spec.k = 64;
  spec.n = 2048;
  spec.mean_nnz = 30;
  const FfnCase c = make_ffn_case(spec);
  const CsrMatrix h = ffn_activations(c.problem, c.weights, c.x);
  const ActivationStats st = activation_stats(h);
  EXPECT_GT(st.mean, 20.0) << to_string(st);
  EXPECT_LT(st.mean, 45.0) << to_string(st);
  EXPECT_GT(double(st.max), 10.0 * st.mean) << to_string(st);
  EXPECT_GT(double(h.row_length(0)), 5.0 * st.mean) << "the first token is denser";
  // Non-integer, dtype-rounded, reproducible.
  for (size_t i = 0; i < 200; ++i) {
    EXPECT_NE(c.x[i], std::nearbyint(c.x[i]));
    EXPECT_EQ(c.x[i], round_to(DType::BF16, c.x[i]));
  }
  EXPECT_EQ(make_ffn_case(spec).x, c.x);
  spec.mean_nnz = 600;
  const ActivationStats dense = activation_stats(
      ffn_activations(c.problem, make_ffn_case(spec).weights, make_ffn_case(spec).x));
  EXPECT_GT(dense.mean, 400.0) << to_string(dense);
  EXPECT_THROW(validate(ActivationSpec{.n = 100, .mean_nnz = 200}), UserError);
}

TEST(FfnReference, MatchesADirectComputationAndFlagsAWrongElement) {
  ActivationSpec spec;
  spec.m = 6;
  spec.k = 24;
  spec.n = 80;
  spec.mean_nnz = 12;
  spec.dtype = DType::F16;
  const FfnCase c = make_ffn_case(spec);
  std::vector<int64_t> rows = {0, 3, 5};
  const FfnReference ref = ffn_reference(c.problem, c.weights, c.x, {}, 1.0f, 0.0f, rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int64_t j = 0; j < spec.k; ++j) {
      double y = 0;
      for (int64_t n = 0; n < spec.n; ++n) {
        double g = 0, u = 0;
        for (int64_t q = 0; q < spec.k; ++q) {
          g += double(c.x[rows[i] * spec.k + q]) * c.weights.gate[q * spec.n + n];
          u += double(c.x[rows[i] * spec.k + q]) * c.weights.up[q * spec.n + n];
        }
        const double h = g > 0 ? double(round_to(DType::F16, float(g))) : 0.0;
        y += h * u * c.weights.down[n * spec.k + j];
      }
      EXPECT_NEAR(ref.y[i * spec.k + j], y, 1e-9 * (1 + std::fabs(y)));
      EXPECT_GT(ref.bound[i * spec.k + j], 0.0);
    }
  }
  std::vector<float> got(ref.y.begin(), ref.y.end());
  EXPECT_EQ(ffn_violation(ref, got, spec.k), "");
  got[4] += float(1e3 * ref.bound[4] + 1e-3);
  EXPECT_NE(ffn_violation(ref, got, spec.k).find("y[0][4]"), std::string::npos);
  FfnWeights bad = c.weights;
  bad.down.pop_back();
  EXPECT_NE(testing::error_of([&] { check_weights(c.problem, bad); }).find("W_down"),
            std::string::npos);
}

TEST(TwellSchedule, SpecRoundTripsAndPrints) {
  const Schedule s(TwellSchedule{64, 8, 4});
  EXPECT_EQ(to_string(s), "twell;tile=64;comp=8;warps=4;gate=mma;split=1;balance=token;teams=1");
  EXPECT_EQ(parse_schedule(to_string(s)), s);
  EXPECT_EQ(print_schedule(s),
            "schedule twell\n"
            "  format : tile-wise ELL, 64 columns per tile, room for 8 entries (comp 8), dense "
            "backup for fuller tiles\n"
            "  kernel1: x·W_g on mma.sync m16n8k16, 128 x 64 block tile, 8 warps, 3 stages; ReLU + "
            "TwELL epilogue\n"
            "  kernel2: one block of 4 warps per token, batches of 64 entries: u = x·W_u[:,n], y "
            "+= h·u·W_d[n,:]\n");
  // balance=queue: a persistent grid and a queue of parts of long tokens.
  const Schedule q = parse_schedule("twell;tile=128;comp=4;warps=8;gate=lib;balance=queue");
  EXPECT_EQ(q.as<TwellSchedule>().balance, TwellBalance::Queue);
  EXPECT_EQ(parse_schedule(to_string(q)), q);
  EXPECT_NE(print_schedule(q).find("  kernel2: persistent blocks of 8 warps taking tokens and "
                                   "parts of 2 batches from a queue, batches of 64 entries"),
            std::string::npos)
      << print_schedule(q);
  // Teams: the queue's workers are teams of warps / teams warps.
  const Schedule t = parse_schedule("twell;warps=8;gate=lib;balance=queue;teams=4");
  EXPECT_EQ(t.as<TwellSchedule>().team_warps(), 2);
  EXPECT_EQ(parse_schedule(to_string(t)), t);
  EXPECT_NE(print_schedule(t).find("persistent blocks of 8 warps (4 teams of 2) taking tokens"),
            std::string::npos)
      << print_schedule(t);
  // balance=even: a fixed grid of `blocks`, printed only with it.
  const Schedule e = parse_schedule("twell;gate=lib;balance=even;teams=4;blocks=264");
  EXPECT_EQ(e.as<TwellSchedule>().blocks, 264);
  EXPECT_EQ(to_string(e),
            "twell;tile=128;comp=4;warps=8;gate=lib;split=1;balance=even;teams=4;blocks=264");
  EXPECT_EQ(parse_schedule(to_string(e)), e);
  EXPECT_NE(print_schedule(e).find("  kernel2: 264 blocks of 8 warps (4 teams of 2), each worker "
                                   "an equal share of the tokens' batches (a token 8, an entry 1, "
                                   "a dense piece 32)"),
            std::string::npos)
      << print_schedule(e);
  // Even needs N a multiple of 8 (the row pack writes the token counts).
  const Problem odd_n = Problem::gated_ffn(2, 48, 204, DType::BF16);
  EXPECT_FALSE(validate_twell(odd_n, e.as<TwellSchedule>()).empty());
  EXPECT_TRUE(
      validate_twell(Problem::gated_ffn(2, 48, 208, DType::BF16), e.as<TwellSchedule>()).empty());
  for (const char* bad : {"twell;tile=96",
                          "twell;comp=3",
                          "twell;warps=2",
                          "twell;tile=x",
                          "twell;gate=cublas",
                          "twell;split=3",
                          "twell;nosuch=1",
                          "twell;balance=steal",
                          "twell;split=4;balance=queue",
                          "twell;teams=4",
                          "twell;balance=queue;teams=3",
                          "twell;warps=4;balance=queue;teams=8",
                          "twell;gate=lib;balance=even",
                          "twell;balance=even;blocks=10",
                          "twell;gate=lib;balance=even;blocks=10;split=4",
                          "twell;gate=lib;blocks=10",
                          "twell;gate=lib;balance=queue;blocks=10",
                          "twell;gate=lib;balance=even;blocks=70000",
                          "twell;pack=mask",
                          "twell;gate=lib;pack=bits"})
    EXPECT_THROW(parse_schedule(bad), UserError) << bad;
  // pack=mask (gate=lib): printed only when it is not the scan.
  const Schedule m = parse_schedule("twell;gate=lib;balance=even;blocks=264;pack=mask");
  EXPECT_EQ(m.as<TwellSchedule>().pack, TwellPack::Mask);
  EXPECT_EQ(to_string(m),
            "twell;tile=128;comp=4;warps=8;gate=lib;split=1;balance=even;teams=1;blocks=264;"
            "pack=mask");
  EXPECT_EQ(parse_schedule(to_string(m)), m);
  EXPECT_NE(print_schedule(m).find("packs TwELL from the mask, reading only the values of its set "
                                   "bits"),
            std::string::npos)
      << print_schedule(m);
  EXPECT_EQ(parse_schedule("twell;gate=lib;pack=scan"), parse_schedule("twell;gate=lib"));
}

TEST(TwellSchedule, ServesGatedFfnsOnlyAndSaysWhy) {
  const IrFamily& fam = *find_ir_family("twell");
  const CsrMatrix h = rows_of(200, {{1, 2}, {3}});
  const Problem ffn = Problem::gated_ffn(2, 48, 200, DType::BF16);
  EXPECT_TRUE(fam.why_not(ffn, h).empty());
  // 40 with one block per token, 40 with the queue and 60 more with queue teams (8, 4, 2 of
  // the 8 warps), 40 even ones (gate=lib; teams 1, 2, 4, 8), and for few tokens 40 more gate=lib
  // ones with split 4 and 16 (pack=mask is not offered). The first schedules of the enumeration
  // differ only in teams: the even ones on 2 blocks per multiprocessor, then the queue's.
  auto spec = [](const char* balance, int teams) {
    return fmt::format("twell;tile=128;comp=4;warps=8;gate=lib;split=1;balance={};teams={}{}",
                       balance, teams, std::string(balance) == "even" ? ";blocks=264" : "");
  };
  const auto space = fam.enumerate(ffn, h, {});
  EXPECT_EQ(space.size(), 220u);
  for (const Schedule& s : space) EXPECT_EQ(s.as<TwellSchedule>().pack, TwellPack::Scan);
  EXPECT_EQ(to_string(space.front()), spec("even", 1));
  // Teams nearest to 4 column groups per thread come first; at K = 48 every team holds one,
  // so the order is by size.
  EXPECT_EQ(to_string(space[1]), spec("even", 2));
  EXPECT_EQ(to_string(space[4]), spec("queue", 1));
  // At K = 4096 a one-warp team would hold 16 column groups per thread: not offered. Two teams
  // of 4 warps hold 4 groups and lead; at K = 2048 four teams of 2 warps do.
  const auto wide = fam.enumerate(Problem::gated_ffn(2, 4096, 200, DType::BF16), h, {});
  EXPECT_EQ(wide.size(), 190u);
  EXPECT_EQ(to_string(wide.front()), spec("even", 2));
  EXPECT_EQ(to_string(wide[1]), spec("even", 1));
  EXPECT_EQ(to_string(wide[2]), spec("even", 4));
  EXPECT_EQ(to_string(wide[3]), spec("queue", 2));
  const auto mid = fam.enumerate(Problem::gated_ffn(2, 2048, 200, DType::BF16), h, {});
  EXPECT_EQ(to_string(mid.front()), spec("even", 4));
  EXPECT_EQ(to_string(mid[2]), spec("even", 1));
  EXPECT_EQ(to_string(mid[3]), spec("even", 8));
  EXPECT_EQ(to_string(mid[4]), spec("queue", 4));
  // N not a multiple of 8: no even schedule (the row pack writes the token counts).
  const auto odd =
      fam.enumerate(Problem::gated_ffn(2, 48, 204, DType::BF16), rows_of(204, {{1, 2}, {3}}), {});
  EXPECT_EQ(odd.size(), 180u);
  EXPECT_EQ(to_string(odd.front()), spec("queue", 1));
  const Schedule lib = parse_schedule("twell;gate=lib");
  EXPECT_EQ(lib.as<TwellSchedule>().gate, TwellGate::Lib);
  EXPECT_NE(print_schedule(lib).find("BLAS library"), std::string::npos);
  const Problem spmm = Problem::spmm(2, 200, 8, DType::F16);
  ASSERT_FALSE(fam.why_not(spmm, h).empty());
  EXPECT_NE(fam.why_not(spmm, h)[0].find("gated FFN"), std::string::npos);
  EXPECT_TRUE(fam.enumerate(spmm, h, {}).empty());
  EXPECT_THROW(Problem::gated_ffn(2, 48, 200, DType::F32), UserError);
  // K too large for one x row in shared memory.
  const Problem huge = Problem::gated_ffn(2, 200000, 200, DType::BF16);
  EXPECT_FALSE(verify_twell(huge, TwellSchedule{}, DeviceLimits::sm90()).empty());
  EXPECT_FALSE(verify_twell(ffn, TwellSchedule{}, DeviceLimits{.name = "sm_75"}).empty());
}

}  // namespace
}  // namespace sparsegen

namespace sparsegen {
namespace {

// Every family sees a gated FFN with a calibration pattern of fewer rows than tokens: only the
// FFN families (twell, dense_ffn) offer schedules, and nothing divides by the pattern's shape.
TEST(TwellSchedule, EnumerationOfEveryFamilyForAnFfnWithAShortCalibration) {
  const CsrMatrix h = rows_of(200, {{1, 2}, {3}});
  EnumerateOptions o;
  o.include_specialised = true;
  const auto all = enumerate_schedules(Problem::gated_ffn(4096, 64, 200, DType::BF16), h, o);
  ASSERT_FALSE(all.empty());
  int twell = 0, dense = 0;
  for (const Schedule& s : all) {
    twell += s.family_name() == "twell";
    dense += s.family_name() == "dense_ffn";
  }
  EXPECT_EQ(twell, 180);
  EXPECT_EQ(dense, 3);
  EXPECT_EQ(twell + dense, static_cast<int>(all.size()));
}

}  // namespace
}  // namespace sparsegen

namespace sparsegen {
namespace {

// The FFN tuning key holds the statistics bucket: the mean in half octaves, the 99th percentile
// in octaves (of count + 1).
TEST(Activations, BucketIsCoarseEnoughToShareAndFineEnoughToTell) {
  ActivationStats a;
  a.mean = 30;
  a.p99 = 112;
  EXPECT_EQ(activation_bucket(a), "mean 2^5.0 p99 2^7");
  ActivationStats b = a;
  b.mean = 33;
  b.p99 = 150;
  EXPECT_EQ(activation_bucket(b), activation_bucket(a));
  b.mean = 60;
  EXPECT_NE(activation_bucket(b), activation_bucket(a));
}

}  // namespace
}  // namespace sparsegen
