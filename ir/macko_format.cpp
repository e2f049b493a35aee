#include "ir/macko_format.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"

namespace sparsegen {

namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

void check_bits(int bits) {
  if (!valid_macko_delta_bits(bits))
    throw UserError(fmt::format("MACKO: delta bits {} must be 2, 4 or 8", bits));
}

// Padding slots needed before an entry that follows `prev` (-1 at a row start) at column `col`.
int64_t pads_before(int64_t prev, int64_t col, int bits) {
  const int64_t zeros = col - prev - 1;
  const int64_t max_delta = (int64_t{1} << bits) - 1;
  // Each padding slot skips max_delta zeros and occupies one column itself: k slots leave
  // zeros - k·(max_delta + 1) zeros, which must be <= max_delta.
  return zeros <= max_delta ? 0 : zeros / (max_delta + 1);
}

void set_delta(std::vector<uint8_t>& bytes, int64_t s, int bits, int delta) {
  const int64_t bit = s * bits;
  bytes[static_cast<size_t>(bit / 8)] |= static_cast<uint8_t>(delta << (bit % 8));
}

}  // namespace

bool valid_macko_delta_bits(int bits) { return bits == 2 || bits == 4 || bits == 8; }

int MackoFormat::delta(int64_t s) const {
  const int64_t bit = s * delta_bits;
  return (deltas[static_cast<size_t>(bit / 8)] >> (bit % 8)) & ((1 << delta_bits) - 1);
}

int64_t MackoStats::bytes() const { return slots * 2 + slots * delta_bits / 8 + (rows + 1) * 4; }

double MackoStats::effective_density() const {
  const double dense = double(rows) * double(cols) * 2.0;
  return dense > 0 ? double(bytes()) / dense : 0.0;
}

MackoStats macko_stats(const CsrMatrix& a, int delta_bits) {
  check_bits(delta_bits);
  MackoStats st;
  st.rows = a.rows;
  st.cols = a.cols;
  st.delta_bits = delta_bits;
  st.nnz = a.nnz();
  for (int64_t r = 0; r < a.rows; ++r) {
    int64_t prev = -1;
    for (int64_t e = a.row_ptr[static_cast<size_t>(r)]; e < a.row_ptr[static_cast<size_t>(r + 1)];
         ++e) {
      const int64_t col = a.col_idx[static_cast<size_t>(e)];
      st.padding += pads_before(prev, col, delta_bits);
      prev = col;
    }
  }
  st.slots = round_up(st.nnz + st.padding, kMackoVectorSlots);
  return st;
}

MackoFormat pack_macko(const CsrMatrix& a, int delta_bits) {
  check_bits(delta_bits);
  a.check_canonical();
  const MackoStats st = macko_stats(a, delta_bits);
  MackoFormat f;
  f.rows = a.rows;
  f.cols = a.cols;
  f.delta_bits = delta_bits;
  f.nnz = st.nnz;
  f.padding = st.padding;
  f.row_ptr.assign(static_cast<size_t>(a.rows + 1), 0);
  f.values.assign(static_cast<size_t>(st.slots), 0.0f);
  f.deltas.assign(static_cast<size_t>(st.slots * delta_bits / 8), 0);
  f.is_padding.assign(static_cast<size_t>((st.slots + 63) / 64), 0);
  const int64_t max_delta = (int64_t{1} << delta_bits) - 1;
  int64_t s = 0;
  for (int64_t r = 0; r < a.rows; ++r) {
    f.row_ptr[static_cast<size_t>(r)] = s;
    int64_t prev = -1;
    for (int64_t e = a.row_ptr[static_cast<size_t>(r)]; e < a.row_ptr[static_cast<size_t>(r + 1)];
         ++e) {
      const int64_t col = a.col_idx[static_cast<size_t>(e)];
      while (col - prev - 1 > max_delta) {  // padding slot at prev + 2^b
        set_delta(f.deltas, s, delta_bits, static_cast<int>(max_delta));
        f.is_padding[static_cast<size_t>(s / 64)] |= uint64_t{1} << (s % 64);
        prev += max_delta + 1;
        ++s;
      }
      set_delta(f.deltas, s, delta_bits, static_cast<int>(col - prev - 1));
      f.values[static_cast<size_t>(s)] = a.values[static_cast<size_t>(e)];
      prev = col;
      ++s;
    }
  }
  f.row_ptr[static_cast<size_t>(a.rows)] = s;
  SG_ASSERT(s == st.nnz + st.padding, "MACKO packer: slot count disagrees with macko_stats");
  return f;
}

CsrMatrix unpack_macko(const MackoFormat& f) {
  CsrMatrix a;
  a.rows = f.rows;
  a.cols = f.cols;
  a.row_ptr.assign(static_cast<size_t>(f.rows + 1), 0);
  a.col_idx.reserve(static_cast<size_t>(f.nnz));
  a.values.reserve(static_cast<size_t>(f.nnz));
  for (int64_t r = 0; r < f.rows; ++r) {
    int64_t col = -1;
    for (int64_t s = f.row_ptr[static_cast<size_t>(r)]; s < f.row_ptr[static_cast<size_t>(r + 1)];
         ++s) {
      col += f.delta(s) + 1;
      if ((f.is_padding[static_cast<size_t>(s / 64)] >> (s % 64)) & 1u) continue;
      a.col_idx.push_back(static_cast<int32_t>(col));
      a.values.push_back(f.values[static_cast<size_t>(s)]);
    }
    a.row_ptr[static_cast<size_t>(r + 1)] = static_cast<int64_t>(a.col_idx.size());
  }
  return a;
}

}  // namespace sparsegen
