// Verifier: checks a legal schedule against hardware limits for one problem and matrix. Returns
// reasons (empty = runs); never throws, so the search simply skips a rejected candidate.
//
//   auto reasons = verify(problem, schedule, schedule.family().format_stats(a, problem, schedule),
//                         DeviceLimits::sm90());
//   // e.g. {"grid.y = 70000 column tiles exceeds 65535"}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/device_limits.h"
#include "ir/family.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen {

// Per-thread register estimate and static shared memory of the schedule's main kernel (its
// family's estimates).
int estimate_registers(const Problem& p, const Schedule& s);
int64_t estimate_shared_bytes(const Problem& p, const Schedule& s);

// Problem legality (validate) first, then the family's hardware checks.
std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats& stats,
                                const DeviceLimits& dev);

}  // namespace sparsegen
