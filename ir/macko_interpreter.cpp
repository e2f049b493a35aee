#include "ir/macko_interpreter.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/macko_schedule.h"

namespace sparsegen {

namespace {

[[noreturn]] void broken(const std::string& msg) {
  throw std::logic_error("MACKO interpreter: plan invariant broken: " + msg);
}

// One warp group's walk over slots [s0, s1) (a row, or an item of items mode): steps of aligned
// 8-slot vectors, lane totals, carries in (warp, u, lane) order from `col0` (the column before s0),
// fp32 products into acc[w][l][n]. Returns the slots covered. `kind` and `id` ("row" 5, "item" 17)
// name the walk in an error; the message is formatted only then.
int64_t walk(const Problem& p, const MackoSchedule& s, const MackoFormat& f,
             const std::vector<float>& bq, int64_t s0, int64_t s1, int64_t col0,
             std::vector<float>& acc, std::vector<int64_t>& tot, const char* kind, int64_t id) {
  const int64_t V = kMackoVectorSlots, L = kWarpSize, U = s.unroll, R = s.warps_per_row;
  const int64_t per_step = R * L * U;  // vectors per step of the warps
  if (s0 > s1 || s1 > f.slots()) broken(fmt::format("{} {} slots [{}, {})", kind, id, s0, s1));
  const int64_t v0 = s0 / V, v1 = (s1 + V - 1) / V;
  std::fill(acc.begin(), acc.end(), 0.0f);
  int64_t carry = col0 + 1, covered = 0;
  for (int64_t base = v0; base < v1; base += per_step) {
    // Pass 1: lane totals of (delta + 1) over each lane's valid slots, per (warp, u).
    for (int64_t w = 0; w < R; ++w)
      for (int64_t u = 0; u < U; ++u)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t vec = base + w * L * U + u * L + l;
          int64_t t = 0;
          for (int64_t j = 0; j < V && vec < v1; ++j) {
            const int64_t slot = vec * V + j;
            if (slot >= s0 && slot < s1) t += f.delta(slot) + 1;
          }
          tot[static_cast<size_t>((w * U + u) * L + l)] = t;
        }
    // Pass 2: in (warp, u, lane) order the exclusive prefix is the column carry.
    for (int64_t w = 0; w < R; ++w)
      for (int64_t u = 0; u < U; ++u)
        for (int64_t l = 0; l < L; ++l) {
          const int64_t vec = base + w * L * U + u * L + l;
          int64_t col = carry - 1;
          for (int64_t j = 0; j < V && vec < v1; ++j) {
            const int64_t slot = vec * V + j;
            if (slot < s0 || slot >= s1) continue;
            col += f.delta(slot) + 1;
            if (col < 0 || col >= p.k)
              broken(fmt::format("{} {} slot {} decodes to column {} of {}", kind, id, slot, col,
                                 p.k));
            const float a = round_to(p.dtype, f.values[static_cast<size_t>(slot)]);
            float* ac = &acc[static_cast<size_t>((w * L + l) * p.n)];
            for (int64_t n = 0; n < p.n; ++n)
              ac[n] += a * bq[static_cast<size_t>(p.b_index(col, n))];
            ++covered;
          }
          carry += tot[static_cast<size_t>((w * U + u) * L + l)];
        }
  }
  return covered;
}

// Column n's sum of acc: lanes by a butterfly (as the warp shuffle reduction), then warps in order.
float reduce(const MackoSchedule& s, const std::vector<float>& acc, int64_t n_cols, int64_t n) {
  const int64_t L = kWarpSize;
  float total = 0.0f;
  std::vector<float> v(static_cast<size_t>(L));
  for (int64_t w = 0; w < s.warps_per_row; ++w) {
    for (int64_t l = 0; l < L; ++l)
      v[static_cast<size_t>(l)] = acc[static_cast<size_t>((w * L + l) * n_cols + n)];
    for (int64_t off = L / 2; off > 0; off /= 2)
      for (int64_t l = 0; l < off; ++l)
        v[static_cast<size_t>(l)] += v[static_cast<size_t>(l + off)];
    total += v[0];
  }
  return total;
}

void store(const Problem& p, std::span<float> c, int64_t r, int64_t n, float total, float alpha,
           float beta) {
  float& out = c[static_cast<size_t>(p.c_index(r, n))];
  const float old = beta == 0.0f ? 0.0f : beta * round_to(p.dtype, out);
  out = round_to(p.dtype, alpha * total + old);
}

// Items-mode schedules follow the kernel's work items (macko_items): each item's sum, then per row
// its segments added from the last back, as the block does after its barrier.
void interpret_items(const Problem& p, const MackoSchedule& s, const MackoFormat& f,
                     const std::vector<float>& bq, std::span<float> c, float alpha, float beta) {
  const std::vector<int64_t> items = macko_items(f, s);
  const int64_t ipb = macko_items_per_block(s), I = kMackoItemInts;
  std::vector<float> acc(static_cast<size_t>(kWarpSize * p.n));
  std::vector<int64_t> tot(static_cast<size_t>(s.unroll * kWarpSize));
  std::vector<int> stored(static_cast<size_t>(p.m), 0);
  std::vector<float> part(static_cast<size_t>(ipb * p.n));
  for (int64_t b = 0; b * ipb * I < static_cast<int64_t>(items.size()); ++b) {
    const int64_t* it = items.data() + b * ipb * I;
    const int64_t used = it[(ipb - 1) * I];
    if (used < 0 || used >= ipb) broken(fmt::format("block {} header says {} items", b, used));
    std::vector<int64_t> covered(static_cast<size_t>(used));
    for (int64_t t = 0; t < used; ++t) {
      const int64_t a = it[t * I], e = it[t * I + 1];
      covered[static_cast<size_t>(t)] =
          walk(p, s, f, bq, a, e, it[t * I + 2] + a % 8, acc, tot, "item", b * ipb + t);
      for (int64_t n = 0; n < p.n; ++n)
        part[static_cast<size_t>(t * p.n + n)] = reduce(s, acc, p.n, n);
    }
    // Whole rows (carry < 0, row >= 0) are stored at once; a cut row by its last segment, adding
    // the segments before it back to the first (carry < 0).
    bool any_cut = false;
    for (int64_t t = 0; t < used; ++t) {
      const int64_t r = it[t * I + 3];
      if (r < 0) continue;
      if (r >= p.m) broken(fmt::format("block {} item {} stores row {}", b, t, r));
      int64_t first = t, cov = covered[static_cast<size_t>(t)];
      while (it[first * I + 2] >= 0) {
        if (first == 0 || it[(first - 1) * I + 3] >= 0 || it[(first - 1) * I + 1] != it[first * I])
          broken(fmt::format("row {}: segment {} has no contiguous one before it", r, first));
        --first;
        cov += covered[static_cast<size_t>(first)];
      }
      any_cut |= first != t;
      const int64_t s0 = f.row_ptr[static_cast<size_t>(r)],
                    s1 = f.row_ptr[static_cast<size_t>(r + 1)];
      if (it[first * I] != s0 || it[t * I + 1] != s1 || cov != s1 - s0)
        broken(fmt::format("row {} covered {} of its {} slots", r, cov, s1 - s0));
      ++stored[static_cast<size_t>(r)];
      for (int64_t n = 0; n < p.n; ++n) {
        float sum = part[static_cast<size_t>(t * p.n + n)];
        for (int64_t i = t - 1; i >= first; --i) sum += part[static_cast<size_t>(i * p.n + n)];
        store(p, c, r, n, sum, alpha, beta);
      }
    }
    if (any_cut != (it[(ipb - 1) * I + 1] != 0))
      broken(fmt::format("block {}: the header's cut flag is wrong", b));
  }
  for (int64_t r = 0; r < p.m; ++r)
    if (stored[static_cast<size_t>(r)] != 1)
      broken(fmt::format("row {} stored {} times", r, stored[static_cast<size_t>(r)]));
}

}  // namespace

void interpret_macko(const Problem& p, const MackoSchedule& s, const MackoFormat& f,
                     std::span<const float> b, std::span<float> c, float alpha, float beta) {
  if (static_cast<int64_t>(b.size()) < p.k * p.n || static_cast<int64_t>(c.size()) < p.m * p.n)
    throw std::invalid_argument("interpret_macko: B or C smaller than the problem");
  if (f.rows != p.m || f.cols != p.k) broken("format shape differs from the problem");
  if (f.delta_bits != s.delta_bits) broken("format delta bits differ from the schedule");
  if (p.m == 0 || p.n == 0) return;
  std::vector<float> bq(static_cast<size_t>(p.k * p.n));
  for (size_t i = 0; i < bq.size(); ++i) bq[i] = round_to(p.dtype, b[i]);
  if (macko_uses_items(s)) {
    interpret_items(p, s, f, bq, c, alpha, beta);
    return;
  }
  std::vector<float> acc(static_cast<size_t>(s.warps_per_row * kWarpSize * p.n));
  std::vector<int64_t> tot(static_cast<size_t>(s.warps_per_row * s.unroll * kWarpSize));
  for (int64_t r = 0; r < p.m; ++r) {
    const int64_t s0 = f.row_ptr[static_cast<size_t>(r)],
                  s1 = f.row_ptr[static_cast<size_t>(r + 1)];
    const int64_t covered = walk(p, s, f, bq, s0, s1, -1, acc, tot, "row", r);
    if (covered != s1 - s0)
      broken(fmt::format("row {} covered {} of its {} slots", r, covered, s1 - s0));
    for (int64_t n = 0; n < p.n; ++n) store(p, c, r, n, reduce(s, acc, p.n, n), alpha, beta);
  }
}

}  // namespace sparsegen
