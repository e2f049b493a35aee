#include "runtime/gpu_smoke.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "runtime/nvrtc_compiler.h"

namespace sparsegen::cuda {
namespace {

constexpr std::uint32_t kPoison = 0x7FC0DEADu;  // a quiet NaN no kernel would compute
constexpr float kAlpha = 1.7320508f;             // non-integer, so a wrong operand shows
constexpr unsigned kBlock = 256;

}  // namespace

std::string smoke_kernel_header_name() { return "sparsegen_smoke_ops.cuh"; }

std::string smoke_kernel_header() {
  return R"(#pragma once
// Device helper handed to NVRTC as a named header.
__device__ __forceinline__ float sparsegen_axpy_op(float a, float x, float y) { return a * x + y; }
)";
}

std::string smoke_kernel_source() {
  // Generated like the real kernels: parameters substituted into a text, a named header
  // included, an extern "C" entry point so the driver finds it by its plain name.
  constexpr int kUnroll = 4;
  return fmt::format(R"(#include "{header}"

// z = a * x + y, grid-stride, {unroll} elements per thread per step.
extern "C" __global__ void __launch_bounds__({block})
sparsegen_smoke_axpy(const float* __restrict__ x, const float* __restrict__ y,
                     float* __restrict__ z, float a, unsigned long long n) {{
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + {last} * stride < n; i += {unroll} * stride) {{
#pragma unroll
    for (int u = 0; u < {unroll}; ++u) {{
      const unsigned long long j = i + u * stride;
      z[j] = sparsegen_axpy_op(a, x[j], y[j]);
    }}
  }}
  for (; i < n; i += stride) z[i] = sparsegen_axpy_op(a, x[i], y[i]);
}}
)",
                     fmt::arg("header", smoke_kernel_header_name()), fmt::arg("unroll", kUnroll),
                     fmt::arg("last", kUnroll - 1), fmt::arg("block", kBlock));
}

SmokeResult run_gpu_smoke(const SmokeOptions& opt) {
  SmokeResult r;
  Context ctx(opt.device);
  r.device = ctx.info();
  r.driver_version = driver_version();
  r.nvrtc_version = nvrtc::version_string();
  r.arch = opt.arch.empty() ? nvrtc::sm_arch_for(r.device.cc_major, r.device.cc_minor) : opt.arch;
  r.kernel_name = "sparsegen_smoke_axpy";
  r.n = opt.n;

  nvrtc::CompileOptions copt;
  copt.arch = r.arch;
  copt.program_name = "sparsegen_smoke.cu";
  copt.headers[smoke_kernel_header_name()] = smoke_kernel_header();
  nvrtc::CompileResult compiled = nvrtc::compile(smoke_kernel_source(), copt);
  r.compile_ms = compiled.compile_ms;

  auto t0 = std::chrono::steady_clock::now();
  Module module(compiled.image);
  CUfunction fn = module.function(r.kernel_name);
  r.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
  r.registers = function_attribute(fn, CU_FUNC_ATTRIBUTE_NUM_REGS);

  // Seeded random non-integer inputs in [-1, 1).
  const std::size_t n = static_cast<std::size_t>(opt.n);
  std::vector<float> x(n), y(n), z(n);
  std::mt19937_64 rng(opt.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
  }
  DeviceBuffer dx(n * sizeof(float)), dy(n * sizeof(float)), dz(n * sizeof(float));
  dx.upload(x);
  dy.upload(y);
  dz.fill_u32(kPoison);

  Stream stream;
  const unsigned sms = static_cast<unsigned>(std::max(r.device.sm_count, 1));
  const std::uint64_t blocks_needed = (opt.n + kBlock - 1) / kBlock;
  LaunchConfig cfg;
  cfg.grid.x = static_cast<unsigned>(std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(blocks_needed, std::uint64_t{sms} * 16)));
  cfg.block.x = kBlock;
  cfg.stream = stream.get();
  CUdeviceptr px = dx.ptr(), py = dy.ptr(), pz = dz.ptr();
  float a = kAlpha;
  unsigned long long count = opt.n;

  // The checked run: the first launch into the poisoned output.
  launch_kernel(fn, cfg, px, py, pz, a, count);
  stream.synchronize();
  std::fill(z.begin(), z.end(), 0.0f);
  dz.download(z);

  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &z[i], sizeof(bits));
    if (bits == kPoison) ++r.unwritten;
    const double ref = static_cast<double>(a) * x[i] + static_cast<double>(y[i]);
    const double scale = std::fabs(static_cast<double>(a) * x[i]) + std::fabs(y[i]);
    const double diff = std::fabs(static_cast<double>(z[i]) - ref);
    // One fused or two separate float roundings: at most ~2 ulp of the operands' magnitude.
    const double bound = 4.0 * std::numeric_limits<float>::epsilon() * scale + 1e-30;
    if (!(diff <= bound)) ++r.mismatches;  // NaN fails too
    if (std::isfinite(diff)) {
      r.max_rel_error = std::max(r.max_rel_error, scale > 0 ? diff / scale : diff);
      err2 += diff * diff;
    } else {
      r.max_rel_error = std::numeric_limits<double>::infinity();
    }
    ref2 += ref * ref;
  }
  r.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (r.unwritten > 0 || r.mismatches > 0) r.rel_l2_error = std::max(r.rel_l2_error, 1.0);

  // Timing: events around each launch, median of `repeats` after the checked (warm-up) run.
  std::vector<double> times;
  const int repeats = std::max(opt.repeats, 1);
  Event start, stop;
  for (int k = 0; k < repeats; ++k) {
    start.record(stream.get());
    launch_kernel(fn, cfg, px, py, pz, a, count);
    stop.record(stream.get());
    times.push_back(Event::elapsed_ms(start, stop));
  }
  stream.synchronize();
  std::sort(times.begin(), times.end());
  r.kernel_ms_min = times.front();
  r.kernel_ms_median = times[times.size() / 2];
  if (r.kernel_ms_median > 0) {
    r.bandwidth_gb_s = 12.0 * static_cast<double>(opt.n) / (r.kernel_ms_median * 1e6);
  }
  r.passed = r.unwritten == 0 && r.mismatches == 0 && r.rel_l2_error < 1e-6;
  return r;
}

}  // namespace sparsegen::cuda
