#include "ir/slide_format.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/int_math.h"

namespace sparsegen {

std::optional<SlideViolation> slide_violation(const CsrMatrix& a, int n) {
  const int64_t width = 2 * int64_t{n}, most = width - 2;
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t b = a.row_ptr[static_cast<size_t>(r)], e = a.row_ptr[static_cast<size_t>(r) + 1];
    for (int64_t i = b; i < e;) {
      const int64_t g = a.col_idx[static_cast<size_t>(i)] / width;
      int64_t j = i;
      while (j < e && a.col_idx[static_cast<size_t>(j)] / width == g) ++j;
      if (j - i > most) return SlideViolation{r, g, j - i};
      i = j;
    }
  }
  return std::nullopt;
}

std::string SlidePattern::name() const {
  return n == 0 ? "none" : fmt::format("{}:{}", 2 * n - 2, 2 * n);
}

SlidePattern detect_slide_pattern(const CsrMatrix& a) {
  for (int n = kSlideMinN; n <= kSlideMaxN; ++n)
    if (!slide_violation(a, n)) return SlidePattern{n};
  return SlidePattern{};
}

int64_t SlideFormat::bytes(int value_bytes) const {
  return static_cast<int64_t>(values.size()) * value_bytes + static_cast<int64_t>(meta.size()) * 4;
}

int64_t slide_lifted_column(int n, int64_t c, int w) {
  const int64_t width = 2 * int64_t{n};
  const int64_t g = c / width, local = c % width;
  SG_ASSERT(w >= 0 && w <= n - 2 && local >= 2 * w && local <= 2 * w + 3,
            "window does not cover the column");
  return g * 4 * (n - 1) + 4 * w + (local - 2 * w);
}

SlideFormat pack_slide(const CsrMatrix& a, int n) {
  if (n < kSlideMinN || n > kSlideMaxN)
    throw UserError(
        fmt::format("slidesparse: N = {} is outside {} … {} ((2N−2):2N from 2:4 to "
                    "14:16)",
                    n, kSlideMinN, kSlideMaxN));
  a.check_canonical();
  if (const auto v = slide_violation(a, n))
    throw UserError(fmt::format(
        "{}: not {}:{}: row {}, columns {}–{} hold {} nonzeros (at most {})",
        a.source.empty() ? "matrix" : a.source, 2 * n - 2, 2 * n, v->row + 1, v->group * 2 * n + 1,
        std::min(a.cols, (v->group + 1) * 2 * n), v->count, 2 * n - 2));
  const int64_t width = 2 * int64_t{n};
  SlideFormat f;
  f.n = n;
  f.rows = a.rows;
  f.cols = a.cols;
  f.padded_cols = round_up(a.cols, width);
  f.lifted_cols = f.padded_cols / width * 4 * (n - 1);
  f.nnz = a.nnz();
  const int64_t win = f.windows_per_row(), words = f.meta_words_per_row();
  f.values.assign(static_cast<size_t>(f.rows * win * 2), 0.0f);
  f.meta.assign(static_cast<size_t>(f.rows * words), 0u);
  std::vector<int> used(static_cast<size_t>(n - 1));         // nonzeros per window of a group
  std::vector<int> pos(static_cast<size_t>(2 * (n - 1)));    // their positions p
  std::vector<float> val(static_cast<size_t>(2 * (n - 1)));  // and values
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t b = a.row_ptr[static_cast<size_t>(r)], e = a.row_ptr[static_cast<size_t>(r) + 1];
    for (int64_t i = b; i < e;) {
      const int64_t g = a.col_idx[static_cast<size_t>(i)] / width;
      std::fill(used.begin(), used.end(), 0);
      int64_t j = i;
      // Φ: first fit in column order (see the header for why it never fails here).
      for (; j < e && a.col_idx[static_cast<size_t>(j)] / width == g; ++j) {
        const int local = static_cast<int>(a.col_idx[static_cast<size_t>(j)] % width);
        int w = std::max(0, local / 2 - 1);
        if (w > n - 2) w = n - 2;
        while (w <= n - 2 && w <= local / 2 && used[static_cast<size_t>(w)] == 2) ++w;
        SG_ASSERT(
            w <= n - 2 && local >= 2 * w && local <= 2 * w + 3 && used[static_cast<size_t>(w)] < 2,
            "sliding-window assignment failed on a (2N-2):2N group");
        const size_t slot = static_cast<size_t>(2 * w + used[static_cast<size_t>(w)]++);
        pos[slot] = local - 2 * w;
        val[slot] = a.values[static_cast<size_t>(j)];
      }
      // 2:4 compression of the group's windows.
      for (int w = 0; w <= n - 2; ++w) {
        int p[2] = {0, 0};
        float v[2] = {0.0f, 0.0f};
        const int u = used[static_cast<size_t>(w)];
        for (int s = 0; s < u; ++s) {
          p[s] = pos[static_cast<size_t>(2 * w + s)];
          v[s] = val[static_cast<size_t>(2 * w + s)];
        }
        if (u == 1) {  // a zero at the lowest other position, kept in increasing order
          const int other = p[0] == 0 ? 1 : 0;
          if (other < p[0]) {
            p[1] = p[0], v[1] = v[0];
            p[0] = other, v[0] = 0.0f;
          } else {
            p[1] = other;
          }
        } else if (u == 0) {
          p[0] = 0, p[1] = 1;
        }
        const int64_t window = g * (n - 1) + w;
        const size_t vi = static_cast<size_t>((r * win + window) * 2);
        f.values[vi] = v[0];
        f.values[vi + 1] = v[1];
        const uint32_t code = static_cast<uint32_t>(p[0] | (p[1] << 2));
        f.meta[static_cast<size_t>(r * words + window / 8)] |= code << (4 * (window % 8));
      }
      i = j;
    }
    // Windows of groups without nonzeros keep the zero values; their code must still name two
    // distinct increasing positions (0 and 1): 0b0100.
    for (int64_t window = 0; window < win; ++window) {
      uint32_t& word = f.meta[static_cast<size_t>(r * words + window / 8)];
      const uint32_t code = (word >> (4 * (window % 8))) & 0xfu;
      if (code == 0) word |= 0x4u << (4 * (window % 8));
    }
  }
  return f;
}

std::vector<float> unpack_slide_lifted(const SlideFormat& f) {
  std::vector<float> w(static_cast<size_t>(f.rows * f.lifted_cols), 0.0f);
  const int64_t win = f.windows_per_row(), words = f.meta_words_per_row();
  for (int64_t r = 0; r < f.rows; ++r)
    for (int64_t window = 0; window < win; ++window) {
      const uint32_t code =
          (f.meta[static_cast<size_t>(r * words + window / 8)] >> (4 * (window % 8))) & 0xfu;
      const int p0 = static_cast<int>(code & 3u), p1 = static_cast<int>(code >> 2);
      const size_t vi = static_cast<size_t>((r * win + window) * 2);
      const size_t base = static_cast<size_t>(r * f.lifted_cols + window * 4);
      w[base + static_cast<size_t>(p0)] += f.values[vi];
      w[base + static_cast<size_t>(p1)] += f.values[vi + 1];
    }
  return w;
}

std::vector<double> lift_activations(const SlideFormat& f, std::span<const double> x,
                                     int64_t columns) {
  SG_ASSERT(static_cast<int64_t>(x.size()) == f.cols * columns, "x is not K x columns");
  const int n = f.n;
  const int64_t width = 2 * int64_t{n};
  std::vector<double> out(static_cast<size_t>(f.lifted_cols * columns), 0.0);
  for (int64_t lc = 0; lc < f.lifted_cols; ++lc) {
    const int64_t g = lc / (4 * (n - 1)), rest = lc % (4 * (n - 1));
    const int64_t w = rest / 4, p = rest % 4;
    const int64_t c = g * width + 2 * w + p;  // the original column this lifted column copies
    if (c >= f.cols) continue;                // padding
    for (int64_t j = 0; j < columns; ++j)
      out[static_cast<size_t>(lc * columns + j)] = x[static_cast<size_t>(c * columns + j)];
  }
  return out;
}

}  // namespace sparsegen
