// libFuzzer target: arbitrary bytes through the safetensors parser (see fuzz_entry_points.h).
#include "tests/fuzz/fuzz_entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sparsegen::fuzz::safetensors_one(data, size);
  return 0;
}
