// Matrix Market (.mtx) reader and writer.
//
// Reading accepts everything the NIST format defines for matrices, plus the tolerances real files
// need (shared/data/README.md):
//   - objects `matrix`; formats `coordinate`, `array`; fields `real`, `integer`, `complex`,
//     `pattern`; symmetries `general`, `symmetric`, `skew-symmetric`, `hermitian`. Banner words in
//     any case; a leading space or a single `%` before `MatrixMarket` is tolerated.
//   - comment lines (`%...`, including `%%GraphBLAS ...`) and blank lines anywhere after the
//     banner, indentation, CRLF line endings, a missing final newline.
//   - symmetric / hermitian / skew-symmetric files are expanded to general: an off-diagonal entry
//     (i,j) also produces (j,i) with the same value, its conjugate (hermitian) or its negation
//     (skew-symmetric), whichever triangle the file lists it in. `real`/`integer`/`pattern`
//     hermitian is read as symmetric.
//   - array storage is column-major; array symmetric/hermitian files hold the lower triangle with
//     the diagonal, array skew-symmetric files the strictly lower triangle. An array file is
//     dense: every position becomes an entry (zeros included; the implied zero diagonal of an array
//     skew-symmetric matrix too), so it equals its `general` expansion entry for entry.
//   - explicit zeros are entries and are kept; nnz = 0 and zero dimensions are valid.
//   - duplicates (same (row, col) after expansion) are summed and reported with the file:line of
//     the first one, or rejected under DuplicatePolicy::Error (--strict).
//   - values become fp32 (to_master_value): NaN/Inf are reported, values beyond fp32 are reported;
//     integers that fp32 cannot hold exactly are counted (WarningKind::PrecisionLoss).
//   - pattern files get synthesized values (synthesize_pattern_values; pattern_only = true).
//
// Strict policy (rejected with "FILE:LINE: expected X, found Y"): a missing or malformed banner
// (including a banner after blank lines), unknown words, `array pattern`, `pattern
// skew-symmetric`, vectors, a missing/short/long size line, negative sizes, sizes beyond int64 or
// beyond kMaxDimension (2^31-1, "not supported"), non-square symmetric files, fewer or more
// entries than declared, indices outside [1, dimension], unparsable or missing numbers, values
// that overflow int64 (integer field) or double (real/complex), `inf`/`nan` in an integer field,
// a diagonal entry in a skew-symmetric file, and extra tokens on a data line (such as a value
// column in a pattern file: lenient readers silently drop it; we do not guess).
//
// Memory: nothing is sized from the header's entry count beyond what the file's byte size can
// hold, so a lying header cannot trigger a huge allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/diagnostics.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

struct MatrixMarketOptions {
  DuplicatePolicy duplicates = DuplicatePolicy::Sum;
  uint64_t pattern_seed = kDefaultPatternSeed;
  // Largest row count accepted. CSR row offsets cost 8 bytes per row whatever the entry count, so
  // the fuzz targets lower this to keep allocations small; users keep kMaxDimension.
  int64_t max_rows = kMaxDimension;
  // Worker threads for parsing coordinate data (0 = hardware concurrency, capped at 8). Large
  // files are split at line boundaries; results are identical for any thread count.
  int threads = 0;
};

enum class MmFormat { Coordinate, Array };
enum class MmSymmetry { General, Symmetric, SkewSymmetric, Hermitian };

// What the file declared and what the reader found; lets callers (and the data-contract test)
// relate the file's entry count to the CSR's:
//   csr.nnz() == stored_entries + mirrored_entries + implied_entries - duplicates_merged
struct MatrixMarketInfo {
  MmFormat format = MmFormat::Coordinate;
  ValueField field = ValueField::Real;
  MmSymmetry symmetry = MmSymmetry::General;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stored_entries = 0;     // entries (coordinate) or values (array) in the file
  int64_t mirrored_entries = 0;   // off-diagonal entries added by symmetry expansion
  int64_t implied_entries = 0;    // zero diagonal of an array skew-symmetric matrix
  int64_t duplicates_merged = 0;  // entries summed into an earlier one
};

// Reads a Matrix Market file. Throws UserError naming the file and line on any defect listed
// above; warnings go to `diag`.
CsrMatrix read_matrix_market(const std::string& path, DuplicatePolicy duplicates,
                             Diagnostics& diag);
CsrMatrix read_matrix_market(const std::string& path, const MatrixMarketOptions& options,
                             Diagnostics& diag, MatrixMarketInfo* info = nullptr);

// Same, from text already in memory; `source_name` is used in messages and as CsrMatrix::source.
CsrMatrix read_matrix_market_buffer(std::string_view text, const std::string& source_name,
                                    DuplicatePolicy duplicates, Diagnostics& diag);
CsrMatrix read_matrix_market_buffer(std::string_view text, const std::string& source_name,
                                    const MatrixMarketOptions& options, Diagnostics& diag,
                                    MatrixMarketInfo* info = nullptr);

// Writes `m` as `coordinate real general` (`pattern` when m.pattern_only, `complex` when m has
// imaginary parts), 1-based, values with %.9g so fp32 values round-trip exactly. Throws
// UserError when the file cannot be written.
void write_matrix_market(const CsrMatrix& m, const std::string& path);

}  // namespace sparsegen
