#include "ir/slide_fragments.h"

#include <cmath>

#include "ir/diagnostics.h"
#include "ir/interpreter.h"
#include "ir/parallel.h"
#include "ir/quantize.h"

namespace sparsegen {
namespace {

// Which (row half, window of the chunk) nibble i of metadata lane t describes (PTX mma.sp
// metadata layouts, confirmed on an H100 by a probe of every candidate mapping):
//   the m16n8k32 form (16-bit types and e4m3's kernel form; lanes t = 0, 1): nibbles 0-3 row g,
//   4-7 row g + 8, windows 4t + (i % 4);
//   the m16n8k64 form (lanes t = 0 … 3): row g for even t, g + 8 for odd t, windows 8(t / 2) + i.
struct MetaSlot {
  int row_hi = 0;
  int window = 0;
};
MetaSlot meta_slot(const SlideMma& mma, int t, int i) {
  if (mma.per_reg == 2) return {i / 4, 4 * t + i % 4};
  return {t & 1, 8 * (t >> 1) + i};
}
// The inverse: the lane t of the quad and nibble holding (row half, window).
struct MetaNibble {
  int lane_t = 0;
  int nibble = 0;
};
MetaNibble meta_nibble(const SlideMma& mma, int row_hi, int window) {
  if (mma.per_reg == 2) return {window / 4, 4 * row_hi + window % 4};
  return {2 * (window / 8) + row_hi, window % 8};
}

}  // namespace

int64_t slide_order_source(int n, SlideWindowOrder o, int64_t index, int64_t groups) {
  const int64_t per_group = n - 1;
  if (o == SlideWindowOrder::Sliding) return index < groups * per_group ? index : -1;
  const int64_t even = n / 2, odd = n / 2 - 1, run = kSlideRunGroups * per_group;
  const int64_t j = index % run;
  int64_t g = 0, w = 0;
  if (j < kSlideRunGroups * even) {  // the run's original columns, in order
    g = j / even;
    w = 2 * (j % even);
  } else {  // the overlaps
    const int64_t jj = j - kSlideRunGroups * even;
    g = jj / odd;
    w = 2 * (jj % odd) + 1;
  }
  g += index / run * kSlideRunGroups;
  return g < groups ? g * per_group + w : -1;
}

int64_t SlideTcFormat::bytes() const {
  return static_cast<int64_t>(values.size()) * dtype_bytes(dtype) +
         static_cast<int64_t>(meta.size()) * 4 + static_cast<int64_t>(row_scales.size()) * 4;
}

SlideTcFormat pack_slide_tc(const CsrMatrix& a, int n, DType dtype, SlideForm form, int group,
                            SlideWindowOrder order) {
  SG_ASSERT(group >= 1 && group <= 8, "pack_slide_tc: group must be 1 … 8");
  const SlideMma mma = slide_mma(dtype, form);
  SG_ASSERT(order == SlideWindowOrder::Sliding || (n % 2 == 0 && mma.chunk == 32),
            "pack_slide_tc: raw-first windows need an even N and 32-column chunks");
  SlideTcFormat f;
  f.group = group;
  f.order = order;
  f.n = n;
  f.dtype = dtype;
  f.form = form;
  SlideFormat s;
  if (is_quantized(dtype)) {
    RowQuantized q = quantize_rows(a, dtype);
    CsrMatrix aq = a;
    aq.values = std::move(q.q);
    s = pack_slide(aq, n);
    f.row_scales = std::move(q.scales);
  } else {
    s = pack_slide(a, n);
  }
  f.rows = s.rows;
  f.cols = s.cols;
  f.lifted_cols = s.lifted_cols;
  f.nnz = s.nnz;
  f.row_tiles = (s.rows + 15) / 16;
  f.chunks = slide_order_chunks(n, order, s.cols, mma.chunk);
  const int E = mma.per_reg, wpc = mma.chunk / 4;  // windows per chunk
  const int64_t groups = s.padded_cols / (2 * n);
  const int64_t lane_vals = 4 * E, tile_vals = 32 * lane_vals;
  const int64_t stored = f.stored_row_tiles();
  f.values.assign(static_cast<size_t>(stored * f.chunks * tile_vals), 0.0f);
  f.meta.assign(static_cast<size_t>(stored * f.chunks * mma.meta_words()), 0u);
  const int64_t win = s.windows_per_row(), words = s.meta_words_per_row();
  // The code and values of (row, window at position i of the order); padding: zeros, code
  // 0b0100.
  auto code_of = [&](int64_t r, int64_t i) -> uint32_t {
    const int64_t w = slide_order_source(n, order, i, groups);
    if (r >= s.rows || w < 0 || w >= win) return 0x4u;
    return (s.meta[static_cast<size_t>(r * words + w / 8)] >> (4 * (w % 8))) & 0xfu;
  };
  auto value_of = [&](int64_t r, int64_t i, int slot) -> float {
    const int64_t w = slide_order_source(n, order, i, groups);
    if (r >= s.rows || w < 0 || w >= win) return 0.0f;
    return s.values[static_cast<size_t>((r * win + w) * 2 + slot)];
  };
  // Every stored tile, the padding ones too (rows past M: zeros, code 0b0100).
  parallel_for(stored, stored * f.chunks * tile_vals, [&](int64_t t0, int64_t t1) {
    for (int64_t rt = t0; rt < t1; ++rt)
      for (int64_t kc = 0; kc < f.chunks; ++kc) {
        const size_t vbase = static_cast<size_t>(f.slot(rt, kc) * tile_vals);
        const size_t mbase = static_cast<size_t>(f.slot(rt, kc) * mma.meta_words());
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          for (int r = 0; r < 4; ++r)
            for (int e = 0; e < E; ++e) {
              const int64_t row = rt * 16 + g + 8 * (r & 1);
              const int cc = (r >> 1) * 4 * E + E * t + e;
              f.values[vbase + static_cast<size_t>(lane * lane_vals + r * E + e)] =
                  value_of(row, kc * wpc + cc / 2, cc % 2);
            }
          if (t >= mma.meta_lanes) continue;
          uint32_t word = 0;
          for (int i = 0; i < 8; ++i) {
            const MetaSlot m = meta_slot(mma, t, i);
            word |= code_of(rt * 16 + g + 8 * m.row_hi, kc * wpc + m.window) << (4 * i);
          }
          f.meta[mbase + static_cast<size_t>(g * mma.meta_lanes + t)] = word;
        }
      }
  });
  return f;
}

std::vector<float> decode_slide_tc(const SlideTcFormat& f) {
  const SlideMma mma = slide_mma(f.dtype, f.form);
  const int E = mma.per_reg;
  const int64_t width = f.chunks * mma.chunk, lane_vals = 4 * E, tile_vals = 32 * lane_vals;
  std::vector<float> w(static_cast<size_t>(f.rows * width), 0.0f);
  for (int64_t rt = 0; rt < f.row_tiles; ++rt)
    for (int64_t kc = 0; kc < f.chunks; ++kc) {
      const size_t vbase = static_cast<size_t>(f.slot(rt, kc) * tile_vals);
      const size_t mbase = static_cast<size_t>(f.slot(rt, kc) * mma.meta_words());
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int r = 0; r < 4; ++r)
          for (int e = 0; e < E; ++e) {
            const int hi = r & 1;  // row g + 8
            const int64_t row = rt * 16 + g + 8 * hi;
            const int cc = (r >> 1) * 4 * E + E * t + e;
            const int window = cc / 2, slot = cc % 2;
            // The metadata nibble that names the window's two positions.
            const MetaNibble mn = meta_nibble(mma, hi, window);
            const uint32_t word =
                f.meta[mbase + static_cast<size_t>(g * mma.meta_lanes + mn.lane_t)];
            const uint32_t code = (word >> (4 * mn.nibble)) & 0xfu;
            const int p = slot == 0 ? static_cast<int>(code & 3u) : static_cast<int>(code >> 2);
            const float v = f.values[vbase + static_cast<size_t>(lane * lane_vals + r * E + e)];
            if (row < f.rows)
              w[static_cast<size_t>(row * width + kc * mma.chunk + window * 4 + p)] += v;
          }
      }
    }
  return w;
}

void interpret_slide_tc(const Problem& p, const SlideTcFormat& f, std::span<const float> b,
                        std::span<float> c, float alpha, float beta) {
  SG_ASSERT(f.rows == p.m && f.cols == p.k, "interpret_slide_tc: the format is not the problem's");
  const SlideMma mma = slide_mma(f.dtype, f.form);
  const int64_t width = f.chunks * mma.chunk;
  const int n = f.n;
  const bool quant = is_quantized(f.dtype);
  TokenQuantized tq;
  if (quant) tq = quantize_tokens(p, b);
  // Ψ: lifted column lc, position p of the order's window i = lc / 4 (canonical window g·(N − 1)
  // + w), copies original column g·2N + 2w + p (zero past K or for padding windows).
  std::vector<float> bl(static_cast<size_t>(width * p.n), 0.0f);
  const int64_t groups = (p.k + 2 * n - 1) / (2 * n);
  for (int64_t lc = 0; lc < width; ++lc) {
    const int64_t cw = slide_order_source(n, f.order, lc / 4, groups);
    if (cw < 0) continue;
    const int64_t col = cw / (n - 1) * 2 * n + 2 * (cw % (n - 1)) + lc % 4;
    if (col >= p.k) continue;
    for (int64_t j = 0; j < p.n; ++j) {
      const size_t i = static_cast<size_t>(p.b_index(col, j));
      bl[static_cast<size_t>(lc * p.n + j)] = quant ? tq.q[i] : round_to(f.dtype, b[i]);
    }
  }
  const std::vector<float> w = decode_slide_tc(f);
  parallel_for(p.m, p.m * width * std::max<int64_t>(p.n, 1), [&](int64_t r0, int64_t r1) {
    std::vector<std::pair<int64_t, float>> row;  // the lifted row's entries (absent ones add 0)
    for (int64_t r = r0; r < r1; ++r) {
      row.clear();
      for (int64_t k = 0; k < width; ++k) {
        // The device holds the values in the dtype (quantized ones are exact already).
        const float v = w[static_cast<size_t>(r * width + k)];
        const float a = quant ? v : round_to(f.dtype, v);
        if (a != 0.0f) row.emplace_back(k, a);
      }
      for (int64_t j = 0; j < p.n; ++j) {
        float acc = 0.0f;
        int64_t iacc = 0;
        for (const auto& [k, a] : row) {
          const float x = bl[static_cast<size_t>(k * p.n + j)];
          if (f.dtype == DType::I8)
            iacc += static_cast<int64_t>(a) * static_cast<int64_t>(x);
          else
            acc += a * x;
        }
        float v = f.dtype == DType::I8 ? static_cast<float>(iacc) : acc;
        if (quant) v *= f.row_scales[static_cast<size_t>(r)] * tq.scales[static_cast<size_t>(j)];
        const size_t ci = static_cast<size_t>(p.c_index(r, j));
        c[ci] = beta == 0.0f ? alpha * v : alpha * v + beta * c[ci];
      }
    }
  });
}

}  // namespace sparsegen
