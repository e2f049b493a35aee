// twell device helpers: the activation-sparse gated FFN in two kernels (ir/twell_schedule.h).
//
//   twell_gate_gemm  kernel 1: G = x · W_g for a 128-row x TILE-column block on the tensor cores
//                    (mma.sync m16n8k16, fp32 accumulation, 3-stage cp.async pipeline, 8 warps
//                    as 4 x 2), then ReLU, one rounding to T and the TwELL epilogue: per row of
//                    the block, a warp ballot-compacts the tile's nonzeros into (column << 16 |
//                    value bits) words and stores the count; a tile holding more than CAP
//                    nonzeros stores its values densely in the backup row instead.
//   twell_pack_mask  gate=lib, pack=mask: the same TwELL from the library's ReLU bit-mask and
//                    the values of its set bits only.
//   twell_down       kernel 2: one block per token row (or a persistent grid of workers, blocks
//                    or teams of warps, taking tokens and parts of long ones from a queue); the
//                    row's entries in batches of 64: the worker's warps compute u = x·W_u[:, n]
//                    for each (gated), then every thread adds
//                    h·u·W_d[n, its 8-column groups] in fp32 registers; the overflowing tiles'
//                    dense values follow; y = alpha·acc + beta·y rounded once.
//
// TwELL buffer (32-bit words; ir/twell_format.h): counts [M][tiles] at 0, entries
// [M][tiles][CAP] at entries_off, backup [M][N] values of T at backup_off (words).
// Weights: W_g and W_u transposed (N x kp) and W_d (N x kp), kp = K rounded up to 8, zero padded.
#pragma once

#include "sg_async_copy.cuh"
#include "sg_dtype.cuh"

// A timing probe (tools/debug/twell_timeline_probe.cu) defines SG_TWELL_TRACE_ITEM(worker, row,
// part, parts, phase) before including this header, to record when each worker of kernel 2
// takes an item (phase 0), starts its batches (1) and has written its row (2); balance=even's
// items give their first batch and batch count as part and parts. Otherwise it is nothing.
#ifndef SG_TWELL_TRACE_ITEM
#define SG_TWELL_TRACE_ITEM(worker, row, part, parts, phase) ((void)0)
#endif

namespace sg {
namespace detail {

// The 16 bits of a T value, and back to fp32.
template <typename T>
__device__ __forceinline__ unsigned twell_bits(T v) {
  return static_cast<unsigned>(*reinterpret_cast<const unsigned short*>(&v));
}
template <typename T>
__device__ __forceinline__ float twell_float(unsigned bits) {
  const unsigned short s = static_cast<unsigned short>(bits);
  return Cvt<T>::to_f32(*reinterpret_cast<const T*>(&s));
}
// Two T values packed in 32 bits as fp32 (low half first).
template <typename T>
__device__ __forceinline__ float2 twell_pair(unsigned w) {
  return make_float2(twell_float<T>(w & 0xffffu), twell_float<T>(w >> 16));
}

__device__ __forceinline__ void twell_ldmatrix_x4(unsigned* r, const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

template <typename T>
__device__ __forceinline__ void twell_mma(float* d, const unsigned* a, const unsigned* b) {
  if constexpr (IsHalf<T>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

__device__ __forceinline__ float twell_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A barrier over one worker of kernel 2: the block (one worker), a warp, or the THREADS threads
// of team `team` on named barrier 1 + team (barrier 0 is __syncthreads'). The barrier numbers
// are immediates, so that the kernel reserves TEAMS + 1 barriers, not all 16.
template <int ID, int THREADS>
__device__ __forceinline__ void twell_bar() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
template <int TEAMS, int THREADS>
__device__ __forceinline__ void twell_team_sync(int team) {
  static_assert(TEAMS <= 4 || THREADS == 32, "at most 4 teams of more than one warp");
  if constexpr (TEAMS == 1) {
    __syncthreads();
  } else if constexpr (THREADS == 32) {
    __syncwarp();
  } else {
    switch (team) {
      case 0:
        twell_bar<1, THREADS>();
        break;
      case 1:
        twell_bar<2, THREADS>();
        break;
      case 2:
        twell_bar<3, THREADS>();
        break;
      default:
        twell_bar<4, THREADS>();
        break;
    }
  }
}

// The last index of a[0 .. n) whose value is at most key (a ascending, a[0] <= key).
template <typename V>
__device__ __forceinline__ int twell_last_at_most(const V* a, int n, V key) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (a[mid] <= key)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

}  // namespace detail

// Kernel 1 (see the top comment). Block (tile, y): rows 128·y …, columns tile·TILE …; 256
// threads; smem: 3 stages of (128 + TILE) x 40 values. AVEC 8: x rows are 16-byte aligned
// (K % 8 == 0) and copied with cp.async; 1: element loads.
template <typename T, int TILE, int CAP, int AVEC>
__device__ __forceinline__ void twell_gate_gemm(const T* __restrict__ x, const T* __restrict__ w_t,
                                                unsigned* __restrict__ tw, float* smem_f, int m,
                                                int k, int kp, int n, int tiles, int entries_off,
                                                int backup_off) {
  constexpr int BM = 128, BK = 32, LDS = 40, STAGES = 3, THREADS = 256;
  constexpr int WN = TILE / 2, NI = WN / 8, MI = 2;
  T* smem = reinterpret_cast<T*>(smem_f);
  T* as = smem;
  T* bs = smem + STAGES * BM * LDS;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp >> 1, wn = warp & 1;
  const int tile = blockIdx.x, n0 = tile * TILE, m0 = blockIdx.y * BM;
  const int ksteps = (kp + BK - 1) / BK;
  const T zero = detail::Cvt<T>::from_f32(0.0f);

  auto load_stage = [&](int stage, int ks) {
    const int k0 = ks * BK;
#pragma unroll
    for (int c = tid; c < BM * 4; c += THREADS) {
      const int r = c >> 2, kc = (c & 3) * 8, gm = m0 + r, gk = k0 + kc;
      T* dst = as + (stage * BM + r) * LDS + kc;
      if constexpr (AVEC == 8) {
        const bool ok = gm < m && gk < k;
        detail::cp_async16(smem_addr(reinterpret_cast<const unsigned*>(dst)),
                           x + static_cast<size_t>(ok ? gm : 0) * k + (ok ? gk : 0), !ok);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e)
          dst[e] = gm < m && gk + e < k ? x[static_cast<size_t>(gm) * k + gk + e] : zero;
      }
    }
#pragma unroll
    for (int c = tid; c < TILE * 4; c += THREADS) {
      const int r = c >> 2, kc = (c & 3) * 8, gn = n0 + r, gk = k0 + kc;
      const bool ok = gn < n && gk < kp;
      T* dst = bs + (stage * TILE + r) * LDS + kc;
      detail::cp_async16(smem_addr(reinterpret_cast<const unsigned*>(dst)),
                         w_t + (ok ? static_cast<size_t>(gn) * kp + gk : 0), !ok);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < ksteps) load_stage(s, s);
    cp_async_commit();
  }
  for (int ks = 0; ks < ksteps; ++ks) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    const int nk = ks + STAGES - 1;
    if (nk < ksteps) load_stage(nk % STAGES, nk);
    cp_async_commit();
    const T* a_s = as + (ks % STAGES) * BM * LDS;
    const T* b_s = bs + (ks % STAGES) * TILE * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned af[MI][4], bf[NI][2];
#pragma unroll
      for (int i = 0; i < MI; ++i)
        detail::twell_ldmatrix_x4(
            af[i], a_s + (wm * 32 + i * 16 + (lane & 15)) * LDS + kk + (lane >> 4) * 8);
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        detail::twell_ldmatrix_x4(r, b_s +
                                         (wn * WN + j * 8 + (lane & 7) + ((lane >> 4) << 3)) * LDS +
                                         kk + ((lane >> 3) & 1) * 8);
        bf[j][0] = r[0];
        bf[j][1] = r[1];
        bf[j + 1][0] = r[2];
        bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) detail::twell_mma<T>(acc[i][j], af[i], bf[j]);
    }
  }
  cp_async_wait<0>();
  __syncthreads();

  // Epilogue: ReLU and one rounding into a BM x TILE tile (the pipeline's buffers), then TwELL.
  constexpr int LDC = TILE + 8;
  T* cs = smem;
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = wm * 32 + i * 16 + g + (e >> 1) * 8, c = wn * WN + j * 8 + 2 * t4 + (e & 1);
        cs[r * LDC + c] = detail::Cvt<T>::from_f32(fmaxf(acc[i][j][e], 0.0f));
      }
  __syncthreads();
  int* counts = reinterpret_cast<int*>(tw);
  T* backup = reinterpret_cast<T*>(tw + backup_off);
  for (int r = warp; r < BM; r += THREADS / 32) {
    const int gm = m0 + r;
    if (gm >= m) break;
    const size_t cell = static_cast<size_t>(gm) * tiles + tile;
    unsigned* entries = tw + entries_off + cell * CAP;
    int count = 0;
#pragma unroll
    for (int c = 0; c < TILE; c += 32) {
      const int col = c + lane;
      const T v = cs[r * LDC + col];
      const bool nz = detail::Cvt<T>::to_f32(v) != 0.0f && n0 + col < n;
      const unsigned mask = __ballot_sync(0xffffffffu, nz);
      const int slot = count + __popc(mask & ((1u << lane) - 1u));
      if (nz && slot < CAP)
        entries[slot] = (static_cast<unsigned>(col) << 16) | detail::twell_bits(v);
      count += __popc(mask);
    }
    if (lane == 0) counts[cell] = count;
    if (count > CAP) {  // overflow: the whole tile goes to the dense backup row
      T* dst = backup + static_cast<size_t>(gm) * n + n0;
      for (int col = lane; col < TILE && n0 + col < n; col += 32) dst[col] = cs[r * LDC + col];
    }
  }
}

// gate=lib's pack kernel: G = ReLU(x·W_g) is dense in the backup region (M x N, the library
// GEMM's output); one warp per (row, tile), 8 rows per block (grid: tiles x ceil(M / 8)), each
// lane reading TILE / 32 consecutive columns, writes the count and, when it fits, the entries
// in column order. An overflowing tile needs nothing more: its dense values are G's.
template <typename T, int TILE, int CAP>
__device__ __forceinline__ void twell_pack(unsigned* __restrict__ tw, int m, int n, int tiles,
                                           int entries_off, int backup_off) {
  constexpr int V = TILE / 32;
  const int lane = threadIdx.x & 31, row = blockIdx.y * 8 + (threadIdx.x >> 5), tile = blockIdx.x;
  if (row >= m) return;
  const T* g = reinterpret_cast<const T*>(tw + backup_off) + static_cast<size_t>(row) * n;
  const int c0 = tile * TILE + lane * V;
  T v[V];
  int mine = 0;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    v[e] = c0 + e < n ? g[c0 + e] : detail::Cvt<T>::from_f32(0.0f);
    mine += detail::Cvt<T>::to_f32(v[e]) != 0.0f ? 1 : 0;
  }
  int incl = mine;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += u;
  }
  const int total = __shfl_sync(0xffffffffu, incl, 31);
  const size_t cell = static_cast<size_t>(row) * tiles + tile;
  if (lane == 0) reinterpret_cast<int*>(tw)[cell] = total;
  if (total > CAP) return;
  unsigned* entries = tw + entries_off + cell * CAP;
  int slot = incl - mine;
#pragma unroll
  for (int e = 0; e < V; ++e)
    if (detail::Cvt<T>::to_f32(v[e]) != 0.0f)
      entries[slot++] = (static_cast<unsigned>(lane * V + e) << 16) | detail::twell_bits(v[e]);
}

// twell_pack for N a multiple of 8 (G's rows 16-byte aligned): one warp per token row, 8 rows
// per block (grid: ceil(M / 8)). The warp reads its row 256 columns per 16-byte load, U loads in
// flight per lane, so the pack streams G near the memory's rate (twell_pack's 2-byte loads over
// a (row, tile) per warp do not). Lane l of a load holds columns 8l .. 8l+7; the TILE / 8 lanes of
// one tile scan their nonzero counts together and write the same count and column-ordered
// entries as twell_pack. A value counts as nonzero unless its 15 bits below the sign are all zero
// (fp16 and bf16: -0 is zero, NaN is not), as twell_pack's comparison with 0. tokens_off >= 0
// (balance=even): the row's packed entries and overflowing tiles, two ints at tw + tokens_off +
// 2·row.
template <typename T, int TILE, int CAP, int U>
__device__ __forceinline__ void twell_pack_rows(unsigned* __restrict__ tw, int m, int n, int tiles,
                                                int entries_off, int backup_off, int tokens_off) {
  static_assert(TILE % 8 == 0 && 256 % TILE == 0, "a load's 256 columns hold whole tiles");
  constexpr int LPT = TILE / 8, CHUNK = 256;
  const int lane = threadIdx.x & 31, sub = lane % LPT;
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= m) return;
  const T* g = reinterpret_cast<const T*>(tw + backup_off) + static_cast<size_t>(row) * n;
  int* counts = reinterpret_cast<int*>(tw) + static_cast<size_t>(row) * tiles;
  unsigned* entries = tw + entries_off + static_cast<size_t>(row) * tiles * CAP;
  int packed = 0, over = 0;  // lanes with sub == 0: their tiles' sums
  for (int c0 = 0; c0 < n; c0 += U * CHUNK) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int col = c0 + u * CHUNK + lane * 8;
      v[u] = col < n ? __ldcs(reinterpret_cast<const uint4*>(g + col)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int base = c0 + u * CHUNK;
      if (base >= n) break;  // the same for every lane
      const unsigned w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
      unsigned nz = 0u;  // bit e: column base + 8·lane + e is nonzero
#pragma unroll
      for (int h = 0; h < 4; ++h) {  // both halves of a word at once: 0xffff where nonzero
        const unsigned ne = __vcmpne2(w[h] & 0x7fff7fffu, 0u);
        nz |= ((ne & 1u) | ((ne >> 15) & 2u)) << (2 * h);
      }
      const int tile = base / TILE + lane / LPT;
      // Most loads of a sparse row hold no nonzero at all: their tiles count 0, nothing to scan.
      if (__ballot_sync(0xffffffffu, nz != 0u) == 0u) {
        if (sub == 0 && tile < tiles) counts[tile] = 0;
        continue;
      }
      const int mine = __popc(nz);
      int incl = mine;
#pragma unroll
      for (int o = 1; o < LPT; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, o);
        if (sub >= o) incl += y;
      }
      const int total = __shfl_sync(0xffffffffu, incl, lane | (LPT - 1));
      if (tile >= tiles) continue;
      if (sub == 0) {
        counts[tile] = total;
        packed += total > CAP ? 0 : total;
        over += total > CAP ? 1 : 0;
      }
      if (total > CAP || nz == 0u) continue;  // overflow: its dense values are G's
      unsigned* out = entries + static_cast<size_t>(tile) * CAP + (incl - mine);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if ((nz >> e) & 1u)
          *out++ = (static_cast<unsigned>(sub * 8 + e) << 16) |
                   ((w[e >> 1] >> (16 * (e & 1))) & 0xffffu);
    }
  }
  if (tokens_off >= 0) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      packed += __shfl_xor_sync(0xffffffffu, packed, o);
      over += __shfl_xor_sync(0xffffffffu, over, o);
    }
    if (lane == 0) {
      int* t = reinterpret_cast<int*>(tw + tokens_off) + 2 * static_cast<size_t>(row);
      t[0] = packed;
      t[1] = over;
    }
  }
}

// gate=lib's pack with pack=mask: the library GEMM's ReLU epilogue also wrote a bit-mask of G's
// positive values, mask_words 32-bit words a token row at tw + mask_off (bit j % 32 of word j / 32
// for column j). One warp per token row, 8 rows per block (grid: ceil(M / 8)); lane l takes the
// tiles l, l + 32, …: their TILE / 32 mask words in one load. A tile of at most CAP set bits reads
// the values of those bits only (2 bytes each) and packs the nonzero ones in column order, as the
// scan does; a tile of more stores its bit count (> CAP: overflowing, walked densely from G, which
// reads no value here). So a token costs N / 8 bytes of mask and a sector per nonzero, not 2 · N
// bytes of G. tokens_off >= 0 (balance=even): the row's packed entries and overflowing tiles.
template <typename T, int TILE, int CAP>
__device__ __forceinline__ void twell_pack_mask(unsigned* __restrict__ tw, int m, int n, int tiles,
                                                int entries_off, int backup_off, int tokens_off,
                                                int mask_off, int mask_words) {
  static_assert(TILE == 64 || TILE == 128, "a tile's mask is one 8- or 16-byte load");
  constexpr int W = TILE / 32;
  const int lane = threadIdx.x & 31;
  const int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (row >= m) return;
  const unsigned short* g =
      reinterpret_cast<const unsigned short*>(tw + backup_off) + static_cast<size_t>(row) * n;
  const unsigned* mask = tw + mask_off + static_cast<size_t>(row) * mask_words;
  int* counts = reinterpret_cast<int*>(tw) + static_cast<size_t>(row) * tiles;
  unsigned* entries = tw + entries_off + static_cast<size_t>(row) * tiles * CAP;
  int packed = 0, over = 0;
  for (int tile = lane; tile < tiles; tile += 32) {
    unsigned bits[W];
    if constexpr (W == 4) {
      const uint4 v = __ldcs(reinterpret_cast<const uint4*>(mask) + tile);
      bits[0] = v.x, bits[1] = v.y, bits[2] = v.z, bits[3] = v.w;
    } else {
      const uint2 v = __ldcs(reinterpret_cast<const uint2*>(mask) + tile);
      bits[0] = v.x, bits[1] = v.y;
    }
    const int c0 = tile * TILE;
    int set = 0;
#pragma unroll
    for (int e = 0; e < W; ++e) {
      const int lo = c0 + 32 * e;  // the mask's bits beyond column n are not G's
      if (lo + 32 > n) bits[e] &= lo >= n ? 0u : (1u << (n - lo)) - 1u;
      set += __popc(bits[e]);
    }
    int count = set;
    if (set <= CAP) {
      count = 0;
      unsigned* out = entries + static_cast<size_t>(tile) * CAP;
#pragma unroll
      for (int e = 0; e < W; ++e)
        for (unsigned b = bits[e]; b != 0u; b &= b - 1u) {
          const int col = 32 * e + __ffs(b) - 1;
          const unsigned v = g[c0 + col];
          if ((v & 0x7fffu) != 0u) out[count++] = (static_cast<unsigned>(col) << 16) | v;
        }
    }
    counts[tile] = count;
    packed += count > CAP ? 0 : count;
    over += count > CAP ? 1 : 0;
  }
  if (tokens_off >= 0) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      packed += __shfl_xor_sync(0xffffffffu, packed, o);
      over += __shfl_xor_sync(0xffffffffu, over, o);
    }
    if (lane == 0) {
      int* t = reinterpret_cast<int*>(tw + tokens_off) + 2 * static_cast<size_t>(row);
      t[0] = packed;
      t[1] = over;
    }
  }
}

// Kernel 2 (see the top comment). Its work split (ir/twell_schedule.h): BALANCE 0 (token) is one
// block per token, SPLIT blocks (blockIdx.y) sharing it when SPLIT > 1; BALANCE 1 (queue) is a
// persistent grid whose workers take tokens from a counter and cut a long one into parts of
// PART_BATCHES batches (at most MAX_PARTS, below 256), which other workers take from a work queue:
// one dense token no longer holds an SM alone while the rest of the grid has finished; BALANCE 2
// (even) is a fixed grid whose workers take equal shares of the tokens' batches on a line of
// estimated work (TOKEN_COST per token, 1 per packed entry, PIECE_COST per dense piece), from the
// per-token counts the row pack wrote at tokens_off; a shared token's partial rows meet in its
// first worker's fp32 row of ws. A worker
// is the block (TEAMS 1) or one of its TEAMS teams of WARPS / TEAMS warps, each with its own
// shared memory and barrier: a team of one warp needs no block barrier at all. Queue state
// (BALANCE 1), all zero at launch and left so (the last worker out resets qctl):
//   qctl      [0] next token, [1] parts pushed, [2] parts taken, [3] pool cursor, [4] workers out
//   qitem     the pushed parts, 64-bit words, 0 until written and again once taken; room for
//             every part a launch can push (M x (most parts of a token - 1)), so never reused
//   ws        the pool: qpool fp32 rows of split tokens
//   counters  per pool row: 0 free, then 1 + its finished parts; the last part frees the row
// Each thread of a worker accumulates G groups of 8 output columns (8·(tid + g·threads) …).
// smem per worker (16-byte aligned): the x row (KP values), the batch (64 columns, values,
// h·u), tile prefix sums (tiles + 1), the overflowing tiles (tiles), 8 ints.
// KP (K rounded up to 8) is a constant so that the dot products' loads are unrolled: all of a
// lane's 16-byte pieces of a W_u row are in flight at once.
// A token's work is a list of batches: its packed entries 64 at a time, then its overflowing
// tiles' dense values 64 columns at a time. A part p of P takes the batches b with b % P == p;
// parts of one token add their partial rows into an fp32 row (ws for SPLIT, the queue's pool),
// and the last to finish (a per-row counter) writes y and returns the row and counter to zero.
template <typename T, int WARPS, int TEAMS, int TILE, int CAP, int GATED, int G, int KP, int SPLIT,
          int BALANCE, int PART_BATCHES, int MAX_PARTS, int TOKEN_COST, int PIECE_COST>
__device__ __forceinline__ void twell_down(const T* __restrict__ x, const T* __restrict__ w_up_t,
                                           const T* __restrict__ w_down,
                                           const unsigned* __restrict__ tw, T* __restrict__ y,
                                           float* smem_f, float* ws, int* counters, int* qctl,
                                           unsigned* qitem, int qpool, float alpha, float beta,
                                           int m, int k, int n, int tiles, int entries_off,
                                           int backup_off, int tokens_off) {
  static_assert(MAX_PARTS < 256, "a queue item holds a part's index and count in 8 bits each");
  static_assert(WARPS % TEAMS == 0 && (TEAMS == 1 || BALANCE != 0),
                "teams divide the block's warps and take their own work (queue or even)");
  constexpr int kp = KP;
  constexpr int THREADS = WARPS / TEAMS * 32, BATCH = 64, SUB = TILE / BATCH;
  const int team = TEAMS == 1 ? 0 : static_cast<int>(threadIdx.x) / THREADS;
  const int tid =
      TEAMS == 1 ? static_cast<int>(threadIdx.x) : static_cast<int>(threadIdx.x) % THREADS;
  const int lane = tid & 31, warp = tid >> 5;
  auto sync = [&]() { detail::twell_team_sync<TEAMS, THREADS>(team); };
  // This team's slice: twell_down_shared_bytes (ir) reserves TEAMS, then (BALANCE 2) the work
  // line's chunk starts.
  const int slice = (kp * 2 + BATCH * 12 + (2 * tiles + 1) * 4 + 32 + 15) / 16 * 16;
  T* xs = reinterpret_cast<T*>(reinterpret_cast<char*>(smem_f) + team * slice);
  int* bcol = reinterpret_cast<int*>(xs + kp);
  float* bval = reinterpret_cast<float*>(bcol + BATCH);
  float* bhu = bval + BATCH;
  int* prefix = reinterpret_cast<int*>(bhu + BATCH);
  int* dense = prefix + tiles + 1;
  // [0] overflowing tiles, [1] a dense batch's size, [2] last part flag, [3] token (-1: none),
  // [4] part, [5] parts, [6] pool row (-1: none)
  int* misc = dense + tiles;
  const T zero = detail::Cvt<T>::from_f32(0.0f);

  // The token's x row into shared memory, the exclusive prefix of its packed counts (an
  // overflowing tile packs none) and its overflowing tiles in tile order.
  auto setup = [&](int row) {
    const T* xr = x + static_cast<size_t>(row) * k;
    if (k == kp && (reinterpret_cast<size_t>(xr) & 15) == 0) {
      for (int i = tid * 8; i < kp; i += THREADS * 8)
        *reinterpret_cast<uint4*>(xs + i) = *reinterpret_cast<const uint4*>(xr + i);
    } else {
      for (int i = tid; i < kp; i += THREADS) xs[i] = i < k ? xr[i] : zero;
    }
    const int* counts = reinterpret_cast<const int*>(tw) + static_cast<size_t>(row) * tiles;
    if (warp == 0) {
      int run = 0, nd = 0;
      for (int base = 0; base < tiles; base += 32) {
        const int t = base + lane;
        const int c = t < tiles ? counts[t] : 0;
        const bool over = c > CAP;
        const int v = over ? 0 : c;
        int s = v;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const int u = __shfl_up_sync(0xffffffffu, s, o);
          if (lane >= o) s += u;
        }
        if (t < tiles) prefix[t] = run + s - v;
        run += __shfl_sync(0xffffffffu, s, 31);
        const unsigned om = __ballot_sync(0xffffffffu, over);
        if (over) dense[nd + __popc(om & ((1u << lane) - 1u))] = t;
        nd += __popc(om);
      }
      if (lane == 0) {
        prefix[tiles] = run;
        misc[0] = nd;
      }
    }
    sync();
  };
  // Batches of the token set up last: packed ones, then dense pieces.
  auto batches = [&]() { return (prefix[tiles] + BATCH - 1) / BATCH + misc[0] * SUB; };

  float acc[G][8];

  // One batch of cnt (column, h) pairs in bcol / bval: u per pair (gated), then the down rows.
  auto run_batch = [&](int cnt) {
    if constexpr (GATED != 0) {
      // A warp takes U pairs at a time: the loads of their W_u rows interleave, so every lane
      // has U x KP / 256 16-byte loads in flight (2 when the accumulators take many registers).
      constexpr int U = G >= 4 ? 2 : 4;
      for (int j0 = warp * U; j0 < cnt; j0 += THREADS / 32 * U) {
        const T* wu[U];
        float s[U];
#pragma unroll
        for (int q2 = 0; q2 < U; ++q2) {
          wu[q2] = w_up_t + static_cast<size_t>(bcol[min(j0 + q2, cnt - 1)]) * kp;
          s[q2] = 0.0f;
        }
#pragma unroll
        for (int i = lane * 8; i < kp; i += 256) {
          const uint4 xv = *reinterpret_cast<const uint4*>(xs + i);
          const unsigned xa[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
          for (int q2 = 0; q2 < U; ++q2) {
            const uint4 wv = *reinterpret_cast<const uint4*>(wu[q2] + i);
            const unsigned wa[4] = {wv.x, wv.y, wv.z, wv.w};
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const float2 a = detail::twell_pair<T>(wa[e]), b = detail::twell_pair<T>(xa[e]);
              s[q2] = fmaf(a.x, b.x, s[q2]);
              s[q2] = fmaf(a.y, b.y, s[q2]);
            }
          }
        }
#pragma unroll
        for (int q2 = 0; q2 < U; ++q2) {
          const float r = detail::twell_warp_sum(s[q2]);
          if (lane == 0 && j0 + q2 < cnt) bhu[j0 + q2] = bval[j0 + q2] * r;
        }
      }
      sync();
    }
    const float* hu = GATED != 0 ? bhu : bval;
    // About 8 rows' loads in flight per thread whatever G.
    constexpr int JU = G >= 8 ? 1 : 8 / G;
#pragma unroll JU
    for (int j = 0; j < cnt; ++j) {
      const float h = hu[j];
      const T* wd = w_down + static_cast<size_t>(bcol[j]) * kp;
#pragma unroll
      for (int gi = 0; gi < G; ++gi) {
        const int col = 8 * (tid + gi * THREADS);
        if (col < kp) {
          const uint4 v = *reinterpret_cast<const uint4*>(wd + col);
          const unsigned va[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float2 f = detail::twell_pair<T>(va[e]);
            acc[gi][2 * e] = fmaf(h, f.x, acc[gi][2 * e]);
            acc[gi][2 * e + 1] = fmaf(h, f.y, acc[gi][2 * e + 1]);
          }
        }
      }
    }
    sync();  // the next batch overwrites bcol / bval / bhu
  };

  // The batches first, first + step, … below end of token `row` (set up) into acc: part `part` of
  // `parts` is (part, parts, nb), an even worker's share (b0, 1, b1).
  auto run_part = [&](int row, int first, int step, int end) {
#pragma unroll
    for (int gi = 0; gi < G; ++gi)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[gi][e] = 0.0f;
    const int total = prefix[tiles], nd = misc[0];
    const int packed = (total + BATCH - 1) / BATCH, nb = packed + nd * SUB;
    const unsigned* entries = tw + entries_off + static_cast<size_t>(row) * tiles * CAP;
    const T* backup = reinterpret_cast<const T*>(tw + backup_off) + static_cast<size_t>(row) * n;
    for (int b = first; b < min(nb, end); b += step) {
      if (b < packed) {  // packed entries b·64 …
        const int b0 = b * BATCH, cnt = min(BATCH, total - b0);
        for (int i = tid; i < cnt; i += THREADS) {  // a one-warp worker takes two each
          const int e = b0 + i;
          const int lo = detail::twell_last_at_most(prefix, tiles, e);  // e's tile
          const unsigned word = entries[static_cast<size_t>(lo) * CAP + (e - prefix[lo])];
          bcol[i] = lo * TILE + static_cast<int>(word >> 16);
          bval[i] = detail::twell_float<T>(word & 0xffffu);
        }
        sync();
        run_batch(cnt);
      } else {  // an overflowing tile's nonzeros from the dense backup, 64 columns
        const int d = (b - packed) / SUB, c0 = (b - packed) % SUB * BATCH, t = dense[d];
        if (warp == 0) {
          int cnt = 0;
#pragma unroll
          for (int h = 0; h < BATCH; h += 32) {
            const int cc = c0 + h + lane, col = t * TILE + cc;
            const float v = cc < TILE && col < n ? detail::Cvt<T>::to_f32(backup[col]) : 0.0f;
            const unsigned mk = __ballot_sync(0xffffffffu, v != 0.0f);
            const int pos = cnt + __popc(mk & ((1u << lane) - 1u));
            if (v != 0.0f) {
              bcol[pos] = col;
              bval[pos] = v;
            }
            cnt += __popc(mk);
          }
          if (lane == 0) misc[1] = cnt;
        }
        sync();
        run_batch(misc[1]);
      }
    }
  };

  // y[row] from acc (a token in one part).
  auto store_row = [&](int row) {
    T* yr = y + static_cast<size_t>(row) * k;
#pragma unroll
    for (int gi = 0; gi < G; ++gi) {
      const int col = 8 * (tid + gi * THREADS);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (col + e < k) store_axpby(yr + col + e, acc[gi][e], alpha, beta);
    }
  };
  // acc added into the fp32 row wr; the last of `parts` (the counter, which starts at `first`)
  // writes y[row], zeroes the row and then the counter.
  auto add_row = [&](int row, float* wr, int* counter, int parts, int first) {
#pragma unroll
    for (int gi = 0; gi < G; ++gi) {
      const int col = 8 * (tid + gi * THREADS);
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (col + e < k) atomicAdd(wr + col + e, acc[gi][e]);
    }
    __threadfence();
    sync();
    if (tid == 0) misc[2] = atomicAdd(counter, 1) == first + parts - 1 ? 1 : 0;
    sync();
    if (misc[2] != 0) {
      __threadfence();
      T* yr = y + static_cast<size_t>(row) * k;
#pragma unroll
      for (int gi = 0; gi < G; ++gi) {
        const int col = 8 * (tid + gi * THREADS);
#pragma unroll
        for (int e = 0; e < 8; ++e)
          if (col + e < k) {
            store_axpby(yr + col + e, __ldcg(wr + col + e), alpha, beta);
            wr[col + e] = 0.0f;
          }
      }
      __threadfence();
      sync();  // the row is zero before its counter frees it
      if (tid == 0) atomicExch(counter, 0);
    }
  };

  if constexpr (BALANCE == 0) {
    const int row = blockIdx.x;
    setup(row);
    run_part(row, static_cast<int>(blockIdx.y), SPLIT, 0x7fffffff);
    if constexpr (SPLIT == 1)
      store_row(row);
    else
      add_row(row, ws + static_cast<size_t>(row) * KP, counters + row, SPLIT, 0);
  } else if constexpr (BALANCE == 2) {
    // Even: the tokens' batches lie on one line of estimated work, token after token: a token
    // costs TOKEN_COST, then its packed batches 64 entries apart, then its dense pieces
    // PIECE_COST apart. Worker w of W takes the batches that start in [C·w/W, C·(w+1)/W); W is
    // at most C / 64, so no worker's range falls between two batches of one token and a token
    // is shared by the workers from its first batch's to its last's. A shared token adds its
    // partial rows into its first worker's fp32 row (ws; counter per row).
    constexpr int NT = WARPS * 32;
    // A token's packed entries (x) and overflowing tiles (y), as the row pack wrote them.
    struct Counts {
      int x, y;
    };
    const int* tok_words = reinterpret_cast<const int*>(tw + tokens_off);
    auto tok = [&](int row) { return Counts{tok_words[2 * row], tok_words[2 * row + 1]}; };
    long long* line = reinterpret_cast<long long*>(reinterpret_cast<char*>(smem_f) + TEAMS * slice);
    // WARPS words: the warps' starts in the scan below, then each team's first token's start.
    long long* starts = line + NT + 1;
    auto cost = [&](Counts t) {
      return static_cast<long long>(TOKEN_COST + t.x + PIECE_COST * SUB * t.y);
    };
    // Chunk starts: thread i sums the costs of tokens [i·ch, (i+1)·ch); an exclusive block scan.
    // Every block computes the same starts (M x 8 bytes from the L2) rather than a launch more.
    const int ch = (m + NT - 1) / NT;
    {
      const int i = static_cast<int>(threadIdx.x), i0 = min(m, i * ch), i1 = min(m, i0 + ch);
      long long sum = 0;
#pragma unroll 8
      for (int j = i0; j < i1; ++j) sum += cost(tok(j));
      long long incl = sum;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const long long u = __shfl_up_sync(0xffffffffu, incl, o);
        if ((i & 31) >= o) incl += u;
      }
      if ((i & 31) == 31) line[i >> 5] = incl;  // the warps' totals, scanned below
      __syncthreads();
      if (i < 32) {
        long long w = i < WARPS ? line[i] : 0, wi = w;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const long long u = __shfl_up_sync(0xffffffffu, wi, o);
          if (i >= o) wi += u;
        }
        if (i < WARPS) starts[i] = wi - w;  // the warps' exclusive starts
        if (i == WARPS - 1) line[NT] = wi;  // C
      }
      __syncthreads();
      line[i] = starts[i >> 5] + incl - sum;
      __syncthreads();
    }
    const long long total = line[NT];
    const long long by_work = total / BATCH > 0 ? total / BATCH : 1;
    const long long workers = min(static_cast<long long>(gridDim.x) * TEAMS, by_work);
    const long long w = static_cast<long long>(blockIdx.x) * TEAMS + team;
    if (w >= workers) return;  // no block barrier follows: the teams sync on their own
    const long long lo = total * w / workers, hi = total * (w + 1) / workers;
    auto owner = [&](long long pos) { return ((pos + 1) * workers - 1) / total; };
    // The team's first token: the one whose stretch [start, start + cost) holds lo.
    if (warp == 0) {
      const int c0 = detail::twell_last_at_most(line, NT, lo);  // the chunk holding lo
      long long start = line[c0];
      const int end = min(m, c0 * ch + ch);
      int found = -1;
      for (int j0 = c0 * ch; j0 < end && found < 0; j0 += 32) {
        const int j = j0 + lane;
        const long long c = j < end ? cost(tok(j)) : 0;
        long long incl = c;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
          const long long u = __shfl_up_sync(0xffffffffu, incl, o);
          if (lane >= o) incl += u;
        }
        const unsigned hit = __ballot_sync(0xffffffffu, j < end && start + incl > lo);
        if (hit != 0u) {
          const int f = __ffs(hit) - 1;
          found = j0 + f;
          start += __shfl_sync(0xffffffffu, incl - c, f);
        } else {
          start += __shfl_sync(0xffffffffu, incl, 31);
        }
      }
      if (lane == 0) {
        misc[3] = found < 0 ? m : found;
        starts[team] = start;
      }
    }
    sync();
    long long start = starts[team];
    for (int row = misc[3]; row < m && start < hi; ++row) {
      const Counts t = tok(row);
      const long long base = start + TOKEN_COST;
      start += cost(t);
      const int pb = (t.x + BATCH - 1) / BATCH, nb = pb + t.y * SUB;
      // Batches that start before x on the line.
      auto before = [&](long long x) {
        const long long r = x - base, rd = r - t.x;
        const int cp =
            r <= 0 ? 0 : static_cast<int>(min(static_cast<long long>(pb), (r + BATCH - 1) / BATCH));
        const int cd = rd <= 0 ? 0
                               : static_cast<int>(min(static_cast<long long>(t.y * SUB),
                                                      (rd + PIECE_COST - 1) / PIECE_COST));
        return cp + cd;
      };
      // A token without nonzeros is written (beta·y) by the worker holding its start (its base
      // is the next token's start, where the next worker may begin).
      const long long at = nb == 0 ? base - TOKEN_COST : base;
      const int b0 = nb == 0 ? (at >= lo ? 0 : 1) : before(lo);
      const int b1 = nb == 0 ? (at >= hi ? 0 : 1) : before(hi);
      if (b0 >= b1) continue;
      const long long last =
          nb == 0 ? at
                  : base + (nb - 1 < pb ? static_cast<long long>(BATCH) * (nb - 1)
                                        : t.x + static_cast<long long>(PIECE_COST) * (nb - 1 - pb));
      const long long first_owner = owner(at);
      const int parts = static_cast<int>(owner(last) - first_owner) + 1;
      const unsigned worker = static_cast<unsigned>(w);
      if (tid == 0) SG_TWELL_TRACE_ITEM(worker, row, b0, b1 - b0, 0);
      setup(row);
      if (tid == 0) SG_TWELL_TRACE_ITEM(worker, row, b0, b1 - b0, 1);
      run_part(row, b0, 1, b1);
      if (parts == 1)
        store_row(row);
      else
        add_row(row, ws + static_cast<size_t>(first_owner) * KP, counters + first_owner, parts, 0);
      if (tid == 0) SG_TWELL_TRACE_ITEM(worker, row, b0, b1 - b0, 2);
      sync();  // the staged row and misc are reused by the next token
    }
  } else {
    unsigned long long* items = reinterpret_cast<unsigned long long*>(qitem);
    for (;;) {
      // The worker's thread 0 takes work: a pushed part first (so that long tokens finish early),
      // else the next token.
      if (tid == 0) {
        int row = -1, part = 0, parts = 0, slot = -1;
        volatile int* vctl = qctl;
        int h = vctl[2];
        while (h < vctl[1]) {
          const int prev = atomicCAS(qctl + 2, h, h + 1);
          if (prev == h) {
            unsigned long long v;
            // Reserved before written: the pusher is writing it now.
            while ((v = *reinterpret_cast<volatile unsigned long long*>(items + h)) == 0ull) {
            }
            items[h] = 0ull;  // zero again for the next launch
            row = static_cast<int>((v >> 32) & 0x7fffffffull);
            slot = static_cast<int>((v >> 16) & 0xffffull);
            part = static_cast<int>((v >> 8) & 0xffull);
            parts = static_cast<int>(v & 0xffull);
            break;
          }
          h = prev;
        }
        if (row < 0) {
          const int t = atomicAdd(qctl, 1);
          if (t < m) row = t;
        }
        misc[3] = row;
        misc[4] = part;
        misc[5] = parts;
        misc[6] = slot;
      }
      sync();
      const int row = misc[3];
      if (row < 0) break;
      int part = misc[4], parts = misc[5], slot = misc[6];
      if (tid == 0) SG_TWELL_TRACE_ITEM(blockIdx.x * TEAMS + team, row, part, parts, 0);
      setup(row);
      if (parts == 0) {  // a fresh token: cut it when it has more than PART_BATCHES batches
        parts = max(1, min(MAX_PARTS, (batches() + PART_BATCHES - 1) / PART_BATCHES));
        if (parts > 1) {
          sync();  // every thread has read misc[3..6]
          if (tid == 0) {
            // A free pool row: its counter goes from 0 (free) to 1 (taken); a few tries.
            slot = -1;
            for (int tries = 0; tries < 8 && slot < 0; ++tries) {
              const int c = atomicAdd(qctl + 3, 1) % qpool;
              if (atomicCAS(counters + c, 0, 1) == 0) slot = c;
            }
            if (slot >= 0) {
              // Reserved, then written: a taker of a reserved item waits for it.
              const int r = atomicAdd(qctl + 1, parts - 1);
              for (int p = 1; p < parts; ++p)
                items[r + p - 1] = (1ull << 63) | (static_cast<unsigned long long>(row) << 32) |
                                   (static_cast<unsigned long long>(slot) << 16) |
                                   (static_cast<unsigned long long>(p) << 8) |
                                   static_cast<unsigned long long>(parts);
              __threadfence();
            } else {
              slot = -1;  // no free row: the token stays whole
            }
            misc[6] = slot;
          }
          sync();
          slot = misc[6];
          if (slot < 0) parts = 1;
        }
        part = 0;
      }
      if (tid == 0) SG_TWELL_TRACE_ITEM(blockIdx.x * TEAMS + team, row, part, parts, 1);
      run_part(row, part, parts, 0x7fffffff);
      if (parts == 1)
        store_row(row);
      else
        add_row(row, ws + static_cast<size_t>(slot) * KP, counters + slot, parts, 1);
      if (tid == 0) SG_TWELL_TRACE_ITEM(blockIdx.x * TEAMS + team, row, part, parts, 2);
      sync();  // misc and the staged row are reused by the next item
    }
    // The last worker out returns the queue's counters to zero for the next launch.
    if (tid == 0) {
      __threadfence();
      if (atomicAdd(qctl + 4, 1) == static_cast<int>(gridDim.x) * TEAMS - 1) {
        qctl[0] = 0;
        qctl[1] = 0;
        qctl[2] = 0;
        qctl[3] = 0;
        __threadfence();
        qctl[4] = 0;
      }
    }
  }
}

}  // namespace sg
