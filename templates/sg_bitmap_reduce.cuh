// Multi-row reductions inside a warp.
//
// BITMAP: each lane holds a partial sum of one row; rows occupy runs of consecutive lanes and
// bit i of `heads` is set when lane i starts a run. The format stores the bitmap (one 32-bit word
// per warp), so no comparison is needed at run time.
// SEGMENT: finishes the partial rows a lower-level BITMAP left at worker boundaries: the run
// heads are computed from the row index each lane carries, then the same segmented sum applies.
#pragma once

namespace sg {

// Segmented suffix sum over runs of lanes; the head lane of each run receives the run's total
// (other lanes hold partial sums and must not store). Every lane must call it.
__device__ __forceinline__ float bitmap_reduce_sum(float v, unsigned heads, int lane) {
  const unsigned later = lane == 31 ? 0u : (heads >> (lane + 1));
  const int seg_end = later != 0u ? lane + __ffs(static_cast<int>(later)) : 32;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float y = __shfl_down_sync(0xffffffffu, v, off);
    if (lane + off < seg_end) v += y;
  }
  return v;
}

// Bitmap of run heads for the row index each lane carries (rows non-decreasing over lanes).
__device__ __forceinline__ unsigned segment_heads(int row, int lane) {
  const int prev = __shfl_up_sync(0xffffffffu, row, 1);
  return __ballot_sync(0xffffffffu, lane == 0 || prev != row);
}

// SEGMENT reduction: sums the partials of lanes that carry the same row; the first lane of each
// run receives the total. Lanes with no work pass v = 0 and the row of their left neighbour.
__device__ __forceinline__ float segment_reduce_sum(float v, int row, int lane) {
  return bitmap_reduce_sum(v, segment_heads(row, lane), lane);
}

// True on the lane that must store the run total after bitmap_reduce_sum / segment_reduce_sum.
__device__ __forceinline__ bool is_run_head(unsigned heads, int lane) {
  return ((heads >> lane) & 1u) != 0u;
}

}  // namespace sg
