// Problem: what a kernel computes, independent of how (that is the Schedule's job).
//
//   C[M×N] = alpha · A[M×K] · B[K×N] + beta · C
//
// A is sparse (CSR-derived formats), B and C are dense, each row- or column-major. All of A, B and
// C hold `dtype` values (fp32, fp16 or bf16); products are accumulated in fp32 and the result is
// rounded once to `dtype` when stored. alpha and beta are launch-time scalars (one kernel serves
// every alpha/beta). BLAS convention: when beta == 0 exactly, C is write-only (its old contents,
// NaN included, are never read).
//
// Example: a pruned 4096×11008 layer times 32 tokens in bf16:
//   Problem p = Problem::spmm(4096, 11008, 32, DType::BF16);   // B, C row-major
//   to_string(p) == "spmm m=4096 k=11008 n=32 dtype=bf16 b=row c=row"
// SpMV is the N = 1 case with its own op tag (so a cache key and the enumerator can tell them
// apart); Problem::spmv(M, K, dtype).
//
// Quantized value types (int8, fp8 e4m3): A is stored as `dtype` values with one fp32 scale per
// row; the caller's B and C hold `io_dtype` values (fp16 or bf16), and the kernel quantizes B to
// `dtype` with one fp32 scale per column (per token) before the product:
//   C = alpha · diag(ws) · Aq · Bq · diag(as) + beta · C,   Bq·diag(as) ≈ B
// with integer (int8) or fp32 (fp8) accumulation of Aq·Bq. Problem::quantized_spmm builds one.
// For floating types B and C hold dtype values and there are no scales.
//
// Gated FFN (TwELL): the sparsity appears at run time, there is no static A. With x the M×K
// tokens (model width K) and weights W_g, W_u: K×N, W_d: N×K (hidden width N),
//   gated:      y = (ReLU(x·W_g) ⊙ (x·W_u)) · W_d        non-gated: y = ReLU(x·W_u) · W_d
// in `dtype` (fp16/bf16) with fp32 accumulation; Problem::gated_ffn(M, K, N, dtype, gated).
//
// Degenerate problems (M, K, N or nnz = 0) are valid: the result is C = beta·C (M×N), and callers
// must not launch an empty grid.
// Self-contained: part of the installed API (the internal ir/problem.h adds parse_shape).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sparsegen/dtype.h"

namespace sparsegen {

enum class Op { SpMM, SpMV, GatedFfn };
// "spmm", "spmv", "gated_ffn".
std::string_view to_string(Op op);
std::optional<Op> parse_op(std::string_view name);

// Storage order of a dense operand. Row-major X[r][c] is at r*cols + c; column-major at
// c*rows + r (leading dimension = the dense extent; no padding between rows/columns).
enum class Layout { RowMajor, ColMajor };
// "row", "col".
std::string_view to_string(Layout l);
std::optional<Layout> parse_layout(std::string_view name);

// Scales of a quantized problem (see the top comment).
enum class Scales { None, RowAndToken };
// "none", "row_token".
std::string_view to_string(Scales s);

struct Problem {
  Op op = Op::SpMM;
  int64_t m = 0;  // rows of A and C
  int64_t k = 0;  // columns of A, rows of B
  int64_t n = 0;  // columns of B and C (1 for SpMV)
  DType dtype = DType::F32;
  Layout b_layout = Layout::RowMajor;
  Layout c_layout = Layout::RowMajor;
  // The type of the caller's B and C for a quantized dtype (fp16 or bf16); ignored otherwise.
  DType io_dtype = DType::F16;
  Scales scales = Scales::None;  // RowAndToken exactly when dtype is quantized
  bool gated = true;             // GatedFfn: gated (W_g ⊙ W_u) or plain ReLU(x·W_u)

  // Validating constructors: throw UserError naming the bad field (negative sizes, sizes above
  // kMaxDimension, SpMV with n != 1).
  static Problem spmm(int64_t m, int64_t k, int64_t n, DType dtype,
                      Layout b = Layout::RowMajor, Layout c = Layout::RowMajor);
  static Problem spmv(int64_t m, int64_t k, DType dtype);
  // int8 / fp8 e4m3 A (per-row scales) times B quantized per token; B and C in `io` (fp16/bf16).
  static Problem quantized_spmm(int64_t m, int64_t k, int64_t n, DType dtype, DType out,
                                Layout b = Layout::RowMajor, Layout c = Layout::RowMajor);
  // M tokens, model width K, hidden width N (see the top comment); x, y row-major.
  static Problem gated_ffn(int64_t m, int64_t k, int64_t n, DType dtype, bool gated = true);

  // Index of element (r, c) of B (K×N) / C (M×N) in its flat storage.
  int64_t b_index(int64_t r, int64_t c) const {
    return b_layout == Layout::RowMajor ? r * n + c : c * k + r;
  }
  int64_t c_index(int64_t r, int64_t c) const {
    return c_layout == Layout::RowMajor ? r * n + c : c * m + r;
  }
  bool degenerate() const { return m == 0 || k == 0 || n == 0; }
  // The types of the caller's B and C.
  DType b_dtype() const { return is_quantized(dtype) ? io_dtype : dtype; }
  DType c_dtype() const { return b_dtype(); }
  // A static sparse weight times a dense operand (SpMM or SpMV), as opposed to a gated FFN.
  bool sparse_weight() const { return op == Op::SpMM || op == Op::SpMV; }

  bool operator==(const Problem&) const = default;
};

// One line, stable (used in cache keys and logs): "spmm m=4 k=5 n=8 dtype=fp16 b=row c=col";
// quantized problems add " io=fp16 scales=row_token", gated FFNs " gated=1".
std::string to_string(const Problem& p);

// Checks the problem itself; empty when valid.
std::string validate(const Problem& p);

}  // namespace sparsegen
