#include "codegen/cusparse.h"

#include <fmt/format.h>

#include "codegen/emitter.h"
#include "ir/csr_pack.h"
#include "ir/cusparse_schedule.h"
#include "ir/diagnostics.h"
#include "ir/family.h"

namespace sparsegen::codegen {
namespace {

class CusparseEmitter : public Emitter {
 public:
  CusparseEmitter(const Problem& p, const CusparseSchedule& s, const CsrMatrix& a,
                  const EmitOptions& opt)
      : p_(p), s_(s), a_(a), opt_(opt) {}

  GeneratedKernel run() {
    const auto why = validate_cusparse(p_);
    if (!why.empty())
      throw UserError(
          fmt::format("codegen: cusparse cannot run {}: {}", to_string(p_), fmt::join(why, "; ")));
    SG_ASSERT(a_.rows == p_.m && a_.cols == p_.k, "emit_cusparse: the matrix is not M x K");
    decl(fmt::format(
        "// sparsegen cusparse: C = alpha·A·B + beta·C by the sparse library (alg {})\n// {}",
        to_string(s_.alg), to_string(p_)));
    decl("using T = float;");
    comment("placeholder: the main grid is empty (the library SpMM is the product)");
    GeneratedKernel k;
    k.signature = signature();
    k.source = kernel_source(
        fmt::format("extern \"C\" __global__ void {}(const T* values, const int* col_idx,\n"
                    "    const int* row_offsets) {{\n",
                    opt_.kernel_name));
    k.headers = header_sources();
    return k;
  }

 private:
  KernelSignature signature() const {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.launch.grid_x = 0;  // empty: nothing of ours runs
    sig.launch.grid_y = 1;
    sig.launch.block_threads = 32;
    sig.params.push_back({"values", ParamKind::Values, "csr.values", {}});
    sig.params.push_back({"col_idx", ParamKind::ColIdx, "csr.col_idx", {}});
    sig.params.push_back({"row_offsets", ParamKind::I32Table, "csr.row_ptr",
                          std::vector<int64_t>(a_.row_ptr.begin(), a_.row_ptr.end())});
    LibrarySpmm m;
    m.algorithm = std::string(to_string(s_.alg));
    m.m = p_.m;
    m.k = p_.k;
    m.n = p_.n;
    m.nnz = a_.nnz();
    m.row_major = p_.c_layout == Layout::RowMajor;  // B's too (validate_cusparse)
    m.row_offsets_param = 2;
    sig.spmms.push_back(m);
    return sig;
  }

  const Problem& p_;
  const CusparseSchedule& s_;
  const CsrMatrix& a_;
  const EmitOptions& opt_;
};

// The pack is the CSR matrix itself (ir/csr_pack.h).
class CusparseCodegenFamily final : public CodegenFamily {
 public:
  std::string_view name() const override { return CusparseSchedule::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                       const EmitOptions& opt) const override {
    return emit_cusparse(p, s, packed_csr(packed), opt);
  }
};

}  // namespace

GeneratedKernel emit_cusparse(const Problem& problem, const Schedule& schedule, const CsrMatrix& a,
                              const EmitOptions& opt) {
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_cusparse";
  CusparseEmitter e(problem, schedule.as<CusparseSchedule>(), a, o);
  return e.run();
}

const CodegenFamily& cusparse_codegen_family() {
  static const CusparseCodegenFamily f;
  return f;
}

}  // namespace sparsegen::codegen
