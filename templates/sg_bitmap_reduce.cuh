// Multi-row reductions inside a warp, over thread-groups of STRIDE lanes (lanes of a group share
// nonzeros and own different dense columns).
//
// BITMAP: each group holds a partial sum of one row; rows occupy runs of consecutive groups and
// bit g of `heads` is set when group g starts a run. The format stores the bitmap (one 32-bit
// word per warp task), so no comparison is needed at run time.
// SEGMENT: finishes the partial rows a lower-level BITMAP left at worker boundaries: the run
// heads are computed from the row index each group carries, then the same segmented sum applies.
#pragma once

namespace sg {

// Segmented suffix sum over runs of thread-groups. The warp is GROUPS = 32 / STRIDE groups of
// STRIDE lanes (lane = group * STRIDE + column lane); bit g of `heads` is set when group g starts
// a run. Lanes with the same column lane reduce together; the head group of each run receives
// the run's total (other groups hold partial sums and must not store). Every lane must call it.
template <int STRIDE>
__device__ __forceinline__ float bitmap_reduce_sum(float v, unsigned heads, int lane) {
  static_assert(STRIDE >= 1 && STRIDE <= 32 && (STRIDE & (STRIDE - 1)) == 0, "STRIDE: power of 2");
  constexpr int kGroups = 32 / STRIDE;
  const int group = lane / STRIDE;
  const unsigned later = group + 1 >= 32 ? 0u : (heads >> (group + 1));
  const int seg_end = later != 0u ? group + __ffs(static_cast<int>(later)) : kGroups;
#pragma unroll
  for (int off = 1; off < kGroups; off <<= 1) {
    const float y = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(off * STRIDE));
    if (group + off < seg_end) v += y;
  }
  return v;
}

// Bitmap of run heads (bit g: group g starts a run) for the row each group carries; rows are
// non-decreasing over groups. Every lane must call it.
template <int STRIDE>
__device__ __forceinline__ unsigned segment_heads(int row, int lane) {
  const int group = lane / STRIDE;
  const int prev = __shfl_up_sync(0xffffffffu, row, static_cast<unsigned>(STRIDE));
  const unsigned lanes = __ballot_sync(0xffffffffu, group == 0 || prev != row);
  // Keep one bit per group (its first lane's).
  unsigned heads = 0u;
#pragma unroll
  for (int g = 0; g < 32 / STRIDE; ++g) heads |= ((lanes >> (g * STRIDE)) & 1u) << g;
  return heads;
}

// SEGMENT reduction: sums the partials of groups that carry the same row; the first group of
// each run receives the total. Groups with no work pass v = 0 and the row of their left
// neighbour (or any row >= it that no other group uses).
template <int STRIDE>
__device__ __forceinline__ float segment_reduce_sum(float v, int row, int lane) {
  return bitmap_reduce_sum<STRIDE>(v, segment_heads<STRIDE>(row, lane), lane);
}

// True on the lanes of a run's head group (they store the run total).
template <int STRIDE>
__device__ __forceinline__ bool is_run_head(unsigned heads, int lane) {
  return ((heads >> (lane / STRIDE)) & 1u) != 0u;
}

}  // namespace sg
