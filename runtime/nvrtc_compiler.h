// In-process CUDA compilation with NVRTC.
//
// NVRTC needs no GPU: CI compiles every generated kernel to PTX or to a cubin for a named
// architecture, and the device machine compiles for its own (sm_arch_for(cc)). Headers the kernel
// includes (the templates/*.cuh helpers) are passed by name and content, so nothing is read from
// disk except the CUDA toolkit's own headers.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda_driver.h"

namespace sparsegen {

// A failed NVRTC call. code() is the nvrtcResult, call() the NVRTC function; for a failed
// compilation what() holds the program name, the architecture, the full compiler log and the
// source lines around the first error; log() holds the log alone.
class NvrtcError : public CudaError {
 public:
  NvrtcError(const std::string& message, std::string call, int code, std::string code_name,
             std::string log)
      : CudaError(message, std::move(call), code, std::move(code_name)), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

namespace nvrtc {

struct CompileOptions {
  // "sm_XY" / "sm_XYa" (architecture-specific features such as wgmma) -> a cubin;
  // "compute_XY" / "compute_XYa" -> PTX text. Anything else throws NvrtcError.
  std::string arch = "sm_90";
  // The program's file name as it appears in the log.
  std::string program_name = "sparsegen_kernel.cu";
  // #include "name" resolves to these contents before any include directory is searched.
  std::map<std::string, std::string> headers;
  // Template instantiations or overloaded names to keep; their mangled names come back in
  // CompileResult::lowered_names (e.g. "spmm_kernel<float, 4>").
  std::vector<std::string> name_expressions;
  std::string language_standard = "c++17";  // -std=
  bool fast_math = false;                   // --use_fast_math
  bool line_info = false;                   // -lineinfo (source lines in profilers, sanitizers)
  bool device_debug = false;                // -G
  // Adds the CUDA toolkit's include directories (cuda_include_dirs()) as -I.
  bool cuda_include = true;
  std::vector<std::string> include_dirs;   // more -I
  std::vector<std::string> defines;        // "NAME" or "NAME=VALUE" -> -D
  std::vector<std::string> extra_options;  // passed verbatim, last
};

struct CompileResult {
  std::vector<char> image;  // the cubin, or the PTX text including its terminating NUL
  bool is_cubin = false;
  std::string arch;
  std::string log;  // warnings of a successful compilation (empty when clean)
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled name
  std::vector<std::string> options;                  // exactly what NVRTC was given
  double compile_ms = 0.0;                           // wall time of nvrtcCompileProgram
};

// Compiles `source`. Throws NvrtcError (log included) on any failure.
CompileResult compile(std::string_view source, const CompileOptions& options);

struct Version {
  int major = 0;
  int minor = 0;
};
// The NVRTC library's version (part of the kernel cache key).
Version version();
// "13.0".
std::string version_string();
// The virtual architectures this NVRTC accepts, e.g. {75, 80, 86, 87, 89, 90, 100, ...}.
std::vector<int> supported_archs();

// "sm_90" for (9, 0); "sm_90a" when arch_specific. Throws NvrtcError for a negative or absurd
// capability.
std::string sm_arch_for(int major, int minor, bool arch_specific = false);
// "compute_90" for (9, 0); "compute_90a" when arch_specific.
std::string compute_arch_for(int major, int minor, bool arch_specific = false);

// The arch-specific variant of a target (for kernels that use wgmma and the like): "sm_90" ->
// "sm_90a", "compute_90" -> "compute_90a"; an "a" target is returned as it is. Throws NvrtcError
// for a malformed name.
std::string arch_specific_variant(const std::string& arch);

// The CUDA toolkit include directories given to NVRTC: $SPARSEGEN_CUDA_INCLUDE (':'-separated)
// when set, else the ones CMake found at build time.
std::vector<std::string> cuda_include_dirs();

}  // namespace nvrtc
}  // namespace sparsegen
