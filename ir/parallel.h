// Data-parallel loops for the O(nnz) host passes (loading, packing, value conversion, statistics,
// the CPU reference). A 100M-nonzero weight takes seconds per pass on one core; these helpers split
// such a pass into contiguous, ordered chunks, one thread per chunk, and leave small inputs on the
// calling thread (threads cost tens of microseconds each).
//
// Results must not depend on the number of threads: callers write disjoint outputs per chunk, or
// keep one partial result per chunk and merge the partials in chunk order afterwards.
//
//   const std::vector<int64_t> bounds = even_split(n, parallel_chunks(n));
//   std::vector<int64_t> partial(bounds.size() - 1);
//   run_chunks(bounds, [&](int c, int64_t b, int64_t e) { for (...) partial[c] += ...; });
//
// Also the shared task helpers: a work queue (for_each_task) and a producer/consumer pipeline
// with backpressure (produce_in_order: kernels built on a pool while the caller measures them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace sparsegen {

// Work units (steps of a simple loop) below which a chunk is not worth a thread of its own.
inline constexpr int64_t kParallelMinWork = int64_t{1} << 18;

// Process-wide limits of the parallel passes. Tests set max_threads 1 and then several, with
// min_work 1 so that small matrices are split too, and compare the results byte for byte.
struct ParallelConfig {
  int max_threads = 0;                  // 0: hardware_concurrency, at most 32
  int64_t min_work = kParallelMinWork;  // work units per chunk, at least
};
void set_parallel_config(const ParallelConfig& c);
ParallelConfig parallel_config();

// Chunks to split a pass of `work` units into: work / min_work, between 1 and max_threads.
int parallel_chunks(int64_t work);

// Bounds 0 = b[0] <= b[1] <= ... <= b[chunks] = n of `chunks` ranges of [0, n), of equal size.
std::vector<int64_t> even_split(int64_t n, int chunks);

// Row bounds of `chunks` row ranges of a CSR-style offset array (rows + 1 entries, non-decreasing)
// holding about equal numbers of entries, so long rows do not pile up in one chunk.
std::vector<int64_t> balanced_split(std::span<const int64_t> offsets, int chunks);

// Runs fn(c, bounds[c], bounds[c + 1]) for every chunk c (chunk 0 on the calling thread, the others
// on threads of their own; when no thread can be started, on the calling thread). Returns when all
// have finished; then rethrows the exception of the lowest chunk that threw, if any.
void run_chunks(const std::vector<int64_t>& bounds,
                const std::function<void(int chunk, int64_t begin, int64_t end)>& fn);

// fn(begin, end) over [0, n) in parallel_chunks(work) chunks of equal size. `work`: the cost of
// the whole loop in simple steps (n when each index is one).
void parallel_for(int64_t n, int64_t work, const std::function<void(int64_t, int64_t)>& fn);

// A work queue: fn(i) for every i in [0, count), on min(count, threads) threads (threads <= 0:
// hardware concurrency), the calling thread one of them; each takes the next index in order, so
// long tasks do not hold up the rest. Tasks are independent: an exception in one does not stop
// the others; the first is rethrown once all have finished.
void for_each_task(size_t count, int threads, const std::function<void(size_t)>& fn);

// Order in which produce_in_order() hands the made items to `consume`.
enum class ConsumeOrder {
  index,     // 0, 1, 2, ...: item i waits for every item before it
  finished,  // as each make() returns (first finished, first consumed)
};

// How long an item counts against produce_in_order()'s window.
enum class WindowSpan {
  until_consumed,  // from the start of make(i) until consume(i) has returned (the item's memory)
  until_made,      // from the start of make(i) until it returns: for items that hand what they
                   // hold elsewhere (to the device) and are small while they wait for consume()
};

namespace detail {
// produce_in_order() without the item type: make(i) stores item i, consume(i) takes it.
void run_pipeline(size_t count, int threads, size_t window, const std::function<void(size_t)>& make,
                  const std::function<bool(size_t)>& consume, ConsumeOrder order,
                  const std::function<bool()>& stop_starting, WindowSpan span);
}  // namespace detail

// A producer/consumer pipeline with backpressure: make(i) runs for i = 0, 1, ... (started in
// index order) on min(count, threads) threads of its own (threads <= 0: hardware concurrency),
// while the calling thread hands each made item to consume(i, T&&), in index order or, with
// ConsumeOrder::finished, in the order the items are made. For building kernel candidates on the
// CPU while the calling thread measures them on the GPU:
//
//   produce_in_order(jobs.size(), 8, 16,
//                    [&](size_t i) { return build(jobs[i]); },  // T: a build, or its error
//                    [&](size_t i, Built&& b) { measure(jobs[i], b); return true; });
//
// - Backpressure: at most `window` items (0 counts as 1) are alive at once, an item counting from
//   the start of its make() until its consume() has returned (the item is destroyed right then),
//   so the memory the items hold stays bounded when the consumer is slower than the producers.
//   With WindowSpan::until_made an item counts only while make() runs: the window then bounds
//   the makes in progress, and made items wait for the consumer without holding a place.
// - consume() returning false stops the pipeline: no item starts after it, the ones running
//   finish and are dropped unconsumed.
// - stop_starting (optional) is polled by a producer, under the pipeline's lock (keep it cheap),
//   before it starts each item. Once it says true no item starts any more, but the items already
//   started are still made and consumed (a time budget). An exception from it counts as true and
//   is rethrown once those are consumed.
// - Errors: an exception thrown by make(i) is rethrown here when item i's turn to be consumed
//   comes; to record per-item errors and go on, catch inside make() and return the error in T.
//   An exception from consume() is rethrown as is.
// - On every exit (normal, early stop, exception) every producer thread has been joined before
//   this returns or throws. count 0: nothing runs. When no thread can be started, the items are
//   made and consumed one by one on the calling thread, in index order.
template <class Make, class Consume>
void produce_in_order(size_t count, int threads, size_t window, Make&& make, Consume&& consume,
                      ConsumeOrder order = ConsumeOrder::index,
                      const std::function<bool()>& stop_starting = {},
                      WindowSpan span = WindowSpan::until_consumed) {
  using T = std::decay_t<std::invoke_result_t<Make&, size_t>>;
  static_assert(std::is_move_constructible_v<T>, "make(i) must return a movable item");
  static_assert(std::is_convertible_v<std::invoke_result_t<Consume&, size_t, T&&>, bool>,
                "consume(i, T&&) must return bool: false stops the pipeline");
  std::vector<std::optional<T>> items(count);
  detail::run_pipeline(
      count, threads, window, [&](size_t i) { items[i].emplace(make(i)); },
      [&](size_t i) {
        struct Release {  // the item goes as soon as consume() is done with it, even on a throw
          std::optional<T>& item;
          ~Release() { item.reset(); }
        } release{items[i]};
        return static_cast<bool>(consume(i, std::move(*items[i])));
      },
      order, stop_starting, span);
}

// At most `capacity` holders at once, admitted in ticket order: ticket t waits until tickets
// 0 .. t-1 have been admitted and a place is free. For pipeline items (made in index order on a
// pool) that hold much memory over one stretch of their make() only: the stretch is bounded
// without the pool reordering the items, while the rest of each make() runs unbounded.
//
//   OrderedSlots slots(window);
//   make(i): { OrderedSlots::Hold h = slots.acquire(i); pack; upload; }  compile;
//
// Every ticket must be acquired once (a ticket never taken blocks all after it); a Hold frees
// its place when it is destroyed or released, also during unwinding.
class OrderedSlots {
 public:
  explicit OrderedSlots(size_t capacity);
  ~OrderedSlots();
  OrderedSlots(const OrderedSlots&) = delete;
  OrderedSlots& operator=(const OrderedSlots&) = delete;

  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)) {}
    Hold& operator=(Hold&& o) noexcept {
      if (this != &o) {
        release();
        owner_ = std::exchange(o.owner_, nullptr);
      }
      return *this;
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release(); }
    void release();

   private:
    friend class OrderedSlots;
    explicit Hold(OrderedSlots* owner) : owner_(owner) {}
    OrderedSlots* owner_ = nullptr;
  };

  // Blocks until `ticket` may hold a place (tickets are 0, 1, 2, ... without gaps).
  Hold acquire(size_t ticket);
  size_t capacity() const { return capacity_; }
  // The most places held at once so far.
  size_t peak() const;

 private:
  struct State;
  void release_one();
  size_t capacity_;
  std::unique_ptr<State> state_;
};

// Faults in the pages of [p, p + bytes) on several threads (madvise MADV_POPULATE_WRITE where the
// kernel has it; otherwise nothing). Fresh pages are zeroed by the kernel on first touch, one page
// fault per 4 KiB: for a buffer of hundreds of MB that costs more than the loop that fills it, so
// it is worth doing in parallel before the buffer's first write. A hint: errors are ignored.
void prefault(void* p, size_t bytes);

// v.resize(n) (new elements value-initialised) with the new storage faulted in by prefault()
// first, so that the zero-fill runs at memory speed instead of one page fault per 4 KiB.
template <class T>
void resize_prefaulted(std::vector<T>& v, size_t n) {
  if (n > v.capacity()) {
    std::vector<T> fresh;
    fresh.reserve(n);
    prefault(fresh.data(), n * sizeof(T));
    fresh.assign(v.begin(), v.end());
    v.swap(fresh);
  }
  v.resize(n);
}

}  // namespace sparsegen
