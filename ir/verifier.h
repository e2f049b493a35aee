// Verifier: checks a legal schedule against hardware limits for one problem and matrix. Returns
// reasons (empty = runs); never throws, so the search simply skips a rejected candidate.
//
//   auto reasons = verify(problem, schedule, compute_format_stats(a, problem, schedule),
//                         DeviceLimits::sm90());
//   // e.g. {"grid.y = 70000 column tiles exceeds 65535"}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/device_limits.h"
#include "ir/format.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen {

// Per-thread register estimate (accumulators, segment head/tail partials, vector loads, a fixed
// base for indices and loop state) and per-block shared memory of the block-level reduction.
int estimate_registers(const Problem& p, const Schedule& s);
int64_t estimate_shared_bytes(const Problem& p, const Schedule& s);

std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats& stats,
                                const DeviceLimits& dev);

}  // namespace sparsegen
