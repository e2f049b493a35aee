#include "ir/dense_ffn_schedule.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/diagnostics.h"
#include "ir/spec_fields.h"

namespace sparsegen {

std::vector<std::string> validate(const DenseFfnSchedule& s) {
  std::vector<std::string> why;
  if (s.threads != 128 && s.threads != 256 && s.threads != 512)
    why.push_back(fmt::format("threads={} must be 128, 256 or 512", s.threads));
  return why;
}

std::vector<std::string> validate_dense_ffn(const Problem& p, const DenseFfnSchedule&) {
  std::vector<std::string> why;
  if (p.op != Op::GatedFfn)
    why.push_back(fmt::format("dense_ffn computes a gated FFN, not {}", to_string(p.op)));
  if (p.dtype != DType::F16 && p.dtype != DType::BF16)
    why.push_back(
        fmt::format("dense_ffn runs the BLAS library in fp16 or bf16, not {}", to_string(p.dtype)));
  if (p.op == Op::GatedFfn && (p.k == 0 || p.n == 0))
    why.push_back(fmt::format("dense_ffn needs K > 0 and N > 0 (got K={}, N={})", p.k, p.n));
  return why;
}

std::string dense_ffn_spec(const DenseFfnSchedule& s) {
  return fmt::format("dense_ffn;threads={}", s.threads);
}

std::string print_dense_ffn(const DenseFfnSchedule& s) {
  return fmt::format(
      "schedule dense_ffn\n"
      "  gemm   : [G | U] = x · [W_g | W_u] by the BLAS library (cuBLASLt), fp32 accumulation\n"
      "  gate   : h = ReLU(G) ⊙ U, {} threads per block\n"
      "  gemm   : y = alpha · h · W_d + beta · y by the BLAS library\n",
      s.threads);
}

DenseFfnSchedule parse_dense_ffn_fields(std::string_view spec,
                                        const std::vector<std::string_view>& parts) {
  DenseFfnSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    if (key == "threads")
      s.threads = static_cast<int>(spec_fields::parse_int(key, v, 1, 4096));
    else
      spec_fields::error(key, "threads (family dense_ffn)", key);
  });
  spec_fields::check_legal(spec, validate(s));
  return s;
}

int64_t dense_ffn_gu_cols(const Problem& p) {
  return p.gated ? 2 * p.n : p.n;
}
int64_t dense_ffn_h_offset(const Problem& p) {
  // 128 elements (256 bytes) aligned.
  return (p.m * dense_ffn_gu_cols(p) + 127) / 128 * 128;
}
int64_t dense_ffn_work_bytes(const Problem& p) {
  return (dense_ffn_h_offset(p) + p.m * p.n) * 2 + 256;
}
int64_t dense_ffn_down_offset(const Problem& p) {
  return (p.k * dense_ffn_gu_cols(p) + 127) / 128 * 128;
}
int64_t dense_ffn_weight_elements(const Problem& p) {
  return dense_ffn_down_offset(p) + p.n * p.k;
}
int64_t dense_ffn_gate_blocks(const Problem& p, const DenseFfnSchedule& s) {
  return std::clamp<int64_t>((p.m * p.n + s.threads - 1) / s.threads, 1, 132 * 16);
}

std::vector<std::string> verify_dense_ffn(const Problem& p, const DenseFfnSchedule& s,
                                          const DeviceLimits& dev) {
  std::vector<std::string> why;
  if (s.threads > dev.max_threads_per_block)
    why.push_back(fmt::format("a block of {} threads exceeds the device's {}", s.threads,
                              dev.max_threads_per_block));
  if (p.m > INT32_MAX || p.n > INT32_MAX / 2 || p.k > INT32_MAX)
    why.push_back(fmt::format("{} exceeds the BLAS library's 32-bit sizes", to_string(p)));
  return why;
}

std::vector<Schedule> enumerate_dense_ffn_schedules(const Problem& p, const CsrMatrix& a,
                                                    const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (!validate_dense_ffn(p, DenseFfnSchedule{}).empty() || a.cols != p.n) return out;
  for (int t : {256, 512, 128}) {
    const DenseFfnSchedule s{t};
    if (verify_dense_ffn(p, s, dev).empty()) out.emplace_back(s);
  }
  return out;
}

}  // namespace sparsegen
