#include "ir/general_verifier.h"

#include <fmt/format.h>

namespace sparsegen {

int general_registers(const GeneralSchedule& s) {
  const bool segments = s.reduction(Level::Thread) == ReductionKind::Bitmap ||
                        s.reduction(Level::Warp) == ReductionKind::Segment;
  // fp32 accumulators (plus head/tail partials when segments are carried), one column index and
  // one value per vector lane, and a fixed base for offsets, loop bounds and addresses.
  const int acc = s.thread_cols * (segments ? 3 : 1);
  return 24 + acc + 2 * s.vector_width + (s.interleave ? 2 : 0);
}

int64_t general_shared_bytes(const GeneralSchedule& s) {
  const ReductionKind rb = s.reduction(Level::Block);
  if (rb == ReductionKind::None || s.warps_per_block == 1) return 0;
  // One fp32 partial per warp and warp column (two for head/tail segments) plus its row.
  const int64_t per_warp = int64_t{4} * s.warp_cols() * (rb == ReductionKind::Segment ? 2 : 1) +
                           (rb == ReductionKind::Total ? 0 : 16);
  return per_warp * s.warps_per_block;
}

std::vector<std::string> verify_general(const GeneralSchedule& g, const FormatStats& st,
                                        const DeviceLimits& dev) {
  std::vector<std::string> why;
  const int threads = g.threads_per_block();
  if (threads > dev.max_threads_per_block)
    why.push_back(fmt::format("{} threads per block exceed {} on {}", threads,
                              dev.max_threads_per_block, dev.name));
  const int regs = general_registers(g);
  if (regs > dev.max_registers_per_thread)
    why.push_back(fmt::format("about {} registers per thread exceed {} on {}", regs,
                              dev.max_registers_per_thread, dev.name));
  else if (int64_t{regs} * threads > dev.registers_per_block)
    why.push_back(fmt::format("about {} registers x {} threads exceed {} per block on {}", regs,
                              threads, dev.registers_per_block, dev.name));
  const int64_t smem = general_shared_bytes(g);
  if (smem > dev.max_shared_per_block)
    why.push_back(fmt::format("{} bytes of shared memory exceed {} on {}", smem,
                              dev.max_shared_per_block, dev.name));
  if (st.block_tasks > dev.max_grid_x)
    why.push_back(
        fmt::format("grid.x = {} block tasks exceeds {}", st.block_tasks, dev.max_grid_x));
  if (st.col_tiles > dev.max_grid_y)
    why.push_back(fmt::format("grid.y = {} column tiles exceeds {}", st.col_tiles, dev.max_grid_y));
  return why;
}

}  // namespace sparsegen
