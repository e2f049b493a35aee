#include "codegen/dense.h"

#include <fmt/format.h>

#include "codegen/beta_workspace.h"
#include "codegen/emitter.h"
#include "ir/dense_schedule.h"
#include "ir/diagnostics.h"

namespace sparsegen::codegen {
namespace {

class DenseEmitter : public Emitter {
 public:
  DenseEmitter(const Problem& p, const EmitOptions& opt) : p_(p), opt_(opt) {}

  GeneratedKernel run() {
    const auto why = validate_dense(p_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: dense cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    decl(fmt::format("// sparsegen dense: C = alpha·A·B + beta·C by the BLAS library\n// {}",
                     to_string(p_)));
    decl(fmt::format("using T = {};", p_.dtype == DType::F16 ? "__half" : "__nv_bfloat16"));
    comment("placeholder: the main grid is empty (the library GEMM is the product)");
    GeneratedKernel k;
    k.signature = signature();  // first: it declares the beta round trip's kernels
    k.source =
        kernel_source(fmt::format("extern \"C\" __global__ void {}() {{\n", opt_.kernel_name));
    k.headers = header_sources();
    return k;
  }

 private:
  // Launch sequence, beta == 0: the GEMM into C. beta != 0: prologue ws = beta·C, the GEMM into
  // ws (fp32, beta 1), epilogue C = round(ws): one rounding, as the error bound assumes.
  KernelSignature signature() {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.launch.grid_x = 0;  // empty: nothing of ours runs
    sig.launch.grid_y = 1;
    sig.launch.block_threads = 32;
    add_beta_workspace(*this, sig, opt_.kernel_name, p_.m * p_.n);
    LibraryGemm g;
    g.name = "dense";
    g.k = p_.k;
    g.run_alpha_beta = true;
    g.beta_in_workspace = true;
    if (p_.c_layout == Layout::RowMajor) {
      g.m = p_.m;
      g.n = p_.n;
      g.a = {ParamKind::Values, 0, p_.k};
      g.b_transposed = p_.b_layout == Layout::ColMajor;
      g.b = {ParamKind::B, 0, g.b_transposed ? p_.k : p_.n};
      g.c = {ParamKind::C, 0, p_.n};
    } else {  // C^T = B^T · A^T, B column-major (validate_dense)
      g.m = p_.n;
      g.n = p_.m;
      g.a = {ParamKind::B, 0, p_.k};
      g.b_transposed = true;
      g.b = {ParamKind::Values, 0, p_.k};
      g.c = {ParamKind::C, 0, p_.m};
    }
    sig.gemms_after.push_back(g);
    return sig;
  }

  const Problem& p_;
  const EmitOptions& opt_;
};

// The matrix reaches the kernel as its dense values (the compiler lays them out): `packed` is
// not read here.
class DenseCodegenFamily final : public CodegenFamily {
 public:
  std::string_view name() const override { return DenseSchedule::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix&,
                       const EmitOptions& opt) const override {
    return emit_dense(p, s, opt);
  }
};

}  // namespace

GeneratedKernel emit_dense(const Problem& problem, const Schedule& schedule,
                           const EmitOptions& opt) {
  (void)schedule.as<DenseSchedule>();
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_dense";
  DenseEmitter e(problem, o);
  return e.run();
}

const CodegenFamily& dense_codegen_family() {
  static const DenseCodegenFamily f;
  return f;
}

}  // namespace sparsegen::codegen
