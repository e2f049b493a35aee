#include "runtime/process_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

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

TEST(ProcessMemory, TunablesThatReuseFreedMemoryAreRecognised) {
  EXPECT_FALSE(tunables_reuse_freed_memory(nullptr));
  EXPECT_FALSE(tunables_reuse_freed_memory(""));
  EXPECT_TRUE(tunables_reuse_freed_memory("glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0"));
  EXPECT_TRUE(
      tunables_reuse_freed_memory("glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold="
                                  "1099511627776:glibc.malloc.arena_max=1"));
  EXPECT_FALSE(tunables_reuse_freed_memory("glibc.malloc.mmap_max=0"));  // thread arenas still map
  EXPECT_FALSE(tunables_reuse_freed_memory("glibc.malloc.arena_max=12:glibc.malloc.mmap_max=0"));
  EXPECT_FALSE(tunables_reuse_freed_memory("glibc.malloc.arena_max=1:glibc.malloc.mmap_max=02"));
  EXPECT_FALSE(tunables_reuse_freed_memory("xglibc.malloc.arena_max=1:glibc.malloc.mmap_max=0"));
}

// Under the tools' policy a large block freed by one thread and allocated again by another lands
// where it was (the one heap, not a fresh mapping), so its pages are not faulted in again: the
// tuner's pool threads pack candidate after candidate this way. Each ctest case runs in its own
// process, so the policy does not leak into other tests.
TEST(ProcessMemory, FreedLargeBlocksAreReusedAcrossThreadsUnderTheToolsPolicy) {
  if (!keep_freed_memory_for_reuse()) GTEST_SKIP() << "not glibc, or a sanitizer's allocator";
  EXPECT_TRUE(freed_memory_is_reused());
  constexpr size_t kBytes = size_t{96} << 20;
  // One volatile store per page: the compiler may not drop them (a memset before free it may).
  auto touch = [](void* p) {
    volatile char* v = static_cast<char*>(p);
    for (size_t i = 0; i < kBytes; i += 4096) v[i] = 1;
  };
  uintptr_t first_address = 0;
  std::thread([&] {
    void* first = std::malloc(kBytes);
    ASSERT_NE(first, nullptr);
    touch(first);
    first_address = reinterpret_cast<uintptr_t>(first);
    std::free(first);
  }).join();
  void* second = nullptr;
  std::thread([&] { second = std::malloc(kBytes); }).join();
  ASSERT_NE(second, nullptr);
  // Where it was, give or take the small blocks the second thread's start may have taken first.
  const uintptr_t second_address = reinterpret_cast<uintptr_t>(second);
  const uintptr_t apart = second_address > first_address ? second_address - first_address
                                                         : first_address - second_address;
  EXPECT_LT(apart, uintptr_t{1} << 20);
  const std::optional<ProcessMemory> warm = process_memory();
  touch(second);  // resident already: the resident set does not grow by the block
  const std::optional<ProcessMemory> after = process_memory();
  std::free(second);
  if (warm && after) {
    EXPECT_LT(after->rss_bytes, warm->rss_bytes + int64_t{16} * 1024 * 1024);
  }
}

}  // namespace
}  // namespace sparsegen
