// Integer helpers for sizes and tilings, shared by every layer (one definition).
#pragma once

#include <cstdint>

namespace sparsegen {

// ceil(x / m) for x >= 0, m > 0.
constexpr int64_t ceil_div(int64_t x, int64_t m) {
  return (x + m - 1) / m;
}
// x rounded up to a multiple of m (m <= 1: x unchanged).
constexpr int64_t round_up(int64_t x, int64_t m) {
  return m <= 1 ? x : (x + m - 1) / m * m;
}

}  // namespace sparsegen
