// One input through one reader, shared by the libFuzzer targets and the fuzz_regressions test.
// A UserError is the expected outcome of bad input; anything else (a crash, another exception, a
// sanitizer report, a matrix that breaks the CSR invariants) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#include "ir/diagnostics.h"
#include "ir/io/matrix_market.h"
#include "ir/io/safetensors.h"
#include "ir/sparse_matrix.h"

namespace sparsegen::fuzz {

// A result that loaded must be canonical; a UserError from the check is a reader bug, not input.
inline void require_canonical(const CsrMatrix& m) {
  try {
    m.check_canonical();
  } catch (const UserError& e) {
    std::fprintf(stderr, "reader returned a non-canonical matrix: %s\n", e.what());
    std::abort();
  }
}

// Returns true when the input loaded (false: rejected with a UserError).
inline bool matrix_market_one(const uint8_t* data, size_t size) {
  MatrixMarketOptions opt;
  opt.max_rows = 1 << 16;  // CSR row offsets cost 8 bytes per row even when empty
  Diagnostics diag;
  CsrMatrix m;
  try {
    m = read_matrix_market_buffer(std::string_view(reinterpret_cast<const char*>(data), size),
                                  "fuzz.mtx", opt, diag);
  } catch (const UserError&) {
    return false;
  }
  require_canonical(m);
  return true;
}

inline bool safetensors_one(const uint8_t* data, size_t size) {
  try {
    SafetensorsFile f = parse_safetensors(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), "fuzz.st");
    for (const SafetensorsTensor& t : f.tensors) {
      try {
        DenseMatrix d = tensor_to_dense(f, t);
        (void)d;
      } catch (const UserError&) {
      }
    }
  } catch (const UserError&) {
    return false;
  }
  return true;
}

}  // namespace sparsegen::fuzz
