// The calling process's resident memory, read from /proc/self/status (Linux).
//
//   if (auto m = process_memory()) fmt::print("rss {} peak {}\n", m->rss_bytes, m->peak_rss_bytes);
//
// The tuner logs it at the end of each phase of a search, so that the phase that raises the peak
// of a graph-scale search is seen without a profiler.
#pragma once

#include <cstdint>
#include <optional>

namespace sparsegen {

struct ProcessMemory {
  int64_t rss_bytes = 0;       // VmRSS: resident now
  int64_t peak_rss_bytes = 0;  // VmHWM: the largest resident set since the process started
};

// Empty where /proc/self/status is missing or lacks either line (not Linux, a restricted sandbox).
std::optional<ProcessMemory> process_memory();

}  // namespace sparsegen
