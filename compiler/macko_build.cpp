#include "compiler/macko_build.h"
#include "compiler/pipeline_steps.h"

#include <fmt/format.h>

#include "codegen/macko.h"
#include "ir/diagnostics.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"

namespace sparsegen {

MackoPacked pack_macko_values(const CsrMatrix& a, int delta_bits, DType dtype) {
  return share_pack(pack_macko(a, delta_bits), a, dtype);
}

KernelBuild build_macko_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                               const CompileTarget& target, bool line_info,
                               const MackoPacked* packed) {
  SG_ASSERT(s.family() == ScheduleFamily::Macko, "build_macko_kernel needs a MACKO schedule");
  const MackoSchedule& m = s.macko();
  KernelBuild b = start_build(a, p, s, target);
  {
    PipelineStep st(3, "verify", &b.step_log);
    // With a shared pack its figures are at hand; without, one walk of the matrix.
    const MackoStats ms =
        packed != nullptr ? macko_stats(packed->format) : macko_stats(a, m.delta_bits);
    const auto reasons = verify_macko(p, m, ms, target.limits);
    if (!reasons.empty())
      throw UserError(fmt::format("schedule '{}' does not fit {} for {}: {}", to_string(s),
                                  target.limits.name, to_string(p), fmt::join(reasons, "; ")));
    st.finish(target.limits.name);
  }
  if (packed != nullptr) {
    SG_ASSERT(packed->format.delta_bits == m.delta_bits,
              "build_macko_kernel: the shared format is for another delta width");
    shared_pack_step(b, *packed,
                     fmt::format("{} MACKO slots, b={}", packed->format.slots(), m.delta_bits));
    emit_step(b, [&] { return codegen::emit_macko(p, s, packed->format); });
    compile_step(b, target, "sparsegen_macko.cu", line_info);
    return b;
  }
  MackoFormat f;
  {
    PipelineStep st(4, "pack", &b.step_log);
    f = pack_macko(a, m.delta_bits);
    st.finish(fmt::format("{} MACKO slots ({} real, {} padding), b={}", f.slots(), f.nnz, f.padding,
                          f.delta_bits));
  }
  values_step(b, a, f.values);
  emit_step(b, [&] { return codegen::emit_macko(p, s, f); });
  compile_step(b, target, "sparsegen_macko.cu", line_info);
  return b;
}

}  // namespace sparsegen
