// The CPU interpreter executes every enumerated schedule and must equal a plain CSR reference.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>

#include "ir/enumerate.h"
#include "ir/general_schedule.h"
#include "ir/interpreter.h"
#include "ir/io/load.h"
#include "tests/ir/schedule_test_util.h"
#include "tests/ir/tight_bound_check.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

using testing::matrix_with_lengths;
using testing::random_dense;

// Runs schedule s; the interpreter and reference_spmm must both be within the tight bound
// (ir/error_bound.h) of the exact result. Returns "" or the first element beyond it. Atomic
// outputs count the partial rows added into the fp32 workspace: at most one per nonzero, so the
// row length bounds them.
std::string check(const CsrMatrix& a, const Problem& p, const Schedule& s, float alpha, float beta,
                  uint64_t seed) {
  const std::vector<float> b = random_dense(p.k * p.n, seed);
  const std::vector<float> c0 = random_dense(p.m * p.n, seed + 1);
  std::vector<float> want = c0, got = c0;
  if (beta == 0.0f)  // poisoned: beta == 0 must never read C
    std::fill(got.begin(), got.end(), std::numeric_limits<float>::quiet_NaN());
  reference_spmm(p, a, b, want, alpha, beta);
  PackedFormat f = pack_format(a, p, s);
  interpret(p, s, f, b, got, alpha, beta);
  const bool atomic = f.output == OutputMode::Atomic;
  const std::string err = testing::tight_bound_violation(
      p, a, b, c0, alpha, beta, got, [&](int64_t r) { return atomic ? a.row_length(r) : 0; });
  if (!err.empty()) return "interpreter: " + err;
  const std::string ref_err = testing::tight_bound_violation(p, a, b, c0, alpha, beta, want);
  return ref_err.empty() ? "" : "reference_spmm: " + ref_err;
}

struct NamedMatrix {
  std::string name;
  CsrMatrix a;
};

std::vector<NamedMatrix> test_matrices() {
  std::vector<NamedMatrix> out;
  std::mt19937_64 rng(42);
  {  // empty rows between short rows
    std::vector<int64_t> lens;
    for (int i = 0; i < 40; ++i) lens.push_back(i % 3 == 0 ? 0 : int64_t(rng() % 6));
    out.push_back({"empty_rows", matrix_with_lengths(30, lens, 1)});
  }
  {  // one very long row among tiny ones
    std::vector<int64_t> lens(48, 1);
    lens[5] = 300;
    lens[6] = 0;
    out.push_back({"one_long_row", matrix_with_lengths(300, lens, 2)});
  }
  {  // power-law row lengths
    std::vector<int64_t> lens;
    for (int i = 0; i < 96; ++i) lens.push_back(int64_t(160.0 / std::pow(1.0 + i, 1.1)));
    std::shuffle(lens.begin(), lens.end(), rng);
    out.push_back({"power_law", matrix_with_lengths(200, lens, 3)});
  }
  {  // LLM-shaped: 256 x 512 at 95% sparsity with log-normal row densities
    std::lognormal_distribution<double> ln(std::log(25.6), 0.5);
    std::vector<int64_t> lens;
    for (int i = 0; i < 256; ++i) lens.push_back(std::min<int64_t>(512, int64_t(ln(rng))));
    out.push_back({"llm_256x512", matrix_with_lengths(512, lens, 4)});
  }
  // DLMC patterns (first rows only, to keep the suite fast).
  for (const char* rel :
       {"dlmc/transformer/magnitude_pruning/0.98/"
        "body_encoder_layer_0_self_attention_multihead_attention_q_fully_connected.smtx",
        "dlmc/transformer/magnitude_pruning/0.98/"
        "body_encoder_layer_0_ffn_conv1_fully_connected.smtx"}) {
    const auto path = testing::data_dir() / rel;
    if (!std::filesystem::exists(path)) continue;
    CsrMatrix m = load_matrix(path.string()).matrix;
    const int64_t keep = std::min<int64_t>(m.rows, 64);
    m.rows = keep;
    m.row_ptr.resize(static_cast<size_t>(keep + 1));
    m.col_idx.resize(static_cast<size_t>(m.row_ptr.back()));
    m.values.resize(static_cast<size_t>(m.row_ptr.back()));
    out.push_back({"dlmc_" + path.stem().string().substr(0, 30), std::move(m)});
  }
  return out;
}

TEST(Interpreter, EveryEnumeratedScheduleMatchesCsrReference) {
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
  size_t runs = 0;
  for (const NamedMatrix& nm : test_matrices()) {
    for (int64_t n : {1, 2, 7, 8, 32}) {
      const Problem p0 = Problem::spmm(nm.a.rows, nm.a.cols, n, DType::F32);
      const std::vector<Schedule> all = enumerate_schedules(p0, nm.a);
      ASSERT_FALSE(all.empty()) << nm.name;
      std::printf("[ schedules] %-40s n=%-3lld %zu\n", nm.name.c_str(), (long long)n, all.size());
      for (size_t i = 0; i < all.size(); ++i) {
        // Every schedule runs; dtype, layouts and alpha/beta rotate deterministically.
        Problem p = p0;
        p.dtype = dtypes[i % 3];
        p.b_layout = (i / 3) % 2 ? Layout::ColMajor : Layout::RowMajor;
        p.c_layout = (i / 6) % 2 ? Layout::ColMajor : Layout::RowMajor;
        const float alpha = i % 4 == 0 ? 1.0f : 1.5f;
        const float beta = i % 5 == 0 ? 0.0f : -0.75f;
        std::string err;
        try {
          err = check(nm.a, p, all[i], alpha, beta, 1000 + i);
        } catch (const std::exception& e) {
          err = e.what();
        }
        ASSERT_EQ(err, "") << nm.name << " " << to_string(all[i]);
        ++runs;
      }
    }
  }
  std::printf("[ schedules] %zu interpreter runs\n", runs);
}

// From N = 64 on, wide column groups also come in narrower block tiles (grid.y > 1 with a group
// covering its whole tile): enumerated, and correct at N a multiple of the tile and not.
TEST(Interpreter, NarrowColumnTilesOfWideGroups) {
  const CsrMatrix a = test_matrices()[2].a;
  for (int64_t n : {64, 100, 128}) {
    const Problem p = Problem::spmm(a.rows, a.cols, n, DType::F32);
    size_t tiled = 0;
    for (const Schedule& s : enumerate_schedules(p, a)) {
      if (s.family_name() != "general") continue;
      const GeneralSchedule& g = s.as<GeneralSchedule>();
      if (g.group_threads == 1 || g.block_cols >= n) continue;
      EXPECT_EQ(g.block_cols, g.warp_cols()) << to_string(s);
      EXPECT_GE(g.block_cols, 32) << to_string(s);
      if (tiled++ % 3 == 0) {
        ASSERT_EQ(check(a, p, s, 1.5f, -0.75f, 500 + tiled), "") << to_string(s);
      }
    }
    EXPECT_GT(tiled, 0u) << "N = " << n;
  }
  // Below N = 64 a wide group covers N in one tile.
  const Problem p32 = Problem::spmm(a.rows, a.cols, 32, DType::F32);
  for (const Schedule& s : enumerate_schedules(p32, a))
    if (s.family_name() == "general" && s.as<GeneralSchedule>().group_threads > 1) {
      EXPECT_GE(s.as<GeneralSchedule>().block_cols, 32) << to_string(s);
    }
}

TEST(Interpreter, AllDtypesOnASampleOfSchedules) {
  CsrMatrix a = test_matrices()[2].a;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    Problem p = Problem::spmm(a.rows, a.cols, 7, t, Layout::ColMajor, Layout::RowMajor);
    auto all = enumerate_schedules(p, a);
    for (size_t i = 0; i < all.size(); i += 7)
      ASSERT_EQ(check(a, p, all[i], 0.5f, 2.0f, 77 + i), "") << to_string(all[i]);
  }
}

// beta != 0 in the 16-bit dtypes: alpha·acc + beta·C₀ is one fp32 value rounded once, within the
// tight bound, for Store and Atomic schedules alike (beta = 0.5, and the GPU check's -1.5).
TEST(Interpreter, TightBoundWithBetaInHalfAndBf16) {
  const CsrMatrix a = test_matrices()[3].a;  // llm_256x512
  size_t atomic = 0, runs = 0;
  for (DType t : {DType::F16, DType::BF16}) {
    const Problem p = Problem::spmm(a.rows, a.cols, 8, t);
    const auto all = enumerate_schedules(p, a);
    for (size_t i = 0; i < all.size(); i += 5)
      for (const auto& [alpha, beta] : {std::pair{1.0f, 0.5f}, std::pair{0.75f, -1.5f}}) {
        ASSERT_EQ(check(a, p, all[i], alpha, beta, 300 + i), "")
            << to_string(all[i]) << " beta " << beta;
        atomic += pack_format(a, p, all[i]).output == OutputMode::Atomic;
        ++runs;
      }
  }
  EXPECT_GT(atomic, 0u);
  EXPECT_GT(runs, atomic);
}

TEST(Interpreter, DegenerateProblems) {
  const std::vector<std::string> specs = {
      "general", "general;block=rows:4;warp=rows:1;thread=row;warps=4;red=total,none,none",
      "general;block=nnz:64;warp=nnz:32;thread=nnz:1;warps=2;red=bitmap,segment,segment"};
  struct Shape {
    int64_t m, k, n;
    std::vector<int64_t> lens;
  };
  const Shape shapes[] = {{0, 0, 4, {}},
                          {0, 5, 3, {}},
                          {3, 0, 2, {0, 0, 0}},
                          {4, 6, 0, {1, 2, 0, 3}},
                          {5, 6, 3, {0, 0, 0, 0, 0}},
                          {2, 3, 1, {3, 3}}};
  for (const Shape& sh : shapes) {
    CsrMatrix a = matrix_with_lengths(sh.k, sh.lens, 5);
    for (const std::string& spec : specs) {
      Problem p = Problem::spmm(sh.m, sh.k, sh.n, DType::F32);
      for (float beta : {0.0f, 2.0f})
        EXPECT_EQ(check(a, p, parse_schedule(spec), 1.0f, beta, 5), "")
            << spec << " m=" << sh.m << " k=" << sh.k << " n=" << sh.n;
    }
  }
}

// Atomic output with a 16-bit dtype accumulates in fp32 and rounds once (the kernels' fp32
// workspace): partial sums beyond the fp16 range do not overflow when the row's result is in
// range. Row 0 is 48000 x3, -56000 x2, 10000 (exact in fp16) times B = 1: result 42000; blocks
// of 2 nonzeros add the partials 96000, -8000, -46000 (96000 is beyond fp16's 65504).
TEST(Interpreter, AtomicFp16PartialSumsBeyondRangeDoNotOverflow) {
  CsrMatrix a;
  a.rows = 2;
  a.cols = 8;
  a.row_ptr = {0, 6, 7};
  a.col_idx = {0, 1, 2, 3, 4, 5, 7};
  a.values = {48000, 48000, 48000, -56000, -56000, 10000, 2};
  const Schedule s = parse_schedule(
      "general;block=nnz:2;warp=nnz:2;thread=nnz:1;warps=1;group=16;tcols=1;bcols=16;"
      "red=total,bitmap,segment");
  for (DType t : {DType::F16, DType::BF16}) {
    const Problem p = Problem::spmm(2, 8, 16, t);
    ASSERT_TRUE(validate(p, s).empty()) << validate(p, s).front();
    const PackedFormat f = pack_format(a, p, s);
    ASSERT_EQ(f.output, OutputMode::Atomic);
    const std::vector<float> b(8 * 16, 1.0f);
    float row0 = 0;  // exact in fp32: a sum of integers
    for (int e = 0; e < 6; ++e) row0 += round_to(t, a.values[static_cast<size_t>(e)]);
    if (t == DType::F16) {
      EXPECT_EQ(row0, 42000.0f);
    }
    for (float beta : {0.0f, 2.0f}) {
      std::vector<float> c(2 * 16, 1000.0f);
      interpret(p, s, f, b, c, 1.0f, beta);
      for (int64_t col = 0; col < 16; ++col) {
        EXPECT_EQ(c[static_cast<size_t>(p.c_index(0, col))], round_to(t, row0 + beta * 1000.0f))
            << to_string(t) << " beta " << beta;
        EXPECT_EQ(c[static_cast<size_t>(p.c_index(1, col))], round_to(t, 2.0f + beta * 1000.0f));
      }
    }
  }
}

TEST(Interpreter, DetectsABrokenPlan) {
  CsrMatrix a = matrix_with_lengths(32, {5, 3, 8, 2}, 6);
  Problem p = Problem::spmm(4, 32, 2, DType::F32);
  Schedule s = parse_schedule(
      "general;block=nnz:16;warp=nnz:8;thread=nnz:2;warps=2;group=8;tcols=1;bcols=8;"
      "red=bitmap,segment,segment");
  PackedFormat f = pack_format(a, p, s);
  std::vector<float> b(64, 1.0f), c(8, 0.0f);
  PackedFormat lost = f;
  lost.levels[static_cast<int>(Level::Thread)].nz_begin.values[2] += 1;  // drops an entry
  EXPECT_THROW(interpret(p, s, lost, b, c, 1.0f, 0.0f), std::logic_error);
  PackedFormat bits = f;
  bits.row_start_bits[0] ^= 1u << 5;  // a row boundary vanishes
  EXPECT_THROW(interpret(p, s, bits, b, c, 1.0f, 0.0f), std::logic_error);
}

}  // namespace
}  // namespace sparsegen
