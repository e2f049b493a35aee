// The dense gated FFN baseline of sparsegen-ffn-bench, as a serving stack runs it: one cuBLAS
// GEMM for [G | U] = x · [W_g | W_u] (M x 2N), the gating h = ReLU(G) ⊙ U (an NVRTC kernel of
// templates/sg_ffn.cuh), one cuBLAS GEMM y = h · W_d; fp16/bf16 in and out, fp32 accumulation
// (CUBLAS_COMPUTE_32F). Non-gated: G = x · W_u, h = ReLU(G). run_three_gemms() is the form the
// TwELL paper's comparison uses: G = x · W_g and U = x · W_u as two GEMMs (the same weights and
// outputs, as column blocks of [W_g | W_u] and [G | U]), the gating, the down GEMM.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "compiler/pipeline.h"
#include "ir/ffn.h"

namespace sparsegen::bench {

class CublasFfn {
 public:
  // Uploads the weights in dtype and compiles the gating kernel for `target`; buffers for up to
  // max_m tokens. Throws BaselineError / CudaError.
  CublasFfn(const FfnWeights& w, DType dtype, int64_t max_m, const CompileTarget& target);
  ~CublasFfn();
  CublasFfn(const CublasFfn&) = delete;
  CublasFfn& operator=(const CublasFfn&) = delete;
  // y (m x K) = FFN(x (m x K)), row-major device pointers, on `stream`. m <= max_m.
  void run(CUdeviceptr x, CUdeviceptr y, int64_t m, CUstream stream) const;
  // The same with the gate and up GEMMs apart (gated FFNs; non-gated: run()).
  void run_three_gemms(CUdeviceptr x, CUdeviceptr y, int64_t m, CUstream stream) const;

 private:
  void run_gemms(CUdeviceptr x, CUdeviceptr y, int64_t m, bool split_gate_up,
                 CUstream stream) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsegen::bench
