// A packed format with its values in the problem's dtype: what every schedule of one family that
// packs the same way shares (MACKO: one delta width; bitmap_tc: every schedule). Packing and
// converting a 100M-nonzero weight takes seconds, so the tuner (compiler/tune.cpp) packs once per
// key instead of once per candidate, and the family builders take the result.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compiler/pipeline.h"
#include "compiler/pipeline_steps.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/parallel.h"

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

// Step 4 for a build that takes a shared pack: checks it fits the build's problem (dtype, shape),
// copies its values into b.values and logs "shared: DETAIL, N bytes of DTYPE".
template <class Format>
void shared_pack_step(KernelBuild& b, const SharedPack<Format>& s, const std::string& detail) {
  SG_ASSERT(
      s.dtype == b.problem.dtype && s.format.rows == b.problem.m && s.format.cols == b.problem.k,
      "the shared pack is for another dtype or shape");
  PipelineStep st(4, "pack", &b.step_log);
  // A copy per candidate (hundreds of MB for a large weight): pages faulted in and bytes copied
  // on all cores.
  b.values.clear();
  resize_prefaulted(b.values, s.values.size());
  const auto n = static_cast<int64_t>(s.values.size());
  parallel_for(n, n / 8, [&](int64_t i0, int64_t i1) {
    std::memcpy(b.values.data() + i0, s.values.data() + i0, static_cast<size_t>(i1 - i0));
  });
  st.finish(fmt::format("shared: {}, {} bytes of {}", detail, b.values.size(),
                        to_string(b.problem.dtype)));
}

}  // namespace sparsegen
