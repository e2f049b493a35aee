// sparsegen's own binary CSR container: a safetensors file (safetensors.h) holding
//   row_ptr  I64 [rows + 1]
//   col_idx  I32 [nnz]
//   values   F32 [nnz]
//   imag     F32 [nnz]   (complex matrices only)
// with __metadata__ {format: "sparsegen-csr", version: "1", rows, cols, nnz, field, pattern_only,
// source}. Any safetensors tool can open it; sparsegen reads it with one mapped copy per array, so
// an LLM-sized matrix (28672x7168 at 50%, 103M nonzeros) loads in a fraction of a second.
#pragma once

#include <string>

#include "ir/io/safetensors.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

inline constexpr const char* kCsrContainerFormat = "sparsegen-csr";
inline constexpr const char* kCsrContainerVersion = "1";

// Writes `m` (which must be canonical) to `path`.
void write_csr(const std::string& path, const CsrMatrix& m);

// True when the parsed safetensors file declares itself a sparsegen CSR container.
bool is_csr_container(const SafetensorsFile& file);

// Builds the matrix from an already-parsed container. Checks the metadata, the tensors' dtypes and
// shapes, and every CSR invariant (CsrMatrix::check_canonical); errors name the file.
// `source` of the result is the file's path.
CsrMatrix csr_from_container(const SafetensorsFile& file);

// read_safetensors + csr_from_container.
CsrMatrix read_csr(const std::string& path);

}  // namespace sparsegen
