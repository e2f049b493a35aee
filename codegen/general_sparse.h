// GeneralSparse emitter: CUDA source for a GeneralSchedule (ir/general_schedule.h) over its
// PackedFormat (ir/format.h). The kernel mirrors the schedule's block -> warp -> thread task
// hierarchy; offset arrays that classify_offsets() compressed become arithmetic, the rest become
// table parameters.
//
//   PackedFormat f = pack_format(a, problem, schedule);
//   GeneratedKernel k = emit_general_sparse(problem, schedule, f);
//   nvrtc::compile(k.source, {.arch = "sm_90", .headers = k.headers});
//   // launch k.signature.kernel_name with k.signature.params in order
#pragma once

#include <map>
#include <string>

#include "codegen/family.h"
#include "codegen/kernel_signature.h"
#include "ir/format.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen::codegen {

// Precondition: schedule is a general one, f = pack_format(a, problem, schedule). Throws
// UserError when an index of the packed format does not fit the kernel's 32-bit positions.
GeneratedKernel emit_general_sparse(const Problem& problem, const Schedule& schedule,
                                    const PackedFormat& f, const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
