// The weights of an LLM feed-forward block, for Runtime::gated_ffn (sparsegen/sparsegen.h).
//
//   gated:      y = alpha · (ReLU(x·W_g) ⊙ (x·W_u)) · W_d + beta · y
//   non-gated:  y = alpha · ReLU(x·W_u) · W_d + beta · y
//
// x and y are M x K row-major (tokens x model width); W_g, W_u are K x N and W_d is N x K
// (hidden width N), all row-major fp32 master values here (a Hugging Face checkpoint stores
// gate_proj / up_proj as N x K and down_proj as K x N: transpose them).
// Self-contained: part of the installed API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsegen {

struct FfnWeights {
  int64_t k = 0, n = 0;
  bool gated = true;
  std::vector<float> gate;  // K x N row-major (empty when not gated)
  std::vector<float> up;    // K x N row-major
  std::vector<float> down;  // N x K row-major
  std::string source;       // where they came from, for messages
};

}  // namespace sparsegen
