#include "codegen/beta_workspace.h"

#include "codegen/template_types.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {

void add_beta_workspace(Emitter& e, KernelSignature& sig, const std::string& kernel_name,
                        int64_t count) {
  using tmpl::targs;
  using tmpl::TypeArg;
  const std::string init = kernel_name + "_init_ws", store = kernel_name + "_store_ws";
  e.elementwise_kernel("// Prologue (beta != 0 only): ws = beta * C in fp32.", init,
                       "float* ws, const T* C, float beta", count,
                       e.call(tmpl::init_workspace, targs(TypeArg{"T"}), tmpl::ptr_f32("ws + i"),
                              tmpl::cptr_t("C + i"), tmpl::f32("beta"))
                           .text);
  e.elementwise_kernel(
      "// Epilogue (beta != 0 only): C = ws, rounded once to T.", store, "T* C, const float* ws",
      count,
      e.call(tmpl::store_f32, targs(TypeArg{"T"}), tmpl::ptr_t("C + i"), tmpl::f32("ws[i]")).text);
  const KernelParam c{"C", ParamKind::C, "C", {}};
  const KernelParam ws{"ws", ParamKind::Workspace, "workspace", {}};
  const KernelParam beta{"beta", ParamKind::Beta, "beta", {}};
  const LaunchShape shape = elementwise_launch(count);
  sig.prologue = {init, {ws, c, beta}, shape, true};
  sig.epilogue = {store, {c, ws}, shape, true};
  sig.workspace_bytes = count * static_cast<int64_t>(sizeof(float));
}

}  // namespace sparsegen::codegen
