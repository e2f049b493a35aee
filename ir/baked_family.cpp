// The baked family's ir/ layer (ir/baked_schedule.h): a small matrix compiled into the kernel.
// The pack is the CSR itself (the emitter writes it into the source); interpret() is the CSR
// reference, which is the kernel's arithmetic exactly (fp32 products of the dtype-rounded values
// summed in column order, one rounding on store).
#include <fmt/format.h>

#include "ir/baked_schedule.h"
#include "ir/csr_pack.h"
#include "ir/diagnostics.h"
#include "ir/enumerate.h"
#include "ir/family.h"
#include "ir/interpreter.h"

namespace sparsegen {
namespace {

class BakedIrFamily final : public IrFamily {
 public:
  std::string_view name() const override { return BakedSchedule::kFamily; }
  bool general_purpose() const override { return false; }
  std::string spec(const Schedule& s) const override { return baked_spec(s.as<BakedSchedule>()); }
  std::string print(const Schedule& s) const override { return print_baked(s.as<BakedSchedule>()); }
  Schedule parse(std::string_view spec, const std::vector<std::string_view>& parts) const override {
    return Schedule(parse_baked_fields(spec, parts));
  }
  std::vector<std::string> validate(const Schedule& s) const override {
    return validate_baked(s.as<BakedSchedule>());
  }
  std::vector<std::string> validate(const Problem& p, const Schedule&) const override {
    return validate_baked(p);
  }
  std::vector<Schedule> enumerate(const Problem& p, const CsrMatrix& a,
                                  const EnumerateOptions& opt) const override {
    return enumerate_baked_schedules(p, a, opt.device);
  }
  std::vector<std::string> why_not(const Problem& p, const CsrMatrix& a) const override {
    return why_not_baked(p, a);
  }
  std::optional<std::string> pack_key(const Schedule&) const override { return "csr"; }
  FormatStats format_stats(const CsrMatrix& a, const Problem& p, const Schedule& s) const override {
    return restat(csr_pack_stats(a, a.nnz()), p, s);
  }
  FormatStats restat(const FormatStats& shared, const Problem& p,
                     const Schedule& s) const override {
    FormatStats fs = shared;
    fs.block_tasks = baked_blocks(p.m, s.as<BakedSchedule>());
    fs.col_tiles = 1;
    return fs;
  }
  std::vector<std::string> verify(const Problem& p, const Schedule& s, const FormatStats&,
                                  const DeviceLimits& dev) const override {
    return verify_baked(p, s.as<BakedSchedule>(), dev);
  }
  int registers(const Problem& p, const Schedule&) const override { return baked_registers(p); }
  int64_t shared_bytes(const Problem&, const Schedule&) const override { return 0; }
  std::shared_ptr<PackedMatrix> pack(const CsrMatrix& a, const Problem& p,
                                     const Schedule&) const override {
    return pack_csr(a, p, a.nnz(), "baked CSR", "in the kernel's instructions");
  }
  void interpret(const Problem& p, const Schedule&, const PackedMatrix& packed,
                 std::span<const float> b, std::span<float> c, float alpha,
                 float beta) const override {
    reference_spmm(p, packed_csr(packed), b, c, alpha, beta);
  }
  std::optional<FormatSummary> summarize(const CsrMatrix&) const override { return std::nullopt; }
  // A row is summed by one lane: no partial results are added.
  int64_t output_adds(const Problem&, const Schedule&, int64_t) const override { return 0; }
};

}  // namespace

const IrFamily& baked_ir_family() {
  static const BakedIrFamily f;
  return f;
}

}  // namespace sparsegen
