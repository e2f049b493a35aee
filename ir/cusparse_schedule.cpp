#include "ir/cusparse_schedule.h"

#include <fmt/format.h>

#include <cstdint>

#include "ir/diagnostics.h"
#include "ir/spec_fields.h"

namespace sparsegen {

std::string_view to_string(CsrAlg a) {
  return kCsrAlgNames[static_cast<int>(a)];
}

std::vector<std::string> validate_cusparse(const Problem& p) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("cusparse multiplies a sparse weight, not a {}", to_string(p.op)));
  // Its 16-bit SpMM misses the fp32-accumulation bound every kernel is checked against (measured
  // on an H200: 1.2-6x the bound at N = 8 and 64 with fp16 and bf16 values, every algorithm).
  if (p.dtype != DType::F32)
    why.push_back(fmt::format(
        "cusparse runs the library's SpMM in fp32 only, not {} (its 16-bit SpMM exceeds the "
        "fp32-accumulation error bound)",
        to_string(p.dtype)));
  if (p.b_layout != p.c_layout)
    why.push_back("cusparse needs B and C in one order (the library's SpMM takes one)");
  if (p.degenerate())
    why.push_back(fmt::format("cusparse needs M, K, N > 0 (got M={}, K={}, N={})", p.m, p.k, p.n));
  if (p.m > INT32_MAX || p.k > INT32_MAX || p.n > INT32_MAX)
    why.push_back(fmt::format("{} exceeds the library's 32-bit sizes", to_string(p)));
  return why;
}

std::vector<std::string> why_not_cusparse(const Problem& p, const CsrMatrix& a) {
  std::vector<std::string> why = validate_cusparse(p);
  if (a.nnz() == 0) why.push_back("cusparse needs at least one nonzero");
  if (a.nnz() > INT32_MAX)
    why.push_back(fmt::format("{} nonzeros exceed the library's 32-bit CSR offsets", a.nnz()));
  return why;
}

std::string cusparse_spec(const CusparseSchedule& s) {
  return fmt::format("cusparse;alg={}", to_string(s.alg));
}

std::string print_cusparse(const CusparseSchedule& s) {
  return fmt::format(
      "schedule cusparse\n"
      "  spmm   : C = alpha · A · B + beta · C by the sparse library (cuSPARSE), A in CSR,\n"
      "           fp32 compute\n"
      "  alg    : {}\n",
      to_string(s.alg));
}

CusparseSchedule parse_cusparse_fields(std::string_view,
                                       const std::vector<std::string_view>& parts) {
  CusparseSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    if (key != "alg") spec_fields::error(key, "alg (family cusparse)", key);
    s.alg = spec_fields::parse_enum<CsrAlg>(key, kCsrAlgNames, v);
  });
  return s;
}

std::vector<std::string> verify_cusparse(const DeviceLimits& dev) {
  std::vector<std::string> why;
  if (dev.max_threads_per_block < 128)
    why.push_back(
        fmt::format("the sparse library's SpMM kernels need blocks of 128 threads; {} allows {}",
                    dev.name, dev.max_threads_per_block));
  return why;
}

std::vector<Schedule> enumerate_cusparse_schedules(const Problem& p, const CsrMatrix& a,
                                                   const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (!why_not_cusparse(p, a).empty() || !verify_cusparse(dev).empty()) return out;
  for (CsrAlg alg : {CsrAlg::Default, CsrAlg::Alg1, CsrAlg::Alg2, CsrAlg::Alg3})
    out.emplace_back(CusparseSchedule{alg});
  return out;
}

}  // namespace sparsegen
