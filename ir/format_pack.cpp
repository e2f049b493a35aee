#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "ir/diagnostics.h"
#include "ir/format.h"
#include "ir/int_math.h"
#include "ir/parallel.h"

namespace sparsegen {

namespace {

void check_shape(const CsrMatrix& a, const Problem& p) {
  if (a.rows != p.m || a.cols != p.k)
    throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m, p.k));
  if (a.field == ValueField::Complex)
    throw UserError(fmt::format("{}: complex matrices are not supported for kernel generation",
                                a.source.empty() ? "matrix" : a.source));
}

// Block chunk of a nonzero split (the sequence is padded to a multiple of it), else 1.
int64_t tail_multiple(const GeneralSchedule& s) {
  return s.at(Level::Block).kind == WorkSplit::Nnz ? s.at(Level::Block).amount : 1;
}

struct Tasks {
  std::vector<int64_t> nz_begin, row_begin, child_begin;
};

// Cuts every task of `parent` into child tasks per `sp`, in parent order, into `child` (empty
// before), and sets parent.child_begin (each parent's first child, then the end). Row splits
// take every `amount` rows of the parent, nonzero splits every `amount` positions (a task's
// row_begin is the row holding its first position). In parallel over the parents: the children
// are counted, offsets summed, then each parent's written at its offset. `nnz_parent`: the
// parents are nonzero ranges, so the rows a task touches run through its last entry's row.
void split_level(const LevelSplit& sp, Tasks& parent, bool nnz_parent, int64_t total, int64_t rows,
                 const std::vector<int64_t>& row_ptr, Tasks& child) {
  const auto n = static_cast<int64_t>(parent.nz_begin.size());
  auto bounds = [&](int64_t t) {
    const auto i = static_cast<size_t>(t);
    const int64_t nze = t + 1 < n ? parent.nz_begin[i + 1] : total;
    const int64_t re = nnz_parent ? rows : (t + 1 < n ? parent.row_begin[i + 1] : rows);
    return std::array<int64_t, 4>{parent.nz_begin[i], nze, parent.row_begin[i], re};
  };
  auto count = [&](int64_t t) -> int64_t {
    const auto [nzb, nze, rb, re] = bounds(t);
    const int64_t span = sp.kind == WorkSplit::Nnz ? nze - nzb : re - rb;
    return span > 0 ? ceil_div(span, sp.amount) : 0;
  };
  std::vector<int64_t>& first = parent.child_begin;
  first.assign(static_cast<size_t>(n) + 1, 0);
  const std::vector<int64_t> chunks = even_split(n, parallel_chunks(n * 4));
  std::vector<int64_t> chunk_total(chunks.size() - 1, 0);
  // Parent t's child count goes to first[t + 1]; then a running sum per chunk, started at the
  // chunks before it, turns first[t + 1] into the end of parent t's children. Each chunk reads
  // and writes only its own entries.
  run_chunks(chunks, [&](int c, int64_t t0, int64_t t1) {
    int64_t sum = 0;
    for (int64_t t = t0; t < t1; ++t) sum += first[static_cast<size_t>(t + 1)] = count(t);
    chunk_total[static_cast<size_t>(c)] = sum;
  });
  std::vector<int64_t> chunk_first(chunk_total.size() + 1, 0);
  std::inclusive_scan(chunk_total.begin(), chunk_total.end(), chunk_first.begin() + 1);
  run_chunks(chunks, [&](int c, int64_t t0, int64_t t1) {
    int64_t at = chunk_first[static_cast<size_t>(c)];
    for (int64_t t = t0; t < t1; ++t)
      first[static_cast<size_t>(t + 1)] = at += first[static_cast<size_t>(t + 1)];
  });
  // first[t + 1] now ends parent t's children, so first[t] (first[0] = 0) begins them.
  const int64_t children = first[static_cast<size_t>(n)];
  // One more for the end entry pack_format appends: without it that append reallocates and
  // copies the array (a thread level of a 65M-nonzero graph: 22M entries, 176 MB each).
  child.nz_begin.reserve(static_cast<size_t>(children) + 1);
  child.row_begin.reserve(static_cast<size_t>(children) + 1);
  child.nz_begin.resize(static_cast<size_t>(children));
  child.row_begin.resize(static_cast<size_t>(children));
  run_chunks(chunks, [&](int, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const auto [nzb, nze, rb, re] = bounds(t);
      auto out = static_cast<size_t>(first[static_cast<size_t>(t)]);
      if (sp.kind != WorkSplit::Nnz) {
        for (int64_t r = rb; r < re; r += sp.amount, ++out) {
          child.nz_begin[out] = row_ptr[static_cast<size_t>(r)];
          child.row_begin[out] = r;
        }
        continue;
      }
      // Row containing position pos: the last row whose start is <= pos (skips empty rows).
      int64_t r = rb;
      for (int64_t pos = nzb; pos < nze; pos += sp.amount, ++out) {
        while (r + 1 < static_cast<int64_t>(row_ptr.size()) - 1 &&
               row_ptr[static_cast<size_t>(r + 1)] <= pos)
          ++r;
        child.nz_begin[out] = pos;
        child.row_begin[out] = r;
      }
    }
  });
}

// The rows of `a` in their own order (without the empty ones when skip_empty) and their padded
// offsets: row_ptr[i + 1] - row_ptr[i] = round_up(length of order[i], pad). In parallel over row
// ranges: each range counts its rows and padded entries, the counts are summed in range order,
// then each range writes its part (a graph has millions of rows).
void keep_rows_in_order(const CsrMatrix& a, bool skip_empty, int pad, std::vector<int64_t>& order,
                        std::vector<int64_t>& row_ptr) {
  const std::vector<int64_t> bounds = even_split(a.rows, parallel_chunks(a.rows * 4));
  const size_t chunks = bounds.size() - 1;
  std::vector<int64_t> kept(chunks + 1, 0), entries(chunks + 1, 0);  // per chunk, then starts
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    int64_t k = 0, e = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t len = a.row_length(r);
      k += !skip_empty || len > 0 ? 1 : 0;
      e += round_up(len, pad);
    }
    kept[static_cast<size_t>(c) + 1] = k;
    entries[static_cast<size_t>(c) + 1] = e;
  });
  std::partial_sum(kept.begin(), kept.end(), kept.begin());
  std::partial_sum(entries.begin(), entries.end(), entries.begin());
  order.resize(static_cast<size_t>(kept.back()));
  row_ptr.resize(static_cast<size_t>(kept.back()) + 1);
  row_ptr[0] = 0;
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    auto i = static_cast<size_t>(kept[static_cast<size_t>(c)]);
    int64_t at = entries[static_cast<size_t>(c)];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t len = a.row_length(r);
      if (skip_empty && len == 0) continue;
      order[i] = r;
      row_ptr[++i] = at += round_up(len, pad);
    }
  });
}

// An offset array whose compression classify_arrays() fills in later.
OffsetArray make_array(std::string name, std::vector<int64_t> v) {
  OffsetArray a;
  a.name = std::move(name);
  a.values = std::move(v);
  return a;
}

// classify_offsets() of each array, the arrays in parallel (each is a few passes over millions
// of entries for a graph).
void classify_arrays(const std::vector<OffsetArray*>& arrays) {
  for_each_task(arrays.size(), 0,
                [&](size_t i) { arrays[i]->compression = classify_offsets(arrays[i]->values); });
}

}  // namespace

int64_t storage_pos(const GeneralSchedule& s, const PackedFormat&, int64_t p) {
  if (!s.interleave) return p;
  const int64_t zt = s.at(Level::Thread).amount, G = s.groups_per_warp(), v = s.vector_width;
  const int64_t round = G * zt;  // rounds start at multiples of it (validate() guarantees)
  const int64_t base = p / round * round, off = p - base;
  const int64_t q = off / zt, j = off % zt;
  return base + ((j / v) * G + q) * v + j % v;
}

StoragePosCursor::StoragePosCursor(const GeneralSchedule& s, int64_t p) : p_(p) {
  interleave_ = s.interleave;
  if (!interleave_) return;
  groups_ = s.groups_per_warp();
  chunk_ = s.at(Level::Thread).amount;
  vec_ = s.vector_width;
  const int64_t round = groups_ * chunk_;
  base_ = p / round * round;
  const int64_t off = p - base_;
  q_ = off / chunk_;
  j_ = off % chunk_;
  jv_ = j_ / vec_;
  jr_ = j_ % vec_;
}

GeneralRowStats general_row_stats(const CsrMatrix& a, int pad, bool skip_empty) {
  // Enumeration and ranking walk a graph's millions of rows once per padding, so the walk has no
  // data-dependent branch (a graph's empty rows fall at random: a branch on them mispredicts
  // about every other row) and a power-of-two pad (the usual case) rounds with a mask, not an
  // integer division. An empty row pads to 0, so skipping one changes only the row count.
  const int64_t* ptr = a.row_ptr.data();
  int64_t nonempty = 0, padded_sum = 0, max_len = 0;
  auto walk = [&](auto padded) {
    for (int64_t r = 0; r < a.rows; ++r) {
      const int64_t len = ptr[r + 1] - ptr[r];
      max_len = std::max(max_len, len);
      nonempty += len != 0 ? 1 : 0;
      padded_sum += padded(len);
    }
  };
  if ((pad & (pad - 1)) == 0) {
    const int64_t mask = pad - 1;
    walk([mask](int64_t len) { return (len + mask) & ~mask; });
  } else {
    walk([pad](int64_t len) { return round_up(len, pad); });
  }
  GeneralRowStats rs;
  rs.nnz = a.nnz();
  rs.rows = skip_empty ? nonempty : a.rows;
  rs.padded_sum = padded_sum;
  rs.max_row_length = max_len;
  return rs;
}

std::string general_stats_key(const GeneralSchedule& s) {
  return fmt::format("pad={};skip={}", s.pad, s.at(Level::Block).kind == WorkSplit::Nnz ? 1 : 0);
}

FormatStats compute_format_stats(const CsrMatrix& a, const Problem& p, const Schedule& sch) {
  check_shape(a, p);
  const GeneralSchedule& s = sch.as<GeneralSchedule>();
  return general_format_stats(
      general_row_stats(a, s.pad, s.at(Level::Block).kind == WorkSplit::Nnz), p, s);
}

FormatStats general_format_stats(const GeneralRowStats& rs, const Problem& p,
                                 const GeneralSchedule& s) {
  FormatStats st;
  st.nnz = rs.nnz;
  st.rows = rs.rows;
  st.max_row_length = rs.max_row_length;
  st.nnz_padded = round_up(rs.padded_sum, tail_multiple(s));
  const LevelSplit& b = s.at(Level::Block);
  st.block_tasks =
      b.kind == WorkSplit::Nnz ? st.nnz_padded / b.amount : ceil_div(st.rows, b.amount);
  st.col_tiles = ceil_div(p.n, s.block_cols);
  return st;
}

PackedFormat pack_format(const CsrMatrix& a, const Problem& p, const Schedule& sch) {
  const GeneralSchedule& s = sch.as<GeneralSchedule>();
  PackedFormat f;
  f.stats = compute_format_stats(a, p, sch);
  f.output = s.output();
  const bool skip_empty = s.at(Level::Block).kind == WorkSplit::Nnz;

  // Packed row order and the packed rows' offsets (rows padded to a multiple of s.pad).
  std::vector<int64_t> order, row_ptr;
  if (s.sort_rows) {
    order.reserve(static_cast<size_t>(a.rows));
    for (int64_t r = 0; r < a.rows; ++r)
      if (!skip_empty || a.row_length(r) > 0) order.push_back(r);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return a.row_length(x) > a.row_length(y); });
    row_ptr.assign(order.size() + 1, 0);
    for (size_t i = 0; i < order.size(); ++i)
      row_ptr[i + 1] = row_ptr[i] + round_up(a.row_length(order[i]), s.pad);
  } else {
    keep_rows_in_order(a, skip_empty, s.pad, order, row_ptr);
  }
  const int64_t R = static_cast<int64_t>(order.size());
  SG_ASSERT(R == f.stats.rows, "packed row count disagrees with format stats");
  // Tail padding (nonzero splits) belongs to the last row.
  const int64_t total = f.stats.nnz_padded;
  SG_ASSERT(R > 0 ? total >= row_ptr.back() : total == 0, "tail padding");
  row_ptr.back() = total;

  // Entries in logical order, then scattered to storage order (a bijection: packed rows fill
  // disjoint positions, so row ranges run in parallel).
  resize_prefaulted(f.col_idx, static_cast<size_t>(total));
  resize_prefaulted(f.values, static_cast<size_t>(total));
  run_chunks(balanced_split(row_ptr, parallel_chunks(total + R)), [&](int, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t src = order[static_cast<size_t>(i)];
      int64_t pos = row_ptr[static_cast<size_t>(i)];
      StoragePosCursor sp(s, pos);
      int32_t last_col = 0;
      for (int64_t e = a.row_ptr[static_cast<size_t>(src)];
           e < a.row_ptr[static_cast<size_t>(src + 1)]; ++e, ++pos, sp.next()) {
        last_col = a.col_idx[static_cast<size_t>(e)];
        f.col_idx[static_cast<size_t>(*sp)] = last_col;
        f.values[static_cast<size_t>(*sp)] = a.values[static_cast<size_t>(e)];
      }
      // Padding: value 0, a column the row already reads (stays in bounds, same cache line).
      for (; pos < row_ptr[static_cast<size_t>(i + 1)]; ++pos, sp.next())
        f.col_idx[static_cast<size_t>(*sp)] = last_col;
    }
  });

  if (s.reduction(Level::Thread) == ReductionKind::Bitmap) {
    f.row_start_bits.assign(static_cast<size_t>((total + 31) / 32), 0u);
    for (int64_t i = 0; i < R; ++i) {
      const int64_t b = row_ptr[static_cast<size_t>(i)];
      if (b < row_ptr[static_cast<size_t>(i + 1)])
        f.row_start_bits[static_cast<size_t>(b / 32)] |= 1u << (b % 32);
    }
  }

  // Tasks, top-down. The root "task" is the whole sequence.
  Tasks root{.nz_begin = {0}, .row_begin = {0}, .child_begin = {}};
  Tasks lv[3];
  split_level(s.at(Level::Block), root, false, total, R, row_ptr, lv[0]);
  for (int l = 1; l < 3; ++l)
    split_level(s.split[static_cast<size_t>(l)], lv[l - 1],
                s.split[static_cast<size_t>(l - 1)].kind == WorkSplit::Nnz, total, R, row_ptr,
                lv[l]);
  for (int l = 0; l < 3; ++l) {
    Tasks& t = lv[l];
    t.nz_begin.push_back(total);
    t.row_begin.push_back(R);
    LevelArrays& out = f.levels[static_cast<size_t>(l)];
    out.level = static_cast<Level>(l);
    out.tasks = static_cast<int64_t>(t.nz_begin.size()) - 1;
    const std::string name(to_string(out.level));
    if (l < 2) out.child_begin = make_array(name + ".child_begin", std::move(t.child_begin));
    if (s.reduce[static_cast<size_t>(l)] == ReductionKind::Bitmap && l < 2) {
      const Tasks& ch = lv[l + 1];
      out.bitmap.assign(static_cast<size_t>(out.tasks), 0u);
      parallel_for(out.tasks, out.tasks * 8, [&](int64_t k0, int64_t k1) {
        for (int64_t k = k0; k < k1; ++k) {
          const int64_t c0 = out.child_begin.values[static_cast<size_t>(k)];
          const int64_t c1 = out.child_begin.values[static_cast<size_t>(k + 1)];
          SG_ASSERT(c1 - c0 <= 32, "bitmap level with more than 32 children");
          for (int64_t c = c0; c < c1; ++c)
            if (c == c0 ||
                ch.row_begin[static_cast<size_t>(c)] != ch.row_begin[static_cast<size_t>(c - 1)])
              out.bitmap[static_cast<size_t>(k)] |= 1u << (c - c0);
        }
      });
    }
    out.nz_begin = make_array(name + ".nz_begin", std::move(t.nz_begin));
    out.row_begin = make_array(name + ".row_begin", std::move(t.row_begin));
  }
  SG_ASSERT(f.levels[0].tasks == f.stats.block_tasks, "block task count disagrees with stats");

  f.perm = make_array("perm", std::move(order));
  f.row_ptr = make_array("row_ptr", std::move(row_ptr));
  std::vector<OffsetArray*> arrays = {&f.perm, &f.row_ptr};
  for (LevelArrays& lv_out : f.levels)
    for (OffsetArray* x : {&lv_out.nz_begin, &lv_out.row_begin, &lv_out.child_begin})
      if (!x->name.empty()) arrays.push_back(x);
  classify_arrays(arrays);
  return f;
}

}  // namespace sparsegen
