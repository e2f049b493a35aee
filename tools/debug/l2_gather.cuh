// What the two L2 gather probes share (l2_bandwidth_probe.cu, gather_sweep_probe.cu): the buffer
// they read and the opening of their JSON, a row hash, and the bulk-copy gather kernel.
//
// bulk_ring_kernel: each
// warp of a block of at most 4 warps keeps a ring of SLOTS rows of ROW bytes in shared memory; lane
// 0 keeps SLOTS cp.async.bulk row copies in flight, the warp reads each landed row (16 bytes per
// lane) and lane 0 refills its slot. Rows are picked by probe_row(warp, j) from `rows` rows of p.
// Dynamic shared memory: warps x SLOTS x ROW bytes.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>

#include "probe_common.cuh"
#include "sg_bulk_copy.cuh"

// A probe's device buffer of `bytes` (every byte 1) and a word the kernels write only when their
// checksum hits a magic value (so that no load is dead code); prints the JSON object's opening
// (device, SMs, L2 bytes, the "cases" list).
struct GatherProbe {
  uint4* buf = nullptr;
  unsigned* sink = nullptr;
  int sms = 0;
};
inline GatherProbe gather_probe_begin(size_t bytes) {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  GatherProbe g;
  CK(cudaMalloc(&g.buf, bytes));
  CK(cudaMalloc(&g.sink, 4));
  CK(cudaMemset(g.buf, 1, bytes));
  g.sms = prop.multiProcessorCount;
  std::printf("{\"device\": \"%s\", \"sms\": %d, \"l2_bytes\": %d, \"cases\": [\n", prop.name,
              g.sms, prop.l2CacheSize);
  return g;
}

// Row j of a warp's random walk over `rows` rows (a hash, the same in every probe).
__device__ __forceinline__ unsigned probe_row(unsigned warp, unsigned j, unsigned rows) {
  unsigned h = (warp * 2654435761u) ^ (j * 2246822519u + 374761393u);
  h ^= h >> 15;
  h *= 2654435761u;
  h ^= h >> 13;
  return h % rows;
}

template <int ROW, int SLOTS>
__global__ void bulk_ring_kernel(const uint4* __restrict__ p, unsigned rows, int per_warp,
                                 unsigned* sink) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ alignas(8) unsigned long long bars[4 * SLOTS];
  const unsigned lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned char* ring = smem + wib * SLOTS * ROW;
  const unsigned sring = static_cast<unsigned>(__cvta_generic_to_shared(ring));
  const unsigned sbar = static_cast<unsigned>(__cvta_generic_to_shared(bars + SLOTS * wib));
  if (lane < SLOTS) sg::detail::bulk_barrier_init(sbar + 8 * lane, 1);
  sg::detail::bulk_barrier_init_fence();
  __syncwarp();
  unsigned acc = 0;
  auto issue = [&](int j) {
    const int s = j % SLOTS;
    sg::detail::bulk_expect(sbar + 8 * s, ROW);
    sg::detail::bulk_copy(
        sring + s * ROW,
        p + static_cast<size_t>(probe_row(warp, static_cast<unsigned>(j), rows)) * (ROW / 16), ROW,
        sbar + 8 * s);
  };
  if (lane == 0)
    for (int j = 0; j < SLOTS && j < per_warp; ++j) issue(j);
  for (int j = 0; j < per_warp; ++j) {
    const int s = j % SLOTS;
    sg::detail::bulk_wait(sbar + 8 * s, static_cast<unsigned>((j / SLOTS) & 1));
#pragma unroll
    for (int i = 0; i < ROW / 16; i += 32) {
      const uint4 v = reinterpret_cast<const uint4*>(ring + s * ROW)[i + lane];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncwarp();
    if (lane == 0 && j + SLOTS < per_warp) issue(j + SLOTS);
  }
  if (acc == 0x12345678u) sink[0] = acc;
}
