// slide family on the device (skipped without a GPU): every pattern and value type, the lift
// kernel and the mma.sp kernel together, against the reference of compiler/gpu_check.h (the
// tight bound; int8 / e4m3 against the reference over the quantized inputs, ir/quantize.h), with
// C poisoned (beta 0) and beta -1.5, B and C in both layouts, K not a multiple of 2N.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <tuple>

#include "compiler/family.h"
#include "compiler/gpu_check.h"
#include "compiler/pipeline.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/gen/pruning.h"
#include "ir/slide_schedule.h"
#include "runtime/cuda_driver.h"
#include "tests/gpu/gpu_fixture.h"
#include "tests/ir/slide_test_weights.h"

namespace sparsegen {
namespace {

using testing::slide_weight;

Problem problem_of(DType dt, int64_t m, int64_t k, int64_t n, int variant) {
  const Layout bl = variant % 2 == 0 ? Layout::ColMajor : Layout::RowMajor;
  const Layout cl = variant % 3 == 0 ? Layout::ColMajor : Layout::RowMajor;
  if (is_quantized(dt))
    return Problem::quantized_spmm(m, k, n, dt, variant % 2 == 0 ? DType::BF16 : DType::F16, bl,
                                   cl);
  return Problem::spmm(m, k, n, dt, bl, cl);
}

// A split=wg schedule of pattern 6:8 (the rest as given).
SlideSchedule wg_schedule(int warps, int nt, int unroll, int stages, int ksplit) {
  SlideSchedule s;
  s.pattern = 4;
  s.split = SlideSplit::Group;
  s.warps = warps;
  s.n_tiles = nt;
  s.unroll = unroll;
  s.stages = stages;
  s.ksplit = ksplit;
  return s;
}

class GpuSlide : public testing::GpuFixture {
 protected:
  // Runs one schedule (a different one of the enumeration per call) and checks it.
  void check(const CsrMatrix& a, const Problem& p, uint64_t seed) {
    EnumerateOptions o;
    o.device = target_.limits;
    o.include_specialised = true;
    const auto all = find_ir_family("slide")->enumerate(p, a, o);
    ASSERT_FALSE(all.empty()) << to_string(p);
    check_schedule(a, p, all[seed % all.size()], seed);
  }
  // Builds schedule s for p and checks it (beta 0 with C poisoned, then beta != 0).
  void check_schedule(const CsrMatrix& a, const Problem& p, const Schedule& s, uint64_t seed) {
    SCOPED_TRACE(to_string(p) + " " + to_string(s));
    const CompiledKernel k(ctx_, build_kernel(a, p, s, target_));
    const GpuCheckPair r = gpu_check(k, a, seed);
    EXPECT_TRUE(r.passed()) << r.error();
    ++checked_;
  }
  int checked_ = 0;
};

// 6:8 over every N of the contract, all value types.
TEST_F(GpuSlide, SixEightEveryN) {
  const CsrMatrix a = slide_weight(150, 8 * 37 + 5, 4, 11);
  uint64_t seed = 1;
  for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
    for (int64_t n : {1, 8, 16, 64, 512, 4096}) {
      check(a, problem_of(dt, a.rows, a.cols, n, int(seed)), seed);
      ++seed;
    }
  std::printf("slide 6:8: %d kernels checked\n", checked_);
}

// Problems large enough that the check draws B and C on the device and compares sampled
// columns (compiler/device_check_inputs.h): the quantized types' per-token scales come from the
// same values on both sides.
TEST_F(GpuSlide, DeviceDrawnCheckInputs) {
  const CsrMatrix a = slide_weight(1024, 8 * 128 + 5, 4, 17);
  uint64_t seed = 60;
  for (DType dt : {DType::F16, DType::I8, DType::F8E4M3}) {
    const Problem p = problem_of(dt, a.rows, a.cols, 8192, int(seed));
    ASSERT_TRUE(check_inputs_on_device(p)) << to_string(p);
    check(a, p, seed++);
  }
}

// Every pattern from 2:4 to 14:16, all value types, N = 8 and 64.
TEST_F(GpuSlide, EveryPattern) {
  uint64_t seed = 100;
  for (int pat = kSlideMinN; pat <= kSlideMaxN; ++pat) {
    const CsrMatrix a = slide_weight(70, 2 * pat * 21 + 3, pat, 20 + pat);
    for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
      for (int64_t n : {8, 64}) {
        check(a, problem_of(dt, a.rows, a.cols, n, int(seed)), seed);
        ++seed;
      }
  }
  std::printf("slide patterns: %d kernels checked\n", checked_);
}

// Every warp split and lift placement explicitly for every value type (fp16 / bf16: lift=fused
// too; e4m3 in its fp16 form), N = 1, 8, 24 and 64, B in both layouts; K odd, and K even but not a
// multiple of 8 (lift=fused with column-major B then loads a register's two elements as one word,
// except in the chunk cut by K).
TEST_F(GpuSlide, EverySplitAndLift) {
  uint64_t seed = 300;
  EnumerateOptions o;
  o.device = target_.limits;
  o.include_specialised = true;
  for (const int64_t cols : {int64_t{8 * 29 + 3}, int64_t{8 * 29 + 2}})
    for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
      for (int64_t n : {1, 8, 24, 64}) {
        const CsrMatrix a = slide_weight(90, cols, 4, 31);
        const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
        std::set<std::string> kinds;
        for (const Schedule& s : find_ir_family("slide")->enumerate(p, a, o)) {
          const auto& b = s.as<SlideSchedule>();
          const std::string kind = fmt::format("{}/{}", to_string(b.split), to_string(b.lift));
          if (!kinds.insert(kind).second) continue;
          check_schedule(a, p, s, ++seed);
        }
        // k and rows with lift=kernel; lift=fused for 16-bit types; wg for 16-byte lanes (fp16,
        // bf16, int8) on an sm_90 device.
        const bool wg = o.device.wgmma && slide_mma(dt).lane_bytes() == 16;
        EXPECT_EQ(kinds.size(), (dtype_bytes(dt) == 2 ? 3u : 2u) + (wg ? 1u : 0u)) << to_string(p);
      }
  std::printf("slide splits and lifts: %d kernels checked\n", checked_);
}

// split=wg (sm_90: wgmma.sp per warpgroup, B in shared memory in core order): fp16, bf16 and int8,
// every n-width of the instruction (nt 1 … 8), one and two warpgroups, unroll 1 and 2, 1 to 4
// steps in flight, one K part and three; 150 rows (the last block's warps past M) and K odd
// and even, N = 1, 24, 64 and 72 (a column block past N).
TEST_F(GpuSlide, WarpgroupWgmma) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 1500;
  int expected = 0;
  for (const int64_t cols : {int64_t{8 * 45 + 3}, int64_t{8 * 45 + 2}}) {
    const CsrMatrix a = slide_weight(150, cols, 4, 53);
    for (DType dt : {DType::F16, DType::BF16, DType::I8})
      for (int64_t n : {1, 24, 64, 72})
        for (const int nt : {1, 2, 4, 8}) {
          const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
          if (nt > 1 && nt > slide_col_tiles(p)) continue;
          const SlideSchedule s = wg_schedule(nt % 2 == 0 ? 8 : 4, nt, nt <= 2 ? 1 : 2,
                                              nt == 1   ? 1
                                              : nt == 2 ? 3
                                              : nt == 4 ? 2
                                                        : 4,
                                              n == 64 || nt == 1 ? 3 : 1);
          ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
          ++expected;
          check_schedule(a, p, Schedule(s), ++seed);
        }
  }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 2 * 3 * (1 + 2 + 4 + 4));
  std::printf("slide split=wg: %d kernels checked\n", checked_);
}

// split=wg in clusters of 2 and 4 row blocks (B staged once per cluster by multicast): grids
// rounded up past M (150 rows: 3 or 2 row blocks), rings that wrap many times (unroll 1) or not
// at all, K parts, every 16-byte type, N from 1 to 72.
TEST_F(GpuSlide, WarpgroupClusters) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 1700;
  int expected = 0;
  const CsrMatrix a = slide_weight(150, 8 * 45 + 3, 4, 59);
  for (DType dt : {DType::F16, DType::BF16, DType::I8})
    for (int64_t n : {1, 64, 72})
      for (const int cluster : {2, 4})
        for (const int warps : {4, 8}) {
          const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
          // N = 72: two column blocks, the second one tile wide.
          SlideSchedule s = wg_schedule(warps, n == 1 ? 1 : 8, warps == 4 ? 1 : 4,
                                        warps == 4 ? 2 : 1, n == 64 ? 3 : 1);
          s.cluster = cluster;
          ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
          ASSERT_EQ(slide_grid_x(p, s) % cluster, 0);
          ++expected;
          check_schedule(a, p, Schedule(s), ++seed);
        }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 3 * 3 * 2 * 2);
  std::printf("slide split=wg clusters: %d kernels checked\n", checked_);
}

// split=wg with a producer warp (producer=1): rings of 2 to 5 buffers that wrap many times or
// not at all, one or two warpgroups, K parts (the producer warp meets the finish's barriers),
// clusters of 2 (the leader's producer waits for the cluster), every 16-byte type, N 1 to 72.
TEST_F(GpuSlide, WarpgroupProducerWarp) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 1900;
  int expected = 0;
  const CsrMatrix a = slide_weight(150, 8 * 45 + 3, 4, 61);
  for (DType dt : {DType::F16, DType::BF16, DType::I8})
    for (int64_t n : {1, 64, 72})
      for (const int stages : {1, 2, 4}) {
        const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
        SlideSchedule s = wg_schedule(stages == 2 ? 8 : 4, n == 1 ? 1 : 8, stages == 4 ? 4 : 1,
                                      stages, n == 64 ? 3 : 1);
        s.producer = 1;
        s.cluster = stages == 1 ? 1 : 2;
        ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
        ++expected;
        check_schedule(a, p, Schedule(s), ++seed);
      }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 3 * 3 * 3);
  std::printf("slide split=wg producer warp: %d kernels checked\n", checked_);
}

// split=wg with lift=fused (no lift kernel: the producer warps copy B's original columns by TMA and
// build the overlapping windows): 6:8, fp16 and bf16, K a multiple of 8 but not of a run
// (360: the last run padded) and of whole runs (384), N = 1, 24, 64 and 72 (a column block past
// N), one and two warpgroups, every n-width, unroll 1 and 2, rings of 3 to 5 buffers (as many
// producer warps), one K part and three (parts aligned to runs, the last one short or empty).
TEST_F(GpuSlide, WarpgroupFusedLift) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 2100;
  int expected = 0;
  for (const int pattern : {4})
    for (const int64_t cols : {int64_t{360}, int64_t{384}}) {
      const CsrMatrix a = slide_weight(150, cols, pattern, 67 + pattern);
      for (DType dt : {DType::F16, DType::BF16})
        for (int64_t n : {1, 24, 64, 72}) {
          const Problem p = Problem::spmm(a.rows, a.cols, n, dt, Layout::ColMajor,
                                          n == 24 ? Layout::RowMajor : Layout::ColMajor);
          const int nt = n == 1 ? 1 : n == 24 ? 2 : 8;
          SlideSchedule s = wg_schedule(n == 24 ? 4 : 8, nt, n == 64 ? 2 : 1,
                                        2 + static_cast<int>(seed % 3), n == 1 || n == 64 ? 3 : 1);
          s.pattern = pattern;
          s.lift = SlideLift::Fused;
          // The deepest ring that fits the device's shared memory.
          while (slide_shared_bytes(p, s) > target_.limits.max_shared_per_block) --s.stages;
          ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
          ++expected;
          check_schedule(a, p, Schedule(s), ++seed);
        }
    }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 2 * 2 * 4);
  std::printf("slide split=wg lift=fused: %d kernels checked\n", checked_);
}

// split=wg lift=fused spread over a fixed grid (stream-K): 1 block (every row block whole), a few
// (segments that start and end inside row blocks, row blocks shared by 2-3 blocks), and one block
// per run (every segment partial); one and two warpgroups, fp16 and bf16, K = 360 and 384, N = 1,
// 24, 64 and 72; gpu_check's second run (beta != 0) also checks that the first left the workspace
// and its counters at zero.
TEST_F(GpuSlide, WarpgroupFusedLiftSpread) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 2300;
  int expected = 0;
  for (const int64_t cols : {int64_t{360}, int64_t{384}}) {
    const CsrMatrix a = slide_weight(150, cols, 4, 71);
    for (DType dt : {DType::F16, DType::BF16})
      for (int64_t n : {1, 24, 64, 72}) {
        const Problem p = Problem::spmm(a.rows, a.cols, n, dt, Layout::ColMajor,
                                        n == 24 ? Layout::RowMajor : Layout::ColMajor);
        SlideSchedule s = wg_schedule(n == 24 ? 4 : 8, n == 1 ? 1 : n == 24 ? 2 : 8, 1, 3, 1);
        s.lift = SlideLift::Fused;
        const int64_t work = slide_spread_work(p, s);
        for (const int64_t spread : {int64_t{1}, int64_t{3}, work / 2 + 1, work}) {
          s.spread = static_cast<int>(spread);
          ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
          ++expected;
          check_schedule(a, p, Schedule(s), ++seed);
        }
      }
  }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 2 * 2 * 4 * 4);
  std::printf("slide split=wg lift=fused spread: %d kernels checked\n", checked_);
}

// split=wg lift=fused in clusters (each block's producers multicast a slice of the tokens of each
// B box into every block of the cluster): clusters of 2 and 4, nt 2 (N = 24: the second column
// block's slices past N) and 8 (N = 64, 72), grids rounded up past M (150 rows: 2 blocks, then
// 2 more that only stage), one K part and three, with tiles = 7, fp16 and bf16; and lift=kernel
// with tiles = 7 in clusters (the leader's multicast of B into blocks of fewer row tiles).
TEST_F(GpuSlide, WarpgroupFusedLiftClusters) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 2700;
  int expected = 0;
  for (const int64_t rows : {int64_t{150}, int64_t{300}}) {
    const CsrMatrix a = slide_weight(rows, 384, 4, 79);
    for (DType dt : {DType::F16, DType::BF16})
      for (int64_t n : {24, 64, 72})
        for (const int cluster : {2, 4}) {
          if (n == 24 && cluster == 4) continue;  // nt = 2
          const Problem p = Problem::spmm(a.rows, a.cols, n, dt, Layout::ColMajor,
                                          n == 24 ? Layout::RowMajor : Layout::ColMajor);
          SlideSchedule s = wg_schedule(8, n == 24 ? 2 : 8, 1 + static_cast<int>(seed % 2),
                                        2 + static_cast<int>(seed % 3), n == 64 ? 3 : 1);
          s.lift = SlideLift::Fused;
          s.cluster = cluster;
          if (rows == 300 && n != 24) s.tiles = 7;
          while (slide_shared_bytes(p, s) > target_.limits.max_shared_per_block) --s.stages;
          ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
          ++expected;
          check_schedule(a, p, Schedule(s), ++seed);
        }
  }
  for (const int cluster : {2, 4}) {
    const CsrMatrix a = slide_weight(300, 384, 4, 83);
    const Problem p =
        Problem::spmm(a.rows, a.cols, 64, DType::F16, Layout::ColMajor, Layout::ColMajor);
    SlideSchedule s = wg_schedule(8, 8, 4, 2, cluster == 2 ? 1 : 3);
    s.cluster = cluster;
    s.tiles = 7;
    ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
    ++expected;
    check_schedule(a, p, Schedule(s), ++seed);
  }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 2 * 2 * 5 + 2);
  std::printf("slide split=wg lift=fused clusters: %d kernels checked\n", checked_);
}

// split=wg blocks of fewer row tiles than warps (tiles = warps − 3 … warps − 1: the last warps
// multiply zeros and store nothing): lift=kernel (fp16, bf16, int8) and lift=fused, one K part and
// three, fused with spread (row blocks of `tiles` shared by blocks); M = 150 (10 row tiles: the
// last block short) and 300, N = 1, 24 and 64.
TEST_F(GpuSlide, WarpgroupFewerRowTiles) {
  if (!target_.limits.wgmma) GTEST_SKIP() << "split=wg needs an sm_90 device";
  uint64_t seed = 2500;
  int expected = 0;
  for (const int64_t rows : {int64_t{150}, int64_t{300}}) {
    const CsrMatrix a = slide_weight(rows, 384, 4, 73);
    for (DType dt : {DType::F16, DType::BF16, DType::I8})
      for (int64_t n : {1, 24, 64})
        for (const SlideLift lift : {SlideLift::Kernel, SlideLift::Fused}) {
          if (lift == SlideLift::Fused && dt == DType::I8) continue;
          const Layout cl = n == 24 ? Layout::RowMajor : Layout::ColMajor;
          const Problem p = is_quantized(dt)
                                ? Problem::quantized_spmm(a.rows, a.cols, n, dt, DType::BF16,
                                                          Layout::ColMajor, cl)
                                : Problem::spmm(a.rows, a.cols, n, dt, Layout::ColMajor, cl);
          const int warps = n == 24 ? 4 : 8;
          SlideSchedule s =
              wg_schedule(warps,
                          n == 1    ? 1
                          : n == 24 ? 2
                                    : 8,
                          lift == SlideLift::Fused ? 1 : 2, 2 + int(seed % 2), n == 64 ? 3 : 1);
          s.lift = lift;
          s.tiles = warps - 1 - static_cast<int>(seed % 3);
          if (lift == SlideLift::Fused && n == 24) s.spread = 5;
          ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
          ++expected;
          check_schedule(a, p, Schedule(s), ++seed);
        }
  }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 2 * 3 * 5);
  std::printf("slide split=wg fewer row tiles: %d kernels checked\n", checked_);
}

// K parts (ksplit 2, 3, 5: the last part short or empty) for every split and lift, every value
// type, N = 1, 8 and 64, K odd and even, B and C in both layouts; gpu_check runs each kernel twice
// (two betas), so the second run also checks that the first left the workspace at zero.
TEST_F(GpuSlide, KParts) {
  uint64_t seed = 700;
  const std::tuple<SlideSplit, SlideLift, int> kinds[3] = {
      {SlideSplit::K, SlideLift::Kernel, 2},
      {SlideSplit::Rows, SlideLift::Kernel, 5},
      {SlideSplit::K, SlideLift::Fused, 3},
  };
  for (const int64_t cols : {int64_t{8 * 61 + 3}, int64_t{8 * 61 + 2}})
    for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
      for (int64_t n : {1, 8, 64}) {
        const CsrMatrix a = slide_weight(150, cols, 4, 41);
        const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
        for (const auto& [split, lift, ks] : kinds) {
          SlideSchedule s;
          s.pattern = 4;
          s.split = split;
          s.lift = lift;
          s.warps = 4;
          s.n_tiles = n >= 16 ? 2 : 1;
          s.ksplit = ks;
          if (!validate_slide(p, s).empty()) continue;  // lift=fused: 16-bit types only
          check_schedule(a, p, Schedule(s), ++seed);
        }
      }
  EXPECT_EQ(checked_, 2 * 3 * (2 * 3 + 2 * 2));
  std::printf("slide K parts: %d kernels checked\n", checked_);
}

// Two load steps in flight (stages=2: the next step's loads are issued before this step's
// mma.sp) for every split and lift, every value type, N = 1, 8 and 64, K odd and even, one part
// and three (a part's last step and the step past its end), unroll 1 and 2.
TEST_F(GpuSlide, TwoLoadStepsInFlight) {
  uint64_t seed = 900;
  const std::pair<SlideSplit, SlideLift> kinds[3] = {
      {SlideSplit::K, SlideLift::Kernel},
      {SlideSplit::Rows, SlideLift::Kernel},
      {SlideSplit::K, SlideLift::Fused},
  };
  int expected = 0;
  for (const int64_t cols : {int64_t{8 * 45 + 3}, int64_t{8 * 45 + 2}})
    for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
      for (int64_t n : {1, 8, 64}) {
        const CsrMatrix a = slide_weight(100, cols, 4, 43);
        const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
        for (const auto& [split, lift] : kinds)
          for (const int ks : {1, 3}) {
            SlideSchedule s;
            s.pattern = 4;
            s.split = split;
            s.lift = lift;
            s.warps = split == SlideSplit::K ? 2 : 4;
            s.m_tiles = n == 64 ? 2 : 1;
            s.n_tiles = n >= 16 ? 4 : 1;
            s.unroll = ks == 1 ? 2 : 1;
            s.ksplit = ks;
            s.stages = 2;
            if (!validate_slide(p, s).empty()) continue;  // lift=fused: 16-bit types only
            ++expected;
            check_schedule(a, p, Schedule(s), ++seed);
          }
      }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 2 * 3 * 2 * (2 * 3 + 2 * 2));
  std::printf("slide two load steps: %d kernels checked\n", checked_);
}

// prefetch: the main kernel asks the L2 for its first A chunks before it waits for the lift. A
// hint, so the results must not change: both splits, every value type, a prefetch shorter and
// longer than a K part, one part and three, and row tiles past M (100 rows: the last tile's
// prefetch stops at the pack's end).
TEST_F(GpuSlide, PrefetchBeforeTheLift) {
  uint64_t seed = 1300;
  int expected = 0;
  const CsrMatrix a = slide_weight(100, 8 * 45 + 3, 4, 47);
  for (DType dt : {DType::F16, DType::BF16, DType::I8, DType::F8E4M3})
    for (int64_t n : {1, 64})
      for (SlideSplit split : {SlideSplit::K, SlideSplit::Rows})
        for (const int ks : {1, 3})
          for (const int pf : {2, 4096}) {
            const Problem p = problem_of(dt, a.rows, a.cols, n, int(seed));
            SlideSchedule s;
            s.pattern = 4;
            s.split = split;
            s.warps = split == SlideSplit::K ? 4 : 2;
            s.m_tiles = 2;
            s.n_tiles = n == 64 ? 4 : 1;
            s.unroll = 2;
            s.ksplit = ks;
            s.prefetch = pf;
            ASSERT_TRUE(validate_slide(p, s).empty()) << to_string(Schedule(s));
            ++expected;
            check_schedule(a, p, Schedule(s), ++seed);
          }
  EXPECT_EQ(checked_, expected);
  EXPECT_EQ(expected, 4 * 2 * 2 * 2 * 2);
  std::printf("slide prefetch: %d kernels checked\n", checked_);
}

// The lift's staging paths: K % 8 == 0 with column-major B (16-byte copies of each token's
// columns), row-major B (8 tokens per block), many tokens, and a K too long to stage at once
// (segments; the 8-bit token maximum then read from B first).
TEST_F(GpuSlide, LiftStagingPaths) {
  uint64_t seed = 500;
  for (const int64_t k : {int64_t{8 * 40}, int64_t{8 * 6600}}) {
    const CsrMatrix a = slide_weight(32, k, 4, 41);
    for (DType dt : {DType::F16, DType::I8, DType::F8E4M3})
      for (int64_t n : {1, 9, 64, 2500})
        for (Layout bl : {Layout::ColMajor, Layout::RowMajor}) {
          if (n > 64 && k > 1000) continue;  // many tokens (several per block): short K only
          const Problem p =
              is_quantized(dt)
                  ? Problem::quantized_spmm(a.rows, k, n, dt, DType::F16, bl, Layout::RowMajor)
                  : Problem::spmm(a.rows, k, n, dt, bl, Layout::RowMajor);
          SlideSchedule s;
          s.pattern = 4;
          SCOPED_TRACE(to_string(p) + " " + to_string(Schedule(s)));
          const CompiledKernel kk(ctx_, build_kernel(a, p, Schedule(s), target_));
          const GpuCheckPair r = gpu_check(kk, a, ++seed);
          EXPECT_TRUE(r.passed()) << r.error();
          ++checked_;
        }
  }
  std::printf("slide lift staging: %d kernels checked\n", checked_);
}

// int8 tokens the short conversion may not take: a NaN (quantized to 0, the token's scale from
// its other values), an Inf (scale 1, every value 0), all zeros; the other tokens beside them.
TEST_F(GpuSlide, Int8TokensWithNanInfOrZeros) {
  const CsrMatrix a = slide_weight(32, 8 * 40, 4, 43);
  for (Layout bl : {Layout::ColMajor, Layout::RowMajor}) {
    const Problem p =
        Problem::quantized_spmm(a.rows, a.cols, 9, DType::I8, DType::F16, bl, Layout::RowMajor);
    SlideSchedule s;
    s.pattern = 4;
    SCOPED_TRACE(to_string(p));
    const CompiledKernel k(ctx_, build_kernel(a, p, Schedule(s), target_));
    CheckInputs in = make_check_inputs(p, 77, 1.0f, 0.0f);
    in.b[static_cast<size_t>(p.b_index(17, 2))] = std::numeric_limits<float>::quiet_NaN();
    in.b[static_cast<size_t>(p.b_index(5, 7))] = std::numeric_limits<float>::infinity();
    for (int64_t kk = 0; kk < p.k; ++kk) in.b[static_cast<size_t>(p.b_index(kk, 5))] = 0.0f;
    const Reference ref = compute_reference(a, in);
    const CheckResult r = gpu_check(k, a, in, ref);
    EXPECT_TRUE(r.passed) << r.error;
  }
}

}  // namespace
}  // namespace sparsegen
