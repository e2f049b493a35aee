// CPU interpreter of a bitmap_tc schedule: executes the kernel's plan on the host from the packed
// bitmap tiles (never from the CSR). K is cut into s.ksplit parts of whole column tiles
// (bitmap_tc_part_tiles(); part z covers column tiles [z·P, min((z+1)·P, col_tiles))); each part
// accumulates, per row and dense column, in fp32 over its tiles in order, each tile's entries
// decoded as the kernel does, in fragment order (value index = tile_ptr[t] + entries of the lanes
// below the position's lane + set bits below its bit in the lane word; ir/bitmap_format.h). Store
// (ksplit = 1): c = alpha·acc + beta·c (c not read when beta == 0), rounded to the dtype. Atomic
// (ksplit > 1): ws = 0 in fp32, then ws += alpha·acc_z for z = 0, 1, ..., then c = ws + beta·c
// rounded (as the kernel's last block). A value index outside the tile's range, or a set bit beyond
// K or M, throws std::logic_error (a broken packer shows up).
//
//   BitmapTileFormat f = pack_bitmap_tiles(a);
//   interpret_bitmap_tc(p, s, f, b, c, 1.0f, 0.0f);   // c = A·B
#pragma once

#include <span>

#include "ir/bitmap_format.h"
#include "ir/bitmap_tc_schedule.h"
#include "ir/problem.h"

namespace sparsegen {

void interpret_bitmap_tc(const Problem& p, const BitmapTcSchedule& s, const BitmapTileFormat& f,
                         std::span<const float> b, std::span<float> c, float alpha, float beta);

}  // namespace sparsegen
