#include "codegen/dense.h"

#include <fmt/format.h>

#include "codegen/beta_workspace.h"
#include "codegen/emitter.h"
#include "codegen/slide.h"
#include "ir/csr_pack.h"
#include "ir/dense_schedule.h"
#include "ir/diagnostics.h"
#include "ir/quantize.h"
#include "ir/slide_schedule.h"

namespace sparsegen::codegen {
namespace {

class DenseEmitter : public Emitter {
 public:
  DenseEmitter(const Problem& p, std::span<const float> row_scales, const EmitOptions& opt)
      : p_(p), row_scales_(row_scales.begin(), row_scales.end()), opt_(opt) {}

  GeneratedKernel run() {
    const auto why = validate_dense(p_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: dense cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    if (is_quantized(p_.dtype)) return run_quantized();
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
  // int8 / fp8: the per-token quantization of B is the slide lift of 2:4 (one window per group
  // of 4, the identity map), written K' x N column-major; the library's 8-bit GEMM; the scale
  // kernel. ACC is int (int8: exact int32 sums) or float (fp8: fp32 sums).
  //   sparsegen_dense_lift(B, bw, token_scales)         -> bw (8-bit K' x N), token_scales
  //   library: acc^T (N x M, ACC) = bw^T · A_q^T          (TN)
  //   sparsegen_dense(acc, row_scales, token_scales, C, alpha, beta): one thread per element
  GeneratedKernel run_quantized() {
    SG_ASSERT(static_cast<int64_t>(row_scales_.size()) == p_.m,
              "emit_dense: an 8-bit weight needs its row scales");
    const int64_t chunks = slide_chunks(p_, 2, SlideForm::Library);
    SG_ASSERT(chunks * slide_mma(p_.dtype, SlideForm::Library).chunk == dense_k(p_),
              "emit_dense: the quantization kernel's K' is not dense_k");
    for (const char* n : {"acc", "B", "C", "alpha", "beta", "row_scales", "bw", "token_scales", "T",
                          "sg_lift_smem"})
      reserve(n);
    const bool i8 = p_.dtype == DType::I8;
    decl(
        fmt::format("// sparsegen dense {}: B quantized per token, the library's 8-bit GEMM, one "
                    "scaling\n// {}",
                    to_string(p_.dtype), to_string(p_)));
    decl(fmt::format("using T = {};", p_.b_dtype() == DType::F16 ? "__half" : "__nv_bfloat16"));
    lift_ = emit_slide_lift(*this, p_, 2, chunks, LiftOrder::Plain, opt_.kernel_name + "_lift");
    KernelSignature sig;
    const std::string head = emit_quant_scale(*this, p_, i8 ? "int" : "float", row_scales_,
                                              "dense.row_scales", opt_.kernel_name, sig);
    GeneratedKernel k;
    k.signature = library_steps_quantized(std::move(sig));
    k.source = kernel_source(head);
    k.headers = header_sources();
    return k;
  }

  // The quantization kernel and the library's 8-bit GEMM around the scale step's signature.
  KernelSignature library_steps_quantized(KernelSignature sig) const {
    const int64_t kp = dense_k(p_);
    sig.b_alignment = slide_vec_b(p_) ? 16 : 4;
    sig.b_work_bytes = kp * p_.n;
    sig.b_transform = lift_;
    // acc column-major M x N is row-major N x M: (B_q as N x K') · (A_q stored M x K')^T.
    LibraryGemm g;
    g.name = fmt::format("dense {}", to_string(p_.dtype));
    g.operands = p_.dtype == DType::I8 ? GemmOperands::Int8 : GemmOperands::Fp8;
    g.m = p_.n;
    g.n = p_.m;
    g.k = kp;
    g.a = {ParamKind::BWork, 0, kp};
    g.b_transposed = true;
    g.b = {ParamKind::Values, 0, kp};
    g.c = {ParamKind::Workspace, 0, p_.m};
    sig.gemms_before.push_back(g);
    return sig;
  }

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
  const std::vector<float> row_scales_;  // int8 / fp8: the weight's per-row scales
  const EmitOptions& opt_;
  AuxKernel lift_;
};

// The matrix reaches the kernel as its dense values (the compiler lays them out): `packed` is
// not read here.
class DenseCodegenFamily final : public CodegenFamily {
 public:
  std::string_view name() const override { return DenseSchedule::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                       const EmitOptions& opt) const override {
    if (is_quantized(p.dtype))
      return emit_dense(p, s, quantize_rows(packed_csr(packed), p.dtype).scales, opt);
    return emit_dense(p, s, {}, opt);
  }
};

}  // namespace

GeneratedKernel emit_dense(const Problem& problem, const Schedule& schedule,
                           std::span<const float> row_scales, const EmitOptions& opt) {
  (void)schedule.as<DenseSchedule>();
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_dense";
  DenseEmitter e(problem, row_scales, o);
  return e.run();
}

const CodegenFamily& dense_codegen_family() {
  static const DenseCodegenFamily f;
  return f;
}

}  // namespace sparsegen::codegen
