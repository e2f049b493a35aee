// Warpgroup matrix multiply (wgmma, sm_90a): the Hopper tensor-core path. Four consecutive warps
// (a warpgroup, its first warp index divisible by 4) issue one asynchronous m64nNk16 multiply: A
// (64 x 16) from registers, each warp giving 16 rows in the mma.m16n8k16 A layout; B (16 x N)
// read by the tensor cores straight from shared memory through a 64-bit descriptor; fp32
// accumulators in the mma.m16n8k16 C layout, one n8 tile after another. Against mma.sync per warp
// (sg_bitmap_tc.cuh), B is read from shared memory once per warpgroup instead of once per warp,
// with no ldmatrix, and one instruction replaces a warp's N/8 mma.sync.
//
// Shared layout of B that the descriptor below describes (no swizzle, "N-major": 16-byte rows of 8
// columns): the 16-byte piece of row k, columns 8j .. 8j+7 sits at j·SBO + (k / 8)·LBO + (k %
// 8)·16, so 8 consecutive rows of one n8 column group form one 128-byte core matrix.
//
// Per use: write the A registers -> wgmma_fence -> wgmma_m64k16 (one or more) -> wgmma_commit ->
// wgmma_wait<n> before the A registers of an uncompleted group are rewritten, before the
// accumulators are read, and before B's buffer is refilled. Shared memory written by the generic
// proxy (cp.async, st.shared) that a wgmma reads needs fence_proxy_async by each writer before the
// barrier that publishes it.
#pragma once

#include "sg_dtype.cuh"

namespace sg {
namespace detail {

// Descriptor of an N-major, unswizzled B operand starting at shared address `start` (16-byte
// aligned): bits 0-13 start >> 4, 16-29 LBO >> 4 (next 8 rows of K), 32-45 SBO >> 4 (next 8
// columns of N), 62-63 swizzle mode 0.
__device__ __forceinline__ unsigned long long wgmma_desc_nmajor(unsigned start, unsigned lbo,
                                                                unsigned sbo) {
  return static_cast<unsigned long long>((start >> 4) & 0x3fffu) |
         (static_cast<unsigned long long>((lbo >> 4) & 0x3fffu) << 16) |
         (static_cast<unsigned long long>((sbo >> 4) & 0x3fffu) << 32);
}

}  // namespace detail

// Orders this warp's register writes (A, accumulators) before the wgmma that follows.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

// Closes the wgmma issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most PENDING committed groups are still running.
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Makes this thread's generic-proxy shared-memory writes (completed cp.async included) visible to
// the async proxy that wgmma reads B through.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

namespace detail {

// The operand lists: N/2 fp32 accumulators, four b32 of A, the B descriptor; scale-d = 1 (add
// into d), A and B not negated, B N-major (imm-trans-b = 1).
#define SG_WGMMA_M64N8K16_RS(TY, d, a, desc)                  \
  asm volatile(                                               \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"            \
      " wgmma.mma_async.sync.aligned.m64n8k16.f32." TY "." TY \
      " {"                                                    \
      "%0, %1, %2, %3"                                        \
      "}, {%4, %5, %6, %7}, %8, p, 1, 1, 1;\n}\n"             \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])        \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc))

#define SG_WGMMA_M64N16K16_RS(TY, d, a, desc)                                               \
  asm volatile(                                                                             \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                          \
      " wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY                              \
      " {"                                                                                  \
      "%0, %1, %2, %3, %4, %5, %6, %7"                                                      \
      "}, {%8, %9, %10, %11}, %12, p, 1, 1, 1;\n}\n"                                        \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
        "+f"(d[7])                                                                          \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc))

#define SG_WGMMA_M64N32K16_RS(TY, d, a, desc)                                                   \
  asm volatile(                                                                                 \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                              \
      " wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY                                  \
      " {"                                                                                      \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                        \
      "%8, %9, %10, %11, %12, %13, %14, %15"                                                    \
      "}, {%16, %17, %18, %19}, %20, p, 1, 1, 1;\n}\n"                                          \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),     \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), \
        "+f"(d[14]), "+f"(d[15])                                                                \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc))

#define SG_WGMMA_M64N64K16_RS(TY, d, a, desc)                                                      \
  asm volatile(                                                                                    \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                                 \
      " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                     \
      " {"                                                                                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                           \
      "%8, %9, %10, %11, %12, %13, %14, %15, "                                                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, "                                                   \
      "%24, %25, %26, %27, %28, %29, %30, %31"                                                     \
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                                             \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                         \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc))

// d (N/2 floats per thread) += A (4 x b32: a warp's 16 rows) x B (descriptor), for one warpgroup.
// N in {8, 16, 32, 64}; T is __half or __nv_bfloat16.
template <typename T, int N>
__device__ __forceinline__ void wgmma_m64k16(float* d, const unsigned* a, unsigned long long desc) {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64, "wgmma_m64k16: N must be 8, 16, 32, 64");
  constexpr bool kHalf = detail::IsHalf<T>::value;
  if constexpr (N == 8) {
    if constexpr (kHalf)
      SG_WGMMA_M64N8K16_RS("f16", d, a, desc);
    else
      SG_WGMMA_M64N8K16_RS("bf16", d, a, desc);
  } else if constexpr (N == 16) {
    if constexpr (kHalf)
      SG_WGMMA_M64N16K16_RS("f16", d, a, desc);
    else
      SG_WGMMA_M64N16K16_RS("bf16", d, a, desc);
  } else if constexpr (N == 32) {
    if constexpr (kHalf)
      SG_WGMMA_M64N32K16_RS("f16", d, a, desc);
    else
      SG_WGMMA_M64N32K16_RS("bf16", d, a, desc);
  } else {
    if constexpr (kHalf)
      SG_WGMMA_M64N64K16_RS("f16", d, a, desc);
    else
      SG_WGMMA_M64N64K16_RS("bf16", d, a, desc);
  }
}

}  // namespace detail
}  // namespace sg
