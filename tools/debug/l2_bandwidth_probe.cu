// How fast an SM grid can read bytes that sit in the L2, for the twell kernel 2 floor: it reads
// whole weight rows (W_u column and W_d row, K values each) once per nonzero, picked at random.
//   stream  every block reads a region of S bytes with 16-byte loads, R passes (S below the L2:
//           L2 hits after the first pass; S far above it: DRAM)
//   rows    every warp reads whole rows of ROW bytes picked at random from a region of S bytes,
//           U rows in flight per warp (kernel 2's access: one row per nonzero)
//   seq     as rows, but warp w reads rows w·per_warp, w·per_warp + 1, … (no random jumps)
//   bulk    as rows, each row one cp.async.bulk copy into a ring of 4 shared-memory slots per
//           warp (the TMA unit instead of the lanes' loads)
// Build and run (on the GPU machine; it includes templates/sg_bulk_copy.cuh):
//   nvcc -O3 -arch=sm_90 -std=c++17 -Itemplates -Itools/debug -o l2probe
//        tools/debug/l2_bandwidth_probe.cu
//   ./l2probe
// Prints one JSON object: per case the bytes read, the median time of 9 runs and GB/s.
// Every loaded word feeds the result: a 16-byte load of which only some words are used is split by
// the compiler into 4-byte loads (the rows kernel once used two words of each piece, and so
// measured two 4-byte loads per 16 bytes: about half the rate of 16-byte loads).
// tools/debug/gather_sweep_probe.cu sweeps the same gathers over loads in flight and warps.
#include <cuda_runtime.h>

#include "l2_gather.cuh"
#include "probe_common.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void stream_kernel(const uint4* __restrict__ p, size_t n16, int passes, unsigned* sink) {
  unsigned acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (int r = 0; r < passes; ++r) {
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {
      const uint4 a = __ldcg(p + i), b = __ldcg(p + i + stride), c = __ldcg(p + i + 2 * stride),
                  d = __ldcg(p + i + 3 * stride);
      acc ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^
             (d.x ^ d.y ^ d.z ^ d.w);
    }
    for (; i < n16; i += stride) {
      const uint4 a = __ldcg(p + i);
      acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

// Each warp reads `per_warp` rows of ROW16 16-byte pieces, U at a time, picked by a hash.
template <int ROW16, int U, int SEQ = 0>
__global__ void rows_kernel(const uint4* __restrict__ p, unsigned rows, int per_warp,
                            unsigned* sink) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned acc = 0, h = warp * 2654435761u + 12345u;
  for (int j = 0; j < per_warp; j += U) {
    const uint4* r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      h = h * 1664525u + 1013904223u;
      const unsigned row = SEQ ? (warp * per_warp + j + u) % rows : h % rows;
      r[u] = p + static_cast<size_t>(row) * ROW16;
    }
#pragma unroll
    for (int i = 0; i < ROW16; i += 32)
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint4 v = __ldcg(r[u] + i + lane);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      }
  }
  if (acc == 0x12345678u) sink[0] = acc;
}

template <typename F>
static float median_ms(F launch) {
  const std::vector<float> t = time_launches(9, launch, [] {});  // warm: the L2 holds what fits
  return t[t.size() / 2];
}

int main() {
  const size_t big = size_t(2) << 30;
  const GatherProbe g = gather_probe_begin(big);
  uint4* buf = g.buf;
  unsigned* sink = g.sink;
  const int sms = g.sms;
  bool first = true;
  auto report = [&](const char* kind, size_t region, size_t row, int u, double bytes, float ms) {
    std::printf(
        "%s{\"kind\": \"%s\", \"region_mb\": %.1f, \"row_bytes\": %zu, \"in_flight\": %d, "
        "\"bytes\": %.0f, \"ms\": %.5f, \"gbs\": %.1f}",
        first ? "" : ",\n", kind, region / 1048576.0, row, u, bytes, ms, bytes / (ms * 1e6));
    first = false;
  };
  for (size_t mb : {8, 16, 24, 32, 40, 48, 64, 2048}) {
    const size_t region = mb << 20;
    const int passes =
        mb >= 1024 ? 1 : static_cast<int>(std::max<size_t>(1, (size_t(2) << 30) / region));
    const float ms = median_ms([&] {
      stream_kernel<<<sms * 8, 256>>>(buf, region / 16, passes, sink);
      CK(cudaGetLastError());
    });
    report("stream", region, 0, 4, double(region) * passes, ms);
  }
  // Warps of 4 blocks of 8 per SM, each reading warp_rows rows of row_bytes: launch(rows in the
  // region, warp_rows), reported with the bytes read and the median time.
  const int blocks = sms * 4, per_warp = 256;
  auto rows = [&](const char* kind, size_t region, size_t row_bytes, int u, int warp_rows,
                  auto launch) {
    const double bytes = double(blocks) * 8 * warp_rows * double(row_bytes);
    report(kind, region, row_bytes, u, bytes, median_ms([&] {
             launch(static_cast<unsigned>(region / row_bytes), warp_rows);
             CK(cudaGetLastError());
           }));
  };
  // Rows of 4 KB (K = 2048 bf16) and 8 KB (K = 4096) from regions of 46 MB (the 2048x5632 FFN's
  // W_u and W_d), 32 MB and 235 MB (4096x14336).
  for (size_t mb : {32, 46, 235}) {
    const size_t region = mb << 20;
    rows("rows", region, 4096, 2, per_warp,
         [&](unsigned n, int w) { rows_kernel<256, 2><<<blocks, 256>>>(buf, n, w, sink); });
    rows("rows", region, 4096, 4, per_warp,
         [&](unsigned n, int w) { rows_kernel<256, 4><<<blocks, 256>>>(buf, n, w, sink); });
    rows("rows", region, 8192, 2, per_warp,
         [&](unsigned n, int w) { rows_kernel<512, 2><<<blocks, 256>>>(buf, n, w, sink); });
  }
  // The same gathers of 4 KB rows, sequential, from a 4 MB region, 64 KB rows, and by bulk copy.
  for (size_t mb : {4, 46, 235}) {
    const size_t region = mb << 20;
    rows("seq", region, 4096, 2, per_warp,
         [&](unsigned n, int w) { rows_kernel<256, 2, 1><<<blocks, 256>>>(buf, n, w, sink); });
    rows("rows", region, 4096, 2, per_warp,
         [&](unsigned n, int w) { rows_kernel<256, 2><<<blocks, 256>>>(buf, n, w, sink); });
    rows("rows", region, 65536, 1, per_warp / 16,
         [&](unsigned n, int w) { rows_kernel<4096, 1><<<blocks, 256>>>(buf, n, w, sink); });
    CK(cudaFuncSetAttribute(bulk_ring_kernel<4096, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            4 * 4 * 4096));
    const float bk = median_ms([&] {
      bulk_ring_kernel<4096, 4><<<sms * 3, 128, 4 * 4 * 4096>>>(
          buf, static_cast<unsigned>(region / 4096), per_warp * 8 * 4 / 12, sink);
      CK(cudaGetLastError());
    });
    report("bulk", region, 4096, 4, double(sms) * 3 * 4 * (per_warp * 8 * 4 / 12) * 4096.0, bk);
  }
  std::printf("\n]}\n");
  CK(cudaFree(buf));
  CK(cudaFree(sink));
  return 0;
}
