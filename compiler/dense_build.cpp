// The dense family's compiler/ layer: A laid out densely (M x K row-major in the dtype, zeros
// where the sparse weight has none; int8 / fp8: quantized per row, M x K') as the library GEMM's
// operand, and the placeholder (int8 / fp8: the quantization and scale kernels) compiled.
#include <fmt/format.h>

#include <cstring>

#include "codegen/dense.h"
#include "compiler/family.h"
#include "compiler/pipeline_steps.h"
#include "ir/dense_schedule.h"
#include "ir/diagnostics.h"
#include "ir/dtype.h"
#include "ir/parallel.h"
#include "ir/quantize.h"

namespace sparsegen {
namespace {

// The dense M x K bytes of A in the 16-bit dtype (check_value_range() has accepted the values).
std::vector<char> dense_values(const CsrMatrix& a, DType dtype) {
  std::vector<char> out(static_cast<size_t>(a.rows * a.cols) * 2, 0);
  parallel_for(a.rows, a.nnz() + a.rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = a.row_ptr[r]; i < a.row_ptr[r + 1]; ++i) {
        const float v = a.values[static_cast<size_t>(i)];
        const uint16_t bits = dtype == DType::F16 ? float_to_half_bits(v) : float_to_bf16_bits(v);
        std::memcpy(out.data() + (r * a.cols + a.col_idx[static_cast<size_t>(i)]) * 2, &bits, 2);
      }
  });
  return out;
}

// int8 / fp8: A_q (M x K' row-major, K' = dense_k, zeros past K and where the weight has none;
// int8 values or e4m3 bits) and the row scales of ir/quantize.h.
std::vector<char> dense_quantized_values(const CsrMatrix& a, const Problem& p,
                                         std::vector<float>* row_scales) {
  const int64_t kp = dense_k(p);
  RowQuantized q = quantize_rows(a, p.dtype);
  const bool i8 = p.dtype == DType::I8;
  std::vector<char> out(static_cast<size_t>(a.rows * kp), 0);
  parallel_for(a.rows, a.nnz() + a.rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = a.row_ptr[r]; i < a.row_ptr[r + 1]; ++i) {
        const float v = q.q[static_cast<size_t>(i)];
        out[static_cast<size_t>(r * kp + a.col_idx[static_cast<size_t>(i)])] =
            i8 ? static_cast<char>(static_cast<int8_t>(v))
               : static_cast<char>(float_to_e4m3_bits(v));
      }
  });
  *row_scales = std::move(q.scales);
  return out;
}

class DenseBuild final : public CompilerFamily {
 public:
  std::string_view name() const override { return DenseSchedule::kFamily; }
  KernelBuild build(const CsrMatrix& a, const Problem& p, const Schedule& s,
                    const CompileTarget& target, const BuildOptions& opt) const override {
    KernelBuild b = start_build(a, p, s, target);
    std::vector<float> row_scales;  // int8 / fp8
    {
      PipelineStep st(3, "verify", &b.step_log);
      auto why = validate_dense(p);
      if (why.empty()) why = verify_dense(p, target.limits);
      if (!why.empty())
        throw UserError(fmt::format("schedule '{}' cannot run {} on {}: {}", to_string(s),
                                    to_string(p), target.limits.name, fmt::join(why, "; ")));
      st.finish(target.limits.name);
    }
    {
      PipelineStep st(4, "pack", &b.step_log);
      st.finish("none: the library reads A densely");
    }
    {
      PipelineStep st(5, "values", &b.step_log);
      if (is_quantized(p.dtype)) {
        b.values = dense_quantized_values(a, p, &row_scales);
      } else {
        check_value_range(a, p.dtype);
        b.values = dense_values(a, p.dtype);
      }
      st.finish(fmt::format("{} bytes: A dense ({} x {}) in {}", b.values.size(), p.m, dense_k(p),
                            to_string(p.dtype)));
    }
    emit_step(b, [&] { return codegen::emit_dense(p, s, row_scales); });
    if (opt.source_hook) opt.source_hook(b.kernel.source);
    if (opt.compile) compile_step(b, target, "sparsegen_dense.cu", opt.line_info);
    return b;
  }
};

}  // namespace

const CompilerFamily& dense_compiler_family() {
  static const DenseBuild f;
  return f;
}

}  // namespace sparsegen
