// NumPy's .npy format (versions 1.0, 2.0 and 3.0): the magic "\x93NUMPY", a version, a header
// length (u16 for 1.0, u32 otherwise), a Python-literal dict {'descr': '<f4', 'fortran_order':
// False, 'shape': (rows, cols)}, then the raw array.
//
// Read: float16, float32 and float64 ('<', '>' or '=' byte order) 2-D arrays. float16 converts
// exactly; float64 rounds to the nearest fp32 (the master precision) and a finite value beyond the
// fp32 range is an error naming the element. Fortran-order arrays are transposed into row-major, so
// the matrix is the one NumPy shows. 1-D and N-D (N != 2) arrays, structured and non-float dtypes
// are rejected with the reason. The data length must match the shape exactly.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "ir/dense_matrix.h"

namespace sparsegen {

// Parses a whole .npy file held in `data`; UserError names `source_name` and the byte offset.
DenseMatrix parse_npy(std::span<const std::byte> data, const std::string& source_name);

// Maps and parses the file.
DenseMatrix read_npy(const std::string& path);

// Writes `m` as a version 1.0 '<f4' C-order .npy file (what np.save writes for float32).
void write_npy(const std::string& path, const DenseMatrix& m);

}  // namespace sparsegen
