// The dense family's ir/ layer (ir/dense_schedule.h): the weight multiplied densely by the BLAS
// library. The pack keeps the CSR (the compiler lays A out densely for the device); interpret()
// is the CSR reference, which is the library's arithmetic up to the order of fp32 sums (int8 and
// fp8: the quantized steps; int8's sums are exact up to the one scaling).
#include <fmt/format.h>

#include <algorithm>

#include "ir/csr_pack.h"
#include "ir/dense_schedule.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/interpreter.h"
#include "ir/parallel.h"
#include "ir/quantize.h"

namespace sparsegen {
namespace {

// The 8-bit steps' arithmetic (ir/dense_schedule.h): weights quantized per row, B per token,
// exact integer sums (int8) or fp32 sums of the exact e4m3 products (fp8), one scaling
// C = alpha · acc · (row scale · token scale) + beta · C in fp32.
void interpret_quantized(const Problem& p, const CsrMatrix& a, std::span<const float> b,
                         std::span<float> c, float alpha, float beta) {
  const RowQuantized rq = quantize_rows(a, p.dtype);
  const TokenQuantized tq = quantize_tokens(p, b);
  const bool i8 = p.dtype == DType::I8;
  parallel_for(p.m, a.nnz() * std::max<int64_t>(p.n, 1) + p.m, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < p.n; ++j) {
        int64_t iacc = 0;
        float facc = 0.0f;
        for (int64_t i = a.row_ptr[r]; i < a.row_ptr[r + 1]; ++i) {
          const int64_t k = a.col_idx[static_cast<size_t>(i)];
          const float qa = rq.q[static_cast<size_t>(i)];
          const float qb = tq.q[static_cast<size_t>(p.b_index(k, j))];
          if (i8)
            iacc += static_cast<int64_t>(qa) * static_cast<int64_t>(qb);
          else
            facc += qa * qb;
        }
        float v = i8 ? static_cast<float>(iacc) : facc;
        v *= rq.scales[static_cast<size_t>(r)] * tq.scales[static_cast<size_t>(j)];
        const size_t ci = static_cast<size_t>(p.c_index(r, j));
        c[ci] = beta == 0.0f ? alpha * v : alpha * v + beta * c[ci];
      }
  });
}

class DenseIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return DenseSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  bool dense_baseline() const override { return true; }
  std::string spec(const Schedule& s) const override { return dense_spec(s.as<DenseSchedule>()); }
  std::string print(const Schedule& s) const override { return print_dense(s.as<DenseSchedule>()); }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_dense_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule&) const override { return {}; }
  std::vector<std::string> validate(const Problem& p, const Schedule&) const override {
    return validate_dense(p);
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix&,
                                  const EnumerateOptions& opt) const override {
    return enumerate_dense_schedules(p, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix&) const override {
    return validate_dense(p);
  }
  std::optional<std::string> pack_key(const Schedule&) const override { return "dense"; }
  FormatStats format_stats(const CsrMatrix& a, const Problem&, const Schedule&) const override {
    return csr_pack_stats(a, a.rows * a.cols);
  }
  // No kernel of its own (the library's GEMM): the shared figures hold.
  FormatStats restat(const FormatStats& shared, const Problem&, const Schedule&) const override {
    return shared;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule&, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_dense(p, dev);
  }
  int registers(const Problem&, const Schedule&) const override { return 16; }
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule&) const override {
    return pack_csr(a, p, a.rows * a.cols, "dense", "stored densely on the device");
  }
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    if (is_quantized(p.dtype))
      interpret_quantized(p, packed_csr(packed), b, c, alpha, beta);
    else
      reference_spmm(p, packed_csr(packed), b, c, alpha, beta);
  }
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  // The library may split K and add the parts in fp32.
  int64_t output_adds(const Problem&, const Schedule&, int64_t) const override { return 8; }
  // cuBLASLt's fp8 GEMM (fp8 tensor cores, promoted to fp32 periodically) was measured within
  // 2^-12 of the products' magnitude on an H200 (GpuLtDense); its 16-bit and int8 sums are fp32
  // or exact.
  double accumulation_error(const Problem& p, const Schedule&) const override {
    return p.dtype == DType::F8E4M3 ? 0x1p-12 : 0.0;
  }
};

}  // namespace

const IrFamily& dense_ir_family() {
  static const DenseIrFamily f;
  return f;
}

}  // namespace sparsegen
