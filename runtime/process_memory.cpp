#include "runtime/process_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace sparsegen {

std::optional<ProcessMemory> process_memory() {
  std::ifstream in("/proc/self/status");
  if (!in) return std::nullopt;
  // Lines such as "VmHWM:\t  123456 kB".
  std::optional<int64_t> rss, peak;
  std::string line;
  while (std::getline(in, line)) {
    const bool is_rss = line.rfind("VmRSS:", 0) == 0;
    const bool is_peak = line.rfind("VmHWM:", 0) == 0;
    if (!is_rss && !is_peak) continue;
    std::istringstream fields(line.substr(6));
    int64_t kib = 0;
    std::string unit;
    if (!(fields >> kib >> unit) || unit != "kB") return std::nullopt;
    (is_rss ? rss : peak) = kib * 1024;
  }
  if (!rss || !peak) return std::nullopt;
  return ProcessMemory{*rss, *peak};
}

namespace {
std::atomic<bool> g_policy_set{false};  // keep_freed_memory_for_reuse() succeeded
}  // namespace

bool keep_freed_memory_for_reuse() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;  // the sanitizer's allocator ignores mallopt
#elif defined(__GLIBC__)
  const char* env = std::getenv("SPARSEGEN_MALLOC_REUSE");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  // M_ARENA_MAX 1: pool threads allocate from the main arena, whose heap grows without the 64 MB
  // limit of a thread arena; M_MMAP_MAX 0: no block is mapped on its own (freeing it would unmap
  // it); M_TRIM_THRESHOLD -1: the heap's free top is not given back.
  const bool set = mallopt(M_ARENA_MAX, 1) == 1 && mallopt(M_MMAP_MAX, 0) == 1 &&
                   mallopt(M_TRIM_THRESHOLD, -1) == 1;
  if (set) g_policy_set = true;
  return set;
#else
  return false;
#endif
}

bool freed_memory_is_reused() {
  return g_policy_set || tunables_reuse_freed_memory(std::getenv("GLIBC_TUNABLES"));
}

bool tunables_reuse_freed_memory(const char* t) {
  if (t == nullptr) return false;
  // Each name followed by '=' and the value, then ':' or the end.
  auto has = [&](const char* setting) {
    const size_t n = std::strlen(setting);
    for (const char* p = std::strstr(t, setting); p != nullptr; p = std::strstr(p + 1, setting))
      if ((p == t || p[-1] == ':') && (p[n] == ':' || p[n] == '\0')) return true;
    return false;
  };
  return has("glibc.malloc.arena_max=1") && has("glibc.malloc.mmap_max=0");
}

}  // namespace sparsegen
