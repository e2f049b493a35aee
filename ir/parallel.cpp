#include "ir/parallel.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace sparsegen {

namespace {

std::atomic<int> g_max_threads{0};
std::atomic<int64_t> g_min_work{kParallelMinWork};

int hardware_threads() {
  static const int hw = static_cast<int>(
      std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 32u));  // 0 = unknown
  return hw;
}

}  // namespace

void set_parallel_config(const ParallelConfig& c) {
  g_max_threads = std::max(c.max_threads, 0);
  g_min_work = std::max<int64_t>(c.min_work, 1);
}

ParallelConfig parallel_config() {
  return ParallelConfig{g_max_threads.load(), g_min_work.load()};
}

int parallel_chunks(int64_t work) {
  const int max_threads = g_max_threads > 0 ? g_max_threads.load() : hardware_threads();
  const int64_t chunks = std::max<int64_t>(work, 0) / g_min_work;
  return static_cast<int>(std::clamp<int64_t>(chunks, 1, max_threads));
}

std::vector<int64_t> even_split(int64_t n, int chunks) {
  chunks = std::max(chunks, 1);
  std::vector<int64_t> b(static_cast<size_t>(chunks) + 1);
  for (int c = 0; c <= chunks; ++c)  // n * c / chunks without overflowing n * c
    b[static_cast<size_t>(c)] = n / chunks * c + n % chunks * c / chunks;
  return b;
}

std::vector<int64_t> balanced_split(std::span<const int64_t> offsets, int chunks) {
  chunks = std::max(chunks, 1);
  const int64_t rows = offsets.empty() ? 0 : static_cast<int64_t>(offsets.size()) - 1;
  if (rows == 0) return std::vector<int64_t>(static_cast<size_t>(chunks) + 1, 0);
  // Entries plus rows, so that empty rows (and loops with a per-row cost) count too.
  const int64_t base = offsets.front(), total = offsets.back() - base + rows;
  const std::vector<int64_t> goal = even_split(total, chunks);
  std::vector<int64_t> b(goal.size());
  b.front() = 0;
  b.back() = rows;
  auto at = [&](int64_t r) { return offsets[static_cast<size_t>(r)] - base + r; };  // monotone
  for (size_t c = 1; c + 1 < goal.size(); ++c) {
    // The row start nearest to goal[c]: first r with at(r) >= goal[c], or the one before it.
    int64_t lo = b[c - 1], hi = rows;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (at(mid) >= goal[c])
        hi = mid;
      else
        lo = mid + 1;
    }
    if (lo > b[c - 1] && goal[c] - at(lo - 1) < at(lo) - goal[c]) --lo;
    b[c] = lo;
  }
  return b;
}

void run_chunks(const std::vector<int64_t>& bounds,
                const std::function<void(int, int64_t, int64_t)>& fn) {
  const int chunks = static_cast<int>(bounds.size()) - 1;
  if (chunks <= 0) return;
  if (chunks == 1) {
    fn(0, bounds[0], bounds[1]);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(chunks));
  auto body = [&](int c) {
    try {
      fn(c, bounds[static_cast<size_t>(c)], bounds[static_cast<size_t>(c) + 1]);
    } catch (...) {
      errors[static_cast<size_t>(c)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  std::vector<int> inline_chunks;  // chunks no thread could be started for
  pool.reserve(static_cast<size_t>(chunks) - 1);
  for (int c = 1; c < chunks; ++c) {
    try {
      pool.emplace_back(body, c);
    } catch (const std::system_error&) {
      inline_chunks.push_back(c);
    }
  }
  body(0);
  for (int c : inline_chunks) body(c);
  for (auto& t : pool) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void parallel_for(int64_t n, int64_t work, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  run_chunks(even_split(n, parallel_chunks(work)), [&](int, int64_t b, int64_t e) { fn(b, e); });
}

void prefault(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr uintptr_t kPage = 4096;
  if (p == nullptr || bytes < (size_t{1} << 20)) return;  // small: the first write does it
  const uintptr_t b = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes + kPage - 1) & ~(kPage - 1);
  const auto pages = static_cast<int64_t>((e - b) / kPage);
  // A page fault zeroes 4 KiB: about the cost of 1000 simple loop steps.
  parallel_for(pages, pages * 1024, [b](int64_t p0, int64_t p1) {
    ::madvise(reinterpret_cast<void*>(b + static_cast<uintptr_t>(p0) * kPage),
              static_cast<size_t>(p1 - p0) * kPage, MADV_POPULATE_WRITE);
  });
#else
  (void)p;
  (void)bytes;
#endif
}

void for_each_task(size_t count, int threads, const std::function<void(size_t)>& fn) {
  if (count == 0) return;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t n = std::min(count, static_cast<size_t>(threads > 0 ? threads : hw));
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first;
  auto worker = [&] {
    for (size_t i; (i = next++) < count;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // fewer threads: the ones running take the rest
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

struct OrderedSlots::State {
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0;  // the next ticket to admit
  size_t held = 0;
  size_t peak = 0;
};

OrderedSlots::OrderedSlots(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)), state_(std::make_unique<State>()) {}

OrderedSlots::~OrderedSlots() = default;

OrderedSlots::Hold OrderedSlots::acquire(size_t ticket) {
  State& st = *state_;
  std::unique_lock<std::mutex> lock(st.mu);
  st.cv.wait(lock, [&] { return st.next == ticket && st.held < capacity_; });
  ++st.next;
  st.peak = std::max(st.peak, ++st.held);
  st.cv.notify_all();  // ticket + 1 may be admitted too when a place is left
  return Hold(this);
}

size_t OrderedSlots::peak() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->peak;
}

void OrderedSlots::release_one() {
  State& st = *state_;
  {
    std::lock_guard<std::mutex> lock(st.mu);
    --st.held;
  }
  st.cv.notify_all();
}

void OrderedSlots::Hold::release() {
  if (owner_ != nullptr) std::exchange(owner_, nullptr)->release_one();
}

namespace detail {

void run_pipeline(size_t count, int threads, size_t window, const std::function<void(size_t)>& make,
                  const std::function<bool(size_t)>& consume, ConsumeOrder order,
                  const std::function<bool()>& stop_starting, WindowSpan span) {
  if (count == 0) return;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const size_t producers = std::min(count, static_cast<size_t>(threads > 0 ? threads : hw));
  window = std::max<size_t>(window, 1);
  const bool by_index = order == ConsumeOrder::index;
  const bool until_made = span == WindowSpan::until_made;

  // All under mu. Items [0, next) have started; `taken` of them have been handed to consume();
  // in_flight: started and not through consume() yet (until_made: not through make() yet); the
  // window counts these.
  std::mutex mu;
  std::condition_variable space;  // producers: in_flight fell, or stopped
  std::condition_variable ready;  // the consumer: an item is made, or nothing more will start
  size_t next = 0, taken = 0, in_flight = 0;
  bool stopped = false;           // start nothing more
  std::vector<char> made;         // ConsumeOrder::index: made[i] once make(i) returned
  std::deque<size_t> made_order;  // ConsumeOrder::finished: made, not yet taken
  std::vector<std::exception_ptr> errors(count);  // written by make(i)'s thread before made
  std::exception_ptr stop_error;                  // from stop_starting
  if (by_index) made.assign(count, 0);

  auto producer = [&] {
    for (;;) {
      size_t i;
      {
        std::unique_lock lk(mu);
        space.wait(lk, [&] { return stopped || next >= count || in_flight < window; });
        if (stopped || next >= count) return;
        if (stop_starting) {
          bool stop = true;
          try {
            stop = stop_starting();
          } catch (...) {
            stop_error = std::current_exception();
          }
          if (stop) {
            stopped = true;
            lk.unlock();
            space.notify_all();
            ready.notify_all();
            return;
          }
        }
        i = next++;
        ++in_flight;
      }
      try {
        make(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      {
        std::lock_guard lk(mu);
        if (by_index)
          made[i] = 1;
        else
          made_order.push_back(i);
        if (until_made) --in_flight;
      }
      if (until_made) space.notify_one();
      ready.notify_one();
    }
  };

  std::vector<std::thread> pool;
  struct Joiner {  // on every exit, exceptions included: no producer outlives the pipeline
    std::mutex& mu;
    bool& stopped;
    std::condition_variable& space;
    std::vector<std::thread>& pool;
    ~Joiner() {
      {
        std::lock_guard lk(mu);
        stopped = true;
      }
      space.notify_all();
      for (std::thread& t : pool) t.join();
    }
  } joiner{mu, stopped, space, pool};
  pool.reserve(producers);
  for (size_t t = 0; t < producers; ++t) {
    try {
      pool.emplace_back(producer);
    } catch (const std::system_error&) {
      break;  // fewer producers: the ones running take the rest
    }
  }

  if (pool.empty()) {  // no thread at all: one item at a time on this thread
    for (size_t i = 0; i < count; ++i) {
      if (stop_starting && stop_starting()) return;
      make(i);
      if (!consume(i)) return;
    }
    return;
  }

  auto have_item = [&] { return by_index ? taken < next && made[taken] : !made_order.empty(); };
  for (;;) {
    size_t i;
    {
      std::unique_lock lk(mu);
      ready.wait(lk, [&] { return have_item() || ((stopped || next >= count) && taken == next); });
      if (!have_item()) break;  // everything started has been consumed, and nothing will start
      if (by_index) {
        i = taken;
      } else {
        i = made_order.front();
        made_order.pop_front();
      }
      ++taken;
    }
    if (errors[i]) std::rethrow_exception(errors[i]);  // the joiner stops the producers first
    if (!consume(i)) break;
    if (until_made) continue;
    {
      std::lock_guard lk(mu);
      --in_flight;
    }
    space.notify_one();
  }
  std::lock_guard lk(mu);
  if (stop_error) std::rethrow_exception(stop_error);
}

}  // namespace detail

}  // namespace sparsegen
