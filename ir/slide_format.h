// SlideSparse format: a (2N−2):2N sparse weight as exact 2:4 sparsity over "lifted" columns, so
// that 2:4 sparse tensor cores can run weights pruned more mildly than 2:4 (6:8 keeps 75 % of the
// weights).
//
// Groups. Row r's columns are cut into aligned groups of 2N (K is padded with zero columns to
// Kp = ceil(K / 2N)·2N; the padding holds no nonzeros and lifts to zeros). A matrix is (2N−2):2N
// when every group of every row holds at most 2N − 2 nonzeros.
//
// Sliding windows (Φ). Group g has N − 1 overlapping windows of width 4 at stride 2: window w
// covers the group's local columns 2w … 2w + 3. Every nonzero is assigned to exactly one window
// holding at most 2: nonzeros are taken in column order, each into the first window that covers
// it and has room. (That never fails for a (2N−2):2N group: the columns 2a … 2b + 1 are covered
// by windows a − 1 … b, which hold 2(b − a + 2) ≥ 2(b − a + 1) nonzeros, and first-fit in column
// order is optimal for such interval constraints.) Window w of group g becomes lifted columns
//   g·4(N−1) + 4w + p,  p = 0 … 3  (original local column 2w + p),
// so a row has K' = (Kp / 2N)·4(N−1) = γ·Kp lifted columns, γ = 2 − 2/N (1.5 at 6:8), and each
// aligned group of 4 lifted columns (one window) holds at most 2 nonzeros: exactly 2:4.
//
// Activation lifting (Ψ). x' = Ψ(x) copies x[g·2N + 2w + p] into x'[g·4(N−1) + 4w + p] (zero for
// padded columns), so W'·Ψ(x) = W·x exactly: every nonzero meets the same x element it met before.
//
// 2:4 compression (canonical order). Per row, per window: 2 values (the window's nonzeros in
// column order; a window with fewer is filled with zero values at the lowest unused positions)
// and their positions p0 < p1 in 0…3 as a 4-bit code p0 | p1 << 2; the codes of 8 consecutive
// windows fill one 32-bit word, the first window in the lowest bits. The tensor-core instruction's
// own fragment order (mma.sp / wgmma.sp metadata) is a permutation of these words that the
// kernel's packer applies; cuSPARSELt compresses the lifted dense matrix itself.
//
//   SlidePattern pat = detect_slide_pattern(a);            // smallest N that fits, or none
//   SlideFormat f = pack_slide(a, pat.n);                  // throws naming the first bad group
//   std::vector<double> xl = lift_activations(f, x);       // Ψ
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/sparse_matrix.h"

namespace sparsegen {

inline constexpr int kSlideMinN = 2;  // 2:4 itself
inline constexpr int kSlideMaxN = 8;  // 14:16

// Where a matrix breaks (2N−2):2N: the first row (0-based) and group with more than 2N − 2
// nonzeros, and how many it holds.
struct SlideViolation {
  int64_t row = -1;
  int64_t group = -1;  // group index within the row (columns group·2N … group·2N + 2N − 1)
  int64_t count = 0;
};

// The first violation of (2N−2):2N, or nullopt when every group fits. O(nnz).
std::optional<SlideViolation> slide_violation(const CsrMatrix& a, int n);

struct SlidePattern {
  int n = 0;  // 0: none of N = 2 … 8 fits
  double gamma() const { return n == 0 ? 0.0 : 2.0 - 2.0 / n; }
  // "6:8", or "none".
  std::string name() const;
};

// The smallest N in 2 … 8 with which every group fits (the smallest γ, the largest speedup over
// dense, N / (N − 1)). A matrix with no nonzeros is 2:4.
SlidePattern detect_slide_pattern(const CsrMatrix& a);

struct SlideFormat {
  int n = 0;                // (2N−2):2N
  int64_t rows = 0;         // M
  int64_t cols = 0;         // K (original)
  int64_t padded_cols = 0;  // Kp, a multiple of 2N
  int64_t lifted_cols = 0;  // K' = (Kp / 2N)·4(N−1)
  int64_t nnz = 0;          // real nonzeros
  // Compressed 2:4 values: rows × (K' / 2), row-major; fp32 master (zero fill where a window has
  // fewer than 2 nonzeros).
  std::vector<float> values;
  // 4-bit position codes, 8 windows per word: rows × ceil((K' / 4) / 8) words, row-major.
  std::vector<uint32_t> meta;

  int64_t windows_per_row() const { return lifted_cols / 4; }
  int64_t meta_words_per_row() const { return (windows_per_row() + 7) / 8; }
  // Bytes a kernel reads for A with `value_bytes`-byte values: values + metadata.
  int64_t bytes(int value_bytes) const;
};

// Φ and the 2:4 compression. Throws UserError when n is outside 2 … 8, the CSR is not canonical
// (sorted, no duplicates), or a group holds more than 2N − 2 nonzeros (naming the row, group and
// count, 1-based as in the file).
SlideFormat pack_slide(const CsrMatrix& a, int n);

// The lifted dense row-major matrix W' (M × K') from the compressed format: what a kernel
// multiplies, for tests and the interpreter.
std::vector<float> unpack_slide_lifted(const SlideFormat& f);

// Ψ for one activation vector (K values) or a K × N row-major block: K' (× N) values.
std::vector<double> lift_activations(const SlideFormat& f, std::span<const double> x,
                                     int64_t columns = 1);

// The lifted column of original column c (0 … K−1) in window w of its group (w must cover it).
int64_t slide_lifted_column(int n, int64_t c, int w);

}  // namespace sparsegen
