#include "ir/gen/rmat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/parallel.h"
#include "ir/random.h"

namespace sparsegen {
namespace {

// A uniform double in [0, 1) from the next value of a SplitMix64 stream.
double uniform(uint64_t& state) {
  return double(splitmix64(state) >> 11) * 0x1.0p-53;
}

// A non-integer value in ±[0.5, 1.5) for entry (row, col): a function of the position and seed.
float entry_value(uint64_t key, uint64_t seed) {
  uint64_t s = key * 0x9E3779B97F4A7C15ULL ^ (seed + 0x5851F42D4C957F2DULL);
  const uint64_t r = splitmix64(s);
  const float mag = 0.5f + static_cast<float>(double(r >> 11) * 0x1.0p-53);
  return (r & 1) != 0 ? -mag : mag;
}

}  // namespace

void validate(const RmatSpec& s) {
  if (s.scale < 1 || s.scale > 30)
    throw UserError(fmt::format("--scale {}: expected 1 … 30 (2^scale rows)", s.scale));
  if (s.edge_factor < 1 || s.edge_factor > 1024)
    throw UserError(fmt::format("--edge-factor {}: expected 1 … 1024", s.edge_factor));
  const double d = 1.0 - s.a - s.b - s.c;
  for (double p : {s.a, s.b, s.c})
    if (!(p >= 0.0 && p <= 1.0))
      throw UserError(
          fmt::format("--rmat {},{},{}: probabilities must be in [0, 1]", s.a, s.b, s.c));
  if (d < -1e-12)
    throw UserError(fmt::format("--rmat {},{},{}: a + b + c = {} exceeds 1 (d = 1 - a - b - c)",
                                s.a, s.b, s.c, s.a + s.b + s.c));
  if ((int64_t{s.edge_factor} << s.scale) > (int64_t{1} << 32))
    throw UserError(fmt::format("--scale {} --edge-factor {}: {} edges, more than 2^32", s.scale,
                                s.edge_factor, int64_t{s.edge_factor} << s.scale));
}

CsrMatrix make_rmat(const RmatSpec& spec) {
  validate(spec);
  const int S = spec.scale;
  const int64_t n = int64_t{1} << S, edges = int64_t{spec.edge_factor} << S;
  const double ab = spec.a + spec.b, abc = ab + spec.c;
  // The vertex relabelling: Fisher-Yates from the seed.
  std::vector<uint32_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0u);
  if (spec.permute) {
    uint64_t st = spec.seed ^ 0xA0761D6478BD642FULL;
    for (int64_t i = n - 1; i > 0; --i)
      std::swap(perm[static_cast<size_t>(i)],
                perm[static_cast<size_t>(splitmix64(st) % static_cast<uint64_t>(i + 1))]);
  }
  // Edge keys (row << 32 | col), each edge from its own stream: the result does not depend on
  // how the edges are split over threads.
  std::vector<uint64_t> keys(static_cast<size_t>(edges));
  parallel_for(edges, edges * S, [&](int64_t e0, int64_t e1) {
    for (int64_t e = e0; e < e1; ++e) {
      uint64_t st = spec.seed * 0xD1B54A32D192ED03ULL + static_cast<uint64_t>(e);
      uint64_t r = 0, c = 0;
      for (int l = 0; l < S; ++l) {
        const double u = uniform(st);
        const uint64_t down = u >= ab ? 1 : 0, right = (u >= spec.a && u < ab) || u >= abc ? 1 : 0;
        r = r << 1 | down;
        c = c << 1 | right;
      }
      keys[static_cast<size_t>(e)] = uint64_t{perm[r]} << 32 | perm[c];
    }
  });
  // Sort in parallel chunks, then merge; duplicates are adjacent after that.
  const std::vector<int64_t> bounds = even_split(edges, parallel_chunks(edges * 16));
  run_chunks(bounds,
             [&](int, int64_t b, int64_t e) { std::sort(keys.begin() + b, keys.begin() + e); });
  for (size_t w = 1; w + 1 < bounds.size(); w *= 2)
    for (size_t i = 0; i + w + 1 < bounds.size(); i += 2 * w)
      std::inplace_merge(keys.begin() + bounds[i], keys.begin() + bounds[i + w],
                         keys.begin() + bounds[std::min(i + 2 * w, bounds.size() - 1)]);
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());

  CsrMatrix m;
  m.rows = n;
  m.cols = n;
  m.source = fmt::format("rmat-{}-{}", S, spec.edge_factor);
  m.row_ptr.assign(static_cast<size_t>(n) + 1, 0);
  m.col_idx.resize(keys.size());
  m.values.resize(keys.size());
  for (const uint64_t k : keys) ++m.row_ptr[static_cast<size_t>(k >> 32) + 1];
  for (int64_t r = 0; r < n; ++r)
    m.row_ptr[static_cast<size_t>(r) + 1] += m.row_ptr[static_cast<size_t>(r)];
  parallel_for(static_cast<int64_t>(keys.size()), static_cast<int64_t>(keys.size()),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) {
                   const uint64_t k = keys[static_cast<size_t>(i)];
                   m.col_idx[static_cast<size_t>(i)] = static_cast<int32_t>(k & 0xffffffffu);
                   m.values[static_cast<size_t>(i)] = entry_value(k, spec.seed);
                 }
               });
  return m;
}

}  // namespace sparsegen
