// Warp-level sum reductions through register shuffles. Every lane of the warp must call them
// (the generator never returns early inside a warp before a reduction).
#pragma once

namespace sg {

// Sum over aligned groups of WIDTH consecutive lanes (WIDTH a power of two, 1..32); every lane of
// a group receives the group's sum (butterfly exchange).
template <int WIDTH>
__device__ __forceinline__ float warp_reduce_sum(float v) {
  static_assert(WIDTH >= 1 && WIDTH <= 32 && (WIDTH & (WIDTH - 1)) == 0, "WIDTH: power of 2");
#pragma unroll
  for (int off = WIDTH / 2; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Sum over the WIDTH lanes {base + k * STRIDE}: lanes that share nonzeros but own different
// dense columns (thread-groups of STRIDE lanes side by side) reduce column by column. WIDTH and
// STRIDE are powers of two with WIDTH * STRIDE <= 32; every lane receives its column's sum.
template <int WIDTH, int STRIDE>
__device__ __forceinline__ float warp_reduce_sum_strided(float v) {
  static_assert(WIDTH >= 1 && (WIDTH & (WIDTH - 1)) == 0, "WIDTH: power of 2");
  static_assert(STRIDE >= 1 && (STRIDE & (STRIDE - 1)) == 0, "STRIDE: power of 2");
  static_assert(WIDTH * STRIDE <= 32, "WIDTH * STRIDE must fit in a warp");
#pragma unroll
  for (int off = (WIDTH / 2) * STRIDE; off >= STRIDE && off > 0; off >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// Sums NC columns (acc[0 .. NC-1], NC a power of two up to 32) over the 32 lanes and scatters the
// columns: the lanes of column warp_scatter_col<NC>(lane) all get its sum (the return value).
// Each step halves the columns a lane keeps and trades the other half with the lane `off` away,
// then a plain butterfly finishes: NC - 1 + log2(32 / NC) shuffles instead of NC * 5 (NC = 8:
// 9 instead of 40), and NC lanes can then store the NC columns side by side. Clobbers acc.
// The summation order is fixed (a deterministic result). Every lane of the warp must call it.
template <int NC>
__device__ __forceinline__ float warp_reduce_scatter_sum(float* acc, int lane) {
  static_assert(NC >= 1 && NC <= 32 && (NC & (NC - 1)) == 0, "NC: power of 2 up to 32");
#pragma unroll
  for (int half = NC / 2, off = 16; half >= 1; half >>= 1, off >>= 1) {
    const bool hi = (lane & off) != 0;  // this lane keeps the upper half of its columns
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const float send = hi ? acc[i] : acc[i + half];
      const float keep = hi ? acc[i + half] : acc[i];
      acc[i] = keep + __shfl_xor_sync(0xffffffffu, send, off);
    }
  }
  float v = acc[0];
#pragma unroll
  for (int off = 16 / NC; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// The column whose sum warp_reduce_scatter_sum<NC> leaves on `lane`: lane bits 4, 3, ... (one per
// halving step) from the column's top bit down. The first lane of each column's group is the one
// with (lane & (32 / NC - 1)) == 0.
template <int NC>
__device__ __forceinline__ int warp_scatter_col(int lane) {
  static_assert(NC >= 1 && NC <= 32 && (NC & (NC - 1)) == 0, "NC: power of 2 up to 32");
  return (lane / (32 / NC)) & (NC - 1);
}

}  // namespace sg
