// twell family on the device (skipped without a GPU): both kernels together against the CPU
// reference of the FFN (ir/ffn.h's bound), y poisoned (beta 0) and beta -1.5, for every schedule
// of the space, token counts 1 … 4096, K not a multiple of 8 or of the tiles, N not a multiple
// of the tiles, sparsity from a few nonzeros per row to rows that overflow every tile, bf16 and
// fp16, gated and not.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <tuple>

#include "compiler/ffn.h"
#include "compiler/pipeline.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/gen/activations.h"
#include "ir/twell_format.h"
#include "ir/twell_schedule.h"
#include "runtime/cuda_driver.h"
#include "tests/gpu/gpu_fixture.h"

namespace sparsegen {
namespace {

class GpuTwell : public testing::GpuFixture {
 protected:
  // Builds `spec` (the first enumerated schedule when `sched` is empty) and checks it.
  void check(const ActivationSpec& spec, const std::string& sched = "", int64_t max_rows = 256) {
    const FfnCase c = make_ffn_case(spec);
    const CsrMatrix h = ffn_activations(c.problem, c.weights, c.x);
    const Schedule s = choose_ffn_schedule(c.problem, h, sched, target_);
    const TwellSchedule& t = s.as<TwellSchedule>();
    const TwellStats st = twell_stats(h, t.tile, t.cap());
    SCOPED_TRACE(fmt::format("{} {} mean {} ({}; {} overflowing tiles)", to_string(c.problem),
                             to_string(s), spec.mean_nnz, to_string(activation_stats(h)),
                             st.overflow_tiles));
    const CompiledKernel k(ctx_, build_ffn_kernel(c.problem, s, c.weights, target_, &h));
    const FfnCheckResult r = check_ffn(k, c.weights, c.x, spec.seed + 100, max_rows);
    EXPECT_TRUE(r.passed) << r.error;
    overflow_tiles_ += st.overflow_tiles;
    ++checked_;
  }
  void TearDown() override {
    if (ctx_)
      std::printf("%d FFN kernels checked, %lld overflowing row-tiles among their inputs\n",
                  checked_, static_cast<long long>(overflow_tiles_));
  }
  // A kernel database of this test's own (removed with the process's temp folder).
  static std::string cache_dir() {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("sparsegen_gpu_twell_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir.string();
  }
  int checked_ = 0;
  int64_t overflow_tiles_ = 0;
};

TEST_F(GpuTwell, EveryScheduleOfTheSpace) {
  const ActivationSpec spec{.m = 96, .k = 200, .n = 1000, .mean_nnz = 24, .seed = 3};
  const FfnCase c = make_ffn_case(spec);
  const CsrMatrix h = ffn_activations(c.problem, c.weights, c.x);
  EnumerateOptions o;
  o.device = target_.limits;
  const auto all = find_ir_family("twell")->enumerate(c.problem, h, o);
  ASSERT_EQ(all.size(), 220u);
  for (const Schedule& s : all) check(spec, to_string(s));
}

TEST_F(GpuTwell, TokenCountsShapesAndTypes) {
  uint64_t seed = 10;
  for (int64_t m : {int64_t{1}, int64_t{7}, int64_t{128}, int64_t{300}})
    for (int64_t k : {int64_t{64}, int64_t{100}, int64_t{515}})
      for (DType dt : {DType::BF16, DType::F16}) {
        const bool gated = (seed % 3) != 0;
        check({.m = m,
               .k = k,
               .n = 1408 + 17 * static_cast<int64_t>(seed % 2),
               .dtype = dt,
               .gated = gated,
               .mean_nnz = 30,
               .seed = ++seed});
      }
}

TEST_F(GpuTwell, FromAFewNonzerosToRowsThatOverflowEveryTile) {
  uint64_t seed = 40;
  for (double mean : {5.0, 30.0, 120.0, 600.0, 2000.0})
    for (const char* sched :
         {"twell;tile=128;comp=4;warps=8", "twell;tile=64;comp=16;warps=4",
          "twell;tile=128;comp=8;warps=8;gate=lib", "twell;tile=64;comp=16;warps=4;gate=lib",
          "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue",
          "twell;tile=64;comp=16;warps=4;balance=queue",
          "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue;teams=8",
          "twell;tile=64;comp=8;warps=8;balance=queue;teams=2"})
      check({.m = 200, .k = 264, .n = 2100, .mean_nnz = mean, .seed = ++seed}, sched);
  // Every tile of every row overflows (dense activations).
  check({.m = 64, .k = 128, .n = 700, .mean_nnz = 699, .spread = 0, .seed = 77},
        "twell;tile=64;comp=16;warps=8");
  check({.m = 64, .k = 128, .n = 700, .mean_nnz = 699, .spread = 0, .seed = 78},
        "twell;tile=64;comp=16;warps=8;gate=lib");
}

// Few tokens, each shared by 4 or 16 blocks (partial rows added in the fp32 workspace, which
// the last block returns to zero: check_ffn's two runs in a row see it clean).
TEST_F(GpuTwell, FewTokensSplitAcrossBlocks) {
  uint64_t seed = 120;
  for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{64}})
    for (double mean : {30.0, 1500.0})
      for (const char* sched : {"twell;tile=128;comp=4;warps=8;gate=lib;split=4",
                                "twell;tile=64;comp=8;warps=4;gate=lib;split=16"})
        check({.m = m, .k = 520, .n = 1600, .mean_nnz = mean, .seed = ++seed}, sched);
}

// balance=queue: tokens of more than two batches are cut into parts that other blocks take from
// the work queue. More long tokens than the pool has rows (1024): the rest stay whole. Every
// token of the grid's size and beyond; check_ffn's two runs in a row see the queue, the pool rows
// and their counters returned to zero.
TEST_F(GpuTwell, QueueCutsLongTokensIntoParts) {
  uint64_t seed = 200;
  for (const auto& [m, mean] : {std::pair{int64_t{300}, 30.0}, std::pair{int64_t{2048}, 400.0},
                                std::pair{int64_t{1500}, 1900.0}})
    for (const char* sched : {"twell;tile=128;comp=4;warps=8;gate=lib;balance=queue",
                              "twell;tile=64;comp=8;warps=4;gate=mma;balance=queue",
                              "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue;teams=8",
                              "twell;tile=128;comp=8;warps=8;gate=mma;balance=queue;teams=4"})
      check({.m = m, .k = 136, .n = 2100, .mean_nnz = mean, .seed = ++seed}, sched, 300);
}

// Teams of warps as the queue's workers at LLM widths: a thread of a one-warp team holds K / 32
// output columns (8 groups at K = 2048), of a two-warp team K / 64.
TEST_F(GpuTwell, QueueTeamsAtLlmWidths) {
  check({.m = 700, .k = 2048, .n = 5632, .mean_nnz = 30, .seed = 230},
        "twell;tile=128;comp=4;warps=8;gate=lib;balance=queue;teams=8", 48);
  check({.m = 700, .k = 4096, .n = 3000, .mean_nnz = 60, .seed = 231},
        "twell;tile=128;comp=8;warps=8;gate=lib;balance=queue;teams=4", 48);
  check({.m = 300, .k = 4000, .n = 3000, .mean_nnz = 300, .seed = 232},
        "twell;tile=64;comp=4;warps=8;gate=mma;balance=queue;teams=2", 48);
}

// balance=even: workers take equal shares of the tokens' batches; a token shared by several adds
// its partial rows in its first worker's fp32 row. One token to 300, tokens of no nonzeros to
// rows that overflow every tile, grids of 1 block (every token one worker's), 3 (the shares far
// larger than a token) and 264 (tokens shared by many workers; at M = 1 and 7 most workers have
// no work); check_ffn's two runs in a row see the pool rows and counters returned to zero. Small
// enough for compute-sanitizer (tools/gpu_run.sh).
TEST_F(GpuTwell, EvenSharesOfTheTokensBatches) {
  uint64_t seed = 300;
  for (const auto& [m, mean] : {std::pair{int64_t{1}, 30.0}, std::pair{int64_t{7}, 1500.0},
                                std::pair{int64_t{300}, 2.0}, std::pair{int64_t{300}, 30.0}})
    for (const char* sched : {"twell;tile=128;comp=4;warps=8;gate=lib;balance=even;blocks=264",
                              "twell;tile=64;comp=8;warps=4;gate=lib;balance=even;blocks=3",
                              "twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=4;"
                              "blocks=264",
                              "twell;tile=64;comp=4;warps=8;gate=lib;balance=even;teams=8;"
                              "blocks=1"})
      check({.m = m, .k = 130, .n = 2104, .mean_nnz = mean, .seed = ++seed}, sched, 300);
  check({.m = 500, .k = 1000, .n = 2048, .gated = false, .mean_nnz = 80, .seed = 332},
        "twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=2;blocks=50", 48);
}

// balance=even with many long tokens and at LLM widths (K = 2048 and 4096).
TEST_F(GpuTwell, EvenAtLlmWidthsAndLongTokens) {
  uint64_t seed = 340;
  for (const auto& [m, mean] : {std::pair{int64_t{2048}, 400.0}, std::pair{int64_t{1500}, 1900.0}})
    for (const char* sched : {"twell;tile=128;comp=4;warps=8;gate=lib;balance=even;blocks=264",
                              "twell;tile=64;comp=4;warps=8;gate=lib;balance=even;teams=8;"
                              "blocks=1"})
      check({.m = m, .k = 130, .n = 2104, .mean_nnz = mean, .seed = ++seed}, sched, 300);
  check({.m = 700, .k = 2048, .n = 5632, .mean_nnz = 30, .seed = 330},
        "twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=4;blocks=264", 48);
  check({.m = 700, .k = 4096, .n = 3000, .dtype = DType::F16, .mean_nnz = 60, .seed = 331},
        "twell;tile=128;comp=8;warps=8;gate=lib;balance=even;teams=2;blocks=264", 48);
}

// pack=mask: the pack reads the library GEMM's ReLU bit-mask and only the values of its set bits.
// N below one tile, not a multiple of the tile, of 8 or of 128 (the mask rows' padding bits),
// one token to 300, a few nonzeros to rows that overflow every tile (bit count > CAP: the tile is
// walked densely without reading its values), bf16 and fp16, gated and not.
TEST_F(GpuTwell, MaskPackFromTheLibraryBitMask) {
  uint64_t seed = 400;
  for (const auto& [m, n, mean] :
       {std::tuple{int64_t{1}, int64_t{2100}, 30.0}, std::tuple{int64_t{7}, int64_t{127}, 20.0},
        std::tuple{int64_t{300}, int64_t{2100}, 5.0}, std::tuple{int64_t{300}, int64_t{2104}, 30.0},
        std::tuple{int64_t{300}, int64_t{2104}, 600.0},
        std::tuple{int64_t{200}, int64_t{2100}, 2000.0}})
    for (const char* sched :
         {"twell;tile=128;comp=4;warps=8;gate=lib;pack=mask",
          "twell;tile=64;comp=16;warps=4;gate=lib;balance=queue;pack=mask",
          "twell;tile=128;comp=8;warps=8;gate=lib;balance=queue;teams=4;pack=mask"})
      check({.m = m, .k = 130, .n = n, .mean_nnz = std::min(mean, double(n - 1)), .seed = ++seed},
            sched, 300);
  for (const char* sched :
       {"twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=4;blocks=264;pack=mask",
        "twell;tile=64;comp=8;warps=8;gate=lib;balance=even;teams=8;blocks=3;pack=mask"}) {
    check({.m = 300, .k = 130, .n = 2104, .mean_nnz = 30, .seed = ++seed}, sched, 300);
    check({.m = 300, .k = 130, .n = 2104, .dtype = DType::F16, .mean_nnz = 400, .seed = ++seed},
          sched, 300);
    check({.m = 100, .k = 128, .n = 704, .mean_nnz = 703, .spread = 0, .seed = ++seed}, sched, 100);
    check({.m = 200, .k = 1000, .n = 2048, .gated = false, .mean_nnz = 80, .seed = ++seed}, sched,
          48);
  }
  check({.m = 700, .k = 2048, .n = 5632, .mean_nnz = 30, .seed = ++seed},
        "twell;tile=128;comp=4;warps=8;gate=lib;balance=even;teams=4;blocks=264;pack=mask", 48);
}

TEST_F(GpuTwell, LlmShapeWithManyTokens) {
  check({.m = 4096, .k = 2048, .n = 5632, .mean_nnz = 30, .seed = 90}, "", 48);
}

}  // namespace
}  // namespace sparsegen

namespace sparsegen {
namespace {

// The FFN tuner measures every FFN family's best-ranked schedules on the calibration tokens:
// dense activations get the dense FFN, very sparse ones a twell schedule; the pick runs
// correctly and its reason names the dense time.
TEST_F(GpuTwell, TunerReturnsTheDenseFfnWhereSparsityDoesNotPay) {
  for (const auto& [spec, family] :
       {std::pair{ActivationSpec{.m = 1024, .k = 1024, .n = 2816, .mean_nnz = 500, .seed = 5},
                  "dense_ffn"},
        std::pair{ActivationSpec{.m = 4096, .k = 2048, .n = 5632, .mean_nnz = 6, .seed = 6},
                  "twell"}}) {
    const FfnCase c = make_ffn_case(spec);
    FfnTuneOptions o;
    o.cache_dir = cache_dir();
    const FfnTuneResult r = tune_ffn(ctx_, c.problem, c.weights, c.x, target_, o);
    std::string tried;
    for (const FfnMeasured& m : r.measured)
      tried += fmt::format("\n  {} {:.4f} ms {}", m.schedule, m.ms, m.error);
    SCOPED_TRACE(r.reason + tried);
    EXPECT_EQ(r.schedule.family_name(), family);
    EXPECT_NE(r.reason.find("the dense FFN"), std::string::npos);
    EXPECT_FALSE(r.cache_hit);
    const FfnCheckResult chk = check_ffn(*r.kernel, c.weights, c.x, 9, 24);
    EXPECT_TRUE(chk.passed) << chk.error;
    ++checked_;
    // The same tokens again: a cache hit that measures nothing and returns the stored pick.
    const FfnTuneResult hit = tune_ffn(ctx_, c.problem, c.weights, c.x, target_, o);
    EXPECT_TRUE(hit.cache_hit) << hit.reason;
    EXPECT_TRUE(hit.measured.empty());
    EXPECT_EQ(hit.schedule, r.schedule);
    EXPECT_TRUE(check_ffn(*hit.kernel, c.weights, c.x, 10, 24).passed);
    // Other tokens of the distribution: a hit exactly when their statistics fall in the same
    // bucket (the key holds the bucket, not the pattern).
    ActivationSpec again = spec;
    again.seed += 1000;
    const FfnCase c2 = make_ffn_case(again);
    const FfnTuneResult other = tune_ffn(ctx_, c2.problem, c.weights, c2.x, target_, o);
    EXPECT_EQ(other.cache_hit, other.tuning_key == r.tuning_key) << other.reason;
  }
}

}  // namespace
}  // namespace sparsegen
