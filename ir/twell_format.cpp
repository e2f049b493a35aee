#include "ir/twell_format.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"

namespace sparsegen {

int64_t TwellFormat::device_bytes(int value_bytes) const {
  int64_t b = rows * tiles * 4 + rows * tiles * cap * 4;
  if (overflow_tiles > 0) b += rows * cols * value_bytes;
  return b;
}

TwellFormat twell_encode(const CsrMatrix& h, int tile, int cap) {
  SG_ASSERT(
      std::find(std::begin(kTwellTiles), std::end(kTwellTiles), tile) != std::end(kTwellTiles) &&
          cap >= 1 && cap <= tile,
      "twell_encode: unsupported tile/cap");
  TwellFormat f;
  f.rows = h.rows;
  f.cols = h.cols;
  f.tile = tile;
  f.cap = cap;
  f.tiles = (h.cols + tile - 1) / tile;
  f.nnz = h.nnz();
  const size_t cells = static_cast<size_t>(f.rows * f.tiles);
  f.count.assign(cells, 0);
  f.entry_col.assign(cells * static_cast<size_t>(cap), 0);
  f.entry_value.assign(cells * static_cast<size_t>(cap), 0.0f);
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t i = h.row_ptr[r]; i < h.row_ptr[r + 1]; ++i)
      ++f.count[static_cast<size_t>(r * f.tiles + h.col_idx[i] / tile)];
  for (int64_t r = 0; r < h.rows; ++r) {
    bool row_over = false;
    for (int64_t t = 0; t < f.tiles; ++t) {
      if (f.overflows(r, t)) {
        ++f.overflow_tiles;
        row_over = true;
      }
    }
    f.overflow_rows += row_over ? 1 : 0;
  }
  if (f.overflow_tiles > 0) f.backup.assign(static_cast<size_t>(f.rows * f.cols), 0.0f);
  std::vector<int32_t> fill(static_cast<size_t>(f.tiles));
  for (int64_t r = 0; r < h.rows; ++r) {
    std::fill(fill.begin(), fill.end(), 0);
    for (int64_t i = h.row_ptr[r]; i < h.row_ptr[r + 1]; ++i) {
      const int64_t c = h.col_idx[i];
      const int64_t t = c / tile;
      if (f.overflows(r, t)) {
        f.backup[static_cast<size_t>(r * f.cols + c)] = h.values[i];
        continue;
      }
      const size_t slot = static_cast<size_t>((r * f.tiles + t) * cap + fill[t]++);
      f.entry_col[slot] = static_cast<uint16_t>(c - t * tile);
      f.entry_value[slot] = h.values[i];
    }
  }
  return f;
}

TwellStats twell_stats(const CsrMatrix& h, int tile, int cap) {
  TwellStats s;
  s.rows = h.rows;
  s.tiles = (h.cols + tile - 1) / tile;
  s.nnz = h.nnz();
  std::vector<int64_t> cnt(static_cast<size_t>(s.tiles));
  for (int64_t r = 0; r < h.rows; ++r) {
    std::fill(cnt.begin(), cnt.end(), 0);
    for (int64_t i = h.row_ptr[r]; i < h.row_ptr[r + 1]; ++i) ++cnt[h.col_idx[i] / tile];
    bool over = false;
    for (int64_t t = 0; t < s.tiles; ++t) {
      s.max_tile_count = std::max(s.max_tile_count, cnt[t]);
      if (cnt[t] > cap) {
        ++s.overflow_tiles;
        over = true;
        s.dense_columns += std::min<int64_t>(tile, h.cols - t * tile);
      } else {
        s.entries_walked += cnt[t];
      }
    }
    s.overflow_rows += over ? 1 : 0;
  }
  return s;
}

void twell_down_product(const TwellFormat& f, std::span<const float> b, int64_t k,
                        std::span<float> c, float alpha, float beta) {
  SG_ASSERT(
      static_cast<int64_t>(b.size()) == f.cols * k && static_cast<int64_t>(c.size()) == f.rows * k,
      "twell_down_product: operand sizes");
  std::vector<float> acc(static_cast<size_t>(k));
  for (int64_t r = 0; r < f.rows; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    auto add = [&](int64_t col, float v) {
      const float* brow = b.data() + col * k;
      for (int64_t j = 0; j < k; ++j) acc[j] += v * brow[j];
    };
    for (int64_t t = 0; t < f.tiles; ++t) {
      if (f.overflows(r, t)) continue;
      const int32_t n = f.count[static_cast<size_t>(r * f.tiles + t)];
      for (int32_t i = 0; i < n; ++i) {
        const size_t slot = static_cast<size_t>((r * f.tiles + t) * f.cap + i);
        add(t * f.tile + f.entry_col[slot], f.entry_value[slot]);
      }
    }
    for (int64_t t = 0; t < f.tiles; ++t) {
      if (!f.overflows(r, t)) continue;
      for (int64_t col = t * f.tile; col < std::min<int64_t>(f.cols, (t + 1) * f.tile); ++col) {
        const float v = f.backup[static_cast<size_t>(r * f.cols + col)];
        if (v != 0.0f) add(col, v);
      }
    }
    for (int64_t j = 0; j < k; ++j) {
      float& out = c[static_cast<size_t>(r * k + j)];
      out = beta == 0.0f ? alpha * acc[j] : alpha * acc[j] + beta * out;
    }
  }
}

}  // namespace sparsegen
