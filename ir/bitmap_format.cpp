#include "ir/bitmap_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <stdexcept>

#include "ir/diagnostics.h"
#include "ir/int_math.h"
#include "ir/parallel.h"
#include "ir/spec_fields.h"

namespace sparsegen {

namespace {

constexpr std::string_view kValuesNames[] = {"slot", "pair"};  // by BitmapValues

// Bit 2j of the result: register j of the lane holds a set bit (bit 2j or 2j + 1 of w).
uint32_t pair_bits(uint32_t w) {
  return (w | (w >> 1)) & 0x55555555u;
}

// The entries of one tile, per tile row: [begin[i], end[i]) into the CSR arrays.
struct TileRows {
  std::array<int64_t, kBitmapTileRows> begin{}, end{};
  int64_t count = 0;
};

// Visits the non-empty tiles of a CSR matrix in tile order (row tiles, then column tiles
// ascending) by a 16-way merge of the rows of each row tile: O(nnz + 16 · non-empty tiles + rows),
// and nothing of size col_tiles, so a wide matrix with few entries costs no more than its entries.
// fn(rt, ct, const TileRows&). Terminates for any row_ptr-consistent input (every visit advances at
// least one row), even with unsorted columns.
// Row tiles rt0 .. rt1 - 1 only.
template <typename Fn>
void for_each_nonempty_tile(const CsrMatrix& a, int64_t rt0, int64_t rt1, Fn&& fn) {
  std::array<int64_t, kBitmapTileRows> cur{}, stop{};
  TileRows t;
  for (int64_t rt = rt0; rt < rt1; ++rt) {
    const int64_t r0 = rt * kBitmapTileRows;
    const int64_t nr = std::min(kBitmapTileRows, a.rows - r0);
    for (int64_t i = 0; i < kBitmapTileRows; ++i) {
      cur[static_cast<size_t>(i)] = i < nr ? a.row_ptr[static_cast<size_t>(r0 + i)] : 0;
      stop[static_cast<size_t>(i)] = i < nr ? a.row_ptr[static_cast<size_t>(r0 + i + 1)] : 0;
    }
    for (;;) {
      int64_t ct = -1;
      for (size_t i = 0; i < kBitmapTileRows; ++i)
        if (cur[i] < stop[i]) {
          const int64_t c = a.col_idx[static_cast<size_t>(cur[i])] / kBitmapTileCols;
          if (ct < 0 || c < ct) ct = c;
        }
      if (ct < 0) break;
      t.count = 0;
      for (size_t i = 0; i < kBitmapTileRows; ++i) {
        t.begin[i] = cur[i];
        while (cur[i] < stop[i] && a.col_idx[static_cast<size_t>(cur[i])] / kBitmapTileCols == ct)
          ++cur[i];
        t.end[i] = cur[i];
        t.count += t.end[i] - t.begin[i];
      }
      fn(rt, ct, t);
    }
  }
}

// Chunks of row tiles holding about equal numbers of entries (ir/parallel.h): bounds in row
// tiles, rt_bounds[c] .. rt_bounds[c + 1].
std::vector<int64_t> row_tile_chunks(const CsrMatrix& a) {
  const int64_t row_tiles = ceil_div(a.rows, kBitmapTileRows);
  std::vector<int64_t> offsets(static_cast<size_t>(row_tiles + 1));
  for (int64_t rt = 0; rt <= row_tiles; ++rt)
    offsets[static_cast<size_t>(rt)] =
        a.row_ptr[static_cast<size_t>(std::min(rt * kBitmapTileRows, a.rows))];
  return balanced_split(offsets, parallel_chunks(a.nnz()));
}

// The lane words of tile (rt, ct) straight from its CSR entries.
std::array<uint32_t, kBitmapLanes> lane_words_of(const CsrMatrix& a, int64_t ct,
                                                 const TileRows& t) {
  std::array<uint32_t, kBitmapLanes> w{};
  for (size_t i = 0; i < kBitmapTileRows; ++i)
    for (int64_t e = t.begin[i]; e < t.end[i]; ++e) {
      const auto c = static_cast<int>(a.col_idx[static_cast<size_t>(e)] - ct * kBitmapTileCols);
      const BitmapFragmentSlot fs = bitmap_fragment_slot(static_cast<int>(i), c);
      w[static_cast<size_t>(fs.lane)] |= uint32_t{1} << fs.bit;
    }
  return w;
}

// Value slots of a tile before the alignment fill: its entries, or (pair) two per register
// holding one.
int64_t tile_values(const CsrMatrix& a, int64_t ct, const TileRows& t, BitmapValues layout) {
  if (layout == BitmapValues::Slot) return t.count;
  int64_t n = 0;
  for (uint32_t w : lane_words_of(a, ct, t)) n += bitmap_lane_entries(w, layout);
  return n;
}

// Value slots and the largest tile of each chunk of row tiles.
struct ChunkSlots {
  int64_t slots = 0, max_tile_values = 0;
};
std::vector<ChunkSlots> chunk_slots(const CsrMatrix& a, const std::vector<int64_t>& bounds,
                                    BitmapValues layout) {
  std::vector<ChunkSlots> out(bounds.size() - 1);
  run_chunks(bounds, [&](int c, int64_t rt0, int64_t rt1) {
    ChunkSlots& cs = out[static_cast<size_t>(c)];
    for_each_nonempty_tile(a, rt0, rt1, [&](int64_t, int64_t ct, const TileRows& t) {
      const int64_t slots = round_up(tile_values(a, ct, t, layout), kBitmapValueAlign);
      cs.slots += slots;
      cs.max_tile_values = std::max(cs.max_tile_values, slots);
    });
  });
  return out;
}

BitmapTileStats stats_of(const CsrMatrix& a, BitmapValues layout) {
  BitmapTileStats st;
  st.rows = a.rows;
  st.cols = a.cols;
  st.nnz = a.nnz();
  st.tiles = ceil_div(a.rows, kBitmapTileRows) * ceil_div(a.cols, kBitmapTileCols);
  for (const ChunkSlots& cs : chunk_slots(a, row_tile_chunks(a), layout)) {
    st.slots += cs.slots;
    st.max_tile_values = std::max(st.max_tile_values, cs.max_tile_values);
  }
  return st;
}

[[noreturn]] void broken(const std::string& msg) {
  throw std::logic_error("bitmap-tile format: " + msg);
}

}  // namespace

std::string_view to_string(BitmapValues v) {
  return kValuesNames[static_cast<int>(v)];
}

std::optional<BitmapValues> parse_bitmap_values(std::string_view s) {
  return spec_fields::lookup<BitmapValues>(kValuesNames, s);
}

int bitmap_lane_entries(uint32_t w, BitmapValues layout) {
  return layout == BitmapValues::Slot ? std::popcount(w) : 2 * std::popcount(pair_bits(w));
}

int bitmap_lane_rank(uint32_t w, int bit, BitmapValues layout) {
  if (layout == BitmapValues::Slot) return std::popcount(w & ((uint32_t{1} << bit) - 1));
  const int even = bit & ~1;  // the register's low half
  return 2 * std::popcount(pair_bits(w) & ((uint32_t{1} << even) - 1)) + (bit & 1);
}

BitmapFragmentSlot bitmap_fragment_slot(int row, int col) {
  SG_ASSERT(row >= 0 && row < kBitmapTileRows && col >= 0 && col < kBitmapTileCols,
            "bitmap_fragment_slot: position outside the tile");
  const int q = col / 16, c = col % 16;
  const int r = row / 8 + 2 * (c / 8);  // register: row half, then column half of the quarter
  return {4 * (row % 8) + (c % 8) / 2, 8 * q + 2 * r + c % 2};
}

std::pair<int, int> bitmap_fragment_position(int lane, int bit) {
  SG_ASSERT(lane >= 0 && lane < kBitmapLanes && bit >= 0 && bit < 32,
            "bitmap_fragment_position: lane or bit out of range");
  const int q = bit / 8, r = (bit / 2) % 4, e = bit % 2;
  return {lane / 4 + 8 * (r % 2), 16 * q + 8 * (r / 2) + 2 * (lane % 4) + e};
}

std::array<uint32_t, kBitmapLanes> bitmap_lane_words(const BitmapTileFormat& f, int64_t tile) {
  std::array<uint32_t, kBitmapLanes> w{};
  const uint64_t* masks = &f.masks[static_cast<size_t>(tile * kBitmapTileRows)];
  for (int i = 0; i < kBitmapTileRows; ++i)
    for (uint64_t m = masks[i]; m != 0; m &= m - 1) {
      const BitmapFragmentSlot s = bitmap_fragment_slot(i, std::countr_zero(m));
      w[static_cast<size_t>(s.lane)] |= uint32_t{1} << s.bit;
    }
  return w;
}

std::array<int, kBitmapLanes + 1> bitmap_lane_starts(const std::array<uint32_t, kBitmapLanes>& w,
                                                     BitmapValues layout) {
  std::array<int, kBitmapLanes + 1> start{};
  for (size_t l = 0; l < w.size(); ++l) start[l + 1] = start[l] + bitmap_lane_entries(w[l], layout);
  return start;
}

int64_t BitmapTileStats::bytes() const {
  return slots * 2 + tiles * kBitmapTileRows * 8 + (tiles + 1) * 4;
}

double BitmapTileStats::effective_density() const {
  const double dense = double(rows) * double(cols) * 2.0;
  return dense > 0 ? double(bytes()) / dense : 0.0;
}

BitmapTileStats bitmap_tile_stats(const CsrMatrix& a, BitmapValues layout) {
  // The tile walk reads col_idx through row_ptr: a broken CSR must not read out of bounds.
  a.check_canonical();
  return stats_of(a, layout);
}

BitmapTileStats bitmap_tile_stats(const BitmapTileFormat& f) {
  BitmapTileStats st;
  st.rows = f.rows;
  st.cols = f.cols;
  st.nnz = f.nnz;
  st.tiles = f.tiles();
  st.slots = f.slots();
  st.max_tile_values = f.max_tile_values;
  return st;
}

int64_t bitmap_max_step_values(const BitmapTileFormat& f) {
  int64_t most = 0;
  for (int64_t g0 = 0; g0 < f.row_tiles; g0 += f.group) {
    const int64_t last = std::min(g0 + f.group, f.row_tiles) - 1;
    for (int64_t ct = 0; ct < f.col_tiles; ++ct) {
      const int64_t t0 = bitmap_tile_index(f, g0, ct), t1 = bitmap_tile_index(f, last, ct) + 1;
      most =
          std::max(most, f.tile_ptr[static_cast<size_t>(t1)] - f.tile_ptr[static_cast<size_t>(t0)]);
    }
  }
  return most;
}

int64_t bitmap_tile_index(const BitmapTileFormat& f, int64_t rt, int64_t ct) {
  if (f.group == 1) return rt * f.col_tiles + ct;
  const int64_t g0 = rt / f.group * f.group;  // the group's first row tile
  const int64_t gg = std::min(f.group, f.row_tiles - g0);
  return g0 * f.col_tiles + ct * gg + (rt - g0);
}

BitmapTileFormat regroup_bitmap_tiles(const BitmapTileFormat& f, int64_t group) {
  if (group < 1) throw std::invalid_argument("regroup_bitmap_tiles: group < 1");
  BitmapTileFormat g = f;
  g.group = group;
  if (group == f.group) return g;
  const int64_t tiles = f.tiles();
  // new tile number -> old one, then the new tile pointers by a prefix sum of the sizes
  std::vector<int64_t> from(static_cast<size_t>(tiles));
  for (int64_t rt = 0; rt < f.row_tiles; ++rt)
    for (int64_t ct = 0; ct < f.col_tiles; ++ct)
      from[static_cast<size_t>(bitmap_tile_index(g, rt, ct))] = bitmap_tile_index(f, rt, ct);
  for (int64_t t = 0; t < tiles; ++t) {
    const auto o = static_cast<size_t>(from[static_cast<size_t>(t)]);
    g.tile_ptr[static_cast<size_t>(t + 1)] =
        g.tile_ptr[static_cast<size_t>(t)] + f.tile_ptr[o + 1] - f.tile_ptr[o];
  }
  parallel_for(tiles, f.slots(), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const auto o = static_cast<size_t>(from[static_cast<size_t>(t)]);
      std::copy_n(f.masks.begin() + static_cast<int64_t>(o) * kBitmapTileRows, kBitmapTileRows,
                  g.masks.begin() + t * kBitmapTileRows);
      std::copy(f.values.begin() + f.tile_ptr[o], f.values.begin() + f.tile_ptr[o + 1],
                g.values.begin() + g.tile_ptr[static_cast<size_t>(t)]);
    }
  });
  return g;
}

BitmapTileFormat pack_bitmap_tiles(const CsrMatrix& a, BitmapValues layout, int64_t group) {
  if (group < 1) throw std::invalid_argument("pack_bitmap_tiles: group < 1");
  if (group > 1) return regroup_bitmap_tiles(pack_bitmap_tiles(a, layout, 1), group);
  a.check_canonical();
  BitmapTileFormat f;
  f.layout = layout;
  f.rows = a.rows;
  f.cols = a.cols;
  f.row_tiles = ceil_div(a.rows, kBitmapTileRows);
  f.col_tiles = ceil_div(a.cols, kBitmapTileCols);
  f.nnz = a.nnz();
  // Chunks of row tiles are packed in parallel: a first walk counts each chunk's value slots, so
  // every chunk knows where its values start.
  const std::vector<int64_t> bounds = row_tile_chunks(a);
  const std::vector<ChunkSlots> counts = chunk_slots(a, bounds, layout);
  std::vector<int64_t> first_slot(counts.size() + 1, 0);
  for (size_t c = 0; c < counts.size(); ++c) {
    first_slot[c + 1] = first_slot[c] + counts[c].slots;
    f.max_tile_values = std::max(f.max_tile_values, counts[c].max_tile_values);
  }
  const int64_t tiles = f.tiles();
  f.masks.assign(static_cast<size_t>(tiles * kBitmapTileRows), 0);
  f.tile_ptr.assign(static_cast<size_t>(tiles + 1), 0);
  f.values.assign(static_cast<size_t>(first_slot.back()), 0.0f);
  run_chunks(bounds, [&](int chunk, int64_t rt0, int64_t rt1) {
    int64_t slot = first_slot[static_cast<size_t>(chunk)];
    int64_t next = rt0 * f.col_tiles;  // first tile of the chunk whose tile_ptr is not written
    for_each_nonempty_tile(a, rt0, rt1, [&](int64_t rt, int64_t ct, const TileRows& t) {
      const int64_t tile = rt * f.col_tiles + ct;
      // Empty tiles before this one start (and end) where the previous tile ended.
      for (; next <= tile; ++next) f.tile_ptr[static_cast<size_t>(next)] = slot;
      uint64_t* masks = &f.masks[static_cast<size_t>(tile * kBitmapTileRows)];
      for (size_t i = 0; i < kBitmapTileRows; ++i)
        for (int64_t e = t.begin[i]; e < t.end[i]; ++e)
          masks[i] |= uint64_t{1} << (a.col_idx[static_cast<size_t>(e)] - ct * kBitmapTileCols);
      // Values in fragment order: the slot of an entry is its lane's start plus its rank in the
      // lane word (pair: absent halves stay 0).
      const auto words = bitmap_lane_words(f, tile);
      const auto start = bitmap_lane_starts(words, layout);
      for (size_t i = 0; i < kBitmapTileRows; ++i)
        for (int64_t e = t.begin[i]; e < t.end[i]; ++e) {
          const auto c = static_cast<int>(a.col_idx[static_cast<size_t>(e)] - ct * kBitmapTileCols);
          const BitmapFragmentSlot fs = bitmap_fragment_slot(static_cast<int>(i), c);
          const uint32_t w = words[static_cast<size_t>(fs.lane)];
          const int64_t v =
              slot + start[static_cast<size_t>(fs.lane)] + bitmap_lane_rank(w, fs.bit, layout);
          f.values[static_cast<size_t>(v)] = a.values[static_cast<size_t>(e)];
        }
      slot += round_up(start[kBitmapLanes], kBitmapValueAlign);  // the fill slots stay 0
    });
    // The chunk's trailing empty tiles.
    for (; next < rt1 * f.col_tiles; ++next) f.tile_ptr[static_cast<size_t>(next)] = slot;
    SG_ASSERT(slot == first_slot[static_cast<size_t>(chunk) + 1],
              "bitmap-tile packer: a chunk's slots disagree with its count");
  });
  f.tile_ptr[static_cast<size_t>(tiles)] = first_slot.back();
  return f;
}

CsrMatrix unpack_bitmap_tiles(const BitmapTileFormat& f) {
  // A hand-built or corrupted format must fail loudly, never read out of bounds.
  if (f.rows < 0 || f.cols < 0 || f.row_tiles != ceil_div(f.rows, kBitmapTileRows) ||
      f.col_tiles != ceil_div(f.cols, kBitmapTileCols) || f.group < 1)
    broken(fmt::format("{}x{} with {}x{} tiles in groups of {}", f.rows, f.cols, f.row_tiles,
                       f.col_tiles, f.group));
  const int64_t tiles = f.tiles();
  if (static_cast<int64_t>(f.masks.size()) != tiles * kBitmapTileRows ||
      static_cast<int64_t>(f.tile_ptr.size()) != tiles + 1 || f.tile_ptr[0] != 0 ||
      f.tile_ptr.back() != f.slots())
    broken("array sizes disagree with the tile count");
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t b = f.tile_ptr[static_cast<size_t>(t)],
                  e = f.tile_ptr[static_cast<size_t>(t + 1)];
    const int64_t count = bitmap_lane_starts(bitmap_lane_words(f, t), f.layout)[kBitmapLanes];
    if (b > e || count > e - b)
      broken(fmt::format("tile {}: {} values for value slots [{}, {})", t, count, b, e));
  }
  CsrMatrix a;
  a.rows = f.rows;
  a.cols = f.cols;
  a.row_ptr.assign(static_cast<size_t>(f.rows + 1), 0);
  // f.nnz is not trusted with an allocation; the slots bound the entries.
  const int64_t expect = std::clamp<int64_t>(f.nnz, 0, f.slots());
  a.col_idx.reserve(static_cast<size_t>(expect));
  a.values.reserve(static_cast<size_t>(expect));
  // Per row tile, the lane words and lane starts of each of its non-empty column tiles.
  struct TileOrder {
    std::array<uint32_t, kBitmapLanes> words;
    std::array<int, kBitmapLanes + 1> start;
  };
  std::vector<TileOrder> order(static_cast<size_t>(f.col_tiles));
  for (int64_t rt = 0; rt < f.row_tiles; ++rt) {
    for (int64_t ct = 0; ct < f.col_tiles; ++ct) {
      TileOrder& o = order[static_cast<size_t>(ct)];
      o.words = bitmap_lane_words(f, bitmap_tile_index(f, rt, ct));
      o.start = bitmap_lane_starts(o.words, f.layout);
    }
    for (int64_t i = 0; i < kBitmapTileRows; ++i) {
      const int64_t r = rt * kBitmapTileRows + i;
      for (int64_t ct = 0; ct < f.col_tiles; ++ct) {
        const int64_t t = bitmap_tile_index(f, rt, ct);
        uint64_t m = f.masks[static_cast<size_t>(t * kBitmapTileRows + i)];
        if (m != 0 && r >= f.rows) broken(fmt::format("bits set in row {} beyond {}", r, f.rows));
        const TileOrder& o = order[static_cast<size_t>(ct)];
        for (; m != 0; m &= m - 1) {
          const int bit = std::countr_zero(m);
          const int64_t c = ct * kBitmapTileCols + bit;
          if (c >= f.cols)
            broken(fmt::format("row {}: bit set at column {} beyond {}", r, c, f.cols));
          const BitmapFragmentSlot fs = bitmap_fragment_slot(static_cast<int>(i), bit);
          const uint32_t w = o.words[static_cast<size_t>(fs.lane)];
          const int64_t v = f.tile_ptr[static_cast<size_t>(t)] +
                            o.start[static_cast<size_t>(fs.lane)] +
                            bitmap_lane_rank(w, fs.bit, f.layout);
          a.col_idx.push_back(static_cast<int32_t>(c));
          a.values.push_back(f.values[static_cast<size_t>(v)]);
        }
      }
      if (r < f.rows) a.row_ptr[static_cast<size_t>(r + 1)] = a.nnz();
    }
  }
  return a;
}

}  // namespace sparsegen
