// Can a bitmap SpMM for N = 32 / 64 beat dense cuBLAS by #24's margins if it decodes A straight
// into the registers of a register-A wgmma? The bitmap_tc kernel (sg_bitmap_tc.cuh) is bound by
// shared-memory wavefronts and latency: its lanes load their values one 2-byte position at a time
// and read B by ldmatrix once per warp. Here every A register of the mma fragment is one 32-bit
// word (two values; an absent half stored as 0), and B is read by wgmma.m64nNk16 through a
// descriptor, once per warpgroup and m64 tile.
//
// Format, per warp tile (16 rows x 64 columns: one warp's share of an m64 tile for one k step):
// 32 x u16 register bits (bit r of lane L: its register r = 4·kq + j of k16 slice kq holds a
// value), then either
//   - register-major (the default): 16 x u16 register starts, then per register the words of the
//     lanes holding it, lane after lane. A register is one conflict-free 32-bit shared load at
//     start_r + (lanes below holding r), ranked by a ballot: about 9 instructions a register;
//   - lane-major: 32 x u16 lane starts, then each lane's words in register order. A lane walks
//     its own words (a predicated load and add a register), and the warp's loads of one register
//     scatter over the banks.
// padded to 16 bytes. Bytes: 4 per nonempty register pair plus a bit per pair (dense: 2 per
// element). Records are ordered (row block, k step, warp tile).
//
// Two kernels, both with two A register sets (step s + 1 is decoded while the multiplies of step
// s run) and MT m64 tiles per warpgroup, WG warpgroups per block, S stages:
//   - pair_wgmma_kernel: every thread copies its share of a step's records and B rows with
//     cp.async; a block barrier per step;
//   - pair_bulk_kernel: one thread issues two bulk copies per step (the step's group: a header of
//     record offsets, then the records; and B's rows, laid out beforehand by arrange_b in the
//     column groups the descriptor reads), counted by an mbarrier per stage. MODE 1 / 2 leave out
//     the decode / the multiplies (diagnostics), MODE 3 reads lane-major words.
//
// Build and run on the GPU machine (from the repository root):
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -Itemplates -Itools/debug
//        -o pair_wgmma tools/debug/bitmap_pair_wgmma_probe.cu -lcublas
//   ./pair_wgmma [--shapes 4096x4096 ...] [--sparsity 0.5 0.7 0.9] [--n 32 64] [--reps 20]
//                [--diag | --bulk | --bulk-diag | --lanes] [--host-only]
// Prints one JSON object: per case cuBLAS's time, each variant's time (median of L2-flushed runs,
// B's arrangement included for the bulk kernel), the format's bytes against dense, and the error
// of every variant against cuBLAS's result and against an fp64 reference of 64 sampled rows
// (worst_ratio <= 1 passes). --host-only builds the formats and decodes them back on the host.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "probe_common.cuh"
#include "sg_async_copy.cuh"
#include "sg_bitmap_tc.cuh"
#include "sg_bulk_copy.cuh"
#include "sg_wgmma.cuh"

using T = __half;

#define CB(x)                                                                      \
  do {                                                                             \
    cublasStatus_t s_ = (x);                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
      std::fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #x, \
                   static_cast<int>(s_));                                          \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

// 4-byte asynchronous copy (the record offsets of a stage).
__device__ __forceinline__ void cp_async4(unsigned dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ unsigned lds_u32(unsigned a) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(a));
  return v;
}
__device__ __forceinline__ unsigned lds_u16(unsigned a) {
  unsigned short v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(a));
  return v;
}

// A warp tile's 16 A registers from its staged record at rec (see the top comment). MODE 1: no
// word loads (diagnostics); MODE 3: lane-major words; otherwise register-major. lt: the lanes
// below this one.
template <int MODE>
__device__ __forceinline__ void decode_tile(unsigned rec, int lane, unsigned lt,
                                            unsigned (&out)[16]) {
  const unsigned bits = lds_u16(rec + 2 * lane);
  if constexpr (MODE == 3) {
    unsigned addr = rec + 128 + 4u * lds_u16(rec + 64 + 2 * lane);
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      unsigned v = 0u;
      if (bits & (1u << r)) {
        v = lds_u32(addr);
        addr += 4u;
      }
      out[r] = v;
    }
  } else {
    unsigned starts[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) starts[i] = lds_u32(rec + 64 + 4 * i);  // 16 x u16
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const bool p = bits & (1u << r);
      const unsigned bal = __ballot_sync(0xffffffffu, p);
      const unsigned start = (starts[r >> 1] >> (16 * (r & 1))) & 0xffffu;
      unsigned v = 0u;
      if (MODE == 1)
        v = bits ^ start;
      else if (p)
        v = lds_u32(rec + 96 + 4u * (start + __popc(bal & lt)));
      out[r] = v;
    }
  }
}

// One step's multiplies (4 k16 slices x MT m64 tiles, A from `in`, B's column groups at s_b) as
// one wgmma group, not waited for. MODE 2: the words folded into the accumulators instead.
template <int N, int MT, int MODE>
__device__ __forceinline__ void multiply_step(unsigned s_b, const unsigned (&in)[MT][16],
                                              float (&acc)[MT][N / 2]) {
  if constexpr (MODE == 2) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 16; ++r) acc[mt][r % (N / 2)] += __uint_as_float(in[mt][r] & 0x3fffu);
  } else {
    constexpr unsigned kGroup = sg::bitmap_tc_b_group<64>();
    sg::wgmma_fence();
#pragma unroll
    for (int kq = 0; kq < 4; ++kq) {
      const unsigned long long desc = sg::detail::wgmma_desc_nmajor(s_b + kq * 256, 128, kGroup);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        sg::detail::wgmma_m64k16<T, N>(acc[mt], &in[mt][4 * kq], desc);
    }
    sg::wgmma_commit();
  }
}

// The warp's rows of Y from the accumulators (the mma C layout per n8 tile): half2 stores, or
// fp32 adds into ws when the grid splits K.
template <int N, int MT, int WG>
__device__ __forceinline__ void store_tile(const float (&acc)[MT][N / 2], T* __restrict__ Y,
                                           float* __restrict__ ws, int rb, int wg, int ww,
                                           int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int row0 = rb * 64 * MT * WG + (wg * MT + mt) * 64 + ww * 16 + g;
#pragma unroll
    for (int nt = 0; nt < N / 8; ++nt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + 8 * h, c = nt * 8 + 2 * t;
        const float x0 = acc[mt][nt * 4 + 2 * h], x1 = acc[mt][nt * 4 + 2 * h + 1];
        if (gridDim.y == 1) {
          *reinterpret_cast<__half2*>(Y + static_cast<size_t>(r) * N + c) =
              __floats2half2_rn(x0, x1);
        } else {
          atomicAdd(ws + static_cast<size_t>(r) * N + c, x0);
          atomicAdd(ws + static_cast<size_t>(r) * N + c + 1, x1);
        }
      }
    }
  }
}

// Stage s: B (column groups, B_STAGE bytes), the WT + 1 record offsets (OFF_BYTES), the records.
// MODE (diagnostics): 0 the kernel; 1 no decode (A = the lane's bits, no word loads); 2 no
// multiply (the decoded words folded into the accumulators instead of the wgmma).
template <int N, int MT, int WG, int S, int MODE = 0>
__global__ void __launch_bounds__(128 * WG)
    pair_wgmma_kernel(const uint4* __restrict__ recs, const int* __restrict__ rec_off,
                      const T* __restrict__ B, T* __restrict__ Y, float* __restrict__ ws, int K,
                      int KS, int steps_per_part, int stage_a_bytes) {
  constexpr int THREADS = 128 * WG, NT = N / 8, WT = 4 * MT * WG;
  constexpr int B_STAGE = (NT * sg::bitmap_tc_b_group<64>() + 127) / 128 * 128;
  constexpr int OFF_BYTES = ((WT + 1) * 4 + 15) / 16 * 16;
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned s0 = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int stage_bytes = B_STAGE + OFF_BYTES + stage_a_bytes;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, ww = warp & 3;
  const int rb = blockIdx.x;
  const int ks0 = blockIdx.y * steps_per_part, ks1 = min(KS, ks0 + steps_per_part);
  const int steps = ks1 - ks0;

  // The record range of the next step to issue, loaded one issue ahead (the loads' latency falls
  // on a step's decode, not on the copies that follow them).
  int next0 = 0, next1 = 0;
  auto load_range = [&](int s) {
    if (s < steps) {
      const int base = (rb * KS + ks0 + s) * WT;
      next0 = __ldg(rec_off + base);
      next1 = __ldg(rec_off + base + WT);
    }
  };
  auto issue = [&](int s) {
    if (s < steps) {
      const unsigned st = s0 + (s % S) * stage_bytes;
      sg::bitmap_tc_issue_b_groups<T, NT, THREADS, 64>(st, B, (ks0 + s) * 64, K, tid);
      const int base = (rb * KS + ks0 + s) * WT;
      if (tid <= WT) cp_async4(st + B_STAGE + 4 * tid, rec_off + base + tid);
      for (int i = tid; i < next1 - next0; i += THREADS)
        sg::detail::cp_async16(st + B_STAGE + OFF_BYTES + 16 * i, recs + next0 + i, false);
    }
    sg::cp_async_commit();
    load_range(s + 1);
  };

  float acc[MT][N / 2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[mt][i] = 0.0f;
  // Two A sets of a whole step (4 k16 slices x 4 registers per m64 tile): step s + 1 is decoded
  // while the multiplies of step s run.
  unsigned a[2][MT][16];
  const unsigned lt = (1u << lane) - 1u;

  // Step s's A registers from its staged records.
  auto decode = [&](int s, unsigned(&out)[MT][16]) {
    const unsigned st = s0 + (s % S) * stage_bytes;
    const unsigned s_off = st + B_STAGE, s_rec = st + B_STAGE + OFF_BYTES;
    const int o0 = static_cast<int>(lds_u32(s_off));
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      const int wt = (wg * MT + mt) * 4 + ww;
      decode_tile<MODE>(s_rec + 16u * (lds_u32(s_off + 4 * wt) - o0), lane, lt, out[mt]);
    }
  };
  auto multiply = [&](int s, const unsigned(&in)[MT][16]) {
    multiply_step<N, MT, MODE>(s0 + (s % S) * stage_bytes, in, acc);
  };

  // Steps are issued S - 2 ahead: a step's buffer is refilled only after every warp has waited
  // for the multiplies of the step before the last (wgmma_wait<1> below, then the barrier).
  load_range(0);
#pragma unroll 1
  for (int s = 0; s < S - 2; ++s) issue(s);
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    sg::cp_async_wait<S - 3>();
    __syncthreads();
    issue(s + S - 2);  // into the buffer of step s - 2, whose multiplies are done
    if (s & 1) {
      decode(s, a[1]);
      multiply(s, a[1]);
    } else {
      decode(s, a[0]);
      multiply(s, a[0]);
    }
    sg::wgmma_wait<1>();  // step s - 1's multiplies are done: its A set is free
  }
  sg::wgmma_wait<0>();
  sg::cp_async_wait<0>();
  store_tile<N, MT, WG>(acc, Y, ws, rb, wg, ww, lane);
}

// The same decode and multiplies, fed by two bulk copies per step that one thread issues and an
// mbarrier per stage counts: the step's group (a header of the WT + 1 record offsets relative to
// the group, in 16-byte units, then its records) and B's rows of the step, which arrange_b laid
// out beforehand in the column groups the wgmma descriptor reads (so they are contiguous). No
// per-thread copy loops; S - 1 steps in flight.
template <int N, int MT, int WG, int S, int MODE = 0>
__global__ void __launch_bounds__(128 * WG)
    pair_bulk_kernel(const uint4* __restrict__ groups, const int* __restrict__ group_off,
                     const uint4* __restrict__ Bp, T* __restrict__ Y, float* __restrict__ ws,
                     int KS, int steps_per_part, int stage_a_bytes) {
  constexpr int B_STAGE = (N / 8) * sg::bitmap_tc_b_group<64>();  // a multiple of 16
  extern __shared__ __align__(128) unsigned char smem[];
  const unsigned sbar = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const unsigned s0 = sbar + 128;
  const int stage_bytes = B_STAGE + stage_a_bytes;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2, ww = warp & 3;
  const int rb = blockIdx.x;
  const int ks0 = blockIdx.y * steps_per_part, ks1 = min(KS, ks0 + steps_per_part);
  const int steps = ks1 - ks0;
  if (tid < S) sg::detail::bulk_barrier_init(sbar + 8 * tid, 1);
  sg::detail::bulk_barrier_init_fence();
  __syncthreads();

  int next0 = 0, next1 = 0;  // thread 0: the next group to issue, loaded one issue ahead
  auto load_range = [&](int s) {
    if (s < steps) {
      next0 = __ldg(group_off + rb * KS + ks0 + s);
      next1 = __ldg(group_off + rb * KS + ks0 + s + 1);
    }
  };
  auto issue = [&](int s) {
    if (s < steps) {
      const unsigned st = s0 + (s % S) * stage_bytes, bar = sbar + 8 * (s % S);
      const unsigned a_bytes = 16u * static_cast<unsigned>(next1 - next0);
      sg::detail::bulk_expect(bar, B_STAGE + a_bytes);
      sg::detail::bulk_copy(st, Bp + static_cast<size_t>(ks0 + s) * (B_STAGE / 16), B_STAGE, bar);
      sg::detail::bulk_copy(st + B_STAGE, groups + next0, a_bytes, bar);
    }
    load_range(s + 1);
  };

  float acc[MT][N / 2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int i = 0; i < N / 2; ++i) acc[mt][i] = 0.0f;
  unsigned a[2][MT][16];
  const unsigned lt = (1u << lane) - 1u;
  auto decode = [&](int s, unsigned(&out)[MT][16]) {
    const unsigned sg0 = s0 + (s % S) * stage_bytes + B_STAGE;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      decode_tile<MODE>(sg0 + 16u * lds_u32(sg0 + 4 * ((wg * MT + mt) * 4 + ww)), lane, lt,
                        out[mt]);
  };
  auto multiply = [&](int s, const unsigned(&in)[MT][16]) {
    multiply_step<N, MT, MODE>(s0 + (s % S) * stage_bytes, in, acc);
  };

  if (tid == 0) {
    load_range(0);
    for (int s = 0; s < S - 1; ++s) issue(s);
  }
#pragma unroll 1
  for (int s = 0; s < steps; ++s) {
    sg::detail::bulk_wait(sbar + 8 * (s % S), (s / S) & 1);
    if (s & 1) {
      decode(s, a[1]);
      multiply(s, a[1]);
    } else {
      decode(s, a[0]);
      multiply(s, a[0]);
    }
    sg::wgmma_wait<1>();  // step s - 1's multiplies are done: its A set and stage are free
    __syncthreads();
    if (tid == 0) issue(s + S - 1);  // into the stage of step s - 1
  }
  sg::wgmma_wait<0>();
  store_tile<N, MT, WG>(acc, Y, ws, rb, wg, ww, lane);
}

// B (K x N row-major) into the steps' column groups: piece (step ks, group j, row r) at
// ks·B_STAGE + j·(64·16 + 16) + r·16 bytes; rows at or beyond K and each group's pad are zero.
__global__ void arrange_b(const T* __restrict__ B, uint4* __restrict__ Bp, int K, int N, int KS) {
  const int NT = N / 8, per_group = 65;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(KS) * NT * per_group) return;
  const int r = static_cast<int>(i % per_group), j = static_cast<int>(i / per_group % NT);
  const int ks = static_cast<int>(i / (per_group * NT));
  const int row = ks * 64 + r;
  uint4 v = make_uint4(0, 0, 0, 0);
  if (r < 64 && row < K)
    v = *reinterpret_cast<const uint4*>(B + static_cast<size_t>(row) * N + j * 8);
  Bp[i] = v;
}

__global__ void to_half(const float* __restrict__ ws, T* __restrict__ y, size_t n) {
  const size_t i = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  if (i + 3 < n) {
    const float4 v = *reinterpret_cast<const float4*>(ws + i);
    reinterpret_cast<__half2*>(y + i)[0] = __floats2half2_rn(v.x, v.y);
    reinterpret_cast<__half2*>(y + i)[1] = __floats2half2_rn(v.z, v.w);
  }
}

struct Format {
  std::vector<uint4> recs;
  std::vector<int> off;  // 16-byte units, one per record plus the end
  int stage_a_bytes = 0;
  size_t bytes = 0;
};

// Builds the records of A (M x K row-major halves, zero = absent) for row blocks of RB rows.
// lane_major: the words lane after lane instead (each lane's own registers in order), after the
// bits and 32 x u16 lane starts (in words): a lane walks its words with no ballot, and the
// warp's loads of one register scatter over the banks.
Format build(const std::vector<uint16_t>& A, int M, int K, int MT, int WG,
             bool lane_major = false) {
  const int RB = 64 * MT * WG, WT = 4 * MT * WG, KS = K / 64;
  Format f;
  std::vector<uint32_t> buf;
  for (int rb = 0; rb < M / RB; ++rb)
    for (int ks = 0; ks < KS; ++ks) {
      const size_t first = f.recs.size();
      for (int wt = 0; wt < WT; ++wt) {
        f.off.push_back(static_cast<int>(f.recs.size()));
        const int r0 = rb * RB + (wt / 4) * 64 + (wt % 4) * 16, k0 = ks * 64;
        uint16_t bits[32] = {};
        uint32_t word[32][16];
        for (int L = 0; L < 32; ++L) {
          const int g = L / 4, t = L % 4;
          for (int r = 0; r < 16; ++r) {
            const int kq = r / 4, j = r % 4;
            const int row = r0 + g + (j & 1) * 8, col = k0 + kq * 16 + 2 * t + (j >> 1) * 8;
            const uint16_t lo = A[static_cast<size_t>(row) * K + col];
            const uint16_t hi = A[static_cast<size_t>(row) * K + col + 1];
            word[L][r] = static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16;
            if (lo != 0 || hi != 0) bits[L] |= static_cast<uint16_t>(1u << r);
          }
        }
        if (lane_major) {
          buf.assign(32, 0u);  // 64 bytes of bits, then 32 x u16 lane starts (in words)
          for (int L = 0; L < 32; ++L) {
            buf[L / 2] |= static_cast<uint32_t>(bits[L]) << (16 * (L % 2));
            buf[16 + L / 2] |= static_cast<uint32_t>(buf.size() - 32) << (16 * (L % 2));
            for (int r = 0; r < 16; ++r)
              if (bits[L] >> r & 1) buf.push_back(word[L][r]);
          }
          while (buf.size() % 4) buf.push_back(0u);
          for (size_t i = 0; i < buf.size(); i += 4)
            f.recs.push_back(make_uint4(buf[i], buf[i + 1], buf[i + 2], buf[i + 3]));
          continue;
        }
        buf.assign(24, 0u);  // 64 bytes of bits, then 16 x u16 register starts (in words)
        for (int L = 0; L < 32; ++L) buf[L / 2] |= static_cast<uint32_t>(bits[L]) << (16 * (L % 2));
        for (int r = 0; r < 16; ++r) {
          const uint32_t start = static_cast<uint32_t>(buf.size() - 24);
          buf[16 + r / 2] |= start << (16 * (r % 2));
          for (int L = 0; L < 32; ++L)
            if (bits[L] >> r & 1) buf.push_back(word[L][r]);
        }
        while (buf.size() % 4) buf.push_back(0u);
        for (size_t i = 0; i < buf.size(); i += 4)
          f.recs.push_back(make_uint4(buf[i], buf[i + 1], buf[i + 2], buf[i + 3]));
      }
      f.stage_a_bytes = std::max(f.stage_a_bytes, static_cast<int>((f.recs.size() - first) * 16));
    }
  f.off.push_back(static_cast<int>(f.recs.size()));
  f.bytes = f.recs.size() * 16 + f.off.size() * 4;
  return f;
}

// The kernel's decode on the host: every record back into the fragment registers' elements,
// compared with A. Returns the number of mismatches.
size_t check_format(const Format& f, const std::vector<uint16_t>& A, int M, int K, int MT, int WG) {
  const int RB = 64 * MT * WG, WT = 4 * MT * WG, KS = K / 64;
  size_t bad = 0;
  for (int rb = 0; rb < M / RB; ++rb)
    for (int ks = 0; ks < KS; ++ks)
      for (int wt = 0; wt < WT; ++wt) {
        const uint32_t* rec =
            reinterpret_cast<const uint32_t*>(f.recs.data() + f.off[(rb * KS + ks) * WT + wt]);
        const uint16_t* bits = reinterpret_cast<const uint16_t*>(rec);
        const uint16_t* starts = bits + 32;
        const uint32_t* words = rec + 24;
        const int r0 = rb * RB + (wt / 4) * 64 + (wt % 4) * 16, k0 = ks * 64;
        for (int r = 0; r < 16; ++r) {
          const int start = starts[r];
          int rank = 0;
          for (int L = 0; L < 32; ++L) {
            const bool p = bits[L] >> r & 1;
            const uint32_t v = p ? words[start + rank] : 0u;
            rank += p;
            const int g = L / 4, t = L % 4, kq = r / 4, j = r % 4;
            const int row = r0 + g + (j & 1) * 8, col = k0 + kq * 16 + 2 * t + (j >> 1) * 8;
            bad += (v & 0xffffu) != A[static_cast<size_t>(row) * K + col];
            bad += (v >> 16) != A[static_cast<size_t>(row) * K + col + 1];
          }
        }
      }
  return bad;
}

// The bulk kernel's groups from a Format: per (row block, k step) a header of the WT + 1 record
// offsets relative to the group (16-byte units, the header included), then the records.
struct Groups {
  std::vector<uint4> data;
  std::vector<int> off;  // 16-byte units, one per group plus the end
  int stage_a_bytes = 0;
};
Groups group(const Format& f, int WT) {
  Groups g;
  const int hdr = ((WT + 1) * 4 + 15) / 16;
  const size_t n = (f.off.size() - 1) / WT;
  for (size_t i = 0; i < n; ++i) {
    g.off.push_back(static_cast<int>(g.data.size()));
    std::vector<uint32_t> h(hdr * 4, 0u);
    for (int wt = 0; wt <= WT; ++wt) h[wt] = hdr + (f.off[i * WT + wt] - f.off[i * WT]);
    for (int q = 0; q < hdr; ++q)
      g.data.push_back(make_uint4(h[4 * q], h[4 * q + 1], h[4 * q + 2], h[4 * q + 3]));
    g.data.insert(g.data.end(), f.recs.begin() + f.off[i * WT],
                  f.recs.begin() + f.off[i * WT + WT]);
    g.stage_a_bytes =
        std::max(g.stage_a_bytes, static_cast<int>((g.data.size() - g.off.back()) * 16));
  }
  g.off.push_back(static_cast<int>(g.data.size()));
  return g;
}

float half_to_float(uint16_t h) {
  __half x;
  std::memcpy(&x, &h, 2);
  return __half2float(x);
}

int main(int argc, char** argv) {
  std::vector<std::pair<int, int>> shapes = {
      {4096, 4096}, {11008, 4096}, {4096, 11008}, {12288, 12288}, {28672, 7168}};
  std::vector<double> sparsities = {0.5, 0.7, 0.9};
  std::vector<int> ns = {32, 64};
  int reps = 20;
  bool host_only = false;  // --host-only: build and check the formats, no GPU
  bool diag = false;       // --diag: N = 64 stage / shape variants and the MODE diagnostics
  bool bulk = false;       // --bulk: the bulk-copy kernel's variants beside one of the first kernel
  bool bulkdiag = false;   // --bulk-diag: the bulk kernel with the MODE diagnostics
  bool lanes = false;      // --lanes: the bulk kernel, register-major against lane-major words
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto list = [&](auto push) {
      while (i + 1 < argc && argv[i + 1][0] != '-') push(argv[++i]);
    };
    if (a == "--shapes") {
      shapes.clear();
      list([&](const char* s) {
        int m = 0, k = 0;
        if (std::sscanf(s, "%dx%d", &m, &k) != 2) {
          std::fprintf(stderr, "--shapes: '%s' is not MxK\n", s);
          std::exit(2);
        }
        shapes.push_back({m, k});
      });
    } else if (a == "--sparsity") {
      sparsities.clear();
      list([&](const char* s) { sparsities.push_back(std::atof(s)); });
    } else if (a == "--n") {
      ns.clear();
      list([&](const char* s) { ns.push_back(std::atoi(s)); });
    } else if (a == "--lanes") {
      lanes = true;
    } else if (a == "--bulk-diag") {
      bulkdiag = true;
    } else if (a == "--bulk") {
      bulk = true;
    } else if (a == "--diag") {
      diag = true;
    } else if (a == "--host-only") {
      host_only = true;
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  cudaDeviceProp prop{};
  cublasHandle_t handle = nullptr;
  const size_t flush_b = size_t(512) << 20;
  void* flush = nullptr;
  if (!host_only) {
    CK(cudaGetDeviceProperties(&prop, 0));
    CB(cublasCreate(&handle));
    CK(cudaMalloc(&flush, flush_b));
  }
  std::printf("{\"device\": \"%s\", \"probe\": \"bitmap_pair_wgmma\", \"cases\": [\n",
              host_only ? "host" : prop.name);
  bool first_case = true;
  for (const auto& shape : shapes)
    for (double sp : sparsities) {
      const int M = shape.first, K = shape.second;
      std::mt19937 rng(1234u + M + 7u * K + static_cast<unsigned>(sp * 100));
      std::uniform_real_distribution<float> val(-1.0f, 1.0f), keep(0.0f, 1.0f);
      std::vector<uint16_t> A(static_cast<size_t>(M) * K);
      size_t nnz = 0;
      for (auto& x : A) {
        float v = val(rng);
        if (std::fabs(v) < 1e-3f) v = 0.37f;  // no accidental zeros among the kept
        const bool kept = keep(rng) >= sp;
        const __half h = __float2half(kept ? v : 0.0f);
        std::memcpy(&x, &h, 2);
        nnz += kept;
      }
      // The formats of the three row-block shapes (MT, WG) = (2, 1), (1, 2), (1, 1), for every N.
      const Format f21 = build(A, M, K, 2, 1), f12 = build(A, M, K, 1, 2),
                   f11 = build(A, M, K, 1, 1);
      const Format f22 = diag || bulk || bulkdiag || lanes ? build(A, M, K, 2, 2) : Format{};
      const Format l12 = lanes ? build(A, M, K, 1, 2, true) : Format{};
      const Format l11 = lanes ? build(A, M, K, 1, 1, true) : Format{};
      const Format l22 = lanes ? build(A, M, K, 2, 2, true) : Format{};
      if (host_only) {
        std::printf("%s{\"m\": %d, \"k\": %d, \"sparsity\": %.2f, \"format_mismatches\": %zu}",
                    first_case ? "" : ",\n", M, K, sp,
                    check_format(f21, A, M, K, 2, 1) + check_format(f12, A, M, K, 1, 2) +
                        check_format(f11, A, M, K, 1, 1));
        first_case = false;
        continue;
      }
      T* dA = nullptr;
      CK(cudaMalloc(&dA, A.size() * 2));
      CK(cudaMemcpy(dA, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
      for (int N : ns) {
        std::vector<uint16_t> Bh(static_cast<size_t>(K) * N);
        for (auto& x : Bh) {
          const __half h = __float2half(val(rng));
          std::memcpy(&x, &h, 2);
        }
        T *dB = nullptr, *dY = nullptr, *dRef = nullptr;
        float* dW = nullptr;
        CK(cudaMalloc(&dB, Bh.size() * 2));
        CK(cudaMalloc(&dY, static_cast<size_t>(M) * N * 2));
        CK(cudaMalloc(&dRef, static_cast<size_t>(M) * N * 2));
        CK(cudaMalloc(&dW, static_cast<size_t>(M) * N * 4));
        CK(cudaMemcpy(dB, Bh.data(), Bh.size() * 2, cudaMemcpyHostToDevice));
        // cuBLAS: Y^T (N x M, column-major = Y row-major) = B^T (N x K) · A^T (K x M).
        const float one = 1.0f, zero = 0.0f;
        auto dense = [&] {
          CB(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, dB, CUDA_R_16F, N, dA,
                          CUDA_R_16F, K, &zero, dRef, CUDA_R_16F, N, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT));
        };
        int flip = 0;
        auto flush_l2 = [&] { CK(cudaMemsetAsync(flush, ++flip & 1, flush_b)); };
        const std::vector<float> td = time_launches(reps, dense, flush_l2);
        std::vector<uint16_t> ref(static_cast<size_t>(M) * N);
        CK(cudaMemcpy(ref.data(), dRef, ref.size() * 2, cudaMemcpyDeviceToHost));
        // fp64 reference of 64 sampled rows.
        std::vector<int> rows;
        for (int i = 0; i < 64; ++i) rows.push_back(static_cast<int>((1ull * i * 2654435761u) % M));
        std::vector<double> exact(rows.size() * N), mag(rows.size() * N);
        for (size_t ri = 0; ri < rows.size(); ++ri)
          for (int k = 0; k < K; ++k) {
            const float av = half_to_float(A[static_cast<size_t>(rows[ri]) * K + k]);
            if (av == 0.0f) continue;
            for (int c = 0; c < N; ++c) {
              const double p = double(av) * half_to_float(Bh[static_cast<size_t>(k) * N + c]);
              exact[ri * N + c] += p;
              mag[ri * N + c] += std::fabs(p);
            }
          }
        // worst |y - exact| / (2^-11 |exact| + K·2^-23·sum|a·b|): the fp16 rounding of y plus fp32
        // accumulation; <= 1 passes.
        auto worst = [&](const std::vector<uint16_t>& y) {
          double w = 0;
          for (size_t ri = 0; ri < rows.size(); ++ri)
            for (int c = 0; c < N; ++c) {
              const double e = exact[ri * N + c];
              const double d =
                  std::fabs(half_to_float(y[static_cast<size_t>(rows[ri]) * N + c]) - e);
              const double bound =
                  std::ldexp(std::fabs(e), -11) + K * std::ldexp(mag[ri * N + c], -23);
              w = std::max(w, d / bound);
            }
          return w;
        };
        std::printf(
            "%s{\"m\": %d, \"k\": %d, \"n\": %d, \"sparsity\": %.2f, \"nnz\": %zu, "
            "\"cublas_ms\": %.5f, \"cublas_worst_ratio\": %.3f, \"variants\": [",
            first_case ? "" : ",\n", M, K, N, sp, nnz, td[td.size() / 2], worst(ref));
        first_case = false;
        bool first_v = true;
        const size_t mn = static_cast<size_t>(M) * N;
        // Times one variant's launch (its kernel needs smem bytes of dynamic shared memory),
        // checks its poisoned output against the fp64 rows and cuBLAS, prints its JSON entry.
        auto measure = [&](const char* name, auto kernel, int MT, int WG, int S, dim3 grid,
                           int smem, size_t format_bytes, const auto& launch) {
          const bool ok = smem <= 227 * 1024;
          std::vector<float> t;
          double w = -1, vs_cublas = -1;
          int blocks_per_sm = 0;
          if (ok) {
            CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, 128 * WG,
                                                             smem));
            CK(cudaMemset(dY, 0xff, mn * 2));  // poisoned: NaN halves
            t = time_launches(reps, launch, flush_l2);
            std::vector<uint16_t> y(mn);
            CK(cudaMemcpy(y.data(), dY, mn * 2, cudaMemcpyDeviceToHost));
            w = worst(y);
            double md = 0, mr = 0;
            for (size_t i = 0; i < mn; ++i) {
              md = std::max(md, double(std::fabs(half_to_float(y[i]) - half_to_float(ref[i]))));
              mr = std::max(mr, double(std::fabs(half_to_float(ref[i]))));
              if (std::isnan(half_to_float(y[i]))) md = 1e30;
            }
            vs_cublas = md / mr;
          }
          std::printf(
              "%s{\"variant\": \"%s\", \"mt\": %d, \"wg\": %d, \"stages\": %d, \"ksplit\": %u, "
              "\"smem\": %d, \"blocks_per_sm\": %d, \"format_bytes_over_dense\": %.4f, "
              "\"ms\": %.5f, \"speedup_vs_cublas\": %.3f, \"worst_ratio\": %.3f, "
              "\"max_diff_vs_cublas_over_max\": %.2e}",
              first_v ? "" : ", ", name, MT, WG, S, grid.y, smem, blocks_per_sm,
              double(format_bytes) / (2.0 * M * K), ok ? t[t.size() / 2] : -1.0,
              ok ? td[td.size() / 2] / t[t.size() / 2] : -1.0, w, vs_cublas);
          std::fflush(stdout);
          first_v = false;
        };
        // Uploads a record table and its offsets; freed by the caller.
        auto upload = [](const std::vector<uint4>& recs, const std::vector<int>& off, uint4** dR,
                         int** dO) {
          CK(cudaMalloc(dR, recs.size() * 16));
          CK(cudaMalloc(dO, off.size() * 4));
          CK(cudaMemcpy(*dR, recs.data(), recs.size() * 16, cudaMemcpyHostToDevice));
          CK(cudaMemcpy(*dO, off.data(), off.size() * 4, cudaMemcpyHostToDevice));
        };
        auto variant = [&](const char* name, auto kernel, int MT, int WG, int S, int ksplit) {
          const int RB = 64 * MT * WG, KS = K / 64;
          if (M % RB != 0 || K % 64 != 0) return;
          const Format& f = MT == 2 ? (WG == 2 ? f22 : f21) : WG == 2 ? f12 : f11;
          uint4* dR = nullptr;
          int* dO = nullptr;
          upload(f.recs, f.off, &dR, &dO);
          const int NT = N / 8, WT = 4 * MT * WG;
          const int b_stage = (NT * (64 * 16 + 16) + 127) / 128 * 128;
          const int off_bytes = ((WT + 1) * 4 + 15) / 16 * 16;
          const int smem = S * (b_stage + off_bytes + f.stage_a_bytes);
          const int per = (KS + ksplit - 1) / ksplit;
          const dim3 grid(M / RB, (KS + per - 1) / per);
          measure(name, kernel, MT, WG, S, grid, smem, f.bytes, [&] {
            if (grid.y > 1) CK(cudaMemsetAsync(dW, 0, mn * 4));
            kernel<<<grid, 128 * WG, smem>>>(dR, dO, dB, dY, dW, K, KS, per, f.stage_a_bytes);
            CK(cudaGetLastError());
            if (grid.y > 1) to_half<<<(mn / 4 + 255) / 256, 256>>>(dW, dY, mn);
          });
          CK(cudaFree(dR));
          CK(cudaFree(dO));
        };
        // The bulk kernel: B arranged by arrange_b inside the timed launch.
        const int KSa = K / 64;
        uint4* dBp = nullptr;
        const size_t bp_pieces = static_cast<size_t>(KSa) * (N / 8) * 65;
        CK(cudaMalloc(&dBp, bp_pieces * 16));
        auto variant3 = [&](const char* name, auto kernel, int MT, int WG, int S, int ksplit,
                            const Format* given = nullptr) {
          const int RB = 64 * MT * WG, KS = K / 64, WT = 4 * MT * WG;
          if (M % RB != 0 || K % 64 != 0) return;
          const Format& f = given ? *given : MT == 2 ? (WG == 2 ? f22 : f21) : WG == 2 ? f12 : f11;
          const Groups gr = group(f, WT);
          uint4* dG = nullptr;
          int* dO = nullptr;
          upload(gr.data, gr.off, &dG, &dO);
          const int b_stage = (N / 8) * (64 * 16 + 16);
          const int smem = 128 + S * (b_stage + gr.stage_a_bytes);
          const int per = (KS + ksplit - 1) / ksplit;
          const dim3 grid(M / RB, (KS + per - 1) / per);
          measure(
              name, kernel, MT, WG, S, grid, smem, gr.data.size() * 16 + gr.off.size() * 4, [&] {
                arrange_b<<<static_cast<unsigned>((bp_pieces + 255) / 256), 256>>>(dB, dBp, K, N,
                                                                                   KS);
                CK(cudaGetLastError());
                if (grid.y > 1) CK(cudaMemsetAsync(dW, 0, mn * 4));
                kernel<<<grid, 128 * WG, smem>>>(dG, dO, dBp, dY, dW, KS, per, gr.stage_a_bytes);
                CK(cudaGetLastError());
                if (grid.y > 1) to_half<<<(mn / 4 + 255) / 256, 256>>>(dW, dY, mn);
              });
          CK(cudaFree(dG));
          CK(cudaFree(dO));
        };
        if (lanes && N == 64) {
          variant3("bulk_mt1_wg2_s4", pair_bulk_kernel<64, 1, 2, 4>, 1, 2, 4, 1);
          variant3("bulk_mt1_wg2_s4_lane", pair_bulk_kernel<64, 1, 2, 4, 3>, 1, 2, 4, 1, &l12);
          variant3("bulk_mt1_wg1_s6_k2", pair_bulk_kernel<64, 1, 1, 6>, 1, 1, 6, 2);
          variant3("bulk_mt1_wg1_s6_k2_lane", pair_bulk_kernel<64, 1, 1, 6, 3>, 1, 1, 6, 2, &l11);
          variant3("bulk_mt2_wg2_s4", pair_bulk_kernel<64, 2, 2, 4>, 2, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4_lane", pair_bulk_kernel<64, 2, 2, 4, 3>, 2, 2, 4, 1, &l22);
        } else if (lanes) {
          variant3("bulk_mt2_wg2_s4", pair_bulk_kernel<32, 2, 2, 4>, 2, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4_lane", pair_bulk_kernel<32, 2, 2, 4, 3>, 2, 2, 4, 1, &l22);
          variant3("bulk_mt1_wg1_s6_k2", pair_bulk_kernel<32, 1, 1, 6>, 1, 1, 6, 2);
          variant3("bulk_mt1_wg1_s6_k2_lane", pair_bulk_kernel<32, 1, 1, 6, 3>, 1, 1, 6, 2, &l11);
          variant3("bulk_mt1_wg2_s4", pair_bulk_kernel<32, 1, 2, 4>, 1, 2, 4, 1);
          variant3("bulk_mt1_wg2_s4_lane", pair_bulk_kernel<32, 1, 2, 4, 3>, 1, 2, 4, 1, &l12);
        } else if (bulkdiag && N == 64) {
          variant3("bulk_mt1_wg2_s4", pair_bulk_kernel<64, 1, 2, 4>, 1, 2, 4, 1);
          variant3("bulk_mt1_wg2_s4_nodecode", pair_bulk_kernel<64, 1, 2, 4, 1>, 1, 2, 4, 1);
          variant3("bulk_mt1_wg2_s4_nomma", pair_bulk_kernel<64, 1, 2, 4, 2>, 1, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4", pair_bulk_kernel<64, 2, 2, 4>, 2, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4_nodecode", pair_bulk_kernel<64, 2, 2, 4, 1>, 2, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4_nomma", pair_bulk_kernel<64, 2, 2, 4, 2>, 2, 2, 4, 1);
          variant3("bulk_mt1_wg1_s6_k2", pair_bulk_kernel<64, 1, 1, 6>, 1, 1, 6, 2);
          variant3("bulk_mt1_wg1_s6_k2_nodecode", pair_bulk_kernel<64, 1, 1, 6, 1>, 1, 1, 6, 2);
          variant3("bulk_mt1_wg1_s6_k2_nomma", pair_bulk_kernel<64, 1, 1, 6, 2>, 1, 1, 6, 2);
        } else if (bulkdiag) {
          variant3("bulk_mt2_wg2_s4", pair_bulk_kernel<32, 2, 2, 4>, 2, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4_nodecode", pair_bulk_kernel<32, 2, 2, 4, 1>, 2, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4_nomma", pair_bulk_kernel<32, 2, 2, 4, 2>, 2, 2, 4, 1);
          variant3("bulk_mt1_wg1_s6_k2", pair_bulk_kernel<32, 1, 1, 6>, 1, 1, 6, 2);
          variant3("bulk_mt1_wg1_s6_k2_nodecode", pair_bulk_kernel<32, 1, 1, 6, 1>, 1, 1, 6, 2);
          variant3("bulk_mt1_wg1_s6_k2_nomma", pair_bulk_kernel<32, 1, 1, 6, 2>, 1, 1, 6, 2);
        } else if (bulk && N == 64) {
          variant("v2_mt2_wg1_s4", pair_wgmma_kernel<64, 2, 1, 4>, 2, 1, 4, 1);
          variant3("bulk_mt2_wg1_s4", pair_bulk_kernel<64, 2, 1, 4>, 2, 1, 4, 1);
          variant3("bulk_mt2_wg1_s6", pair_bulk_kernel<64, 2, 1, 6>, 2, 1, 6, 1);
          variant3("bulk_mt2_wg1_s4_k2", pair_bulk_kernel<64, 2, 1, 4>, 2, 1, 4, 2);
          variant3("bulk_mt1_wg2_s4", pair_bulk_kernel<64, 1, 2, 4>, 1, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4", pair_bulk_kernel<64, 2, 2, 4>, 2, 2, 4, 1);
          variant3("bulk_mt1_wg1_s6", pair_bulk_kernel<64, 1, 1, 6>, 1, 1, 6, 1);
          variant3("bulk_mt1_wg1_s6_k2", pair_bulk_kernel<64, 1, 1, 6>, 1, 1, 6, 2);
        } else if (bulk) {
          variant("v2_mt2_wg1_s4", pair_wgmma_kernel<32, 2, 1, 4>, 2, 1, 4, 1);
          variant3("bulk_mt2_wg1_s4", pair_bulk_kernel<32, 2, 1, 4>, 2, 1, 4, 1);
          variant3("bulk_mt2_wg1_s6", pair_bulk_kernel<32, 2, 1, 6>, 2, 1, 6, 1);
          variant3("bulk_mt2_wg1_s4_k2", pair_bulk_kernel<32, 2, 1, 4>, 2, 1, 4, 2);
          variant3("bulk_mt1_wg2_s4", pair_bulk_kernel<32, 1, 2, 4>, 1, 2, 4, 1);
          variant3("bulk_mt2_wg2_s4", pair_bulk_kernel<32, 2, 2, 4>, 2, 2, 4, 1);
          variant3("bulk_mt1_wg1_s6", pair_bulk_kernel<32, 1, 1, 6>, 1, 1, 6, 1);
          variant3("bulk_mt1_wg1_s6_k2", pair_bulk_kernel<32, 1, 1, 6>, 1, 1, 6, 2);
        } else if (diag && N == 64) {
          variant("mt2_wg1_s4", pair_wgmma_kernel<64, 2, 1, 4>, 2, 1, 4, 1);
          variant("mt2_wg1_s6", pair_wgmma_kernel<64, 2, 1, 6>, 2, 1, 6, 1);
          variant("mt2_wg2_s4", pair_wgmma_kernel<64, 2, 2, 4>, 2, 2, 4, 1);
          variant("mt1_wg2_s6", pair_wgmma_kernel<64, 1, 2, 6>, 1, 2, 6, 1);
          variant("mt1_wg1_s6", pair_wgmma_kernel<64, 1, 1, 6>, 1, 1, 6, 1);
          variant("mt2_wg1_s4_nodecode", pair_wgmma_kernel<64, 2, 1, 4, 1>, 2, 1, 4, 1);
          variant("mt2_wg1_s4_nomma", pair_wgmma_kernel<64, 2, 1, 4, 2>, 2, 1, 4, 1);
          variant("mt1_wg1_s4_nodecode", pair_wgmma_kernel<64, 1, 1, 4, 1>, 1, 1, 4, 1);
          variant("mt1_wg1_s4_nomma", pair_wgmma_kernel<64, 1, 1, 4, 2>, 1, 1, 4, 1);
        } else if (N == 64) {
          variant("mt2_wg1_s4", pair_wgmma_kernel<64, 2, 1, 4>, 2, 1, 4, 1);
          variant("mt2_wg1_s4_k2", pair_wgmma_kernel<64, 2, 1, 4>, 2, 1, 4, 2);
          variant("mt1_wg2_s4", pair_wgmma_kernel<64, 1, 2, 4>, 1, 2, 4, 1);
          variant("mt1_wg1_s4", pair_wgmma_kernel<64, 1, 1, 4>, 1, 1, 4, 1);
          variant("mt1_wg1_s4_k2", pair_wgmma_kernel<64, 1, 1, 4>, 1, 1, 4, 2);
        } else {
          variant("mt2_wg1_s4", pair_wgmma_kernel<32, 2, 1, 4>, 2, 1, 4, 1);
          variant("mt2_wg1_s4_k2", pair_wgmma_kernel<32, 2, 1, 4>, 2, 1, 4, 2);
          variant("mt1_wg2_s4", pair_wgmma_kernel<32, 1, 2, 4>, 1, 2, 4, 1);
          variant("mt1_wg1_s4", pair_wgmma_kernel<32, 1, 1, 4>, 1, 1, 4, 1);
          variant("mt1_wg1_s4_k2", pair_wgmma_kernel<32, 1, 1, 4>, 1, 1, 4, 2);
        }
        std::printf("]}");
        std::fflush(stdout);
        CK(cudaFree(dBp));
        CK(cudaFree(dB));
        CK(cudaFree(dY));
        CK(cudaFree(dRef));
        CK(cudaFree(dW));
      }
      CK(cudaFree(dA));
    }
  std::printf("\n]}\n");
  if (!host_only) {
    CB(cublasDestroy(handle));
    CK(cudaFree(flush));
  }
  return 0;
}
