#include "codegen/baked.h"

#include <fmt/format.h>

#include <bit>
#include <cstdint>

#include "codegen/emitter.h"
#include "ir/baked_schedule.h"
#include "ir/csr_pack.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/interpreter.h"
#include "templates/template_index.h"

namespace sparsegen::codegen {
namespace {

using tmpl::f32;
using tmpl::targs;
using tmpl::TypeArg;

std::string value_type(DType t) {
  return t == DType::F16 ? "__half" : t == DType::BF16 ? "__nv_bfloat16" : "float";
}

class BakedEmitter : public Emitter {
 public:
  BakedEmitter(const Problem& p, const BakedSchedule& s, const CsrMatrix& a, const EmitOptions& o)
      : p_(p), s_(s), a_(a), opt_(o) {}

  GeneratedKernel run() {
    if (!why_not_baked(p_, a_).empty() || a_.rows != p_.m || a_.cols != p_.k)
      throw UserError(fmt::format("codegen: the baked emitter cannot bake {} ({} nonzeros)",
                                  to_string(p_), a_.nnz()));
    // The values become immediates here, so the range check of the values step is repeated:
    // a value the dtype cannot hold is refused, never baked as an infinity.
    if (p_.dtype != DType::F32) {
      const ConversionReport r = check_range(a_.values, p_.dtype);
      if (r.out_of_range > 0)
        throw UserError(
            fmt::format("{}: {} value(s) outside the {} range, the first {} (nonzero {}); use fp32",
                        a_.source.empty() ? "matrix" : a_.source, r.out_of_range,
                        to_string(p_.dtype), r.first_value, r.first_index));
    }
    passes_ = static_cast<int>(baked_passes(p_));
    for (const char* n : {"B", "C", "alpha", "beta", "row", "lane", "T"}) reserve(n);
    decl(fmt::format("// sparsegen baked kernel\n// {}\n// {}\n// {} nonzeros in the code",
                     to_string(p_), baked_spec(s_), a_.nnz()));
    decl("using T = " + value_type(p_.dtype) + ";");
    emit_body();
    GeneratedKernel k;
    k.source =
        kernel_source(fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
                                  "    const T* __restrict__ B,\n"
                                  "    T* __restrict__ C,\n"
                                  "    float alpha,\n"
                                  "    float beta) {{\n",
                                  s_.threads_per_block(), opt_.kernel_name));
    k.headers = header_sources();
    k.signature = signature();
    return k;
  }

 private:
  // B's element (k, the lane's column of pass q) is B + (k * kstride + b<q>).
  int64_t b_kstride() const { return p_.b_layout == Layout::RowMajor ? p_.n : 1; }
  std::string column(int q) const { return q == 0 ? "lane" : fmt::format("lane + {}", 32 * q); }

  void emit_body() {
    line(fmt::format("const int row = blockIdx.x * {} + threadIdx.x / 32;", s_.warps_per_block));
    line("const int lane = threadIdx.x % 32;");
    if (p_.n < kWarpSize)
      line(fmt::format("if (row >= {} || lane >= {}) return;", p_.m, p_.n));
    else
      line(fmt::format("if (row >= {}) return;", p_.m));
    const bool ragged = p_.n % kWarpSize != 0 && passes_ > 1;
    for (int q = 0; q < passes_; ++q) {
      // The last pass of a ragged N clamps its column so that every load stays inside B.
      const std::string col = (ragged && q + 1 == passes_)
                                  ? fmt::format("min({}, {})", column(q), p_.n - 1)
                                  : column(q);
      b_.push_back(fresh(fmt::format("b{}", q)));
      acc_.push_back(fresh(fmt::format("acc{}", q)));
      line(
          fmt::format("const int {} = {};", b_[q],
                      p_.b_layout == Layout::RowMajor ? col : fmt::format("({}) * {}", col, p_.k)));
      line(fmt::format("float {} = 0.0f;", acc_[q]));
    }
    bool first = true;
    for (int64_t r = 0; r < a_.rows; ++r) {
      const int64_t begin = a_.row_ptr[r], end = a_.row_ptr[r + 1];
      if (begin == end) continue;  // acc stays 0: the store below writes beta·C
      auto g = block(fmt::format("{}if (row == {})", first ? "" : "else ", r));
      first = false;
      for (int64_t i = begin; i < end; ++i) emit_product(a_.col_idx[i], a_.values[i]);
    }
    for (int q = 0; q < passes_; ++q) {
      const std::string col = column(q);
      const std::string c = p_.c_layout == Layout::RowMajor
                                ? fmt::format("C + (row * {} + {})", p_.n, col)
                                : fmt::format("C + (({}) * {} + row)", col, p_.m);
      const std::string store = call(tmpl::store_axpby, targs(TypeArg{"T"}), tmpl::ptr_t(c),
                                     f32(acc_[q]), f32("alpha"), f32("beta"))
                                    .text +
                                ";";
      if ((q + 1) * kWarpSize > p_.n && passes_ > 1)
        line(fmt::format("if ({} < {}) {}", col, p_.n, store));
      else
        line(store);
    }
  }

  // acc<q> += value · B[col][the lane's column], the value rounded to the dtype as the device
  // copy of A would be, written as its fp32 bit pattern.
  void emit_product(int64_t col, float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(round_to(p_.dtype, value));
    const int64_t k_off = col * b_kstride();
    for (int q = 0; q < passes_; ++q) {
      const std::string b = call(tmpl::load_f32, targs(TypeArg{"T"}),
                                 tmpl::cptr_t(fmt::format("B + ({} + {})", k_off, b_[q])))
                                .text;
      line(
          fmt::format("{} = fmaf(__uint_as_float(0x{:08x}u), {}, {});", acc_[q], bits, b, acc_[q]));
    }
  }

  KernelSignature signature() const {
    KernelSignature sig;
    sig.kernel_name = opt_.kernel_name;
    sig.params = {{"B", ParamKind::B, "B", {}},
                  {"C", ParamKind::C, "C", {}},
                  {"alpha", ParamKind::Alpha, "alpha", {}},
                  {"beta", ParamKind::Beta, "beta", {}}};
    sig.launch.grid_x = baked_blocks(p_.m, s_);
    sig.launch.grid_y = 1;
    sig.launch.block_threads = s_.threads_per_block();
    return sig;
  }

  const Problem& p_;
  const BakedSchedule& s_;
  const CsrMatrix& a_;
  const EmitOptions& opt_;
  int passes_ = 1;
  std::vector<std::string> b_, acc_;
};

// The pack is the CSR matrix itself (ir/csr_pack.h).
class BakedCodegenFamily final : public CodegenFamily {
 public:
  std::string_view name() const override { return BakedSchedule::kFamily; }
  GeneratedKernel emit(const Problem& p, const Schedule& s, const PackedMatrix& packed,
                       const EmitOptions& opt) const override {
    return emit_baked(p, s, packed_csr(packed), opt);
  }
};

}  // namespace

GeneratedKernel emit_baked(const Problem& problem, const Schedule& schedule, const CsrMatrix& a,
                           const EmitOptions& opt) {
  EmitOptions o = opt;
  if (o.kernel_name.empty()) o.kernel_name = "sparsegen_baked";
  BakedEmitter e(problem, schedule.as<BakedSchedule>(), a, o);
  return e.run();
}

const CodegenFamily& baked_codegen_family() {
  static const BakedCodegenFamily f;
  return f;
}

}  // namespace sparsegen::codegen
