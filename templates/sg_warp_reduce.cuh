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

}  // namespace sg
