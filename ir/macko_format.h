// MACKO format (Macko & Boža): unstructured-sparse weights whose structure costs b_Δ bits per
// stored value. The packer for the MACKO schedule family (ir/macko_schedule.h, MackoSchedule).
//
// Per row, the values are stored in column order in one SLOT each; for every slot the number of
// zero columns skipped since the previous slot of the row (the "delta", b_Δ bits, b_Δ ∈ {2, 4, 8})
// is stored alongside. The first slot of a row counts from column -1, so its delta is its column:
//   delta_i = col_i - col_{i-1} - 1,   col_{-1} = -1,   col_i = sum_{j<=i} (delta_j + 1) - 1
// (the kernel decodes columns with an inclusive prefix sum of delta + 1). Where more than
// 2^b_Δ - 1 zeros separate two nonzeros, explicit zero-valued PADDING slots are inserted, each
// at column prev + 2^b_Δ (delta 2^b_Δ - 1), until the gap fits. Padding columns lie between two
// real columns, so the kernel's gathers of B stay in bounds.
//
// Arrays (slot s of the whole matrix, rows back to back, no per-row padding):
//   values[s]   the value (fp32 master here; the pipeline converts to fp16/bf16), padding = 0
//   deltas      slot s's delta in bits [(s·b) % 8, (s·b) % 8 + b) of byte (s·b) / 8 (several
//               deltas per byte, little-endian, so a 32-bit word holds 32/b consecutive deltas)
//   row_ptr[r]  first slot of row r (rows + 1 entries). One pointer array serves both arrays
//               because slot s's value and delta are both addressed by s.
// The slot count is rounded up to a multiple of kMackoVectorSlots (trailing unused slots: value
// 0, delta 0) so that every aligned 16-byte vector of values that starts inside a row is in bounds.
//
// Reverse-offset alignment instead of per-row padding: rows start at any slot, yet the kernel
// reads values only with aligned 16-byte vectors (8 fp16/bf16 slots). For row r it reads vectors
// floor(row_ptr[r] / 8) .. ceil(row_ptr[r+1] / 8) - 1; the first vector's leading
// row_ptr[r] % 8 slots (the reverse offset) belong to the previous row and the last vector's
// trailing slots to the next row; both are masked by slot index (delta ignored, no product).
// Example, b_Δ = 4, row 0 = {(0, 1.0), (20, 2.0)}, row 1 = {(3, 3.0)}:
//   row 0: col 0 -> delta 0; col 20: 19 zeros > 15, so a padding slot at column 16 (delta 15),
//          then col 20 -> delta 3        slots 0..2 = 1.0 (d0), 0 (d15), 2.0 (d3)
//   row 1: col 3 -> delta 3              slot 3 = 3.0 (d3)
//   row_ptr = 0 3 4, 8 slots stored (4..7 unused); row 1 reads vector 0 with reverse offset 3.
// Padding would instead cost up to 7 slots per row (up to 18 bytes); here it costs nothing.
//
// Explicit zeros of the input are real entries. Which slots are padding is kept host-side
// (is_padding, never uploaded) so that unpack_macko() restores the CSR exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/sparse_matrix.h"

namespace sparsegen {

// Slots per aligned 16-byte vector of 2-byte values.
inline constexpr int64_t kMackoVectorSlots = 8;

// True for 2, 4, 8.
bool valid_macko_delta_bits(int bits);

struct MackoFormat {
  int64_t rows = 0;
  int64_t cols = 0;
  int delta_bits = 4;
  int64_t nnz = 0;                   // real entries (input nonzeros, explicit zeros included)
  int64_t padding = 0;               // zero-valued padding slots inserted for long gaps
  std::vector<int64_t> row_ptr;      // rows + 1 slot offsets
  std::vector<float> values;         // slots() entries
  std::vector<uint8_t> deltas;       // slots() * delta_bits / 8 bytes
  std::vector<uint64_t> is_padding;  // host only: bit s set when slot s is padding

  int64_t used_slots() const { return nnz + padding; }
  // Stored slots (used slots rounded up to a multiple of kMackoVectorSlots).
  int64_t slots() const { return static_cast<int64_t>(values.size()); }
  // Delta of slot s.
  int delta(int64_t s) const;
};

// Size summary, computed in O(nnz) without building the arrays.
struct MackoStats {
  int64_t rows = 0, cols = 0, nnz = 0, padding = 0;
  int delta_bits = 4;
  int64_t slots = 0;  // stored slots (rounded to kMackoVectorSlots)
  // Bytes the kernel streams for A with 2-byte values: values + deltas + 4-byte row pointers.
  int64_t bytes() const;
  // bytes() relative to the dense fp16 matrix (rows * cols * 2); 0 for an empty shape.
  double effective_density() const;
};

MackoStats macko_stats(const CsrMatrix& a, int delta_bits);
// The same figures read off a packed format (O(1)): what a build with a shared pack verifies
// against instead of walking the matrix again.
MackoStats macko_stats(const MackoFormat& f);

// Packs canonical CSR. Throws UserError for bad delta_bits or a non-canonical matrix.
MackoFormat pack_macko(const CsrMatrix& a, int delta_bits);

// Exact inverse of pack_macko (structure, values and explicit zeros).
CsrMatrix unpack_macko(const MackoFormat& f);

}  // namespace sparsegen
