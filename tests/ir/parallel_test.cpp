// The parallel-for helpers (ir/parallel.h) and the multithreaded O(nnz) passes built on them:
// every pass gives byte for byte the result of its serial run (one chunk) when split into many
// chunks, also on small matrices (min_work 1 splits them) and with chunk bounds inside rows.
#include "ir/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/enumerate.h"
#include "ir/format.h"
#include "ir/macko_format.h"
#include "ir/problem.h"
#include "ir/sparse_matrix.h"
#include "tests/ir/schedule_test_util.h"
#include "tests/test_support.h"

namespace sparsegen {
namespace {

// Runs f() once serially and once split into `chunks` chunks of any size; restores the defaults.
template <class F>
auto serial_and_split(int chunks, F&& f) {
  const ParallelConfig saved = parallel_config();
  set_parallel_config({1, 1});
  auto serial = f();
  set_parallel_config({chunks, 1});
  auto split = f();
  set_parallel_config(saved);
  return std::make_pair(std::move(serial), std::move(split));
}

// Rows of very different lengths (empty rows, one long row, long column gaps for MACKO padding),
// explicit zeros and values beyond the fp16 range.
CsrMatrix mixed_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  return testing::bernoulli_csr(
      rows, cols, seed,
      [&](int64_t r) {
        return r % 7 == 3 ? 0.0 : r == rows / 2 ? 0.9 : r % 5 == 1 ? 0.003 : 0.08;
      },
      [](auto&& draw) {
        const double x = draw();
        return x < 0.05 ? 0.0f : x > 0.98 ? 1e5f : static_cast<float>(x * 2 - 1);
      });
}

TEST(Parallel, EvenSplitCoversTheRangeInOrder) {
  for (int64_t n : {0, 1, 5, 1000, 1001})
    for (int chunks : {1, 2, 3, 7, 64}) {
      const std::vector<int64_t> b = even_split(n, chunks);
      ASSERT_EQ(b.size(), static_cast<size_t>(chunks) + 1);
      EXPECT_EQ(b.front(), 0);
      EXPECT_EQ(b.back(), n);
      for (size_t c = 0; c + 1 < b.size(); ++c) {
        EXPECT_LE(b[c], b[c + 1]);
        EXPECT_LE(b[c + 1] - b[c], (n + chunks - 1) / chunks);
      }
    }
}

TEST(Parallel, BalancedSplitEvensOutEntries) {
  // One row holds most entries: it gets a chunk of its own, the other rows share the rest.
  const std::vector<int64_t> offsets = {0, 1, 2, 1000, 1001, 1002, 1003, 1004};
  const std::vector<int64_t> b = balanced_split(offsets, 3);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b.front(), 0);
  EXPECT_EQ(b.back(), 7);
  for (size_t c = 0; c + 1 < b.size(); ++c) EXPECT_LE(b[c], b[c + 1]);
  EXPECT_EQ(b[1], 2);  // rows 0-1 | row 2 (998 entries) | rows 3-6
  EXPECT_EQ(b[2], 3);
  EXPECT_EQ(balanced_split(std::vector<int64_t>{0}, 4), std::vector<int64_t>(5, 0));
}

TEST(Parallel, ChunkCountFollowsWorkAndLimits) {
  const ParallelConfig saved = parallel_config();
  set_parallel_config({4, 100});
  EXPECT_EQ(parallel_chunks(0), 1);
  EXPECT_EQ(parallel_chunks(199), 1);
  EXPECT_EQ(parallel_chunks(250), 2);
  EXPECT_EQ(parallel_chunks(1'000'000), 4);
  set_parallel_config({});
  EXPECT_EQ(parallel_chunks(kParallelMinWork), 1);  // small inputs stay on the calling thread
  EXPECT_GE(parallel_chunks(int64_t{1} << 40), 1);
  set_parallel_config(saved);
}

TEST(Parallel, EveryIndexRunsOnce) {
  const ParallelConfig saved = parallel_config();
  set_parallel_config({9, 1});
  std::vector<std::atomic<int>> hits(1000);
  parallel_for(1000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
  });
  for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
  set_parallel_config(saved);
}

TEST(Parallel, RethrowsTheLowestChunksException) {
  const std::vector<int64_t> bounds = even_split(100, 6);
  try {
    run_chunks(bounds, [](int c, int64_t, int64_t) {
      if (c >= 2) throw std::runtime_error("chunk " + std::to_string(c));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 2");
  }
}

TEST(Parallel, ResizePrefaultedKeepsContentsAndZeroFills) {
  std::vector<int32_t> v = {1, 2, 3};
  resize_prefaulted(v, size_t{1} << 20);  // 4 MiB: prefaulted
  ASSERT_EQ(v.size(), size_t{1} << 20);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[2], 3);
  for (size_t i = 3; i < v.size(); ++i) ASSERT_EQ(v[i], 0) << i;
  resize_prefaulted(v, 2);
  EXPECT_EQ(v, (std::vector<int32_t>{1, 2}));
}

TEST(ParallelPasses, MackoPackingIsIndependentOfThreads) {
  for (uint64_t seed : {1u, 2u}) {
    const CsrMatrix a = mixed_matrix(97, 3000, seed);
    for (int bits : {2, 4, 8}) {
      for (int chunks : {3, 8, 31}) {
        const auto [one, many] = serial_and_split(chunks, [&] { return pack_macko(a, bits); });
        EXPECT_EQ(one.row_ptr, many.row_ptr) << bits << " " << chunks;
        EXPECT_EQ(one.padding, many.padding);
        EXPECT_EQ(one.deltas, many.deltas) << bits << " " << chunks;
        EXPECT_EQ(one.is_padding, many.is_padding);
        ASSERT_EQ(one.values.size(), many.values.size());
        EXPECT_EQ(0, std::memcmp(one.values.data(), many.values.data(),
                                 one.values.size() * sizeof(float)));
        const auto [s1, sn] = serial_and_split(chunks, [&] { return macko_stats(a, bits); });
        EXPECT_EQ(s1.padding, one.padding);
        EXPECT_EQ(sn.padding, one.padding);
        EXPECT_EQ(sn.slots, one.slots());
        // The parallel packing still round-trips.
        const CsrMatrix back = unpack_macko(many);
        EXPECT_EQ(back.row_ptr, a.row_ptr);
        EXPECT_EQ(back.col_idx, a.col_idx);
        EXPECT_EQ(back.values, a.values);
      }
    }
  }
}

TEST(ParallelPasses, GeneralPackingIsIndependentOfThreads) {
  const CsrMatrix a = mixed_matrix(150, 400, 3);
  for (int64_t n : {1, 8}) {
    const Problem p =
        n == 1 ? Problem::spmv(a.rows, a.cols, DType::F16)
               : Problem::spmm(a.rows, a.cols, n, DType::F16, Layout::RowMajor, Layout::RowMajor);
    int checked = 0;
    for (const Schedule& s : enumerate_schedules(p, a)) {
      if (s.family_name() != "general") continue;
      const auto [one, many] = serial_and_split(7, [&] { return pack_format(a, p, s); });
      ASSERT_EQ(one.col_idx, many.col_idx) << to_string(s);
      ASSERT_EQ(one.values, many.values) << to_string(s);
      ASSERT_EQ(one.row_ptr.values, many.row_ptr.values) << to_string(s);
      ++checked;
    }
    EXPECT_GT(checked, 10);
  }
}

TEST(ParallelPasses, ValueConversionIsIndependentOfThreads) {
  std::mt19937_64 g(7);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> v(10007);
  for (float& x : v) x = u(g);
  // Out of range for fp16 in several chunks (the first one not in chunk 0), NaN and Inf (not
  // reported), a bf16 overflow near the end.
  v[2500] = 7e4f;
  v[2501] = -1e6f;
  v[6000] = 65520.0f;
  v[100] = std::numeric_limits<float>::quiet_NaN();
  v[101] = std::numeric_limits<float>::infinity();
  v[9000] = std::numeric_limits<float>::max();
  for (DType t : {DType::F16, DType::BF16}) {
    const auto [r1, rn] = serial_and_split(13, [&] { return check_range(v, t); });
    EXPECT_EQ(r1.out_of_range, rn.out_of_range) << to_string(t);
    EXPECT_EQ(r1.first_index, rn.first_index);
    EXPECT_EQ(r1.first_value, rn.first_value);
    const auto [c1, cn] = serial_and_split(13, [&] {
      ConversionReport rep;
      std::vector<uint16_t> bits = convert_values(v, t, &rep);
      return std::make_pair(bits, rep);
    });
    EXPECT_EQ(c1.first, cn.first) << to_string(t);
    EXPECT_EQ(cn.second.out_of_range, r1.out_of_range);
    EXPECT_EQ(cn.second.first_index, r1.first_index);
    // convert_values_to writes the same words into an unaligned byte buffer.
    std::vector<std::byte> raw(2 * v.size() + 1);
    const ConversionReport rep = convert_values_to(v, t, std::span(raw).subspan(1, 2 * v.size()));
    EXPECT_EQ(rep.out_of_range, r1.out_of_range);
    EXPECT_EQ(0, std::memcmp(raw.data() + 1, cn.first.data(), 2 * v.size()));
  }
  const ConversionReport f16 = check_range(v, DType::F16);
  EXPECT_EQ(f16.first_index, 2500);
  EXPECT_EQ(f16.out_of_range, 4);  // 7e4, -1e6, 65520, FLT_MAX
}

TEST(ParallelPasses, CanonicalCheckNamesTheSameViolation) {
  CsrMatrix a = mixed_matrix(120, 300, 4);
  const auto [ok1, okn] =
      serial_and_split(6, [&] { return testing::error_of([&] { a.check_canonical(); }); });
  EXPECT_EQ(ok1, "<no error>");
  EXPECT_EQ(okn, "<no error>");
  // Two violations in different chunks: both runs name the first.
  const auto bad_entry = [&](int64_t r) { return static_cast<size_t>(a.row_ptr[r] + 1); };
  ASSERT_GE(a.row_length(100), 2);
  ASSERT_GE(a.row_length(40), 2);
  std::swap(a.col_idx[bad_entry(100) - 1], a.col_idx[bad_entry(100)]);
  a.col_idx[bad_entry(40)] = static_cast<int32_t>(a.cols);
  const auto [e1, en] =
      serial_and_split(6, [&] { return testing::error_of([&] { a.check_canonical(); }); });
  EXPECT_NE(e1, "<no error>");
  EXPECT_EQ(e1, en);
  EXPECT_NE(e1.find("row 40"), std::string::npos) << e1;
}

}  // namespace
}  // namespace sparsegen
