// The slide family's device layout: a SlideFormat (canonical 2:4 windows) reordered so that each
// lane of a warp loads its mma.sp A fragment with one 16-byte load and its metadata with one
// 32-bit load, chunk after chunk (PTX ISA, "Matrix fragments for mma.sp"; g = lane / 4,
// t = lane % 4, E = elements per 32-bit register: 2 for 16-bit types, 4 for 8-bit ones):
//
//   A   register r, element e of lane (g, t):  row g + 8·(r & 1) of the 16-row tile,
//       compressed column (r >> 1)·4E + E·t + e of the chunk (2 per window: window cc / 2,
//       slot cc % 2 of its two kept values)
//   E   (metadata) lane (g, t) with t < meta_lanes reads word g·meta_lanes + t, eight 4-bit
//       codes p0 | p1 << 2 (nibble i at bits 4i … 4i + 3):
//         16-bit types: nibbles 0-3 windows 4t … 4t + 3 of row g, nibbles 4-7 the same of g + 8
//         8-bit types:  row g (t even) or g + 8 (t odd), windows 8(t / 2) … 8(t / 2) + 7
//       (lanes t >= meta_lanes read the word of t % meta_lanes)
//   B   register r, element e of lane (g, t): lifted row r·4E + E·t + e of the chunk, column g of
//       the 8-column tile (the b_transform kernel writes B that way; templates/sg_slide.cuh)
//
// e4m3 in the kernel form (ir/slide_schedule.h, SlideForm) uses the fp16 layout (E = 2) with
// 1-byte values, A and B: one 8-byte load per lane.
// Arrays, by (row tile, chunk) slot (SlideTcFormat::slot): values [slot][lane][4E] (rows past M
// and windows past K' hold zeros with code 0b0100), metadata [slot][8·meta_lanes]. group = 1:
// row tile-major, then chunk-major. group = G > 1 (split=wg, G = its row tiles per block): blocks
// of G row tiles, chunk-major within a block, so one block's tiles of a run of chunks are one
// contiguous span; the row tiles are padded to whole blocks (zeros, code 0b0100).
//
// Window order along K' (SlideWindowOrder). sliding: group after group, each group's windows in
// order (ir/slide_format.h). raw-first (even N, 32-column chunks; split=wg with lift=fused): per
// run of 8 groups, first their even windows w = 0, 2, …, which cover the run's original columns
// once each and in order (N/2 chunks that are plain copies of B), then their odd windows (N/2 − 1
// chunks, the overlaps), so a kernel can stage B itself and build only the overlaps: N − 1 chunks
// per 16·N original columns, the last run padded with zero windows.
//   6:8, run r (original columns 64r … 64r + 63):
//     chunk 3r      windows (g, 0), (g, 2) of groups 8r … 8r + 3 = columns 64r … 64r + 31
//     chunk 3r + 1  the same of groups 8r + 4 … 8r + 7        = columns 64r + 32 … 64r + 63
//     chunk 3r + 2  windows (g, 1) of groups 8r … 8r + 7      = columns 8g + 2 … 8g + 5 each
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/dtype.h"
#include "ir/problem.h"
#include "ir/slide_format.h"
#include "ir/slide_schedule.h"
#include "ir/sparse_matrix.h"

namespace sparsegen {

// The canonical window (group·(n − 1) + w, ir/slide_format.h) at position `index` of the order, or
// −1 for a padding window; `groups` = the row's groups of 2n original columns.
int64_t slide_order_source(int n, SlideWindowOrder o, int64_t index, int64_t groups);

struct SlideTcFormat {
  int n = 0;                           // (2N−2):2N
  DType dtype = DType::F16;            // the value type the fragments are laid out for
  SlideForm form = SlideForm::Kernel;  // and the mma.sp form (ir/slide_schedule.h)
  int64_t rows = 0, cols = 0, lifted_cols = 0, nnz = 0;
  int64_t row_tiles = 0, chunks = 0;
  int group = 1;                                       // row tiles per block of the order (1 … 8)
  SlideWindowOrder order = SlideWindowOrder::Sliding;  // of the windows along K'
  std::vector<float> values;      // fragment order; quantized types: the quantized values
  std::vector<uint32_t> meta;     // fragment order
  std::vector<float> row_scales;  // quantized types: one per row (ir/quantize.h); else empty

  // Bytes the main kernel reads for A: values in the dtype, metadata, scales.
  int64_t bytes() const;
  // Row tiles stored: row_tiles rounded up to whole groups.
  int64_t stored_row_tiles() const { return (row_tiles + group - 1) / group * group; }
  // The array slot of row tile rt's chunk kc.
  int64_t slot(int64_t rt, int64_t kc) const {
    return (rt / group * chunks + kc) * group + rt % group;
  }
};

// Φ (pack_slide), then the fragment order for `dtype` (fp16, bf16, int8 or e4m3; int8 / e4m3
// quantize the rows first) in the mma.sp form `form`. Throws UserError as pack_slide does, or for
// non-finite weights of a quantized type.
// group: the slot order's row tiles per block (1 … 8); order: the windows' order along K'
// (see above).
SlideTcFormat pack_slide_tc(const CsrMatrix& a, int n, DType dtype,
                            SlideForm form = SlideForm::Kernel, int group = 1,
                            SlideWindowOrder order = SlideWindowOrder::Sliding);

// The lifted weight W' (rows × chunks·chunk, row-major, fp32) decoded from the fragment arrays
// with the PTX mapping above: what the tensor cores see. For the interpreter and the tests.
std::vector<float> decode_slide_tc(const SlideTcFormat& f);

// The kernels' arithmetic on the host: B lifted (and quantized per token for int8 / e4m3) as the
// b_transform kernel does, the products summed in fp32 (int64 for int8), then
// C = alpha·acc·(row scale · token scale) + beta·C (beta == 0: C not read), in p's layouts.
void interpret_slide_tc(const Problem& p, const SlideTcFormat& f, std::span<const float> b,
                        std::span<float> c, float alpha, float beta);

}  // namespace sparsegen
