#include "ir/gen/pruning.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include <fmt/format.h>

#include "ir/parallel.h"
#include "ir/random.h"

namespace sparsegen {

namespace {

// ---------------------------------------------------------------------------------------------
// Random streams. SplitMix64 seeds xoshiro256**; both are fixed algorithms, so a seed gives the
// same matrix with any compiler and standard library.

class Xoshiro256 {
 public:
  // `stream` separates independent streams drawn from one user seed (rows, scales, selection).
  Xoshiro256(uint64_t seed, uint64_t stream) {
    uint64_t sm = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    for (auto& w : s_) w = splitmix64(sm);
  }
  uint64_t next() {
    const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Two independent standard normals (Box-Muller in float: the radius from a 53-bit u1 in
  // (0, 1], so the log is finite and the tails reach 8.6 sigma; the angle needs no more than
  // float precision).
  std::pair<float, float> normal2() {
    const double u1 = 1.0 - uniform();
    const auto u2 = static_cast<float>(next() >> 40) * 0x1.0p-24f;
    const auto r = static_cast<float>(std::sqrt(-2.0 * std::log(u1)));
    const float t = 2.0f * std::numbers::pi_v<float> * u2;
    return {r * std::cos(t), r * std::sin(t)};
  }

 private:
  std::array<uint64_t, 4> s_;
};

// Stream ids (arbitrary distinct constants).
constexpr uint64_t kRowScaleStream = 0x524f575343414c45ULL;  // "ROWSCALE"
constexpr uint64_t kColScaleStream = 0x434f4c5343414c45ULL;  // "COLSCALE"
constexpr uint64_t kRowStreamBase = 0x100000000ULL;          // + row index
constexpr uint64_t kSelectStream = 0x53454c4543543030ULL;    // "SELECT00"

// Log-normal scale sigmas for make_llm_weight. Chosen so that 50% per-tensor magnitude pruning
// leaves row densities spread the way that motivated per-output pruning (Wanda) over per-tensor
// thresholds: some output rows keep far more weights than others. Measured on 4096x4096, seed 0:
// row-density coefficient of variation 0.27, 1st / 50th / 99th percentile 0.16 / 0.51 / 0.77
// (28672x7168: cv 0.27, row lengths 142..6191 of 7168). The column sigma is smaller because every
// row sees all column scales (it mixes within a row) and mainly widens the magnitude tail. These
// are a plausible stand-in, not a fit to one specific checkpoint; `sparsegen prune` takes the
// real weights.
constexpr double kRowSigma = 0.35;
constexpr double kColSigma = 0.25;
// Overall scale: the usual 0.02 init std of LLM linear layers, so values look like real weights.
constexpr double kWeightStd = 0.02;

// |w| as ordered bits: for non-negative floats (including +inf) the IEEE bit pattern is monotone.
inline uint32_t mag_bits(float v) {
  return std::bit_cast<uint32_t>(v) & 0x7fffffffu;
}
constexpr uint32_t kInfBits = 0x7f800000u;

void check_no_nan(const DenseMatrix& w) {
  const float* d = w.data.data();
  const size_t n = w.data.size();
  for (size_t i = 0; i < n; ++i) {
    if (mag_bits(d[i]) > kInfBits) {
      const int64_t r = static_cast<int64_t>(i) / w.cols, c = static_cast<int64_t>(i) % w.cols;
      throw UserError(SourceLoc{w.source},
                      fmt::format("weight at (row {}, col {}) (0-based) is NaN; pruning ranks "
                                  "weights by magnitude, which NaN does not have",
                                  r, c));
    }
  }
}

int64_t round_keep(double density, int64_t total) {
  auto k = static_cast<int64_t>(std::llround(density * static_cast<double>(total)));
  return std::clamp<int64_t>(k, 0, total);
}

// The threshold that keeps exactly `keep` of the values with the largest magnitude: values with
// bits > threshold are kept, plus the first `ties` values (in order) whose bits == threshold.
struct Threshold {
  uint32_t bits = 0;
  int64_t ties = 0;
};

// Whole-tensor selection by a two-level radix histogram on the magnitude bits: three streaming
// passes and 512 KiB of counters instead of a copy of the tensor for nth_element.
Threshold radix_threshold(const float* d, size_t n, int64_t keep) {
  SG_ASSERT(keep > 0 && static_cast<size_t>(keep) <= n, "radix_threshold: keep out of range");
  std::vector<int64_t> hist(65536, 0);
  for (size_t i = 0; i < n; ++i) ++hist[mag_bits(d[i]) >> 16];
  int64_t above = 0;
  uint32_t hi = 65535;
  while (above + hist[hi] < keep) above += hist[hi--];
  std::fill(hist.begin(), hist.end(), 0);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t b = mag_bits(d[i]);
    if ((b >> 16) == hi) ++hist[b & 0xffffu];
  }
  uint32_t lo = 65535;
  while (above + hist[lo] < keep) above += hist[lo--];
  return Threshold{(hi << 16) | lo, keep - above};
}

// Per-row selection with nth_element on a scratch copy of the row's magnitude bits.
Threshold row_threshold(const float* d, int64_t n, int64_t keep, std::vector<uint32_t>& scratch) {
  scratch.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) scratch[i] = mag_bits(d[i]);
  // The keep-th largest value.
  auto kth = scratch.begin() + (keep - 1);
  std::nth_element(scratch.begin(), kth, scratch.end(), std::greater<>());
  const uint32_t t = *kth;
  int64_t greater = 0;
  for (int64_t i = 0; i < n; ++i) greater += mag_bits(d[i]) > t;
  return Threshold{t, keep - greater};
}

void init_csr(CsrMatrix& out, const DenseMatrix& w, int64_t nnz) {
  out.rows = w.rows;
  out.cols = w.cols;
  out.field = ValueField::Real;
  out.source = w.source;
  out.row_ptr.assign(static_cast<size_t>(w.rows) + 1, 0);
  // +1: the spare slot of the cursor writers (size_for_cursor).
  out.col_idx.reserve(static_cast<size_t>(nnz) + 1);
  out.values.reserve(static_cast<size_t>(nnz) + 1);
}

inline void push(CsrMatrix& out, int64_t c, float v) {
  out.col_idx.push_back(static_cast<int32_t>(c));
  out.values.push_back(v);
}

// Appends the entries of `row` that pass the threshold. Branch-free: the keep decision is close
// to a coin flip at moderate sparsity, so a branch would mispredict half the time. Each candidate
// is written at the cursor, which only advances when it is kept; `out` has one spare slot.
int64_t keep_by_threshold(CsrMatrix& out, int64_t pos, const float* row, int64_t cols,
                          Threshold& t) {
  int32_t* col = out.col_idx.data();
  float* val = out.values.data();
  for (int64_t c = 0; c < cols; ++c) {
    const uint32_t b = mag_bits(row[c]);
    const bool tie = b == t.bits && t.ties > 0;
    const bool keep = b > t.bits || tie;
    col[pos] = static_cast<int32_t>(c);
    val[pos] = row[c];
    pos += keep;
    t.ties -= tie;
  }
  return pos;
}

// Sizes col_idx / values for exactly nnz entries plus the spare slot keep_by_threshold writes.
void size_for_cursor(CsrMatrix& out, int64_t nnz) {
  out.col_idx.resize(static_cast<size_t>(nnz) + 1);
  out.values.resize(static_cast<size_t>(nnz) + 1);
}

void drop_spare_slot(CsrMatrix& out) {
  out.col_idx.pop_back();
  out.values.pop_back();
}

void prune_magnitude(const DenseMatrix& w, int64_t keep, CsrMatrix& out) {
  Threshold t{};
  if (keep == 0) {
    t.bits = UINT32_MAX;  // nothing is greater; no ties kept
  } else {
    t = radix_threshold(w.data.data(), w.data.size(), keep);
  }
  size_for_cursor(out, keep);
  int64_t pos = 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    pos = keep_by_threshold(out, pos, w.data.data() + r * w.cols, w.cols, t);
    out.row_ptr[r + 1] = pos;
  }
  drop_spare_slot(out);
}

void prune_row_magnitude(const DenseMatrix& w, int64_t keep_per_row, CsrMatrix& out) {
  std::vector<uint32_t> scratch;
  size_for_cursor(out, keep_per_row * w.rows);
  int64_t pos = 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* row = w.data.data() + r * w.cols;
    if (keep_per_row > 0) {
      Threshold t = row_threshold(row, w.cols, keep_per_row, scratch);
      pos = keep_by_threshold(out, pos, row, w.cols, t);
    }
    out.row_ptr[r + 1] = pos;
  }
  drop_spare_slot(out);
}

// Selection sampling (Knuth's Algorithm S): visits every position once and keeps it with
// probability (still needed) / (still left), which yields exactly `keep` positions, every subset
// equally likely.
void prune_random(const DenseMatrix& w, int64_t keep, uint64_t seed, CsrMatrix& out) {
  Xoshiro256 rng(seed, kSelectStream);
  const int64_t total = w.rows * w.cols;
  int64_t needed = keep, visited = 0;
  size_for_cursor(out, keep);
  int32_t* col = out.col_idx.data();
  float* val = out.values.data();
  int64_t pos = 0;
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* row = w.data.data() + r * w.cols;
    for (int64_t c = 0; c < w.cols && needed > 0; ++c, ++visited) {
      const bool take =
          rng.uniform() * static_cast<double>(total - visited) < static_cast<double>(needed);
      col[pos] = static_cast<int32_t>(c);  // cursor write, as in keep_by_threshold
      val[pos] = row[c];
      pos += take;
      needed -= take;
    }
    visited = (r + 1) * w.cols;  // rows cut short once `needed` hit zero
    out.row_ptr[r + 1] = pos;
  }
  drop_spare_slot(out);
}

// Keeps the n largest |w| of each aligned group of m columns (the trailing partial group keeps
// min(n, width)). An entry is kept when fewer than n entries of its group beat it (larger
// magnitude, or equal and to the left), so output comes out in column order without sorting.
void prune_nm(const DenseMatrix& w, int n, int m, int64_t nnz, CsrMatrix& out) {
  size_for_cursor(out, nnz);
  int64_t pos = 0;
  auto put = [&](int64_t c, float v) {
    out.col_idx[pos] = static_cast<int32_t>(c);
    out.values[pos++] = v;
  };
  std::vector<uint32_t> bits(static_cast<size_t>(m));
  std::vector<int32_t> order(static_cast<size_t>(m));
  std::vector<uint8_t> kept(static_cast<size_t>(m));
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* row = w.data.data() + r * w.cols;
    for (int64_t g = 0; g < w.cols; g += m) {
      const int width = static_cast<int>(std::min<int64_t>(m, w.cols - g));
      if (n >= width) {  // the whole group stays
        for (int j = 0; j < width; ++j) put(g + j, row[g + j]);
        continue;
      }
      for (int j = 0; j < width; ++j) bits[j] = mag_bits(row[g + j]);
      if (width <= 16) {
        for (int j = 0; j < width; ++j) {
          int beaten_by = 0;
          for (int i = 0; i < width; ++i)
            beaten_by += bits[i] > bits[j] || (bits[i] == bits[j] && i < j);
          // Cursor write (see keep_by_threshold).
          out.col_idx[pos] = static_cast<int32_t>(g + j);
          out.values[pos] = row[g + j];
          pos += beaten_by < n;
        }
      } else {
        for (int j = 0; j < width; ++j) order[j] = j;
        std::nth_element(order.begin(), order.begin() + n, order.begin() + width,
                         [&](int32_t a, int32_t b) {
                           return bits[a] > bits[b] || (bits[a] == bits[b] && a < b);
                         });
        std::fill(kept.begin(), kept.begin() + width, uint8_t{0});
        for (int j = 0; j < n; ++j) kept[order[j]] = 1;
        for (int j = 0; j < width; ++j)
          if (kept[j]) put(g + j, row[g + j]);
      }
    }
    out.row_ptr[r + 1] = pos;
  }
  drop_spare_slot(out);
}

void check_block_shape(int64_t rows, int64_t cols, int block) {
  if (rows % block != 0 || cols % block != 0)
    throw UserError(
        fmt::format("--block {}: the weight's shape {}x{} is not a multiple of {} in "
                    "both dimensions",
                    block, rows, cols, block));
}

void prune_block(const DenseMatrix& w, int block, int64_t keep_blocks, CsrMatrix& out) {
  const int64_t bc = w.cols / block, br = w.rows / block;
  std::vector<double> score(static_cast<size_t>(br * bc), 0.0);
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* row = w.data.data() + r * w.cols;
    double* s = score.data() + (r / block) * bc;
    for (int64_t c = 0; c < w.cols; ++c) s[c / block] += double(row[c]) * double(row[c]);
  }
  // Rank blocks by score (ties: lower block index), keep the top keep_blocks.
  std::vector<int64_t> order(score.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::vector<uint8_t> kept(score.size(), 0);
  if (keep_blocks > 0) {
    auto better = [&](int64_t a, int64_t b) {
      return score[a] > score[b] || (score[a] == score[b] && a < b);
    };
    std::nth_element(order.begin(), order.begin() + (keep_blocks - 1), order.end(), better);
    for (int64_t i = 0; i < keep_blocks; ++i) kept[order[i]] = 1;
  }
  for (int64_t r = 0; r < w.rows; ++r) {
    const float* row = w.data.data() + r * w.cols;
    const uint8_t* k = kept.data() + (r / block) * bc;
    for (int64_t b = 0; b < bc; ++b) {
      if (!k[b]) continue;
      for (int64_t c = b * block; c < (b + 1) * block; ++c) push(out, c, row[c]);
    }
    out.row_ptr[r + 1] = out.nnz();
  }
}

}  // namespace

std::string_view to_string(PruneMethod m) {
  switch (m) {
    case PruneMethod::Random:
      return "random";
    case PruneMethod::Magnitude:
      return "magnitude";
    case PruneMethod::RowMagnitude:
      return "row-magnitude";
    case PruneMethod::NM:
      return "nm";
    case PruneMethod::Block:
      return "block";
  }
  return "unknown";
}

namespace {
constexpr std::array kAllMethods = {PruneMethod::Random, PruneMethod::Magnitude,
                                    PruneMethod::RowMagnitude, PruneMethod::NM, PruneMethod::Block};
}  // namespace

std::optional<PruneMethod> parse_prune_method(std::string_view name) {
  for (PruneMethod m : kAllMethods)
    if (to_string(m) == name) return m;
  return std::nullopt;
}

std::string prune_method_names() {
  std::string out;
  for (PruneMethod m : kAllMethods) {
    if (!out.empty()) out += ", ";
    out += to_string(m);
  }
  return out;
}

std::pair<int, int> parse_nm(std::string_view text, std::string_view flag) {
  auto fail = [&](std::string_view why) -> std::pair<int, int> {
    throw UserError(fmt::format("{} {}: {}", flag, text, why));
  };
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return fail("expected N:M, e.g. 2:4 or 6:8");
  auto parse_int = [](std::string_view s, int& v) {
    const char* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, v);
    return ec == std::errc() && p == end && !s.empty();
  };
  int n = 0, m = 0;
  if (!parse_int(text.substr(0, colon), n) || !parse_int(text.substr(colon + 1), m))
    return fail("expected two integers N:M, e.g. 2:4 or 6:8");
  if (n <= 0 || m <= 0 || n > m) return fail("expected 0 < N <= M");
  if (m > 65536) return fail("expected M <= 65536");
  return {n, m};
}

void validate(const PruneSpec& spec) {
  if (!(spec.sparsity >= 0.0 && spec.sparsity < 1.0))  // also rejects NaN
    throw UserError(fmt::format("--sparsity {}: expected a value in [0, 1)", spec.sparsity));
  if (spec.method == PruneMethod::NM &&
      (spec.n <= 0 || spec.m <= 0 || spec.n > spec.m || spec.m > 65536))
    throw UserError(fmt::format("--nm {}:{}: expected 0 < N <= M <= 65536", spec.n, spec.m));
  if (spec.method == PruneMethod::Block && (spec.block < 1 || spec.block > 65536))
    throw UserError(fmt::format("--block {}: expected a block edge in [1, 65536]", spec.block));
}

int64_t pruned_nnz(int64_t rows, int64_t cols, const PruneSpec& spec) {
  validate(spec);
  const double density = 1.0 - spec.sparsity;
  switch (spec.method) {
    case PruneMethod::Random:
    case PruneMethod::Magnitude:
      return round_keep(density, rows * cols);
    case PruneMethod::RowMagnitude:
      return rows * round_keep(density, cols);
    case PruneMethod::NM: {
      const int64_t full = cols / spec.m, rem = cols % spec.m;
      return rows * (full * spec.n + std::min<int64_t>(spec.n, rem));
    }
    case PruneMethod::Block: {
      check_block_shape(rows, cols, spec.block);
      const int64_t b = spec.block;
      return round_keep(density, (rows / b) * (cols / b)) * b * b;
    }
  }
  return 0;
}

DenseMatrix make_llm_weight(int64_t rows, int64_t cols, uint64_t seed) {
  if (rows < 1 || cols < 1 || rows > kMaxDimension || cols > kMaxDimension)
    throw UserError(
        fmt::format("--shape {}x{}: expected both dimensions in [1, 2^31-1]", rows, cols));
  if (rows > kMaxGeneratedElements / cols)
    throw UserError(
        fmt::format("--shape {}x{}: {} elements exceed the generator's limit of 2^32 "
                    "(16 GiB of fp32)",
                    rows, cols, static_cast<double>(rows) * static_cast<double>(cols)));
  DenseMatrix w;
  w.rows = rows;
  w.cols = cols;
  w.source = fmt::format("llm_weight({}x{}, seed {})", rows, cols, seed);
  // Scales first, from their own streams, so they do not depend on the shape of the other side.
  std::vector<double> row_scale(static_cast<size_t>(rows)), col_scale(static_cast<size_t>(cols));
  auto fill_lognormal = [seed](std::vector<double>& out, uint64_t stream, double sigma) {
    Xoshiro256 rng(seed, stream);
    for (size_t i = 0; i < out.size(); i += 2) {
      auto [z0, z1] = rng.normal2();
      out[i] = std::exp(sigma * z0);
      if (i + 1 < out.size()) out[i + 1] = std::exp(sigma * z1);
    }
  };
  fill_lognormal(row_scale, kRowScaleStream, kRowSigma);
  fill_lognormal(col_scale, kColScaleStream, kColSigma);
  w.data.resize(static_cast<size_t>(rows * cols));
  // Rows are independent (one stream each), so threads change the speed, not the result.
  // Nothing in here allocates or throws (it runs on worker threads).
  auto fill_rows = [&](int64_t r0, int64_t r1) noexcept {
    for (int64_t r = r0; r < r1; ++r) {
      Xoshiro256 rng(seed, kRowStreamBase + static_cast<uint64_t>(r));
      const double a = row_scale[r] * kWeightStd;
      float* out = w.data.data() + r * cols;
      // The scale first (row scale * column scale * std), then times the normal draw.
      for (int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(a * col_scale[c]);
      for (int64_t c = 0; c < cols; c += 2) {
        auto [z0, z1] = rng.normal2();
        out[c] *= z0;
        if (c + 1 < cols) out[c + 1] *= z1;
      }
    }
  };
  parallel_for(rows, rows * cols, fill_rows);
  return w;
}

CsrMatrix prune(const DenseMatrix& w, const PruneSpec& spec) {
  validate(spec);
  SG_ASSERT(w.rows >= 0 && w.cols >= 0 && w.data.size() == static_cast<size_t>(w.rows * w.cols),
            "prune: dense data does not match its shape");
  if (w.rows > kMaxDimension || w.cols > kMaxDimension)
    throw UserError(SourceLoc{w.source}, fmt::format("shape {}x{}: dimensions above 2^31-1 are "
                                                     "not supported",
                                                     w.rows, w.cols));
  const int64_t nnz = pruned_nnz(w.rows, w.cols, spec);
  check_no_nan(w);
  CsrMatrix out;
  init_csr(out, w, nnz);
  const double density = 1.0 - spec.sparsity;
  switch (spec.method) {
    case PruneMethod::Random:
      prune_random(w, nnz, spec.seed, out);
      break;
    case PruneMethod::Magnitude:
      prune_magnitude(w, nnz, out);
      break;
    case PruneMethod::RowMagnitude:
      prune_row_magnitude(w, round_keep(density, w.cols), out);
      break;
    case PruneMethod::NM:
      prune_nm(w, spec.n, spec.m, nnz, out);
      break;
    case PruneMethod::Block: {
      const int64_t b = spec.block;
      prune_block(w, spec.block, round_keep(density, (w.rows / b) * (w.cols / b)), out);
      break;
    }
  }
  SG_ASSERT(out.nnz() == nnz, fmt::format("prune kept {} entries, expected {}", out.nnz(), nnz));
  return out;
}

int64_t count_explicit_zeros(const CsrMatrix& m) {
  int64_t zeros = 0;
  for (float v : m.values) zeros += (v == 0.0f);
  return zeros;
}

}  // namespace sparsegen
