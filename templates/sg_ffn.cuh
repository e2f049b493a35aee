// Dense FFN device helpers: the gating between the two dense GEMMs of a gated FFN (the dense_ffn
// family's kernel, and the dense baseline of sparsegen-ffn-bench).
#pragma once

#include "sg_dtype.cuh"

namespace sg {

// h = ReLU(g) ⊙ u, row-major M x N, from gu = [G | U] (M x 2N, gated) or h = ReLU(g) from G
// (M x N); one thread per element of h (grid-stride over M·N). Rounded once to T.
template <typename T>
__device__ __forceinline__ void ffn_gate(const T* __restrict__ gu, T* __restrict__ h, int m, int n,
                                         int gated) {
  const long long total = static_cast<long long>(m) * n;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / n, c = i - r * n;
    const float g = fmaxf(detail::Cvt<T>::to_f32(gu[r * (gated ? 2 * n : n) + c]), 0.0f);
    const float u = gated ? detail::Cvt<T>::to_f32(gu[r * 2 * n + n + c]) : 1.0f;
    h[i] = detail::Cvt<T>::from_f32(g * u);
  }
}

}  // namespace sg
