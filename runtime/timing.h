// GPU timing for benchmarks and measured search: L2 flush, event-timed repetitions, statistics.
// Independent of the IR: what is timed is any callable that enqueues work on a stream.
//
//   cuda::Context ctx(0);
//   TimingOptions opt;                       // 3 warm-up runs, 20 timed runs, L2 flushed
//   TimingResult t = measure([&](CUstream s) { k.run(dB, dC, 1.0f, 0.0f, s); }, opt);
//   fmt::print("{:.4f} ms median ({:.4f}..{:.4f} p10..p90)\n", t.median_ms, t.p10_ms, t.p90_ms);
//
// Method (see .library/device/METHOD.md): every timed run is preceded by a write of a buffer of
// at least twice the device's L2 size (cuMemsetD8Async on the same stream, outside the events),
// so each run starts with cold caches, as a layer of a real model does between other layers'
// traffic. Each run is bracketed by its own pair of events on the stream; all runs are enqueued
// back to back and read after one synchronization, so host overhead between runs does not leak
// into the numbers (the events measure only the GPU time between them). Warm-up runs (untimed)
// keep module load, lazy loading and library handle set-up out of the statistics.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <cuda.h>

#include "runtime/cuda_driver.h"

namespace sparsegen {

// Summary statistics of a set of samples (milliseconds). Percentiles use linear interpolation
// between order statistics (p50 of an even count is the mean of the two middle samples).
struct TimingStats {
  int count = 0;
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  double mean_ms = 0;
  double p10_ms = 0;
  double p90_ms = 0;
};

// Statistics of `samples` (any order). Throws std::invalid_argument for an empty set or a
// negative / non-finite sample (a broken event pair, never a real time).
TimingStats summarize(std::vector<double> samples);

// The q-quantile (0 <= q <= 1) of ascending `sorted` samples, linearly interpolated. Throws
// std::invalid_argument when empty or q is outside [0, 1].
double quantile_sorted(const std::vector<double>& sorted, double q);

// Bytes of the flush buffer for an L2 of `l2_bytes`: 2 x L2 rounded up to a whole MiB, at least
// 8 MiB; 256 MiB when the driver reports no L2 size (0 or negative).
std::size_t l2_flush_bytes(int l2_bytes);

// A device buffer whose full write evicts the L2 (allocated once, reused for every flush).
// Needs the context of the device to be current.
class L2Flusher {
 public:
  // Sized from the device query of `info` (l2_flush_bytes(info.l2_cache_bytes)).
  explicit L2Flusher(const cuda::DeviceInfo& info);
  // Enqueues the flush on `stream`. The value written alternates between calls so that no
  // hardware shortcut can treat the write as redundant.
  void flush(CUstream stream);
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  cuda::DeviceBuffer buffer_;
  unsigned char value_ = 0;
};

struct TimingOptions {
  int warmup = 3;        // untimed runs first (each also preceded by a flush when flush_l2)
  int repetitions = 20;  // timed runs; the statistics are over these
  bool flush_l2 = true;  // flush the L2 before every timed run
  // Optional cap on the timed phase: when the warm-up runs show that `repetitions` runs would take
  // longer than this (ms, GPU time), fewer are made, but never fewer than min_repetitions. 0: none.
  double max_total_ms = 0;
  int min_repetitions = 20;
  // Optional early stop for a tuner's candidate far slower than the best so far: when a warm-up
  // run after the first (the first may pay for loading the module) takes longer than this (ms),
  // nothing more is run and the result's one sample is that run (TimingResult::abandoned). 0: none.
  double abandon_above_ms = 0;
  // Stream to time on; null: measure() creates a non-blocking stream of its own.
  CUstream stream = nullptr;
  // Flusher to reuse (saves a 100+ MB allocation per call); null: measure() makes one sized for
  // device `device` (whose context must be the current one).
  L2Flusher* flusher = nullptr;
  int device = 0;
};

struct TimingResult : TimingStats {
  std::vector<double> samples_ms;  // one per timed run, in run order
  bool abandoned = false;          // stopped in the warm-up (TimingOptions::abandon_above_ms)
};

// Times `launch` (which must enqueue its work on the stream it is given and nothing else; it may
// set a library handle's stream first). Needs a current context. Throws std::invalid_argument for
// bad options (repetitions < 1, warm-up < 0) and CudaError from the driver, including faults of the
// launched work, which surface at the final synchronization.
TimingResult measure(const std::function<void(CUstream)>& launch,
                     const TimingOptions& options = {});

}  // namespace sparsegen
