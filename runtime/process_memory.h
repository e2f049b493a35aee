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

// Process-wide malloc policy for the command-line tools (call first thing in main, before any
// thread allocates): one arena for every thread, large blocks from that arena's heap rather than
// fresh mappings, and freed memory kept in the process. A graph-scale search allocates and frees
// arrays of hundreds of MB per candidate on pool threads. Without the policy glibc maps each one
// afresh (a thread arena's heap is at most 64 MB, so a larger block is always a new mapping) and
// its pages are faulted in again, one fault per 4 KiB, which bounds the pack. With it a freed block
// is reused where it was. On an H200 host (16 cores, glibc 2.39) the search over a 65M-nonzero
// R-MAT graph took 6.7 s instead of 12.2 s with one build at a time, at a slightly lower peak;
// small searches (16 parallel NVRTC compiles) were 2-17 % faster, not slower. Memory is returned
// only at exit. Returns false where it does not apply (not glibc, a sanitizer's allocator) or with
// SPARSEGEN_MALLOC_REUSE=0. Libraries and the Python module do not call it: the host process's
// allocator is the host's business (GLIBC_TUNABLES=glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0
// sets the same from outside).
bool keep_freed_memory_for_reuse();

// Whether this process reuses freed large blocks: keep_freed_memory_for_reuse() succeeded, or
// GLIBC_TUNABLES sets both glibc.malloc.arena_max=1 and glibc.malloc.mmap_max=0. The tuner packs
// one candidate at a time by default only then (compiler/tune.h: build_window).
bool freed_memory_is_reused();
// The GLIBC_TUNABLES part of it: whether `tunables` (a GLIBC_TUNABLES value, or null) sets both.
bool tunables_reuse_freed_memory(const char* tunables);

}  // namespace sparsegen
