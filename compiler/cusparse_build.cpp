// The cusparse family's compiler/ layer: A's CSR arrays as the kernel's buffers (values in the
// problem's type, column indices; the row offsets are a table of the signature) and the
// placeholder compiled. The library reads them in place.
#include <fmt/format.h>

#include "codegen/cusparse.h"
#include "compiler/family.h"
#include "compiler/pipeline_steps.h"
#include "ir/cusparse_schedule.h"
#include "ir/diagnostics.h"

namespace sparsegen {
namespace {

class CusparseBuild final : public CompilerFamily {
 public:
  std::string_view name() const override { return CusparseSchedule::kFamily; }
  KernelBuild build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                    const CompileTarget& target, const BuildOptions& opt) const override {
    KernelBuild b = start_build(a, p, s, target);
    {
      PipelineStep st(3, "verify", &b.step_log);
      auto why = why_not_cusparse(p, a);
      if (why.empty()) why = verify_cusparse(target.limits);
      if (!why.empty())
        throw UserError(fmt::format("schedule '{}' cannot run {} on {}: {}", to_string(s),
                                    to_string(p), target.limits.name, fmt::join(why, "; ")));
      st.finish(target.limits.name);
    }
    {
      PipelineStep st(4, "pack", &b.step_log);
      st.finish(fmt::format("none: the library reads the CSR ({} nonzeros)", a.nnz()));
    }
    values_step(b, a, a.values);
    b.col_idx = a.col_idx;
    emit_step(b, [&] { return codegen::emit_cusparse(p, s, a); });
    if (opt.source_hook) opt.source_hook(b.kernel.source);
    if (opt.compile) compile_step(b, target, "sparsegen_cusparse.cu", opt.line_info);
    return b;
  }
};

}  // namespace

const CompilerFamily& cusparse_compiler_family() {
  static const CusparseBuild f;
  return f;
}

}  // namespace sparsegen
