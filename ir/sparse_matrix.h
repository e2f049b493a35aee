// The canonical in-memory sparse matrix: CSR with sorted, unique column indices per row and fp32
// master values. Every reader produces one through `canonicalize`; every later stage consumes it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

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
  // True when the source held only the pattern and `values` were synthesized (see
  // synthesize_pattern_values).
  bool pattern_only = false;
  std::string source;  // file it came from (for messages)

  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }
  int64_t row_length(int64_t r) const { return row_ptr[r + 1] - row_ptr[r]; }
  // Checks every CSR invariant; throws UserError naming the source when one is broken (used by
  // readers of pre-built CSR files, and by tests).
  void check_canonical() const;
};

// Coordinate entries as a reader collects them, before canonicalization.
struct Triplets {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int32_t> row;
  std::vector<int32_t> col;
  std::vector<float> val;
  std::vector<float> imag;  // same length as val for complex input, else empty
  void reserve(size_t n, bool complex);
  size_t size() const { return row.size(); }
};

enum class DuplicatePolicy {
  Sum,    // duplicates are summed and reported as a warning (the default)
  Error,  // --strict: the first duplicate is a UserError
};

// Maps the position of an entry in Triplets to where the user wrote it (file:line).
using EntryLocator = std::function<SourceLoc(size_t position)>;

// Sorts by (row, col), merges duplicates per `policy` (reporting count and first location), and
// keeps explicit zeros. O(nnz) counting sort by row plus a per-row sort by column.
CsrMatrix canonicalize(Triplets&& t, ValueField field, DuplicatePolicy policy,
                       const EntryLocator& locate, Diagnostics& diag);

// Fills `values` for a pattern matrix from a documented seeded distribution: uniform in
// [-1, -0.5) U [0.5, 1) (non-zero, non-integer, sign-balanced), drawn by a SplitMix64 stream over
// entry order from `seed`. Sets pattern_only and reports a PatternValues note.
inline constexpr uint64_t kDefaultPatternSeed = 0x5eed5eedULL;
void synthesize_pattern_values(CsrMatrix& m, uint64_t seed, Diagnostics& diag);

// Converts a parsed double to the fp32 master copy, reporting NaN/Inf and values beyond the fp32
// range at `loc` (never silently inf: the report names the location).
float to_master_value(double v, const SourceLoc& loc, Diagnostics& diag);

}  // namespace sparsegen
