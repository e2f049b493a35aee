#include "ir/dense_schedule.h"

#include <fmt/format.h>

#include <cstdint>

#include "ir/diagnostics.h"
#include "ir/quantize.h"
#include "ir/spec_fields.h"

namespace sparsegen {

std::vector<std::string> validate_dense(const Problem& p) {
  std::vector<std::string> why;
  if (!p.sparse_weight())
    why.push_back(fmt::format("dense multiplies a sparse weight, not a {}", to_string(p.op)));
  if (is_quantized(p.dtype)) {
    const std::string_view t = to_string(p.dtype);
    if (p.io_dtype != DType::F16 && p.io_dtype != DType::BF16)
      why.push_back(
          fmt::format("dense {} writes fp16 or bf16 outputs, not {}", t, to_string(p.io_dtype)));
    if (p.c_layout != Layout::ColMajor)
      why.push_back(
          fmt::format("dense {} needs C column-major (its scale step writes each token's outputs "
                      "contiguously)",
                      t));
    if (p.m % 4 != 0)
      why.push_back(fmt::format(
          "dense {} needs M a multiple of 4 (the library's 8-bit GEMM rule), not {}", t, p.m));
  } else if (p.dtype != DType::F16 && p.dtype != DType::BF16) {
    why.push_back(fmt::format("dense runs the BLAS library in fp16, bf16, int8 or fp8_e4m3, not {}",
                              to_string(p.dtype)));
  } else if (p.b_layout == Layout::RowMajor && p.c_layout == Layout::ColMajor) {
    why.push_back("dense needs B column-major when C is column-major (b=row c=col)");
  }
  if (p.degenerate())
    why.push_back(fmt::format("dense needs M, K, N > 0 (got M={}, K={}, N={})", p.m, p.k, p.n));
  return why;
}

int64_t dense_k(const Problem& p) {
  return is_quantized(p.dtype) ? (p.k + 63) / 64 * 64 : p.k;
}

std::string dense_spec(const DenseSchedule&) {
  return "dense;lib=cublaslt";
}

std::string print_dense(const DenseSchedule&) {
  return "schedule dense\n"
         "  gemm   : C = alpha · A · B + beta · C by the BLAS library (cuBLASLt), A dense,\n"
         "           fp32 accumulation\n";
}

DenseSchedule parse_dense_fields(std::string_view, const std::vector<std::string_view>& parts) {
  DenseSchedule s;
  spec_fields::for_each_field(parts, [&](std::string_view key, std::string_view v) {
    if (key != "lib") spec_fields::error(key, "lib (family dense)", key);
    if (v != "cublaslt") spec_fields::error(key, "cublaslt", v);
  });
  return s;
}

std::vector<std::string> verify_dense(const Problem& p, const DeviceLimits& dev) {
  std::vector<std::string> why;
  if (p.dtype == DType::F8E4M3 && dev.sm() != 0 && dev.sm() < 89)
    why.push_back(
        fmt::format("the BLAS library's fp8 e4m3 GEMM needs sm_89 or newer, not {}", dev.name));
  // The library's tensor-core GEMM kernels run blocks of 128 threads and more.
  if (dev.max_threads_per_block < 128)
    why.push_back(
        fmt::format("the BLAS library's GEMM kernels need blocks of 128 threads; {} "
                    "allows {}",
                    dev.name, dev.max_threads_per_block));
  // The dense copy of A lives on the host and the device: a graph-scale matrix has no business
  // being multiplied densely.
  const double bytes = double(p.m) * double(dense_k(p)) * double(dtype_bytes(p.dtype));
  if (bytes > double(kMaxDenseBytes))
    why.push_back(
        fmt::format("the dense copy of A ({} x {}) would take {:.1f} GiB, above the "
                    "{} GiB the library candidate may use",
                    p.m, p.k, bytes / double(1 << 30), kMaxDenseBytes >> 30));
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX)
    why.push_back(fmt::format("{} exceeds the BLAS library's 32-bit sizes", to_string(p)));
  return why;
}

std::vector<Schedule> enumerate_dense_schedules(const Problem& p, const DeviceLimits& dev) {
  std::vector<Schedule> out;
  if (validate_dense(p).empty() && verify_dense(p, dev).empty()) out.emplace_back(DenseSchedule{});
  return out;
}

}  // namespace sparsegen
