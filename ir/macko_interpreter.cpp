#include "ir/macko_interpreter.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "ir/interpreter.h"

namespace sparsegen {

namespace {

[[noreturn]] void broken(const std::string& msg) {
  throw std::logic_error("MACKO interpreter: plan invariant broken: " + msg);
}

}  // namespace

void interpret_macko(const Problem& p, const MackoSchedule& s, const MackoFormat& f,
                     std::span<const float> b, std::span<float> c, float alpha, float beta) {
  if (static_cast<int64_t>(b.size()) < p.k * p.n || static_cast<int64_t>(c.size()) < p.m * p.n)
    throw std::invalid_argument("interpret_macko: B or C smaller than the problem");
  if (f.rows != p.m || f.cols != p.k) broken("format shape differs from the problem");
  if (f.delta_bits != s.delta_bits) broken("format delta bits differ from the schedule");
  if (p.m == 0 || p.n == 0) return;
  const int64_t V = kMackoVectorSlots, L = kWarpSize, U = s.unroll, R = s.warps_per_row;
  const int64_t per_step = R * L * U;  // vectors per step of the row's warps
  std::vector<float> bq(static_cast<size_t>(p.k * p.n));
  for (size_t i = 0; i < bq.size(); ++i) bq[i] = round_to(p.dtype, b[i]);
  // acc[w][l][col]
  std::vector<float> acc(static_cast<size_t>(R * L * p.n));
  std::vector<int64_t> tot(static_cast<size_t>(R * U * L)), pre(static_cast<size_t>(V));
  for (int64_t r = 0; r < p.m; ++r) {
    const int64_t s0 = f.row_ptr[static_cast<size_t>(r)], s1 = f.row_ptr[static_cast<size_t>(r + 1)];
    if (s0 > s1 || s1 > f.slots()) broken(fmt::format("row {} slots [{}, {})", r, s0, s1));
    const int64_t v0 = s0 / V, v1 = (s1 + V - 1) / V;
    std::fill(acc.begin(), acc.end(), 0.0f);
    int64_t carry = 0, covered = 0;
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
                broken(fmt::format("row {} slot {} decodes to column {} of {}", r, slot, col, p.k));
              const float a = round_to(p.dtype, f.values[static_cast<size_t>(slot)]);
              float* ac = &acc[static_cast<size_t>((w * L + l) * p.n)];
              for (int64_t n = 0; n < p.n; ++n)
                ac[n] += a * bq[static_cast<size_t>(p.b_index(col, n))];
              ++covered;
            }
            carry += tot[static_cast<size_t>((w * U + u) * L + l)];
          }
    }
    if (covered != s1 - s0)
      broken(fmt::format("row {} covered {} of its {} slots", r, covered, s1 - s0));
    for (int64_t n = 0; n < p.n; ++n) {
      // Lanes by a butterfly (as the warp shuffle reduction), then warps in order.
      float total = 0.0f;
      for (int64_t w = 0; w < R; ++w) {
        std::vector<float> v(static_cast<size_t>(L));
        for (int64_t l = 0; l < L; ++l) v[static_cast<size_t>(l)] = acc[static_cast<size_t>((w * L + l) * p.n + n)];
        for (int64_t off = L / 2; off > 0; off /= 2)
          for (int64_t l = 0; l < off; ++l) v[static_cast<size_t>(l)] += v[static_cast<size_t>(l + off)];
        total += v[0];
      }
      float& out = c[static_cast<size_t>(p.c_index(r, n))];
      const float old = beta == 0.0f ? 0.0f : beta * round_to(p.dtype, out);
      out = round_to(p.dtype, alpha * total + old);
    }
  }
}

}  // namespace sparsegen
