// MACKO device helpers: streaming loads of 16-byte value vectors and their packed column deltas,
// per-lane decoding of (delta + 1) prefix sums with the row's slot range masked (reverse-offset
// alignment: a vector may start in the previous row and end in the next), and the warp inclusive
// scan that turns the lanes' sums into column carries. See ir/macko_format.h for the layout.
#pragma once

#include "sg_dtype.cuh"

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

}  // namespace sg
