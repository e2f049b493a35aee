// Vendor-library baselines for `sparsegen-bench`: dense cuBLAS and cuSPARSE CSR, on the same
// problem as our kernels: C (M x N) = A (M x K) * B (K x N), fp16/bf16 values with fp32
// accumulation, or fp32 throughout.
//
// This is the only code that links cuBLAS, cuSPARSE and the CUDA runtime (cudart); it is linked
// into the benchmark executable only, never into the sparsegen libraries or the `sparsegen` CLI.
//
// Mixing cudart with our dlopen'd driver API (runtime/cuda_driver.h) is safe because both use the
// device's *primary* context: cuda::Context retains the primary context and makes it current, and
// cudart (which cuBLAS/cuSPARSE call internally) uses the context current on the calling thread,
// or else the primary context of its current device; here both are the same context. So device
// pointers from cuda::DeviceBuffer and CUstreams from cuda::Stream are valid in library calls
// (cudaStream_t and CUstream are the same type). attach_cudart() selects the device in cudart and
// forces its initialization so that a broken runtime fails there, with a clear message.
//
// Every library call is checked; a failure throws BaselineError with the call, the status name and
// the library's status string. A configuration the library does not support (e.g. a cuSPARSE
// algorithm for a dtype/layout) is not an error: it is reported in Candidate::unsupported.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/problem.h"
#include "ir/sparse_matrix.h"

namespace sparsegen::bench {

class BaselineError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Makes cudart use device `ordinal`'s primary context (the one cuda::Context(ordinal) made
// current). Throws BaselineError when cudart cannot initialize.
void attach_cudart(int ordinal);

// "cuBLAS 13.0.0", "cuSPARSE 12.6.3", "CUDA runtime 13000".
std::string cublas_version();
std::string cusparse_version();
std::string cudart_version();

// A runnable baseline configuration: `run` enqueues C = A*B (alpha 1, beta 0) on the stream it is
// given; C is written in layout `c_layout` and B read in `b_layout`.
struct Candidate {
  std::string name;  // e.g. "cublasGemmEx", "cusparseSpMM CSR_ALG2 row"
  Layout b_layout = Layout::RowMajor;
  Layout c_layout = Layout::RowMajor;
  std::function<void(CUstream)> run;
  std::string unsupported;  // non-empty: the library refused this configuration (why); no run
  std::size_t workspace_bytes = 0;
};

// Dense cuBLAS. The M x K matrix is stored densely (row-major, zeros where A has none) in the
// problem dtype. fp16/bf16: cublasGemmEx with CUBLAS_COMPUTE_32F (fp32 accumulate); fp32:
// CUBLAS_COMPUTE_32F without TF32 (the default math mode), the same arithmetic as our fp32
// kernels. For N == 1 a GEMV candidate is offered too (cublasHSHgemvStridedBatched /
// cublasTSTgemvStridedBatched / cublasSgemv); the caller keeps the faster as "dense".
class CublasDense {
 public:
  // Uploads the dense copy of `a` (the host buffer is temporary). Throws BaselineError.
  CublasDense(const CsrMatrix& a, DType dtype);
  ~CublasDense();
  CublasDense(const CublasDense&) = delete;
  CublasDense& operator=(const CublasDense&) = delete;

  // Bytes of the dense A (M * K * dtype bytes), for bandwidth.
  std::size_t a_bytes() const;
  // Candidates for N columns, reading B and writing C (row-major, device pointers that must
  // outlive the candidates).
  std::vector<Candidate> candidates(int64_t n, CUdeviceptr b, CUdeviceptr c) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// cuSPARSE CSR (32-bit row offsets and column indices, values in the problem dtype, fp32 compute).
// N == 1: cusparseSpMV with ALG_DEFAULT, CSR_ALG1, CSR_ALG2. N > 1: cusparseSpMM with ALG_DEFAULT,
// CSR_ALG1, CSR_ALG2, CSR_ALG3, each with row-major and column-major dense B/C. Buffer sizes,
// workspace allocation and preprocessing happen in candidates(), outside any timing.
class CusparseCsr {
 public:
  CusparseCsr(const CsrMatrix& a, DType dtype);
  ~CusparseCsr();
  CusparseCsr(const CusparseCsr&) = delete;
  CusparseCsr& operator=(const CusparseCsr&) = delete;

  // Bytes of the CSR arrays (values + column indices + row offsets), for bandwidth.
  std::size_t a_bytes() const;
  // b_row / b_col: B in row-major and column-major layout; c: output (M*N elements).
  std::vector<Candidate> candidates(int64_t n, CUdeviceptr b_row, CUdeviceptr b_col, CUdeviceptr c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsegen::bench
