// Device code of the benchmarks' floor probes; no generated kernel calls these.
#pragma once

namespace sg {

// What every row-compressed SpMV does for a row, and nothing more: read where the row starts (a
// cold 4-byte load), read one 128-byte line there (a dependent load), sum it across the warp and
// store one value. A warp per row over M rows prices the launch and the dependent load chain
// that no row-wise kernel avoids, whatever its format (sparsegen-macko-bench's row_chain_ms).
__device__ __forceinline__ void probe_row_chain(const int* __restrict__ starts,
                                                const float* __restrict__ lines,
                                                float* __restrict__ out, int rows) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // whole warps only: blockDim.x is a multiple of 32
  float v = lines[starts[row] + lane];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  if (lane == 0) out[row] = v;
}

}  // namespace sg
