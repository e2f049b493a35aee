// The parallel-for helpers (ir/parallel.h) and the multithreaded O(nnz) passes built on them:
// every pass gives byte for byte the result of its serial run (one chunk) when split into many
// chunks, also on small matrices (min_work 1 splits them) and with chunk bounds inside rows.
#include "ir/parallel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
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

// Counts the items of a produce_in_order() run alive at once (from the start of make() to the
// end of consume()) and the make() calls still running.
struct PipelineProbe {
  std::atomic<int> alive{0}, max_alive{0}, running{0}, started{0};
  void start() {
    ++started;
    ++running;
    const int now = ++alive;
    int seen = max_alive.load();
    while (now > seen && !max_alive.compare_exchange_weak(seen, now)) {
    }
  }
  void made() { --running; }
  void consumed() { --alive; }
};

// A few microseconds of work of varying length, so that items finish out of index order.
void jitter(size_t i) {
  std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 13 * 50));
}

TEST(ParallelPipeline, ConsumesEveryItemInIndexOrder) {
  for (int threads : {1, 3, 8})
    for (size_t window : {1, 2, 5}) {
      PipelineProbe probe;
      std::vector<size_t> order;
      produce_in_order(
          60, threads, window,
          [&](size_t i) {
            probe.start();
            jitter(i);
            probe.made();
            return std::make_unique<size_t>(i * i);  // a move-only item
          },
          [&](size_t i, std::unique_ptr<size_t>&& v) {
            EXPECT_EQ(*v, i * i);
            if (i % 3 == 0) jitter(i + 1);  // a consumer slower than the producers at times
            order.push_back(i);
            probe.consumed();
            return true;
          });
      ASSERT_EQ(order.size(), 60u) << threads << " " << window;
      for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
      EXPECT_LE(probe.max_alive.load(), static_cast<int>(window)) << threads << " " << window;
      EXPECT_EQ(probe.running.load(), 0);
    }
}

TEST(ParallelPipeline, WindowUntilMadeBoundsTheMakesNotTheWaitingItems) {
  // The consumer holds item 0 until every other item is made: with the window counting only the
  // makes, all 30 are made while 0 waits (until_consumed would stall at the window).
  for (int threads : {1, 3, 8}) {
    std::atomic<int> running{0}, max_running{0}, made{0};
    std::vector<size_t> order;
    const size_t count = 30, window = 2;
    produce_in_order(
        count, threads, window,
        [&](size_t i) {
          const int now = ++running;
          int seen = max_running.load();
          while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
          }
          jitter(i);
          --running;
          ++made;
          return i;
        },
        [&](size_t i, size_t&& v) {
          EXPECT_EQ(v, i);
          if (i == 0) {
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (made < static_cast<int>(count) && std::chrono::steady_clock::now() < give_up)
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            EXPECT_EQ(made.load(), static_cast<int>(count)) << threads;
          }
          order.push_back(i);
          return true;
        },
        ConsumeOrder::index, {}, WindowSpan::until_made);
    ASSERT_EQ(order.size(), count) << threads;
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
    EXPECT_LE(max_running.load(), static_cast<int>(window)) << threads;
  }
}

TEST(ParallelPipeline, OrderedSlotsAdmitInTicketOrderAndBoundTheHolders) {
  // Holders inside a pipeline whose makes run on 8 threads with a window of 8: the slots admit
  // the stretch in index order (with one place the holders' own record shows the order), never
  // more holders than places, while the rest of each make runs unbounded.
  auto bump = [](std::atomic<int>& now, std::atomic<int>& most) {
    const int v = ++now;
    int seen = most.load();
    while (v > seen && !most.compare_exchange_weak(seen, v)) {
    }
  };
  for (size_t places : {1, 2}) {
    const size_t count = 40;
    OrderedSlots slots(places);
    std::mutex mu;
    std::vector<size_t> admitted;
    std::atomic<int> inside{0}, max_inside{0}, after{0}, max_after{0};
    produce_in_order(
        count, 8, 8,
        [&](size_t i) {
          {
            const OrderedSlots::Hold h = slots.acquire(i);
            bump(inside, max_inside);
            {
              std::lock_guard<std::mutex> lock(mu);
              admitted.push_back(i);
            }
            jitter(i);
            --inside;
          }
          bump(after, max_after);  // the unbounded part (the compile)
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          --after;
          return i;
        },
        [&](size_t i, size_t&& v) { return v == i; }, ConsumeOrder::index, {},
        WindowSpan::until_made);
    ASSERT_EQ(admitted.size(), count);
    if (places == 1) {
      for (size_t i = 0; i < count; ++i) EXPECT_EQ(admitted[i], i);
    }
    EXPECT_LE(max_inside.load(), static_cast<int>(places));
    EXPECT_LE(slots.peak(), places);
    EXPECT_GT(max_after.load(), static_cast<int>(places));  // more ran at once outside
  }
}

TEST(ParallelPipeline, OrderedSlotsFreeAPlaceWhenAHolderThrows) {
  OrderedSlots slots(1);
  EXPECT_THROW(
      {
        OrderedSlots::Hold h = slots.acquire(0);
        throw std::runtime_error("build failed");
      },
      std::runtime_error);
  OrderedSlots::Hold h1 = slots.acquire(1);  // would block forever if the place were lost
  h1.release();
  h1.release();  // a second release does nothing
  OrderedSlots::Hold h2 = slots.acquire(2);
  OrderedSlots::Hold moved = std::move(h2);
  EXPECT_EQ(slots.peak(), 1u);
}

TEST(ParallelPipeline, FinishedOrderHandsOverEachItemOnceAsItIsMade) {
  // make(0) waits until another item has been consumed: only possible in finished order.
  std::atomic<bool> other_consumed{false};
  PipelineProbe probe;
  std::vector<size_t> order;
  const size_t window = 4;
  produce_in_order(
      40, 3, window,
      [&](size_t i) {
        probe.start();
        if (i == 0) {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (!other_consumed && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        jitter(i);
        probe.made();
        return i;
      },
      [&](size_t i, size_t&& v) {
        EXPECT_EQ(v, i);
        if (i != 0) other_consumed = true;
        order.push_back(i);
        probe.consumed();
        return true;
      },
      ConsumeOrder::finished);
  ASSERT_EQ(order.size(), 40u);
  EXPECT_NE(order.front(), 0u);
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], i);
  EXPECT_LE(probe.max_alive.load(), static_cast<int>(window));
}

TEST(ParallelPipeline, ConsumeFalseStopsStartingAndJoinsEveryProducer) {
  for (ConsumeOrder o : {ConsumeOrder::index, ConsumeOrder::finished}) {
    PipelineProbe probe;
    size_t consumed = 0;
    const size_t window = 6;
    produce_in_order(
        1000, 4, window,
        [&](size_t i) {
          probe.start();
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          jitter(i);
          probe.made();
          return i;
        },
        [&](size_t, size_t&&) {
          probe.consumed();
          return ++consumed < 10;
        },
        o);
    EXPECT_EQ(consumed, 10u);
    // Returned: no make() is running (every producer joined) and none starts later.
    EXPECT_EQ(probe.running.load(), 0);
    const int started = probe.started.load();
    EXPECT_LE(started, static_cast<int>(10 + window - 1));  // the window bounds what started
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(probe.started.load(), started);
  }
}

TEST(ParallelPipeline, StopStartingConsumesWhatStarted) {
  for (ConsumeOrder o : {ConsumeOrder::index, ConsumeOrder::finished}) {
    PipelineProbe probe;
    std::vector<size_t> order;
    int polls = 0;  // stop_starting runs under the pipeline's lock, once before each start
    produce_in_order(
        500, 3, 4,
        [&](size_t i) {
          probe.start();
          jitter(i);
          probe.made();
          return i;
        },
        [&](size_t i, size_t&&) {
          order.push_back(i);
          probe.consumed();
          return true;
        },
        o, [&] { return ++polls > 25; });
    EXPECT_EQ(probe.started.load(), 25);
    ASSERT_EQ(order.size(), 25u);  // everything started was consumed: items 0-24
    std::sort(order.begin(), order.end());
    for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
    EXPECT_EQ(probe.running.load(), 0);
  }
}

TEST(ParallelPipeline, ExceptionsDoNotHangAndAreRethrown) {
  for (ConsumeOrder o : {ConsumeOrder::index, ConsumeOrder::finished}) {
    // From make(7): items 0-6 are consumed first in index order, then its turn rethrows it.
    PipelineProbe probe;
    std::vector<size_t> order;
    try {
      produce_in_order(
          300, 4, 3,
          [&](size_t i) {
            probe.start();
            jitter(i);
            probe.made();
            if (i == 7) throw std::runtime_error("make 7");
            return i;
          },
          [&](size_t i, size_t&&) {
            order.push_back(i);
            return true;
          },
          o);
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "make 7");
    }
    EXPECT_EQ(probe.running.load(), 0);
    EXPECT_LT(probe.started.load(), 300);
    if (o == ConsumeOrder::index) {
      EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
    }
    // From consume(): rethrown as is, every producer joined.
    PipelineProbe probe2;
    EXPECT_THROW(produce_in_order(
                     300, 4, 5,
                     [&](size_t i) {
                       probe2.start();
                       jitter(i);
                       probe2.made();
                       return i;
                     },
                     [&](size_t i, size_t&&) -> bool {
                       if (i == 3) throw std::logic_error("consume 3");
                       return true;
                     },
                     o),
                 std::logic_error);
    EXPECT_EQ(probe2.running.load(), 0);
    // From stop_starting: counts as a stop; what started is consumed, then it is rethrown.
    std::atomic<size_t> consumed{0};
    EXPECT_THROW(produce_in_order(
                     50, 2, 2, [&](size_t i) { return i; },
                     [&](size_t, size_t&&) {
                       ++consumed;
                       return true;
                     },
                     o,
                     [&]() -> bool {
                       if (consumed >= 5) throw std::out_of_range("budget");
                       return false;
                     }),
                 std::out_of_range);
    EXPECT_GE(consumed.load(), 5u);
    EXPECT_LT(consumed.load(), 50u);
  }
}

TEST(ParallelPipeline, NoItemsAndMoreThreadsThanItems) {
  int calls = 0;
  produce_in_order(
      0, 4, 2,
      [&](size_t) {
        ++calls;
        return 0;
      },
      [&](size_t, int&&) {
        ++calls;
        return true;
      });
  EXPECT_EQ(calls, 0);
  for (int threads : {0, 16}) {
    std::vector<size_t> order;
    produce_in_order(
        3, threads, 8, [&](size_t i) { return std::to_string(i); },
        [&](size_t i, std::string&& s) {
          EXPECT_EQ(s, std::to_string(i));
          order.push_back(i);
          return true;
        });
    EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2})) << threads;
  }
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
