// How fast the gate=lib row pack (sg::twell_pack_rows, templates/sg_twell.cuh) streams G, by its
// 16-byte loads in flight per lane (U) and warps per row: G = ReLU(x·W_g) is M x N bf16 with
// about `mean` nonzeros per row at random columns (every 50th row dense), written here by a
// kernel, then the pack runs as the generated code launches it (8 rows per block of 256
// threads) with the L2 flushed before each run. Every variant's TwELL buffer must equal the first
// one's byte for byte. (Results of 2026-11-30 also compared the pack before its two-halves nonzero
// test with the one after, from a copy of the old template function: twell_pack_2f59597.json.)
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 -Itemplates -Itools/debug -o twell_pack
//        tools/debug/twell_pack_probe.cu
//   ./twell_pack [--m 4096] [--n 14336] [--mean 30]
// Prints one JSON object: per variant the median time of 9 runs, G's bytes over it (GB/s) and
// whether its buffer matched.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "probe_common.cuh"
#include "sg_twell.cuh"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using T = __nv_bfloat16;
constexpr int kTile = 128, kCap = 32;

__device__ unsigned mix(unsigned h) {
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  h *= 3266489917u;
  h ^= h >> 16;
  return h;
}

// Row r: zero, then about `mean` nonzeros at hashed columns (every 50th row: all nonzero).
__global__ void fill_g(T* g, int m, int n, int mean) {
  const int r = blockIdx.x;
  T* row = g + static_cast<size_t>(r) * n;
  const bool dense = r % 50 == 0;
  for (int c = threadIdx.x; c < n; c += blockDim.x) {
    const unsigned h = mix(static_cast<unsigned>(r) * 7919u + static_cast<unsigned>(c) * 104729u);
    const bool nz = dense || h % static_cast<unsigned>(n) < static_cast<unsigned>(mean);
    row[c] = __float2bfloat16(nz ? 0.01f + static_cast<float>(h >> 20) / 4096.0f : 0.0f);
  }
}

template <int U>
__global__ void __launch_bounds__(256)
    pack_kernel(unsigned* tw, int m, int n, int tiles, int entries_off, int backup_off,
                int tokens_off) {
  sg::twell_pack_rows<T, kTile, kCap, U>(tw, m, n, tiles, entries_off, backup_off, tokens_off);
}

int main(int argc, char** argv) {
  int m = 4096, n = 14336, mean = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--m")
      m = std::atoi(argv[i + 1]);
    else if (a == "--n")
      n = std::atoi(argv[i + 1]);
    else if (a == "--mean")
      mean = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (m <= 0 || n <= 0 || n % 8 != 0 || mean <= 0) {
    std::fprintf(stderr, "--m > 0, --n > 0 a multiple of 8, --mean > 0\n");
    return 2;
  }
  const int tiles = (n + kTile - 1) / kTile;
  auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t counts_b = align(size_t(m) * tiles * 4);
  const size_t entries_b = align(size_t(m) * tiles * kCap * 4);
  const size_t g_b = align(size_t(m) * n * 2);
  const size_t entries_off = counts_b, backup_off = counts_b + entries_b,
               tokens_off = backup_off + g_b, bytes = tokens_off + align(size_t(m) * 8);
  unsigned* tw = nullptr;
  CK(cudaMalloc(&tw, bytes));
  unsigned char* flush = nullptr;
  const size_t flush_b = size_t(256) << 20;
  CK(cudaMalloc(&flush, flush_b));
  CK(cudaMemset(tw, 0, bytes));
  fill_g<<<m, 256>>>(reinterpret_cast<T*>(reinterpret_cast<char*>(tw) + backup_off), m, n, mean);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "{\"device\": \"%s\", \"m\": %d, \"n\": %d, \"mean\": %d, \"g_bytes\": %zu, \"variants\": "
      "[\n",
      prop.name, m, n, mean, size_t(m) * n * 2);
  std::vector<unsigned char> ref, got(tokens_off + size_t(m) * 8);
  bool first = true;
  auto run = [&](const char* name, auto kernel, int rows_per_block) {
    // Clear what the pack writes (counts, entries, tokens), keep G.
    CK(cudaMemset(tw, 0, backup_off));
    CK(cudaMemset(reinterpret_cast<char*>(tw) + tokens_off, 0, size_t(m) * 8));
    const int grid = (m + rows_per_block - 1) / rows_per_block;
    auto launch = [&] {
      kernel<<<grid, rows_per_block * 32>>>(tw, m, n, tiles, static_cast<int>(entries_off / 4),
                                            static_cast<int>(backup_off / 4),
                                            static_cast<int>(tokens_off / 4));
      CK(cudaGetLastError());
    };
    const std::vector<float> t =
        time_launches(9, launch, [&] { CK(cudaMemsetAsync(flush, first ? 1 : 2, flush_b)); });
    CK(cudaMemcpy(got.data(), tw, backup_off, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(got.data() + backup_off, reinterpret_cast<char*>(tw) + tokens_off, size_t(m) * 8,
                  cudaMemcpyDeviceToHost));
    got.resize(backup_off + size_t(m) * 8);
    if (ref.empty()) ref = got;
    const bool same = got == ref;
    const float ms = t[t.size() / 2];
    std::printf("%s{\"variant\": \"%s\", \"ms\": %.5f, \"gbs\": %.1f, \"same_as_first\": %s}",
                first ? "" : ",\n", name, ms, double(m) * n * 2 / (ms * 1e6),
                same ? "true" : "false");
    std::fflush(stdout);
    first = false;
  };
  run("U4", pack_kernel<4>, 8);
  run("U8", pack_kernel<8>, 8);
  run("U4_rows4", pack_kernel<4>, 4);
  run("U8_rows4", pack_kernel<8>, 4);
  std::printf("\n]}\n");
  CK(cudaFree(tw));
  CK(cudaFree(flush));
  return 0;
}
