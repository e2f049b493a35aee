// The GPU smoke check: one small generated kernel taken through the whole runtime path
// (NVRTC -> cubin for the device's own architecture -> driver module load -> launch) and checked
// against a CPU reference. `sparsegen gpu-smoke` prints it; the runtime GPU tests assert on it.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/cuda_driver.h"

namespace sparsegen::cuda {

struct SmokeOptions {
  std::uint64_t n = 4'000'037;  // a few million, not a multiple of the block size
  std::uint64_t seed = 20251121;
  int repeats = 20;      // timed launches after one warm-up; the median is reported
  std::string arch;      // empty: sm_XY of the device
  int device = 0;
};

struct SmokeResult {
  DeviceInfo device;
  int driver_version = 0;
  std::string nvrtc_version;
  std::string arch;
  std::string kernel_name;
  std::uint64_t n = 0;
  int registers = 0;
  double compile_ms = 0.0;  // nvrtcCompileProgram
  double load_ms = 0.0;     // cuModuleLoadDataEx
  double kernel_ms_median = 0.0;
  double kernel_ms_min = 0.0;
  double bandwidth_gb_s = 0.0;  // 12 bytes per element (two loads, one store) over the median
  std::uint64_t unwritten = 0;  // outputs still holding the poison bit pattern
  std::uint64_t mismatches = 0;  // outputs outside the error bound (NaN included)
  double max_rel_error = 0.0;    // max |z - ref| / (|a*x| + |y|)
  double rel_l2_error = 0.0;     // ||z - ref|| / ||ref||
  bool passed = false;
};

// Runs the check on `options.device` (makes its primary context current). Throws CudaError /
// NvrtcError when any step fails; a wrong result is reported in the returned SmokeResult.
SmokeResult run_gpu_smoke(const SmokeOptions& options = {});

// The generated kernel source and its named header (exposed for the CPU-only NVRTC tests).
std::string smoke_kernel_source();
std::string smoke_kernel_header_name();
std::string smoke_kernel_header();

}  // namespace sparsegen::cuda
