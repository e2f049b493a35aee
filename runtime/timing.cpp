#include "runtime/timing.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace sparsegen {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile of an empty sample set");
  if (!(q >= 0.0 && q <= 1.0)) throw std::invalid_argument("quantile outside [0, 1]");
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

TimingStats summarize(std::vector<double> samples) {
  if (samples.empty()) throw std::invalid_argument("timing statistics of an empty sample set");
  for (double s : samples) {
    if (!std::isfinite(s) || s < 0.0) {
      throw std::invalid_argument("timing sample " + std::to_string(s) +
                                  " ms is negative or not finite");
    }
  }
  std::sort(samples.begin(), samples.end());
  TimingStats t;
  t.count = static_cast<int>(samples.size());
  t.min_ms = samples.front();
  t.max_ms = samples.back();
  double sum = 0;
  for (double s : samples) sum += s;
  t.mean_ms = sum / static_cast<double>(samples.size());
  t.median_ms = quantile_sorted(samples, 0.5);
  t.p10_ms = quantile_sorted(samples, 0.1);
  t.p90_ms = quantile_sorted(samples, 0.9);
  return t;
}

std::size_t l2_flush_bytes(int l2_bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  if (l2_bytes <= 0) return 256 * kMiB;  // unknown L2: larger than any current GPU's
  const std::size_t twice = 2 * static_cast<std::size_t>(l2_bytes);
  return std::max<std::size_t>(8 * kMiB, (twice + kMiB - 1) / kMiB * kMiB);
}

L2Flusher::L2Flusher(const cuda::DeviceInfo& info) : buffer_(l2_flush_bytes(info.l2_cache_bytes)) {}

void L2Flusher::flush(CUstream stream) {
  value_ = static_cast<unsigned char>(value_ ^ 0x5a);
  buffer_.fill_bytes_async(value_, stream);
}

TimingResult measure(const std::function<void(CUstream)>& launch, const TimingOptions& o) {
  if (o.repetitions < 1) throw std::invalid_argument("measure: repetitions must be >= 1");
  if (o.warmup < 0) throw std::invalid_argument("measure: warmup must be >= 0");
  if (!launch) throw std::invalid_argument("measure: no launch function");

  std::optional<cuda::Stream> own_stream;
  CUstream stream = o.stream;
  if (!stream) {
    own_stream.emplace();
    stream = own_stream->get();
  }
  std::unique_ptr<L2Flusher> own_flusher;
  L2Flusher* flusher = o.flusher;
  if (o.flush_l2 && !flusher) {
    own_flusher = std::make_unique<L2Flusher>(cuda::query_device(o.device));
    flusher = own_flusher.get();
  }
  auto run = [&](cuda::Event* start, cuda::Event* end) {
    if (o.flush_l2) flusher->flush(stream);
    if (start) start->record(stream);
    launch(stream);
    if (end) end->record(stream);
  };

  // Warm-up, timed as a whole (one event pair around the launches only when there is one run;
  // otherwise the flushes are included, which only makes the estimate conservative).
  int reps = o.repetitions;
  if (o.warmup > 0) {
    std::vector<double> warm;
    for (int i = 0; i < o.warmup; ++i) {
      cuda::Event e0, e1;
      run(&e0, &e1);
      warm.push_back(static_cast<double>(cuda::Event::elapsed_ms(e0, e1)));
      if (i > 0 && o.abandon_above_ms > 0 && warm.back() > o.abandon_above_ms) {
        TimingResult r;
        r.samples_ms = {warm.back()};
        static_cast<TimingStats&>(r) = summarize(r.samples_ms);
        r.abandoned = true;
        return r;
      }
    }
    if (o.max_total_ms > 0) {
      const double per_run = *std::min_element(warm.begin(), warm.end());
      if (per_run > 0 && per_run * reps > o.max_total_ms) {
        const int fit = static_cast<int>(o.max_total_ms / per_run);
        reps = std::max(std::min(reps, std::max(1, o.min_repetitions)), fit);
        reps = std::min(reps, o.repetitions);
      }
    }
  }

  std::vector<cuda::Event> starts(static_cast<std::size_t>(reps));
  std::vector<cuda::Event> ends(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) run(&starts[i], &ends[i]);
  // elapsed_ms waits for each end event; faults of the launched work surface here.
  TimingResult r;
  r.samples_ms.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    r.samples_ms.push_back(static_cast<double>(cuda::Event::elapsed_ms(starts[i], ends[i])));
  }
  static_cast<TimingStats&>(r) = summarize(r.samples_ms);
  return r;
}

}  // namespace sparsegen
