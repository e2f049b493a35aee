// Warpgroup matrix multiply (wgmma, sm_90a): the Hopper tensor-core path. Four consecutive warps
// (a warpgroup, its first warp index divisible by 4) issue one asynchronous m64nNk16 multiply: A
// (64 x 16) from registers, each warp giving 16 rows in the mma.m16n8k16 A layout; B (16 x N)
// read by the tensor cores straight from shared memory through a 64-bit descriptor; fp32
// accumulators in the mma.m16n8k16 C layout, one n8 tile after another. Against mma.sync per warp
// (sg_bitmap_tc.cuh), B is read from shared memory once per warpgroup instead of once per warp,
// with no ldmatrix, and one instruction replaces a warp's N/8 mma.sync. wgmma_sp_m64 is the
// sparse form (2:4 A, m64nNk32 / m64nNk64) with B K-major (wgmma_desc_kmajor).
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

// N = 128: 64 accumulators per thread.
#define SG_WGMMA_M64N128K16_RS(TY, d, a, desc)                                                     \
  asm volatile(                                                                                    \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                                 \
      " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                    \
      " {"                                                                                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                           \
      "%8, %9, %10, %11, %12, %13, %14, %15, "                                                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, "                                                   \
      "%24, %25, %26, %27, %28, %29, %30, %31, "                                                   \
      "%32, %33, %34, %35, %36, %37, %38, %39, "                                                   \
      "%40, %41, %42, %43, %44, %45, %46, %47, "                                                   \
      "%48, %49, %50, %51, %52, %53, %54, %55, "                                                   \
      "%56, %57, %58, %59, %60, %61, %62, %63"                                                     \
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                                             \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63])                                                                                \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc))

// d (N/2 floats per thread) += A (4 x b32: a warp's 16 rows) x B (descriptor), for one warpgroup.
// N in {8, 16, 32, 64, 128}; T is __half or __nv_bfloat16.
template <typename T, int N>
__device__ __forceinline__ void wgmma_m64k16(float* d, const unsigned* a, unsigned long long desc) {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128,
                "wgmma_m64k16: N must be 8, 16, 32, 64, 128");
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
  } else if constexpr (N == 64) {
    if constexpr (kHalf)
      SG_WGMMA_M64N64K16_RS("f16", d, a, desc);
    else
      SG_WGMMA_M64N64K16_RS("bf16", d, a, desc);
  } else {
    if constexpr (kHalf)
      SG_WGMMA_M64N128K16_RS("f16", d, a, desc);
    else
      SG_WGMMA_M64N128K16_RS("bf16", d, a, desc);
  }
}

// A from shared memory as well (the "SS" form): the operand lists of the RS macros with A's
// descriptor in place of its four registers; A K-major (imm-trans-a = 0), B N-major.
#define SG_WGMMA_M64N16K16_SS(TY, d, da, db)                                                \
  asm volatile(                                                                             \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                          \
      " wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY                              \
      " {"                                                                                  \
      "%0, %1, %2, %3, %4, %5, %6, %7"                                                      \
      "}, %8, %9, p, 1, 1, 0, 1;\n}\n"                                                      \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
        "+f"(d[7])                                                                          \
      : "l"(da), "l"(db))
#define SG_WGMMA_M64N32K16_SS(TY, d, da, db)                                                    \
  asm volatile(                                                                                 \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                              \
      " wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY                                  \
      " {"                                                                                      \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                        \
      "%8, %9, %10, %11, %12, %13, %14, %15"                                                    \
      "}, %16, %17, p, 1, 1, 0, 1;\n}\n"                                                        \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),     \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), \
        "+f"(d[14]), "+f"(d[15])                                                                \
      : "l"(da), "l"(db))
#define SG_WGMMA_M64N64K16_SS(TY, d, da, db)                                                       \
  asm volatile(                                                                                    \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                                 \
      " wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                     \
      " {"                                                                                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                           \
      "%8, %9, %10, %11, %12, %13, %14, %15, "                                                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, "                                                   \
      "%24, %25, %26, %27, %28, %29, %30, %31"                                                     \
      "}, %32, %33, p, 1, 1, 0, 1;\n}\n"                                                           \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                         \
      : "l"(da), "l"(db))
#define SG_WGMMA_M64N128K16_SS(TY, d, da, db)                                                      \
  asm volatile(                                                                                    \
      "{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n"                                                 \
      " wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                    \
      " {"                                                                                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                           \
      "%8, %9, %10, %11, %12, %13, %14, %15, "                                                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, "                                                   \
      "%24, %25, %26, %27, %28, %29, %30, %31, "                                                   \
      "%32, %33, %34, %35, %36, %37, %38, %39, "                                                   \
      "%40, %41, %42, %43, %44, %45, %46, %47, "                                                   \
      "%48, %49, %50, %51, %52, %53, %54, %55, "                                                   \
      "%56, %57, %58, %59, %60, %61, %62, %63"                                                     \
      "}, %64, %65, p, 1, 1, 0, 1;\n}\n"                                                           \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63])                                                                                \
      : "l"(da), "l"(db))
// d (N/2 floats per thread) += A (descriptor: 64 x 16) x B (descriptor), for one warpgroup.
// N in {16, 32, 64, 128}; T is __half or __nv_bfloat16.
template <typename T, int N>
__device__ __forceinline__ void wgmma_m64k16_ss(float* d, unsigned long long desc_a,
                                                unsigned long long desc_b) {
  static_assert(N == 16 || N == 32 || N == 64 || N == 128,
                "wgmma_m64k16_ss: N must be 16, 32, 64, 128");
  constexpr bool kHalf = detail::IsHalf<T>::value;
  if constexpr (N == 16) {
    if constexpr (kHalf)
      SG_WGMMA_M64N16K16_SS("f16", d, desc_a, desc_b);
    else
      SG_WGMMA_M64N16K16_SS("bf16", d, desc_a, desc_b);
  } else if constexpr (N == 32) {
    if constexpr (kHalf)
      SG_WGMMA_M64N32K16_SS("f16", d, desc_a, desc_b);
    else
      SG_WGMMA_M64N32K16_SS("bf16", d, desc_a, desc_b);
  } else if constexpr (N == 64) {
    if constexpr (kHalf)
      SG_WGMMA_M64N64K16_SS("f16", d, desc_a, desc_b);
    else
      SG_WGMMA_M64N64K16_SS("bf16", d, desc_a, desc_b);
  } else {
    if constexpr (kHalf)
      SG_WGMMA_M64N128K16_SS("f16", d, desc_a, desc_b);
    else
      SG_WGMMA_M64N128K16_SS("bf16", d, desc_a, desc_b);
  }
}
// Descriptor of a K-major, unswizzled operand starting at shared address `start` (16-byte
// aligned): core matrices of 8 rows (of N) x 16 bytes (of K), LBO the byte step between core
// matrices along K, SBO along N. The same bit fields as wgmma_desc_nmajor.
__device__ __forceinline__ unsigned long long wgmma_desc_kmajor(unsigned start, unsigned lbo,
                                                                unsigned sbo) {
  return wgmma_desc_nmajor(start, lbo, sbo);
}

// Descriptor of a K-major operand in the 128-byte swizzle layout that a TMA copy with
// CU_TENSOR_MAP_SWIZZLE_128B writes: rows (of N) of 128 bytes (of K), the 16-byte piece c of row n
// at (c ^ n % 8)·16 within 1024-byte atoms of 8 rows; SBO 1024 (the next 8 rows), LBO unused (1),
// swizzle mode 1. `start` lies in a 1024-byte aligned atom, plus the K offset within the row (a
// k-slice of 32 bytes at 0, 32, 64 or 96).
__device__ __forceinline__ unsigned long long wgmma_desc_kmajor_sw128(unsigned start) {
  return wgmma_desc_nmajor(start, 16, 1024) | (1ull << 62);
}

// Descriptor of an N-major B operand in the ROW_BYTES-byte swizzle (32, 64 or 128) that a TMA
// copy of rows of ROW_BYTES (ROW_BYTES / 2 16-bit columns of N) writes: row k of K at k·ROW_BYTES,
// its 16-byte piece c at (c ^ (k % 8) mod ROW_BYTES / 16)·16 within atoms of 8 rows; SBO the next
// 8 rows of K (one atom, 8·ROW_BYTES), LBO the next atom of columns along N (`atom_stride`, used
// when N spans more than one row of ROW_BYTES). `start` lies on an atom boundary.
template <int ROW_BYTES>
__device__ __forceinline__ unsigned long long wgmma_desc_nmajor_swizzled(unsigned start,
                                                                         unsigned atom_stride) {
  static_assert(ROW_BYTES == 32 || ROW_BYTES == 64 || ROW_BYTES == 128,
                "wgmma_desc_nmajor_swizzled: a 32, 64 or 128-byte swizzle");
  constexpr unsigned long long kMode = ROW_BYTES == 128 ? 1 : ROW_BYTES == 64 ? 2 : 3;
  return detail::wgmma_desc_nmajor(start, atom_stride, 8 * ROW_BYTES) | (kMode << 62);
}

// Sparse A (wgmma.mma_async.sp, 2:4 along K) from registers: per warp of the warpgroup, its 16
// rows in the mma.sp fragment order (16-bit: m16n8k32; 8-bit: m16n8k64) and metadata word e in
// the mma.sp metadata order with sparsity selector 0; B K-major (imm-trans-b = 0); scale-d from
// `acc_in` (0: d = A x B, the accumulators' old values ignored, so a new sum needs no zeroing of
// them, which would make ptxas copy them around the wgmma every step).
#define SG_ACC_F(x) "+f"(x)
#define SG_ACC_R(x) "+r"(x)
#define SG_WGMMA_SP_N8(INSTR, CONS, TRAIL, d, a, desc, e, acc_in) \
  asm volatile(                                                   \
      "{\n .reg .pred p;\n setp.ne.b32 p, %10, 0;\n"              \
      " wgmma.mma_async.sp.sync.aligned." INSTR                   \
      " {"                                                        \
      "%0, %1, %2, %3"                                            \
      "}, {%4, %5, %6, %7}, %8, %9, 0, p" TRAIL ";\n}\n"          \
      : CONS(d[0]), CONS(d[1]), CONS(d[2]), CONS(d[3])            \
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(acc_in))

#define SG_WGMMA_SP_N16(INSTR, CONS, TRAIL, d, a, desc, e, acc_in)                          \
  asm volatile(                                                                             \
      "{\n .reg .pred p;\n setp.ne.b32 p, %14, 0;\n"                                        \
      " wgmma.mma_async.sp.sync.aligned." INSTR                                             \
      " {"                                                                                  \
      "%0, %1, %2, %3, %4, %5, %6, %7"                                                      \
      "}, {%8, %9, %10, %11}, %12, %13, 0, p" TRAIL ";\n}\n"                                \
      : CONS(d[0]), CONS(d[1]), CONS(d[2]), CONS(d[3]), CONS(d[4]), CONS(d[5]), CONS(d[6]), \
        CONS(d[7])                                                                          \
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(acc_in))

#define SG_WGMMA_SP_N32(INSTR, CONS, TRAIL, d, a, desc, e, acc_in)                              \
  asm volatile(                                                                                 \
      "{\n .reg .pred p;\n setp.ne.b32 p, %22, 0;\n"                                            \
      " wgmma.mma_async.sp.sync.aligned." INSTR                                                 \
      " {"                                                                                      \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                        \
      "%8, %9, %10, %11, %12, %13, %14, %15"                                                    \
      "}, {%16, %17, %18, %19}, %20, %21, 0, p" TRAIL ";\n}\n"                                  \
      : CONS(d[0]), CONS(d[1]), CONS(d[2]), CONS(d[3]), CONS(d[4]), CONS(d[5]), CONS(d[6]),     \
        CONS(d[7]), CONS(d[8]), CONS(d[9]), CONS(d[10]), CONS(d[11]), CONS(d[12]), CONS(d[13]), \
        CONS(d[14]), CONS(d[15])                                                                \
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(acc_in))

#define SG_WGMMA_SP_N64(INSTR, CONS, TRAIL, d, a, desc, e, acc_in)                                 \
  asm volatile(                                                                                    \
      "{\n .reg .pred p;\n setp.ne.b32 p, %38, 0;\n"                                               \
      " wgmma.mma_async.sp.sync.aligned." INSTR                                                    \
      " {"                                                                                         \
      "%0, %1, %2, %3, %4, %5, %6, %7, "                                                           \
      "%8, %9, %10, %11, %12, %13, %14, %15, "                                                     \
      "%16, %17, %18, %19, %20, %21, %22, %23, "                                                   \
      "%24, %25, %26, %27, %28, %29, %30, %31"                                                     \
      "}, {%32, %33, %34, %35}, %36, %37, 0, p" TRAIL ";\n}\n"                                     \
      : CONS(d[0]), CONS(d[1]), CONS(d[2]), CONS(d[3]), CONS(d[4]), CONS(d[5]), CONS(d[6]),        \
        CONS(d[7]), CONS(d[8]), CONS(d[9]), CONS(d[10]), CONS(d[11]), CONS(d[12]), CONS(d[13]),    \
        CONS(d[14]), CONS(d[15]), CONS(d[16]), CONS(d[17]), CONS(d[18]), CONS(d[19]), CONS(d[20]), \
        CONS(d[21]), CONS(d[22]), CONS(d[23]), CONS(d[24]), CONS(d[25]), CONS(d[26]), CONS(d[27]), \
        CONS(d[28]), CONS(d[29]), CONS(d[30]), CONS(d[31])                                         \
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "l"(desc), "r"(e), "r"(acc_in))

// d (N/2 accumulators per thread, the mma C layout per n8 tile) += A(sparse, 64 x K) x B
// (K x N, K-major through desc) for one warpgroup: K = 32 for __half / __nv_bfloat16 (fp32
// accumulators), 64 for signed char (int32). N in {8, 16, 32, 64}.
template <typename E, int N, typename Acc>
__device__ __forceinline__ void wgmma_sp_m64(Acc* d, const uint4& a, unsigned long long desc,
                                             unsigned e, int acc_in = 1) {
  static_assert(N == 8 || N == 16 || N == 32 || N == 64, "wgmma_sp_m64: N must be 8, 16, 32, 64");
#define SG_WGMMA_SP_PICK(SHAPE, CONS, TRAIL)                             \
  if constexpr (N == 8)                                                  \
    SG_WGMMA_SP_N8("m64n8" SHAPE, CONS, TRAIL, d, a, desc, e, acc_in);   \
  else if constexpr (N == 16)                                            \
    SG_WGMMA_SP_N16("m64n16" SHAPE, CONS, TRAIL, d, a, desc, e, acc_in); \
  else if constexpr (N == 32)                                            \
    SG_WGMMA_SP_N32("m64n32" SHAPE, CONS, TRAIL, d, a, desc, e, acc_in); \
  else                                                                   \
    SG_WGMMA_SP_N64("m64n64" SHAPE, CONS, TRAIL, d, a, desc, e, acc_in);
  if constexpr (IsHalf<E>::value) {
    SG_WGMMA_SP_PICK("k32.f32.f16.f16", SG_ACC_F, ", 1, 1, 0")
  } else if constexpr (sizeof(E) == 2) {
    SG_WGMMA_SP_PICK("k32.f32.bf16.bf16", SG_ACC_F, ", 1, 1, 0")
  } else {
    SG_WGMMA_SP_PICK("k64.s32.s8.s8", SG_ACC_R, "")
  }
#undef SG_WGMMA_SP_PICK
}

}  // namespace detail
}  // namespace sg
