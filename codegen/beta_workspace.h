// The fp32 round trip that lets a library GEMM add beta·C with one rounding
// (LibraryGemm::beta_in_workspace): cuBLASLt rounds alpha·A·B to a 16-bit C before it adds
// beta·C, so with beta != 0 the run goes
//   prologue  NAME_init_ws(ws, C, beta):  ws[i] = beta * C[i] in fp32   (beta != 0 only)
//   GEMM      ws = alpha·A·B + 1·ws, fp32 C                            (the runtime's plan)
//   epilogue  NAME_store_ws(C, ws):      C[i] = ws[i] rounded once     (beta != 0 only)
// and with beta == 0 the GEMM writes C directly.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/emitter.h"
#include "codegen/kernel_signature.h"

namespace sparsegen::codegen {

// Declares the prologue and epilogue above in `e`'s module over `count` elements of C (the
// module must declare `T`, C's type), and sets sig's prologue, epilogue (both beta_only) and
// workspace (count floats). The caller marks its GEMM beta_in_workspace.
void add_beta_workspace(Emitter& e, KernelSignature& sig, const std::string& kernel_name,
                        int64_t count);

}  // namespace sparsegen::codegen
