// The dense_ffn family's compiler/ layer: the weights laid out for the library's GEMMs
// ([W_g | W_u] row-major K x 2N, then W_d row-major N x K) and the gating kernel compiled.
#include <fmt/format.h>

#include <cmath>

#include "codegen/dense_ffn.h"
#include "compiler/family.h"
#include "compiler/pipeline_steps.h"
#include "ir/dense_ffn_schedule.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"

namespace sparsegen {
namespace {

std::vector<float> lay_out(const Problem& p, const FfnWeights& w) {
  std::vector<float> out(static_cast<size_t>(dense_ffn_weight_elements(p)), 0.0f);
  const int64_t cols = dense_ffn_gu_cols(p);
  const float limit = overflow_threshold(p.dtype);
  auto put = [&](const char* name, float v, int64_t r, int64_t c, int64_t at) {
    if (std::isfinite(v) && std::fabs(v) >= limit)
      throw UserError(fmt::format("{}: {}[{}][{}] = {} is outside the range of {}",
                                  w.source.empty() ? "weights" : w.source, name, r, c, v,
                                  to_string(p.dtype)));
    out[static_cast<size_t>(at)] = v;
  };
  for (int64_t k = 0; k < p.k; ++k)
    for (int64_t n = 0; n < p.n; ++n) {
      if (p.gated) {
        put("W_gate", w.gate[static_cast<size_t>(k * p.n + n)], k, n, k * cols + n);
        put("W_up", w.up[static_cast<size_t>(k * p.n + n)], k, n, k * cols + p.n + n);
      } else {
        put("W_up", w.up[static_cast<size_t>(k * p.n + n)], k, n, k * cols + n);
      }
    }
  const int64_t d0 = dense_ffn_down_offset(p);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      put("W_down", w.down[static_cast<size_t>(n * p.k + k)], n, k, d0 + n * p.k + k);
  return out;
}

class DenseFfnBuild final : public CompilerFamily {
 public:
  std::string_view name() const override { return DenseFfnSchedule::kFamily; }
  KernelBuild build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                    const CompileTarget& target, const BuildOptions& opt) const override {
    KernelBuild b = start_build(a, p, s, target);
    {
      PipelineStep st(3, "verify", &b.step_log);
      auto why = validate(p, s);
      if (why.empty()) why = verify_dense_ffn(p, s.as<DenseFfnSchedule>(), target.limits);
      if (!why.empty())
        throw UserError(fmt::format("schedule '{}' cannot run {} on {}: {}", to_string(s),
                                    to_string(p), target.limits.name, fmt::join(why, "; ")));
      st.finish(target.limits.name);
    }
    {
      PipelineStep st(4, "pack", &b.step_log);
      st.finish("none: dense");
    }
    if (opt.ffn_weights != nullptr) {
      PipelineStep st(5, "values", &b.step_log);
      check_weights(p, *opt.ffn_weights);
      b.values = to_device_values(lay_out(p, *opt.ffn_weights), p.dtype);
      st.finish(fmt::format("{} bytes of FFN weights in {}", b.values.size(), to_string(p.dtype)));
    }
    emit_step(b, [&] { return codegen::emit_dense_ffn(p, s); });
    if (opt.source_hook) opt.source_hook(b.kernel.source);
    if (opt.compile) compile_step(b, target, "sparsegen_dense_ffn.cu", opt.line_info);
    return b;
  }
};

}  // namespace

const CompilerFamily& dense_ffn_compiler_family() {
  static const DenseFfnBuild f;
  return f;
}

}  // namespace sparsegen
