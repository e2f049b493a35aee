// MACKO device helpers: streaming loads of 16-byte value vectors and their packed column deltas,
// per-lane decoding of (delta + 1) prefix sums with the row's slot range masked (reverse-offset
// alignment: a vector may start in the previous row and end in the next), and the warp inclusive
// scan that turns the lanes' sums into column carries. See ir/macko_format.h for the layout.
#pragma once

#include "sg_dtype.cuh"
#include "sg_vector.cuh"

namespace sg {
namespace detail {

template <typename T>
union MackoVec {
  uint4 raw;
  T elem[8];
};

}  // namespace detail

// Loads aligned vector `vec` (8 values) of the value array, raw, with an evict-first hint: A is
// streamed once, so it should not push B out of the caches. out: 4 words.
template <typename T>
__device__ __forceinline__ void macko_load_values(const T* __restrict__ values, int vec,
                                                  unsigned* out) {
  static_assert(sizeof(T) == 2, "MACKO values are 2-byte (fp16 / bf16)");
  const uint4 r = __ldcs(reinterpret_cast<const uint4*>(values) + vec);
  out[0] = r.x;
  out[1] = r.y;
  out[2] = r.z;
  out[3] = r.w;
}

// Value j (0..7, a compile-time constant after unrolling) of a raw vector, as fp32.
template <typename T>
__device__ __forceinline__ float macko_value(const unsigned* raw, int j) {
  detail::MackoVec<T> v;
  v.raw = make_uint4(raw[0], raw[1], raw[2], raw[3]);
  return detail::Cvt<T>::to_f32(v.elem[j]);
}

// Loads the packed deltas of vector `vec` (8 slots x BITS bits: 2, 4 or 8 bytes). out: 1 word
// (BITS 2, 4) or 2 words (BITS 8); slot j's delta is bits [BITS*j, BITS*j + BITS) of them.
template <int BITS>
__device__ __forceinline__ void macko_load_deltas(const unsigned* __restrict__ deltas, int vec,
                                                  unsigned* out) {
  static_assert(BITS == 2 || BITS == 4 || BITS == 8, "delta bits: 2, 4 or 8");
  if constexpr (BITS == 2) {
    out[0] = __ldcs(reinterpret_cast<const unsigned short*>(deltas) + vec);
  } else if constexpr (BITS == 4) {
    out[0] = __ldcs(deltas + vec);
  } else {
    const uint2 r = __ldcs(reinterpret_cast<const uint2*>(deltas) + vec);
    out[0] = r.x;
    out[1] = r.y;
  }
}

// Inclusive prefix sums of (delta + 1) over the 8 slots first_slot .. first_slot + 7, counting
// only slots inside the row [s0, s1); returns the lane's total. A slot is valid exactly when its
// prefix exceeds the previous one (valid slots add at least 1).
template <int BITS>
__device__ __forceinline__ int macko_decode(const unsigned* d, int first_slot, int s0, int s1,
                                            int* prefix) {
  int run = 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const unsigned word = BITS == 8 ? d[j / 4] : d[0];
    const int shift = BITS == 8 ? 8 * (j % 4) : BITS * j;
    const int delta = static_cast<int>((word >> shift) & ((1u << BITS) - 1u));
    const int slot = first_slot + j;
    run += (slot >= s0 && slot < s1) ? delta + 1 : 0;
    prefix[j] = run;
  }
  return run;
}

// Inclusive scan (sum) of v over the lanes of a warp. Every lane must call it.
__device__ __forceinline__ int macko_warp_scan(int v, int lane) {
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(off));
    if (lane >= off) v += y;
  }
  return v;
}

// ─── Staged-B kernels (stage=shared / shared_f32) ──────────────────────────────────────────────
// B's rows live in shared memory as ES-byte rows (NC 2-byte columns, or with F32 one fp32
// column), after GUARD zero rows and followed by GUARD more. Columns are tracked as byte offsets
// into that array, so a gather is one LDS with the slot's constant folded into its immediate.

// Copies B (k rows of NC columns, row-major and contiguous: N == NC) into dst (16-byte aligned)
// and zeroes the guard rows. Every thread of the block must call it; the caller then runs
// __syncthreads(). Four 16-byte loads per thread are issued before any store, so the copy costs
// about one L2 round trip per 64 bytes x block size, not one per 16. Plain cached loads, not
// cp.async: a cp.async.cg copy (L2 only, every piece in flight) measured 24% slower over 189
// staged-fp16 kernels on an H200, probably because it skips L1, where a multiprocessor's later
// blocks can find B.
template <typename T, int NC, int F32, int GUARD>
__device__ __forceinline__ void macko_stage_b(const T* __restrict__ B, int k, unsigned* dst) {
  static_assert(NC == 1 || NC == 2 || NC == 4 || NC == 8, "staged columns: 1, 2, 4 or 8");
  static_assert(!F32 || NC == 1, "fp32 staging holds one column");
  constexpr int ES = F32 ? 4 : 2 * NC;
  constexpr int GW = GUARD * ES / 4;  // 32-bit words per guard (B starts 16-byte aligned)
  constexpr int GH = GUARD * ES / 2;  // 2-byte units per guard (the trailing one may start at
                                      // any even byte: ES = 2 and k odd)
  constexpr int Q = 4;                // loads in flight per thread
  unsigned short* h = reinterpret_cast<unsigned short*>(dst);
  for (int w = threadIdx.x; w < 2 * GH; w += blockDim.x)
    h[w < GH ? w : GH + k * (ES / 2) + (w - GH)] = 0;
  const bool aligned = (reinterpret_cast<unsigned long long>(B) & 15ull) == 0;
  const int elems = k * NC;                    // 2-byte elements of B
  const int chunks = aligned ? elems / 8 : 0;  // 16-byte chunks
  const int step = static_cast<int>(blockDim.x);
  for (int c0 = threadIdx.x; c0 < chunks; c0 += Q * step) {
    uint4 r[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q)
      if (c0 + q * step < chunks) r[q] = __ldg(reinterpret_cast<const uint4*>(B) + c0 + q * step);
#pragma unroll
    for (int q = 0; q < Q; ++q) {
      const int c = c0 + q * step;
      if (c >= chunks) break;
      if constexpr (F32) {
        detail::Pack<8, T> p;
        p.raw = r[q];
        float f[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) f[e] = detail::Cvt<T>::to_f32(p.elem[e]);
        float4* o = reinterpret_cast<float4*>(dst + GW) + 2 * c;
        o[0] = make_float4(f[0], f[1], f[2], f[3]);
        o[1] = make_float4(f[4], f[5], f[6], f[7]);
      } else {
        reinterpret_cast<uint4*>(dst + GW)[c] = r[q];
      }
    }
  }
  // The tail (or everything, when B is not 16-byte aligned), one element at a time.
  for (int e = chunks * 8 + static_cast<int>(threadIdx.x); e < elems; e += step) {
    if constexpr (F32) {
      reinterpret_cast<float*>(dst + GW)[e] = detail::Cvt<T>::to_f32(B[e]);
    } else {
      reinterpret_cast<unsigned short*>(dst + GW)[e] =
          __ldg(reinterpret_cast<const unsigned short*>(B) + e);
    }
  }
}

// Zeroes the value and the delta of every slot of a vector outside [lo, hi) (0 <= lo, hi <= 8):
// such a slot then adds 0 * (a guard or an in-row B entry) and steps its column by exactly 1.
// Every item's first and last vectors pass here, so on short rows it runs on most steps: the
// masks are built a byte per slot with one multiply (about 20 instructions, not the 60 of a
// per-slot loop).
template <int BITS>
__device__ __forceinline__ void macko_mask(unsigned* raw, unsigned* d, int lo, int hi) {
  const unsigned keep = (0xFFu >> (8 - hi)) & (0xFFu << lo);
  // 0xFF in byte i where slot i (k0) or 4 + i (k1) is kept: the multiply moves bit i of a nibble
  // to bit 8i without carries, and times 0xFF fills each byte.
  const unsigned k0 = ((keep & 0xFu) * 0x00204081u & 0x01010101u) * 0xFFu;
  const unsigned k1 = ((keep >> 4) * 0x00204081u & 0x01010101u) * 0xFFu;
  // word w of the values holds slots 2w (low half) and 2w + 1
  raw[0] &= __byte_perm(k0, 0u, 0x1100u);
  raw[1] &= __byte_perm(k0, 0u, 0x3322u);
  raw[2] &= __byte_perm(k1, 0u, 0x1100u);
  raw[3] &= __byte_perm(k1, 0u, 0x3322u);
  if constexpr (BITS == 8) {
    d[0] &= k0;
    d[1] &= k1;
  } else if constexpr (BITS == 4) {
    // byte i holds slot 2i in its low nibble and slot 2i + 1 in its high one
    const unsigned even = __byte_perm(k0, k1, 0x6420u);
    const unsigned odd = __byte_perm(k0, k1, 0x7531u);
    d[0] &= (even & 0x0F0F0F0Fu) | (odd & 0xF0F0F0F0u);
  } else {
    // slot j's 2 bits are bits 2j, 2j + 1: spread keep's bits to the even positions
    unsigned x = keep;
    x = (x | (x << 4)) & 0x0F0Fu;
    x = (x | (x << 2)) & 0x3333u;
    x = (x | (x << 1)) & 0x5555u;
    d[0] &= x * 3u;
  }
}

// Column steps of the vector's 8 slots: 8 (the "+1"s) plus the sum of the deltas.
template <int BITS>
__device__ __forceinline__ int macko_lane_total(const unsigned* d) {
  if constexpr (BITS == 2) {
    return 8 + __popc(d[0] & 0x5555u) + 2 * __popc(d[0] & 0xAAAAu);
  } else if constexpr (BITS == 4) {
    const unsigned x = (d[0] & 0x0F0F0F0Fu) + ((d[0] >> 4) & 0x0F0F0F0Fu);
    return 8 + static_cast<int>(__dp4a(x, 0x01010101u, 0u));
  } else {
    return 8 + static_cast<int>(__dp4a(d[1], 0x01010101u, __dp4a(d[0], 0x01010101u, 0u)));
  }
}

// Delta planes, pre-scaled by ES bytes: for BITS = 4 the even slots' deltas land in the bytes of
// pl[0] and the odd slots' in pl[1], so one byte permute extracts a slot's scaled step.
template <int BITS, int ES>
__device__ __forceinline__ void macko_planes(const unsigned* d, unsigned* pl) {
  constexpr int S = ES == 2 ? 1 : ES == 4 ? 2 : ES == 8 ? 3 : 4;
  static_assert(ES == 2 || ES == 4 || ES == 8 || ES == 16, "row bytes: 2, 4, 8 or 16");
  if constexpr (BITS == 4) {
    pl[0] = (d[0] << S) & (0x0F0F0F0Fu << S);
    pl[1] = (d[0] >> (4 - S)) & (0x0F0F0F0Fu << S);
  } else {
    pl[0] = d[0];
    pl[1] = BITS == 8 ? d[1] : 0u;
  }
}

// Slot j's delta times ES (j is a compile-time constant after unrolling).
template <int BITS, int ES>
__device__ __forceinline__ int macko_step(const unsigned* pl, int j) {
  constexpr int S = ES == 2 ? 1 : ES == 4 ? 2 : ES == 8 ? 3 : 4;
  if constexpr (BITS == 4) {
    return static_cast<int>(__byte_perm(pl[j & 1], 0u, 0x4440u | static_cast<unsigned>(j >> 1)));
  } else if constexpr (BITS == 2) {
    return static_cast<int>((pl[0] >> (2 * j)) & 3u) << S;
  } else {
    return static_cast<int>(__byte_perm(pl[j >> 2], 0u, 0x4440u | static_cast<unsigned>(j & 3)))
           << S;
  }
}

// acc[i] += a * B[row][i], the staged row at byte offset `off` of smem.
template <typename T, int NC, int F32>
__device__ __forceinline__ void macko_stage_fma(const unsigned* smem, int off, float a,
                                                float* acc) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(smem) + off;
  if constexpr (F32) {
    acc[0] = fmaf(a, *reinterpret_cast<const float*>(p), acc[0]);
  } else {
    fma_vec_f32<NC, T>(reinterpret_cast<const T*>(p), a, acc);
  }
}

}  // namespace sg
