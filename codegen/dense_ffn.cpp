#include "codegen/dense_ffn.h"

#include <fmt/format.h>

#include "codegen/beta_workspace.h"
#include "codegen/emitter.h"
#include "codegen/template_types.h"
#include "ir/dense_ffn_schedule.h"
#include "ir/diagnostics.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

using tmpl::cptr_t;
using tmpl::i32;
using tmpl::ptr_t;
using tmpl::targs;
using tmpl::TypeArg;

class DenseFfnEmitter : public Emitter {
 public:
  DenseFfnEmitter(const Problem& p, const DenseFfnSchedule& s, const EmitOptions& opt)
      : p_(p), s_(s), opt_(opt) {}

  GeneratedKernel run() {
    const auto why = validate_dense_ffn(p_, s_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: dense_ffn cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    for (const char* n : {"bw", "T"}) reserve(n);
    decl(fmt::format("// sparsegen dense FFN gating\n// {}\n// {}", to_string(p_),
                     to_string(Schedule(s_))));
    decl(fmt::format("using T = {};", p_.dtype == DType::F16 ? "__half" : "__nv_bfloat16"));
    comment("h = ReLU(G) ⊙ U between the library's two GEMMs");
    call_stmt(tmpl::ffn_gate, targs(TypeArg{"T"}), cptr_t("reinterpret_cast<const T*>(bw)"),
              ptr_t(fmt::format("reinterpret_cast<T*>(bw) + {}", dense_ffn_h_offset(p_))),
              i32(std::to_string(p_.m)), i32(std::to_string(p_.n)), i32(p_.gated ? "1" : "0"));
    GeneratedKernel k;
    k.signature = signature();  // first: it declares the beta round trip's kernels
    k.source = kernel_source(fmt::format(
        "extern \"C\" __global__ void __launch_bounds__({}) {}(unsigned* __restrict__ bw) {{\n",
        s_.threads, opt_.kernel_name));
    k.headers = header_sources();
    return k;
  }

 private:
  KernelSignature signature() {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.params = {{"bw", ParamKind::BWork, "[G | U] and h", {}}};
    sig.launch.grid_x = p_.m == 0 ? 0 : dense_ffn_gate_blocks(p_, s_);
    sig.launch.grid_y = 1;
    sig.launch.block_threads = s_.threads;
    sig.b_work_bytes = dense_ffn_work_bytes(p_);
    const int64_t cols = dense_ffn_gu_cols(p_);
    LibraryGemm up;
    up.name = p_.gated ? "gate+up" : "up";
    up.a = {ParamKind::B, 0, p_.k};
    up.b = {ParamKind::Values, 0, cols};
    up.c = {ParamKind::BWork, 0, cols};
    up.m = p_.m;
    up.n = cols;
    up.k = p_.k;
    sig.gemms_before.push_back(up);
    LibraryGemm down;
    down.name = "down";
    down.a = {ParamKind::BWork, dense_ffn_h_offset(p_), p_.n};
    down.b = {ParamKind::Values, dense_ffn_down_offset(p_), p_.k};
    down.c = {ParamKind::C, 0, p_.k};
    down.m = p_.m;
    down.n = p_.k;
    down.k = p_.n;
    down.run_alpha_beta = true;
    down.beta_in_workspace = true;
    sig.gemms_after.push_back(down);
    add_beta_workspace(*this, sig, opt_.kernel_name, p_.m * p_.k);  // C is M x K
    return sig;
  }

  const Problem& p_;
  const DenseFfnSchedule& s_;
  const EmitOptions& opt_;
};

// The activations are not the kernel's business (they appear at run time): `packed` is ignored.
class DenseFfnCodegenFamily final : public CodegenFamily {
 public:
  std::string_view name() const override { return DenseFfnSchedule::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix&,
                       const EmitOptions& opt) const override {
    return emit_dense_ffn(p, s, opt);
  }
};

}  // namespace

GeneratedKernel emit_dense_ffn(const Problem& problem, const Schedule& schedule,
                               const EmitOptions& opt) {
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_dense_ffn";
  DenseFfnEmitter e(problem, schedule.as<DenseFfnSchedule>(), o);
  return e.run();
}

const CodegenFamily& dense_ffn_codegen_family() {
  static const DenseFfnCodegenFamily f;
  return f;
}

}  // namespace sparsegen::codegen
