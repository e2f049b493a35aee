// Bitmap-tile format: the packer for the tensor-core schedule family "bitmap_tc"
// (ir/bitmap_tc_schedule.h, BitmapTcSchedule). A is cut into tiles of kBitmapTileRows x
// kBitmapTileCols (16 x 64: one mma.m16n8k16 row block by four k16 steps). Per tile:
//   masks   16 x 64-bit words, word r has bit c set when A[16·rt + r][64·ct + c] is stored
//   values  the stored entries of the tile in fragment order (below), then zero-filled up to a
//           multiple of kBitmapValueAlign slots so that every tile starts 16-byte aligned
// Tiles are numbered row-tile major, t = rt · col_tiles + ct, or in groups of `group` row tiles
// (bitmap_tile_index), and stored in that order. tile_ptr[t] is the first value slot of tile t
// (tiles + 1 entries, tile_ptr[tiles] = slots). Rows beyond M and columns beyond K (the last
// row / column tile) have no bits set.
//
// Fragment order: lane L of a warp holds, in the A operand of mma.m16n8k16 (4 x b32 per k16
// quarter, PTX ISA layout), 32 positions of the tile: bit p = 8q + 2r + e is quarter q, register
// r, half e, i.e. row (L / 4) + 8·(r & 1), column 16q + 8·(r / 2) + 2·(L % 4) + e
// (bitmap_fragment_position). A tile's values are lane 0's entries by bit, then lane 1's, ...
// So a lane finds its values from its 32-bit lane word (bitmap_lane_words) and one prefix sum
// over the lanes, then walks them in register order: the decode costs a few instructions per
// position and no per-position popcount (templates/sg_bitmap_tc.cuh).
//
// Why a bitmap and not column indices: one bit per dense position is 1/16 of a dense fp16 value,
// so the format's bytes relative to dense fp16 are d + 1/16 (+ alignment): 0.56 at 50% sparsity,
// 0.36 at 70%, 0.16 at 90% — below MACKO's d·(16+b_Δ)/16 up to ~75% sparsity. Every tile is
// independently addressable, so a warp can start at any column tile (split K).
//
// Example, one 16 x 64 tile, row 0 = {(0, 1.0), (5, 2.0)}, row 2 = {(63, 3.0)}:
//   masks[0] = 0x21, masks[1] = 0, masks[2] = 1 << 63, other rows 0
//   fragment slots: (0, 0) lane 0 bit 0; (0, 5) lane 2 bit 1; (2, 63) lane 11 bit 29
//   values = 1.0 2.0 3.0 0 0 0 0 0 (3 entries, zero-filled to 8), tile_ptr = 0 8
// Explicit zeros of the input are stored entries (their bit is set), so unpack restores the CSR
// exactly.
//
// Value layouts (BitmapValues). `slot` stores each set position once, as above. `pair` stores one
// 32-bit word (two values) per register of a lane's A operand that holds any set position, i.e.
// per pair of bits 2j, 2j + 1 of the lane word with either bit set, the absent half 0: the
// kernel loads a register with one 32-bit load instead of two 16-bit ones and a permute, at the
// price of the absent halves (1.02 instead of 0.6 bytes per element at 70 % sparsity). Example
// above in `pair`: lane 0 holds {1.0, 0}, lane 2 {0, 2.0}, lane 11 {0, 3.0} (bit 29 is the high
// half of its pair): values = 1.0 0 0 2.0 0 3.0 0 0, tile_ptr = 0 8.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/sparse_matrix.h"

namespace sparsegen {

inline constexpr int64_t kBitmapTileRows = 16;
inline constexpr int64_t kBitmapTileCols = 64;
// Value slots per 16-byte vector of 2-byte values; every tile's values start at a multiple.
inline constexpr int64_t kBitmapValueAlign = 8;
// Lanes of a warp, and positions of a tile per lane (16 · 64 / 32).
inline constexpr int kBitmapLanes = 32;
// Bytes of a tile's 32 lane words (bitmap_lane_words), as a kernel stages them.
inline constexpr int64_t kBitmapLaneBytes = 4 * kBitmapLanes;
// Bytes of a tile's 32 lane starts (bitmap_lane_starts, 16 bits each: a tile holds at most
// 32 x 32 entries), which copy=step kernels stage after the lane words instead of a warp scan.
inline constexpr int64_t kBitmapLaneStartBytes = 2 * kBitmapLanes;

// How a tile's values are laid out (see above); one name table for the printer, the SPEC and
// the format's description.
enum class BitmapValues { Slot, Pair };
std::string_view to_string(BitmapValues v);  // "slot", "pair"
std::optional<BitmapValues> parse_bitmap_values(std::string_view s);

// Value slots a lane with lane word w occupies: popcount(w) (slot), or 2 per register holding a
// set bit (pair).
int bitmap_lane_entries(uint32_t w, BitmapValues layout);
// The slot of bit `bit` (set in w) among its lane's values.
int bitmap_lane_rank(uint32_t w, int bit, BitmapValues layout);

// The lane and lane-word bit of tile position (row, col), 0 <= row < 16, 0 <= col < 64.
struct BitmapFragmentSlot {
  int lane = 0;
  int bit = 0;
};
BitmapFragmentSlot bitmap_fragment_slot(int row, int col);
// The inverse: {row, col} of lane `lane`'s bit `bit`.
std::pair<int, int> bitmap_fragment_position(int lane, int bit);

struct BitmapTileFormat {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t row_tiles = 0;        // ceil(rows / 16)
  int64_t col_tiles = 0;        // ceil(cols / 64)
  int64_t nnz = 0;              // stored entries (explicit zeros included)
  int64_t max_tile_values = 0;  // largest tile's value count, rounded up to kBitmapValueAlign
  BitmapValues layout = BitmapValues::Slot;
  // Row tiles per group of the tile order: 1 is row-tile major. With G > 1, group g (row tiles
  // gG .. gG + Gg - 1, Gg = G or the last group's rest) is stored column tile by column tile,
  // t = gG·col_tiles + ct·Gg + rt % G, so one column tile's tiles of a group are consecutive
  // (masks and values): a kernel copies a block's step in one piece.
  int64_t group = 1;
  std::vector<uint64_t> masks;    // row_tiles * col_tiles * 16
  std::vector<int64_t> tile_ptr;  // row_tiles * col_tiles + 1 value-slot offsets
  std::vector<float> values;      // slots() entries (fp32 master; alignment fill = 0)

  int64_t tiles() const { return row_tiles * col_tiles; }
  int64_t slots() const { return static_cast<int64_t>(values.size()); }
};

// Size summary, O(nnz), without building the arrays.
struct BitmapTileStats {
  int64_t rows = 0, cols = 0, nnz = 0;
  int64_t tiles = 0;
  int64_t slots = 0;            // value slots including the per-tile alignment fill
  int64_t max_tile_values = 0;  // as in BitmapTileFormat
  // Bytes a kernel streams for A with 2-byte values: values + masks + 4-byte tile pointers.
  int64_t bytes() const;
  // bytes() relative to the dense fp16 matrix (rows * cols * 2); 0 for an empty shape.
  double effective_density() const;
};

BitmapTileStats bitmap_tile_stats(const CsrMatrix& a, BitmapValues layout = BitmapValues::Slot);
// The same figures read off a packed format (O(1)).
BitmapTileStats bitmap_tile_stats(const BitmapTileFormat& f);

// The most value slots of one step of a block of f.group row tiles: over the groups and column
// tiles, the slots of the group's tiles of that column tile (consecutive in f's order).
int64_t bitmap_max_step_values(const BitmapTileFormat& f);

// The number of tile (rt, ct) in f's tile order (f.group).
int64_t bitmap_tile_index(const BitmapTileFormat& f, int64_t rt, int64_t ct);

// Packs canonical CSR, tiles in groups of `group` row tiles (>= 1). Throws UserError for a
// non-canonical matrix.
BitmapTileFormat pack_bitmap_tiles(const CsrMatrix& a, BitmapValues layout = BitmapValues::Slot,
                                   int64_t group = 1);

// The same tiles in groups of `group` row tiles (f in any order): the masks, tile pointers and
// values moved, nothing else changed.
BitmapTileFormat regroup_bitmap_tiles(const BitmapTileFormat& f, int64_t group);

// Exact inverse of pack_bitmap_tiles (structure, values, explicit zeros).
CsrMatrix unpack_bitmap_tiles(const BitmapTileFormat& f);

// The 32 lane words of tile t (word L bit p: bitmap_fragment_position(L, p) is stored), from the
// tile's row masks; what the kernel reads.
std::array<uint32_t, kBitmapLanes> bitmap_lane_words(const BitmapTileFormat& f, int64_t tile);

// The fragment-order value slot, relative to the tile's first slot, of every stored position of
// a tile with lane words `w`: slot of (lane, bit) = entries of the lanes below +
// bitmap_lane_rank(word, bit). lane_start[L] = entries of lanes 0 .. L-1 (33 entries).
std::array<int, kBitmapLanes + 1> bitmap_lane_starts(const std::array<uint32_t, kBitmapLanes>& w,
                                                     BitmapValues layout = BitmapValues::Slot);

}  // namespace sparsegen
