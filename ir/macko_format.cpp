#include "ir/macko_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "ir/diagnostics.h"
#include "ir/int_math.h"
#include "ir/parallel.h"

namespace sparsegen {

namespace {

void check_bits(int bits) {
  if (!valid_macko_delta_bits(bits))
    throw UserError(fmt::format("MACKO: delta bits {} must be 2, 4 or 8", bits));
}

// Padding slots needed before an entry that follows `prev` (-1 at a row start) at column `col`.
int64_t pads_before(int64_t prev, int64_t col, int bits) {
  // Each padding slot skips max_delta = 2^bits - 1 zeros and occupies one column itself: k slots
  // leave zeros - k·2^bits zeros, which must be <= max_delta, so k = zeros >> bits (0 when the
  // gap fits). Branch-free, so the loops below vectorize.
  const int64_t zeros = std::max<int64_t>(col - prev - 1, 0);
  return zeros >> bits;
}

// Padding slots of rows [r0, r1).
int64_t padding_of_rows(const CsrMatrix& a, int64_t r0, int64_t r1, int bits) {
  const int32_t* col = a.col_idx.data();
  int64_t padding = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t b = a.row_ptr[static_cast<size_t>(r)], e = a.row_ptr[static_cast<size_t>(r + 1)];
    if (b == e) continue;
    padding += pads_before(-1, col[b], bits);
    for (int64_t k = b + 1; k < e; ++k) padding += pads_before(col[k - 1], col[k], bits);
  }
  return padding;
}

// Row ranges for a parallel pass over the nonzeros of `a` (ir/parallel.h).
std::vector<int64_t> row_chunks(const CsrMatrix& a) {
  return balanced_split(a.row_ptr, parallel_chunks(a.nnz() + a.rows));
}

// ORs bit fields into a packed array from one chunk of slots [first, ...) while other chunks fill
// their own slots concurrently. The word holding the chunk's first slot may also hold the previous
// chunk's last slots, so the chunk keeps its bits for that word in `head` (merged after the
// parallel pass by merge()) and writes every later word, which it owns, directly.
template <class Word>
class ChunkBits {
 public:
  ChunkBits(Word* words, int64_t first_bit) : words_(words), head_index_(first_bit / kBits) {}
  void set(int64_t bit, uint64_t value) {  // value << (bit % kBits) must fit the word
    const int64_t w = bit / kBits;
    const Word v = static_cast<Word>(value << (bit % kBits));
    if (w == head_index_)
      head_ |= v;
    else
      words_[w] |= v;
  }
  void merge() const {
    if (head_ != 0) words_[head_index_] |= head_;
  }

 private:
  static constexpr int64_t kBits = 8 * sizeof(Word);
  Word* words_;
  int64_t head_index_;
  Word head_ = 0;
};

}  // namespace

bool valid_macko_delta_bits(int bits) {
  return bits == 2 || bits == 4 || bits == 8;
}

int MackoFormat::delta(int64_t s) const {
  const int64_t bit = s * delta_bits;
  return (deltas[static_cast<size_t>(bit / 8)] >> (bit % 8)) & ((1 << delta_bits) - 1);
}

int64_t MackoStats::bytes() const {
  return slots * 2 + slots * delta_bits / 8 + (rows + 1) * 4;
}

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
  const std::vector<int64_t> bounds = row_chunks(a);
  std::vector<int64_t> padding(bounds.size() - 1, 0);
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    padding[static_cast<size_t>(c)] = padding_of_rows(a, r0, r1, delta_bits);
  });
  st.padding = std::accumulate(padding.begin(), padding.end(), int64_t{0});
  st.slots = round_up(st.nnz + st.padding, kMackoVectorSlots);
  return st;
}

MackoStats macko_stats(const MackoFormat& f) {
  MackoStats st;
  st.rows = f.rows;
  st.cols = f.cols;
  st.delta_bits = f.delta_bits;
  st.nnz = f.nnz;
  st.padding = f.padding;
  st.slots = f.slots();
  return st;
}

// Two parallel passes over row ranges: slots per row (entries + padding), whose prefix sums are
// row_ptr, then each range fills its own slots. Only the first delta byte and padding word of a
// range can be shared with the previous range (ChunkBits).
MackoFormat pack_macko(const CsrMatrix& a, int delta_bits) {
  check_bits(delta_bits);
  a.check_canonical();
  MackoFormat f;
  f.rows = a.rows;
  f.cols = a.cols;
  f.delta_bits = delta_bits;
  f.nnz = a.nnz();
  const std::vector<int64_t> bounds = row_chunks(a);
  f.row_ptr.assign(static_cast<size_t>(a.rows + 1), 0);
  run_chunks(bounds, [&](int, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      f.row_ptr[static_cast<size_t>(r + 1)] =
          a.row_length(r) + padding_of_rows(a, r, r + 1, delta_bits);
  });
  std::partial_sum(f.row_ptr.begin(), f.row_ptr.end(), f.row_ptr.begin());
  f.padding = f.row_ptr.back() - f.nnz;
  const int64_t slots = round_up(f.used_slots(), kMackoVectorSlots);
  // Unused slots keep value 0 and delta 0; padding slots keep value 0.
  resize_prefaulted(f.values, static_cast<size_t>(slots));
  resize_prefaulted(f.deltas, static_cast<size_t>(slots * delta_bits / 8));
  resize_prefaulted(f.is_padding, static_cast<size_t>((slots + 63) / 64));
  const int64_t max_delta = (int64_t{1} << delta_bits) - 1;
  std::vector<ChunkBits<uint8_t>> deltas;
  std::vector<ChunkBits<uint64_t>> is_padding;
  for (size_t c = 0; c + 1 < bounds.size(); ++c) {
    const int64_t first = f.row_ptr[static_cast<size_t>(bounds[c])];
    deltas.emplace_back(f.deltas.data(), first * delta_bits);
    is_padding.emplace_back(f.is_padding.data(), first);
  }
  run_chunks(bounds, [&](int c, int64_t r0, int64_t r1) {
    ChunkBits<uint8_t>& d = deltas[static_cast<size_t>(c)];
    ChunkBits<uint64_t>& pad = is_padding[static_cast<size_t>(c)];
    int64_t s = f.row_ptr[static_cast<size_t>(r0)];
    for (int64_t r = r0; r < r1; ++r) {
      int64_t prev = -1;
      for (int64_t e = a.row_ptr[static_cast<size_t>(r)]; e < a.row_ptr[static_cast<size_t>(r + 1)];
           ++e) {
        const int64_t col = a.col_idx[static_cast<size_t>(e)];
        while (col - prev - 1 > max_delta) {  // padding slot at prev + 2^b
          d.set(s * delta_bits, static_cast<uint64_t>(max_delta));
          pad.set(s, 1);
          prev += max_delta + 1;
          ++s;
        }
        d.set(s * delta_bits, static_cast<uint64_t>(col - prev - 1));
        f.values[static_cast<size_t>(s)] = a.values[static_cast<size_t>(e)];
        prev = col;
        ++s;
      }
      SG_ASSERT(s == f.row_ptr[static_cast<size_t>(r + 1)],
                "MACKO packer: slots of a row disagree with the counting pass");
    }
  });
  for (const auto& d : deltas) d.merge();
  for (const auto& p : is_padding) p.merge();
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
