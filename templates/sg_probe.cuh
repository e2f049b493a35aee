// Device code of the benchmarks' floor probes; no generated kernel calls these.
#pragma once

#include "sg_bulk_copy.cuh"

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

// ─── Streaming floors (sparsegen-macko-bench's stream_*_ms) ─────────────────────────────────────
// How long reading `vecs` 16-byte vectors of a compressed weight takes with almost no work per
// byte, in two read patterns. Set next to a MACKO kernel of the same byte count, the difference is
// what its decode and row structure cost; the two patterns compare against each other to price
// how the bytes are requested.

// `words`: 16-byte aligned, `vecs` 16-byte vectors of them.
// Warp pattern: warp w of the grid reads the w-th contiguous share with plain 16-byte streaming
// loads, Q per lane in flight (like a MACKO warp walking its rows), and stores one word.
template <int Q>
__device__ __forceinline__ void probe_stream_warps(const unsigned* __restrict__ words, int vecs,
                                                   unsigned* __restrict__ out) {
  const uint4* __restrict__ src = reinterpret_cast<const uint4*>(words);
  const int lane = threadIdx.x % 32;
  const long long wpb = blockDim.x / 32;
  const long long warps = static_cast<long long>(gridDim.x) * wpb;
  const long long w = blockIdx.x * wpb + threadIdx.x / 32;
  const long long share = (vecs + warps - 1) / warps;
  const long long v0 = w * share;
  const long long v1 = v0 + share < vecs ? v0 + share : vecs;
  unsigned x = 0;
  for (long long v = v0 + lane; v < v1; v += Q * 32) {
    uint4 r[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q)
      r[q] = v + q * 32 < v1 ? __ldcs(src + v + q * 32) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int q = 0; q < Q; ++q) x ^= r[q].x ^ r[q].y ^ r[q].z ^ r[q].w;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, off);
  if (lane == 0) out[w] = x;
}

// Bulk pattern: block b reads the b-th contiguous share as STAGE-byte bulk copies (cp.async.bulk,
// sm_90) through a ring of S shared-memory stages; one thread issues, an mbarrier per stage counts
// the bytes in, and the block reads each stage from shared memory before it is refilled. ring:
// S * STAGE bytes of dynamic shared memory, 128-byte aligned.
template <int STAGE, int S>
__device__ __forceinline__ void probe_stream_bulk(const unsigned* __restrict__ words, int vecs,
                                                  unsigned* __restrict__ out,
                                                  unsigned* ring_words) {
  const uint4* __restrict__ src = reinterpret_cast<const uint4*>(words);
  uint4* ring = reinterpret_cast<uint4*>(ring_words);
  static_assert(STAGE % 16 == 0, "bulk copies are whole 16-byte vectors");
  __shared__ unsigned long long full[S];  // 8-byte aligned, as mbarriers must be
  const long long share = (vecs + gridDim.x - 1) / gridDim.x;
  const long long v0 = blockIdx.x * share;
  const long long v1 = v0 + share < vecs ? v0 + share : vecs;
  const long long bytes = v1 > v0 ? (v1 - v0) * 16 : 0;
  const int stages = static_cast<int>((bytes + STAGE - 1) / STAGE);
  const unsigned ring_s = static_cast<unsigned>(__cvta_generic_to_shared(ring));
  const unsigned bar_s = static_cast<unsigned>(__cvta_generic_to_shared(full));
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) detail::bulk_barrier_init(bar_s + 8 * s);
    detail::bulk_barrier_init_fence();
  }
  __syncthreads();
  auto issue = [&](int st) {
    const long long off = static_cast<long long>(st) * STAGE;
    const unsigned n = static_cast<unsigned>(bytes - off < STAGE ? bytes - off : STAGE);
    detail::bulk_expect(bar_s + 8 * (st % S), n);
    detail::bulk_copy(ring_s + (st % S) * STAGE, reinterpret_cast<const char*>(src + v0) + off, n,
                      bar_s + 8 * (st % S));
  };
  if (threadIdx.x == 0)
    for (int st = 0; st < S && st < stages; ++st) issue(st);
  unsigned x = 0;
  for (int st = 0; st < stages; ++st) {
    detail::bulk_wait(bar_s + 8 * (st % S), static_cast<unsigned>((st / S) & 1));
    const long long off = static_cast<long long>(st) * STAGE;
    const int nv = static_cast<int>((bytes - off < STAGE ? bytes - off : STAGE) / 16);
    const uint4* p = ring + (st % S) * (STAGE / 16);
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
      const uint4 r = p[i];
      x ^= r.x ^ r.y ^ r.z ^ r.w;
    }
    __syncthreads();  // the stage is read: it may be refilled
    if (threadIdx.x == 0 && st + S < stages) issue(st + S);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) x ^= __shfl_xor_sync(0xffffffffu, x, off);
  if (threadIdx.x % 32 == 0) out[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = x;
}

}  // namespace sg
