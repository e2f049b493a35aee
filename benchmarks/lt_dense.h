// Dense cuBLASLt GEMM in the convention of runtime/cusparselt.h: the "dense cuBLASLt of the same
// type" baseline for the cuSPARSELt / SlideSparse GEMMs.
//
//   C (M x N, col-major) = alpha * A (M x K, row-major) * B (K x N, stored N x K row-major)
//                          + beta * C
//
// cuBLASLt is column-major, so the arrays are described as they lie: A is a col-major K x M
// matrix used transposed, B a col-major K x N matrix, C a col-major M x N matrix. That is the
// "TN" form, the only one cuBLASLt offers for fp8 (e4m3) on Hopper and the one its int8 (IMMA)
// kernels need with the plain column-major order; fp16/bf16 run the same way.
//   fp16 / bf16: CUBLAS_COMPUTE_32F, output in the input type.
//   e4m3:        CUBLAS_COMPUTE_32F, fp16 or bf16 output (C of the output type), unit scales.
//   int8:        cuBLASLt writes int8 inputs only to int32 (or int8) outputs, so the GEMM is
//                CUBLAS_COMPUTE_32I into an int32 buffer of M x N, followed by a small NVRTC
//                kernel C = alpha * acc + beta * C in fp16/bf16. run() does both; run_gemm_only()
//                the GEMM alone (both are reported by sparsegen-lt-bench).
//
// Uses cudart (via cuBLASLt) on the primary context: call attach_cudart() (baselines.h) after
// making the cuda::Context current. Every library call is checked (BaselineError).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/cusparselt.h"

namespace sparsegen::bench {

// "cuBLASLt 130100" (cublasLtGetVersion()).
std::string cublaslt_version();

class LtDenseGemm {
 public:
  // a_dev: M x K row-major in shape.in, owned by the caller (read at every run). Creates the
  // descriptors and a 32 MiB workspace; the algorithm is the heuristic's first until search().
  // Throws BaselineError (e.g. an unsupported type or no algorithm for this shape).
  LtDenseGemm(CUdeviceptr a_dev, const cusparselt::Shape& shape);
  ~LtDenseGemm();
  LtDenseGemm(const LtDenseGemm&) = delete;
  LtDenseGemm& operator=(const LtDenseGemm&) = delete;

  // Times up to `top` heuristic algorithms (cublasLtMatmulAlgoGetHeuristic, best estimate first)
  // on b and c (c is overwritten), `repetitions` L2-flushed runs each, and keeps the fastest by
  // median. Returns describe() of the kept one.
  std::string search(CUdeviceptr b, CUdeviceptr c, CUstream stream, int top = 8,
                     int repetitions = 5);

  // C = alpha * A * B + beta * C on `stream` (asynchronous).
  void run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream) const;
  // int8: the int32 GEMM without the conversion (C untouched); others: run(b, c, 1, 0).
  void run_gemm_only(CUdeviceptr b, CUdeviceptr c, CUstream stream) const;
  bool has_conversion() const;

  // "heuristic 2/8: algo 21 tile 18 splitK 1 ws 0 B".
  std::string describe() const;
  int heuristic_count() const;  // algorithms the heuristic returned (at most 8)
  const cusparselt::Shape& shape() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsegen::bench
