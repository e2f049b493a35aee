// cuSPARSELt (2:4 structured sparse GEMM on sparse tensor cores), loaded at run time.
//
// The library is opened with dlopen on first use and never linked, so sparsegen builds without
// its header and runs where it is missing (available() then says why). Search order:
//   1. $SPARSEGEN_CUSPARSELT, a file path; when set, nothing else is tried;
//   2. "libcusparseLt.so.0" through the dynamic loader (LD_LIBRARY_PATH, ldconfig);
//   3. the pip wheel (nvidia-cusparselt-cu13 / -cu12): nvidia/cu13/lib/ and nvidia/cusparselt/lib/
//      under the Python site directories (/usr/local/lib/python3*/dist-packages,
//      /usr/lib/python3/dist-packages, ~/.local/lib/python3*/site-packages,
//      /usr/local/lib/python3*/site-packages, $VIRTUAL_ENV/lib/python3*/site-packages).
// cuSPARSELt 0.6 or newer is required (the enum values used here are those of 0.6+).
//
// Convention (an LLM linear layer): C (M x N) = alpha * A (M x K) * B (K x N) + beta * C, where
//   A, the weight, is row-major M x K and 2:4 structured along K;
//   B, the activations, is stored column-major: N x K row-major, each token's K values contiguous;
//   C is column-major M x N: each token's M outputs contiguous.
// Device pointers must be 16-byte aligned. fp16/bf16 accumulate in fp32 and write the same type;
// int8 accumulates in int32 and e4m3 in fp32, both writing fp16 or bf16 scaled by a float alpha.
// M and K must be multiples of 32 for 8-bit inputs and 16 for 16-bit ones (the structured
// matrix's rule); any N >= 1 works: when the library refuses the exact N, the GEMM runs on
// internal buffers padded to a multiple of 32 tokens (padded_n() says so) at the cost of a copy of
// B (and C when beta != 0) in and of C out.
//
// The objects need the CUDA context they were made under to be current (runtime/cuda_driver.h).
#pragma once

#include <cuda.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sparsegen::cusparselt {

// A failed cuSPARSELt call (or a failed load / bad argument, then status() is -1). what() names
// the call and the status ("cusparseLtMatmulPlanInit failed: CUSPARSE_STATUS_NOT_SUPPORTED (...)").
class CusparseLtError : public std::runtime_error {
 public:
  CusparseLtError(const std::string& message, std::string call, int status)
      : std::runtime_error(message), call_(std::move(call)), status_(status) {}
  const std::string& call() const { return call_; }
  int status() const { return status_; }

 private:
  std::string call_;
  int status_;
};

// True when a cuSPARSELt 0.6+ library loads and every entry point used here resolves; otherwise
// false, with each path tried and why it failed in *why. The result is cached per value of
// $SPARSEGEN_CUSPARSELT (a test may change it); a loaded library stays loaded. Never throws.
bool available(std::string* why = nullptr);

// "cuSPARSELt 0.10.0 (/path/to/libcusparseLt.so.0)". Throws CusparseLtError when unavailable.
std::string version();

// I32 and F32 are outputs only: the raw accumulators of int8 and e4m3 inputs.
enum class Type { F16, BF16, I8, E4M3, I32, F32 };
std::string_view to_string(Type t);  // "fp16", "bf16", "int8", "fp8_e4m3", "int32", "fp32"
int type_bytes(Type t);
// The CUDA library data type of `t` (CUDA_R_16F, CUDA_R_16BF, CUDA_R_8I, CUDA_R_8F_E4M3), for
// cuSPARSELt and cuBLASLt descriptors.
cudaDataType cuda_data_type(Type t);

// The GEMM's sizes and types. `out` is F16 or BF16 (for F16/BF16 inputs it must equal `in`), or
// the raw accumulator of an 8-bit input: I32 for I8, F32 for E4M3 (alpha then scales it in fp32).
struct Shape {
  int64_t m = 0, k = 0, n = 0;
  Type in = Type::F16;
  Type out = Type::F16;
};

// Required multiple of M and K for an input type (32 for 8-bit, 16 for 16-bit).
int64_t mk_multiple(Type in);

// An algorithm choice: the cuSPARSELt algorithm (kernel configuration) id and split-K settings.
// Stored with a kernel database entry as to_string(), e.g. "alg=3,split_k=2,mode=1,buffers=1".
struct Choice {
  int alg_id = 0;
  int split_k = 1;
  int split_k_mode = 0;  // 0: library default; 1: one kernel; 2: two kernels
  int split_k_buffers = 1;

  std::string to_string() const;
  // Inverse of to_string (fields in any order, all four required, no spaces, integers in range).
  // Throws std::invalid_argument naming the bad part.
  static Choice parse(std::string_view text);
  bool operator==(const Choice&) const = default;
};

// Every candidate costs a plan of its own (about 0.3 s of host time with cuSPARSELt 0.8 on an
// H100, whatever the shape: a 52-id search takes ~20 s) and a compression of the weight;
// cusparseLtMatmulSearch tries every id itself inside one plan, so max_alg_ids = 1 with
// library_search is the cheap search.
struct SearchOptions {
  int max_alg_ids = 64;        // algorithm ids tried: 0 .. min(max id, this) - 1
  bool library_search = true;  // also time cusparseLtMatmulSearch's own pick
  bool try_split_k = true;     // then split-K 2/4/8 (both modes) on the best id so far
  int warmup = 1;              // untimed runs per candidate
  int repetitions = 5;         // timed runs per candidate (median kept), L2 flushed
};

// One 2:4 sparse weight, compressed on the device, with a matmul plan for a fixed Shape.
class SparseGemm {
 public:
  // Checks that A (a_dev: M x K row-major in shape.in, on the device) is 2:4 along K
  // (cusparseLtSpMMAPruneCheck2; nothing is pruned: a violation throws), keeps a private copy
  // of it (M x K elements of device memory for the object's lifetime) and compresses that for
  // every plan (the compressed layout belongs to the algorithm); a_dev is not needed
  // afterwards. The plan starts with Choice{} (the
  // library default algorithm). Throws CusparseLtError (library unavailable, unsupported shape or
  // type, not 2:4) or CudaError.
  SparseGemm(CUdeviceptr a_dev, const Shape& shape, CUstream stream);
  ~SparseGemm();
  SparseGemm(const SparseGemm&) = delete;
  SparseGemm& operator=(const SparseGemm&) = delete;

  // Times each candidate (every algorithm id with split-K 1, the library's own search's pick,
  // then split-K variants of the best so far) on b and c (c is overwritten), keeps the fastest
  // and returns it.
  // Done once per weight and N; store the Choice and use set_choice() next time.
  Choice search(CUdeviceptr b, CUdeviceptr c, CUstream stream, const SearchOptions& options = {});
  // Re-creates the plan for `choice` without searching. Throws CusparseLtError when the library
  // rejects it (e.g. an id beyond this shape's maximum).
  void set_choice(const Choice& choice);
  const Choice& choice() const;

  // C = alpha * A * B + beta * C on `stream` (asynchronous; no planning, workspace owned here).
  void run(CUdeviceptr b, CUdeviceptr c, float alpha, float beta, CUstream stream) const;

  const Shape& shape() const;
  size_t compressed_bytes() const;
  size_t workspace_bytes() const;
  // The N the library runs (shape().n, or the padded width; see the file comment).
  int64_t padded_n() const;
  // Number of algorithm ids the library offers for this shape
  // (CUSPARSELT_MATMUL_ALG_CONFIG_MAX_ID).
  int max_alg_id() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparsegen::cusparselt
