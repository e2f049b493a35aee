// Vector loads and stores of 1, 2, 4 or 8 consecutive elements with fp32 values in registers.
// The pointer must be aligned to VW * sizeof(T) bytes: the generator uses VW > 1 only where the
// dense operand's leading dimension and the column offset are multiples of VW.
#pragma once

#include "sg_dtype.cuh"

namespace sg {
namespace detail {

// Raw storage of VW elements of T, moved in one (or two) native vector transactions.
template <int BYTES>
struct Chunk;
template <>
struct Chunk<2> {
  using type = unsigned short;
};
template <>
struct Chunk<4> {
  using type = unsigned int;
};
template <>
struct Chunk<8> {
  using type = uint2;
};
template <>
struct Chunk<16> {
  using type = uint4;
};
template <>
struct Chunk<32> {
  struct type {
    uint4 lo, hi;
  };
};

template <int VW, typename T>
union Pack {
  typename Chunk<VW* static_cast<int>(sizeof(T))>::type raw;
  T elem[VW];
};

}  // namespace detail

// out[i] = float(p[i]) for i < VW.
template <int VW, typename T>
__device__ __forceinline__ void load_vec_f32(const T* __restrict__ p, float* out) {
  static_assert(VW == 1 || VW == 2 || VW == 4 || VW == 8, "vector width must be 1, 2, 4 or 8");
  using Raw = typename detail::Chunk<VW* static_cast<int>(sizeof(T))>::type;
  detail::Pack<VW, T> pack;
  pack.raw = *reinterpret_cast<const Raw*>(p);
#pragma unroll
  for (int i = 0; i < VW; ++i) out[i] = detail::Cvt<T>::to_f32(pack.elem[i]);
}

// p[i] = T(in[i]) for i < VW.
template <int VW, typename T>
__device__ __forceinline__ void store_vec_f32(T* __restrict__ p, const float* in) {
  static_assert(VW == 1 || VW == 2 || VW == 4 || VW == 8, "vector width must be 1, 2, 4 or 8");
  using Raw = typename detail::Chunk<VW* static_cast<int>(sizeof(T))>::type;
  detail::Pack<VW, T> pack;
#pragma unroll
  for (int i = 0; i < VW; ++i) pack.elem[i] = detail::Cvt<T>::from_f32(in[i]);
  *reinterpret_cast<Raw*>(p) = pack.raw;
}

// out[i] = p[i] for i < VW (column indices of VW consecutive nonzeros).
template <int VW>
__device__ __forceinline__ void load_vec_i32(const int* __restrict__ p, int* out) {
  static_assert(VW == 1 || VW == 2 || VW == 4 || VW == 8, "vector width must be 1, 2, 4 or 8");
  using Raw = typename detail::Chunk<VW * 4>::type;
  union {
    Raw raw;
    int elem[VW];
  } pack;
  pack.raw = *reinterpret_cast<const Raw*>(p);
#pragma unroll
  for (int i = 0; i < VW; ++i) out[i] = pack.elem[i];
}

// acc[i] += a * float(p[i]) for i < VW: one nonzero of A times VW consecutive columns of B.
template <int VW, typename T>
__device__ __forceinline__ void fma_vec_f32(const T* __restrict__ p, float a, float* acc) {
  float b[VW];
  load_vec_f32<VW, T>(p, b);
#pragma unroll
  for (int i = 0; i < VW; ++i) acc[i] = fmaf(a, b[i], acc[i]);
}

}  // namespace sg
