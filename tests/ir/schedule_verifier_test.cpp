// Verifier reasons against device limits, and the reduction-level rule.
#include <gtest/gtest.h>

#include "ir/enumerate.h"
#include "ir/format.h"
#include "ir/general_enumerate.h"
#include "ir/verifier.h"
#include "tests/ir/schedule_test_util.h"

namespace sparsegen {
namespace {

bool has(const std::vector<std::string>& why, const std::string& needle) {
  for (const auto& w : why)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

TEST(Verifier, AcceptsAPlainSchedule) {
  CsrMatrix a = testing::matrix_with_lengths(32, {3, 4, 5}, 1);
  Problem p = Problem::spmm(3, 32, 8, DType::F16);
  Schedule s = parse_schedule("general;group=8;warp=nnz:4;thread=nnz:1;bcols=8");
  EXPECT_TRUE(verify(p, s, compute_format_stats(a, p, s), DeviceLimits::sm90()).empty());
}

TEST(Verifier, ThreadsRegistersSharedAndGrid) {
  CsrMatrix a = testing::matrix_with_lengths(32, {3, 4, 5}, 1);
  Problem p = Problem::spmm(3, 32, 8, DType::F32);
  Schedule big = parse_schedule("general;warps=32;warp=nnz:32;thread=nnz:1;tcols=8;bcols=8");
  DeviceLimits small = DeviceLimits::sm80();
  small.max_threads_per_block = 512;
  small.registers_per_block = 16384;
  small.max_shared_per_block = 512;
  auto why = verify(p, big, compute_format_stats(a, p, big), small);
  EXPECT_TRUE(has(why, "1024 threads per block exceed 512 on sm_80")) << why.size();
  EXPECT_TRUE(has(why, "registers x 1024 threads exceed 16384"));
  EXPECT_TRUE(has(why, "bytes of shared memory exceed 512"));

  small = DeviceLimits::sm90();
  small.max_registers_per_thread = 20;
  EXPECT_TRUE(has(verify(p, big, compute_format_stats(a, p, big), small),
                  "registers per thread exceed 20"));

  FormatStats st = compute_format_stats(a, p, big);
  st.block_tasks = int64_t{1} << 32;
  st.col_tiles = 70000;
  why = verify(p, big, st, DeviceLimits::sm90());
  EXPECT_TRUE(has(why, "grid.x = 4294967296 block tasks exceeds 2147483647"));
  EXPECT_TRUE(has(why, "grid.y = 70000 column tiles exceeds 65535"));
}

TEST(Verifier, ProblemReasonsComeFirst) {
  CsrMatrix a = testing::matrix_with_lengths(32, {3}, 1);
  Problem p = Problem::spmv(1, 32, DType::F32);
  Schedule s = parse_schedule("general;tcols=8;bcols=8");
  EXPECT_TRUE(has(verify(p, s, compute_format_stats(a, p, s), DeviceLimits::sm90()),
                  "tcols=8 leaves half"));
}

TEST(ReductionRule, PicksLevelsFromRowLengths) {
  auto rule = [](std::vector<int64_t> lens) {
    return choose_reduction_levels(row_length_stats(testing::matrix_with_lengths(4096, lens, 5)));
  };
  ReductionRule r = rule(std::vector<int64_t>(64, 3));
  EXPECT_EQ(r.finish_level, Level::Thread);
  EXPECT_FALSE(r.prefer_nnz_split);
  r = rule(std::vector<int64_t>(64, 100));
  EXPECT_EQ(r.finish_level, Level::Warp);
  r = rule(std::vector<int64_t>(8, 2000));
  EXPECT_EQ(r.finish_level, Level::Block);
  std::vector<int64_t> skew(200, 1);
  skew[7] = 4000;
  EXPECT_TRUE(rule(skew).prefer_nnz_split);
}

TEST(Enumerate, DeterministicRuleFirstAndVerified) {
  CsrMatrix a = testing::matrix_with_lengths(128, std::vector<int64_t>(50, 3), 9);
  Problem p = Problem::spmm(a.rows, a.cols, 8, DType::BF16);
  auto s1 = enumerate_schedules(p, a), s2 = enumerate_schedules(p, a);
  ASSERT_EQ(s1, s2);
  ASSERT_FALSE(s1.empty());
  // Short regular rows: thread-group-per-row schedules first.
  EXPECT_EQ(s1.front().as<GeneralSchedule>().at(Level::Warp).kind, WorkSplit::Rows);
  for (const Schedule& s : s1)
    EXPECT_TRUE(verify(p, s, compute_format_stats(a, p, s), DeviceLimits::sm90()).empty());
}

}  // namespace
}  // namespace sparsegen
