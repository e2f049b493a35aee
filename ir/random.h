// SplitMix64: the one seeded stream behind synthesized pattern values, the pruning generator's
// seeds and the check inputs. A fixed algorithm, so a seed gives the same numbers with any
// compiler and standard library.
#pragma once

#include <cstdint>

namespace sparsegen {

// The constant splitmix64 adds to its state per draw: draw j of a stream started at s0 is the
// draw from state s0 + j·kSplitmixGamma (chunks of one stream can start anywhere).
inline constexpr uint64_t kSplitmixGamma = 0x9e3779b97f4a7c15ULL;

// Advances `state` and returns the next 64 random bits.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += kSplitmixGamma);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace sparsegen
