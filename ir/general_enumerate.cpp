#include "ir/general_enumerate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/format.h"
#include "ir/verifier.h"

namespace sparsegen {

RowLengthStats row_length_stats(const CsrMatrix& a) {
  RowLengthStats st;
  st.rows = a.rows;
  st.nnz = a.nnz();
  if (a.rows == 0) return st;
  st.mean = double(st.nnz) / double(a.rows);
  double var = 0;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t len = a.row_length(r);
    st.max = std::max(st.max, len);
    st.empty += len == 0;
    var += (double(len) - st.mean) * (double(len) - st.mean);
  }
  var /= double(a.rows);
  st.cv = st.mean > 0 ? std::sqrt(var) / st.mean : 0.0;
  return st;
}

ReductionRule choose_reduction_levels(const RowLengthStats& st) {
  ReductionRule r;
  if (st.mean < 8 && st.cv <= 1)
    r.finish_level = Level::Thread;
  else if (st.mean >= 32.0 * 32.0)
    r.finish_level = Level::Block;
  else
    r.finish_level = Level::Warp;
  r.prefer_nnz_split = st.cv > 1 || (st.mean > 0 && double(st.max) > 32 * st.mean);
  return r;
}

bool matches_rule(const ReductionRule& r, const GeneralSchedule& s) {
  const WorkSplit b = s.at(Level::Block).kind, w = s.at(Level::Warp).kind;
  if (r.prefer_nnz_split) return b == WorkSplit::Nnz;
  switch (r.finish_level) {
    case Level::Thread:
      return b == WorkSplit::Rows && w == WorkSplit::Rows;
    case Level::Warp:
      return b == WorkSplit::Rows && w == WorkSplit::Row;
    case Level::Block:
      return b == WorkSplit::Row;
  }
  return false;
}

namespace {

int pow2_ceil(int64_t x) {
  int p = 1;
  while (p < x && p < (1 << 30)) p <<= 1;
  return p;
}

struct Cols {
  int tcols, group, bcols;
};

// The narrowest block column tile of a wide group (below, A is re-read more often than B's rows
// stay cached).
constexpr int kMinColumnTile = 32;

// Column tilings: a thread owns 1 or 4 columns; either no sharing (group 1) or a group wide
// enough to cover N in one pass; the block tile covers N in at most 4 passes. From N = 64 on, the
// wide 4-column groups also come in narrower block tiles of 32 columns and up (grid.y tiles run
// one after another, so the B rows in use at a time are that wide: on a graph whose B exceeds the
// L2, two 32-column tiles at N = 64 ran 1.3x faster than one 64-column tile).
std::vector<Cols> column_options(const Problem& p) {
  std::vector<Cols> out;
  const int64_t n = std::max<int64_t>(p.n, 1);
  for (int tc : {1, 4}) {
    if (tc > 1 && tc / 2 >= n) continue;
    std::set<int> groups{1, std::min(32, pow2_ceil((n + tc - 1) / tc))};
    for (int g : groups) {
      const int64_t wc = g * tc;
      const int64_t passes = std::min<int64_t>((n + wc - 1) / wc, 4);
      out.push_back({tc, g, static_cast<int>(wc * passes)});
    }
    if (tc == 4)
      for (int w = kMinColumnTile; w < *groups.rbegin() * tc && w < n; w *= 2)
        out.push_back({tc, w / tc, w});
  }
  return out;
}

}  // namespace

std::vector<Schedule> enumerate_general_schedules(const Problem& p, const CsrMatrix& a,
                                                  const EnumerateOptions& opt) {
  using R = ReductionKind;
  std::vector<GeneralSchedule> cands;
  std::vector<int> warp_opts;
  for (int w = 1; w <= opt.max_warps_per_block; w *= 4) warp_opts.push_back(w);

  for (const Cols& c : column_options(p)) {
    GeneralSchedule base;
    base.thread_cols = c.tcols;
    base.group_threads = c.group;
    base.block_cols = c.bcols;
    const int G = base.groups_per_warp();
    for (int W : warp_opts) {
      base.warps_per_block = W;
      // Vector width and the paddings worth trying for a chunk of z entries.
      auto formats = [&](int64_t zt, bool nnz_tiled, auto&& emit) {
        for (int v : {1, 4}) {
          if (zt % v) continue;
          for (bool il : {false, true}) {
            if (il && G < 2) continue;
            std::set<int64_t> pads{v};
            if (il && !nnz_tiled) pads = {G * zt};
            for (int64_t pad : pads) emit(v, il, static_cast<int>(pad));
          }
        }
      };
      // (Row, Nnz, Nnz): a block per row, warps stride over it.
      for (int64_t zt : {1, 4}) {
        formats(zt, false, [&](int v, bool il, int pad) {
          GeneralSchedule s = base;
          s.split = {LevelSplit::row(), LevelSplit::nnz(G * zt), LevelSplit::nnz(zt)};
          s.reduce = {R::Total, R::Total, R::Total};
          s.vector_width = v, s.interleave = il, s.pad = pad;
          cands.push_back(s);
        });
      }
      for (bool sort : {false, true}) {
        // (Rows, Row, Nnz): a warp per row.
        for (int64_t zt : {1, 4}) {
          for (int64_t rb : {int64_t{W}, int64_t{4} * W})
            formats(zt, false, [&](int v, bool il, int pad) {
              GeneralSchedule s = base;
              s.split = {LevelSplit::rows(rb), LevelSplit::row(), LevelSplit::nnz(zt)};
              s.reduce = {R::None, R::Total, R::Total};
              s.vector_width = v, s.interleave = il, s.pad = pad, s.sort_rows = sort;
              cands.push_back(s);
            });
        }
        // (Rows, Rows, Row|Rows): a thread-group per row (or per few rows).
        for (int64_t rt : {1, 4}) {
          for (int v : {1, 4}) {
            GeneralSchedule s = base;
            const int64_t rw = G * rt;
            s.split = {LevelSplit::rows(W * rw), LevelSplit::rows(rw),
                       rt == 1 ? LevelSplit::row() : LevelSplit::rows(rt)};
            s.reduce = {R::None, R::None, R::Total};
            s.vector_width = v, s.pad = v, s.sort_rows = sort;
            cands.push_back(s);
          }
        }
      }
      // (Nnz, Nnz, Nnz): equal nonzeros per worker; reductions from the padding.
      for (int64_t zt : {1, 4, 16}) {
        const int64_t zw = G * zt, zb = W * zw;
        formats(zt, true, [&](int v, bool il, int) {
          GeneralSchedule s = base;
          s.split = {LevelSplit::nnz(zb), LevelSplit::nnz(zw), LevelSplit::nnz(zt)};
          s.vector_width = v, s.interleave = il;
          // No padding: segments everywhere.
          s.pad = v;
          s.reduce = {R::Segment, R::Segment, R::Bitmap};
          cands.push_back(s);
          // Rows padded to thread chunks: thread total, bitmaps above.
          s.pad = static_cast<int>(zt);
          s.reduce = {R::Segment, R::Bitmap, R::Total};
          if (zt > 1) cands.push_back(s);
          s.pad = static_cast<int>(zw);
          s.reduce = {R::Bitmap, R::Total, R::Total};
          if (zw > zt) cands.push_back(s);
        });
      }
    }
  }

  const RowLengthStats st = row_length_stats(a);
  const ReductionRule rule = choose_reduction_levels(st);
  std::vector<Schedule> first, rest;
  std::set<std::string> seen;
  std::map<std::string, GeneralRowStats> row_stats;
  for (const GeneralSchedule& g : cands) {
    if (!validate(g).empty()) continue;
    Schedule s(g);
    if (!validate(p, s).empty()) continue;
    if (!seen.insert(to_string(s)).second) continue;
    if (a.rows != p.m || a.cols != p.k || a.field == ValueField::Complex)
      (void)compute_format_stats(a, p, s);  // throws, naming the mismatch
    // The row walk once per (padding, empty-row rule), not once per schedule.
    const std::string key = general_stats_key(g);
    auto it = row_stats.find(key);
    if (it == row_stats.end())
      it = row_stats
               .emplace(key, general_row_stats(a, g.pad, g.at(Level::Block).kind == WorkSplit::Nnz))
               .first;
    const FormatStats fs = general_format_stats(it->second, p, g);
    if (fs.pad_overhead() > opt.max_pad_overhead) continue;
    if (opt.verify && !verify(p, s, fs, opt.device).empty()) continue;
    (matches_rule(rule, g) ? first : rest).push_back(std::move(s));
  }
  first.insert(first.end(), std::make_move_iterator(rest.begin()),
               std::make_move_iterator(rest.end()));
  return first;
}

}  // namespace sparsegen
