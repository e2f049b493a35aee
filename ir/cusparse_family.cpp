// The cusparse family's ir/ layer (ir/cusparse_schedule.h): the weight multiplied by the sparse
// library's CSR SpMM. The pack is the CSR itself (uploaded as the library's arrays); interpret()
// is the CSR reference, which is the library's arithmetic up to the order of fp32 sums.
#include <fmt/format.h>

#include "ir/csr_pack.h"
#include "ir/cusparse_schedule.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/interpreter.h"

namespace sparsegen {
namespace {

class CusparseIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return CusparseSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  bool library() const override { return true; }
  std::string spec(const Schedule& s) const override {
    return cusparse_spec(s.as<CusparseSchedule>());
  }
  std::string print(const Schedule& s) const override {
    return print_cusparse(s.as<CusparseSchedule>());
  }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_cusparse_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule&) const override { return {}; }
  std::vector<std::string> validate(const Problem& p, const Schedule&) const override {
    return validate_cusparse(p);
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_cusparse_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const override {
    return why_not_cusparse(p, a);
  }
  std::optional<std::string> pack_key(const Schedule&) const override { return "cusparse"; }
  FormatStats format_stats(const CsrMatrix& a, const Problem&, const Schedule&) const override {
    return csr_pack_stats(a, a.nnz());
  }
  // No kernel of its own (the library's SpMM): the shared figures hold.
  FormatStats restat(const FormatStats& shared, const Problem&, const Schedule&) const override {
    return shared;
  }
  std::vector<std::string> verify(const Problem&, const Schedule&, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_cusparse(dev);
  }
  int registers(const Problem&, const Schedule&) const override { return 16; }
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule&) const override {
    return pack_csr(a, p, a.nnz(), "CSR", "the sparse library's arrays");
  }
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    reference_spmm(p, packed_csr(packed), b, c, alpha, beta);
  }
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  // The library may cut a row's nonzeros (merge-based algorithms) and add the parts in fp32.
  int64_t output_adds(const Problem&, const Schedule&, int64_t) const override { return 8; }
};

}  // namespace

const IrFamily& cusparse_ir_family() {
  static const CusparseIrFamily f;
  return f;
}

}  // namespace sparsegen
