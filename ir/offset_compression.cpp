#include "ir/offset_compression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "ir/diagnostics.h"

namespace sparsegen {

namespace {
constexpr std::string_view kFormNames[] = {"linear", "branch", "cyclic", "quasilinear", "table"};

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace

std::string_view to_string(OffsetForm f) {
  return kFormNames[static_cast<int>(f)];
}

int64_t OffsetCompression::eval(int64_t i, std::span<const int64_t> a) const {
  SG_ASSERT(i >= 0 && i < size, fmt::format("offset index {} outside 0..{}", i, size));
  switch (form) {
    case OffsetForm::Linear:
      return stride * i + base;
    case OffsetForm::Branch: {
      size_t j =
          static_cast<size_t>(std::upper_bound(breaks.begin(), breaks.end(), i) - breaks.begin()) -
          1;
      return values[j];
    }
    case OffsetForm::Cyclic:
      return values[static_cast<size_t>(i % period)] + (i / period) * stride;
    case OffsetForm::Quasilinear:
      return stride * i + base + values[static_cast<size_t>(i)];
    case OffsetForm::Table:
      return a[static_cast<size_t>(i)];
  }
  return 0;
}

int64_t OffsetCompression::table_bytes() const {
  switch (form) {
    case OffsetForm::Linear:
    case OffsetForm::Branch:
      return 0;
    case OffsetForm::Cyclic:
      return period * 8;
    case OffsetForm::Quasilinear:
      return size * residual_bytes;
    case OffsetForm::Table:
      return size * 8;
  }
  return 0;
}

OffsetCompression classify_offsets(std::span<const int64_t> a) {
  OffsetCompression c;
  const int64_t n = static_cast<int64_t>(a.size());
  c.size = n;
  auto at = [&](int64_t i) { return a[static_cast<size_t>(i)]; };

  // Linear.
  c.form = OffsetForm::Linear;
  c.base = n > 0 ? at(0) : 0;
  c.stride = n > 1 ? at(1) - at(0) : 0;
  bool linear = true;
  for (int64_t i = 0; i < n && linear; ++i) linear = at(i) == c.stride * i + c.base;
  if (linear) return c;

  // Branch: few constant pieces.
  {
    std::vector<int64_t> breaks{0}, values{at(0)};
    for (int64_t i = 1; i < n && static_cast<int>(breaks.size()) <= kMaxBranchPieces; ++i)
      if (at(i) != at(i - 1)) {
        breaks.push_back(i);
        values.push_back(at(i));
      }
    if (static_cast<int>(breaks.size()) <= kMaxBranchPieces) {
      c = {};
      c.form = OffsetForm::Branch;
      c.size = n;
      c.breaks = std::move(breaks);
      c.values = std::move(values);
      return c;
    }
  }

  // Cyclic with a per-period stride (smallest period first).
  for (int64_t p = 2; p <= kMaxCyclicPeriod && 2 * p <= n; ++p) {
    const int64_t stride = at(p) - at(0);
    bool ok = true;
    for (int64_t i = p; i < n && ok; ++i) ok = at(i) == at(i - p) + stride;
    if (ok) {
      c = {};
      c.form = OffsetForm::Cyclic;
      c.size = n;
      c.period = p;
      c.stride = stride;
      c.values.assign(a.begin(), a.begin() + p);
      return c;
    }
  }

  // Quasilinear: the integer slope (near the chord's and the least-squares one) whose residuals
  // span least, centred into int8 or int16.
  if (n >= 2) {
    const int64_t chord = floor_div(at(n - 1) - at(0), n - 1);
    double sxy = 0, sxx = 0;
    const double mx = double(n - 1) / 2;
    for (int64_t i = 0; i < n; ++i) {
      sxy += (double(i) - mx) * double(at(i) - at(0));
      sxx += (double(i) - mx) * (double(i) - mx);
    }
    const int64_t ls = static_cast<int64_t>(std::llround(sxy / sxx));
    // The residual range of every candidate slope in one pass; the first narrowest wins.
    const int64_t strides[5] = {chord, chord + 1, ls - 1, ls, ls + 1};
    int64_t lo[5], hi[5];
    std::fill(std::begin(lo), std::end(lo), INT64_MAX);
    std::fill(std::begin(hi), std::end(hi), INT64_MIN);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t d = at(i) - at(0);
      for (int k = 0; k < 5; ++k) {
        const int64_t r = d - strides[k] * i;
        lo[k] = std::min(lo[k], r);
        hi[k] = std::max(hi[k], r);
      }
    }
    int64_t best_stride = chord, best_lo = 0, best_hi = INT64_MAX;
    for (int k = 0; k < 5; ++k)
      if (hi[k] - lo[k] < best_hi - best_lo)
        best_stride = strides[k], best_lo = lo[k], best_hi = hi[k];
    const int64_t mid = best_lo + (best_hi - best_lo) / 2;
    const int64_t half_span = best_hi - mid;  // residuals fall in [best_lo - mid, half_span]
    int bytes = 0;
    if (best_lo - mid >= -128 && half_span <= 127)
      bytes = 1;
    else if (best_lo - mid >= -32768 && half_span <= 32767)
      bytes = 2;
    if (bytes) {
      c = {};
      c.form = OffsetForm::Quasilinear;
      c.size = n;
      c.stride = best_stride;
      c.base = at(0) + mid;
      c.residual_bytes = bytes;
      c.values.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        c.values[static_cast<size_t>(i)] = at(i) - best_stride * i - c.base;
      return c;
    }
  }

  c = {};
  c.form = OffsetForm::Table;
  c.size = n;
  return c;
}

std::string describe(const OffsetCompression& c) {
  switch (c.form) {
    case OffsetForm::Linear:
      return fmt::format("linear(stride={},base={})", c.stride, c.base);
    case OffsetForm::Branch:
      return fmt::format("branch({} pieces)", c.breaks.size());
    case OffsetForm::Cyclic:
      return fmt::format("cyclic(period={},stride={})", c.period, c.stride);
    case OffsetForm::Quasilinear:
      return fmt::format("quasilinear(stride={},base={},residual=int{})", c.stride, c.base,
                         8 * c.residual_bytes);
    case OffsetForm::Table:
      return fmt::format("table(n={})", c.size);
  }
  return "?";
}

}  // namespace sparsegen
