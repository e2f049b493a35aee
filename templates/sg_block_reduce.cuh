// Block-level sum reduction through shared memory. Every thread of the block must call it.
#pragma once

namespace sg {

// Sums v over the threads {c, c + STRIDE, c + 2 * STRIDE, ...} of a block of NTHREADS threads
// (both powers of two, STRIDE <= NTHREADS): thread-groups of STRIDE threads that own different
// dense columns reduce column by column. The result is valid in threads tid < STRIDE. smem must
// hold NTHREADS floats; it is free again when the call returns.
template <int NTHREADS, int STRIDE>
__device__ __forceinline__ float block_reduce_sum(float v, float* smem, int tid) {
  static_assert((NTHREADS & (NTHREADS - 1)) == 0 && (STRIDE & (STRIDE - 1)) == 0,
                "NTHREADS and STRIDE: powers of 2");
  static_assert(STRIDE <= NTHREADS, "STRIDE <= NTHREADS");
  smem[tid] = v;
  __syncthreads();
#pragma unroll
  for (int s = NTHREADS / 2; s >= STRIDE; s >>= 1) {
    if (tid < s) smem[tid] += smem[tid + s];
    __syncthreads();
  }
  float out = smem[tid < STRIDE ? tid : 0];
  __syncthreads();
  return out;
}

}  // namespace sg
