#include "compiler/macko_build.h"
#include "compiler/pipeline_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "codegen/macko.h"
#include "ir/diagnostics.h"
#include "ir/macko_format.h"
#include "ir/macko_schedule.h"

namespace sparsegen {
namespace {


}  // namespace

KernelBuild build_macko_kernel(const CsrMatrix& a, const Problem& p, const Schedule& s,
                               const CompileTarget& target, bool line_info) {
  SG_ASSERT(s.family() == ScheduleFamily::Macko, "build_macko_kernel needs a MACKO schedule");
  const MackoSchedule& m = s.macko();
  KernelBuild b;
  b.problem = p;
  b.schedule = s;
  b.target = target;
  b.nnz = a.nnz();
  if (a.rows != p.m || a.cols != p.k)
    throw UserError(fmt::format("{}: matrix is {}x{} but the problem expects m={} k={}",
                                a.source.empty() ? "matrix" : a.source, a.rows, a.cols, p.m, p.k));
  {
    PipelineStep st(3, "verify", &b.step_log);
    const auto reasons = verify_macko(p, m, macko_stats(a, m.delta_bits), target.limits);
    if (!reasons.empty())
      throw UserError(fmt::format("schedule '{}' does not fit {} for {}: {}", to_string(s),
                                  target.limits.name, to_string(p), fmt::join(reasons, "; ")));
    st.finish(target.limits.name);
  }
  MackoFormat f;
  {
    PipelineStep st(4, "pack", &b.step_log);
    f = pack_macko(a, m.delta_bits);
    st.finish(fmt::format("{} MACKO slots ({} real, {} padding), b={}", f.slots(), f.nnz,
                          f.padding, f.delta_bits));
  }
  {
    PipelineStep st(5, "values", &b.step_log);
    check_value_range(a, p.dtype);
    b.values = to_device_values(f.values, p.dtype);
    st.finish(fmt::format("{} bytes of {}", b.values.size(), to_string(p.dtype)));
  }
  {
    PipelineStep st(6, "emit", &b.step_log);
    b.kernel = codegen::emit_macko(p, s, f);
    st.finish(fmt::format("{} lines, {} parameters",
                          std::count(b.kernel.source.begin(), b.kernel.source.end(), '\n'),
                          b.kernel.signature.params.size()));
  }
  compile_step(b, target, "sparsegen_macko.cu", line_info);
  return b;
}

}  // namespace sparsegen
