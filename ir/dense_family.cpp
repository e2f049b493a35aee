// The dense family's ir/ layer (ir/dense_schedule.h): the weight multiplied densely by the BLAS
// library. The pack keeps the CSR (the compiler lays A out densely for the device); interpret()
// is the CSR reference, which is the library's arithmetic up to the order of fp32 sums.
#include <fmt/format.h>

#include "ir/csr_pack.h"
#include "ir/dense_schedule.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/interpreter.h"

namespace sparsegen {
namespace {

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
    reference_spmm(p, packed_csr(packed), b, c, alpha, beta);
  }
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  // The library may split K and add the parts in fp32.
  int64_t output_adds(const Problem&, const Schedule&, int64_t) const override { return 8; }
};

}  // namespace

const IrFamily& dense_ir_family() {
  static const DenseIrFamily f;
  return f;
}

}  // namespace sparsegen
