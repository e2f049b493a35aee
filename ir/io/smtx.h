// DLMC's .smtx sparsity patterns (Gale et al., "Sparse GPU Kernels for Deep Learning"). A file has
// exactly three lines (see shared/data/dlmc/SOURCE.md; the dataset's own README is wrong):
//   1: "nrows, ncols, nnz"
//   2: nrows+1 CSR row offsets, starting at 0, non-decreasing, ending at nnz
//   3: nnz 0-based column indices, strictly increasing within each row
// separated by spaces (commas on line 1). Trailing spaces, CRLF line ends, a missing third line
// when nnz is 0, and blank lines after the third are accepted; anything else is a UserError naming
// the file, the line and the position ("f.smtx:2: offset 17 (row 16) decreases: 40 after 41"). No
// values are stored: they are synthesized by synthesize_pattern_values(seed) and the matrix is
// marked pattern_only with field Pattern.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/diagnostics.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// Parses the text of a whole .smtx file; errors name `source_name`.
CsrMatrix parse_smtx(std::string_view text, const std::string& source_name, uint64_t seed,
                     Diagnostics& diag);

// Maps and parses the file.
CsrMatrix read_smtx(const std::string& path, uint64_t seed, Diagnostics& diag);

}  // namespace sparsegen
