// Block-level sum reduction through shared memory. Every thread of the block must call it.
#pragma once

namespace sg {
namespace detail {

__host__ __device__ constexpr int next_pow2(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace detail

// Sums v over the threads {c, c + STRIDE, c + 2 * STRIDE, ...} of a block of NTHREADS threads
// (STRIDE a power of two, STRIDE <= NTHREADS): thread-groups of STRIDE threads that own different
// dense columns reduce column by column. The result is valid in threads tid < STRIDE. smem must
// hold NTHREADS floats; it is free again when the call returns.
template <int NTHREADS, int STRIDE>
__device__ __forceinline__ float block_reduce_sum(float v, float* smem, int tid) {
  static_assert(STRIDE >= 1 && (STRIDE & (STRIDE - 1)) == 0, "STRIDE: power of 2");
  static_assert(STRIDE <= NTHREADS, "STRIDE <= NTHREADS");
  // Tree over the next power of two; steps are multiples of STRIDE, so tid and tid + s always
  // own the same column.
  constexpr int kPow2 = detail::next_pow2(NTHREADS);
  smem[tid] = v;
  __syncthreads();
#pragma unroll
  for (int s = kPow2 / 2; s >= STRIDE; s >>= 1) {
    if (tid < s && tid + s < NTHREADS) smem[tid] += smem[tid + s];
    __syncthreads();
  }
  float out = smem[tid < STRIDE ? tid : 0];
  __syncthreads();
  return out;
}

}  // namespace sg
