// Pipeline steps 3-7 for the MACKO family (compiler/pipeline.h dispatches here on
// schedule.family() == Macko): verify (verify_macko), pack (pack_macko), values (range check +
// conversion to fp16/bf16), emit (emit_macko), NVRTC. The KernelBuild carries the packed values;
// the deltas and row pointers travel as the signature's table parameters; col_idx stays empty.
#pragma once

#include <vector>

#include "compiler/pipeline.h"
#include "ir/macko_format.h"

namespace sparsegen {

// What every MACKO schedule of one delta width shares: the packed format and its values in the
// problem's dtype. Packing and converting a 100M-nonzero weight takes seconds, so the tuner packs
// once per width (compiler/tune.cpp) instead of once per candidate.
struct MackoPacked {
  MackoFormat format;
  DType dtype = DType::F16;
  std::vector<char> values;  // format.values in dtype
};
// Steps 4-5 (pack, values) alone. Throws UserError for values outside dtype's range.
MackoPacked pack_macko_values(const CsrMatrix& a, int delta_bits, DType dtype);

// packed: optional, the matrix's format for s's delta width and p's dtype (taken, not re-packed).
KernelBuild build_macko_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                               const CompileTarget& target, bool line_info,
                               const MackoPacked* packed = nullptr);

}  // namespace sparsegen
