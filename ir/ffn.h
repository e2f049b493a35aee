// The gated feed-forward block of an LLM as data: its weights, and the CPU reference that every
// FFN kernel is checked against (ir/problem.h's GatedFfn problem).
//
//   gated:      y = alpha · (ReLU(x·W_g) ⊙ (x·W_u)) · W_d + beta · y
//   non-gated:  y = alpha · ReLU(x·W_u) · W_d + beta · y
//
// x: M×K and y: M×K row-major (tokens × model width); W_g, W_u: K×N, W_d: N×K (hidden width N).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/problem.h"
#include "ir/sparse_matrix.h"
#include "sparsegen/ffn.h"

namespace sparsegen {

// FfnWeights (public: sparsegen/ffn.h): W_g, W_u K×N and W_d N×K, fp32, row-major.

// Throws UserError naming the tensor whose shape does not match the problem (K, N, gated).
void check_weights(const Problem& p, const FfnWeights& w);

// The reference of some rows of the FFN, in fp64 from the inputs as given (already rounded to the
// problem dtype), with the roundings the kernels make: the gate activation ReLU(x·W_g) rounded
// once to the dtype (the first kernel stores it so), everything else in exact arithmetic.
struct FfnReference {
  std::vector<int64_t> rows;  // which rows of y
  std::vector<double> y;      // rows.size() × K: alpha·FFN(x) + beta·y0
  // Per element: how far a correct kernel may be from y. fp32 accumulation of the three
  // products ((len + 4)·2⁻²³ of the absolute sums), one ulp of the dtype where the stored gate
  // activation may round either way (including gate values within the accumulation error of
  // zero, which may come out as 0 or positive), and the output's one rounding to the dtype; both
  // roundings also by a subnormal step (absolute) below the dtype's normal range.
  std::vector<double> bound;
  // The activation pattern of these rows (rows.size() × N): the gate activations kernel 1 keeps.
  CsrMatrix h;
};
// Precondition: x has p.m × p.k values, y0 p.m × p.k (read only when beta != 0).
FfnReference ffn_reference(const Problem& p, const FfnWeights& w, std::span<const float> x,
                           std::span<const float> y0, float alpha, float beta,
                           const std::vector<int64_t>& rows);

// Per-row nonzero counts of an activation matrix: mean, 99th percentile and maximum, the
// statistic a TwELL schedule is tuned for (not the pattern itself).
struct ActivationStats {
  int64_t rows = 0, cols = 0;
  double mean = 0;
  int64_t p50 = 0, p99 = 0, max = 0;
  // Largest count in any 64- and 128-column tile (the tile widths of tiled formats).
  int64_t max_tile64 = 0, max_tile128 = 0;
};
ActivationStats activation_stats(const CsrMatrix& h);
// "mean 30.1, p99 112, max 402 of 5632 per row".
std::string to_string(const ActivationStats& s);
// The statistics bucket an FFN tuning is keyed by (not the pattern itself): the mean of nonzeros
// per row in half octaves and their 99th percentile in octaves, "mean 2^4.5 p99 2^7" (log2 of
// the count + 1, rounded): activations of one distribution share a tuning.
std::string activation_bucket(const ActivationStats& s);

// The activations ReLU(x·W_g) (gated) or ReLU(x·W_u) of all rows as a sparse M×N matrix, their
// values rounded to the dtype: what a TwELL schedule stores, for statistics and tuning.
CsrMatrix ffn_activations(const Problem& p, const FfnWeights& w, std::span<const float> x);

// "" when every element of `got` (M×K, the rows of ref) is within its bound, else a message
// naming the first element out of it, its value, the reference and the bound.
std::string ffn_violation(const FfnReference& ref, std::span<const float> got, int64_t k);

}  // namespace sparsegen
