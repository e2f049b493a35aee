// Test weights for the slide family: an LLM-like weight magnitude-pruned to (2P−2):2P.
#pragma once

#include <cstdint>

#include "ir/gen/pruning.h"

namespace sparsegen::testing {

// M x K, the 2P − 2 largest |w| of every aligned group of 2P columns per row (non-integer values).
inline CsrMatrix slide_weight(int64_t m, int64_t k, int p, uint64_t seed) {
  PruneSpec spec;
  spec.method = PruneMethod::NM;
  spec.n = 2 * p - 2;
  spec.m = 2 * p;
  return prune(make_llm_weight(m, k, seed), spec);
}

}  // namespace sparsegen::testing
