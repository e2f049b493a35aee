// CPU interpreter of a MACKO schedule: executes the kernel's plan on the host from the packed
// MACKO arrays (never from the CSR): per row, the warps' steps of aligned 8-slot vectors, the
// reverse-offset masking, column decoding by per-lane prefix sums + warp scans + carries, fp32
// accumulation per lane and column, the lane (and, for split rows, warp) sums, and one store per
// row and column: alpha·acc + beta·C (C not read when beta == 0), rounded to the dtype. Staged
// schedules walk the kernel's work items instead of rows (macko_items: segments of long rows,
// each summed apart, then added per row from the last segment back). A decoded
// column outside [0, K) or a slot count that disagrees with the row pointers throws
// std::logic_error (a broken packer shows up as a failure, not as a wrong number).
//
//   MackoFormat f = pack_macko(a, s.delta_bits);
//   interpret_macko(p, s, f, b, c, 1.0f, 0.0f);   // c = A·B
#pragma once

#include <span>

#include "ir/macko_format.h"
#include "ir/macko_schedule.h"
#include "ir/problem.h"

namespace sparsegen {

void interpret_macko(const Problem& p, const MackoSchedule& s, const MackoFormat& f,
                     std::span<const float> b, std::span<float> c, float alpha, float beta);

}  // namespace sparsegen
