// cuSPARSE (CSR SpMM), loaded at run time: the library step of the cusparse candidate family
// (codegen/kernel_signature.h, LibrarySpmm), so the tuner can measure the vendor's CSR kernels
// next to the generated ones and return them where they are faster. Opened with dlopen on first
// use and never linked, so sparsegen builds and runs without it (available() then says why).
// Search order: $SPARSEGEN_CUSPARSE (a file path; when set, nothing else is tried), then
// libcusparse.so.12 / .so through the dynamic loader, then the CUDA toolkit's lib64.
//
// Convention: C (m x n) = alpha · A · B + beta · C with A in CSR (32-bit offsets and column
// indices, zero-based), B (k x n) and C in one order (row- or column-major, leading dimensions
// n or k / m), fp32 or fp16 / bf16 values with fp32 compute. beta == 0 never reads C.
//
// Objects need the CUDA context they were made under to be current (runtime/cuda_driver.h).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

namespace sparsegen::cusparse {

// A failed cuSPARSE call, or a failed load (status() -1); what() names the call and status.
class CusparseError : public std::runtime_error {
 public:
  CusparseError(const std::string& message, int status)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// True when the library loads and every entry point resolves; else false with each path tried
// in *why. Never throws.
bool available(std::string* why = nullptr);
// "cuSPARSE 12.6.3 (libcusparse.so.12)". Throws when unavailable.
std::string version();

struct SpmmShape {
  int64_t m = 0, k = 0, n = 0, nnz = 0;
  int value_bytes = 4;    // 4: fp32; 2: fp16 (half) or bf16
  bool half = false;      // with value_bytes 2: fp16 (true) or bf16 (false)
  bool row_major = true;  // B and C
  // The CSR SpMM algorithm (cusparseSpMMAlg_t) by name: "default" (the library's choice),
  // "alg1", "alg2" or "alg3" (CUSPARSE_SPMM_CSR_ALG1..3).
  std::string algorithm = "default";
};

// One planned SpMM over a CSR matrix that stays at the given device addresses: the matrix
// descriptor and the algorithm's workspace are made at construction, the library's preprocessing
// runs once on the first call (it needs the dense operands' shapes), never per call. Calls on
// one object are serialised (the library handle is bound to the caller's stream per call).
class Spmm {
 public:
  // Throws CusparseError (library missing; the algorithm refuses the shape, order or type).
  Spmm(const SpmmShape& shape, CUdeviceptr row_offsets, CUdeviceptr col_idx, CUdeviceptr values);
  ~Spmm();
  Spmm(const Spmm&) = delete;
  Spmm& operator=(const Spmm&) = delete;
  // Enqueues C = alpha · A · B + beta · C on `stream`.
  void run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream) const;
  const SpmmShape& shape() const;
  int64_t workspace_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsegen::cusparse
