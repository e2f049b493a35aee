#include "runtime/process_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace sparsegen {
namespace {

TEST(ProcessMemory, PeakCoversTheResidentSetAndGrowsWithTouchedMemory) {
  const std::optional<ProcessMemory> before = process_memory();
  if (!before) GTEST_SKIP() << "/proc/self/status is not readable here";
  EXPECT_GT(before->rss_bytes, 0);
  EXPECT_GE(before->peak_rss_bytes, before->rss_bytes);
  // 64 MB touched page by page must show in the resident set while it is held.
  constexpr size_t kBytes = size_t{64} << 20;
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 0x5A, kBytes);
  const std::optional<ProcessMemory> during = process_memory();
  ASSERT_TRUE(during.has_value());
  EXPECT_GE(during->rss_bytes, before->rss_bytes + int64_t{48} * 1024 * 1024)
      << "before " << before->rss_bytes << " during " << during->rss_bytes;
  EXPECT_GE(during->peak_rss_bytes, during->rss_bytes);
  EXPECT_EQ(block[kBytes / 2], 0x5A);
}

}  // namespace
}  // namespace sparsegen
