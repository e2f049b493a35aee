// libFuzzer target: arbitrary bytes through the Matrix Market reader (see fuzz_entry_points.h).
#include "tests/fuzz/fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sparsegen::fuzz::matrix_market_one(data, size);
  return 0;
}
