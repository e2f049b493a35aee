// The one entry point for reading a matrix file: dispatches on the file's extension (and, for
// Matrix Market, its banner) to the format readers in this folder.
//
//   .mtx                    Matrix Market (matrix_market.h)
//   .smtx                   DLMC pattern CSR (smtx.h); values synthesized from a seed
//   .safetensors            a sparsegen CSR container (csr_container.h) when it holds the CSR
//                           tensors, else a dense weight tensor selected by name (safetensors.h)
//   .npy                    a dense 2-D weight (npy.h)
//
// Dense weights become sparse matrices by keeping their nonzero entries (a pruned checkpoint).
#pragma once

#include <string>

#include "ir/dense_matrix.h"
#include "ir/diagnostics.h"
#include "ir/sparse_matrix.h"
#include "sparsegen/matrix.h"  // LoadOptions, LoadedMatrix, load_matrix (public)

namespace sparsegen {

// Reads a dense 2-D weight from .safetensors (by tensor name) or .npy.
DenseMatrix load_dense(const std::string& path, const std::string& tensor = "");

}  // namespace sparsegen
