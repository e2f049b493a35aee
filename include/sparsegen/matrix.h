// Public matrix types of sparsegen: the canonical CSR matrix every reader produces, and the one
// entry point for reading a matrix file (see ir/io/load.h for the formats it dispatches to:
// .mtx Matrix Market, .smtx DLMC pattern CSR, .safetensors, .npy dense weights).
// Self-contained: part of the installed API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sparsegen/errors.h"

namespace sparsegen {

// What the values of a matrix are, as its source declared them.
enum class ValueField { Real, Integer, Complex, Pattern };
std::string_view to_string(ValueField f);

// Indices are 32-bit (the kernels index with int32); row offsets are 64-bit so nnz >= 2^31 works.
inline constexpr int64_t kMaxDimension = 2147483647;  // 2^31 - 1

struct CsrMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int64_t> row_ptr{0};  // rows + 1 entries, row_ptr[0] == 0
  std::vector<int32_t> col_idx;     // nnz, strictly increasing within a row
  std::vector<float> values;        // nnz, fp32 master copy
  std::vector<float> imag;          // nnz for Complex matrices, empty otherwise
  ValueField field = ValueField::Real;
  // True when the source held only the pattern and `values` were synthesized (from
  // LoadOptions::pattern_seed).
  bool pattern_only = false;
  std::string source;  // file it came from (for messages)

  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }
  int64_t row_length(int64_t r) const { return row_ptr[r + 1] - row_ptr[r]; }
  // Checks every CSR invariant; throws UserError naming the source when one is broken (used by
  // readers of pre-built CSR files, and by tests).
  void check_canonical() const;
};

enum class DuplicatePolicy {
  Sum,    // duplicates are summed and reported as a warning (the default)
  Error,  // --strict: the first duplicate is a UserError
};

// Values of pattern-only inputs (.smtx, Matrix Market "pattern") come from a documented seeded
// distribution: uniform in [-1, -0.5) U [0.5, 1), a SplitMix64 stream over entry order.
inline constexpr uint64_t kDefaultPatternSeed = 0x5eed5eedULL;

struct LoadOptions {
  DuplicatePolicy duplicates = DuplicatePolicy::Sum;  // --strict sets Error
  std::string tensor;                                 // safetensors tensor name ("" = the only one)
  uint64_t pattern_seed = kDefaultPatternSeed;        // values for pattern-only inputs
};

struct LoadedMatrix {
  CsrMatrix matrix;
  Diagnostics diag;
  std::string format;  // "matrix-market", "smtx", "safetensors-dense", "npy", "sparsegen-csr"
};

// Throws UserError (naming the file and line/byte) on anything malformed.
LoadedMatrix load_matrix(const std::string& path, const LoadOptions& opts = {});

}  // namespace sparsegen
