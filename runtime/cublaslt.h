// cuBLASLt (dense GEMM), loaded at run time: the dense BLAS step a kernel's launch sequence may
// contain (codegen/kernel_signature.h, LibraryGemm), e.g. the gate GEMM of an FFN schedule or a
// dense FFN. Opened with dlopen on first use and never linked, so sparsegen builds and runs
// without it (available() then says why). Search order: $SPARSEGEN_CUBLASLT (a file path; when
// set, nothing else is tried), then libcublasLt.so.13 / .12 / .so through the dynamic loader,
// then the CUDA toolkit's lib64 (/usr/local/cuda/lib64).
//
// Convention: row-major C (m x n, ldc) = alpha · A (m x k, lda) · B + beta · C, with B row-major
// k x n (ldb) or, transposed, n x k (ldb); fp16 or bf16 in and out (or C in fp32: c_fp32), fp32
// accumulation; optional ReLU applied to the result. Or 8-bit operands: int8 in and int32 out with
// int32 accumulation, exact, or fp8 e4m3 in and fp32 out with fp32 accumulation; the library runs
// those only as "TN" (b_transposed) with k, lda, ldb and ldc multiples of 4 (k, lda and ldb of 16
// for fp8), and for int8 alpha and beta must be integers. beta == 0 never reads C. With a 16-bit C
// the library rounds alpha·A·B to C's type before it adds beta·C (measured: up to 8x the
// one-rounding bound with bf16); callers that need one rounding with beta != 0 use c_fp32.
//
// Objects need the CUDA context they were made under to be current (runtime/cuda_driver.h).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace sparsegen::cublaslt {

// A failed cuBLASLt call, or a failed load (status() -1); what() names the call and status.
class CublasLtError : public std::runtime_error {
 public:
  CublasLtError(const std::string& message, int status)
      : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// True when the library loads and every entry point resolves; else false with each path tried
// in *why. Never throws.
bool available(std::string* why = nullptr);
// "cuBLASLt 130000 (/usr/local/cuda/lib64/libcublasLt.so.13)". Throws when unavailable.
std::string version();

// The operand types: 16-bit (fp16 or bf16, GemmShape::half), int8 -> int32, fp8 e4m3 -> fp32.
enum class Operands { Io16, Int8, Fp8 };

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool half = false;          // fp16 (true) or bf16 (false)
  bool b_transposed = false;  // B stored n x k
  bool relu = false;
  // With relu, > 0: the library also writes the ReLU bit-mask (bit i of a column-major output
  // column set where element i came out positive) with this many bits per column of its
  // column-major output, i.e. per row of our row-major C: a multiple of 128, at least n. Its
  // address is run()'s `relu_mask`, at least 256-byte aligned.
  int64_t relu_mask_ld = 0;
  bool c_fp32 = false;  // C in fp32 (A and B stay 16-bit): adds beta·C before the one rounding
  Operands operands = Operands::Io16;  // 8-bit: half, c_fp32 and relu unused
};

// One planned GEMM: descriptors and the heuristic's first algorithm, chosen once at construction
// (never per call); a 32 MiB workspace of its own, or shared with another plan that never runs
// at the same time (e.g. the fp32-C twin of a plan, used only when beta != 0).
class Gemm {
 public:
  // Throws CublasLtError (library missing, no algorithm for the shape).
  explicit Gemm(const GemmShape& shape, const Gemm* share_workspace_with = nullptr);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;
  // Enqueues the GEMM on `stream` (16-byte aligned pointers are fastest; any 2-byte alignment
  // works). relu_mask: the bit-mask's address when the shape has relu_mask_ld (else unused).
  void run(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream,
           CUdeviceptr relu_mask = 0) const;
  const GemmShape& shape() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsegen::cublaslt
