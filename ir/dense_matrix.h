// A dense row-major fp32 matrix: what a checkpoint tensor (.safetensors / .npy) becomes, and what
// the pruning generator starts from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sparsegen {

struct DenseMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> data;  // rows * cols, row-major
  std::string source;       // "file[tensor]" for messages

  float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
};

}  // namespace sparsegen
