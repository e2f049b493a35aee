// Structural features of a sparse matrix: what `sparsegen inspect` prints and what the cost model
// regresses on. A plain struct with named fields; every field is defined where it is declared.
// Features depend only on the sparsity pattern (and shape), never on the values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/sparse_matrix.h"

namespace sparsegen {

// Width of a column segment for the locality statistics: 32 columns = one 128-byte line of an
// fp32 dense operand row (64 bytes in fp16). A warp reading B[col][*] or x[col] touches one
// segment per distinct col / 32.
inline constexpr int64_t kSegmentCols = 32;

// Group widths M probed for N:M structure: the (2K-2):2K family (4:6 ... 14:16), 2:4, and 32.
inline const std::vector<int> kNmGroupWidths = {4, 6, 8, 10, 12, 14, 16, 32};
// Minimum density, relative to N/M, for a pattern to be reported as N:M (see nm_n).
inline constexpr double kNmTightness = 0.9;
// Block edges probed for dense-block structure.
inline const std::vector<int> kBlockEdges = {2, 4, 8, 16, 32};

struct MatrixFeatures {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t nnz = 0;
  double density = 0;  // nnz / (rows * cols); 0 for an empty shape

  // Row lengths (nonzeros per row), over all rows including empty ones.
  int64_t row_min = 0;
  int64_t row_max = 0;
  double row_mean = 0;
  double row_std = 0;   // population standard deviation
  double row_cv = 0;    // row_std / row_mean (0 when row_mean == 0)
  int64_t row_p50 = 0;  // nearest-rank percentiles
  int64_t row_p90 = 0;
  int64_t row_p99 = 0;
  int64_t empty_rows = 0;

  // Column lengths (nonzeros per column).
  int64_t col_max = 0;
  double col_cv = 0;
  int64_t empty_cols = 0;

  // Column locality within rows.
  // segments_per_row: mean over non-empty rows of the number of distinct 32-column segments
  //   (col / 32) the row touches.
  // segment_ratio: sum over rows of segments touched / sum over rows of the minimum possible,
  //   ceil(row_length / 32). 1 means rows are packed into as few segments as they could be; large
  //   values mean scattered accesses (each nonzero touches its own line). 0 when nnz == 0.
  // mean_col_gap: mean of col[k+1] - col[k] over adjacent nonzeros of the same row (1 = dense
  //   runs). 0 when no row has two nonzeros.
  // consecutive_fraction: fraction of those adjacent pairs with a gap of exactly 1.
  double segments_per_row = 0;
  double segment_ratio = 0;
  double mean_col_gap = 0;
  double consecutive_fraction = 0;

  // N:M structure. nm_max_per_group[i] is the largest number of nonzeros in any aligned group of
  // kNmGroupWidths[i] columns of any row (a trailing partial group counts too).
  // nm_n / nm_m: the smallest probed M such that N = nm_max_per_group is useful for structured
  //   kernels (N <= M - 2 for M <= 16: 2:4 and the (2K-2):2K family SlideSparse packs; N <= M/2
  //   for M = 32) and the groups are nearly full (density >= kNmTightness * N / M, as N:M pruning
  //   leaves them); nm_n = nm_m = 0 ("none") otherwise. "2:4" means every aligned group of 4
  //   holds at most 2 nonzeros and the matrix looks 2:4-pruned. A very sparse unstructured matrix
  //   can satisfy a bound by accident (nm_max_per_group shows it) but is not reported as N:M.
  std::vector<int> nm_max_per_group;
  int nm_n = 0;
  int nm_m = 0;
  // Every row has the same number of nonzeros (e.g. per-row / Wanda-style pruning). False for an
  // empty shape.
  bool row_uniform = false;
  // Largest probed B such that the nonzeros are exactly a union of aligned, fully dense BxB blocks
  // (rows and cols multiples of B); 1 when none (and for nnz == 0).
  int dense_block = 1;

  // Memory footprint in bytes. CSR = row offsets (rows+1) + int32 column indices + values.
  // csr_i32_* is -1 when nnz >= 2^31 (int32 offsets cannot index it); dense_* is -1 when the
  // byte count overflows int64.
  int64_t csr_i32_fp32_bytes = 0;
  int64_t csr_i32_fp16_bytes = 0;
  int64_t csr_i64_fp32_bytes = 0;
  int64_t csr_i64_fp16_bytes = 0;
  int64_t dense_fp32_bytes = 0;
  int64_t dense_fp16_bytes = 0;

  // "2:4", "14:16" or "none".
  std::string nm_string() const;
};

MatrixFeatures compute_features(const CsrMatrix& m);

// Every field under its own name (nm_max_per_group as {"4": n, "8": n, ...}, plus "nm" as the
// string form).
nlohmann::json to_json(const MatrixFeatures& f);

// Human-readable multi-line table ("  key  value" lines) for `sparsegen inspect`.
std::string format_table(const MatrixFeatures& f);

}  // namespace sparsegen
