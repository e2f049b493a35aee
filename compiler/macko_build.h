// Pipeline steps 3-7 for the MACKO family (compiler/pipeline.h dispatches here on
// schedule.family() == Macko): verify (verify_macko), pack (pack_macko), values (range check +
// conversion to fp16/bf16), emit (emit_macko), NVRTC. The KernelBuild carries the packed values;
// the deltas and row pointers travel as the signature's table parameters; col_idx stays empty.
#pragma once

#include "compiler/pipeline.h"
#include "compiler/shared_pack.h"
#include "ir/macko_format.h"

namespace sparsegen {

// The MACKO format of one delta width with its values (compiler/shared_pack.h).
using MackoPacked = SharedPack<MackoFormat>;
MackoPacked pack_macko_values(const CsrMatrix& a, int delta_bits, DType dtype);

// packed: optional, the matrix's format for s's delta width and p's dtype (taken, not re-packed).
KernelBuild build_macko_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                               const CompileTarget& target, bool line_info,
                               const MackoPacked* packed = nullptr);

}  // namespace sparsegen
