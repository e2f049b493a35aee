// dense schedule family: the sparse weight multiplied as a dense matrix by the BLAS library, the
// library candidate the tuner measures next to the generated sparse kernels (and returns where
// sparsity does not pay, saying so). Its IrFamily is in ir/dense_family.cpp.
//
//   dense;lib=cublaslt
//     lib  the BLAS library (cuBLASLt, loaded at run time)
//
// fp16 / bf16, one step per run: C = alpha · A · B + beta · C by the library's GEMM, A stored
// densely (M x K row-major in the dtype), fp32 accumulation; B and C row/row, col/row or col/col
// (C column-major is computed as C^T = B^T · A^T, which needs B column-major too).
//
// int8 and fp8 e4m3 (the quantized problem of ir/quantize.h: weights per row, tokens per
// column), three steps, the dense yardstick of the quantized sparse families:
//   1. B quantized per token into an 8-bit K' x N copy (column-major, K' = dense_k(p): K rounded
//      up to 64, zero rows below K) and the token scales;
//   2. acc (M x N column-major) = A_q · B_q by the library's 8-bit GEMM: int8 into int32, exact;
//      e4m3 into fp32 with fp32 accumulation;
//   3. C = alpha · acc · (row scale · token scale) + beta · C, one rounding.
// A_q is stored M x K' row-major. C column-major; the library's 8-bit GEMMs need M % 4 == 0, and
// e4m3 needs sm_89 or newer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device_limits.h"
#include "ir/problem.h"
#include "ir/schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct DenseSchedule {
  static constexpr std::string_view kFamily = "dense";
  bool operator==(const DenseSchedule&) const = default;
};

// Reasons the library cannot run the problem (op, dtype, layouts, empty sizes); empty = it can.
std::vector<std::string> validate_dense(const Problem& p);
// The K the library multiplies over: K for 16-bit types, K rounded up to 64 for int8 and fp8 (the
// quantization kernel writes whole 64-row chunks; the rows past K are zeros in A_q and B_q).
int64_t dense_k(const Problem& p);
std::string dense_spec(const DenseSchedule& s);
std::string print_dense(const DenseSchedule& s);
DenseSchedule parse_dense_fields(std::string_view spec, const std::vector<std::string_view>& parts);

// The largest dense copy of A the candidate makes (host and device), in bytes.
inline constexpr int64_t kMaxDenseBytes = int64_t{2} << 30;

// The dense copy of A (M x K, at most kMaxDenseBytes), the 32-bit sizes the library takes and the
// block size its kernels need.
std::vector<std::string> verify_dense(const Problem& p, const DeviceLimits& dev);
// The one schedule when the problem fits, else none.
std::vector<Schedule> enumerate_dense_schedules(const Problem& p, const DeviceLimits& dev);

}  // namespace sparsegen
