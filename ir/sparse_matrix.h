// The canonical in-memory sparse matrix (CsrMatrix, public: sparsegen/matrix.h) and how readers
// build one: every reader produces it through `canonicalize`; every later stage consumes it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "sparsegen/matrix.h"

namespace sparsegen {

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

// Maps the position of an entry in Triplets to where the user wrote it (file:line).
using EntryLocator = std::function<SourceLoc(size_t position)>;

// Sorts by (row, col), merges duplicates per `policy` (reporting count and first location), and
// keeps explicit zeros. O(nnz) counting sort by row plus a per-row sort by column.
CsrMatrix canonicalize(Triplets&& t, ValueField field, DuplicatePolicy policy,
                       const EntryLocator& locate, Diagnostics& diag);

// Fills `values` for a pattern matrix from a documented seeded distribution: uniform in
// [-1, -0.5) U [0.5, 1) (non-zero, non-integer, sign-balanced), drawn by a SplitMix64 stream over
// entry order from `seed`. Sets pattern_only and reports a PatternValues note.
void synthesize_pattern_values(CsrMatrix& m, uint64_t seed, Diagnostics& diag);

// Converts a parsed double to the fp32 master copy, reporting NaN/Inf and values beyond the fp32
// range at `loc` (never silently inf: the report names the location).
float to_master_value(double v, const SourceLoc& loc, Diagnostics& diag);

}  // namespace sparsegen
