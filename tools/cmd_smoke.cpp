// `sparsegen gpu-smoke [--json]`: NVRTC -> cubin for this GPU -> driver load -> launch -> check.
//
// Exit codes (main.cpp): 0 the check passed; 3 no usable CUDA driver or GPU, a CUDA/NVRTC call
// failed, or the result was wrong.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cuda_driver.h"
#include "runtime/gpu_smoke.h"
#include "runtime/nvrtc_compiler.h"
#include "tools/commands.h"

namespace sparsegen::cli {
namespace {

struct SmokeArgs {
  bool json = false;
  cuda::SmokeOptions options;
};

nlohmann::json to_json(const cuda::SmokeResult& r) {
  const cuda::DeviceInfo& d = r.device;
  return {
      {"available", true},
      {"passed", r.passed},
      {"device",
       {{"ordinal", d.ordinal},
        {"name", d.name},
        {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
        {"sm_count", d.sm_count},
        {"total_memory_bytes", d.total_memory_bytes},
        {"l2_cache_bytes", d.l2_cache_bytes},
        {"max_threads_per_block", d.max_threads_per_block},
        {"max_shared_memory_per_block_optin", d.max_shared_memory_per_block_optin},
        {"max_shared_memory_per_sm", d.max_shared_memory_per_sm},
        {"max_registers_per_sm", d.max_registers_per_sm},
        {"clock_rate_khz", d.clock_rate_khz}}},
      {"driver_version", r.driver_version},
      {"nvrtc_version", r.nvrtc_version},
      {"arch", r.arch},
      {"kernel", r.kernel_name},
      {"n", r.n},
      {"registers", r.registers},
      {"compile_ms", r.compile_ms},
      {"load_ms", r.load_ms},
      {"kernel_ms_median", r.kernel_ms_median},
      {"kernel_ms_min", r.kernel_ms_min},
      {"bandwidth_gb_s", r.bandwidth_gb_s},
      {"unwritten", r.unwritten},
      {"mismatches", r.mismatches},
      {"max_rel_error", r.max_rel_error},
      {"rel_l2_error", r.rel_l2_error},
  };
}

void run(const SmokeArgs& args) {
  std::string why;
  if (!cuda::driver_available(&why)) {
    if (args.json) {
      nlohmann::json j = {{"available", false},
                          {"passed", false},
                          {"reason", why},
                          {"nvrtc_version", nvrtc::version_string()}};
      std::printf("%s\n", j.dump(2).c_str());
    }
    throw CudaError("no CUDA driver: " + why, "dlopen",
                    static_cast<int>(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED),
                    "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED");
  }
  cuda::SmokeResult r = cuda::run_gpu_smoke(args.options);
  if (args.json) {
    std::printf("%s\n", to_json(r).dump(2).c_str());
  } else {
    const cuda::DeviceInfo& d = r.device;
    std::printf("device:      %s (compute capability %d.%d, %d SMs, %.1f GiB, L2 %d KiB)\n",
                d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count,
                static_cast<double>(d.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0),
                d.l2_cache_bytes / 1024);
    std::printf("driver:      CUDA %d.%d; NVRTC %s; target %s\n", r.driver_version / 1000,
                (r.driver_version % 1000) / 10, r.nvrtc_version.c_str(), r.arch.c_str());
    std::printf("compile:     %.1f ms (NVRTC), load %.2f ms, %d registers\n", r.compile_ms,
                r.load_ms, r.registers);
    std::printf("run:         n = %llu, median %.4f ms (min %.4f), %.0f GB/s\n",
                static_cast<unsigned long long>(r.n), r.kernel_ms_median, r.kernel_ms_min,
                r.bandwidth_gb_s);
    std::printf("check:       %llu unwritten, %llu outside bound, max rel error %.3g, "
                "rel L2 error %.3g\n",
                static_cast<unsigned long long>(r.unwritten),
                static_cast<unsigned long long>(r.mismatches), r.max_rel_error, r.rel_l2_error);
    std::printf("result:      %s\n", r.passed ? "PASS" : "FAIL");
  }
  std::fflush(stdout);
  if (!r.passed) {
    throw CudaError(fmt::format("gpu-smoke: wrong result ({} unwritten, {} outside the bound)",
                                r.unwritten, r.mismatches),
                    "gpu-smoke", 0, "WRONG_RESULT");
  }
}

}  // namespace

void register_smoke(CLI::App& app) {
  auto args = std::make_shared<SmokeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gpu-smoke", "Compile a small kernel with NVRTC for this GPU, run it, check the result");
  cmd->add_flag("--json", args->json, "Print the result as JSON");
  cmd->add_option("--n", args->options.n, "Number of elements")
      ->capture_default_str()
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 30));
  cmd->add_option("--seed", args->options.seed, "Seed of the random inputs")->capture_default_str();
  cmd->add_option("--repeats", args->options.repeats, "Timed launches (median reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--arch", args->options.arch,
                  "NVRTC target (default: sm_XY of the device), e.g. sm_90a or compute_90");
  cmd->add_option("--device", args->options.device, "Device ordinal")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->callback([args] { run(*args); });
}

}  // namespace sparsegen::cli
