// R-MAT / Kronecker graphs as sparse matrices (the Graph500 generator): power-law matrices of
// 1M-64M nonzeros for graph-scale SpMM tests and benchmarks.
//
// A graph of 2^scale vertices gets edge_factor · 2^scale edges. Each edge picks its (row, column)
// one bit level at a time, from the most significant: with probability a the top-left quadrant,
// b top-right, c bottom-left, d = 1 - a - b - c bottom-right (Graph500: 0.57, 0.19, 0.19, 0.05;
// edge factor 16). As in the Graph500 reference, the vertex labels are then permuted at random
// (one permutation for rows and columns), so the heavy rows are not all at the top. Duplicate
// edges become one entry (the matrix is a 0/1 pattern with values); self loops stay. Values are
// non-integer, in ±[0.5, 1.5), a function of the position and the seed.
//
// Reproducible from the seed alone (per-edge counter-based streams), whatever the thread count.
//
//   CsrMatrix a = make_rmat({.scale = 20, .edge_factor = 16});   // ~16M edges before merging
#pragma once

#include <cstdint>

#include "ir/sparse_matrix.h"

namespace sparsegen {

struct RmatSpec {
  int scale = 16;                       // 2^scale rows and columns: 1 … 30
  int edge_factor = 16;                 // edges per vertex: 1 … 1024
  double a = 0.57, b = 0.19, c = 0.19;  // d = 1 - a - b - c
  uint64_t seed = 0;
  bool permute = true;  // relabel the vertices at random (Graph500)
};

// Throws UserError naming the field (--scale, --edge-factor, --rmat) when the spec is invalid:
// probabilities not in [0, 1] or summing above 1, scale or edge factor out of range, more than
// 2^32 edges.
void validate(const RmatSpec& spec);

// The matrix: 2^scale x 2^scale canonical CSR, source "rmat-S-E". Memory: 8 bytes per edge for the
// edge keys plus the CSR.
CsrMatrix make_rmat(const RmatSpec& spec);

}  // namespace sparsegen
