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

// Process-wide malloc policy for the command-line tools: large blocks come from the heap instead
// of fresh mappings, and freed memory stays in the process for the next allocation instead of
// going back to the system. A graph-scale search allocates and frees arrays of hundreds of MB
// once per candidate; each fresh mapping is faulted in again, one page fault per 4 KiB, and the
// pack is bound by those faults. The peak is unchanged when each new block fits where a freed one
// was; memory is only returned at exit. Returns false where it does not
// apply (not glibc, a sanitizer's allocator) or SPARSEGEN_MALLOC_REUSE=0. Libraries and the
// Python module do not call it: the host process's allocator is the host's business.
bool keep_freed_memory_for_reuse();

}  // namespace sparsegen
