// How the rate of gathering random whole rows (the twell kernel 2's access: one W_u^T row and one
// W_d row per nonzero) depends on the load instruction, the loads in flight per lane and the
// warps per multiprocessor, against a plain stream over the same region and against bulk copies.
//   lanes   every warp reads rows of 4 KB picked by a hash, 16 bytes per lane per load, IN loads
//           in flight per lane; the load is ld.global.cg (L2 only), ld.global.nc (read-only path)
//           or ld.global.nc.L1::no_allocate
//   stream  every warp reads consecutive 512-byte pieces of the region, IN loads in flight per lane
//   bulk    each warp keeps SLOTS cp.async.bulk row copies in flight into shared memory and reads
//           each landed row (16 bytes per lane)
// Build and run on the GPU machine (it includes templates/sg_bulk_copy.cuh):
//   nvcc -O3 -arch=sm_90 -std=c++17 -Itemplates -o gsweep tools/debug/gather_sweep_probe.cu
//   ./gsweep
// Every load's four words feed the result: with only some of them used, the compiler splits a
// 16-byte load into 4-byte ones (l2_bandwidth_probe.cu's rows and stream kernels use one or two
// words of each piece, so its figures are for those split loads).
// Prints one JSON object: per case the region, blocks per SM (resident), loads in flight, the
// median time of 7 runs and GB/s. The region is read until about 1 GiB has moved.
#include <cuda_runtime.h>

#include "l2_gather.cuh"
#include "probe_common.cuh"

#include <cstdio>

namespace {

constexpr int kRow16 = 256;  // 16-byte pieces in a 4 KB row

template <int KIND>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  uint4 v;
  if constexpr (KIND == 0)
    asm("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  else if constexpr (KIND == 1)
    asm("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  else
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
  return v;
}

// Warp-wide pieces t = 0 .. per_warp·8: row t / 8 (random; SEQ: the region in order), piece
// (t % 8)·32 + lane; IN of them in flight per lane.
template <int IN, int KIND, int SEQ>
__global__ void lanes_kernel(const uint4* __restrict__ p, unsigned rows, int per_warp,
                             unsigned* sink) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const unsigned warps = gridDim.x * blockDim.x / 32;
  uint4 acc[IN] = {};  // one per load: a single running value would let the compiler wait on
                       // each load before issuing the next
  const int pieces = per_warp * 8;
  for (int t0 = 0; t0 < pieces; t0 += IN) {
    const uint4* a[IN];
#pragma unroll
    for (int u = 0; u < IN; ++u) {
      const unsigned t = static_cast<unsigned>(t0 + u);
      const unsigned row = SEQ ? ((t >> 3) * warps + warp) % rows : probe_row(warp, t >> 3, rows);
      a[u] = p + static_cast<size_t>(row) * kRow16 + (t & 7) * 32 + lane;
    }
    uint4 v[IN];
#pragma unroll
    for (int u = 0; u < IN; ++u) v[u] = load16<KIND>(a[u]);
#pragma unroll
    for (int u = 0; u < IN; ++u) {
      acc[u].x ^= v[u].x;
      acc[u].y ^= v[u].y;
      acc[u].z ^= v[u].z;
      acc[u].w ^= v[u].w;
    }
  }
  unsigned r = 0;
#pragma unroll
  for (int u = 0; u < IN; ++u) r ^= acc[u].x ^ acc[u].y ^ acc[u].z ^ acc[u].w;
  if (r == 0x12345678u) sink[0] = r;
}

}  // namespace

int main() {
  const size_t big = size_t(256) << 20;
  const GatherProbe g = gather_probe_begin(big);
  uint4* buf = g.buf;
  unsigned* sink = g.sink;
  const int sms = g.sms;
  bool first = true;
  const double target = double(size_t(1) << 30);
  // One case: the kernel at `bps` blocks of `threads` per SM (smem bytes each), rows per warp for
  // about 1 GiB in all.
  auto run = [&](const char* kind, const char* load, size_t region_mb, int in, int bps, int threads,
                 int smem, auto kernel) {
    const unsigned rows = static_cast<unsigned>((region_mb << 20) / (kRow16 * 16));
    const int blocks = sms * bps, warps = blocks * threads / 32;
    const int per_warp = static_cast<int>(target / (double(warps) * kRow16 * 16));
    if (smem > 48 * 1024)
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int resident = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, threads, smem));
    const std::vector<float> t = time_launches(
        7,
        [&] {
          kernel<<<blocks, threads, smem>>>(buf, rows, per_warp, sink);
          CK(cudaGetLastError());
        },
        [] {});
    const float ms = t[t.size() / 2];
    const double bytes = double(warps) * per_warp * kRow16 * 16;
    std::printf(
        "%s{\"kind\": \"%s\", \"load\": \"%s\", \"region_mb\": %zu, \"in_flight\": %d, "
        "\"blocks_per_sm\": %d, \"resident_per_sm\": %d, \"threads\": %d, \"ms\": %.5f, "
        "\"gbs\": %.1f}",
        first ? "" : ",\n", kind, load, region_mb, in, bps, resident, threads, ms,
        bytes / (ms * 1e6));
    std::fflush(stdout);
    first = false;
  };
  for (size_t mb : {46, 235}) {
    for (int bps : {2, 4, 8}) {
      run("stream", "cg", mb, 4, bps, 256, 0, lanes_kernel<4, 0, 1>);
      run("stream", "cg", mb, 16, bps, 256, 0, lanes_kernel<16, 0, 1>);
      run("lanes", "cg", mb, 4, bps, 256, 0, lanes_kernel<4, 0, 0>);
      run("lanes", "cg", mb, 8, bps, 256, 0, lanes_kernel<8, 0, 0>);
      run("lanes", "cg", mb, 16, bps, 256, 0, lanes_kernel<16, 0, 0>);
      run("lanes", "cg", mb, 32, bps, 256, 0, lanes_kernel<32, 0, 0>);
      run("lanes", "nc", mb, 8, bps, 256, 0, lanes_kernel<8, 1, 0>);
      run("lanes", "nc", mb, 16, bps, 256, 0, lanes_kernel<16, 1, 0>);
      run("lanes", "nc_na", mb, 8, bps, 256, 0, lanes_kernel<8, 2, 0>);
      run("lanes", "nc_na", mb, 16, bps, 256, 0, lanes_kernel<16, 2, 0>);
    }
    // Bulk: 4 warps per block, SLOTS x 4 KB per warp.
    run("bulk", "bulk", mb, 2, 4, 128, 4 * 2 * 4096, bulk_ring_kernel<kRow16 * 16, 2>);
    run("bulk", "bulk", mb, 4, 3, 128, 4 * 4 * 4096, bulk_ring_kernel<kRow16 * 16, 4>);
    run("bulk", "bulk", mb, 4, 1, 128, 4 * 4 * 4096, bulk_ring_kernel<kRow16 * 16, 4>);
    run("bulk", "bulk", mb, 8, 1, 128, 4 * 8 * 4096, bulk_ring_kernel<kRow16 * 16, 8>);
    run("bulk", "bulk", mb, 2, 8, 128, 4 * 2 * 4096, bulk_ring_kernel<kRow16 * 16, 2>);
  }
  std::printf("\n]}\n");
  CK(cudaFree(buf));
  CK(cudaFree(sink));
  return 0;
}
