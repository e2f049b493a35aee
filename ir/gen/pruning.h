// Synthetic LLM-like weights and the pruning methods that turn a dense weight into a sparse
// matrix. Everything is reproducible from a seed: the random streams are our own (SplitMix64 /
// xoshiro256** and Box-Muller), not <random> distributions, whose output differs between standard
// libraries.
//
// The same `prune` serves `sparsegen gen` (on make_llm_weight) and `sparsegen prune` (on a dense
// weight read from .safetensors / .npy).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/dense_matrix.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// Pruning methods. One name table (to_string / parse_prune_method) for the CLI and JSON.
enum class PruneMethod {
  Random,        // "random": a uniformly random subset of exactly round((1-s)*rows*cols) positions
  Magnitude,     // "magnitude": the round((1-s)*rows*cols) largest |w| of the whole tensor
  RowMagnitude,  // "row-magnitude": the round((1-s)*cols) largest |w| of every row (Wanda-like)
  NM,            // "nm": the n largest |w| of every aligned group of m columns in each row
  Block,         // "block": the aligned BxB blocks with the largest mean |w|^2
};
std::string_view to_string(PruneMethod m);
// nullopt for unknown names (the caller names the flag in its error).
std::optional<PruneMethod> parse_prune_method(std::string_view name);
// "random, magnitude, row-magnitude, nm, block": for error messages and --help.
std::string prune_method_names();

struct PruneSpec {
  PruneMethod method = PruneMethod::Magnitude;
  double sparsity = 0.5;  // fraction removed, in [0, 1); ignored by NM (its sparsity is 1 - n/m)
  int n = 2;              // NM: kept per group
  int m = 4;              // NM: group width
  int block = 4;          // Block: block edge B
  uint64_t seed = 0;      // Random: the selection stream
};

// Parses "n:m" (e.g. "2:4", "6:8", "14:16"); `flag` names the option in the error message.
// Requires 0 < n <= m <= 65536.
std::pair<int, int> parse_nm(std::string_view text, std::string_view flag = "--nm");

// Throws UserError naming the flag (--sparsity, --nm, --block) when the spec is invalid.
void validate(const PruneSpec& spec);

// Number of entries `prune` keeps for a rows x cols weight (exact for every method).
int64_t pruned_nnz(int64_t rows, int64_t cols, const PruneSpec& spec);

// A rows x cols weight shaped like an LLM linear layer: w[r][c] = g * a[r] * b[c] with g standard
// normal and row / column scales a, b log-normal (see the .cpp for the sigmas and why), so that a
// per-tensor magnitude threshold leaves rows with different densities, as in real checkpoints.
// Rows are generated from per-row streams, so the result depends only on (rows, cols, seed).
// Throws UserError for a shape outside [1, 2^31-1] or above kMaxGeneratedElements.
inline constexpr int64_t kMaxGeneratedElements = int64_t{1} << 32;  // 16 GiB of fp32
DenseMatrix make_llm_weight(int64_t rows, int64_t cols, uint64_t seed);

// Prunes a dense weight to a canonical CSR matrix (field Real, source copied from `w`).
//
// - Which positions are kept depends only on the ranking of |w| (and on `seed` for Random); ties
//   are broken by the lower row-major position, so results are deterministic.
// - Exact zeros: a kept position whose weight is exactly 0 stays an explicit entry. Zeros rank
//   lowest, so this only happens when the weight is already sparser than the target; keeping them
//   makes nnz exactly pruned_nnz() and keeps the structure (equal per-row counts, n per group) the
//   method promises. Callers can count them (count_explicit_zeros) and say so.
// - NaN weights have no magnitude order: a NaN anywhere is a UserError naming its (row, col).
//   +-Inf ranks as the largest magnitude.
// - A trailing partial group (cols % m != 0) keeps min(n, width) entries; partial edge blocks are
//   ranked by mean |w|^2 like full ones.
CsrMatrix prune(const DenseMatrix& w, const PruneSpec& spec);

// Number of stored entries whose value is exactly zero.
int64_t count_explicit_zeros(const CsrMatrix& m);

}  // namespace sparsegen
