// GeneralSparse emitter: CUDA source for a GeneralSchedule (ir/schedule.h) over its PackedFormat
// (ir/format.h). The kernel mirrors the schedule's block -> warp -> thread task hierarchy; offset
// arrays that classify_offsets() compressed become arithmetic, the rest become table parameters.
//
//   PackedFormat f = pack_format(a, problem, schedule);
//   GeneratedKernel k = emit_general_sparse(problem, schedule, f);
//   nvrtc::compile(k.source, {.arch = "sm_90", .headers = k.headers});
//   // launch k.signature.kernel_name with k.signature.params in order
#pragma once

#include <map>
#include <string>

#include "codegen/kernel_signature.h"
#include "ir/format.h"
#include "ir/problem.h"
#include "ir/schedule.h"

namespace sparsegen::codegen {

struct GeneratedKernel {
  std::string source;                          // one translation unit
  std::map<std::string, std::string> headers;  // the templates/*.cuh it includes, name -> content
  KernelSignature signature;
  // Uses instructions of the arch-specific target only (wgmma: sm_90a, not sm_90): compiled for
  // the target's "a" variant (nvrtc::arch_specific_variant).
  bool arch_specific = false;
};

struct EmitOptions {
  std::string kernel_name = "sparsegen_general";
};

// Precondition: schedule.family() == General, f = pack_format(a, problem, schedule). Throws
// UserError when an index of the packed format does not fit the kernel's 32-bit positions.
GeneratedKernel emit_general_sparse(const Problem& problem, const Schedule& schedule,
                                    const PackedFormat& f, const EmitOptions& opt = {});

}  // namespace sparsegen::codegen
