// Tile-wise ELL (TwELL): how the activation-sparse FFN stores the hidden activations H (M×N:
// tokens × hidden width) between its two kernels.
//
// The N columns are cut into tiles of T columns; per row and tile there is a count and room for
// cap = T / C packed (column-in-tile, value) entries (C the compression factor). A row-tile with
// more than cap nonzeros *overflows*: its count is stored as it is (> cap) and the tile's values
// go densely to a backup row instead (the hybrid format), so no nonzero is ever dropped:
//
//   count[m][t]               nonzeros of row m in columns t·T … t·T+T−1
//   entry[m][t][0 … cap)      (column − t·T, value), in column order, when count ≤ cap
//   backup[m][t·T … t·T+T)    the tile's values densely, when count > cap
//
// On the device an entry is one 32-bit word, (column − t·T) << 16 | the value's 16-bit bits,
// written by the first kernel's epilogue (templates/sg_twell.cuh); this host type is the same
// layout with fp32 values, for the interpreter, the tests and `inspect`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/sparse_matrix.h"

namespace sparsegen {

struct TwellFormat {
  int64_t rows = 0, cols = 0;  // M, N
  int tile = 128;              // T: columns per tile
  int cap = 32;                // entries per row and tile: T / C
  int64_t tiles = 0;           // ceil(N / T)
  int64_t nnz = 0;
  std::vector<int32_t> count;       // rows * tiles
  std::vector<uint16_t> entry_col;  // rows * tiles * cap: column within the tile
  std::vector<float> entry_value;   // rows * tiles * cap (0 in unused slots)
  std::vector<float> backup;        // rows * cols when any tile overflows, else empty
  int64_t overflow_tiles = 0;       // row-tiles with count > cap
  int64_t overflow_rows = 0;        // rows with at least one such tile

  bool overflows(int64_t r, int64_t t) const {
    return count[static_cast<size_t>(r * tiles + t)] > cap;
  }
  // Bytes the device format takes: counts (4), entries (4 each) and, when needed, the backup.
  int64_t device_bytes(int value_bytes) const;
};

// Columns per tile the kernels support, and the compression factors.
inline constexpr int kTwellTiles[] = {64, 128};
inline constexpr int kTwellComps[] = {1, 2, 4, 8, 16};

// TwELL of the activations `h` (M×N; CSR with sorted columns, as the first kernel finds them in
// column order). Precondition: tile in kTwellTiles, 1 <= cap <= tile.
TwellFormat twell_encode(const CsrMatrix& h, int tile, int cap);

// The statistics of a TwELL encoding without building it: counts per row-tile.
struct TwellStats {
  int64_t rows = 0, tiles = 0, nnz = 0;
  int64_t overflow_tiles = 0, overflow_rows = 0;
  int64_t max_tile_count = 0;  // largest count of any row-tile
  int64_t entries_walked = 0;  // nonzeros in non-overflowing tiles (kernel 2's packed walk)
  int64_t dense_columns = 0;   // columns of overflowing tiles (walked densely)
};
TwellStats twell_stats(const CsrMatrix& h, int tile, int cap);

// c = alpha · H · b + beta · c over the format (H = the encoded activations, b: N×K row-major,
// c: M×K row-major), with fp32 products and sums in the device kernel's order: the packed
// entries of each tile in turn, then the overflowing tiles' dense values. beta == 0: c not read.
void twell_down_product(const TwellFormat& f, std::span<const float> b, int64_t k,
                        std::span<float> c, float alpha, float beta);

}  // namespace sparsegen
