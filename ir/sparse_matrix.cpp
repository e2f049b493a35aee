#include "ir/sparse_matrix.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace sparsegen {

std::string_view to_string(ValueField f) {
  switch (f) {
    case ValueField::Real: return "real";
    case ValueField::Integer: return "integer";
    case ValueField::Complex: return "complex";
    case ValueField::Pattern: return "pattern";
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
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = row_ptr[r]; k < row_ptr[r + 1]; ++k) {
      if (col_idx[k] < 0 || col_idx[k] >= cols)
        throw UserError(loc, fmt::format("row {}: column index {} outside [0, {})", r,
                                         col_idx[k], cols));
      if (k > row_ptr[r] && col_idx[k] <= col_idx[k - 1])
        throw UserError(loc, fmt::format("row {}: column indices not strictly increasing at {}",
                                         r, col_idx[k]));
    }
  }
}

void Triplets::reserve(size_t n, bool complex) {
  row.reserve(n);
  col.reserve(n);
  val.reserve(n);
  if (complex) imag.reserve(n);
}

CsrMatrix canonicalize(Triplets&& t, ValueField field, DuplicatePolicy policy,
                       const EntryLocator& locate, Diagnostics& diag) {
  const size_t n = t.size();
  const bool complex = !t.imag.empty();
  CsrMatrix m;
  m.rows = t.rows;
  m.cols = t.cols;
  m.field = field;

  // Counting sort by row, stable in input order, so "first duplicate" means first in the file.
  std::vector<int64_t> start(static_cast<size_t>(t.rows) + 1, 0);
  for (size_t i = 0; i < n; ++i) ++start[static_cast<size_t>(t.row[i]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> order(n);
  {
    std::vector<int64_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 0; i < n; ++i) order[static_cast<size_t>(fill[t.row[i]]++)] = static_cast<int64_t>(i);
  }

  m.row_ptr.assign(static_cast<size_t>(t.rows) + 1, 0);
  m.col_idx.reserve(n);
  m.values.reserve(n);
  if (complex) m.imag.reserve(n);

  int64_t dup_count = 0;
  size_t dup_first = 0;
  for (int64_t r = 0; r < t.rows; ++r) {
    auto b = order.begin() + start[r], e = order.begin() + start[r + 1];
    // Stable: equal columns keep file order, so duplicates sum in file order.
    std::stable_sort(b, e, [&](int64_t a, int64_t c) { return t.col[a] < t.col[c]; });
    for (auto it = b; it != e; ++it) {
      size_t i = static_cast<size_t>(*it);
      if (it != b && t.col[i] == m.col_idx.back()) {
        if (dup_count == 0) dup_first = i;
        ++dup_count;
        if (policy == DuplicatePolicy::Error)
          throw UserError(locate(i), fmt::format("duplicate entry ({}, {}) (1-based); --strict "
                                                 "forbids duplicates",
                                                 r + 1, t.col[i] + 1));
        m.values.back() += t.val[i];
        if (complex) m.imag.back() += t.imag[i];
        continue;
      }
      m.col_idx.push_back(t.col[i]);
      m.values.push_back(t.val[i]);
      if (complex) m.imag.push_back(t.imag[i]);
    }
    m.row_ptr[static_cast<size_t>(r) + 1] = static_cast<int64_t>(m.col_idx.size());
  }
  if (dup_count > 0) {
    diag.warn_n(WarningKind::DuplicateEntry, dup_count, locate(dup_first),
                fmt::format("entry ({}, {}) listed again; values summed", t.row[dup_first] + 1,
                            t.col[dup_first] + 1));
  }
  t = Triplets{};  // release input memory early
  return m;
}

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

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
    diag.warn_n(WarningKind::PatternValues, m.nnz(), SourceLoc{m.source},
                fmt::format("pattern-only matrix: values drawn from +-U[0.5,1) with seed {:#x}",
                            seed));
}

float to_master_value(double v, const SourceLoc& loc, Diagnostics& diag) {
  if (!std::isfinite(v)) {
    diag.warn(WarningKind::NonFinite, loc, fmt::format("value {}", v));
    return static_cast<float>(v);
  }
  if (std::fabs(v) > 3.4028234663852886e38) {
    diag.warn(WarningKind::OutOfRange, loc,
              fmt::format("value {:g} exceeds the fp32 range; stored as {}", v,
                          v > 0 ? "+inf" : "-inf"));
    return v > 0 ? INFINITY : -INFINITY;
  }
  return static_cast<float>(v);
}

}  // namespace sparsegen
