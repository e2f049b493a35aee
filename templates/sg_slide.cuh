// slide device helpers: SlideSparse weights on the 2:4 sparse tensor cores (mma.sp). The weight
// arrives in fragment order (ir/slide_fragments.h): per 16-row tile and chunk of lifted columns,
// 16 bytes of values (8 for KIND 4) and one metadata word per lane. B is lifted into the sliding
// windows (and quantized per token for 8-bit types) by slide_lift, which writes it in the mma.sp B
// fragment order, 16 bytes per lane per chunk and 8-column tile (8 for KIND 4), or for split=wg in
// wgmma.sp's K-major core order; slide_spmm (and its split=rows and wg forms) multiplies.
//
// KIND: 0 fp16, 1 bf16 (mma.sp m16n8k32, fp32 accumulate), 2 int8 (m16n8k64, int32
// accumulate), 3 fp8 e4m3 (m16n8k64, fp32 accumulate; sm_89+: the form a library reads),
// 4 fp8 e4m3 on the fp16 mma.sp (m16n8k32, fp32 accumulate; sm_89+): A and the lifted B hold
// 1-byte e4m3 values in the fp16 fragment order (8 bytes per lane and chunk), converted to fp16
// in registers (exact). sm_90 has no native e4m3 mma.sp: ptxas lowers KIND 3 to fp16 mma.sp
// behind shuffles, which KIND 4's layout makes unnecessary.
// Fragments (PTX ISA; g = lane / 4, t = lane % 4, E = 2 for 16-bit and 4 for 8-bit types):
//   A reg r, element e: row g + 8(r & 1), compressed column (r >> 1)·4E + E·t + e
//   B reg r, element e: chunk row r·4E + E·t + e, column g
//   C (4 x 32-bit): c0, c1 = row g, columns 2t, 2t+1; c2, c3 = row g + 8
#pragma once

#include "sg_async_copy.cuh"
#include "sg_bulk_copy.cuh"
#include "sg_dtype.cuh"
#include "sg_grid_dependency.cuh"
#include "sg_wgmma.cuh"

namespace sg {
namespace detail {

template <bool B, typename X, typename Y>
struct SlideCond {
  using type = X;
};
template <typename X, typename Y>
struct SlideCond<false, X, Y> {
  using type = Y;
};

template <int KIND>
struct SlideKind {
  static constexpr bool kEight = KIND == 2 || KIND == 3;  // the m16n8k64 form of 8-bit operands
  static constexpr int kPerReg = kEight ? 4 : 2;          // elements per 32-bit register
  static constexpr int kChunk = kEight ? 64 : 32;         // lifted columns per mma
  static constexpr int kMetaLanes = kEight ? 4 : 2;       // metadata lanes per quad
  static constexpr int kLane = KIND == 4 ? 8 : 16;        // bytes of A or B per lane and chunk
  using Acc = typename SlideCond<KIND == 2, int, float>::type;
};

// Four e4m3 values (w, element 0 in the low byte) as two fp16x2 (elements 0, 1 in lo, 2, 3 in
// hi; element 0 and 2 in the low halves); exact.
__device__ __forceinline__ void slide_e4m3x4_to_f16x2(unsigned w, unsigned& lo, unsigned& hi) {
  asm("{\n .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n"
      " cvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
}

// d += A(sparse) · B for one 16 x 8 tile; sparsity selector 0.
template <int KIND, typename Acc>
__device__ __forceinline__ void slide_mma(Acc* d, const uint4& a, const uint4& b, unsigned e) {
  if constexpr (KIND == 0) {
    asm volatile(
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
  } else if constexpr (KIND == 1) {
    asm volatile(
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
  } else if constexpr (KIND == 2) {
    asm volatile(
        "mma.sp.sync.aligned.m16n8k64.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
  } else if constexpr (KIND == 4) {
    // .x, .y of a and b: the 8 e4m3 values of the fp16 fragments, two per register once converted.
    unsigned a0, a1, a2, a3, b0, b1, b2, b3;
    slide_e4m3x4_to_f16x2(a.x, a0, a1);
    slide_e4m3x4_to_f16x2(a.y, a2, a3);
    slide_e4m3x4_to_f16x2(b.x, b0, b1);
    slide_e4m3x4_to_f16x2(b.y, b2, b3);
    asm volatile(
        "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "r"(e));
  } else {
    asm volatile(
        "mma.sp.sync.aligned.m16n8k64.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9, %10, %11}, {%0, %1, %2, %3}, %12, 0x0;\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.y), "r"(b.z), "r"(b.w), "r"(e));
  }
}

// One B element (fp32) as the operand type's bits: 16-bit types round to nearest even; int8
// quantizes Q(x · inv) (ir/quantize.h: round to nearest even, saturate to ±127, NaN -> 0); e4m3
// converts x · inv with saturation (cvt.rn.satfinite).
template <int KIND, typename T>
__device__ __forceinline__ unsigned slide_operand_bits(float x, float inv) {
  if constexpr (KIND == 0) {
    return static_cast<unsigned>(__half_as_ushort(__float2half_rn(x)));
  } else if constexpr (KIND == 1) {
    return static_cast<unsigned>(__bfloat16_as_ushort(__float2bfloat16_rn(x)));
  } else if constexpr (KIND == 2) {
    const float y = x * inv;
    const int q = y != y ? 0 : __float2int_rn(fminf(fmaxf(y, -127.0f), 127.0f));
    return static_cast<unsigned>(q) & 0xffu;
  } else {
    const float y = x * inv;
    unsigned pair;
    asm("{\n .reg .b16 t;\n cvt.rn.satfinite.e4m3x2.f32 t, %1, %2;\n cvt.u32.u16 %0, t;\n}\n"
        : "=r"(pair)
        : "f"(0.0f), "f"(y));
    return pair & 0xffu;
  }
}

// This block's column block and K part: grid.y = column blocks x KS parts, blockIdx.y =
// part · col_blocks + column block; the part takes chunks c0 .. c1 − 1 (of ceil(chunks / KS),
// rounded up to a multiple of ALIGN).
struct SlideBlockPart {
  int cb, c0, c1;
};
template <int KS, int ALIGN = 1>
__device__ __forceinline__ SlideBlockPart slide_block_part(int chunks, int col_blocks) {
  if constexpr (KS == 1) return {static_cast<int>(blockIdx.y), 0, chunks};
  const int part = ((chunks + KS - 1) / KS + ALIGN - 1) / ALIGN * ALIGN;
  const int c0 = static_cast<int>(blockIdx.y) / col_blocks * part;
  return {static_cast<int>(blockIdx.y) % col_blocks, c0, min(chunks, c0 + part)};
}

// The K parts' fp32 workspace holds the output in mma C fragment order, not in C's layout:
// element (r, n) at ((r / 16 · col_tiles + n / 8) · 32 + lane) · 4 + q, lane = 4·(r % 8) +
// (n % 8) / 2, q = 2·((r % 16) / 8) + n % 2, so a lane's four sums of a 16 x 8 tile are one
// 16-byte vector add (sm_90: red.global.add.v4.f32) and a warp's adds one 512-byte span.
__device__ __forceinline__ int slide_ws_index(int r, int n, int col_tiles) {
  return (((r >> 4) * col_tiles + (n >> 3)) * 32 + (r & 7) * 4 + ((n & 7) >> 1)) * 4 +
         ((r >> 3) & 1) * 2 + (n & 1);
}
__device__ __forceinline__ void slide_ws_add4(float* p, float a, float b, float c, float d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
#else
  atomicAdd(p, a);
  atomicAdd(p + 1, b);
  atomicAdd(p + 2, c);
  atomicAdd(p + 3, d);
#endif
}

// Warp epilogue: C[r, n] = alpha · acc · (QUANT ? row_scales[r] · token_scales[n] : 1)
// + beta · C[r, n] for the warp's MT x NT tiles from row tile rt0 and column tile ct0 (beta == 0:
// C not read), C element (r, n) at C[r·c_rs + n·c_ns]. ADD = 1 (K parts): the scaled sums
// alpha · acc · scales are added into the fp32 workspace ws instead (slide_ws_index: a tile wholly
// inside M x N as one vector add per lane); the parts meet there and slide_split_finish rounds
// them into C.
template <typename T, int MT, int NT, int QUANT, int ADD, typename Acc>
__device__ __forceinline__ void slide_store(const Acc* acc, T* __restrict__ C, float* ws,
                                            const float* __restrict__ row_scales,
                                            const float* __restrict__ token_scales, float alpha,
                                            float beta, int M, int N, int rt0, int ct0, int g,
                                            int t, int c_rs, int c_ns) {
  const int col_tiles = (N + 7) >> 3;
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      float v[4];
      bool whole = true;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = (rt0 + i) * 16 + g + 8 * (q >> 1);
        const int n = (ct0 + j) * 8 + 2 * t + (q & 1);
        const bool in = r < M && n < N;
        whole = whole && in;
        float x = static_cast<float>(acc[(i * NT + j) * 4 + q]);
        if constexpr (QUANT) x = in ? x * (row_scales[r] * token_scales[n]) : 0.0f;
        v[q] = alpha * x;
      }
      if constexpr (ADD) {
        const int r0 = (rt0 + i) * 16 + g, n0 = (ct0 + j) * 8 + 2 * t;
        if (whole) {
          slide_ws_add4(ws + slide_ws_index(r0, n0, col_tiles), v[0], v[1], v[2], v[3]);
          continue;
        }
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = (rt0 + i) * 16 + g + 8 * (q >> 1);
        const int n = (ct0 + j) * 8 + 2 * t + (q & 1);
        if (r >= M || n >= N) continue;
        if constexpr (ADD) {
          atomicAdd(ws + slide_ws_index(r, n, col_tiles), v[q]);
        } else {
          const int e = r * c_rs + n * c_ns;
          float out = v[q];
          if (beta != 0.0f) out += beta * Cvt<T>::to_f32(C[e]);
          C[e] = Cvt<T>::from_f32(out);
        }
      }
    }
}

// K parts, once the THREADS threads of the caller (tid among them: one warp, or the block) have
// added their sums (slide_store<..., ADD = 1>): the caller that completes its output tile (rows r0
// .. r0 + rows − 1, columns n0 .. n0 + cols − 1) last, counted in *counter, rounds the tile into C
// (C = ws + beta·C; C not read when beta == 0) and leaves the tile of ws and the counter at zero,
// so each run finds the workspace as the runtime zeroed it once.
// `parts`: the callers that add into the tile (KS, or a spread kernel's blocks on its rows).
template <typename T, int THREADS>
__device__ __forceinline__ void slide_split_finish(T* __restrict__ C, float* ws, unsigned* counter,
                                                   unsigned parts, int r0, int rows, int n0,
                                                   int cols, int M, int N, int c_rs, int c_ns,
                                                   float beta, int tid) {
  // Release: this caller's adds are visible before it is counted.
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  int last;
  if constexpr (THREADS == 32) {
    __syncwarp();
    int v = 0;
    if (tid == 0) v = atomicAdd(counter, 1u) == parts - 1u;
    last = __shfl_sync(0xffffffffu, v, 0);
  } else {
    __shared__ int s_last;
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(counter, 1u) == parts - 1u;
    __syncthreads();
    last = s_last;
  }
  if (!last) return;
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");  // the other parts' adds are visible now
  // The tile's sums lie in ws as whole 16 x 8 tiles in fragment order (slide_ws_index): lane l of
  // a tile holds (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1) in four consecutive floats, g
  // = l / 4, t = l % 4. Each thread loads a batch of such quads (one 16-byte L2 load each, __ldcg:
  // where the atomics were performed) before it stores any, so the loads overlap; one dependent
  // round trip per element would leave a long serial tail in the one block that finishes.
  const int col_tiles = (N + 7) >> 3, tile_cols = cols >> 3;
  const int quads = rows * cols / 4;
  constexpr int kBatch = 4;
  // tid >= THREADS: a thread of the caller's block that only meets the barriers (a producer warp).
  for (int q0 = tid; tid < THREADS && q0 < quads; q0 += THREADS * kBatch) {
    float4 v[kBatch];
    float old[kBatch][4];
    int base[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int q = q0 + j * THREADS, tile = q >> 5, lane = q & 31;
      base[j] = -1;
      const int rt = (r0 >> 4) + tile / tile_cols, ct = (n0 >> 3) + tile % tile_cols;
      // ws holds the tiles that meet M x N; the counters follow it.
      if (q >= quads || rt * 16 >= M || ct * 8 >= N) continue;
      base[j] = ((rt * col_tiles + ct) * 32 + lane) * 4;
      v[j] = __ldcg(reinterpret_cast<const float4*>(ws + base[j]));
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int r = rt * 16 + (lane >> 2) + 8 * (k >> 1), n = ct * 8 + 2 * (lane & 3) + (k & 1);
        old[j][k] = beta != 0.0f && r < M && n < N ? Cvt<T>::to_f32(C[r * c_rs + n * c_ns]) : 0.0f;
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (base[j] < 0) continue;
      *reinterpret_cast<float4*>(ws + base[j]) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const int q = q0 + j * THREADS, tile = q >> 5, lane = q & 31;
      const int rt = (r0 >> 4) + tile / tile_cols, ct = (n0 >> 3) + tile % tile_cols;
      const float sums[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int r = rt * 16 + (lane >> 2) + 8 * (k >> 1), n = ct * 8 + 2 * (lane & 3) + (k & 1);
        if (r < M && n < N) C[r * c_rs + n * c_ns] = Cvt<T>::from_f32(sums[k] + beta * old[j][k]);
      }
    }
  }
  if (tid == 0) *counter = 0u;
}

// spread (stream-K without atomics on the sums): each block on a partly covered row block stores
// its warp's partial sums of a 16 x 8·NT tile into its own slot of the tile (alpha · acc · scales,
// in fragment order: lane l's four sums of column tile j as one 16-byte store at
// slot + j·128 + 4·l; q-th sum at (g + 8·(q / 2), 2t + q % 2)), announces it on the tile's
// counter, and the last of the tile's `parts` warps adds the slots in slot order and rounds the
// sum into C. The order of the additions does not depend on which block ends last.
template <int NT, int QUANT, typename Acc>
__device__ __forceinline__ void slide_part_store(const Acc* acc, float* slot,
                                                 const float* __restrict__ row_scales,
                                                 const float* __restrict__ token_scales,
                                                 float alpha, int M, int N, int rt, int ct0,
                                                 int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    float v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = rt * 16 + g + 8 * (q >> 1), n = (ct0 + j) * 8 + 2 * t + (q & 1);
      float x = static_cast<float>(acc[j * 4 + q]);
      if constexpr (QUANT) x = r < M && n < N ? x * (row_scales[r] * token_scales[n]) : 0.0f;
      v[q] = alpha * x;
    }
    reinterpret_cast<float4*>(slot + j * 128)[lane] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// After slide_part_store: counts the warp's part on the tile's counter; whether it was the last of
// `parts` (then the other parts' slots are visible to the whole warp).
__device__ __forceinline__ bool slide_part_arrive(unsigned* counter, int parts, int lane) {
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");  // release: the slot before the count
  __syncwarp();
  int v = 0;
  if (lane == 0) v = atomicAdd(counter, 1u) == static_cast<unsigned>(parts - 1);
  const bool last = __shfl_sync(0xffffffffu, v, 0) != 0;
  if (last) asm volatile("fence.acq_rel.gpu;\n" ::: "memory");  // acquire: the others' slots
  return last;
}

// The last part of a tile: C = sum of its `parts` slots (slot order) + beta·C (C not read when
// beta == 0), rows and columns past M x N skipped; the counter is left at zero for the next run.
template <typename T, int NT>
__device__ __forceinline__ void slide_part_finish(T* __restrict__ C, const float* slots, int parts,
                                                  unsigned* counter, float beta, int M, int N,
                                                  int rt, int ct0, int c_rs, int c_ns, int lane) {
  float4 s[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) s[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int p = 0; p < parts; ++p) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {  // NT loads in flight per slot
      const float4 v = __ldcg(reinterpret_cast<const float4*>(slots + (p * NT + j) * 128) + lane);
      s[j].x += v.x;
      s[j].y += v.y;
      s[j].z += v.z;
      s[j].w += v.w;
    }
  }
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const float sums[4] = {s[j].x, s[j].y, s[j].z, s[j].w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int r = rt * 16 + g + 8 * (q >> 1), n = (ct0 + j) * 8 + 2 * t + (q & 1);
      if (r >= M || n >= N) continue;
      T* const e = C + r * c_rs + n * c_ns;
      *e = Cvt<T>::from_f32(beta != 0.0f ? sums[q] + beta * Cvt<T>::to_f32(*e) : sums[q]);
    }
  }
  if (lane == 0) *counter = 0u;
}

}  // namespace detail

namespace detail {

// Two B values (fp32) as the operand type's bits, packed: 16-bit types in 32 bits (x in the low
// half), 8-bit types in the low 16 bits (x in the low byte).
template <int KIND, typename T>
__device__ __forceinline__ unsigned slide_operand_pair(float x, float y, float inv) {
  if constexpr (KIND == 3 || KIND == 4) {
    unsigned pair;
    asm("{\n .reg .b16 t;\n cvt.rn.satfinite.e4m3x2.f32 t, %1, %2;\n cvt.u32.u16 %0, t;\n}\n"
        : "=r"(pair)
        : "f"(y * inv), "f"(x * inv));
    return pair;
  } else {
    constexpr int kBits = SlideKind<KIND>::kEight ? 8 : 16;
    return slide_operand_bits<KIND, T>(x, inv) | (slide_operand_bits<KIND, T>(y, inv) << kBits);
  }
}

// Four B values (two words of T pairs) quantized to int8 and packed, element e in byte e, when
// the token's inv is finite and non-zero and it has no NaN, so |x · inv| <= 127 (rounded): the
// product rounded to fp32, then to the nearest even integer by adding 1.5·2^23, whose low byte
// is the integer's two's complement (no contraction: __fmul_rn / __fadd_rn).
template <typename T>
__device__ __forceinline__ unsigned slide_int8_word(unsigned lo, unsigned hi, float inv) {
  constexpr float kMagic = 12582912.0f;
  const T* a = reinterpret_cast<const T*>(&lo);
  const T* b = reinterpret_cast<const T*>(&hi);
  const unsigned q0 = __float_as_uint(__fadd_rn(__fmul_rn(Cvt<T>::to_f32(a[0]), inv), kMagic));
  const unsigned q1 = __float_as_uint(__fadd_rn(__fmul_rn(Cvt<T>::to_f32(a[1]), inv), kMagic));
  const unsigned q2 = __float_as_uint(__fadd_rn(__fmul_rn(Cvt<T>::to_f32(b[0]), inv), kMagic));
  const unsigned q3 = __float_as_uint(__fadd_rn(__fmul_rn(Cvt<T>::to_f32(b[1]), inv), kMagic));
  return __byte_perm(__byte_perm(q0, q1, 0x0040u), __byte_perm(q2, q3, 0x0040u), 0x5410u);
}

// The bits of +Inf in a 16-bit B type (fp16; bf16 in the primary template).
template <typename T>
struct SlideInfBits {
  static constexpr unsigned value = 0x7f80u;
};
template <>
struct SlideInfBits<__half> {
  static constexpr unsigned value = 0x7c00u;
};

// The largest |x| of TOK tokens' staged columns (s_b: TOK rows of `stride`, `width` used, width
// even), reduced over the block; thread j < TOK gets token j's maximum (others: 0), every
// thread whether any of the tokens holds a NaN. The
// magnitudes are compared as integers (|x|'s bits order as its value; NaN above Inf), so a
// token holding a NaN is found and, as fmaxf does, its maximum then skips the NaN (a float pass).
// The block's largest |x| bits of TOK tokens from each thread's mx (|x| bits of a 16-bit type
// order as the value; NaN above Inf): thread j < TOK gets token j's (others: 0), every thread
// whether one of the tokens holds a NaN. Every thread of the block must call it.
template <typename T, int THREADS, int TOK>
__device__ __forceinline__ unsigned slide_block_max_bits(unsigned (&mx)[TOK], float (*s_part)[TOK],
                                                         bool& any_nan) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int j = 0; j < TOK; ++j) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx[j] = max(mx[j], __shfl_xor_sync(0xffffffffu, mx[j], o));
    if (lane == 0) s_part[warp][j] = __uint_as_float(mx[j]);
  }
  __syncthreads();
  unsigned m = 0u;
  if (tid < TOK)
    for (int w = 0; w < THREADS / 32; ++w) m = max(m, __float_as_uint(s_part[w][tid]));
  any_nan = __syncthreads_or(m > SlideInfBits<T>::value) != 0;  // block-uniform
  return m;
}

// The value of |x| bits of a 16-bit type, as fp32.
template <typename T>
__device__ __forceinline__ float slide_bits_f32(unsigned m) {
  const unsigned short bits = static_cast<unsigned short>(m);
  return Cvt<T>::to_f32(*reinterpret_cast<const T*>(&bits));
}

template <typename T, int THREADS, int TOK>
__device__ __forceinline__ float slide_staged_max(const T* s_b, int stride, int width,
                                                  float (*s_part)[TOK], bool& any_nan) {
  const int tid = threadIdx.x;
  unsigned mx[TOK];
#pragma unroll
  for (int j = 0; j < TOK; ++j) {
    mx[j] = 0u;
    const unsigned* row = reinterpret_cast<const unsigned*>(s_b + j * stride);
    for (int i = tid; i < width / 2; i += THREADS) {
      const unsigned w = row[i];
      mx[j] = max(mx[j], max(w & 0x7fffu, (w >> 16) & 0x7fffu));
    }
  }
  const unsigned m = slide_block_max_bits<T, THREADS, TOK>(mx, s_part, any_nan);
  if (!any_nan) return slide_bits_f32<T>(m);
  // A NaN among the tokens (rare): their maxima again in floats, skipping NaN.
  float f = 0.0f;
  if (tid < TOK)
    for (int i = 0; i < width; ++i) f = fmaxf(f, fabsf(Cvt<T>::to_f32(s_b[tid * stride + i])));
  return f;
}

// The largest |x| of TOK tokens n0 … n0 + TOK − 1 over all K rows of B (element (k, n) at
// B[k·b_ks + n·b_ns]; tokens >= N count 0), read from global memory, as slide_staged_max: thread
// j < TOK gets token j's maximum, every thread whether one of them holds a NaN. vec: column-major
// B, K % 8 == 0 and B 16-byte aligned, so a token is K / 8 16-byte pieces, four in flight per
// thread.
template <typename T, int THREADS, int TOK>
__device__ __forceinline__ float slide_global_max(const T* __restrict__ B, int K, int N, int b_ks,
                                                  int b_ns, int n0, bool vec, float (*s_part)[TOK],
                                                  bool& any_nan) {
  const int tid = threadIdx.x;
  const unsigned short* b16 = reinterpret_cast<const unsigned short*>(B);
  unsigned mx[TOK];
#pragma unroll
  for (int j = 0; j < TOK; ++j) {
    mx[j] = 0u;
    const int n = n0 + j;
    if (n >= N) continue;
    if (vec) {
      const uint4* col = reinterpret_cast<const uint4*>(B + static_cast<long long>(n) * b_ns);
      const int pieces = K / 8;
      for (int i0 = tid; i0 < pieces; i0 += 4 * THREADS) {
        uint4 r[4];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          r[q] = i0 + q * THREADS < pieces ? __ldg(col + i0 + q * THREADS) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const unsigned w[4] = {r[q].x, r[q].y, r[q].z, r[q].w};
#pragma unroll
          for (int h = 0; h < 4; ++h)
            mx[j] = max(mx[j], max(w[h] & 0x7fffu, (w[h] >> 16) & 0x7fffu));
        }
      }
    } else {
      for (int k = tid; k < K; k += THREADS)
        mx[j] = max(mx[j], static_cast<unsigned>(__ldg(b16 + static_cast<long long>(k) * b_ks +
                                                       static_cast<long long>(n) * b_ns)) &
                               0x7fffu);
    }
  }
  const unsigned m = slide_block_max_bits<T, THREADS, TOK>(mx, s_part, any_nan);
  if (!any_nan) return slide_bits_f32<T>(m);
  // A NaN among the tokens (rare): their maxima again in floats, skipping NaN.
  float f = 0.0f;
  if (tid < TOK && n0 + tid < N)
    for (int k = 0; k < K; ++k)
      f = fmaxf(
          f, fabsf(Cvt<T>::to_f32(
                 B[static_cast<long long>(k) * b_ks + static_cast<long long>(n0 + tid) * b_ns])));
  return f;
}

}  // namespace detail

// b_transform: lifts B (K x N, element (k, n) at B[k·b_ks + n·b_ns]) into the sliding windows of
// (2P−2):2P (Ψ: lifted column g·4(P−1) + 4w + p copies column g·2P + 2w + p, zeros past K) and
// writes it in B fragment order: bw[((chunk · col_tiles + tile) · 32 + lane) · 4 + r], lane
// 4·(n % 8) + t holding token n. A token's units are independent of the other tokens of its
// tile, so block b owns tokens b·TOK … b·TOK + TOK − 1 (TOK divides 8; tokens ≥ N get zeros)
// and, with grid.y = 1, all their chunks, in segments of seg_chunks chunks (grid.y > 1: block
// (b, y) takes segments y, y + grid.y, …, so that decode-sized N still fills the device): per
// segment it stages the original columns the segment reads (at most seg_cols per token) in shared
// memory s_b, B read once with
// 16-byte cp.async copies (VEC = 1: column-major B, K % 8 == 0, B 16-byte aligned; else plain
// loads in B's memory order), then writes each (chunk, token, t) unit as one 16-byte store, the
// 4·TOK units of a chunk adjacent. For 8-bit types (QUANT = 1) the per-token scale comes from
// the largest |B| of the token: from the staged columns when one segment holds all of K (B is
// read once), else from a pass over all of the token's B before staging (every block of the
// token, the same value); blocks (b, 0) store their tokens' scales.
//
// ORDER: 0 the fragment order above; 2 core order (16-byte lanes only), for wgmma.sp's K-major B:
// the 128 words of a (chunk, tile) hold word r of lane l at r·32 + l, i.e. core matrix r (chunk
// rows r·4E … r·4E + 4E − 1) as 8 rows of 16 bytes, token n % 8 in row n % 8, each row one unit
// and one 16-byte store; 1 (PLAIN) writes B'
// plainly instead, for a library GEMM: lifted K (chunks · kChunk) x N
// column-major, unit (chunk, token, t) = lifted columns chunk · kChunk + 4E·t … + 4E − 1 of the
// token at bw[(n · chunks + chunk) · 4 + t] (16-byte units; tokens >= N are not written).
//
//   (QUANT, several segments) inv[token] <- qmax / max |B[token]|   // 16-byte loads
//   for seg = y, y + grid.y, … of the segments:         // one when the token fits
//     s_b[TOK][cols of seg] <- B                        // cp.async, 16 bytes per copy
//     (QUANT) inv[token] <- qmax / max |s_b[token]|     // block reduction
//     for unit (chunk, token, t) of seg, per thread:    // 4·TOK adjacent 16-byte stores
//       bw[unit] <- lift(s_b)
template <typename T, int KIND, int P, int THREADS, int QUANT, int TOK, int VEC, int ORDER>
__device__ __forceinline__ void slide_lift(const T* __restrict__ B, unsigned* __restrict__ bw,
                                           float* __restrict__ token_scales, T* s_b, int K, int N,
                                           int b_ks, int b_ns, int chunks, int col_tiles,
                                           int seg_chunks, int seg_cols) {
  using K_ = detail::SlideKind<KIND>;
  constexpr int E = K_::kPerReg;
  constexpr int W = 4 * (P - 1);  // lifted columns per group of 2P original ones
  constexpr float kQmax = KIND == 2 ? 127.0f : 448.0f;
  static_assert(THREADS % 32 == 0 && 8 % TOK == 0, "slide_lift: whole warps, TOK divides 8");
  static_assert(ORDER != 2 || K_::kLane == 16, "slide_lift: core order needs 16-byte lanes");
  constexpr bool PLAIN = ORDER == 1;
  __shared__ float s_part[THREADS / 32][TOK];
  __shared__ float s_inv[TOK];
  launch_dependents();  // the kernel reading bw may start now (it waits for this grid's end)
  const int tid = threadIdx.x, n0 = blockIdx.x * TOK;
  const bool one_segment = seg_chunks >= chunks;
  // The token's quantization: inv = qmax / max (ir/quantize.h), scale = max / qmax (1: max 0).
  auto set_scale = [&](float m) {
    if (tid < TOK) {
      const bool ok = m > 0.0f && m <= 3.402823466e38f;  // finite and non-zero
      s_inv[tid] = ok ? kQmax / m : 0.0f;
      if (blockIdx.y == 0 && n0 + tid < N) token_scales[n0 + tid] = ok ? m / kQmax : 1.0f;
    }
  };
  const bool vec = VEC && (reinterpret_cast<unsigned long long>(B) & 15ull) == 0;
  // int8's short conversion (slide_int8_word) needs the tokens free of NaN: known when their
  // maximum came from the staged columns or the pass over B.
  bool fast_tokens = false;
  if constexpr (QUANT) {
    if (!one_segment) {  // the maximum over all of K before the segments
      bool any_nan = false;
      set_scale(
          detail::slide_global_max<T, THREADS, TOK>(B, K, N, b_ks, b_ns, n0, vec, s_part, any_nan));
      fast_tokens = !any_nan;
      __syncthreads();
    }
  }
  const int seg_step = static_cast<int>(gridDim.y) * seg_chunks;
  for (int c0 = static_cast<int>(blockIdx.y) * seg_chunks; c0 < chunks; c0 += seg_step) {
    const int c1 = min(chunks, c0 + seg_chunks);
    int lo = c0 * K_::kChunk / W * 2 * P;
    if (vec) lo &= ~7;
    const int hi = ((c1 * K_::kChunk - 1) / W + 1) * 2 * P;  // columns [lo, hi) feed the segment
    const int width = hi - lo;                               // even, at most seg_cols
    if (vec) {
      // Each token's columns are contiguous and K % 8 == 0: a 16-byte piece is all in or all out.
      const int pieces = (width + 7) / 8;
      for (int i = tid; i < TOK * pieces; i += THREADS) {
        const int j = i / pieces, v = i - j * pieces, col = lo + 8 * v;
        const bool skip = n0 + j >= N || col >= K;
        detail::cp_async16(
            smem_addr(reinterpret_cast<const unsigned*>(s_b + j * seg_cols)) + 16 * v,
            B + (skip ? 0 : (n0 + j) * b_ns + col), skip);
      }
      cp_async_commit();
      cp_async_wait<0>();
    } else {
      // Row-major B (b_ns == 1): the block's TOK tokens of a column are adjacent; else a
      // token's columns are.
      for (int i = tid; i < TOK * width; i += THREADS) {
        const int c = b_ns == 1 ? i / TOK : i % width, j = b_ns == 1 ? i % TOK : i / width;
        const int n = n0 + j, col = lo + c;
        s_b[j * seg_cols + c] =
            n < N && col < K ? B[col * b_ks + n * b_ns] : detail::Cvt<T>::from_f32(0.0f);
      }
    }
    __syncthreads();
    if constexpr (QUANT) {
      if (one_segment) {
        bool any_nan = false;
        set_scale(detail::slide_staged_max<T, THREADS, TOK>(s_b, seg_cols, width, s_part, any_nan));
        fast_tokens = !any_nan;
        __syncthreads();
      }
    }
    // Unit (chunk kc, token j, t): lifted columns kc·kChunk + r·4E + E·t + e of token n0 + j.
    // Its E columns per register lie in one window (E·t is a multiple of E, windows are 4 wide),
    // so they are E adjacent original columns from an even one: 32-bit shared loads.
    for (int u = tid; u < (c1 - c0) * 4 * TOK; u += THREADS) {
      const int t = u & 3, j = (u >> 2) % TOK, kc = c0 + (u >> 2) / TOK, n = n0 + j;
      if (PLAIN && n >= N) continue;
      const int row = j * seg_cols - lo;  // s_b index of the token's column 0
      const float inv = QUANT ? s_inv[j] : 0.0f;
      const bool fast = fast_tokens && inv != 0.0f;
      unsigned r32[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        // first lifted column: fragment order, or 4E consecutive ones per unit (PLAIN, and core
        // order, whose unit is row n % 8 of core matrix t)
        const int lc =
            kc * K_::kChunk + (PLAIN || ORDER == 2 ? 4 * E * t + E * r : r * 4 * E + E * t);
        const int grp = lc / W, rest = lc - grp * W;
        const int col = grp * 2 * P + 2 * (rest >> 2) + (rest & 3);
        const unsigned* src = reinterpret_cast<const unsigned*>(s_b + row + col);
        if constexpr (KIND < 2) {
          r32[r] = src[0];               // T is the operand type: the two columns as they are
        } else if (KIND == 2 && fast) {  // int8 in a few instructions
          r32[r] = detail::slide_int8_word<T>(src[0], src[1], inv);
        } else {
          unsigned word = 0;
#pragma unroll
          for (int h = 0; h < E / 2; ++h) {
            const unsigned two = src[h];
            const T* v = reinterpret_cast<const T*>(&two);
            word |= detail::slide_operand_pair<KIND, T>(detail::Cvt<T>::to_f32(v[0]),
                                                        detail::Cvt<T>::to_f32(v[1]), inv)
                    << (h * 16);
          }
          r32[r] = word;
        }
      }
      const int unit = PLAIN        ? (n * chunks + kc) * 4 + t
                       : ORDER == 2 ? (kc * col_tiles + (n >> 3)) * 32 + t * 8 + (n & 7)
                                    : (kc * col_tiles + (n >> 3)) * 32 + (n & 7) * 4 + t;
      if constexpr (KIND == 4)  // four e4m3 pairs: 8 bytes
        reinterpret_cast<uint2*>(bw)[unit] =
            make_uint2(r32[0] | (r32[1] << 16), r32[2] | (r32[3] << 16));
      else
        reinterpret_cast<uint4*>(bw)[unit] = make_uint4(r32[0], r32[1], r32[2], r32[3]);
    }
    if (c1 < chunks) __syncthreads();  // s_b is restaged by the next segment
  }
}

namespace detail {
// One load step's A values and metadata: the MT row tiles from rt0 of chunks kc0 … kc0 + U − 1
// (zeros, and the "no nonzero" metadata, past the part's end c1 or the last row tile).
// AL: bytes of A per lane and chunk (16, or 8 for KIND 4: the values in .x and .y).
template <int U, int MT, int ML, int AL>
struct SlideStepA {
  uint4 av[U][MT];
  unsigned ev[U][MT];
  __device__ __forceinline__ void load(const unsigned* __restrict__ a,
                                       const unsigned* __restrict__ meta, int kc0, int c1, int rt0,
                                       int row_tiles, int chunks, int lane, int meta_lane) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        const int kc = kc0 + u, rt = rt0 + m;
        const bool ok = kc < c1 && rt < row_tiles;
        const int tc = rt * chunks + kc;
        if constexpr (AL == 8) {
          const uint2 v =
              ok ? __ldcs(reinterpret_cast<const uint2*>(a) + tc * 32 + lane) : make_uint2(0u, 0u);
          av[u][m] = make_uint4(v.x, v.y, 0u, 0u);
        } else {
          av[u][m] = ok ? __ldcs(reinterpret_cast<const uint4*>(a) + tc * 32 + lane)
                        : make_uint4(0u, 0u, 0u, 0u);
        }
        ev[u][m] = ok ? __ldcs(meta + tc * (8 * ML) + meta_lane) : 0x44444444u;
      }
  }
};

// Asks the L2 for the first PF chunks of a block's K part [c0, c1) of A values and metadata, for
// row tiles rt0 … rt0 + tiles − 1 (those below row_tiles), before the main kernel waits for the
// lift: launched early (programmatic dependent launch), the block then streams its first A from
// memory while the lift still runs. A hint (sm_90 bulk prefetch); the ranges lie inside the pack.
// Threads 2i and 2i + 1 take row tile i's values and metadata.
template <int KIND, int PF>
__device__ __forceinline__ void slide_prefetch_a(const unsigned* a, const unsigned* meta, int rt0,
                                                 int tiles, int row_tiles, int c0, int c1,
                                                 int chunks) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (PF > 0) {
    constexpr int ML = SlideKind<KIND>::kMetaLanes, AL = SlideKind<KIND>::kLane;
    const int n = min(PF, c1 - c0), t = static_cast<int>(threadIdx.x), rt = rt0 + (t >> 1);
    if (n <= 0 || t >= 2 * tiles || rt >= row_tiles) return;
    const long long tc = static_cast<long long>(rt) * chunks + c0;
    // Per tile and chunk: 32 lanes x AL bytes of values, 8·ML metadata words.
    const unsigned* p = (t & 1) == 0 ? a + tc * (8 * AL) : meta + tc * (8 * ML);
    const unsigned bytes = static_cast<unsigned>(n) * ((t & 1) == 0 ? 32u * AL : 32u * ML);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(bytes) : "memory");
  }
#endif
}
}  // namespace detail

// The main kernel: block (x, y) computes row tiles x·MT … x·MT + MT − 1 and column tiles
// cb·NT … cb·NT + NT − 1 (cb = y mod col_blocks) over the chunks of K part y / col_blocks (all of
// them when KS = 1); warp w multiplies the part's chunks w·U … w·U + U − 1, then + WARPS·U …,
// loading all U chunks' A values, metadata and B before their mma.sp. The warps' sums meet in
// shared memory (smem: (WARPS − 1) · MT·NT·4·32 words) and warp 0 stores
//   C[r, n] = alpha · acc · (QUANT ? row_scales[r] · token_scales[n] : 1) + beta · C[r, n]
// (beta == 0: C not read), C element (r, n) at C[r·c_rs + n·c_ns]. With KS > 1 K parts, warp 0
// adds its sums into the workspace ws instead and the last part rounds them into C.
namespace detail {
template <typename T, int KIND, int MT, int NT, int U, int WARPS, int QUANT, int KS, int ST,
          typename LoadB>
__device__ __forceinline__ void slide_k_body(
    const unsigned* __restrict__ a, const unsigned* __restrict__ meta, const LoadB& load_b,
    T* __restrict__ C, const float* __restrict__ row_scales, const float* __restrict__ token_scales,
    float* smem, float alpha, float beta, int M, int N, int row_tiles, int col_tiles, int chunks,
    int c_rs, int c_ns, float* ws, unsigned* counters, int col_blocks) {
  static_assert(ST == 1 || ST == 2, "load steps in flight: 1 or 2");
  using K_ = detail::SlideKind<KIND>;
  using Acc = typename K_::Acc;
  constexpr int ML = K_::kMetaLanes;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const SlideBlockPart bp = slide_block_part<KS>(chunks, col_blocks);
  const int cb = bp.cb, c0 = bp.c0, c1 = bp.c1;
  const int rt0 = blockIdx.x * MT, ct0 = cb * NT;
  Acc acc[MT * NT * 4];
#pragma unroll
  for (int i = 0; i < MT * NT * 4; ++i) acc[i] = 0;
  const int meta_lane = g * ML + (t % ML);
  // One load step: the U chunks from kc0 (zeros past the part's end or the last tile).
  struct Step {
    SlideStepA<U, MT, ML, K_::kLane> a;
    uint4 bv[U][NT];
  };
  auto load = [&](int kc0, Step& s) {
    s.a.load(a, meta, kc0, c1, rt0, row_tiles, chunks, lane, meta_lane);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int kc = kc0 + u;
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int ct = ct0 + j;
        s.bv[u][j] = kc < c1 && ct < col_tiles ? load_b(kc, ct, lane) : make_uint4(0u, 0u, 0u, 0u);
      }
    }
  };
  auto multiply = [&](const Step& s) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
          slide_mma<KIND>(acc + (i * NT + j) * 4, s.a.av[u][i], s.bv[u][j], s.a.ev[u][i]);
  };
  // ST = 2: the next step's loads are issued before this step's mma.sp, so each warp keeps two
  // steps of A, metadata and B in flight (registers: twice the step).
  Step cur;
  int kc0 = c0 + warp * U;
  if (kc0 < c1) load(kc0, cur);
  for (; kc0 < c1; kc0 += WARPS * U) {
    if constexpr (ST == 2) {
      Step next;
      load(kc0 + WARPS * U, next);  // zeros past the part's end
      multiply(cur);
      cur = next;
    } else {
      multiply(cur);
      load(kc0 + WARPS * U, cur);
    }
  }
  if constexpr (WARPS > 1) {
    constexpr int kWords = MT * NT * 4;
    if (warp > 0) {
#pragma unroll
      for (int i = 0; i < kWords; ++i)
        if constexpr (KIND == 2)
          smem[((warp - 1) * kWords + i) * 32 + lane] = __int_as_float(acc[i]);
        else
          smem[((warp - 1) * kWords + i) * 32 + lane] = acc[i];
    }
    __syncthreads();
    if (warp > 0) return;
#pragma unroll
    for (int w = 1; w < WARPS; ++w)
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const float v = smem[((w - 1) * kWords + i) * 32 + lane];
        if constexpr (KIND == 2)
          acc[i] += __float_as_int(v);
        else
          acc[i] += v;
      }
  }
  slide_store<T, MT, NT, QUANT, (KS > 1)>(acc, C, ws, row_scales, token_scales, alpha, beta, M, N,
                                          rt0, ct0, g, t, c_rs, c_ns);
  if constexpr (KS > 1)
    slide_split_finish<T, 32>(C, ws, counters + blockIdx.x * col_blocks + cb, KS, rt0 * 16, MT * 16,
                              ct0 * 8, NT * 8, M, N, c_rs, c_ns, beta, lane);
}
}  // namespace detail

// The main kernel (split=k) reading the lifted B fragments the b_transform kernel wrote (bw);
// PF > 0: slide_prefetch_a of PF chunks before the wait for the lift.
template <typename T, int KIND, int MT, int NT, int U, int WARPS, int QUANT, int KS, int ST, int PF>
__device__ __forceinline__ void slide_spmm(const unsigned* __restrict__ a,
                                           const unsigned* __restrict__ meta,
                                           const unsigned* __restrict__ bw, T* __restrict__ C,
                                           const float* __restrict__ row_scales,
                                           const float* __restrict__ token_scales, float* smem,
                                           float alpha, float beta, int M, int N, int row_tiles,
                                           int col_tiles, int chunks, int c_rs, int c_ns, float* ws,
                                           unsigned* counters, int col_blocks) {
  if constexpr (PF > 0) {
    const detail::SlideBlockPart bp = detail::slide_block_part<KS>(chunks, col_blocks);
    detail::slide_prefetch_a<KIND, PF>(a, meta, blockIdx.x * MT, MT, row_tiles, bp.c0, bp.c1,
                                       chunks);
  }
  // The lift wrote bw and token_scales; this kernel may have started before it ended.
  bw = after_grid_dependency(bw);
  if (QUANT) token_scales = after_grid_dependency(token_scales);
  auto load_b = [&](int kc, int ct, int lane) {
    const int i = (kc * col_tiles + ct) * 32 + lane;
    if constexpr (detail::SlideKind<KIND>::kLane == 8) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(bw) + i);
      return make_uint4(v.x, v.y, 0u, 0u);
    } else {
      return __ldg(reinterpret_cast<const uint4*>(bw) + i);
    }
  };
  detail::slide_k_body<T, KIND, MT, NT, U, WARPS, QUANT, KS, ST>(
      a, meta, load_b, C, row_scales, token_scales, smem, alpha, beta, M, N, row_tiles, col_tiles,
      chunks, c_rs, c_ns, ws, counters, col_blocks);
}

// lift=fused (fp16 / bf16, split=k): one kernel, no b_transform. Each lane builds its B fragment
// straight from the caller's B (element (k, n) at B[k·b_ks + n·b_ns]) through the lift map of
// (2P−2):2P: at decode sizes B is small and cached, and the saved launch is worth more than the
// wider loads. A fragment register holds lifted rows 2i, 2i + 1, which the map sends to two
// consecutive columns of one window (offsets 0, 1 or 2, 3; the column is even). So where B is
// column-major with an even leading dimension and a 4-byte aligned base, a register is one 32-bit
// load; otherwise (and for a pair cut by K) one 16-bit load per element.
template <typename T, int KIND, int P, int MT, int NT, int U, int WARPS, int KS, int ST>
__device__ __forceinline__ void slide_spmm_fused(const unsigned* __restrict__ a,
                                                 const unsigned* __restrict__ meta,
                                                 const T* __restrict__ B, T* __restrict__ C,
                                                 float* smem, float alpha, float beta, int M, int N,
                                                 int K, int b_ks, int b_ns, int row_tiles,
                                                 int col_tiles, int chunks, int c_rs, int c_ns,
                                                 float* ws, unsigned* counters, int col_blocks) {
  const unsigned short* b16 = reinterpret_cast<const unsigned short*>(B);
  const bool pairs = b_ks == 1 && (b_ns & 1) == 0 && (reinterpret_cast<size_t>(B) & 3) == 0;
  // The column of B that lifted row lc of the window map lands on.
  auto column = [](int lc) {
    const int grp = lc / (4 * (P - 1)), rest = lc - grp * (4 * (P - 1));
    return grp * 2 * P + 2 * (rest >> 2) + (rest & 3);
  };
  auto load_b = [&](int kc, int ct, int lane) {
    const int n = ct * 8 + (lane >> 2), t = lane & 3;
    unsigned r32[4];
    // Chunk-uniform: every pair of the chunk lies inside K (the map is monotone in lc).
    if (pairs && column(kc * 32 + 30) + 1 < K) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int col = column(kc * 32 + r * 8 + 2 * t);
        r32[r] = n < N ? __ldg(reinterpret_cast<const unsigned*>(b16 + col +
                                                                 static_cast<long long>(n) * b_ns))
                       : 0u;
      }
    } else {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        unsigned word = 0;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = column(kc * 32 + r * 8 + 2 * t + e);
          if (n < N && col < K)
            word |= static_cast<unsigned>(__ldg(b16 + static_cast<long long>(col) * b_ks +
                                                static_cast<long long>(n) * b_ns))
                    << (16 * e);
        }
        r32[r] = word;
      }
    }
    return make_uint4(r32[0], r32[1], r32[2], r32[3]);
  };
  detail::slide_k_body<T, KIND, MT, NT, U, WARPS, 0, KS, ST>(
      a, meta, load_b, C, static_cast<const float*>(nullptr), static_cast<const float*>(nullptr),
      smem, alpha, beta, M, N, row_tiles, col_tiles, chunks, c_rs, c_ns, ws, counters, col_blocks);
}

// split=rows: warps own rows. Block x computes row tiles x·WARPS·MT … (warp w: MT tiles from
// (x·WARPS + w)·MT) and column tiles cb·NT … (cb, K part and finish as in slide_k_body, the
// finish block-wide); every warp walks the part's chunks, U per step. The block
// stages each step's B fragments (U chunks x NT column tiles, 32·kLane bytes each) in shared
// memory with cp.async, two steps in flight (smem: 2·U·NT·32·kLane bytes), so the lifted B is read
// once per block instead of once per 16 rows; A and its metadata stream from global memory per
// warp, ST steps in flight (ST = 2: the next step's are loaded before this step's mma.sp). PF > 0:
// slide_prefetch_a of PF chunks of the block's row tiles before the wait for the lift.
//   issue B(0)
//   for step i: issue B(i + 1); [ST = 2: A(i + 1) -> registers]; wait B(i); mma.sp; sync
template <typename T, int KIND, int MT, int NT, int U, int WARPS, int QUANT, int KS, int ST, int PF>
__device__ __forceinline__ void slide_spmm_rows(
    const unsigned* __restrict__ a, const unsigned* __restrict__ meta,
    const unsigned* __restrict__ bw, T* __restrict__ C, const float* __restrict__ row_scales,
    const float* __restrict__ token_scales, float* smem, float alpha, float beta, int M, int N,
    int row_tiles, int col_tiles, int chunks, int c_rs, int c_ns, float* ws, unsigned* counters,
    int col_blocks) {
  static_assert(ST == 1 || ST == 2, "load steps in flight: 1 or 2");
  using K_ = detail::SlideKind<KIND>;
  using Acc = typename K_::Acc;
  constexpr int ML = K_::kMetaLanes;
  constexpr int kPieces = 2 * K_::kLane;   // 16-byte pieces of B per chunk and column tile
  constexpr int kStep = U * NT * kPieces;  // 16-byte pieces of B per step
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const detail::SlideBlockPart bp = detail::slide_block_part<KS>(chunks, col_blocks);
  const int cb = bp.cb, c0 = bp.c0, c1 = bp.c1;
  const int rt0 = (blockIdx.x * WARPS + warp) * MT, ct0 = cb * NT;
  Acc acc[MT * NT * 4];
#pragma unroll
  for (int i = 0; i < MT * NT * 4; ++i) acc[i] = 0;
  detail::slide_prefetch_a<KIND, PF>(a, meta, blockIdx.x * WARPS * MT, WARPS * MT, row_tiles, c0,
                                     c1, chunks);
  // The lift wrote bw and token_scales; this kernel may have started before it ended.
  bw = after_grid_dependency(bw);
  if (QUANT) token_scales = after_grid_dependency(token_scales);
  const uint4* b4 = reinterpret_cast<const uint4*>(bw);  // kPieces per chunk and column tile
  const unsigned s0 = smem_addr(reinterpret_cast<const unsigned*>(smem));
  const int meta_lane = g * ML + (t % ML);
  const int steps = c1 > c0 ? (c1 - c0 + U - 1) / U : 0;
  // Step i's B pieces into buffer i % 2; pieces past K' or N are zero-filled (never read from B).
  auto issue = [&](int i) {
    const unsigned dst = s0 + static_cast<unsigned>((i & 1) * kStep * 16);
    for (int p = tid; p < kStep; p += WARPS * 32) {
      const int u = p / (NT * kPieces), rest = p - u * (NT * kPieces), j = rest / kPieces,
                l = rest % kPieces;
      const int kc = c0 + i * U + u, ct = ct0 + j;
      detail::cp_async16(dst + p * 16, b4 + (kc * col_tiles + ct) * kPieces + l,
                         kc >= c1 || ct >= col_tiles);
    }
  };
  // Step i's A values and metadata of the warp's row tiles (zeros past the part or the rows).
  using StepA = detail::SlideStepA<U, MT, ML, K_::kLane>;
  auto load_a = [&](int i, StepA& s) {
    s.load(a, meta, c0 + i * U, c1, rt0, row_tiles, chunks, lane, meta_lane);
  };
  // Step i's mma.sp, once the block's copies of its B have landed.
  auto multiply = [&](int i, const StepA& s) {
    cp_async_wait<1>();
    __syncthreads();
    const uint4* sb = reinterpret_cast<const uint4*>(smem) + (i & 1) * kStep;
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        uint4 b;
        if constexpr (K_::kLane == 8) {
          const uint2 v = reinterpret_cast<const uint2*>(sb + (u * NT + j) * kPieces)[lane];
          b = make_uint4(v.x, v.y, 0u, 0u);
        } else {
          b = sb[(u * NT + j) * 32 + lane];
        }
#pragma unroll
        for (int m = 0; m < MT; ++m)
          detail::slide_mma<KIND>(acc + (m * NT + j) * 4, s.av[u][m], b, s.ev[u][m]);
      }
    __syncthreads();  // buffer i % 2 is restaged by step i + 2
  };
  if (steps > 0) issue(0);
  cp_async_commit();
  StepA cur;
  if constexpr (ST == 2) load_a(0, cur);
  for (int i = 0; i < steps; ++i) {
    if (i + 1 < steps) issue(i + 1);
    cp_async_commit();
    if constexpr (ST == 2) {
      StepA next;
      load_a(i + 1, next);  // zeros past the part's end
      multiply(i, cur);
      cur = next;
    } else {
      load_a(i, cur);
      multiply(i, cur);
    }
  }
  detail::slide_store<T, MT, NT, QUANT, (KS > 1)>(acc, C, ws, row_scales, token_scales, alpha, beta,
                                                  M, N, rt0, ct0, g, t, c_rs, c_ns);
  if constexpr (KS > 1)
    detail::slide_split_finish<T, WARPS * 32>(C, ws, counters + blockIdx.x * col_blocks + cb, KS,
                                              blockIdx.x * WARPS * MT * 16, WARPS * MT * 16,
                                              ct0 * 8, NT * 8, M, N, c_rs, c_ns, beta, tid);
}

// split=wg (sm_90a): warpgroups own rows and multiply with wgmma.sp. Block x computes the TB row
// tiles x·TB … (warp w: tile x·TB + w; warpgroup q: the 64 rows of warps 4q … 4q + 3) and column
// tiles cb·NT … (cb, K part and finish as in slide_spmm_rows). TB < WARPS (at least WARPS − 3):
// the last warpgroup's last warps multiply zeros and store nothing, so that the row blocks can
// fill the multiprocessors (14336 rows: 128 blocks of 7 tiles on 132, not 112 of 8). A step is U
// chunks. Thread 0 stages each step whole in shared memory with bulk copies (sg_bulk_copy.cuh)
// counted by the step's mbarrier, ST + 1 steps in flight in a ring of ST + 1 buffers:
//   B     U x NT x 512 bytes, written by slide_lift in core order (ORDER = 2): per chunk and
//         column tile the K-major core matrices of one wgmma.sp B operand (LBO 128: the next 4E
//         lifted rows; SBO 512: the next 8 tokens), read once per TB·16 rows; per chunk one
//         copy of the block's column tiles (adjacent in bw), or one copy of the step when the
//         block holds every column tile (NT = col_tiles: the step's chunks are adjacent too)
//   A     U x TB x 512 bytes: the pack's slot order groups TB row tiles (group = TB,
//         ir/slide_fragments.h), so a step's fragments of the block are one copy
//   meta  U x TB x 32·ML bytes, one copy likewise
// Chunks past the part's end are neither copied nor multiplied; column tiles past N and row tiles
// past M are not copied (their garbage only reaches the columns and rows never stored). Each warp
// then takes its fragments into registers and its warpgroup issues one wgmma.sp
// m64n(8·NT)k(kChunk) per chunk; fp32 (int32) sums in the mma C layout.
// The blocks start their walks over the part at different steps (the order of the sums differs
// by block, deterministically).
// CL > 1: the grid is launched in clusters of CL consecutive row blocks (the same column block
// and K part, so the same B), and the cluster's rank-0 block stages each step's B with one
// multicast copy into all CL blocks: the L2 serves B once per CL·WARPS·16 rows. Before it
// refills a buffer it waits on its "empty" barrier there, on which every block of the cluster
// arrives once it has read the buffer. Row blocks past M (the grid rounded up to whole clusters)
// take part in the staging and store nothing.
//   issue steps 0 … ST (A and metadata before the wait for the lift, B after)
//   for step i: wait for its barrier; A, meta <- shared; wgmma.sp x U; wait for the wgmma;
//               sync; thread 0 issues step i + ST + 1 into the freed buffer
//               (CL > 1: arrive on the leader's empty barrier; the leader issues step
//               i + ST's B once every block has read buffer (i − 1) % (ST + 1))
// PW = 1 (warp-specialised): one more warp, warp WARPS, stages the steps and the WARPS consumer
// warps never meet at a block barrier. Each consumer warp arrives on its buffer's "empty" barrier
// (WARPS arrivals; CL > 1: also on the leader's, WARPS·CL) once its warpgroup's wgmma has read it,
// and the producer's lane 0 refills a buffer as soon as it is free; so the copies' issue and the
// wait for the slowest reader leave the consumers' path.
//   producer: steps 0 … ST; for step i > ST: wait empty(i − ST − 1); A(i); [wait the cluster] B(i)
//   consumer: for step i: wait full; A, meta <- shared; wgmma.sp x U; wait; arrive empty
// LIFT = 1 (lift=fused; fp16 / bf16 6:8, column-major B with K % 8 == 0, 16-byte aligned): no
// lift kernel. The pack's windows are raw-first (ir/slide_fragments.h): U is whole runs of 3
// chunks (K parts too), run r holding the original columns 64r … 64r + 63 as two chunks and the
// overlapping windows of its 8 groups as the third. ST + 1 producer warps, warp WARPS + j owning
// buffer j, stage steps j, j + ST + 1, …: lane 0 copies each run's original columns of the
// block's tokens with one TMA copy of the tensor map b_map (box 64 columns x 8·NT tokens, 128-byte
// swizzle: token n's row of 128 bytes, its group g at 16-byte piece g ^ n % 8; tokens past N and
// columns past K arrive as zeros), and A and metadata with bulk copies; once the TMA copy has
// landed the warp builds the overlap chunk in core order from the middle words of adjacent
// groups, fences its stores for the async proxy and arrives. The wgmma.sp of a run's first two
// chunks read the swizzled rows (K offset 0 or 64 bytes), the third the overlap's core matrices.
//   step buffer: [runs x NT·1024 swizzled B][runs x NT·512 overlaps][A][metadata], 1024-aligned
//   producer j: for step i = j, j + ST + 1, …: wait empty(j); TMA B -> raw(j); A -> full(j);
//               wait raw(j); overlaps <- B rows; fence; arrive full(j)
// LIFT with CL > 1 (clusters of CL consecutive row blocks, one K walk): producer j of block rank c
// copies only slice c of each run's box (8·NT / CL tokens, 1024-byte atoms) and multicasts it into
// buffer j of every block of the cluster, whose raw(j) counts the whole box; each consumer warp
// releases buffer j on empty(j) of every block (WARPS·CL arrivals), since every block writes into
// it. So the L2 serves each B box once per cluster.
// SPREAD = 1 (LIFT, KS = 1; stream-K): the grid's blocks share the work (row blocks x runs, row
// block after row block) equally, block b the runs [b·W / grid.x, (b + 1)·W / grid.x) of the
// W = row blocks x runs: a few segments of consecutive runs of one row block each, walked as one
// sequence of steps through the ring. A segment that covers its row block stores C; the others
// store their sums in the block's slot of each tile (slide_part_store), and the last block to
// count a tile (per 16-row tile and column block: as many as there are blocks on that row block)
// adds the slots in slot order into C. So every multiprocessor gets the same share when the row
// blocks do not divide among them. A segment's first wgmma.sp starts a new sum (scale-d 0).
//   consumer: for step i: multiply; arrive empty; at a segment's end: store C, or store the slot
//             and count it; after the last step: the finish of the tiles it counted last
template <typename T, int KIND, int NT, int U, int WARPS, int QUANT, int KS, int ST, int CL, int PW,
          int LIFT, int P, int SPREAD, int TB>
__device__ __forceinline__ void slide_spmm_wg(
    const unsigned* __restrict__ a, const unsigned* __restrict__ meta,
    const unsigned* __restrict__ bw, T* __restrict__ C, const float* __restrict__ row_scales,
    const float* __restrict__ token_scales, float* smem, float alpha, float beta, int M, int N,
    int row_tiles, int col_tiles, int chunks, int c_rs, int c_ns, float* ws, unsigned* counters,
    int col_blocks, const TensorMap* __restrict__ b_map) {
  static_assert(ST >= 1 && ST <= (LIFT ? 6 : 4), "steps in flight: 2 … 5 (LIFT: 3 … 7)");
  static_assert(LIFT == 0 || (KIND <= 1 && P == 4 && PW == 0 && NT % CL == 0 && U % 3 == 0),
                "split=wg lift=fused: fp16 / bf16 6:8, whole runs per step, NT a multiple of CL");
  static_assert(WARPS % 4 == 0, "split=wg: whole warpgroups");
  static_assert(TB > WARPS - 4 && TB <= WARPS, "row tiles per block: warps − 3 … warps");
  static_assert(KIND <= 2, "split=wg: fp16, bf16 or int8 (16-byte lanes)");
  static_assert(CL == 1 || CL == 2 || CL == 4, "cluster of 1, 2 or 4 blocks");
  static_assert(PW == 0 || PW == 1, "one producer warp or none");
  static_assert(SPREAD == 0 || (LIFT && KS == 1), "spread: lift=fused, one K part");
  using K_ = detail::SlideKind<KIND>;
  using Acc = typename K_::Acc;
  using E = typename detail::SlideCond<
      KIND == 0, __half,
      typename detail::SlideCond<KIND == 1, __nv_bfloat16, signed char>::type>::type;
  constexpr int ML = K_::kMetaLanes;
  constexpr int kTile = 512;               // bytes per chunk of a column tile or row tile
  constexpr int kMeta = 32 * ML;           // metadata bytes per chunk of a row tile
  constexpr int kBytesB = U * NT * kTile;  // a step's bytes: B,
  constexpr int kBytesA = TB * U * kTile;  // A,
  constexpr int kBytesM = TB * U * kMeta;  // and metadata
  // LIFT: buffers on 1024-byte boundaries (the TMA copies' 128-byte swizzle atoms).
  constexpr int kStep =
      LIFT ? (kBytesB + kBytesA + kBytesM + 1023) / 1024 * 1024 : kBytesB + kBytesA + kBytesM;
  constexpr int kRuns = LIFT ? U / 3 : 1;  // runs per step
  constexpr int kBuffers = ST + 1;
  constexpr int kProducers = LIFT ? kBuffers : PW;  // warps that only stage: one per buffer, or PW
  __shared__ alignas(8) unsigned long long full[kBuffers];
  // PW, LIFT: this block's consumer warps release a buffer here; else (CL > 1) the leader's, per
  // block.
  __shared__ alignas(8) unsigned long long empty[CL > 1 || kProducers ? kBuffers : 1];
  __shared__ alignas(8) unsigned long long cluster_empty[CL > 1 && PW ? kBuffers : 1];  // leader's
  __shared__ alignas(8) unsigned long long raw[LIFT ? kBuffers : 1];  // LIFT: B's TMA copies
  const unsigned rank = CL > 1 ? detail::cluster_rank() : 0u;
  // warp read from lane 0: warp-uniform for the compiler too, so the producer / consumer branch
  // does not count as divergent (ptxas would serialise the wgmma.sp behind it, C7520).
  const int tid = threadIdx.x, lane = tid & 31, warp = __shfl_sync(0xffffffffu, tid >> 5, 0);
  const int g = lane >> 2, t = lane & 3;
  constexpr int kPartAlign = LIFT ? 3 : 1;  // LIFT: parts of whole runs
  const detail::SlideBlockPart bp = detail::slide_block_part<KS, kPartAlign>(chunks, col_blocks);
  const int cb = bp.cb, c0 = bp.c0, c1 = bp.c1;
  // The block's TB row tiles from bt0; warp w < TB multiplies tile bt0 + w, the others (TB <
  // WARPS: the last warpgroup's last warps) multiply zeros and store nothing.
  const int bt0 = blockIdx.x * TB, rt0 = bt0 + warp, ct0 = cb * NT;
  Acc acc[NT * 4];
#pragma unroll
  for (int i = 0; i < NT * 4; ++i) acc[i] = 0;
  // The ring's base (LIFT: rounded up to 1024 bytes; the launch allots 1024 more), as a shared
  // address and as a pointer.
  const unsigned s_in = smem_addr(reinterpret_cast<const unsigned*>(smem));
  const unsigned s0 = LIFT ? (s_in + 1023u) & ~1023u : s_in;
  char* const sbase = reinterpret_cast<char*>(smem) + (s0 - s_in);
  const unsigned bar0 = static_cast<unsigned>(__cvta_generic_to_shared(full));
  const unsigned raw0 = static_cast<unsigned>(__cvta_generic_to_shared(raw));
  // SPREAD: this block's runs [u_begin, u_end) of the W = row blocks x runs, row-block-major.
  const int runs_total = chunks / 3, row_blocks = (row_tiles + TB - 1) / TB;
  const long long work = static_cast<long long>(row_blocks) * runs_total;
  const long long u_begin = SPREAD ? blockIdx.x * work / gridDim.x : 0;
  const long long u_end = SPREAD ? (blockIdx.x + 1ll) * work / gridDim.x : 0;
  // Its segments, found once (64-bit divisions): the first row block's runs [r_first, end_first),
  // whole row blocks, and the last row block's runs [0, r_last_end); steps_row steps per whole
  // row block.
  const int rb_first = SPREAD && u_end > u_begin ? static_cast<int>(u_begin / runs_total) : 0;
  const int rb_last = SPREAD && u_end > u_begin ? static_cast<int>((u_end - 1) / runs_total) : 0;
  const int r_first = static_cast<int>(u_begin - static_cast<long long>(rb_first) * runs_total);
  const int r_last_end = static_cast<int>(u_end - static_cast<long long>(rb_last) * runs_total);
  const int end_first = rb_first == rb_last ? r_last_end : runs_total;
  const int steps_first = (end_first - r_first + kRuns - 1) / kRuns;
  const int steps_row = (runs_total + kRuns - 1) / kRuns;
  int steps = c1 > c0 ? (c1 - c0 + U - 1) / U : 0;
  if constexpr (SPREAD)
    steps = u_end <= u_begin      ? 0
            : rb_first == rb_last ? steps_first
                                  : steps_first + (rb_last - rb_first - 1) * steps_row +
                                        (r_last_end + kRuns - 1) / kRuns;
  const int tiles_n = min(NT, col_tiles - ct0), tiles_m = max(0, min(TB, row_tiles - bt0));
  const unsigned empty0 = static_cast<unsigned>(__cvta_generic_to_shared(empty));
  const unsigned cempty0 = static_cast<unsigned>(__cvta_generic_to_shared(cluster_empty));
  if (tid == 0) {
    for (int b = 0; b < kBuffers; ++b) {
      // LIFT: lane 0's arrival with A's bytes, then each lane's once its B stores are fenced.
      detail::bulk_barrier_init(bar0 + 8 * b, LIFT ? 33 : 1);
      // LIFT with CL > 1: the consumers of every block of the cluster release buffer b, since
      // every block's producer writes its slice of B into it.
      if (kProducers) detail::bulk_barrier_init(empty0 + 8 * b, LIFT ? WARPS * CL : WARPS);
      if (LIFT) detail::bulk_barrier_init(raw0 + 8 * b);
      if (PW && CL > 1) detail::bulk_barrier_init(cempty0 + 8 * b, WARPS * CL);
      if (!PW && !LIFT && CL > 1) detail::bulk_barrier_init(empty0 + 8 * b, CL);
    }
    detail::bulk_barrier_init_fence();
  }
  // The peers' barriers are initialised before anyone copies into them or arrives on them.
  if constexpr (CL > 1)
    detail::cluster_sync();
  else
    __syncthreads();
  const char* a8 = reinterpret_cast<const char*>(a);
  const char* m8 = reinterpret_cast<const char*>(meta);
  // Step i's first chunk: the blocks walk their part from different steps (cluster x from step
  // x mod steps), so the grid does not ask the L2 for the same B chunk all at once.
  const int rot =
      steps > 0 && !SPREAD ? static_cast<int>(blockIdx.x / CL % static_cast<unsigned>(steps)) : 0;
  auto first_chunk = [&](int i) { return c0 + (i + rot < steps ? i + rot : i + rot - steps) * U; };
  // A step: its row block, first chunk and the end of its chunk range (the part's, or SPREAD's
  // segment's), and whether it is the range's last step.
  struct Step {
    int rb, kc0, c1;
    bool last;
  };
  auto step_of = [&](int i) -> Step {  // not SPREAD
    return {static_cast<int>(blockIdx.x), first_chunk(i), c1, i == steps - 1};
  };
  // SPREAD: a position in the block's walk (row block, its run, the run where the segment ends),
  // advanced step by step without divisions.
  struct Walk {
    int rb, run, end;
  };
  auto advance = [&](Walk w, int by) {
    for (int k = 0; k < by; ++k) {
      w.run += kRuns;
      if (w.run >= w.end) {
        ++w.rb;
        w.run = 0;
        w.end = w.rb == rb_last ? r_last_end : runs_total;
      }
    }
    return w;
  };
  auto step_at = [&](const Walk& w) -> Step {
    return {w.rb, w.run * 3, w.end * 3, w.run + kRuns >= w.end};
  };
  const Walk walk0 = {rb_first, r_first, end_first};
  // Thread 0: step i's A and metadata (announcing the whole step's bytes), then its B.
  auto issue_a = [&](int i, const Step& st) {
    const int kc0 = st.kc0, nu = min(U, st.c1 - kc0);
    const unsigned buf = s0 + static_cast<unsigned>((i % kBuffers) * kStep);
    const unsigned bar = bar0 + 8 * (i % kBuffers);
    // A block past M (the grid rounded up to whole clusters) has no tiles to copy; LIFT: B
    // arrives on the raw barrier instead (stage_b).
    const int rows_copied = tiles_m > 0 || SPREAD ? TB : 0;
    detail::bulk_expect(bar, static_cast<unsigned>(nu * ((LIFT ? 0 : tiles_n * kTile) +
                                                         rows_copied * (kTile + kMeta))));
    if (rows_copied == 0) return;
    // Slot (row block, chunk kc0) onwards: the block's TB tiles of nu chunks, adjacent.
    const long long slot = (static_cast<long long>(st.rb) * chunks + kc0) * TB;
    detail::bulk_copy(buf + kBytesB, a8 + slot * kTile, nu * TB * kTile, bar);
    detail::bulk_copy(buf + kBytesB + kBytesA, m8 + slot * kMeta, nu * TB * kMeta, bar);
  };
  // Step i's B: this block's (CL = 1) or, from the leader, the cluster's.
  auto issue_b = [&](int i) {
    const int kc0 = first_chunk(i), nu = min(U, c1 - kc0);
    const unsigned buf = s0 + static_cast<unsigned>((i % kBuffers) * kStep);
    const unsigned bar = bar0 + 8 * (i % kBuffers);
    const char* b8 = reinterpret_cast<const char*>(bw);
    // Every column tile in the block: the step's chunks are adjacent in bw, one copy.
    const int pieces = col_tiles == NT ? 1 : nu;
    const unsigned piece = (col_tiles == NT ? nu : 1) * tiles_n * kTile;
    for (int u = 0; u < pieces; ++u) {
      const char* src = b8 + (static_cast<long long>(kc0 + u) * col_tiles + ct0) * kTile;
      if constexpr (CL > 1)
        detail::bulk_copy_multicast(buf + u * NT * kTile, src, piece, bar, (1u << CL) - 1u);
      else
        detail::bulk_copy(buf + u * NT * kTile, src, piece, bar);
    }
  };
  const bool stages_b = CL == 1 || rank == 0;
  // LIFT: step i's B, by a producer warp: lane 0 copies each run's original columns (TMA, one
  // box of 64 columns x 8·NT tokens per run); once they land, lane (tn, r) builds row tn of core
  // r of each column tile's overlap chunk: words 1-2 of groups 2r and 2r + 1 of token tn, i.e.
  // their columns 2 … 5, the windows (2r, 1) and (2r + 1, 1).
  auto stage_b = [&](int i, const Step& st) {
    const int b = i % kBuffers, kc0 = st.kc0, runs = min(U, st.c1 - kc0) / 3;
    const unsigned buf = s0 + static_cast<unsigned>(b * kStep), rbar = raw0 + 8 * b;
    if (lane == 0) {
      detail::bulk_expect(rbar, static_cast<unsigned>(runs * NT * 1024));
      for (int q = 0; q < runs; ++q) {
        if constexpr (CL == 1) {
          detail::bulk_copy_tensor_2d(buf + q * NT * 1024, b_map, (kc0 / 3 + q) * 64, ct0 * 8,
                                      rbar);
        } else {  // this block's slice of 8·NT / CL tokens, into every block of the cluster
          constexpr int kSlice = NT / CL;  // 1024-byte atoms of 8 tokens per slice
          detail::bulk_copy_tensor_2d_multicast(
              buf + (q * NT + static_cast<int>(rank) * kSlice) * 1024, b_map, (kc0 / 3 + q) * 64,
              (ct0 + static_cast<int>(rank) * kSlice) * 8, rbar, (1u << CL) - 1u);
        }
      }
    }
    detail::bulk_wait(rbar, static_cast<unsigned>((i / kBuffers) & 1));
    char* const sb = sbase + b * kStep;
    const int tn = lane & 7, r = lane >> 3;
    for (int q = 0; q < runs; ++q)
      for (int tile = 0; tile < tiles_n; ++tile) {
        const char* const row = sb + q * NT * 1024 + (tile * 8 + tn) * 128;
        const uint4 x = *reinterpret_cast<const uint4*>(row + ((2 * r) ^ tn) * 16);
        const uint4 y = *reinterpret_cast<const uint4*>(row + ((2 * r + 1) ^ tn) * 16);
        *reinterpret_cast<uint4*>(sb + kRuns * NT * 1024 + q * NT * kTile + tile * kTile + r * 128 +
                                  tn * 16) = make_uint4(x.y, x.z, y.y, y.z);
      }
  };
  const int meta_lane = g * ML + (t % ML);
  // Step i's product of this warp's warpgroup, once the step has landed; on return the wgmma has
  // read the buffer. acc_in = 0: the step starts a new sum (its first wgmma.sp ignores acc).
  auto multiply = [&](int i, const Step& st, int acc_in) {
    const int kc0 = st.kc0, kc1 = st.c1, wrt = st.rb * TB + warp;
    detail::bulk_wait(bar0 + 8 * (i % kBuffers), static_cast<unsigned>((i / kBuffers) & 1));
    const unsigned buf = s0 + static_cast<unsigned>((i % kBuffers) * kStep);
    const char* sb = sbase + (i % kBuffers) * kStep;
    const uint4* sa = reinterpret_cast<const uint4*>(sb + kBytesB);
    const unsigned* sm = reinterpret_cast<const unsigned*>(sb + kBytesB + kBytesA);
    uint4 av[U];
    unsigned ev[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const bool ok = kc0 + u < kc1 && warp < TB && wrt < row_tiles;
      av[u] = ok ? sa[(u * TB + warp) * 32 + lane] : make_uint4(0u, 0u, 0u, 0u);
      ev[u] = ok ? sm[(u * TB + warp) * 8 * ML + meta_lane] : 0x44444444u;  // a valid 2:4 index
    }
    // B of chunk u: core order (LBO 128, SBO 512); LIFT: a run's first two chunks in the TMA
    // copy's swizzled rows, its third (the overlaps) in core order after the step's rows.
    auto mma = [&](int u) {
      const unsigned long long desc =
          !LIFT ? detail::wgmma_desc_kmajor(buf + static_cast<unsigned>(u * NT * kTile), 128, kTile)
          : u % 3 < 2 ? detail::wgmma_desc_kmajor_sw128(
                            buf + static_cast<unsigned>((u / 3) * NT * 1024 + (u % 3) * 64))
                      : detail::wgmma_desc_kmajor(
                            buf + static_cast<unsigned>(kRuns * NT * 1024 + (u / 3) * NT * kTile),
                            128, kTile);
      detail::wgmma_sp_m64<E, 8 * NT>(acc, av[u], desc, ev[u], u == 0 ? acc_in : 1);
    };
    // A whole step issues its U multiplies with no branch between them: a branch there makes ptxas
    // wait for each wgmma before the next (C7519). Only a part's last step may be short.
    if (kc0 + U <= kc1) {
      wgmma_fence();
#pragma unroll
      for (int u = 0; u < U; ++u) mma(u);
      wgmma_commit();
    } else {
      wgmma_fence();
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (kc0 + u < kc1) mma(u);  // the same for the whole block
      wgmma_commit();
    }
    wgmma_wait<0>();
  };
  if constexpr (kProducers == 0) {
    if (tid == 0)
      for (int i = 0; i < kBuffers && i < steps; ++i) issue_a(i, step_of(i));
    // The lift wrote bw and token_scales; this kernel may have started before it ended.
    bw = after_grid_dependency(bw);
    if (QUANT) token_scales = after_grid_dependency(token_scales);
    if (tid == 0 && stages_b)
      for (int i = 0; i < kBuffers && i < steps; ++i) issue_b(i);
    for (int i = 0; i < steps; ++i) {
      multiply(i, step_of(i), 1);
      __syncthreads();  // buffer i % kBuffers is read: step i + kBuffers may refill it
      if (tid == 0 && i + kBuffers < steps) {
        if constexpr (CL > 1) detail::cluster_arrive(empty0 + 8 * (i % kBuffers), 0u);
        issue_a(i + kBuffers, step_of(i + kBuffers));
        if constexpr (CL == 1) issue_b(i + kBuffers);
      }
      // The leader refills B one step late: buffer (i − 1) % kBuffers, once the cluster's blocks
      // have all read it (its empty barrier's ((i − 1) / kBuffers)-th phase). Waiting for this
      // step's buffer instead would hold the leader's warpgroup until the slowest block of the
      // cluster finished this step, every step.
      if (CL > 1 && tid == 0 && stages_b && i >= 1 && i - 1 + kBuffers < steps) {
        detail::bulk_wait(empty0 + 8 * ((i - 1) % kBuffers),
                          static_cast<unsigned>(((i - 1) / kBuffers) & 1));
        issue_b(i - 1 + kBuffers);
      }
    }
  } else if (warp >= WARPS) {
    if constexpr (LIFT) {  // producer warp j = warp − WARPS, the owner of buffer j
      const int j = warp - WARPS;
      Walk w = SPREAD ? advance(walk0, j) : walk0;
      for (int i = j; i < steps; i += kBuffers) {
        const Step st = SPREAD ? step_at(w) : step_of(i);
        if constexpr (SPREAD) w = advance(w, kBuffers);
        // Step i − kBuffers, the buffer's last use, is read: the barrier's phase of that step.
        if (i >= kBuffers)
          detail::bulk_wait(empty0 + 8 * j, static_cast<unsigned>((i / kBuffers - 1) & 1));
        if (lane == 0) issue_a(i, st);
        stage_b(i, st);
        fence_proxy_async();  // this lane's overlap stores, before the wgmma reads them
        detail::barrier_arrive(bar0 + 8 * j);
      }
    } else {  // the producer warp (PW)
      if (lane == 0) {
        for (int i = 0; i < kBuffers && i < steps; ++i) issue_a(i, step_of(i));
        bw = after_grid_dependency(bw);  // the lift wrote bw
        if (stages_b)
          for (int i = 0; i < kBuffers && i < steps; ++i) issue_b(i);
        for (int i = kBuffers; i < steps; ++i) {
          // Step i − kBuffers, the buffer's last use, is read: the barrier's phase of that step.
          const unsigned phase = static_cast<unsigned>((i / kBuffers - 1) & 1);
          detail::bulk_wait(empty0 + 8 * (i % kBuffers), phase);
          issue_a(i, step_of(i));
          if (!stages_b) continue;
          if constexpr (CL > 1) detail::bulk_wait(cempty0 + 8 * (i % kBuffers), phase);
          issue_b(i);
        }
      }
      __syncwarp();
    }
  } else {                                                          // a consumer warp
    if (QUANT) token_scales = after_grid_dependency(token_scales);  // the lift wrote them
    // SPREAD: the row tiles whose partial sums this warp stored (a block's first and last
    // segments may cover their row blocks partly, the others wholly), how many blocks store into
    // each and whether this warp was the last; finished after the last wgmma.sp, since the
    // finish's divergent path inside the loop would make ptxas serialise every wgmma.sp (C7520).
    // The slots of tile rt (one per block on its row block, NT·128 floats each) lie at
    // ws + (rt·col_blocks + cb)·slots·NT·128, the most blocks on a row block being
    // slots = R / (W / grid) + 2 (R runs per row block; slide_spread_slots on the host).
    const int slots = SPREAD ? runs_total / static_cast<int>(work / gridDim.x) + 2 : 0;
    auto tile_slots = [&](int rt) {
      return ws + (static_cast<long long>(rt) * col_blocks + cb) * slots * (NT * 128);
    };
    int rt_a = 0, parts_a = 0, rt_b = 0, parts_b = 0, partials = 0;  // first and second partial
    bool last_a = false, last_b = false;
    Walk w = walk0;
    int acc_in = 1;  // SPREAD: 0 at a segment's first step (a new sum, without zeroing acc)
    for (int i = 0; i < steps; ++i) {
      const Step st = SPREAD ? step_at(w) : step_of(i);
      multiply(i, st, acc_in);
      acc_in = 1;
      if (i + kBuffers < steps) {  // the buffer is refilled
        __syncwarp();
        if constexpr (LIFT && CL > 1) {  // every block's producer writes into this buffer
          if (lane < CL)
            detail::cluster_arrive(empty0 + 8 * (i % kBuffers), static_cast<unsigned>(lane));
        } else if (lane == 0) {
          detail::barrier_arrive(empty0 + 8 * (i % kBuffers));
          if constexpr (CL > 1) detail::cluster_arrive(cempty0 + 8 * (i % kBuffers), 0u);
        }
      }
      if constexpr (SPREAD) {
        w = advance(w, 1);
        if (!st.last) continue;
        // The segment's sums: C itself when it covers the whole row block, else this block's slot.
        const int rt = st.rb * TB + warp;
        const long long first = static_cast<long long>(st.rb) * runs_total;
        if (warp >= TB) {
          // no tile of its own
        } else if (u_begin <= first && u_end >= first + runs_total) {
          detail::slide_store<T, 1, NT, QUANT, 0>(acc, C, ws, row_scales, token_scales, alpha, beta,
                                                  M, N, rt, ct0, g, t, c_rs, c_ns);
        } else if (partials < 2) {
          // Blocks on this row block: the owners of its first and last runs and those between
          // (owner(u) = ceil((u + 1)·grid / W) − 1); this block's slot is its place among them.
          const long long grid = gridDim.x;
          const long long b0 = (first * grid + grid + work - 1) / work - 1;
          const long long b1 = ((first + runs_total) * grid + work - 1) / work - 1;
          const int n_parts = static_cast<int>(b1 - b0 + 1);
          float* const slot =
              tile_slots(rt) + (static_cast<int>(blockIdx.x) - static_cast<int>(b0)) * (NT * 128);
          detail::slide_part_store<NT, QUANT>(acc, slot, row_scales, token_scales, alpha, M, N, rt,
                                              ct0, lane);
          const bool last =
              detail::slide_part_arrive(counters + rt * col_blocks + cb, n_parts, lane);
          if (partials++ == 0) {
            rt_a = rt, parts_a = n_parts, last_a = last;
          } else {
            rt_b = rt, parts_b = n_parts, last_b = last;
          }
        }
        acc_in = 0;
      }
    }
    // The tiles' last block adds their slots in order and rounds them into C.
    for (int k = 0; SPREAD && k < partials; ++k) {
      const int rt = k == 0 ? rt_a : rt_b;
      if (k == 0 ? last_a : last_b)
        detail::slide_part_finish<T, NT>(C, tile_slots(rt), k == 0 ? parts_a : parts_b,
                                         counters + rt * col_blocks + cb, beta, M, N, rt, ct0, c_rs,
                                         c_ns, lane);
    }
  }
  if constexpr (CL > 1) {
    detail::cluster_sync();  // no block leaves while the leader's copies or arrivals may reach it
    if (bt0 >= row_tiles) return;  // a row block past M, there for the cluster's staging
  }
  if (warp < TB && !SPREAD)
    detail::slide_store<T, 1, NT, QUANT, (KS > 1)>(acc, C, ws, row_scales, token_scales, alpha,
                                                   beta, M, N, rt0, ct0, g, t, c_rs, c_ns);
  if constexpr (KS > 1)
    detail::slide_split_finish<T, WARPS * 32>(C, ws, counters + blockIdx.x * col_blocks + cb, KS,
                                              blockIdx.x * TB * 16, TB * 16, ct0 * 8, NT * 8, M, N,
                                              c_rs, c_ns, beta, tid);
}

// The scale step after a library 2:4 GEMM of 8-bit types: C (M x N, column-major) =
// alpha · acc · (row_scales[r] · token_scales[n]) + beta · C, acc the GEMM's raw accumulators
// (Acc: int for int8, float for fp8; M x N column-major); one thread per element, one rounding
// (the slide kernels' epilogue arithmetic). beta == 0: C not read.
template <typename T, typename Acc>
__device__ __forceinline__ void slide_lt_scale(const Acc* __restrict__ acc,
                                               const float* __restrict__ row_scales,
                                               const float* __restrict__ token_scales,
                                               T* __restrict__ C, float alpha, float beta, int M,
                                               int N) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(M) * N) return;
  const int n = static_cast<int>(i / M), r = static_cast<int>(i - static_cast<long long>(n) * M);
  float v = static_cast<float>(acc[i]);
  v *= row_scales[r] * token_scales[n];
  float out = alpha * v;
  if (beta != 0.0f) out += beta * detail::Cvt<T>::to_f32(C[i]);
  C[i] = detail::Cvt<T>::from_f32(out);
}

}  // namespace sg
