// Pipeline steps 3-7 for the bitmap_tc family (compiler/pipeline.h dispatches here on
// schedule.family() == BitmapTc): verify (verify_bitmap_tc), pack (pack_bitmap_tiles), values
// (range check + conversion to fp16/bf16), emit (emit_bitmap_tc), NVRTC. The KernelBuild carries
// the packed values; the masks and tile pointers travel as the signature's table parameters.
#pragma once

#include "compiler/pipeline.h"
#include "compiler/shared_pack.h"
#include "ir/bitmap_format.h"

namespace sparsegen {

// The bitmap-tile format with its values (compiler/shared_pack.h): one for every schedule.
using BitmapPacked = SharedPack<BitmapTileFormat>;
BitmapPacked pack_bitmap_values(const CsrMatrix& a, DType dtype);

// packed: optional, the matrix's tiles in p's dtype (taken, not re-packed).
KernelBuild build_bitmap_tc_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                                   const CompileTarget& target, bool line_info,
                                   const BitmapPacked* packed = nullptr);

}  // namespace sparsegen
