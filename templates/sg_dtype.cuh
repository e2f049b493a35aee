// Scalar dtype helpers: load an element of any value dtype as fp32, store fp32 back in the
// element dtype, and accumulate into global memory atomically. Accumulation is always fp32.
// Device code only; compiled by NVRTC (which ships cuda_fp16.h / cuda_bf16.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace sg {
namespace detail {

// Conversion table per element type; the public helpers below dispatch through it so that one
// template name serves fp32, fp16 and bf16.
template <typename T>
struct Cvt;

template <>
struct Cvt<float> {
  static __device__ __forceinline__ float to_f32(float v) { return v; }
  static __device__ __forceinline__ float from_f32(float v) { return v; }
};

template <>
struct Cvt<__half> {
  static __device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_f32(float v) { return __float2half_rn(v); }
};

template <>
struct Cvt<__nv_bfloat16> {
  static __device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_f32(float v) {
    return __float2bfloat16_rn(v);
  }
};

// fp16 (true) or bf16 (false) tensor-core inputs: they name their operand type in the PTX.
template <typename T>
struct IsHalf {
  static constexpr bool value = false;
};
template <>
struct IsHalf<__half> {
  static constexpr bool value = true;
};

}  // namespace detail

// Reads p[0] and widens it to fp32.
template <typename T>
__device__ __forceinline__ float load_f32(const T* __restrict__ p) {
  return detail::Cvt<T>::to_f32(*p);
}

// Rounds v to T (round-to-nearest-even) and stores it at p[0].
template <typename T>
__device__ __forceinline__ void store_f32(T* __restrict__ p, float v) {
  *p = detail::Cvt<T>::from_f32(v);
}

// p[0] = alpha * acc + beta * p[0]; beta == 0 never reads p (C may hold NaN poison).
template <typename T>
__device__ __forceinline__ void store_axpby(T* __restrict__ p, float acc, float alpha, float beta) {
  float out = alpha * acc;
  if (beta != 0.0f) out += beta * detail::Cvt<T>::to_f32(*p);
  *p = detail::Cvt<T>::from_f32(out);
}

// p[0] = beta * p[0]; beta == 0 writes 0 without reading p (C may hold NaN poison).
template <typename T>
__device__ __forceinline__ void scale_f32(T* __restrict__ p, float beta) {
  *p = detail::Cvt<T>::from_f32(beta == 0.0f ? 0.0f : beta * detail::Cvt<T>::to_f32(*p));
}

// ws[0] = beta * c[0] in fp32 (the Atomic prologue of 16-bit dtypes: partial rows are summed in
// an fp32 workspace and rounded to T once); beta == 0 writes 0 without reading c (NaN poison).
template <typename T>
__device__ __forceinline__ void init_workspace(float* __restrict__ ws, const T* __restrict__ c,
                                               float beta) {
  *ws = beta == 0.0f ? 0.0f : beta * detail::Cvt<T>::to_f32(*c);
}

// Atomically adds v to p[0]. The emitters call it with T = float only (C itself for fp32, the fp32
// workspace for fp16 / bf16): a 16-bit atomic would round every partial sum to T and overflow
// where the partial sums of a row exceed T's range even though the row's result does not.
template <typename T>
__device__ __forceinline__ void atomic_add_f32(T* p, float v) {
  atomicAdd(p, detail::Cvt<T>::from_f32(v));
}

// Atomically adds (a, b) to p[0], p[1] (p 8-byte aligned): one vector reduction on sm_90
// (red.global.add.v2.f32), two scalar adds before it. Each element is added atomically on its
// own, as two atomicAdds would.
__device__ __forceinline__ void atomic_add2_f32(float* p, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
#endif
}

}  // namespace sg
