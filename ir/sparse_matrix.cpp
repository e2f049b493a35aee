#include "ir/sparse_matrix.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "ir/parallel.h"
#include "ir/random.h"

namespace sparsegen {

std::string_view to_string(ValueField f) {
  switch (f) {
    case ValueField::Real:
      return "real";
    case ValueField::Integer:
      return "integer";
    case ValueField::Complex:
      return "complex";
    case ValueField::Pattern:
      return "pattern";
  }
  return "unknown";
}

void CsrMatrix::check_canonical() const {
  SourceLoc loc{source};
  if (rows < 0 || cols < 0 || rows > kMaxDimension || cols > kMaxDimension)
    throw UserError(loc, fmt::format("dimensions {}x{} outside [0, 2^31-1]", rows, cols));
  if (static_cast<int64_t>(row_ptr.size()) != rows + 1)
    throw UserError(loc, fmt::format("row offsets have {} entries, expected rows+1 = {}",
                                     row_ptr.size(), rows + 1));
  if (row_ptr[0] != 0) throw UserError(loc, "row offsets do not start at 0");
  for (int64_t r = 0; r < rows; ++r)
    if (row_ptr[r + 1] < row_ptr[r])
      throw UserError(loc, fmt::format("row offsets decrease at row {}", r));
  if (row_ptr[rows] != nnz())
    throw UserError(loc, fmt::format("last row offset {} != number of column indices {}",
                                     row_ptr[rows], nnz()));
  if (values.size() != col_idx.size())
    throw UserError(loc, fmt::format("{} values for {} column indices", values.size(), nnz()));
  if (!imag.empty() && imag.size() != col_idx.size())
    throw UserError(loc, "imaginary parts do not match the number of entries");
  // Fast pass without early exits (vectorizes; row ranges in parallel); the slow loop below only
  // runs to name the first violation.
  const std::vector<int64_t> bounds = balanced_split(row_ptr, parallel_chunks(nnz() + rows));
  std::vector<char> chunk_ok(bounds.size() - 1, 0);
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    bool ok = true;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = row_ptr[r], e = row_ptr[r + 1];
      if (b < e) ok &= (col_idx[b] >= 0) & (col_idx[e - 1] < cols);
      for (int64_t k = b + 1; k < e; ++k) ok &= col_idx[k] > col_idx[k - 1];
    }
    chunk_ok[static_cast<size_t>(c)] = ok;
  });
  if (std::all_of(chunk_ok.begin(), chunk_ok.end(), [](char ok) { return ok != 0; })) return;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
      if (col_idx[k] < 0 || col_idx[k] >= cols)
        throw UserError(
            loc, fmt::format("row {}: column index {} outside [0, {})", r, col_idx[k], cols));
      if (k > row_ptr[r] && col_idx[k] <= col_idx[k - 1])
        throw UserError(loc, fmt::format("row {}: column indices not strictly increasing at {}", r,
                                         col_idx[k]));
    }
  }
}

void Triplets::reserve(size_t n, bool complex) {
  row.reserve(n);
  col.reserve(n);
  val.reserve(n);
  if (complex) imag.reserve(n);
}

// Values are scattered into their row buckets directly (no index array), rows that are already
// sorted are not sorted again, short rows use an insertion sort and long rows one reused scratch
// buffer. The first duplicate's input position is found by one rescan, only when there is one, so
// no per-entry position is stored.
CsrMatrix canonicalize(Triplets&& t, ValueField field, DuplicatePolicy policy,
                       const EntryLocator& locate, Diagnostics& diag) {
  const size_t n = t.size();
  const bool complex = !t.imag.empty();
  CsrMatrix m;
  m.rows = t.rows;
  m.cols = t.cols;
  m.field = field;
  // Readers check indices as they parse; this guards every other producer of Triplets (a bad row
  // would otherwise scatter out of bounds below).
  for (size_t i = 0; i < n; ++i) {
    if (t.row[i] < 0 || t.row[i] >= t.rows || t.col[i] < 0 || t.col[i] >= t.cols)
      throw UserError(locate ? locate(i) : SourceLoc{},
                      fmt::format("entry ({}, {}) (1-based) lies outside the {} x {} matrix",
                                  int64_t{t.row[i]} + 1, int64_t{t.col[i]} + 1, t.rows, t.cols));
  }

  // 1. Bucket by row, stable in input order. A direct scatter into millions of rows misses the
  // cache on every entry when the file is not row-ordered, so rows are first partitioned into at
  // most kPartitions contiguous row ranges (a small, cache-resident counter set), then each
  // range, whose entries now fit in cache, is counting-sorted by row into place.
  std::vector<int64_t> start(static_cast<size_t>(t.rows) + 1, 0);
  m.col_idx.resize(n);
  m.values.resize(n);
  if (complex) m.imag.resize(n);
  {
    constexpr int64_t kPartitions = 1024;
    int shift = 0;
    while ((std::max<int64_t>(t.rows, 1) - 1) >> shift >= kPartitions) ++shift;
    const size_t parts = t.rows == 0 ? 0 : static_cast<size_t>(((t.rows - 1) >> shift) + 1);
    std::vector<int64_t> pstart(parts + 1, 0);
    for (size_t i = 0; i < n; ++i) ++pstart[static_cast<size_t>(t.row[i] >> shift) + 1];
    std::partial_sum(pstart.begin(), pstart.end(), pstart.begin());
    // Entries copied partition by partition (stable), so the second pass reads contiguously.
    std::vector<int32_t> prow(n), pcol(n);
    std::vector<float> pval(n), pimag(complex ? n : 0);
    {
      std::vector<int64_t> fill(pstart.begin(), pstart.end() - 1);
      for (size_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(fill[static_cast<size_t>(t.row[i] >> shift)]++);
        prow[k] = t.row[i];
        pcol[k] = t.col[i];
        pval[k] = t.val[i];
        if (complex) pimag[k] = t.imag[i];
      }
    }
    std::vector<int64_t> local;
    for (size_t p = 0; p < parts; ++p) {
      const int64_t r0 = static_cast<int64_t>(p) << shift;
      const int64_t r1 = std::min<int64_t>(t.rows, r0 + (int64_t{1} << shift));
      local.assign(static_cast<size_t>(r1 - r0) + 1, 0);
      const auto ob = static_cast<size_t>(pstart[p]), oe = static_cast<size_t>(pstart[p + 1]);
      for (size_t k = ob; k < oe; ++k) ++local[static_cast<size_t>(prow[k] - r0) + 1];
      local[0] = pstart[p];
      std::partial_sum(local.begin(), local.end(), local.begin());
      std::copy(local.begin(), local.end() - 1, start.begin() + r0);
      for (size_t k = ob; k < oe; ++k) {
        const auto dst = static_cast<size_t>(local[static_cast<size_t>(prow[k] - r0)]++);
        m.col_idx[dst] = pcol[k];
        m.values[dst] = pval[k];
        if (complex) m.imag[dst] = pimag[k];
      }
    }
    start[static_cast<size_t>(t.rows)] = static_cast<int64_t>(n);
  }

  // 2. Per row: stable sort by column (skipped when already sorted), then merge duplicates.
  struct Item {
    int32_t col;
    float re, im;
  };
  std::vector<Item> scratch;
  int64_t out = 0, dup_count = 0, dup_row = -1;
  int32_t dup_col = 0;
  int64_t dup_rank = 0;  // the first duplicate is occurrence dup_rank (0-based) of its (row, col)
  m.row_ptr.assign(static_cast<size_t>(t.rows) + 1, 0);
  for (int64_t r = 0; r < t.rows; ++r) {
    const auto b = static_cast<size_t>(start[static_cast<size_t>(r)]);
    const auto e = static_cast<size_t>(start[static_cast<size_t>(r) + 1]);
    bool sorted = true;
    for (size_t k = b + 1; k < e && sorted; ++k) sorted = m.col_idx[k - 1] < m.col_idx[k];
    if (!sorted) {
      scratch.clear();
      for (size_t k = b; k < e; ++k)
        scratch.push_back({m.col_idx[k], m.values[k], complex ? m.imag[k] : 0.0f});
      if (scratch.size() <= 32) {  // insertion sort: stable, fast for short rows
        for (size_t i = 1; i < scratch.size(); ++i) {
          Item x = scratch[i];
          size_t j = i;
          while (j > 0 && scratch[j - 1].col > x.col) {
            scratch[j] = scratch[j - 1];
            --j;
          }
          scratch[j] = x;
        }
      } else {
        std::stable_sort(scratch.begin(), scratch.end(),
                         [](const Item& x, const Item& y) { return x.col < y.col; });
      }
      for (size_t k = b; k < e; ++k) {
        m.col_idx[k] = scratch[k - b].col;
        m.values[k] = scratch[k - b].re;
        if (complex) m.imag[k] = scratch[k - b].im;
      }
    }
    // Compact into [out, ...), summing duplicates in file order.
    const int64_t row_begin = out;
    int64_t run = 0;  // occurrences so far of the current column
    for (size_t k = b; k < e; ++k) {
      const auto o = static_cast<size_t>(out);
      if (out > row_begin && m.col_idx[k] == m.col_idx[o - 1]) {
        ++run;
        if (dup_count++ == 0) {
          dup_row = r;
          dup_col = m.col_idx[k];
          dup_rank = run;
          if (policy == DuplicatePolicy::Error) break;
        }
        m.values[o - 1] += m.values[k];
        if (complex) m.imag[o - 1] += m.imag[k];
        continue;
      }
      run = 0;
      m.col_idx[o] = m.col_idx[k];
      m.values[o] = m.values[k];
      if (complex) m.imag[o] = m.imag[k];
      ++out;
    }
    if (dup_count > 0 && policy == DuplicatePolicy::Error) break;
    m.row_ptr[static_cast<size_t>(r) + 1] = out;
  }
  if (dup_count > 0) {
    // Input position of the first duplicate: occurrence dup_rank of (dup_row, dup_col) in t.
    size_t first = 0;
    for (int64_t seen = -1; first < n; ++first)
      if (t.row[first] == dup_row && t.col[first] == dup_col && ++seen == dup_rank) break;
    if (policy == DuplicatePolicy::Error)
      throw UserError(locate(first), fmt::format("duplicate entry ({}, {}) (1-based); --strict "
                                                 "forbids duplicates",
                                                 dup_row + 1, dup_col + 1));
    diag.warn_n(
        WarningKind::DuplicateEntry, dup_count, locate(first),
        fmt::format("entry ({}, {}) listed again; values summed", dup_row + 1, dup_col + 1));
  }
  m.col_idx.resize(static_cast<size_t>(out));
  m.col_idx.shrink_to_fit();
  m.values.resize(static_cast<size_t>(out));
  m.values.shrink_to_fit();
  if (complex) {
    m.imag.resize(static_cast<size_t>(out));
    m.imag.shrink_to_fit();
  }
  t = Triplets{};
  return m;
}

void synthesize_pattern_values(CsrMatrix& m, uint64_t seed, Diagnostics& diag) {
  uint64_t state = seed;
  m.values.resize(m.col_idx.size());
  for (float& v : m.values) {
    uint64_t x = splitmix64(state);
    float mag = 0.5f + 0.5f * static_cast<float>((x >> 40) & 0xffffffULL) / 16777216.0f;
    v = (x & 1ULL) ? -mag : mag;
  }
  m.pattern_only = true;
  if (m.nnz() > 0)
    diag.warn_n(
        WarningKind::PatternValues, m.nnz(), SourceLoc{m.source},
        fmt::format("pattern-only matrix: values drawn from +-U[0.5,1) with seed {:#x}", seed));
}

float to_master_value(double v, const SourceLoc& loc, Diagnostics& diag) {
  if (!std::isfinite(v)) {
    diag.warn(WarningKind::NonFinite, loc, fmt::format("value {}", v));
    return static_cast<float>(v);
  }
  if (std::fabs(v) > 3.4028234663852886e38) {
    diag.warn(
        WarningKind::OutOfRange, loc,
        fmt::format("value {:g} exceeds the fp32 range; stored as {}", v, v > 0 ? "+inf" : "-inf"));
    return v > 0 ? INFINITY : -INFINITY;
  }
  return static_cast<float>(v);
}

}  // namespace sparsegen
