#include "codegen/slide_lt.h"

#include <fmt/format.h>

#include "codegen/emitter.h"
#include "codegen/slide.h"
#include "codegen/template_types.h"
#include "ir/diagnostics.h"
#include "ir/slide_lt_schedule.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

class SlideLtEmitter : public Emitter {
 public:
  SlideLtEmitter(const Problem& p, const SlideLtSchedule& s, const SlideTcFormat& f,
                 const EmitOptions& opt)
      : p_(p), s_(s), f_(f), opt_(opt), quant_(is_quantized(p.dtype)) {}

  GeneratedKernel run() {
    const auto why = validate_slide_lt(p_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: slide_lt cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    SG_ASSERT(f_.rows == p_.m && f_.cols == p_.k && f_.n == s_.pattern && f_.dtype == p_.dtype &&
                  f_.form == SlideForm::Library,
              "emit_slide_lt: the format does not match the problem and schedule");
    for (const char* n : {"acc", "B", "C", "alpha", "beta", "row_scales", "bw", "token_scales", "T",
                          "sg_lift_smem"})
      reserve(n);
    // The algorithm is not in the source: a searched kernel and the choice it found share it.
    decl(fmt::format("// sparsegen slide_lt: the 2:4 library GEMM on {}:{} sliding windows\n// {}",
                     2 * s_.pattern - 2, 2 * s_.pattern, to_string(p_)));
    decl(fmt::format("using T = {};", p_.b_dtype() == DType::F16 ? "__half" : "__nv_bfloat16"));
    lift_ = emit_slide_lift(*this, p_, s_.pattern, f_.chunks, LiftOrder::Plain,
                            opt_.kernel_name + "_lift");
    KernelSignature sig;
    std::string head;
    if (quant_) {
      head = emit_quant_scale(*this, p_, p_.dtype == DType::I8 ? "int" : "float", f_.row_scales,
                              "slide.row_scales", opt_.kernel_name, sig);
      SG_ASSERT(sig.workspace_bytes == slide_lt_workspace_bytes(p_),
                "emit_slide_lt: the scale step's workspace is not the accumulators'");
    } else {
      comment("placeholder: the main grid is empty (the library GEMM writes C)");
      head = fmt::format("extern \"C\" __global__ void {}(T* C) {{\n", opt_.kernel_name);
      sig.kernel_name = opt_.kernel_name;
      sig.params = {{"C", ParamKind::C, "C", {}}};
      sig.launch.grid_x = 0;  // empty: the library GEMM is the product
      sig.launch.grid_y = 1;
      sig.launch.block_threads = 32;
    }
    GeneratedKernel k;
    k.source = kernel_source(head);
    k.headers = header_sources();
    k.signature = library_steps(std::move(sig));
    return k;
  }

 private:
  // The lift and the 2:4 library GEMM around the main kernel's signature.
  KernelSignature library_steps(KernelSignature sig) const {
    sig.b_alignment = quant_ && slide_vec_b(p_) ? 16 : 4;
    sig.b_work_bytes = slide_lt_b_work_bytes(p_, s_.pattern);
    sig.b_transform = lift_;
    LibrarySparseGemm g;
    g.choice = slide_lt_choice(s_);
    g.m = p_.m;
    g.k = slide_lt_lifted_k(p_, s_.pattern);
    g.n = p_.n;
    g.to_workspace = quant_;
    sig.sparse_gemms.push_back(g);
    return sig;
  }

  const Problem& p_;
  const SlideLtSchedule& s_;
  const SlideTcFormat& f_;
  const EmitOptions& opt_;
  const bool quant_;
  AuxKernel lift_;
};

}  // namespace

GeneratedKernel emit_slide_lt(const Problem& problem, const Schedule& schedule,
                              const SlideTcFormat& f, const EmitOptions& opt) {
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_slide_lt";
  SlideLtEmitter e(problem, schedule.as<SlideLtSchedule>(), f, o);
  return e.run();
}

const CodegenFamily& slide_lt_codegen_family() {
  static const EmitFunction<SlideLtSchedule, SlideTcFormat, emit_slide_lt> f;
  return f;
}

}  // namespace sparsegen::codegen
