// The twell family's compiler/ layer: no sparse weight to pack (the sparsity appears at run
// time); the build lays out the FFN's weights as the kernels read them (W_g and W_u transposed,
// W_d as it is, rows padded to a multiple of 8 with zeros) and emits and compiles both kernels.
#include <fmt/format.h>

#include <cmath>

#include "codegen/twell.h"
#include "compiler/family.h"
#include "compiler/pipeline_steps.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/twell_schedule.h"

namespace sparsegen {
namespace {

// The weights in twell_weights_layout order, fp32; values outside the dtype's range are a
// UserError naming the tensor and the first (row, col).
std::vector<float> lay_out(const Problem& p, const FfnWeights& w) {
  const TwellWeights at = twell_weights_layout(p);
  const int64_t kp = twell_k_padded(p);
  std::vector<float> out(static_cast<size_t>(at.elements), 0.0f);
  const float limit = overflow_threshold(p.dtype);
  auto check = [&](const char* name, float v, int64_t r, int64_t c) {
    if (std::isfinite(v) && std::fabs(v) >= limit)
      throw UserError(fmt::format("{}: {}[{}][{}] = {} is outside the range of {}",
                                  w.source.empty() ? "weights" : w.source, name, r, c, v,
                                  to_string(p.dtype)));
  };
  auto transpose = [&](const char* name, const std::vector<float>& src, int64_t off) {
    for (int64_t k = 0; k < p.k; ++k)
      for (int64_t n = 0; n < p.n; ++n) {
        const float v = src[static_cast<size_t>(k * p.n + n)];
        check(name, v, k, n);
        out[static_cast<size_t>(off + n * kp + k)] = v;
      }
  };
  if (p.gated) transpose("W_gate", w.gate, at.gate_t);
  transpose("W_up", w.up, at.up_t);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k) {
      const float v = w.down[static_cast<size_t>(n * p.k + k)];
      check("W_down", v, n, k);
      out[static_cast<size_t>(at.down + n * kp + k)] = v;
    }
  return out;
}

class TwellBuild final : public CompilerFamily {
 public:
  std::string_view name() const override { return TwellSchedule::kFamily; }
  KernelBuild build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                    const CompileTarget& target, const BuildOptions& opt) const override {
    KernelBuild b = start_build(a, p, s, target);
    {
      PipelineStep st(3, "verify", &b.step_log);
      const auto illegal = validate(p, s);
      if (!illegal.empty())
        throw UserError(fmt::format("schedule '{}' is illegal for {}: {}", to_string(s),
                                    to_string(p), fmt::join(illegal, "; ")));
      const auto reasons = verify_twell(p, s.as<TwellSchedule>(), target.limits);
      if (!reasons.empty())
        throw UserError(fmt::format("schedule '{}' does not fit {} for {}: {}", to_string(s),
                                    target.limits.name, to_string(p), fmt::join(reasons, "; ")));
      st.finish(target.limits.name);
    }
    {
      PipelineStep st(4, "pack", &b.step_log);
      st.finish("none: the activations are packed on the device by kernel 1");
    }
    if (opt.ffn_weights != nullptr) {
      PipelineStep st(5, "values", &b.step_log);
      check_weights(p, *opt.ffn_weights);
      b.values = to_device_values(lay_out(p, *opt.ffn_weights), p.dtype);
      st.finish(fmt::format("{} bytes of FFN weights in {}", b.values.size(), to_string(p.dtype)));
    }
    emit_step(b, [&] { return codegen::emit_twell(p, s); });
    if (opt.source_hook) opt.source_hook(b.kernel.source);
    if (opt.compile) compile_step(b, target, "sparsegen_twell.cu", opt.line_info);
    return b;
  }
};

}  // namespace

const CompilerFamily& twell_compiler_family() {
  static const TwellBuild f;
  return f;
}

}  // namespace sparsegen
