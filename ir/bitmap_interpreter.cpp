#include "ir/bitmap_interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <vector>

#include "ir/bitmap_tc_schedule.h"
#include "ir/interpreter.h"

namespace sparsegen {

namespace {

[[noreturn]] void broken(const std::string& msg) {
  throw std::logic_error("bitmap_tc interpreter: plan invariant broken: " + msg);
}

// Array sizes and tile pointers: everything the per-tile decoding trusts before indexing.
void check_format(const Problem& p, const BitmapTileFormat& f) {
  if (f.rows != p.m || f.cols != p.k) broken("format shape differs from the problem");
  if (f.row_tiles != (p.m + kBitmapTileRows - 1) / kBitmapTileRows ||
      f.col_tiles != (p.k + kBitmapTileCols - 1) / kBitmapTileCols)
    broken(fmt::format("{}x{} tiles for a {}x{} matrix", f.row_tiles, f.col_tiles, p.m, p.k));
  const int64_t tiles = f.tiles();
  if (static_cast<int64_t>(f.masks.size()) != tiles * kBitmapTileRows)
    broken(fmt::format("{} masks for {} tiles", f.masks.size(), tiles));
  if (static_cast<int64_t>(f.tile_ptr.size()) != tiles + 1)
    broken(fmt::format("{} tile pointers for {} tiles", f.tile_ptr.size(), tiles));
  if (f.tile_ptr[0] != 0 || f.tile_ptr.back() != f.slots())
    broken(fmt::format("tile pointers span [{}, {}) of {} slots", f.tile_ptr[0], f.tile_ptr.back(),
                       f.slots()));
  for (int64_t t = 0; t < tiles; ++t)
    if (f.tile_ptr[static_cast<size_t>(t + 1)] < f.tile_ptr[static_cast<size_t>(t)])
      broken(fmt::format("tile pointers decrease at tile {}", t));
}

}  // namespace

void interpret_bitmap_tc(const Problem& p, const BitmapTcSchedule& s, const BitmapTileFormat& f,
                         std::span<const float> b, std::span<float> c, float alpha, float beta) {
  if (static_cast<int64_t>(b.size()) < p.k * p.n || static_cast<int64_t>(c.size()) < p.m * p.n)
    throw std::invalid_argument("interpret_bitmap_tc: B or C smaller than the problem");
  if (s.ksplit < 1) throw std::invalid_argument("interpret_bitmap_tc: ksplit < 1");
  check_format(p, f);
  if (f.layout != s.values)
    broken(fmt::format("the pack's values are vals={}, the schedule's vals={}", to_string(f.layout),
                       to_string(s.values)));
  if (f.group != bitmap_tc_tile_group(s))
    broken(fmt::format("the pack's tiles are in groups of {}, the schedule reads groups of {}",
                       f.group, bitmap_tc_tile_group(s)));
  if (p.m == 0 || p.n == 0) return;
  const int64_t R = kBitmapTileRows, N = p.n;
  const int64_t part = bitmap_tc_part_tiles(f.col_tiles, s.ksplit);
  const bool atomic = s.ksplit > 1;
  std::vector<float> bq(static_cast<size_t>(p.k * p.n));
  for (size_t i = 0; i < bq.size(); ++i) bq[i] = round_to(p.dtype, b[i]);
  std::vector<float> acc(static_cast<size_t>(R * N)), ws(static_cast<size_t>(R * N));

  // acc[i][n] += the products of tile (rt, ct), each row's entries in column order.
  auto tile_products = [&](int64_t rt, int64_t ct) {
    const int64_t t = bitmap_tile_index(f, rt, ct);
    const int64_t v0 = f.tile_ptr[static_cast<size_t>(t)];
    const int64_t v1 = f.tile_ptr[static_cast<size_t>(t + 1)];
    const uint64_t* masks = &f.masks[static_cast<size_t>(t * R)];
    // The kernel's decode: fragment order, a lane's start plus the rank in its lane word.
    const auto words = bitmap_lane_words(f, t);
    const auto start = bitmap_lane_starts(words, f.layout);
    for (int64_t i = 0; i < R; ++i) {
      const uint64_t m = masks[i];
      const int64_t r = rt * R + i;
      if (m != 0 && r >= p.m)
        broken(fmt::format("tile {}: bits set in row {} beyond M = {}", t, r, p.m));
      for (uint64_t rest = m; rest != 0; rest &= rest - 1) {
        const int bit = std::countr_zero(rest);
        const int64_t col = ct * kBitmapTileCols + bit;
        if (col >= p.k)
          broken(fmt::format("tile {} row {}: bit set at column {} beyond K = {}", t, r, col, p.k));
        const BitmapFragmentSlot fs = bitmap_fragment_slot(static_cast<int>(i), bit);
        const int64_t v = v0 + start[static_cast<size_t>(fs.lane)] +
                          bitmap_lane_rank(words[static_cast<size_t>(fs.lane)], fs.bit, f.layout);
        if (v >= v1)
          broken(fmt::format("tile {} row {} column {}: value index {} outside [{}, {})", t, r, col,
                             v, v0, v1));
        const float a = round_to(p.dtype, f.values[static_cast<size_t>(v)]);
        float* ac = &acc[static_cast<size_t>(i * N)];
        for (int64_t n = 0; n < N; ++n) ac[n] += a * bq[static_cast<size_t>(p.b_index(col, n))];
      }
    }
  };

  for (int64_t rt = 0; rt < f.row_tiles; ++rt) {
    const int64_t nr = std::min(R, p.m - rt * R);
    auto out = [&](int64_t i, int64_t n) -> float& {
      return c[static_cast<size_t>(p.c_index(rt * R + i, n))];
    };
    if (!atomic) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t ct = 0; ct < f.col_tiles; ++ct) tile_products(rt, ct);
      for (int64_t i = 0; i < nr; ++i)
        for (int64_t n = 0; n < N; ++n) {
          float& o = out(i, n);
          const float old = beta == 0.0f ? 0.0f : beta * round_to(p.dtype, o);
          o = round_to(p.dtype, alpha * acc[static_cast<size_t>(i * N + n)] + old);
        }
      continue;
    }
    // Atomic: the fp32 workspace starts at zero; each K part adds alpha·(its accumulator), parts
    // in order; C = ws + beta·C (C unread when beta == 0), rounded once.
    std::fill(ws.begin(), ws.end(), 0.0f);
    for (int64_t z = 0; z < s.ksplit; ++z) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int64_t c0 = std::min(z * part, f.col_tiles);
      const int64_t c1 = std::min(c0 + part, f.col_tiles);
      for (int64_t ct = c0; ct < c1; ++ct) tile_products(rt, ct);
      for (int64_t i = 0; i < nr * N; ++i)
        ws[static_cast<size_t>(i)] += alpha * acc[static_cast<size_t>(i)];
    }
    for (int64_t i = 0; i < nr; ++i)
      for (int64_t n = 0; n < N; ++n) {
        const float sum = ws[static_cast<size_t>(i * N + n)];
        out(i, n) =
            round_to(p.dtype, beta == 0.0f ? sum : sum + beta * round_to(p.dtype, out(i, n)));
      }
  }
}

}  // namespace sparsegen
