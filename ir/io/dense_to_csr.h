// Dense weight -> canonical CSR, the path a pruned checkpoint takes (.safetensors / .npy).
#pragma once

#include "ir/dense_matrix.h"
#include "ir/diagnostics.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// Keeps every entry that is not exactly zero. In a pruned weight the exact zeros *are* the
// structure (pruning writes 0.0 where it removes a weight), so dropping them loses nothing the
// checkpoint says; +0.0 and -0.0 are both zeros. NaN and +-Inf are kept and reported
// (WarningKind::NonFinite, count and first (row, col)). Field Real; source copied from `d`.
// Throws UserError when a dimension exceeds kMaxDimension.
CsrMatrix dense_to_csr(const DenseMatrix& d, Diagnostics& diag);

}  // namespace sparsegen
