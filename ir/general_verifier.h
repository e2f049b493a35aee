// The general family's hardware checks: a register and shared-memory estimate and the verifier's
// limits (threads, registers, shared memory, grid) for a GeneralSparse schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/device_limits.h"
#include "ir/family.h"
#include "ir/general_schedule.h"

namespace sparsegen {

// Per-thread register estimate: fp32 accumulators (segment head/tail partials too), vector loads,
// a fixed base for indices and loop state.
int general_registers(const GeneralSchedule& s);
// Shared memory of the block-level reduction.
int64_t general_shared_bytes(const GeneralSchedule& s);
// Reasons the schedule does not fit `dev` for stats `st` (empty = runs).
std::vector<std::string> verify_general(const GeneralSchedule& s, const FormatStats& st,
                                        const DeviceLimits& dev);

}  // namespace sparsegen
