#include "costmodel/features.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ir/parallel.h"

namespace sparsegen {

namespace {

// Nearest-rank percentile of `v` (reorders v).
int64_t percentile(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<size_t>(rank, 1, v.size());
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(rank - 1), v.end());
  return v[rank - 1];
}

void row_stats(const CsrMatrix& m, MatrixFeatures& f) {
  if (m.rows == 0) return;
  std::vector<int64_t> len(static_cast<size_t>(m.rows));
  double sum = 0, sumsq = 0;
  f.row_min = INT64_MAX;
  for (int64_t r = 0; r < m.rows; ++r) {
    const int64_t l = m.row_length(r);
    len[r] = l;
    sum += static_cast<double>(l);
    sumsq += static_cast<double>(l) * static_cast<double>(l);
    f.row_min = std::min(f.row_min, l);
    f.row_max = std::max(f.row_max, l);
    f.empty_rows += (l == 0);
  }
  const double n = static_cast<double>(m.rows);
  f.row_mean = sum / n;
  f.row_std = std::sqrt(std::max(0.0, sumsq / n - f.row_mean * f.row_mean));
  f.row_cv = f.row_mean > 0 ? f.row_std / f.row_mean : 0.0;
  f.row_uniform = f.row_min == f.row_max;
  f.row_p50 = percentile(len, 50);
  f.row_p90 = percentile(len, 90);
  f.row_p99 = percentile(len, 99);
}

// Row ranges of about equal numbers of nonzeros for a parallel pass over m (ir/parallel.h).
std::vector<int64_t> row_chunks(const CsrMatrix& m) {
  return balanced_split(m.row_ptr, parallel_chunks(m.nnz() + m.rows));
}

void col_stats(const CsrMatrix& m, MatrixFeatures& f) {
  if (m.cols == 0) return;
  // Nonzero counts of the columns that have any. Counting needs `cols` counters; when cols is far
  // larger than nnz (a huge, nearly empty matrix) a sorted copy of the indices is cheaper.
  std::vector<int64_t> counts;
  if (m.cols <= std::max<int64_t>(m.nnz(), int64_t{1} << 24)) {
    // One 32-bit histogram per chunk, summed in parallel over the columns. Up to one chunk per
    // counter's worth of nonzeros, so that zeroing and summing the histograms stays below the
    // count itself (a graph with millions of columns still gets every core), and at most
    // INT32_MAX nonzeros per chunk, so that its counters cannot overflow.
    const auto chunks = static_cast<int>(std::max<int64_t>(
        (m.nnz() + INT32_MAX - 1) / INT32_MAX,
        std::min<int64_t>(parallel_chunks(m.nnz()), std::max<int64_t>(m.nnz() / m.cols, 1))));
    const std::vector<int64_t> bounds = even_split(m.nnz(), chunks);
    std::vector<std::vector<uint32_t>> per_chunk(bounds.size() - 1);
    run_chunks(bounds, [&](int c, int64_t b, int64_t e) {
      std::vector<uint32_t>& h = per_chunk[static_cast<size_t>(c)];
      h.assign(static_cast<size_t>(m.cols), 0);
      for (int64_t k = b; k < e; ++k) ++h[static_cast<size_t>(m.col_idx[static_cast<size_t>(k)])];
    });
    std::vector<int64_t> per_col(static_cast<size_t>(m.cols), 0);
    parallel_for(m.cols, m.cols * chunks, [&](int64_t j0, int64_t j1) {
      for (const std::vector<uint32_t>& h : per_chunk)
        for (int64_t j = j0; j < j1; ++j)
          per_col[static_cast<size_t>(j)] += h[static_cast<size_t>(j)];
    });
    for (int64_t c : per_col)
      if (c > 0) counts.push_back(c);
  } else {
    std::vector<int32_t> sorted(m.col_idx);
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size();) {
      size_t j = i;
      while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
      counts.push_back(static_cast<int64_t>(j - i));
      i = j;
    }
  }
  double sumsq = 0;
  for (int64_t c : counts) {
    f.col_max = std::max(f.col_max, c);
    sumsq += static_cast<double>(c) * static_cast<double>(c);
  }
  f.empty_cols = m.cols - static_cast<int64_t>(counts.size());
  const double n = static_cast<double>(m.cols);
  const double mean = static_cast<double>(m.nnz()) / n;
  const double sd = std::sqrt(std::max(0.0, sumsq / n - mean * mean));
  f.col_cv = mean > 0 ? sd / mean : 0.0;
}

// Integer sums of locality() over a range of rows (exact, so the chunks add up to the same
// result in any split).
struct LocalitySums {
  int64_t segments = 0, min_segments = 0, nonempty = 0, pairs = 0, consecutive = 0;
  int64_t max_in_seg = 0;  // the N of N:32 (nm_structure reads it)
  int64_t gap_sum = 0;     // at most cols per row
};

LocalitySums locality_of_rows(const CsrMatrix& m, int64_t r0, int64_t r1) {
  LocalitySums s;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = m.row_ptr[r], e = m.row_ptr[r + 1];
    if (b == e) continue;
    ++s.nonempty;
    s.min_segments += (e - b + kSegmentCols - 1) / kSegmentCols;
    int64_t last_seg = -1, in_seg = 0;
    for (int64_t k = b; k < e; ++k) {
      const int64_t seg = m.col_idx[k] / kSegmentCols;
      s.segments += seg != last_seg;
      in_seg = seg == last_seg ? in_seg + 1 : 1;
      s.max_in_seg = std::max(s.max_in_seg, in_seg);
      last_seg = seg;
      if (k > b) {
        const int64_t gap = int64_t{m.col_idx[k]} - m.col_idx[k - 1];
        s.gap_sum += gap;
        s.consecutive += gap == 1;
        ++s.pairs;
      }
    }
  }
  return s;
}

void locality(const CsrMatrix& m, MatrixFeatures& f) {
  const std::vector<int64_t> bounds = row_chunks(m);
  std::vector<LocalitySums> parts(bounds.size() - 1);
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    parts[static_cast<size_t>(c)] = locality_of_rows(m, r0, r1);
  });
  LocalitySums s;
  for (const LocalitySums& p : parts) {
    s.segments += p.segments;
    s.min_segments += p.min_segments;
    s.nonempty += p.nonempty;
    s.pairs += p.pairs;
    s.consecutive += p.consecutive;
    s.max_in_seg = std::max(s.max_in_seg, p.max_in_seg);
    s.gap_sum += p.gap_sum;
  }
  if (s.nonempty > 0) f.segments_per_row = static_cast<double>(s.segments) / double(s.nonempty);
  if (s.min_segments > 0)
    f.segment_ratio = static_cast<double>(s.segments) / double(s.min_segments);
  f.nm_max_per_group.assign(kNmGroupWidths.size(), 0);
  for (size_t i = 0; i < kNmGroupWidths.size(); ++i)
    if (kNmGroupWidths[i] == kSegmentCols) f.nm_max_per_group[i] = static_cast<int>(s.max_in_seg);
  if (s.pairs > 0) {
    f.mean_col_gap = static_cast<double>(s.gap_sum) / static_cast<double>(s.pairs);
    f.consecutive_fraction = static_cast<double>(s.consecutive) / static_cast<double>(s.pairs);
  }
}

// Largest number of nonzeros in one aligned group of W columns of one row. W is a template
// parameter so the division by it compiles to a multiply.
template <int32_t W>
int64_t max_per_group_of_rows(const CsrMatrix& m, int64_t r0, int64_t r1) {
  int64_t best = 0;
  // Stops once a full group is seen: nothing can exceed W (unstructured matrices get there in the
  // first rows).
  for (int64_t r = r0; r < r1 && best < W; ++r) {
    if (m.row_length(r) <= best) continue;
    int32_t group = -1;
    int64_t count = 0;
    for (int64_t k = m.row_ptr[r]; k < m.row_ptr[r + 1]; ++k) {
      const int32_t g = m.col_idx[k] / W;
      count = g == group ? count + 1 : 1;
      group = g;
      best = std::max(best, count);
    }
  }
  return best;
}

template <int32_t W>
int max_per_group(const CsrMatrix& m) {
  // The first rows usually settle it (a full group): try them alone before a parallel pass.
  const int64_t head = std::min<int64_t>(m.rows, 64);
  int64_t best = max_per_group_of_rows<W>(m, 0, head);
  if (best >= W || head == m.rows) return static_cast<int>(best);
  const std::vector<int64_t> bounds = row_chunks(m);
  std::vector<int64_t> parts(bounds.size() - 1, 0);
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    parts[static_cast<size_t>(c)] = max_per_group_of_rows<W>(m, std::max(r0, head), r1);
  });
  for (int64_t p : parts) best = std::max(best, p);
  return static_cast<int>(std::min<int64_t>(best, W));
}

int max_per_group(const CsrMatrix& m, int w) {
  switch (w) {
    case 4:
      return max_per_group<4>(m);
    case 6:
      return max_per_group<6>(m);
    case 8:
      return max_per_group<8>(m);
    case 10:
      return max_per_group<10>(m);
    case 12:
      return max_per_group<12>(m);
    case 14:
      return max_per_group<14>(m);
    case 16:
      return max_per_group<16>(m);
  }
  SG_ASSERT(false, "max_per_group: width not instantiated");
  return 0;
}

void nm_structure(const CsrMatrix& m, MatrixFeatures& f) {
  // Groups of 32 are the locality segments: that width was counted by locality() already.
  static_assert(kSegmentCols == 32);
  f.nm_max_per_group.resize(kNmGroupWidths.size(), 0);
  for (size_t i = 0; i < kNmGroupWidths.size(); ++i)
    if (kNmGroupWidths[i] != kSegmentCols)
      f.nm_max_per_group[i] = max_per_group(m, kNmGroupWidths[i]);
  if (m.nnz() == 0) return;
  for (size_t i = 0; i < kNmGroupWidths.size(); ++i) {
    const int w = kNmGroupWidths[i], n = f.nm_max_per_group[i];
    const int bound = w <= 16 ? w - 2 : w / 2;
    // Tight: the groups are (nearly) full, as N:M pruning leaves them. Without this, any sparse
    // enough matrix would "be" 12:14 or 1:4 by accident.
    const bool tight = f.density >= kNmTightness * n / w;
    if (n <= bound && tight) {
      f.nm_n = n;
      f.nm_m = w;
      return;
    }
  }
}

// True when the nonzeros are exactly a union of aligned, fully dense b x b blocks.
bool is_dense_blocked(const CsrMatrix& m, int64_t b) {
  if (m.rows % b != 0 || m.cols % b != 0) return false;
  for (int64_t r0 = 0; r0 < m.rows; r0 += b) {
    const int64_t s = m.row_ptr[r0], len = m.row_length(r0);
    if (len % b != 0) return false;
    for (int64_t k = s; k < s + len; k += b)
      if (m.col_idx[k] % b != 0 || m.col_idx[k + b - 1] != m.col_idx[k] + b - 1) return false;
    for (int64_t r = r0 + 1; r < r0 + b; ++r) {
      if (m.row_length(r) != len) return false;
      if (!std::equal(m.col_idx.begin() + s, m.col_idx.begin() + s + len,
                      m.col_idx.begin() + m.row_ptr[r]))
        return false;
    }
  }
  return true;
}

}  // namespace

std::string MatrixFeatures::nm_string() const {
  return nm_m == 0 ? "none" : fmt::format("{}:{}", nm_n, nm_m);
}

MatrixFeatures compute_features(const CsrMatrix& m) {
  MatrixFeatures f;
  f.rows = m.rows;
  f.cols = m.cols;
  f.nnz = m.nnz();
  const double cells = static_cast<double>(m.rows) * static_cast<double>(m.cols);
  f.density = cells > 0 ? static_cast<double>(f.nnz) / cells : 0.0;
  row_stats(m, f);
  col_stats(m, f);
  locality(m, f);
  nm_structure(m, f);
  if (f.nnz > 0)
    for (int b : kBlockEdges)
      if (is_dense_blocked(m, b)) f.dense_block = b;

  const int64_t offsets = m.rows + 1;
  const bool fits_i32 = f.nnz <= INT32_MAX;
  f.csr_i64_fp32_bytes = offsets * 8 + f.nnz * (4 + 4);
  f.csr_i64_fp16_bytes = offsets * 8 + f.nnz * (4 + 2);
  f.csr_i32_fp32_bytes = fits_i32 ? offsets * 4 + f.nnz * (4 + 4) : -1;
  f.csr_i32_fp16_bytes = fits_i32 ? offsets * 4 + f.nnz * (4 + 2) : -1;
  // rows * cols < 2^62, but 4 * that can overflow int64: -1 then.
  const int64_t elems = m.rows * m.cols;
  f.dense_fp32_bytes = elems <= INT64_MAX / 4 ? elems * 4 : -1;
  f.dense_fp16_bytes = elems <= INT64_MAX / 2 ? elems * 2 : -1;
  return f;
}

nlohmann::json to_json(const MatrixFeatures& f) {
  nlohmann::json nm_groups = nlohmann::json::object();
  for (size_t i = 0; i < kNmGroupWidths.size() && i < f.nm_max_per_group.size(); ++i)
    nm_groups[std::to_string(kNmGroupWidths[i])] = f.nm_max_per_group[i];
  return {
      {"rows", f.rows},
      {"cols", f.cols},
      {"nnz", f.nnz},
      {"density", f.density},
      {"row_min", f.row_min},
      {"row_max", f.row_max},
      {"row_mean", f.row_mean},
      {"row_std", f.row_std},
      {"row_cv", f.row_cv},
      {"row_p50", f.row_p50},
      {"row_p90", f.row_p90},
      {"row_p99", f.row_p99},
      {"empty_rows", f.empty_rows},
      {"col_max", f.col_max},
      {"col_cv", f.col_cv},
      {"empty_cols", f.empty_cols},
      {"segment_cols", kSegmentCols},
      {"segments_per_row", f.segments_per_row},
      {"segment_ratio", f.segment_ratio},
      {"mean_col_gap", f.mean_col_gap},
      {"consecutive_fraction", f.consecutive_fraction},
      {"nm", f.nm_string()},
      {"nm_n", f.nm_n},
      {"nm_m", f.nm_m},
      {"nm_max_per_group", nm_groups},
      {"row_uniform", f.row_uniform},
      {"dense_block", f.dense_block},
      {"csr_i32_fp32_bytes", f.csr_i32_fp32_bytes},
      {"csr_i32_fp16_bytes", f.csr_i32_fp16_bytes},
      {"csr_i64_fp32_bytes", f.csr_i64_fp32_bytes},
      {"csr_i64_fp16_bytes", f.csr_i64_fp16_bytes},
      {"dense_fp32_bytes", f.dense_fp32_bytes},
      {"dense_fp16_bytes", f.dense_fp16_bytes},
  };
}

namespace {
std::string human_bytes(int64_t b) {
  if (b < 0) return "n/a (not representable)";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.2f} {} ({} B)", v, units[u], b);
}
}  // namespace

std::string format_table(const MatrixFeatures& f) {
  std::string s;
  auto line = [&s](std::string_view key, const std::string& value) {
    s += fmt::format("  {:<22} {}\n", key, value);
  };
  line("shape", fmt::format("{} x {}", f.rows, f.cols));
  line("nnz", fmt::format("{}", f.nnz));
  line("density", fmt::format("{:.6g} (sparsity {:.6g})", f.density, 1.0 - f.density));
  line("row length", fmt::format("min {}  mean {:.4g}  max {}  std {:.4g}  cv {:.4g}", f.row_min,
                                 f.row_mean, f.row_max, f.row_std, f.row_cv));
  line("row percentiles", fmt::format("p50 {}  p90 {}  p99 {}", f.row_p50, f.row_p90, f.row_p99));
  line("empty rows", fmt::format("{}", f.empty_rows));
  line("column length",
       fmt::format("max {}  cv {:.4g}  empty columns {}", f.col_max, f.col_cv, f.empty_cols));
  line("segments per row", fmt::format("{:.4g} ({}-column segments; {:.4g}x the minimum)",
                                       f.segments_per_row, kSegmentCols, f.segment_ratio));
  line("column gap", fmt::format("mean {:.4g}  consecutive pairs {:.2f}%", f.mean_col_gap,
                                 100.0 * f.consecutive_fraction));
  std::string groups;
  for (size_t i = 0; i < kNmGroupWidths.size() && i < f.nm_max_per_group.size(); ++i)
    groups += fmt::format("{}{}:{}", i ? " " : "", f.nm_max_per_group[i], kNmGroupWidths[i]);
  line("N:M structure", fmt::format("{}  (max per group: {})", f.nm_string(), groups));
  line("row-uniform", f.row_uniform ? "yes" : "no");
  line("dense blocks", f.dense_block > 1 ? fmt::format("{0}x{0}", f.dense_block) : "none");
  line("CSR int32/fp32", human_bytes(f.csr_i32_fp32_bytes));
  line("CSR int32/fp16", human_bytes(f.csr_i32_fp16_bytes));
  line("CSR int64/fp32", human_bytes(f.csr_i64_fp32_bytes));
  line("CSR int64/fp16", human_bytes(f.csr_i64_fp16_bytes));
  line("dense fp32", human_bytes(f.dense_fp32_bytes));
  line("dense fp16", human_bytes(f.dense_fp16_bytes));
  return s;
}

}  // namespace sparsegen
