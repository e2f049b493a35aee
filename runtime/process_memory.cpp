#include "runtime/process_memory.h"

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

}  // namespace sparsegen
