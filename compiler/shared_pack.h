// A packed format with its values in the problem's dtype: what every schedule of one family that
// packs the same way shares (MACKO: one delta width; bitmap_tc: every schedule). Packing and
// converting a 100M-nonzero weight takes seconds, so the tuner (compiler/tune.cpp) packs once per
// key instead of once per candidate, and the family builders take the result.
#pragma once

#include <utility>
#include <vector>

#include "compiler/pipeline.h"
#include "compiler/pipeline_steps.h"
#include "ir/dtype.h"

namespace sparsegen {

template <class Format>
struct SharedPack {
  Format format;
  DType dtype = DType::F16;
  std::vector<char> values;  // format.values in dtype
};

// Steps 4-5 (pack, values) alone: `format` is the packed matrix `a`. Throws UserError for values
// outside dtype's range.
template <class Format>
SharedPack<Format> share_pack(Format format, const CsrMatrix& a, DType dtype) {
  SharedPack<Format> s;
  check_value_range(a, dtype);
  s.values = to_device_values(format.values, dtype);
  s.format = std::move(format);
  s.dtype = dtype;
  return s;
}

}  // namespace sparsegen
