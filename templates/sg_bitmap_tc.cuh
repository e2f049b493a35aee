// bitmap_tc device helpers: "load as sparse, compute as dense" on the tensor cores. A is stored
// as 16 x 64 bitmap tiles (ir/bitmap_format.h); the kernel reads each tile as 32 lane words (one
// per lane: which of its fragment positions are stored) and the values in fragment order. Per
// 64-column step the block copies, with cp.async, one B tile (64 rows of B, zero rows beyond K) and
// each warp's A tiles (lane words + values) into shared memory; each lane then walks its own values
// into the A operand of mma.m16n8k16, quarter by quarter (no dense copy of A is ever written), and
// multiplies it with B fragments read by ldmatrix.trans. With the pair value layout
// (ir/bitmap_format.h) a lane loads one 32-bit word per register instead
// (bitmap_tc_a_quarter_pairs). With pipe=bulk a producer warp fills the stages with
// cp.async.bulk copies on mbarriers instead, from a B laid out beforehand (bitmap_tc_arrange_b*);
// with copy=step each tile's lane starts come stored after its lane words (no warp scan), and in
// clusters the first block multicasts each step's B into every block of the cluster.
//
// Fragment layouts (PTX ISA, mma.m16n8k16 with 16-bit inputs; g = lane / 4, t = lane % 4):
//   A (4 x b32): a0 = row g   cols 2t, 2t+1     a1 = row g+8 cols 2t, 2t+1
//                a2 = row g   cols 2t+8, 2t+9   a3 = row g+8 cols 2t+8, 2t+9
//   B (2 x b32): b0 = rows 2t, 2t+1 col g       b1 = rows 2t+8, 2t+9 col g
//   C (4 x f32): c0, c1 = row g cols 2t, 2t+1   c2, c3 = row g+8 cols 2t, 2t+1
#pragma once

#include "sg_async_copy.cuh"
#include "sg_bulk_copy.cuh"
#include "sg_dtype.cuh"
#include "sg_wgmma.cuh"

namespace sg {
// Block-cooperative load, once per block, of the tile pointers of the block's RTB row tiles over
// this K part: s_tp[r·(PT + 1) + j] = tile_ptr[(rt0 + r)·CT + ct0 + j] for j = 0 .. tiles (the
// value range of step j is s_tp[j] .. s_tp[j + 1]); row tiles at or beyond row_tiles get 0.
template <int RTB, int PT, int CT, int THREADS>
__device__ __forceinline__ void bitmap_tc_load_tile_ptrs(int* s_tp,
                                                         const int* __restrict__ tile_ptr, int rt0,
                                                         int row_tiles, int ct0, int tiles,
                                                         int tid) {
  for (int i = tid; i < RTB * (tiles + 1); i += THREADS) {
    const int r = i / (tiles + 1), j = i - r * (tiles + 1);
    s_tp[r * (PT + 1) + j] = rt0 + r < row_tiles ? tile_ptr[(rt0 + r) * CT + ct0 + j] : 0;
  }
}

// pipe=bulk, tiles in groups (ir/bitmap_format.h): the block's `valid` row tiles of column tile
// ct0 + i are the consecutive tiles first + i·stride onwards (stride: the group's row tiles), so
// s_tp[i·(RTB + 1) + r] = tile_ptr[first + i·stride + min(r, valid)] for i < tiles, r <= RTB:
// tile r's values of step i are s_tp[i·(RTB + 1) + r] .. the next, the step's all of
// s_tp[i·(RTB + 1)] .. s_tp[i·(RTB + 1) + RTB], one range.
template <int RTB, int THREADS>
__device__ __forceinline__ void bitmap_tc_bulk_tile_ptrs(int* s_tp,
                                                         const int* __restrict__ tile_ptr,
                                                         int first, int stride, int valid,
                                                         int tiles, int tid) {
  for (int k = tid; k < tiles * (RTB + 1); k += THREADS) {
    const int i = k / (RTB + 1), r = k - i * (RTB + 1);
    s_tp[k] = tile_ptr[first + i * stride + (r < valid ? r : valid)];
  }
}

// Issues the copy of B rows k0 .. k0 + ROWS - 1 (NT·8 columns, row-major, N = NT·8) into the
// staged tile at shared address s_b, whose rows are B_ROW bytes apart; rows at or beyond k_end (K,
// or the end of this block's K part) are zero-filled: their mask bits are zero, and 0 times a
// stale Inf would still be NaN. All THREADS threads of the block call it.
// The rows are contiguous in B, so when NT divides THREADS each thread copies the same column
// chunk of every (THREADS/NT)-th row: one base address per step, and per copy an immediate offset
// and one row test (the general path recomputes 64-bit addresses per copy: 73 more SASS
// instructions per step at N = 64, mt = 2, and 7 % slower on the H200).
template <typename T, int NT, int B_ROW, int THREADS, int ROWS>
__device__ __forceinline__ void bitmap_tc_issue_b(unsigned s_b, const T* __restrict__ B, int k0,
                                                  int k_end, int tid) {
  constexpr int kChunks = ROWS * NT;  // 16-byte pieces of the tile
  // A compile-time trip count: a runtime-bounded loop here compiled to an unrolled loop with a
  // remainder path, dozens of instructions per step for one or two copies per thread.
  constexpr int kIters = (kChunks + THREADS - 1) / THREADS;
  if constexpr (THREADS % NT == 0) {
    constexpr int kRowStep = THREADS / NT;
    const int r0 = tid / NT;
    const int left = k_end - k0 - r0;  // rows of this thread's chunks still inside the part
    const unsigned dst = s_b + r0 * B_ROW + (tid - r0 * NT) * 16;
    const T* src = B + static_cast<long long>(k0) * (NT * 8) + tid * 8;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      if (kChunks % THREADS != 0 && tid + it * THREADS >= kChunks) break;
      detail::cp_async16(dst + it * kRowStep * B_ROW, src + it * THREADS * 8,
                         it * kRowStep >= left);
    }
  } else {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int c = tid + it * THREADS;
      if (kChunks % THREADS != 0 && c >= kChunks) break;
      const int r = c / NT, j = c - r * NT;
      const int k = k0 + r;
      detail::cp_async16(s_b + r * B_ROW + j * 16, B + static_cast<long long>(k) * (NT * 8) + j * 8,
                         k >= k_end);
    }
  }
}

// mma=wgmma: bytes from one 16-byte column group of a staged B step (ROWS rows) to the next: its
// rows plus 16, so the 8 groups of an N = 64 operand start in 8 different bank quads (ROWS·16
// alone is a multiple of 128 bytes: every group would start in the same banks).
template <int ROWS>
__device__ __forceinline__ constexpr unsigned bitmap_tc_b_group() {
  return ROWS * 16 + 16;
}

// mma=wgmma: the copy of B rows k0 .. k0 + ROWS - 1 (N = NT·8 columns) into the staged tile at
// shared address s_b in 16-byte column groups (sg_wgmma.cuh): the piece of row r, columns
// 8j .. 8j+7 goes to s_b + j·bitmap_tc_b_group<ROWS>() + r·16, so the group's rows are contiguous
// and every 8 rows form one core matrix. Rows at or beyond k_end are zero-filled (as
// bitmap_tc_issue_b). Eight consecutive threads take eight consecutive rows of one column group:
// their 16-byte writes cover 128 contiguous bytes (no bank conflict), and a warp's reads cover
// 32-byte sectors whole.
template <typename T, int NT, int THREADS, int ROWS>
__device__ __forceinline__ void bitmap_tc_issue_b_groups(unsigned s_b, const T* __restrict__ B,
                                                         int k0, int k_end, int tid) {
  static_assert(THREADS % (8 * NT) == 0 && ROWS % 8 == 0,
                "bitmap_tc_issue_b_groups: whole 8-row runs per thread group");
  constexpr int kRowStep = THREADS / NT;  // a multiple of 8
  constexpr int kIters = (ROWS + kRowStep - 1) / kRowStep;
  const int j = (tid >> 3) % NT;
  const int r0 = (tid / (8 * NT)) * 8 + (tid & 7);
  const int left = k_end - k0 - r0;
  const unsigned dst = s_b + j * bitmap_tc_b_group<ROWS>() + r0 * 16;
  const T* src = B + static_cast<long long>(k0 + r0) * (NT * 8) + j * 8;
#pragma unroll
  for (int it = 0; it < kIters; ++it) {
    if (ROWS % kRowStep != 0 && r0 + it * kRowStep >= ROWS) break;  // N = 8: half the threads
    detail::cp_async16(dst + it * kRowStep * 16, src + it * kRowStep * (NT * 8),
                       it * kRowStep >= left);
  }
}

// Issues the copy of one A tile (its 32 lane words, 128 bytes, and values v0 .. v1, a multiple
// of 8) into a warp's buffer at shared address s_tile (lane words, then values). valid = 0 (a row
// tile beyond M, or a step past the part): the words are zero-filled and no value is copied.
// ITERS bounds the 16-byte value copies per lane (the largest tile's, known when the kernel is
// emitted), so the loop is unrolled with a guard instead of a runtime loop. Called by all 32
// lanes of the warp.
template <typename T, int ITERS>
__device__ __forceinline__ void bitmap_tc_issue_a(unsigned s_tile,
                                                  const unsigned* __restrict__ masks,
                                                  const T* __restrict__ values, int tile, int v0,
                                                  int v1, int valid, int lane) {
  if (lane < 8)
    detail::cp_async16(s_tile + lane * 16, masks + static_cast<long long>(tile) * 32 + lane * 4,
                       !valid);
  if (!valid) return;
  const int chunks = (v1 - v0) >> 3;
  const T* src = values + v0 + lane * 8;
  const unsigned dst = s_tile + 128 + lane * 16;
#pragma unroll
  for (int it = 0; it < ITERS; ++it)
    if (lane + 32 * it < chunks) detail::cp_async16(dst + it * 512, src + it * 256, false);
}

namespace detail {
// Value slots of a lane with lane word w in one tile (ir/bitmap_format.h): a value per set bit
// (VALS = 0, slot), or two per register of the A operand holding one (VALS = 1, pair).
template <int VALS>
__device__ __forceinline__ int bitmap_lane_entries(unsigned w) {
  return VALS ? 2 * __popc((w | (w >> 1)) & 0x55555555u) : __popc(w);
}
// The sum of `own` over the lanes below this one (a warp scan of five shuffles).
__device__ __forceinline__ int bitmap_lanes_before(int own, int lane) {
  int x = own;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d) x += y;
  }
  return x - own;
}
}  // namespace detail

// Lane words of a warp's TILES staged tiles (tile t at shared address s_tiles + t·A_TILE: 32
// lane words, then the values; bit p of a word: this lane's fragment position p is stored, see
// ir/bitmap_format.h) and the shared address of the lane's first value in each tile's
// fragment-ordered values: the entries of the lanes below, by a warp scan of the popcounts.
// PAIRS = 1: a lane holds at most 32 entries per tile, so a warp's sums stay below 2^16 and tiles
// 2i, 2i + 1 share one scan, one per 16-bit half. The emitter pairs the k tiles of one row tile
// (kt >= 2: 1.5 % faster at N = 32 on an H200); pairing the two row tiles of mt = 2 measured
// 17 % slower at N = 64 there, so those scan apart.
// VALS: the value layout (ir/bitmap_format.h): 0 = slot (a value per set bit), 1 = pair (two
// values per register of the A operand holding a set bit; still at most 32 per lane and tile).
template <int TILES, int A_TILE, int PAIRS, int VALS>
__device__ __forceinline__ void bitmap_tc_lanes(unsigned s_tiles, int lane, unsigned* w,
                                                unsigned* addr) {
  constexpr int kStep = PAIRS ? 2 : 1;
  int c[TILES];
#pragma unroll
  for (int t = 0; t < TILES; ++t) {
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(w[t]) : "r"(s_tiles + t * A_TILE + lane * 4));
    c[t] = detail::bitmap_lane_entries<VALS>(w[t]);
  }
#pragma unroll
  for (int t = 0; t < TILES; t += kStep) {
    const bool two = PAIRS && t + 1 < TILES;
    // exclusive sums; neither half borrows
    const int before = detail::bitmap_lanes_before(c[t] | (two ? c[t + 1] << 16 : 0), lane);
    addr[t] = s_tiles + t * A_TILE + 128 + 2u * static_cast<unsigned>(before & 0xffff);
    if (two)
      addr[t + 1] = s_tiles + (t + 1) * A_TILE + 128 + 2u * static_cast<unsigned>(before >> 16);
  }
}

// pipe=bulk, copy=step: as bitmap_tc_lanes, for a stage that holds the block's row tiles'
// records together (row tile r's at s_words + r·RECORD: 32 lane words, then 32 16-bit lane
// starts, codegen::bitmap_mask_words_with_starts) and the step's values packed after them from
// s_vals, for the warp's row tiles r0 .. r0 + TILES - 1. The pack stored each lane's start
// counted from the step's first value (the values of the step's tiles before, then the entries of
// the lanes below), so a lane loads it: no warp scan and no tile pointers.
template <int TILES, int RECORD>
__device__ __forceinline__ void bitmap_tc_lanes_packed(unsigned s_words, unsigned s_vals, int r0,
                                                       int lane, unsigned* w, unsigned* addr) {
#pragma unroll
  for (int t = 0; t < TILES; ++t) {
    const unsigned rec = s_words + (r0 + t) * RECORD;
    unsigned start;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(w[t]) : "r"(rec + lane * 4));
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(start) : "r"(rec + 128 + lane * 2));
    addr[t] = s_vals + 2u * start;
  }
}

// The A operand (4 x b32, layout above) of quarter q (columns 16q .. 16q+15 of the tile): bits
// 8q .. 8q+7 of the lane word w, in register order. The lane's values are consecutive, so each
// set bit takes the next one: *addr advances past the quarter's entries. Absent entries are 0.
// No popcounts: per position a predicated load and a predicated address step (SASS: @P LDS.U16,
// @P IADD), per pair one permute.
__device__ __forceinline__ void bitmap_tc_a_quarter(unsigned w, int q, unsigned* addr,
                                                    unsigned* a) {
  const unsigned m = w >> (8 * q);
  unsigned p = *addr;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    unsigned lo = 0u, hi = 0u;
    if (m & (1u << (2 * r))) {
      asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(lo) : "r"(p));
      p += 2u;
    }
    if (m & (2u << (2 * r))) {
      asm volatile("ld.shared.u16 %0, [%1];\n" : "=r"(hi) : "r"(p));
      p += 2u;
    }
    a[r] = __byte_perm(lo, hi, 0x5410);
  }
  *addr = p;
}

// bitmap_tc_a_quarter for the pair layout: a register whose two positions hold any set bit is
// the next 32-bit word of the lane's values (the absent half stored as 0), so one predicated
// 32-bit load per register (SASS: @P LDS, @P IADD) and no permute. Words are 4-byte aligned:
// tiles start 16-byte aligned and every lane holds an even number of values.
__device__ __forceinline__ void bitmap_tc_a_quarter_pairs(unsigned w, int q, unsigned* addr,
                                                          unsigned* a) {
  // Bit 2r of m: register r holds a value (one bit per register: the test is a single-bit one)
  const unsigned m = (w | (w >> 1)) >> (8 * q);
  unsigned p = *addr;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    unsigned v = 0u;
    if (m & (1u << (2 * r))) {
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(p));
      p += 4u;
    }
    a[r] = v;
  }
  *addr = p;
}

// acc (MT row tiles x NT n8 tiles x 4 floats) += A (MT x 4 b32) x B rows 16q .. 16q+15 of the
// staged tile at shared address s_b, all NT·8 columns; B fragments come from ldmatrix.trans (two n8
// tiles per x4).
template <typename T, int NT, int MT, int B_ROW>
__device__ __forceinline__ void bitmap_tc_mma_quarter(unsigned s_b, int q, int lane,
                                                      const unsigned* a, float* acc) {
  // Lane l addresses row (l & 15) of the quarter; lanes 16..31 the next n8 tile.
  const unsigned row = s_b + (16 * q + (lane & 15)) * B_ROW;
#pragma unroll
  for (int j = 0; j < NT; j += 2) {
    unsigned b[4];
    if (j + 1 < NT) {
      const unsigned addr = row + (j + (lane >> 4)) * 16;
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                   : "r"(addr));
    } else {
      const unsigned addr = row + j * 16;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                   : "=r"(b[0]), "=r"(b[1])
                   : "r"(addr));
      b[2] = b[3] = 0u;
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        if (j + jj >= NT) break;
        float* d = acc + (mt * NT + j + jj) * 4;
        const unsigned* x = a + mt * 4;
        if constexpr (detail::IsHalf<T>::value) {
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
              "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
              : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(b[2 * jj]), "r"(b[2 * jj + 1]));
        } else {
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
              "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
              : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
              : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(b[2 * jj]), "r"(b[2 * jj + 1]));
        }
      }
    }
  }
}

namespace detail {
// mma=wgmma: the descriptor of quarter 0 of a staged B step whose start field is `start` (bits
// 4..17 of its shared address, below 2^14; see bitmap_tc_b_start). Arranged
// (bitmap_tc_issue_b_groups): 16 rows = two core matrices (LBO: the next 8 rows); SBO: the next
// column group. BMAP (TMA boxes in the swizzle of their rows, NT·16 bytes up to 128;
// bitmap_tc_copy_b): atoms of 64 columns QUARTERS·16 rows of kRow bytes apart. The other fields
// are constants, so the descriptor is one OR of the start into them.
template <int NT, int QUARTERS, int BMAP>
__device__ __forceinline__ unsigned long long bitmap_tc_b_desc(unsigned start) {
  constexpr unsigned kRow = NT > 8 ? 128 : NT * 16;
  unsigned long long fields;
  if constexpr (BMAP)
    fields = wgmma_desc_nmajor_swizzled<kRow>(0u, QUARTERS * 16 * kRow);
  else
    fields = wgmma_desc_nmajor(0u, 128, bitmap_tc_b_group<QUARTERS * 16>());
  return fields | start;
}
}  // namespace detail

// mma=wgmma: acc (MT row tiles x NT n8 tiles x 4 floats) += A x B over one pipeline step of
// QUARTERS 16-row slices of B (the step's staged tile, whose start field is b_start; as
// bitmap_tc_issue_b_groups or bitmap_tc_copy_b wrote it). a holds every quarter's operand,
// quarter-major: a[(uq·MT + mt)·4 ..] is row tile mt's A for rows 16·uq .. 16·uq+15 of B. One
// m64nNk16 per (quarter, row tile) for the warpgroup (row tile mt of warp w is rows 16w .. 16w+15
// of its multiply), all issued back to back after one fence, in one group that is not waited
// for: the caller waits (pipe=bulk: wgmma_wait<1> after the next step's group) before it rewrites
// a or refills the stage. Quarter uq starts 256 bytes on (arranged) or 16 rows of kRow bytes on
// (BMAP): its descriptor is quarter 0's plus that >> 4 (the start field cannot carry). A caller
// that keeps bitmap_tc_b_start of its first stage adds a stage's bytes >> 4 per stage: one add,
// where rebuilding the descriptor from the address took four uniform instructions in SASS.
template <typename T, int NT, int MT, int QUARTERS, int BMAP>
__device__ __forceinline__ void bitmap_tc_wgmma_issue_at(unsigned b_start, const unsigned* a,
                                                         float* acc) {
  constexpr unsigned kRow = NT > 8 ? 128 : NT * 16;
  constexpr unsigned kQuarter = BMAP ? 16 * kRow / 16 : 256 / 16;
  const unsigned long long desc0 = detail::bitmap_tc_b_desc<NT, QUARTERS, BMAP>(b_start);
  wgmma_fence();
#pragma unroll
  for (int uq = 0; uq < QUARTERS; ++uq) {
    const unsigned long long desc = desc0 + static_cast<unsigned long long>(uq) * kQuarter;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      detail::wgmma_m64k16<T, NT * 8>(acc + mt * NT * 4, a + (uq * MT + mt) * 4, desc);
  }
  wgmma_commit();
}

// The start field of a wgmma descriptor for shared address s_b: its bits 4..17. In cluster
// launches a CTA's shared addresses carry bits above 2^18 (unmasked, they landed in LBO and the
// cluster kernels' GPU tests failed). Callers add offsets within the CTA's shared memory to the
// result, which assumes the CTA's window starts on a 2^18 boundary (no carry out of the 14 bits;
// the cluster tests pass with it).
__device__ __forceinline__ unsigned bitmap_tc_b_start(unsigned s_b) {
  return (s_b >> 4) & 0x3fffu;
}

// bitmap_tc_wgmma_issue_at of the B step staged at shared address s_b.
template <typename T, int NT, int MT, int QUARTERS, int BMAP>
__device__ __forceinline__ void bitmap_tc_wgmma_issue(unsigned s_b, const unsigned* a, float* acc) {
  bitmap_tc_wgmma_issue_at<T, NT, MT, QUARTERS, BMAP>(bitmap_tc_b_start(s_b), a, acc);
}

// decode=scatter: a warp's row tile of one step into its 16 rows of a dense A tile at shared
// address region (1024-byte aligned: 16 rows of 128 bytes in the 128-byte swizzle, see
// codegen::bitmap_scatter_offsets). The region is zeroed (four 16-byte stores a lane), then the
// tile's n values at s_vals (n a multiple of 8, 16-byte aligned) are stored at region + their
// 16-bit offsets at s_offs, four a lane an iteration: the work follows the stored values, not the
// 1,024 positions. The caller makes the stores visible to wgmma (fence_proxy_async, then a
// warpgroup barrier) and must not call it again on the region before the wgmma reading it has
// completed.
//   loads of the first 8 values (ld.shared.v2: values, offsets);  zero: st.shared.v4 x 4;
//   their 8 x st.shared.u16 [region + offset];  then 4 more a lane an iteration
__device__ __forceinline__ void bitmap_tc_scatter(unsigned region, unsigned s_vals, unsigned s_offs,
                                                  int n, int lane) {
  // a lane's first eight values and offsets are loaded before the zero stores, which hide their
  // latency (asm volatile keeps this order)
  unsigned v[4], o[4];
  const bool first = 4 * lane < n, second = 4 * lane + 128 < n;
  if (first) {
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                 : "=r"(v[0]), "=r"(v[1])
                 : "r"(s_vals + 8 * lane));
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                 : "=r"(o[0]), "=r"(o[1])
                 : "r"(s_offs + 8 * lane));
  }
  if (second) {
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                 : "=r"(v[2]), "=r"(v[3])
                 : "r"(s_vals + 8 * lane + 256));
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n"
                 : "=r"(o[2]), "=r"(o[3])
                 : "r"(s_offs + 8 * lane + 256));
  }
#pragma unroll
  for (int k = 0; k < 4; ++k)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(region + (lane + 32 * k) * 16),
                 "r"(0u));
  __syncwarp();
  // a 16-bit store of a 32-bit register keeps its low half (PTX: narrow values in wide registers)
  const auto store2 = [region](unsigned val, unsigned off) {
    asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(region + (off & 0xffffu)), "r"(val));
    asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(region + (off >> 16)), "r"(val >> 16));
  };
  if (first) {
    store2(v[0], o[0]);
    store2(v[1], o[1]);
  }
  if (second) {
    store2(v[2], o[2]);
    store2(v[3], o[3]);
  }
  for (int j = 4 * lane + 256; j < n; j += 128) {
    unsigned v0, v1, o0, o1;
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v0), "=r"(v1) : "r"(s_vals + 2 * j));
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(o0), "=r"(o1) : "r"(s_offs + 2 * j));
    store2(v0, o0);
    store2(v1, o1);
  }
}

// decode=scatter: the four warps of warpgroup wg (named barrier 1 + wg, 128 threads): every
// warp's scattered rows are in place before the warpgroup's wgmma reads them.
__device__ __forceinline__ void bitmap_tc_warpgroup_sync(int wg) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
}

// decode=scatter: acc (NT n8 tiles x 4 floats) += A x B over one step for the warpgroup: A its 64
// rows x 64 columns at s_a (the four warps' scattered tiles, K-major in the 128-byte swizzle,
// 1024-byte aligned), B the step's TMA boxes at s_b (as bitmap_tc_wgmma_issue with BMAP). One
// m64nNk16 per 16-column quarter: quarter uq's A starts 32 bytes on within the swizzled rows, its
// B 16 rows on. Issued in one group that is not waited for.
template <typename T, int NT>
__device__ __forceinline__ void bitmap_tc_wgmma_issue_ss(unsigned s_a, unsigned s_b, float* acc) {
  constexpr unsigned kRow = NT > 8 ? 128 : NT * 16;
  const unsigned long long desc_b = detail::wgmma_desc_nmajor_swizzled<kRow>(s_b, 64 * kRow);
  const unsigned long long desc_a = detail::wgmma_desc_kmajor_sw128(s_a);
  wgmma_fence();
#pragma unroll
  for (int uq = 0; uq < 4; ++uq)
    detail::wgmma_m64k16_ss<T, NT * 8>(acc, desc_a + static_cast<unsigned long long>(2 * uq),
                                       desc_b + static_cast<unsigned long long>(uq) * kRow);
  wgmma_commit();
}

// bitmap_tc_wgmma_issue, then waited for before returning (pipe=async): B's buffer and a may be
// reused after the call.
// Measured on an H200 (28672x7168 70 %, N = 64): with the cp.async pipeline 1.39x slower than
// mma.sync, as was a fence, commit and wait per quarter with two alternating A arrays; so the
// tuner offers wgmma with pipe=bulk only.
template <typename T, int NT, int MT, int QUARTERS>
__device__ __forceinline__ void bitmap_tc_wgmma_step(unsigned s_b, const unsigned* a, float* acc) {
  bitmap_tc_wgmma_issue<T, NT, MT, QUARTERS, 0>(s_b, a, acc);
  wgmma_wait<0>();
}

// pipe=bulk's aux kernel body (B -> BWork): B (K x N row-major, N = NT·8) laid out column tile by
// column tile in the column groups bitmap_tc_issue_b_groups writes for one 64-row tile, so that a
// step's B is one contiguous bulk copy: the 16-byte piece (column tile c, group j, row r) at
// ((c·NT + j)·65 + r)·16 bytes; rows at or beyond K and each group's pad (r = 64) are zero.
// Grid-stride over the pieces.
template <typename T, int NT>
__device__ __forceinline__ void bitmap_tc_arrange_b(const T* __restrict__ B,
                                                    unsigned* __restrict__ bw, int K,
                                                    int col_tiles) {
  const long long total = static_cast<long long>(col_tiles) * NT * 65;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i % 65);
    const long long cj = i / 65;
    const int j = static_cast<int>(cj % NT), row = static_cast<int>(cj / NT) * 64 + r;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (r < 64 && row < K)
      v = *reinterpret_cast<const uint4*>(B + static_cast<long long>(row) * (NT * 8) + j * 8);
    reinterpret_cast<uint4*>(bw)[i] = v;
  }
}

// pipe=bulk, mma=sync's aux kernel body (B -> BWork): B (K x N row-major, N = NT·8) in the staged
// tile's rows of BU 16-byte units (bitmap_tc_b_row_bytes: the units beyond NT are the ldmatrix
// pad), so that a step's B is one contiguous bulk copy: the unit (row k, u) at (k·BU + u)·16
// bytes; rows at or beyond K (up to the last column tile's end) and the pad are zero.
template <typename T, int NT, int BU>
__device__ __forceinline__ void bitmap_tc_arrange_b_rows(const T* __restrict__ B,
                                                         unsigned* __restrict__ bw, int K,
                                                         int col_tiles) {
  const long long total = static_cast<long long>(col_tiles) * 64 * BU;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int u = static_cast<int>(i % BU);
    const long long row = i / BU;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (u < NT && row < K) v = *reinterpret_cast<const uint4*>(B + row * (NT * 8) + u * 8);
    reinterpret_cast<uint4*>(bw)[i] = v;
  }
}

// pipe=bulk: a producer warp (the block's last) fills the stages with bulk copies while the
// consumer warps (0 .. WARPS - 1) decode and multiply; two mbarriers per stage: full (the
// producer's expect, then the copies' bytes) and empty (one arrival per consumer warp once it
// is done with the stage). No block barrier in the loop, and no consumer issues a copy.
//   producer: wait(empty[s]) -> expect(full[s], bytes) -> cp.async.bulk x (1 + 2·tiles), or
//             x 3 with copy=step (B, the tiles' lane words, their values)
//   consumer: wait(full[s]) -> step -> release(empty[s of the step it has finished])
// The barriers at shared address bars: full of stage s at bars + 8s, empty at
// bars + 8(STAGES + s). All threads call it; a block barrier follows.
template <int STAGES, int WARPS>
__device__ __forceinline__ void bitmap_tc_bulk_init(unsigned bars, int tid) {
  if (tid < STAGES) detail::bulk_barrier_init(bars + 8 * tid, 1);
  if (tid >= STAGES && tid < 2 * STAGES) detail::bulk_barrier_init(bars + 8 * tid, WARPS);
  detail::bulk_barrier_init_fence();
}

// pipe=bulk, clusters of CL > 1 row blocks: bitmap_tc_bulk_init, and the cluster's empty
// barriers after them (bars + 8·(2·STAGES + s), CL·WARPS arrivals: every consumer warp of the
// cluster releases stage s there, in the first block, before it refills the stage's B). A
// bitmap_tc_cluster_sync follows, before any block copies into or arrives on another.
template <int STAGES, int WARPS, int CL>
__device__ __forceinline__ void bitmap_tc_bulk_init_cluster(unsigned bars, int tid) {
  if (tid < STAGES) detail::bulk_barrier_init(bars + 8 * tid, 1);
  if (tid >= STAGES && tid < 2 * STAGES) detail::bulk_barrier_init(bars + 8 * tid, WARPS);
  if (tid >= 2 * STAGES && tid < 3 * STAGES) detail::bulk_barrier_init(bars + 8 * tid, CL * WARPS);
  detail::bulk_barrier_init_fence();
}

// Every thread of every block of the cluster: the barriers' initialisation (and the zeroed lane
// words) are visible cluster-wide after it; at the end, no block leaves while another may still
// copy into its stages or arrive on its barriers.
__device__ __forceinline__ void bitmap_tc_cluster_sync() {
  detail::cluster_sync();
}

// pipe=bulk: the first ZERO bytes (lane words; copy=step: and lane starts) of the block's row
// tiles that no copy fills (local row tile valid .. RTB - 1: at or beyond M) are zero in every
// stage (no set bit: the decode reads no value), written once before the loop. Stage s's lane
// words of row tile t are at s_stage0 + s·STAGE + A0 + t·A_TILE. All THREADS threads call it; a
// block barrier follows.
template <int STAGES, int RTB, int STAGE, int A0, int A_TILE, int ZERO, int THREADS>
__device__ __forceinline__ void bitmap_tc_bulk_zero(unsigned s_stage0, int valid, int tid) {
  static_assert(ZERO % 16 == 0 && ZERO <= A_TILE, "bitmap_tc_bulk_zero: whole 16-byte pieces");
  constexpr int kPieces = ZERO / 16;
  const int n = STAGES * (RTB - valid) * kPieces;
  for (int i = tid; i < n; i += THREADS) {
    const int piece = i % kPieces, rest = i / kPieces;
    const int s = rest % STAGES, t = valid + rest / STAGES;
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(s_stage0 + s * STAGE + A0 +
                                                                    t * A_TILE + 16 * piece),
                 "r"(0u));
  }
}

// pipe=bulk: copies column tile ct of B into the stage's B at dst, counted on barrier full.
// BMAP = 0: B_BYTES of the arranged BWork bw (bitmap_tc_arrange_b), one 1-D copy. BMAP = 1: B
// itself through the tensor map b_map (64 rows x min(N, 64) columns a box, rows at or beyond K
// arriving as zeros), one box per 64 columns, each in its swizzle atom's layout
// (bitmap_tc_wgmma_issue reads it), B_BYTES in all. MCAST: a mask of the cluster's blocks that
// receive the copy at the same offset (0: this block only).
template <int NT, int B_BYTES, int BMAP>
__device__ __forceinline__ void bitmap_tc_copy_b(unsigned dst, const unsigned* __restrict__ bw,
                                                 const TensorMap* __restrict__ b_map, int ct,
                                                 unsigned full, unsigned mcast) {
  if constexpr (BMAP) {
    constexpr int kBoxes = NT > 8 ? NT / 8 : 1;
    static_assert(B_BYTES % kBoxes == 0, "bitmap_tc_copy_b: whole boxes");
#pragma unroll
    for (int b = 0; b < kBoxes; ++b) {
      if (mcast == 0u)
        detail::bulk_copy_tensor_2d(dst + b * (B_BYTES / kBoxes), b_map, b * 64, ct * 64, full);
      else
        detail::bulk_copy_tensor_2d_multicast(dst + b * (B_BYTES / kBoxes), b_map, b * 64, ct * 64,
                                              full, mcast);
    }
  } else {
    const unsigned* b = bw + static_cast<long long>(ct) * (B_BYTES / 4);
    if (mcast == 0u)
      detail::bulk_copy(dst, b, B_BYTES, full);
    else
      detail::bulk_copy_multicast(dst, b, B_BYTES, full, mcast);
  }
}

// pipe=bulk, copy=tile, the producer warp: steps 0 .. steps - 1 of the block's K part (column tile
// ct0 + i) into stage i % STAGES, each after the consumers released the stage's last use. Lane t <
// RTB owns the block's local row tile t (valid < RTB: the rest are beyond M and never copied): its
// 32 lane words (128 bytes, tile (rt0 + t)·CT + ct0 + i of masks) and its values
// (s_tp[t·(PT + 1) + i] .. the next, a multiple of 8) to A0 + t·A_TILE of the stage; lane 0
// announces the step's bytes (a warp sum) and copies B's column tile (bitmap_tc_copy_b: from the
// arranged BWork bw, or BMAP through the tensor map b_map) to the stage's start. The copies'
// operands differ per lane, so the compiler issues them one lane after another (an elect loop);
// their address math runs in parallel.
template <typename T, int STAGES, int RTB, int PT, int CT, int STAGE, int A0, int A_TILE,
          int B_BYTES, int NT, int BMAP>
__device__ __forceinline__ void bitmap_tc_bulk_produce_tiles(unsigned bars, unsigned s_stage0,
                                                             const unsigned* __restrict__ bw,
                                                             const TensorMap* __restrict__ b_map,
                                                             const unsigned* __restrict__ masks,
                                                             const T* __restrict__ values,
                                                             const int* s_tp, int rt0, int valid,
                                                             int ct0, int steps, int lane) {
  static_assert(RTB <= 32, "bitmap_tc_bulk_produce_tiles: a lane per row tile of the block");
  const bool mine = lane < valid;
  const int* tp = s_tp + (mine ? lane : 0) * (PT + 1);
  for (int i = 0; i < steps; ++i) {
    const int s = i % STAGES;
    const unsigned full = bars + 8 * s, st = s_stage0 + s * STAGE;
    if (i >= STAGES) detail::bulk_wait(bars + 8 * (STAGES + s), ((i / STAGES) - 1) & 1);
    const int v0 = mine ? tp[i] : 0, v1 = mine ? tp[i + 1] : 0;
    const unsigned bytes = mine ? 128u + 2u * static_cast<unsigned>(v1 - v0) : 0u;
    const unsigned total = __reduce_add_sync(0xffffffffu, bytes) + B_BYTES;
    if (lane == 0) {
      detail::bulk_expect(full, total);
      bitmap_tc_copy_b<NT, B_BYTES, BMAP>(st, bw, b_map, ct0 + i, full, 0u);
    }
    __syncwarp();  // the expect before any A copy can land
    if (mine) {
      const unsigned dst = st + A0 + lane * A_TILE;
      detail::bulk_copy(dst, masks + (static_cast<long long>(rt0 + lane) * CT + ct0 + i) * 32, 128,
                        full);
      if (v1 > v0)
        detail::bulk_copy(dst + 128, values + v0, static_cast<unsigned>(2 * (v1 - v0)), full);
    }
  }
}

// pipe=bulk, copy=step, the producer warp: steps 0 .. steps - 1 of the block's K part (column tile
// ct0 + i) into stage i % STAGES, each after the consumers released the stage's last use. A step's
// A is the block's `valid` row tiles of its column tile, consecutive in the grouped tile order
// (tile first + i·stride onwards, ir/bitmap_format.h), so lane 0 announces the step's bytes and
// issues three copies: B's column tile (bitmap_tc_copy_b: B_BYTES of the arranged BWork bw, or
// BMAP through the tensor map b_map) to the stage's start, the
// tiles' records (valid·RECORD bytes of masks: lane words and lane starts) to A0, and their values
// (s_tp[i·(RTB + 1)] .. s_tp[i·(RTB + 1) + RTB], bitmap_tc_bulk_tile_ptrs) to A0 + RTB·RECORD.
// decode=scatter (OFFS > 0, RECORD = 0): no records; the values' 16-bit offsets (masks is
// codegen::bitmap_scatter_offsets, two a word) go to OFFS in the stage.
// CL > 1 (clusters of CL row blocks, the same K part): B reaches every block of the cluster by
// one multicast copy that the first block (rank 0) issues once every consumer warp of the
// cluster released the stage (its cluster-empty barrier, bars + 8·(2·STAGES + s)); each block
// still announces B's bytes on its own full barrier, where the multicast completes them (maybe
// before the announcement: the phase waits for both). A block past M (valid = 0) copies no A.
//   rank 0: wait empty(s); expect(full(s)); wait cluster-empty(s); B -> every block; A(i)
//   others: wait empty(s); expect(full(s)); A(i)
template <typename T, int STAGES, int RTB, int STAGE, int A0, int RECORD, int B_BYTES, int CL,
          int NT, int BMAP, int OFFS>
__device__ __forceinline__ void bitmap_tc_bulk_produce_steps(
    unsigned bars, unsigned s_stage0, const unsigned* __restrict__ bw,
    const TensorMap* __restrict__ b_map, const unsigned* __restrict__ masks,
    const T* __restrict__ values, const int* s_tp, int first, int stride, int valid, int ct0,
    int steps, int lane) {
  static_assert(CL == 1 || CL == 2 || CL == 4, "bitmap_tc_bulk_produce_steps: clusters of 1, 2, 4");
  const bool leader = CL == 1 || detail::cluster_rank() == 0u;
  // the whole warp walks the steps and lane 0 copies: a producer that returned its other lanes
  // early made ptxas serialise the consumers' wgmma (C7520, "divergent path")
  for (int i = 0; i < steps; ++i) {
    const int s = i % STAGES;
    const unsigned full = bars + 8 * s, st = s_stage0 + s * STAGE;
    if (i >= STAGES) detail::bulk_wait(bars + 8 * (STAGES + s), ((i / STAGES) - 1) & 1);
    if (lane == 0) {
      const int v0 = s_tp[i * (RTB + 1)], v1 = s_tp[i * (RTB + 1) + RTB];
      const unsigned vbytes = 2u * static_cast<unsigned>(v1 - v0);
      detail::bulk_expect(
          full, B_BYTES + RECORD * static_cast<unsigned>(valid) + (OFFS > 0 ? 2u : 1u) * vbytes);
      if (CL == 1) {
        bitmap_tc_copy_b<NT, B_BYTES, BMAP>(st, bw, b_map, ct0 + i, full, 0u);
      } else if (leader) {
        if (i >= STAGES) detail::bulk_wait(bars + 8 * (2 * STAGES + s), ((i / STAGES) - 1) & 1);
        bitmap_tc_copy_b<NT, B_BYTES, BMAP>(st, bw, b_map, ct0 + i, full, (1u << CL) - 1u);
      }
      if (RECORD > 0 && valid > 0)
        detail::bulk_copy(st + A0,
                          masks + (static_cast<long long>(first) + i * stride) * (RECORD / 4),
                          RECORD * static_cast<unsigned>(valid), full);
      if (vbytes > 0) detail::bulk_copy(st + A0 + RTB * RECORD, values + v0, vbytes, full);
      // decode=scatter: the values' offsets, two to a word of the masks table
      if (OFFS > 0 && vbytes > 0) detail::bulk_copy(st + OFFS, masks + v0 / 2, vbytes, full);
    }
    __syncwarp();
  }
}

// pipe=bulk: waits until stage bar's phase of the given parity has landed.
__device__ __forceinline__ void bitmap_tc_bulk_wait(unsigned bar, unsigned parity) {
  detail::bulk_wait(bar, parity);
}

// pipe=bulk, a consumer warp: every lane is done reading the stage whose empty barrier is bar
// (its loads consumed, its wgmma completed): one lane arrives for the warp. ELECT = 1: the lane
// elect.sync picks (wgmma consumers keep no lane index in a register across their loop, so a test
// of it would re-read SR_TID every step); ELECT = 0: lane 0 (mma.sync consumers hold the lane
// index anyway, and the elected form made ptxas spill in the largest of them).
template <int ELECT>
__device__ __forceinline__ void bitmap_tc_bulk_release(unsigned bar, int lane) {
  __syncwarp();
  if constexpr (ELECT)
    detail::barrier_arrive_elected(bar);
  else if (lane == 0)
    detail::barrier_arrive(bar);
}

// pipe=bulk in clusters: bitmap_tc_bulk_release on this block's empty barrier bar (its producer
// copies A there) and on the cluster-empty barrier cbar of the cluster's first block (its
// producer multicasts B into this block's stage).
template <int ELECT>
__device__ __forceinline__ void bitmap_tc_bulk_release_cluster(unsigned bar, unsigned cbar,
                                                               int lane) {
  __syncwarp();
  if constexpr (ELECT) {
    detail::barrier_arrive_elected_cluster(bar, cbar, 0u);
  } else if (lane == 0) {
    detail::barrier_arrive(bar);
    detail::cluster_arrive(cbar, 0u);
  }
}

// Finishes one row tile (rows row0 .. row0+15, all NT·8 columns) from the accumulators (layout
// above). ATOMIC = 0: C = alpha·acc + beta·C, rounded once (C not read when beta == 0).
// ATOMIC = 1: ws += alpha·acc in fp32 (a K part; the prologue set ws = beta·C). Element (r, c) is
// at r·row_stride + c·col_stride of C (or ws); rows at or beyond M are skipped. A row-major ws
// (col_stride 1, even row_stride) takes a lane's two adjacent columns in one vector reduction.
template <typename T, int NT, int ATOMIC>
__device__ __forceinline__ void bitmap_tc_finish(T* __restrict__ C, float* __restrict__ ws,
                                                 const float* acc, int row0, int M, int row_stride,
                                                 int col_stride, float alpha, float beta,
                                                 int lane) {
  const int g = lane >> 2, t = lane & 3;
  // Split K into a row-major workspace: a lane's two adjacent columns in one vector reduction.
  if (ATOMIC && col_stride == 1 && (row_stride & 1) == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + g + h * 8;
        if (r >= M) continue;
        const long long i = static_cast<long long>(r) * row_stride + 8 * j + 2 * t;
        atomic_add2_f32(ws + i, alpha * acc[j * 4 + 2 * h], alpha * acc[j * 4 + 2 * h + 1]);
      }
    return;
  }
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = row0 + g + (e >> 1) * 8;
      const int c = 8 * j + 2 * t + (e & 1);
      if (r >= M) continue;
      const long long i =
          static_cast<long long>(r) * row_stride + static_cast<long long>(c) * col_stride;
      if constexpr (ATOMIC) {
        atomicAdd(ws + i, alpha * acc[j * 4 + e]);
      } else {
        float out = alpha * acc[j * 4 + e];
        if (beta != 0.0f) out += beta * detail::Cvt<T>::to_f32(C[i]);
        C[i] = detail::Cvt<T>::from_f32(out);
      }
    }
  }
}

// kred=cluster: a consumer warp's accumulators (FLOATS = mt·N/2 per lane), stored as float4s at
// part + ((warp·FLOATS / 4 + j)·32 + lane)·16 bytes (part: the block's shared partials through a
// generic pointer), after every consumer warp of the block is done with the stages they overlay
// (named barrier 15 over the WARPS consumer warps). ZERO: the block's K part is empty, store
// zeros (its accumulators were never written by a multiply).
template <int FLOATS, int WARPS, int ZERO>
__device__ __forceinline__ void bitmap_tc_partials_store(float* part, const float* acc, int warp,
                                                         int lane) {
  static_assert(FLOATS % 4 == 0, "bitmap_tc_partials_store: whole float4s");
  asm volatile("bar.sync 15, %0;\n" ::"n"(WARPS * 32) : "memory");
#pragma unroll
  for (int j = 0; j < FLOATS / 4; ++j) {
    // a plain store, not inline assembly: an asm statement reading the accumulators made ptxas
    // serialise the wgmma pipeline (C7514)
    reinterpret_cast<float4*>(part)[(warp * (FLOATS / 4) + j) * 32 + lane] =
        ZERO ? make_float4(0.0f, 0.0f, 0.0f, 0.0f)
             : make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]);
  }
}

// kred=cluster, after a cluster barrier: sum[FLOATS] = warp `warp`'s sums over the cluster's KS
// blocks (the K parts of this row block), each read from that block's partials (the same shared
// offset, through mapa and ld.shared::cluster; this block's own included), in rank order, so the
// result does not depend on which block adds.
template <int FLOATS, int KS>
__device__ __forceinline__ void bitmap_tc_partials_sum(unsigned s_part, float* sum, int warp,
                                                       int lane) {
#pragma unroll
  for (int j = 0; j < FLOATS; ++j) sum[j] = 0.0f;
#pragma unroll
  for (int r = 0; r < KS; ++r) {
#pragma unroll
    for (int j = 0; j < FLOATS / 4; ++j) {
      const unsigned a = s_part + ((warp * (FLOATS / 4) + j) * 32 + lane) * 16;
      unsigned x, y, z, w;
      asm volatile(
          "{\n .reg .b32 remote;\n mapa.shared::cluster.u32 remote, %4, %5;\n"
          " ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [remote];\n}\n"
          : "=r"(x), "=r"(y), "=r"(z), "=r"(w)
          : "r"(a), "r"(r)
          : "memory");
      sum[4 * j] += __uint_as_float(x);
      sum[4 * j + 1] += __uint_as_float(y);
      sum[4 * j + 2] += __uint_as_float(z);
      sum[4 * j + 3] += __uint_as_float(w);
    }
  }
}

// Split K (ksplit > 1), once per block after its bitmap_tc_finish<..., 1> adds: the block that
// completes a row block last (a counter per blockIdx.x, in the workspace after the M·N floats)
// rounds the row block's sums into C (C = ws + beta·C, C not read when beta == 0) and leaves ws
// and the counter at zero for the next run, so no extra kernel initialises or reads out the
// workspace (the runtime zeroes it once when it allocates it). Every block of the grid must call
// it, also one whose K part is empty. ROWS rows from row0, N columns.
template <typename T, int N, int ROWS, int THREADS>
__device__ __forceinline__ void bitmap_tc_split_finish(T* __restrict__ C, float* __restrict__ ws,
                                                       unsigned* counters, int row0, int M,
                                                       int row_stride, int col_stride, float beta,
                                                       int ksplit, int tid) {
  __shared__ int s_last;
  // Release/acquire fences (cheaper than __threadfence's sequentially consistent one): this
  // block's adds are visible before it is counted.
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(counters + blockIdx.x, 1u) == static_cast<unsigned>(ksplit - 1);
  __syncthreads();
  if (!s_last) return;
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory");  // the other blocks' adds are visible now
  // One block finishes ROWS·N elements: its loads must overlap, or the kernel's tail grows by an
  // L2 round trip per element per thread. So each batch first loads (plain L2 loads, __ldcg:
  // where the atomics were performed; and C when beta != 0) and only then stores.
  constexpr int kPer = (ROWS * N + THREADS - 1) / THREADS;
  constexpr int kBatch = kPer < 16 ? kPer : 16;
  for (int j0 = 0; j0 < kPer; j0 += kBatch) {
    float v[kBatch], old[kBatch];
    long long e[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int i = (j0 + j) * THREADS + tid;
      const int r = row0 + i / N, c = i - (i / N) * N;
      e[j] = -1;
      if (j0 + j < kPer && i < ROWS * N && r < M) {
        e[j] = static_cast<long long>(r) * row_stride + static_cast<long long>(c) * col_stride;
        v[j] = __ldcg(ws + e[j]);
        old[j] = beta != 0.0f ? detail::Cvt<T>::to_f32(C[e[j]]) : 0.0f;
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      if (e[j] < 0) continue;
      ws[e[j]] = 0.0f;
      C[e[j]] = detail::Cvt<T>::from_f32(beta != 0.0f ? v[j] + beta * old[j] : v[j]);
    }
  }
  if (tid == 0) counters[blockIdx.x] = 0u;
}

}  // namespace sg
