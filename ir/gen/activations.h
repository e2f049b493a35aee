// A synthetic gated FFN whose gate activations have a chosen sparsity: the tokens x and the
// weights W_g, W_u, W_d (ir/ffn.h) such that ReLU(x·W_g) has about `mean_nnz` nonzeros per row
// of N, heavy-tailed across rows (log-normal counts: the densest rows hold over 10× the mean
// for M >= 128) and denser first tokens, as the activations of ReLU-gated LLMs measured by
// TwELL are.
//
// How: column 0 of x carries a per-token offset b_m and row 0 of W_g is −1, the other weights
// are N(0, 1/K) and x is N(0, 1), so a gate value is z − b_m with z about N(0, 1) and each token's
// density is 1 − Φ(b_m): b_m = Φ⁻¹(1 − d_m / N) gives it d_m nonzeros on average. Every value is
// a non-integer rounded to the dtype; everything follows from the seed.
//
//   FfnCase c = make_ffn_case({.m = 128, .k = 512, .n = 1408, .mean_nnz = 30});
#pragma once

#include <cstdint>
#include <vector>

#include "ir/dtype.h"
#include "ir/ffn.h"
#include "ir/problem.h"

namespace sparsegen {

struct ActivationSpec {
  int64_t m = 128, k = 512, n = 1408;
  DType dtype = DType::BF16;
  bool gated = true;
  double mean_nnz = 30;     // nonzeros per row of N (on average over rows)
  double spread = 1.2;      // sigma of the log-normal per-row counts (0: every row the same)
  int64_t dense_first = 1;  // this many first tokens get 10× the mean (at most N)
  uint64_t seed = 1;
};

// Throws UserError naming the field of a bad spec (sizes, mean_nnz outside (0, n]).
void validate(const ActivationSpec& spec);

struct FfnCase {
  Problem problem;
  FfnWeights weights;
  std::vector<float> x;  // M×K row-major, dtype-rounded
};
FfnCase make_ffn_case(const ActivationSpec& spec);

// Only the weights (no tokens) for K, N: what `--gen` gives a run that brings its own x.
// Tokens for given weights with per-token densities as in the spec.
std::vector<float> make_ffn_tokens(const ActivationSpec& spec);

}  // namespace sparsegen
